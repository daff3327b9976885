//! Repository invariants.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable source dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The library's test harness is off (`[lib] test = false` in Cargo.toml,
/// to save a second release build), so a unit test in `src/` would never
/// run: tests belong in `tests/` or in doctests.
#[test]
fn no_unit_tests_in_src() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 20, "found only {} source files", files.len());
    let offenders: Vec<String> = files
        .iter()
        .filter(|p| {
            let s = std::fs::read_to_string(p).expect("utf-8 source");
            s.contains("#[cfg(test)]") || s.contains("#[test]")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "unit tests in src/ would not run: {offenders:?}"
    );
}
