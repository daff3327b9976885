//! Generated Jacobians (`#[kernel]`) vs num-dual vs central differences.
//!
//! For each kernel: `value_only` = the original function on `f64` (for
//! scale); `generated` = `<name>_jacobian` on `f64`; `dual` = the
//! original generic function on `DualSVec64<N>` (seeding and reading the
//! gradient included); `fd` = central differences of the `f64` function
//! (2·N evaluations, h = 1e-6). Hessians: `<name>_hessian` vs
//! `Dual2SVec64<N>`. Each iteration evaluates the same 64 seeded inputs.
//!
//! ```text
//! cargo bench --bench kernels -- --warm-up-time 1 --measurement-time 2
//! ```

use criterion::{criterion_group, criterion_main, Criterion};
use nalgebra::{Const, U1};
use num_dual::{Dual2SVec64, DualSVec64};
use std::hint::black_box;

#[allow(dead_code)]
#[path = "../tests/kernel_defs/mod.rs"]
mod kernel_defs;
use kernel_defs::*;

const BATCH: usize = 64;
const H: f64 = 1e-6;

fn inputs<const N: usize>(seed: u64) -> Vec<[f64; N]> {
    let mut s = seed | 1;
    (0..BATCH)
        .map(|_| {
            core::array::from_fn(|_| {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
                4.0 * u - 2.0
            })
        })
        .collect()
}

/// Benchmarks one kernel. `$call!(x)` must call the kernel function given as
/// first token with the flat input `x` cut into its argument shapes.
macro_rules! bench_kernel {
    ($c:ident, $name:literal, $n:literal, $nout:literal,
     $f:ident, $fj:ident, $fh:ident, |$x:ident| ($($arg:expr),*)) => {{
        let xs = inputs::<$n>(0xC0FFEE ^ $n);
        let mut g = $c.benchmark_group(concat!("jacobian/", $name));
        g.bench_function("value_only", |b| {
            b.iter(|| {
                for $x in black_box(&xs) {
                    black_box($f($($arg),*));
                }
            })
        });
        g.bench_function("generated", |b| {
            b.iter(|| {
                for $x in black_box(&xs) {
                    black_box($fj($($arg),*));
                }
            })
        });
        g.bench_function("dual", |b| {
            b.iter(|| {
                for x0 in black_box(&xs) {
                    let $x: [DualSVec64<$n>; $n] =
                        core::array::from_fn(|i| DualSVec64::from_re(x0[i]).derivative(i));
                    let y = $f($($arg),*);
                    let y: [DualSVec64<$n>; $nout] = out(y);
                    let jac: [[f64; $n]; $nout] = core::array::from_fn(|o| {
                        let g = y[o].eps.clone().unwrap_generic(Const::<$n>, U1);
                        core::array::from_fn(|i| g[i])
                    });
                    black_box(jac);
                }
            })
        });
        g.bench_function("fd", |b| {
            b.iter(|| {
                for x0 in black_box(&xs) {
                    let mut jac = [[0.0f64; $n]; $nout];
                    for i in 0..$n {
                        let mut $x = *x0;
                        $x[i] += H;
                        let yp: [f64; $nout] = out($f($($arg),*));
                        $x[i] -= 2.0 * H;
                        let ym: [f64; $nout] = out($f($($arg),*));
                        for o in 0..$nout {
                            jac[o][i] = (yp[o] - ym[o]) / (2.0 * H);
                        }
                    }
                    black_box(jac);
                }
            })
        });
        g.finish();
        let mut g = $c.benchmark_group(concat!("hessian/", $name));
        g.bench_function("generated", |b| {
            b.iter(|| {
                for $x in black_box(&xs) {
                    black_box($fh($($arg),*));
                }
            })
        });
        g.bench_function("dual2", |b| {
            b.iter(|| {
                for x0 in black_box(&xs) {
                    let $x: [Dual2SVec64<$n>; $n] =
                        core::array::from_fn(|i| Dual2SVec64::from_re(x0[i]).derivative(i));
                    let y: [Dual2SVec64<$n>; $nout] = out($f($($arg),*));
                    let h: [nalgebra::SMatrix<f64, $n, $n>; $nout] = core::array::from_fn(|o| {
                        y[o].v2.clone().unwrap_generic(Const::<$n>, Const::<$n>)
                    });
                    black_box(h);
                }
            })
        });
        g.finish();
    }};
}

/// A kernel's result as an array (scalar results become `[T; 1]`).
trait Out<T, const M: usize> {
    fn into_array(self) -> [T; M];
}
impl<T: dualsim::Scalar> Out<T, 1> for T {
    fn into_array(self) -> [T; 1] {
        [self]
    }
}
impl<T, const M: usize> Out<T, M> for [T; M] {
    fn into_array(self) -> [T; M] {
        self
    }
}
fn out<T, const M: usize, O: Out<T, M>>(o: O) -> [T; M] {
    o.into_array()
}

fn kernels(c: &mut Criterion) {
    bench_kernel!(
        c,
        "sphere_plane_gap",
        8,
        1,
        sphere_plane_gap,
        sphere_plane_gap_jacobian,
        sphere_plane_gap_hessian,
        |x| ([x[0], x[1], x[2]], x[3], [x[4], x[5], x[6]], x[7])
    );
    bench_kernel!(
        c,
        "quat_rotate",
        7,
        3,
        quat_rotate,
        quat_rotate_jacobian,
        quat_rotate_hessian,
        |x| ([x[0], x[1], x[2], x[3]], [x[4], x[5], x[6]])
    );
    bench_kernel!(
        c,
        "rotated_gap",
        8,
        1,
        rotated_gap,
        rotated_gap_jacobian,
        rotated_gap_hessian,
        |x| ([x[0], x[1], x[2], x[3]], [x[4], x[5], x[6]], x[7])
    );
    bench_kernel!(
        c,
        "spring",
        8,
        1,
        spring,
        spring_jacobian,
        spring_hessian,
        |x| ([x[0], x[1], x[2]], [x[3], x[4], x[5]], x[6], x[7])
    );
    bench_kernel!(c, "trig", 2, 1, trig, trig_jacobian, trig_hessian, |x| (
        x[0], x[1]
    ));
}

criterion_group!(benches, kernels);
criterion_main!(benches);
