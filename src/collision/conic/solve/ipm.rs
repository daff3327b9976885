//! The interior-point iteration ([`solve_once`]): initial point,
//! stopping and centering tests, scaling, the predictor, corrector and
//! centering directions, and the step.

use super::ProximityError;
use super::cone::{soc_jordan, soc_jordan_div};
use super::dense::{
    Cols, Dynamic, Fixed, add_outer, amax, cholesky_in_place, cholesky_solve, dot, fmax, gemtv,
    gemv, gemv_gemtv,
};
use super::kkt::{Kkt, Rhs, step_pass};
use super::scaling::ScalingView;
use super::{ConeLayout, ConicParams, SolveStats, SolverWorkspace};

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
pub(super) fn solve_once<C: Cols>(
    cols: C,
    ws: &mut SolverWorkspace,
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    params: &ConicParams,
) -> Result<SolveStats, ProximityError> {
    let (m, n) = (layout.dim(), cols.n());
    let SolverWorkspace {
        vn,
        vm,
        g,
        wig,
        chol,
        scaling,
    } = ws;
    let [x, bx, dx, dx_a, ex, cx] = vn.each_mut().map(|v| &mut v[..n]);
    let [
        s,
        z,
        bz,
        lambda,
        ll,
        ds,
        dz,
        ds_a,
        dz_a,
        bc,
        u,
        ez,
        ec,
        t1,
        t2,
    ] = vm.each_mut().map(|v| &mut v[..m]);
    let (G, wig, chol, c, h) = (
        &g[..m * n],
        &mut wig[..m * n],
        &mut chol[..n * n],
        &c[..n],
        &h[..m],
    );
    let nu = layout.degree() as f64;
    let no_conv = |iters: usize, residual: f64| ProximityError::NoConvergence { iters, residual };

    if !initial_point(cols, G, c, h, layout, (x, s, z), dx, chol) {
        return Err(no_conv(0, f64::INFINITY));
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
        minus_residuals(cols, (G, c, h), (x, s, z), (bx, bz));
        let gap = dot(s, z);
        residual = amax(bx).max(amax(bz));
        if !(gap.is_finite() && residual.is_finite()) {
            return Err(no_conv(iter, residual));
        }
        let mu = gap / nu;
        let state = (iter, gap, mu, residual, last_dx);
        if let Some(done) = stopping_test(params, layout, (s, z, t1), state, &mut centering) {
            return done;
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
        scaled_point(&W, z, lambda, ll);
        W.normal_matrix(cols, G, wig, chol);
        if !cholesky_in_place(cols, chol) {
            debug("cholesky", iter);
            return fail(iter, residual);
        }
        let mut newton = Newton {
            kkt: Kkt { cols, G, W, chol },
            lambda,
            ll,
            bx,
            bz,
            residual,
            bc,
            u,
            t1,
            t2,
            ex,
            ez,
            ec,
            cx,
        };

        let (sigma, t_a) = newton.step_direction(
            params,
            (&mut centering, &mut last_dx),
            (s, z),
            (gap, mu),
            (&mut *dx, &mut *ds, &mut *dz),
            (&mut *dx_a, &mut *ds_a, &mut *dz_a),
        );
        let (t_max, finite, _, _) = step_pass(&W, s, z, ds, dz);
        let t = (step_fraction(params, centering.is_none(), mu, t_a) * t_max).min(1.0);
        if verbose {
            eprintln!(
                "it {iter} gap {gap:.3e} res {residual:.3e} sigma {sigma:.2e} t_a {t_a:.3e} t {t:.3e} x {x:?}"
            );
        }
        if !(t.is_finite() && t > 0.0) || !finite || dx.iter().any(|v| !v.is_finite()) {
            debug("step", iter);
            return fail(iter, residual);
        }
        take_step(t, (x, s, z), (dx, ds, dz));
    }
    Err(no_conv(params.max_iters, residual))
}

/// The step of length `t`: `(x, s, z) += t (Δx, Δs, Δz)`.
#[inline(always)]
fn take_step(
    t: f64,
    (x, s, z): (&mut [f64], &mut [f64], &mut [f64]),
    (dx, ds, dz): (&[f64], &[f64], &[f64]),
) {
    for (v, d) in [(x, dx), (s, ds), (z, dz)] {
        for (vi, di) in v.iter_mut().zip(d.iter()) {
            *vi += di * t;
        }
    }
}

/// Minus the residuals of the iterate: `bx = −(c + Gᵀz)`,
/// `bz = −(s + Gx − h)`.
#[inline(always)]
fn minus_residuals<C: Cols>(
    cols: C,
    (G, c, h): (&[f64], &[f64], &[f64]),
    (x, s, z): (&[f64], &[f64], &[f64]),
    (bx, bz): (&mut [f64], &mut [f64]),
) {
    gemv_gemtv(cols, G, x, z, bz, bx);
    for (b, cj) in bx.iter_mut().zip(c) {
        *b = -(cj + *b);
    }
    for i in 0..h.len() {
        bz[i] = -((s[i] + bz[i]) - h[i]);
    }
}

/// The stopping and centering tests at the top of iteration `iter` (of
/// duality gap `gap`, measure `mu`, residual `residual`; `last_dx`: the
/// size of the last centering step): the result to return, else `None`,
/// with the centering steps started once the tolerances are nearly met.
#[inline(always)]
fn stopping_test(
    params: &ConicParams,
    layout: &ConeLayout,
    (s, z, t1): (&[f64], &[f64], &mut [f64]),
    (iter, gap, mu, residual, last_dx): (usize, f64, f64, f64, f64),
    centering: &mut Option<(f64, usize)>,
) -> Option<Result<SolveStats, ProximityError>> {
    let no_conv = |iters: usize, residual: f64| ProximityError::NoConvergence { iters, residual };
    if let Some((mu_c, done)) = *centering {
        let off = centering_offset(layout, s, z, mu_c, t1);
        let centred = residual <= params.tol_residual
            && (off <= params.centering_tolerance * mu_c || last_dx <= 1e-14);
        if centred || done >= params.centering {
            if residual <= 1e3 * params.tol_residual {
                return Some(Ok(SolveStats { iters: iter, gap }));
            }
            return Some(Err(no_conv(iter, residual)));
        }
    } else if iter >= params.max_iters {
        return Some(Err(no_conv(iter, residual)));
    } else if params.centering == 0 {
        if mu <= params.tol_gap && residual <= params.tol_residual {
            return Some(Ok(SolveStats { iters: iter, gap }));
        }
    } else if mu <= CENTERING_ENTRY * params.tol_gap && residual <= 1e3 * params.tol_residual {
        *centering = Some((params.tol_gap, 0));
    }
    None
}

/// The fraction to the boundary of the step: [`FAST_TAU`] near the
/// solution (not while centering), else [`ConicParams::tau`].
#[inline(always)]
fn step_fraction(params: &ConicParams, not_centering: bool, mu: f64, t_a: f64) -> f64 {
    if not_centering
        && mu < FAST_TAU_MU
        && t_a >= FAST_TAU_AFFINE
        && params.tau > 0.9
        && params.tau < FAST_TAU
    {
        FAST_TAU
    } else {
        params.tau
    }
}

/// The initial point: `x̂ = argmin ‖Gx − h‖`, `ŝ = h − Gx̂` and
/// `ẑ = argmin ‖z‖ s.t. Gᵀz + c = 0`, each of `ŝ`, `ẑ` shifted into the
/// cone by `(1 + a)e` (`dx` is scratch, `chol` receives the factor of
/// `GᵀG`); `false` when `GᵀG` is not positive definite.
#[inline(always)]
fn initial_point<C: Cols>(
    cols: C,
    G: &[f64],
    c: &[f64],
    h: &[f64],
    layout: &ConeLayout,
    (x, s, z): (&mut [f64], &mut [f64], &mut [f64]),
    dx: &mut [f64],
    chol: &mut [f64],
) -> bool {
    let (n, no) = (cols.n(), layout.n_orthant);
    chol.fill(0.0);
    for row in G.chunks_exact(n) {
        add_outer(cols, row, 1.0, chol);
    }
    if !cholesky_in_place(cols, chol) {
        return false;
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
    true
}

/// `‖s ∘ z − μ_c e‖∞`, the distance of the iterate from the central point
/// of `μ_c` (`t1` is scratch).
#[inline(always)]
fn centering_offset(layout: &ConeLayout, s: &[f64], z: &[f64], mu_c: f64, t1: &mut [f64]) -> f64 {
    let no = layout.n_orthant;
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
    off
}

/// The scaled point `λ = Wz` and `λ ∘ λ`.
#[inline(always)]
fn scaled_point(W: &ScalingView<'_>, z: &[f64], lambda: &mut [f64], ll: &mut [f64]) {
    let no = W.no;
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
}

/// The Newton directions of one iteration: the system, the scaled point
/// (`λ`, `λ ∘ λ`), minus the iterate's residuals (`bx`, `bz`) and their
/// largest entry, and the buffers the directions are assembled in.
struct Newton<'a, C: Cols> {
    kkt: Kkt<'a, C>,
    lambda: &'a [f64],
    ll: &'a [f64],
    bx: &'a [f64],
    bz: &'a [f64],
    residual: f64,
    bc: &'a mut [f64],
    u: &'a mut [f64],
    t1: &'a mut [f64],
    t2: &'a mut [f64],
    ex: &'a mut [f64],
    ez: &'a mut [f64],
    ec: &'a mut [f64],
    cx: &'a mut [f64],
}

impl<C: Cols> Newton<'_, C> {
    /// The direction of one iteration: once centering, a pure centering
    /// step towards `s ∘ z = μ_c e` (counted in `centering`, its `‖Δx‖∞`
    /// into `last_dx`), else the predictor and corrector
    /// ([`predictor_corrector`](Self::predictor_corrector)). Returns σ and
    /// the affine step length.
    #[inline(always)]
    fn step_direction(
        &mut self,
        params: &ConicParams,
        (centering, last_dx): (&mut Option<(f64, usize)>, &mut f64),
        (s, z): (&[f64], &[f64]),
        (gap, mu): (f64, f64),
        (dx, ds, dz): (&mut [f64], &mut [f64], &mut [f64]),
        d_a: (&mut [f64], &mut [f64], &mut [f64]),
    ) -> (f64, f64) {
        if let Some((mu_c, done)) = *centering {
            // pure centering step towards s ∘ z = μ_c e
            *centering = Some((mu_c, done + 1));
            self.direction(
                Rhs::Centering(mu_c),
                params.refinement,
                dx,
                ds,
                dz,
                (&[], &[]),
            );
            *last_dx = amax(dx);
            (1.0, 0.0)
        } else {
            self.predictor_corrector(params, (s, z), (gap, mu), (dx, ds, dz), d_a)
        }
    }

    /// Mehrotra's predictor (into the `_a` buffers; it only sets σ and the
    /// second-order term: no refinement) and corrector (into `dx`, `ds`,
    /// `dz`) at the iterate `(s, z)` of duality gap `gap` and measure `mu`.
    /// Returns σ and the affine step length.
    #[inline(always)]
    fn predictor_corrector(
        &mut self,
        params: &ConicParams,
        (s, z): (&[f64], &[f64]),
        (gap, mu): (f64, f64),
        (dx, ds, dz): (&mut [f64], &mut [f64], &mut [f64]),
        (dx_a, ds_a, dz_a): (&mut [f64], &mut [f64], &mut [f64]),
    ) -> (f64, f64) {
        self.direction(Rhs::Affine, 0, dx_a, ds_a, dz_a, (&[], &[]));
        let (t_a, _, cross, dd) = step_pass(&self.kkt.W, s, z, ds_a, dz_a);
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
        self.direction(Rhs::Corrector(smu), rounds, dx, ds, dz, (ds_a, dz_a));
        (sigma, t_a)
    }

    /// The Newton direction for one right-hand side, with `rounds`
    /// rounds of iterative refinement on the unreduced system (the
    /// reduced matrix is ill-conditioned near the solution).
    #[inline(always)]
    fn direction(
        &mut self,
        rhs: Rhs,
        rounds: usize,
        dx: &mut [f64],
        ds: &mut [f64],
        dz: &mut [f64],
        (ds_a, dz_a): (&[f64], &[f64]),
    ) {
        self.rhs_pass(rhs, (ds_a, dz_a));
        let (kkt, bx, bz, residual) = (&self.kkt, self.bx, self.bz, self.residual);
        let (bc, u, t1, t2) = (&mut *self.bc, &mut *self.u, &mut *self.t1, &mut *self.t2);
        let (ex, ez, ec, cx) = (&mut *self.ex, &mut *self.ez, &mut *self.ec, &mut *self.cx);
        let n = kkt.cols.n();
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
    }

    /// The right-hand side's complementarity row `bc = λ \ rc` and
    /// `u = W⁻¹(W⁻¹bz − bc)`, in one pass.
    #[inline(always)]
    fn rhs_pass(&mut self, rhs: Rhs, (ds_a, dz_a): (&[f64], &[f64])) {
        let W = self.kkt.W;
        let no = W.no;
        let (lambda, ll, bz) = (self.lambda, self.ll, self.bz);
        let (bc, u, t1, t2) = (&mut *self.bc, &mut *self.u, &mut *self.t1, &mut *self.t2);
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
                    (0..no)
                        .for_each(|i| put(i, (-ll[i] - (ds_a[i] * wi[i]) * (dz_a[i] * w[i])) + smu))
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
    }
}
