//! Block LU of a [`BlockCsc`] with a symmetric block pattern: a
//! fill-reducing order of the blocks (faer's AMD on the block graph), the
//! filled block pattern computed once, and a right-looking numeric
//! factorization on dense blocks with partial pivoting inside each
//! diagonal block (static pivoting between blocks), verified by its
//! backward error.
//!
//! Why not faer's sparse LU alone: it orders the columns for partial
//! pivoting by rows (COLAMD, fill bounded by the pattern of `AᵀA`), so on
//! the reduced system of a contact island, whose block pattern is the
//! symmetric contact graph, it fills far more than a symmetric order does
//! (on a layer of 8 × 8 spheres it was three fifths of a step), and it
//! works entry by entry where every block is a dense 6 × 6. faer has no
//! sparse LU with static pivoting, so this module writes that one
//! elimination; faer still orders it. Static pivoting can fail where
//! partial pivoting across blocks would not (a diagonal block that is
//! singular or small against its column): [`BlockLu::factor`] then reports
//! failure, and its caller falls back to [`SparseLu`](super::SparseLu).
//! The reduced systems of the interior point are dominated by their
//! diagonal blocks (mass matrices plus positive contact terms), where
//! static pivoting is stable.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::SymbolicSparseColMatRef;
use faer::sparse::linalg::amd;

use super::sparse::BlockCsc;

/// Largest backward error `‖A x − b‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞)` a
/// factorization may show on its check solve before it is rejected.
const BACKWARD_ERROR_MAX: f64 = 1e-12;

/// A diagonal pivot smaller than this times the largest entry of its
/// original diagonal block fails the static pivoting.
const PIVOT_MIN: f64 = 1e-13;

/// The symbolic and numeric block LU of one pattern (see the module docs).
///
/// ```
/// use dualsim::linalg::{BlockCsc, BlockLu};
/// // A block tridiagonal matrix of three 2 × 2 blocks.
/// let mut a = BlockCsc::<f64>::new(&[2, 2, 2], [(0, 1), (1, 0), (1, 2), (2, 1)]);
/// for i in 0..3 {
///     let d = a.block(i, i).unwrap();
///     a.add(d, 0, 0, 4.0);
///     a.add(d, 1, 1, 3.0);
///     a.add(d, 1, 0, 1.0);
/// }
/// for (i, j) in [(0, 1), (1, 0), (1, 2), (2, 1)] {
///     let b = a.block(i, j).unwrap();
///     a.add(b, 0, 1, -1.0);
/// }
/// let mut lu = BlockLu::new(&a).unwrap();
/// assert!(lu.factor(&a));
/// let x_true = [1.0, -2.0, 0.5, 3.0, -1.0, 2.0];
/// let mut b = vec![0.0; 6];
/// a.mul_add(&x_true, &mut b);
/// assert!(lu.solve_in_place(&mut b));
/// for (x, e) in b.iter().zip(x_true) {
///     assert!((x - e).abs() < 1e-14);
/// }
/// ```
#[derive(Clone, Debug)]
pub struct BlockLu {
    /// Block sizes in elimination order.
    size: Vec<usize>,
    /// Scalar offset of each block (elimination order) in the original
    /// vector layout.
    offset: Vec<usize>,
    /// Later neighbours of each block in the filled pattern (elimination
    /// positions, ascending): `nbr[nbr_ptr[k]..nbr_ptr[k + 1]]`.
    nbr_ptr: Vec<usize>,
    nbr: Vec<usize>,
    /// Start of each diagonal block (column-major, `size[k]²`).
    diag: Vec<usize>,
    /// Start of the `L` block (rows of the neighbour, columns of `k`) and
    /// of the `U` block (rows of `k`, columns of the neighbour) of each
    /// entry of `nbr`, both column-major.
    l: Vec<usize>,
    u: Vec<usize>,
    /// Targets of the Schur updates of step `k`: for every pair `(a, b)` of
    /// its neighbours (row-major over `nbr(k)²`), where block
    /// `(nbr[a], nbr[b])` is stored.
    upd_ptr: Vec<usize>,
    upd: Vec<usize>,
    /// Copy plan from the `BlockCsc`: `(source start, source stride,
    /// destination start, rows, columns)` of every stored block.
    fill: Vec<(usize, usize, usize, usize, usize)>,
    /// Ranges `(start, len)` of `vals` that no stored block is copied to
    /// (the fill-in): zeroed before each factorization, the rest
    /// overwritten.
    zero: Vec<(usize, usize)>,
    /// Numeric values of every block.
    vals: Vec<f64>,
    /// Row permutation of each diagonal block (`piv[offset_k + r]`: the
    /// row swapped with row `r` at step `r`).
    piv: Vec<usize>,
    /// Offset of each block (elimination order) in `piv`.
    poff: Vec<usize>,
    /// The check solve's vectors.
    check: Vec<f64>,
    check_b: Vec<f64>,
    factored: bool,
}

impl BlockLu {
    /// Orders the blocks of `a`'s pattern and computes the filled pattern
    /// of its block LU; `None` when faer's ordering fails (allocation).
    ///
    /// The pattern is read as symmetric: block `(i, j)` is treated as
    /// stored when `(j, i)` is.
    pub fn new(a: &BlockCsc<f64>) -> Option<Self> {
        let sizes = a.sizes();
        let nb = sizes.len();
        let adj = block_graph(a, nb);
        let (perm, perm_inv) = amd_order(&adj)?;
        // perm[k] = original block eliminated at step k; perm_inv inverse.
        let offsets = prefix_sums(sizes);
        let filled = Filled::new(&adj, &perm, &perm_inv);
        let size: Vec<usize> = perm.iter().map(|&o| sizes[o]).collect();
        let offset: Vec<usize> = perm.iter().map(|&o| offsets[o]).collect();
        let poff = prefix_sums(&size);
        let store = Storage::new(&size, &filled);
        let (upd_ptr, upd) = schur_targets(&filled, &store);
        let fill: Vec<(usize, usize, usize, usize, usize)> = a
            .stored_blocks()
            .map(|(i, j, b)| {
                let (pi, pj) = (perm_inv[i], perm_inv[j]);
                let (start, stride) = b.parts();
                (
                    start,
                    stride,
                    store.block_at(&filled, pi, pj),
                    sizes[i],
                    sizes[j],
                )
            })
            .collect();
        let zero = zero_runs(&fill, &store, &size, &filled);
        let n = offsets[nb];
        let Filled { nbr_ptr, nbr } = filled;
        let Storage { diag, l, u, len } = store;
        Some(BlockLu {
            size,
            offset,
            nbr_ptr,
            nbr,
            diag,
            l,
            u,
            upd_ptr,
            upd,
            fill,
            zero,
            vals: vec![0.0; len],
            piv: vec![0; n],
            poff,
            check: vec![0.0; n],
            check_b: vec![0.0; n],
            factored: false,
        })
    }

    /// Number of rows of the factored matrix.
    pub fn nrows(&self) -> usize {
        self.piv.len()
    }

    /// Stored values of the factors (the filled pattern's size).
    pub fn factor_len(&self) -> usize {
        self.vals.len()
    }

    /// Factors `a` (the pattern given to [`new`](Self::new)); `false` when
    /// a diagonal pivot is too small for static pivoting or the
    /// factorization's check solve shows a backward error above 1e-12:
    /// use a pivoting LU then.
    ///
    /// # Panics
    /// When `a`'s dimension differs from the analysed pattern's.
    #[track_caller]
    pub fn factor(&mut self, a: &BlockCsc<f64>) -> bool {
        assert_eq!(a.dim(), self.nrows(), "block LU of another pattern");
        self.factored = false;
        for &(z0, len) in &self.zero {
            self.vals[z0..z0 + len].fill(0.0);
        }
        let src = a.values();
        for &(s0, stride, d0, rows, cols) in &self.fill {
            for c in 0..cols {
                let s = &src[s0 + c * stride..s0 + c * stride + rows];
                self.vals[d0 + c * rows..d0 + (c + 1) * rows].copy_from_slice(s);
            }
        }
        let nb = self.size.len();
        for k in 0..nb {
            let sk = self.size[k];
            let (d0, p0) = (self.diag[k], self.poff[k]);
            // LU of the diagonal block with partial pivoting inside it.
            {
                let d = &mut self.vals[d0..d0 + sk * sk];
                let scale = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let piv = &mut self.piv[p0..p0 + sk];
                let ok = match (d.try_into(), piv.try_into()) {
                    (Ok(d6), Ok(p6)) => dense_lu6(d6, p6, scale * PIVOT_MIN),
                    _ => dense_lu(d, sk, piv, scale * PIVOT_MIN),
                };
                if !ok {
                    return false;
                }
            }
            let (lo, hi) = (self.nbr_ptr[k], self.nbr_ptr[k + 1]);
            // U_kj ← L_kk⁻¹ P_k A_kj and L_ik ← A_ik U_kk⁻¹.
            for e in lo..hi {
                let si = self.size[self.nbr[e]];
                if sk == 6 && si == 6 {
                    // The 6 × 6 case (free bodies) with fixed sizes.
                    let piv: &[usize; 6] = self.piv[p0..p0 + 6].try_into().expect("6 pivots");
                    let (dblk, rest) = split_pair(&mut self.vals, d0, 36, self.u[e], 36);
                    let d6: &[f64; 36] = (&*dblk).try_into().expect("6 × 6 block");
                    lower_solve_left6(d6, piv, rest.try_into().expect("6 × 6 block"));
                    let (dblk, rest) = split_pair(&mut self.vals, d0, 36, self.l[e], 36);
                    let d6: &[f64; 36] = (&*dblk).try_into().expect("6 × 6 block");
                    upper_solve_right6(d6, rest.try_into().expect("6 × 6 block"));
                    continue;
                }
                let (dblk, rest) = split_pair(&mut self.vals, d0, sk * sk, self.u[e], sk * si);
                lower_solve_left(dblk, sk, &self.piv[p0..p0 + sk], rest, si);
                let (dblk, rest) = split_pair(&mut self.vals, d0, sk * sk, self.l[e], si * sk);
                upper_solve_right(dblk, sk, rest, si);
            }
            // Schur updates A_ij −= L_ik U_kj.
            let m = hi - lo;
            let mut t = self.upd_ptr[k];
            for a_ in lo..hi {
                let si = self.size[self.nbr[a_]];
                for b_ in lo..hi {
                    let sj = self.size[self.nbr[b_]];
                    let target = self.upd[t];
                    t += 1;
                    let (lb, ub) = (self.l[a_], self.u[b_]);
                    gemm_sub(&mut self.vals, target, lb, ub, si, sk, sj);
                }
            }
            debug_assert_eq!(t, self.upd_ptr[k] + m * m);
        }
        self.factored = true;
        // Check solve: b = A·1, backward error of the computed x.
        let n = self.nrows();
        let anorm = a.norm_inf(&mut self.check_b);
        self.check.fill(1.0);
        self.check_b.fill(0.0);
        a.mul_add(&self.check, &mut self.check_b);
        let mut x = std::mem::take(&mut self.check);
        x.copy_from_slice(&self.check_b);
        let ok = self.solve_in_place(&mut x);
        // r = b − A x, into check_b.
        let bnorm = self.check_b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for v in x.iter_mut() {
            *v = -*v;
        }
        a.mul_add(&x, &mut self.check_b);
        let rnorm = self.check_b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let xnorm = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        self.check = x;
        let backward = rnorm / (anorm * xnorm + bnorm).max(f64::MIN_POSITIVE);
        self.factored = ok && backward <= BACKWARD_ERROR_MAX && n > 0;
        self.factored
    }

    /// Solves `A x = b` in place; `false` when not factored or the
    /// solution is not finite.
    ///
    /// # Panics
    /// When `b.len()` is not the matrix dimension.
    #[track_caller]
    pub fn solve_in_place(&self, b: &mut [f64]) -> bool {
        if !self.factored {
            return false;
        }
        assert_eq!(b.len(), self.nrows(), "right-hand side size");
        // Block k of the vector is at its original offset: no permuted copy.
        let nb = self.size.len();
        // Forward: y_k ← L_kk⁻¹ P_k y_k, then y_i −= L_ik y_k.
        for k in 0..nb {
            let (o, p, s, d0) = (self.offset[k], self.poff[k], self.size[k], self.diag[k]);
            {
                let yk = &mut b[o..o + s];
                let piv = &self.piv[p..p + s];
                for r in 0..s {
                    yk.swap(r, piv[r]);
                }
                let d = &self.vals[d0..d0 + s * s];
                for c in 0..s {
                    let v = yk[c];
                    for r in c + 1..s {
                        yk[r] -= d[c * s + r] * v;
                    }
                }
            }
            for e in self.nbr_ptr[k]..self.nbr_ptr[k + 1] {
                let i = self.nbr[e];
                let (oi, si, l0) = (self.offset[i], self.size[i], self.l[e]);
                let lblk = &self.vals[l0..l0 + si * s];
                let (yk, yi) = split_pair(b, o, s, oi, si);
                if s == 6 && si == 6 {
                    // 6 × 6 (free bodies): the same loop with fixed sizes.
                    sub_mat_vec(yi, lblk, yk, 6, 6);
                } else {
                    sub_mat_vec(yi, lblk, yk, si, s);
                }
            }
        }
        // Backward: x_k = U_kk⁻¹ (y_k − Σ U_kj x_j).
        for k in (0..nb).rev() {
            let (o, s, d0) = (self.offset[k], self.size[k], self.diag[k]);
            for e in self.nbr_ptr[k]..self.nbr_ptr[k + 1] {
                let j = self.nbr[e];
                let (oj, sj, u0) = (self.offset[j], self.size[j], self.u[e]);
                let ublk = &self.vals[u0..u0 + s * sj];
                let (yk, xj) = split_pair(b, o, s, oj, sj);
                if s == 6 && sj == 6 {
                    sub_mat_vec(yk, ublk, xj, 6, 6);
                } else {
                    sub_mat_vec(yk, ublk, xj, s, sj);
                }
            }
            let d = &self.vals[d0..d0 + s * s];
            let yk = &mut b[o..o + s];
            for c in (0..s).rev() {
                yk[c] /= d[c * s + c];
                let v = yk[c];
                for r in 0..c {
                    yk[r] -= d[c * s + r] * v;
                }
            }
        }
        b.iter().all(|x| x.is_finite())
    }
}

/// The block graph of `a`'s pattern (both triangles, no diagonal): the
/// sorted neighbours of each of its `nb` blocks.
fn block_graph(a: &BlockCsc<f64>, nb: usize) -> Vec<Vec<usize>> {
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for (i, j, _) in a.stored_blocks() {
        if i != j {
            adj[j].push(i);
            adj[i].push(j);
        }
    }
    for row in &mut adj {
        row.sort_unstable();
        row.dedup();
    }
    adj
}

/// faer's AMD order of the block graph `adj` (as a CSC of nb × nb):
/// `(perm, perm_inv)`, `perm[k]` the block eliminated at step `k`; `None`
/// when faer's ordering fails (allocation).
fn amd_order(adj: &[Vec<usize>]) -> Option<(Vec<usize>, Vec<usize>)> {
    let nb = adj.len();
    let mut col_ptr = Vec::with_capacity(nb + 1);
    col_ptr.push(0usize);
    let mut row_idx = Vec::new();
    for row in adj {
        row_idx.extend_from_slice(row);
        col_ptr.push(row_idx.len());
    }
    let mut perm = vec![0usize; nb];
    let mut perm_inv = vec![0usize; nb];
    if nb > 0 {
        let sym = SymbolicSparseColMatRef::new_checked(nb, nb, &col_ptr, None, &row_idx);
        let mut mem = MemBuffer::try_new(amd::order_scratch::<usize>(nb, row_idx.len())).ok()?;
        amd::order(
            &mut perm,
            &mut perm_inv,
            sym,
            amd::Control::default(),
            MemStack::new(&mut mem),
        )
        .ok()?;
    }
    Some((perm, perm_inv))
}

/// `0, s₀, s₀ + s₁, …`: the offsets of consecutive blocks of sizes `sizes`
/// (one more entry than `sizes`, the last the total).
fn prefix_sums(sizes: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sizes.len() + 1);
    out.push(0);
    for s in sizes {
        out.push(out.last().copied().unwrap_or(0) + s);
    }
    out
}

/// The filled block pattern: the later neighbours of each block
/// (elimination positions, ascending), `nbr[nbr_ptr[k]..nbr_ptr[k + 1]]`.
struct Filled {
    nbr_ptr: Vec<usize>,
    nbr: Vec<usize>,
}

impl Filled {
    /// The filled pattern of the block graph `adj` eliminated in the order
    /// `perm`: the lower structure of column k merges into its parent (its
    /// first later neighbour), as in a symbolic Cholesky.
    fn new(adj: &[Vec<usize>], perm: &[usize], perm_inv: &[usize]) -> Self {
        let nb = adj.len();
        let mut sets: Vec<Vec<usize>> = (0..nb)
            .map(|k| {
                let mut s: Vec<usize> = adj[perm[k]]
                    .iter()
                    .map(|&o| perm_inv[o])
                    .filter(|&p| p > k)
                    .collect();
                s.sort_unstable();
                s
            })
            .collect();
        let mut nbr_ptr = Vec::with_capacity(nb + 1);
        nbr_ptr.push(0);
        let mut nbr = Vec::new();
        for k in 0..nb {
            let mut s = std::mem::take(&mut sets[k]);
            s.sort_unstable();
            s.dedup();
            if let Some(&parent) = s.first() {
                let merged: Vec<usize> = s[1..].to_vec();
                sets[parent].extend(merged);
            }
            nbr.extend_from_slice(&s);
            nbr_ptr.push(nbr.len());
        }
        Filled { nbr_ptr, nbr }
    }

    /// Number of blocks.
    fn len(&self) -> usize {
        self.nbr_ptr.len() - 1
    }

    /// The later neighbours of block `k`.
    fn of(&self, k: usize) -> &[usize] {
        &self.nbr[self.nbr_ptr[k]..self.nbr_ptr[k + 1]]
    }

    /// The index in `nbr` of the neighbour `i` of block `k`.
    fn find(&self, k: usize, i: usize) -> usize {
        self.nbr_ptr[k]
            + self
                .of(k)
                .binary_search(&i)
                .expect("filled pattern is closed")
    }
}

/// Where the factor blocks are stored in `vals`: diagonal blocks, then
/// per step its `L` and `U` blocks (the fields of [`BlockLu`] of the same
/// names); `len` the total.
struct Storage {
    diag: Vec<usize>,
    l: Vec<usize>,
    u: Vec<usize>,
    len: usize,
}

impl Storage {
    /// The storage of the blocks of sizes `size` (elimination order) in
    /// the filled pattern.
    fn new(size: &[usize], filled: &Filled) -> Self {
        let nb = size.len();
        let mut at = 0;
        let mut diag = Vec::with_capacity(nb);
        for &s in size {
            diag.push(at);
            at += s * s;
        }
        let mut l = Vec::with_capacity(filled.nbr.len());
        let mut u = Vec::with_capacity(filled.nbr.len());
        for k in 0..nb {
            for &i in filled.of(k) {
                l.push(at);
                at += size[i] * size[k];
                u.push(at);
                at += size[k] * size[i];
            }
        }
        Storage {
            diag,
            l,
            u,
            len: at,
        }
    }

    /// Where block `(i, j)` (elimination positions) is stored.
    fn block_at(&self, filled: &Filled, i: usize, j: usize) -> usize {
        use std::cmp::Ordering;
        match i.cmp(&j) {
            Ordering::Equal => self.diag[i],
            Ordering::Greater => self.l[filled.find(j, i)],
            Ordering::Less => self.u[filled.find(i, j)],
        }
    }
}

/// The targets of the Schur updates of each step `k`: `(upd_ptr, upd)`
/// (the fields of [`BlockLu`]), for every pair `(a, b)` of its neighbours
/// (row-major) where block `(nbr[a], nbr[b])` is stored.
fn schur_targets(filled: &Filled, store: &Storage) -> (Vec<usize>, Vec<usize>) {
    let nb = filled.len();
    let mut upd_ptr = Vec::with_capacity(nb + 1);
    upd_ptr.push(0);
    let mut upd = Vec::new();
    for k in 0..nb {
        let list = filled.of(k);
        for &i in list {
            for &j in list {
                upd.push(store.block_at(filled, i, j));
            }
        }
        upd_ptr.push(upd.len());
    }
    (upd_ptr, upd)
}

/// Every factor block that no stored block of the copy plan `fill` fills,
/// merged into runs `(start, len)` of `vals`.
fn zero_runs(
    fill: &[(usize, usize, usize, usize, usize)],
    store: &Storage,
    size: &[usize],
    filled: &Filled,
) -> Vec<(usize, usize)> {
    let nb = size.len();
    let (nbr_ptr, nbr) = (&filled.nbr_ptr, &filled.nbr);
    let mut written: Vec<usize> = fill.iter().map(|f| f.2).collect();
    written.sort_unstable();
    let mut all_blocks: Vec<(usize, usize)> = (0..nb)
        .map(|k| (store.diag[k], size[k] * size[k]))
        .collect();
    for k in 0..nb {
        for (e, &i) in nbr.iter().enumerate().take(nbr_ptr[k + 1]).skip(nbr_ptr[k]) {
            all_blocks.push((store.l[e], size[i] * size[k]));
            all_blocks.push((store.u[e], size[k] * size[i]));
        }
    }
    all_blocks.sort_unstable();
    let mut zero: Vec<(usize, usize)> = Vec::new();
    for (start, len) in all_blocks {
        if written.binary_search(&start).is_ok() {
            continue;
        }
        match zero.last_mut() {
            Some((s0, l0)) if *s0 + *l0 == start => *l0 += len,
            _ => zero.push((start, len)),
        }
    }
    zero
}

/// `y ← y − B x` for the column-major `rows × cols` block `B`.
#[inline(always)]
fn sub_mat_vec(y: &mut [f64], b: &[f64], x: &[f64], rows: usize, cols: usize) {
    for c in 0..cols {
        let v = x[c];
        for r in 0..rows {
            y[r] -= b[c * rows + r] * v;
        }
    }
}

/// Two disjoint mutable ranges `[a, a + la)` and `[b, b + lb)` of `v`.
#[inline]
fn split_pair(v: &mut [f64], a: usize, la: usize, b: usize, lb: usize) -> (&mut [f64], &mut [f64]) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a..a + la], &mut y[..lb])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[..la], &mut x[b..b + lb])
    }
}

/// In-place LU with partial pivoting of the column-major `s × s` block
/// `d` (`piv[r]`: the row swapped with row `r` at step `r`); `false` when a
/// pivot is not above `tiny` in magnitude or not finite.
#[inline(always)]
fn dense_lu(d: &mut [f64], s: usize, piv: &mut [usize], tiny: f64) -> bool {
    for k in 0..s {
        let mut best = k;
        let mut best_val = d[k * s + k].abs();
        for r in k + 1..s {
            let v = d[k * s + r].abs();
            if v > best_val {
                best = r;
                best_val = v;
            }
        }
        if !(best_val > tiny) || !best_val.is_finite() {
            return false;
        }
        piv[k] = best;
        if best != k {
            for c in 0..s {
                d.swap(c * s + k, c * s + best);
            }
        }
        let inv = 1.0 / d[k * s + k];
        for r in k + 1..s {
            d[k * s + r] *= inv;
        }
        for c in k + 1..s {
            let f = d[c * s + k];
            if f != 0.0 {
                for r in k + 1..s {
                    d[c * s + r] -= d[k * s + r] * f;
                }
            }
        }
    }
    true
}

/// [`dense_lu`] of a 6 × 6 block: the same code, inlined with the size a
/// constant so the compiler unrolls it and drops the bounds checks.
fn dense_lu6(d: &mut [f64; 36], piv: &mut [usize; 6], tiny: f64) -> bool {
    dense_lu(d, 6, piv, tiny)
}

/// [`lower_solve_left`] for a 6 × 6 `x` and 6 × 6 factored block `d`.
fn lower_solve_left6(d: &[f64; 36], piv: &[usize; 6], x: &mut [f64; 36]) {
    lower_solve_left(d, 6, piv, x, 6);
}

/// [`upper_solve_right`] for a 6 × 6 `x` and 6 × 6 factored block `d`.
fn upper_solve_right6(d: &[f64; 36], x: &mut [f64; 36]) {
    upper_solve_right(d, 6, x, 6);
}

/// `x ← L⁻¹ P x` for the column-major `s × n` block `x`, with `P` and the
/// unit lower `L` of the factored `s × s` block `d`.
#[inline(always)]
fn lower_solve_left(d: &[f64], s: usize, piv: &[usize], x: &mut [f64], n: usize) {
    for c in 0..n {
        let col = &mut x[c * s..(c + 1) * s];
        for r in 0..s {
            col.swap(r, piv[r]);
        }
        for k in 0..s {
            let v = col[k];
            if v != 0.0 {
                for r in k + 1..s {
                    col[r] -= d[k * s + r] * v;
                }
            }
        }
    }
}

/// `x ← x U⁻¹` for the column-major `m × s` block `x`, with the upper `U`
/// of the factored `s × s` block `d`.
#[inline(always)]
fn upper_solve_right(d: &[f64], s: usize, x: &mut [f64], m: usize) {
    for c in 0..s {
        for l in 0..c {
            let f = d[c * s + l];
            if f != 0.0 {
                let (done, rest) = x.split_at_mut(c * m);
                let xl = &done[l * m..(l + 1) * m];
                for (y, v) in rest[..m].iter_mut().zip(xl) {
                    *y -= *v * f;
                }
            }
        }
        let inv = 1.0 / d[c * s + c];
        for y in &mut x[c * m..(c + 1) * m] {
            *y *= inv;
        }
    }
}

/// `vals[t..] −= vals[a..] · vals[b..]` for column-major blocks: the target
/// `m × n`, `a` `m × p`, `b` `p × n` (three disjoint ranges of `vals`).
#[inline]
fn gemm_sub(vals: &mut [f64], t: usize, a: usize, b: usize, m: usize, p: usize, n: usize) {
    if m == 6 && p == 6 && n == 6 {
        let mut prod: [f64; 36];
        {
            let ab: &[f64; 36] = vals[a..a + 36].try_into().expect("6 × 6 block");
            let bb: &[f64; 36] = vals[b..b + 36].try_into().expect("6 × 6 block");
            // The first term initializes the product (no zeroing pass).
            prod = core::array::from_fn(|k| ab[k % 6] * bb[(k / 6) * 6]);
            for j in 0..6 {
                for l in 1..6 {
                    let f = bb[j * 6 + l];
                    for i in 0..6 {
                        prod[j * 6 + i] += ab[l * 6 + i] * f;
                    }
                }
            }
        }
        for (y, v) in vals[t..t + 36].iter_mut().zip(prod) {
            *y -= v;
        }
        return;
    }
    for j in 0..n {
        for l in 0..p {
            let f = vals[b + j * p + l];
            if f == 0.0 {
                continue;
            }
            for i in 0..m {
                let v = vals[a + l * m + i] * f;
                vals[t + j * m + i] -= v;
            }
        }
    }
}
