//! The command line: scene errors are located (file:line:col + field path)
//! and exit 2; `run --json` prints exactly one JSON document of SCENE.md's
//! shape; `--out` writes the trajectory.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/scenes")
        .join(name)
}

/// Runs `dualsim run FILE` and checks: exit 2, no panic, the message starts
/// with `FILE:LINE:COL: PATH:`.
fn expect_scene_error(file: &str, line: usize, col: usize, path: &str, needle: &str) {
    let p = data(file);
    let out = bin().arg("run").arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing simulated or printed on stdout"
    );
    let prefix = format!("error: {}:{line}:{col}: {path}", p.display());
    assert!(
        stderr.starts_with(&prefix),
        "{file}: expected `{prefix}`, got `{stderr}`"
    );
    assert!(
        stderr.contains(needle),
        "{file}: `{needle}` not in `{stderr}`"
    );
}

#[test]
fn malformed_toml() {
    expect_scene_error("malformed.toml", 5, 8, "", "unclosed array table");
}

#[test]
fn unknown_key() {
    expect_scene_error("unknown_key.toml", 9, 1, "body[0].colour", "unknown key");
}

#[test]
fn non_positive_mass() {
    expect_scene_error(
        "negative_mass.toml",
        6,
        8,
        "body[0].mass",
        "mass must be > 0",
    );
}

#[test]
fn non_unit_quaternion() {
    expect_scene_error(
        "non_unit_quaternion.toml",
        13,
        15,
        "body[1].orientation",
        "unit norm",
    );
}

#[test]
fn zero_dt() {
    expect_scene_error("zero_dt.toml", 3, 6, "sim.dt", "must be > 0");
}

#[test]
fn nan_value() {
    expect_scene_error("nan_value.toml", 8, 18, "body[0].velocity[1]", "finite");
}

#[test]
fn inertia_not_positive_definite() {
    expect_scene_error(
        "bad_inertia.toml",
        4,
        11,
        "body[0].inertia",
        "positive definite",
    );
}

#[test]
fn wrong_type() {
    expect_scene_error("wrong_type.toml", 2, 6, "sim.dt", "expected a number");
}

#[test]
fn missing_file_is_an_input_error() {
    let out = bin()
        .arg("run")
        .arg("/nonexistent/scene.toml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes")
        .join(name)
}

#[test]
fn run_json_is_one_document_of_the_contract_shape() {
    let out = bin()
        .args(["run", "--json", "--steps", "50"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim().lines().count(),
        1,
        "exactly one document: {text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["steps"], 50);
    assert_eq!(doc["dt"], 0.01);
    assert_eq!(doc["solver"], "ipm");
    let bodies = doc["final"]["bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["name"], "handle");
    for (key, n) in [
        ("position", 3),
        ("orientation", 4),
        ("velocity", 3),
        ("angular_velocity", 3),
    ] {
        assert_eq!(bodies[0][key].as_array().unwrap().len(), n, "{key}");
    }
    assert!(doc["final"]["robots"].as_array().unwrap().is_empty());
    for key in [
        "mean_iterations",
        "max_iterations",
        "failed_steps",
        "max_penetration",
        "wall_seconds",
    ] {
        assert!(doc["stats"][key].is_number(), "stats.{key}");
    }
    // the ball: x = 2 + 3·0.5 + (0.1/0.5)·h²·n(n+1)/2 after 50 steps
    let x = bodies[1]["position"][0].as_f64().unwrap();
    let expect = 2.0 + 3.0 * 0.5 + 0.2 * 1e-4 * 50.0 * 51.0 / 2.0;
    assert!((x - expect).abs() < 1e-12, "{x} vs {expect}");
}

#[test]
fn run_out_writes_the_trajectory() {
    let dir = std::env::temp_dir().join(format!("dualsim-cli-test-{}", std::process::id()));
    let out = bin()
        .args(["run", "--steps", "20", "--out"])
        .arg(&dir)
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(dir.join("trajectory.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["frames"].as_array().unwrap().len(), 21);
    // no temporary file left behind
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_solver_flag_is_an_input_error() {
    let out = bin()
        .args(["run", "--solver", "magic"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn grad_json_matches_the_contract_and_the_closed_form() {
    let out = bin()
        .args([
            "grad",
            "--of",
            "ball.position",
            "--wrt",
            "ball.velocity,ball.mass",
            "--json",
        ])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["method"], "ift");
    assert_eq!(doc["of"][0], "ball.position");
    assert_eq!(doc["wrt"][1], "ball.mass");
    let jac = doc["jacobian"].as_array().unwrap();
    assert_eq!(jac.len(), 3);
    assert_eq!(jac[0].as_array().unwrap().len(), 4);
    // ∂x_N/∂vₓ₀ = N h = 10; ∂x_N/∂m = −(F/m²) h² N(N+1)/2 with F = 0.1, m = 0.5
    assert!((jac[0][0].as_f64().unwrap() - 10.0).abs() < 1e-9);
    let expect = -(0.1 / 0.25) * 1e-4 * 1000.0 * 1001.0 / 2.0;
    assert!((jac[0][3].as_f64().unwrap() - expect).abs() < 1e-9 * expect.abs());
}

#[test]
fn grad_rejects_unknown_names() {
    let out = bin()
        .args(["grad", "--of", "ghost.position", "--wrt", "ball.velocity"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no body named `ghost`"));
}

#[test]
fn check_passes_on_the_free_flight_scene() {
    let out = bin()
        .args(["check", "--json"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["passed"], true);
    assert_eq!(doc["methods"].as_array().unwrap().len(), 4);
    let blocks = doc["blocks"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["of"] == "position" && b["wrt"] == "velocity")
    );
    assert!(
        blocks
            .iter()
            .all(|b| b["max_abs_diff"]["ift_vs_fd"].is_number())
    );
}

#[test]
fn view_writes_a_self_contained_html_page() {
    let dir = std::env::temp_dir().join(format!("dualsim-view-test-{}", std::process::id()));
    let out = bin()
        .args(["run", "--steps", "10", "--out"])
        .arg(&dir)
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let traj = dir.join("trajectory.json");
    let out = bin().arg("view").arg(&traj).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("trajectory.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("\"frames\"") && html.contains("<canvas"));
    assert!(!html.contains("__DATA__"));
    // not a trajectory: typed error, exit 2
    std::fs::write(
        dir.join("bad.json"),
        "{\"frames\": [{\"bodies\": [{\"position\": [0, null]}]}]}",
    )
    .unwrap();
    let out = bin()
        .arg("view")
        .arg(dir.join("bad.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a dualsim trajectory"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scratch directory for one test (removed by the test when it passes).
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dualsim-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Must-show 4: the box toss with the iteration cap at 1 fails at its first
/// contact step (by construction: one interior-point iteration takes a
/// free-flight step, never a step with contact, whose complementarity must
/// fall from its start to ρ); `run --json` reports the free-flight steps completed before
/// it, the state after them, and the failing step; `--out` holds those steps.
#[test]
fn failed_step_keeps_the_completed_steps() {
    let dir = scratch("capped");
    let src = std::fs::read_to_string(example("box_toss.toml")).unwrap();
    let src = src.replace(
        "rho = 1e-6",
        // (and without the continuation in ρ that would solve it again)
        "rho = 1e-6\nmax_iterations = 1\ncontinuation_iterations = 0",
    );
    assert!(src.contains("max_iterations = 1"));
    let scene = dir.join("toss.toml");
    std::fs::write(&scene, src).unwrap();
    let out_dir = dir.join("out");
    let out = bin()
        .args(["run", "--json", "--out"])
        .arg(&out_dir)
        .arg(&scene)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim().lines().count(),
        1,
        "exactly one document: {text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let k = doc["steps"].as_u64().unwrap() as usize;
    // the box flies (one iteration per step, no candidate) until it nears the ground
    assert!(k >= 20, "only {k} steps completed: {doc}");
    assert_eq!(doc["error"]["step"].as_u64().unwrap() as usize, k);
    assert_eq!(doc["error"]["kind"], "max_iterations");
    let msg = doc["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("step {k}")) && msg.contains("box–ground"),
        "{msg}"
    );
    assert_eq!(doc["error"]["bodies"], serde_json::json!(["box", "ground"]));
    assert_eq!(doc["stats"]["failed_steps"], 1);
    // "final" is the state after the k free-flight steps (symplectic Euler, closed form)
    let h = 0.01;
    let kf = k as f64;
    let p = &doc["final"]["bodies"][0]["position"];
    let expect = [
        kf * h * 1.0,
        kf * h * 1.5,
        0.5 + kf * h * 1.0 - 9.81 * h * h * kf * (kf + 1.0) / 2.0,
    ];
    for d in 0..3 {
        let got = p[d].as_f64().unwrap();
        assert!(
            (got - expect[d]).abs() < 1e-12,
            "axis {d}: {got} vs {}",
            expect[d]
        );
    }
    assert!(expect[2] < 0.5, "the box is on its way down");
    // --out: the trajectory up to the failure, atomically written
    let traj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("trajectory.json")).unwrap())
            .unwrap();
    let frames = traj["frames"].as_array().unwrap();
    assert_eq!(frames.len(), k + 1);
    assert_eq!(frames[k]["bodies"][0]["position"], *p);
    assert_eq!(traj["error"]["step"].as_u64().unwrap() as usize, k);
    let leftovers = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .count();
    assert_eq!(leftovers, 1, "only trajectory.json");
    // the human message names the step and the bodies
    let out = bin().arg("run").arg(&scene).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!("failed at step {k}:")) && stderr.contains("box–ground"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes `src` as a scene and expects a located error (exit 2, nothing on
/// stdout, no panic) whose path and message contain the given parts.
fn expect_inline_error(
    tag: &str,
    src: &str,
    args: &[&str],
    path: &str,
    needles: &[&str],
) -> String {
    let dir = scratch(tag);
    let scene = dir.join("scene.toml");
    std::fs::write(&scene, src).unwrap();
    let out = bin().arg("run").args(args).arg(&scene).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{tag}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty(), "{tag}: nothing simulated");
    let prefix = format!("error: {}:", scene.display());
    assert!(stderr.starts_with(&prefix), "{tag}: not located: {stderr}");
    assert!(
        stderr.contains(&format!(": {path}: ")),
        "{tag}: path `{path}` not in {stderr}"
    );
    for n in needles {
        assert!(stderr.contains(n), "{tag}: `{n}` not in {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    stderr
}

const BALL: &str = "[[body]]\nname = \"ball\"\nmass = 1.0\ninertia = [0.004, 0.004, 0.004]\nposition = [0.0, 0.0, 1.0]\nshape = { type = \"sphere\", radius = 0.1 }\n";
const GROUND: &str = "[[static]]\nname = \"ground\"\nshape = { type = \"plane\", normal = [0.0, 0.0, 1.0], offset = 0.0 }\n";

/// Values that cannot simulate are located scene errors, not solver failures.
#[test]
fn values_outside_the_physical_ranges_are_scene_errors() {
    let e = expect_inline_error(
        "mass",
        &BALL.replace("mass = 1.0", "mass = 1e300"),
        &[],
        "body[0].mass",
        &["simulable range"],
    );
    assert!(e.contains(":3:8:"), "{e}");
    expect_inline_error(
        "dt",
        &format!("[sim]\ndt = 1e10\n{BALL}"),
        &[],
        "sim.dt",
        &["simulable range"],
    );
    // a 1 mg ball: the relaxed contact would hold it metres above the ground
    expect_inline_error(
        "light",
        &BALL.replace("mass = 1.0", "mass = 1e-6"),
        &[],
        "body[0].mass",
        &["lower `[solver_params] rho`"],
    );
    expect_inline_error(
        "gravity",
        &format!("[sim]\ngravity = [0.0, 0.0, -1e300]\n{BALL}"),
        &[],
        "sim.gravity",
        &["simulable range"],
    );
    expect_inline_error(
        "speed",
        &BALL.replace("position", "velocity = [1e4, 0.0, 0.0]\nposition"),
        &[],
        "body[0].velocity",
        &["simulable range"],
    );
    expect_inline_error(
        "spin",
        &BALL.replace("position", "angular_velocity = [0.0, 0.0, 500.0]\nposition"),
        &[],
        "body[0].angular_velocity",
        &["< 2 rad"],
    );
    expect_inline_error(
        "triangle",
        &BALL.replace("[0.004, 0.004, 0.004]", "[0.1, 0.1, 0.5]"),
        &[],
        "body[0].inertia",
        &["triangle inequality"],
    );
    expect_inline_error(
        "tiny",
        &BALL.replace("radius = 0.1", "radius = 1e-300"),
        &[],
        "body[0].shape.radius",
        &["simulable range"],
    );
    expect_inline_error(
        "iterations",
        &format!("[solver_params]\nmax_iterations = 1e12\n{BALL}"),
        &[],
        "solver_params.max_iterations",
        &["whole number"],
    );
}

/// A plane normal whose squares overflow is normalized by scaling (it
/// panicked in `collision/frame.rs`): the scene loads and simulates.
#[test]
fn plane_normal_with_huge_components_does_not_panic() {
    let dir = scratch("normal");
    let scene = dir.join("scene.toml");
    let wall = "[[static]]\nname = \"wall\"\nshape = { type = \"plane\", normal = [0.0, -1e300, 1.0], offset = 0.0 }\n";
    // the solid is the half-space n·x <= 0 with n = (0, -1, 1e-300): y >= 0
    std::fs::write(
        &scene,
        format!(
            "[sim]\nsteps = 20\n{}{wall}",
            BALL.replace("[0.0, 0.0, 1.0]", "[0.0, -2.0, 1.0]")
        ),
    )
    .unwrap();
    let out = bin().args(["run", "--json"]).arg(&scene).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["steps"], 20);
    // the ball at y = -2 is 1.9 m away from it and falls freely
    let z = doc["final"]["bodies"][0]["position"][2].as_f64().unwrap();
    assert!(
        (z - (1.0 - 9.81 * 1e-4 * 20.0 * 21.0 / 2.0)).abs() < 1e-12,
        "{z}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An initial interpenetration is a scene error naming both bodies, unless
/// allowed; `max_penetration` then counts the initial state.
#[test]
fn initial_penetration_is_refused_or_counted() {
    let src = format!(
        "[sim]\nsteps = 10\n{}{GROUND}",
        BALL.replace("[0.0, 0.0, 1.0]", "[0.0, 0.0, -0.4]")
    );
    expect_inline_error(
        "penetration",
        &src,
        &[],
        "body[0].position",
        &["`ball` and `ground`", "5e-1 m", "allow_initial_penetration"],
    );
    let dir = scratch("allowed");
    let scene = dir.join("scene.toml");
    std::fs::write(
        &scene,
        src.replace("[sim]", "[sim]\nallow_initial_penetration = true"),
    )
    .unwrap();
    let out = bin().args(["run", "--json"]).arg(&scene).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pen = doc["stats"]["max_penetration"].as_f64().unwrap();
    assert!(
        (pen - 0.5).abs() < 1e-12,
        "max_penetration {pen} must count the initial 0.5 m"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Options no backend implements are refused naming the option and the
/// backend, for every backend (scene load, `--solver` included).
#[test]
fn unimplemented_options_are_refused_by_every_backend() {
    for backend in ["ipm", "single_level", "bilevel"] {
        let named = format!("`{backend}` backend");
        let ball = BALL.replace("position", "restitution = 0.5\nposition");
        expect_inline_error(
            "restitution",
            &format!("{ball}{GROUND}"),
            &["--solver", backend],
            "body[0].restitution",
            &[&named, "restitution", "`ball` and `ground`"],
        );
        // in the scene's own `solver` key too
        expect_inline_error(
            "restitution-key",
            &format!("[sim]\nsolver = \"{backend}\"\n{ball}{GROUND}"),
            &[],
            "body[0].restitution",
            &[&named],
        );
        // a restitution that combines to zero (min with the ground's 0) is honoured: nothing to refuse
        let dir = scratch("restitution-min");
        let scene = dir.join("scene.toml");
        std::fs::write(
            &scene,
            format!("[sim]\nsteps = 3\nrestitution_combine = \"min\"\n{ball}{GROUND}"),
        )
        .unwrap();
        let out = bin()
            .args(["run", "--json", "--solver", backend])
            .arg(&scene)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_dir_all(&dir).unwrap();
        expect_inline_error(
            "ccd",
            &format!("[sim]\nccd = true\n{BALL}"),
            &["--solver", backend],
            "sim.ccd",
            &[&named, "continuous collision"],
        );
        // URDF joint limits: refused unless the robot says ignore_joint_limits = true
        let robot = format!(
            "[[robot]]\nname = \"pendulum\"\nurdf = \"{}\"\nbase_position = [0.0, 0.0, 3.0]\n",
            example("double_pendulum.urdf").display()
        );
        expect_inline_error(
            "limits",
            &robot,
            &["--solver", backend],
            "robot[0].urdf",
            &[&named, "joint limits", "ignore_joint_limits = true"],
        );
        let ignored = format!("[sim]\nsteps = 3\n{robot}ignore_joint_limits = true\n");
        if backend == "ipm" {
            let dir = scratch("limits-ignored");
            let scene = dir.join("scene.toml");
            std::fs::write(&scene, ignored).unwrap();
            let out = bin()
                .args(["run", "--json", "--solver", backend])
                .arg(&scene)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{backend}: {stderr}");
            std::fs::remove_dir_all(&dir).unwrap();
        } else {
            // these backends step free bodies only: a robot is refused (it panicked)
            expect_inline_error(
                "robots",
                &ignored,
                &["--solver", backend],
                "robot[0]",
                &[&named, "articulated robots (robot `pendulum`; use `ipm`)"],
            );
        }
    }
}

fn grad_doc(
    scene: &std::path::Path,
    of: &str,
    wrt: &str,
    method: &str,
) -> Result<serde_json::Value, (Option<i32>, String)> {
    let out = bin()
        .args([
            "grad", "--json", "--of", of, "--wrt", wrt, "--method", method,
        ])
        .arg(scene)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{of} / {wrt}: {stderr}");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        assert!(out.stdout.is_empty());
        Err((out.status.code(), stderr))
    }
}

fn refused(scene: &std::path::Path, of: &str, wrt: &str, needles: &[&str]) {
    let (code, stderr) = grad_doc(scene, of, wrt, "ift").expect_err("refused");
    assert_eq!(code, Some(2), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "`{n}` not in {stderr}");
    }
}

/// Must-show 5: `grad` with every kind of name gives the right quantity or
/// a located error listing the valid names.
#[test]
fn grad_names_of_every_kind() {
    // body: the closed form of the free flight (also in grad_json_matches_...)
    let ff = example("free_flight.toml");
    let doc = grad_doc(&ff, "ball.position", "ball.velocity", "ift").unwrap();
    assert_eq!(
        doc["rows"],
        serde_json::json!(["ball.position.x", "ball.position.y", "ball.position.z"])
    );
    assert_eq!(doc["cols"][2], "ball.velocity.z");
    assert!((doc["jacobian"][2][2].as_f64().unwrap() - 10.0).abs() < 1e-9);
    // unknown: the valid names are listed
    refused(
        &ff,
        "ghost.position",
        "ball.velocity",
        &[
            "--of",
            "item 1 (column 1)",
            "no body named `ghost`",
            "valid names: handle, ball",
        ],
    );
    // misspelled name and field: a suggestion
    refused(
        &ff,
        "ball.position,bal.velocity",
        "ball.velocity",
        &["item 2 (column 15)", "did you mean `ball`?"],
    );
    refused(
        &ff,
        "ball.postion",
        "ball.velocity",
        &["did you mean `position`?"],
    );
    refused(
        &ff,
        "ball.position",
        "ball.restitution",
        &["--wrt", "does not model restitution"],
    );
    // static geometry: no state
    let drop = example("sphere_drop.toml");
    refused(
        &drop,
        "fixed_ball.position",
        "ball.velocity",
        &["`fixed_ball` is static geometry"],
    );
    refused(
        &drop,
        "ball.position",
        "fixed_ball.position",
        &["`fixed_ball` is static geometry"],
    );
    // robot: joint coordinates
    let dp = example("double_pendulum.toml");
    let doc = grad_doc(
        &dp,
        "pendulum.q,pendulum/lower.position,pendulum/lower.velocity",
        "pendulum.q",
        "ift",
    )
    .unwrap();
    let v = |i: usize| doc["value"][i].as_f64().unwrap();
    let j = |r: usize, c: usize| doc["jacobian"][r][c].as_f64().unwrap();
    // robot link: the elbow (origin of `lower`) is at base + R_y(q₁)(0, 0, −1)
    let (q1, q2) = (v(0), v(1));
    assert!(q2.abs() > 1e-3, "the pendulum moved");
    let elbow = [-q1.sin(), 0.0, 3.0 - q1.cos()];
    for d in 0..3 {
        assert!(
            (v(2 + d) - elbow[d]).abs() < 1e-12,
            "elbow {d}: {} vs {}",
            v(2 + d),
            elbow[d]
        );
    }
    // ∂elbow/∂q₀ = (∂elbow/∂q₁)(∂q₁/∂q₀) by the chain rule
    let de = [-q1.cos(), 0.0, q1.sin()];
    for d in 0..3 {
        for c in 0..2 {
            let expect = de[d] * j(0, c);
            assert!(
                (j(2 + d, c) - expect).abs() < 1e-9 * (1.0 + expect.abs()),
                "row {d} col {c}: {} vs {expect}",
                j(2 + d, c)
            );
        }
    }
    assert!(j(2, 0).abs() > 1e-3, "a non-trivial derivative");
    // link velocity: d(elbow)/dt = (−cos q₁, 0, sin q₁) q̇₁; and its derivative against fd
    let dp_final = grad_doc(&dp, "pendulum.v", "pendulum.q", "ift").unwrap();
    let q1dot = dp_final["value"][0].as_f64().unwrap();
    for d in 0..3 {
        assert!(
            (v(5 + d) - de[d] * q1dot).abs() < 1e-9,
            "elbow velocity {d}"
        );
    }
    let fd = grad_doc(
        &dp,
        "pendulum.q,pendulum/lower.position,pendulum/lower.velocity",
        "pendulum.q",
        "fd",
    )
    .unwrap();
    for r in 2..8 {
        for c in 0..2 {
            let (a, b) = (j(r, c), fd["jacobian"][r][c].as_f64().unwrap());
            assert!(
                (a - b).abs() < 1e-5 * (1.0 + a.abs()),
                "row {r} col {c}: ift {a} vs fd {b}"
            );
        }
    }
    // sim: inputs only, and its fields are checked
    refused(
        &ff,
        "sim.gravity",
        "ball.velocity",
        &["--of", "are inputs, not outputs"],
    );
    refused(
        &ff,
        "ball.position",
        "sim.gravty",
        &[
            "--wrt",
            "unknown sim input field `gravty`",
            "did you mean `gravity`?",
        ],
    );
    // an unknown name in a robot scene: the robot and its links are listed
    refused(
        &dp,
        "ghost.q",
        "pendulum.q",
        &["valid names: pendulum, pendulum/base, pendulum/upper, pendulum/lower, sim"],
    );
    // a robot link is not an independent input
    refused(
        &dp,
        "pendulum.q",
        "pendulum/upper.position",
        &["link of robot `pendulum`", "`pendulum.q`"],
    );
    refused(
        &dp,
        "pendulum/uper.position",
        "pendulum.q",
        &["did you mean `pendulum/upper`?"],
    );
    refused(
        &dp,
        "pendulum.x",
        "pendulum.q",
        &["unknown robot output field `x`"],
    );
    // a floating-base robot's link: a position (3 values), not joint angles
    let dir = scratch("dog");
    let src = std::fs::read_to_string(example("quadruped_stand.toml")).unwrap();
    let src = src.replace("steps = 400", "steps = 2").replace(
        "urdf = \"quadruped.urdf\"",
        &format!("urdf = \"{}\"", example("quadruped.urdf").display()),
    );
    let scene = dir.join("dog.toml");
    std::fs::write(&scene, src).unwrap();
    let doc = grad_doc(
        &scene,
        "dog/thigh_fl.position,dog/torso.position",
        "dog.v",
        "ift",
    )
    .unwrap();
    assert_eq!(doc["value"].as_array().unwrap().len(), 6);
    // the hip joint sits at (0.15, 0.08, −0.05) in the torso frame; the torso barely moved
    let t = |i: usize| doc["value"][3 + i].as_f64().unwrap();
    let h = |i: usize| doc["value"][i].as_f64().unwrap();
    for (i, off) in [0.15, 0.08, -0.05].iter().enumerate() {
        assert!(
            (h(i) - t(i) - off).abs() < 1e-3,
            "thigh {i}: {} vs torso {} + {off}",
            h(i),
            t(i)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `dualsim ARGS`, expects exit 2 (bad input, no panic) and returns
/// standard error.
fn refused_with(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "dualsim {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn misspelled_option_values_get_a_suggestion_and_the_valid_names() {
    use dualsim::contact::SolverKind;
    use dualsim::diff::{Method, Partials};
    use dualsim::opt::{HessianMethod, OptMethod};
    let scene = example("free_flight.toml");
    let scene = scene.to_str().unwrap();
    let opt = example("opt_projectile.toml");
    let opt = opt.to_str().unwrap();
    let solvers: Vec<&str> = SolverKind::ALL.iter().map(|k| k.name()).collect();
    // (command line, misspelled name, expected suggestion, valid names)
    let first = solvers[0];
    let typo = format!("{}x", first);
    let methods: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    let hessians: Vec<&str> = HessianMethod::ALL.iter().map(|m| m.name()).collect();
    let opts: Vec<&str> = OptMethod::ALL.iter().map(|m| m.name()).collect();
    let partials = [Partials::Kernel.name(), Partials::Dual.name()];
    let cases: Vec<(Vec<&str>, &str, &[&str])> = vec![
        (vec!["run", scene, "--solver", &typo], first, &solvers),
        (
            vec![
                "grad",
                scene,
                "--of",
                "ball.position",
                "--wrt",
                "ball.mass",
                "--method",
                "lifft",
            ],
            "lift",
            &methods,
        ),
        (vec!["check", scene, "--partials", "dul"], "dual", &partials),
        (
            vec!["hessian", opt, "--method", "unroled"],
            "unrolled",
            &hessians,
        ),
        (vec!["optimize", opt, "--method", "lbgfs"], "lbfgs", &opts),
    ];
    for (args, suggestion, valid) in cases {
        let stderr = refused_with(&args);
        assert!(
            stderr.contains(&format!("did you mean `{suggestion}`?")),
            "{args:?}: no suggestion `{suggestion}` in: {stderr}"
        );
        for v in valid {
            assert!(
                stderr.contains(v),
                "{args:?}: `{v}` not listed in: {stderr}"
            );
        }
    }
    // a name far from every valid one: no suggestion, still the list
    let stderr = refused_with(&["run", scene, "--solver", "zzzzzzzzzz"]);
    assert!(!stderr.contains("did you mean"), "{stderr}");
    assert!(solvers.iter().all(|s| stderr.contains(s)), "{stderr}");
    // a backend the registry names but this build lacks
    for (name, kind) in SolverKind::NAMES {
        if kind.is_none() {
            let stderr = refused_with(&["run", scene, "--solver", name]);
            assert!(stderr.contains("not in this build"), "{stderr}");
        }
    }
}

#[test]
fn help_lists_the_valid_names() {
    use dualsim::contact::SolverKind;
    use dualsim::diff::Method;
    let help = |cmd: &str| {
        let out = bin().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let run = help("run");
    let solvers: Vec<&str> = SolverKind::ALL.iter().map(|k| k.name()).collect();
    assert!(
        run.contains(&format!("[possible values: {}]", solvers.join(", "))),
        "{run}"
    );
    let grad = help("grad");
    let methods: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    assert!(
        grad.contains(&format!("[possible values: {}]", methods.join(", "))),
        "{grad}"
    );
    assert!(grad.contains("[possible values: kernel, dual]"), "{grad}");
}

#[test]
fn misspelled_grad_names_get_a_suggestion() {
    let scene = example("free_flight.toml");
    let scene = scene.to_str().unwrap();
    let stderr = refused_with(&["grad", scene, "--of", "bal.position", "--wrt", "ball.mass"]);
    assert!(stderr.contains("did you mean `ball`?"), "{stderr}");
    let stderr = refused_with(&["grad", scene, "--of", "ball.positon", "--wrt", "ball.mass"]);
    assert!(stderr.contains("did you mean `position`?"), "{stderr}");
    let stderr = refused_with(&[
        "grad",
        scene,
        "--of",
        "ball.position",
        "--wrt",
        "ball.velocty",
    ]);
    assert!(stderr.contains("did you mean `velocity`?"), "{stderr}");
}

#[test]
fn grad_labels_rows_and_columns() {
    let scene = example("free_flight.toml");
    let args = ["--of", "ball.position", "--wrt", "ball.velocity,ball.mass"];
    let out = bin()
        .arg("grad")
        .arg(&scene)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = |k: &str| -> Vec<String> {
        doc[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    let (rows, cols) = (names("rows"), names("cols"));
    assert_eq!(rows.len(), doc["jacobian"].as_array().unwrap().len());
    assert_eq!(cols.len(), doc["jacobian"][0].as_array().unwrap().len());
    assert_eq!(rows.len(), 3);
    assert_eq!(cols.len(), 4);
    assert!(
        rows.iter().all(|r| r.starts_with("ball.position")),
        "{rows:?}"
    );
    assert!(
        cols[..3].iter().all(|c| c.starts_with("ball.velocity")),
        "{cols:?}"
    );
    assert_eq!(cols[3], "ball.mass");
    // the human output carries the same labels: one header line with the
    // columns, one line per row starting with its label
    let out = bin().arg("grad").arg(&scene).args(args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| cols.iter().all(|c| l.contains(c.as_str())))
        .unwrap_or_else(|| panic!("no header with every column label:\n{text}"));
    for (i, r) in rows.iter().enumerate() {
        let line = lines[header + 1 + i];
        assert!(line.trim_start().starts_with(r.as_str()), "{line}");
        assert_eq!(line.split_whitespace().count(), 1 + cols.len(), "{line}");
    }
}

#[test]
fn check_states_its_tolerances_and_what_is_relative() {
    use dualsim::diff::CheckOptions;
    let o = CheckOptions::default();
    let out = bin()
        .args(["check", "--samples", "1"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let tol = format!(
        "tolerances (relative): lift {:e}, unrolled {:e}, fd {:e}",
        o.tol_lift, o.tol_unrolled, o.tol_fd
    );
    assert!(text.contains(&tol), "{text}");
    assert!(text.contains("RELATIVE to max(1, |J|)"), "{text}");
    let out = bin()
        .args(["check", "--samples", "1", "--json"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tolerances"]["lift"], o.tol_lift);
    assert_eq!(doc["tolerances"]["unrolled"], o.tol_unrolled);
    assert_eq!(doc["tolerances"]["fd"], o.tol_fd);
    assert_eq!(doc["relative_to"], "max(1, |J|)");
}

#[test]
fn bench_times_a_state_in_contact_and_says_which() {
    // box_toss: 500 steps, the box rests on a face from about 2 s
    let out = bin()
        .args(["bench", "--json"])
        .arg(example("box_toss.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &doc["timed_state"];
    assert_eq!(s["step"], 499, "{doc}");
    assert!((s["t"].as_f64().unwrap() - 4.99).abs() < 1e-12, "{doc}");
    assert!(s["contacts"].as_u64().unwrap() >= 1, "{doc}");
    // free flight: no contact, the initial state, said so
    let out = bin()
        .arg("bench")
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("timed at the initial state (no step"),
        "{text}"
    );
}

#[test]
fn view_of_a_scene_runs_it_and_embeds_geometry_and_contacts() {
    let dir = scratch("view-scene");
    let html = dir.join("box.html");
    let out = bin()
        .args(["view", "--steps", "300", "--out"])
        .arg(&html)
        .arg(example("box_toss.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // self-contained: no external script, stylesheet or URL
    for needle in ["<script src", "<link", "http://", "https://"] {
        assert!(!page.contains(needle), "the page refers to `{needle}`");
    }
    // the embedded trajectory: 301 frames, the box's shape, contact forces
    let start = page.find("const TRAJ = ").unwrap() + "const TRAJ = ".len();
    let end = start + page[start..].find(";\n</script>").unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&page[start..end].replace("<\\/", "</")).unwrap();
    let frames = doc["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 301);
    assert_eq!(doc["geometry"]["bodies"][0]["shape"]["type"], "box");
    assert_eq!(doc["geometry"]["statics"][0]["shape"]["type"], "plane");
    // resting on the ground at the end (t = 3 s; it rests on a face from
    // about 2 s): the contact forces carry the weight, m g = 9.81 N. At
    // rest v⁺ = v, so the impulses sum to m g h up to the solver's
    // equality residual: 1e-9 N (measured 8.7e-14 N)
    let last = frames.last().unwrap();
    let fz: f64 = last["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["force"][2].as_f64().unwrap())
        .sum();
    assert!(!last["contacts"].as_array().unwrap().is_empty());
    assert!((fz - 9.81).abs() < 1e-9, "sum of contact forces {fz} N");
    // --steps with a trajectory: refused
    let stderr = refused_with(&["view", "--steps", "3", "x.json"]);
    assert!(
        stderr.contains("--steps applies to a scene file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --out` streams the trajectory to disk (a temporary file renamed at
/// the end): for a run that succeeds, the file is byte for byte the
/// in-memory document (`trajectory_json_with`, pretty-printed); for a run
/// that fails, it is valid JSON equal to `partial_trajectory_json_with`
/// (the steps completed before the failure and the `"error"` entry).
#[test]
fn run_out_streams_the_in_memory_document() {
    use dualsim::viz::{StepContacts, partial_trajectory_json_with, trajectory_json_with};
    let dir = scratch("stream");
    let record = |scene: &dualsim::scene::Scene| {
        let mut contacts = StepContacts::new();
        let r = dualsim::sim::rollout_inspect(
            &scene.world,
            &scene.initial,
            &scene.controls,
            scene.steps,
            |_, out| contacts.push(out.contacts.clone()),
        );
        (r, contacts)
    };
    // 60 steps of the box toss: free flight, then contacts with the ground
    let out_dir = dir.join("ok");
    let out = bin()
        .args(["run", "--steps", "60", "--out"])
        .arg(&out_dir)
        .arg(example("box_toss.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut scene = dualsim::scene::load(&example("box_toss.toml")).unwrap();
    scene.steps = 60;
    let (r, contacts) = record(&scene);
    let traj = r.unwrap();
    assert!(
        traj.stats.iter().any(|s| s.contacts > 0),
        "the run reaches contact"
    );
    let expect =
        serde_json::to_string_pretty(&trajectory_json_with(&scene, &traj, Some(&contacts)))
            .unwrap();
    let text = std::fs::read_to_string(out_dir.join("trajectory.json")).unwrap();
    assert!(
        text == expect,
        "the streamed file differs from the in-memory document"
    );
    // a failing run: the box toss with the iteration cap at 1 (fails at its
    // first contact step by construction, see
    // `failed_step_keeps_the_completed_steps`)
    let src = std::fs::read_to_string(example("box_toss.toml")).unwrap();
    let src = src.replace(
        "rho = 1e-6",
        // (and without the continuation in ρ that would solve it again)
        "rho = 1e-6\nmax_iterations = 1\ncontinuation_iterations = 0",
    );
    let file = dir.join("toss.toml");
    std::fs::write(&file, &src).unwrap();
    let out_dir = dir.join("failed");
    let out = bin()
        .args(["run", "--out"])
        .arg(&out_dir)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let scene = dualsim::scene::load(&file).unwrap();
    let (r, contacts) = record(&scene);
    let err = r.unwrap_err();
    // through text, as the file is read (serde_json's number parsing is
    // not exactly round-trip: compare both sides parsed the same way)
    let expect: serde_json::Value = serde_json::from_str(
        &serde_json::to_string_pretty(&partial_trajectory_json_with(&scene, &err, Some(&contacts)))
            .unwrap(),
    )
    .unwrap();
    let text = std::fs::read_to_string(out_dir.join("trajectory.json")).unwrap();
    let got: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(got["error"]["step"].as_u64(), Some(err.step as u64));
    assert_eq!(got["frames"].as_array().unwrap().len(), err.step + 1);
    assert!(got == expect, "the streamed file of a failed run differs");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --steps N` beyond a scene's `per_step` rows is refused, located at
/// the `per_step` key (it would otherwise repeat the last row silently);
/// at most the rows is accepted.
#[test]
fn steps_beyond_per_step_controls_are_refused() {
    let dir = std::env::temp_dir().join(format!("dualsim-cli-perstep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("perstep.toml");
    std::fs::write(
        &p,
        "[sim]\ndt = 0.01\nsteps = 3\n\n[[body]]\nname = \"b\"\nmass = 1.0\ninertia = [0.1, 0.1, 0.1]\n\n[[control]]\ntarget = \"b\"\nper_step = [\n  [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],\n  [2.0, 0.0, 0.0, 0.0, 0.0, 0.0],\n  [3.0, 0.0, 0.0, 0.0, 0.0, 0.0],\n]\n",
    )
    .unwrap();
    let out = bin()
        .args(["run", "--steps", "5"])
        .arg(&p)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let prefix = format!("error: {}:12:1: control[0].per_step:", p.display());
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert!(stderr.contains("--steps 5 exceeds the 3 per-step control rows"));
    let ok = bin()
        .args(["run", "--steps", "2"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `check` on a scene with nothing to differentiate (only static
/// geometry) is not a pass: it says so and exits 3.
#[test]
fn check_with_nothing_to_check_exits_3() {
    let dir = std::env::temp_dir().join(format!("dualsim-cli-nothing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("statics.toml");
    std::fs::write(
        &p,
        "[sim]\ndt = 0.01\nsteps = 5\n\n[[static]]\nname = \"ground\"\nshape = { type = \"plane\", normal = [0.0, 0.0, 1.0] }\n",
    )
    .unwrap();
    let out = bin().arg("check").arg(&p).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("NOTHING CHECKED"), "{stdout}");
    assert!(!stdout.lines().any(|l| l == "passed"));
    let out = bin().args(["check", "--json"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "nothing_checked");
    assert_eq!(doc["passed"], false);
    std::fs::remove_dir_all(&dir).ok();
}

/// `single_level` and `bilevel` on a robot without collision shapes (the
/// double pendulum's URDF has none): a located refusal naming the backend
/// and the robot, exit 2, no panic.
#[test]
fn silico_backends_refuse_a_robot_without_collision_shapes() {
    let p = example("double_pendulum.toml");
    for solver in ["single_level", "bilevel"] {
        let out = bin()
            .args(["run", "--solver", solver])
            .arg(&p)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{solver}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let prefix = format!(
            "error: {}:8:1: robot[0]: the `{solver}` backend",
            p.display()
        );
        assert!(stderr.starts_with(&prefix), "{stderr}");
        assert!(
            stderr.contains("articulated robots (robot `pendulum`"),
            "{stderr}"
        );
    }
}

/// A floating-base robot whose root link has no `<inertial>`: a located
/// scene error naming the link (was: NaN at the first step).
#[test]
fn floating_robot_with_a_massless_root_is_refused() {
    let dir = std::env::temp_dir().join(format!("dualsim-cli-massless-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let urdf = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/massless_root.urdf");
    std::fs::copy(&urdf, dir.join("m.urdf")).unwrap();
    let p = dir.join("m.toml");
    std::fs::write(
        &p,
        "[sim]\ndt = 0.01\nsteps = 5\n\n[[robot]]\nname = \"r\"\nurdf = \"m.urdf\"\nbase = \"floating\"\nignore_joint_limits = true\n",
    )
    .unwrap();
    let out = bin().arg("run").arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let prefix = format!("error: {}:7:8: robot[0].urdf:", p.display());
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert!(
        stderr.contains("root link `root` of a floating base has no mass"),
        "{stderr}"
    );
    // the same robot on a fixed base is fine
    std::fs::write(
        &p,
        "[sim]\ndt = 0.01\nsteps = 5\n\n[[robot]]\nname = \"r\"\nurdf = \"m.urdf\"\nignore_joint_limits = true\n",
    )
    .unwrap();
    let out = bin().arg("run").arg(&p).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A floating torso with a pendulum on a spherical joint
/// (`tests/data/ball_joint.urdf`, nq = 11, nv = 9), in free flight (no
/// contact: every derivative is smooth), written to `dir/rig.toml`. The
/// scene's `q` and `v`, with both quaternions normalized, are returned.
fn ball_joint_scene(dir: &std::path::Path, steps: usize) -> (PathBuf, Vec<f64>, Vec<f64>) {
    let unit = |x: [f64; 4]| {
        let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        x.map(|v| v / n)
    };
    let mut q = vec![0.1, -0.2, 1.0];
    q.extend(unit([0.9, 0.1, -0.2, 0.3]));
    q.extend(unit([0.8, 0.3, 0.2, -0.1]));
    let v = vec![0.3, 0.1, 0.2, 0.5, -0.4, 0.7, 2.0, -1.5, 3.0];
    let list = |x: &[f64]| {
        x.iter()
            .map(|v| format!("{v:e}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let urdf = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ball_joint.urdf");
    let src = format!(
        "[sim]\ndt = 0.01\nsteps = {steps}\n\n[[robot]]\nname = \"rig\"\nurdf = \"{}\"\n\
         base = \"floating\"\nq = [{}]\nv = [{}]\n",
        urdf.display(),
        list(&q),
        list(&v)
    );
    let scene = dir.join("rig.toml");
    std::fs::write(&scene, src).unwrap();
    (scene, q, v)
}

fn column(doc: &serde_json::Value, c: usize) -> Vec<f64> {
    doc["jacobian"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[c].as_f64().unwrap())
        .collect()
}

fn labels(doc: &serde_json::Value, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// Must-show 5, nq ≠ nv: `grad --of ROBOT.q` has one row per configuration
/// coordinate (nq = 11: base position, base quaternion, the spherical
/// joint's quaternion), `--wrt ROBOT.q` one column per coordinate; both
/// against central differences of the rollout in raw coordinates (a
/// perturbed quaternion renormalized), independent of the tangent maps.
#[test]
fn grad_robot_q_has_a_row_and_a_column_per_coordinate() {
    let dir = scratch("ball-q");
    let (scene, q0, v0) = ball_joint_scene(&dir, 20);
    let doc = grad_doc(&scene, "rig.q", "rig.q,rig.v", "ift").unwrap();
    let rows = labels(&doc, "rows");
    let cols = labels(&doc, "cols");
    let expect_rows: Vec<String> = (0..11).map(|i| format!("rig.q[{i}]")).collect();
    let mut expect_cols = expect_rows.clone();
    expect_cols.extend((0..9).map(|i| format!("rig.v[{i}]")));
    assert_eq!(rows, expect_rows);
    assert_eq!(cols, expect_cols);
    assert_eq!(doc["jacobian"].as_array().unwrap().len(), 11);
    assert_eq!(doc["jacobian"][0].as_array().unwrap().len(), 20);
    // the reference: the library's rollout of the same scene
    let src = std::fs::read_to_string(&scene).unwrap();
    let sc = dualsim::scene::parse(&src, scene.to_str().unwrap()).unwrap();
    let final_q = |q: &[f64], v: &[f64]| -> Vec<f64> {
        let mut x = sc.initial.clone();
        x.q.as_mut_slice().copy_from_slice(q);
        x.v.as_mut_slice().copy_from_slice(v);
        for k in [3, 7] {
            let n = x.q.rows(k, 4).norm();
            for i in 0..4 {
                x.q[k + i] /= n;
            }
        }
        let t = dualsim::sim::rollout(&sc.world, &x, &sc.controls, sc.steps).unwrap();
        t.last().q.iter().copied().collect()
    };
    let value: Vec<f64> = (0..11).map(|i| doc["value"][i].as_f64().unwrap()).collect();
    let nominal = final_q(&q0, &v0);
    for i in 0..11 {
        assert!((value[i] - nominal[i]).abs() < 1e-12, "value {i}");
    }
    // central differences, h = 1e-6: truncation ~h² and round-off
    // ~1e-16/h, both far below the 1e-6 tolerance; a wrong tangent map
    // is off by O(1)
    let h = 1e-6;
    let mut checked = 0;
    for c in 0..20 {
        let (mut qp, mut qm, mut vp, mut vm) = (q0.clone(), q0.clone(), v0.clone(), v0.clone());
        if c < 11 {
            qp[c] += h;
            qm[c] -= h;
        } else {
            vp[c - 11] += h;
            vm[c - 11] -= h;
        }
        let (fp, fm) = (final_q(&qp, &vp), final_q(&qm, &vm));
        let jc = column(&doc, c);
        for r in 0..11 {
            let fd = (fp[r] - fm[r]) / (2.0 * h);
            assert!(
                (jc[r] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
                "d {} / d {}: ift {} vs fd {fd}",
                rows[r],
                cols[c],
                jc[r]
            );
            checked += usize::from(fd.abs() > 1e-3);
        }
    }
    assert!(checked > 60, "only {checked} entries away from zero");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Must-show 5, the floating base's root link: listed among the bodies of
/// `run`'s output as `ROBOT/LINK`, it is accepted by `--wrt` for its
/// state (the free joint's coordinates: the same columns as the robot's
/// first q and v coordinates) and by `--of` (the same values and rows as
/// the base coordinates); its parameters are refused with the valid fields.
#[test]
fn grad_accepts_the_root_link_of_a_floating_base() {
    let dir = scratch("ball-root");
    let (scene, _, _) = ball_joint_scene(&dir, 10);
    let doc = grad_doc(
        &scene,
        "rig/torso.position,rig/torso.velocity,rig.q,rig.v",
        "rig/torso.position,rig/torso.velocity,rig/torso.angular_velocity,rig.q,rig.v",
        "ift",
    )
    .unwrap();
    let cols = labels(&doc, "cols");
    assert_eq!(cols[0], "rig/torso.position.x");
    assert_eq!(cols[8], "rig/torso.angular_velocity.z");
    assert_eq!(cols[9], "rig.q[0]");
    assert_eq!(cols[20], "rig.v[0]");
    let close = |a: &[f64], b: &[f64], tol: f64| {
        a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
    };
    for k in 0..3 {
        // position: rig.q[k]; velocity and angular velocity: rig.v[k], rig.v[3 + k]
        assert!(
            close(&column(&doc, k), &column(&doc, 9 + k), 1e-9),
            "position {k}"
        );
        assert!(
            close(&column(&doc, 3 + k), &column(&doc, 20 + k), 0.0),
            "velocity {k}"
        );
        assert!(
            close(&column(&doc, 6 + k), &column(&doc, 23 + k), 0.0),
            "angular {k}"
        );
    }
    assert!(column(&doc, 0)[0] > 0.5, "∂x/∂x₀ = 1 in free flight");
    // outputs: rows 0..3 the link's position = rig.q[0..3]; rows 3..6 its
    // velocity = rig.v[0..3] (rig.q: rows 6..17, rig.v: rows 17..26)
    let jac = doc["jacobian"].as_array().unwrap();
    for k in 0..3 {
        let value = |r: usize| doc["value"][r].as_f64().unwrap();
        assert!(
            (value(k) - value(6 + k)).abs() < 1e-12,
            "position value {k}"
        );
        assert!(
            (value(3 + k) - value(17 + k)).abs() < 1e-12,
            "velocity value {k}"
        );
        let row = |r: usize| -> Vec<f64> {
            jac[r]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        assert!(close(&row(k), &row(6 + k), 1e-9), "position row {k}");
        assert!(close(&row(3 + k), &row(17 + k), 1e-9), "velocity row {k}");
    }
    // a parameter of the root link, and any other link's state: refused
    refused(
        &scene,
        "rig.q",
        "rig/torso.mass",
        &[
            "--wrt",
            "item 1 (column 1)",
            "floating base of robot `rig`",
            "position, orientation, velocity, angular_velocity",
        ],
    );
    refused(
        &scene,
        "rig.q",
        "rig/torso.velocty",
        &["did you mean `velocity`?"],
    );
    refused(
        &scene,
        "rig.q",
        "rig/bob.position",
        &["`rig/bob` is a link of robot `rig`", "`rig.q`"],
    );
    // the run lists the root link among the bodies
    let out = bin().args(["run", "--json"]).arg(&scene).output().unwrap();
    assert!(out.status.success());
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bodies = run["final"]["bodies"].as_array().unwrap();
    assert!(
        bodies.iter().any(|b| b["name"] == "rig/torso"),
        "{bodies:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A spherical joint's quaternion stays a unit quaternion through the
/// steps (the retraction `q ⊗ exp(δ)` of unit quaternions): after each of
/// 500 steps of a fast spin (|ω| ≈ 3.9 rad/s relative, 5 s) both
/// quaternions have norm 1 within 1e-12; and a scene that starts the
/// spherical joint at a non-unit quaternion is refused at its `q`.
#[test]
fn spherical_joint_quaternion_stays_normalized() {
    let dir = scratch("ball-norm");
    let (scene, _, _) = ball_joint_scene(&dir, 500);
    let src = std::fs::read_to_string(&scene).unwrap();
    let sc = dualsim::scene::parse(&src, scene.to_str().unwrap()).unwrap();
    let t = dualsim::sim::rollout(&sc.world, &sc.initial, &sc.controls, sc.steps).unwrap();
    assert_eq!(t.states.len(), 501);
    let mut moved = 0.0f64;
    for x in &t.states {
        for k in [3, 7] {
            let n = x.q.rows(k, 4).norm();
            assert!((n - 1.0).abs() < 1e-12, "|q[{k}..{}]| = {n}", k + 4);
        }
        moved = moved.max((x.q[7] - sc.initial.q[7]).abs());
    }
    assert!(moved > 0.1, "the joint turned ({moved})");
    // a non-unit spherical quaternion: a located scene error
    let bad = src.replacen(
        &format!("{:e}", sc.initial.q[7]),
        &format!("{:e}", sc.initial.q[7] * 1.5),
        1,
    );
    assert_ne!(bad, src);
    std::fs::write(&scene, bad).unwrap();
    let out = bin().arg("run").arg(&scene).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(":9:"), "line of `q`: {stderr}");
    assert!(stderr.contains("robot[0].q"), "{stderr}");
    assert!(
        stderr.contains("spherical joint of link `bob`") && stderr.contains("unit norm"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
