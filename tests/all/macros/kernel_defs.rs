//! Kernels shared by `tests/all/macros/kernel_macro.rs` and `benches/kernels.rs`.
//!
//! Together they cover every construct of the kernel language: array and
//! scalar arguments and results, `let` (with shadowing and annotations),
//! `+ - * /`, unary minus, literals (float and integer), sqrt/sin/cos/exp/ln/
//! abs in both call forms, `powi` (positive and negative), literal indices,
//! array literals, and calls to other kernels (scalar- and array-valued,
//! nested, repeated, with constant arguments).

use dualsim::{Scalar, kernel};

/// `a · b` (called by other kernels).
#[kernel]
pub fn dot3<T: Scalar>(a: [T; 3], b: [T; 3]) -> T {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Signed gap of a sphere (centre `p`, radius `r`) above the plane
/// `n·x = offset`: a call to another kernel.
#[kernel]
pub fn sphere_plane_gap<T: Scalar>(n: [T; 3], offset: T, p: [T; 3], r: T) -> T {
    dot3(n, p) - offset - r
}

/// Rotation of `v` by the quaternion `q = [w, x, y, z]`:
/// `v + w t + u × t` with `t = 2 u × v` (arrays in and out).
#[kernel]
pub fn quat_rotate<T: Scalar>(q: [T; 4], v: [T; 3]) -> [T; 3] {
    let w = q[0];
    let t0 = 2.0 * (q[2] * v[2] - q[3] * v[1]);
    let t1 = 2.0 * (q[3] * v[0] - q[1] * v[2]);
    let t2 = 2 * (q[1] * v[1] - q[2] * v[0]);
    [
        v[0] + w * t0 + (q[2] * t2 - q[3] * t1),
        v[1] + w * t1 + (q[3] * t0 - q[1] * t2),
        v[2] + w * t2 + (q[1] * t1 - q[2] * t0),
    ]
}

/// Calls an array-valued kernel (annotated `let`, direct indexing of a
/// call, a repeated call that CSE merges) and a kernel that calls a kernel,
/// with some constant arguments.
#[kernel]
pub fn rotated_gap<T: Scalar>(q: [T; 4], v: [T; 3], h: T) -> T {
    let w: [T; 3] = quat_rotate(q, v);
    let z = quat_rotate(q, [v[0], v[1], v[2]])[2];
    w[2] * z - h * w[0] + sphere_plane_gap([0.0, 0.0, 1.0], h, w, 0.1)
}

/// Trigonometry, `powi`, unary minus, division, shadowing.
#[kernel]
pub fn trig<T: Scalar>(x: T, y: T) -> T {
    let s = sin(x * y);
    let s = -s.powi(3) + x.cos() * cos(y);
    s - -y / 3
}

/// `exp`, `ln`, negative `powi`, division, arrays in and out.
#[kernel]
pub fn exp_ln<T: Scalar>(x: [T; 2]) -> [T; 2] {
    let a = exp(x[0] * 0.5);
    let b = (x[1] * x[1] + 1.0).ln();
    [a / (1 + b), powi(a, -2) * ln(1.5 + x[0].sin())]
}

/// A spring's energy `k/2 (|x₁ − x₂|_ε − l₀)²`: `sqrt`, `powi`, array
/// literal bound to a name.
#[kernel]
pub fn spring<T: Scalar>(x1: [T; 3], x2: [T; 3], k: T, l0: T) -> T {
    let d = [x1[0] - x2[0], x1[1] - x2[1], x1[2] - x2[2]];
    let len = sqrt(d[0].powi(2) + d[1].powi(2) + d[2].powi(2) + 1e-3);
    0.5 * k * (len - l0).powi(2)
}

/// `abs` in both forms (sign decided on the primal part).
#[kernel]
pub fn abs_mix<T: Scalar>(x: T, y: T) -> [T; 2] {
    [x.abs() * y, abs(y - 0.25) / (1.0 + x * x)]
}

/// Structural zeros: an unused argument, a constant output, linear terms.
#[kernel]
pub fn sparse<T: Scalar>(x: [T; 2], _unused: T) -> [T; 3] {
    [3 * x[0], 4.0, x[0] * x[1] - 0.0 * x[1]]
}

/// Kernels in another module, reached by path.
pub mod geom {
    use dualsim::kernel;

    /// `‖a‖²`, with a differently named scalar bound in a `where` clause.
    #[kernel]
    pub fn norm2<S>(a: [S; 3]) -> S
    where
        S: dualsim::Scalar,
    {
        a[0].powi(2) + a[1] * a[1] + a[2].powi(2)
    }
}

/// Path calls (`geom::norm2`), turbofish, a renamed scalar parameter, a
/// `where` clause, and a nested call as a call argument.
#[kernel]
pub fn paths_and_generics<S>(a: [S; 3], s: S) -> [S; 2]
where
    S: Scalar,
{
    let n = geom::norm2::<S>(a);
    let m = geom::norm2([s, 1, -s]);
    [n * s / (1 + m), dot3(a, [n, s, geom::norm2(a)]) - exp(-m)]
}

/// [`rotated_gap`] with its callees inlined (`#[kernel(inline)]`): an
/// array-valued callee, a directly indexed call, a repeated call, a
/// callee that calls a kernel, constant arguments.
#[kernel(inline)]
pub fn rotated_gap_inlined<T: Scalar>(q: [T; 4], v: [T; 3], h: T) -> T {
    let w: [T; 3] = quat_rotate(q, v);
    let z = quat_rotate(q, [v[0], v[1], v[2]])[2];
    w[2] * z - h * w[0] + sphere_plane_gap([0.0, 0.0, 1.0], h, w, 0.1)
}

/// [`paths_and_generics`] with its callees inlined: callees reached by
/// path and with a turbofish, with another scalar parameter name.
#[kernel(inline)]
pub fn paths_and_generics_inlined<S>(a: [S; 3], s: S) -> [S; 2]
where
    S: Scalar,
{
    let n = geom::norm2::<S>(a);
    let m = geom::norm2([s, 1, -s]);
    [n * s / (1 + m), dot3(a, [n, s, geom::norm2(a)]) - exp(-m)]
}

/// A kernel with a `partial` sibling: the Jacobian columns of `p` and `r`
/// only (`n` and `d` are left out).
#[kernel(partial(p, r))]
pub fn partial_mix<T: Scalar>(n: [T; 3], d: T, p: [T; 3], r: T) -> [T; 2] {
    let h = n[0] * p[0] + n[1] * p[1] + n[2] * p[2] - d;
    [h - r, sqrt(p[0] * p[0] + p[1] * p[1] + r * r) * h]
}
