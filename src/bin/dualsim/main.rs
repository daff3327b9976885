//! The `dualsim` command line; its reference (scene files, every command's
//! output) is `docs/scene-format.md`. One module per command
//! (`run`, `check`, `grad`, …); this one parses the arguments and holds
//! what the commands share (loading scenes, exit statuses, progress bars).

mod bench;
mod check;
mod demo;
mod grad;
mod hessian;
mod info;
mod inverse;
mod names;
mod optimize;
mod run;
mod view;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dualsim::contact::SolverKind;
use dualsim::diff::{Gradient, Method, Partials};
use dualsim::opt::{HessianMethod, OptMethod};
use dualsim::scene::{self, Scene};
use dualsim::viz::atomic_write;
use names::{gradient_names, hessian_names, method_names, opt_names, partials_names, solver_names};

#[derive(Parser)]
#[command(
    name = "dualsim",
    version,
    about = "Differentiable rigid-body simulation with contact"
)]
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
        #[arg(long, value_parser = solver_names())]
        solver: Option<SolverKind>,
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
    /// Compare the derivative methods (ift, lift, unrolled, fd) on a scene.
    Check {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Contact backend (overrides the scene's `sim.solver`).
        #[arg(long, value_parser = solver_names())]
        solver: Option<SolverKind>,
        /// Relaxation ρ at which derivatives are taken (default: the scene's).
        #[arg(long)]
        rho: Option<f64>,
        /// Number of states along the trajectory to compare at.
        #[arg(long, default_value_t = 3)]
        samples: usize,
        /// Central-difference step (small, because resting contact at small ρ
        /// is stiff: the truncation error grows like ε² f''').
        #[arg(long, default_value_t = 1e-7)]
        fd_eps: f64,
        /// Also sample up to this many event steps (a contact closes or
        /// opens, or starts or stops sliding), spread over the events.
        #[arg(long, default_value_t = 8)]
        event_samples: usize,
        /// Skip the comparison of the Jacobian of the whole rollout that
        /// `grad` returns (`ift`) with finite differences of the whole
        /// rollout (on by default).
        #[arg(long)]
        no_rollout: bool,
        /// Largest share of the fd columns at the regular samples that may
        /// be left out as not smooth (each is listed with its reason).
        #[arg(long, default_value_t = 0.1)]
        max_skipped_share: f64,
        /// Largest number of input columns of the whole-rollout comparison;
        /// more are sampled (seeded), always keeping the bodies in impacts.
        #[arg(long, default_value_t = 96)]
        rollout_columns: usize,
        /// How `ift` assembles ∂r/∂θ: `kernel` (generated #[kernel] Jacobians,
        /// dual numbers where not covered) or `dual` (dual numbers only).
        #[arg(long, default_value = "kernel", value_parser = partials_names())]
        partials: Partials,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// The Jacobian of final-state quantities with respect to inputs.
    Grad {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Outputs, comma-separated `NAME.FIELD`: a body's or a robot link's
        /// (`ROBOT/LINK`) position, orientation, velocity, angular_velocity;
        /// a robot's q (one row per coordinate), v.
        #[arg(long)]
        of: String,
        /// Inputs, comma-separated `NAME.FIELD`: a body's position, orientation,
        /// velocity, angular_velocity, mass, friction, inertia, shape.radius, …,
        /// control; a floating base's root link (`ROBOT/LINK`) position,
        /// orientation, velocity, angular_velocity; a robot's q (one column
        /// per coordinate), v, control; sim.gravity, sim.dt.
        #[arg(long)]
        wrt: String,
        /// Derivative method.
        #[arg(long, default_value = "ift", value_parser = method_names())]
        method: Method,
        /// Relaxation ρ at which derivatives are taken (default: the scene's).
        #[arg(long)]
        rho: Option<f64>,
        /// How `ift` assembles ∂r/∂θ: `kernel` (generated #[kernel] Jacobians,
        /// dual numbers where not covered) or `dual` (dual numbers only).
        #[arg(long, default_value = "kernel", value_parser = partials_names())]
        partials: Partials,
        /// Which gradient: `exact` (default) or `complementarity_aware`
        /// (Nimble's, `lcp` backend with `--method ift` only; refused
        /// otherwise).
        #[arg(long, default_value = "exact", value_parser = gradient_names())]
        gradient: Gradient,
        /// Also compare the Jacobian with finite differences of the whole
        /// rollout, every requested column, per entry (as `check`'s rollout
        /// comparison); a disagreement fails with exit status 1.
        #[arg(long)]
        check: bool,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Write a self-contained 3-D HTML viewer (WebGL, works offline) of a
    /// trajectory (from `run --out`) or of a scene file (`.toml`: run first).
    View {
        /// The trajectory JSON, or a scene file (`.toml`), which is simulated
        /// first.
        trajectory: PathBuf,
        /// Output HTML file (default: the input's name with `.html`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// With a scene file: number of steps (overrides the scene's
        /// `sim.steps`).
        #[arg(long)]
        steps: Option<usize>,
    },
    /// Minimize the scene's `[objective]` (trust-region Newton with exact
    /// Hessians, Gauss-Newton, L-BFGS, gradient descent, or CEM).
    Optimize {
        /// The scene file (TOML) with an `[objective]` table.
        scene: PathBuf,
        /// Optimization method.
        #[arg(long, default_value = "newton", value_parser = opt_names())]
        method: OptMethod,
        /// Iteration limit.
        #[arg(long, default_value_t = 100)]
        max_iterations: u64,
        /// Stop once the cost is at or below this.
        #[arg(long, default_value_t = 1e-12)]
        target_cost: f64,
        /// Stop once the gradient norm is at or below this times the cost
        /// at the start (first-order optimality; not for cem).
        #[arg(long, default_value_t = 1e-10)]
        gradient_tolerance: f64,
        /// Stop after this much wall time (seconds).
        #[arg(long)]
        max_seconds: Option<f64>,
        /// Write the optimized scene (scene.toml) and its trajectory
        /// (trajectory.json) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Value, gradient and Hessian of the scene's `[objective]` with
    /// respect to its `wrt`.
    Hessian {
        /// The scene file (TOML) with an `[objective]` table.
        scene: PathBuf,
        /// How the Hessian is computed.
        #[arg(long, default_value = "adjoint", value_parser = hessian_names())]
        method: HessianMethod,
        /// Compare the three methods (like `check`).
        #[arg(long)]
        check: bool,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Inverse dynamics: the controls of each step of a trajectory (from
    /// `run --out`) under an invertible contact model (`convex`).
    Inverse {
        /// The scene file (TOML) the trajectory was run from.
        scene: PathBuf,
        /// The trajectory JSON (`run --out DIR` writes DIR/trajectory.json).
        trajectory: PathBuf,
        /// Contact backend (overrides the scene's `sim.solver`; it must
        /// have an inverse: `convex`).
        #[arg(long, value_parser = solver_names())]
        solver: Option<SolverKind>,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Time the f64 step and each derivative method of one step.
    Bench {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Describe a loaded scene: bodies, robots (links, joints in state
    /// order with limits, collision shapes and hull sizes) and contact pairs.
    Info {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Print exactly one JSON document on standard output.
        #[arg(long)]
        json: bool,
    },
}

/// Exit status for bad input (scene errors, bad arguments).
pub(crate) const EXIT_INPUT: u8 = 2;
/// Exit status for a simulation failure.
pub(crate) const EXIT_SIM: u8 = 1;
/// Exit status of `check` when there was nothing to compare (not a pass).
pub(crate) const EXIT_NOTHING_CHECKED: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => demo::demo(),
        Some(Command::Run {
            scene,
            solver,
            steps,
            out,
            json,
        }) => run::run(&scene, solver, steps, out.as_deref(), json),
        Some(Command::Check {
            scene,
            solver,
            rho,
            samples,
            fd_eps,
            event_samples,
            no_rollout,
            max_skipped_share,
            rollout_columns,
            partials,
            json,
        }) => check::check(
            &scene,
            solver,
            rho,
            (samples, event_samples, max_skipped_share),
            fd_eps,
            (!no_rollout).then_some(rollout_columns),
            partials,
            json,
        ),
        Some(Command::Grad {
            scene,
            of,
            wrt,
            method,
            rho,
            partials,
            gradient,
            check,
            json,
        }) => grad::grad(
            &scene, &of, &wrt, method, rho, partials, gradient, check, json,
        ),
        Some(Command::Bench { scene, json }) => bench::bench(&scene, json),
        Some(Command::Info { scene, json }) => info::info(&scene, json),
        Some(Command::Inverse {
            scene,
            trajectory,
            solver,
            json,
        }) => inverse::inverse(&scene, &trajectory, solver, json),
        Some(Command::Optimize {
            scene,
            method,
            max_iterations,
            target_cost,
            gradient_tolerance,
            max_seconds,
            out,
            json,
        }) => optimize::optimize(
            &scene,
            method,
            max_iterations,
            target_cost,
            gradient_tolerance,
            max_seconds,
            out.as_deref(),
            json,
        ),
        Some(Command::Hessian {
            scene,
            method,
            check,
            json,
        }) => hessian::hessian(&scene, method, check, json),
        Some(Command::View {
            trajectory,
            out,
            steps,
        }) => view::view(&trajectory, out.as_deref(), steps),
    }
}

pub(crate) fn load_scene(path: &Path) -> Result<Scene, ExitCode> {
    load_scene_with(path, None)
}

/// Loads a scene for the backend `solver` (default: the scene's own), so
/// that an option the backend does not implement is refused naming it.
pub(crate) fn load_scene_with(path: &Path, solver: Option<SolverKind>) -> Result<Scene, ExitCode> {
    let opts = scene::LoadOptions { solver };
    scene::load_with(path, &opts).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_INPUT)
    })
}

/// A progress bar (`len` steps) or, without a length, a spinner with the
/// elapsed time, on standard error when it is a terminal; hidden otherwise
/// (piped output, tests, `--json` consumers see nothing of it).
pub(crate) fn progress(len: Option<u64>, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let (bar, template) = match len {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{bar:40} {pos}/{len} {msg} {elapsed} (eta {eta})",
        ),
        None => (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} {msg} {elapsed}",
        ),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_string());
    if len.is_none() {
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
    }
    bar
}

pub(crate) fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(value).expect("json serializes");
    atomic_write(&dir.join(name), text.as_bytes())
}

/// The objective of a scene, or the exit code (2: no `[objective]`).
pub(crate) fn load_objective(path: &Path) -> Result<(Scene, dualsim::opt::Objective), ExitCode> {
    let scene = load_scene(path)?;
    match dualsim::opt::Objective::from_scene(&scene) {
        Ok(o) => Ok((scene, o)),
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            Err(ExitCode::from(EXIT_INPUT))
        }
    }
}
