//! `dualsim check` passes on every example scene (issue #14, point 8):
//! the four derivative methods agree within the stated tolerances (lift
//! 1e-9, unrolled 1e-7, fd 1e-5, relative to max(1, ‖J‖∞) per block) at
//! the default three states of each run, and `fd` is compared on enough
//! columns of every block. The slowest, `sphere_pile` and `box_tower`,
//! took 38 s and 10 s (wall clock, loaded machine) in a release build
//! with `fd` at ±ε and ±2ε.

use std::path::Path;
use std::process::Command;

use crate::common::parallel::in_parallel;

#[test]
fn check_passes_on_every_example_scene() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let mut scenes: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    scenes.sort();
    assert!(scenes.len() >= 18, "{} example scenes", scenes.len());
    // one scene per core at a time; every scene is checked
    let failed = in_parallel(&scenes, |scene| {
        let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
            .args(["check", "--json"])
            .arg(scene)
            .output()
            .unwrap();
        let name = scene.file_name().unwrap().to_string_lossy().to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let doc: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        let status = doc.as_ref().map(|d| d["status"].clone());
        let blocks = doc
            .as_ref()
            .and_then(|d| d["blocks"].as_array().map(Vec::len))
            .unwrap_or(0);
        let ok = out.status.success() && status == Some("passed".into()) && blocks > 0;
        (!ok).then(|| {
            format!(
                "{name}: exit {:?}, status {status:?}, {blocks} blocks, {stderr}",
                out.status.code()
            )
        })
    });
    assert!(failed.is_empty(), "{failed:#?}");
}
