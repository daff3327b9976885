//! Collision detection: closed-form pairs, the conic solver, symmetry.

mod conic;
mod known;
mod pairs;
mod hull;
