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

#[macro_use]
mod dense;
mod cone;
mod ipm;
mod kkt;
mod params;
mod scaling;

pub use cone::ConeLayout;
pub use params::ConicParams;
pub use scaling::Scaling;

use dense::{Cols, Dynamic, Fixed};
use ipm::solve_once;
use scaling::size;

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
