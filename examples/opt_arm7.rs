//! Trajectory optimization of a robot in contact: the 7-dof arm lying on
//! the ground (`examples/scenes/opt_arm7.toml`, the state `arm7_fall.toml`
//! comes to rest in) moves its end effector (`arm/link7`'s frame) to a
//! target by per-step joint torques while its links stay in contact with
//! the ground (pyramidal friction), by every method of `dualsim::opt`,
//! writing a convergence plot (cost against iteration and wall time).
//!
//! ```text
//! cargo run --release --features examples --example opt_arm7                 # full size (10 steps, 70 variables; several minutes: Newton's exact Hessian is 45 hyper-dual rollouts)
//! cargo run --release --features examples --example opt_arm7 -- --steps 3    # reduced
//! ```
//!
//! Writes `dualsim-out/opt_arm7/{convergence.svg, results.md,
//! results.json}` (or `--out DIR`). `tests/all/opt/examples.rs` runs the same
//! code at a reduced size.

use std::path::PathBuf;

use dualsim::opt::compare::{compare, table, write_results};
use dualsim::opt::{Objective, OptMethod, OptimizeOptions};

fn main() {
    let mut steps: Option<usize> = None;
    let mut out = PathBuf::from("dualsim-out/opt_arm7");
    let mut max_seconds = 600.0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--steps", Some(v)) => steps = v.parse().ok(),
            ("--out", Some(v)) => out = PathBuf::from(v),
            ("--max-seconds", Some(v)) => max_seconds = v.parse().unwrap_or(max_seconds),
            (other, _) => {
                eprintln!(
                    "unknown or incomplete argument {other} (expected --steps N, --out DIR, --max-seconds S)"
                );
                std::process::exit(2);
            }
        }
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/opt_arm7.toml");
    let mut scene = dualsim::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    if let Some(n) = steps {
        scene.steps = n;
    }
    let obj = Objective::from_scene(&scene).unwrap_or_else(|e| panic!("{e}"));
    let base = OptimizeOptions {
        target_cost: 1e-10,
        max_iterations: 100,
        max_seconds: Some(max_seconds),
        ..Default::default()
    };
    eprintln!(
        "arm7 on the ground: {} steps, {} decision variables",
        scene.steps,
        obj.dim()
    );
    let reports = compare(&obj, &OptMethod::ALL, &base).unwrap_or_else(|e| panic!("{e}"));
    let md = table(&reports, 1e-10);
    let cem = table(&reports[reports.len() - 1..], 1e-6);
    println!(
        "{md}\nCEM against 1e-6 within the wall time budget of compare() (newton's if it converged, else the slowest converged method's):\n\n{cem}"
    );
    let title = format!(
        "arm7 on the ground, {} steps, {} variables",
        scene.steps,
        obj.dim()
    );
    write_results(&out, &reports, &title, &format!("{md}\n{cem}"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    eprintln!(
        "wrote {}/convergence.svg, results.md, results.json",
        out.display()
    );
}
