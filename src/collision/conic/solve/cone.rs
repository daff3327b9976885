//! The cone `K` (orthant and second-order cones): its layout, Jordan
//! product and division, interior shift and the largest step inside it,
//! for whole vectors ([`ConeLayout`]) and for one second-order block (the
//! kernels of the iteration's passes).

use nalgebra::{DMatrix, DVector};

use super::dense::{Cols, dot, dotn, fmin, norm};

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
pub(super) fn smallest_positive_root(a: f64, b: f64, c: f64) -> f64 {
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

// --- the iteration, in fused passes: every pass visits the orthant rows
// (W diagonal, formulas per entry) and then each second-order cone (formulas
// per block, compiled for the block sizes 3 and 4 of the primitives), so
// that one iteration reads the m-vectors about a dozen times.

/// `out = u ∘ v` on one second-order cone.
#[inline(always)]
pub(super) fn soc_jordan<D: Cols>(dim: D, u: &[f64], v: &[f64], out: &mut [f64]) {
    let d = dim.n();
    let (u, v, out) = (&u[..d], &v[..d], &mut out[..d]);
    out[0] = dotn(dim, u, v);
    for j in 1..d {
        out[j] = u[0] * v[j] + v[0] * u[j];
    }
}

/// `x` with `u ∘ x = r` on one second-order cone (u interior).
#[inline(always)]
pub(super) fn soc_jordan_div<D: Cols>(dim: D, u: &[f64], r: &[f64], x: &mut [f64]) {
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
pub(super) fn soc_max_step<D: Cols>(dim: D, u: &[f64], du: &[f64]) -> f64 {
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
