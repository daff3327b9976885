//! Collision detection: conic proximity of convex primitives.

pub mod conic;
