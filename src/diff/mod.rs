//! Derivatives of steps and rollouts, several ways.
//!
//! A step maps the state `x = (q, v)`, the control `u` and the model
//! parameters to the next state `x⁺`. Every backend whose step is the root
//! of a residual `r(y; θ) = 0` (`y` holds `v⁺` first, then the backend's
//! other unknowns) implements [`ImplicitStep`], and then four methods give
//! the same Jacobian:
//!
//! | method | how |
//! |---|---|
//! | [`Method::Ift`] | solve in f64; `dy/dθ = −(∂r/∂y)⁻¹ ∂r/∂θ`, the solves with `∂r/∂y` by the backend's own block-structured factorization at the solution ([`ImplicitStep::solve_jacobian`], factored once for all columns); `∂r/∂θ` exact: by default from generated `#[kernel]` Jacobians ([`ImplicitStep::kernel_partials`], see [`partials`]; free bodies and the closed-form contact pairs), otherwise ([`Partials::Dual`], robots) by dual-number evaluation of the generic residual in column blocks of 8 |
//! | [`Method::Lift`] | solve in f64, then `k` Newton steps of the residual *in the scalar `T`* with the f64 factorization (`k` = derivative order): the dual parts are exact because they are nilpotent; works for any num-dual type (gradients, Hessians) |
//! | [`Method::Unrolled`] | the whole solver in a dual scalar |
//! | [`Method::Adjoint`] | rollouts only: reverse accumulation of the `ift` step Jacobians, flat in the number of inputs; with [`adjoint`] also gradients, exact Hessians and Hessian–vector products of rollout costs by the (second-order) adjoint |
//! | [`Method::Fd`] | central differences, perturbing on the manifold (`q ⊕ δ`); with [`DiffOptions::fd_extrapolate`] (as in [`check()`]) also at 2ε, Richardson-extrapolated where smooth |
//!
//! Inputs are named by [`Param`]; outputs are the next state in the tangent
//! space of the nominal next state: rows `0..nv` are `q⁺(θ) ⊖ q⁺(θ₀)` and
//! rows `nv..2nv` are `v⁺`.
//!
//! # Relaxation as smoothing
//!
//! The interior-point backends return the point of the central path with
//! complementarity `ρ`. [`DiffOptions::rho`] sets the ρ at which the
//! derivative is taken, independently of the ρ used to simulate (Silico
//! V-D): small ρ gives the exact, possibly discontinuous, derivative of the
//! hard contact model; larger ρ a smoothed one.

pub mod adjoint;
pub mod batch;
pub mod check;
pub mod complementarity;
mod implicit;
pub mod names;
#[doc(hidden)]
pub use crate::contact::space::partials;
pub mod rollout;
mod seed;
mod step;

pub use crate::contact::dense_solve;
pub use adjoint::{Linearization, StageCost, rollout_gradient, rollout_hessian, rollout_hvp};
pub use batch::batch_rollout_jacobians;
pub use check::{
    BlockReport, CheckOptions, CheckReport, CheckStatus, RolloutCheckOptions, RolloutReport, check,
    check_rollout, compare_rollout_jacobian,
};
pub use complementarity::{AwareGradient, Gradient, aware_rollout_gradient};
pub use implicit::ImplicitStep;
pub use rollout::{Input, RolloutJacobian, fd, rollout_jacobian, unrolled};
pub use seed::{Param, domain_room, seeded};
pub use step::{
    DiffOptions, KINK_SLOPE_JUMP, NonSmooth, Partials, StepJacobian, jumps_within, lift_step,
    second_difference_grows, second_difference_is_quadratic, step_jacobian, step_jacobian_with,
};

use crate::contact::SolveError;
use crate::sim::SimError;

/// A derivative method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Implicit function theorem at the f64 solution.
    Ift,
    /// f64 solve + Newton refinement in the dual scalar.
    Lift,
    /// The whole solver in dual numbers.
    Unrolled,
    /// Central finite differences on the manifold.
    Fd,
    /// Reverse accumulation of the `ift` step Jacobians through a rollout
    /// ([`adjoint`]): one adjoint per output row, so the cost does not
    /// grow with the number of inputs. For one step it is `ift`.
    Adjoint,
}

impl Method {
    /// All methods, in report order.
    pub const ALL: [Method; 5] = [
        Method::Ift,
        Method::Lift,
        Method::Unrolled,
        Method::Fd,
        Method::Adjoint,
    ];

    /// The methods that differ for one step (`check` compares them;
    /// `adjoint` is `ift` for one step).
    pub const STEP: [Method; 4] = [Method::Ift, Method::Lift, Method::Unrolled, Method::Fd];

    /// The method's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Ift => "ift",
            Method::Lift => "lift",
            Method::Unrolled => "unrolled",
            Method::Fd => "fd",
            Method::Adjoint => "adjoint",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// A failed derivative computation.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DiffError {
    /// The simulation itself failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The residual Jacobian ∂r/∂y is singular at the solution.
    #[error(
        "the residual Jacobian is singular at the solution (the implicit function theorem does not apply): singular {0}"
    )]
    Singular(&'static str),
    /// The step has no derivative with respect to one input: `∂r/∂y` is
    /// singular (redundant contacts) and that input's column of `∂r/∂θ`
    /// is not in its range ([`SolveError::OutOfRange`]).
    #[error(
        "the step has no derivative with respect to {input}: the residual Jacobian is singular (redundant contacts) and this input moves the residual off its range (relative miss {miss:.1e}), so some contact opens or closes on either side of it"
    )]
    NoDerivative {
        /// The input (`Param`'s debug form).
        input: String,
        /// Relative miss of the minimum-norm solution.
        miss: f64,
    },
    /// A failure at one step of a rollout (`check`'s sampled steps).
    #[error("step {step}: {source}")]
    AtStep {
        /// The step index (0 = the first step from the initial state).
        step: usize,
        /// The failure.
        source: Box<DiffError>,
    },
    /// A parameter does not exist in this world.
    #[error("{0}")]
    BadParam(String),
    /// A derivative option that this backend or method does not implement
    /// (refused, never ignored).
    #[error(
        "option `{option}` is not supported with backend `{backend}` and method `{method}`: {why}"
    )]
    Unsupported {
        /// The option and its value (e.g. `--gradient complementarity_aware`).
        option: &'static str,
        /// The world's contact backend.
        backend: &'static str,
        /// The derivative method.
        method: &'static str,
        /// What is supported instead.
        why: &'static str,
    },
}

impl<T: crate::Scalar> From<crate::sim::RolloutError<T>> for DiffError {
    /// The failing step's error (the completed trajectory is dropped).
    fn from(e: crate::sim::RolloutError<T>) -> Self {
        DiffError::Sim(e.error)
    }
}

impl From<SolveError> for DiffError {
    fn from(e: SolveError) -> Self {
        DiffError::Sim(SimError::Solve(e))
    }
}
