//! `#[kernel]`: the generated Jacobians and Hessians agree with num-dual.
//!
//! Every kernel below is differentiated twice: by the macro at compile time
//! (`<name>_jacobian`, `<name>_hessian`) and by num-dual at run time, calling
//! the ORIGINAL generic function with `DualSVec64<N>` (Jacobian) and
//! `Dual2SVec64<N>` (Jacobian and Hessian) inputs. On 1000 seeded random
//! inputs per kernel, every entry agrees to `|a − b| ≤ 1e-12·max(1, |b|)`.
//! The value returned by the generated functions equals the original
//! function's value at `f64` to the same tolerance.

use nalgebra::{Const, U1};
use num_dual::{Dual2SVec64, DualSVec64};

use super::kernel_defs::*;

// ---------------------------------------------------------------- harness

const SAMPLES: usize = 1000;
const RTOL: f64 = 1e-12;

/// xorshift64*, seeded per test.
struct Rng(u64);

impl Rng {
    fn new(name: &str) -> Self {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for b in name.bytes() {
            s = (s ^ u64::from(b)).wrapping_mul(0x1000_0000_01B3);
        }
        Rng(s | 1)
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }
}

/// Relative error as specified: `|a − b| / max(1, |b|)`; panics above `RTOL`.
fn check(what: &str, a: f64, b: f64) -> f64 {
    let e = (a - b).abs() / b.abs().max(1.0);
    assert!(
        e <= RTOL,
        "{what}: generated {a:e} vs num-dual {b:e} (rel. error {e:e})"
    );
    e
}

macro_rules! take {
    ($x:ident, $pos:ident, s) => {{
        let v = $x[$pos];
        $pos += 1;
        v
    }};
    ($x:ident, $pos:ident, a $n:literal) => {{
        let v: [_; $n] = core::array::from_fn(|i| $x[$pos + i]);
        $pos += $n;
        v
    }};
}

macro_rules! flat {
    (s, $v:expr) => {
        vec![$v]
    };
    (a $n:literal, $v:expr) => {
        $v.to_vec()
    };
}

/// Calls `$f` with the flat input slice `$x` cut into the kernel's argument
/// shapes (`s` = scalar, `a N` = `[T; N]`).
macro_rules! call_flat {
    ($f:ident, $x:ident, ($($k:ident $($n:literal)?),*)) => {{
        let mut pos = 0usize;
        let r = $f($(take!($x, pos, $k $($n)?)),*);
        let _ = pos;
        r
    }};
}

macro_rules! check_kernel {
    ($test:ident: $f:ident, $fj:ident, $fh:ident, $nin:literal,
     ($($k:ident $($n:literal)?),*) -> $ok:ident $($on:literal)?) => {
        #[test]
        fn $test() {
            let mut rng = Rng::new(stringify!($test));
            let mut worst = 0.0f64;
            for _ in 0..SAMPLES {
                let x: [f64; $nin] = core::array::from_fn(|_| rng.uniform(-2.0, 2.0));
                let plain = flat!($ok $($on)?, call_flat!($f, x, ($($k $($n)?),*)));
                let (v, j) = call_flat!($fj, x, ($($k $($n)?),*));
                let (vh, jh, h) = call_flat!($fh, x, ($($k $($n)?),*));
                let (v, vh) = (flat!($ok $($on)?, v), flat!($ok $($on)?, vh));

                let xd: [DualSVec64<$nin>; $nin] =
                    core::array::from_fn(|i| DualSVec64::from_re(x[i]).derivative(i));
                let yd = flat!($ok $($on)?, call_flat!($f, xd, ($($k $($n)?),*)));
                let x2: [Dual2SVec64<$nin>; $nin] =
                    core::array::from_fn(|i| Dual2SVec64::from_re(x[i]).derivative(i));
                let y2 = flat!($ok $($on)?, call_flat!($f, x2, ($($k $($n)?),*)));

                assert_eq!(v.len(), yd.len());
                assert_eq!(j.len(), yd.len());
                for o in 0..yd.len() {
                    worst = worst.max(check("value", v[o], plain[o]));
                    worst = worst.max(check("value (hessian fn)", vh[o], plain[o]));
                    worst = worst.max(check("value vs dual", v[o], yd[o].re));
                    let g = yd[o].eps.clone().unwrap_generic(Const::<$nin>, U1);
                    let g2 = y2[o].v1.clone().unwrap_generic(U1, Const::<$nin>);
                    let hd = y2[o].v2.clone().unwrap_generic(Const::<$nin>, Const::<$nin>);
                    for i in 0..$nin {
                        let what = format!("J[{o}][{i}] at {x:?}");
                        worst = worst.max(check(&what, j[o][i], g[i]));
                        worst = worst.max(check(&what, jh[o][i], g2[i]));
                        for l in 0..$nin {
                            let what = format!("H[{o}][{i}][{l}] at {x:?}");
                            worst = worst.max(check(&what, h[o][i][l], hd[(i, l)]));
                        }
                    }
                }
            }
            eprintln!(
                "{}: {} samples, worst relative error {:.2e}",
                stringify!($test), SAMPLES, worst
            );
        }
    };
}

check_kernel!(dot3_matches_num_dual: dot3, dot3_jacobian, dot3_hessian, 6, (a 3, a 3) -> s);
check_kernel!(sphere_plane_gap_matches_num_dual: sphere_plane_gap, sphere_plane_gap_jacobian,
    sphere_plane_gap_hessian, 8, (a 3, s, a 3, s) -> s);
check_kernel!(quat_rotate_matches_num_dual: quat_rotate, quat_rotate_jacobian,
    quat_rotate_hessian, 7, (a 4, a 3) -> a 3);
check_kernel!(rotated_gap_matches_num_dual: rotated_gap, rotated_gap_jacobian,
    rotated_gap_hessian, 8, (a 4, a 3, s) -> s);
check_kernel!(trig_matches_num_dual: trig, trig_jacobian, trig_hessian, 2, (s, s) -> s);
check_kernel!(exp_ln_matches_num_dual: exp_ln, exp_ln_jacobian, exp_ln_hessian, 2, (a 2) -> a 2);
check_kernel!(spring_matches_num_dual: spring, spring_jacobian, spring_hessian, 8,
    (a 3, a 3, s, s) -> s);
check_kernel!(abs_mix_matches_num_dual: abs_mix, abs_mix_jacobian, abs_mix_hessian, 2,
    (s, s) -> a 2);
check_kernel!(sparse_matches_num_dual: sparse, sparse_jacobian, sparse_hessian, 3,
    (a 2, s) -> a 3);
check_kernel!(paths_and_generics_matches_num_dual: paths_and_generics,
    paths_and_generics_jacobian, paths_and_generics_hessian, 4, (a 3, s) -> a 2);
check_kernel!(rotated_gap_inlined_matches_num_dual: rotated_gap_inlined,
    rotated_gap_inlined_jacobian, rotated_gap_inlined_hessian, 8, (a 4, a 3, s) -> s);
check_kernel!(paths_and_generics_inlined_matches_num_dual: paths_and_generics_inlined,
    paths_and_generics_inlined_jacobian, paths_and_generics_inlined_hessian, 4, (a 3, s) -> a 2);

#[test]
fn structural_zeros_are_exact() {
    let (v, j, h) = sparse_hessian([2.0, 5.0], 7.0);
    assert_eq!(v, [6.0, 4.0, 10.0]);
    assert_eq!(j, [[3.0, 0.0, 0.0], [0.0; 3], [5.0, 2.0, 0.0]]);
    assert_eq!(h[0], [[0.0; 3]; 3]);
    assert_eq!(h[2], [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0; 3]]);
    // Exact zeros even where IEEE would propagate a NaN (0 · ∞).
    let (_, j) = sparse_jacobian([2.0, 5.0], f64::NAN);
    assert_eq!(j[0], [3.0, 0.0, 0.0]);
}

#[test]
fn generated_functions_accept_dual_scalars() {
    // The generated Jacobian is itself generic: differentiate it with
    // num-dual to get the Hessian again.
    let x = [0.3, -0.7];
    let (_, _, h) = trig_hessian(x[0], x[1]);
    let d = |i| DualSVec64::<2>::from_re(x[i]).derivative(i);
    let (_, j) = trig_jacobian(d(0), d(1));
    for i in 0..2 {
        let row = j[0][i].eps.unwrap_generic(Const::<2>, U1);
        for l in 0..2 {
            check("H via dual Jacobian", h[0][i][l], row[l]);
        }
    }
}

#[test]
fn abs_sign_is_decided_on_the_primal_part() {
    // d|x|/dx at x = 0 is +1 (x.re() >= 0), at x < 0 is −1.
    let (_, j) = abs_mix_jacobian(0.0, 2.0);
    assert_eq!(j[0][0], 2.0);
    let (_, j) = abs_mix_jacobian(-1.0, 2.0);
    assert_eq!(j[0][0], -2.0);
}

#[test]
fn crate_docs_example() {
    // The example of dualsim-macros' crate docs (`ignore`d there).
    let (g, jac) = sphere_plane_gap_jacobian([0.0, 0.0, 1.0], 0.0, [1.0, 2.0, 3.0], 0.5);
    assert_eq!(g, 2.5);
    assert_eq!(jac[0], [1.0, 2.0, 3.0, -1.0, 0.0, 0.0, 1.0, -1.0]);
    let (_, _, hess) = sphere_plane_gap_hessian([0.0, 0.0, 1.0], 0.0, [1.0, 2.0, 3.0], 0.5);
    assert_eq!(hess[0][0][4], 1.0); // ∂²g/∂n₀∂p₀
}

#[test]
fn partial_equals_the_jacobian_columns_of_its_arguments() {
    // `partial(p, r)`: the columns of p (inputs 4, 5, 6) and r (input 7),
    // in argument order, bit for bit those of `_jacobian` (the same
    // derivative nodes), on seeded random inputs.
    let mut rng = Rng::new("partial_mix");
    for _ in 0..SAMPLES {
        let n = [
            rng.uniform(-1.0, 1.0),
            rng.uniform(-1.0, 1.0),
            rng.uniform(-1.0, 1.0),
        ];
        let d = rng.uniform(-1.0, 1.0);
        let p = [
            rng.uniform(-2.0, 2.0),
            rng.uniform(-2.0, 2.0),
            rng.uniform(-2.0, 2.0),
        ];
        let r = rng.uniform(0.1, 1.0);
        let (v, j) = partial_mix_jacobian(n, d, p, r);
        let (vp, jp) = partial_mix_partial(n, d, p, r);
        assert_eq!(v, vp);
        for o in 0..2 {
            assert_eq!(jp[o].len(), 4);
            for (k, col) in [4, 5, 6, 7].into_iter().enumerate() {
                check("partial column", jp[o][k], j[o][col]);
            }
        }
    }
}
