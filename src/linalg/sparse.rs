//! Block-sparse square matrices with a fixed pattern, and their sparse LU
//! (faer's, `f64`).
//!
//! A [`BlockCsc`] is a square matrix partitioned into blocks of rows and
//! columns of given sizes (`sizes[b]` rows and columns for block `b`),
//! with a set of non-zero blocks fixed at construction: every stored block
//! is dense. It is stored in compressed sparse columns, so faer's sparse
//! LU reads it without a copy; the position of every entry of a stored
//! block is computed once, so values are refilled in place
//! ([`BlockCsc::clear`], [`BlockCsc::add`]) without touching the heap.
//!
//! A [`SparseLu`] holds the symbolic factorization of a pattern (fill
//! reducing column ordering by COLAMD, supernodal elimination structure;
//! computed once) and refactors the numeric values of any matrix with that pattern
//! (partial pivoting by rows), reusing its storage and scratch.

use std::sync::Mutex;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::lu::{
    LuRef, LuSymbolicParams, NumericLu, SymbolicLu, factorize_symbolic_lu,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Par};

/// Where a stored block's entries are: entry `(r, c)` of the block is
/// `values[start + c * stride + r]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    start: usize,
    stride: usize,
}

impl BlockRef {
    /// `(start, stride)`: entry `(r, c)` of the block is
    /// `values[start + c * stride + r]`.
    pub(crate) fn parts(self) -> (usize, usize) {
        (self.start, self.stride)
    }
}

/// A square block-sparse matrix in compressed sparse columns with a
/// pattern fixed at construction (see the [`linalg`](crate::linalg) module docs).
///
/// ```
/// use dualsim::linalg::BlockCsc;
/// // Blocks of 2 and 1 rows; blocks (0, 0), (1, 1) and (1, 0) stored.
/// let mut a = BlockCsc::<f64>::new(&[2, 1], [(1, 0)]);
/// assert_eq!((a.dim(), a.nnz()), (3, 7));
/// let b = a.block(1, 0).unwrap();
/// a.add(b, 0, 1, 5.0);
/// assert_eq!(a.get(2, 1), 5.0);
/// assert!(a.block(0, 1).is_none());
/// ```
#[derive(Clone, Debug)]
pub struct BlockCsc<T> {
    sizes: Vec<usize>,
    offsets: Vec<usize>,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    /// Stored blocks of block column `j`: `blocks[block_ptr[j]..block_ptr[j + 1]]`,
    /// `(block row, offset of its first row within each column of block j)`,
    /// sorted by block row.
    block_ptr: Vec<usize>,
    blocks: Vec<(usize, usize)>,
    values: Vec<T>,
}

impl<T: Copy + num_traits::Zero + std::ops::AddAssign> BlockCsc<T> {
    /// The pattern of blocks of sizes `sizes` with the diagonal blocks and
    /// the blocks `(i, j)` of `coupled` (block row, block column; repeats
    /// allowed), all values zero.
    ///
    /// # Panics
    /// When a block index of `coupled` is out of range.
    #[track_caller]
    pub fn new(sizes: &[usize], coupled: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let nb = sizes.len();
        let mut offsets = Vec::with_capacity(nb + 1);
        offsets.push(0);
        for s in sizes {
            offsets.push(offsets.last().copied().unwrap_or(0) + s);
        }
        let mut rows_of: Vec<Vec<usize>> = (0..nb).map(|j| vec![j]).collect();
        for (i, j) in coupled {
            assert!(i < nb && j < nb, "block ({i}, {j}) of a {nb}-block matrix");
            rows_of[j].push(i);
        }
        let n = offsets[nb];
        let mut col_ptr = Vec::with_capacity(n + 1);
        col_ptr.push(0);
        let mut row_idx = Vec::new();
        let mut block_ptr = Vec::with_capacity(nb + 1);
        block_ptr.push(0);
        let mut blocks = Vec::new();
        for (j, rows) in rows_of.iter_mut().enumerate() {
            rows.sort_unstable();
            rows.dedup();
            let mut base = 0;
            for &i in rows.iter() {
                blocks.push((i, base));
                base += sizes[i];
            }
            block_ptr.push(blocks.len());
            for _ in 0..sizes[j] {
                for &i in rows.iter() {
                    row_idx.extend(offsets[i]..offsets[i + 1]);
                }
                col_ptr.push(row_idx.len());
            }
        }
        let values = vec![T::zero(); row_idx.len()];
        BlockCsc {
            sizes: sizes.to_vec(),
            offsets,
            col_ptr,
            row_idx,
            block_ptr,
            blocks,
            values,
        }
    }

    /// Number of rows (and columns).
    pub fn dim(&self) -> usize {
        self.col_ptr.len() - 1
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Block sizes.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Where block `(i, j)` is stored; `None` when it is not in the pattern
    /// (or out of range).
    pub fn block(&self, i: usize, j: usize) -> Option<BlockRef> {
        if i >= self.sizes.len() || j >= self.sizes.len() {
            return None;
        }
        let list = &self.blocks[self.block_ptr[j]..self.block_ptr[j + 1]];
        let k = list.binary_search_by_key(&i, |b| b.0).ok()?;
        let c0 = self.offsets[j];
        Some(BlockRef {
            start: self.col_ptr[c0] + list[k].1,
            stride: self.col_ptr[c0 + 1] - self.col_ptr[c0],
        })
    }

    /// Sets every stored value to zero.
    pub fn clear(&mut self) {
        self.values.fill(T::zero());
    }

    /// Adds `v` to entry `(r, c)` of the block at `b` (block-local indices,
    /// within the block's size).
    #[inline]
    pub fn add(&mut self, b: BlockRef, r: usize, c: usize, v: T) {
        self.values[b.start + c * b.stride + r] += v;
    }

    /// Entry `(i, j)` of the matrix (zero outside the pattern).
    pub fn get(&self, i: usize, j: usize) -> T {
        let col = &self.row_idx[self.col_ptr[j]..self.col_ptr[j + 1]];
        match col.binary_search(&i) {
            Ok(k) => self.values[self.col_ptr[j] + k],
            Err(_) => T::zero(),
        }
    }

    /// The stored values, column by column.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Every stored block: `(block row, block column, where it is)`.
    pub fn stored_blocks(&self) -> impl Iterator<Item = (usize, usize, BlockRef)> + '_ {
        (0..self.sizes.len()).flat_map(move |j| {
            let c0 = self.offsets[j];
            let stride = self.col_ptr[c0 + 1] - self.col_ptr[c0];
            self.blocks[self.block_ptr[j]..self.block_ptr[j + 1]]
                .iter()
                .map(move |&(i, base)| {
                    let b = BlockRef {
                        start: self.col_ptr[c0] + base,
                        stride,
                    };
                    (i, j, b)
                })
        })
    }
}

impl BlockCsc<f64> {
    /// `y += A x`.
    ///
    /// # Panics
    /// When `x` or `y` is not of the matrix dimension.
    #[track_caller]
    pub fn mul_add(&self, x: &[f64], y: &mut [f64]) {
        let n = self.dim();
        assert!(x.len() == n && y.len() == n, "vector size");
        for (j, xj) in x.iter().enumerate() {
            let (a, b) = (self.col_ptr[j], self.col_ptr[j + 1]);
            for (r, v) in self.row_idx[a..b].iter().zip(&self.values[a..b]) {
                y[*r] += v * xj;
            }
        }
    }

    /// The largest absolute row sum, `‖A‖∞`, with `rows` (of the matrix
    /// dimension) as scratch.
    ///
    /// # Panics
    /// When `rows` is not of the matrix dimension.
    #[track_caller]
    pub fn norm_inf(&self, rows: &mut [f64]) -> f64 {
        assert_eq!(rows.len(), self.dim(), "scratch size");
        rows.fill(0.0);
        for (r, v) in self.row_idx.iter().zip(&self.values) {
            rows[*r] += v.abs();
        }
        rows.iter().fold(0.0, |m, v| m.max(*v))
    }

    fn symbolic(&self) -> SymbolicSparseColMatRef<'_, usize> {
        let n = self.dim();
        SymbolicSparseColMatRef::new_checked(n, n, &self.col_ptr, None, &self.row_idx)
    }
}

/// Sparse LU of the matrices of one [`BlockCsc`] pattern: symbolic
/// analysis once ([`SparseLu::new`]), numeric factorization of each new
/// set of values ([`SparseLu::factor`]) in reused storage.
///
/// ```
/// use dualsim::linalg::{BlockCsc, SparseLu};
/// let mut a = BlockCsc::<f64>::new(&[1, 1, 1], [(0, 1), (1, 0), (1, 2), (2, 1)]);
/// // [[0, 2, 0], [1, 1, 1], [0, 3, 4]] (the first pivot needs a row swap)
/// for (i, j, v) in [(0, 1, 2.0), (1, 0, 1.0), (1, 1, 1.0), (1, 2, 1.0), (2, 1, 3.0), (2, 2, 4.0)] {
///     let b = a.block(i, j).unwrap();
///     a.add(b, 0, 0, v);
/// }
/// let mut lu = SparseLu::new(&a).unwrap();
/// assert!(lu.factor(&a));
/// let mut x = [2.0, 3.0, 7.0];
/// assert!(lu.solve_in_place(&mut x));
/// for (xi, ei) in x.iter().zip([1.0, 1.0, 1.0]) {
///     assert!((xi - ei).abs() < 1e-14);
/// }
/// ```
pub struct SparseLu {
    symbolic: SymbolicLu<usize>,
    numeric: NumericLu<usize, f64>,
    factor_mem: MemBuffer,
    /// Scratch of one-column solves (behind a lock: solves take `&self`).
    solve_mem: Mutex<MemBuffer>,
    factored: bool,
}

impl std::fmt::Debug for SparseLu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseLu")
            .field("dim", &self.symbolic.nrows())
            .field("factored", &self.factored)
            .finish()
    }
}

impl SparseLu {
    /// Symbolic analysis of `a`'s pattern; `None` when faer cannot allocate
    /// it.
    pub fn new(a: &BlockCsc<f64>) -> Option<Self> {
        // Supernodal always: the blocks are dense (6 × 6 for free bodies),
        // so faer's dense kernels on supernodes beat its simplicial
        // (scalar) factorization, which it picks by default for these
        // sizes (measured on layers of 16 to 196 spheres: 1.0× to 3.2×
        // faster; `examples/scaling.rs`).
        let params = LuSymbolicParams {
            supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
            ..Default::default()
        };
        let symbolic = factorize_symbolic_lu(a.symbolic(), params).ok()?;
        let factor_mem = MemBuffer::try_new(
            symbolic.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default()),
        )
        .ok()?;
        let solve_mem =
            MemBuffer::try_new(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq)).ok()?;
        Some(SparseLu {
            symbolic,
            numeric: NumericLu::new(),
            factor_mem,
            solve_mem: Mutex::new(solve_mem),
            factored: false,
        })
    }

    /// Number of rows of the factored matrix.
    pub fn nrows(&self) -> usize {
        self.symbolic.nrows()
    }

    /// Factors `a`, which must have the pattern given to [`new`](Self::new);
    /// `false` when it is singular (a zero pivot) or faer cannot allocate.
    ///
    /// # Panics
    /// When `a`'s dimension differs from the analysed pattern's.
    #[track_caller]
    pub fn factor(&mut self, a: &BlockCsc<f64>) -> bool {
        assert_eq!(a.dim(), self.nrows(), "sparse LU of another pattern");
        let m = SparseColMatRef::new(a.symbolic(), &a.values);
        let stack = MemStack::new(&mut self.factor_mem);
        self.factored = self
            .symbolic
            .factorize_numeric_lu(&mut self.numeric, m, Par::Seq, stack, Default::default())
            .is_ok();
        self.factored
    }

    fn lu(&self) -> LuRef<'_, usize, f64> {
        LuRef::new_unchecked(&self.symbolic, &self.numeric)
    }

    /// Solves `A x = b` in place (`b` becomes `x`); `false` when not
    /// factored or the solution is not finite.
    ///
    /// # Panics
    /// When `b.len()` is not the matrix dimension.
    #[track_caller]
    pub fn solve_in_place(&self, b: &mut [f64]) -> bool {
        if !self.factored {
            return false;
        }
        let n = b.len();
        let mut mem = self.solve_mem.lock().unwrap_or_else(|e| e.into_inner());
        let rhs = MatMut::from_column_major_slice_mut(b, n, 1);
        self.lu()
            .solve_in_place_with_conj(Conj::No, rhs, Par::Seq, MemStack::new(&mut mem));
        b.iter().all(|x| x.is_finite())
    }

    /// Solves `A X = B` in place for the `ncols` columns of `b` (column
    /// major); `false` when not factored or the solution is not finite.
    /// Allocates its scratch.
    ///
    /// # Panics
    /// When `b.len()` is not `ncols` times the matrix dimension.
    #[track_caller]
    pub fn solve_columns_in_place(&self, b: &mut [f64], ncols: usize) -> bool {
        if !self.factored {
            return false;
        }
        let n = self.nrows();
        assert_eq!(b.len(), n * ncols, "right-hand side size");
        let Ok(mut mem) =
            MemBuffer::try_new(self.symbolic.solve_in_place_scratch::<f64>(ncols, Par::Seq))
        else {
            return false;
        };
        let rhs = MatMut::from_column_major_slice_mut(b, n, ncols);
        self.lu()
            .solve_in_place_with_conj(Conj::No, rhs, Par::Seq, MemStack::new(&mut mem));
        b.iter().all(|x| x.is_finite())
    }
}
