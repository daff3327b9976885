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
#![warn(missing_docs)]

extern crate self as dualsim;

pub mod collision;
pub mod contact;
pub mod demo;
pub mod diff;
pub mod dynamics;
pub mod experiments;
pub mod geometry;
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
pub use scalar::Scalar;

/// The names most programs need.
pub mod prelude {
    pub use crate::contact::{FrictionCone, SolverKind, SolverParams};
    pub use crate::dynamics::{Data, Model};
    pub use crate::geometry::{Material, Shape, StaticGeometry};
    pub use crate::math::{DVec, Mat3, Pose, Quat, Vec3};
    pub use crate::scalar::Scalar;
    pub use crate::sim::{rollout, step, Controls, SimError, State, StepOutput, Trajectory, World};
}
