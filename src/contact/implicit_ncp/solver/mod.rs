//! Contact-space solver of the implicit complementarity method (Todorov,
//! ICRA 2010, "Implicit nonlinear complementarity: a new approach to
//! contact dynamics").
//!
//! # Formulation
//!
//! `n` contacts, unknown `x ∈ R³ⁿ`; contact `k` owns the entries `3k`
//! (normal, `N`) and `3k+1`, `3k+2` (the two tangents, `F`). The impulse
//! `f(x)` and the contact velocity `v(x)` are functions of `x` built so that
//! the complementarity conditions and Coulomb's law hold by construction:
//!
//! * `f_N = max(0, −x_N)`, `v_N = max(0, x_N)`;
//! * `s = min(1, μ f_N / ‖x_F‖)` (`s = 1` when `‖x_F‖ = 0`),
//!   `f_F = −s x_F`, `v_F = (1 − s) x_F`;
//!
//! so that `v = x + f` (see [`impulse_velocity`]). Given the contact-space
//! inverse inertia `A` (`3n × 3n`, positive semi-definite in practice and
//! rank-deficient for redundant contacts; symmetry is never assumed) and the
//! free contact velocity `c`, the contact equation `A f(x) + c = v(x)`
//! becomes the residual ([`residual`])
//!
//! ```text
//! r(x) = (A − I) f(x) − x + c = 0.
//! ```
//!
//! # Derivative
//!
//! `f` is piecewise smooth, so `∂r/∂x = (A − I) Df(x) − I` ([`jacobian`])
//! with `Df` block-diagonal, one `3 × 3` block per contact
//! ([`local_derivative`]) on each [`Piece`]:
//!
//! * [`Piece::Separated`] (`x_N > 0`): `f ≡ 0`, `Df = 0`;
//! * [`Piece::Sticking`] (`x_N ≤ 0`, `‖x_F‖ < μ f_N`): `f = −x`, `Df = −I`;
//! * [`Piece::Sliding`] (`x_N ≤ 0`, `‖x_F‖ ≥ μ f_N`): with `u = x_F/‖x_F‖`,
//!   `f_F = −μ f_N u = μ x_N u`, so `∂f_N/∂x_N = −1`, `∂f_F/∂x_N = μ u`,
//!   `∂f_F/∂x_F = −(μ f_N/‖x_F‖)(I − u uᵀ)`.
//!
//! The kinks are the plane `x_N = 0` and, for `μ > 0`, the cone
//! `‖x_F‖ = −μ x_N` (`x_N < 0`). On a kink the one-sided derivative of the
//! piece returned by [`piece`] is used: the plane `x_N = 0` belongs to the
//! contact side (sticking or sliding), the cone to the sliding side, and at
//! `x_N = 0, x_F = 0` (sliding without impulse) the direction `u` is taken
//! as `0`, so `Df = diag(−1, 0, 0)`. [`kink_distance`] measures how far a
//! point is from every kink.
//!
//! # Solvers
//!
//! Both minimize `ℓ = ½‖r‖²` with the generalized Jacobian `J`
//! ([`Method`]):
//!
//! * [`Method::LevenbergMarquardt`]: `x ← x − (JᵀJ + λI)⁻¹ Jᵀ r`; `λ`
//!   starts at `10⁻³ max diag(JᵀJ)`, is decreased after a step that lowers
//!   `ℓ` (Nielsen's gain-ratio rule) and multiplied by a doubling factor
//!   after one that does not.
//! * [`Method::Dogleg`]: a trust region on the dogleg path from `x` to the
//!   Cauchy point (minimizer of the quadratic model along `−Jᵀr`) and on to
//!   the Gauss–Newton point. The full Gauss–Newton step is tried first
//!   when it lies in the trust region; if the ratio test accepts it, the
//!   iteration counts as "Newton accepted" ([`Stats::newton_accepted`]).
//!   Otherwise an edge-aware search runs along both path segments: it
//!   evaluates `ℓ` where a segment crosses a kink (the plane is linear in
//!   the segment parameter, the cone a quadratic), at the segment ends, and
//!   between two consecutive evaluated points at the minimizer of `‖r‖`
//!   along the secant of `r` (exact where `r` is affine between kinks: the
//!   minimum of `ℓ` between two kinks is often inside, and without that
//!   point the dogleg crawls by Cauchy steps in ill-conditioned valleys).
//!   The best point goes through the usual ratio test of the radius.
//!
//! # Globalization
//!
//! `ℓ` has stationary points that are not solutions, so a descent method
//! on `r` alone stalls on a fair share of hard problems (with redundant
//! contacts, μ ∈ [0, 2]: about half of the random problems of the tests):
//!
//! * flat valleys: when the contact-space inverse inertia of the active
//!   contacts is singular (a box on more than three coplanar points) and
//!   `c` is not in its range, `r` is constant along `null(J)` inside a piece,
//!   `Jᵀr = 0` with `r ≠ 0`, even without friction;
//! * nonsmooth local minima on kinks, where the gradient of each adjacent
//!   piece points across the kink (Coulomb's law is not monotone).
//!
//! Both methods escape flat valleys by themselves: when the iteration stops
//! at a stationary point of `ℓ` (`Jᵀr ≈ 0`), when the dogleg's radius
//! collapses, or (Levenberg–Marquardt) after two accepted steps in a row
//! that each lower `‖r‖` by less than 10 %, it searches along `x + t d`
//! with `d` the part of `r` in `null(J)` (computed with the factorization
//! of `JᵀJ + λ_min I`). Inside the current pieces `ℓ` is flat along `d`;
//! on a sticking block of a symmetric `A` (`J = −A` there) `d = r`, i.e.
//! the redundant impulses are redistributed along `−r`, the direction of
//! the fixed-point map `x ← (A − I) f(x) + c`, until a contact reaches a
//! kink (separates or starts sliding), beyond which `‖r‖` decreases. The
//! search is the edge-aware segment search of the dogleg on a segment
//! long enough (`10 (1 + max μ) max(‖x‖∞, ‖c‖∞) / ‖d‖∞`) to reach any
//! kink, so it crosses the whole valley in one iteration. Example: a box
//! on four coplanar corners whose free normal velocities are off a rigid
//! motion by `δ (1, −1, 1, −1)` rests on one diagonal; that solution is
//! the end of the valley where the other two impulses vanish, `O(1)` away
//! from where the descent stops, whatever `δ`.
//!
//! [`solve`] therefore runs the method on the true problem for at most
//! `10` iterations (the fast path: the typical solve ends there), then
//! restarts from `x0` along a smoothing continuation: `f` is replaced by the
//! smooth `f_ε` (`f_N = ½(√(x_N² + 4ε²) − x_N)`, Chen–Harker–Kanzow–Smale,
//! and `s = μ f_N / smax_ε(μ f_N, ‖x_F‖)` with the smooth maximum
//! `smax_ε(p, q) = ½(p + q + √((p − q)² + 4ε²))`), whose Jacobian is
//! nonsingular for frictionless problems with positive semi-definite `A`:
//! `J_ε = −(A D + I − D)` with `D = −Df_ε` diagonal in `(0, 1)` is
//! `−(A + D⁻¹ − I) D`, so `ℓ_ε` has no spurious stationary points. Each
//! stage solves `r_ε = 0` (10 iterations at most) from the previous one,
//! `ε` shrinks fivefold per stage from `0.1 ‖x0, c‖∞`, the friction
//! coefficients ramp up linearly over the first six stages (the
//! frictionless problem is the easy one), and after each full-friction
//! stage the method is tried on the true problem (5 iterations) from the
//! smoothed solution. Iterations of every stage count against
//! [`Options::max_iterations`].
//!
//! # Inconsistent free velocities
//!
//! If the free velocity of a group of redundant contacts is not that of a
//! rigid motion (`c` restricted to the contacts in touch has a component
//! outside the range of their block of `A`), the sticking solution is
//! gone: with the group sticking, `‖r‖` cannot go below the least-squares
//! inconsistency `min_f ‖A_SS f + c_S‖`. An exact solution then needs
//! some contacts of the group to separate or to creep (slide at the speed
//! of the inconsistency with their friction on the cone boundary), with
//! the impulses redistributed far along the null space of the block
//! (e.g. a box on four corners ending on one diagonal); depending on `c`
//! such a solution exists or not (for boxes on four corners with an
//! inconsistent tangential `c`, both happen), and it jumps with `c`, so
//! it is not the physically meaningful answer anyway. [`solve`] finds the
//! separating solutions reached through the valley (as in the example of
//! the previous section) but in general not the creeping ones: it then
//! stops at the floor and returns [`Failure::MaxIterations`] with the
//! smallest residual met and its point, the least-squares solution of
//! the group (its velocities are those of the rigid motion closest to
//! `c`). The floor is for the caller to remove, by building `c` so that
//! each rigid group's free contact velocities come from one generalized
//! velocity through the same rows as `A`: with such a `c` the iteration
//! converges in a few steps.
//!
//! # Linear algebra
//!
//! Every linear solve is a Cholesky factorization of `JᵀJ + λI`, dense and
//! in place (no allocation per iteration), with `λ` at least `λ_min =
//! 10⁻¹³ · max diag(JᵀJ)`: with redundant contacts `J` is singular (all
//! contacts of a box sticking: `J = −A`) and the floor keeps the
//! factorization defined; if the roundoff of `JᵀJ` still defeats it, `λ`
//! is raised tenfold until it succeeds. The Gauss–Newton point of the
//! dogleg is this regularized solve plus one step of iterative refinement
//! (iterated Tikhonov: bias `O(λ_min²)`), close to the minimum-norm
//! least-squares step. Cholesky of the normal equations costs about a third
//! of an SVD of `J` and squares its conditioning; the floor bounds the
//! amplification of roundoff, which is harmless here because convergence
//! is tested on the residual, not on the step.
//!
//! # Warm start and scaling
//!
//! Without `x0`, [`solve`] starts from the exact solution of the decoupled
//! problem in which `A` is replaced by a per-contact isotropic diagonal
//! (normal entry `A₃ₖ,₃ₖ`, tangential entry the mean of the two tangential
//! diagonal entries): for `A = I` that is `x0 = c`; for a single point mass
//! it is the solution. The tolerance is absolute on `‖r‖∞` and the
//! regularization is relative to `‖J‖²`: the caller should scale the
//! impulses so that the diagonal of `A` is `O(1)` (e.g. divide `A` by its
//! mean diagonal entry, solve, and multiply the impulses back).
//!
//! # Files
//!
//! `mod.rs` (options, failures, [`solve`], the projected Gauss–Seidel
//! fallback), `cone_map.rs` (the piecewise impulse map and its
//! derivative), `problem.rs` ([`residual`], [`jacobian`], [`warm_start`]),
//! `workspace.rs` (the Levenberg–Marquardt workspace and its Cholesky) and
//! `search.rs` (Levenberg–Marquardt, the piecewise line search, dogleg).

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use std::fmt;

mod cone_map;
mod problem;
mod workspace;
mod search;
pub use cone_map::*;
pub use problem::*;
use workspace::*;
use search::*;

/// Algorithm used by [`solve`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    /// Stabilized Gauss–Newton: `x ← x − (JᵀJ + λI)⁻¹ Jᵀ r` with `λ`
    /// adapted online.
    LevenbergMarquardt,
    /// Dogleg trust region with an edge-aware search along the path.
    #[default]
    Dogleg,
}

/// Options of [`solve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Algorithm (default [`Method::Dogleg`]).
    pub method: Method,
    /// Convergence threshold on `‖r‖∞` (default `1e-12`).
    pub tolerance: f64,
    /// Maximum number of iterations, i.e. of trial steps over all stages
    /// (default `100`).
    pub max_iterations: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            method: Method::Dogleg,
            tolerance: 1e-12,
            max_iterations: 100,
        }
    }
}

/// Statistics of a successful [`solve`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Number of iterations: trial steps, accepted or rejected, over all
    /// stages (a rejected step reuses the Jacobian and, for the dogleg, its
    /// factorization).
    pub iterations: usize,
    /// Iterations whose full Gauss–Newton step was accepted without line
    /// search (Levenberg–Marquardt: accepted steps taken with `λ` at its
    /// floor, i.e. undamped Gauss–Newton steps).
    pub newton_accepted: usize,
    /// Final `‖r‖∞`.
    pub residual: f64,
    /// Whether the last resort (projected Gauss–Seidel, then
    /// [`FALLBACK_ITERATIONS`] more iterations) ran.
    pub fallback: bool,
}

/// Why [`solve`] failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The tolerance was not reached within the iteration budget (or every
    /// stage stalled before it).
    MaxIterations {
        /// Iterations performed.
        iterations: usize,
        /// Smallest `‖r‖∞` met on the true problem.
        residual: f64,
        /// The iterate at which it was met (a caller with a looser
        /// tolerance may take it).
        x: DVector<f64>,
    },
    /// An input (`A`, `c`, `μ`, `x0`) or an iterate was not finite.
    NonFinite,
}

impl fmt::Display for Failure {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::MaxIterations {
                iterations,
                residual,
                ..
            } => write!(
                out,
                "implicit complementarity solver did not converge: \
                 residual {residual:e} after {iterations} iterations"
            ),
            Failure::NonFinite => {
                write!(out, "implicit complementarity solver met a non-finite value")
            }
        }
    }
}

impl std::error::Error for Failure {}

/// Smooth piece of one contact's map `x ↦ f(x)` (see the module
/// documentation for the derivative on each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// `x_N > 0`: no impulse, `v = x`.
    Separated,
    /// `x_N ≤ 0` and `‖x_F‖ < μ f_N`: `f = −x`, `v = 0`.
    Sticking,
    /// `x_N ≤ 0` and `‖x_F‖ ≥ μ f_N`: the impulse is on the cone boundary
    /// and opposes the tangential velocity.
    Sliding,
}

/// Relative floor of the regularization `λ` (times `max diag(JᵀJ)`).
const LAMBDA_FLOOR: f64 = 1e-13;
/// Initial `λ` of Levenberg–Marquardt, relative to `max diag(JᵀJ)`.
const LM_INITIAL: f64 = 1e-3;
/// `λ` (relative to `max diag(JᵀJ)`) above which Levenberg–Marquardt has
/// stalled.
const STALL_LAMBDA: f64 = 1e12;
/// Trust radius (relative to `1 + ‖x‖∞`) below which the dogleg has
/// stalled.
const STALL_RADIUS: f64 = 1e-8;
/// `‖Jᵀr‖ ≤ STATIONARY √max diag(JᵀJ) ‖r‖`: a stationary point of `ℓ`.
const STATIONARY: f64 = 1e-12;
/// Threshold of the ratio test.
const ETA: f64 = 1e-4;
/// Iterations of the first attempt on the true problem.
const EXACT_ITERATIONS: usize = 10;
/// First smoothing parameter, relative to `max(‖x0‖∞, ‖c‖∞)`.
const SMOOTHING_INITIAL: f64 = 0.1;
/// Factor of `ε` from one smoothing stage to the next.
const SMOOTHING_SHRINK: f64 = 0.2;
/// Last smoothing parameter (relative, as [`SMOOTHING_INITIAL`]) before
/// the final stage on the true problem.
const SMOOTHING_FINAL: f64 = 1e-12;
/// Iterations of each smoothing stage.
const SMOOTHING_ITERATIONS: usize = 10;
/// Smoothing stages over which the friction coefficients ramp up.
const FRICTION_RAMP: usize = 6;
/// Accepted Levenberg–Marquardt steps in a row, each lowering `‖r‖` by
/// less than 10 %, after which the residual search runs.
const STAGNANT_STEPS: usize = 2;
/// Iterations of each attempt on the true problem between stages.
const POLISH_ITERATIONS: usize = 5;

/// `‖v‖∞`.
#[doc(hidden)]
pub fn norm_inf(v: &DVector<f64>) -> f64 {
    v.iter().fold(0.0, |m: f64, e| m.max(e.abs()))
}

/// Solves `r(x) = 0`, i.e. `A f(x) + c = v(x)`, from `x0` (default: the
/// decoupled warm start of the module documentation) with `opts.method`,
/// first on the true problem, then along the smoothing continuation of the
/// module documentation. Returns `x` (impulse and velocity of each contact
/// by [`impulse_velocity`]) and the [`Stats`].
///
/// `mu` holds one friction coefficient per contact (`μ ≥ 0`; negative
/// values act as 0).
///
/// # Errors
///
/// [`Failure::NonFinite`] if an input or an iterate is not finite;
/// [`Failure::MaxIterations`] if `‖r‖∞ ≤ opts.tolerance` is not reached in
/// `opts.max_iterations` iterations.
///
/// # Panics
///
/// If `A` is not `3n × 3n` or `c`, `x0` do not have `3n` entries, with `n =
/// mu.len()`.
pub fn solve(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    x0: Option<&DVector<f64>>,
    opts: &Options,
) -> Result<(DVector<f64>, Stats), Failure> {
    check_dimensions(a, mu, c);
    let finite = |v: &[f64]| v.iter().all(|e| e.is_finite());
    if !finite(a.as_slice()) || !finite(c.as_slice()) || !finite(mu) {
        return Err(Failure::NonFinite);
    }
    let x = match x0 {
        Some(x0) => {
            check_dimensions(a, mu, x0);
            if !finite(x0.as_slice()) {
                return Err(Failure::NonFinite);
            }
            x0.clone()
        }
        None => {
            let mut x = DVector::zeros(c.len());
            warm_start(a, c, mu, &mut x);
            x
        }
    };
    let mut ws = Workspace::new(a, c, mu, x);
    let mut stats = Stats::default();
    let run = |ws: &mut Workspace, budget: usize, tolerance: f64, stats: &mut Stats| {
        let budget = budget.min(opts.max_iterations - stats.iterations);
        match opts.method {
            Method::LevenbergMarquardt => levenberg_marquardt(ws, tolerance, budget, stats),
            Method::Dogleg => dogleg(ws, tolerance, budget, stats),
        }
    };
    let done = |ws: Workspace, mut stats: Stats| {
        stats.residual = norm_inf(&ws.r);
        Ok((ws.x, stats))
    };
    // the fast path
    if run(&mut ws, EXACT_ITERATIONS, opts.tolerance, &mut stats)? {
        return done(ws, stats);
    }
    let mut best = norm_inf(&ws.r);
    let mut best_x = ws.x.clone();
    let keep = |ws: &Workspace, best: &mut f64, best_x: &mut DVector<f64>| {
        let r = norm_inf(&ws.r);
        if r < *best {
            *best = r;
            best_x.copy_from(&ws.x);
        }
    };
    // smoothing continuation from the start
    let scale = norm_inf(&ws.start).max(norm_inf(c));
    ws.x.copy_from(&ws.start);
    let mut eps = SMOOTHING_INITIAL * scale;
    let mut stage = 0;
    while stats.iterations < opts.max_iterations {
        let before = stats.iterations;
        stage += 1;
        let ramp = (stage as f64 / (FRICTION_RAMP + 1) as f64).min(1.0);
        for (working, &mu_k) in ws.problem.mu.iter_mut().zip(mu) {
            *working = ramp * mu_k;
        }
        if !(eps > SMOOTHING_FINAL * scale) && ramp == 1.0 {
            // final stage: the true problem with the whole budget left
            ws.problem.eps = 0.0;
            ws.evaluate_iterate();
            if run(&mut ws, usize::MAX, opts.tolerance, &mut stats)? {
                return done(ws, stats);
            }
            keep(&ws, &mut best, &mut best_x);
            break;
        }
        ws.problem.eps = eps;
        ws.evaluate_iterate();
        let tolerance = (1e-3 * eps).max(opts.tolerance);
        run(&mut ws, SMOOTHING_ITERATIONS, tolerance, &mut stats)?;
        if ramp == 1.0 {
            // attempt on the true problem from the smoothed solution
            ws.problem.eps = 0.0;
            ws.evaluate_iterate();
            keep(&ws, &mut best, &mut best_x);
            ws.anchor.copy_from(&ws.x);
            if run(&mut ws, POLISH_ITERATIONS, opts.tolerance, &mut stats)? {
                return done(ws, stats);
            }
            keep(&ws, &mut best, &mut best_x);
            std::mem::swap(&mut ws.x, &mut ws.anchor);
        }
        eps *= SMOOTHING_SHRINK;
        if stats.iterations == before {
            // a stage that stalled at once still costs an iteration, so
            // that the loop ends
            stats.iterations += 1;
        }
    }
    // Last resort: projected Gauss–Seidel on the bipotential form of
    // Coulomb's law from the best point (slow but monotone on the flat
    // valleys and kink minima that stop the descent), then the method on
    // the true problem from there.
    ws.problem.eps = 0.0;
    ws.problem.mu.copy_from_slice(mu);
    ws.x.copy_from(&best_x);
    projected_gauss_seidel(a, c, mu, &mut ws.x, PGS_SWEEPS);
    ws.evaluate_iterate();
    keep(&ws, &mut best, &mut best_x);
    stats.fallback = true;
    let polished = match opts.method {
        Method::LevenbergMarquardt => {
            levenberg_marquardt(&mut ws, opts.tolerance, FALLBACK_ITERATIONS, &mut stats)?
        }
        Method::Dogleg => dogleg(&mut ws, opts.tolerance, FALLBACK_ITERATIONS, &mut stats)?,
    };
    if polished {
        return done(ws, stats);
    }
    keep(&ws, &mut best, &mut best_x);
    Err(Failure::MaxIterations {
        iterations: stats.iterations,
        residual: best,
        x: best_x,
    })
}

/// Sweeps of the last-resort projected Gauss–Seidel.
const PGS_SWEEPS: usize = 500;
/// Iterations of the method after it (beyond `Options::max_iterations`).
pub const FALLBACK_ITERATIONS: usize = 30;

/// Projected Gauss–Seidel on De Saxcé's bipotential form of the contact
/// law: per contact `f ← Π_K(f − ρ (v + μ‖v_F‖ e_N))` with `v = A f + c`,
/// `K` the friction cone and `ρ = 1/A_NN` of the contact's block; a fixed
/// point satisfies Coulomb's law with `v_N = 0` while sliding. Starts from
/// `f(x)`, at most `sweeps` sweeps (stops when a sweep changes no impulse
/// by more than `10⁻¹⁴` of the largest), returns the hybrid point
/// `x = v − f` in `x`.
fn projected_gauss_seidel(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    x: &mut DVector<f64>,
    sweeps: usize,
) {
    let n = mu.len();
    let mut f = DVector::zeros(3 * n);
    for k in 0..n {
        f.fixed_rows_mut::<3>(3 * k)
            .copy_from(&impulse(mu[k], &local(x, k)));
    }
    let mut v = a * &f + c;
    for _ in 0..sweeps {
        let mut change: f64 = 0.0;
        let mut size: f64 = 0.0;
        for k in 0..n {
            let mu_k = friction(mu[k]);
            let ann = a[(3 * k, 3 * k)];
            if !(ann > 0.0) {
                continue;
            }
            let vk = local(&v, k);
            let fk = local(&f, k);
            let vt = vk[1].hypot(vk[2]);
            let g = fk - Vector3::new(vk[0] + mu_k * vt, vk[1], vk[2]) / ann;
            let fnew = project_cone(mu_k, &g);
            let df = fnew - fk;
            if df.amax() > 0.0 {
                // v += A[:, k] df
                let cols = a.columns(3 * k, 3);
                v += cols * df;
                f.fixed_rows_mut::<3>(3 * k).copy_from(&fnew);
            }
            change = change.max(df.amax());
            size = size.max(fnew.amax());
        }
        if change <= 1e-14 * size {
            break;
        }
    }
    x.copy_from(&(&v - &f));
}

/// Projection onto the friction cone `‖f_F‖ ≤ μ f_N`.
fn project_cone(mu: f64, g: &Vector3<f64>) -> Vector3<f64> {
    let t = g[1].hypot(g[2]);
    if t <= mu * g[0] {
        *g
    } else if mu * t <= -g[0] {
        Vector3::zeros()
    } else {
        let fn_ = (g[0] + mu * t) / (1.0 + mu * mu);
        let s = mu * fn_ / t;
        Vector3::new(fn_, s * g[1], s * g[2])
    }
}

/// Common loop head: `Some(true)` converged, `Some(false)` out of budget.
fn converged(
    ws: &Workspace,
    tolerance: f64,
    budget: usize,
    start: usize,
    stats: &Stats,
) -> Result<Option<bool>, Failure> {
    let residual = norm_inf(&ws.r);
    if !residual.is_finite() {
        return Err(Failure::NonFinite);
    }
    if residual <= tolerance {
        return Ok(Some(true));
    }
    if stats.iterations - start >= budget {
        return Ok(Some(false));
    }
    Ok(None)
}
