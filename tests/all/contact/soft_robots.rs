//! The `soft` backend on robot links (issue #19): oriented point clouds
//! on links and the generalized forces `Σ J_pᵀ f_p` on the joint
//! coordinates. Known answers: a pendulum's tip and a floating-base
//! tripod rest at the closed-form softplus depth of their load; a
//! floating robot struck by a free ball conserves linear momentum; the
//! inverse dynamics recovers the control; the derivative methods agree
//! on a short rollout in contact. Each test states its tolerance.

use dualsim::contact::SolverKind;
use dualsim::contact::soft::Params;
use dualsim::diff::{CheckOptions, DiffOptions, Input, Method, check, rollout_jacobian};
use dualsim::dynamics::urdf;
use dualsim::geometry::AttachedShape;
use dualsim::math::{DMat, Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

/// The resting depth of a load `f` on one soft point: `φ* = −ε₃ ln(e^{f/(kε₃)} − 1)`.
fn phi_star(f: f64, k: f64, eps3: f64) -> f64 {
    -eps3 * ((f / (k * eps3)).exp() - 1.0).ln()
}

fn ground(mu: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: mu,
            restitution: 0.0,
        },
    }
}

fn soft_world(h: f64) -> World<f64> {
    let mut w = World::<f64>::new(h);
    w.solver = SolverKind::Soft;
    w.backends.soft = Params::default();
    w.set_gravity(Vec3::new(0.0, 0.0, -9.81));
    w
}

/// A cloud of points `ps` sharing the outward normal `n` (link frame).
fn points(ps: &[[f64; 3]], n: [f64; 3]) -> Shape<f64> {
    Shape::Points {
        points: ps.iter().map(|p| Vec3::new(p[0], p[1], p[2])).collect(),
        normals: ps.iter().map(|_| Vec3::new(n[0], n[1], n[2])).collect(),
    }
}

/// A pendulum: a revolute joint about y at height `hinge`, link along x
/// (1 kg, centre of mass at `l/2`), a one-point cloud at the tip `l`
/// (normal −z: the point faces the ground).
fn pendulum(l: f64, hinge: f64) -> World<f64> {
    let xml = format!(
        r#"<robot name="p"><link name="base"/>
  <link name="l"><inertial><origin xyz="{c} 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="j" type="continuous"><parent link="base"/><child link="l"/><axis xyz="0 1 0"/></joint></robot>"#,
        c = l / 2.0
    );
    let r = urdf::from_str(&xml, urdf::BaseJoint::Fixed).unwrap();
    let mut w = soft_world(1e-3);
    let id = w
        .add_robot(
            "pendulum",
            &r.model,
            &Pose::new(Quat::identity(), Vec3::new(0.0, 0.0, hinge)),
        )
        .unwrap();
    let first = w.robots[id].first_body;
    let link = first + w.robots[id].bodies - 1;
    w.link_shapes.push(AttachedShape {
        body: link,
        pose: Pose::identity(),
        shape: points(&[[l, 0.0, 0.0]], [0.0, 0.0, -1.0]),
    });
    w.statics.push(ground(0.5));
    w
}

fn settle(w: &World<f64>, x0: &State<f64>, steps: usize) -> State<f64> {
    let u = w.zero_control();
    let mut x = x0.clone();
    for _ in 0..steps {
        x = step(w, &x, &u).unwrap().state;
    }
    x
}

#[test]
fn pendulum_tip_rests_at_the_closed_form_depth_of_half_its_weight() {
    // Moments about the hinge: F l cos θ = m g (l/2) cos θ, so the tip
    // carries F = m g / 2 whatever the angle, and at rest (v = 0, d(0) =
    // 1) k s⁺(−φ) = F: φ* = −ε₃ ln(e^{F/(kε₃)} − 1) = +0.457 mm. The
    // fixed point of the discrete step is exactly this depth; after 2 s
    // (80 time constants of the overdamped contact) within 1e-9 m.
    let (l, hinge) = (0.5, 0.1);
    let w = pendulum(l, hinge);
    let p = Params::default();
    let want = phi_star(9.81 / 2.0, p.stiffness, p.softness);
    // start with the tip 5 mm above the ground (θ > 0 lowers the tip)
    let th0 = ((hinge - 0.005) / l).asin();
    let x0 = State {
        q: DVec::from_element(1, th0),
        v: DVec::zeros(1),
    };
    let x = settle(&w, &x0, 2000);
    let tip = hinge - l * x.q[0].sin();
    let out = step(&w, &x, &w.zero_control()).unwrap();
    println!(
        "pendulum tip rests at {tip:e} m (gap reported {:e}), closed form {want:e} m, v {:e}",
        out.contacts[0].gap, x.v[0]
    );
    assert!((want * 1e3 - 0.457).abs() < 1e-3, "{want}");
    assert!((tip - want).abs() < 1e-9, "{tip} vs {want}");
    assert!((out.contacts[0].gap - tip).abs() < 1e-12);
    assert!(x.v[0].abs() < 1e-9);
    // RK4 has the same fixed point (v = 0, ABA(q, 0, u + Λ) = 0)
    let mut w4 = w.clone();
    w4.backends.soft.integrator = dualsim::contact::soft::Integrator::Rk4;
    let x = settle(&w4, &x0, 2000);
    let tip4 = hinge - l * x.q[0].sin();
    println!("RK4: tip rests at {tip4:e} m");
    assert!((tip4 - want).abs() < 1e-9, "{tip4} vs {want}");
}

/// A floating-base robot: a base link (2 kg) with a child welded below its
/// origin (1 kg, centre of mass at the base origin too) carrying a
/// tripod of points at radius 0.1 m, 0.05 m below, normals −z.
fn tripod(h: f64, gravity: f64) -> World<f64> {
    let xml = r#"<robot name="t">
  <link name="base"><inertial><origin xyz="0 0 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
  <link name="foot"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="weld" type="fixed"><parent link="base"/><child link="foot"/><origin xyz="0 0 -0.05"/></joint></robot>"#;
    let r = urdf::from_str(xml, urdf::BaseJoint::Floating).unwrap();
    let mut w = soft_world(h);
    w.set_gravity(Vec3::new(0.0, 0.0, -gravity));
    let id = w.add_robot("tripod", &r.model, &Pose::identity()).unwrap();
    let first = w.robots[id].first_body;
    let s3 = 3f64.sqrt() / 2.0;
    w.link_shapes.push(AttachedShape {
        body: first + 1,
        pose: Pose::identity(),
        shape: points(
            &[
                [0.1, 0.0, 0.0],
                [-0.05, 0.1 * s3, 0.0],
                [-0.05, -0.1 * s3, 0.0],
            ],
            [0.0, 0.0, -1.0],
        ),
    });
    w
}

fn tripod_state(w: &World<f64>, z: f64) -> State<f64> {
    State::at_rest(&w.model, &[[0.0, 0.0, z]])
}

#[test]
fn floating_tripod_rests_at_the_closed_form_depth_of_its_weight() {
    // Three points at the same depth have equal separation weights 1/3
    // (eq. 23), so the pair's force is k s⁺(−φ) for the whole load: at
    // rest φ* = −ε₃ ln(e^{(m₁+m₂)g/(kε₃)} − 1) = −2.889 mm below the plane,
    // exactly at the discrete fixed point; within 1e-9 m after 3 s.
    let mut w = tripod(1e-3, 9.81);
    w.statics.push(ground(0.5));
    let x0 = tripod_state(&w, 0.055);
    let x = settle(&w, &x0, 3000);
    let p = Params::default();
    let want = phi_star(3.0 * 9.81, p.stiffness, p.softness);
    let feet = x.q[2] - 0.05;
    println!(
        "floating tripod: feet at {feet:e} m, closed form {want:e} m; max |v| {:e}, quaternion {:?}",
        x.v.amax(),
        &x.q.as_slice()[3..7]
    );
    assert!((feet - want).abs() < 1e-9, "{feet} vs {want}");
    assert!(x.v.amax() < 1e-9);
    // upright (symmetric load: no torque)
    assert!((x.q[3] - 1.0).abs() < 1e-12);
}

#[test]
fn floating_robot_struck_by_a_ball_conserves_linear_momentum() {
    // Zero gravity; the robot's centre of mass is its base origin, so its
    // linear momentum is (m₁ + m₂) ṗ. The contact force acts at one point
    // on both sides (action–reaction), so the total changes only by round-off.
    let mut w = tripod(1e-3, 0.0);
    let ball = w
        .add_body(
            "ball",
            0.5,
            Mat3::identity() * (0.4 * 0.5 * 0.05f64.powi(2)),
            Some(Shape::Sphere { radius: 0.05 }),
            Material {
                friction: 0.5,
                restitution: 0.0,
            },
        )
        .unwrap();
    // the ball comes up from below the feet, off-centre, with spin
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0], [0.03, 0.01, -0.11]]);
    let bv = w.model.bodies[ball].idx_v;
    x.v[bv + 2] = 1.0;
    x.v[bv + 4] = 3.0;
    let momentum = |x: &State<f64>| {
        Vec3::new(x.v[0], x.v[1], x.v[2]) * 3.0 + Vec3::new(x.v[bv], x.v[bv + 1], x.v[bv + 2]) * 0.5
    };
    let m0 = momentum(&x);
    let u = w.zero_control();
    let mut touched = 0;
    let mut worst: f64 = 0.0;
    for _ in 0..100 {
        let out = step(&w, &x, &u).unwrap();
        if out.contacts.iter().any(|c| c.normal_impulse > 1e-6) {
            touched += 1;
        }
        x = out.state;
        worst = worst.max((momentum(&x) - m0).amax());
    }
    println!(
        "ball on floating robot: {touched} steps in contact, robot ṗ {:?}, ball v {:?}, max momentum drift {worst:e}",
        &x.v.as_slice()[0..3],
        &x.v.as_slice()[bv..bv + 3]
    );
    assert!(touched > 5);
    assert!(x.v[2] > 0.05, "the robot was pushed up");
    assert!(worst < 1e-12, "{worst}");
}

#[test]
fn inverse_dynamics_recovers_the_control_on_a_robot_in_contact() {
    let w = pendulum(0.5, 0.1);
    let x = settle(
        &w,
        &State {
            q: DVec::from_element(1, 0.19),
            v: DVec::zeros(1),
        },
        50,
    );
    let u = DVec::from_element(1, 0.7);
    let out = step(&w, &x, &u).unwrap();
    assert!(out.contacts.iter().any(|c| c.normal_impulse > 1e-6));
    let got = dualsim::sim::inverse_step(&w, &x, &out.state.v).unwrap();
    let err = (&got - &u).amax();
    println!("inverse dynamics error on the pendulum {err:e}");
    assert!(err < 1e-9, "{err}");
}

/// Largest entry of `|a − b|` relative to the largest of `|a|`.
fn rel(a: &DMat<f64>, b: &DMat<f64>) -> f64 {
    (a - b).amax() / a.amax().max(1e-300)
}

#[test]
fn derivative_methods_agree_on_a_pendulum_rollout_in_contact() {
    // 30 steps (30 ms) of the pendulum pressing its tip into the ground,
    // inputs: the initial angle and rate, the control at steps 0 and 10:
    // ift vs lift ≤ 1e-9, vs unrolled ≤ 1e-7, vs fd (central, 1e-6) ≤ 1e-5.
    let w = pendulum(0.5, 0.1);
    let x0 = State {
        q: DVec::from_element(1, 0.19),
        v: DVec::from_element(1, 0.5),
    };
    let controls = Controls::Constant(DVec::from_element(1, 0.2));
    let inputs = [
        Input::Config(0),
        Input::Velocity(0),
        Input::Control { step: 0, index: 0 },
        Input::Control { step: 10, index: 0 },
    ];
    let o = DiffOptions {
        fd_eps: 1e-6,
        ..Default::default()
    };
    let steps = 30;
    let j = |m| {
        rollout_jacobian(&w, &x0, &controls, steps, &inputs, m, &o)
            .unwrap()
            .jacobian
    };
    let (ift, lift, unr, fd) = (
        j(Method::Ift),
        j(Method::Lift),
        j(Method::Unrolled),
        j(Method::Fd),
    );
    let (a, b, c) = (rel(&ift, &lift), rel(&ift, &unr), rel(&ift, &fd));
    println!("pendulum rollout: ift vs lift {a:e}, vs unrolled {b:e}, vs fd {c:e}\n{ift}");
    assert!(a <= 1e-9 && b <= 1e-7 && c <= 1e-5, "{a:e} {b:e} {c:e}");
    // in contact along the way
    let traj = rollout(&w, &x0, &controls, steps).unwrap();
    assert!(traj.stats.iter().filter(|s| s.contacts > 0).count() > 10);
    // and `dualsim check` (step Jacobians w.r.t. state and control, its
    // default tolerances) passes on the floating tripod landing
    let mut t = tripod(1e-3, 9.81);
    t.statics.push(ground(0.5));
    let x = tripod_state(&t, 0.052);
    let rep = check(
        &t,
        &x,
        &Controls::Constant(t.zero_control()),
        20,
        &CheckOptions::default(),
    )
    .unwrap();
    println!(
        "tripod check: passed {} ({} blocks)",
        rep.passed,
        rep.blocks.len()
    );
    assert!(rep.passed);
}

#[test]
fn a_link_shape_without_point_cloud_sampling_is_a_typed_error() {
    // a cone on the pendulum's link: the step fails naming the backend and
    // the shape (no panic, nothing silently ignored)
    let mut w = pendulum(0.5, 0.1);
    w.link_shapes[0].shape = Shape::Cone {
        height: 0.1,
        half_angle: 0.4,
    };
    let x = State {
        q: DVec::from_element(1, 0.1),
        v: DVec::zeros(1),
    };
    let e = step(&w, &x, &w.zero_control()).unwrap_err().to_string();
    println!("{e}");
    assert!(e.contains("`soft`") && e.contains("cone"), "{e}");
}
