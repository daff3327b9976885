//! `dualsim` without a command: the built-in demonstration (an embedded
//! scene simulated, its derivatives checked, results under ./dualsim-out/).

use std::path::Path;
use std::process::ExitCode;

use dualsim::scene;
use dualsim::viz::trajectory_json_with;

use crate::run::{print_summary, simulate};
use crate::{EXIT_INPUT, EXIT_SIM, write_json};

/// What the demonstration suggests trying next (commands that work from a
/// clone of the repository; `tests/all/cli/docs.rs` runs each of them).
const NEXT_STEPS: &str = "\
what to try next (from the repository; `dualsim ARGS` once installed with `cargo install --path .`):
  cargo run --release -- view dualsim-out/trajectory.json      # a 3-D viewer of this run (HTML)
  cargo run --release -- run examples/scenes/sliding_box.toml   # another scene (all keys: docs/scene-format.md)
  cargo run --release -- grad examples/scenes/box_toss.toml --of box.position --wrt box.velocity,box.friction
  cargo run --release -- check examples/scenes/polytope_drop.toml   # the four derivative methods compared";

/// The built-in demonstration: an embedded scene, simulated, its
/// derivatives checked across methods, results under ./dualsim-out/.
pub(crate) fn demo() -> ExitCode {
    let src = dualsim::demo::SCENE;
    let scene = match scene::parse(src, "<built-in demo>") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    };
    eprintln!("dualsim demonstration: {}", dualsim::demo::DESCRIPTION);
    let (report, result, contacts) = simulate(&scene, true);
    let traj = match result {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: simulation failed at {e}");
            return ExitCode::from(EXIT_SIM);
        }
    };
    print_summary(&report);
    let check = match dualsim::demo::derivative_check(&scene) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: derivative check failed to run: {e}");
            return ExitCode::from(EXIT_SIM);
        }
    };
    println!("{}", dualsim::demo::summary(&check));
    let dir = Path::new("dualsim-out");
    let written = write_json(
        dir,
        "trajectory.json",
        &trajectory_json_with(&scene, &traj, Some(&contacts)),
    )
    .and_then(|_| {
        write_json(
            dir,
            "run.json",
            &serde_json::to_value(&report).expect("report serializes"),
        )
    })
    .and_then(|_| {
        write_json(
            dir,
            "check.json",
            &serde_json::to_value(&check).expect("report serializes"),
        )
    });
    if let Err(e) = written {
        eprintln!("error: writing results: {e}");
        return ExitCode::from(EXIT_SIM);
    }
    println!("results written to {}/", dir.display());
    println!("{NEXT_STEPS}");
    if check.passed {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: derivative methods disagree beyond tolerance");
        ExitCode::from(EXIT_SIM)
    }
}
