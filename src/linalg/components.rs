//! Independent blocks of a dense matrix: the connected components of its
//! nonzero pattern (row `i` and column `k` joined where `A[i, k] ≠ 0`).
//!
//! The step's `∂r/∂y` couples only the unknowns of one contact island
//! (its bodies' velocities and its contacts' impulses), so on a scene of
//! many islands it is block diagonal up to a permutation. Its SVD,
//! inverse and LU split into those of the blocks: the singular values of
//! `A` are the union of the blocks', its null space the direct sum of the
//! blocks' (each padded with zeros), and its pseudo-inverse (at one
//! cut-off for all blocks) the block-diagonal matrix of the blocks'
//! pseudo-inverses. A 125-sphere pile's `1650 × 1650` SVD becomes 25 SVDs
//! of `66 × 66` and a few `6 × 6`.

use super::Svd;
use crate::math::DMat;

/// One independent block of a matrix: the rows and columns of a connected
/// component of its nonzero pattern (either may be empty: a zero column
/// is a block without rows, a zero row a block without columns), each in
/// increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Rows of the block.
    pub rows: Vec<usize>,
    /// Columns of the block.
    pub cols: Vec<usize>,
}

impl Block {
    /// The block's entries `A[rows, cols]`.
    pub fn extract(&self, a: &DMat<f64>) -> DMat<f64> {
        DMat::from_fn(self.rows.len(), self.cols.len(), |i, k| {
            a[(self.rows[i], self.cols[k])]
        })
    }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// The independent blocks of `a` (nonzero: `!= 0.0`, so a NaN joins its
/// row and column), ordered by their first row (blocks without rows
/// last, by column). Every row and every column is in exactly one block.
///
/// ```
/// use dualsim::linalg::components;
/// use dualsim::math::DMat;
/// let a = DMat::from_row_slice(3, 3, &[1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0, 0.0, 0.0]);
/// let b = components(&a);
/// assert_eq!(b.len(), 2);
/// assert_eq!((b[0].rows.clone(), b[0].cols.clone()), (vec![0, 2], vec![0, 2]));
/// assert_eq!((b[1].rows.clone(), b[1].cols.clone()), (vec![1], vec![1]));
/// ```
pub fn components(a: &DMat<f64>) -> Vec<Block> {
    let (m, n) = (a.nrows(), a.ncols());
    // Nodes: rows 0..m, columns m..m + n.
    let mut parent: Vec<usize> = (0..m + n).collect();
    for k in 0..n {
        for (i, &x) in a.column(k).iter().enumerate() {
            if x != 0.0 {
                let (ri, rk) = (find(&mut parent, i), find(&mut parent, m + k));
                if ri != rk {
                    parent[ri.max(rk)] = ri.min(rk);
                }
            }
        }
    }
    // A root is its component's smallest node (rows before columns).
    let mut index = vec![usize::MAX; m + n];
    let mut blocks: Vec<Block> = Vec::new();
    for x in 0..m + n {
        let r = find(&mut parent, x);
        if index[r] == usize::MAX {
            index[r] = blocks.len();
            blocks.push(Block::default());
        }
        let b = &mut blocks[index[r]];
        if x < m {
            b.rows.push(x);
        } else {
            b.cols.push(x - m);
        }
    }
    blocks
}

/// The blocks of `a` ([`components`]) where it splits into at least two
/// blocks with both rows and columns; else one block of all its rows and
/// columns: zero rows and columns alone do not split a matrix (the
/// block-wise SVD or LU would be the whole matrix's up to round-off, at
/// no gain), so the whole matrix's is used, bit for bit the dense path.
fn split(a: &DMat<f64>) -> Vec<Block> {
    let blocks = components(a);
    let proper = blocks
        .iter()
        .filter(|b| !b.rows.is_empty() && !b.cols.is_empty())
        .count();
    if proper >= 2 {
        blocks
    } else {
        vec![Block {
            rows: (0..a.nrows()).collect(),
            cols: (0..a.ncols()).collect(),
        }]
    }
}

/// `x[block.cols, :] = f(A[block.rows, block.cols], rhs[block.rows, :])`
/// for every block of `a` (`f(a, rhs)` where it does not split into two
/// blocks with rows and columns): a solve with `a` block by block. A block that
/// is not square makes `a` singular: `Err(singular)` (as does any error
/// of `f`).
pub fn solve_by_blocks<E>(
    a: &DMat<f64>,
    rhs: &DMat<f64>,
    singular: E,
    mut f: impl FnMut(&DMat<f64>, &DMat<f64>) -> Result<DMat<f64>, E>,
) -> Result<DMat<f64>, E> {
    let mut x = DMat::zeros(a.ncols(), rhs.ncols());
    let blocks = split(a);
    if blocks.iter().any(|b| b.rows.len() != b.cols.len()) {
        return Err(singular);
    }
    for b in &blocks {
        let sub = b.extract(a);
        let r = DMat::from_fn(b.rows.len(), rhs.ncols(), |i, c| rhs[(b.rows[i], c)]);
        let xb = f(&sub, &r)?;
        for (i, &k) in b.cols.iter().enumerate() {
            x.row_mut(k).copy_from(&xb.row(i));
        }
    }
    Ok(x)
}

/// The inverse of a square `a`, block by block (the whole matrix's where
/// it does not split into two blocks with rows and columns; `None` when singular: a
/// block that is not square, or whose LU has a zero pivot).
pub fn inverse_by_blocks(a: &DMat<f64>) -> Option<DMat<f64>> {
    let n = a.nrows();
    let mut inv = DMat::zeros(n, n);
    for b in split(a) {
        if b.rows.len() != b.cols.len() {
            return None;
        }
        let ib = b.extract(a).try_inverse()?;
        for (i, &c) in b.cols.iter().enumerate() {
            for (k, &r) in b.rows.iter().enumerate() {
                inv[(c, r)] = ib[(i, k)];
            }
        }
    }
    Some(inv)
}

/// The SVD ([`Svd`]) of each block of `a` (padded with zero rows to square where it
/// has more columns than rows, so that `V` spans all its columns): the
/// SVD of `a`, block by block (the whole matrix's SVD where it does not
/// split into two blocks with rows and columns).
pub struct BlockSvd {
    blocks: Vec<(Block, Option<Svd>)>,
    shape: (usize, usize),
}

impl BlockSvd {
    /// The blocks' SVDs.
    pub fn new(a: &DMat<f64>) -> Self {
        let blocks = split(a)
            .into_iter()
            .map(|b| {
                if b.rows.is_empty() || b.cols.is_empty() {
                    return (b, None);
                }
                let (r, c) = (b.rows.len(), b.cols.len());
                let mut sub = DMat::zeros(r.max(c), c);
                sub.rows_mut(0, r).copy_from(&b.extract(a));
                (b, Some(Svd::new(&sub)))
            })
            .collect();
        BlockSvd {
            blocks,
            shape: (a.nrows(), a.ncols()),
        }
    }

    /// The largest singular value of `a` (NaN where one is).
    pub fn max_singular_value(&self) -> f64 {
        let mut smax = 0.0f64;
        for (_, svd) in &self.blocks {
            if let Some(svd) = svd {
                let s = svd.max_singular_value();
                if s.is_nan() {
                    return f64::NAN;
                }
                smax = smax.max(s);
            }
        }
        smax
    }

    /// The null space of `a` at the cut-off `cut` (singular values
    /// `≤ cut` dropped): its dimension and `‖V_null[cols < nv, :]‖_F` (the
    /// part of the unit null space in the first `nv` unknowns, independent
    /// of the basis).
    pub fn null_part(&self, cut: f64, nv: usize) -> (usize, f64) {
        let (mut dim, mut part) = (0usize, 0.0f64);
        for (b, svd) in &self.blocks {
            match svd {
                None => {
                    // A zero column is a null direction of its own.
                    dim += b.cols.len();
                    part += b.cols.iter().filter(|&&c| c < nv).count() as f64;
                }
                Some(svd) => {
                    let vt = &svd.v_t;
                    for (k, &sk) in svd.singular_values.iter().enumerate() {
                        if sk <= cut {
                            dim += 1;
                            for (i, &c) in b.cols.iter().enumerate() {
                                if c < nv {
                                    part += vt[(k, i)] * vt[(k, i)];
                                }
                            }
                        }
                    }
                }
            }
        }
        (dim, part.sqrt())
    }

    /// The pseudo-inverse of `a` with the singular values `≤ cut` dropped
    /// (`None` for a negative cut or where a block's SVD failed).
    pub fn pseudo_inverse(&self, cut: f64) -> Option<DMat<f64>> {
        let (m, n) = self.shape;
        let mut p = DMat::zeros(n, m);
        for (b, svd) in &self.blocks {
            let Some(svd) = svd else { continue };
            let pb = svd.pseudo_inverse(cut)?;
            // `pb`: cols × (rows + padding); the padding's columns are
            // those of zero rows.
            for (i, &c) in b.cols.iter().enumerate() {
                for (k, &r) in b.rows.iter().enumerate() {
                    p[(c, r)] = pb[(i, k)];
                }
            }
        }
        Some(p)
    }
}
