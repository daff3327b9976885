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
//! becomes the residual
//!
//! ```text
//! r(x) = (A − I) f(x) − x + c = 0            (see `residual`)
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
//!   `f_F = −μ f_N u = μ x_N u`, so
//!   `∂f_N/∂x_N = −1`, `∂f_F/∂x_N = μ u`,
//!   `∂f_F/∂x_F = −(μ f_N/‖x_F‖)(I − u uᵀ)`.
//!
//! The kinks are the plane `x_N = 0` and, for `μ > 0`, the cone
//! `‖x_F‖ = −μ x_N` (`x_N < 0`). On a kink the one-sided derivative of the
//! piece returned by [`piece`] is used: the plane `x_N = 0` belongs to the
//! contact side (sticking or sliding), the cone to the sliding side, and at
//! `x_N = 0, x_F = 0` (sliding with no impulse) the direction `u` is taken as
//! `0`, giving `Df = diag(−1, 0, 0)`. [`kink_distance`] measures how far a
//! point is from every kink.
//!
//! # Solvers
//!
//! Both minimize `ℓ = ½‖r‖²` with the generalized Jacobian `J`
//! ([`Method`]):
//!
//! * [`Method::LevenbergMarquardt`]: `x ← x − (JᵀJ + λI)⁻¹ Jᵀ r`, `λ`
//!   decreased after a step that lowers `ℓ` (by Nielsen's gain-ratio rule)
//!   and multiplied by a growing factor after one that does not.
//! * [`Method::Dogleg`]: a trust region on the dogleg path from `x` to the
//!   Cauchy point (minimizer of the quadratic model along `−Jᵀr`) and on to
//!   the Gauss–Newton point. The full Gauss–Newton step is tried first when
//!   it lies in the trust region; if the ratio test accepts it, that is a
//!   "Newton accepted" iteration ([`Stats::newton_accepted`]). Otherwise an
//!   edge-aware search evaluates `ℓ` where the two path segments cross a
//!   kink (the plane is linear in the segment parameter, the cone a
//!   quadratic) and at the segment ends, and takes the best point; the
//!   radius follows the usual ratio test.
//!
//! # Linear algebra
//!
//! Every linear solve is a Cholesky factorization of `JᵀJ + λI`, dense and
//! in place, with `λ` at least `λ_min = 10⁻¹³ · max diag(JᵀJ)`: with
//! redundant contacts `J` is singular (all contacts of a box sticking:
//! `J = −A`), and the floor makes the factorization well defined (if the
//! roundoff of `JᵀJ` still defeats it, `λ` is raised tenfold until it
//! succeeds). The Gauss–Newton point of the dogleg is this regularized
//! solve plus one step of iterative refinement (iterated Tikhonov), so its
//! bias is `O(λ_min²)` and it approximates the minimum-norm least-squares
//! step. Cholesky of the normal equations is about three times cheaper than
//! an SVD of `J` and squares its conditioning; the floor bounds the
//! amplification of roundoff by `10¹³`, which is harmless at the
//! tolerances used here because the residual (not the step) is tested.
//!
//! # Warm start and scaling
//!
//! Without `x0`, [`solve`] starts from the exact solution of the decoupled
//! problem in which `A` is replaced by a per-contact isotropic diagonal
//! (normal entry `A₃ₖ,₃ₖ`, tangential entry the mean of the two tangential
//! diagonal entries): for `A = I` that is `x0 = c`, for a single point mass
//! it is the solution. The tolerance is absolute on `‖r‖∞`, and the
//! regularization is relative to `‖J‖²`: the caller should scale the
//! impulses so that the diagonal of `A` is `O(1)` (e.g. divide `A` by its
//! mean diagonal entry and multiply the impulse back).

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
    /// Maximum number of iterations, i.e. of trial steps (default `100`).
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
    /// Number of iterations: trial steps, accepted or rejected (a rejected
    /// step reuses the Jacobian and its factorization when possible).
    pub iterations: usize,
    /// Iterations whose full Gauss–Newton step was accepted without line
    /// search (Levenberg–Marquardt: accepted steps taken with `λ` at its
    /// floor, i.e. undamped Gauss–Newton steps).
    pub newton_accepted: usize,
    /// Final `‖r‖∞`.
    pub residual: f64,
}

/// Why [`solve`] failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Failure {
    /// The tolerance was not reached within the iteration budget, or the
    /// iteration stalled (no decrease of `‖r‖` was possible in floating
    /// point) before it.
    MaxIterations {
        /// Iterations performed.
        iterations: usize,
        /// `‖r‖∞` at the best point found.
        residual: f64,
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
    // `−x_N` (not `max`) so that a NaN propagates
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

/// Smooth piece containing `x` for friction coefficient `mu`: separated
/// if `x_N > 0`, else sticking if `‖x_F‖ < μ f_N`, else sliding (kinks
/// belong to the contact side of the plane and to the sliding side of the
/// cone).
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
/// (`x_N ≤ 0`). Every point closer to `x` than this lies on the same
/// [`Piece`] (up to the kinks themselves), so a finite difference of step
/// `h` well below it is a derivative on one piece.
pub fn kink_distance(mu: f64, x: &Vector3<f64>) -> f64 {
    let mu = friction(mu);
    let (a, rho) = (x[0], x[1].hypot(x[2]));
    let plane = a.abs();
    if mu == 0.0 {
        return plane;
    }
    // the cone is a surface of revolution: distance, in the half-plane
    // (x_N, ‖x_F‖), from (a, ρ) to the ray t(−1, μ), t ≥ 0
    let norm = (1.0 + mu * mu).sqrt();
    let along = (-a + mu * rho) / norm;
    let cone = if along <= 0.0 {
        a.hypot(rho)
    } else {
        (mu * a + rho).abs() / norm
    };
    plane.min(cone)
}

/// Smoothed impulse `f_ε(x)` and its derivative (`ε > 0`): the
/// Chen–Harker–Kanzow–Smale smoothing `f_N = ½(√(x_N² + 4ε²) − x_N)` of
/// `max(0, −x_N)` and `f_F = −s x_F`, `s = b / smax(b, ‖x_F‖)` with `b = μ
/// f_N` and `smax(p, q) = ½(p + q + √((p − q)² + 4ε²))`. Both tend to the
/// exact maps as `ε → 0`.
#[doc(hidden)]
pub fn smoothed(mu: f64, x: &Vector3<f64>, eps: f64) -> (Vector3<f64>, Matrix3<f64>) {
    let mu = friction(mu);
    let a = x[0];
    let q = (a * a + 4.0 * eps * eps).sqrt();
    let f_n = 0.5 * (q - a);
    let df_n = 0.5 * (a / q - 1.0);
    let mut d = Matrix3::zeros();
    d[(0, 0)] = df_n;
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
    // ∂f_F/∂x_N = −y ∂s/∂b μ f_N'
    d[(1, 0)] = -y1 * ds_db * mu * df_n;
    d[(2, 0)] = -y2 * ds_db * mu * df_n;
    // ∂f_F/∂y = −(s I + ∂s/∂ρ · y yᵀ/ρ)
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
    assert_eq!(x.len(), m, "x has {} entries, expected {m}", x.len());
}

/// Contact `k`'s three entries of `x`.
#[doc(hidden)]
pub fn local(x: &DVector<f64>, k: usize) -> Vector3<f64> {
    Vector3::new(x[3 * k], x[3 * k + 1], x[3 * k + 2])
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
    assert_eq!(c.len(), x.len(), "c has {} entries, expected {}", c.len(), x.len());
    let problem = Problem {
        a,
        c,
        mu,
        rho: 0.0,
        center: DVector::zeros(0),
        eps: 0.0,
    };
    let mut f = DVector::zeros(x.len());
    let mut r = DVector::zeros(x.len());
    problem.evaluate(x, &mut f, &mut r);
    r
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
/// Proximal stage: first `ρ` relative to the mean diagonal of `A`.
const PROX_INITIAL: f64 = 1.0;
/// Proximal stage: factor of `ρ` from one stage to the next.
const PROX_SHRINK: f64 = 0.8;
/// Proximal stage: iterations on each regularized problem.
const PROX_ITERATIONS: usize = 10;
/// Proximal stage: iterations of each attempt on the true problem.
const POLISH_ITERATIONS: usize = 5;

/// The problem solved by the inner iterations: `r_ρ(x) = r(x) + ρ (f(x) −
/// f̄)`, the residual of `A + ρI` and `c − ρ f̄` (proximal regularization
/// around the impulse `f̄`; `ρ = 0` is the true problem).
struct Problem<'p> {
    a: &'p DMatrix<f64>,
    c: &'p DVector<f64>,
    mu: &'p [f64],
    rho: f64,
    center: DVector<f64>,
    eps: f64,
}

impl Problem<'_> {
    /// `r_ρ(x)` into `r` (`f` is scratch); returns `½‖r_ρ‖²`.
    fn evaluate(&self, x: &DVector<f64>, f: &mut DVector<f64>, r: &mut DVector<f64>) -> f64 {
        if self.eps > 0.0 {
            for (k, &mu_k) in self.mu.iter().enumerate() {
                f.fixed_rows_mut::<3>(3 * k)
                    .copy_from(&smoothed(mu_k, &local(x, k), self.eps).0);
            }
        } else {
            impulses(self.mu, x, f);
        }
        r.gemv(1.0, self.a, f, 0.0);
        for i in 0..r.len() {
            r[i] += self.c[i] - x[i] - f[i];
        }
        if self.rho != 0.0 {
            for i in 0..r.len() {
                r[i] += self.rho * (f[i] - self.center[i]);
            }
        }
        0.5 * r.norm_squared()
    }
}

/// `f(x)` of every contact into `f`.
fn impulses(mu: &[f64], x: &DVector<f64>, f: &mut DVector<f64>) {
    for (k, &mu_k) in mu.iter().enumerate() {
        f.fixed_rows_mut::<3>(3 * k)
            .copy_from(&impulse(mu_k, &local(x, k)));
    }
}

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
    /// Iterate saved across a polishing attempt.
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
    /// Current search segment `x + seg_start + t dir`.
    seg_start: DVector<f64>,
    dir: DVector<f64>,
    tmp: DVector<f64>,
    jp: DVector<f64>,
    /// Kink crossings of a segment.
    breaks: Vec<f64>,
    /// `max diag(JᵀJ)` and the regularization floor at the current `J`.
    h_max: f64,
    lambda_min: f64,
}

impl<'p> Workspace<'p> {
    fn new(a: &'p DMatrix<f64>, c: &'p DVector<f64>, mu: &'p [f64], x: DVector<f64>) -> Self {
        let m = x.len();
        let zero = || DVector::zeros(m);
        let mut ws = Self {
            problem: Problem {
                a,
                c,
                mu,
                rho: 0.0,
                center: zero(),
                eps: 0.0,
            },
            r: zero(),
            ell: 0.0,
            f: zero(),
            xt: zero(),
            rt: zero(),
            xb: zero(),
            rb: zero(),
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
            tmp: zero(),
            jp: zero(),
            breaks: Vec::with_capacity(3 * m),
            h_max: 0.0,
            lambda_min: 0.0,
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

    /// Keeps the trial point as the best of a search.
    fn keep_trial(&mut self) {
        std::mem::swap(&mut self.xt, &mut self.xb);
        std::mem::swap(&mut self.rt, &mut self.rb);
    }

    /// Jacobian, `JᵀJ`, `g = Jᵀr` and the regularization floor at the
    /// iterate; `false` at a stationary point of `ℓ` (`g ≈ 0`, `r ≠ 0`).
    fn linearize(&mut self) -> bool {
        let p = &self.problem;
        jacobian_into(p.a, p.mu, &self.x, p.rho, p.eps, &mut self.j);
        let m = self.x.len();
        for q in 0..m {
            let col_q = self.j.column(q);
            for p in q..m {
                self.h[(p, q)] = self.j.column(p).dot(&col_q);
            }
        }
        self.g.gemv_tr(1.0, &self.j, &self.r, 0.0);
        self.h_max = (0..m).map(|i| self.h[(i, i)]).fold(0.0, f64::max);
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
        // correction e = (JᵀJ + λI)⁻¹ (−g − JᵀJ gn)
        self.jp.gemv(1.0, &self.j, &self.gn, 0.0);
        self.tmp.gemv_tr(1.0, &self.j, &self.jp, 0.0);
        self.tmp += &self.g;
        self.tmp.neg_mut();
        cholesky_solve(&self.l, &mut self.tmp);
        self.gn += &self.tmp;
    }
}

/// `J_ρ = (A − I) Df(x) − I + ρ Df(x)` into `j`.
fn jacobian_into(
    a: &DMatrix<f64>,
    mu: &[f64],
    x: &DVector<f64>,
    rho: f64,
    eps: f64,
    j: &mut DMatrix<f64>,
) {
    for (k, &mu_k) in mu.iter().enumerate() {
        let d = if eps > 0.0 {
            smoothed(mu_k, &local(x, k), eps).1
        } else {
            local_derivative(mu_k, &local(x, k))
        };
        let mut cols = j.columns_mut(3 * k, 3);
        if d == Matrix3::zeros() {
            cols.fill(0.0);
            continue;
        }
        cols.gemm(1.0, &a.columns(3 * k, 3), &d, 0.0);
        for q in 0..3 {
            for p in 0..3 {
                cols[(3 * k + p, q)] += (rho - 1.0) * d[(p, q)];
            }
        }
    }
    for i in 0..j.nrows() {
        j[(i, i)] -= 1.0;
    }
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
    let mut j = DMatrix::zeros(m, m);
    jacobian_into(a, mu, x, 0.0, 0.0, &mut j);
    j
}

/// Default start: exact solution of the decoupled problem with `A`
/// replaced by a per-contact isotropic diagonal (see the module
/// documentation).
#[doc(hidden)]
pub fn warm_start(a: &DMatrix<f64>, c: &DVector<f64>, mu: &[f64], x: &mut DVector<f64>) {
    let m = c.len();
    let max_diag = (0..m).map(|i| a[(i, i)]).fold(0.0, f64::max);
    // a diagonal entry far below the others (or not positive) would blow
    // the guess up: use the largest one instead (1 when A has none)
    let fallback = if max_diag > 0.0 { max_diag } else { 1.0 };
    let usable = |d: f64| if d > 1e-6 * fallback { d } else { fallback };
    for (k, &mu_k) in mu.iter().enumerate() {
        let i = 3 * k;
        let a_n = usable(a[(i, i)]);
        let a_t = usable(0.5 * (a[(i + 1, i + 1)] + a[(i + 2, i + 2)]));
        let (c_n, c_1, c_2) = (c[i], c[i + 1], c[i + 2]);
        if c_n >= 0.0 {
            // separated: f = 0, v = x = c
            x[i] = c_n;
            x[i + 1] = c_1;
            x[i + 2] = c_2;
            continue;
        }
        // a_n x_N = c_N, f_N = −x_N
        let f_n = -c_n / a_n;
        x[i] = -f_n;
        let norm_c = c_1.hypot(c_2);
        let bound = friction(mu_k) * f_n;
        if norm_c < a_t * bound {
            // sticking: a_t x_F = c_F
            x[i + 1] = c_1 / a_t;
            x[i + 2] = c_2 / a_t;
        } else if norm_c > 0.0 {
            // sliding: ‖x_F‖ − (1 − a_t) μ f_N = ‖c_F‖ along c_F
            let scale = (norm_c + (1.0 - a_t) * bound) / norm_c;
            x[i + 1] = scale * c_1;
            x[i + 2] = scale * c_2;
        } else {
            x[i + 1] = 0.0;
            x[i + 2] = 0.0;
        }
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
        for k in 0..j {
            let col_k = &done[k * m..(k + 1) * m];
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
    for j in 0..m {
        let col = &data[j * m..(j + 1) * m];
        b[j] /= col[j];
        let bj = b[j];
        for (y, &x) in b[j + 1..].iter_mut().zip(&col[j + 1..]) {
            *y -= x * bj;
        }
    }
    for j in (0..m).rev() {
        let col = &data[j * m..(j + 1) * m];
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
/// decoupled warm start of the module documentation) with `opts.method`.
/// Returns `x` (impulse and velocity per contact by [`impulse_velocity`])
/// and the [`Stats`].
///
/// The method runs on the true problem first; if it stalls (a stationary
/// point or a nonsmooth local minimum of `ℓ`), the rest of the iteration
/// budget goes to the proximal stage of the module documentation.
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
            assert_eq!(x0.len(), c.len(), "x0 has {} entries, expected {}", x0.len(), c.len());
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
    let run = |ws: &mut Workspace, budget: usize, stats: &mut Stats, tol: f64| match opts.method {
        Method::LevenbergMarquardt => levenberg_marquardt(ws, tol, budget, stats),
        Method::Dogleg => dogleg(ws, tol, budget, stats),
    };
    ws.anchor.copy_from(&ws.x);
    let first = std::env::var("FIRST").map(|e| e.parse().unwrap()).unwrap_or(opts.max_iterations);
    if run(&mut ws, first.min(opts.max_iterations), &mut stats, opts.tolerance)? {
        stats.residual = norm_inf(&ws.r);
        return Ok((ws.x, stats));
    }
    if std::env::var("SMOOTH").is_ok() {
        let eps0: f64 = std::env::var("EPS0").map(|e| e.parse().unwrap()).unwrap_or(0.1);
        let shrink: f64 = std::env::var("ESHRINK").map(|e| e.parse().unwrap()).unwrap_or(0.1);
        let stage: usize = std::env::var("ESTAGE").map(|e| e.parse().unwrap()).unwrap_or(15);
        let from_start = std::env::var("FROM_START").is_ok();
        if from_start { ws.x.copy_from(&ws.anchor); }
        let mut best = norm_inf(&ws.r);
        let mut eps = eps0;
        while stats.iterations < opts.max_iterations {
            let before = stats.iterations;
            if eps < 1e-14 { eps = 1e-14; }
            ws.problem.eps = eps;
            ws.evaluate_iterate();
            let left = opts.max_iterations - stats.iterations;
            let tol = (eps * 1e-3).max(opts.tolerance);
            run(&mut ws, stage.min(left), &mut stats, tol)?;
            ws.problem.eps = 0.0;
            ws.evaluate_iterate();
            best = best.min(norm_inf(&ws.r));
            ws.anchor.copy_from(&ws.x);
            let left = opts.max_iterations - stats.iterations;
            if run(&mut ws, POLISH_ITERATIONS.min(left), &mut stats, opts.tolerance)? {
                stats.residual = norm_inf(&ws.r);
                return Ok((ws.x, stats));
            }
            best = best.min(norm_inf(&ws.r));
            std::mem::swap(&mut ws.x, &mut ws.anchor);
            eps *= shrink;
            if stats.iterations == before { stats.iterations += 1; }
        }
        return Err(Failure::MaxIterations { iterations: stats.iterations, residual: best });
    }
    // proximal stage
    let mut best = norm_inf(&ws.r);
    let mean_diag = a.diagonal().mean();
    let mut rho = PROX_INITIAL * if mean_diag > 0.0 { mean_diag } else { 1.0 };
    while stats.iterations < opts.max_iterations {
        let before = stats.iterations;
        impulses(mu, &ws.x, &mut ws.problem.center);
        ws.problem.rho = rho;
        ws.evaluate_iterate();
        let left = opts.max_iterations - stats.iterations;
        run(&mut ws, PROX_ITERATIONS.min(left), &mut stats, opts.tolerance)?;
        // attempt on the true problem from the proximal point
        ws.problem.rho = 0.0;
        ws.evaluate_iterate();
        best = best.min(norm_inf(&ws.r));
        ws.anchor.copy_from(&ws.x);
        let left = opts.max_iterations - stats.iterations;
        if run(&mut ws, POLISH_ITERATIONS.min(left), &mut stats, opts.tolerance)? {
            stats.residual = norm_inf(&ws.r);
            return Ok((ws.x, stats));
        }
        best = best.min(norm_inf(&ws.r));
        std::mem::swap(&mut ws.x, &mut ws.anchor);
        rho *= PROX_SHRINK;
        if stats.iterations == before {
            stats.iterations += 1;
        }
    }
    Err(Failure::MaxIterations {
        iterations: stats.iterations,
        residual: best,
    })
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
    let mut history: Vec<f64> = Vec::new();
    let slow = std::env::var("SLOW").is_ok();
    let mut lambda = f64::NAN;
    let mut nu = 2.0;
    let mut linearized = false;
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            if !ws.linearize() {
                return Ok(false);
            }
            linearized = true;
            if lambda.is_nan() {
                lambda = LM_INITIAL * ws.h_max;
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
            ws.accept_trial(ell_t);
            history.push(ell_t);
            if slow && history.len() > 5 && ell_t > 0.25 * history[history.len() - 6] {
                return Ok(false);
            }
            linearized = false;
            lambda = used * (1.0 / 3.0f64).max(1.0 - (2.0 * rho - 1.0).powi(3));
            nu = 2.0;
        } else {
            if !ell_t.is_finite() && !ws.xt.iter().all(|e| e.is_finite()) {
                return Err(Failure::NonFinite);
            }
            lambda = used * nu;
            nu *= 2.0;
            if lambda > STALL_LAMBDA * ws.h_max.max(f64::MIN_POSITIVE) {
                return Ok(false);
            }
        }
    }
}

/// Pushes the roots in `(0, 1)` of `qa t² + qb t + qc` into `out`; returns
/// their number.
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

/// Evaluates `ℓ` at `x + seg_start + t dir` for the kink crossings `t ∈
/// (0, 1)` of that segment and, if `end`, at `t = 1`, keeping the best point
/// below `best` in `xb`, `rb`.
fn search_segment(ws: &mut Workspace, end: bool, best: &mut f64) {
    ws.tmp.copy_from(&ws.x);
    ws.tmp += &ws.seg_start;
    let mut breaks = std::mem::take(&mut ws.breaks);
    segment_breakpoints(ws.problem.mu, &ws.tmp, &ws.dir, &mut breaks);
    if end {
        breaks.push(1.0);
    }
    for &t in &breaks {
        ws.xt.copy_from(&ws.tmp);
        ws.xt.axpy(t, &ws.dir, 1.0);
        let ell = ws.evaluate_trial();
        if ell < *best {
            *best = ell;
            ws.keep_trial();
        }
    }
    ws.breaks = breaks;
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
    let mut history: Vec<f64> = Vec::new();
    let slow = std::env::var("SLOW").is_ok();
    let mut radius = f64::NAN;
    let mut linearized = false;
    let (mut gn_norm, mut cauchy_norm) = (0.0, 0.0);
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            if !ws.linearize() {
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
        if std::env::var("INCP_TRACE").is_ok() {
            let mu = ws.problem.mu;
            let mut counts = [0usize; 3];
            for k in 0..mu.len() { counts[piece(mu[k], &local(&ws.x, k)) as usize] += 1; }
            let kdmin = (0..mu.len()).map(|k| kink_distance(mu[k], &local(&ws.x, k))).fold(f64::INFINITY, f64::min);
            eprintln!("it {} rho {} ell {:e} |g| {:e} radius {:e} gn {:e} cauchy {:e} sep/stick/slide {:?} kdmin {:e}", stats.iterations, ws.problem.rho, ws.ell, ws.g.norm(), radius, gn_norm, cauchy_norm, counts, kdmin);
        }
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
                    history.push(ell_t);
                    linearized = false;
                    stats.newton_accepted += 1;
                    if rho > 0.75 {
                        radius = radius.max(2.0 * gn_norm);
                    } else if rho < 0.25 {
                        radius = 0.25 * gn_norm;
                    }
                    continue;
                }
                best = ell_t;
                ws.keep_trial();
            }
        }
        // first segment: 0 → p1, the Cauchy point cut at the radius
        let cut = cauchy_norm >= radius;
        ws.seg_start.fill(0.0);
        ws.dir.copy_from(&ws.cauchy);
        if cut {
            ws.dir *= radius / cauchy_norm;
        }
        search_segment(ws, true, &mut best);
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
            // the Gauss–Newton point itself was evaluated above
            search_segment(ws, !newton_inside, &mut best);
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
                std::mem::swap(&mut ws.x, &mut ws.xb);
                std::mem::swap(&mut ws.r, &mut ws.rb);
                ws.ell = best;
                history.push(best);
                if slow && history.len() > 5 && best > 0.25 * history[history.len() - 6] {
                    return Ok(false);
                }
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
            return Ok(false);
        }
    }
}
