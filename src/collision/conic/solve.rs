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
        for i in 0..self.n_orthant {
            e[i] = 1.0;
        }
        for (s, _) in self.soc_blocks() {
            e[s] = 1.0;
        }
        e
    }

    /// Jordan product `u ∘ v`.
    pub fn jordan(&self, u: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        let mut w = DVector::zeros(self.dim());
        for i in 0..self.n_orthant {
            w[i] = u[i] * v[i];
        }
        for (s, d) in self.soc_blocks() {
            let uu = u.rows(s, d);
            let vv = v.rows(s, d);
            w[s] = uu.dot(&vv);
            for j in 1..d {
                w[s + j] = uu[0] * vv[j] + vv[0] * uu[j];
            }
        }
        w
    }

    /// Solves `u ∘ x = r` for `x` (u in the interior of K).
    pub fn jordan_div(&self, u: &DVector<f64>, r: &DVector<f64>) -> DVector<f64> {
        let mut x = DVector::zeros(self.dim());
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
        x
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
        let mut a = f64::NEG_INFINITY;
        for i in 0..self.n_orthant {
            a = a.max(-u[i]);
        }
        for (s, d) in self.soc_blocks() {
            let n1 = u.rows(s + 1, d - 1).norm();
            a = a.max(n1 - u[s]);
        }
        a
    }

    /// Largest `t ≥ 0` (capped at `f64::INFINITY`) with `u + tΔ ∈ K`, for u
    /// in the interior of K.
    pub fn max_step(&self, u: &DVector<f64>, du: &DVector<f64>) -> f64 {
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

/// Nesterov–Todd scaling `W` of one iterate `(s, z)` of a cone layout:
/// symmetric, with `W z = W⁻¹ s` (the scaled point λ).
#[derive(Clone, Debug)]
pub struct Scaling {
    /// Orthant: `w_i = √(s_i/z_i)`.
    w_orth: Vec<f64>,
    /// Per SOC: (η, w̄).
    w_soc: Vec<(f64, DVector<f64>)>,
}

impl Scaling {
    /// The scaling of `(s, z)`, or `None` when either is not strictly
    /// inside its cone.
    pub fn new(layout: &ConeLayout, s: &DVector<f64>, z: &DVector<f64>) -> Option<Scaling> {
        let mut w_orth = Vec::with_capacity(layout.n_orthant);
        for i in 0..layout.n_orthant {
            let w = (s[i] / z[i]).sqrt();
            if !(w.is_finite() && w > 0.0) {
                return None;
            }
            w_orth.push(w);
        }
        let mut w_soc = Vec::with_capacity(layout.soc.len());
        for (st, d) in layout.soc_blocks() {
            let ss = s.rows(st, d);
            let zz = z.rows(st, d);
            // (u₀ − ‖u₁‖)(u₀ + ‖u₁‖): less cancellation than u₀² − ‖u₁‖²
            let (sn1, zn1) = (ss.rows(1, d - 1).norm(), zz.rows(1, d - 1).norm());
            let sjs = (ss[0] - sn1) * (ss[0] + sn1);
            let zjz = (zz[0] - zn1) * (zz[0] + zn1);
            if !(sjs > 0.0 && zjz > 0.0) {
                return None;
            }
            let sn = sjs.sqrt();
            let zn = zjz.sqrt();
            let sb = ss / sn;
            let zb = zz / zn;
            let gamma = ((1.0 + zb.dot(&sb)) * 0.5).sqrt();
            let mut wb = DVector::zeros(d);
            wb[0] = (sb[0] + zb[0]) / (2.0 * gamma);
            for j in 1..d {
                wb[j] = (sb[j] - zb[j]) / (2.0 * gamma);
            }
            let eta = (sjs / zjz).sqrt().sqrt();
            if !(eta.is_finite() && gamma.is_finite()) {
                return None;
            }
            w_soc.push((eta, wb));
        }
        Some(Scaling { w_orth, w_soc })
    }

    /// `W v` (inverse = false) or `W⁻¹ v` (inverse = true); W is symmetric.
    pub fn apply(&self, layout: &ConeLayout, v: &DVector<f64>, inverse: bool) -> DVector<f64> {
        let mut out = DVector::zeros(v.len());
        for i in 0..layout.n_orthant {
            out[i] = if inverse { v[i] / self.w_orth[i] } else { v[i] * self.w_orth[i] };
        }
        for ((st, d), (eta, wb)) in layout.soc_blocks().zip(self.w_soc.iter()) {
            let sgn = if inverse { -1.0 } else { 1.0 };
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
        out
    }

    /// `W⁻¹ A` column by column (in place on a copy of A).
    pub fn apply_inv_mat(&self, layout: &ConeLayout, A: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = A.clone();
        for j in 0..A.ncols() {
            let mut col = out.column_mut(j);
            for i in 0..layout.n_orthant {
                col[i] /= self.w_orth[i];
            }
            for ((st, d), (eta, wb)) in layout.soc_blocks().zip(self.w_soc.iter()) {
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
        out
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
    match solve_once(c, G, h, layout, params) {
        Ok(sol) => Ok(sol),
        // A numerical breakdown (rare: an apex or a nearly degenerate
        // contact) is retried once with a more conservative fraction to the
        // boundary.
        Err(ProximityError::NoConvergence { .. }) if params.tau > 0.9 => {
            let retry = ConicParams { tau: 0.9, max_iters: params.max_iters * 2, ..*params };
            solve_once(c, G, h, layout, &retry)
        }
        Err(e) => Err(e),
    }
}

fn solve_once(
    c: &DVector<f64>,
    G: &DMatrix<f64>,
    h: &DVector<f64>,
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<ConicSolution, ProximityError> {
    let m = layout.dim();
    assert_eq!(G.nrows(), m, "G has one row per cone coordinate");
    assert_eq!(h.len(), m, "h has one entry per cone coordinate");
    assert_eq!(G.ncols(), c.len(), "G has one column per variable");
    let nu = layout.degree() as f64;
    let e = layout.identity();
    let no_conv = |iters: usize, residual: f64| ProximityError::NoConvergence { iters, residual };

    // --- initial point
    let GtG = G.tr_mul(G);
    let chol0 = GtG.clone().cholesky().ok_or(no_conv(0, f64::INFINITY))?;
    let mut x = chol0.solve(&(G.tr_mul(h)));
    let mut s = h - G * &x;
    let mut z = G * chol0.solve(&(-c));
    for u in [&mut s, &mut z] {
        let a = layout.interior_shift(u);
        if a >= -1e-8 {
            *u += &e * (1.0 + a.max(0.0));
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
        let rx = c + G.tr_mul(&z);
        let rz = &s + G * &x - h;
        let gap = s.dot(&z);
        residual = rx.amax().max(rz.amax());
        if !(gap.is_finite() && residual.is_finite()) {
            return Err(no_conv(iter, residual));
        }
        let mu = gap / nu;
        if let Some((mu_c, done)) = centering {
            let off = (layout.jordan(&s, &z) - &e * mu_c).amax();
            let centred = residual <= params.tol_residual && (off <= 1e-6 * mu_c || last_dx <= 1e-14);
            if centred || done >= params.centering {
                if residual <= 1e3 * params.tol_residual {
                    return Ok(ConicSolution { x, s, z, iters: iter, gap });
                }
                return Err(no_conv(iter, residual));
            }
        } else if iter >= params.max_iters {
            return Err(no_conv(iter, residual));
        } else if mu <= params.tol_gap && residual <= 1e3 * params.tol_residual {
            if params.centering == 0 && residual <= params.tol_residual {
                return Ok(ConicSolution { x, s, z, iters: iter, gap });
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
                Ok(ConicSolution { x: x.clone(), s: s.clone(), z: z.clone(), iters, gap })
            } else {
                Err(ProximityError::NoConvergence { iters, residual })
            }
        };

        let Some(W) = Scaling::new(layout, &s, &z) else {
            debug("scaling", iter);
            return fail(iter, residual);
        };
        let lambda = W.apply(layout, &z, false);
        let WiG = W.apply_inv_mat(layout, G);
        let H = WiG.tr_mul(&WiG);
        let Some(chol) = H.cholesky() else {
            debug("cholesky", iter);
            return fail(iter, residual);
        };

        // Solves  GᵀΔz = bx,  GΔx + Δs = bz,  WΔz + W⁻¹Δs = bc  through the
        // reduced system H Δx = bx + GᵀW⁻¹(W⁻¹bz − bc).
        let reduced = |bx: &DVector<f64>, bz: &DVector<f64>, bc: &DVector<f64>| {
            let t = W.apply(layout, bz, true) - bc;
            let dx = chol.solve(&(bx + WiG.tr_mul(&t)));
            let dz = W.apply(layout, &(W.apply(layout, &(G * &dx - bz), true) + bc), true);
            let ds = W.apply(layout, &(bc - W.apply(layout, &dz, false)), false);
            (dx, ds, dz)
        };
        // The same with two rounds of iterative refinement on the unreduced
        // system (the reduced matrix is ill-conditioned near the solution).
        let newton = |rc: &DVector<f64>, rounds: usize| {
            let bx = -&rx;
            let bz = -&rz;
            let bc = layout.jordan_div(&lambda, rc);
            let (mut dx, mut ds, mut dz) = reduced(&bx, &bz, &bc);
            for _ in 0..rounds {
                let ex = &bx - G.tr_mul(&dz);
                let ez = &bz - G * &dx - &ds;
                let ec = &bc - W.apply(layout, &dz, false) - W.apply(layout, &ds, true);
                // skip when the direction already solves the system to
                // round-off (early, well-conditioned iterations)
                let scale = bx.amax().max(bz.amax()).max(bc.amax()).max(1.0);
                if ex.amax().max(ez.amax()).max(ec.amax()) <= 1e-15 * scale {
                    break;
                }
                let (cx, cs, cz) = reduced(&ex, &ez, &ec);
                dx += cx;
                ds += cs;
                dz += cz;
            }
            (dx, ds, dz)
        };

        let ll = layout.jordan(&lambda, &lambda);
        let (dx, ds, dz, sigma, t_a) = if let Some((mu_c, done)) = centering {
            // pure centering step towards s ∘ z = μ_c e
            centering = Some((mu_c, done + 1));
            let (dx, ds, dz) = newton(&(&e * mu_c - &ll), params.refinement);
            last_dx = dx.amax();
            (dx, ds, dz, 1.0, 0.0)
        } else {
        // predictor
        // (the predictor only sets σ and the second-order term: no refinement)
        let (_, ds_a, dz_a) = newton(&(-&ll), 0);
        let t_a = layout.max_step(&s, &ds_a).min(layout.max_step(&z, &dz_a)).min(1.0);
        let rho = (&s + &ds_a * t_a).dot(&(&z + &dz_a * t_a)) / gap;
        let sigma = rho.clamp(0.0, 1.0).powi(3);

        // corrector
        let corr = layout.jordan(
            &W.apply(layout, &ds_a, true),
            &W.apply(layout, &dz_a, false),
        );
        let rc = -&ll - corr + &e * (sigma * mu);
        let (dx, ds, dz) = newton(&rc, params.refinement);
        (dx, ds, dz, sigma, t_a)
        };
        let t_max = layout.max_step(&s, &ds).min(layout.max_step(&z, &dz));
        let t = (params.tau * t_max).min(1.0);
        if verbose {
            eprintln!("it {iter} gap {gap:.3e} res {residual:.3e} sigma {sigma:.2e} t_a {t_a:.3e} t {t:.3e} x {:?}", x.as_slice());
        }
        if !(t.is_finite() && t > 0.0) || dx.iter().chain(ds.iter()).chain(dz.iter()).any(|v| !v.is_finite()) {
            debug("step", iter);
            return fail(iter, residual);
        }
        x += dx * t;
        s += ds * t;
        z += dz * t;
    }
    Err(no_conv(params.max_iters, residual))
}
