//! Tests of the `single_level` and `bilevel` contact backends (issue 6).
//! Each test states its tolerance; worlds are built through the Rust API.

use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn mat(mu: f64) -> Material<f64> {
    Material { friction: mu, restitution: 0.0 }
}

fn ground(mu: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane { normal: Vec3::z(), offset: 0.0 },
        pose: Pose::identity(),
        material: mat(mu),
    }
}

fn run(world: &World<f64>, x0: &State<f64>, steps: usize) -> Trajectory<f64> {
    rollout(world, x0, &Controls::Constant(world.zero_control()), steps).expect("rollout")
}

fn sphere_world(solver: SolverKind, rho: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = solver;
    w.params.rho = rho;
    w.add_body("ball", 1.0, Mat3::identity() * 0.1, Some(Shape::Sphere { radius: 0.5 }), mat(0.5)).unwrap();
    w.statics.push(ground(0.5));
    (w.clone(), State::at_rest(&w.model, &[[0.0, 0.0, 0.7]]))
}

fn box_world(solver: SolverKind, rho: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = solver;
    w.params.rho = rho;
    w.add_body("box", 1.0, Mat3::identity() * (0.25 / 6.0), Some(Shape::Box { half_extents: Vec3::new(0.3, 0.2, 0.25) }), mat(0.5))
        .unwrap();
    w.statics.push(ground(0.5));
    (w.clone(), State::at_rest(&w.model, &[[0.0, 0.0, 0.4]]))
}

#[test]
fn sphere_rests_at_its_radius() {
    for solver in [SolverKind::SingleLevel, SolverKind::Bilevel] {
        let (w, x0) = sphere_world(solver, 1e-8);
        let t = run(&w, &x0, 150);
        let z = t.last().q[2];
        println!("{solver:?}: z = {z}, iters {:?}", t.stats.iter().map(|s| s.iterations).max());
        assert!((z - 0.5).abs() < 1e-4, "{solver:?}: z = {z}");
    }
}

#[test]
fn box_rests_at_its_half_height() {
    for solver in [SolverKind::SingleLevel, SolverKind::Bilevel] {
        let (w, x0) = box_world(solver, 1e-8);
        let t = run(&w, &x0, 150);
        let z = t.last().q[2];
        println!("{solver:?}: z = {z}, q = {:?}, iters {:?}", t.last().q.as_slice(), t.stats.iter().map(|s| s.iterations).max());
        assert!((z - 0.25).abs() < 1e-4, "{solver:?}: z = {z}");
    }
}
