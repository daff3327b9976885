//! Linear algebra written once for the contact layer.
//!
//! * [`SmallLu`]: LU with partial pivoting of a fixed-size `N × N` matrix,
//!   generic over [`Scalar`], on the stack. Pivots are chosen on primal
//!   values (as every decision in dualsim), so the same factorization runs
//!   in a dual scalar and its derivative parts follow the primal's
//!   elimination order. Used for the per-contact blocks of the interior
//!   point (2 × 2, 8 × 8, 12 × 12), where nalgebra's heap `DMatrix` LU was
//!   a fifth of a contact step.
//! * [`DenseLu`]: the same factorization of a dynamic `n × n` matrix in
//!   storage that is reused from one factorization to the next (the
//!   interior point's reduced system, refactored every iteration without
//!   touching the heap once sized).
//! * [`BlockCsc`] and [`SparseLu`] (`f64`): a block-sparse matrix with a
//!   pattern fixed once, refilled in place, and faer's sparse LU of it
//!   (symbolic analysis once per pattern, numeric factorization per set of
//!   values). Used for the reduced system of a large island, whose blocks
//!   couple only the units that share a contact.
//! * [`BlockLu`] (`f64`): the block LU of a [`BlockCsc`] with a symmetric
//!   block pattern (faer's AMD order of the blocks, static pivoting between
//!   blocks, dense blocks), verified by its backward error; the reduced
//!   system's first choice, with [`SparseLu`] as the fallback.
//! * [`components`](fn@components): the independent blocks of a dense matrix (connected
//!   components of its nonzero pattern), and the SVD ([`BlockSvd`]),
//!   inverse and solves of a matrix block by block: the step's `∂r/∂y`
//!   on a scene of many contact islands.
//! * [`Svd`] (`f64`): faer's thin SVD of a dense matrix, verified by its
//!   backward error (nalgebra's can miss its matrix, module docs), and
//!   the pseudo-inverse and minimum-norm solve from it. Every SVD of the
//!   library goes through it.

mod block_lu;
mod components;
mod sparse;
mod svd;

pub use block_lu::BlockLu;
pub use components::{Block, BlockSvd, components, inverse_by_blocks, solve_by_blocks};
pub use sparse::{BlockCsc, BlockRef, SparseLu};
pub use svd::Svd;

use crate::Scalar;
use crate::math::{DMat, DVec};
use nalgebra::SMatrix;

/// LU factorization with partial pivoting of a fixed-size matrix
/// (`P A = L U`, `L` unit lower triangular, both stored in `lu`).
///
/// ```
/// use dualsim::linalg::SmallLu;
/// use nalgebra::{Matrix3, Vector3};
/// let a = Matrix3::new(0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0);
/// let lu = SmallLu::new(&a).unwrap();
/// let x = lu.solve(&Vector3::new(3.0, 2.0, 4.0));
/// assert!((a * x - Vector3::new(3.0, 2.0, 4.0)).norm() < 1e-14);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SmallLu<T: Scalar, const N: usize> {
    lu: SMatrix<T, N, N>,
    perm: [usize; N],
}

impl<T: Scalar, const N: usize> SmallLu<T, N> {
    /// Factors `a`; `None` when a pivot is zero or not finite (primal
    /// values).
    pub fn new(a: &SMatrix<T, N, N>) -> Option<Self> {
        let mut lu = *a;
        let mut perm = [0usize; N];
        for (i, p) in perm.iter_mut().enumerate() {
            *p = i;
        }
        for k in 0..N {
            let mut best = k;
            let mut best_val = lu[(k, k)].re().abs();
            for i in k + 1..N {
                let v = lu[(i, k)].re().abs();
                if v > best_val {
                    best = i;
                    best_val = v;
                }
            }
            if best_val == 0.0 || !best_val.is_finite() {
                return None;
            }
            if best != k {
                lu.swap_rows(k, best);
                perm.swap(k, best);
            }
            let inv = T::one() / lu[(k, k)];
            for i in k + 1..N {
                let l = lu[(i, k)] * inv;
                lu[(i, k)] = l;
                if l.re() != 0.0 || T::DERIVATIVE_ORDER > 0 {
                    for j in k + 1..N {
                        let u = lu[(k, j)];
                        lu[(i, j)] -= l * u;
                    }
                }
            }
        }
        Some(SmallLu { lu, perm })
    }

    /// Solves `A x = b` for every column of `b`.
    pub fn solve<const M: usize>(&self, b: &SMatrix<T, N, M>) -> SMatrix<T, N, M> {
        let mut x = SMatrix::<T, N, M>::zeros();
        for i in 0..N {
            x.set_row(i, &b.row(self.perm[i]));
        }
        for c in 0..M {
            for i in 0..N {
                let mut s = x[(i, c)];
                for j in 0..i {
                    s -= self.lu[(i, j)] * x[(j, c)];
                }
                x[(i, c)] = s;
            }
            for i in (0..N).rev() {
                let mut s = x[(i, c)];
                for j in i + 1..N {
                    s -= self.lu[(i, j)] * x[(j, c)];
                }
                x[(i, c)] = s / self.lu[(i, i)];
            }
        }
        x
    }
}

/// LU factorization with partial pivoting of a dynamic square matrix, in
/// reusable storage: [`factor`](Self::factor) copies the matrix in and
/// factors it in place, so refactoring a matrix of the same size does not
/// allocate. Pivots on primal values, as [`SmallLu`].
///
/// ```
/// use dualsim::linalg::DenseLu;
/// use dualsim::math::{DMat, DVec};
/// let a = DMat::from_row_slice(3, 3, &[0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0]);
/// let mut lu = DenseLu::default();
/// assert!(lu.factor(&a));
/// let b = DVec::from_vec(vec![3.0, 2.0, 4.0]);
/// let mut x = b.clone();
/// assert!(lu.solve_in_place(&mut x));
/// assert!((&a * x - b).norm() < 1e-14);
/// ```
#[derive(Clone, Debug)]
pub struct DenseLu<T: Scalar> {
    lu: DMat<T>,
    /// Row interchanges: step `k` swapped rows `k` and `piv[k]`.
    piv: Vec<usize>,
}

impl<T: Scalar> Default for DenseLu<T> {
    fn default() -> Self {
        DenseLu {
            lu: DMat::zeros(0, 0),
            piv: Vec::new(),
        }
    }
}

impl<T: Scalar> DenseLu<T> {
    /// Number of rows of the factored matrix.
    pub fn nrows(&self) -> usize {
        self.lu.nrows()
    }

    /// Factors `a` (square); `false` when a pivot is zero or not finite
    /// (primal values).
    pub fn factor(&mut self, a: &DMat<T>) -> bool {
        let n = a.nrows();
        debug_assert_eq!(n, a.ncols());
        if self.lu.shape() != (n, n) {
            self.lu = DMat::zeros(n, n);
        }
        self.lu.copy_from(a);
        self.piv.clear();
        let lu = &mut self.lu;
        for k in 0..n {
            let mut best = k;
            let mut best_val = lu[(k, k)].re().abs();
            for i in k + 1..n {
                let v = lu[(i, k)].re().abs();
                if v > best_val {
                    best = i;
                    best_val = v;
                }
            }
            if best_val == 0.0 || !best_val.is_finite() {
                return false;
            }
            if best != k {
                lu.swap_rows(k, best);
            }
            self.piv.push(best);
            let inv = T::one() / lu[(k, k)];
            for i in k + 1..n {
                let l = lu[(i, k)] * inv;
                lu[(i, k)] = l;
                if l.re() != 0.0 || T::DERIVATIVE_ORDER > 0 {
                    for j in k + 1..n {
                        let u = lu[(k, j)];
                        lu[(i, j)] -= l * u;
                    }
                }
            }
        }
        true
    }

    /// Solves `A x = b` in place (`b` becomes `x`); `false` when the
    /// solution is not finite.
    pub fn solve_in_place(&self, b: &mut DVec<T>) -> bool {
        let n = self.lu.nrows();
        for (k, &p) in self.piv.iter().enumerate() {
            b.swap_rows(k, p);
        }
        let x = b.as_mut_slice();
        for i in 0..n {
            let mut s = x[i];
            for j in 0..i {
                s -= self.lu[(i, j)] * x[j];
            }
            x[i] = s;
        }
        for i in (0..n).rev() {
            let mut s = x[i];
            for j in i + 1..n {
                s -= self.lu[(i, j)] * x[j];
            }
            x[i] = s / self.lu[(i, i)];
        }
        x.iter().all(|e| e.re().is_finite())
    }

    /// Solves `A X = B` for every column of `B`; `None` when the solution
    /// is not finite.
    pub fn solve_mat(&self, b: &DMat<T>) -> Option<DMat<T>> {
        let mut out = b.clone();
        let mut col = DVec::zeros(b.nrows());
        for j in 0..b.ncols() {
            col.copy_from(&b.column(j));
            if !self.solve_in_place(&mut col) {
                return None;
            }
            out.set_column(j, &col);
        }
        Some(out)
    }
}
