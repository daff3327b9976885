//! Trajectory optimization through contact: push a box resting on the
//! ground to a goal position with per-step forces (friction 0.5; the box
//! slides under the initial guess and sticks where the push drops below
//! the friction bound), by every method of `dualsim::opt`, writing a
//! convergence plot (cost against iteration and against wall time).
//!
//! ```text
//! cargo run --release --features examples --example opt_box_push                 # the full size (8 steps, 48 variables)
//! cargo run --release --features examples --example opt_box_push -- --steps 4    # reduced
//! ```
//!
//! Writes `dualsim-out/opt_box_push/{convergence.svg, results.md,
//! results.json}` (or `--out DIR`). `tests/all/opt/examples.rs` runs the same
//! code at a reduced size.

use std::path::PathBuf;

use dualsim::opt::compare::{compare, table, write_results};
use dualsim::opt::{Objective, OptMethod, OptimizeOptions};

fn main() {
    let mut steps: Option<usize> = None;
    let mut out = PathBuf::from("dualsim-out/opt_box_push");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--steps" => steps = args.next().and_then(|s| s.parse().ok()),
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            other => {
                eprintln!("unknown argument {other} (expected --steps N, --out DIR)");
                std::process::exit(2);
            }
        }
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/opt_box_push.toml");
    let mut scene = dualsim::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    if let Some(n) = steps {
        scene.steps = n;
    }
    let obj = Objective::from_scene(&scene).unwrap_or_else(|e| panic!("{e}"));
    let base = OptimizeOptions {
        target_cost: 1e-10,
        max_iterations: 200,
        max_seconds: Some(120.0),
        ..Default::default()
    };
    eprintln!(
        "box push: {} steps, {} decision variables",
        scene.steps,
        obj.dim()
    );
    let reports = compare(&obj, &OptMethod::ALL, &base).unwrap_or_else(|e| panic!("{e}"));
    let md = table(&reports, 1e-10);
    let cem = table(&reports[reports.len() - 1..], 1e-4);
    println!(
        "{md}\nCEM against 1e-4 within the wall time budget of compare() (newton's if it converged, else the slowest converged method's):\n\n{cem}"
    );
    let title = format!("box push, {} steps, {} variables", scene.steps, obj.dim());
    write_results(&out, &reports, &title, &format!("{md}\n{cem}"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    eprintln!(
        "wrote {}/convergence.svg, results.md, results.json",
        out.display()
    );
}
