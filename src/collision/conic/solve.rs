//! Primal-dual interior-point method for small conic programs over
//! products of nonnegative orthants and second-order cones (DCOL's `pdip`,
//! CVXOPT's `conelp` without equality constraints).
//!
//! # Problem
//!
//! ```text
//! minimize    cᵀx
//! subject to  G x + s = h,   s ∈ K = ℝ₊^{m₀} × Q^{m₁} × … × Q^{m_k}
//! ```
//!
//! with `Q^m = {(u₀, u₁) ∈ ℝ × ℝ^{m−1} : u₀ ≥ ‖u₁‖}`. The dual variable
//! `z ∈ K` (K is self-dual) satisfies at the solution
//!
//! ```text
//! c + Gᵀz = 0,   s + Gx − h = 0,   s ∘ z = 0
//! ```
//!
//! where `∘` is the Jordan product: componentwise on the orthant,
//! `u ∘ v = (uᵀv, u₀v₁ + v₀u₁)` on a second-order cone.
//!
//! # Algorithm
//!
//! * Initial point as in CVXOPT: `x̂ = argmin ‖Gx − h‖`, `ŝ = h − Gx̂`,
//!   `ẑ = argmin ‖z‖ s.t. Gᵀz + c = 0`, each shifted into the interior of K
//!   by `(1 + a)e` where `a = min{t : u + te ∈ K}` when `a ≥ 0`.
//! * Nesterov–Todd scaling `W` with `W z = W⁻ᵀ s = λ`: `w = √(s/z)` on the
//!   orthant; on a second-order cone (s̄ = s/√(sᵀJs), z̄ = z/√(zᵀJz),
//!   γ = √((1 + z̄ᵀs̄)/2), w̄ = (s̄ + Jz̄)/(2γ), η = (sᵀJs / zᵀJz)^¼)
//!   `W = η [w̄₀ w̄₁ᵀ; w̄₁ I + w̄₁w̄₁ᵀ/(1 + w̄₀)]`.
//! * Mehrotra predictor-corrector: affine direction with
//!   `λ ∘ (WΔz + W⁻ᵀΔs) = −λ∘λ`, centring σ = (ρ_aff)³ with
//!   ρ_aff = (s + tΔs)ᵀ(z + tΔz)/sᵀz, combined direction with the
//!   second-order correction `−(W⁻ᵀΔs_a) ∘ (WΔz_a) + σμe`.
//! * Each Newton system is reduced to the positive-definite
//!   `Gᵀ W⁻² G Δx = …` (n × n, n = 4 + auxiliary variables), factored by
//!   Cholesky.
//! * Once `μ ≤ tol_gap` and the residuals are small, a few Newton steps on
//!   `s ∘ z = tol_gap · e` return the central-path point of that fixed μ
//!   (see [`ConicParams::centering`]): a smooth function of the data, with
//!   duals accurate to O(μ) rather than O(√μ) on active second-order cones.
//! * On a numerical breakdown far from the solution the solve is retried
//!   once with τ = 0.9 and twice the iteration limit.
//! * Fraction to boundary τ = 0.99 (DCOL's value) on one common step for
//!   (s, z).
//!
//! Everything branches on `f64` values. A failed factorization, a non-finite
//! iterate or the iteration limit gives
//! [`super::ProximityError::NoConvergence`].

#![allow(non_snake_case)]

use nalgebra::{DMatrix, DVector};

use super::ProximityError;

/// Tuning of the interior-point solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConicParams {
    /// Iteration limit (DCOL: 50).
    pub max_iters: usize,
    /// Stop when the mean complementarity `μ = sᵀz/ν` is below this value …
    pub tol_gap: f64,
    /// … and both residuals `‖c + Gᵀz‖∞`, `‖s + Gx − h‖∞` are below this.
    pub tol_residual: f64,
    /// Fraction to the boundary (DCOL: 0.99; Dojo/Silico use 0.95).
    pub tau: f64,
    /// At most this many Newton steps on `s ∘ z = tol_gap · e` once the
    /// tolerances are met (stopping early when `‖s ∘ z − μe‖∞ ≤ 1e-6 μ` or
    /// a step changes x by less than 1e-14; typically 1–6 are taken). The
    /// returned point is then the central-path point of the fixed parameter
    /// μ = tol_gap, a smooth function of the data (Silico's relaxed
    /// solution), which the IFT of `proximity_gradient` differentiates
    /// exactly and finite differences reproduce. On the central path the
    /// duals of an active second-order cone are aligned with its slack
    /// (`z ∝ Js`); without these steps the misalignment is
    /// `O(√(distance to the boundary))`, derivatives are only good to ~1e-6
    /// and the witness point jitters by ~1e-6 between solves. Default 25.
    pub centering: usize,
    /// Rounds of iterative refinement of each corrector / centering
    /// direction (CVXOPT refines too). 2 keeps the residuals at round-off
    /// near the solution; with 1, about 1 solve in 5000 of the random test
    /// stalls (padded polygons). Default 2.
    pub refinement: usize,
}

impl Default for ConicParams {
    /// Tight defaults (μ 1e-12, residual 1e-10): the derivative routines
    /// and finite-difference checks need α to about 1e-12.
    fn default() -> Self {
        ConicParams {
            max_iters: 60,
            tol_gap: 1e-12,
            tol_residual: 1e-10,
            tau: 0.99,
            refinement: 2,
            centering: 25,
        }
    }
}

/// Layout of the cone `K`: `n_orthant` orthant rows first, then one
/// second-order cone per entry of `soc` (its dimension).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConeLayout {
    /// Number of orthant rows (they come first).
    pub n_orthant: usize,
    /// Dimensions of the second-order cones, in row order.
    pub soc: Vec<usize>,
}

impl ConeLayout {
    /// Total number of rows `m`.
    pub fn dim(&self) -> usize {
        self.n_orthant + self.soc.iter().sum::<usize>()
    }

    /// Degree ν of the cone (orthant rows + number of SOCs).
    pub fn degree(&self) -> usize {
        self.n_orthant + self.soc.len()
    }

    /// `(start, dim)` of every second-order cone.
    pub fn soc_blocks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut start = self.n_orthant;
        self.soc.iter().map(move |&d| {
            let b = (start, d);
            start += d;
            b
        })
    }

    /// The identity element `e` of K.
    pub fn identity(&self) -> DVector<f64> {
        let mut e = DVector::zeros(self.dim());
        self.identity_into(e.as_mut_slice());
        e
    }

    /// The identity element `e` of K, written into `e` (length m).
    pub fn identity_into(&self, e: &mut [f64]) {
        e.fill(0.0);
        e[..self.n_orthant].fill(1.0);
        for (s, _) in self.soc_blocks() {
            e[s] = 1.0;
        }
    }

    /// Jordan product `u ∘ v`.
    pub fn jordan(&self, u: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        let mut w = DVector::zeros(self.dim());
        self.jordan_into(u.as_slice(), v.as_slice(), w.as_mut_slice());
        w
    }

    /// Jordan product `w = u ∘ v` (slices of length m).
    pub fn jordan_into(&self, u: &[f64], v: &[f64], w: &mut [f64]) {
        for i in 0..self.n_orthant {
            w[i] = u[i] * v[i];
        }
        for (s, d) in self.soc_blocks() {
            let (uu, vv) = (&u[s..s + d], &v[s..s + d]);
            w[s] = dot(uu, vv);
            for j in 1..d {
                w[s + j] = uu[0] * vv[j] + vv[0] * uu[j];
            }
        }
    }

    /// Solves `u ∘ x = r` for `x` (u in the interior of K).
    pub fn jordan_div(&self, u: &DVector<f64>, r: &DVector<f64>) -> DVector<f64> {
        let mut x = DVector::zeros(self.dim());
        self.jordan_div_into(u.as_slice(), r.as_slice(), x.as_mut_slice());
        x
    }

    /// Solves `u ∘ x = r` for `x` (slices of length m).
    pub fn jordan_div_into(&self, u: &[f64], r: &[f64], x: &mut [f64]) {
        for i in 0..self.n_orthant {
            x[i] = r[i] / u[i];
        }
        for (s, d) in self.soc_blocks() {
            let u0 = u[s];
            let mut u1r1 = 0.0;
            let mut u1u1 = 0.0;
            for j in 1..d {
                u1r1 += u[s + j] * r[s + j];
                u1u1 += u[s + j] * u[s + j];
            }
            let det = u0 * u0 - u1u1;
            let x0 = (u0 * r[s] - u1r1) / det;
            x[s] = x0;
            for j in 1..d {
                x[s + j] = (r[s + j] - x0 * u[s + j]) / u0;
            }
        }
    }

    /// The arrow matrix `L(u)` with `L(u) v = u ∘ v` (block diagonal).
    pub fn arrow(&self, u: &DVector<f64>) -> DMatrix<f64> {
        let m = self.dim();
        let mut L = DMatrix::zeros(m, m);
        for i in 0..self.n_orthant {
            L[(i, i)] = u[i];
        }
        for (s, d) in self.soc_blocks() {
            for j in 0..d {
                L[(s, s + j)] = u[s + j];
                L[(s + j, s)] = u[s + j];
                L[(s + j, s + j)] = u[s];
            }
        }
        L
    }

    /// `min{t : u + t e ∈ K}` (negative when u is in the interior).
    pub fn interior_shift(&self, u: &DVector<f64>) -> f64 {
        self.interior_shift_of(u.as_slice())
    }

    /// [`ConeLayout::interior_shift`] of a slice.
    pub fn interior_shift_of(&self, u: &[f64]) -> f64 {
        let mut a = f64::NEG_INFINITY;
        for i in 0..self.n_orthant {
            a = a.max(-u[i]);
        }
        for (s, d) in self.soc_blocks() {
            let n1 = norm(&u[s + 1..s + d]);
            a = a.max(n1 - u[s]);
        }
        a
    }

    /// Largest `t ≥ 0` (capped at `f64::INFINITY`) with `u + tΔ ∈ K`, for u
    /// in the interior of K.
    pub fn max_step(&self, u: &DVector<f64>, du: &DVector<f64>) -> f64 {
        self.max_step_of(u.as_slice(), du.as_slice())
    }

    /// [`ConeLayout::max_step`] of slices.
    pub fn max_step_of(&self, u: &[f64], du: &[f64]) -> f64 {
        let mut t = f64::INFINITY;
        for i in 0..self.n_orthant {
            if du[i] < 0.0 {
                t = t.min(-u[i] / du[i]);
            }
        }
        for (s, d) in self.soc_blocks() {
            // f(t) = (u₀ + tΔ₀)² − ‖u₁ + tΔ₁‖² = a t² + b t + c, c > 0.
            let (mut a, mut b, mut c) = (du[s] * du[s], u[s] * du[s], u[s] * u[s]);
            for j in 1..d {
                a -= du[s + j] * du[s + j];
                b -= u[s + j] * du[s + j];
                c -= u[s + j] * u[s + j];
            }
            b *= 2.0;
            t = t.min(smallest_positive_root(a, b, c));
            // the cone is the branch u₀ + tΔ₀ ≥ 0
            if du[s] < 0.0 {
                t = t.min(-u[s] / du[s]);
            }
        }
        t
    }
}

/// Smallest positive root of `a t² + b t + c` (c > 0), or ∞.
fn smallest_positive_root(a: f64, b: f64, c: f64) -> f64 {
    let scale = a.abs().max(b.abs()).max(c.abs());
    if a.abs() <= 1e-14 * scale {
        return if b < 0.0 { -c / b } else { f64::INFINITY };
    }
    let disc = b * b - 4.0 * a * c;
    if disc < 0.0 {
        return f64::INFINITY;
    }
    let sq = disc.sqrt();
    // stable pair of roots
    let q = -0.5 * (b + b.signum() * sq);
    let r1 = if q != 0.0 { c / q } else { f64::INFINITY };
    let r2 = q / a;
    let mut t = f64::INFINITY;
    for r in [r1, r2] {
        if r > 0.0 && r < t {
            t = r;
        }
    }
    t
}

// --- small dense kernels on column-major slices (sizes are tiny: n ≤ ~10,
// m ≤ ~40; plain loops beat any call overhead)

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |acc, (x, y)| acc + x * y)
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

fn amax(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |acc: f64, v| acc.max(v.abs()))
}

/// `y = G x` with G column-major m × n.
fn gemv(G: &[f64], m: usize, x: &[f64], y: &mut [f64]) {
    y[..m].fill(0.0);
    for (j, xj) in x.iter().enumerate() {
        for (yi, gij) in y[..m].iter_mut().zip(&G[j * m..(j + 1) * m]) {
            *yi += gij * xj;
        }
    }
}

/// `y = Gᵀ z` with G column-major m × n.
fn gemtv(G: &[f64], m: usize, z: &[f64], y: &mut [f64]) {
    for (j, yj) in y.iter_mut().enumerate() {
        *yj = dot(&G[j * m..(j + 1) * m], &z[..m]);
    }
}

/// Lower triangle of `AᵀA` (A column-major m × n) into `H` (n × n).
fn gram_lower(A: &[f64], m: usize, n: usize, H: &mut [f64]) {
    for j in 0..n {
        let aj = &A[j * m..(j + 1) * m];
        for k in j..n {
            H[j * n + k] = dot(&A[k * m..(k + 1) * m], aj);
        }
    }
}

/// In-place Cholesky `H = LLᵀ` of the lower triangle (column-major n × n),
/// as nalgebra's: `false` when a pivot is not positive (or NaN).
fn cholesky_in_place(H: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        for k in 0..j {
            let f = -H[k * n + j];
            for i in j..n {
                H[j * n + i] += f * H[k * n + i];
            }
        }
        let d = H[j * n + j];
        if !(d > 0.0) {
            return false;
        }
        let d = d.sqrt();
        H[j * n + j] = d;
        for i in j + 1..n {
            H[j * n + i] /= d;
        }
    }
    true
}

/// Solves `LLᵀ x = b` in place (L from [`cholesky_in_place`]).
fn cholesky_solve(L: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let bi = b[i] / L[i * n + i];
        b[i] = bi;
        for k in i + 1..n {
            b[k] -= bi * L[i * n + k];
        }
    }
    for i in (0..n).rev() {
        let mut acc = b[i];
        for k in i + 1..n {
            acc -= L[i * n + k] * b[k];
        }
        b[i] = acc / L[i * n + i];
    }
}

/// Nesterov–Todd scaling `W` of one iterate `(s, z)` of a cone layout:
/// symmetric, with `W z = W⁻¹ s` (the scaled point λ).
#[derive(Clone, Debug, Default)]
pub struct Scaling {
    /// Orthant: `w_i = √(s_i/z_i)`.
    w_orth: Vec<f64>,
    /// Per SOC: η.
    eta: Vec<f64>,
    /// Per SOC: w̄ (the cones' rows, concatenated).
    wb: Vec<f64>,
}

impl Scaling {
    /// The scaling of `(s, z)`, or `None` when either is not strictly
    /// inside its cone.
    pub fn new(layout: &ConeLayout, s: &DVector<f64>, z: &DVector<f64>) -> Option<Scaling> {
        let mut w = Scaling::default();
        w.update(layout, s.as_slice(), z.as_slice()).then_some(w)
    }

    /// Recomputes the scaling in place for `(s, z)` (slices of length m),
    /// reusing the buffers; `false` when either is not strictly inside its
    /// cone (the scaling is then unusable).
    pub fn update(&mut self, layout: &ConeLayout, s: &[f64], z: &[f64]) -> bool {
        self.w_orth.clear();
        self.eta.clear();
        self.wb.clear();
        for i in 0..layout.n_orthant {
            let w = (s[i] / z[i]).sqrt();
            if !(w.is_finite() && w > 0.0) {
                return false;
            }
            self.w_orth.push(w);
        }
        for (st, d) in layout.soc_blocks() {
            let ss = &s[st..st + d];
            let zz = &z[st..st + d];
            // (u₀ − ‖u₁‖)(u₀ + ‖u₁‖): less cancellation than u₀² − ‖u₁‖²
            let (sn1, zn1) = (norm(&ss[1..]), norm(&zz[1..]));
            let sjs = (ss[0] - sn1) * (ss[0] + sn1);
            let zjz = (zz[0] - zn1) * (zz[0] + zn1);
            if !(sjs > 0.0 && zjz > 0.0) {
                return false;
            }
            let sn = sjs.sqrt();
            let zn = zjz.sqrt();
            // s̄ = s/sn, z̄ = z/zn
            let zbsb = ss.iter().zip(zz).fold(0.0, |acc, (a, b)| acc + (b / zn) * (a / sn));
            let gamma = ((1.0 + zbsb) * 0.5).sqrt();
            let eta = (sjs / zjz).sqrt().sqrt();
            if !(eta.is_finite() && gamma.is_finite()) {
                return false;
            }
            self.wb.push((ss[0] / sn + zz[0] / zn) / (2.0 * gamma));
            for j in 1..d {
                self.wb.push((ss[j] / sn - zz[j] / zn) / (2.0 * gamma));
            }
            self.eta.push(eta);
        }
        true
    }

    /// `W v` (inverse = false) or `W⁻¹ v` (inverse = true); W is symmetric.
    pub fn apply(&self, layout: &ConeLayout, v: &DVector<f64>, inverse: bool) -> DVector<f64> {
        let mut out = DVector::zeros(v.len());
        self.apply_into(layout, v.as_slice(), inverse, out.as_mut_slice());
        out
    }

    /// `out = W v` or `W⁻¹ v` (slices of length m).
    pub fn apply_into(&self, layout: &ConeLayout, v: &[f64], inverse: bool, out: &mut [f64]) {
        for i in 0..layout.n_orthant {
            out[i] = if inverse { v[i] / self.w_orth[i] } else { v[i] * self.w_orth[i] };
        }
        let sgn = if inverse { -1.0 } else { 1.0 };
        let mut off = 0;
        for ((st, d), eta) in layout.soc_blocks().zip(&self.eta) {
            let wb = &self.wb[off..off + d];
            off += d;
            let k = if inverse { 1.0 / eta } else { *eta };
            let v0 = v[st];
            let mut w1v1 = 0.0;
            for j in 1..d {
                w1v1 += wb[j] * v[st + j];
            }
            out[st] = k * (wb[0] * v0 + sgn * w1v1);
            let c = sgn * v0 + w1v1 / (1.0 + wb[0]);
            for j in 1..d {
                out[st + j] = k * (v[st + j] + c * wb[j]);
            }
        }
    }

    /// `W⁻¹ A` column by column (in place on a copy of A).
    pub fn apply_inv_mat(&self, layout: &ConeLayout, A: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = A.clone();
        self.apply_inv_cols(layout, A.nrows(), out.as_mut_slice());
        out
    }

    /// `A ← W⁻¹ A`, A column-major with m rows.
    pub fn apply_inv_cols(&self, layout: &ConeLayout, m: usize, A: &mut [f64]) {
        for col in A.chunks_exact_mut(m) {
            for i in 0..layout.n_orthant {
                col[i] /= self.w_orth[i];
            }
            let mut off = 0;
            for ((st, d), eta) in layout.soc_blocks().zip(&self.eta) {
                let wb = &self.wb[off..off + d];
                off += d;
                let v0 = col[st];
                let mut w1v1 = 0.0;
                for k in 1..d {
                    w1v1 += wb[k] * col[st + k];
                }
                col[st] = (wb[0] * v0 - w1v1) / eta;
                let c = -v0 + w1v1 / (1.0 + wb[0]);
                for k in 1..d {
                    col[st + k] = (col[st + k] + c * wb[k]) / eta;
                }
            }
        }
    }
}

/// A converged primal-dual solution.
#[derive(Clone, Debug, PartialEq)]
pub struct ConicSolution {
    /// Primal variables.
    pub x: DVector<f64>,
    /// Slacks `s = h − Gx ∈ K`.
    pub s: DVector<f64>,
    /// Duals `z ∈ K`.
    pub z: DVector<f64>,
    /// Interior-point iterations used.
    pub iters: usize,
    /// Final duality gap `sᵀz`.
    pub gap: f64,
}

/// Iterations and final gap of a solve by [`solve_conic_in`] (the point is
/// in the workspace: [`SolverWorkspace::x`], `s`, `z`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveStats {
    /// Interior-point iterations used.
    pub iters: usize,
    /// Final duality gap `sᵀz`.
    pub gap: f64,
}

/// Buffers of the interior-point method, sized on the first solve and
/// reused by every later one: a solve of a problem no larger than an
/// earlier one allocates nothing (faer's scratch, Pinocchio's `Data`).
#[derive(Clone, Debug, Default)]
pub struct SolverWorkspace {
    x: Vec<f64>,
    s: Vec<f64>,
    z: Vec<f64>,
    e: Vec<f64>,
    rx: Vec<f64>,
    rz: Vec<f64>,
    bx: Vec<f64>,
    bz: Vec<f64>,
    lambda: Vec<f64>,
    ll: Vec<f64>,
    rc: Vec<f64>,
    dx: Vec<f64>,
    ds: Vec<f64>,
    dz: Vec<f64>,
    dx_a: Vec<f64>,
    ds_a: Vec<f64>,
    dz_a: Vec<f64>,
    /// `W⁻¹G`, column-major m × n.
    wig: Vec<f64>,
    /// Cholesky factor of `GᵀW⁻²G` (or of `GᵀG` for the initial point).
    chol: Vec<f64>,
    scaling: Scaling,
    scratch: Scratch,
}

#[derive(Clone, Debug, Default)]
struct Scratch {
    bc: Vec<f64>,
    ex: Vec<f64>,
    ez: Vec<f64>,
    ec: Vec<f64>,
    cx: Vec<f64>,
    cs: Vec<f64>,
    cz: Vec<f64>,
    t1: Vec<f64>,
    t2: Vec<f64>,
}

fn size(v: &mut Vec<f64>, len: usize) {
    v.clear();
    v.resize(len, 0.0);
}

impl SolverWorkspace {
    /// An empty workspace (allocates on first use).
    pub fn new() -> Self {
        Self::default()
    }

    fn resize(&mut self, m: usize, n: usize) {
        for v in [&mut self.x, &mut self.rx, &mut self.bx, &mut self.dx, &mut self.dx_a] {
            size(v, n);
        }
        for v in [
            &mut self.s,
            &mut self.z,
            &mut self.e,
            &mut self.rz,
            &mut self.bz,
            &mut self.lambda,
            &mut self.ll,
            &mut self.rc,
            &mut self.ds,
            &mut self.dz,
            &mut self.ds_a,
            &mut self.dz_a,
        ] {
            size(v, m);
        }
        size(&mut self.wig, m * n);
        size(&mut self.chol, n * n);
        let sc = &mut self.scratch;
        for v in [&mut sc.ex, &mut sc.cx] {
            size(v, n);
        }
        for v in [&mut sc.bc, &mut sc.ez, &mut sc.ec, &mut sc.cs, &mut sc.cz, &mut sc.t1, &mut sc.t2] {
            size(v, m);
        }
    }

    /// Primal variables of the last solve.
    pub fn x(&self) -> &[f64] {
        &self.x
    }
    /// Slacks of the last solve.
    pub fn s(&self) -> &[f64] {
        &self.s
    }
    /// Duals of the last solve.
    pub fn z(&self) -> &[f64] {
        &self.z
    }
}

/// Solves `min cᵀx s.t. Gx + s = h, s ∈ K` (see the module docs).
///
/// ```
/// use dualsim::collision::conic::solve::{solve_conic, ConeLayout, ConicParams};
/// use nalgebra::{DMatrix, DVector};
/// // min x s.t. x ≥ 1  (written −x + s = −1, s ≥ 0)
/// let g = DMatrix::from_element(1, 1, -1.0);
/// let h = DVector::from_element(1, -1.0);
/// let c = DVector::from_element(1, 1.0);
/// let layout = ConeLayout { n_orthant: 1, soc: vec![] };
/// let sol = solve_conic(&c, &g, &h, &layout, &ConicParams::default()).unwrap();
/// assert!((sol.x[0] - 1.0).abs() < 1e-9);
/// ```
pub fn solve_conic(
    c: &DVector<f64>,
    G: &DMatrix<f64>,
    h: &DVector<f64>,
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<ConicSolution, ProximityError> {
    assert_eq!(G.nrows(), layout.dim(), "G has one row per cone coordinate");
    assert_eq!(G.ncols(), c.len(), "G has one column per variable");
    let mut ws = SolverWorkspace::new();
    let st = solve_conic_in(&mut ws, c.as_slice(), G.as_slice(), h.as_slice(), layout, params)?;
    Ok(ConicSolution {
        x: DVector::from_column_slice(&ws.x),
        s: DVector::from_column_slice(&ws.s),
        z: DVector::from_column_slice(&ws.z),
        iters: st.iters,
        gap: st.gap,
    })
}

/// [`solve_conic`] in a reusable workspace, `G` column-major (m × n, m =
/// `layout.dim()`, n = `c.len()`): no allocation once the workspace has
/// grown to the problem size. The solution is read from the workspace.
///
/// ```
/// use dualsim::collision::conic::solve::{solve_conic_in, ConeLayout, ConicParams, SolverWorkspace};
/// let layout = ConeLayout { n_orthant: 1, soc: vec![] };
/// let mut ws = SolverWorkspace::new();
/// solve_conic_in(&mut ws, &[1.0], &[-1.0], &[-1.0], &layout, &ConicParams::default()).unwrap();
/// assert!((ws.x()[0] - 1.0).abs() < 1e-9);
/// ```
pub fn solve_conic_in(
    ws: &mut SolverWorkspace,
    c: &[f64],
    G: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    match solve_once(ws, c, G, h, layout, params) {
        Ok(st) => Ok(st),
        // A numerical breakdown (rare: an apex or a nearly degenerate
        // contact) is retried once with a more conservative fraction to the
        // boundary.
        Err(ProximityError::NoConvergence { .. }) if params.tau > 0.9 => {
            let retry = ConicParams { tau: 0.9, max_iters: params.max_iters * 2, ..*params };
            solve_once(ws, c, G, h, layout, &retry)
        }
        Err(e) => Err(e),
    }
}

/// The Newton system of one iteration: G, the scaling and the Cholesky
/// factor of `GᵀW⁻²G`.
struct Kkt<'a> {
    G: &'a [f64],
    m: usize,
    n: usize,
    layout: &'a ConeLayout,
    W: &'a Scaling,
    wig: &'a [f64],
    chol: &'a [f64],
}

impl Kkt<'_> {
    /// Solves  GᵀΔz = bx,  GΔx + Δs = bz,  WΔz + W⁻¹Δs = bc  through the
    /// reduced system H Δx = bx + GᵀW⁻¹(W⁻¹bz − bc).
    #[allow(clippy::too_many_arguments)]
    fn reduced(
        &self,
        bx: &[f64],
        bz: &[f64],
        bc: &[f64],
        dx: &mut [f64],
        ds: &mut [f64],
        dz: &mut [f64],
        t1: &mut [f64],
        t2: &mut [f64],
    ) {
        let (m, layout, W) = (self.m, self.layout, self.W);
        // t = W⁻¹bz − bc
        W.apply_into(layout, bz, true, t1);
        for (t, b) in t1.iter_mut().zip(bc) {
            *t -= b;
        }
        // Δx = H⁻¹ (bx + (W⁻¹G)ᵀ t)
        for j in 0..self.n {
            dx[j] = bx[j] + dot(&self.wig[j * m..(j + 1) * m], t1);
        }
        cholesky_solve(self.chol, self.n, dx);
        // Δz = W⁻¹(W⁻¹(GΔx − bz) + bc)
        gemv(self.G, m, dx, t1);
        for (t, b) in t1.iter_mut().zip(bz) {
            *t -= b;
        }
        W.apply_into(layout, t1, true, t2);
        for (t, b) in t2.iter_mut().zip(bc) {
            *t += b;
        }
        W.apply_into(layout, t2, true, dz);
        // Δs = W(bc − WΔz)
        W.apply_into(layout, dz, false, t1);
        for (t, b) in t1.iter_mut().zip(bc) {
            *t = b - *t;
        }
        W.apply_into(layout, t1, false, ds);
    }

    /// The Newton direction for the complementarity right-hand side
    /// `λ ∘ (WΔz + W⁻¹Δs) = rc`, with `rounds` rounds of iterative
    /// refinement on the unreduced system (the reduced matrix is
    /// ill-conditioned near the solution).
    #[allow(clippy::too_many_arguments)]
    fn newton(
        &self,
        bx: &[f64],
        bz: &[f64],
        lambda: &[f64],
        rc: &[f64],
        rounds: usize,
        dx: &mut [f64],
        ds: &mut [f64],
        dz: &mut [f64],
        sc: &mut Scratch,
    ) {
        let (m, layout, W) = (self.m, self.layout, self.W);
        layout.jordan_div_into(lambda, rc, &mut sc.bc);
        self.reduced(bx, bz, &sc.bc, dx, ds, dz, &mut sc.t1, &mut sc.t2);
        if rounds == 0 {
            return;
        }
        let scale = amax(bx).max(amax(bz)).max(amax(&sc.bc)).max(1.0);
        for _ in 0..rounds {
            gemtv(self.G, m, dz, &mut sc.ex);
            for (e, b) in sc.ex.iter_mut().zip(bx) {
                *e = b - *e;
            }
            gemv(self.G, m, dx, &mut sc.ez);
            for i in 0..m {
                sc.ez[i] = (bz[i] - sc.ez[i]) - ds[i];
            }
            W.apply_into(layout, dz, false, &mut sc.t1);
            W.apply_into(layout, ds, true, &mut sc.t2);
            for i in 0..m {
                sc.ec[i] = (sc.bc[i] - sc.t1[i]) - sc.t2[i];
            }
            // skip when the direction already solves the system to
            // round-off (early, well-conditioned iterations)
            if amax(&sc.ex).max(amax(&sc.ez)).max(amax(&sc.ec)) <= 1e-15 * scale {
                break;
            }
            self.reduced(&sc.ex, &sc.ez, &sc.ec, &mut sc.cx, &mut sc.cs, &mut sc.cz, &mut sc.t1, &mut sc.t2);
            for (d, c) in dx.iter_mut().zip(&sc.cx) {
                *d += c;
            }
            for (d, c) in ds.iter_mut().zip(&sc.cs) {
                *d += c;
            }
            for (d, c) in dz.iter_mut().zip(&sc.cz) {
                *d += c;
            }
        }
    }
}

fn solve_once(
    ws: &mut SolverWorkspace,
    c: &[f64],
    G: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    let m = layout.dim();
    let n = c.len();
    assert_eq!(h.len(), m, "h has one entry per cone coordinate");
    assert_eq!(G.len(), m * n, "G is m × n with one row per cone coordinate, one column per variable");
    ws.resize(m, n);
    let SolverWorkspace {
        x,
        s,
        z,
        e,
        rx,
        rz,
        bx,
        bz,
        lambda,
        ll,
        rc,
        dx,
        ds,
        dz,
        dx_a,
        ds_a,
        dz_a,
        wig,
        chol,
        scaling,
        scratch: sc,
    } = ws;
    let nu = layout.degree() as f64;
    layout.identity_into(e);
    let no_conv = |iters: usize, residual: f64| ProximityError::NoConvergence { iters, residual };

    // --- initial point
    gram_lower(G, m, n, chol);
    if !cholesky_in_place(chol, n) {
        return Err(no_conv(0, f64::INFINITY));
    }
    gemtv(G, m, h, x);
    cholesky_solve(chol, n, x);
    gemv(G, m, x, s);
    for (si, hi) in s.iter_mut().zip(h) {
        *si = hi - *si;
    }
    for (d, cj) in dx.iter_mut().zip(c) {
        *d = -cj;
    }
    cholesky_solve(chol, n, dx);
    gemv(G, m, dx, z);
    for u in [&mut *s, &mut *z] {
        let a = layout.interior_shift_of(u);
        if a >= -1e-8 {
            let k = 1.0 + a.max(0.0);
            for (ui, ei) in u.iter_mut().zip(e.iter()) {
                *ui += ei * k;
            }
        }
    }

    let verbose = cfg!(debug_assertions) && std::env::var_os("CONIC_DEBUG").is_some();
    let debug = |what: &str, iter: usize| {
        if verbose {
            eprintln!("breakdown ({what}) at iteration {iter}");
        }
    };
    let mut residual = f64::INFINITY;
    // Some((μ, steps done)) once the tolerances are met: centering steps.
    let mut centering: Option<(f64, usize)> = None;
    // ‖Δx‖∞ of the last centering step
    let mut last_dx = f64::INFINITY;
    for iter in 0..params.max_iters + params.centering {
        // rx = c + Gᵀz, rz = s + Gx − h
        gemtv(G, m, z, rx);
        for (r, cj) in rx.iter_mut().zip(c) {
            *r += cj;
        }
        gemv(G, m, x, rz);
        for i in 0..m {
            rz[i] = (s[i] + rz[i]) - h[i];
        }
        let gap = dot(s, z);
        residual = amax(rx).max(amax(rz));
        if !(gap.is_finite() && residual.is_finite()) {
            return Err(no_conv(iter, residual));
        }
        let mu = gap / nu;
        if let Some((mu_c, done)) = centering {
            layout.jordan_into(s, z, &mut sc.t1);
            let off = sc.t1.iter().zip(e.iter()).fold(0.0, |acc: f64, (v, ei)| acc.max((v - ei * mu_c).abs()));
            let centred = residual <= params.tol_residual && (off <= 1e-6 * mu_c || last_dx <= 1e-14);
            if centred || done >= params.centering {
                if residual <= 1e3 * params.tol_residual {
                    return Ok(SolveStats { iters: iter, gap });
                }
                return Err(no_conv(iter, residual));
            }
        } else if iter >= params.max_iters {
            return Err(no_conv(iter, residual));
        } else if mu <= params.tol_gap && residual <= 1e3 * params.tol_residual {
            if params.centering == 0 && residual <= params.tol_residual {
                return Ok(SolveStats { iters: iter, gap });
            }
            centering = Some((params.tol_gap, 0));
        }
        // On a numerical breakdown (the scaled iterate leaves the cone by
        // round-off, the reduced matrix is no longer positive definite) the
        // current iterate is accepted when it is within 1e3 of the
        // tolerances.
        let near = mu <= 1e3 * params.tol_gap && residual <= 1e3 * params.tol_residual;
        let fail = |iters: usize, residual: f64| {
            if near {
                Ok(SolveStats { iters, gap })
            } else {
                Err(ProximityError::NoConvergence { iters, residual })
            }
        };

        if !scaling.update(layout, s, z) {
            debug("scaling", iter);
            return fail(iter, residual);
        }
        scaling.apply_into(layout, z, false, lambda);
        wig.copy_from_slice(G);
        scaling.apply_inv_cols(layout, m, wig);
        gram_lower(wig, m, n, chol);
        if !cholesky_in_place(chol, n) {
            debug("cholesky", iter);
            return fail(iter, residual);
        }
        let kkt = Kkt { G, m, n, layout, W: scaling, wig, chol };
        for (b, r) in bx.iter_mut().zip(rx.iter()) {
            *b = -r;
        }
        for (b, r) in bz.iter_mut().zip(rz.iter()) {
            *b = -r;
        }

        layout.jordan_into(lambda, lambda, ll);
        let (sigma, t_a) = if let Some((mu_c, done)) = centering {
            // pure centering step towards s ∘ z = μ_c e
            centering = Some((mu_c, done + 1));
            for i in 0..m {
                rc[i] = e[i] * mu_c - ll[i];
            }
            kkt.newton(bx, bz, lambda, rc, params.refinement, dx, ds, dz, sc);
            last_dx = amax(dx);
            (1.0, 0.0)
        } else {
            // predictor
            // (the predictor only sets σ and the second-order term: no refinement)
            for i in 0..m {
                rc[i] = -ll[i];
            }
            kkt.newton(bx, bz, lambda, rc, 0, dx_a, ds_a, dz_a, sc);
            let t_a = layout.max_step_of(s, ds_a).min(layout.max_step_of(z, dz_a)).min(1.0);
            let mut rho = 0.0;
            for i in 0..m {
                rho += (s[i] + ds_a[i] * t_a) * (z[i] + dz_a[i] * t_a);
            }
            let rho = rho / gap;
            let sigma = rho.clamp(0.0, 1.0).powi(3);

            // corrector: rc = −λ∘λ − (W⁻¹Δs_a) ∘ (WΔz_a) + σμe
            scaling.apply_into(layout, ds_a, true, &mut sc.cs);
            scaling.apply_into(layout, dz_a, false, &mut sc.cz);
            layout.jordan_into(&sc.cs, &sc.cz, rc);
            for i in 0..m {
                rc[i] = (-ll[i] - rc[i]) + e[i] * (sigma * mu);
            }
            kkt.newton(bx, bz, lambda, rc, params.refinement, dx, ds, dz, sc);
            (sigma, t_a)
        };
        let t_max = layout.max_step_of(s, ds).min(layout.max_step_of(z, dz));
        let t = (params.tau * t_max).min(1.0);
        if verbose {
            eprintln!("it {iter} gap {gap:.3e} res {residual:.3e} sigma {sigma:.2e} t_a {t_a:.3e} t {t:.3e} x {x:?}");
        }
        if !(t.is_finite() && t > 0.0) || dx.iter().chain(ds.iter()).chain(dz.iter()).any(|v| !v.is_finite()) {
            debug("step", iter);
            return fail(iter, residual);
        }
        for (v, d) in x.iter_mut().zip(dx.iter()) {
            *v += d * t;
        }
        for (v, d) in s.iter_mut().zip(ds.iter()) {
            *v += d * t;
        }
        for (v, d) in z.iter_mut().zip(dz.iter()) {
            *v += d * t;
        }
    }
    Err(no_conv(params.max_iters, residual))
}
