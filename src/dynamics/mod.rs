//! Multibody models and their dynamics.
//!
//! [`Model`] is immutable (bodies, joints, inertial parameters, all of type
//! `T`, so derivatives with respect to masses and inertias come for free);
//! [`Data`] is the workspace that algorithms write into (Pinocchio's
//! Model/Data split). Algorithms take `(model, data, q, v, ...)`.
//!
//! Generalized coordinates: each free body (a root with a free joint) has
//! `q = [p (3), r (4: w, x, y, z)]` and `v = [ṗ (3), ω (3)]`, both velocities
//! in the world frame; bodies are concatenated in model order.
//!
//! * [`free`]: mass matrix, bias forces and the variational (momentum- and
//!   energy-conserving) discrete dynamics of free bodies.

pub mod free;
pub mod model;

pub use model::{Body, Data, Joint, Model, ModelError};
