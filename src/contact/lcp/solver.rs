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

use nalgebra::{DMatrix, DVector};

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

/// `A x + b` into `w`.
fn eval_w(p: &Problem<'_>, x: &DVector<f64>, w: &mut DVector<f64>) {
    w.copy_from(p.b);
    w.gemv(1.0, p.a, x, 1.0);
}

/// The scaled natural-map residual of `x` (module docs); 0 at a solution.
pub fn residual(p: &Problem<'_>, x: &DVector<f64>) -> f64 {
    let mut w = p.b.clone();
    w.gemv(1.0, p.a, x, 1.0);
    residual_w(p, x, &w)
}

fn residual_w(p: &Problem<'_>, x: &DVector<f64>, w: &DVector<f64>) -> f64 {
    let amax = p.a.amax();
    let k = if amax > 0.0 { 1.0 / amax } else { 1.0 };
    let scale = x.amax() + k * p.b.amax();
    if scale == 0.0 {
        return 0.0;
    }
    let mut r: f64 = 0.0;
    for i in 0..p.n() {
        let (l, h) = p.bounds(i, x);
        let z = (x[i] - k * w[i]).max(l).min(h);
        let ri = (x[i] - z).abs();
        if !ri.is_finite() {
            return f64::INFINITY;
        }
        // A point outside its bounds (l > h cannot happen for x_n ≥ 0).
        r = r.max(ri).max(l - x[i]).max(x[i] - h);
    }
    r / scale
}

/// The coefficient tying friction row `i` to its normal in status `s`.
fn tie(p: &Problem<'_>, i: usize, s: Status) -> Option<f64> {
    match (p.findex[i], s) {
        (Some(_), Status::Lo) => Some(p.lo[i]),
        (Some(_), Status::Hi) => Some(p.hi[i]),
        _ => None,
    }
}

/// Column `j` of `A T` at row `r` (the tied friction rows of `j` added).
fn at(p: &Problem<'_>, children: &[Vec<usize>], status: &[Status], r: usize, j: usize) -> f64 {
    let mut v = p.a[(r, j)];
    for &i in &children[j] {
        if let Some(c) = tie(p, i, status[i]) {
            v += c * p.a[(r, i)];
        }
    }
    v
}

/// Solves the `k × k` column-major system in `m` (overwritten) for `rhs`
/// in place, LU with partial pivoting. `None` if a pivot is below
/// `1e-13 max|m|` (nearly singular).
fn lu_solve(m: &mut [f64], k: usize, rhs: &mut [f64], piv: &mut [usize]) -> Option<()> {
    let big = m[..k * k].iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if k == 0 {
        return Some(());
    }
    if big == 0.0 {
        return None;
    }
    let tiny = 1e-13 * big;
    for c in 0..k {
        let mut pr = c;
        let mut pv = m[c * k + c].abs();
        for r in c + 1..k {
            let v = m[c * k + r].abs();
            if v > pv {
                pv = v;
                pr = r;
            }
        }
        if pv <= tiny {
            return None;
        }
        piv[c] = pr;
        if pr != c {
            for cc in 0..k {
                m.swap(cc * k + c, cc * k + pr);
            }
            rhs.swap(c, pr);
        }
        let d = m[c * k + c];
        for r in c + 1..k {
            let f = m[c * k + r] / d;
            if f != 0.0 {
                m[c * k + r] = f;
                for cc in c + 1..k {
                    m[cc * k + r] -= f * m[cc * k + c];
                }
                rhs[r] -= f * rhs[c];
            } else {
                m[c * k + r] = 0.0;
            }
        }
    }
    for c in (0..k).rev() {
        let mut v = rhs[c];
        for cc in c + 1..k {
            v -= m[cc * k + c] * rhs[cc];
        }
        rhs[c] = v / m[c * k + c];
    }
    Some(())
}

/// Pseudo-inverse of a square matrix (SVD, singular values below
/// `k ε σ_max` dropped).
fn pinv(m: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let k = m.nrows();
    if k == 0 {
        return Some(m);
    }
    let svd = m.svd(true, true);
    let smax = svd.singular_values.max();
    if !(smax > 0.0 && smax.is_finite()) {
        return None;
    }
    svd.pseudo_inverse(k.max(4) as f64 * f64::EPSILON * smax).ok()
}

/// Solves `M δ = rhs` with `M` the `k × k` system in `ws.m` and the
/// right-hand side in `ws.rhs`, the result in `ws.rhs`: LU when it is
/// well conditioned and `min_norm` is off, else the pseudo-inverse.
fn sub_solve(ws: &mut Workspace, k: usize, min_norm: bool) -> Option<()> {
    if !min_norm {
        // Keep the system for the pseudo-inverse fallback.
        ws.m0.clear();
        ws.m0.extend_from_slice(&ws.m[..k * k]);
        ws.r0.clear();
        ws.r0.extend_from_slice(&ws.rhs[..k]);
        if lu_solve(&mut ws.m, k, &mut ws.rhs, &mut ws.piv).is_some() {
            return Some(());
        }
        ws.m[..k * k].copy_from_slice(&ws.m0);
        ws.rhs[..k].copy_from_slice(&ws.r0);
    }
    let mat = DMatrix::from_column_slice(k, k, &ws.m[..k * k]);
    let pi = pinv(mat)?;
    let r = DVector::from_column_slice(&ws.rhs[..k]);
    let d = pi * r;
    ws.rhs[..k].copy_from_slice(d.as_slice());
    Some(())
}

/// `x` from a complete active set `status` (module docs), into `ws.x`
/// (and `w` into `ws.w`). `min_norm`: the pseudo-inverse solution. `None`
/// when the system cannot be solved.
pub fn solve_active_set(
    p: &Problem<'_>,
    status: &[Status],
    ws: &mut Workspace,
    min_norm: bool,
) -> Option<()> {
    let n = p.n();
    ws.resize(n);
    ws.set_children(p);
    active_solve(p, status, ws, min_norm)
}

fn active_solve(p: &Problem<'_>, status: &[Status], ws: &mut Workspace, min_norm: bool) -> Option<()> {
    let n = p.n();
    // Constant part x_K.
    ws.xk.fill(0.0);
    for i in 0..n {
        if p.findex[i].is_none() {
            match status[i] {
                Status::Lo => ws.xk[i] = p.lo[i],
                Status::Hi => ws.xk[i] = p.hi[i],
                _ => {}
            }
        }
    }
    for i in 0..n {
        if let (Some(k), Some(c)) = (p.findex[i], tie(p, i, status[i])) {
            if status[k] != Status::Free {
                ws.xk[i] = c * ws.xk[k];
            }
        }
    }
    ws.cols.clear();
    ws.cols
        .extend((0..n).filter(|&i| status[i] == Status::Free));
    let k = ws.cols.len();
    // rhs = −(b + A x_K)_C, M = (A T)_CC.
    ws.w.copy_from(p.b);
    ws.w.gemv(1.0, p.a, &ws.xk, 1.0);
    for (ri, &r) in ws.cols.iter().enumerate() {
        ws.rhs[ri] = -ws.w[r];
        for (ci, &j) in ws.cols.iter().enumerate() {
            ws.m[ci * k + ri] = at(p, &ws.children, status, r, j);
        }
    }
    sub_solve(ws, k, min_norm)?;
    ws.x.copy_from(&ws.xk);
    for ci in 0..k {
        let j = ws.cols[ci];
        let v = ws.rhs[ci];
        ws.x[j] = v;
        for &i in &ws.children[j] {
            if let Some(c) = tie(p, i, status[i]) {
                ws.x[i] = c * v;
            }
        }
    }
    if !ws.x.iter().all(|v| v.is_finite()) {
        return None;
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    Some(())
}

/// An event of Dantzig's ratio test.
#[derive(Clone, Copy, Debug)]
enum Event {
    To(usize, Status),
}

/// Dantzig principal pivoting (module docs); the result in `ws.x`,
/// `ws.status`. Returns the pivots taken.
fn dantzig(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> Result<usize, (usize, DantzigFailure)> {
    let n = p.n();
    ws.status.iter_mut().for_each(|s| *s = Status::Unset);
    ws.x.fill(0.0);
    let amax = p.a.amax().max(f64::MIN_POSITIVE);
    let mut pivots = 0;
    let cap = 20 * n + 20;
    let order = (0..n)
        .filter(|&i| p.findex[i].is_none())
        .chain((0..n).filter(|&i| p.findex[i].is_some()));
    let order: Vec<usize> = order.collect();
    for d in order {
        ws.seen.clear();
        loop {
            let x = std::mem::take(&mut ws.x);
            eval_w(p, &x, &mut ws.w);
            ws.x = x;
            let wscale = p.b.amax() + amax * ws.x.amax();
            let tw = 1e-13 * wscale.max(f64::MIN_POSITIVE);
            let tx = 1e-13 * ws.x.amax();
            let (l, h) = p.bounds(d, &ws.x);
            let (xd, wd) = (ws.x[d], ws.w[d]);
            if wd.abs() <= tw && xd >= l - tx && xd <= h + tx {
                ws.status[d] = Status::Free;
                break;
            }
            if wd > 0.0 && xd <= l + tx {
                ws.status[d] = Status::Lo;
                ws.x[d] = l;
                break;
            }
            if wd < 0.0 && xd >= h - tx {
                ws.status[d] = Status::Hi;
                ws.x[d] = h;
                break;
            }
            pivots += 1;
            if pivots > cap {
                return Err((pivots, DantzigFailure::PivotCap));
            }
            let s = if wd > 0.0 { -1.0 } else { 1.0 };
            // Direction: Δx_d = s, Δw_C = 0.
            ws.cols.clear();
            ws.cols
                .extend((0..n).filter(|&i| ws.status[i] == Status::Free));
            let k = ws.cols.len();
            for (ri, &r) in ws.cols.iter().enumerate() {
                ws.rhs[ri] = -s * at(p, &ws.children, &ws.status, r, d);
                for (ci, &j) in ws.cols.iter().enumerate() {
                    ws.m[ci * k + ri] = at(p, &ws.children, &ws.status, r, j);
                }
            }
            if sub_solve(ws, k, false).is_none() {
                return Err((pivots, DantzigFailure::Unbounded { row: d }));
            }
            ws.dx.fill(0.0);
            let set = |dx: &mut DVector<f64>, j: usize, v: f64, status: &[Status]| {
                dx[j] = v;
                for &i in &ws.children[j] {
                    if let Some(c) = tie(p, i, status[i]) {
                        dx[i] = c * v;
                    }
                }
            };
            set(&mut ws.dx, d, s, &ws.status);
            for ci in 0..k {
                set(&mut ws.dx, ws.cols[ci], ws.rhs[ci], &ws.status);
            }
            let dx = std::mem::take(&mut ws.dx);
            ws.dw.gemv(1.0, p.a, &dx, 0.0);
            ws.dx = dx;
            let dxmax = ws.dx.amax();
            let ex = 1e-12 * dxmax;
            let ew = 1e-12 * amax * dxmax;
            // Ratio test.
            let mut best = f64::INFINITY;
            let mut event: Option<Event> = None;
            let mut consider = |t: f64, e: Event| {
                let t = t.max(0.0);
                if t < best {
                    best = t;
                    event = Some(e);
                }
            };
            let (x, dx, w, dw) = (&ws.x, &ws.dx, &ws.w, &ws.dw);
            // The driven row's velocity reaching zero.
            if dw[d] * wd < 0.0 && dw[d].abs() > ew {
                consider(-wd / dw[d], Event::To(d, Status::Free));
            }
            // Bounds of the driven row and of the free rows.
            let bound_tests = |j: usize, consider: &mut dyn FnMut(f64, Event)| match p.findex[j] {
                Some(nrm) => {
                    for (c, st) in [(p.hi[j], Status::Hi), (p.lo[j], Status::Lo)] {
                        let num = c * x[nrm] - x[j];
                        let den = match opts.ratio_test {
                            RatioTest::Moving => dx[j] - c * dx[nrm],
                            RatioTest::Frozen => dx[j],
                        };
                        let toward = if st == Status::Hi { den > ex } else { den < -ex };
                        if toward {
                            consider(num / den, Event::To(j, st));
                        }
                    }
                }
                None => {
                    if dx[j] > ex && p.hi[j].is_finite() {
                        consider((p.hi[j] - x[j]) / dx[j], Event::To(j, Status::Hi));
                    }
                    if dx[j] < -ex && p.lo[j].is_finite() {
                        consider((p.lo[j] - x[j]) / dx[j], Event::To(j, Status::Lo));
                    }
                }
            };
            bound_tests(d, &mut consider);
            for j in 0..n {
                if j == d {
                    continue;
                }
                match ws.status[j] {
                    Status::Free => bound_tests(j, &mut consider),
                    Status::Lo if dw[j] < -ew => {
                        consider(-w[j] / dw[j], Event::To(j, Status::Free))
                    }
                    Status::Hi if dw[j] > ew => {
                        consider(-w[j] / dw[j], Event::To(j, Status::Free))
                    }
                    _ => {}
                }
            }
            let Some(Event::To(j, st)) = event else {
                return Err((pivots, DantzigFailure::Unbounded { row: d }));
            };
            let t = best;
            // The bound the event meets, before the step (the frozen test
            // stops there).
            let frozen = match (p.findex[j], st) {
                (Some(nrm), Status::Lo) => p.lo[j] * ws.x[nrm],
                (Some(nrm), Status::Hi) => p.hi[j] * ws.x[nrm],
                _ => 0.0,
            };
            {
                let (x, dx) = (&mut ws.x, &ws.dx);
                x.axpy(t, dx, 1.0);
            }
            match (p.findex[j], st) {
                (_, Status::Free) => {}
                (Some(nrm), _) => {
                    ws.x[j] = match opts.ratio_test {
                        RatioTest::Moving => tie(p, j, st).expect("bounded") * ws.x[nrm],
                        RatioTest::Frozen => frozen,
                    };
                }
                (None, Status::Lo) => ws.x[j] = p.lo[j],
                (None, Status::Hi) => ws.x[j] = p.hi[j],
                _ => {}
            }
            ws.status[j] = st;
            if j == d {
                break;
            }
            if !ws.seen.insert(ws.status.clone()) {
                return Err((pivots, DantzigFailure::Loop { row: d }));
            }
        }
    }
    Ok(pivots)
}

/// Tries every active set (rows with finite bounds: free, lower, upper);
/// the first that verifies is left in `ws`. Returns the sets tried.
fn exhaustive(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> (usize, bool) {
    let n = p.n();
    let choices: Vec<Vec<Status>> = (0..n)
        .map(|i| {
            let mut c = vec![Status::Free];
            if p.findex[i].is_some() || p.lo[i].is_finite() {
                c.push(Status::Lo);
            }
            if p.findex[i].is_some() || p.hi[i].is_finite() {
                c.push(Status::Hi);
            }
            c
        })
        .collect();
    let mut idx = vec![0usize; n];
    let mut status: Vec<Status> = (0..n).map(|i| choices[i][0]).collect();
    let mut tried = 0;
    loop {
        tried += 1;
        if active_solve(p, &status, ws, false).is_some()
            && residual_w(p, &ws.x, &ws.w) <= opts.tolerance
        {
            ws.status.copy_from_slice(&status);
            return (tried, true);
        }
        // Next assignment (odometer).
        let mut i = 0;
        loop {
            if i == n {
                return (tried, false);
            }
            idx[i] += 1;
            if idx[i] < choices[i].len() {
                status[i] = choices[i][idx[i]];
                break;
            }
            idx[i] = 0;
            status[i] = choices[i][0];
            i += 1;
        }
    }
}

/// Projected Gauss–Seidel from `ws.x`; returns the sweeps taken.
fn pgs(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> usize {
    let n = p.n();
    let dmax = (0..n).map(|i| p.a[(i, i)]).fold(0.0f64, f64::max);
    let reg = opts.pgs_regularization * dmax.max(f64::MIN_POSITIVE);
    for sweep in 0..opts.pgs_sweeps {
        let mut change: f64 = 0.0;
        for i in 0..n {
            let mut wi = p.b[i];
            for j in 0..n {
                wi += p.a[(i, j)] * ws.x[j];
            }
            let (l, h) = p.bounds(i, &ws.x);
            let d = p.a[(i, i)] + reg;
            let new = if d > 0.0 {
                (ws.x[i] - wi / d).max(l).min(h)
            } else {
                ws.x[i].max(l).min(h)
            };
            change = change.max((new - ws.x[i]).abs());
            ws.x[i] = new;
        }
        if change <= 1e-15 * ws.x.amax() {
            return sweep + 1;
        }
    }
    opts.pgs_sweeps
}

/// The active set of an approximate point: a row at (within a relative
/// `1e-7`) a bound is there, the others free.
fn classify(p: &Problem<'_>, ws: &mut Workspace) {
    let n = p.n();
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    let tx = 1e-7 * x.amax();
    for i in 0..n {
        let (l, h) = p.bounds(i, &x);
        ws.status[i] = if h - l <= tx {
            if ws.w[i] >= 0.0 {
                Status::Lo
            } else {
                Status::Hi
            }
        } else if x[i] <= l + tx {
            Status::Lo
        } else if x[i] >= h - tx {
            Status::Hi
        } else {
            Status::Free
        };
    }
    ws.x = x;
}

/// Snaps `ws.x` onto the active set `status` (rows at a bound set to it,
/// tied friction rows to their normal) and corrects the free rows by the
/// minimum-norm solution of the clamped system's residual:
/// `x_C += −M⁺ (A x + b)_C` (iterative refinement that stays near the
/// given point when the clamped system is singular).
fn refine(p: &Problem<'_>, status: &[Status], ws: &mut Workspace) -> Option<()> {
    let n = p.n();
    for i in 0..n {
        match (p.findex[i], status[i]) {
            (None, Status::Lo) => ws.x[i] = p.lo[i],
            (None, Status::Hi) => ws.x[i] = p.hi[i],
            _ => {}
        }
    }
    for i in 0..n {
        if let (Some(k), Some(c)) = (p.findex[i], tie(p, i, status[i])) {
            ws.x[i] = c * ws.x[k];
        }
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    ws.cols.clear();
    ws.cols.extend((0..n).filter(|&i| status[i] == Status::Free));
    let k = ws.cols.len();
    for (ri, &r) in ws.cols.iter().enumerate() {
        ws.rhs[ri] = -ws.w[r];
        for (ci, &j) in ws.cols.iter().enumerate() {
            ws.m[ci * k + ri] = at(p, &ws.children, status, r, j);
        }
    }
    sub_solve(ws, k, true)?;
    for ci in 0..k {
        let j = ws.cols[ci];
        let d = ws.rhs[ci];
        ws.x[j] += d;
        for &i in &ws.children[j] {
            if let Some(c) = tie(p, i, status[i]) {
                ws.x[i] = c * ws.x[j];
            }
        }
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    Some(())
}

/// Verifies `ws.x` (with `ws.w` fresh); then the stabilized point of
/// `ws.status` replaces it when it verifies too. Returns
/// `(accepted, residual, stabilized)`.
fn accept(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> (bool, f64, bool) {
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    let r = residual_w(p, &ws.x, &ws.w);
    ws.best.copy_from(&ws.x);
    let status = std::mem::take(&mut ws.status);
    // The stabilized point of the largest clamping set: rows at a bound
    // with zero velocity (degenerate, as a redundant contact that carries
    // nothing) made free, the minimum-norm solution of that set.
    if opts.stabilize {
        let wscale = p.b.amax() + p.a.amax() * ws.x.amax();
        let mut wide = status.clone();
        let mut widened = false;
        for i in 0..p.n() {
            if matches!(status[i], Status::Lo | Status::Hi) && ws.w[i].abs() <= 1e-9 * wscale {
                let (l, h) = p.bounds(i, &ws.x);
                // Only rows whose bounds leave room (not a friction row
                // of a separated contact).
                if h - l > 0.0 {
                    wide[i] = Status::Free;
                    widened = true;
                }
            }
        }
        // Friction rows of a normal made free: on the side their velocity
        // points to (free where it is zero).
        for i in 0..p.n() {
            if let Some(k) = p.findex[i] {
                if wide[k] != status[k] {
                    wide[i] = if ws.w[i].abs() <= 1e-9 * wscale {
                        Status::Free
                    } else if ws.w[i] > 0.0 {
                        Status::Lo
                    } else {
                        Status::Hi
                    };
                }
            }
        }
        // The sticking set: besides, every friction row at a bound of a
        // contact whose normal is (or was made) free made free as well,
        // even where it slides. With redundant contacts the normal
        // impulses are not unique, and neither is the velocity: a
        // pivoting stage lands on a vertex of the solution set (the load
        // of a face on one of its points) where the lightly loaded points
        // slide at their bound (a plate squeezed between two box fingers on
        // prismatic joints pivots about one corner, although every point
        // sticking with the load shared solves the same LCP). The
        // minimum-norm point of the sticking set is the limit of uniformly
        // compliant contacts; where it verifies it is preferred. Where the
        // velocity is unique (a single contact, fixed normal impulses) it
        // verifies only if the slip was zero anyway.
        let mut stick = wide.clone();
        let mut sticking = false;
        for i in 0..p.n() {
            if let Some(k) = p.findex[i] {
                if wide[k] == Status::Free && matches!(stick[i], Status::Lo | Status::Hi) {
                    stick[i] = Status::Free;
                    sticking = true;
                }
            }
        }
        if sticking && active_solve(p, &stick, ws, true).is_some() {
            let rs = residual_w(p, &ws.x, &ws.w);
            // Strictly inside: every friction row taken off its bound
            // sticks with room (a millionth of its box) under a positive
            // normal. The acceptance tolerance alone would let a contact
            // whose slip is within it (a perturbed head-on impact, a
            // touching contact with no normal impulse) stick with its
            // friction a hair outside the box, and the step would stop
            // being smooth in its inputs.
            let inside = (0..p.n()).all(|i| {
                if stick[i] != Status::Free || status[i] == Status::Free || p.findex[i].is_none() {
                    return true;
                }
                let (l, h) = p.bounds(i, &ws.x);
                let room = 1e-6 * (h - l);
                h - l > 0.0 && ws.x[i] >= l + room && ws.x[i] <= h - room
            });
            if inside && rs <= opts.tolerance {
                ws.status = stick;
                return (true, rs, true);
            }
            ws.x.copy_from(&ws.best);
        }
        if widened && active_solve(p, &wide, ws, true).is_some() {
            let rs = residual_w(p, &ws.x, &ws.w);
            if rs <= opts.tolerance {
                ws.status = wide;
                return (true, rs, true);
            }
        }
        ws.x.copy_from(&ws.best);
    }
    // The stabilized (minimum-norm) point of the active set.
    if opts.stabilize && active_solve(p, &status, ws, true).is_some() {
        let rs = residual_w(p, &ws.x, &ws.w);
        if rs <= opts.tolerance {
            ws.status = status;
            return (true, rs, true);
        }
    }
    // The stage's point, refined on its active set (when the minimum-norm
    // point leaves the bounds).
    ws.x.copy_from(&ws.best);
    if refine(p, &status, ws).is_some() {
        let rr = residual_w(p, &ws.x, &ws.w);
        if rr <= opts.tolerance && rr <= r {
            ws.status = status;
            return (true, rr, false);
        }
    }
    ws.status = status;
    let best = std::mem::take(&mut ws.best);
    ws.x.copy_from(&best);
    ws.best = best;
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    (r <= opts.tolerance, r, false)
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
