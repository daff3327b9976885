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

use nalgebra::{DMatrix, DVector, RealField};
use std::fmt;

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

/// Panics unless every frictional contact has `μ > 0` and every `μ ≥ 0`.
#[track_caller]
fn check_mu(mu: &[f64], dims: &[usize]) {
    for (k, (&m, &d)) in mu.iter().zip(dims).enumerate() {
        assert!(
            m >= 0.0 && (d == 1 || m > 0.0),
            "mu[{k}] = {m} with dims[{k}] = {d}: friction needs μ > 0, frictionless contacts dims = 1"
        );
    }
}

/// `s = μ² f_N² − ‖f_T‖²` as `(μ f_N − ‖f_T‖)(μ f_N + ‖f_T‖)`.
fn cone_gap(mu: f64, f: &[f64]) -> f64 {
    let a = mu * f[0];
    let t = f[1].hypot(f[2]);
    (a - t) * (a + t)
}

/// Gradient of the per-unit-κ friction barrier `−log f_N − log s`.
fn cone_gradient(mu: f64, f: &[f64]) -> [f64; 3] {
    let s = cone_gap(mu, f);
    [
        -1.0 / f[0] - 2.0 * mu * mu * f[0] / s,
        2.0 * f[1] / s,
        2.0 * f[2] / s,
    ]
}

/// Hessian of the per-unit-κ friction barrier `−log f_N − log s`.
fn cone_hessian(mu: f64, f: &[f64]) -> [[f64; 3]; 3] {
    let s = cone_gap(mu, f);
    let s2 = s * s;
    let mu2 = mu * mu;
    let (n, t1, t2) = (f[0], f[1], f[2]);
    // 1/f_N² − 2μ²/s + 4μ⁴f_N²/s², written without cancellation.
    let hnn = 1.0 / (n * n) + 2.0 * mu2 * (mu2 * n * n + t1 * t1 + t2 * t2) / s2;
    let hn1 = -4.0 * mu2 * n * t1 / s2;
    let hn2 = -4.0 * mu2 * n * t2 / s2;
    let h11 = 2.0 / s + 4.0 * t1 * t1 / s2;
    let h22 = 2.0 / s + 4.0 * t2 * t2 / s2;
    let h12 = 4.0 * t1 * t2 / s2;
    [[hnn, hn1, hn2], [hn1, h11, h12], [hn2, h12, h22]]
}

/// Is `f_k` strictly inside its cone (and `f_N > 0`)?
fn in_cone(mu: f64, f: &[f64]) -> bool {
    if f.len() == 1 {
        f[0] > 0.0 && f[0].is_finite()
    } else {
        f[0] > 0.0 && f.iter().all(|x| x.is_finite()) && mu * f[0] > f[1].hypot(f[2])
    }
}

/// Largest `α > 0` keeping `f + α d` inside the (open) cone of one contact.
fn cone_max_step(mu: f64, f: &[f64], d: &[f64]) -> f64 {
    let mut alpha = f64::INFINITY;
    if d[0] < 0.0 {
        alpha = -f[0] / d[0];
    }
    if f.len() == 3 {
        // q(α) = μ²(f_N + α d_N)² − ‖f_T + α d_T‖² = a2 α² + a1 α + a0.
        let a0 = cone_gap(mu, f);
        let a1 = 2.0 * (mu * mu * f[0] * d[0] - f[1] * d[1] - f[2] * d[2]);
        let a2 = mu * mu * d[0] * d[0] - d[1] * d[1] - d[2] * d[2];
        let disc = a1 * a1 - 4.0 * a2 * a0;
        let root = if a1 < 0.0 && (a2 <= 0.0 || disc >= 0.0) {
            2.0 * a0 / (-a1 + disc.max(0.0).sqrt())
        } else if a2 < 0.0 {
            (a1 + disc.sqrt()) / (-2.0 * a2)
        } else {
            f64::INFINITY
        };
        alpha = alpha.min(root);
    }
    alpha
}

#[doc(hidden)]
pub fn inf_norm(x: &DVector<f64>) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

fn all_finite<'a>(x: impl IntoIterator<Item = &'a f64>) -> bool {
    x.into_iter().all(|v| v.is_finite())
}

// ---------------------------------------------------------------------------
// Public barrier gradients and stationarity.
// ---------------------------------------------------------------------------

/// `∇d_F(f)`, the gradient of the friction-cone barrier
/// `d_F(f) = −κ Σ_k [log f_N,k + log(μ_k² f_N,k² − ‖f_T,k‖²)]`
/// (frictionless contacts: `−κ log f_N,k`).
///
/// `f` must be strictly inside the cones; outside, the formula is evaluated
/// as is and the result is meaningless.
///
/// # Panics
/// If the sizes of `f`, `mu` and `dims` disagree or a `dims` entry is not 1 or 3.
#[track_caller]
pub fn barrier_gradient_f(
    f: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    kappa: f64,
) -> DVector<f64> {
    let off = offsets(mu.len(), dims, f.len());
    let mut out = DVector::zeros(f.len());
    for (k, &o) in off.iter().enumerate() {
        if dims[k] == 1 {
            out[o] = -kappa / f[o];
        } else {
            let gk = cone_gradient(mu[k], &f.as_slice()[o..o + 3]);
            for i in 0..3 {
                out[o + i] = kappa * gk[i];
            }
        }
    }
    out
}

/// `∇d_V(v)` of `d_V(v) = −κ Σ_k log v_N,k`: `−κ / v_N,k` in each contact's
/// normal row, zero in the tangential rows.
///
/// # Errors
/// [`LayoutError`] if a `dims` entry is not 1 or 3 or `Σ dims ≠ v.len()`.
pub fn barrier_gradient_v(
    v: &DVector<f64>,
    dims: &[usize],
    kappa: f64,
) -> Result<DVector<f64>, LayoutError> {
    let off = try_offsets(dims.len(), dims, v.len())?;
    let mut out = DVector::zeros(v.len());
    for &o in &off {
        out[o] = -kappa / v[o];
    }
    Ok(out)
}

/// [`barrier_gradient_f`] for any scalar (e.g. the engine's dual numbers),
/// on slices: closed-form, branching only on the layout `dims`.
///
/// # Panics
/// If the sizes of `f`, `mu` and `dims` disagree or a `dims` entry is not 1 or 3.
#[track_caller]
pub fn barrier_gradient_f_generic<T: RealField + Copy>(
    f: &[T],
    mu: &[T],
    dims: &[usize],
    kappa: T,
) -> Vec<T> {
    let off = offsets(mu.len(), dims, f.len());
    let two = T::one() + T::one();
    let mut out = vec![T::zero(); f.len()];
    for (k, &o) in off.iter().enumerate() {
        let f_n = f[o];
        if dims[k] == 1 {
            out[o] = -kappa / f_n;
        } else {
            let (t1, t2) = (f[o + 1], f[o + 2]);
            let mf = mu[k] * f_n;
            let s = mf * mf - t1 * t1 - t2 * t2;
            out[o] = -kappa * (T::one() / f_n + two * mu[k] * mf / s);
            out[o + 1] = two * kappa * t1 / s;
            out[o + 2] = two * kappa * t2 / s;
        }
    }
    out
}

/// [`barrier_gradient_v`] for any scalar (e.g. the engine's dual numbers),
/// on slices.
///
/// # Panics
/// If a `dims` entry is not 1 or 3 or `Σ dims ≠ v.len()`.
#[track_caller]
pub fn barrier_gradient_v_generic<T: RealField + Copy>(
    v: &[T],
    dims: &[usize],
    kappa: T,
) -> Vec<T> {
    let off = offsets(dims.len(), dims, v.len());
    let mut out = vec![T::zero(); v.len()];
    for &o in &off {
        out[o] = -kappa / v[o];
    }
    out
}

/// The forward stationarity residual
/// `g(f) = (A + R) f + c + ∇d_F(f) + Aᵀ ∇d_V(A f + c)`.
///
/// `f` must be strictly feasible for the result to mean anything.
///
/// # Panics
/// On inconsistent sizes or a malformed `dims`.
#[track_caller]
pub fn stationarity(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    r: &DVector<f64>,
    kappa: f64,
    f: &DVector<f64>,
) -> DVector<f64> {
    let model = Model::new(Some(a), c.as_slice(), mu, dims, r.as_slice());
    assert_eq!(f.len(), model.m(), "f has the wrong length");
    let (g0, b) = model.split(f.as_slice());
    g0 + b * kappa
}

// ---------------------------------------------------------------------------
// The barrier problem shared by forward (with A) and inverse (per contact, A = 0).
// ---------------------------------------------------------------------------

/// `g(f) = (A + R) f + c + κ [∇b_F(f) + Aᵀ ∇b_V(A f + c)]`, with `A = None`
/// meaning no `A` term and no velocity barrier (the inverse's per-contact
/// problem).
#[doc(hidden)]
pub struct Model<'a> {
    a: Option<&'a DMatrix<f64>>,
    /// `‖A − Aᵀ‖_max ≤ SYMMETRY · ‖A‖_max`: the objective `Φ` may serve as
    /// merit function.
    symmetric: bool,
    c: &'a [f64],
    mu: &'a [f64],
    dims: &'a [usize],
    #[allow(missing_docs)]
    pub off: Vec<usize>,
    r: &'a [f64],
}

impl<'a> Model<'a> {
    #[track_caller]
    #[allow(missing_docs)]
    pub fn new(
        a: Option<&'a DMatrix<f64>>,
        c: &'a [f64],
        mu: &'a [f64],
        dims: &'a [usize],
        r: &'a [f64],
    ) -> Self {
        let m = c.len();
        let off = offsets(mu.len(), dims, m);
        assert_eq!(r.len(), m, "R has {} entries, expected {m}", r.len());
        if let Some(a) = a {
            assert_eq!(a.shape(), (m, m), "A is {:?}, expected {m}×{m}", a.shape());
        }
        let symmetric = a.is_none_or(|a| {
            let skew = (0..m)
                .flat_map(|i| (0..i).map(move |j| (i, j)))
                .fold(0.0_f64, |x, (i, j)| x.max((a[(i, j)] - a[(j, i)]).abs()));
            skew <= SYMMETRY * a.amax()
        });
        Self {
            a,
            symmetric,
            c,
            mu,
            dims,
            off,
            r,
        }
    }

    #[allow(missing_docs)]
    pub fn m(&self) -> usize {
        self.c.len()
    }

    /// `A f` (empty without `A`).
    #[allow(missing_docs)]
    pub fn a_times(&self, x: &[f64]) -> DVector<f64> {
        match self.a {
            Some(a) => a * DVector::from_column_slice(x),
            None => DVector::zeros(0),
        }
    }

    /// Normal velocities `(A f + c)_N` from a precomputed `A f`.
    #[allow(missing_docs)]
    pub fn normal_velocities(&self, af: &DVector<f64>) -> Vec<f64> {
        if self.a.is_none() {
            return Vec::new();
        }
        self.off.iter().map(|&o| af[o] + self.c[o]).collect()
    }

    /// `Φ(f) = ½ fᵀ(A + R) f + cᵀf + κ [b_F(f) + b_V(A f + c)]` (`+∞` outside
    /// the domain): the forward objective, whose gradient is
    /// `g(f) + skew(f)`.
    #[allow(missing_docs)]
    pub fn objective(&self, f: &[f64], kappa: f64) -> f64 {
        if !self.feasible(f) {
            return f64::INFINITY;
        }
        let af = self.a_times(f);
        let mut quad = 0.0;
        for i in 0..self.m() {
            let afi = if self.a.is_some() { af[i] } else { 0.0 };
            quad += f[i] * (0.5 * (afi + self.r[i] * f[i]) + self.c[i]);
        }
        let mut barrier = 0.0;
        for (k, &o) in self.off.iter().enumerate() {
            barrier -= f[o].ln();
            if self.dims[k] == 3 {
                barrier -= cone_gap(self.mu[k], &f[o..o + 3]).ln();
            }
        }
        for v in self.normal_velocities(&af) {
            barrier -= v.ln();
        }
        quad + kappa * barrier
    }

    /// `J − ½ (A − Aᵀ)`: the Hessian of `Φ` from the Jacobian of `g`.
    #[allow(missing_docs)]
    pub fn symmetrize(&self, mut jac: DMatrix<f64>) -> DMatrix<f64> {
        if let Some(a) = self.a {
            let m = self.m();
            for i in 0..m {
                for j in 0..m {
                    jac[(i, j)] -= 0.5 * (a[(i, j)] - a[(j, i)]);
                }
            }
        }
        jac
    }

    /// `∇Φ − g = ½ (Aᵀ − A) f`, zero for symmetric `A`.
    #[allow(missing_docs)]
    pub fn skew(&self, f: &[f64]) -> DVector<f64> {
        match self.a {
            None => DVector::zeros(self.m()),
            Some(a) => {
                let x = DVector::from_column_slice(f);
                (a.tr_mul(&x) - a * &x) * 0.5
            }
        }
    }

    /// No barrier argument near rounding level: `v_N,k ≥ 1e3 ε (|A| |f| + |c|)_k`
    /// and `μ f_N − ‖f_T‖ ≥ 1e3 ε μ f_N`.
    #[allow(missing_docs)]
    pub fn well_inside(&self, f: &[f64]) -> bool {
        let margin = 1e3 * f64::EPSILON;
        let cones = self.off.iter().enumerate().all(|(k, &o)| {
            self.dims[k] == 1 || {
                let a = self.mu[k] * f[o];
                a - f[o + 1].hypot(f[o + 2]) >= margin * a
            }
        });
        let velocities = match self.a {
            None => true,
            Some(a) => {
                let v = self.normal_velocities(&self.a_times(f));
                self.off.iter().enumerate().all(|(k, &o)| {
                    let size: f64 = (0..self.m()).map(|j| (a[(o, j)] * f[j]).abs()).sum::<f64>()
                        + self.c[o].abs();
                    v[k] >= margin * size
                })
            }
        };
        cones && velocities
    }

    #[allow(missing_docs)]
    pub fn feasible(&self, f: &[f64]) -> bool {
        let cones = self
            .off
            .iter()
            .enumerate()
            .all(|(k, &o)| in_cone(self.mu[k], &f[o..o + self.dims[k]]));
        cones
            && self
                .normal_velocities(&self.a_times(f))
                .iter()
                .all(|&v| v > 0.0 && v.is_finite())
    }

    /// `(g₀, b)` with `g = g₀ + κ b`: `g₀ = (A + R) f + c`,
    /// `b = ∇b_F(f) + Aᵀ ∇b_V(A f + c)` per unit κ.
    #[allow(missing_docs)]
    pub fn split(&self, f: &[f64]) -> (DVector<f64>, DVector<f64>) {
        let m = self.m();
        let af = self.a_times(f);
        let mut g0 = DVector::from_fn(m, |i, _| self.r[i] * f[i] + self.c[i]);
        let mut b = DVector::zeros(m);
        if let Some(a) = self.a {
            g0 += &af;
            for (k, v) in self.normal_velocities(&af).into_iter().enumerate() {
                let w = -1.0 / v;
                let row = self.off[k];
                for j in 0..m {
                    b[j] += a[(row, j)] * w;
                }
            }
        }
        for (k, &o) in self.off.iter().enumerate() {
            if self.dims[k] == 1 {
                b[o] += -1.0 / f[o];
            } else {
                let gk = cone_gradient(self.mu[k], &f[o..o + 3]);
                for i in 0..3 {
                    b[o + i] += gk[i];
                }
            }
        }
        (g0, b)
    }

    /// `∂g/∂f = A + R + κ ∇²b_F(f) + κ Aᵀ diag(1/v_N²) A`.
    #[allow(missing_docs)]
    pub fn jacobian(&self, f: &[f64], kappa: f64) -> DMatrix<f64> {
        let m = self.m();
        let mut h = match self.a {
            Some(a) => a.clone(),
            None => DMatrix::zeros(m, m),
        };
        for i in 0..m {
            h[(i, i)] += self.r[i];
        }
        for (k, &o) in self.off.iter().enumerate() {
            if self.dims[k] == 1 {
                h[(o, o)] += kappa / (f[o] * f[o]);
            } else {
                let hk = cone_hessian(self.mu[k], &f[o..o + 3]);
                for i in 0..3 {
                    for j in 0..3 {
                        h[(o + i, o + j)] += kappa * hk[i][j];
                    }
                }
            }
        }
        if let Some(a) = self.a {
            let v = self.normal_velocities(&self.a_times(f));
            // W = diag(√κ / v_N) A_N, then H += Wᵀ W.
            let w = DMatrix::from_fn(self.off.len(), m, |k, j| {
                kappa.sqrt() / v[k] * a[(self.off[k], j)]
            });
            // faer's blocked product: nalgebra's `gemm_tr` takes one dot
            // product per entry, the largest cost of a Newton iteration on
            // a pile (hundreds of contact rows).
            let w = faer::MatRef::from_column_major_slice(w.as_slice(), self.off.len(), m);
            faer::linalg::matmul::matmul(
                faer::MatMut::from_column_major_slice_mut(h.as_mut_slice(), m, m),
                faer::Accum::Add,
                w.transpose(),
                w,
                1.0,
                faer::Par::Seq,
            );
        }
        h
    }

    /// Largest `α` keeping `f + α d` strictly feasible (may be `∞`).
    #[allow(missing_docs)]
    pub fn max_step(&self, f: &[f64], d: &[f64]) -> f64 {
        let mut alpha = f64::INFINITY;
        for (k, &o) in self.off.iter().enumerate() {
            let e = o + self.dims[k];
            alpha = alpha.min(cone_max_step(self.mu[k], &f[o..e], &d[o..e]));
        }
        if self.a.is_some() {
            let ad = self.a_times(d);
            let v = self.normal_velocities(&self.a_times(f));
            for (k, &o) in self.off.iter().enumerate() {
                if ad[o] < 0.0 {
                    alpha = alpha.min(-v[k] / ad[o]);
                }
            }
        }
        alpha
    }

    /// `noise_i = Σ_j |J_ij f_j| + |c_i| + κ Σ_k |A_ki| (1 + |c_N,k| / v_N,k) / v_N,k`:
    /// `ε noise_i` is the rounding noise of `g_i` — what one ulp of `f`
    /// moves it by (the `J` term), the rounding of the terms of `g_i`, and
    /// that of `v_N = A f + c` amplified by the barrier.
    #[allow(missing_docs)]
    pub fn rounding_noise(&self, f: &[f64], jac: &DMatrix<f64>, kappa: f64) -> DVector<f64> {
        let m = self.m();
        let mut out = DVector::from_fn(m, |i, _| {
            (0..m).map(|j| (jac[(i, j)] * f[j]).abs()).sum::<f64>() + self.c[i].abs()
        });
        if let Some(a) = self.a {
            let v = self.normal_velocities(&self.a_times(f));
            for (k, &o) in self.off.iter().enumerate() {
                let w = kappa / v[k] * (1.0 + self.c[o].abs() / v[k]);
                for j in 0..m {
                    out[j] += a[(o, j)].abs() * w;
                }
            }
        }
        out
    }

    /// Per-contact scale of `A_kk + R_k` on the normal rows.
    #[allow(missing_docs)]
    pub fn normal_stiffness(&self, k: usize) -> f64 {
        let o = self.off[k];
        self.a.map_or(0.0, |a| a[(o, o)]) + self.r[o]
    }
}

/// Solve `J X = B`: symmetric diagonal equilibration (`S J S` with
/// `S = diag(|J_ii|^-½)`, which removes the ill-conditioning barrier terms
/// put on the diagonal blocks), LU with partial pivoting (full pivoting as
/// fallback) and one step of iterative refinement. `None` if the solution is
/// not finite.
fn newton_solve(j: DMatrix<f64>, rhs: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let n = j.nrows();
    let scale = DVector::from_fn(n, |i, _| {
        let d = j[(i, i)].abs();
        if d > 0.0 && d.is_finite() {
            1.0 / d.sqrt()
        } else {
            1.0
        }
    });
    let scaled = DMatrix::from_fn(n, n, |r, c| scale[r] * j[(r, c)] * scale[c]);
    // faer's blocked partial-pivoting LU (an order of magnitude faster than
    // nalgebra's unblocked one at the sizes of a pile); when it meets an
    // exactly singular pivot (a non-finite solution), nalgebra's full
    // pivoting, as before.
    let partial = faer::MatRef::from_column_major_slice(scaled.as_slice(), n, n).partial_piv_lu();
    let solve_partial = |b: &DMatrix<f64>| -> Option<DMatrix<f64>> {
        use faer::linalg::solvers::Solve;
        let sb = faer::Mat::<f64>::from_fn(n, b.ncols(), |r, c| scale[r] * b[(r, c)]);
        let y = partial.solve(&sb);
        let x = DMatrix::from_fn(n, b.ncols(), |r, c| scale[r] * y[(r, c)]);
        all_finite(x.iter()).then_some(x)
    };
    let refined = |solve: &dyn Fn(&DMatrix<f64>) -> Option<DMatrix<f64>>| {
        let mut x = solve(rhs)?;
        let correction = solve(&(rhs - &j * &x))?;
        x += correction;
        all_finite(x.iter()).then_some(x)
    };
    if let Some(x) = refined(&solve_partial) {
        return Some(x);
    }
    let full = scaled.full_piv_lu();
    let solve_full = |b: &DMatrix<f64>| -> Option<DMatrix<f64>> {
        let sb = DMatrix::from_fn(b.nrows(), b.ncols(), |r, c| scale[r] * b[(r, c)]);
        let y = full.solve(&sb)?;
        Some(DMatrix::from_fn(y.nrows(), y.ncols(), |r, c| {
            scale[r] * y[(r, c)]
        }))
    };
    refined(&solve_full)
}

/// One damped Newton step along `d` at barrier weight `kappa`, keeping
/// strict feasibility (fraction to the boundary). Returns the new point, its
/// residual `g` and the step length.
///
/// 1. Away from the solution (Newton decrement `> LOCAL_DECREMENT`), if
///    `objective` and `d` descends the objective `Φ` (always when `d` is
///    `Φ`'s Newton direction, i.e. for symmetric `A`): Armijo backtracking on
///    `Φ` from the full step. `Φ/κ` is self-concordant, so steps are
///    `≳ 1/(1 + λ)`, and unlike a residual merit `Φ` cannot be decreased by
///    creeping along the boundary.
/// 2. Otherwise the full step if it reduces `‖g‖₂` (Armijo) or, in the
///    quadratic basin, the weighted `‖W g‖₂` (each `g_i` measured against
///    its rounding noise: near the floor the plain norm is all noise of the
///    stiffest components).
/// 3. Otherwise Armijo backtracking on `‖g‖₂`, which every Newton direction
///    of `g` descends.
fn newton_step(
    model: &Model,
    f: &DVector<f64>,
    d: &DVector<f64>,
    kappa: f64,
    g: &DVector<f64>,
    weight: &DVector<f64>,
    objective: bool,
) -> Option<(DVector<f64>, DVector<f64>, f64)> {
    let merit = g.norm();
    let residual_at = |alpha: f64| -> Option<(DVector<f64>, DVector<f64>)> {
        let trial = f + d * alpha;
        if !model.feasible(trial.as_slice()) {
            return None;
        }
        let (t0, tb) = model.split(trial.as_slice());
        Some((trial, t0 + tb * kappa))
    };
    let armijo = |tg: &DVector<f64>, alpha: f64| {
        let tn = tg.norm();
        tn < merit && tn <= (1.0 - ARMIJO * alpha) * merit
    };
    let first = (FRACTION_TO_BOUNDARY * model.max_step(f.as_slice(), d.as_slice())).min(1.0);
    let local = g.dot(d).abs() / kappa <= LOCAL_DECREMENT;
    let slope = (g + model.skew(f.as_slice())).dot(d);
    if objective && !local && slope < 0.0 {
        let phi = model.objective(f.as_slice(), kappa);
        let mut alpha = first;
        for _ in 0..MAX_BACKTRACKS {
            let trial = f + d * alpha;
            let value = model.objective(trial.as_slice(), kappa);
            if value < phi && value <= phi + ARMIJO * alpha * slope {
                let (t0, tb) = model.split(trial.as_slice());
                return Some((trial, t0 + tb * kappa, alpha));
            }
            alpha *= 0.5;
        }
    }
    if let Some((trial, tg)) = residual_at(first) {
        if armijo(&tg, first) {
            return Some((trial, tg, first));
        }
        if local && tg.component_mul(weight).norm() < g.component_mul(weight).norm() {
            return Some((trial, tg, first));
        }
    }
    let mut alpha = 0.5 * first;
    for _ in 0..MAX_BACKTRACKS {
        if let Some((trial, tg)) = residual_at(alpha) {
            if armijo(&tg, alpha) {
                return Some((trial, tg, alpha));
            }
        }
        alpha *= 0.5;
    }
    None
}

/// Phase 2: Newton on `g = 0` with barrier continuation down to `kappa`.
/// `iterations` is the running Newton-step count shared with phase 1.
#[allow(clippy::too_many_arguments)]
fn barrier_newton(
    model: &Model,
    mut f: DVector<f64>,
    kappa: f64,
    kappa_max: f64,
    warm: bool,
    gscale: f64,
    opts: &Options,
    iterations: &mut usize,
) -> Result<(DVector<f64>, f64), Failure> {
    let m = model.m();
    let tol = opts.tolerance * gscale;
    let kappa_max = kappa_max.max(kappa);
    let rescue_max = RESCUE_CEILING * kappa_max;
    let mut stage = if warm {
        let (g0, b) = model.split(f.as_slice());
        let fit = -g0.dot(&b) / b.norm_squared();
        if fit.is_finite() {
            fit.clamp(kappa, kappa_max)
        } else {
            kappa_max
        }
    } else {
        kappa_max
    };
    let mut short_steps = 0;
    let mut stage_steps = 0;
    let mut stagnated = false;
    let mut polish = model.symmetric;
    loop {
        let (g0, b) = model.split(f.as_slice());
        let g = &g0 + &b * stage;
        if !all_finite(g.iter()) {
            return Err(Failure::NonFinite);
        }
        let last = stage <= kappa;
        let residual = inf_norm(&(&g0 + &b * kappa));
        if last && residual <= tol {
            return Ok((f, residual));
        }
        if *iterations >= opts.max_iterations {
            return Err(Failure::MaxIterations {
                iterations: *iterations,
                residual,
            });
        }
        let jac = model.jacobian(f.as_slice(), stage);
        // Merit weights: g_i in units of what is acceptable for it, the
        // tolerance or its rounding noise ε·(size of the terms of g_i).
        let noise = model.rounding_noise(f.as_slice(), &jac, stage);
        let weight = noise.map(|x| 1.0 / (tol + ROUNDING_FLOOR * f64::EPSILON * x));
        // At the rounding floor: every |g_i| is within ROUNDING_FLOOR·ε of
        // the size of its terms (weighted |g_i| ≤ 1) and the last Newton step
        // no longer gained a factor 2. That is the answer if no barrier
        // argument is itself within 1000 ulps of its rounding (else the point
        // is stuck on the boundary, or the solution is beyond f64: κ too
        // small for the problem's scale — reported as MaxIterations).
        let noisy = |g: &DVector<f64>| (0..m).all(|i| (g[i] * weight[i]).abs() <= 1.0);
        let floor_exit = |f: DVector<f64>, iterations: usize| {
            if model.well_inside(f.as_slice()) {
                Ok((f, residual))
            } else {
                Err(Failure::MaxIterations {
                    iterations,
                    residual,
                })
            }
        };
        if last && stagnated && noisy(&g) {
            return floor_exit(f, *iterations);
        }
        // Non-symmetric A: until the final stage is nearly converged, Newton
        // on the objective Φ (gradient g + ½(Aᵀ − A) f, Hessian J with A's
        // symmetric part), whose minimiser is within the asymmetry of the
        // root of g; then Newton on g itself. Identical for symmetric A.
        let (dir_g, dir_j) = if polish {
            (g.clone(), jac)
        } else {
            (&g + model.skew(f.as_slice()), model.symmetrize(jac))
        };
        // One factorization, two right-hand sides: the corrector
        // d_c = −J⁻¹ g(κ_stage) and the tangent t = −J⁻¹ b, so that
        // d(κ') = d_c + (κ' − κ_stage) t = −J⁻¹ g(κ') for any κ'.
        let mut rhs = DMatrix::zeros(m, 2);
        rhs.set_column(0, &-&dir_g);
        rhs.set_column(1, &-&b);
        let sol = newton_solve(dir_j, &rhs).ok_or(Failure::NonFinite)?;
        let d_c = sol.column(0).into_owned();
        let tangent = sol.column(1).into_owned();
        let decrement = dir_g.dot(&d_c).abs() / stage;
        *iterations += 1;
        if last && !polish && decrement <= LOCAL_DECREMENT {
            polish = true;
        }
        if !last && decrement <= CENTERED {
            // Centred: predictor-corrector step to the next stage. The step
            // to κ = 0 stops at α_aff; 1 − α_aff measures how curved the
            // central path is, which bounds how far the linear predictor
            // can be trusted.
            let d_aff = &d_c - &tangent * stage;
            let alpha_aff = model.max_step(f.as_slice(), d_aff.as_slice());
            let sigma = (PREDICTOR_SAFETY * (1.0 - alpha_aff).abs())
                .clamp(MIN_REDUCTION, 1.0 / KAPPA_REDUCTION);
            let next = (stage * sigma).max(kappa);
            let d = &d_c + &tangent * (next - stage);
            let g_next = &g0 + &b * next;
            // The frozen Jacobian need not give a descent direction for
            // ‖g(κ_next)‖; if it does not, the next corrector starts at f.
            if let Some((trial, _, _)) = newton_step(
                model,
                &f,
                &d,
                next,
                &g_next,
                &weight,
                model.symmetric || !polish,
            ) {
                f = trial;
            }
            stage = next;
            stage_steps = 0;
            stagnated = false;
            continue;
        }
        let merit = g.component_mul(&weight).norm();
        match newton_step(
            model,
            &f,
            &d_c,
            stage,
            &g,
            &weight,
            model.symmetric || !polish,
        ) {
            Some((trial, tg, alpha)) => {
                f = trial;
                stagnated = tg.component_mul(&weight).norm() >= STAGNATION * merit;
                short_steps = if alpha < SHORT_STEP {
                    short_steps + 1
                } else {
                    0
                };
            }
            None if last && noisy(&g) => return floor_exit(f, *iterations),
            None if stage < rescue_max => short_steps = RESCUE_AFTER,
            None => {
                return Err(Failure::MaxIterations {
                    iterations: *iterations,
                    residual,
                })
            }
        }
        stage_steps += 1;
        let stalled = stage_steps >= STALL_STEPS && decrement > 1.0;
        if (short_steps >= RESCUE_AFTER || stalled) && stage < rescue_max {
            // Stuck against the boundary (the classic failure of a weak
            // barrier started off-centre: steps shrink, or creep along a
            // curved cone surface): strengthen the barrier and continue the
            // continuation from there.
            stage = (stage * RESCUE_FACTOR).min(rescue_max);
            short_steps = 0;
            stage_steps = 0;
            stagnated = false;
        }
    }
}

/// Phase 1: find `f` strictly inside the cones with `(A f + c)_N > 0`, by the
/// barrier method on `max t s.t. v_N ≥ t` (see the module docs).
#[allow(clippy::needless_range_loop)] // parallel per-contact arrays
fn phase1(
    model: &Model,
    a: &DMatrix<f64>,
    mut f: DVector<f64>,
    scale: f64,
    opts: &Options,
    iterations: &mut usize,
) -> Result<DVector<f64>, Failure> {
    let n = model.off.len();
    let m = model.m();
    let normal_scale: Vec<f64> = (0..n).map(|k| scale / model.normal_stiffness(k)).collect();
    let bound = PHASE1_BOUND * normal_scale.iter().sum::<f64>();
    let nu: f64 = model
        .dims
        .iter()
        .map(|&d| if d == 3 { 4.0 } else { 2.0 })
        .sum();
    let vel = |f: &DVector<f64>| model.normal_velocities(&model.a_times(f.as_slice()));
    let v = vel(&f);
    let mut t = v.iter().cloned().fold(f64::INFINITY, f64::min) - scale;
    let mut eta = 1.0 / v.iter().map(|vk| 1.0 / (vk - t)).sum::<f64>();
    // φ_η(f, t) = −t + η [−Σ log(v − t) − Σ log-cone(f) + ½ Σ (f_N / F)²]
    let objective = |f: &DVector<f64>, t: f64, eta: f64| -> f64 {
        let mut omega = 0.0;
        for (k, vk) in vel(f).into_iter().enumerate() {
            omega -= (vk - t).ln();
            let o = model.off[k];
            let fk = &f.as_slice()[o..o + model.dims[k]];
            omega -= fk[0].ln();
            if model.dims[k] == 3 {
                omega -= cone_gap(model.mu[k], fk).ln();
            }
            omega += 0.5 * (fk[0] / normal_scale[k]).powi(2);
        }
        -t + eta * omega
    };
    loop {
        let v = vel(&f);
        if !all_finite(v.iter()) || !t.is_finite() {
            return Err(Failure::NonFinite);
        }
        if v.iter().all(|&vk| vk > 0.0) {
            return Ok(f);
        }
        // Farkas certificate from the barrier's multipliers.
        let u: Vec<f64> = v.iter().map(|vk| vk - t).collect();
        let inv_u: Vec<f64> = u.iter().map(|x| 1.0 / x).collect();
        let total: f64 = inv_u.iter().sum();
        let y: Vec<f64> = inv_u.iter().map(|x| x / total).collect();
        let mut w = DVector::<f64>::zeros(m);
        for k in 0..n {
            let row = model.off[k];
            for j in 0..m {
                w[j] += a[(row, j)] * y[k];
            }
        }
        let mut defect = 0.0_f64;
        let mut yc = 0.0;
        for k in 0..n {
            let o = model.off[k];
            yc += y[k] * model.c[o];
            let tang = if model.dims[k] == 3 {
                model.mu[k] * w[o + 1].hypot(w[o + 2])
            } else {
                0.0
            };
            defect = defect.max(w[o] + tang);
        }
        if yc + bound * defect <= PHASE1_MARGIN * scale || eta < 1e-15 * scale {
            return Err(Failure::Infeasible);
        }
        if *iterations >= opts.max_iterations {
            return Err(Failure::MaxIterations {
                iterations: *iterations,
                residual: f64::INFINITY,
            });
        }
        // Gradient and Hessian of φ_η in x = (f, t).
        let mut grad = DVector::zeros(m + 1);
        let mut hess = DMatrix::zeros(m + 1, m + 1);
        // velocity barrier: −Σ log(A_N f + c_N − t), Jacobian rows [A_N, −1].
        let mut rows = DMatrix::zeros(n, m + 1);
        for k in 0..n {
            for j in 0..m {
                rows[(k, j)] = a[(model.off[k], j)];
            }
            rows[(k, m)] = -1.0;
        }
        for k in 0..n {
            for j in 0..=m {
                grad[j] -= eta * rows[(k, j)] * inv_u[k];
            }
        }
        let scaled = DMatrix::from_fn(n, m + 1, |k, j| rows[(k, j)] * inv_u[k] * eta.sqrt());
        hess.gemm_tr(1.0, &scaled, &scaled, 0.0);
        grad[m] -= 1.0;
        for k in 0..n {
            let o = model.off[k];
            let fk = &f.as_slice()[o..o + model.dims[k]];
            let reg = 1.0 / (normal_scale[k] * normal_scale[k]);
            if model.dims[k] == 1 {
                grad[o] += eta * (-1.0 / fk[0] + fk[0] * reg);
                hess[(o, o)] += eta * (1.0 / (fk[0] * fk[0]) + reg);
            } else {
                let gk = cone_gradient(model.mu[k], fk);
                let hk = cone_hessian(model.mu[k], fk);
                for i in 0..3 {
                    grad[o + i] += eta * gk[i];
                    for j in 0..3 {
                        hess[(o + i, o + j)] += eta * hk[i][j];
                    }
                }
                grad[o] += eta * fk[0] * reg;
                hess[(o, o)] += eta * reg;
            }
        }
        // Degenerate problems (a direction along which v does not change)
        // make this SPD system ill-conditioned as η → 0: factor it with a
        // tiny diagonal shift and refine against the unshifted matrix.
        let shift = 1e-12 * hess.diagonal().amax();
        let mut shifted = hess.clone();
        for i in 0..=m {
            shifted[(i, i)] += shift;
        }
        let chol = shifted.cholesky().ok_or(Failure::NonFinite)?;
        let rhs = -&grad;
        let mut d = chol.solve(&rhs);
        for _ in 0..2 {
            let res = &rhs - &hess * &d;
            d += chol.solve(&res);
        }
        if !all_finite(d.iter()) {
            return Err(Failure::NonFinite);
        }
        let slope = grad.dot(&d);
        let decrement = -slope / eta;
        // Numerically infeasible: at a centred point the barrier method's
        // duality gap bounds the best margin by t + ν η (doubled for the
        // inexact centring); ν = Σ_k (1 + 1 + 2 [friction]).
        if decrement <= CENTERED && t + 2.0 * nu * eta <= PHASE1_MARGIN * scale {
            return Err(Failure::Infeasible);
        }
        // Fraction to the boundary: cones and u = v − t > 0.
        let df = d.rows(0, m).into_owned();
        let dt = d[m];
        let adf = model.a_times(df.as_slice());
        let mut alpha_max = f64::INFINITY;
        for (k, &o) in model.off.iter().enumerate() {
            let e = o + model.dims[k];
            alpha_max = alpha_max.min(cone_max_step(
                model.mu[k],
                &f.as_slice()[o..e],
                &df.as_slice()[o..e],
            ));
            let du = adf[o] - dt;
            if du < 0.0 {
                alpha_max = alpha_max.min(-u[k] / du);
            }
        }
        let phi = objective(&f, t, eta);
        let mut alpha = (FRACTION_TO_BOUNDARY * alpha_max).min(1.0);
        let mut accepted = false;
        for _ in 0..MAX_BACKTRACKS {
            let ft = &f + &df * alpha;
            let tt = t + dt * alpha;
            let cones_ok = model
                .off
                .iter()
                .enumerate()
                .all(|(k, &o)| in_cone(model.mu[k], &ft.as_slice()[o..o + model.dims[k]]));
            if cones_ok && vel(&ft).iter().all(|vk| vk - tt > 0.0) {
                let pt = objective(&ft, tt, eta);
                if pt <= phi + ARMIJO * alpha * slope {
                    f = ft;
                    t = tt;
                    accepted = true;
                    break;
                }
            }
            alpha *= 0.5;
        }
        *iterations += 1;
        if !accepted || decrement <= CENTERED {
            // Centred (or no further progress at this η): tighten the barrier.
            eta /= KAPPA_REDUCTION;
        }
    }
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
