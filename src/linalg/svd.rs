//! The singular value decomposition of a dense `f64` matrix, by faer,
//! verified by its backward error.
//!
//! nalgebra 0.35's SVD (`DMatrix::svd`) can return factors that do not
//! reconstruct their matrix when some entries are tiny but not zero
//! (dimforge/nalgebra#1368, #1172). A free ball's world inertia carries
//! off-diagonal round-off of order 1e-66 after an impact (the square of a
//! 1e-33 quaternion part); on the 7 × 7 residual Jacobian of such a ball
//! over a frictionless plane, nalgebra's `U S Vᵀ` missed the matrix by
//! 1.1e-3 (entries of order 1), so the pseudo-inverse of the step's
//! `∂r/∂y` was off by 6e-4 and every derivative method gave a spin
//! `∂ω_y/∂v_x = 0.19` from nothing, and `ift` a false "singular"
//! (`tests/all/linalg.rs`). faer's SVD of the same matrix reconstructs it
//! to round-off.
//!
//! [`Svd::new`] checks `max |U S Vᵀ − A| ≤ 1e-12 · max(1, n) · max |A|`
//! and marks a decomposition that misses it (or a matrix with a NaN or
//! an infinity) by NaN singular values, which every caller already
//! refuses as a singular system (`max_singular_value` is NaN).

use crate::math::{DMat, DVec};

/// `A = U diag(s) Vᵀ` of an `m × n` matrix with `m ≥ n` or not: `u` is
/// `m × k`, `s` has `k = min(m, n)` entries in nonincreasing order, `v_t`
/// is `k × n` (the thin factors, nalgebra's layout).
#[derive(Clone, Debug)]
pub struct Svd {
    /// Left singular vectors (`m × k`).
    pub u: DMat<f64>,
    /// Singular values (`k`, nonincreasing; NaN where the decomposition
    /// failed).
    pub singular_values: DVec<f64>,
    /// Right singular vectors, transposed (`k × n`).
    pub v_t: DMat<f64>,
}

impl Svd {
    /// The thin SVD of `a`, checked by its backward error (module docs).
    pub fn new(a: &DMat<f64>) -> Self {
        let (m, n) = (a.nrows(), a.ncols());
        let k = m.min(n);
        let failed = || Svd {
            u: DMat::zeros(m, k),
            singular_values: DVec::from_element(k, f64::NAN),
            v_t: DMat::zeros(k, n),
        };
        if k == 0 {
            return Svd {
                u: DMat::zeros(m, 0),
                singular_values: DVec::zeros(0),
                v_t: DMat::zeros(0, n),
            };
        }
        if a.iter().any(|x| !x.is_finite()) {
            return failed();
        }
        let fa = faer::Mat::<f64>::from_fn(m, n, |i, j| a[(i, j)]);
        let Ok(svd) = fa.thin_svd() else {
            return failed();
        };
        let (fu, fv, fs) = (svd.U(), svd.V(), svd.S().column_vector());
        let u = DMat::from_fn(m, k, |i, j| fu[(i, j)]);
        let v_t = DMat::from_fn(k, n, |i, j| fv[(j, i)]);
        let s = DVec::from_fn(k, |i, _| fs[i]);
        // The backward error.
        let scale = a.amax();
        let mut us = u.clone();
        for (j, mut col) in us.column_iter_mut().enumerate() {
            col *= s[j];
        }
        let miss = (&us * &v_t - a).amax();
        if !(miss <= 1e-12 * (m.max(n) as f64) * scale) {
            return failed();
        }
        Svd {
            u,
            singular_values: s,
            v_t,
        }
    }

    /// The largest singular value (NaN where the decomposition failed, 0
    /// for an empty matrix).
    pub fn max_singular_value(&self) -> f64 {
        let mut smax = 0.0f64;
        for &s in self.singular_values.iter() {
            if s.is_nan() {
                return f64::NAN;
            }
            smax = smax.max(s);
        }
        smax
    }

    /// The pseudo-inverse (`n × m`) with the singular values `≤ cut`
    /// dropped; `None` where the decomposition failed or `cut` is
    /// negative or NaN.
    pub fn pseudo_inverse(&self, cut: f64) -> Option<DMat<f64>> {
        if !(cut >= 0.0) || self.max_singular_value().is_nan() {
            return None;
        }
        let (m, n) = (self.u.nrows(), self.v_t.ncols());
        let mut p = DMat::zeros(n, m);
        for (k, &s) in self.singular_values.iter().enumerate() {
            if s > cut {
                // p += v_k u_kᵀ / s_k
                p.ger(
                    1.0 / s,
                    &self.v_t.row(k).transpose(),
                    &self.u.column(k),
                    1.0,
                );
            }
        }
        Some(p)
    }

    /// The minimum-norm least-squares solution of `A x = b` with the
    /// singular values `≤ cut` dropped; `None` as for
    /// [`pseudo_inverse`](Svd::pseudo_inverse).
    pub fn solve(&self, b: &DVec<f64>, cut: f64) -> Option<DVec<f64>> {
        if !(cut >= 0.0) || self.max_singular_value().is_nan() || b.len() != self.u.nrows() {
            return None;
        }
        let mut x = DVec::zeros(self.v_t.ncols());
        for (k, &s) in self.singular_values.iter().enumerate() {
            if s > cut {
                let c = self.u.column(k).dot(b) / s;
                x.axpy(c, &self.v_t.row(k).transpose(), 1.0);
            }
        }
        Some(x)
    }
}
