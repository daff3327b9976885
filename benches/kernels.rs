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

use criterion::{Criterion, criterion_group, criterion_main};
use nalgebra::{Const, U1};
use num_dual::{Dual2SVec64, DualSVec64};
use std::hint::black_box;

#[allow(dead_code)]
#[path = "../tests/all/macros/kernel_defs.rs"]
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
        bench_kernel!(@jacobian $c, $name, $n, $nout, $f, $fj, |$x| ($($arg),*));
        bench_kernel!(@hessian $c, $name, $n, $nout, $f, $fh, |$x| ($($arg),*));
    }};
    // `#[kernel(jacobian)]` kernels: no Hessian.
    ($c:ident, $name:literal, $n:literal, $nout:literal,
     $f:ident, $fj:ident, |$x:ident| ($($arg:expr),*)) => {{
        bench_kernel!(@jacobian $c, $name, $n, $nout, $f, $fj, |$x| ($($arg),*));
    }};
    (@jacobian $c:ident, $name:literal, $n:literal, $nout:literal,
     $f:ident, $fj:ident, |$x:ident| ($($arg:expr),*)) => {{
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
    }};
    (@hessian $c:ident, $name:literal, $n:literal, $nout:literal,
     $f:ident, $fh:ident, |$x:ident| ($($arg:expr),*)) => {{
        let xs = inputs::<$n>(0xC0FFEE ^ $n);
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
    bench_kernel!(
        c,
        "rotated_gap_inlined",
        8,
        1,
        rotated_gap_inlined,
        rotated_gap_inlined_jacobian,
        rotated_gap_inlined_hessian,
        |x| ([x[0], x[1], x[2], x[3]], [x[4], x[5], x[6]], x[7])
    );
    bench_kernel!(c, "trig", 2, 1, trig, trig_jacobian, trig_hessian, |x| (
        x[0], x[1]
    ));
    crate_kernels(c);
}

/// Every kernel of the crate (`collision::kernels`, `contact::space::kernels`).
fn crate_kernels(c: &mut Criterion) {
    use dualsim::collision::kernels::*;
    use dualsim::contact::space::kernels::*;
    macro_rules! a {
        ($x:ident, $o:literal, $n:literal) => {
            core::array::from_fn::<_, $n, _>(|i| $x[$o + i])
        };
    }
    bench_kernel!(c, "dot3", 6, 1, dot3, dot3_jacobian, dot3_hessian, |x| (
        a!(x, 0, 3),
        a!(x, 3, 3)
    ));
    bench_kernel!(
        c,
        "cross3",
        6,
        3,
        cross3,
        cross3_jacobian,
        cross3_hessian,
        |x| (a!(x, 0, 3), a!(x, 3, 3))
    );
    bench_kernel!(
        c,
        "rotate",
        7,
        3,
        rotate,
        rotate_jacobian,
        rotate_hessian,
        |x| (a!(x, 0, 4), a!(x, 4, 3))
    );
    bench_kernel!(c, "act", 10, 3, act, act_jacobian, act_hessian, |x| (
        a!(x, 0, 7),
        a!(x, 7, 3)
    ));
    bench_kernel!(
        c,
        "act_inv",
        10,
        3,
        act_inv,
        act_inv_jacobian,
        act_inv_hessian,
        |x| (a!(x, 0, 7), a!(x, 7, 3))
    );
    bench_kernel!(
        c,
        "flip",
        10,
        10,
        flip,
        flip_jacobian,
        flip_hessian,
        |x| (a!(x, 0, 10))
    );
    bench_kernel!(
        c,
        "quat_mul",
        8,
        4,
        quat_mul,
        quat_mul_jacobian,
        quat_mul_hessian,
        |x| (a!(x, 0, 4), a!(x, 4, 4))
    );
    bench_kernel!(c, "phi", 3, 4, phi, phi_jacobian, phi_hessian, |x| (a!(
        x, 0, 3
    )));
    bench_kernel!(
        c,
        "local_frictionless",
        7,
        2,
        local_frictionless,
        local_frictionless_jacobian,
        local_frictionless_hessian,
        |x| (a!(x, 0, 2), a!(x, 2, 3), x[5], x[6])
    );
    bench_kernel!(
        c,
        "local_exact",
        13,
        8,
        local_exact,
        local_exact_jacobian,
        local_exact_hessian,
        |x| (a!(x, 0, 8), a!(x, 8, 3), x[11], x[12])
    );
    bench_kernel!(
        c,
        "local_pyramid",
        17,
        12,
        local_pyramid,
        local_pyramid_jacobian,
        local_pyramid_hessian,
        |x| (a!(x, 0, 12), a!(x, 12, 3), x[15], x[16])
    );
    // #[kernel(jacobian)] kernels.
    bench_kernel!(
        c,
        "sphere_plane_world",
        8,
        10,
        sphere_plane_world,
        sphere_plane_world_jacobian,
        |x| (a!(x, 0, 3), x[3], a!(x, 4, 3), x[7])
    );
    bench_kernel!(
        c,
        "sphere_sphere_world",
        8,
        10,
        sphere_sphere_world,
        sphere_sphere_world_jacobian,
        |x| (a!(x, 0, 3), x[3], a!(x, 4, 3), x[7])
    );
    bench_kernel!(
        c,
        "world_plane",
        11,
        4,
        world_plane,
        world_plane_jacobian,
        |x| (a!(x, 0, 3), x[3], a!(x, 4, 7))
    );
    bench_kernel!(
        c,
        "capsule_end",
        9,
        3,
        capsule_end,
        capsule_end_jacobian,
        |x| (a!(x, 0, 7), x[7], x[8])
    );
    bench_kernel!(
        c,
        "sphere_plane",
        19,
        10,
        sphere_plane,
        sphere_plane_jacobian,
        |x| (a!(x, 0, 7), x[7], a!(x, 8, 7), a!(x, 15, 3), x[18])
    );
    bench_kernel!(
        c,
        "capsule_plane",
        21,
        10,
        capsule_plane,
        capsule_plane_jacobian,
        |x| (
            a!(x, 0, 7),
            x[7],
            x[8],
            x[9],
            a!(x, 10, 7),
            a!(x, 17, 3),
            x[20]
        )
    );
    bench_kernel!(c, "box_plane", 24, 10, box_plane, box_plane_jacobian, |x| (
        a!(x, 0, 7),
        a!(x, 7, 3),
        a!(x, 10, 3),
        a!(x, 13, 7),
        a!(x, 20, 3),
        x[23]
    ));
    bench_kernel!(
        c,
        "sphere_sphere",
        16,
        10,
        sphere_sphere,
        sphere_sphere_jacobian,
        |x| (a!(x, 0, 7), x[7], a!(x, 8, 7), x[15])
    );
    bench_kernel!(
        c,
        "capsule_sphere",
        19,
        10,
        capsule_sphere,
        capsule_sphere_jacobian,
        |x| (a!(x, 0, 7), x[7], x[8], x[9], x[10], a!(x, 11, 7), x[18])
    );
    bench_kernel!(
        c,
        "capsule_capsule",
        24,
        10,
        capsule_capsule,
        capsule_capsule_jacobian,
        |x| (
            a!(x, 0, 7),
            x[7],
            x[8],
            a!(x, 9, 7),
            x[16],
            x[17],
            a!(x, 18, 6)
        )
    );
    bench_kernel!(
        c,
        "sphere_box_outside",
        24,
        10,
        sphere_box_outside,
        sphere_box_outside_jacobian,
        |x| (
            a!(x, 0, 7),
            x[7],
            a!(x, 8, 7),
            a!(x, 15, 3),
            a!(x, 18, 3),
            a!(x, 21, 3)
        )
    );
    bench_kernel!(
        c,
        "sphere_box_inside",
        24,
        10,
        sphere_box_inside,
        sphere_box_inside_jacobian,
        |x| (
            a!(x, 0, 7),
            x[7],
            a!(x, 8, 7),
            a!(x, 15, 3),
            a!(x, 18, 3),
            a!(x, 21, 3)
        )
    );
    bench_kernel!(
        c,
        "pose_after",
        20,
        7,
        pose_after,
        pose_after_jacobian,
        |x| (a!(x, 0, 7), a!(x, 7, 6), a!(x, 13, 6), x[19])
    );
    bench_kernel!(
        c,
        "phi_rotation_t",
        6,
        3,
        phi_rotation_t,
        phi_rotation_t_jacobian,
        |x| (a!(x, 0, 3), a!(x, 3, 3))
    );
    bench_kernel!(
        c,
        "side_impulse",
        19,
        6,
        side_impulse,
        side_impulse_jacobian,
        |x| (
            a!(x, 0, 3),
            a!(x, 3, 3),
            x[6],
            a!(x, 7, 3),
            a!(x, 10, 3),
            a!(x, 13, 3),
            a!(x, 16, 3)
        )
    );
    bench_kernel!(
        c,
        "contact_rows",
        43,
        15,
        contact_rows,
        contact_rows_jacobian,
        |x| (
            a!(x, 0, 7),
            a!(x, 7, 6),
            a!(x, 13, 7),
            a!(x, 20, 6),
            x[26],
            a!(x, 27, 10),
            a!(x, 37, 3),
            a!(x, 40, 3)
        )
    );
    bench_kernel!(
        c,
        "free_body_rows",
        39,
        6,
        free_body_rows,
        free_body_rows_jacobian,
        |x| (
            a!(x, 0, 4),
            a!(x, 4, 3),
            a!(x, 7, 6),
            a!(x, 13, 6),
            a!(x, 19, 6),
            x[25],
            a!(x, 26, 9),
            a!(x, 35, 3),
            x[38]
        )
    );
    macro_rules! contact {
        ($name:literal, $f:ident, $fj:ident) => {
            bench_kernel!(c, $name, 58, 15, $f, $fj, |x| (
                a!(x, 0, 7),
                a!(x, 7, 6),
                a!(x, 13, 6),
                a!(x, 19, 7),
                a!(x, 26, 6),
                a!(x, 32, 6),
                x[38],
                a!(x, 39, 3),
                a!(x, 42, 4),
                a!(x, 46, 6),
                a!(x, 52, 3),
                a!(x, 55, 3)
            ))
        };
    }
    contact!(
        "contact_sphere_plane",
        contact_sphere_plane,
        contact_sphere_plane_jacobian
    );
    contact!(
        "contact_capsule_plane",
        contact_capsule_plane,
        contact_capsule_plane_jacobian
    );
    contact!(
        "contact_box_plane",
        contact_box_plane,
        contact_box_plane_jacobian
    );
    contact!(
        "contact_sphere_sphere",
        contact_sphere_sphere,
        contact_sphere_sphere_jacobian
    );
    contact!(
        "contact_capsule_sphere",
        contact_capsule_sphere,
        contact_capsule_sphere_jacobian
    );
    contact!(
        "contact_sphere_capsule",
        contact_sphere_capsule,
        contact_sphere_capsule_jacobian
    );
    contact!(
        "contact_capsule_capsule",
        contact_capsule_capsule,
        contact_capsule_capsule_jacobian
    );
    contact!(
        "contact_sphere_box_outside",
        contact_sphere_box_outside,
        contact_sphere_box_outside_jacobian
    );
    contact!(
        "contact_sphere_box_inside",
        contact_sphere_box_inside,
        contact_sphere_box_inside_jacobian
    );
    contact!(
        "contact_box_sphere_outside",
        contact_box_sphere_outside,
        contact_box_sphere_outside_jacobian
    );
    contact!(
        "contact_box_sphere_inside",
        contact_box_sphere_inside,
        contact_box_sphere_inside_jacobian
    );
}

/// The step Jacobian by `ift` with kernel vs dual-number `∂r/∂θ` (all
/// parameters of the world), at a state in contact.
fn step_jacobians(c: &mut Criterion) {
    use dualsim::diff::{DiffOptions, Method, Param, Partials, step_jacobian};
    use dualsim::geometry::Shape;
    use dualsim::prelude::*;
    for (file, k) in [
        ("box_toss.toml", 31),
        ("capsule_pile.toml", 40),
        ("sphere_pile.toml", 2),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenes")
            .join(file);
        let s = dualsim::scene::load(&path).unwrap();
        let w = &s.world;
        let x = rollout(w, &s.initial, &s.controls, k)
            .unwrap()
            .last()
            .clone();
        let u = s.controls.at(k).clone();
        let nv = w.model.nv;
        let mut ps: Vec<Param> = (0..nv)
            .flat_map(|i| [Param::Q(i), Param::V(i), Param::U(i)])
            .collect();
        for b in 0..w.model.bodies.len() {
            ps.extend([Param::Mass(b), Param::Friction(b)]);
            ps.extend((0..3).map(|k| Param::Inertia(b, k)));
            let n = match &w.shapes[b] {
                Some(Shape::Sphere { .. }) => 1,
                Some(Shape::Capsule { .. }) => 2,
                Some(Shape::Box { .. }) => 3,
                _ => 0,
            };
            ps.extend((0..n).map(|k| Param::Shape(b, k)));
        }
        ps.extend((0..3).map(Param::Gravity));
        ps.push(Param::Dt);
        let mut g = c.benchmark_group(format!("step_jacobian/{}", file.trim_end_matches(".toml")));
        g.sample_size(10);
        for partials in [Partials::Kernel, Partials::Dual] {
            let o = DiffOptions {
                partials,
                ..Default::default()
            };
            g.bench_function(partials.name(), |b| {
                b.iter(|| black_box(step_jacobian(w, &x, &u, &ps, Method::Ift, &o).unwrap()))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, kernels, step_jacobians);
criterion_main!(benches);
