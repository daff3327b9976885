//! Collision detection: closed-form pairs, the conic solver, symmetry.

mod conic;
mod hull;
mod known;
mod pairs;
