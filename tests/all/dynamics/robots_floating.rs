//! Floating-base robots: one articulated system (base included) in the
//! scene stepper, free flight against known answers, a quadruped-like
//! robot standing on its feet.

use dualsim::dynamics::crba::spatial_momentum;
use dualsim::dynamics::kinematics::forward_kinematics;
use dualsim::dynamics::urdf;
use dualsim::prelude::*;
use nalgebra::UnitQuaternion;

use crate::common::robots::{min_link_gap, scenes};

fn quadruped(h: f64, gravity: [f64; 3]) -> World<f64> {
    let robot =
        urdf::load_file(scenes().join("quadruped.urdf"), urdf::BaseJoint::Floating).unwrap();
    let mut w = World::<f64>::new(h);
    w.set_gravity(Vec3::new(gravity[0], gravity[1], gravity[2]));
    w.add_robot_with_collisions("dog", &robot, &Pose::identity())
        .unwrap();
    w
}

/// A tumbling state: base at (0.1, −0.2, 1), tilted, moving and spinning,
/// every joint moving.
fn tumbling(w: &World<f64>) -> State<f64> {
    let mut q = w.model.neutral();
    let r = UnitQuaternion::from_euler_angles(0.3, -0.2, 0.5);
    q.as_mut_slice()[..7].copy_from_slice(&[0.1, -0.2, 1.0, r.w, r.i, r.j, r.k]);
    let joints = [0.3, -0.5, -0.2, 0.4, 0.1, 0.6, -0.3, -0.2];
    q.as_mut_slice()[7..].copy_from_slice(&joints);
    let v = DVec::from_vec(vec![
        0.3, -0.2, 0.5, 0.8, -1.2, 0.6, 2.0, -1.5, -1.0, 2.5, 1.5, -0.5, -2.0, 1.0,
    ]);
    State { q, v }
}

fn com(w: &World<f64>, x: &State<f64>) -> (f64, Vec3<f64>) {
    let mut d = w.model.data();
    forward_kinematics(&w.model, &mut d, &x.q, None);
    let m: f64 = d.oinertia.iter().map(|i| i.mass).sum();
    let c = d
        .oinertia
        .iter()
        .fold(Vec3::zeros(), |a, i| a + i.com * i.mass)
        / m;
    (m, c)
}

/// Max relative drift of the linear and angular momentum (about the
/// world origin) over 1 s of free flight without gravity at step `h`, and
/// the change of the base velocity.
fn momentum_drift(h: f64) -> (f64, f64, f64) {
    let w = quadruped(h, [0.0; 3]);
    let x0 = tumbling(&w);
    let steps = (1.0 / h).round() as usize;
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), steps).unwrap();
    let mut d = w.model.data();
    let h0 = spatial_momentum(&w.model, &mut d, &x0.q, &x0.v);
    let (lin0, ang0) = (
        h0.fixed_rows::<3>(0).into_owned(),
        h0.fixed_rows::<3>(3).into_owned(),
    );
    let (mut dl, mut da) = (0.0f64, 0.0f64);
    for x in &traj.states {
        let hk = spatial_momentum(&w.model, &mut d, &x.q, &x.v);
        dl = dl.max((hk.fixed_rows::<3>(0) - lin0).norm() / lin0.norm());
        da = da.max((hk.fixed_rows::<3>(3) - ang0).norm() / ang0.norm());
    }
    (dl, da, (traj.last().v.rows(0, 6) - x0.v.rows(0, 6)).norm())
}

#[test]
fn floating_robot_in_free_flight_conserves_momentum_to_first_order() {
    // No gravity, zero control: the total spatial momentum of the
    // articulated system is constant in continuous time. The robot is one
    // articulated system (ABA with the base), so the legs exchange
    // momentum with the base (its velocity changes) but not the total.
    // Semi-implicit Euler conserves it to O(h) (not exactly: M(q) and the
    // bias are frozen at q over the step): the drift must fall tenfold
    // with h.
    let w = quadruped(1e-3, [0.0; 3]);
    assert!(!w.model.is_lone_free_body(0), "the base has children");
    let (l3, a3, base_dv) = momentum_drift(1e-3);
    let (l4, a4, _) = momentum_drift(1e-4);
    println!(
        "floating quadruped, free flight 1 s: max relative momentum drift linear / angular: \
         h = 1e-3: {l3:.2e} / {a3:.2e}, h = 1e-4: {l4:.2e} / {a4:.2e}; base velocity change {base_dv:.3}"
    );
    assert!(base_dv > 0.1, "the legs move the base");
    assert!(l3 < 1e-3 && a3 < 2e-3, "{l3:e} {a3:e}");
    assert!(
        l3 / l4 > 8.0 && a3 / a4 > 8.0,
        "first order: {} {}",
        l3 / l4,
        a3 / a4
    );
}

/// Max distance of the centre of mass from the parabola
/// `c₀ + ċ₀ t + ½ g t²` over 1 s at step `h` (ċ₀ = linear momentum / m).
fn parabola_error(h: f64) -> (f64, f64) {
    let g = Vec3::new(0.0, 0.0, -9.81);
    let w = quadruped(h, [g.x, g.y, g.z]);
    let x0 = tumbling(&w);
    let steps = (1.0 / h).round() as usize;
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), steps).unwrap();
    let (m, c0) = com(&w, &x0);
    let mut d = w.model.data();
    let cd0 = spatial_momentum(&w.model, &mut d, &x0.q, &x0.v)
        .fixed_rows::<3>(0)
        .into_owned()
        / m;
    let (mut err, mut derr) = (0.0f64, 0.0f64);
    for (k, x) in traj.states.iter().enumerate() {
        let t = k as f64 * h;
        let expect = c0 + cd0 * t + g * (0.5 * t * t);
        err = err.max((com(&w, x).1 - expect).norm());
        let n = k as f64;
        let discrete = c0 + cd0 * t + g * (0.5 * h * h * n * (n + 1.0));
        derr = derr.max((com(&w, x).1 - discrete).norm());
    }
    (err, derr)
}

#[test]
fn floating_robot_centre_of_mass_follows_the_parabola() {
    // With gravity the centre of mass falls 4.9 m in 1 s while the legs
    // and base tumble; it follows the projectile parabola to O(h).
    let ((e3, d3), (e4, d4)) = (parabola_error(1e-3), parabola_error(1e-4));
    println!(
        "floating quadruped under gravity, 1 s: max |c − parabola| h = 1e-3: {e3:.2e} m, h = 1e-4: {e4:.2e} m; \
              from the discrete parabola c0 + n h ċ0 + h² g n(n+1)/2: {d3:.2e} m, {d4:.2e} m"
    );
    // Semi-implicit Euler's projectile is the discrete parabola (h g t/2
    // below the continuous one); the tumbling adds the O(h) momentum drift.
    assert!(d3 < 2e-4, "{d3:e}");
    assert!(d3 / d4 > 8.0, "first order: {}", d3 / d4);
    assert!(e3 <= 0.5 * 1e-3 * 9.81 + d3 + 1e-12, "{e3:e}");
}

#[test]
fn quadruped_stands_on_the_ground() {
    // examples/scenes/quadruped_stand.toml: dropped 7 mm in a kneeling
    // stance (see the scene's comments), zero torques, 2 s. Resting torso
    // height 0.05 + 0.15 cos 0.4 + 0.02 = 0.20816 m.
    let s = dualsim::scene::load(&scenes().join("quadruped_stand.toml")).unwrap();
    let w = &s.world;
    assert_eq!((w.model.nq, w.model.nv, w.link_shapes.len()), (15, 14, 8));
    assert!(w.model.bodies[0].is_free_root() && !w.model.is_lone_free_body(0));
    let traj = rollout(w, &s.initial, &s.controls, s.steps).unwrap();
    let rest = 0.05 + 0.15 * 0.4f64.cos() + 0.02;
    let settled = (0.5 / w.dt) as usize;
    let z: Vec<f64> = traj.states.iter().map(|x| x.q[2]).collect();
    let (zmin, zmax) = z[settled..]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &z| {
            (a.min(z), b.max(z))
        });
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
    let tilt = traj
        .states
        .iter()
        .map(|x| 2.0 * x.q[4].hypot(x.q[5]).hypot(x.q[6]).asin())
        .fold(0.0, f64::max);
    let vmax = traj.last().v.amax();
    let touched = traj.stats.iter().filter(|st| st.contacts > 0).count();
    println!(
        "quadruped, {} steps of {} s: base height over [0.5 s, 2 s] in [{zmin:.5}, {zmax:.5}] m (rest {rest:.5}), \
         min gap {min_gap:.2e} m, solver max penetration {max_pen:.1e}, max tilt {tilt:.1e} rad, final max |v| {vmax:.1e}, \
         contact on {touched} steps",
        s.steps, w.dt
    );
    assert!(touched > s.steps / 2, "lands");
    assert!(zmin > rest - 1e-3 && zmax < rest + 2e-3, "base height band");
    assert!(min_gap >= -1e-6, "penetration {min_gap:e}");
    assert!(max_pen <= 1e-6, "{max_pen:e}");
    assert!(tilt < 1e-3, "stays level: {tilt:e}");
    assert!(vmax < 1e-2, "at rest: {vmax:e}");
}

#[test]
fn derivative_methods_agree_on_the_standing_quadruped() {
    // `diff::check` at the standing state (8 contacts, base included in
    // the robot's coordinates): ift vs lift ≤ 1e-9, unrolled ≤ 1e-7, fd ≤
    // 1e-5 (relative to max(1, ‖J‖∞) per block).
    use dualsim::diff::{CheckOptions, DiffOptions, check};
    let s = dualsim::scene::load(&scenes().join("quadruped_stand.toml")).unwrap();
    let w = &s.world;
    let x = rollout(w, &s.initial, &s.controls, 100)
        .unwrap()
        .last()
        .clone();
    let rho = w.params.rho;
    let opts = CheckOptions {
        samples: 1,
        diff: DiffOptions {
            rho: Some(rho),
            fd_eps: 1e-6,
            ..Default::default()
        },
        ..Default::default()
    };
    let rep = check(w, &x, &s.controls, 1, &opts).unwrap();
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
        "standing quadruped rho {rho:.0e}: lift {l:.1e}  unrolled {un:.1e}  fd {f:.1e}  (fd skipped {})",
        rep.fd_skipped_columns
    );
    assert!(rep.blocks.iter().all(|b| b.norm.is_finite()));
    assert!(l <= 1e-9 && un <= 1e-7 && f <= 1e-5, "{l:e} {un:e} {f:e}");
    assert!(rep.passed);
}
