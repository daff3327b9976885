use super::*;

pub(super) fn is_f64<T: Scalar>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>()
}

/// LU of the reduced system: [`DenseLu`] (any scalar, storage reused
/// across iterations), faer's dense (`f64`, large islands) or faer's sparse
/// (`f64`, large islands, block-sparse assembly).
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
        use std::any::Any;
        if r.nrows() >= FAER_MIN_ROWS {
            if let Some(r64) = (r as &dyn Any).downcast_ref::<DMat<f64>>() {
                let m = faer::Mat::<f64>::from_fn(r64.nrows(), r64.ncols(), |i, j| r64[(i, j)]);
                *self = ReducedLu::Faer(m.partial_piv_lu());
                return true;
            }
        }
        if !matches!(self, ReducedLu::Dense(_)) {
            *self = ReducedLu::Dense(DenseLu::default());
        }
        match self {
            ReducedLu::Dense(lu) => lu.factor(r),
            ReducedLu::Faer(_) | ReducedLu::Sparse(_) => unreachable!("set to dense above"),
        }
    }

    /// Factors the block-sparse `a` (`T` is `f64`), redoing the symbolic
    /// analysis when the pattern is `fresh`; `false` when singular (or `T`
    /// is not `f64`).
    pub(super) fn factor_sparse(&mut self, a: &BlockCsc<T>, fresh: bool) -> bool {
        use std::any::Any;
        let Some(a) = (a as &dyn Any).downcast_ref::<BlockCsc<f64>>() else {
            return false;
        };
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
                // T is f64 here (only f64 systems are factored by faer).
                let rhs = faer::Mat::<f64>::from_fn(b.nrows(), 1, |i, _| b[i].re());
                let x = lu.solve(&rhs);
                for i in 0..b.nrows() {
                    b[i] = T::from_re(x[(i, 0)]);
                }
                b.iter().all(|e| e.re().is_finite())
            }
            ReducedLu::Sparse(lu) => {
                use std::any::Any;
                // T is f64 here (only f64 systems are factored sparsely).
                match (b as &mut dyn Any).downcast_mut::<DVec<f64>>() {
                    Some(b) => lu.solve_in_place(b.as_mut_slice()),
                    None => false,
                }
            }
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
                use std::any::Any;
                let mut out = rhs.clone();
                let ncols = out.ncols();
                let x = (&mut out as &mut dyn Any).downcast_mut::<DMat<f64>>()?;
                lu.solve_columns_in_place(x.as_mut_slice(), ncols)
                    .then_some(out)
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
        if is_a {
            a[(i, j)] = v
        } else {
            c[(i, j)] = v
        }
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
