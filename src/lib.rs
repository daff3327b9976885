//! # dualsim
//!
//! Differentiable rigid-body simulation with contact, written once and
//! generic over the [`Scalar`] type: the same code runs with `f64`, with
//! num-dual's dual numbers (gradients), hyper-dual / `Dual2` numbers
//! (Hessians) and with a user's own numeric type.
//!
//! Layers (arrows point one way): [`scalar`] ← [`math`] ← [`geometry`] ←
//! [`dynamics`] ← [`contact`] ← [`sim`] ← [`scene`].
//!
//! ```
//! use dualsim::prelude::*;
//! use num_dual::DualSVec64;
//!
//! // A ball thrown upwards; derivative of its height after 10 steps
//! // with respect to the initial vertical velocity.
//! let mut world = World::<f64>::new(0.01);
//! world.add_body("ball", 1.0, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! let w = world.cast::<DualSVec64<1>>();
//! let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
//! x0.v[2] = DualSVec64::from_re(3.0).derivative(0);
//! let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 10).unwrap();
//! let z = traj.last().q[2];
//! let dz_dv0 = z.eps.unwrap_generic(nalgebra::U1, nalgebra::U1)[0];
//! assert!((dz_dv0 - 0.1).abs() < 1e-12);
//! ```
//!
//! # The API
//!
//! | module | for |
//! |---|---|
//! | [`prelude`] | the names most programs need, in one `use` |
//! | [`scene`] | load a scene file ([`scene::load`]) into a [`sim::World`], its initial state and controls |
//! | [`sim`] | [`sim::step`], [`sim::rollout`], batched rollouts, penetration measures |
//! | [`diff`] | derivatives of a step or a rollout ([`diff::Method`]: `ift`, `lift`, `unrolled`, `fd`) and [`diff::check()`] |
//! | [`opt`] | trajectory optimization and system identification ([`opt::optimize`]) |
//! | [`scalar`] | the [`Scalar`] trait and the dual / hyper-dual scalars |
//! | [`math`] | vectors, rotations, poses |
//! | [`geometry`] | shapes and materials |
//! | [`dynamics`] | the rigid-body model, URDF robots, RNEA / ABA / CRBA and their derivatives |
//! | [`collision`] | closed-form pair queries (gaps, normals) between primitive shapes |
//! | [`contact`] | the contact backends ([`contact::SolverKind`] lists them) and their parameters |
//! | [`viz`] | trajectory JSON and the self-contained HTML viewer |
//!
//! Solver internals that the tests reach (the interior-point and conic
//! machinery, generated kernels, the experiments) keep their public paths
//! but are hidden from this documentation: they are not a stable API.
#![warn(missing_docs)]

extern crate self as dualsim;

pub mod collision;
pub mod contact;
// internals of the command line, the experiments and the tests: reachable
// at their paths, hidden from the documentation (see "The API" above)
#[doc(hidden)]
pub mod demo;
pub mod diff;
pub mod dynamics;
#[doc(hidden)]
pub mod experiments;
pub mod geometry;
#[doc(hidden)]
pub mod linalg;
pub mod math;
pub mod opt;
pub mod scalar;
pub mod scene;
pub mod sim;
pub mod viz;

#[doc(hidden)]
pub use dualsim_macros::__kernel_inline;
pub use dualsim_macros::kernel;
/// The nalgebra dualsim is built on (`dualsim::nalgebra::DMatrix`): use it
/// to match versions with the vectors and matrices of the API.
pub use nalgebra;
/// The num-dual dualsim is built on (`dualsim::num_dual::Dual64`): use it
/// to match versions with the dual numbers the API takes.
pub use num_dual;
pub use scalar::Scalar;

/// The names most programs need.
pub mod prelude {
    pub use crate::contact::{FrictionCone, SolverKind, SolverParams};
    pub use crate::diff::{DiffOptions, Method, RolloutJacobian, rollout_jacobian, step_jacobian};
    pub use crate::dynamics::{Data, Model};
    pub use crate::geometry::{Material, Shape, StaticGeometry};
    pub use crate::math::{DVec, Mat3, Pose, Quat, Vec3};
    pub use crate::scalar::Scalar;
    pub use crate::scene::{Scene, SceneError};
    pub use crate::sim::{Controls, SimError, State, StepOutput, Trajectory, World, rollout, step};
}
