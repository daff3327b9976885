//! Contact backends: the pluggable part of a time step.
//!
//! A backend receives a [`StepProblem`] — the model, its geometry, the state
//! `(q, v)`, the applied generalized forces `u`, gravity and the time step —
//! and returns the next velocity and configuration with the contact impulses
//! ([`StepSolution`]). It builds its residual from the shared pieces:
//!
//! * `dynamics::free::momentum_residual` / `rotational_jacobian`: the
//!   discrete (variational) dynamics `r_dyn(v⁺)`, to which the backend adds
//!   `−Jᵀ(q⁺) λ`;
//! * `dynamics::free::integrate_model`: `q⁺ = q ⊕ h v⁺`;
//! * `collision::`: contact candidates, gaps and Jacobians.
//!
//! Backends are generic over the scalar (running one in a dual scalar is the
//! `unrolled` derivative method) and are chosen by name ([`SolverKind`]).
//! Each one documents the formulation it solves. The contract every
//! backend implements is [`ContactBackend`] ([`backend`]); the list of
//! backends is the registry (below in this file, macro in
//! [`registry`]), the only place that names them all.
//!
//! # The toolkit
//!
//! A backend is a thin layer on shared pieces, each written once:
//!
//! * `candidates`: candidate features at `q` (broad phase, closed-form
//!   features, pairs of convex parts), pair material and friction law;
//! * `island`: units (free bodies, robots) connected by contact, gather
//!   and scatter;
//! * `space`: contact kinematics at `q⁺(v⁺)` (closed-form pairs and conic
//!   proximity, free bodies and robot links), contact frames, the
//!   impulse map `W` and contact Jacobians, the island evaluation, the
//!   generated `#[kernel]`s and their parameter partials;
//! * `law`: friction laws (frictionless, exact cone, pyramid): local
//!   unknowns, residual rows, Jacobians, impulse;
//! * `mehrotra`: the interior-point driver on an island, with its
//!   factorizations (`linalg`) and the island Jacobian of the
//!   implicit-function derivatives;
//! * `math::cone` (a layer down): the orthant and second-order-cone algebra.

pub mod backend;
pub mod free_flight;
pub mod registry;

// The toolkit every backend is built from (hidden from the documentation
// like the backends' internals; reached by tests).
#[doc(hidden)]
pub mod candidates;
#[doc(hidden)]
pub mod delassus;
#[doc(hidden)]
pub mod island;
#[doc(hidden)]
pub mod law;
#[doc(hidden)]
pub mod mehrotra;
#[doc(hidden)]
pub mod space;

use backend::param_keys;
use registry::{backends, str_eq};

pub use backend::{ContactBackend, Feature, Param, dense_solve};
pub use registry::UnknownBackend;

// The registry: the one list of backends (see `registry`). Each line
// declares the backend's module (its folder `contact/<name>/`) and
// generates `SolverKind`, `BackendParams`, `Workspace` and the one match.
backends! {
    $;
    default: Ipm;
    planned: [];
    /// Primal-dual interior point on the nonlinear complementarity problem
    /// (Dojo / Silico).
    ipm => Ipm: Ipm,
    /// Silico's single-level residual: contact dynamics and the KKT
    /// conditions of every pair's conic collision program in one
    /// interior-point solve (`contact::single_level`).
    single_level => SingleLevel: SingleLevel,
    /// The `ipm` step with each pair's conic collision program solved
    /// separately at every Newton iterate (`contact::bilevel`).
    bilevel => Bilevel: Bilevel,
    /// Todorov's implicit complementarity (ICRA 2010): a hybrid unknown
    /// per contact, exact Coulomb cone, Gauss–Newton / dogleg in contact
    /// space (`contact::implicit_ncp`).
    implicit_ncp => ImplicitNcp: ImplicitNcp,
    /// Todorov's convex, smooth and invertible contact model (ICRA 2011),
    /// with inverse dynamics (`contact::convex`).
    convex => Convex: Convex,
    /// Velocity-level boxed LCP (Nimble / Jade): Dantzig pivoting with
    /// the moving friction-bound ratio test, fallbacks, least-squares
    /// stabilization (`contact::lcp`).
    lcp => Lcp: Lcp,
    /// Beker et al.'s soft-minimum contact model over oriented point
    /// clouds: smooth contact forces of the state, no solver
    /// (`contact::soft`).
    soft => Soft: Soft,
}

// The backends and their tuning, documented here; their modules hold the
// solvers' internals (reached by tests, hidden from the documentation).
pub use bilevel::Bilevel;
pub use convex::Convex;
pub use free_flight::FreeFlight;
pub use implicit_ncp::ImplicitNcp;
pub use ipm::{Ipm, Params as IpmParams};
pub use lcp::Lcp;
pub use single_level::SingleLevel;
pub use soft::Soft;

use crate::Scalar;
use crate::dynamics::Model;
use crate::dynamics::free::DynamicsError;
use crate::geometry::{AttachedShape, Combine, Material, Shape, StaticGeometry};
use crate::math::{DVec, Vec3};

/// Friction cone model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FrictionCone {
    /// Exact Coulomb cone ‖λ_t‖ ≤ μ λ_n (second-order cone).
    #[default]
    Exact,
    /// Four-sided pyramid |λ_tx| + … linearization.
    Pyramid,
}

/// Solver tuning shared by the interior-point family (defaults from
/// Dojo / Silico).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverParams {
    /// Complementarity relaxation ρ (`λ ∘ s = ρ` at the solution). Default 1e-6.
    pub rho: f64,
    /// Residual tolerance. Default 1e-8.
    pub tolerance: f64,
    /// Iteration cap. Default 50.
    pub max_iterations: usize,
    /// When a solve reaches the iteration cap, return its last iterate
    /// (and set [`SolveStats::capped`]) instead of
    /// [`SolveError::MaxIterations`]. That iterate does not satisfy the
    /// step's equations; Silico's simulations carry on this way, which the
    /// experiments of `experiments::silico` need to compare like
    /// with like. Default false.
    pub accept_at_cap: bool,
}

impl Default for SolverParams {
    fn default() -> Self {
        SolverParams {
            rho: 1e-6,
            tolerance: 1e-8,
            max_iterations: 50,
            accept_at_cap: false,
        }
    }
}

/// Everything a backend needs for one step.
#[derive(Clone, Copy, Debug)]
pub struct StepProblem<'a, T: Scalar> {
    /// The multibody model.
    pub model: &'a Model<T>,
    /// Collision shape of each body (`None`: no collision).
    pub shapes: &'a [Option<Shape<T>>],
    /// Material of each body.
    pub materials: &'a [Material<T>],
    /// Fixed geometry.
    pub statics: &'a [StaticGeometry<T>],
    /// Collision shapes of robot links (several per link allowed; the
    /// link's material is `materials[body]`).
    pub link_shapes: &'a [AttachedShape<T>],
    /// How contact friction is combined from two materials.
    pub friction_combine: Combine,
    /// How restitution is combined from two materials.
    pub restitution_combine: Combine,
    /// Configuration at the start of the step.
    pub q: &'a DVec<T>,
    /// Velocity of the previous step.
    pub v: &'a DVec<T>,
    /// Applied generalized forces (world-frame force and torque per body).
    pub u: &'a DVec<T>,
    /// Gravity.
    pub gravity: Vec3<T>,
    /// Time step h.
    pub h: T,
    /// Friction cone model.
    pub friction_cone: FrictionCone,
    /// Solver tuning.
    pub params: &'a SolverParams,
    /// Continuous collision (`[sim] ccd`; only backends that declare
    /// [`Feature::Ccd`] see it set, the others are refused before).
    pub ccd: bool,
}

/// One contact's result.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactImpulse<T: Scalar> {
    /// Index of the first body.
    pub body_a: usize,
    /// Index of the second body, `None` for static geometry.
    pub body_b: Option<usize>,
    /// Contact point (world frame, at q⁺).
    pub point: Vec3<T>,
    /// Contact normal pointing from b to a (world frame).
    pub normal: Vec3<T>,
    /// Normal impulse.
    pub normal_impulse: T,
    /// Tangential impulse (world frame).
    pub tangent_impulse: Vec3<T>,
    /// Signed gap at q⁺ (negative: penetration).
    pub gap: T,
}

/// Solver statistics of one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveStats {
    /// Iterations taken.
    pub iterations: usize,
    /// Final residual norm (∞).
    pub residual: f64,
    /// Final complementarity (max λᵢ sᵢ).
    pub complementarity: f64,
    /// Largest penetration depth at q⁺ (≥ 0).
    pub max_penetration: f64,
    /// Number of active contact candidates.
    pub contacts: usize,
    /// The solve reached the iteration cap and returned its last iterate
    /// ([`SolverParams::accept_at_cap`]).
    pub capped: bool,
}

/// A backend's answer.
#[derive(Clone, Debug)]
pub struct StepSolution<T: Scalar> {
    /// Next configuration q⁺.
    pub q_next: DVec<T>,
    /// Next velocity v⁺.
    pub v_next: DVec<T>,
    /// Contact impulses.
    pub contacts: Vec<ContactImpulse<T>>,
    /// Statistics.
    pub stats: SolveStats,
}

impl<T: Scalar> StepSolution<T> {
    /// An empty solution, to be written by a step
    /// ([`ContactBackend::solve_into`]).
    pub fn empty() -> Self {
        StepSolution {
            q_next: DVec::zeros(0),
            v_next: DVec::zeros(0),
            contacts: Vec::new(),
            stats: SolveStats::default(),
        }
    }
}

/// A backend's failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// The iteration cap was reached before convergence.
    #[error(
        "no convergence after {iters} iterations (residual {residual:e}, complementarity {complementarity:e})"
    )]
    MaxIterations {
        /// Iterations taken.
        iters: usize,
        /// Final residual norm.
        residual: f64,
        /// Final complementarity.
        complementarity: f64,
    },
    /// The dynamics could not be evaluated (e.g. rotation too large).
    #[error(transparent)]
    Dynamics(#[from] DynamicsError),
    /// A singular linear system.
    #[error("singular linear system in {0}")]
    Singular(&'static str),
    /// The unknowns or contact candidates handed to a contact-space
    /// function do not match the structure they are read with (a
    /// candidate key or convex part it does not hold, a candidate body
    /// without a shape, unknowns of the wrong length): a caller's
    /// inconsistency, not a singular system.
    #[error("the contact structure does not match: {what}")]
    Mismatch {
        /// What does not match.
        what: &'static str,
    },
    /// The problem handed to a backend's solver is malformed (a bound,
    /// a coefficient or a size outside what the formulation accepts):
    /// not a singular system, and not a failure to converge.
    #[error("invalid input to the `{backend}` solver: {what}")]
    InvalidInput {
        /// Backend name.
        backend: &'static str,
        /// What is wrong.
        what: &'static str,
    },
    /// The contact problem has no feasible point (e.g. `convex`: no
    /// impulse keeps every candidate's normal velocity non-negative):
    /// not a singular system.
    #[error("the `{backend}` contact problem is infeasible: {what}")]
    Infeasible {
        /// Backend name.
        backend: &'static str,
        /// What cannot be satisfied.
        what: &'static str,
    },
    /// An iterate of the backend's solver became non-finite (NaN or
    /// infinite): not a singular system.
    #[error("non-finite iterate in the `{backend}` solver: {what}")]
    NonFinite {
        /// Backend name.
        backend: &'static str,
        /// Where it happened.
        what: &'static str,
    },
    /// The step's `v⁺` is not unique: `∂r/∂y` is singular and its null
    /// space moves the velocities (redundant contacts whose impulse
    /// distribution changes `v⁺`, e.g. through Coulomb friction), so the
    /// step map is set-valued there and has no derivative
    /// (`delassus::pinv_unique`).
    #[error(
        "the step is set-valued: the contact impulses are not unique and their distribution moves the velocities (null space of the residual Jacobian of dimension {null_dims}, velocity part {velocity_part:.1e}); the derivative is undefined at this state"
    )]
    NotUnique {
        /// Dimension of the numerical null space of `∂r/∂y`.
        null_dims: usize,
        /// Frobenius norm of its unit basis restricted to the `v⁺` rows.
        velocity_part: f64,
    },
    /// `∂r/∂y` is singular (redundant contacts) and the derivative's
    /// right-hand side column `column` is not in its range (relative miss
    /// `miss` of the least-squares solution): that input moves the
    /// contacts in a way no motion of the bodies follows (e.g. a size
    /// change in a statically indeterminate stack), so the step has no
    /// derivative with respect to it (a kink: some contact opens or
    /// closes on either side). The derivative layer names the input.
    #[error(
        "singular residual Jacobian: the right-hand side column {column} is not in its range (relative miss {miss:.1e})"
    )]
    OutOfRange {
        /// Column of the right-hand side (the input's index).
        column: usize,
        /// Relative miss of the minimum-norm solution.
        miss: f64,
    },
    /// A conic collision program failed (`single_level`, `bilevel`).
    #[error(transparent)]
    Collision(#[from] crate::collision::conic::ProximityError),
    /// The backend does not model part of the problem.
    #[error("the `{backend}` backend does not support {what}")]
    Unsupported {
        /// Backend name.
        backend: &'static str,
        /// What it does not support.
        what: &'static str,
    },
    /// The backend does not model part of the problem for one pair of
    /// shapes (named by their bodies or static geometry).
    #[error("the `{backend}` backend does not support {what} between `{}` and `{}`", pair[0], pair[1])]
    UnsupportedPair {
        /// Backend name.
        backend: &'static str,
        /// What it does not support.
        what: &'static str,
        /// The owners (body or static geometry names) of the two shapes.
        pair: Box<[String; 2]>,
    },
}

impl SolveError {
    /// Robot link collision shapes are not modelled by `single_level` and
    /// `bilevel`: they refuse a problem that has them instead of ignoring
    /// them.
    pub fn refuse_link_shapes<T: Scalar>(
        backend: &'static str,
        p: &StepProblem<'_, T>,
    ) -> Result<(), SolveError> {
        if p.link_shapes.is_empty() {
            Ok(())
        } else {
            Err(SolveError::Unsupported {
                backend,
                what: "collision shapes on robot links (use `ipm`)",
            })
        }
    }
}
