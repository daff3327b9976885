//! `dualsim check --json` on a scene file, for the tests that assert on
//! its report.

/// Runs `dualsim check --json` on `scene` (relative to the repository);
/// its report (panics, with the exit status and standard error, when
/// there is none).
pub fn check_report(scene: &str) -> serde_json::Value {
    check_report_with(scene, &[])
}

/// [`check_report`] with more arguments for `dualsim check` (such as
/// `--solver lcp`).
#[allow(dead_code)] // not every test binary including this module uses it
pub fn check_report_with(scene: &str, args: &[&str]) -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(scene);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .args(["check", "--json"])
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{scene}: no report ({e}), exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
