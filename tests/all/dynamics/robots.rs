//! Articulated robots in worlds and scene files: stepping next to free
//! bodies, derivatives through the articulated step, scene errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use dualsim::diff::{CheckOptions, DiffOptions, check};
use dualsim::dynamics::{crba::crba, urdf};
use dualsim::prelude::*;

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes")
}

/// Total energy of the double pendulum scene's robot (kinetic ½vᵀMv +
/// potential of the two point-like links).
fn pendulum_energy(w: &World<f64>, x: &State<f64>) -> f64 {
    let mut d = w.model.data();
    let m = crba(&w.model, &mut d, &x.q).clone();
    let kinetic = 0.5 * x.v.dot(&(&m * &x.v));
    let (a, b) = (x.q[0], x.q[1]);
    // link centres 1 m from each hinge along −z of the link frame, hinge about y
    let z1 = 3.0 - a.cos();
    let z2 = 3.0 - a.cos() - (a + b).cos();
    kinetic + 9.81 * (z1 + z2)
}

#[test]
fn double_pendulum_scene_conserves_energy_approximately() {
    let s = dualsim::scene::load(&scenes().join("double_pendulum.toml")).unwrap();
    assert_eq!(s.world.robots.len(), 1);
    assert_eq!(s.world.model.nv, 2);
    let traj = rollout(&s.world, &s.initial, &s.controls, s.steps).unwrap();
    let e0 = pendulum_energy(&s.world, &s.initial);
    let drift = traj
        .states
        .iter()
        .map(|x| (pendulum_energy(&s.world, x) - e0).abs() / e0.abs())
        .fold(0.0, f64::max);
    println!(
        "double pendulum, semi-implicit Euler h = 1e-3, 2 s: max relative energy error {drift:e}"
    );
    // symplectic Euler: bounded O(h) oscillation, no secular drift
    assert!(drift < 2e-2, "{drift:e}");
    assert!(traj.last().v.amax() > 1.0, "it swings");
}

#[test]
fn robot_and_free_body_step_together() {
    let robot = urdf::load_file(
        scenes().join("double_pendulum.urdf"),
        urdf::BaseJoint::Fixed,
    )
    .unwrap();
    let mut w = World::<f64>::new(0.01);
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.1,
        None,
        Material::default(),
    )
    .unwrap();
    w.add_robot("pend", &robot.model, &Pose::identity())
        .unwrap();
    assert_eq!((w.model.nq, w.model.nv), (9, 8));
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
    x.q[7] = 0.3;
    let traj = rollout(&w, &x, &Controls::Constant(w.zero_control()), 50).unwrap();
    // the ball is in free fall, unaffected by the robot
    let n = 50.0;
    assert!((traj.last().q[2] + 9.81 * 0.01 * 0.01 * n * (n + 1.0) / 2.0).abs() < 1e-12);
    // the pendulum swings back from 0.3 rad
    assert!(traj.last().q[7] < 0.3);
    // derivative methods agree on the mixed world
    let rep = check(
        &w,
        &x,
        &Controls::Constant(w.zero_control()),
        20,
        &CheckOptions {
            samples: 2,
            diff: DiffOptions {
                rho: None,
                fd_eps: 1e-6,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    assert!(rep.passed);
    assert!(
        rep.blocks
            .iter()
            .any(|b| b.of == "robot_v" && b.wrt == "robot_q" && b.norm > 0.0)
    );
}

#[test]
fn robot_scene_errors_are_located() {
    let dir = std::env::temp_dir().join(format!("dualsim-robot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("bad.toml");
    std::fs::write(&scene, "[[robot]]\nname = \"r\"\nurdf = \"missing.urdf\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .arg("run")
        .arg(&scene)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(":3:8: robot[0].urdf"), "{err}");
    std::fs::write(
        &scene,
        format!(
            "[[robot]]\nname = \"r\"\nurdf = \"{}\"\nq = [0.0]\n",
            scenes().join("double_pendulum.urdf").display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .arg("run")
        .arg(&scene)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("robot[0].q: expected 2 joint positions"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn grad_on_robot_coordinates() {
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .args([
            "grad",
            "--of",
            "pendulum.q",
            "--wrt",
            "pendulum.v",
            "--json",
            "--method",
        ])
        .arg("fd")
        .arg(scenes().join("double_pendulum.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fd: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .args([
            "grad",
            "--of",
            "pendulum.q",
            "--wrt",
            "pendulum.v",
            "--json",
        ])
        .arg(scenes().join("double_pendulum.toml"))
        .output()
        .unwrap();
    let ift: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for i in 0..2 {
        for j in 0..2 {
            let (a, b) = (
                ift["jacobian"][i][j].as_f64().unwrap(),
                fd["jacobian"][i][j].as_f64().unwrap(),
            );
            assert!((a - b).abs() < 1e-5 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
