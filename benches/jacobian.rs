//! The full one-step Jacobian (state and control: `Param::Q(0..nv)`,
//! `Param::V(0..nv)`, `Param::U(0..nv)`) by each derivative method, next
//! to the f64 step alone, for (a) a box resting on a plane (edge 0.5,
//! m = 1, μ = 0.5) and (b) a 20-sphere pile (16 spheres of radius 0.1 on
//! the ground in a 4 × 4 grid, 4 more resting in the pockets on top;
//! settled for a few steps). Inputs are fixed (seeded) states; each
//! iteration gets a fresh copy (`iter_batched`).
//!
//! `cargo bench --bench jacobian -- --warm-up-time 1 --measurement-time 3`

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
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

fn settle(w: &World<f64>, x0: &State<f64>, steps: usize) -> State<f64> {
    rollout(w, x0, &Controls::Constant(w.zero_control()), steps)
        .unwrap()
        .last()
        .clone()
}

fn box_on_plane() -> (World<f64>, State<f64>) {
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
    let x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
    let x = settle(&w, &x0, 5);
    (w, x)
}

fn sphere_pile() -> (World<f64>, State<f64>) {
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
    for (k, _) in pos.iter().enumerate() {
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
    let x0 = State::at_rest(&w.model, &pos);
    let x = settle(&w, &x0, 10);
    (w, x)
}

fn params(nv: usize) -> Vec<Param> {
    let mut p: Vec<Param> = (0..nv).map(Param::Q).collect();
    p.extend((0..nv).map(Param::V));
    p.extend((0..nv).map(Param::U));
    p
}

fn bench(c: &mut Criterion) {
    let o = DiffOptions::default();
    for (name, (w, x)) in [
        ("box_on_plane", box_on_plane()),
        ("sphere_pile_20", sphere_pile()),
    ] {
        let u = w.zero_control();
        let ps = params(w.model.nv);
        let out = step(&w, &x, &u).unwrap();
        eprintln!(
            "{name}: {} bodies, {} parameters, {} contact candidates",
            w.model.bodies.len(),
            ps.len(),
            out.stats.contacts
        );
        let mut g = c.benchmark_group(format!("jacobian_{name}"));
        g.sample_size(10).sampling_mode(SamplingMode::Flat);
        g.bench_function("step_f64", |b| {
            b.iter_batched(
                || x.clone(),
                |x| step(&w, &x, &u).unwrap(),
                BatchSize::SmallInput,
            )
        });
        for m in Method::ALL {
            g.bench_function(m.name(), |b| {
                b.iter_batched(
                    || x.clone(),
                    |x| step_jacobian(&w, &x, &u, &ps, m, &o).unwrap(),
                    BatchSize::SmallInput,
                )
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
