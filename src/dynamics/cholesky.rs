//! Sparse `M = Lᵀ D L` factorization exploiting the branch-induced sparsity
//! of the mass matrix (Featherstone, *Rigid Body Dynamics Algorithms*,
//! §6.5, "LTDL"), as in Pinocchio's `cholesky.hpp`.
//!
//! `L` is unit lower triangular with `L_kl ≠ 0` only when `l` is on the
//! path from `k` to the root of the expanded tree (`Model::dof_parent`), so
//! the factorization costs `O(Σ_k depth_k²)` and never fills in. The factor
//! overwrites a copy of `M`: the strict lower triangle holds `L`, the
//! diagonal holds `D`.

use super::Model;
use crate::Scalar;
use crate::math::DMat;

/// Factorizes `h` (a copy of `M`) in place into `Lᵀ D L`.
///
/// ```
/// use dualsim::dynamics::{cholesky, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DMat, Mat3, Pose};
/// let mut m = Model::<f64>::new();
/// let link = RigidInertia::new(1.0, Mat3::identity());
/// let a = m.add_body("a", None, Joint::Revolute { axis: [0.0, 0.0, 1.0] }, Pose::identity(), link).unwrap();
/// m.add_body("b", Some(a), Joint::Revolute { axis: [0.0, 0.0, 1.0] }, Pose::identity(), link).unwrap();
/// let mm = DMat::from_row_slice(2, 2, &[3.0, 1.0, 1.0, 2.0]);
/// let mut f = mm.clone();
/// cholesky::factorize(&m, &mut f);
/// let mut x = DMat::identity(2, 2);
/// cholesky::solve_in_place(&m, &f, &mut x);
/// assert!((mm * x - DMat::identity(2, 2)).norm() < 1e-15);
/// ```
pub fn factorize<T: Scalar>(model: &Model<T>, h: &mut DMat<T>) {
    let n = model.nv;
    for k in (0..n).rev() {
        let mut i = model.dof_parent[k];
        while let Some(ii) = i {
            let a = h[(k, ii)] / h[(k, k)];
            let mut j = Some(ii);
            while let Some(jj) = j {
                let hkj = h[(k, jj)];
                h[(ii, jj)] -= a * hkj;
                j = model.dof_parent[jj];
            }
            h[(k, ii)] = a;
            i = model.dof_parent[ii];
        }
    }
}

/// Solves `M X = B` in place (`B` overwritten by `X`, any number of
/// columns) with the factor from [`factorize`].
pub fn solve_in_place<T: Scalar>(model: &Model<T>, factor: &DMat<T>, b: &mut DMat<T>) {
    let n = model.nv;
    assert_eq!(factor.shape(), (n, n), "factor is nv × nv");
    assert_eq!(b.nrows(), n, "right-hand side has nv rows");
    // Column-major: factor[(k, i)] = f[i * n + k].
    let f = factor.as_slice();
    let parents = &model.dof_parent[..n];
    for x in b.as_mut_slice().chunks_exact_mut(n) {
        solve_column(parents, f, n, x);
    }
}

/// Writes `M⁻¹` into `out` (nv × nv) from the factor of [`factorize`].
///
/// All columns are solved at once with row operations on `X = M⁻¹`
/// (`X[i, :] −= L_ki X[k, :]`), each a contiguous axpy because `X` is
/// symmetric and its rows can be stored as the columns of `out`.
pub fn inverse<T: Scalar>(model: &Model<T>, factor: &DMat<T>, out: &mut DMat<T>) {
    let n = model.nv;
    assert_eq!(factor.shape(), (n, n), "factor is nv × nv");
    assert_eq!(out.shape(), (n, n), "output is nv × nv");
    let f = factor.as_slice();
    let parents = &model.dof_parent[..n];
    out.fill_with_identity();
    let x = out.as_mut_slice();
    // Lᵀ Y = I
    for k in (0..n).rev() {
        let mut i = parents[k];
        while let Some(ii) = i {
            let a = f[ii * n + k];
            let (lo, hi) = x.split_at_mut(k * n);
            for (y, &z) in lo[ii * n..ii * n + n].iter_mut().zip(&hi[..n]) {
                *y -= a * z;
            }
            i = parents[ii];
        }
    }
    // D⁻¹
    for k in 0..n {
        let dinv = T::one() / f[k * n + k];
        for y in &mut x[k * n..k * n + n] {
            *y *= dinv;
        }
    }
    // L X = Z
    for k in 0..n {
        let mut i = parents[k];
        while let Some(ii) = i {
            let a = f[ii * n + k];
            let (lo, hi) = x.split_at_mut(k * n);
            for (y, &z) in hi[..n].iter_mut().zip(&lo[ii * n..ii * n + n]) {
                *y -= a * z;
            }
            i = parents[ii];
        }
    }
}

/// `D⁻¹` then `L x = z`, the second half of a solve.
#[inline]
fn forward_column<T: Scalar>(parents: &[Option<usize>], f: &[T], n: usize, x: &mut [T]) {
    for k in 0..n {
        x[k] /= f[k * n + k];
    }
    for k in 0..n {
        let mut i = parents[k];
        let mut acc = x[k];
        while let Some(ii) = i {
            acc -= f[ii * n + k] * x[ii];
            i = parents[ii];
        }
        x[k] = acc;
    }
}

/// Solves `M x = b` for one column (`x` overwritten).
#[inline]
fn solve_column<T: Scalar>(parents: &[Option<usize>], f: &[T], n: usize, x: &mut [T]) {
    // Lᵀ y = b  (backward: Lᵀ is upper triangular in tree order)
    for k in (0..n).rev() {
        let xk = x[k];
        let mut i = parents[k];
        while let Some(ii) = i {
            x[ii] -= f[ii * n + k] * xk;
            i = parents[ii];
        }
    }
    forward_column(parents, f, n, x);
}
