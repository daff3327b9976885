//! A boxed linear complementarity solver (f64) with friction-coupled
//! bounds, as Nimble (Werling et al. 2021) and Jade (Yang et al. 2023) use
//! it, and its active-set derivatives.
//!
//! # The problem
//!
//! Find `x`, `w = A x + b` with `lo_i ≤ x_i ≤ hi_i` and
//!
//! * `x_i = lo_i ⇒ w_i ≥ 0`, `x_i = hi_i ⇒ w_i ≤ 0`, `lo_i < x_i < hi_i ⇒ w_i = 0`.
//!
//! A row `i` with `findex[i] = Some(n)` (ODE's `findex`: a friction row of
//! the contact whose normal row is `n`) has the bounds
//! `lo_i x_n ≤ x_i ≤ hi_i x_n` (ODE stores `lo_i = −μ`, `hi_i = μ`); the
//! row `n` must have no `findex` and `lo_n = 0` (so `x_n ≥ 0`). Every other
//! row has constant bounds `lo_i ≤ 0 ≤ hi_i` (`±∞` allowed).
//!
//! # Active sets
//!
//! A solution is described by one [`Status`] per row: `Free` (clamping:
//! `w_i = 0`, `x_i` inside its bounds), `Lo` / `Hi` (`x_i` at the bound;
//! for a friction row, tied to its normal: `x_i = lo_i x_n` or
//! `hi_i x_n`). Given the statuses, `x` solves one linear system: with `C`
//! the free rows and `T` the map from `x_C` to `x` (identity on `C`, the
//! coefficient `lo_i` / `hi_i` on the friction rows tied to a free
//! normal; Nimble's `E`, App. A), `x = x_K + T x_C` and
//! `(A T)_CC x_C = −(b + A x_K)_C` (`x_K`: the rows at constant values).
//!
//! # Stages (Nimble's fallback order)
//!
//! 1. [`Stage::Guess`]: a given active set (the previous step's), solved
//!    and verified.
//! 2. [`Stage::Dantzig`]: principal pivoting as ODE's `dLCP` (rows without
//!    `findex` first, then the friction rows; each new row is driven
//!    towards complementarity while the free rows keep `w = 0`), with
//!    Jade's ratio test for a free friction row reaching its moving bound:
//!    along `x + t Δx` the row meets `x_i = hi_i x_n` at
//!    `t = (hi_i x_n − x_i) / (Δx_i − hi_i Δx_n)` when the denominator is
//!    positive (and `lo` with the denominator negative). ODE's test,
//!    `t = (hi_i x_n − x_i) / Δx_i`, freezes the bound at the start of the
//!    step and overshoots it when `x_n` shrinks; it stays selectable
//!    ([`RatioTest::Frozen`]) for comparison. A repeated set of statuses
//!    while driving one row is a loop ([`DantzigFailure::Loop`]).
//! 3. [`Stage::Exhaustive`]: when Dantzig fails on a problem of at most
//!    [`Options::exhaustive_max`] rows, every active set is tried (Jade's
//!    "ergodic search").
//! 4. [`Stage::Pgs`]: projected Gauss–Seidel (diagonal regularized by
//!    [`Options::pgs_regularization`] times the largest diagonal entry),
//!    then its active set solved exactly ("polish") and verified.
//! 5. Otherwise [`LcpError::Unsolved`] with the best residual.
//!
//! # Acceptance metric
//!
//! [`residual`]: the natural-map residual scaled to be invariant under
//! `(A, b) → (αA, βb)`: with `k = 1 / max|A_ij|`,
//! `‖x − mid(lo(x), x − k w, hi(x))‖∞ / (‖x‖∞ + k ‖b‖∞)`; it is zero exactly
//! at a solution (bounds, signs and complementarity), and a point is
//! accepted when it is at most [`Options::tolerance`] (default 1e-9).
//!
//! # Stabilization (Nimble App. B)
//!
//! With redundant rows (`(A T)_CC` singular) the solution is not unique.
//! After any stage, first the *sticking set*: the rows at a bound whose
//! velocity is zero (within `1e-9` of the velocity scale: a redundant
//! contact carrying nothing) made free, and so every friction row at a
//! bound of a contact whose normal row is (or was made) free, even where
//! it slides; its minimum-norm point is taken when it verifies with every
//! friction row taken off its bound strictly inside its box (by a
//! millionth of the box's width, under a positive normal: within the
//! acceptance tolerance alone a contact whose slip is that small would
//! stick with its friction a hair outside the box, and the step would not
//! be smooth in its inputs). With redundant contacts the normal impulses,
//! and through the friction bounds the velocity, need not be unique: a
//! pivoting stage lands on a vertex of the solution set, a face's load on
//! one of its points, where the lightly loaded points slide at their
//! bound (a plate squeezed between two box fingers on prismatic joints
//! pivoted about one corner, although every point sticking with the load
//! shared solves the same LCP). The minimum-norm point of the sticking set is the limit of
//! uniformly compliant contacts; where the velocity is unique it verifies
//! only if the stage's slip was zero anyway. Then, the same set with the
//! friction rows of the normals made free on the side their velocity
//! points to, solved for its minimum-norm point (so that the four corners
//! of a resting box share the load, whichever corner the stage left
//! out); if it does not verify,
//! the stage's own active set is solved again with the
//! pseudo-inverse, `x_C = −(A T)_CC⁺ (b + A x_K)_C` (App. B's formula with
//! the minus sign its printed version drops): the minimum-norm `x_C` among
//! the solutions of the clamped system (SVD, singular values below
//! `n ε σ_max` dropped). It is kept when it verifies (it does whenever the
//! system is consistent and the minimum-norm point stays inside the
//! bounds), else the stage's own point is returned
//! ([`Stats::stabilized`] tells which).
//!
//! # Derivatives (Nimble IV)
//!
//! On a fixed active set `x = x_K + T x_C`, `x_C = −M⁺ (b + A x_K)_C` with
//! `M = (A T)_CC`, so `∂x/∂b = −T M⁺ E_C` ([`jacobian_b`]; separating and
//! constant-bound rows have zero rows and columns, bounded friction rows
//! follow their normal through `T`), and `∂x/∂A_kl = (∂x/∂b_k) x_l`
//! ([`jacobian_a_column`]).
//!
//! # Files
//!
//! `mod.rs` (the problem, options, statistics, [`solve`] and the
//! Jacobians), `linear.rs` (residuals and the active-set linear solves),
//! `dantzig.rs` (principal pivoting: the direction and the ratio test) and
//! `fallback.rs` (the exhaustive and projected Gauss–Seidel fallbacks,
//! classification, refinement and acceptance).

use nalgebra::{DMatrix, DVector};

mod linear;
mod dantzig;
mod fallback;
pub use linear::*;
use dantzig::*;
use fallback::*;

/// Where a row is in a solution (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Not decided yet (Dantzig's unprocessed rows: `x_i = 0`).
    Unset,
    /// Clamping: `w_i = 0`, `x_i` inside its bounds.
    Free,
    /// At the lower bound, `w_i ≥ 0`.
    Lo,
    /// At the upper bound, `w_i ≤ 0`.
    Hi,
}

/// The ratio test for a free friction row reaching its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RatioTest {
    /// Jade's: the bound moves with the normal,
    /// `t = (μ x_n − x_i) / (Δx_i − μ Δx_n)`.
    #[default]
    Moving,
    /// ODE's: the bound frozen at the start of the step,
    /// `t = (μ x_n − x_i) / Δx_i` (kept for comparison).
    Frozen,
}

/// A stage of the solver (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The given active set.
    Guess,
    /// Dantzig principal pivoting.
    Dantzig,
    /// Every active set (small problems).
    Exhaustive,
    /// Projected Gauss–Seidel and its polished active set.
    Pgs,
}

/// Why Dantzig's pivoting stopped without a solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DantzigFailure {
    /// A set of statuses repeated while driving row `row`.
    Loop {
        /// The row being driven.
        row: usize,
    },
    /// No bound or sign change limits the step (an unbounded ray).
    Unbounded {
        /// The row being driven.
        row: usize,
    },
    /// The pivot cap was reached.
    PivotCap,
    /// It finished, but the point fails the acceptance test.
    Inaccurate {
        /// Its residual ([`residual`]).
        residual: f64,
    },
}

/// Solver settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Acceptance threshold on [`residual`]. Default 1e-9.
    pub tolerance: f64,
    /// Dantzig's ratio test. Default [`RatioTest::Moving`].
    pub ratio_test: RatioTest,
    /// Largest problem for the exhaustive search. Default 9.
    pub exhaustive_max: usize,
    /// Projected Gauss–Seidel sweeps. Default 2000.
    pub pgs_sweeps: usize,
    /// PGS diagonal regularization, relative to the largest diagonal
    /// entry. Default 1e-9.
    pub pgs_regularization: f64,
    /// Least-squares stabilization (module docs). Default true.
    pub stabilize: bool,
    /// Run only these stages (testing): `[guess, dantzig, exhaustive, pgs]`.
    pub stages: [bool; 4],
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tolerance: 1e-9,
            ratio_test: RatioTest::Moving,
            exhaustive_max: 9,
            pgs_sweeps: 2000,
            pgs_regularization: 1e-9,
            stabilize: true,
            stages: [true; 4],
        }
    }
}

/// A boxed LCP (module docs).
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    /// `A` (`n × n`).
    pub a: &'a DMatrix<f64>,
    /// `b`.
    pub b: &'a DVector<f64>,
    /// Lower bounds (friction rows: the coefficient, `−μ`).
    pub lo: &'a [f64],
    /// Upper bounds (friction rows: the coefficient, `μ`).
    pub hi: &'a [f64],
    /// Friction rows: the index of their normal row.
    pub findex: &'a [Option<usize>],
}

impl Problem<'_> {
    /// Rows.
    pub fn n(&self) -> usize {
        self.b.len()
    }

    /// The bounds of row `i` at `x`.
    pub fn bounds(&self, i: usize, x: &DVector<f64>) -> (f64, f64) {
        match self.findex[i] {
            Some(n) => (self.lo[i] * x[n], self.hi[i] * x[n]),
            None => (self.lo[i], self.hi[i]),
        }
    }

    fn check(&self) -> Result<(), LcpError> {
        let n = self.n();
        if self.a.nrows() != n || self.a.ncols() != n {
            return Err(LcpError::Invalid("A is not n × n"));
        }
        if self.lo.len() != n || self.hi.len() != n || self.findex.len() != n {
            return Err(LcpError::Invalid("bounds or findex of the wrong length"));
        }
        if !self.a.iter().chain(self.b.iter()).all(|v| v.is_finite()) {
            return Err(LcpError::Invalid("non-finite entry in A or b"));
        }
        for i in 0..n {
            match self.findex[i] {
                Some(k) => {
                    if k >= n || self.findex[k].is_some() || self.lo[k] != 0.0 {
                        return Err(LcpError::Invalid(
                            "findex must name a row without findex whose lower bound is 0",
                        ));
                    }
                    if !(self.lo[i] <= 0.0 && self.hi[i] >= 0.0)
                        || !self.lo[i].is_finite()
                        || !self.hi[i].is_finite()
                    {
                        return Err(LcpError::Invalid(
                            "friction coefficients must be finite with lo ≤ 0 ≤ hi",
                        ));
                    }
                }
                None => {
                    if !(self.lo[i] <= 0.0 && self.hi[i] >= 0.0) {
                        return Err(LcpError::Invalid("bounds must satisfy lo ≤ 0 ≤ hi"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// How a solve went.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The stage that solved it.
    pub stage: Stage,
    /// Dantzig pivots taken.
    pub pivots: usize,
    /// Why Dantzig failed, when a later stage solved it.
    pub dantzig_failure: Option<DantzigFailure>,
    /// Active sets tried by the exhaustive search.
    pub exhaustive_tried: usize,
    /// PGS sweeps.
    pub pgs_sweeps: usize,
    /// The accepted point's [`residual`].
    pub residual: f64,
    /// Whether the minimum-norm (stabilized) point was accepted.
    pub stabilized: bool,
}

/// A solve that failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LcpError {
    /// The problem is malformed.
    Invalid(&'static str),
    /// No stage reached the tolerance: the last stage tried, and the best
    /// residual seen.
    Unsolved {
        /// The last stage tried.
        stage: Stage,
        /// The best residual seen ([`residual`]).
        residual: f64,
        /// Why Dantzig failed (when it ran).
        dantzig: Option<DantzigFailure>,
        /// Iterations spent over all stages: pivots, active sets tried
        /// and PGS sweeps.
        iterations: usize,
    },
}

impl std::fmt::Display for LcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LcpError::Invalid(s) => write!(f, "invalid boxed LCP: {s}"),
            LcpError::Unsolved {
                stage,
                residual,
                iterations,
                ..
            } => write!(
                f,
                "boxed LCP not solved after {iterations} iterations (last stage {stage:?}, residual {residual:e})"
            ),
        }
    }
}

impl std::error::Error for LcpError {}

/// Buffers of a solve, sized once and reused (only the pseudo-inverse
/// paths, taken for singular systems and the final stabilization,
/// allocate).
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    /// The solution (after a successful [`solve`]).
    pub x: DVector<f64>,
    /// `w = A x + b` at the solution.
    pub w: DVector<f64>,
    /// The active set of the solution.
    pub status: Vec<Status>,
    dx: DVector<f64>,
    dw: DVector<f64>,
    xk: DVector<f64>,
    cols: Vec<usize>,
    m: Vec<f64>,
    m0: Vec<f64>,
    r0: Vec<f64>,
    rhs: Vec<f64>,
    piv: Vec<usize>,
    children: Vec<Vec<usize>>,
    seen: std::collections::HashSet<Vec<Status>>,
    best: DVector<f64>,
    best_status: Vec<Status>,
}

impl Workspace {
    /// A workspace for problems of `n` rows (grows if needed).
    pub fn new(n: usize) -> Self {
        let mut ws = Workspace::default();
        ws.resize(n);
        ws
    }

    fn resize(&mut self, n: usize) {
        if self.x.len() != n {
            self.x = DVector::zeros(n);
            self.w = DVector::zeros(n);
            self.dx = DVector::zeros(n);
            self.dw = DVector::zeros(n);
            self.xk = DVector::zeros(n);
            self.best = DVector::zeros(n);
        }
        self.status.resize(n, Status::Unset);
        self.best_status.resize(n, Status::Unset);
        if self.m.len() < n * n {
            self.m.resize(n * n, 0.0);
        }
        self.rhs.resize(n, 0.0);
        self.piv.resize(n, 0);
        self.children.resize(n, Vec::new());
    }

    fn set_children(&mut self, p: &Problem<'_>) {
        for c in &mut self.children {
            c.clear();
        }
        for (i, f) in p.findex.iter().enumerate() {
            if let Some(k) = f {
                self.children[*k].push(i);
            }
        }
    }
}

/// Solves the boxed LCP `p` (module docs), from the active set `guess`
/// when given. The solution is left in `ws.x`, `ws.w`, `ws.status`.
pub fn solve(
    p: &Problem<'_>,
    opts: &Options,
    guess: Option<&[Status]>,
    ws: &mut Workspace,
) -> Result<Stats, LcpError> {
    p.check()?;
    let n = p.n();
    ws.resize(n);
    ws.set_children(p);
    let mut stats = Stats {
        stage: Stage::Guess,
        pivots: 0,
        dantzig_failure: None,
        exhaustive_tried: 0,
        pgs_sweeps: 0,
        residual: f64::INFINITY,
        stabilized: false,
    };
    let mut best_r = f64::INFINITY;
    let mut last = Stage::Guess;
    // 1. The given active set.
    if let Some(g) = guess.filter(|g| g.len() == n && opts.stages[0]) {
        if !g.contains(&Status::Unset) {
            ws.status.copy_from_slice(g);
            let status = std::mem::take(&mut ws.status);
            let ok = active_solve(p, &status, ws, false).is_some();
            ws.status = status;
            if ok {
                let (acc, r, st) = accept(p, opts, ws);
                best_r = best_r.min(r);
                if acc {
                    stats.residual = r;
                    stats.stabilized = st;
                    return Ok(stats);
                }
            }
        }
    }
    // 2. Dantzig.
    if opts.stages[1] {
        last = Stage::Dantzig;
        match dantzig(p, opts, ws) {
            Ok(piv) => {
                stats.pivots = piv;
                let (acc, r, st) = accept(p, opts, ws);
                best_r = best_r.min(r);
                if acc {
                    stats.stage = Stage::Dantzig;
                    stats.residual = r;
                    stats.stabilized = st;
                    return Ok(stats);
                }
                stats.dantzig_failure = Some(DantzigFailure::Inaccurate { residual: r });
            }
            Err((piv, f)) => {
                stats.pivots = piv;
                stats.dantzig_failure = Some(f);
            }
        }
    }
    // 3. Every active set of a small problem.
    if opts.stages[2] && n <= opts.exhaustive_max {
        last = Stage::Exhaustive;
        let (tried, found) = exhaustive(p, opts, ws);
        stats.exhaustive_tried = tried;
        if found {
            let (acc, r, st) = accept(p, opts, ws);
            best_r = best_r.min(r);
            if acc {
                stats.stage = Stage::Exhaustive;
                stats.residual = r;
                stats.stabilized = st;
                return Ok(stats);
            }
        }
    }
    // 4. Projected Gauss–Seidel, then its active set.
    if opts.stages[3] {
        last = Stage::Pgs;
        ws.x.fill(0.0);
        stats.pgs_sweeps = pgs(p, opts, ws);
        best_r = best_r.min(residual(p, &ws.x));
        classify(p, ws);
        ws.best.copy_from(&ws.x);
        ws.best_status.clone_from(&ws.status);
        let status = std::mem::take(&mut ws.status);
        let ok = active_solve(p, &status, ws, false).is_some();
        ws.status = status;
        if !ok || residual_w(p, &ws.x, &ws.w) > opts.tolerance {
            // The polished point failed: the PGS point itself on its
            // active set.
            ws.x.copy_from(&ws.best);
            ws.status.clone_from(&ws.best_status);
        }
        {
            let (acc, r, st) = accept(p, opts, ws);
            best_r = best_r.min(r);
            if acc {
                stats.stage = Stage::Pgs;
                stats.residual = r;
                stats.stabilized = st;
                return Ok(stats);
            }
        }
    }
    Err(LcpError::Unsolved {
        stage: last,
        residual: best_r,
        dantzig: stats.dantzig_failure,
        iterations: stats.pivots + stats.exhaustive_tried + stats.pgs_sweeps,
    })
}

/// `∂x/∂b` (`n × n`) on the active set `status` (module docs; the
/// pseudo-inverse where the clamped system is singular).
pub fn jacobian_b(p: &Problem<'_>, status: &[Status], ws: &mut Workspace) -> Option<DMatrix<f64>> {
    let n = p.n();
    ws.resize(n);
    ws.set_children(p);
    let cols: Vec<usize> = (0..n).filter(|&i| status[i] == Status::Free).collect();
    let k = cols.len();
    let m = DMatrix::from_fn(k, k, |ri, ci| at(p, &ws.children, status, cols[ri], cols[ci]));
    let mp = pinv(m)?;
    let mut jac = DMatrix::zeros(n, n);
    for (ci, &j) in cols.iter().enumerate() {
        for (ri, &r) in cols.iter().enumerate() {
            let v = -mp[(ci, ri)];
            jac[(j, r)] = v;
            for &i in &ws.children[j] {
                if let Some(c) = tie(p, i, status[i]) {
                    jac[(i, r)] = c * v;
                }
            }
        }
    }
    Some(jac)
}

/// `∂x/∂A_kl = (∂x/∂b_k) x_l` from [`jacobian_b`]'s result.
pub fn jacobian_a_column(jb: &DMatrix<f64>, x: &DVector<f64>, k: usize, l: usize) -> DVector<f64> {
    jb.column(k) * x[l]
}
