//! Multibody models and their dynamics.
//!
//! [`Model`] is immutable (bodies, joints, inertial parameters, all of type
//! `T`, so derivatives with respect to masses and inertias come for free);
//! [`Data`] is the workspace that algorithms write into (Pinocchio's
//! Model/Data split). Algorithms take `(model, data, q, v, ...)`.
//!
//! Generalized coordinates: bodies are concatenated in model order, each
//! contributing its joint's coordinates (see [`model`] for the per-joint
//! conventions). A free body (a root with a free joint) has
//! `q = [p (3), r (4: w, x, y, z)]` and `v = [ṗ (3), ω (3)]`, both velocities
//! in the world frame.
//!
//! * [`free`]: mass matrix, bias forces and the variational (momentum- and
//!   energy-conserving) discrete dynamics of free root bodies (other bodies
//!   are skipped);
//! * articulated algorithms, generic over the scalar, one per file as in
//!   Pinocchio: [`kinematics`], [`rnea`] (inverse dynamics),
//!   [`crba`] (mass matrix), [`aba`] (forward dynamics), [`cholesky`]
//!   (sparse `LᵀDL` of `M`), [`rnea_derivatives`] and [`aba_derivatives`]
//!   (analytical partial derivatives, Carpentier & Mansard, RSS 2018);
//! * [`configuration`]: `q ⊕ v` on the joint manifolds and its inverse;
//! * [`urdf`]: URDF import; [`urdf_mesh`]: its mesh collision elements.

pub mod aba;
pub mod aba_derivatives;
#[doc(hidden)]
pub mod articulated;
#[doc(hidden)]
pub mod cholesky;
pub mod configuration;
pub mod crba;
pub mod free;
pub mod kinematics;
pub mod model;
pub mod rnea;
pub mod rnea_derivatives;
pub mod urdf;
pub mod urdf_mesh;

pub use model::{Body, Data, Joint, JointLimits, Model, ModelError};
