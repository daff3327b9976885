//! The command line: scene errors are located (file:line:col + field path)
//! and exit 2; `run --json` prints exactly one JSON document of SCENE.md's
//! shape; `--out` writes the trajectory.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes").join(name)
}

/// Runs `dualsim run FILE` and checks: exit 2, no panic, the message starts
/// with `FILE:LINE:COL: PATH:`.
fn expect_scene_error(file: &str, line: usize, col: usize, path: &str, needle: &str) {
    let p = data(file);
    let out = bin().arg("run").arg(&p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing simulated or printed on stdout");
    let prefix = format!("error: {}:{line}:{col}: {path}", p.display());
    assert!(stderr.starts_with(&prefix), "{file}: expected `{prefix}`, got `{stderr}`");
    assert!(stderr.contains(needle), "{file}: `{needle}` not in `{stderr}`");
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
    expect_scene_error("negative_mass.toml", 6, 8, "body[0].mass", "mass must be > 0");
}

#[test]
fn non_unit_quaternion() {
    expect_scene_error("non_unit_quaternion.toml", 13, 15, "body[1].orientation", "unit norm");
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
    expect_scene_error("bad_inertia.toml", 4, 11, "body[0].inertia", "positive definite");
}

#[test]
fn wrong_type() {
    expect_scene_error("wrong_type.toml", 2, 6, "sim.dt", "expected a number");
}

#[test]
fn missing_file_is_an_input_error() {
    let out = bin().arg("run").arg("/nonexistent/scene.toml").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenes").join(name)
}

#[test]
fn run_json_is_one_document_of_the_contract_shape() {
    let out = bin()
        .args(["run", "--json", "--steps", "50"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.trim().lines().count(), 1, "exactly one document: {text}");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["steps"], 50);
    assert_eq!(doc["dt"], 0.01);
    assert_eq!(doc["solver"], "ipm");
    let bodies = doc["final"]["bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["name"], "handle");
    for (key, n) in [("position", 3), ("orientation", 4), ("velocity", 3), ("angular_velocity", 3)] {
        assert_eq!(bodies[0][key].as_array().unwrap().len(), n, "{key}");
    }
    assert!(doc["final"]["robots"].as_array().unwrap().is_empty());
    for key in ["mean_iterations", "max_iterations", "failed_steps", "max_penetration", "wall_seconds"] {
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
    let out = bin().args(["run", "--solver", "magic"]).arg(example("free_flight.toml")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn grad_json_matches_the_contract_and_the_closed_form() {
    let out = bin()
        .args(["grad", "--of", "ball.position", "--wrt", "ball.velocity,ball.mass", "--json"])
        .arg(example("free_flight.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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
    let out = bin().args(["check", "--json"]).arg(example("free_flight.toml")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["passed"], true);
    assert_eq!(doc["methods"].as_array().unwrap().len(), 4);
    let blocks = doc["blocks"].as_array().unwrap();
    assert!(blocks.iter().any(|b| b["of"] == "position" && b["wrt"] == "velocity"));
    assert!(blocks.iter().all(|b| b["max_abs_diff"]["ift_vs_fd"].is_number()));
}

#[test]
fn view_writes_a_self_contained_html_page() {
    let dir = std::env::temp_dir().join(format!("dualsim-view-test-{}", std::process::id()));
    let out = bin().args(["run", "--steps", "10", "--out"]).arg(&dir).arg(example("free_flight.toml")).output().unwrap();
    assert!(out.status.success());
    let traj = dir.join("trajectory.json");
    let out = bin().arg("view").arg(&traj).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(dir.join("trajectory.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("\"frames\"") && html.contains("<canvas"));
    assert!(!html.contains("__DATA__"));
    // not a trajectory: typed error, exit 2
    std::fs::write(dir.join("bad.json"), "{\"frames\": [{\"bodies\": [{\"position\": [0, null]}]}]}").unwrap();
    let out = bin().arg("view").arg(dir.join("bad.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a dualsim trajectory"));
    std::fs::remove_dir_all(&dir).unwrap();
}
