use super::*;

/// The result of one island's solve.
pub(super) struct IslSol<T: Scalar> {
    pub(super) u: DVec<T>,
    pub(super) evals: Vec<PairEval<T>>,
    pub(super) iterations: usize,
    pub(super) residual: f64,
    pub(super) complementarity: f64,
    pub(super) capped: bool,
}

/// A Newton matrix factored once (f64 LU with partial pivoting, packed,
/// in reusable storage) and applied to right-hand sides in any scalar: the
/// matrix is primal, so `J⁻¹ r` in a dual scalar is the same as factoring
/// `J` embedded in that scalar. (`linalg::DenseLu<f64>` factors the same
/// way but solves only `f64` right-hand sides.)
#[derive(Default)]
pub(super) struct Factored {
    pub(super) lu: DMat<f64>,
    /// Step `k` swapped rows `k` and `piv[k]`.
    pub(super) piv: Vec<usize>,
}

impl Factored {
    /// Factors `j` in place of the previous factors.
    pub(super) fn factor(&mut self, j: &DMat<f64>) -> Result<(), SolveError> {
        let n = j.nrows();
        if self.lu.shape() != (n, n) {
            self.lu = DMat::zeros(n, n);
        }
        self.lu.as_mut_slice().copy_from_slice(j.as_slice());
        self.piv.clear();
        self.piv.resize(n, 0);
        let ok = lu_dispatch(self.lu.as_mut_slice(), n, &mut self.piv);
        if ok {
            Ok(())
        } else {
            Err(SolveError::Singular("single-level Newton system"))
        }
    }

    /// The Newton direction `−J⁻¹ rhs`.
    pub(super) fn solve<T: Scalar>(&self, rhs: &DVec<T>) -> DVec<T> {
        let mut x = rhs.clone();
        let n = x.len();
        let xs = x.as_mut_slice();
        for (k, &p) in self.piv.iter().enumerate() {
            xs.swap(k, p);
        }
        let lu = &self.lu.as_slice()[..n * n];
        // forward (unit lower), column oriented
        for k in 0..n {
            let (head, tail) = xs.split_at_mut(k + 1);
            let xk = head[k];
            if xk.re() != 0.0 || T::DERIVATIVE_ORDER > 0 {
                for (xi, &l) in tail.iter_mut().zip(&lu[k * n + k + 1..(k + 1) * n]) {
                    if l != 0.0 {
                        *xi -= xk * T::from_re(l);
                    }
                }
            }
        }
        for k in (0..n).rev() {
            let col = &lu[k * n..(k + 1) * n];
            let (head, tail) = xs.split_at_mut(k);
            let xk = tail[0] / T::from_re(col[k]);
            tail[0] = xk;
            for (xi, &u) in head.iter_mut().zip(&col[..k]) {
                if u != 0.0 {
                    *xi -= xk * T::from_re(u);
                }
            }
        }
        for v in xs.iter_mut() {
            *v = -*v;
        }
        x
    }
}

/// The LU factorization of [`Factored::factor`] compiled for AVX2 when the
/// processor has it (the same operations in the same order, no FMA
/// contraction: bit for bit the baseline's result, wider registers).
pub(super) fn lu_dispatch(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked just above).
            return unsafe { lu_avx2(lu, n, piv) };
        }
    }
    lu_in_place(lu, n, piv)
}

/// [`lu_in_place`] compiled with AVX2 enabled.
///
/// # Safety
/// The processor must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn lu_avx2(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    lu_in_place(lu, n, piv)
}

/// Packed LU with partial pivoting of the column-major `n × n` matrix
/// `lu` (step `k` swaps rows `k` and `piv[k]`); `false` when a pivot
/// column is zero or not finite.
#[inline(always)]
pub(super) fn lu_in_place(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    let lu = &mut lu[..n * n];
    let piv = &mut piv[..n];
    // column-major: (i, k) at i + n k
    for k in 0..n {
        let col = &lu[k * n..(k + 1) * n];
        let mut best = k;
        let mut best_val = col[k].abs();
        for (i, v) in col.iter().enumerate().skip(k + 1) {
            if v.abs() > best_val {
                best = i;
                best_val = v.abs();
            }
        }
        if best_val == 0.0 || !best_val.is_finite() {
            return false;
        }
        if best != k {
            for c in lu.chunks_exact_mut(n) {
                c.swap(k, best);
            }
        }
        piv[k] = best;
        let inv = 1.0 / lu[k + n * k];
        for v in &mut lu[k * n + k + 1..(k + 1) * n] {
            *v *= inv;
        }
        let (left, right) = lu.split_at_mut((k + 1) * n);
        let lcol = &left[k * n + k + 1..(k + 1) * n];
        for colc in right.chunks_exact_mut(n) {
            let ukc = colc[k];
            if ukc != 0.0 {
                for (x, l) in colc[k + 1..].iter_mut().zip(lcol) {
                    *x -= l * ukc;
                }
            }
        }
    }
    true
}
