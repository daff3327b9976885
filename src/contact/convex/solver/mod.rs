//! Contact-space solver of Todorov's convex, smooth and invertible contact
//! model (E. Todorov, "A convex, smooth and invertible contact model for
//! trajectory optimization", ICRA 2011), forward and inverse.
//!
//! # The model
//!
//! There are `n` contacts. Contact `k` has the impulse
//! `f_k = (f_N, f_T1, f_T2)` when `dims[k] == 3` (friction coefficient
//! `μ_k > 0`) or `f_k = (f_N)` when `dims[k] == 1` (frictionless); the
//! per-contact entries are concatenated into `f ∈ Rᵐ`, `m = Σ dims`, and the
//! same layout is used for the contact velocity `v = A f + c`. Given the
//! contact-space inverse inertia `A` (m×m, PSD in theory, possibly
//! rank-deficient and possibly slightly non-symmetric in practice), the bias
//! velocity `c`, the diagonal regularizer `R` (entries `> 0`) and the barrier
//! weight `κ > 0`, the barriers are
//!
//! ```text
//! d_V(v) = −κ Σ_k log v_N,k
//! d_F(f) = −κ Σ_k [log f_N,k + log(μ_k² f_N,k² − ‖f_T,k‖²)]   (frictionless: −κ log f_N,k)
//! ```
//!
//! **Forward** (`(A, c) → f`): `f` solves the stationarity equation
//!
//! ```text
//! g(f) = (A + R) f + c + ∇d_F(f) + Aᵀ ∇d_V(A f + c) = 0
//! ```
//!
//! on the strictly feasible set `f_N > 0`, `‖f_T‖ < μ f_N`,
//! `v_N = (A f + c)_N > 0`. For symmetric `A` this is the minimiser of the
//! convex function `Φ(f) = ½ fᵀ(A + R) f + fᵀc + d_F(f) + d_V(A f + c)`;
//! the solver uses `Φ` only to damp steps far from the solution, and the
//! answer is defined by `g = 0` (with `Aᵀ` in the chain rule) for any `A`.
//!
//! **Inverse** (`(A, v) → (f, c)`): with `A f + c = v` the stationarity
//! becomes `v + R f + ∇d_F(f) + Aᵀ ∇d_V(v) = 0`, i.e. `f` minimises
//! `½ fᵀ R f + fᵀ r + d_F(f)` with `r = v + Aᵀ ∇d_V(v)`. This separates per
//! contact: a frictionless contact has the closed form
//! `f_N = (−r + √(r² + 4 R κ)) / (2R)`, a frictional one is a strictly convex
//! 3-variable problem solved by Newton. Then `c = v − A f`.
//!
//! # Algorithm (forward)
//!
//! 1. **Start.** A warm start `f0` is used if it is strictly feasible, with
//!    its friction pulled 1 % inside the cone. Otherwise the
//!    cold start pushes every contact along its normal,
//!    `f_N,k = (max(−c_N,k, 0) + s_c) / (A_kk + R_k)`, `f_T = 0`, where
//!    `s_c = max(‖c‖∞, √(κ max_i (A_ii + R_i)))` is the velocity scale.
//! 2. **Phase 1** (only if that start is not strictly feasible; Todorov's
//!    "quadratic in v" penalty cannot tell "infeasible" from "not yet").
//!    A barrier method for the margin problem `max t s.t. v_N,k ≥ t,
//!    f_k ∈ cone_k`: damped Newton (Armijo on the objective) on the
//!    self-concordant
//!    `φ_η(f, t) = −t + η [−Σ log(v_N,k − t) − Σ log-cone_k(f) + ½ Σ (f_N,k / F_k)²]`
//!    (`F_k = s_c / (A_kk + R_k)`; the quadratic bounds `f` along directions
//!    that do not change `v`), `η ← η / 10` whenever centred (`λ² ≤ 1`).
//!    It returns the first iterate with every `v_N > 0`. It reports
//!    [`Failure::Infeasible`] when the Farkas vector `y ∝ 1/(v_N − t)` proves
//!    `min_k v_N,k ≤ yᵀc_N + B max_k(w_N,k + μ_k ‖w_T,k‖)₊ ≤ 1e-8 s_c`
//!    (`w = A_Nᵀ y`, for all `f` with `Σ f_N ≤ B = 1e3 Σ F_k`), or when a
//!    centred iterate's duality gap bounds the best margin by
//!    `t + 2 ν η ≤ 1e-8 s_c` (numerically infeasible: covers the degenerate
//!    zero-margin case, e.g. a body wedged between two walls with `c_N = 0`;
//!    `ν = Σ_k (2 + 2 [friction])`). If the budget runs out first:
//!    [`Failure::MaxIterations`] with residual `∞`.
//! 3. **Phase 2: Newton with barrier continuation.** `g = g₀ + κ b` is linear
//!    in `κ`. The first stage is `κ₀ = s_c² / min_k (A_kk + R_k)` (the
//!    problem's natural energy; for a warm start the least-squares fit
//!    `−g₀ᵀb / bᵀb` clamped to `[κ, κ₀]`). Each iteration factors the exact
//!    Jacobian `J = A + R + ∇²d_F + Aᵀ ∇²d_V A` once (symmetric diagonal
//!    equilibration, LU with partial pivoting, one refinement step) and
//!    solves for the corrector `−J⁻¹ g(κ_stage)` and the tangent `−J⁻¹ b`.
//!    * When the stage is centred (Newton decrement `λ² = gᵀJ⁻¹g / κ ≤ 1`),
//!      a predictor–corrector step goes straight to the next stage:
//!      `d = −J⁻¹ g(κ')`. The reduction `κ'/κ` is `10 |1 − α_aff|` clamped
//!      to `[1e-4, 0.1]`, where `α_aff` is how far the step to `κ = 0` gets
//!      before a boundary: 1 − α_aff measures the central path's curvature
//!      (≈ 0 where it is linear in κ, as it is for small κ).
//!    * Otherwise a corrector step at the current stage.
//!    * Step acceptance, always with the fraction-to-boundary rule
//!      (`τ = 0.99` of the distance to the cone and `v_N = 0` boundaries):
//!      while the Newton decrement is above `1e-6`, Armijo backtracking on
//!      the objective `Φ = ½ fᵀ(A + R) f + fᵀc + d_F + d_V` (`Φ/κ` is
//!      self-concordant: steps are `≳ 1/(1 + λ)`, and `Φ` cannot be
//!      decreased by creeping along the boundary, which a residual merit can
//!      and did in tests); near the solution, where `Φ`'s decrease drowns in
//!      rounding, the full step if it reduces `‖g‖₂` (or, `g` weighted by its
//!      own rounding noise, `‖W g‖₂`), else Armijo backtracking on `‖g‖₂`.
//!    * Non-symmetric `A`: up to an asymmetry of `1e-4` of its largest entry
//!      the Newton direction of `g` is used throughout (it still descends
//!      `Φ`, which is checked); beyond, the stages take Newton steps on `Φ`
//!      (gradient `g + ½(Aᵀ − A) f`, Hessian `J` with `A`'s symmetric part),
//!      whose minimiser lies within the asymmetry of the root of `g`, and
//!      once the final stage's decrement is below `1e-6`, Newton on `g`
//!      itself with the residual merit. Tested: asymmetry up to `1e-6`
//!      relative at every κ, `1e-5` at moderate κ; at `≥ 1e-4` and small κ
//!      [`Failure::MaxIterations`] can occur (the symmetric part must stay
//!      PSD for `Φ` to be convex).
//!    * Rescue: two corrector steps shorter than 0.05 in a row, a failed
//!      line search, or 12 correctors at one stage with `λ² > 1` (stuck
//!      against the boundary, or creeping along a cone) multiply `κ_stage` by
//!      100, up to `1e4 κ₀`, and the continuation resumes from there.
//! 4. **Convergence** (final stage, `κ_stage = κ`): `‖g‖∞ ≤ tolerance · s_c`;
//!    or the rounding floor: a full Newton step gained less than a factor 2
//!    on `‖W g‖₂` and every `|g_i| ≤ 4 ε noise_i`, where
//!    `noise_i = Σ_j |J_ij f_j| + |c_i| + κ Σ_k |A_ki| (1 + |c_N,k|/v_N,k) / v_N,k`
//!    is what one ulp of `f` and the rounding of `v = A f + c` move `g_i` by.
//!    With small κ a sliding contact sits so close to its cone (gap `∝ κ`)
//!    that one ulp of `f` moves `g` by far more than `1e-12 s_c`: such an `f`
//!    is as accurate as f64 allows, and [`Stats::residual`] reports the true
//!    `‖g‖∞`. If at that floor some barrier argument (`v_N,k`, or the cone
//!    gap `μ f_N − ‖f_T‖`) is within 1000 ulps of its own rounding, the point
//!    is not trusted (stuck on a boundary, or κ too small for f64 at this
//!    problem's scale) and [`Failure::MaxIterations`] is returned.
//!
//! Every loop is bounded by [`Options::max_iterations`] (Newton steps, phase
//! 1 and phase 2 together) and 60 backtracking halvings; every value is
//! checked for finiteness, so a solve returns a typed [`Failure`] instead of
//! looping or producing NaN.
//!
//! # Inverse
//!
//! Frictionless contacts: the closed form above (0 Newton steps). Frictional
//! contacts: the same phase-2 machinery on the 3-variable problem
//! `R f + r + ∇d_F(f) = 0` (no `A`, no velocity barrier), starting from
//! `f = (s_r / R_N, 0, 0)`, `s_r = max(‖r_k‖∞, √(κ max R_k))`, at
//! `κ₀ = s_r² / min R_k`. `v_N ≤ 0` anywhere is [`Failure::Infeasible`].
//!
//! # Conditioning (what f64 can deliver)
//!
//! The model gets stiff as κ → 0: active contacts have `v_N ∝ κ`, sliding
//! contacts a cone gap `∝ κ`, and `g` changes by `≈ v_T² / κ` per unit of `f`
//! across the cone. On random rank-deficient problems with
//! `R = 1e-3 diag(A)` and `κ = 1e-8 ‖c‖∞² / max A_ii`, only 13–27 % of the
//! solutions have a representable `f` with `‖g‖∞ ≤ 1e-9 ‖c‖∞`, and the
//! inverse map `v ↦ (f, c)` amplifies the rounding of `v` by up to
//! `κ |A| / (R v_N²)`; see the tests for measured numbers.
//!
//! # Derivatives
//!
//! [`barrier_gradient_f_generic`] and [`barrier_gradient_v_generic`] are the
//! closed-form barrier gradients for any `nalgebra::RealField` scalar (dual
//! numbers), branching only on `dims`.
//!
//! # Files
//!
//! `mod.rs` (options, failures, the layout, [`forward`], [`inverse`]),
//! `model.rs` (the cones, the barrier gradients, [`stationarity`] and
//! [`Model`]: `A`, the objective, the Jacobian and the step to the
//! boundary), `newton.rs` (the equilibrated Newton solve and step, and the
//! barrier continuation of phase 2) and `phase1.rs` (phase 1 and its
//! Farkas certificate).

use nalgebra::{DMatrix, DVector, RealField};
use std::fmt;

mod model;
mod newton;
mod phase1;
pub use model::*;
use newton::*;
use phase1::*;

/// Fraction of the distance to the boundary a step may cover (Nocedal &
/// Wright, *Numerical Optimization*, §19.2, use 0.99–0.995).
const FRACTION_TO_BOUNDARY: f64 = 0.99;
/// Armijo sufficient-decrease constant (Nocedal & Wright, §3.1: 1e-4).
const ARMIJO: f64 = 1e-4;
/// Maximum number of step halvings in one line search.
const MAX_BACKTRACKS: usize = 60;
/// Barrier reduction factor per continuation stage (Boyd & Vandenberghe,
/// *Convex Optimization*, §11.3.1: 10–20 works well, 3–100 all work).
const KAPPA_REDUCTION: f64 = 10.0;
/// A stage is centred enough to move on when the Newton decrement
/// `λ² = gᵀJ⁻¹g / κ ≤ 1` (Nesterov–Nemirovski: a full Newton step stays
/// feasible for `λ < 1`; measured: 0.25 costs 25 % more iterations, 2–4 fail
/// more often).
const CENTERED: f64 = 1.0;
/// Smallest barrier reduction factor of one predictor step.
const MIN_REDUCTION: f64 = 1e-4;
/// The barrier drops by `PREDICTOR_SAFETY · |1 − α_aff|` per predictor.
const PREDICTOR_SAFETY: f64 = 10.0;
/// Rounding floor: a full Newton step that reduces `‖W g‖₂` by less than this
/// factor, ending where every `|g_i| ≤ tol + ROUNDING_FLOOR · ε · noise_i`
/// (`Model::rounding_noise`).
const STAGNATION: f64 = 0.5;
/// See [`STAGNATION`].
const ROUNDING_FLOOR: f64 = 4.0;
/// `A` counts as symmetric when its asymmetry is below this fraction of its
/// largest entry: Newton on `g` throughout, `Φ` (whose gradient differs from
/// `g` by that relative amount) as merit away from the solution. Measured:
/// 1e-6 made asymmetries of 1e-6–1e-5 take the slower `Φ`-Newton path and
/// fail at small κ; 1e-4 handles them.
const SYMMETRY: f64 = 1e-4;
/// Newton decrement below which the iteration is in the quadratic basin.
const LOCAL_DECREMENT: f64 = 1e-6;
/// A corrector step shorter than this ...
const SHORT_STEP: f64 = 0.05;
/// ... this many times in a row (or a failed line search) raises the barrier
/// weight by [`RESCUE_FACTOR`].
const RESCUE_AFTER: usize = 2;
/// See [`RESCUE_AFTER`]; also applied after [`STALL_STEPS`] correctors at one
/// barrier weight.
const RESCUE_FACTOR: f64 = 100.0;
/// Rescues may raise the barrier weight up to this multiple of the initial
/// (largest natural) one.
const RESCUE_CEILING: f64 = 1e4;
/// Corrector steps at one barrier weight, the Newton decrement still above 1,
/// before it is raised.
const STALL_STEPS: usize = 12;
/// A warm start's friction is pulled to `‖f_T‖ ≤ (1 − WARM_SHIFT) μ f_N`:
/// a solution at small κ hugs its cone, and from there Newton can only creep
/// along the curved surface (Dojo/Silico shift warm starts by 1e-2 likewise).
const WARM_SHIFT: f64 = 1e-2;
/// Phase 1: infeasible when the best reachable margin `min_k v_N,k` is
/// shown to be below this fraction of the velocity scale.
const PHASE1_MARGIN: f64 = 1e-8;
/// Phase 1: the certificate covers impulses with `Σ f_N ≤ 1e3 Σ_k F_k`.
const PHASE1_BOUND: f64 = 1e3;

/// Solver settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Convergence tolerance on `‖g‖∞`, **relative** to the velocity scale
    /// `s_c = max(‖c‖∞, √(κ max_i (A_ii + R_i)))` of the problem (for
    /// [`inverse`], per contact, relative to `max(‖r_k‖∞, √(κ max R_k))`).
    /// Default `1e-12`.
    pub tolerance: f64,
    /// Maximum number of Newton steps (phase 1 and phase 2 together; for
    /// [`inverse`], per contact). Default `200`.
    pub max_iterations: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            tolerance: 1e-12,
            max_iterations: 200,
        }
    }
}

/// What a successful solve did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Newton steps taken ([`forward`]: phase 1 plus phase 2; [`inverse`]:
    /// the largest count over the contacts, frictionless contacts take 0).
    pub iterations: usize,
    /// `‖g(f)‖∞` of the returned impulse (absolute, same units as `c`). At
    /// most `tolerance · s_c`, unless the solve stopped at the f64 rounding
    /// floor (see the module docs), where it can be larger.
    pub residual: f64,
}

/// Why a solve failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Failure {
    /// No strictly feasible point exists: [`forward`] found no impulse with
    /// `f_N > 0`, `‖f_T‖ < μ f_N` and `v_N = (A f + c)_N > 0` (for example two
    /// opposing penetrating contacts on one body), or [`inverse`] was given a
    /// velocity with `v_N ≤ 0`.
    Infeasible,
    /// The Newton iteration did not reach the tolerance within the budget,
    /// or stalled at the f64 rounding floor at an untrustworthy point (a
    /// barrier argument within 1000 ulps of its rounding: κ too small for
    /// the problem's scale).
    MaxIterations {
        /// Newton steps taken.
        iterations: usize,
        /// `‖g‖∞` at the last iterate (absolute); `∞` if the budget ran out
        /// in phase 1, before any strictly feasible point was found.
        residual: f64,
    },
    /// A NaN or infinity appeared in the inputs or in the iteration (for
    /// instance a singular Newton system).
    NonFinite,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Infeasible => write!(
                f,
                "contact problem infeasible: no impulse with f_N > 0 and ‖f_T‖ < μ f_N gives \
                 separating normal velocities v_N = (A f + c)_N > 0 (e.g. opposing penetrating \
                 contacts on one body), or an inverse solve was given a velocity with v_N ≤ 0"
            ),
            Failure::MaxIterations {
                iterations,
                residual,
            } => write!(
                f,
                "contact solver did not converge: ‖g‖∞ = {residual:e} after {iterations} \
                 Newton steps (budget exhausted, or stalled at the f64 rounding floor with a \
                 barrier argument at rounding level: κ too small for the problem's scale; \
                 residual ∞ if no strictly feasible start was found yet)"
            ),
            Failure::NonFinite => write!(
                f,
                "contact solver hit a non-finite value: NaN/infinity in A, c, v, R, μ or κ, \
                 or a singular Newton system"
            ),
        }
    }
}

impl std::error::Error for Failure {}

// ---------------------------------------------------------------------------
// Layout and per-contact barrier algebra.
// ---------------------------------------------------------------------------

/// A malformed contact layout: `dims` (and `mu`) do not describe the
/// vectors they are given with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// `mu` and `dims` disagree on the number of contacts.
    #[error("mu has {mu} entries but dims has {dims} contacts")]
    Contacts {
        /// Entries of `mu`.
        mu: usize,
        /// Entries of `dims`.
        dims: usize,
    },
    /// A contact with neither 1 (frictionless) nor 3 unknowns.
    #[error("dims[{contact}] = {dim}: a contact has 1 (frictionless) or 3 unknowns")]
    Dim {
        /// Index of the contact.
        contact: usize,
        /// Its `dims` entry.
        dim: usize,
    },
    /// `Σ dims` differs from the length of the vectors.
    #[error("Σ dims = {sum} but the vectors have {len} entries")]
    Length {
        /// `Σ dims`.
        sum: usize,
        /// Length of the vectors.
        len: usize,
    },
}

/// Start index of every contact's block, or why the layout is malformed.
#[doc(hidden)]
pub fn try_offsets(mu_len: usize, dims: &[usize], m: usize) -> Result<Vec<usize>, LayoutError> {
    if mu_len != dims.len() {
        return Err(LayoutError::Contacts {
            mu: mu_len,
            dims: dims.len(),
        });
    }
    let mut out = Vec::with_capacity(dims.len());
    let mut o = 0;
    for (k, &d) in dims.iter().enumerate() {
        if d != 1 && d != 3 {
            return Err(LayoutError::Dim { contact: k, dim: d });
        }
        out.push(o);
        o += d;
    }
    if o != m {
        return Err(LayoutError::Length { sum: o, len: m });
    }
    Ok(out)
}

/// Start index of every contact's block; panics on a malformed layout
/// ([`try_offsets`] returns it as a [`LayoutError`]).
#[track_caller]
#[doc(hidden)]
pub fn offsets(mu_len: usize, dims: &[usize], m: usize) -> Vec<usize> {
    try_offsets(mu_len, dims, m).unwrap_or_else(|e| panic!("{e}"))
}

/// Forward dynamics: the contact impulse `f` with `g(f) = 0` (see the module
/// docs for the model and the algorithm).
///
/// * `a` — contact-space inverse inertia, m×m (need not be exactly symmetric);
/// * `c` — bias velocity, length m;
/// * `mu`, `dims` — per contact: friction coefficient and 1 or 3 unknowns
///   (`dims[k] = 3` needs `μ_k > 0`; `dims[k] = 1` ignores `μ_k`);
/// * `r` — diagonal of the regularizer `R`, entries `> 0`;
/// * `kappa` — barrier weight `κ > 0`;
/// * `f0` — optional warm start, used only if strictly feasible;
/// * `opts` — tolerance and Newton-step budget.
///
/// Returns `f` (strictly feasible) and [`Stats`].
///
/// # Errors
/// [`Failure::Infeasible`] if no strictly feasible impulse exists,
/// [`Failure::MaxIterations`] if the budget runs out,
/// [`Failure::NonFinite`] on NaN/∞ inputs or a singular Newton system.
///
/// # Panics
/// On inconsistent sizes, `dims` entries other than 1 or 3, `μ < 0`,
/// `dims = 3` with `μ = 0`, `R ≤ 0` or `κ ≤ 0` (finite values).
#[track_caller]
#[allow(clippy::too_many_arguments)] // the engine's agreed signature
pub fn forward(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    r: &DVector<f64>,
    kappa: f64,
    f0: Option<&DVector<f64>>,
    opts: &Options,
) -> Result<(DVector<f64>, Stats), Failure> {
    let model = Model::new(Some(a), c.as_slice(), mu, dims, r.as_slice());
    if let Some(f0) = f0 {
        assert_eq!(f0.len(), c.len(), "warm start has the wrong length");
    }
    if !(all_finite(a.iter())
        && all_finite(c.iter())
        && all_finite(r.iter())
        && all_finite(mu.iter())
        && kappa.is_finite())
    {
        return Err(Failure::NonFinite);
    }
    check_mu(mu, dims);
    assert!(kappa > 0.0, "κ = {kappa} must be > 0");
    assert!(r.iter().all(|&x| x > 0.0), "R must be > 0");
    let m = c.len();
    let n = dims.len();
    if n == 0 {
        return Ok((
            DVector::zeros(0),
            Stats {
                iterations: 0,
                residual: 0.0,
            },
        ));
    }
    let diag_max = (0..m).map(|i| a[(i, i)] + r[i]).fold(0.0_f64, f64::max);
    let diag_min = (0..n)
        .map(|k| model.normal_stiffness(k))
        .fold(f64::INFINITY, f64::min);
    let scale = inf_norm(c).max((kappa * diag_max).sqrt());
    let kappa_max = scale * scale / diag_min;
    let mut iterations = 0;
    let warm = f0
        .filter(|f| all_finite(f.iter()) && model.feasible(f.as_slice()))
        .map(|f| {
            let mut shifted = f.clone();
            for (k, &o) in model.off.iter().enumerate() {
                if dims[k] == 3 {
                    let limit = (1.0 - WARM_SHIFT) * mu[k] * f[o];
                    let t = f[o + 1].hypot(f[o + 2]);
                    if t > limit {
                        shifted[o + 1] *= limit / t;
                        shifted[o + 2] *= limit / t;
                    }
                }
            }
            if model.feasible(shifted.as_slice()) {
                shifted
            } else {
                f.clone()
            }
        });
    let start = match &warm {
        Some(f) => f.clone(),
        None => {
            let mut f = DVector::zeros(m);
            for (k, &o) in model.off.iter().enumerate() {
                f[o] = ((-c[o]).max(0.0) + scale) / model.normal_stiffness(k);
            }
            if model.feasible(f.as_slice()) {
                f
            } else {
                phase1(&model, a, f, scale, opts, &mut iterations)?
            }
        }
    };
    let (f, residual) = barrier_newton(
        &model,
        start,
        kappa,
        kappa_max,
        warm.is_some(),
        scale,
        opts,
        &mut iterations,
    )?;
    Ok((
        f,
        Stats {
            iterations,
            residual,
        },
    ))
}

/// Inverse dynamics: from the contact velocity `v` (all `v_N > 0`) recover
/// the impulse `f` and the bias velocity `c = v − A f` of the forward problem
/// whose solution has `A f + c = v`. Same arguments as [`forward`] with `v`
/// in place of `c`. Returns `(f, c, stats)`; `stats.residual` is the forward
/// stationarity `‖g(f)‖∞` evaluated with the returned `c`.
///
/// # Errors
/// [`Failure::Infeasible`] if some `v_N ≤ 0`; [`Failure::MaxIterations`] if
/// a contact's Newton solve runs out of budget; [`Failure::NonFinite`] on
/// NaN/∞ inputs.
///
/// # Panics
/// As [`forward`].
#[track_caller]
pub fn inverse(
    a: &DMatrix<f64>,
    v: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    r: &DVector<f64>,
    kappa: f64,
    opts: &Options,
) -> Result<(DVector<f64>, DVector<f64>, Stats), Failure> {
    let model = Model::new(Some(a), v.as_slice(), mu, dims, r.as_slice());
    if !(all_finite(a.iter())
        && all_finite(v.iter())
        && all_finite(r.iter())
        && all_finite(mu.iter())
        && kappa.is_finite())
    {
        return Err(Failure::NonFinite);
    }
    check_mu(mu, dims);
    assert!(kappa > 0.0, "κ = {kappa} must be > 0");
    assert!(r.iter().all(|&x| x > 0.0), "R must be > 0");
    if model.off.iter().any(|&o| v[o] <= 0.0) {
        return Err(Failure::Infeasible);
    }
    let m = v.len();
    // r = v + Aᵀ ∇d_V(v)
    let dv = barrier_gradient_v(v, dims, kappa).expect("layout checked by Model::new");
    let rr = v + a.tr_mul(&dv);
    let mut f = DVector::zeros(m);
    let mut max_iterations = 0;
    for (k, &o) in model.off.iter().enumerate() {
        let d = dims[k];
        let rk = &rr.as_slice()[o..o + d];
        let rdiag = &r.as_slice()[o..o + d];
        if d == 1 {
            // R f² + r f − κ = 0, positive root without cancellation.
            let (q, rd) = (rk[0], rdiag[0]);
            let root = (q * q + 4.0 * rd * kappa).sqrt();
            f[o] = if q > 0.0 {
                2.0 * kappa / (q + root)
            } else {
                (root - q) / (2.0 * rd)
            };
            continue;
        }
        let sub = Model::new(None, rk, &mu[k..k + 1], &dims[k..k + 1], rdiag);
        let rmax = rdiag.iter().cloned().fold(0.0_f64, f64::max);
        let rmin = rdiag.iter().cloned().fold(f64::INFINITY, f64::min);
        let rnorm = rk.iter().fold(0.0_f64, |x, y| x.max(y.abs()));
        let scale = rnorm.max((kappa * rmax).sqrt());
        let start = DVector::from_column_slice(&[scale / rdiag[0], 0.0, 0.0]);
        let mut its = 0;
        let (fk, _) = barrier_newton(
            &sub,
            start,
            kappa,
            scale * scale / rmin,
            false,
            scale,
            opts,
            &mut its,
        )?;
        max_iterations = max_iterations.max(its);
        f.rows_mut(o, d).copy_from(&fk);
    }
    if !all_finite(f.iter()) {
        return Err(Failure::NonFinite);
    }
    let c = v - a * &f;
    let residual = inf_norm(&stationarity(a, &c, mu, dims, r, kappa, &f));
    Ok((
        f,
        c,
        Stats {
            iterations: max_iterations,
            residual,
        },
    ))
}

/// `∂g/∂f` of [`stationarity`] (checked by the tests against finite
/// differences).
pub fn stationarity_jacobian(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    r: &DVector<f64>,
    kappa: f64,
    f: &DVector<f64>,
) -> DMatrix<f64> {
    Model::new(Some(a), c.as_slice(), mu, dims, r.as_slice()).jacobian(f.as_slice(), kappa)
}
