//! The Nesterov–Todd scaling `W` of an iterate ([`Scaling`]), the slices
//! the iteration's passes read it through, and the normal matrix
//! `GᵀW⁻²G`.

use nalgebra::{DMatrix, DVector};

use super::ConeLayout;
use super::dense::{Cols, Dynamic, Fixed, add_outer, dot, norm};

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
pub(super) fn size(v: &mut Vec<f64>, len: usize) {
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

    pub(super) fn view<'a>(&'a self, layout: &'a ConeLayout) -> ScalingView<'a> {
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
pub(super) struct ScalingView<'a> {
    pub(super) no: usize,
    pub(super) soc: &'a [usize],
    pub(super) w: &'a [f64],
    pub(super) wi: &'a [f64],
    pub(super) eta: &'a [f64],
    pub(super) eta_inv: &'a [f64],
    pub(super) q: &'a [f64],
    pub(super) wb: &'a [f64],
}

impl ScalingView<'_> {
    /// `out = W v`.
    #[inline(always)]
    pub(super) fn apply_w(&self, v: &[f64], out: &mut [f64]) {
        for ((o, vi), w) in out[..self.no].iter_mut().zip(&v[..self.no]).zip(self.w) {
            *o = vi * w;
        }
        self.apply_soc::<false>(v, out);
    }

    /// `out = W⁻¹ v`.
    #[inline(always)]
    pub(super) fn apply_inv(&self, v: &[f64], out: &mut [f64]) {
        for ((o, vi), w) in out[..self.no].iter_mut().zip(&v[..self.no]).zip(self.wi) {
            *o = vi * w;
        }
        self.apply_soc::<true>(v, out);
    }

    /// The second-order-cone rows of `out = W v` (`INV`: `W⁻¹ v`); the
    /// orthant rows of `out` are left as they are.
    #[inline(always)]
    pub(super) fn apply_soc<const INV: bool>(&self, v: &[f64], out: &mut [f64]) {
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
    pub(super) fn normal_matrix<C: Cols>(&self, c: C, G: &[f64], wig: &mut [f64], H: &mut [f64]) {
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

/// One second-order cone's scaling.
#[derive(Clone, Copy)]
pub(super) struct SocW<'a> {
    pub(super) wb: &'a [f64],
    pub(super) eta: f64,
    pub(super) eta_inv: f64,
    pub(super) q: f64,
}

impl SocW<'_> {
    /// `out = W v` (`INV`: `W⁻¹ v`) on the block.
    #[inline(always)]
    pub(super) fn apply<const INV: bool, D: Cols>(&self, dim: D, v: &[f64], out: &mut [f64]) {
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
    pub(super) fn orth(&self) -> (&'a [f64], &'a [f64]) {
        (&self.w[..self.no], &self.wi[..self.no])
    }

    /// `(start, scaling)` of each second-order cone.
    #[inline(always)]
    pub(super) fn socs(&self) -> impl Iterator<Item = (usize, SocW<'a>)> + 'a {
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
