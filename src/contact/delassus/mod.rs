//! Contact-space backends: the Delassus operator of an island and the
//! driver shared by the backends that solve for contact impulses in
//! contact space (`implicit_ncp`, `convex`).
//!
//! # The step
//!
//! The unknowns are `y = (v⁺, z_1, …, z_m)`, three per candidate `c`
//! (in candidate order). Each candidate sees the island velocity through
//! its contact-space velocity `ŷ_c(v⁺) = (φ_c(q⁺)/h, v_t1, v_t2)` (the
//! gap at `q⁺ = q ⊕ h v⁺` over the step: a normal velocity `≥ 0` keeps
//! the gap at the end of the step non-negative, as `ipm`'s position-level
//! rows do) and acts through its impulse `f_c(z_c)` (contact frame) and
//! the impulse map `W_c` at `q⁺` ([`space`](crate::contact::space)). The
//! residual is exact (no frozen linearization):
//!
//! * dynamics rows `r_dyn(v⁺) − Σ_c W_cᵀ f_c(z_c)`;
//! * each backend's contact rows in `(ŷ_c, z_c)` ([`Formulation`]).
//!
//! # The solve (f64)
//!
//! Per island, a fixed-point iteration on contact-space linearizations:
//! at `v_k`, with the per-unit dynamics Jacobians `K_u = ∂r_dyn/∂v⁺`, the
//! impulse maps `W_c` and the contact-free residual `r_k`,
//!
//! `v⁺ = v_k + K⁻¹ (Σ_c W_cᵀ f_c − r_k)`, hence `ŷ ≈ A f + c` with
//! `A = W K⁻¹ Wᵀ` (the Delassus operator, [`Delassus`]) and
//! `c = ŷ(v_k) − W K⁻¹ r_k`.
//!
//! The backend solves its contact-space problem in `(A, c)` exactly
//! ([`Formulation::solve_linear`]); `v⁺` is updated; the exact residual is
//! evaluated at the new point, and the loop stops when it is below the
//! tolerance. The linearization leaves out the change of the contact
//! frame and lever arms with `v⁺` (the geometric stiffness, `O(h)`), so
//! the loop converges linearly with a small rate (2–4 outer iterations at
//! h = 0.01) and its fixed point is the root of the exact residual.
//!
//! # Derivatives and other scalars
//!
//! The solve runs in f64 (the problem's primal values); in a scalar with
//! derivative parts the root is then refined by
//! [`Scalar::DERIVATIVE_ORDER`] Newton steps on the exact residual in that
//! scalar with the f64 Jacobian at the root (each step makes one more
//! derivative order exact; the primal part does not move). The Jacobian's
//! inverse is the pseudo-inverse: with redundant contacts (a box's four
//! corners on a plane) the impulses are not unique and `∂r/∂y` is
//! singular, but `v⁺` and its derivatives are unique; the minimum-norm
//! solution has the right velocity rows. The same solve serves `ift`
//! ([`pinv_solve`]).
//!
//! # Files
//!
//! The module keeps its name (`contact::delassus`; issue 48's
//! `contact_space/` would rename a path that `lcp`, `convex`,
//! `implicit_ncp` and `diff` import) and is a folder by operation:
//! `operator.rs` (the Delassus operator [`Delassus`], scales, contact
//! velocities), `residual.rs` (the exact residual, `residual`),
//! `driver.rs` (the per-island linearization loop and [`solve`] /
//! [`solve_f64`]), `fallback.rs` (the damped-Newton and barrier
//! fallbacks of a loop that stalls), `restitution.rs` (the restitution
//! bias) and `derivative.rs` (the pseudo-inverse solves of `ift`,
//! [`pinv_solve`]); the [`Formulation`] contract here.

use nalgebra::{Dyn, Matrix3xX, Vector3};

use crate::Scalar;
use crate::contact::backend::{
    JacobianDual, dense_jacobian, dual_jacobian, stacked_root, with_cast,
};
use crate::contact::candidates::{
    Candidate, CandidateKey, DetectScratch, Partner, candidates_into, pair_mu, penetrating_into,
};
use crate::contact::island::{Island, islands};
use crate::contact::space::evaluate::{Eval, evaluate, evaluate_residual};
use crate::contact::{
    ContactBackend, ContactImpulse, FrictionCone, SolveError, SolveStats, StepProblem, StepSolution,
};
use crate::dynamics::articulated::{articulated_residual, articulated_velocity};
use crate::dynamics::free::{
    NewtonParams, free_flight_velocity, integrate_model, momentum_residual,
};
use crate::linalg::{BlockSvd, inverse_by_blocks};
use crate::math::{DMat, DVec};

/// Unknowns per candidate.
pub const Z: usize = 3;

mod derivative;
mod driver;
mod fallback;
mod operator;
mod residual;
mod restitution;

pub use derivative::*;
pub use driver::*;
use fallback::*;
pub use operator::*;
pub use residual::*;
pub use restitution::*;

/// What a contact-space backend supplies to the shared driver.
pub trait Formulation: ContactBackend<Structure = Structure> {
    /// Whether the root (the unknowns `z` or the impulses) moves with the
    /// per-contact impulse scales ([`scales`]), so that the derivative
    /// methods need the scales' own derivatives (default). Where the
    /// scales only weigh rows that vanish at the root or choose pieces on
    /// primal values (`lcp`), `residual` takes the forward solve's f64
    /// scales ([`Structure::scale`]) as constants instead of recomputing
    /// them in the scalar type for every evaluation (an articulated
    /// Delassus operator and its factorization each time).
    const SCALE_MOVES_ROOT: bool = true;

    /// Whether [`contact_rows`](Formulation::contact_rows) calls its
    /// `at_times` argument (`Aᵀ g`, `convex`). Where it does not, the
    /// exact residual is evaluated without building the Delassus
    /// operator (a factorization of the island's mass matrix in the
    /// scalar type), and `at_times` must not be called.
    const ROWS_USE_DELASSUS: bool = true;

    /// Whether polishing a converged root also goes on while the update
    /// of `v` shrinks, where the residual already sits at round-off
    /// (`convex`; default: the residual alone decides). A mode of light
    /// links that no contact row holds (a leg moving on its resting foot,
    /// a capsule rolling on its crossings) is weighted by its small
    /// inertia in the dynamics rows, so a residual at round-off (1e-15)
    /// can leave `v` 1e-11 off there, and the linearization shrinks that
    /// error only linearly; central differences of the step see it as
    /// noise of that size divided by ε. A formulation whose step map is
    /// smooth everywhere (`convex`) is compared column by column against
    /// central differences, so it polishes on; the others keep the
    /// residual criterion (their roots sit on kinks where the extra
    /// iterations can move a redundant contact's split of the impulse).
    const POLISH_UPDATE: bool = false;

    /// Candidate margin (m) at `q` and the cap of outer iterations.
    fn driver(&self) -> DriverParams;

    /// Refuses what the formulation does not model (before solving).
    fn refuse(&self, p: &StepProblem<'_, f64>) -> Result<(), SolveError> {
        if p.friction_cone == FrictionCone::Pyramid {
            return Err(SolveError::Unsupported {
                backend: Self::NAME,
                what: "the pyramid friction cone (it solves the exact Coulomb cone)",
            });
        }
        Ok(())
    }

    /// The contact-space problem of one linearization:
    /// the unknowns `z` (three per contact) with `ŷ = A f(z) + c`, from
    /// the previous outer iterate's `z0` when there is one. `scale` is the
    /// per-contact impulse scale (`1 / A_nn`); `accept` the residual
    /// (∞-norm) at which a stalled inner solve may still hand its best
    /// point to the linearization loop (inexact Newton: a thousandth of
    /// the current exact residual, at least a tenth of the step's
    /// tolerance). Adds its iteration counts to `stats`.
    fn solve_linear(
        &self,
        a: &DMat<f64>,
        c: &DVec<f64>,
        mu: &[f64],
        scale: &[f64],
        z0: Option<&DVec<f64>>,
        accept: f64,
        stats: &mut InnerStats,
    ) -> Result<DVec<f64>, SolveError>;

    /// Impulse (contact frame) of one contact from its unknowns.
    fn impulse<T: Scalar>(&self, mu: T, scale: T, z: &Vector3<T>) -> Vector3<T>;

    /// The contact rows of one island at the exact point: `yhat[c]` is
    /// `ŷ_c(v⁺)`, `z[c]` the unknowns; `at_times` applies the transpose
    /// of the island's Delassus operator at this point (`Aᵀ g` for
    /// contact-space `g`).
    #[allow(clippy::too_many_arguments)]
    fn contact_rows<T: Scalar>(
        &self,
        mu: &[T],
        scale: &[T],
        yhat: &[Vector3<T>],
        z: &[Vector3<T>],
        at_times: &dyn Fn(&[Vector3<T>]) -> Vec<Vector3<T>>,
        out: &mut [Vector3<T>],
    );

    /// Polishes the f64 root `y` of the exact residual (default: as it
    /// is). `convex` takes Newton steps on it: its `∂r/∂y` is
    /// ill-conditioned, so finite differences need the root to round-off.
    fn polish_root(
        &self,
        _p: &StepProblem<'_, f64>,
        _s: &Structure,
        y: DVec<f64>,
    ) -> Result<DVec<f64>, SolveError> {
        Ok(y)
    }

    /// Whether the contact unknowns `z` and contact-space velocities `ŷ`
    /// (restitution bias included) lie where the formulation's contact
    /// rows are defined (default: everywhere). `convex` needs its
    /// barriers' arguments positive.
    fn admissible(&self, _yhat: &[Vector3<f64>], _z: &[Vector3<f64>]) -> bool {
        true
    }

    /// The weight κ of a barrier formulation's barriers (default `None`:
    /// no barrier). `newton_fallback` then follows the barrier path
    /// from a larger weight down to κ ([`Formulation::with_barrier`],
    /// [`Formulation::centred`]).
    fn barrier(&self) -> Option<f64> {
        None
    }

    /// The formulation with barrier weight `kappa` (default `None`: no
    /// barrier).
    fn with_barrier(&self, _kappa: f64) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// The unknowns at which the contact rows vanish for the contact-space
    /// velocities `yhat` (restitution bias included) and the Delassus
    /// operator `a` at the point: a centred point of a barrier
    /// formulation, where its fallback starts (default `None`: not
    /// supplied; also `None` when `yhat` is outside the domain).
    fn centred(
        &self,
        _a: &DMat<f64>,
        _yhat: &[Vector3<f64>],
        _mu: &[f64],
        _scale: &[f64],
    ) -> Option<Vec<Vector3<f64>>> {
        None
    }

    /// The smooth piece of each contact at the root, for
    /// [`ContactBackend::same_structure`] (empty: one piece).
    fn pieces(&self, _mu: &[f64], _z: &[Vector3<f64>]) -> Vec<u8> {
        Vec::new()
    }

    /// Newton's impact law: `Some(δ)` adds to the normal row of every
    /// contact whose gap at the start of the step is at most `δ` (m) the
    /// restitution bias `e · min(v_n⁻, 0)` ([`restitution_bias`]), so
    /// that the row reads `φ(q⁺)/h + e v_n⁻ ≥ 0`; `ccd` is the problem's
    /// continuous-collision flag. Default `None`: inelastic contacts.
    fn bounce_gap(&self, _ccd: bool) -> Option<f64> {
        None
    }
}

/// Driver settings of a contact-space backend.
#[derive(Clone, Copy, Debug)]
pub struct DriverParams {
    /// Candidate margin at `q` (m).
    pub margin: f64,
    /// Outer (linearization) iteration cap (the tolerance on the exact
    /// residual's ∞-norm is the step's shared `tolerance`).
    pub max_outer: usize,
}

/// Iteration counts of the contact-space solves of a step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InnerStats {
    /// Outer (linearization) iterations, summed over islands.
    pub outer: usize,
    /// Inner iterations, summed.
    pub iterations: usize,
    /// Inner iterations whose full Newton step was accepted.
    pub newton_accepted: usize,
    /// Inner solves.
    pub solves: usize,
}

/// What the f64 solve decided: the candidates, each one's impulse scale
/// and smooth piece.
#[derive(Clone, Debug)]
pub struct Structure {
    /// Candidates in `y` order.
    pub candidates: Vec<Candidate<f64>>,
    /// Per-candidate impulse scale.
    pub scale: Vec<f64>,
    /// Per-candidate smooth piece at the root ([`Formulation::pieces`]).
    pub pieces: Vec<u8>,
}

impl Structure {
    /// Whether two solves settled on the same candidates and pieces.
    pub fn same(a: &Structure, b: &Structure) -> bool {
        let key = |s: &Structure| {
            let mut k: Vec<(CandidateKey, u8)> = s
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (c.key(), s.pieces.get(i).copied().unwrap_or(0)))
                .collect();
            k.sort_unstable();
            k
        };
        key(a) == key(b)
    }
}
