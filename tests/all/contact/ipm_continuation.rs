//! `ipm`'s continuation in ρ (`mehrotra::Params::continuation_iterations`):
//! a square pyramid of 55 spheres (5 × 5 base, every upper sphere in the
//! pocket of four below it, μ = 0.5) slides apart as it settles, and one
//! of its steps stalls at ρ = 1e-6 with a few sliding contacts' friction
//! pinned against the cone. Without the continuation that step fails at
//! the iteration cap; with it (the default) the island is solved from
//! ρ = 3e-2 down to the step's ρ, to the step's own convergence test.

use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

const RADIUS: f64 = 0.1;

fn pyramid(k: usize) -> Vec<[f64; 3]> {
    let d = 2.0 * RADIUS * (1.0 + 1e-3);
    let h = (4.0 * RADIUS * RADIUS - 0.5 * d * d).sqrt();
    let mut out = Vec::new();
    for level in 0..k {
        let m = k - level;
        let shift = 0.5 * d * level as f64;
        for i in 0..m * m {
            out.push([
                shift + (i % m) as f64 * d,
                shift + (i / m) as f64 * d,
                RADIUS + level as f64 * h,
            ]);
        }
    }
    out
}

fn world(positions: &[[f64; 3]]) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.params.rho = 1e-6;
    let material = Material {
        friction: 0.5,
        restitution: 0.0,
    };
    for i in 0..positions.len() {
        w.add_body(
            &format!("s{i}"),
            1.0,
            Mat3::identity() * (0.4 * RADIUS * RADIUS),
            Some(Shape::Sphere { radius: RADIUS }),
            material,
        )
        .expect("sphere");
    }
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material,
    });
    let x0 = State::at_rest(&w.model, positions);
    (w, x0)
}

#[test]
fn continuation_lands_the_stalled_step_of_a_sliding_pyramid() {
    let (mut w, x0) = world(&pyramid(5));
    assert_eq!(w.model.bodies.len(), 55);
    let steps = 35;
    let u = Controls::Constant(w.zero_control());
    // Without the continuation: a step fails at the cap or, should the
    // solver no longer stall there, the rollout gives the same answer as
    // with it (checked below).
    w.backends.ipm.continuation_iterations = 0;
    let without = rollout(&w, &x0, &u, steps);
    // With it (the default): every step solved to the step's own test.
    w.backends.ipm.continuation_iterations =
        dualsim::contact::mehrotra::Params::default().continuation_iterations;
    // Steps of a rollout (`sim::step_with`: each step's contacts start
    // from the previous step's, as `rollout` runs them).
    let mut ws = dualsim::contact::Workspace::default();
    let mut x = x0.clone();
    let mut continued = 0;
    let mut max_pen: f64 = 0.0;
    for k in 0..steps {
        let out = dualsim::sim::step_with(&w, &x, &w.zero_control(), &mut ws)
            .unwrap_or_else(|e| panic!("step {k}: {e}"));
        assert!(
            out.stats.residual <= w.params.tolerance,
            "step {k}: residual {:e}",
            out.stats.residual
        );
        assert!(!out.stats.capped, "step {k} accepted at the cap");
        if out.stats.iterations > w.params.max_iterations {
            continued += 1;
        }
        max_pen = max_pen.max(out.stats.max_penetration);
        x = out.state;
    }
    println!(
        "{continued} of {steps} steps solved by the continuation; max penetration {max_pen:.2e} m"
    );
    assert!(max_pen < 1e-6, "penetration {max_pen:e}");
    match without {
        // it stalled without the continuation: then some step needed it
        Err(e) => {
            println!("without the continuation: {e}");
            assert!(
                continued >= 1,
                "a step fails without the continuation, none used it"
            );
        }
        // converged without it: to the same answer, to the step tolerance
        Ok(t) => {
            let d = (&t.last().q - &x.q).amax().max((&t.last().v - &x.v).amax());
            println!("without the continuation: converged, |Δx| {d:e}");
            assert!(
                d < 1e-6,
                "without the continuation: another answer, |Δx| {d:e}"
            );
        }
    }
}
