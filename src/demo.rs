//! The built-in demonstration run by `dualsim` with no arguments.

use serde_json::json;

use crate::diff::{fd, unrolled, DiffError, Input};
use crate::scene::Scene;

/// What the demonstration shows.
pub const DESCRIPTION: &str = "a T-handle spun about its intermediate axis (Dzhanibekov flip) \
     and a thrown ball, 10 s of free flight at h = 0.01; then d(final state)/d(initial \
     velocity) by dual numbers vs central finite differences";

/// The embedded scene.
pub const SCENE: &str = r#"
[sim]
dt = 0.01
steps = 1000
gravity = [0.0, 0.0, -9.81]

[[body]]
name = "handle"
mass = 1.0
inertia = [0.4, 0.9, 1.2]
position = [0.0, 0.0, 60.0]
angular_velocity = [0.001, 5.0, 0.001]
velocity = [0.0, 0.0, 49.05]
shape = { type = "capsule", radius = 0.1, half_length = 0.5 }

[[body]]
name = "ball"
mass = 0.5
inertia = [0.008, 0.008, 0.008]
position = [2.0, 0.0, 0.0]
velocity = [3.0, 0.0, 49.05]
angular_velocity = [0.0, 0.0, 1.0]
shape = { type = "sphere", radius = 0.2 }
"#;

/// Result of the demonstration's derivative check.
#[derive(Clone, Debug)]
pub struct DerivativeCheck {
    /// Largest |J_unrolled − J_fd| / max(1, ‖J‖∞).
    pub max_rel_diff: f64,
    /// Tolerance used.
    pub tolerance: f64,
    /// Whether the methods agree.
    pub passed: bool,
    /// ‖J‖∞ of the dual-number Jacobian.
    pub jacobian_norm: f64,
}

impl DerivativeCheck {
    /// One-line summary.
    pub fn summary(&self) -> String {
        format!(
            "derivative check, d(final state)/d(initial velocity of `handle`): unrolled \
             (DualSVec64<6>) vs central FD (eps 1e-6): max relative difference {:.2e} \
             (tolerance {:.0e}) -> {}",
            self.max_rel_diff,
            self.tolerance,
            if self.passed { "agree" } else { "DISAGREE" }
        )
    }
    /// As JSON.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "methods": ["unrolled", "fd"],
            "of": "final state (tangent)",
            "wrt": "handle.velocity, handle.angular_velocity",
            "max_rel_diff": self.max_rel_diff,
            "tolerance": self.tolerance,
            "jacobian_inf_norm": self.jacobian_norm,
            "passed": self.passed,
        })
    }
}

/// Compares dual-number and finite-difference derivatives of the final
/// state with respect to the first body's initial velocity.
pub fn derivative_check(scene: &Scene) -> Result<DerivativeCheck, DiffError> {
    let k = scene.world.model.bodies[0].idx_v;
    let inputs: Vec<Input> = (0..6).map(|i| Input::Velocity(k + i)).collect();
    let steps = scene.steps.min(300);
    let ju = unrolled::<6>(&scene.world, &scene.initial, &scene.controls, steps, &inputs)?;
    let jf = fd(&scene.world, &scene.initial, &scene.controls, steps, &inputs, 1e-6)?;
    let norm = ju.abs().max();
    let diff = (&ju - &jf).abs().max() / norm.max(1.0);
    let tolerance = 1e-6;
    Ok(DerivativeCheck { max_rel_diff: diff, tolerance, passed: diff <= tolerance, jacobian_norm: norm })
}

/// Silico V-D's smoothing example: a flat block (m = 1, μ = 1) resting on
/// the ground with g = 1 and h = 0.1, simulated and differentiated at the
/// relaxation `rho`. The world's only control is the horizontal force.
pub fn push_world(rho: f64) -> (crate::sim::World<f64>, crate::sim::State<f64>) {
    use crate::geometry::{Material, Shape, StaticGeometry};
    use crate::math::{Mat3, Pose, Vec3};
    let mut w = crate::sim::World::<f64>::new(0.1);
    w.gravity = Vec3::new(0.0, 0.0, -1.0);
    w.params.rho = rho;
    let half = Vec3::new(0.5, 0.5, 0.05);
    let inertia = Mat3::from_diagonal(&Vec3::new(
        (half.y * half.y + half.z * half.z) / 3.0,
        (half.x * half.x + half.z * half.z) / 3.0,
        (half.x * half.x + half.y * half.y) / 3.0,
    ));
    let mat = Material { friction: 1.0, restitution: 0.0 };
    w.add_body("block", 1.0, inertia, Some(Shape::Box { half_extents: half }), mat)
        .expect("valid block");
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane { normal: Vec3::z(), offset: 0.0 },
        pose: Pose::identity(),
        material: mat,
    });
    let x = crate::sim::State::at_rest(&w.model, &[[0.0, 0.0, half.z]]);
    (w, x)
}

/// `∂x⁺/∂F` of one step of [`push_world`] under the horizontal force `f`,
/// by `ift` at the relaxation `rho`.
pub fn push_gradient(f: f64, rho: f64) -> Result<f64, DiffError> {
    use crate::diff::{step_jacobian, DiffOptions, Method, Param};
    let (w, x) = push_world(rho);
    let mut u = w.zero_control();
    u[0] = f;
    let opts = DiffOptions { rho: Some(rho), ..Default::default() };
    let j = step_jacobian(&w, &x, &u, &[Param::U(0)], Method::Ift, &opts)?;
    Ok(j.jacobian[(0, 0)])
}
