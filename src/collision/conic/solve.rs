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
//!   (s, z); once μ < 1e-2 and the affine step reaches ≥ 0.99 of the way
//!   (Newton's region of quadratic convergence), τ = 0.99999, so that each
//!   step cuts μ by up to 1e5 instead of 1e2 (a cold solve of two boxes,
//!   spheres or polytopes then takes 7–8 iterations instead of 10). With
//!   centering steps to come, the corrector's target `σμ` is floored at
//!   `tol_gap` and the centering starts at `μ ≤ 10 tol_gap`: the last
//!   corrector lands next to the central point instead of overshooting
//!   below it. Neither changes the returned point (the central point of
//!   `μ = tol_gap`, to the centering tolerance).
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
    /// Fraction to the boundary (DCOL: 0.99; Dojo/Silico use 0.95). A
    /// value in (0.9, 0.99999) is raised to 0.99999 near the solution (see
    /// the module docs); 0.9 (the retry after a breakdown) is kept
    /// throughout.
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
    /// The centering steps stop once `‖s ∘ z − μe‖∞ ≤ centering_tolerance · μ`
    /// (or a step changes x by less than 1e-14). Default 1e-6; the `ipm`
    /// backend's conic contacts use 1e-10, so that the witness point and
    /// normal (from the duals) are smooth to round-off in the poses and its
    /// step converges to its 1e-8 tolerance when several parts rest on one
    /// face.
    pub centering_tolerance: f64,
    /// Rounds of iterative refinement of each corrector / centering
    /// direction (CVXOPT refines too). 2 keeps the residuals at round-off
    /// near the solution; with 1, about 1 solve in 5000 of the random test
    /// stalls (padded polygons). Corrector directions are refined once
    /// `μ ≤ 1e-6` (earlier the system is well conditioned and a round
    /// changes the direction by round-off only); centering directions
    /// always. Default 2.
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
            centering_tolerance: 1e-6,
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

// --- small dense kernels (sizes are tiny: n ≤ ~10 columns, m ≤ ~40 rows).
// The number of columns is a type (`Fixed<N>`: loops unrolled, no bounds
// checks; `Dynamic`: any size), so the interior-point loop below is written
// once and compiled for the common sizes. Matrices are row-major m × n.

/// Number of columns n of the dense kernels.
trait Cols: Copy {
    fn n(self) -> usize;
}

/// n known at compile time.
#[derive(Clone, Copy)]
struct Fixed<const N: usize>;

impl<const N: usize> Cols for Fixed<N> {
    #[inline(always)]
    fn n(self) -> usize {
        N
    }
}

/// n known at run time.
#[derive(Clone, Copy)]
struct Dynamic(usize);

impl Cols for Dynamic {
    #[inline(always)]
    fn n(self) -> usize {
        self.0
    }
}

/// Runs `$body` with `$D` bound to the block size `$d` as a [`Cols`]
/// (`Fixed<3>`, `Fixed<4>` or `Dynamic`).
macro_rules! with_block_size {
    ($d:expr, $D:ident => $body:block) => {
        match $d {
            3 => {
                let $D = Fixed::<3>;
                $body
            }
            4 => {
                let $D = Fixed::<4>;
                $body
            }
            d => {
                let $D = Dynamic(d);
                $body
            }
        }
    };
}

#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |acc, (x, y)| acc + x * y)
}

#[inline(always)]
fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `max(acc, v)` in one instruction (a NaN `v` is skipped, as by
/// `f64::max`).
#[inline(always)]
fn fmax(acc: f64, v: f64) -> f64 {
    if v > acc {
        v
    } else {
        acc
    }
}

/// `min(acc, v)` in one instruction (a NaN `v` is skipped).
#[inline(always)]
fn fmin(acc: f64, v: f64) -> f64 {
    if v < acc {
        v
    } else {
        acc
    }
}

#[inline(always)]
fn amax(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |acc, v| fmax(acc, v.abs()))
}

/// `a · b` over the n columns.
#[inline(always)]
fn dotn<C: Cols>(c: C, a: &[f64], b: &[f64]) -> f64 {
    let n = c.n();
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = 0.0;
    for j in 0..n {
        acc += a[j] * b[j];
    }
    acc
}

/// `y = G x`, G row-major (y.len() rows).
#[inline(always)]
fn gemv<C: Cols>(c: C, G: &[f64], x: &[f64], y: &mut [f64]) {
    for (yi, row) in y.iter_mut().zip(G.chunks_exact(c.n())) {
        *yi = dotn(c, row, x);
    }
}

/// `y = Gᵀ z`, G row-major (z.len() rows).
#[inline(always)]
fn gemtv<C: Cols>(c: C, G: &[f64], z: &[f64], y: &mut [f64]) {
    let n = c.n();
    let y = &mut y[..n];
    // accumulate on the stack (registers) for small n
    let mut acc_buf = [0.0_f64; 8];
    let acc = if n <= 8 { &mut acc_buf[..n] } else { &mut *y };
    acc.fill(0.0);
    for (row, zi) in G.chunks_exact(n).zip(z) {
        let row = &row[..n];
        for j in 0..n {
            acc[j] += row[j] * zi;
        }
    }
    if n <= 8 {
        y.copy_from_slice(&acc_buf[..n]);
    }
}

/// `ym = G x` and `yn = Gᵀ z` in one pass over G (row-major, ym.len() rows).
#[inline(always)]
fn gemv_gemtv<C: Cols>(c: C, G: &[f64], x: &[f64], z: &[f64], ym: &mut [f64], yn: &mut [f64]) {
    let n = c.n();
    let yn = &mut yn[..n];
    let mut acc_buf = [0.0_f64; 8];
    let acc = if n <= 8 { &mut acc_buf[..n] } else { &mut *yn };
    acc.fill(0.0);
    for ((row, yi), zi) in G.chunks_exact(n).zip(ym.iter_mut()).zip(z) {
        let row = &row[..n];
        *yi = dotn(c, row, x);
        for j in 0..n {
            acc[j] += row[j] * zi;
        }
    }
    if n <= 8 {
        yn.copy_from_slice(&acc_buf[..n]);
    }
}

/// `H += k a aᵀ` on the lower triangle (column-major n × n).
#[inline(always)]
fn add_outer<C: Cols>(c: C, a: &[f64], k: f64, H: &mut [f64]) {
    let n = c.n();
    let (a, H) = (&a[..n], &mut H[..n * n]);
    for j in 0..n {
        let aj = a[j] * k;
        for i in j..n {
            H[j * n + i] += a[i] * aj;
        }
    }
}

/// In-place Cholesky `H = LLᵀ` of the lower triangle (column-major n × n),
/// as nalgebra's: `false` when a pivot is not positive (or NaN).
#[inline(always)]
fn cholesky_in_place<C: Cols>(c: C, H: &mut [f64]) -> bool {
    let n = c.n();
    let H = &mut H[..n * n];
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
        let r = 1.0 / d;
        for i in j + 1..n {
            H[j * n + i] *= r;
        }
    }
    true
}

/// Solves `LLᵀ x = b` in place (L from [`cholesky_in_place`]).
#[inline(always)]
fn cholesky_solve<C: Cols>(c: C, L: &[f64], b: &mut [f64]) {
    let n = c.n();
    let (L, b) = (&L[..n * n], &mut b[..n]);
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
    w: Vec<f64>,
    /// Orthant: `1/w_i`.
    wi: Vec<f64>,
    /// Per SOC: η.
    eta: Vec<f64>,
    /// Per SOC: 1/η.
    eta_inv: Vec<f64>,
    /// Per SOC: `1/(1 + w̄₀)`.
    q: Vec<f64>,
    /// Per SOC: w̄ (the cones' rows, concatenated).
    wb: Vec<f64>,
}

/// Resizes a buffer (no allocation once it has grown to `len`).
fn size(v: &mut Vec<f64>, len: usize) {
    v.resize(len, 0.0);
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
        let no = layout.n_orthant;
        let ns = layout.soc.len();
        let m = layout.dim();
        size(&mut self.w, no);
        size(&mut self.wi, no);
        size(&mut self.eta, ns);
        size(&mut self.eta_inv, ns);
        size(&mut self.q, ns);
        size(&mut self.wb, m - no);
        // every w finite and positive ⇔ every w and 1/w finite (w = √· is
        // NaN or ≥ 0) ⇔ their sum is finite
        let mut sum = 0.0;
        for (((w, wi), si), zi) in self
            .w
            .iter_mut()
            .zip(self.wi.iter_mut())
            .zip(&s[..no])
            .zip(&z[..no])
        {
            *w = (si / zi).sqrt();
            *wi = 1.0 / *w;
            sum += *w + *wi;
        }
        if !sum.is_finite() {
            return false;
        }
        for (b, (st, d)) in layout.soc_blocks().enumerate() {
            let ss = &s[st..st + d];
            let zz = &z[st..st + d];
            // (u₀ − ‖u₁‖)(u₀ + ‖u₁‖): less cancellation than u₀² − ‖u₁‖²
            let (sn1, zn1) = (norm(&ss[1..]), norm(&zz[1..]));
            let sjs = (ss[0] - sn1) * (ss[0] + sn1);
            let zjz = (zz[0] - zn1) * (zz[0] + zn1);
            if !(sjs > 0.0 && zjz > 0.0) {
                return false;
            }
            let (sn_inv, zn_inv) = (1.0 / sjs.sqrt(), 1.0 / zjz.sqrt());
            // s̄ = s/‖s‖_J, z̄ = z/‖z‖_J, γ = √((1 + z̄ᵀs̄)/2)
            let zbsb = dot(ss, zz) * (sn_inv * zn_inv);
            let gamma = ((1.0 + zbsb) * 0.5).sqrt();
            let eta = (sjs / zjz).sqrt().sqrt();
            if !(eta.is_finite() && gamma.is_finite()) {
                return false;
            }
            let g2 = 1.0 / (2.0 * gamma);
            let wb = &mut self.wb[st - no..st - no + d];
            wb[0] = (ss[0] * sn_inv + zz[0] * zn_inv) * g2;
            for j in 1..d {
                wb[j] = (ss[j] * sn_inv - zz[j] * zn_inv) * g2;
            }
            self.eta[b] = eta;
            self.eta_inv[b] = 1.0 / eta;
            self.q[b] = 1.0 / (1.0 + wb[0]);
        }
        true
    }

    fn view<'a>(&'a self, layout: &'a ConeLayout) -> ScalingView<'a> {
        let no = layout.n_orthant;
        ScalingView {
            no,
            soc: &layout.soc,
            w: &self.w[..no],
            wi: &self.wi[..no],
            eta: &self.eta,
            eta_inv: &self.eta_inv,
            q: &self.q,
            wb: &self.wb,
        }
    }

    /// `W v` (inverse = false) or `W⁻¹ v` (inverse = true); W is symmetric.
    pub fn apply(&self, layout: &ConeLayout, v: &DVector<f64>, inverse: bool) -> DVector<f64> {
        let mut out = DVector::zeros(v.len());
        self.apply_into(layout, v.as_slice(), inverse, out.as_mut_slice());
        out
    }

    /// `out = W v` or `W⁻¹ v` (slices of length m).
    pub fn apply_into(&self, layout: &ConeLayout, v: &[f64], inverse: bool, out: &mut [f64]) {
        let w = self.view(layout);
        if inverse {
            w.apply_inv(v, out)
        } else {
            w.apply_w(v, out)
        }
    }

    /// `W⁻¹ A` column by column (in place on a copy of A).
    pub fn apply_inv_mat(&self, layout: &ConeLayout, A: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = A.clone();
        let w = self.view(layout);
        for j in 0..A.ncols() {
            w.apply_inv(A.column(j).as_slice(), out.column_mut(j).as_mut_slice());
        }
        out
    }
}

/// The scaling as slices (what the hot loops read).
#[derive(Clone, Copy)]
struct ScalingView<'a> {
    no: usize,
    soc: &'a [usize],
    w: &'a [f64],
    wi: &'a [f64],
    eta: &'a [f64],
    eta_inv: &'a [f64],
    q: &'a [f64],
    wb: &'a [f64],
}

impl ScalingView<'_> {
    /// `out = W v`.
    #[inline(always)]
    fn apply_w(&self, v: &[f64], out: &mut [f64]) {
        for ((o, vi), w) in out[..self.no].iter_mut().zip(&v[..self.no]).zip(self.w) {
            *o = vi * w;
        }
        self.apply_soc::<false>(v, out);
    }

    /// `out = W⁻¹ v`.
    #[inline(always)]
    fn apply_inv(&self, v: &[f64], out: &mut [f64]) {
        for ((o, vi), w) in out[..self.no].iter_mut().zip(&v[..self.no]).zip(self.wi) {
            *o = vi * w;
        }
        self.apply_soc::<true>(v, out);
    }

    /// The second-order-cone rows of `out = W v` (`INV`: `W⁻¹ v`); the
    /// orthant rows of `out` are left as they are.
    #[inline(always)]
    fn apply_soc<const INV: bool>(&self, v: &[f64], out: &mut [f64]) {
        let mut st = self.no;
        for (b, &d) in self.soc.iter().enumerate() {
            let wb = &self.wb[st - self.no..st - self.no + d];
            let (vv, oo) = (&v[st..st + d], &mut out[st..st + d]);
            st += d;
            let w1v1 = dot(&wb[1..], &vv[1..]);
            let (k, c) = if INV {
                oo[0] = self.eta_inv[b] * (wb[0] * vv[0] - w1v1);
                (self.eta_inv[b], -vv[0] + w1v1 * self.q[b])
            } else {
                oo[0] = self.eta[b] * (wb[0] * vv[0] + w1v1);
                (self.eta[b], vv[0] + w1v1 * self.q[b])
            };
            for j in 1..d {
                oo[j] = k * (vv[j] + c * wb[j]);
            }
        }
    }

    /// Lower triangle of `H = GᵀW⁻²G` (G row-major m × n; `wig` receives
    /// the second-order-cone rows of `W⁻¹G`).
    #[inline(always)]
    fn normal_matrix<C: Cols>(&self, c: C, G: &[f64], wig: &mut [f64], H: &mut [f64]) {
        let n = c.n();
        H[..n * n].fill(0.0);
        // orthant rows: W⁻² = diag(1/w²) (accumulated on the stack, in
        // registers, for small n)
        if n <= 6 {
            let mut acc = [0.0_f64; 36];
            for (row, wi) in G.chunks_exact(n).zip(self.wi) {
                add_outer(c, row, wi * wi, &mut acc);
            }
            H[..n * n].copy_from_slice(&acc[..n * n]);
        } else {
            for (row, wi) in G.chunks_exact(n).zip(self.wi) {
                add_outer(c, row, wi * wi, H);
            }
        }
        // second-order cones: W⁻¹ applied to each column of the block
        for (st, w) in self.socs() {
            with_block_size!(w.wb.len(), D => {
                let d = D.n();
                let (gb, blk) = (&G[st * n..(st + d) * n], &mut wig[st * n..(st + d) * n]);
                let wb = &w.wb[..d];
                for j in 0..n {
                    let v0 = gb[j];
                    let mut w1v1 = 0.0;
                    for r in 1..d {
                        w1v1 += wb[r] * gb[r * n + j];
                    }
                    blk[j] = w.eta_inv * (wb[0] * v0 - w1v1);
                    let cc = -v0 + w1v1 * w.q;
                    for r in 1..d {
                        blk[r * n + j] = w.eta_inv * (gb[r * n + j] + cc * wb[r]);
                    }
                }
                for row in blk.chunks_exact(n) {
                    add_outer(c, row, 1.0, H);
                }
            })
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
    /// n-vectors: x, bx, Δx, Δx_a, ex, cx.
    vn: [Vec<f64>; 6],
    /// m-vectors: s, z, bz, λ, λ∘λ, Δs, Δz, Δs_a, Δz_a, bc, u, ez, ec, t1,
    /// t2.
    vm: [Vec<f64>; 15],
    /// `G`, row-major m × n.
    g: Vec<f64>,
    /// Second-order-cone rows of `W⁻¹G`, row-major m × n.
    wig: Vec<f64>,
    /// Cholesky factor of `GᵀW⁻²G` (or of `GᵀG` for the initial point).
    chol: Vec<f64>,
    scaling: Scaling,
}

impl SolverWorkspace {
    /// An empty workspace (allocates on first use).
    pub fn new() -> Self {
        Self::default()
    }

    fn resize(&mut self, m: usize, n: usize) {
        for v in &mut self.vn {
            size(v, n);
        }
        for v in &mut self.vm {
            size(v, m);
        }
        size(&mut self.g, m * n);
        size(&mut self.wig, m * n);
        size(&mut self.chol, n * n);
    }

    /// Primal variables of the last solve.
    pub fn x(&self) -> &[f64] {
        &self.vn[0]
    }
    /// Slacks of the last solve.
    pub fn s(&self) -> &[f64] {
        &self.vm[0]
    }
    /// Duals of the last solve.
    pub fn z(&self) -> &[f64] {
        &self.vm[1]
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
    let st = solve_conic_in(
        &mut ws,
        c.as_slice(),
        G.as_slice(),
        h.as_slice(),
        layout,
        params,
    )?;
    Ok(ConicSolution {
        x: DVector::from_column_slice(ws.x()),
        s: DVector::from_column_slice(ws.s()),
        z: DVector::from_column_slice(ws.z()),
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
    let m = layout.dim();
    let n = c.len();
    assert_eq!(h.len(), m, "h has one entry per cone coordinate");
    assert_eq!(
        G.len(),
        m * n,
        "G is m × n with one row per cone coordinate, one column per variable"
    );
    ws.resize(m, n);
    // row-major copy of G
    for (i, row) in ws.g.chunks_exact_mut(n).enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = G[j * m + i];
        }
    }
    match n {
        4 => solve_dispatch(Fixed::<4>, ws, c, h, layout, params),
        5 => solve_dispatch(Fixed::<5>, ws, c, h, layout, params),
        6 => solve_dispatch(Fixed::<6>, ws, c, h, layout, params),
        _ => solve_dispatch(Dynamic(n), ws, c, h, layout, params),
    }
}

/// Runs the solve compiled for AVX2 when the processor has it, else for the
/// baseline target. The arithmetic is the same operation for operation (no
/// FMA contraction, no reassociation): only the registers are wider, so
/// the n-wide row operations on G take one instruction instead of two.
fn solve_dispatch<C: Cols>(
    cols: C,
    ws: &mut SolverWorkspace,
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked just above).
            return unsafe { solve_retry_avx2(cols, ws, c, h, layout, params) };
        }
    }
    solve_retry(cols, ws, c, h, layout, params)
}

/// [`solve_retry`] compiled with AVX2 enabled (everything below it is
/// `#[inline(always)]`, so it is compiled for AVX2 too).
///
/// # Safety
/// The processor must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn solve_retry_avx2<C: Cols>(
    cols: C,
    ws: &mut SolverWorkspace,
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    solve_retry(cols, ws, c, h, layout, params)
}

#[inline(always)]
fn solve_retry<C: Cols>(
    cols: C,
    ws: &mut SolverWorkspace,
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    match solve_once(cols, ws, c, h, layout, params) {
        Ok(st) => Ok(st),
        // A numerical breakdown (rare: an apex or a nearly degenerate
        // contact) is retried once with a more conservative fraction to the
        // boundary.
        Err(ProximityError::NoConvergence { .. }) if params.tau > 0.9 => {
            let retry = ConicParams {
                tau: 0.9,
                max_iters: params.max_iters * 2,
                ..*params
            };
            solve_once(cols, ws, c, h, layout, &retry)
        }
        Err(e) => Err(e),
    }
}

// --- the iteration, in fused passes: every pass visits the orthant rows
// (W diagonal, formulas per entry) and then each second-order cone (formulas
// per block, compiled for the block sizes 3 and 4 of the primitives), so
// that one iteration reads the m-vectors about a dozen times.

/// `out = u ∘ v` on one second-order cone.
#[inline(always)]
fn soc_jordan<D: Cols>(dim: D, u: &[f64], v: &[f64], out: &mut [f64]) {
    let d = dim.n();
    let (u, v, out) = (&u[..d], &v[..d], &mut out[..d]);
    out[0] = dotn(dim, u, v);
    for j in 1..d {
        out[j] = u[0] * v[j] + v[0] * u[j];
    }
}

/// `x` with `u ∘ x = r` on one second-order cone (u interior).
#[inline(always)]
fn soc_jordan_div<D: Cols>(dim: D, u: &[f64], r: &[f64], x: &mut [f64]) {
    let d = dim.n();
    let (u, r, x) = (&u[..d], &r[..d], &mut x[..d]);
    let u0 = u[0];
    let mut u1r1 = 0.0;
    let mut u1u1 = 0.0;
    for j in 1..d {
        u1r1 += u[j] * r[j];
        u1u1 += u[j] * u[j];
    }
    let det = u0 * u0 - u1u1;
    let x0 = (u0 * r[0] - u1r1) / det;
    x[0] = x0;
    let u0_inv = 1.0 / u0;
    for j in 1..d {
        x[j] = (r[j] - x0 * u[j]) * u0_inv;
    }
}

/// Largest step `t` with `u + tΔ` in one second-order cone (u interior).
#[inline(always)]
fn soc_max_step<D: Cols>(dim: D, u: &[f64], du: &[f64]) -> f64 {
    let d = dim.n();
    let (u, du) = (&u[..d], &du[..d]);
    // f(t) = (u₀ + tΔ₀)² − ‖u₁ + tΔ₁‖² = a t² + b t + c, c > 0.
    let (mut a, mut b, mut c) = (du[0] * du[0], u[0] * du[0], u[0] * u[0]);
    for j in 1..d {
        a -= du[j] * du[j];
        b -= u[j] * du[j];
        c -= u[j] * u[j];
    }
    b *= 2.0;
    let mut t = smallest_positive_root(a, b, c);
    // the cone is the branch u₀ + tΔ₀ ≥ 0
    if du[0] < 0.0 {
        t = fmin(t, -u[0] / du[0]);
    }
    t
}

/// One second-order cone's scaling.
#[derive(Clone, Copy)]
struct SocW<'a> {
    wb: &'a [f64],
    eta: f64,
    eta_inv: f64,
    q: f64,
}

impl SocW<'_> {
    /// `out = W v` (`INV`: `W⁻¹ v`) on the block.
    #[inline(always)]
    fn apply<const INV: bool, D: Cols>(&self, dim: D, v: &[f64], out: &mut [f64]) {
        let d = dim.n();
        let (wb, v, out) = (&self.wb[..d], &v[..d], &mut out[..d]);
        let mut w1v1 = 0.0;
        for j in 1..d {
            w1v1 += wb[j] * v[j];
        }
        let (k, c) = if INV {
            out[0] = self.eta_inv * (wb[0] * v[0] - w1v1);
            (self.eta_inv, -v[0] + w1v1 * self.q)
        } else {
            out[0] = self.eta * (wb[0] * v[0] + w1v1);
            (self.eta, v[0] + w1v1 * self.q)
        };
        for j in 1..d {
            out[j] = k * (v[j] + c * wb[j]);
        }
    }
}

impl<'a> ScalingView<'a> {
    /// `(w, 1/w)` of the orthant rows, as slices of length `no`.
    #[inline(always)]
    fn orth(&self) -> (&'a [f64], &'a [f64]) {
        (&self.w[..self.no], &self.wi[..self.no])
    }

    /// `(start, scaling)` of each second-order cone.
    #[inline(always)]
    fn socs(&self) -> impl Iterator<Item = (usize, SocW<'a>)> + 'a {
        let (no, soc, wb) = (self.no, self.soc, self.wb);
        let (eta, eta_inv, q) = (self.eta, self.eta_inv, self.q);
        let mut st = no;
        soc.iter()
            .zip(eta.iter().zip(eta_inv).zip(q))
            .map(move |(&d, ((&eta, &eta_inv), &q))| {
                let blk = (
                    st,
                    SocW {
                        wb: &wb[st - no..st - no + d],
                        eta,
                        eta_inv,
                        q,
                    },
                );
                st += d;
                blk
            })
    }
}

/// Right-hand side of the complementarity row `λ ∘ (WΔz + W⁻¹Δs) = rc`.
#[derive(Clone, Copy)]
enum Rhs {
    /// Predictor: `rc = −λ∘λ`.
    Affine,
    /// Corrector: `rc = −λ∘λ − (W⁻¹Δs_a) ∘ (WΔz_a) + σμe`.
    Corrector(f64),
    /// Centering towards `s ∘ z = μe`: `rc = μe − λ∘λ`.
    Centering(f64),
}

/// The Newton system of one iteration: G, the scaling and the Cholesky
/// factor of `H = GᵀW⁻²G`. Solves
///
/// ```text
/// GᵀΔz = bx,   GΔx + Δs = bz,   WΔz + W⁻¹Δs = bc
/// ```
///
/// through the reduced system `H Δx = bx + Gᵀu`, `u = W⁻¹(W⁻¹bz − bc)`,
/// then `Δz = W⁻¹(W⁻¹(GΔx − bz) + bc)`, `Δs = W(bc − WΔz)`.
struct Kkt<'a, C: Cols> {
    cols: C,
    G: &'a [f64],
    W: ScalingView<'a>,
    chol: &'a [f64],
}

impl<C: Cols> Kkt<'_, C> {
    /// `u = W⁻¹(W⁻¹bz − bc)`.
    #[inline(always)]
    fn u_pass(&self, bz: &[f64], bc: &[f64], u: &mut [f64], t: &mut [f64]) {
        let W = self.W;
        let (no, wi) = (W.no, W.orth().1);
        for (((ui, b), c), wi) in u[..no].iter_mut().zip(&bz[..no]).zip(&bc[..no]).zip(wi) {
            *ui = (b * wi - c) * wi;
        }
        for (st, w) in W.socs() {
            with_block_size!(w.wb.len(), D => {
                let r = st..st + D.n();
                let t = &mut t[r.clone()];
                w.apply::<true, _>(D, &bz[r.clone()], t);
                for (tj, bj) in t.iter_mut().zip(&bc[r.clone()]) {
                    *tj -= bj;
                }
                w.apply::<true, _>(D, t, &mut u[r]);
            })
        }
    }

    /// `dx = H⁻¹ (bx + Gᵀu)` (`ACC`: added to dx).
    #[inline(always)]
    fn solve_dx<const ACC: bool>(&self, bx: &[f64], u: &[f64], dx: &mut [f64], tmp: &mut [f64]) {
        let n = self.cols.n();
        gemtv(self.cols, self.G, u, tmp);
        for (t, b) in tmp[..n].iter_mut().zip(bx) {
            *t += b;
        }
        cholesky_solve(self.cols, self.chol, tmp);
        for (d, t) in dx[..n].iter_mut().zip(&tmp[..n]) {
            *d = if ACC { *d + t } else { *t };
        }
    }

    /// `Δz = W⁻¹(W⁻¹(GΔx − bz) + bc)`, `Δs = W(bc − WΔz)` (`ACC`: added to
    /// Δz, Δs). With `RES` (and not `ACC`) the same pass also computes the
    /// residuals of [`Kkt::residual_pass`] (bit for bit the same values,
    /// without a second pass over G) into `res = (bx, ex, ez, ec)` and
    /// returns their largest magnitude.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn back_pass<const ACC: bool, const RES: bool>(
        &self,
        dx: &[f64],
        bz: &[f64],
        bc: &[f64],
        ds: &mut [f64],
        dz: &mut [f64],
        t1: &mut [f64],
        t2: &mut [f64],
        res: (&[f64], &mut [f64], &mut [f64], &mut [f64]),
    ) -> f64 {
        let (cols, W) = (self.cols, self.W);
        let n = cols.n();
        let no = W.no;
        let (bx, ex, ez, ec) = res;
        let mut r = 0.0_f64;
        // Gᵀ Δz (RES needs n ≤ 8)
        let mut acc_buf = [0.0_f64; 8];
        let acc = &mut acc_buf[..if RES { n } else { 0 }];
        {
            let (w_o, wi_o) = W.orth();
            let (bz_o, bc_o, dz_o, ds_o) = (&bz[..no], &bc[..no], &mut dz[..no], &mut ds[..no]);
            let (ez_o, ec_o) = if RES {
                (&mut ez[..no], &mut ec[..no])
            } else {
                (&mut [][..], &mut [][..])
            };
            for (i, row) in self.G[..no * n].chunks_exact(n).enumerate() {
                let (w, wi) = (w_o[i], wi_o[i]);
                let gdx = dotn(cols, row, dx);
                let v = gdx - bz_o[i];
                let zi = (v * wi + bc_o[i]) * wi;
                let si = (bc_o[i] - zi * w) * w;
                if ACC {
                    dz_o[i] += zi;
                    ds_o[i] += si;
                } else {
                    dz_o[i] = zi;
                    ds_o[i] = si;
                }
                if RES {
                    let row = &row[..n];
                    for j in 0..n {
                        acc[j] += row[j] * zi;
                    }
                    let e = (bz_o[i] - gdx) - si;
                    let c = (bc_o[i] - zi * w) - si * wi;
                    ez_o[i] = e;
                    ec_o[i] = c;
                    r = fmax(fmax(r, e.abs()), c.abs());
                }
            }
        }
        for (st, w) in W.socs() {
            with_block_size!(w.wb.len(), D => {
                let d = D.n();
                let rg = st..st + d;
                let (t1, t2) = (&mut t1[rg.clone()], &mut t2[rg.clone()]);
                let (bz, bc) = (&bz[rg.clone()], &bc[rg.clone()]);
                let G = &self.G[st * n..(st + d) * n];
                for ((t, row), b) in t1.iter_mut().zip(G.chunks_exact(n)).zip(bz) {
                    *t = dotn(cols, row, dx) - b;
                }
                if RES {
                    // GΔx, for ez
                    for (e, row) in ez[rg.clone()].iter_mut().zip(G.chunks_exact(n)) {
                        *e = dotn(cols, row, dx);
                    }
                }
                w.apply::<true, _>(D, t1, t2);
                for (tj, bj) in t2.iter_mut().zip(bc) {
                    *tj += bj;
                }
                w.apply::<true, _>(D, t2, t1); // t1 = Δz
                w.apply::<false, _>(D, t1, t2);
                for (tj, bj) in t2.iter_mut().zip(bc) {
                    *tj = bj - *tj;
                }
                let (dz, ds) = (&mut dz[rg.clone()], &mut ds[rg.clone()]);
                if ACC {
                    for (a, b) in dz.iter_mut().zip(t1.iter()) {
                        *a += b;
                    }
                    w.apply::<false, _>(D, t2, t1); // t1 = Δs
                    for (a, b) in ds.iter_mut().zip(t1.iter()) {
                        *a += b;
                    }
                } else {
                    dz.copy_from_slice(t1);
                    w.apply::<false, _>(D, t2, ds);
                }
                if RES {
                    for (row, zi) in G.chunks_exact(n).zip(dz.iter()) {
                        let row = &row[..n];
                        for j in 0..n {
                            acc[j] += row[j] * zi;
                        }
                    }
                    for ((e, b), si) in ez[rg.clone()].iter_mut().zip(bz).zip(ds.iter()) {
                        *e = (b - *e) - si;
                        r = fmax(r, e.abs());
                    }
                    w.apply::<false, _>(D, dz, t1);
                    w.apply::<true, _>(D, ds, t2);
                    for (((e, b), a1), a2) in ec[rg].iter_mut().zip(bc).zip(t1.iter()).zip(t2.iter()) {
                        *e = (b - a1) - a2;
                        r = fmax(r, e.abs());
                    }
                }
            })
        }
        if RES {
            for ((e, b), a) in ex[..n].iter_mut().zip(bx).zip(acc.iter()) {
                *e = b - a;
                r = fmax(r, e.abs());
            }
        }
        r
    }

    /// Residuals of the unreduced system, `ex = bx − GᵀΔz`,
    /// `ez = bz − GΔx − Δs`, `ec = bc − WΔz − W⁻¹Δs`; returns their largest
    /// magnitude.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn residual_pass(
        &self,
        (bx, bz, bc): (&[f64], &[f64], &[f64]),
        (dx, ds, dz): (&[f64], &[f64], &[f64]),
        (ex, ez, ec): (&mut [f64], &mut [f64], &mut [f64]),
        t1: &mut [f64],
        t2: &mut [f64],
    ) -> f64 {
        let (cols, W) = (self.cols, self.W);
        let (m, no) = (bz.len(), W.no);
        gemv_gemtv(cols, self.G, dx, dz, ez, ex);
        let mut r = 0.0_f64;
        for (e, b) in ex.iter_mut().zip(bx) {
            *e = b - *e;
            r = fmax(r, e.abs());
        }
        let (ds, ez) = (&ds[..m], &mut ez[..m]);
        for ((e, b), d) in ez.iter_mut().zip(bz).zip(ds) {
            *e = (b - *e) - d;
            r = fmax(r, e.abs());
        }
        {
            let (ec, bc, dz, ds) = (&mut ec[..no], &bc[..no], &dz[..no], &ds[..no]);
            let (w, wi) = W.orth();
            for i in 0..no {
                ec[i] = (bc[i] - dz[i] * w[i]) - ds[i] * wi[i];
                r = fmax(r, ec[i].abs());
            }
        }
        for (st, w) in W.socs() {
            with_block_size!(w.wb.len(), D => {
                let rg = st..st + D.n();
                let (t1, t2) = (&mut t1[rg.clone()], &mut t2[rg.clone()]);
                w.apply::<false, _>(D, &dz[rg.clone()], t1);
                w.apply::<true, _>(D, &ds[rg.clone()], t2);
                for (((e, b), a1), a2) in ec[rg.clone()].iter_mut().zip(&bc[rg]).zip(t1.iter()).zip(t2.iter()) {
                    *e = (b - a1) - a2;
                    r = fmax(r, e.abs());
                }
            })
        }
        r
    }
}

/// Largest step along `(Δs, Δz)` keeping `(s, z)` in the cone, whether
/// every entry of the direction is finite, and `(sᵀΔz + zᵀΔs, ΔsᵀΔz)`.
#[inline(always)]
fn step_pass(
    W: &ScalingView<'_>,
    s: &[f64],
    z: &[f64],
    ds: &[f64],
    dz: &[f64],
) -> (f64, bool, f64, f64) {
    let no = W.no;
    let mut t = f64::INFINITY;
    let mut finite = true;
    let (mut cross, mut dd) = (0.0, 0.0);
    {
        let (s, z, ds, dz) = (&s[..no], &z[..no], &ds[..no], &dz[..no]);
        for i in 0..no {
            // −s/Δs only where Δs < 0 (the division is skipped otherwise)
            if ds[i] < 0.0 {
                t = fmin(t, -s[i] / ds[i]);
            }
            if dz[i] < 0.0 {
                t = fmin(t, -z[i] / dz[i]);
            }
            cross += s[i] * dz[i] + z[i] * ds[i];
            dd += ds[i] * dz[i];
        }
    }
    for (st, w) in W.socs() {
        with_block_size!(w.wb.len(), D => {
            let r = st..st + D.n();
            let (s, z, ds, dz) = (&s[r.clone()], &z[r.clone()], &ds[r.clone()], &dz[r]);
            t = fmin(fmin(t, soc_max_step(D, s, ds)), soc_max_step(D, z, dz));
            cross += dotn(D, s, dz) + dotn(D, z, ds);
            dd += dotn(D, ds, dz);
        })
    }
    // s and z are finite and interior: a non-finite entry of Δs or Δz makes
    // sᵀΔz + zᵀΔs or ΔsᵀΔz non-finite (inf·0 and inf − inf are NaN)
    finite &= cross.is_finite() && dd.is_finite();
    (t, finite, cross, dd)
}

/// Below this duality measure, and when the affine step reached at least
/// [`FAST_TAU_AFFINE`] of the way (the iterate is in the region where
/// Newton's method converges quadratically), the fraction to the boundary
/// is [`FAST_TAU`] instead of [`ConicParams::tau`].
const FAST_TAU_MU: f64 = 1e-2;
/// Fraction to the boundary near the solution (see [`FAST_TAU_MU`]).
const FAST_TAU: f64 = 0.99999;
/// Smallest affine step length for [`FAST_TAU`].
const FAST_TAU_AFFINE: f64 = 0.99;
/// The centering steps start once `μ ≤ CENTERING_ENTRY · tol_gap`.
const CENTERING_ENTRY: f64 = 10.0;

#[inline(always)]
fn solve_once<C: Cols>(
    cols: C,
    ws: &mut SolverWorkspace,
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    let (m, n) = (layout.dim(), cols.n());
    let no = layout.n_orthant;
    let SolverWorkspace {
        vn,
        vm,
        g,
        wig,
        chol,
        scaling,
    } = ws;
    let [x, bx, dx, dx_a, ex, cx] = vn;
    let [s, z, bz, lambda, ll, ds, dz, ds_a, dz_a, bc, u, ez, ec, t1, t2] = vm;
    let (x, bx, dx, dx_a) = (&mut x[..n], &mut bx[..n], &mut dx[..n], &mut dx_a[..n]);
    let (ex, cx) = (&mut ex[..n], &mut cx[..n]);
    let (s, z, bz, lambda, ll) = (
        &mut s[..m],
        &mut z[..m],
        &mut bz[..m],
        &mut lambda[..m],
        &mut ll[..m],
    );
    let (ds, dz, ds_a, dz_a) = (&mut ds[..m], &mut dz[..m], &mut ds_a[..m], &mut dz_a[..m]);
    let (bc, u, ez, ec, t1, t2) = (
        &mut bc[..m],
        &mut u[..m],
        &mut ez[..m],
        &mut ec[..m],
        &mut t1[..m],
        &mut t2[..m],
    );
    let (G, wig, chol, c, h) = (
        &g[..m * n],
        &mut wig[..m * n],
        &mut chol[..n * n],
        &c[..n],
        &h[..m],
    );
    let nu = layout.degree() as f64;
    let no_conv = |iters: usize, residual: f64| ProximityError::NoConvergence { iters, residual };

    // --- initial point: x̂ = argmin ‖Gx − h‖, ẑ = argmin ‖z‖ s.t. Gᵀz + c = 0,
    // each shifted into the cone by (1 + a)e
    chol.fill(0.0);
    for row in G.chunks_exact(n) {
        add_outer(cols, row, 1.0, chol);
    }
    if !cholesky_in_place(cols, chol) {
        return Err(no_conv(0, f64::INFINITY));
    }
    gemtv(cols, G, h, x);
    cholesky_solve(cols, chol, x);
    gemv(cols, G, x, s);
    for (si, hi) in s.iter_mut().zip(h) {
        *si = hi - *si;
    }
    for (d, cj) in dx.iter_mut().zip(c) {
        *d = -cj;
    }
    cholesky_solve(cols, chol, dx);
    gemv(cols, G, dx, z);
    for v in [&mut *s, &mut *z] {
        let a = layout.interior_shift_of(v);
        if a >= -1e-8 {
            let k = 1.0 + a.max(0.0);
            for vi in &mut v[..no] {
                *vi += k;
            }
            for (st, _) in layout.soc_blocks() {
                v[st] += k;
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
        // bx = −(c + Gᵀz), bz = −(s + Gx − h): minus the residuals
        gemv_gemtv(cols, G, x, z, bz, bx);
        for (b, cj) in bx.iter_mut().zip(c) {
            *b = -(cj + *b);
        }
        for i in 0..m {
            bz[i] = -((s[i] + bz[i]) - h[i]);
        }
        let gap = dot(s, z);
        residual = amax(bx).max(amax(bz));
        if !(gap.is_finite() && residual.is_finite()) {
            return Err(no_conv(iter, residual));
        }
        let mu = gap / nu;
        if let Some((mu_c, done)) = centering {
            // ‖s ∘ z − μ_c e‖∞
            let mut off = 0.0_f64;
            for (si, zi) in s[..no].iter().zip(&z[..no]) {
                off = fmax(off, (si * zi - mu_c).abs());
            }
            for (st, d) in layout.soc_blocks() {
                with_block_size!(d, D => {
                    let r = st..st + D.n();
                    let t = &mut t1[r.clone()];
                    soc_jordan(D, &s[r.clone()], &z[r], t);
                    t[0] -= mu_c;
                    off = fmax(off, amax(t));
                })
            }
            let centred = residual <= params.tol_residual
                && (off <= params.centering_tolerance * mu_c || last_dx <= 1e-14);
            if centred || done >= params.centering {
                if residual <= 1e3 * params.tol_residual {
                    return Ok(SolveStats { iters: iter, gap });
                }
                return Err(no_conv(iter, residual));
            }
        } else if iter >= params.max_iters {
            return Err(no_conv(iter, residual));
        } else if params.centering == 0 {
            if mu <= params.tol_gap && residual <= params.tol_residual {
                return Ok(SolveStats { iters: iter, gap });
            }
        } else if mu <= CENTERING_ENTRY * params.tol_gap && residual <= 1e3 * params.tol_residual {
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

        // --- scaling, λ = Wz, λ∘λ, H = GᵀW⁻²G
        if !scaling.update(layout, s, z) {
            debug("scaling", iter);
            return fail(iter, residual);
        }
        let W = scaling.view(layout);
        for (((l, q), zi), w) in lambda[..no]
            .iter_mut()
            .zip(&mut ll[..no])
            .zip(&z[..no])
            .zip(W.w)
        {
            *l = zi * w;
            *q = *l * *l;
        }
        for (st, w) in W.socs() {
            with_block_size!(w.wb.len(), D => {
                let r = st..st + D.n();
                let l = &mut lambda[r.clone()];
                w.apply::<false, _>(D, &z[r.clone()], l);
                soc_jordan(D, l, l, &mut ll[r]);
            })
        }
        W.normal_matrix(cols, G, wig, chol);
        if !cholesky_in_place(cols, chol) {
            debug("cholesky", iter);
            return fail(iter, residual);
        }
        let kkt = Kkt { cols, G, W, chol };

        // The Newton direction for one right-hand side, with `rounds`
        // rounds of iterative refinement on the unreduced system (the
        // reduced matrix is ill-conditioned near the solution).
        let mut newton = |rhs: Rhs,
                          rounds: usize,
                          dx: &mut [f64],
                          ds: &mut [f64],
                          dz: &mut [f64],
                          (ds_a, dz_a): (&[f64], &[f64])| {
            // bc = λ \ rc and u = W⁻¹(W⁻¹bz − bc), one pass
            {
                let (ll, lambda, bz) = (&ll[..no], &lambda[..no], &bz[..no]);
                let (bc, u) = (&mut bc[..no], &mut u[..no]);
                let (w, wi) = W.orth();
                let mut put = |i: usize, rc: f64| {
                    let b = rc / lambda[i];
                    bc[i] = b;
                    u[i] = (bz[i] * wi[i] - b) * wi[i];
                };
                match rhs {
                    Rhs::Affine => (0..no).for_each(|i| put(i, -ll[i])),
                    Rhs::Corrector(smu) => {
                        let (ds_a, dz_a) = (&ds_a[..no], &dz_a[..no]);
                        (0..no).for_each(|i| {
                            put(i, (-ll[i] - (ds_a[i] * wi[i]) * (dz_a[i] * w[i])) + smu)
                        })
                    }
                    Rhs::Centering(mu_c) => (0..no).for_each(|i| put(i, mu_c - ll[i])),
                }
            }
            for (st, w) in W.socs() {
                with_block_size!(w.wb.len(), D => {
                    let r = st..st + D.n();
                    let (t1, t2) = (&mut t1[r.clone()], &mut t2[r.clone()]);
                    let (ll, bc, u) = (&ll[r.clone()], &mut bc[r.clone()], &mut u[r.clone()]);
                    match rhs {
                        Rhs::Affine => {
                            for (t, l) in t1.iter_mut().zip(ll) {
                                *t = -l;
                            }
                        }
                        Rhs::Corrector(smu) => {
                            w.apply::<true, _>(D, &ds_a[r.clone()], t2);
                            w.apply::<false, _>(D, &dz_a[r.clone()], u);
                            soc_jordan(D, t2, u, t1);
                            for (t, l) in t1.iter_mut().zip(ll) {
                                *t = -l - *t;
                            }
                            t1[0] += smu;
                        }
                        Rhs::Centering(mu_c) => {
                            for (t, l) in t1.iter_mut().zip(ll) {
                                *t = -l;
                            }
                            t1[0] = mu_c - ll[0];
                        }
                    }
                    soc_jordan_div(D, &lambda[r.clone()], t1, bc);
                    w.apply::<true, _>(D, &bz[r], t2);
                    for (t, b) in t2.iter_mut().zip(bc.iter()) {
                        *t -= b;
                    }
                    w.apply::<true, _>(D, t2, u);
                })
            }
            kkt.solve_dx::<false>(bx, u, dx, ex);
            // the first refinement round's residuals come with the direction
            let fused = rounds > 0 && n <= 8;
            let r0 = if fused {
                kkt.back_pass::<false, true>(dx, bz, bc, ds, dz, t1, t2, (bx, ex, ez, ec))
            } else {
                kkt.back_pass::<false, false>(
                    dx,
                    bz,
                    bc,
                    ds,
                    dz,
                    t1,
                    t2,
                    (&[], &mut [], &mut [], &mut []),
                )
            };
            if rounds == 0 {
                return;
            }
            // (the residual of the iterate is max(‖bx‖∞, ‖bz‖∞))
            let scale = fmax(fmax(residual, amax(bc)), 1.0);
            for round in 0..rounds {
                let r = if round == 0 && fused {
                    r0
                } else {
                    kkt.residual_pass((bx, bz, bc), (dx, ds, dz), (ex, ez, ec), t1, t2)
                };
                // skip when the direction already solves the system to
                // round-off (early, well-conditioned iterations)
                if r <= 1e-15 * scale {
                    break;
                }
                kkt.u_pass(ez, ec, u, t1);
                kkt.solve_dx::<true>(ex, u, dx, cx);
                kkt.back_pass::<true, false>(
                    cx,
                    ez,
                    ec,
                    ds,
                    dz,
                    t1,
                    u,
                    (&[], &mut [], &mut [], &mut []),
                );
            }
        };

        let (sigma, t_a) = if let Some((mu_c, done)) = centering {
            // pure centering step towards s ∘ z = μ_c e
            centering = Some((mu_c, done + 1));
            newton(
                Rhs::Centering(mu_c),
                params.refinement,
                dx,
                ds,
                dz,
                (&[], &[]),
            );
            last_dx = amax(dx);
            (1.0, 0.0)
        } else {
            // predictor (it only sets σ and the second-order term: no
            // refinement)
            newton(Rhs::Affine, 0, dx_a, ds_a, dz_a, (&[], &[]));
            let (t_a, _, cross, dd) = step_pass(&W, s, z, ds_a, dz_a);
            let t_a = t_a.min(1.0);
            // ρ = (s + t_aΔs)ᵀ(z + t_aΔz) / sᵀz
            let rho = (gap + t_a * cross + t_a * t_a * dd) / gap;
            let sigma = rho.clamp(0.0, 1.0).powi(3);
            // corrector
            // far from the solution (μ > 1e-6) the reduced system is well
            // conditioned and a refinement round changes the direction by
            // round-off only: it is spent near the solution
            let rounds = if mu <= 1e-6 { params.refinement } else { 0 };
            // With centering steps to come, the corrector aims no lower than
            // the central point they return (μ = tol_gap): the last step
            // lands next to it instead of overshooting to μ ≪ tol_gap.
            let smu = if params.centering > 0 {
                fmax(sigma * mu, params.tol_gap)
            } else {
                sigma * mu
            };
            newton(Rhs::Corrector(smu), rounds, dx, ds, dz, (ds_a, dz_a));
            (sigma, t_a)
        };
        let (t_max, finite, _, _) = step_pass(&W, s, z, ds, dz);
        let tau = if centering.is_none()
            && mu < FAST_TAU_MU
            && t_a >= FAST_TAU_AFFINE
            && params.tau > 0.9
            && params.tau < FAST_TAU
        {
            FAST_TAU
        } else {
            params.tau
        };
        let t = (tau * t_max).min(1.0);
        if verbose {
            eprintln!("it {iter} gap {gap:.3e} res {residual:.3e} sigma {sigma:.2e} t_a {t_a:.3e} t {t:.3e} x {x:?}");
        }
        if !(t.is_finite() && t > 0.0) || !finite || dx.iter().any(|v| !v.is_finite()) {
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
