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

/// Every `use`/path of a source file that names `crate::<module path>`.
fn names(src: &str, module: &str) -> bool {
    src.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| l.contains(&format!("crate::{module}")))
}

/// The layers point one way (scalar ← math ← linalg, geometry ←
/// collision ← dynamics ← contact ← sim ← diff ← scene/viz/bin), the
/// contact toolkit never names a backend, and nothing above the contact
/// layer names one (they go through the registry).
#[test]
fn layers_point_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files_in = |dir: &str| {
        let mut v = Vec::new();
        let p = root.join(dir);
        if p.is_dir() {
            rust_files(&p, &mut v);
        } else {
            v.push(p.with_extension("rs"));
        }
        v
    };
    let read = |p: &std::path::PathBuf| std::fs::read_to_string(p).expect("utf-8 source");
    let above_contact = ["sim", "diff", "scene", "viz", "opt", "experiments", "demo"];
    let mut violations = Vec::new();
    for dir in [
        "math",
        "linalg",
        "geometry",
        "collision",
        "dynamics",
        "contact",
    ] {
        for f in files_in(dir) {
            let s = read(&f);
            for up in above_contact {
                if names(&s, &format!("{up}::")) {
                    violations.push(format!("{} names crate::{up}", f.display()));
                }
            }
        }
    }
    let backends = ["contact::ipm", "contact::single_level", "contact::bilevel"];
    let toolkit = [
        "contact/candidates",
        "contact/island",
        "contact/law",
        "contact/mehrotra",
        "contact/space",
        "contact/backend",
        "math",
        "collision",
    ];
    let mut toolkit_files = 0;
    for dir in toolkit {
        for f in files_in(dir) {
            toolkit_files += 1;
            let s = read(&f);
            for b in backends {
                if names(&s, &format!("{b}::")) || names(&s, &format!("{b};")) {
                    violations.push(format!("toolkit file {} names {b}", f.display()));
                }
            }
        }
    }
    assert!(
        toolkit_files >= 15,
        "found only {toolkit_files} toolkit files"
    );
    for dir in above_contact {
        for f in files_in(dir) {
            let s = read(&f);
            for b in backends {
                if names(&s, &format!("{b}::")) {
                    violations.push(format!("{} names backend {b}", f.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}
