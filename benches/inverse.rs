//! Inverse dynamics with contact (`contact::convex::inverse`, f64): one
//! evaluation (the controls of one step from q, v and v⁺) against the
//! number of contacts. Cases: n spheres resting apart on the ground (n
//! one-contact islands, n = 1 … 50), a box resting on the ground (one
//! island of 4 contacts), and the kneeling quadruped of
//! `tests/data/quadruped_convex.toml` (a floating-base robot with 14
//! velocities, 8 contacts on its links). Each state is settled by 20
//! forward `convex` steps; v⁺ is the next forward step's (so every
//! candidate separates, as the inverse requires).
//!
//! ```text
//! cargo bench --bench inverse -- --warm-up-time 1 --measurement-time 3
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use dualsim::contact::convex::{Convex, inverse};
use dualsim::contact::{FrictionCone, SolverKind};
use dualsim::math::{DVec, Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

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

/// A settled state and the next forward step's velocity.
fn settled(w: &World<f64>, x0: &State<f64>) -> (State<f64>, DVec<f64>) {
    let u = w.zero_control();
    let mut x = x0.clone();
    for _ in 0..20 {
        x = step(w, &x, &u).expect("settling step").state;
    }
    let v = step(w, &x, &u).expect("forward step").state.v;
    (x, v)
}

fn spheres(n: usize) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::Convex;
    let r = 0.1;
    let pos: Vec<[f64; 3]> = (0..n)
        .map(|i| [(i % 10) as f64 * 0.25, (i / 10) as f64 * 0.25, r])
        .collect();
    for i in 0..n {
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
    (w, x0)
}

fn resting_box() -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::Convex;
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (0.2 * 0.2 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.1),
        }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(ground());
    let x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.1]]);
    (w, x0)
}

fn quadruped() -> (World<f64>, State<f64>) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quadruped_convex.toml");
    let scene = dualsim::scene::load(&path).expect("scene");
    let mut w = scene.world.clone();
    w.solver = SolverKind::Convex;
    w.friction_cone = FrictionCone::Exact;
    (w, scene.initial.clone())
}

fn bench(c: &mut Criterion) {
    let mut cases: Vec<(String, World<f64>, State<f64>)> = Vec::new();
    for n in [1, 2, 5, 10, 20, 50] {
        let (w, x) = spheres(n);
        cases.push((format!("spheres_apart/{n}"), w, x));
    }
    let (w, x) = resting_box();
    cases.push(("box/4".into(), w, x));
    let (w, x) = quadruped();
    cases.push(("quadruped/8".into(), w, x));
    let mut g = c.benchmark_group("convex_inverse");
    for (name, w, x0) in &cases {
        let (x, v_next) = settled(w, x0);
        let backend = Convex {
            params: w.backends.convex,
        };
        let u = w.zero_control();
        let p = w.problem(&x, &u);
        let inv = inverse(&backend, &p, &v_next).expect("inverse");
        let contacts = inv.candidates.len();
        eprintln!("{name}: {contacts} contacts, {} velocities", w.model.nv);
        g.bench_function(name.as_str(), |b| {
            b.iter(|| inverse(&backend, &p, &v_next).expect("inverse"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
