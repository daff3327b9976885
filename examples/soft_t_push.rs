//! A planar push under `soft` and `ipm` (issue #19, point 5): a T-shaped
//! body (a union bundle of two boxes, 1 kg) resting on the ground is
//! pushed by a sphere finger (0.5 kg, driven along x by a PD force, no
//! gravity on it) for 0.6 s at h = 2 ms. Reports the T's final position
//! and yaw under both backends and their differences, and the mean step
//! time of `soft` at about 26 and about 4096 points per body.
//!
//! `cargo run --release --example soft_t_push`
//!
//! `ipm` has no bundle–sphere closed form; it runs the conic pairs of the
//! bundle's parts.

use std::time::Instant;

use dualsim::contact::soft::Params;
use dualsim::contact::SolverKind;
use dualsim::math::{Pose, Quat, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

const H: f64 = 2e-3;
const STEPS: usize = 300;

fn t_shape() -> Shape<f64> {
    let part = |he: [f64; 3], at: [f64; 3]| {
        (
            Shape::Box {
                half_extents: Vec3::from(he),
            },
            Pose {
                rotation: Quat::identity(),
                translation: Vec3::from(at),
            },
        )
    };
    Shape::Bundle {
        // the bar along y at x = +0.05, the stem along x behind it
        parts: vec![
            part([0.025, 0.1, 0.025], [0.05, 0.0, 0.0]),
            part([0.05, 0.025, 0.025], [-0.025, 0.0, 0.0]),
        ],
        op: dualsim::geometry::BundleOp::Union,
    }
}

fn world(kind: SolverKind, ppm: f64) -> World<f64> {
    let mut w = World::<f64>::new(H);
    w.solver = kind;
    w.backends.soft = Params {
        points_per_meter: ppm,
        ..Params::default()
    };
    w.add_body(
        "tee",
        1.0,
        Mat3::from_diagonal(&Vec3::new(0.0035, 0.0015, 0.0045)),
        Some(t_shape()),
        Material {
            friction: 0.3,
            restitution: 0.0,
        },
    )
    .unwrap();
    w.add_body(
        "finger",
        0.5,
        Mat3::identity() * 0.0002,
        Some(Shape::Sphere { radius: 0.03 }),
        Material {
            friction: 0.3,
            restitution: 0.0,
        },
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.3,
            restitution: 0.0,
        },
    });
    w
}

fn points(w: &World<f64>) -> Vec<usize> {
    w.shapes
        .iter()
        .map(|s| {
            dualsim::contact::soft::cloud::sample(
                s.as_ref().unwrap(),
                w.backends.soft.points_per_meter,
            )
            .map_or(0, |c| c.len())
        })
        .collect()
}

/// Runs the push; returns the T's (x, y, yaw) and the mean step time (s).
fn push(w: &World<f64>) -> Result<([f64; 3], f64), Box<dyn std::error::Error>> {
    // the T's bottom at its resting depth under `soft`, the finger off the
    // ground, off-centre so the T turns
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0245], [-0.14, 0.04, 0.03]]);
    let mut u = w.zero_control();
    let t0 = Instant::now();
    for k in 0..STEPS {
        let t = k as f64 * H;
        // finger: PD tracking of x = -0.14 + 0.25 t, y and z held,
        // gravity compensated
        let target = -0.14 + 0.25 * t;
        u[6] = 200.0 * (target - x.q[7]) + 20.0 * (0.25 - x.v[6]);
        u[7] = 200.0 * (0.04 - x.q[8]) - 20.0 * x.v[7];
        u[8] = 0.5 * 9.81 + 200.0 * (0.03 - x.q[9]) - 20.0 * x.v[8];
        x = step(w, &x, &u)?.state;
    }
    let dt = t0.elapsed().as_secs_f64() / STEPS as f64;
    let qw = x.q[3];
    let qz = x.q[6];
    let yaw = 2.0 * qz.atan2(qw);
    Ok(([x.q[0], x.q[1], yaw], dt))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (soft, t_soft) = push(&world(SolverKind::Soft, 40.0))?;
    let (ipm, t_ipm) = push(&world(SolverKind::Ipm, 40.0))?;
    println!("T after {STEPS} steps of {H} s (x, y in m, yaw in rad):");
    println!(
        "  soft: x {:.5} y {:.5} yaw {:.5}  ({:.3} ms/step)",
        soft[0],
        soft[1],
        soft[2],
        t_soft * 1e3
    );
    println!(
        "  ipm:  x {:.5} y {:.5} yaw {:.5}  ({:.3} ms/step)",
        ipm[0],
        ipm[1],
        ipm[2],
        t_ipm * 1e3
    );
    println!(
        "  difference: position {:.2e} m, angle {:.2e} rad",
        ((soft[0] - ipm[0]).powi(2) + (soft[1] - ipm[1]).powi(2)).sqrt(),
        (soft[2] - ipm[2]).abs()
    );
    for ppm in [20.0, 245.0] {
        let w = world(SolverKind::Soft, ppm);
        let n = points(&w);
        let (_, dt) = push(&w)?;
        println!(
            "soft at {ppm} points per metre: {} points (T), {} (finger): {:.3} ms/step",
            n[0],
            n[1],
            dt * 1e3
        );
    }
    Ok(())
}
