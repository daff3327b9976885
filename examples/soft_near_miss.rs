//! Derivatives before contact (issue #19, point 4): a ball (R = 0.1 m)
//! spinning backwards flies over the ground with its lowest point 4 cm
//! above it and never touches it. d(final horizontal velocity)/d(initial
//! height) is non-zero with `soft` (its softplus force acts at a distance)
//! and exactly zero with `ipm` (no contact force outside contact).
//!
//! `cargo run --release --example soft_near_miss`

use dualsim::contact::soft::Params;
use dualsim::contact::SolverKind;
use dualsim::diff::{unrolled, Input};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn world(kind: SolverKind) -> World<f64> {
    let mut w = World::<f64>::new(2e-3);
    w.solver = kind;
    w.backends.soft = Params {
        // a wider softplus so that a 4 cm gap is felt (ε₃ = 1 cm)
        softness: 1e-2,
        margin: 0.5,
        points_per_meter: 40.0,
        ..Params::default()
    };
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.004,
        Some(Shape::Sphere { radius: 0.1 }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material::default(),
    });
    w
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // the ball's lowest point starts 4 cm up, moving sideways at 1 m/s
    // and up at g T / 2 (back at 4 cm after T = 0.1 s), spinning at 20 rad/s
    let steps = 50;
    for kind in [SolverKind::Soft, SolverKind::Ipm] {
        let w = world(kind);
        let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.14]]);
        x0.v[0] = 1.0;
        x0.v[2] = 0.4905;
        x0.v[4] = -20.0;
        let u = Controls::Constant(w.zero_control());
        let traj = rollout(&w, &x0, &u, steps)?;
        let min_gap = traj
            .states
            .iter()
            .map(|s| s.q[2] - 0.1)
            .fold(f64::INFINITY, f64::min);
        let j = unrolled::<1>(&w, &x0, &u, steps, &[Input::Config(2)])?;
        let nv = w.model.nv;
        println!(
            "{kind}: lowest gap {min_gap:.4} m, final v_x {:.9} m/s, d v_x / d z0 = {:.6e} (1/s)",
            traj.last().v[0],
            j[(nv, 0)]
        );
    }
    Ok(())
}
