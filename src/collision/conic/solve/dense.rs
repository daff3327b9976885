//! Small dense kernels (sizes are tiny: n ≤ ~10 columns, m ≤ ~40 rows):
//! dot products, the products with `G` and `Gᵀ`, rank-one updates and the
//! Cholesky factorization and solve, over a column count that is a type
//! ([`Cols`]) and the block-size dispatch of the second-order cones.

// --- small dense kernels (sizes are tiny: n ≤ ~10 columns, m ≤ ~40 rows).
// The number of columns is a type (`Fixed<N>`: loops unrolled, no bounds
// checks; `Dynamic`: any size), so the interior-point loop below is written
// once and compiled for the common sizes. Matrices are row-major m × n.

/// Number of columns n of the dense kernels.
pub(super) trait Cols: Copy {
    fn n(self) -> usize;
}

/// n known at compile time.
#[derive(Clone, Copy)]
pub(super) struct Fixed<const N: usize>;

impl<const N: usize> Cols for Fixed<N> {
    #[inline(always)]
    fn n(self) -> usize {
        N
    }
}

/// n known at run time.
#[derive(Clone, Copy)]
pub(super) struct Dynamic(pub(super) usize);

impl Cols for Dynamic {
    #[inline(always)]
    fn n(self) -> usize {
        self.0
    }
}

/// Runs `$body` with `$D` bound to the block size `$d` as a [`Cols`]
/// (`Fixed<3>`, `Fixed<4>` or `Dynamic`).
macro_rules! with_block_size {
    ($d:expr, $D:ident => $body:block) => {
        match $d {
            3 => {
                let $D = Fixed::<3>;
                $body
            }
            4 => {
                let $D = Fixed::<4>;
                $body
            }
            d => {
                let $D = Dynamic(d);
                $body
            }
        }
    };
}

#[inline(always)]
pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |acc, (x, y)| acc + x * y)
}

#[inline(always)]
pub(super) fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `max(acc, v)` in one instruction (a NaN `v` is skipped, as by
/// `f64::max`).
#[inline(always)]
pub(super) fn fmax(acc: f64, v: f64) -> f64 {
    if v > acc { v } else { acc }
}

/// `min(acc, v)` in one instruction (a NaN `v` is skipped).
#[inline(always)]
pub(super) fn fmin(acc: f64, v: f64) -> f64 {
    if v < acc { v } else { acc }
}

#[inline(always)]
pub(super) fn amax(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |acc, v| fmax(acc, v.abs()))
}

/// `a · b` over the n columns.
#[inline(always)]
pub(super) fn dotn<C: Cols>(c: C, a: &[f64], b: &[f64]) -> f64 {
    let n = c.n();
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = 0.0;
    for j in 0..n {
        acc += a[j] * b[j];
    }
    acc
}

/// `y = G x`, G row-major (y.len() rows).
#[inline(always)]
pub(super) fn gemv<C: Cols>(c: C, G: &[f64], x: &[f64], y: &mut [f64]) {
    for (yi, row) in y.iter_mut().zip(G.chunks_exact(c.n())) {
        *yi = dotn(c, row, x);
    }
}

/// `y = Gᵀ z`, G row-major (z.len() rows).
#[inline(always)]
pub(super) fn gemtv<C: Cols>(c: C, G: &[f64], z: &[f64], y: &mut [f64]) {
    let n = c.n();
    let y = &mut y[..n];
    // accumulate on the stack (registers) for small n
    let mut acc_buf = [0.0_f64; 8];
    let acc = if n <= 8 { &mut acc_buf[..n] } else { &mut *y };
    acc.fill(0.0);
    for (row, zi) in G.chunks_exact(n).zip(z) {
        let row = &row[..n];
        for j in 0..n {
            acc[j] += row[j] * zi;
        }
    }
    if n <= 8 {
        y.copy_from_slice(&acc_buf[..n]);
    }
}

/// `ym = G x` and `yn = Gᵀ z` in one pass over G (row-major, ym.len() rows).
#[inline(always)]
pub(super) fn gemv_gemtv<C: Cols>(
    c: C,
    G: &[f64],
    x: &[f64],
    z: &[f64],
    ym: &mut [f64],
    yn: &mut [f64],
) {
    let n = c.n();
    let yn = &mut yn[..n];
    let mut acc_buf = [0.0_f64; 8];
    let acc = if n <= 8 { &mut acc_buf[..n] } else { &mut *yn };
    acc.fill(0.0);
    for ((row, yi), zi) in G.chunks_exact(n).zip(ym.iter_mut()).zip(z) {
        let row = &row[..n];
        *yi = dotn(c, row, x);
        for j in 0..n {
            acc[j] += row[j] * zi;
        }
    }
    if n <= 8 {
        yn.copy_from_slice(&acc_buf[..n]);
    }
}

/// `H += k a aᵀ` on the lower triangle (column-major n × n).
#[inline(always)]
pub(super) fn add_outer<C: Cols>(c: C, a: &[f64], k: f64, H: &mut [f64]) {
    let n = c.n();
    let (a, H) = (&a[..n], &mut H[..n * n]);
    for j in 0..n {
        let aj = a[j] * k;
        for i in j..n {
            H[j * n + i] += a[i] * aj;
        }
    }
}

/// In-place Cholesky `H = LLᵀ` of the lower triangle (column-major n × n),
/// as nalgebra's: `false` when a pivot is not positive (or NaN).
#[inline(always)]
pub(super) fn cholesky_in_place<C: Cols>(c: C, H: &mut [f64]) -> bool {
    let n = c.n();
    let H = &mut H[..n * n];
    for j in 0..n {
        for k in 0..j {
            let f = -H[k * n + j];
            for i in j..n {
                H[j * n + i] += f * H[k * n + i];
            }
        }
        let d = H[j * n + j];
        if !(d > 0.0) {
            return false;
        }
        let d = d.sqrt();
        H[j * n + j] = d;
        let r = 1.0 / d;
        for i in j + 1..n {
            H[j * n + i] *= r;
        }
    }
    true
}

/// Solves `LLᵀ x = b` in place (L from [`cholesky_in_place`]).
#[inline(always)]
pub(super) fn cholesky_solve<C: Cols>(c: C, L: &[f64], b: &mut [f64]) {
    let n = c.n();
    let (L, b) = (&L[..n * n], &mut b[..n]);
    for i in 0..n {
        let bi = b[i] / L[i * n + i];
        b[i] = bi;
        for k in i + 1..n {
            b[k] -= bi * L[i * n + k];
        }
    }
    for i in (0..n).rev() {
        let mut acc = b[i];
        for k in i + 1..n {
            acc -= L[i * n + k] * b[k];
        }
        b[i] = acc / L[i * n + i];
    }
}
