use super::*;

/// How many reduced systems this thread has factored by each path since
/// it started: a diagnostic for tests, which path a scalar type takes
/// (`tests/all/scalar.rs`). Counted per thread (a solve runs on its
/// caller's thread), so tests running in parallel do not mix.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FactorCounts {
    /// By the generic [`DenseLu`] (any scalar).
    pub generic: u64,
    /// By faer's dense LU (a scalar with the `f64` view).
    pub faer_dense: u64,
    /// By the block-sparse LUs (a scalar with the `f64` view).
    pub faer_sparse: u64,
}

thread_local! {
    static COUNTS: std::cell::Cell<FactorCounts> = const {
        std::cell::Cell::new(FactorCounts {
            generic: 0,
            faer_dense: 0,
            faer_sparse: 0,
        })
    };
}

/// This thread's [`FactorCounts`].
#[doc(hidden)]
pub fn factorizations() -> FactorCounts {
    COUNTS.with(|c| c.get())
}

fn count(f: impl FnOnce(&mut FactorCounts)) {
    COUNTS.with(|c| {
        let mut n = c.get();
        f(&mut n);
        c.set(n);
    });
}

/// LU of the reduced system: [`DenseLu`] (any scalar, storage reused
/// across iterations), faer's dense or faer's sparse (large islands,
/// block-sparse assembly), both for a scalar with the `f64` view
/// ([`Scalar::f64_view`]).
// One per factorization buffer, never moved in the iterations: the size of
// the sparse variant costs nothing, boxing it would cost an allocation.
#[allow(clippy::large_enum_variant)]
pub(super) enum ReducedLu<T: Scalar> {
    Dense(DenseLu<T>),
    Faer(faer::linalg::solvers::PartialPivLu<f64>),
    Sparse(SparseReduced),
}

/// The sparse factorizations of one block pattern: the block LU with
/// static pivoting first ([`BlockLu`]), faer's pivoting sparse LU when it
/// fails (a small diagonal pivot or a backward error above its bound).
pub(super) struct SparseReduced {
    pub(super) block: Option<BlockLu>,
    pub(super) pivoting: Option<SparseLu>,
    /// Which one holds the current factorization.
    pub(super) by_block: bool,
}

impl SparseReduced {
    pub(super) fn nrows(&self) -> usize {
        match (&self.block, &self.pivoting) {
            (Some(b), _) => b.nrows(),
            (None, Some(p)) => p.nrows(),
            (None, None) => 0,
        }
    }

    pub(super) fn factor(&mut self, a: &BlockCsc<f64>) -> bool {
        if let Some(b) = &mut self.block {
            if b.factor(a) {
                self.by_block = true;
                return true;
            }
        }
        self.by_block = false;
        if self.pivoting.is_none() {
            self.pivoting = SparseLu::new(a);
        }
        self.pivoting.as_mut().is_some_and(|p| p.factor(a))
    }

    pub(super) fn solve_in_place(&self, b: &mut [f64]) -> bool {
        match (&self.block, &self.pivoting) {
            (Some(lu), _) if self.by_block => lu.solve_in_place(b),
            (_, Some(lu)) if !self.by_block => lu.solve_in_place(b),
            _ => false,
        }
    }

    pub(super) fn solve_columns_in_place(&self, b: &mut [f64], ncols: usize) -> bool {
        match (&self.block, &self.pivoting) {
            (Some(lu), _) if self.by_block => {
                let n = lu.nrows();
                b.chunks_mut(n.max(1))
                    .take(ncols)
                    .all(|c| lu.solve_in_place(c))
            }
            (_, Some(lu)) if !self.by_block => lu.solve_columns_in_place(b, ncols),
            _ => false,
        }
    }
}

impl<T: Scalar> ReducedLu<T> {
    /// Factors `r`, reusing the storage of a previous dense factorization;
    /// `false` when `r` is singular.
    pub(super) fn factor(&mut self, r: &DMat<T>) -> bool {
        if r.nrows() >= FAER_MIN_ROWS {
            if let Some(r64) = T::f64_view(r.as_slice()) {
                // Column-major, as nalgebra stores it.
                let n = r.nrows();
                let m = faer::Mat::<f64>::from_fn(n, r.ncols(), |i, j| r64[i + j * n]);
                *self = ReducedLu::Faer(m.partial_piv_lu());
                count(|c| c.faer_dense += 1);
                return true;
            }
        }
        count(|c| c.generic += 1);
        if !matches!(self, ReducedLu::Dense(_)) {
            *self = ReducedLu::Dense(DenseLu::default());
        }
        match self {
            ReducedLu::Dense(lu) => lu.factor(r),
            ReducedLu::Faer(_) | ReducedLu::Sparse(_) => unreachable!("set to dense above"),
        }
    }

    /// Factors the block-sparse `a` (assembled from the primal values of
    /// a scalar with the `f64` view), redoing the symbolic analysis when
    /// the pattern is `fresh`; `false` when singular (or `T` has no `f64`
    /// view, whose solves would have nowhere to go).
    pub(super) fn factor_sparse(&mut self, a: &BlockCsc<f64>, fresh: bool) -> bool {
        if !has_f64_view::<T>() {
            return false;
        }
        count(|c| c.faer_sparse += 1);
        let reuse = !fresh && matches!(self, ReducedLu::Sparse(lu) if lu.nrows() == a.dim());
        if !reuse {
            *self = ReducedLu::Sparse(SparseReduced {
                block: BlockLu::new(a),
                pivoting: None,
                by_block: false,
            });
        }
        match self {
            ReducedLu::Sparse(lu) => lu.factor(a),
            _ => false,
        }
    }

    /// Solves in place; `false` when the solution is not finite.
    pub(super) fn solve_in_place(&self, b: &mut DVec<T>) -> bool {
        match self {
            ReducedLu::Dense(lu) => lu.solve_in_place(b),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::Solve;
                // T has the f64 view here (only such systems are factored
                // by faer): its primal values are its values.
                let rhs = faer::Mat::<f64>::from_fn(b.nrows(), 1, |i, _| b[i].re());
                let x = lu.solve(&rhs);
                for i in 0..b.nrows() {
                    b[i] = T::from_re(x[(i, 0)]);
                }
                b.iter().all(|e| e.re().is_finite())
            }
            // Only a scalar with the f64 view is factored sparsely.
            ReducedLu::Sparse(lu) => match T::f64_view_mut(b.as_mut_slice()) {
                Some(b) => lu.solve_in_place(b),
                None => false,
            },
        }
    }

    /// Solves for every column of `rhs`.
    pub(super) fn solve_mat(&self, rhs: &DMat<T>) -> Option<DMat<T>> {
        match self {
            ReducedLu::Dense(lu) => lu.solve_mat(rhs),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::Solve;
                let b =
                    faer::Mat::<f64>::from_fn(rhs.nrows(), rhs.ncols(), |i, j| rhs[(i, j)].re());
                let x = lu.solve(&b);
                if !x.col_iter().all(|c| c.iter().all(|e| e.is_finite())) {
                    return None;
                }
                Some(DMat::from_fn(rhs.nrows(), rhs.ncols(), |i, j| {
                    T::from_re(x[(i, j)])
                }))
            }
            ReducedLu::Sparse(lu) => {
                let mut out = rhs.clone();
                let ncols = out.ncols();
                let x = T::f64_view_mut(out.as_mut_slice())?;
                lu.solve_columns_in_place(x, ncols).then_some(out)
            }
        }
    }

    /// The inverse of the reduced matrix.
    pub(super) fn try_inverse(&self) -> Option<DMat<T>> {
        let n = match self {
            ReducedLu::Dense(lu) => lu.nrows(),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::ShapeCore;
                lu.nrows()
            }
            ReducedLu::Sparse(lu) => lu.nrows(),
        };
        self.solve_mat(&DMat::<T>::identity(n, n))
    }
}

/// LU of `A_c` and `A_c⁻¹ C_c` of one contact (the local block of the KKT
/// reduction), fixed-size per friction law: no heap.
pub(super) enum LocalLu<T: Scalar> {
    N2(SmallLu<T, 2>, SMatrix<T, 2, 3>),
    N8(SmallLu<T, 8>, SMatrix<T, 8, 3>),
    N12(SmallLu<T, 12>, SMatrix<T, 12, 3>),
}

pub(super) fn local_lu<T: Scalar, const N: usize>(
    law: Law,
    x: &[T],
    mu: T,
    nt: bool,
) -> Option<(SmallLu<T, N>, SMatrix<T, N, 3>)> {
    let mut a = SMatrix::<T, N, N>::zeros();
    let mut c = SMatrix::<T, N, 3>::zeros();
    local_jacobian_with(law, x, mu, nt, |is_a, i, j, v| {
        if is_a { a[(i, j)] = v } else { c[(i, j)] = v }
    });
    let lu = SmallLu::new(&a)?;
    let ainv_c = lu.solve(&c);
    Some((lu, ainv_c))
}

macro_rules! with_local {
    ($self:expr, |$lu:ident, $ac:ident| $body:expr) => {
        match $self {
            LocalLu::N2($lu, $ac) => $body,
            LocalLu::N8($lu, $ac) => $body,
            LocalLu::N12($lu, $ac) => $body,
        }
    };
}

impl<T: Scalar> LocalLu<T> {
    pub(super) fn new(law: Law, x: &[T], mu: T, nt: bool) -> Option<Self> {
        Some(match law.size() {
            2 => {
                let (l, c) = local_lu::<T, 2>(law, x, mu, nt)?;
                LocalLu::N2(l, c)
            }
            8 => {
                let (l, c) = local_lu::<T, 8>(law, x, mu, nt)?;
                LocalLu::N8(l, c)
            }
            12 => {
                let (l, c) = local_lu::<T, 12>(law, x, mu, nt)?;
                LocalLu::N12(l, c)
            }
            n => unreachable!("no friction law has {n} unknowns"),
        })
    }

    /// `out = A_c⁻¹ r`; `false` when not finite.
    pub(super) fn solve_into(&self, r: &DVec<T>, out: &mut DVec<T>) -> bool {
        with_local!(self, |lu, _ac| {
            let b = SVector::from_fn(|i, _| r[i]);
            let x = lu.solve(&b);
            out.as_mut_slice().copy_from_slice(x.as_slice());
            x.iter().all(|e| e.re().is_finite())
        })
    }

    /// `A_c⁻¹ C_c dy`, element `i`.
    pub(super) fn ainv_c_times(&self, dy: &Vec3<T>, i: usize) -> T {
        with_local!(self, |_lu, ac| ac[(i, 0)] * dy[0]
            + ac[(i, 1)] * dy[1]
            + ac[(i, 2)] * dy[2])
    }

    /// `A_c⁻¹ C_c` as a dynamic matrix.
    pub(super) fn ainv_c(&self) -> DMat<T> {
        with_local!(self, |_lu, ac| DMat::from_column_slice(
            ac.nrows(),
            3,
            ac.as_slice()
        ))
    }

    /// `E A_c⁻¹ C_c` (3 × 3): the impulse response to `dy`.
    pub(super) fn n3(&self, law: Law) -> Matrix3<T> {
        with_local!(self, |_lu, ac| {
            let mut m = Matrix3::zeros();
            for j in 0..3 {
                m.set_column(j, &law.impulse(&ac.column(j)));
            }
            m
        })
    }
}
