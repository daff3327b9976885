//! Free flight against known answers: the discrete projectile, the
//! Dzhanibekov flip with exact momentum conservation, bounded energy, and
//! rollout derivatives by dual numbers against central differences.

use dualsim::diff::{DiffError, Input, fd, unrolled};
use dualsim::dynamics::free::{discrete_momentum, kinetic_energy};
use dualsim::math::{Mat3, Quat, Vec3, so3};
use dualsim::prelude::*;

/// p_n = p₀ + n h v₀ + h² g n(n+1)/2 (symplectic Euler), to 1e-12.
#[test]
fn projectile_matches_discrete_closed_form() {
    let h = 0.01;
    let mut w = World::<f64>::new(h);
    w.gravity = Vec3::new(0.0, 0.0, -9.81);
    w.add_body("p", 2.0, Mat3::identity() * 0.1, None, Material::default())
        .unwrap();
    let mut x = State::at_rest(&w.model, &[[1.0, -2.0, 3.0]]);
    let v0 = [4.0, 1.5, 12.0];
    x.v.as_mut_slice()[..3].copy_from_slice(&v0);
    let n = 250;
    let traj = rollout(&w, &x, &Controls::Constant(w.zero_control()), n).unwrap();
    for (k, s) in traj.states.iter().enumerate() {
        let kf = k as f64;
        let expect = [
            1.0 + kf * h * v0[0],
            -2.0 + kf * h * v0[1],
            3.0 + kf * h * v0[2] - 9.81 * h * h * kf * (kf + 1.0) / 2.0,
        ];
        for d in 0..3 {
            assert!(
                (s.q[d] - expect[d]).abs() < 1e-12,
                "step {k}, axis {d}: {} vs {}",
                s.q[d],
                expect[d]
            );
        }
        let vz = v0[2] - 9.81 * h * kf;
        assert!((s.v[2] - vz).abs() < 1e-12);
    }
}

fn tumbler(h: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(h);
    w.gravity = Vec3::zeros();
    // principal moments 0.4 < 0.9 < 1.2: the y axis is the intermediate one
    let i = Mat3::from_diagonal(&Vec3::new(0.4, 0.9, 1.2));
    w.add_body("t", 1.0, i, None, Material::default()).unwrap();
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
    // world-frame angular velocity, almost about the intermediate axis,
    // from a slightly rotated attitude
    let r = so3::exp(&Vec3::new(0.1, -0.2, 0.3));
    x.q.as_mut_slice()[3..7].copy_from_slice(&[r.w, r.i, r.j, r.k]);
    let w_body = Vec3::new(1e-2, 5.0, 1e-2);
    let w_world = so3::rotate(&r, &w_body);
    x.v.as_mut_slice()[3..6].copy_from_slice(w_world.as_slice());
    (w, x)
}

fn body_omega(s: &State<f64>) -> Vec3<f64> {
    let r = Quat::new(s.q[3], s.q[4], s.q[5], s.q[6]);
    so3::rotate_inv(&r, &Vec3::new(s.v[3], s.v[4], s.v[5]))
}

/// Started near its intermediate axis, the body flips (ω_y changes sign
/// repeatedly). The scheme conserves the world-frame angular momentum and
/// the kinetic energy exactly (`dynamics::free`), so only round-off and
/// the Newton tolerance (1e-14) drift: measured over 10 s at h = 0.01,
/// 6.0e-14 (momentum) and 1.3e-14 (energy) relative; held to that floor
/// × ~100: 1e-11 and 2e-12.
#[test]
fn dzhanibekov_flip_conserves_momentum_and_energy() {
    let h = 0.01;
    let (w, x) = tumbler(h);
    let traj = rollout(&w, &x, &Controls::Constant(w.zero_control()), 1000).unwrap();
    let (_, l0) = discrete_momentum(&w.model, &x.q, &x.v, h).unwrap();
    let e0 = kinetic_energy(&w.model, &x.q, &x.v);
    let mut max_l = 0.0_f64;
    let mut max_e = 0.0_f64;
    let mut flips = 0;
    let mut prev = body_omega(&x).y;
    for s in &traj.states {
        let (_, l) = discrete_momentum(&w.model, &s.q, &s.v, h).unwrap();
        max_l = max_l.max((l - l0).norm() / l0.norm());
        let e = kinetic_energy(&w.model, &s.q, &s.v);
        max_e = max_e.max((e - e0).abs() / e0);
        let wy = body_omega(s).y;
        if wy.signum() != prev.signum() {
            flips += 1;
        }
        prev = wy;
        let q = Quat::new(s.q[3], s.q[4], s.q[5], s.q[6]);
        assert!((q.norm() - 1.0).abs() < 1e-12, "quaternion stays unit");
    }
    println!("angular momentum drift {max_l:e}, energy drift {max_e:e}, {flips} flips");
    assert!(
        flips >= 2,
        "the body flips about its intermediate axis ({flips} flips)"
    );
    assert!(max_l < 1e-11, "angular momentum drift {max_l:e}");
    assert!(max_e < 2e-12, "kinetic energy drift {max_e:e}");
}

/// The flip does not happen about a stable (major) axis.
#[test]
fn rotation_about_major_axis_is_stable() {
    let h = 0.01;
    let mut w = World::<f64>::new(h);
    w.gravity = Vec3::zeros();
    w.add_body(
        "t",
        1.0,
        Mat3::from_diagonal(&Vec3::new(0.4, 0.9, 1.2)),
        None,
        Material::default(),
    )
    .unwrap();
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
    x.v.as_mut_slice()[3..6].copy_from_slice(&[1e-3, 1e-3, 4.0]);
    let traj = rollout(&w, &x, &Controls::Constant(w.zero_control()), 1000).unwrap();
    for s in &traj.states {
        assert!(body_omega(s).z > 3.99);
    }
}

/// d(position after 100 steps)/d(v₀, ω₀) by DualSVec64<8> (6 of its 8
/// directions seeded) equals central differences on the manifold to 1e-6
/// (relative to max(1, ‖J‖∞)); more inputs than directions is a typed
/// error.
#[test]
fn rollout_derivative_matches_central_differences() {
    let h = 0.01;
    let (mut w, mut x) = tumbler(h);
    w.gravity = Vec3::new(0.0, 0.0, -9.81);
    x.v.as_mut_slice()[..3].copy_from_slice(&[1.0, 0.5, 3.0]);
    let mut u = w.zero_control();
    u[3] = 0.05; // a small torque so rotation and translation both matter
    let controls = Controls::Constant(u);
    let inputs: Vec<Input> = (0..6).map(Input::Velocity).collect();
    let ju = unrolled::<8>(&w, &x, &controls, 100, &inputs).unwrap();
    let jf = fd(&w, &x, &controls, 100, &inputs, 1e-6).unwrap();
    let scale = ju.abs().max().max(1.0);
    let diff = (&ju - &jf).abs().max() / scale;
    println!("‖J‖∞ = {scale:e}, max |J_dual − J_fd| / max(1, ‖J‖∞) = {diff:e}");
    assert!(diff < 1e-6, "{diff:e}");
    // position rows: d p_N / d ṗ₀ = N h I exactly (no coupling in free flight)
    for i in 0..3 {
        for j in 0..3 {
            let expect = if i == j { 100.0 * h } else { 0.0 };
            assert!((ju[(i, j)] - expect).abs() < 1e-12);
        }
    }
    // and orientation depends on the initial angular velocity
    assert!(ju.view((3, 3), (3, 3)).abs().max() > 0.1);
    assert_eq!(ju.ncols(), 6);
    let nine: Vec<Input> = (0..9).map(Input::Velocity).collect();
    let err = unrolled::<8>(&w, &x, &controls, 1, &nine).unwrap_err();
    assert!(
        matches!(&err, DiffError::BadParam(m) if m.contains("9 inputs")),
        "{err}"
    );
}

/// Derivatives with respect to the initial configuration on the manifold.
#[test]
fn rollout_derivative_wrt_configuration() {
    let (w, x) = tumbler(0.01);
    let controls = Controls::Constant(w.zero_control());
    let inputs: Vec<Input> = (0..6).map(Input::Config).collect();
    let ju = unrolled::<8>(&w, &x, &controls, 50, &inputs).unwrap();
    let jf = fd(&w, &x, &controls, 50, &inputs, 1e-6).unwrap();
    let diff = (&ju - &jf).abs().max() / ju.abs().max().max(1.0);
    assert!(diff < 1e-6, "{diff:e}");
}

/// A rotation of 180° or more in one step is a typed error, not a NaN.
#[test]
fn too_fast_rotation_is_a_typed_error() {
    let (w, mut x) = tumbler(0.1);
    x.v.as_mut_slice()[3..6].copy_from_slice(&[0.0, 0.0, 25.0]); // h ω = 2.5 > 2
    let err = step(&w, &x, &w.zero_control()).unwrap_err();
    assert!(
        matches!(err, SimError::Solve(_) | SimError::Dynamics(_)),
        "{err}"
    );
    assert!(err.to_string().contains("too large"), "{err}");
}

/// Non-finite inputs are rejected with a typed error.
#[test]
fn non_finite_state_is_a_typed_error() {
    let (w, mut x) = tumbler(0.01);
    x.v[0] = f64::NAN;
    assert_eq!(
        step(&w, &x, &w.zero_control()).unwrap_err(),
        SimError::NonFinite { what: "state" }
    );
    let (w, x) = tumbler(0.01);
    let mut u = w.zero_control();
    u[2] = f64::INFINITY;
    assert_eq!(
        step(&w, &x, &u).unwrap_err(),
        SimError::NonFinite { what: "control" }
    );
}
