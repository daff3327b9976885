//! Backends side by side on the same states: one f64 step and the step
//! with its full one-step Jacobian (state and control) by `ift`, for
//!
//! * a box resting on a plane (edge 0.5, m = 1, μ = 0.5) and a 20-sphere
//!   pile (as `benches/jacobian.rs`), under `ipm` with the exact cone,
//!   `ipm` with the pyramid and `lcp` (pyramid: `lcp`'s box friction);
//! * two kneeling quadrupeds (`benches/data/two_quadrupeds.toml`: two
//!   robots of 14 dofs, 28 in all), a snake robot of 30 dofs lying on
//!   the ground (`benches/data/snake.toml`, 25 contacts) and a hexapod of
//!   30 dofs standing on six feet (`benches/data/hexapod.toml`, 6
//!   independent point contacts): the step, `ift` and central finite
//!   differences (`fd`), whose ratio is the analytic Jacobian's speedup.
//!
//! Each input is a fixed settled state; every iteration starts from a
//! fresh copy (`iter_batched`), so each step is cold (no warm start). A
//! Jacobian that fails at its state is reported on standard error and
//! not timed (`lcp`'s `ift` on the pile: its redundant sticking contacts
//! make `∂r/∂y` singular and `∂r/∂q` is outside its range, so the step
//! has no `q` derivative on its active set; `tests/all/contact/lcp_pile.rs`); the
//! Jacobian with respect to `v` and `u` alone (`_step_ift_jacobian_vu`),
//! which exists there, is timed for every backend. The robots run under
//! `ipm` and under `lcp` (both with the scenes' pyramid).
//!
//! `cargo bench --bench backends -- --warm-up-time 1 --measurement-time 3`

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use dualsim::contact::{FrictionCone, SolverKind};
use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn material() -> Material<f64> {
    Material {
        friction: 0.5,
        restitution: 0.0,
    }
}

fn ground() -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: material(),
    }
}

fn box_on_plane() -> (World<f64>, Vec<[f64; 3]>) {
    let mut w = World::<f64>::new(0.01);
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (1.0 * 0.5 * 0.5 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        material(),
    )
    .unwrap();
    w.statics.push(ground());
    (w, vec![[0.0, 0.0, 0.25]])
}

fn sphere_pile() -> (World<f64>, Vec<[f64; 3]>) {
    let mut w = World::<f64>::new(0.01);
    let r = 0.1;
    let d = 0.21;
    let mut pos = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            pos.push([i as f64 * d, j as f64 * d, r]);
        }
    }
    // In a pocket of four: horizontal distance d/√2 to each, touching.
    let z = r + ((2.0 * r).powi(2) - d * d / 2.0).sqrt();
    for (i, j) in [(0, 0), (0, 2), (2, 0), (2, 2)] {
        pos.push([(i as f64 + 0.5) * d, (j as f64 + 0.5) * d, z]);
    }
    for k in 0..pos.len() {
        w.add_body(
            &format!("s{k}"),
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            material(),
        )
        .unwrap();
    }
    w.statics.push(ground());
    (w, pos)
}

fn params(nv: usize) -> Vec<Param> {
    let mut p: Vec<Param> = (0..nv).map(Param::Q).collect();
    p.extend(params_vu(nv));
    p
}

/// The velocity and control inputs only.
fn params_vu(nv: usize) -> Vec<Param> {
    let mut p: Vec<Param> = (0..nv).map(Param::V).collect();
    p.extend((0..nv).map(Param::U));
    p
}

/// The world under `solver` and `cone`, settled for 10 steps from `pos`.
fn settled(
    make: fn() -> (World<f64>, Vec<[f64; 3]>),
    solver: SolverKind,
    cone: FrictionCone,
) -> (World<f64>, State<f64>) {
    let (mut w, pos) = make();
    w.solver = solver;
    w.friction_cone = cone;
    let x0 = State::at_rest(&w.model, &pos);
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 10).unwrap();
    let x = traj.last().clone();
    (w, x)
}

fn bench(c: &mut Criterion) {
    let o = DiffOptions::default();
    type Make = fn() -> (World<f64>, Vec<[f64; 3]>);
    let cases: [(&str, Make); 2] = [
        ("box_on_plane", box_on_plane),
        ("sphere_pile_20", sphere_pile),
    ];
    for (name, make) in cases {
        let mut g = c.benchmark_group(format!("backends_{name}"));
        g.sample_size(20).sampling_mode(SamplingMode::Flat);
        for (label, solver, cone) in [
            ("ipm_exact", SolverKind::Ipm, FrictionCone::Exact),
            ("ipm_pyramid", SolverKind::Ipm, FrictionCone::Pyramid),
            ("lcp_pyramid", SolverKind::Lcp, FrictionCone::Pyramid),
        ] {
            let (w, x) = settled(make, solver, cone);
            let u = w.zero_control();
            g.bench_function(format!("{label}_step"), |b| {
                b.iter_batched(
                    || x.clone(),
                    |x| step(&w, &x, &u).unwrap(),
                    BatchSize::SmallInput,
                )
            });
            for (suffix, ps) in [("", params(w.model.nv)), ("_vu", params_vu(w.model.nv))] {
                // A Jacobian that fails at this state is reported, not timed.
                if let Err(e) = step_jacobian(&w, &x, &u, &ps, Method::Ift, &o) {
                    eprintln!("{name}/{label}{suffix}: ift fails at this state: {e}");
                    continue;
                }
                g.bench_function(format!("{label}_step_ift_jacobian{suffix}"), |b| {
                    b.iter_batched(
                        || x.clone(),
                        |x| step_jacobian(&w, &x, &u, &ps, Method::Ift, &o).unwrap(),
                        BatchSize::SmallInput,
                    )
                });
            }
        }
        g.finish();
    }

    for name in ["two_quadrupeds", "snake", "hexapod"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benches/data")
            .join(format!("{name}.toml"));
        let scene = dualsim::scene::load(&path).unwrap();
        let mut g = c.benchmark_group(format!("backends_{name}"));
        g.sample_size(10).sampling_mode(SamplingMode::Flat);
        for (label, solver) in [("ipm", SolverKind::Ipm), ("lcp", SolverKind::Lcp)] {
            let mut w = scene.world.clone();
            w.solver = solver;
            let traj = match rollout(&w, &scene.initial, &scene.controls, 10) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("{name}/{label}: the settling run fails: {e}");
                    continue;
                }
            };
            let x = traj.last().clone();
            let u = scene.controls.at(10).clone();
            let ps = params(w.model.nv);
            let contacts = step(&w, &x, &u).unwrap().contacts.len();
            eprintln!(
                "{name}/{label}: {} dofs, {contacts} contacts, {} parameters",
                w.model.nv,
                ps.len()
            );
            g.bench_function(format!("{label}_step"), |b| {
                b.iter_batched(
                    || x.clone(),
                    |x| step(&w, &x, &u).unwrap(),
                    BatchSize::SmallInput,
                )
            });
            for m in [Method::Ift, Method::Fd] {
                if let Err(e) = step_jacobian(&w, &x, &u, &ps, m, &o) {
                    eprintln!("{name}/{label}: {} fails at this state: {e}", m.name());
                    continue;
                }
                g.bench_function(format!("{label}_step_{}_jacobian", m.name()), |b| {
                    b.iter_batched(
                        || x.clone(),
                        |x| step_jacobian(&w, &x, &u, &ps, m, &o).unwrap(),
                        BatchSize::SmallInput,
                    )
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
