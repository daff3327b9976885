//! One `ipm` step: a box resting on a plane, and sphere piles with 10, 50,
//! 100 and 200 contacts (spheres of radius 0.1 resting on the ground in a
//! grid, every fourth column stacked two high so islands hold 1–2 bodies
//! and 1–2 contacts each).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn ground() -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    }
}

/// A world with `contacts` resting contacts and the state after settling.
fn sphere_pile(contacts: usize) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    let r = 0.1;
    let mut pos = Vec::new();
    let mut k = 0;
    let mut col = 0;
    while k < contacts {
        let (x, y) = ((col % 20) as f64 * 0.25, (col / 20) as f64 * 0.25);
        pos.push([x, y, r]);
        k += 1;
        if col % 4 == 3 && k < contacts {
            // a second sphere on top: one more contact
            pos.push([x, y, 3.0 * r]);
            k += 1;
        }
        col += 1;
    }
    for (i, _) in pos.iter().enumerate() {
        w.add_body(
            &format!("s{i}"),
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            Material::default(),
        )
        .unwrap();
    }
    w.statics.push(ground());
    let x0 = State::at_rest(&w.model, &pos);
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 5).unwrap();
    (w, traj.last().clone())
}

fn box_on_plane() -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (1.0 * 0.25 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(ground());
    let x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 5).unwrap();
    (w, traj.last().clone())
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ipm_step");
    let (w, x) = box_on_plane();
    let u = w.zero_control();
    g.bench_function("box_on_plane", |b| {
        b.iter_batched(
            || x.clone(),
            |x| step(&w, &x, &u).unwrap(),
            BatchSize::SmallInput,
        )
    });
    for n in [10, 50, 100, 200] {
        let (w, x) = sphere_pile(n);
        let u = w.zero_control();
        let out = step(&w, &x, &u).unwrap();
        assert_eq!(out.stats.contacts, n, "pile with {n} contacts");
        g.bench_function(format!("sphere_pile_{n}_contacts"), |b| {
            b.iter_batched(
                || x.clone(),
                |x| step(&w, &x, &u).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
