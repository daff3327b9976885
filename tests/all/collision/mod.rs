//! Collision detection: closed-form pairs, the conic solver, symmetry.

mod capsule_box;
mod conic;
mod hull;
mod known;
mod pairs;
