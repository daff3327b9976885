//! Fixtures shared by the test modules.
#![allow(dead_code)] // not every fixture is used by every configuration

pub mod check_report;
pub mod counted;
pub mod fixtures;
pub mod parallel;
pub mod robots;

/// The discrete closed form of a box sliding on the ground under Coulomb
/// friction, as the time stepping computes it (symplectic Euler with an
/// exact friction cone): the speed drops by `a h = μ g h` per step until
/// the step where that would reverse it, where static friction stops it
/// (`v = 0`); the position moves by `h v⁺` each step. Returns the distance
/// travelled after `steps` steps from speed `v0`.
pub fn sliding_distance(v0: f64, a: f64, h: f64, steps: usize) -> f64 {
    let (mut v, mut x) = (v0, 0.0);
    for _ in 0..steps {
        v = (v - a * h).max(0.0);
        x += h * v;
    }
    x
}
