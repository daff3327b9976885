//! The built-in demonstration run by `dualsim` with no arguments, and the
//! small worlds used by examples and tests.

use crate::diff::{CheckOptions, CheckReport, DiffError, DiffOptions, check};
use crate::scene::Scene;

/// What the demonstration shows.
pub const DESCRIPTION: &str = "box toss: a cube (edge 0.5, m = 1, mu = 0.1) thrown with a spin \
     onto the ground, 5 s at h = 0.01 with the ipm backend (exact Coulomb cone, rho = 1e-6); \
     then the one-step Jacobian w.r.t. state, control and parameters by ift, lift, unrolled and \
     central differences at three states (start, middle and end of the run)";

/// The embedded scene (`examples/scenes/box_toss.toml`).
pub const SCENE: &str = include_str!("../examples/scenes/box_toss.toml");

/// Compares the derivative methods on the demonstration scene: at three
/// states along the trajectory (`diff::check`, FD step 1e-7).
pub fn derivative_check(scene: &Scene) -> Result<CheckReport, DiffError> {
    let opts = CheckOptions {
        samples: 3,
        diff: DiffOptions {
            rho: None,
            fd_eps: 1e-7,
            ..CheckOptions::default().diff
        },
        ..Default::default()
    };
    check(
        &scene.world,
        &scene.initial,
        &scene.controls,
        scene.steps,
        &opts,
    )
}

/// A one-line summary of a check report.
pub fn summary(r: &CheckReport) -> String {
    let worst = |k: &str| {
        r.blocks
            .iter()
            .map(|b| b.max_rel_diff[k])
            .fold(0.0, f64::max)
    };
    format!(
        "derivative check at steps {:?} (rho = {:e}): largest relative difference from ift: \
         lift {:.1e}, unrolled {:.1e}, fd {:.1e} -> {}",
        r.sample_steps,
        r.rho,
        worst("ift_vs_lift"),
        worst("ift_vs_unrolled"),
        worst("ift_vs_fd"),
        match r.status {
            crate::diff::CheckStatus::Passed => "all methods agree",
            crate::diff::CheckStatus::Failed => "DISAGREE",
            crate::diff::CheckStatus::NothingChecked => "NOTHING CHECKED",
        }
    )
}

/// Silico V-D's smoothing example: a flat block (m = 1, μ = 1) resting on
/// the ground with g = 1 and h = 0.1, simulated and differentiated at the
/// relaxation `rho`. The world's only control is the horizontal force.
pub fn push_world(rho: f64) -> (crate::sim::World<f64>, crate::sim::State<f64>) {
    use crate::geometry::{Material, Shape, StaticGeometry};
    use crate::math::{Mat3, Pose, Vec3};
    let mut w = crate::sim::World::<f64>::new(0.1);
    w.set_gravity(Vec3::new(0.0, 0.0, -1.0));
    w.params.rho = rho;
    let half = Vec3::new(0.5, 0.5, 0.05);
    let inertia = Mat3::from_diagonal(&Vec3::new(
        (half.y * half.y + half.z * half.z) / 3.0,
        (half.x * half.x + half.z * half.z) / 3.0,
        (half.x * half.x + half.y * half.y) / 3.0,
    ));
    let mat = Material {
        friction: 1.0,
        restitution: 0.0,
    };
    w.add_body(
        "block",
        1.0,
        inertia,
        Some(Shape::Box { half_extents: half }),
        mat,
    )
    .expect("valid block");
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat,
    });
    let x = crate::sim::State::at_rest(&w.model, &[[0.0, 0.0, half.z]]);
    (w, x)
}

/// `∂x⁺/∂F` of one step of [`push_world`] under the horizontal force `f`,
/// by `ift` at the relaxation `rho`.
pub fn push_gradient(f: f64, rho: f64) -> Result<f64, DiffError> {
    use crate::diff::{DiffOptions, Method, Param, step_jacobian};
    let (w, x) = push_world(rho);
    let mut u = w.zero_control();
    u[0] = f;
    let opts = DiffOptions {
        rho: Some(rho),
        ..Default::default()
    };
    let j = step_jacobian(&w, &x, &u, &[Param::U(0)], Method::Ift, &opts)?;
    Ok(j.jacobian[(0, 0)])
}
