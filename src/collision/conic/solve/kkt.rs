//! The Newton system of one iteration ([`Kkt`]): its right-hand sides,
//! the reduced solve, the back substitution and the refinement residual,
//! and the step length to the boundary of the cone.

use super::cone::soc_max_step;
use super::dense::{Cols, Dynamic, Fixed, cholesky_solve, dotn, fmax, fmin, gemtv, gemv_gemtv};
use super::scaling::ScalingView;

/// Right-hand side of the complementarity row `λ ∘ (WΔz + W⁻¹Δs) = rc`.
#[derive(Clone, Copy)]
pub(super) enum Rhs {
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
pub(super) struct Kkt<'a, C: Cols> {
    pub(super) cols: C,
    pub(super) G: &'a [f64],
    pub(super) W: ScalingView<'a>,
    pub(super) chol: &'a [f64],
}

impl<C: Cols> Kkt<'_, C> {
    /// `u = W⁻¹(W⁻¹bz − bc)`.
    #[inline(always)]
    pub(super) fn u_pass(&self, bz: &[f64], bc: &[f64], u: &mut [f64], t: &mut [f64]) {
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
    pub(super) fn solve_dx<const ACC: bool>(
        &self,
        bx: &[f64],
        u: &[f64],
        dx: &mut [f64],
        tmp: &mut [f64],
    ) {
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
    pub(super) fn back_pass<const ACC: bool, const RES: bool>(
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
    pub(super) fn residual_pass(
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
pub(super) fn step_pass(
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
