//! Scene files: parsing, validation, and the property test on mutated scenes.

mod fuzz;
