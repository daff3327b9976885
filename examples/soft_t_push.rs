//! A planar push under `soft` and `ipm` (issue #19, point 5): a T-shaped
//! body (a union bundle of two boxes, 1 kg) resting on the ground is
//! pushed by a sphere finger (0.5 kg, driven along x by a PD force, no
//! gravity on it) for 0.6 s at h = 2 ms. Reports the T's final position
//! and yaw under both backends and their differences, and the mean step
//! time of `soft` with exactly 26 and 4096 points per body: the T and the
//! finger become `points` shapes of exactly that size
//! ([`sample_exact`]: the sampling density that first reaches the count,
//! thinned by farthest-point selection). The step time is given as wall
//! time and as the process's CPU time (user + system, every thread, from
//! `/proc/self/stat`; the wall time is noisy on a shared machine).
//!
//! `cargo run --release --features examples --example soft_t_push`
//!
//! `ipm` has no bundle–sphere closed form; it runs the conic pairs of the
//! bundle's parts.

use std::time::Instant;

use dualsim::contact::SolverKind;
use dualsim::contact::soft::Params;
use dualsim::contact::soft::cloud::sample_exact;
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

/// The soft world with exactly `n_tee` and `n_finger` points on the two
/// bodies (`points` shapes).
fn exact_world(n_tee: usize, n_finger: usize) -> World<f64> {
    let mut w = world(SolverKind::Soft, 20.0);
    for (i, n) in [(0, n_tee), (1, n_finger)] {
        let c = sample_exact(w.shapes[i].as_ref().unwrap(), n).expect("sampled");
        assert_eq!(c.len(), n);
        w.shapes[i] = Some(Shape::Points {
            points: c.points,
            normals: c.normals,
        });
    }
    w
}

/// CPU time of the process (s, user + system, all threads; Linux), or
/// NaN where `/proc/self/stat` is not readable.
fn cpu_time() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // fields after the command's closing parenthesis: utime, stime are
    // the 12th and 13th (clock ticks, 100 per second on Linux)
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok());
    match (tick(11), tick(12)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// Runs the push; returns the T's (x, y, yaw) and the mean step time (s):
/// wall and CPU.
fn push(w: &World<f64>) -> Result<([f64; 3], f64, f64), Box<dyn std::error::Error>> {
    // the T's bottom at its resting depth under `soft`, the finger off the
    // ground, off-centre so the T turns
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0245], [-0.14, 0.04, 0.03]]);
    let mut u = w.zero_control();
    let t0 = Instant::now();
    let c0 = cpu_time();
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
    let dc = (cpu_time() - c0) / STEPS as f64;
    let qw = x.q[3];
    let qz = x.q[6];
    let yaw = 2.0 * qz.atan2(qw);
    Ok(([x.q[0], x.q[1], yaw], dt, dc))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (soft, t_soft, _) = push(&world(SolverKind::Soft, 40.0))?;
    let (ipm, t_ipm, _) = push(&world(SolverKind::Ipm, 40.0))?;
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
    for n in [26, 4096] {
        let w = exact_world(n, n);
        let (r, dt, dc) = push(&w)?;
        println!(
            "soft with {n} points on the T and {n} on the finger: {:.3} ms/step wall, \
             {:.3} ms/step CPU; x {:.5} y {:.5} yaw {:.5}; vs ipm: position {:.2e} m, \
             angle {:.2e} rad",
            dt * 1e3,
            dc * 1e3,
            r[0],
            r[1],
            r[2],
            ((r[0] - ipm[0]).powi(2) + (r[1] - ipm[1]).powi(2)).sqrt(),
            (r[2] - ipm[2]).abs()
        );
    }
    Ok(())
}
