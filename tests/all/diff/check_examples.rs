//! `dualsim check` passes on every example scene (issues #14 and #43):
//! the four derivative methods agree within the stated tolerances (lift
//! 1e-9, unrolled 1e-7, fd 1e-5, relative to max(1, ‖J‖∞) per block) at
//! the default three states of each run and at up to 8 of its event
//! steps (a contact closes, opens or changes friction mode), `fd` is
//! compared on enough columns of every block (at most 10 % of all left
//! out, each listed), and the Jacobian `grad` returns for the whole
//! rollout agrees with finite differences of the whole rollout, per
//! entry, on up to 96 columns (the bodies in impacts first). That is
//! `dualsim check`'s default, run here as a user runs it, except on the
//! scenes of [`EXCEPTIONS`].

use std::path::Path;
use std::process::Command;

use crate::common::parallel::in_parallel;

/// Scenes checked with other than the default options, each with its
/// reason (open, issue 43; docs/derivatives.md): what the options leave
/// out does not pass yet.
const EXCEPTIONS: [(&str, &[&str], &str); 8] = [
    (
        "arm7_fall.toml",
        &["--no-rollout", "--event-samples", "0"],
        "2000 steps of a 7-dof arm falling onto the ground: rollout Jacobian \
         entries of 1e2-1e3 that fd of the rollout puts 6-44 % elsewhere; at an \
         event step ∂v/∂g by fd is 2.7e-5 (relative) off",
    ),
    (
        "bundles.toml",
        &["--event-samples", "0"],
        "at an event step one orientation column of fd is 1.04e-5 off (the \
         tolerance 1e-5), and only 2.4 times closer at ε/10",
    ),
    (
        "capsule_pile.toml",
        &["--no-rollout"],
        "300 steps of a settling pile under ipm: on 96 of 740 columns, \
         ∂(c10 v[3])/∂(c5 ω_x) -9.437e-4 by ift against -6.247e-4 by fd (11.9 \
         times the per-entry tolerance), not yet explained",
    ),
    (
        "lcp_box_push.toml",
        &["--no-rollout", "--max-skipped-share", "0.25"],
        "the rollout has no derivative: at step 5 a contact opens or closes on \
         either side of the box's initial height (grad's typed NoDerivative); at \
         its regular sample 49 (the box sliding against the brake) 35 of 56 \
         columns change the active set within ±ε (21 %, each listed)",
    ),
    (
        "quadruped_stand.toml",
        &["--no-rollout"],
        "400 steps of a standing quadruped: 7 of 32 columns not smooth within \
         ±2ε (more than 10 %), entries up to 6e5",
    ),
    (
        "soft_quadruped.toml",
        &["--no-rollout"],
        "an unstable rollout: entries up to 8e9 (∂v/∂dt), which fd cannot \
         resolve, and 10 of 32 columns not smooth within ±2ε",
    ),
    (
        "soft_sphere_drop.toml",
        &["--no-rollout"],
        "a spinning ball rolling on soft point-cloud contact: the rollout is \
         rough at the scale of ε (∂ω_y/∂ω_z,0: ift and lift 0.340, fd 0.342 at \
         ε = 1e-6 and 0.464 at 1e-7), 4 of 31 columns not smooth",
    ),
    (
        "sphere_pile.toml",
        &["--no-rollout"],
        "125 spheres, 300 steps: on 8 sampled columns the entries agree (0.88 of \
         the tolerance) but 1 column is not smooth within ±2ε (12.5 % > 10 %); \
         and each column costs about 5 rollouts of a second",
    ),
];

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
        let name = scene.file_name().unwrap().to_string_lossy().to_string();
        let extra: &[&str] = EXCEPTIONS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map_or(&[], |(_, a, _)| a);
        let skip_rollout = extra.contains(&"--no-rollout");
        let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
            .args(["check", "--json"])
            .args(extra)
            .arg(scene)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let doc: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        let status = doc.as_ref().map(|d| d["status"].clone());
        let blocks = doc
            .as_ref()
            .and_then(|d| d["blocks"].as_array().map(Vec::len))
            .unwrap_or(0);
        // the rollout comparison ran (and passed) wherever it is asked for
        let rollout = doc.as_ref().is_some_and(|d| d["rollout"]["passed"] == true);
        let ok = out.status.success()
            && status == Some("passed".into())
            && blocks > 0
            && (skip_rollout || rollout);
        (!ok).then(|| {
            format!(
                "{name}: exit {:?}, status {status:?}, {blocks} blocks, {stderr}",
                out.status.code()
            )
        })
    });
    assert!(failed.is_empty(), "{failed:#?}");
}
