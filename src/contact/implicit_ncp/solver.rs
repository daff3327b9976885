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

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use std::fmt;

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

/// Friction coefficient as used: negative (and NaN) coefficients act as 0.
fn friction(mu: f64) -> f64 {
    if mu > 0.0 {
        mu
    } else {
        0.0
    }
}

/// Impulse `f(x)` of one contact.
#[doc(hidden)]
pub fn impulse(mu: f64, x: &Vector3<f64>) -> Vector3<f64> {
    // `−x_N` rather than `max` so that a NaN propagates
    let f_n = if x[0] > 0.0 { 0.0 } else { -x[0] };
    let norm_f = x[1].hypot(x[2]);
    let bound = friction(mu) * f_n;
    let s = if norm_f > bound { bound / norm_f } else { 1.0 };
    Vector3::new(f_n, -s * x[1], -s * x[2])
}

/// Impulse `f` and velocity `v = x + f` of one contact with friction
/// coefficient `mu` (`μ ≥ 0`; negative values act as 0) at `x`.
///
/// `f_N = max(0, −x_N)`, `f_F = −s x_F` with `s = min(1, μ f_N/‖x_F‖)`
/// (`s = 1` when `x_F = 0`), so `f_N ≥ 0`, `v_N ≥ 0`, `f_N v_N = 0`,
/// `‖f_F‖ ≤ μ f_N` and `v_F = (1 − s) x_F` opposes `f_F`.
pub fn impulse_velocity(mu: f64, x: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let f = impulse(mu, x);
    (f, x + f)
}

/// Smooth piece containing `x` for friction coefficient `mu`: separated if
/// `x_N > 0`, else sticking if `‖x_F‖ < μ f_N`, else sliding (kinks belong
/// to the contact side of the plane and to the sliding side of the cone).
pub fn piece(mu: f64, x: &Vector3<f64>) -> Piece {
    if x[0] > 0.0 {
        Piece::Separated
    } else if x[1].hypot(x[2]) < friction(mu) * -x[0] {
        Piece::Sticking
    } else {
        Piece::Sliding
    }
}

/// Derivative `Df = ∂f/∂x` (`3 × 3`) of one contact's impulse at `x`, on the
/// piece returned by [`piece`] (the one-sided derivative on a kink; at
/// `x_N = 0, x_F = 0` it is `diag(−1, 0, 0)`).
pub fn local_derivative(mu: f64, x: &Vector3<f64>) -> Matrix3<f64> {
    let mu = friction(mu);
    match piece(mu, x) {
        Piece::Separated => Matrix3::zeros(),
        Piece::Sticking => -Matrix3::identity(),
        Piece::Sliding => {
            let mut d = Matrix3::zeros();
            d[(0, 0)] = -1.0;
            let norm_f = x[1].hypot(x[2]);
            if mu > 0.0 && norm_f > 0.0 {
                let (u1, u2) = (x[1] / norm_f, x[2] / norm_f);
                // f_F = μ x_N u
                d[(1, 0)] = mu * u1;
                d[(2, 0)] = mu * u2;
                let w = mu * x[0] / norm_f; // −μ f_N / ‖x_F‖
                d[(1, 1)] = w * (1.0 - u1 * u1);
                d[(1, 2)] = -w * u1 * u2;
                d[(2, 1)] = -w * u1 * u2;
                d[(2, 2)] = w * (1.0 - u2 * u2);
            }
            d
        }
    }
}

/// Euclidean distance from `x` to the nearest kink surface of one contact:
/// the plane `x_N = 0` and, for `μ > 0`, the cone `‖x_F‖ = −μ x_N`
/// (`x_N ≤ 0`). Every point closer to `x` than this is on the same
/// [`Piece`] as `x` (up to the kinks themselves), so a finite difference
/// of step `h` well below it differentiates one smooth piece.
pub fn kink_distance(mu: f64, x: &Vector3<f64>) -> f64 {
    let mu = friction(mu);
    let (a, rho) = (x[0], x[1].hypot(x[2]));
    let plane = a.abs();
    if mu == 0.0 {
        return plane;
    }
    // the cone is a surface of revolution: distance, in the half-plane
    // (x_N, ‖x_F‖), from (a, ρ) to the ray t (−1, μ), t ≥ 0
    let norm = (1.0 + mu * mu).sqrt();
    let along = (-a + mu * rho) / norm;
    let cone = if along <= 0.0 {
        a.hypot(rho)
    } else {
        (mu * a + rho).abs() / norm
    };
    plane.min(cone)
}

/// Smoothed impulse `f_ε(x)` of one contact and its derivative (`ε > 0`):
/// `f_N = ½(√(x_N² + 4ε²) − x_N)`, `f_F = −s x_F` with `s = b / smax(b,
/// ‖x_F‖)`, `b = μ f_N`, `smax(p, q) = ½(p + q + √((p − q)² + 4ε²))`; both
/// tend to the exact maps as `ε → 0`.
fn smoothed_impulse(mu: f64, x: &Vector3<f64>, eps: f64) -> (Vector3<f64>, Matrix3<f64>) {
    let mu = friction(mu);
    let a = x[0];
    let q = (a * a + 4.0 * eps * eps).sqrt();
    let f_n = 0.5 * (q - a);
    let df_n = 0.5 * (a / q - 1.0);
    let (y1, y2) = (x[1], x[2]);
    let rho = y1.hypot(y2);
    let b = mu * f_n;
    let w = ((rho - b) * (rho - b) + 4.0 * eps * eps).sqrt();
    let smax = 0.5 * (b + rho + w);
    let s = b / smax;
    let dsmax_db = 0.5 * (1.0 + (b - rho) / w);
    let dsmax_drho = 0.5 * (1.0 + (rho - b) / w);
    let ds_db = (smax - b * dsmax_db) / (smax * smax);
    let ds_drho = -b * dsmax_drho / (smax * smax);
    let mut d = Matrix3::zeros();
    d[(0, 0)] = df_n;
    // ∂f_F/∂x_N = −x_F (∂s/∂b) μ f_N'
    d[(1, 0)] = -y1 * ds_db * mu * df_n;
    d[(2, 0)] = -y2 * ds_db * mu * df_n;
    // ∂f_F/∂x_F = −(s I + (∂s/∂ρ) x_F x_Fᵀ / ρ)
    let k = if rho > 0.0 { ds_drho / rho } else { 0.0 };
    d[(1, 1)] = -(s + k * y1 * y1);
    d[(1, 2)] = -k * y1 * y2;
    d[(2, 1)] = -k * y1 * y2;
    d[(2, 2)] = -(s + k * y2 * y2);
    (Vector3::new(f_n, -s * y1, -s * y2), d)
}

/// Checks the dimensions shared by the public functions.
fn check_dimensions(a: &DMatrix<f64>, mu: &[f64], x: &DVector<f64>) {
    let m = 3 * mu.len();
    assert!(
        a.nrows() == m && a.ncols() == m,
        "A is {}×{}, expected {m}×{m} for {} contacts",
        a.nrows(),
        a.ncols(),
        mu.len()
    );
    assert_eq!(x.len(), m, "vector has {} entries, expected {m}", x.len());
}

/// Contact `k`'s three entries of `x`.
#[doc(hidden)]
pub fn local(x: &DVector<f64>, k: usize) -> Vector3<f64> {
    Vector3::new(x[3 * k], x[3 * k + 1], x[3 * k + 2])
}

/// The problem the iterations run on: `r_ε(x) = (A − I) f_ε(x) − x + c`
/// with the working friction coefficients `mu` (`ε = 0`: the exact `f`).
struct Problem<'p> {
    a: &'p DMatrix<f64>,
    c: &'p DVector<f64>,
    mu: Vec<f64>,
    eps: f64,
}

impl Problem<'_> {
    /// `r_ε(x)` into `r` (`f` is scratch); returns `½‖r_ε‖²`.
    fn evaluate(&self, x: &DVector<f64>, f: &mut DVector<f64>, r: &mut DVector<f64>) -> f64 {
        for (k, &mu_k) in self.mu.iter().enumerate() {
            let local_x = local(x, k);
            let fk = if self.eps > 0.0 {
                smoothed_impulse(mu_k, &local_x, self.eps).0
            } else {
                impulse(mu_k, &local_x)
            };
            f.fixed_rows_mut::<3>(3 * k).copy_from(&fk);
        }
        r.gemv(1.0, self.a, f, 0.0);
        for (((ri, ci), xi), fi) in r.iter_mut().zip(self.c.iter()).zip(x.iter()).zip(f.iter()) {
            *ri += ci - xi - fi;
        }
        0.5 * r.norm_squared()
    }

    /// `J_ε = (A − I) Df_ε(x) − I` into `j`.
    fn jacobian(&self, x: &DVector<f64>, j: &mut DMatrix<f64>) {
        for (k, &mu_k) in self.mu.iter().enumerate() {
            let local_x = local(x, k);
            let d = if self.eps > 0.0 {
                smoothed_impulse(mu_k, &local_x, self.eps).1
            } else {
                local_derivative(mu_k, &local_x)
            };
            let mut cols = j.columns_mut(3 * k, 3);
            if d == Matrix3::zeros() {
                cols.fill(0.0);
                continue;
            }
            cols.gemm(1.0, &self.a.columns(3 * k, 3), &d, 0.0);
            let mut block = cols.rows_mut(3 * k, 3);
            block -= d;
        }
        for i in 0..j.nrows() {
            j[(i, i)] -= 1.0;
        }
    }
}

/// Residual `r(x) = (A − I) f(x) − x + c` of the contact equation
/// `A f(x) + c = v(x)`.
///
/// # Panics
///
/// If `A` is not `3n × 3n` or `c`, `x` do not have `3n` entries, with `n =
/// mu.len()`.
pub fn residual(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    x: &DVector<f64>,
) -> DVector<f64> {
    check_dimensions(a, mu, x);
    check_dimensions(a, mu, c);
    let problem = Problem {
        a,
        c,
        mu: mu.to_vec(),
        eps: 0.0,
    };
    let mut f = DVector::zeros(x.len());
    let mut r = DVector::zeros(x.len());
    problem.evaluate(x, &mut f, &mut r);
    r
}

/// Generalized Jacobian `∂r/∂x = (A − I) Df(x) − I` of [`residual`], with
/// the block-diagonal `Df` of [`local_derivative`] (one-sided on kinks).
///
/// # Panics
///
/// If `A` is not `3n × 3n` or `x` does not have `3n` entries, with `n =
/// mu.len()`.
pub fn jacobian(a: &DMatrix<f64>, mu: &[f64], x: &DVector<f64>) -> DMatrix<f64> {
    check_dimensions(a, mu, x);
    let m = x.len();
    let no_c = DVector::zeros(0);
    let problem = Problem {
        a,
        c: &no_c,
        mu: mu.to_vec(),
        eps: 0.0,
    };
    let mut j = DMatrix::zeros(m, m);
    problem.jacobian(x, &mut j);
    j
}

/// Default start: exact solution of the decoupled problem with `A`
/// replaced by a per-contact isotropic diagonal (see the module
/// documentation).
#[doc(hidden)]
pub fn warm_start(a: &DMatrix<f64>, c: &DVector<f64>, mu: &[f64], x: &mut DVector<f64>) {
    let max_diag = a.diagonal().iter().fold(0.0, |m: f64, &d| m.max(d));
    // a diagonal entry far below the others (or not positive) would blow
    // the guess up: use the largest one instead (1 when A has none)
    let fallback = if max_diag > 0.0 { max_diag } else { 1.0 };
    let usable = |d: f64| if d > 1e-6 * fallback { d } else { fallback };
    for (k, &mu_k) in mu.iter().enumerate() {
        let i = 3 * k;
        let a_n = usable(a[(i, i)]);
        let a_t = usable(0.5 * (a[(i + 1, i + 1)] + a[(i + 2, i + 2)]));
        let (c_n, c_1, c_2) = (c[i], c[i + 1], c[i + 2]);
        let (x_n, scale) = if c_n >= 0.0 {
            // separated: f = 0, v = x = c
            (c_n, 1.0)
        } else {
            // a_n x_N = c_N, f_N = −x_N
            let f_n = -c_n / a_n;
            let bound = friction(mu_k) * f_n;
            let norm_c = c_1.hypot(c_2);
            if norm_c < a_t * bound {
                // sticking: a_t x_F = c_F
                (-f_n, 1.0 / a_t)
            } else if norm_c > 0.0 {
                // sliding along c_F: ‖x_F‖ − (1 − a_t) μ f_N = ‖c_F‖
                (-f_n, (norm_c + (1.0 - a_t) * bound) / norm_c)
            } else {
                (-f_n, 0.0)
            }
        };
        x[i] = x_n;
        x[i + 1] = scale * c_1;
        x[i + 2] = scale * c_2;
    }
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

/// Buffers of one [`solve`] call (allocated once).
struct Workspace<'p> {
    problem: Problem<'p>,
    /// Iterate, its residual and `ℓ = ½‖r‖²`.
    x: DVector<f64>,
    r: DVector<f64>,
    ell: f64,
    /// Scratch impulse of `evaluate`.
    f: DVector<f64>,
    /// Trial point and its residual.
    xt: DVector<f64>,
    rt: DVector<f64>,
    /// Best point of a search and its residual.
    xb: DVector<f64>,
    rb: DVector<f64>,
    /// Residual at the previous point of a search; secant point and its
    /// residual.
    rp: DVector<f64>,
    xi: DVector<f64>,
    ri: DVector<f64>,
    /// Start of the solve; iterate saved across an attempt on the true
    /// problem.
    start: DVector<f64>,
    anchor: DVector<f64>,
    /// Jacobian, lower triangle of `JᵀJ`, Cholesky factor of `JᵀJ + λI`.
    j: DMatrix<f64>,
    h: DMatrix<f64>,
    l: DMatrix<f64>,
    /// `g = Jᵀr`, trial step, Gauss–Newton and Cauchy points.
    g: DVector<f64>,
    step: DVector<f64>,
    gn: DVector<f64>,
    cauchy: DVector<f64>,
    /// Current search segment `x + seg_start + t dir` and its base point.
    seg_start: DVector<f64>,
    dir: DVector<f64>,
    base: DVector<f64>,
    jp: DVector<f64>,
    /// Kink crossings of a segment.
    breaks: Vec<f64>,
    /// `max diag(JᵀJ)` and the regularization floor at the current `J`.
    h_max: f64,
    lambda_min: f64,
    /// Levenberg–Marquardt damping relative to `max diag(JᵀJ)`, kept from
    /// one stage to the next (`NaN` before the first step).
    lambda_relative: f64,
}

impl<'p> Workspace<'p> {
    fn new(a: &'p DMatrix<f64>, c: &'p DVector<f64>, mu: &[f64], x: DVector<f64>) -> Self {
        let m = x.len();
        let zero = || DVector::zeros(m);
        let mut ws = Self {
            problem: Problem {
                a,
                c,
                mu: mu.to_vec(),
                eps: 0.0,
            },
            r: zero(),
            ell: 0.0,
            f: zero(),
            xt: zero(),
            rt: zero(),
            xb: zero(),
            rb: zero(),
            rp: zero(),
            xi: zero(),
            ri: zero(),
            start: x.clone(),
            anchor: zero(),
            j: DMatrix::zeros(m, m),
            h: DMatrix::zeros(m, m),
            l: DMatrix::zeros(m, m),
            g: zero(),
            step: zero(),
            gn: zero(),
            cauchy: zero(),
            seg_start: zero(),
            dir: zero(),
            base: zero(),
            jp: zero(),
            breaks: Vec::with_capacity(3 * m + 1),
            h_max: 0.0,
            lambda_min: 0.0,
            lambda_relative: f64::NAN,
            x,
        };
        ws.evaluate_iterate();
        ws
    }

    /// Residual and `ℓ` at the iterate.
    fn evaluate_iterate(&mut self) {
        self.ell = self.problem.evaluate(&self.x, &mut self.f, &mut self.r);
    }

    /// Residual and `ℓ` at the trial point.
    fn evaluate_trial(&mut self) -> f64 {
        self.problem.evaluate(&self.xt, &mut self.f, &mut self.rt)
    }

    /// Accepts the trial point.
    fn accept_trial(&mut self, ell: f64) {
        std::mem::swap(&mut self.x, &mut self.xt);
        std::mem::swap(&mut self.r, &mut self.rt);
        self.ell = ell;
    }

    /// Accepts the best point of a search.
    fn accept_best(&mut self, ell: f64) {
        std::mem::swap(&mut self.x, &mut self.xb);
        std::mem::swap(&mut self.r, &mut self.rb);
        self.ell = ell;
    }

    /// Jacobian, `JᵀJ`, `g = Jᵀr` and the regularization floor at the
    /// iterate; `false` at a stationary point of `ℓ` (`g ≈ 0`, `r ≠ 0`).
    fn linearize(&mut self) -> bool {
        self.problem.jacobian(&self.x, &mut self.j);
        let m = self.x.len();
        for q in 0..m {
            let col_q = self.j.column(q);
            for p in q..m {
                self.h[(p, q)] = self.j.column(p).dot(&col_q);
            }
        }
        self.g.gemv_tr(1.0, &self.j, &self.r, 0.0);
        self.h_max = self.h.diagonal().iter().fold(0.0, |m: f64, &d| m.max(d));
        self.lambda_min = LAMBDA_FLOOR * self.h_max.max(f64::MIN_POSITIVE);
        self.g.norm_squared() > STATIONARY * STATIONARY * self.h_max * 2.0 * self.ell
    }

    /// Factors `JᵀJ + λI` into `l`, raising `λ` tenfold until the
    /// factorization succeeds; returns the `λ` used (`None`: not finite).
    fn factor(&mut self, lambda: f64) -> Option<f64> {
        let mut lambda = lambda.max(self.lambda_min);
        while lambda.is_finite() {
            if cholesky(&self.h, lambda, &mut self.l) {
                return Some(lambda);
            }
            lambda *= 10.0;
        }
        None
    }

    /// `½‖r + J p‖²` for `p = step` (uses `jp`).
    fn model(&mut self) -> f64 {
        self.jp.gemv(1.0, &self.j, &self.step, 0.0);
        self.jp += &self.r;
        0.5 * self.jp.norm_squared()
    }

    /// Gauss–Newton point `gn = −(JᵀJ + λI)⁻¹ g` (with `l` factored at
    /// `λ`) plus one step of iterative refinement towards `−(JᵀJ)⁺ g`.
    fn gauss_newton(&mut self) {
        self.gn.copy_from(&self.g);
        self.gn.neg_mut();
        cholesky_solve(&self.l, &mut self.gn);
        // correction e = (JᵀJ + λI)⁻¹ (−g − JᵀJ gn), in `step`
        self.jp.gemv(1.0, &self.j, &self.gn, 0.0);
        self.step.gemv_tr(1.0, &self.j, &self.jp, 0.0);
        self.step += &self.g;
        self.step.neg_mut();
        cholesky_solve(&self.l, &mut self.step);
        self.gn += &self.step;
    }
}

/// Cholesky factor of `H + λI` (lower triangle of `h` read) into the lower
/// triangle of `l`; `false` if a pivot is not positive.
fn cholesky(h: &DMatrix<f64>, lambda: f64, l: &mut DMatrix<f64>) -> bool {
    let m = h.nrows();
    l.copy_from(h);
    for i in 0..m {
        l[(i, i)] += lambda;
    }
    let data = l.as_mut_slice();
    for j in 0..m {
        let (done, rest) = data.split_at_mut(j * m);
        let col_j = &mut rest[..m];
        // left-looking: column j −= Σ_{k<j} L[j,k] · column k
        for col_k in done.chunks_exact(m) {
            let ljk = col_k[j];
            if ljk != 0.0 {
                for (y, &x) in col_j[j..].iter_mut().zip(&col_k[j..]) {
                    *y -= ljk * x;
                }
            }
        }
        let pivot = col_j[j];
        if !(pivot > 0.0) || !pivot.is_finite() {
            return false;
        }
        let d = pivot.sqrt();
        col_j[j] = d;
        for y in &mut col_j[j + 1..] {
            *y /= d;
        }
    }
    true
}

/// Solves `L Lᵀ y = b` in place (`l` from [`cholesky`]).
fn cholesky_solve(l: &DMatrix<f64>, b: &mut DVector<f64>) {
    let m = l.nrows();
    let data = l.as_slice();
    let b = b.as_mut_slice();
    for (j, col) in data.chunks_exact(m).enumerate() {
        b[j] /= col[j];
        let bj = b[j];
        for (y, &x) in b[j + 1..].iter_mut().zip(&col[j + 1..]) {
            *y -= x * bj;
        }
    }
    for (j, col) in data.chunks_exact(m).enumerate().rev() {
        let dot: f64 = b[j + 1..].iter().zip(&col[j + 1..]).map(|(y, x)| x * y).sum();
        b[j] = (b[j] - dot) / col[j];
    }
}

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

/// Levenberg–Marquardt with Nielsen's update of `λ`, at most `budget`
/// iterations; `Ok(true)` when `‖r‖∞ ≤ tolerance`, `Ok(false)` when out of
/// budget or stalled.
fn levenberg_marquardt(
    ws: &mut Workspace,
    tolerance: f64,
    budget: usize,
    stats: &mut Stats,
) -> Result<bool, Failure> {
    let start = stats.iterations;
    let mut lambda = f64::NAN;
    let mut nu = 2.0;
    let initial = LM_INITIAL;
    let mut linearized = false;
    // accepted steps in a row that lowered ‖r‖ by less than 10 %
    let mut stagnant = 0;
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            let moving = ws.linearize();
            if !moving || (stagnant >= STAGNANT_STEPS && stats.iterations - start + 2 < budget) {
                stagnant = 0;
                stats.iterations += 1;
                if residual_search(ws) {
                    continue;
                }
                if !moving {
                    return Ok(false);
                }
                // the search overwrote g = Jᵀr (J and JᵀJ are intact)
                ws.g.gemv_tr(1.0, &ws.j, &ws.r, 0.0);
            }
            linearized = true;
            if lambda.is_nan() {
                let relative = if ws.lambda_relative.is_nan() {
                    initial
                } else {
                    ws.lambda_relative
                };
                lambda = relative * ws.h_max;
            }
        }
        stats.iterations += 1;
        let used = ws.factor(lambda).ok_or(Failure::NonFinite)?;
        ws.step.copy_from(&ws.g);
        ws.step.neg_mut();
        cholesky_solve(&ws.l, &mut ws.step);
        ws.xt.copy_from(&ws.x);
        ws.xt += &ws.step;
        let ell_t = ws.evaluate_trial();
        let predicted = ws.ell - ws.model();
        if ell_t < ws.ell && predicted > 0.0 {
            let rho = (ws.ell - ell_t) / predicted;
            if used <= ws.lambda_min {
                stats.newton_accepted += 1;
            }
            stagnant = if ell_t > 0.81 * ws.ell { stagnant + 1 } else { 0 };
            ws.accept_trial(ell_t);
            linearized = false;
            lambda = used * (1.0 / 3.0f64).max(1.0 - (2.0 * rho - 1.0).powi(3));
            ws.lambda_relative = lambda / ws.h_max.max(f64::MIN_POSITIVE);
            nu = 2.0;
        } else {
            if !ws.xt.iter().all(|e| e.is_finite()) {
                return Err(Failure::NonFinite);
            }
            lambda = used * nu;
            nu *= 2.0;
            if lambda > STALL_LAMBDA * ws.h_max.max(f64::MIN_POSITIVE) {
                if stats.iterations - start < budget && residual_search(ws) {
                    stats.iterations += 1;
                    linearized = false;
                    lambda = f64::NAN;
                    nu = 2.0;
                    continue;
                }
                return Ok(false);
            }
        }
    }
}

/// Roots in `(0, 1)` of `qa t² + qb t + qc` into `out`; returns their
/// number.
fn quadratic_roots(qa: f64, qb: f64, qc: f64, out: &mut [f64; 2]) -> usize {
    let mut count = 0;
    let mut push = |t: f64| {
        if t > 0.0 && t < 1.0 {
            out[count] = t;
            count += 1;
        }
    };
    if qa == 0.0 {
        if qb != 0.0 {
            push(-qc / qb);
        }
        return count;
    }
    let disc = qb * qb - 4.0 * qa * qc;
    if !(disc >= 0.0) {
        return 0;
    }
    // the cancellation-free pair of roots
    let q = -0.5 * (qb + qb.signum() * disc.sqrt());
    push(q / qa);
    if q != 0.0 {
        push(qc / q);
    }
    count
}

/// Parameters `t ∈ (0, 1)` where `base + t dir` crosses a kink surface of
/// some contact, sorted, into `out`.
fn segment_breakpoints(mu: &[f64], base: &DVector<f64>, dir: &DVector<f64>, out: &mut Vec<f64>) {
    out.clear();
    for (k, &mu_k) in mu.iter().enumerate() {
        let i = 3 * k;
        let (an, a1, a2) = (base[i], base[i + 1], base[i + 2]);
        let (dn, d1, d2) = (dir[i], dir[i + 1], dir[i + 2]);
        // plane x_N = 0
        if dn != 0.0 {
            let t = -an / dn;
            if t > 0.0 && t < 1.0 {
                out.push(t);
            }
        }
        // cone ‖x_F‖² = μ² x_N² on the side x_N < 0
        let mu = friction(mu_k);
        if mu > 0.0 {
            let m2 = mu * mu;
            let qa = d1 * d1 + d2 * d2 - m2 * dn * dn;
            let qb = 2.0 * (a1 * d1 + a2 * d2 - m2 * an * dn);
            let qc = a1 * a1 + a2 * a2 - m2 * an * an;
            let mut roots = [0.0; 2];
            let count = quadratic_roots(qa, qb, qc, &mut roots);
            for &t in &roots[..count] {
                if an + t * dn < 0.0 {
                    out.push(t);
                }
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out.dedup_by(|later, earlier| *later - *earlier <= 1e-12);
}

/// Edge-aware search on the segment `x + seg_start + t dir`, `t ∈ (0, 1]`:
/// evaluates `ℓ` at the kink crossings and at `t = 1`, and between two
/// consecutive evaluated points at the minimizer of `‖r‖` along the secant
/// of `r` (exact where `r` is affine between kinks); keeps the best point
/// below `best` in `xb`, `rb`. `rp` must hold the residual at `t = 0` and
/// holds the one at `t = 1` on return.
fn search_segment(ws: &mut Workspace, best: &mut f64) {
    ws.base.copy_from(&ws.x);
    ws.base += &ws.seg_start;
    let mut breaks = std::mem::take(&mut ws.breaks);
    segment_breakpoints(&ws.problem.mu, &ws.base, &ws.dir, &mut breaks);
    breaks.push(1.0);
    let mut t_prev = 0.0;
    let mut ell_prev = 0.5 * ws.rp.norm_squared();
    for &t in &breaks {
        ws.xt.copy_from(&ws.base);
        ws.xt.axpy(t, &ws.dir, 1.0);
        let ell = ws.evaluate_trial();
        if ell < *best {
            *best = ell;
            ws.xb.copy_from(&ws.xt);
            ws.rb.copy_from(&ws.rt);
        }
        // minimizer s of ½‖rp + s (rt − rp)‖² on (0, 1)
        let (mut num, mut den) = (0.0, 0.0);
        for (p, q) in ws.rp.iter().zip(ws.rt.iter()) {
            num -= p * (q - p);
            den += (q - p) * (q - p);
        }
        if den > 0.0 && num > 0.0 && num < den {
            let s = num / den;
            let predicted = ell_prev - 0.5 * num * num / den;
            if predicted < ell.min(ell_prev).min(*best) {
                ws.xi.copy_from(&ws.base);
                ws.xi.axpy(t_prev + s * (t - t_prev), &ws.dir, 1.0);
                let ell_i = ws.problem.evaluate(&ws.xi, &mut ws.f, &mut ws.ri);
                if ell_i < *best {
                    *best = ell_i;
                    std::mem::swap(&mut ws.xi, &mut ws.xb);
                    std::mem::swap(&mut ws.ri, &mut ws.rb);
                }
            }
        }
        std::mem::swap(&mut ws.rp, &mut ws.rt);
        t_prev = t;
        ell_prev = ell;
    }
    ws.breaks = breaks;
}

/// Escape from a flat valley (module documentation, "Globalization"):
/// the edge-aware search along `x + t d`, `t ∈ (0, T]`, where `d` is the
/// part of `r` in `null(J)` (`r` itself when `J` is the symmetric `−A` of
/// a sticking block), with `T` long enough to reach every kink the
/// redundant impulses can cross. Needs the linearization at the iterate
/// (overwrites `g`, `gn`, `step` and the factorization); accepts the best
/// point and returns `true` if it lowers `ℓ`.
fn residual_search(ws: &mut Workspace) -> bool {
    let r_inf = norm_inf(&ws.r);
    if r_inf.is_nan() || r_inf <= 0.0 {
        return false;
    }
    let mu_max = ws.problem.mu.iter().fold(0.0, |m: f64, &e| m.max(friction(e)));
    let scale = norm_inf(&ws.x).max(norm_inf(ws.problem.c)).max(f64::MIN_POSITIVE);
    // d = r − (JᵀJ + λ)⁻¹ JᵀJ r (plus one refinement step): the part of r
    // in null(J), along which ℓ is flat inside the current pieces
    if ws.factor(ws.lambda_min).is_none() {
        return false;
    }
    ws.jp.gemv(1.0, &ws.j, &ws.r, 0.0);
    ws.g.gemv_tr(1.0, &ws.j, &ws.jp, 0.0);
    ws.gn.copy_from(&ws.g);
    cholesky_solve(&ws.l, &mut ws.gn);
    ws.jp.gemv(1.0, &ws.j, &ws.gn, 0.0);
    ws.step.gemv_tr(1.0, &ws.j, &ws.jp, 0.0);
    ws.step -= &ws.g;
    ws.step.neg_mut();
    cholesky_solve(&ws.l, &mut ws.step);
    ws.gn += &ws.step;
    ws.dir.copy_from(&ws.r);
    ws.dir -= &ws.gn;
    let d_inf = norm_inf(&ws.dir);
    if d_inf.is_nan() || d_inf <= 0.0 {
        return false;
    }
    let reach = 10.0 * (1.0 + mu_max) * scale / d_inf;
    if !reach.is_finite() {
        return false;
    }
    ws.seg_start.fill(0.0);
    ws.dir *= reach;
    ws.rp.copy_from(&ws.r);
    let mut best = ws.ell;
    search_segment(ws, &mut best);
    if best < ws.ell {
        ws.accept_best(best);
        true
    } else {
        false
    }
}

/// Dogleg trust region with the edge-aware search, at most `budget`
/// iterations; `Ok(true)` when `‖r‖∞ ≤ tolerance`, `Ok(false)` when out of
/// budget or stalled.
fn dogleg(
    ws: &mut Workspace,
    tolerance: f64,
    budget: usize,
    stats: &mut Stats,
) -> Result<bool, Failure> {
    let start = stats.iterations;
    let mut radius = f64::NAN;
    let mut linearized = false;
    let (mut gn_norm, mut cauchy_norm) = (0.0, 0.0);
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            if !ws.linearize() {
                stats.iterations += 1;
                if residual_search(ws) {
                    radius = f64::NAN;
                    continue;
                }
                return Ok(false);
            }
            linearized = true;
            ws.factor(ws.lambda_min).ok_or(Failure::NonFinite)?;
            ws.gauss_newton();
            gn_norm = ws.gn.norm();
            // Cauchy point −(gᵀg / ‖Jg‖²) g
            let g2 = ws.g.norm_squared();
            ws.jp.gemv(1.0, &ws.j, &ws.g, 0.0);
            let jg2 = ws.jp.norm_squared();
            ws.cauchy.copy_from(&ws.g);
            ws.cauchy *= -g2 / jg2;
            cauchy_norm = ws.cauchy.norm();
            if !gn_norm.is_finite() || !cauchy_norm.is_finite() {
                return Err(Failure::NonFinite);
            }
            if radius.is_nan() {
                radius = gn_norm.max(cauchy_norm);
            }
        }
        stats.iterations += 1;
        // best ℓ of this iteration (its point in xb, rb once below ℓ)
        let mut best = ws.ell;
        let newton_inside = gn_norm <= radius;
        if newton_inside {
            ws.xt.copy_from(&ws.x);
            ws.xt += &ws.gn;
            let ell_t = ws.evaluate_trial();
            if ell_t < ws.ell {
                ws.step.copy_from(&ws.gn);
                let rho = (ws.ell - ell_t) / (ws.ell - ws.model());
                if rho >= ETA {
                    ws.accept_trial(ell_t);
                    linearized = false;
                    stats.newton_accepted += 1;
                    if rho > 0.75 {
                        radius = radius.max(2.0 * gn_norm);
                    } else if rho < 0.25 {
                        radius = 0.25 * gn_norm;
                    }
                    continue;
                }
            }
        }
        // first segment: 0 → p1, the Cauchy point cut at the radius
        let cut = cauchy_norm >= radius;
        ws.seg_start.fill(0.0);
        ws.dir.copy_from(&ws.cauchy);
        if cut {
            ws.dir *= radius / cauchy_norm;
        }
        ws.rp.copy_from(&ws.r);
        search_segment(ws, &mut best);
        let end_norm = if cut {
            radius
        } else {
            // second segment: p1 → p2, the Gauss–Newton point or the point
            // of p1 → gn on the trust-region boundary
            ws.seg_start.copy_from(&ws.dir);
            ws.dir.copy_from(&ws.gn);
            ws.dir -= &ws.seg_start;
            if !newton_inside {
                let dd = ws.dir.norm_squared();
                let pd = ws.seg_start.dot(&ws.dir);
                let pp = ws.seg_start.norm_squared();
                let tau = if dd > 0.0 {
                    let disc = (pd * pd + dd * (radius * radius - pp)).max(0.0);
                    ((-pd + disc.sqrt()) / dd).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                ws.dir *= tau;
            }
            search_segment(ws, &mut best);
            if newton_inside {
                gn_norm
            } else {
                radius
            }
        };
        // ratio test at the best point
        if best < ws.ell {
            ws.step.copy_from(&ws.xb);
            ws.step -= &ws.x;
            let step_norm = ws.step.norm();
            let rho = (ws.ell - best) / (ws.ell - ws.model());
            if rho >= ETA {
                ws.accept_best(best);
                linearized = false;
                if rho > 0.75 && step_norm >= 0.9 * radius {
                    radius *= 2.0;
                } else if rho < 0.25 {
                    radius = 0.25 * step_norm;
                }
                continue;
            }
        }
        radius = 0.25 * radius.min(end_norm);
        if !(radius > STALL_RADIUS * (1.0 + norm_inf(&ws.x))) {
            if stats.iterations - start < budget && residual_search(ws) {
                stats.iterations += 1;
                radius = f64::NAN;
                linearized = false;
                continue;
            }
            return Ok(false);
        }
    }
}

