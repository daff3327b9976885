//! Silico's contact backends (Le Cleac'h et al. 2023): every convex shape
//! is a conic program (`collision::conic`), the gap of a pair is
//! `φ = α − 1` with α the smallest uniform scaling at which the two parts
//! touch, the contact point is the witness point `p` and the normal the
//! direction of `∂α/∂r_a = −R_a M_{a,y}ᵀ z_a` (the duals, Silico eq. 15 /
//! 41), so that a single contact per pair of convex parts is enough (for
//! a resting face the central path puts `p` at the analytic centre of the
//! contact face).
//!
//! * [`single_level`]: the KKT conditions of every pair's collision
//!   program join the contact dynamics in ONE residual (Silico problem 20)
//!   solved by one interior point.
//! * [`bilevel`]: the baseline: the `ipm` step whose contact kinematics
//!   solve each collision program to convergence at every evaluation.
//!
//! Candidates: [`pairs`].

pub mod bilevel;
pub mod pairs;
pub mod single_level;
