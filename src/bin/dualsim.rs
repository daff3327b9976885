//! The `dualsim` command line (see `shared/SCENE.md` for the contract).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use dualsim::contact::SolverKind;
use dualsim::viz::{atomic_write, run_report, trajectory_json, RunReport};
use dualsim::scene::{self, Scene};
use dualsim::sim::{rollout_with, SimError};

#[derive(Parser)]
#[command(name = "dualsim", version, about = "Differentiable rigid-body simulation with contact")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scene file.
    Run {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Contact backend (overrides the scene's `sim.solver`).
        #[arg(long)]
        solver: Option<String>,
        /// Number of steps (overrides the scene's `sim.steps`).
        #[arg(long)]
        steps: Option<usize>,
        /// Write the trajectory (JSON) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
}

/// Exit status for bad input (scene errors, bad arguments).
const EXIT_INPUT: u8 = 2;
/// Exit status for a simulation failure.
const EXIT_SIM: u8 = 1;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => demo(),
        Some(Command::Run { scene, solver, steps, out, json }) => {
            run(&scene, solver.as_deref(), steps, out.as_deref(), json)
        }
    }
}

fn load_scene(path: &Path) -> Result<Scene, ExitCode> {
    scene::load(path).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_INPUT)
    })
}

fn run(
    path: &Path,
    solver: Option<&str>,
    steps: Option<usize>,
    out: Option<&Path>,
    json: bool,
) -> ExitCode {
    let mut scene = match load_scene(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(name) = solver {
        match SolverKind::NAMES.iter().find(|(n, _)| *n == name) {
            Some((_, Some(kind))) => scene.world.solver = *kind,
            Some((_, None)) => {
                eprintln!("error: --solver {name}: not available in this build (available: ipm)");
                return ExitCode::from(EXIT_INPUT);
            }
            None => {
                eprintln!("error: --solver {name}: unknown backend");
                return ExitCode::from(EXIT_INPUT);
            }
        }
    }
    if let Some(n) = steps {
        scene.steps = n;
    }
    let (report, result) = simulate(&scene);
    if let Some(dir) = out {
        if let Ok(traj) = &result {
            let doc = trajectory_json(&scene, traj);
            if let Err(e) = write_json(dir, "trajectory.json", &doc) {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_SIM);
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string(&report).expect("report serializes"));
    } else {
        print_summary(&report);
    }
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: simulation failed: {e}");
            ExitCode::from(EXIT_SIM)
        }
    }
}

fn simulate(
    scene: &Scene,
) -> (RunReport, Result<dualsim::sim::Trajectory<f64>, SimError>) {
    let bar = if scene.steps >= 2000 {
        let b = indicatif::ProgressBar::new(scene.steps as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let t0 = Instant::now();
    let result = rollout_with(&scene.world, &scene.initial, &scene.controls, scene.steps, |k| {
        if let Some(b) = &bar {
            if k % 64 == 0 {
                b.set_position(k as u64);
            }
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let report = run_report(scene, &result, wall);
    (report, result)
}

fn print_summary(r: &RunReport) {
    eprintln!(
        "{} steps of {} s with `{}`: mean {:.2} / max {} iterations, {} failed, max penetration {:.3e}, {:.3} s",
        r.steps,
        r.dt,
        r.solver,
        r.stats.mean_iterations,
        r.stats.max_iterations,
        r.stats.failed_steps,
        r.stats.max_penetration,
        r.stats.wall_seconds
    );
    for b in &r.r#final.bodies {
        println!(
            "{:>12}: position [{:.6}, {:.6}, {:.6}]  velocity [{:.6}, {:.6}, {:.6}]",
            b.name,
            b.position[0],
            b.position[1],
            b.position[2],
            b.velocity[0],
            b.velocity[1],
            b.velocity[2]
        );
    }
}

fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(value).expect("json serializes");
    atomic_write(&dir.join(name), text.as_bytes())
}

/// The built-in demonstration: an embedded scene, simulated, its
/// derivatives checked across methods, results under ./dualsim-out/.
fn demo() -> ExitCode {
    let src = dualsim::demo::SCENE;
    let scene = match scene::parse(src, "<built-in demo>") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    };
    eprintln!("dualsim demonstration: {}", dualsim::demo::DESCRIPTION);
    let (report, result) = simulate(&scene);
    let traj = match result {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: simulation failed: {e}");
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
    println!("{}", check.summary());
    let dir = Path::new("dualsim-out");
    let written = write_json(dir, "trajectory.json", &trajectory_json(&scene, &traj))
        .and_then(|_| {
            write_json(dir, "run.json", &serde_json::to_value(&report).expect("report serializes"))
        })
        .and_then(|_| write_json(dir, "derivative_check.json", &check.to_json()));
    if let Err(e) = written {
        eprintln!("error: writing results: {e}");
        return ExitCode::from(EXIT_SIM);
    }
    println!("results written to {}/", dir.display());
    if check.passed {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: derivative methods disagree beyond tolerance");
        ExitCode::from(EXIT_SIM)
    }
}
