//! Contact on robot links (`ipm`): an arm falling onto the ground, known
//! answers for a prismatic body and a pendulum resting on a plane, and
//! the derivative methods agreeing on robots in contact.

use dualsim::contact::candidates::candidates;
use dualsim::contact::ipm::Params;
use dualsim::contact::space::robot::{candidate_kinematics, robot_contact_jacobian, robot_units};
use dualsim::diff::{CheckOptions, DiffOptions, check};
use dualsim::dynamics::urdf;
use dualsim::geometry::{Shape, StaticGeometry};
use dualsim::prelude::*;
use nalgebra::Vector3;

use crate::common::robots::{min_link_gap, scenes};

#[test]
fn arm_falls_onto_the_ground_and_comes_to_rest() {
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let w = &s.world;
    assert_eq!(w.link_shapes.len(), 7, "one capsule per moving link");
    let t0 = std::time::Instant::now();
    let traj = rollout(w, &s.initial, &s.controls, s.steps).unwrap();
    let per_step = t0.elapsed().as_secs_f64() / s.steps as f64;
    let min_gap = traj
        .states
        .iter()
        .map(|x| min_link_gap(w, x))
        .fold(f64::INFINITY, f64::min);
    let max_pen = traj
        .stats
        .iter()
        .map(|st| st.max_penetration)
        .fold(0.0, f64::max);
    let touched = traj.stats.iter().filter(|st| st.contacts > 0).count();
    let vmax = traj.last().v.amax();
    let start_gap = min_link_gap(w, &s.initial);
    println!(
        "arm7 fall, h = {}, {} steps: contact on {touched} steps, min gap over the run {min_gap:.3e} m (start {start_gap:.3}), \
         solver max penetration {max_pen:.1e}, final max |v| {vmax:.2e} rad/s, {:.2} ms/step",
        w.dt,
        s.steps,
        per_step * 1e3
    );
    assert!(start_gap > 0.1, "starts in the air");
    assert!(touched > 100, "lands");
    assert!(min_gap >= -1e-6, "penetration {min_gap:e}");
    assert!(max_pen <= 1e-6, "{max_pen:e}");
    // Resting on the ground: the lowest link touches (gap ~ ρ/γ) and the
    // arm no longer moves.
    assert!(min_link_gap(w, traj.last()) < 1e-2);
    assert!(vmax < 2e-2, "final v {:?}", traj.last().v.as_slice());
}

/// A one-link robot from URDF text: link `l` (mass 1 kg, centre of mass
/// at `com_x` along x, a sphere of radius 0.1 at `(tip_x, 0, 0)`) on a
/// joint of the given type and axis.
fn one_link(joint: &str, axis: &str, com_x: f64, tip_x: f64) -> urdf::UrdfRobot {
    let xml = format!(
        r#"<robot name="r"><link name="base"/>
  <link name="l"><inertial><origin xyz="{com_x} 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><origin xyz="{tip_x} 0 0"/><geometry><sphere radius="0.1"/></geometry></collision></link>
  <joint name="j" type="{joint}"><parent link="base"/><child link="l"/><axis xyz="{axis}"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint></robot>"#
    );
    urdf::from_str(&xml, urdf::BaseJoint::Fixed).unwrap()
}

fn plane_world(h: f64, rho: f64) -> World<f64> {
    let mut w = World::<f64>::new(h);
    w.params.rho = rho;
    w.params.tolerance = 1e-12;
    w.params.max_iterations = 100;
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vector3::new(0.0, 0.0, 1.0),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material::default(),
    });
    w
}

#[test]
fn prismatic_body_rests_on_the_plane_at_the_relaxed_gap() {
    let (h, rho, g) = (0.01, 1e-6, 9.81);
    let mut w = plane_world(h, rho);
    w.add_robot_with_collisions(
        "slider",
        &one_link("prismatic", "0 0 1", 0.0, 0.0),
        &Pose::new(Quat::identity(), Vector3::new(0.0, 0.0, 0.5)),
    )
    .unwrap();
    let x0 = State {
        q: DVec::zeros(1),
        v: DVec::zeros(1),
    };
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 200).unwrap();
    let x = traj.last();
    let out = step(&w, x, &w.zero_control()).unwrap();
    assert_eq!(out.contacts.len(), 1);
    let gamma = out.contacts[0].normal_impulse;
    let gap = out.contacts[0].gap;
    let z = 0.5 + out.state.q[0];
    println!(
        "prismatic slider at rest: γ = {gamma:.12} (m g h = {}), gap {gap:.6e} (ρ/γ = {:.6e}), centre height {z:.9}, v {:.1e}",
        g * h,
        rho / gamma,
        out.state.v[0]
    );
    // v⁺ = v = 0: the normal impulse carries the weight over the step, and
    // the relaxed complementarity γ φ = ρ sets the gap.
    assert!(out.state.v[0].abs() < 1e-9);
    assert!((gamma - g * h).abs() <= 1e-6 * g * h);
    assert!((gap - rho / gamma).abs() <= 1e-9);
    assert!((z - 0.1 - rho / (g * h)).abs() <= 1e-8);
}

#[test]
fn pendulum_resting_on_its_tip_balances_the_gravity_torque() {
    // Hinge about y at height 0.1 (the tip sphere's radius), link along x:
    // the centre of mass at L/2 and the sphere at L, so at rest the normal
    // impulse balances the gravity torque, γ L = m g (L/2) h.
    let (h, rho, g, l) = (0.01, 1e-6, 9.81, 0.8);
    let mut w = plane_world(h, rho);
    w.add_robot_with_collisions(
        "pendulum",
        &one_link("revolute", "0 1 0", l / 2.0, l),
        &Pose::new(Quat::identity(), Vector3::new(0.0, 0.0, 0.1)),
    )
    .unwrap();
    // Start tilted up by 0.1 rad (rotation about y by −0.1 raises +x).
    let x0 = State {
        q: DVec::from_element(1, -0.1),
        v: DVec::zeros(1),
    };
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 300).unwrap();
    let out = step(&w, traj.last(), &w.zero_control()).unwrap();
    assert_eq!(out.contacts.len(), 1);
    let gamma = out.contacts[0].normal_impulse;
    let expect = g * h / 2.0;
    println!(
        "pendulum on its tip at rest: γ = {gamma:.12} (m g h/2 = {expect}), relative error {:.1e}, angle {:.3e}, v {:.1e}",
        (gamma - expect).abs() / expect,
        out.state.q[0],
        out.state.v[0]
    );
    assert!(out.state.v[0].abs() < 1e-9);
    assert!((gamma - expect).abs() <= 1e-6 * expect);
    assert!((out.contacts[0].gap - rho / gamma).abs() <= 1e-9);
}

/// `diff::check` at one state: ift vs lift ≤ 1e-9, unrolled ≤ 1e-7, fd ≤
/// 1e-5 (relative to max(1, ‖J‖∞) per block).
fn agree(label: &str, w: &World<f64>, x: &State<f64>, rho: f64) {
    let opts = CheckOptions {
        samples: 1,
        diff: DiffOptions {
            rho: Some(rho),
            fd_eps: 1e-6,
            ..Default::default()
        },
        ..Default::default()
    };
    let rep = check(w, x, &Controls::Constant(w.zero_control()), 1, &opts).unwrap();
    let worst = |k: &str| {
        rep.blocks
            .iter()
            .map(|b| b.max_rel_diff[k])
            .fold(0.0, f64::max)
    };
    let (l, un, f) = (
        worst("ift_vs_lift"),
        worst("ift_vs_unrolled"),
        worst("ift_vs_fd"),
    );
    println!(
        "{label:<30} rho {rho:.0e}: lift {l:.1e}  unrolled {un:.1e}  fd {f:.1e}  (fd skipped {})",
        rep.fd_skipped_columns
    );
    assert!(rep.blocks.iter().all(|b| b.norm.is_finite()));
    assert!(
        l <= 1e-9 && un <= 1e-7 && f <= 1e-5,
        "{label}: {l:e} {un:e} {f:e}"
    );
    assert!(rep.passed);
}

#[test]
fn derivative_methods_agree_on_robots_in_contact() {
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let mut x = s.initial.clone();
    let mut touching = None;
    let mut resting = None;
    for k in 0..s.steps {
        let out = step(&s.world, &x, s.controls.at(k)).unwrap();
        if touching.is_none() && out.contacts.iter().any(|c| c.normal_impulse > 1e-3) {
            touching = Some(x.clone());
        }
        x = out.state;
        if k == s.steps - 1 {
            resting = Some(x.clone());
        }
    }
    let rho = s.world.params.rho;
    agree("arm7, first impact", &s.world, &touching.unwrap(), rho);
    agree("arm7, at rest", &s.world, &resting.unwrap(), rho);
    // A pendulum pressed onto the plane, at two relaxations.
    let mut w = plane_world(0.01, 1e-4);
    w.add_robot_with_collisions(
        "pendulum",
        &one_link("revolute", "0 1 0", 0.4, 0.8),
        &Pose::new(Quat::identity(), Vector3::new(0.0, 0.0, 0.1)),
    )
    .unwrap();
    let x0 = State {
        q: DVec::from_element(1, -0.05),
        v: DVec::from_element(1, 0.3),
    };
    let x = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 5)
        .unwrap()
        .last()
        .clone();
    for rho in [1e-2, 1e-4] {
        agree("pendulum on the plane", &w, &x, rho);
    }
}

#[test]
fn robot_contact_newton_blocks_are_exact() {
    // K = ∂y/∂v⁺ and G = ∂(Wᵀf)/∂v⁺ (dual numbers) against central
    // differences of the contact kinematics, and the normal row of W
    // against ∂φ(q⁺(v⁺))/∂v⁺ / h, on the arm lying on the ground.
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let w = &s.world;
    let x = rollout(w, &s.initial, &s.controls, 300)
        .unwrap()
        .last()
        .clone();
    let u = w.zero_control();
    let p = w.problem(&x, &u);
    let cands = candidates(&p, Params::default().margin);
    assert!(!cands.is_empty());
    let unit = &robot_units(&w.model)[0];
    let v: Vec<f64> = (0..7)
        .map(|k| x.v[k] + 0.3 * (k as f64 + 1.0).sin())
        .collect();
    let f = Vector3::new(0.3, -0.2, 0.1);
    let eps = 1e-6;
    for c in &cands {
        let (k, g) = robot_contact_jacobian(&p, unit, c, &v, &[0.0; 6], &f).unwrap();
        let (k, g) = (&k[0], &g[0][0]);
        let kin = candidate_kinematics(&p, unit, c, &v, [0.0; 6]).unwrap();
        let (mut ek, mut eg, mut ew) = (0.0f64, 0.0f64, 0.0f64);
        for j in 0..7 {
            let shifted = |d: f64| {
                let mut vv = v.clone();
                vv[j] += d;
                candidate_kinematics(&p, unit, c, &vv, [0.0; 6]).unwrap()
            };
            let (kp, km) = (shifted(eps), shifted(-eps));
            for r in 0..3 {
                ek = ek.max(((kp.y[r] - km.y[r]) / (2.0 * eps) - k[(r, j)]).abs());
            }
            let (gp, gm) = (kp.w.transpose() * f, km.w.transpose() * f);
            for r in 0..7 {
                eg = eg.max(((gp[r] - gm[r]) / (2.0 * eps) - g[(r, j)]).abs());
            }
            ew = ew.max(((kp.y[0] - km.y[0]) / (2.0 * eps) / w.dt - kin.w[(0, j)]).abs());
        }
        println!(
            "link {} feature {}: |K − fd| {ek:.1e}, |G − fd| {eg:.1e}, |W_n − ∂φ/∂v⁺/h| {ew:.1e}",
            c.a, c.feature
        );
        assert!(ek < 1e-7 && eg < 1e-7 && ew < 1e-5, "{ek:e} {eg:e} {ew:e}");
    }
}

#[test]
fn sweeping_arm_decelerates_at_the_coulomb_rate() {
    // A two-link arm: a yaw joint (z) then a pitch joint (y) at height 0.1
    // carrying a link (1 kg, centre of mass at L_c = 0.4, izz 0.01) with a
    // sphere (r = 0.1) at L = 0.8 resting on the ground, swept about z at
    // 2 rad/s (exact Coulomb cone, μ = 0.5). The tip carries γ = m g h L_c/L
    // per step and slides along the circle, so the friction torque is
    // μ γ L / h = μ m g L_c and the yaw rate drops at
    // μ m g L_c / I_z, I_z = 0.01 + 0.01 + m L_c² = 0.18.
    let xml = r#"<robot name="r"><link name="base"/>
  <link name="a"><inertial><origin xyz="0 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="l"><inertial><origin xyz="0.4 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><origin xyz="0.8 0 0"/><geometry><sphere radius="0.1"/></geometry></collision></link>
  <joint name="yaw" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint>
  <joint name="pitch" type="revolute"><parent link="a"/><child link="l"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint></robot>"#;
    let robot = urdf::from_str(xml, urdf::BaseJoint::Fixed).unwrap();
    let (h, rho, mu, g) = (0.002, 1e-6, 0.5, 9.81);
    let mut w = plane_world(h, rho);
    w.params.tolerance = 1e-10;
    assert_eq!(w.friction_cone, dualsim::contact::FrictionCone::Exact);
    w.add_robot_with_collisions(
        "sweeper",
        &robot,
        &Pose::new(Quat::identity(), Vector3::new(0.0, 0.0, 0.1)),
    )
    .unwrap();
    let x0 = State {
        q: DVec::from_vec(vec![0.0, 0.0]),
        v: DVec::from_vec(vec![2.0, 0.0]),
    };
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 200).unwrap();
    let rate = mu * g * 0.4 / 0.18;
    // Sliding between steps 20 and 60 (after the first contact transient).
    let measured = (traj.states[20].v[0] - traj.states[60].v[0]) / (40.0 * h);
    let stop = traj
        .states
        .iter()
        .position(|x| x.v[0].abs() < 1e-6)
        .unwrap();
    println!(
        "sweeping arm: yaw deceleration {measured:.6} rad/s² (μ m g L_c / I_z = {rate:.6}), relative error {:.1e}; \
         stops at step {stop} (2/rate/h = {:.1}); final v {:.1e}",
        (measured - rate).abs() / rate,
        2.0 / rate / h,
        traj.last().v.amax()
    );
    assert!((measured - rate).abs() <= 1e-3 * rate);
    assert!(traj.last().v.amax() < 1e-6, "sticks once stopped");
}

#[test]
fn ball_rests_on_a_robot_platform() {
    // A platform link (2 kg, box 1 × 1 × 0.1) on a vertical prismatic joint
    // falls onto the ground with a free ball (1 kg, r = 0.1) falling onto it.
    // At rest the ball's contact carries m_b g h per step, the ground's four
    // corner contacts (m_p + m_b) g h together.
    let xml = r#"<robot name="r"><link name="base"/>
  <link name="deck"><inertial><origin xyz="0 0 0"/><mass value="2"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.2"/></inertial>
    <collision><origin xyz="0 0 0"/><geometry><box size="1 1 0.1"/></geometry></collision></link>
  <joint name="lift" type="prismatic"><parent link="base"/><child link="deck"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint></robot>"#;
    let robot = urdf::from_str(xml, urdf::BaseJoint::Fixed).unwrap();
    let (h, rho, g) = (0.01, 1e-6, 9.81);
    let mut w = plane_world(h, rho);
    let ball = w
        .add_body(
            "ball",
            1.0,
            Mat3::identity() * 0.004,
            Some(Shape::Sphere { radius: 0.1 }),
            Material::default(),
        )
        .unwrap();
    w.add_robot_with_collisions(
        "platform",
        &robot,
        &Pose::new(Quat::identity(), Vector3::new(0.0, 0.0, 0.3)),
    )
    .unwrap();
    let mut x0 = State::at_rest(&w.model, &[[0.05, -0.02, 0.5]]);
    x0.q[7] = 0.0; // deck centre at z = 0.3, ball 0.05 above it
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 150).unwrap();
    let out = step(&w, traj.last(), &w.zero_control()).unwrap();
    let on_ball: f64 = out
        .contacts
        .iter()
        .filter(|c| c.body_b == Some(ball) || c.body_a == ball)
        .map(|c| c.normal_impulse)
        .sum();
    let on_ground: f64 = out
        .contacts
        .iter()
        .filter(|c| c.body_b.is_none())
        .map(|c| c.normal_impulse)
        .sum();
    let deck_z = 0.3 + out.state.q[7];
    println!(
        "ball on the platform at rest: ball contact {on_ball:.12} (m_b g h = {}), ground {on_ground:.12} ((m_p + m_b) g h = {}), \
         deck centre {deck_z:.6}, ball centre {:.6}, max |v| {:.1e}",
        g * h,
        3.0 * g * h,
        out.state.q[2],
        out.state.v.amax()
    );
    assert!(out.state.v.amax() < 1e-8);
    assert!((on_ball - g * h).abs() <= 1e-6 * g * h);
    assert!((on_ground - 3.0 * g * h).abs() <= 1e-6 * 3.0 * g * h);
    assert!((deck_z - 0.05).abs() < 1e-3 && (out.state.q[2] - deck_z - 0.15).abs() < 1e-3);
    // Derivatives through the link–body and link–ground contacts.
    let x = traj.states[40].clone();
    for rho in [1e-2, 1e-4] {
        agree("ball on the platform", &w, &x, rho);
    }
}

/// `ift`'s `Param::V` / `Param::U` columns evaluate only the dynamics rows
/// of the `ipm` residual (`ContactBackend::velocity_control_residual`,
/// with `Partials::Kernel`): the same columns as the whole residual in
/// dual numbers (`Partials::Dual`) to round-off, on robots in contact
/// (the arm at its first impact, the standing quadruped) and a free body
/// in a robot's island (the ball on the platform is covered by `agree`).
#[test]
fn ift_velocity_and_control_columns_match_the_whole_residual() {
    use dualsim::diff::{Method, Param, Partials, step_jacobian};
    for (file, settle) in [("arm7_fall.toml", 0), ("quadruped_stand.toml", 20)] {
        let s = dualsim::scene::load(&scenes().join(file)).unwrap();
        let mut x = s.initial.clone();
        for k in 0..s.steps.max(settle) {
            let out = step(&s.world, &x, s.controls.at(k)).unwrap();
            let touching = out.contacts.iter().any(|c| c.normal_impulse > 1e-3);
            x = out.state;
            if touching && k >= settle {
                break;
            }
        }
        let nv = s.world.model.nv;
        let params: Vec<Param> = (0..nv)
            .map(Param::Q)
            .chain((0..nv).map(Param::V))
            .chain((0..nv).map(Param::U))
            .collect();
        let jac = |partials| {
            let opts = DiffOptions {
                partials,
                ..Default::default()
            };
            step_jacobian(&s.world, &x, s.controls.at(0), &params, Method::Ift, &opts)
                .unwrap()
                .jacobian
        };
        let (split, whole) = (jac(Partials::Kernel), jac(Partials::Dual));
        let scale = whole.amax().max(1.0);
        let diff = (&split - &whole).amax() / scale;
        println!(
            "{file}: {} columns, max |kernel − dual| / max(1, ‖J‖) = {diff:.1e}",
            params.len()
        );
        assert!(whole.iter().all(|v| v.is_finite()));
        assert!(diff <= 1e-12, "{file}: {diff:e}");
    }
}
