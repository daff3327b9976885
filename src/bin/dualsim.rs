//! The `dualsim` command line; its reference (scene files, every command's
//! output) is `docs/scene-format.md`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use dualsim::contact::SolverKind;
use dualsim::diff::{
    names, CheckOptions, CheckStatus, DiffOptions, Gradient, Method, Param, Partials,
};
use dualsim::math::DMat;
use dualsim::opt::{HessianMethod, OptMethod};

/// A command-line value parser over a closed set of names (the library's
/// own lists: `SolverKind::NAMES`, `Method::ALL`, …): `--help` lists the
/// names; an unknown name is refused (exit 2) with the closest one
/// ("did you mean") and every valid name; a name the library knows but
/// this build lacks (a planned backend) is refused saying so.
#[derive(Clone)]
struct Names<T: Clone + Send + Sync + 'static> {
    what: &'static str,
    names: Vec<(&'static str, Option<T>)>,
}

impl<T: Clone + Send + Sync + 'static> Names<T> {
    fn new(what: &'static str, names: impl IntoIterator<Item = (&'static str, Option<T>)>) -> Self {
        Names {
            what,
            names: names.into_iter().collect(),
        }
    }

    fn available(&self) -> Vec<&'static str> {
        self.names
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect()
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Names<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map(|l| format!("--{l} "))
            .unwrap_or_default();
        let s = value.to_string_lossy();
        let available = self.available();
        let message = match self.names.iter().find(|(n, _)| *n == s) {
            Some((_, Some(v))) => return Ok(v.clone()),
            Some((_, None)) => format!(
                "{flag}{s}: the {} `{s}` is not in this build (available: {})\n",
                self.what,
                available.join(", ")
            ),
            None => format!(
                "{flag}{s}: unknown {} `{s}`{} (valid: {})\n",
                self.what,
                names::suggest(&s, available.iter().copied()),
                available.join(", ")
            ),
        };
        Err(clap::Error::raw(clap::error::ErrorKind::InvalidValue, message).with_cmd(cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.available()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

fn solver_names() -> Names<SolverKind> {
    Names::new("contact backend", SolverKind::NAMES.iter().copied())
}

fn method_names() -> Names<Method> {
    Names::new(
        "derivative method",
        Method::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}

fn partials_names() -> Names<Partials> {
    Names::new(
        "partials mode",
        [Partials::Kernel, Partials::Dual]
            .into_iter()
            .map(|p| (p.name(), Some(p))),
    )
}

fn gradient_names() -> Names<Gradient> {
    Names::new(
        "gradient mode",
        Gradient::ALL.into_iter().map(|g| (g.name(), Some(g))),
    )
}

fn hessian_names() -> Names<HessianMethod> {
    Names::new(
        "Hessian method",
        HessianMethod::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}

fn opt_names() -> Names<OptMethod> {
    Names::new(
        "optimization method",
        OptMethod::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}
use dualsim::scene::{self, Scene};

#[path = "dualsim/info.rs"]
mod info;
use dualsim::sim::{rollout_inspect, RolloutError, State, StepOutput, Trajectory};
use dualsim::viz::{
    atomic_write, partial_trajectory_json_with, run_report, trajectory_json, trajectory_json_with,
    RunReport, StepContacts, TrajectoryWriter,
};

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
const EXIT_INPUT: u8 = 2;
/// Exit status for a simulation failure.
const EXIT_SIM: u8 = 1;
/// Exit status of `check` when there was nothing to compare (not a pass).
const EXIT_NOTHING_CHECKED: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => demo(),
        Some(Command::Run {
            scene,
            solver,
            steps,
            out,
            json,
        }) => run(&scene, solver, steps, out.as_deref(), json),
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
        }) => check(
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
        }) => grad(
            &scene, &of, &wrt, method, rho, partials, gradient, check, json,
        ),
        Some(Command::Bench { scene, json }) => bench(&scene, json),
        Some(Command::Info { scene, json }) => info::info(&scene, json),
        Some(Command::Inverse {
            scene,
            trajectory,
            solver,
            json,
        }) => inverse(&scene, &trajectory, solver, json),
        Some(Command::Optimize {
            scene,
            method,
            max_iterations,
            target_cost,
            gradient_tolerance,
            max_seconds,
            out,
            json,
        }) => optimize(
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
        }) => hessian(&scene, method, check, json),
        Some(Command::View {
            trajectory,
            out,
            steps,
        }) => view(&trajectory, out.as_deref(), steps),
    }
}

fn load_scene(path: &Path) -> Result<Scene, ExitCode> {
    load_scene_with(path, None)
}

/// Loads a scene for the backend `solver` (default: the scene's own), so
/// that an option the backend does not implement is refused naming it.
fn load_scene_with(path: &Path, solver: Option<SolverKind>) -> Result<Scene, ExitCode> {
    let opts = scene::LoadOptions { solver };
    scene::load_with(path, &opts).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_INPUT)
    })
}

fn run(
    path: &Path,
    kind: Option<SolverKind>,
    steps: Option<usize>,
    out: Option<&Path>,
    json: bool,
) -> ExitCode {
    let mut scene = match load_scene_with(path, kind) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(n) = steps {
        if let Err(code) = override_steps(&mut scene, path, n) {
            return code;
        }
    }
    // The trajectory is streamed to a temporary file next to the target
    // while the run goes (memory does not grow with the steps) and renamed
    // over it at the end, whether the run succeeded or stopped at a failing
    // step (then: the steps completed before it and the "error" entry).
    let target = out.map(|dir| dir.join("trajectory.json"));
    let mut code = ExitCode::SUCCESS;
    let mut write_error: Option<std::io::Error> = None;
    let mut writer = match &target {
        Some(t) => match TrajectoryWriter::create(&scene, t, true)
            .and_then(|mut w| w.frame(&scene, &scene.initial, None, None).map(|_| w))
        {
            Ok(w) => Some(w),
            Err(e) => {
                write_error = Some(e);
                None
            }
        },
        None => None,
    };
    let (report, _) = simulate_streaming(&scene, |_, _, out| {
        if let Some(w) = &mut writer {
            if let Err(e) = w.frame(&scene, &out.state, Some(&out.stats), Some(&out.contacts)) {
                write_error = Some(e);
                writer = None;
            }
        }
    });
    if let Some(w) = writer {
        if let Err(e) = w.finish(report.error.as_ref()) {
            write_error = Some(e);
        }
    }
    if let (Some(t), Some(e)) = (&target, &write_error) {
        eprintln!("error: writing {}: {e}", t.display());
        code = ExitCode::from(EXIT_SIM);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("report serializes")
        );
    } else {
        print_summary(&report);
    }
    if let Some(e) = &report.error {
        eprintln!("error: simulation {}", e.message);
        if let (Some(t), None) = (&target, &write_error) {
            eprintln!(
                "the {} step(s) completed before it are in {}",
                report.steps,
                t.display()
            );
        }
        return ExitCode::from(EXIT_SIM);
    }
    code
}

/// Runs the scene (a progress bar for long runs); the contacts of each
/// step are kept when `keep_contacts` (for the trajectory file).
fn simulate(
    scene: &Scene,
    keep_contacts: bool,
) -> (
    RunReport,
    Result<dualsim::sim::Trajectory<f64>, RolloutError<f64>>,
    StepContacts,
) {
    let bar = progress(Some(scene.steps as u64), "steps");
    let t0 = Instant::now();
    let mut contacts = StepContacts::new();
    let result = rollout_inspect(
        &scene.world,
        &scene.initial,
        &scene.controls,
        scene.steps,
        |k, out| {
            if keep_contacts {
                contacts.push(out.contacts.clone());
            }
            bar.set_position(k as u64 + 1);
        },
    );
    let wall = t0.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let report = run_report(scene, &result, wall);
    (report, result, contacts)
}

/// Runs the scene step by step without keeping the trajectory (a progress
/// bar on a terminal): `each(k, x, out)` sees step `k`, from state `x`, and
/// its output. The result's trajectory (`completed` of a failure) holds
/// the last state only, with the statistics of every step.
fn simulate_streaming(
    scene: &Scene,
    mut each: impl FnMut(usize, &State<f64>, &StepOutput<f64>),
) -> (RunReport, Result<Trajectory<f64>, RolloutError<f64>>) {
    let bar = progress(Some(scene.steps as u64), "steps");
    let t0 = Instant::now();
    let mut state = scene.initial.clone();
    let mut stats = Vec::with_capacity(scene.steps);
    let mut failure = None;
    // Chained as `sim::rollout` chains them (the backend's workspace: warm
    // start from the previous step).
    let mut workspace = dualsim::contact::Workspace::default();
    for k in 0..scene.steps {
        match dualsim::sim::step_with(&scene.world, &state, scene.controls.at(k), &mut workspace) {
            Ok(out) => {
                each(k, &state, &out);
                stats.push(out.stats);
                state = out.state;
                bar.set_position(k as u64 + 1);
            }
            Err(error) => {
                failure = Some((k, error));
                break;
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let completed = Trajectory {
        states: vec![state],
        stats,
    };
    let result = match failure {
        None => Ok(completed),
        Some((step, error)) => Err(RolloutError {
            step,
            error,
            completed,
        }),
    };
    (run_report(scene, &result, wall), result)
}

/// A progress bar (`len` steps) or, without a length, a spinner with the
/// elapsed time, on standard error when it is a terminal; hidden otherwise
/// (piped output, tests, `--json` consumers see nothing of it).
fn progress(len: Option<u64>, what: &str) -> indicatif::ProgressBar {
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

/// `--steps N`: refused (exit 2, located at the scene's first `per_step`)
/// when the scene's `per_step` controls have fewer than N rows — the steps
/// past them would silently repeat the last row.
fn override_steps(scene: &mut Scene, path: &Path, n: usize) -> Result<(), ExitCode> {
    if let dualsim::sim::Controls::PerStep(rows) = &scene.controls {
        if n > rows.len() {
            // the first `per_step` key, and the index of its `[[control]]`
            let (line, col, table) = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| {
                    let mut table = 0usize;
                    text.lines().enumerate().find_map(|(i, l)| {
                        let t = l.trim_start();
                        if t.starts_with("[[control]]") {
                            table += 1;
                        }
                        t.starts_with("per_step")
                            .then(|| (i + 1, l.len() - t.len() + 1, table.saturating_sub(1)))
                    })
                })
                .unwrap_or((1, 1, 0));
            eprintln!(
                "error: {}:{line}:{col}: control[{table}].per_step: --steps {n} exceeds the {} per-step control rows \
                 (one per `[sim] steps`); the steps past them would repeat the last row. \
                 Give per_step rows for {n} steps, or run at most {} steps",
                path.display(),
                rows.len(),
                rows.len()
            );
            return Err(ExitCode::from(EXIT_INPUT));
        }
    }
    scene.steps = n;
    Ok(())
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
    robot_summary(r);
}

/// Each robot's final joint positions and velocities (standard output).
fn robot_summary(r: &RunReport) {
    let list = |x: &[f64]| {
        x.iter()
            .map(|v| format!("{v:.6}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for robot in &r.r#final.robots {
        println!(
            "{:>12}: q [{}]  v [{}]",
            robot.name,
            list(&robot.q),
            list(&robot.v)
        );
    }
}

fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(value).expect("json serializes");
    atomic_write(&dir.join(name), text.as_bytes())
}

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

#[allow(clippy::too_many_arguments)]
fn check(
    path: &Path,
    solver: Option<SolverKind>,
    rho: Option<f64>,
    (samples, event_samples, max_skipped_share): (usize, usize, f64),
    fd_eps: f64,
    rollout_columns: Option<usize>,
    partials: Partials,
    json: bool,
) -> ExitCode {
    let scene = match load_scene_with(path, solver) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(r) = rho {
        if !(r > 0.0 && r.is_finite()) {
            eprintln!("error: --rho must be a positive number");
            return ExitCode::from(EXIT_INPUT);
        }
    }
    if !(0.0..=1.0).contains(&max_skipped_share) {
        eprintln!("error: --max-skipped-share must be a number in [0, 1]");
        return ExitCode::from(EXIT_INPUT);
    }
    let opts = CheckOptions {
        samples,
        max_event_samples: event_samples,
        max_fd_skipped_total_share: max_skipped_share,
        diff: DiffOptions {
            rho,
            fd_eps,
            partials,
            ..CheckOptions::default().diff
        },
        rollout: rollout_columns.map(|n| dualsim::diff::RolloutCheckOptions {
            max_columns: n.max(1),
            ..Default::default()
        }),
        ..Default::default()
    };
    let bar = progress(
        None,
        &format!("check: {} steps by ift, lift, unrolled and fd", scene.steps),
    );
    let report = dualsim::diff::check(
        &scene.world,
        &scene.initial,
        &scene.controls,
        scene.steps,
        &opts,
    );
    bar.finish_and_clear();
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_SIM);
        }
    };
    if json {
        let mut doc = serde_json::to_value(&report).expect("report serializes");
        doc["tolerances"] = serde_json::json!({
            "lift": opts.tol_lift,
            "unrolled": opts.tol_unrolled,
            "fd": opts.tol_fd,
        });
        doc["relative_to"] = serde_json::json!("max(1, |J|)");
        println!("{doc}");
    } else {
        println!(
            "derivative check at steps {:?}, rho = {:e}",
            report.sample_steps, report.rho
        );
        println!(
            "columns lift, unrolled, fd: the largest difference from ift in the block, RELATIVE to max(1, |J|) (|J|: the block's largest |entry|, absolute)"
        );
        println!(
            "tolerances (relative): lift {:e}, unrolled {:e}, fd {:e}",
            opts.tol_lift, opts.tol_unrolled, opts.tol_fd
        );
        println!(
            "fd skipped: input columns (over samples) of the block left out of fd as not smooth within ±eps; a block fails with none compared or more than {}% skipped",
            report.max_fd_skipped_share * 100.0
        );
        println!(
            "{:>18} {:>18} {:>10} {:>12} {:>12} {:>12} {:>10}",
            "of", "wrt", "|J|", "lift", "unrolled", "fd", "fd skipped"
        );
        for b in &report.blocks {
            println!(
                "{:>18} {:>18} {:>10.2e} {:>12.2e} {:>12.2e} {:>12.2e} {:>10} {}",
                b.of,
                b.wrt,
                b.norm,
                b.max_rel_diff["ift_vs_lift"],
                b.max_rel_diff["ift_vs_unrolled"],
                b.max_rel_diff["ift_vs_fd"],
                format!("{}/{}", b.fd_skipped, b.fd_skipped + b.fd_compared),
                if b.passed { "" } else { "FAIL" }
            );
        }
        if report.fd_skipped_columns > 0 {
            println!(
                "fd not compared on {} of {} input column(s) (at most {}% allowed), where the step is not smooth within ±eps:",
                report.fd_skipped_columns,
                report.fd_columns,
                report.max_fd_skipped_total_share * 100.0
            );
            for c in &report.fd_skipped {
                println!("  step {:>5}  {:<32} {}", c.step, c.input, c.reason);
            }
        }
        for c in &report.events_without_derivative {
            println!(
                "event step {} not compared: no derivative with respect to {} (a contact opens or closes on either side of it)",
                c.step, c.input
            );
        }
        if !report.fd_refined.is_empty() {
            println!(
                "fd measured again at eps/10 on {} input column(s), where it came at least 5x closer to ift:",
                report.fd_refined.len()
            );
            for c in &report.fd_refined {
                println!("  step {:>5}  {:<32} {}", c.step, c.input, c.reason);
            }
        }
        if !report.fd_one_sided.is_empty() {
            println!(
                "fd one-sided on {} input column(s), where the step map jumps on the other side within ±eps (an impact on a step boundary):",
                report.fd_one_sided.len()
            );
            for c in &report.fd_one_sided {
                println!("  step {:>5}  {}", c.step, c.input);
            }
        }
        if let Some(r) = &report.rollout {
            print_rollout_report(r);
        }
        println!(
            "{}",
            match report.status {
                CheckStatus::Passed => "passed",
                CheckStatus::Failed => "FAILED",
                CheckStatus::NothingChecked =>
                    "NOTHING CHECKED: the scene has no moving body or robot, so there is no derivative to compare",
            }
        );
    }
    match report.status {
        CheckStatus::Passed => ExitCode::SUCCESS,
        CheckStatus::Failed => ExitCode::from(EXIT_SIM),
        CheckStatus::NothingChecked => {
            if json {
                eprintln!("error: nothing checked: the scene has no moving body or robot");
            }
            ExitCode::from(EXIT_NOTHING_CHECKED)
        }
    }
}

/// The text form of the whole-rollout comparison of `check` and `grad --check`.
fn print_rollout_report(r: &dualsim::diff::RolloutReport) {
    println!(
        "whole rollout ({} steps): the Jacobian grad returns ({}) against fd of the rollout, per entry (|J - fd| <= {:e} max(|J_ij|, sqrt(row max * column max)) + round-off)",
        r.steps,
        if r.method.is_empty() { "given" } else { &r.method },
        r.tol
    );
    println!(
        "  {} of {} candidate column(s){}; event steps {:?}; bodies in impacts {:?}",
        r.columns.len(),
        r.candidate_columns,
        if r.sampled {
            " (seeded sample, impact bodies always in)"
        } else {
            ""
        },
        r.event_steps,
        r.impact_bodies
    );
    for s in &r.skipped {
        println!("  skipped {}: {}", s.input, s.reason);
    }
    if let Some((row, col, j, f)) = &r.worst_entry {
        println!(
            "  worst entry d {row} / d {col}: {j:.9e} vs fd {f:.9e} ({:.2} of its tolerance)",
            r.worst_ratio
        );
    }
    println!(
        "  {} ({} skipped, at most {}% allowed)",
        if r.passed { "passed" } else { "FAILED" },
        r.skipped.len(),
        r.max_skipped_share * 100.0
    );
}

#[allow(clippy::too_many_arguments)]
fn grad(
    path: &Path,
    of: &str,
    wrt: &str,
    method: Method,
    rho: Option<f64>,
    partials: Partials,
    gradient: Gradient,
    check: bool,
    json: bool,
) -> ExitCode {
    let scene = match load_scene(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let outputs = match names::parse_outputs(&scene.world, of) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: --of: {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let groups = match names::parse_inputs(&scene.world, wrt, scene.steps) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: --wrt: {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let inputs: Vec<_> = groups.iter().flat_map(|(_, i)| i.iter().copied()).collect();
    let opts = DiffOptions {
        rho,
        partials,
        gradient,
        ..Default::default()
    };
    if let Err(e) = dualsim::diff::complementarity::check(&scene.world, method, &opts) {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_INPUT);
    }
    if check && gradient == Gradient::ComplementarityAware {
        eprintln!("error: --check compares the exact Jacobian with fd: the complementarity-aware gradient is not a derivative of the rollout");
        return ExitCode::from(EXIT_INPUT);
    }
    let bar = progress(
        None,
        &format!(
            "grad: {} steps by {}, {} input column(s)",
            scene.steps,
            method.name(),
            inputs.len()
        ),
    );
    let t0 = Instant::now();
    let computed = if gradient == Gradient::ComplementarityAware {
        aware_grad(&scene, &outputs, &inputs, &opts).map(|(v, j, n)| (v, j, Some(n), None))
    } else {
        dualsim::diff::rollout_jacobian(
            &scene.world,
            &scene.initial,
            &scene.controls,
            scene.steps,
            &inputs,
            method,
            &opts,
        )
        .and_then(|rj| {
            let checked = if check {
                let labels = names::input_labels(&scene.world, &groups);
                Some(dualsim::diff::compare_rollout_jacobian(
                    &scene.world,
                    &scene.initial,
                    &scene.controls,
                    scene.steps,
                    &inputs,
                    &labels,
                    &rj.jacobian,
                    opts.fd_eps,
                    &dualsim::diff::RolloutCheckOptions {
                        max_columns: inputs.len(),
                        ..Default::default()
                    },
                )?)
            } else {
                None
            };
            names::output_rows(&scene.world, &rj.last, &rj.jacobian, &outputs)
                .map(|(v, j)| (v, j, checked))
        })
        .map(|(v, j, c)| (v, j, None, c))
    };
    bar.finish_and_clear();
    let (value, jac, reclassified, checked) = match computed {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_SIM);
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    // a robot's `q` input: one column per configuration coordinate
    let (col_labels, jac) =
        match names::coordinate_columns(&scene.world, &scene.initial.q, &groups, &jac) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_SIM);
            }
        };
    let rows: Vec<Vec<f64>> = jac
        .row_iter()
        .map(|r| r.iter().copied().collect())
        .collect();
    let row_labels = names::output_labels(&scene.world, &outputs);
    if json {
        let doc = serde_json::json!({
            "of": outputs.iter().map(|o| o.label.clone()).collect::<Vec<_>>(),
            "wrt": groups.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
            "rows": row_labels,
            "cols": col_labels,
            "method": method.name(),
            "gradient": gradient.name(),
            "reclassified_steps": reclassified,
            "check": checked,
            "value": value,
            "jacobian": rows,
            "wall_seconds": wall,
        });
        println!("{doc}");
    } else {
        println!(
            "value of {}: {value:?}",
            outputs
                .iter()
                .map(|o| o.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "Jacobian by {} ({} rows: outputs after {} steps; {} columns: inputs)",
            method.name(),
            rows.len(),
            scene.steps,
            col_labels.len()
        );
        if let Some(n) = reclassified {
            println!(
                "complementarity-aware gradient: {n} of {} steps reclassified separating",
                scene.steps
            );
        }
        let lw = row_labels.iter().map(|l| l.len()).max().unwrap_or(0);
        let widths: Vec<usize> = col_labels.iter().map(|c| c.len().max(13)).collect();
        let mut head = format!("{:lw$}", "");
        for (c, w) in col_labels.iter().zip(&widths) {
            head.push_str(&format!(" {c:>w$}"));
        }
        println!("{head}");
        for (label, r) in row_labels.iter().zip(&rows) {
            let mut line = format!("{label:lw$}");
            for (x, w) in r.iter().zip(&widths) {
                line.push_str(&format!(" {x:>w$.6e}"));
            }
            println!("{line}");
        }
        if let Some(r) = &checked {
            print_rollout_report(r);
        }
    }
    match &checked {
        Some(r) if !r.passed => {
            if json {
                eprintln!("error: the Jacobian disagrees with fd of the whole rollout");
            }
            ExitCode::from(EXIT_SIM)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// `grad --gradient complementarity_aware`: the requested outputs' rows
/// are the adjoint of the reverse pass (`diff::complementarity`), so the
/// final state is simulated first for the output map. Returns the values,
/// the output rows' gradient and the number of reclassified steps.
fn aware_grad(
    scene: &Scene,
    outputs: &[names::Output],
    inputs: &[dualsim::diff::Input],
    opts: &DiffOptions,
) -> Result<(Vec<f64>, DMat<f64>, usize), dualsim::diff::DiffError> {
    let last = dualsim::sim::rollout(&scene.world, &scene.initial, &scene.controls, scene.steps)?
        .last()
        .clone();
    let n = 2 * scene.world.model.nv;
    let (value, weights) =
        names::output_rows(&scene.world, &last, &DMat::<f64>::identity(n, n), outputs)?;
    let g = dualsim::diff::aware_rollout_gradient(
        &scene.world,
        &scene.initial,
        &scene.controls,
        scene.steps,
        inputs,
        &weights,
        opts,
    )?;
    Ok((value, g.gradient, g.reclassified_steps))
}

fn bench(path: &Path, json: bool) -> ExitCode {
    let scene = match load_scene(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // The state timed: the last one of the run from which a step has
    // active contacts (contact is what costs), else the initial state.
    let mut last_contact: Option<(usize, State<f64>, usize)> = None;
    let (_, result) = simulate_streaming(&scene, |k, x, out| {
        if out.stats.contacts > 0 {
            last_contact = Some((k, x.clone(), out.stats.contacts));
        }
    });
    if let Err(e) = result {
        eprintln!(
            "error: the scene's run fails at step {}: {}; bench times a step of the run",
            e.step, e.error
        );
        return ExitCode::from(EXIT_SIM);
    }
    let timed = last_contact.as_ref().map(|(k, _, _)| *k);
    let (k, x, contacts) = last_contact.unwrap_or_else(|| (0, scene.initial.clone(), 0));
    let w = &scene.world;
    let x = &x;
    let u = scene.controls.at(k);
    let what = match timed {
        Some(_) => format!(
            "the state after {k} of the scene's {} steps (t = {:.4} s; the last state of the run from which the step has contacts: {contacts} active)",
            scene.steps,
            k as f64 * w.dt
        ),
        None => format!(
            "the initial state (no step of the scene's {} has an active contact)",
            scene.steps
        ),
    };
    let nv = w.model.nv;
    let params: Vec<Param> = (0..nv)
        .map(Param::Q)
        .chain((0..nv).map(Param::V))
        .chain((0..nv).map(Param::U))
        .collect();
    /// The median time of `f`, or the message of its first failure.
    fn median<E: std::fmt::Display>(mut f: impl FnMut() -> Result<(), E>) -> Result<f64, String> {
        let mut times = Vec::new();
        let start = Instant::now();
        while times.len() < 5 || (start.elapsed().as_secs_f64() < 0.5 && times.len() < 1000) {
            let t = Instant::now();
            f().map_err(|e| e.to_string())?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
    let bar = progress(None, "bench: timing the step and its Jacobians");
    let step_s = match median(|| dualsim::sim::step(w, x, u).map(|_| ())) {
        Ok(t) => t,
        Err(e) => {
            bar.finish_and_clear();
            eprintln!("error: the step fails at {what}: {e}");
            return ExitCode::from(EXIT_SIM);
        }
    };
    // Every method is timed; one that fails is reported with its cause and
    // the others are kept (exit status 1 if any failed).
    let mut jac = serde_json::Map::new();
    let mut errors = serde_json::Map::new();
    for m in Method::STEP {
        let o = DiffOptions::default();
        match median(|| dualsim::diff::step_jacobian(w, x, u, &params, m, &o).map(|_| ())) {
            Ok(t) => jac.insert(m.name().to_string(), serde_json::json!(t)),
            Err(e) => errors.insert(m.name().to_string(), serde_json::json!(e)),
        };
    }
    bar.finish_and_clear();
    if json {
        let mut doc = serde_json::json!({
            "step_f64_seconds": step_s,
            "jacobian_seconds": jac,
            "timed_state": {"step": k, "t": k as f64 * w.dt, "contacts": contacts},
        });
        if !errors.is_empty() {
            doc["errors"] = serde_json::Value::Object(errors.clone());
        }
        println!("{doc}");
    } else {
        println!("timed at {what}");
        println!("f64 step: {:.3e} s", step_s);
        for (k, v) in &jac {
            let t = v.as_f64().unwrap_or(f64::NAN);
            println!(
                "{k:>9} jacobian (state + control): {t:.3e} s ({:.1}x the step)",
                t / step_s
            );
        }
    }
    for (m, e) in &errors {
        eprintln!(
            "error: {m} fails at this state: {}",
            e.as_str().unwrap_or_default()
        );
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SIM)
    }
}

fn view(path: &Path, out: Option<&Path>, steps: Option<usize>) -> ExitCode {
    let is_scene = path.extension().is_some_and(|e| e == "toml");
    if steps.is_some() && !is_scene {
        eprintln!("error: --steps applies to a scene file (.toml), not to a trajectory");
        return ExitCode::from(EXIT_INPUT);
    }
    let mut code = ExitCode::SUCCESS;
    let html = if is_scene {
        let mut scene = match load_scene(path) {
            Ok(s) => s,
            Err(code) => return code,
        };
        if let Some(n) = steps {
            if let Err(code) = override_steps(&mut scene, path, n) {
                return code;
            }
        }
        let (report, result, contacts) = simulate(&scene, true);
        print_summary(&report);
        let doc = match &result {
            Ok(traj) => trajectory_json_with(&scene, traj, Some(&contacts)),
            Err(e) => {
                // the viewer still shows the steps completed before the failure
                eprintln!("error: simulation {}", error_message(&report));
                code = ExitCode::from(EXIT_SIM);
                partial_trajectory_json_with(&scene, e, Some(&contacts))
            }
        };
        dualsim::viz::html_viewer_doc(&doc)
    } else {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return ExitCode::from(EXIT_INPUT);
            }
        };
        dualsim::viz::html_viewer(&text)
    };
    let html = match html {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let target = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| path.with_extension("html"));
    if let Err(e) = atomic_write(&target, html.as_bytes()) {
        eprintln!("error: {}: {e}", target.display());
        return ExitCode::from(EXIT_SIM);
    }
    eprintln!("wrote {}", target.display());
    code
}

/// Largest difference (m, rad, m/s, rad/s) between the trajectory's next
/// state and the forward step under the recovered controls that `dualsim
/// inverse` accepts.
const INVERSE_TOLERANCE: f64 = 1e-6;

/// `dualsim inverse`: the controls of every step of a trajectory, and
/// how well the forward step under them reproduces it (`max_residual`:
/// the largest difference of the next state, configuration and velocity).
fn inverse(path: &Path, traj: &Path, solver: Option<SolverKind>, json: bool) -> ExitCode {
    let scene = match load_scene_with(path, solver) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let text = match std::fs::read_to_string(traj) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", traj.display());
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let states = match dualsim::viz::trajectory_states(&scene, &text) {
        Ok(s) if s.len() >= 2 => s,
        Ok(_) => {
            eprintln!("error: {}: fewer than two frames", traj.display());
            return ExitCode::from(EXIT_INPUT);
        }
        Err(e) => {
            eprintln!("error: {}: {e}", traj.display());
            return ExitCode::from(EXIT_INPUT);
        }
    };
    let w = &scene.world;
    let mut controls: Vec<dualsim::math::DVec<f64>> = Vec::new();
    let mut max_residual: f64 = 0.0;
    let mut worst = 0;
    let mut error = None;
    for k in 0..states.len() - 1 {
        let u = match dualsim::sim::inverse_step(w, &states[k], &states[k + 1].v) {
            Ok(u) => u,
            Err(e) => {
                error = Some((
                    k,
                    e.to_string(),
                    matches!(
                        e,
                        dualsim::sim::SimError::Unsupported { .. }
                            | dualsim::sim::SimError::Solve(
                                dualsim::contact::SolveError::Unsupported { .. }
                                    | dualsim::contact::SolveError::UnsupportedPair { .. }
                            )
                    ),
                ));
                break;
            }
        };
        match dualsim::sim::step(w, &states[k], &u) {
            Ok(out) => {
                let dq = (&out.state.q - &states[k + 1].q).amax();
                let dv = (&out.state.v - &states[k + 1].v).amax();
                if dq.max(dv) > max_residual || !dq.max(dv).is_finite() {
                    worst = k;
                }
                max_residual = max_residual.max(dq).max(dv);
            }
            Err(e) => {
                error = Some((
                    k,
                    format!("forward step under the recovered controls: {e}"),
                    false,
                ));
                break;
            }
        }
        controls.push(u);
    }
    // Controls that do not reproduce the trajectory are an error, not a
    // result: the motion is not one the backend's model produces (or the
    // trajectory file was not written from this scene).
    if error.is_none() && !(max_residual <= INVERSE_TOLERANCE) {
        error = Some((
            worst,
            format!(
                "the forward step under the recovered controls misses the trajectory's next \
                 state by {max_residual:.3e} (above {INVERSE_TOLERANCE:e}): not a motion of this \
                 scene under `{}`",
                w.solver.name()
            ),
            false,
        ));
    }
    let mut named = serde_json::Map::new();
    for b in (0..w.model.bodies.len())
        .filter(|&i| w.model.is_lone_free_body(i))
        .map(|i| &w.model.bodies[i])
    {
        let rows: Vec<Vec<f64>> = controls
            .iter()
            .map(|u| u.rows(b.idx_v, 6).iter().copied().collect())
            .collect();
        named.insert(b.name.clone(), serde_json::json!(rows));
    }
    for r in &w.robots {
        let rows: Vec<Vec<f64>> = controls
            .iter()
            .map(|u| u.rows(r.idx_v, r.nv).iter().copied().collect())
            .collect();
        named.insert(r.name.clone(), serde_json::json!(rows));
    }
    let mut doc = serde_json::json!({
        "solver": w.solver.name(),
        "steps": controls.len(),
        "controls": named,
        "max_residual": max_residual,
    });
    if let Some((k, msg, _)) = &error {
        doc["error"] = serde_json::json!({"step": k, "message": msg});
    }
    if json {
        println!("{doc}");
    } else {
        println!(
            "inverse dynamics ({}): {} step(s), forward residual under the recovered controls {max_residual:.2e}",
            w.solver.name(),
            controls.len()
        );
        for (name, rows) in doc["controls"].as_object().into_iter().flatten() {
            if let Some(first) = rows.as_array().and_then(|r| r.first()) {
                println!("  {name}: step 0 control {first}");
            }
        }
    }
    if let Some((k, msg, refused)) = error {
        eprintln!("error: step {k}: {msg}");
        return ExitCode::from(if refused && k == 0 {
            EXIT_INPUT
        } else {
            EXIT_SIM
        });
    }
    ExitCode::SUCCESS
}

fn error_message(r: &RunReport) -> String {
    r.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}

/// The objective of a scene, or the exit code (2: no `[objective]`).
fn load_objective(path: &Path) -> Result<(Scene, dualsim::opt::Objective), ExitCode> {
    let scene = load_scene(path)?;
    match dualsim::opt::Objective::from_scene(&scene) {
        Ok(o) => Ok((scene, o)),
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            Err(ExitCode::from(EXIT_INPUT))
        }
    }
}

fn matrix_json(m: &DMat<f64>) -> Vec<Vec<f64>> {
    m.row_iter().map(|r| r.iter().copied().collect()).collect()
}

fn hessian(path: &Path, method: HessianMethod, check: bool, json: bool) -> ExitCode {
    let (_, obj) = match load_objective(path) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let delta = vec![0.0; obj.dim()];
    // `--check`: `lift` is the reference the others are compared with
    let methods: Vec<HessianMethod> = if check {
        vec![
            HessianMethod::Lift,
            HessianMethod::Adjoint,
            HessianMethod::Unrolled,
            HessianMethod::Fd,
        ]
    } else {
        vec![method]
    };
    let mut results = Vec::new();
    let bar = progress(Some(methods.len() as u64), "Hessian method(s)");
    for m in &methods {
        let t0 = Instant::now();
        let h = obj.hessian(&delta, *m);
        bar.inc(1);
        match h {
            Ok(d) => results.push((*m, d, t0.elapsed().as_secs_f64())),
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {}: {e}", m.name());
                return ExitCode::from(EXIT_SIM);
            }
        }
    }
    bar.finish_and_clear();
    let (m0, d0, wall0) = &results[0];
    let mut doc = serde_json::json!({
        "wrt": obj.wrt(),
        "cols": obj.labels(),
        "method": m0.name(),
        "value": d0.value,
        "gradient": d0.gradient.iter().copied().collect::<Vec<f64>>(),
        "hessian": matrix_json(&d0.hessian),
        "wall_seconds": wall0,
    });
    let mut passed = true;
    // as `check`: differences relative to max(1, max |H_lift|)
    let scale = d0.hessian.amax().max(1.0);
    let tols = [("adjoint", 1e-9), ("unrolled", 1e-7), ("fd", 1e-5)];
    if check {
        let mut diffs = serde_json::Map::new();
        let mut times = serde_json::Map::new();
        times.insert(m0.name().into(), serde_json::json!(wall0));
        for (m, d, wall) in &results[1..] {
            let diff = (&d.hessian - &d0.hessian).amax();
            let tol = tols
                .iter()
                .find(|(n, _)| *n == m.name())
                .map(|t| t.1)
                .unwrap_or(1e-7);
            passed &= diff / scale <= tol;
            diffs.insert(format!("lift_vs_{}", m.name()), serde_json::json!(diff));
            times.insert(m.name().into(), serde_json::json!(wall));
        }
        doc["methods"] = serde_json::json!(methods.iter().map(|m| m.name()).collect::<Vec<_>>());
        doc["max_abs_diff"] = serde_json::Value::Object(diffs);
        doc["scale"] = serde_json::json!(scale);
        doc["method_seconds"] = serde_json::Value::Object(times);
        doc["passed"] = serde_json::json!(passed);
    }
    if json {
        println!("{doc}");
    } else {
        println!(
            "objective value {:.12e} ({} by {})",
            d0.value,
            obj.wrt().join(", "),
            m0.name()
        );
        println!("gradient: {:?}", d0.gradient.as_slice());
        println!("hessian:");
        for r in d0.hessian.row_iter() {
            println!(
                "{}",
                r.iter()
                    .map(|x| format!("{x:>14.6e}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if check {
            for (m, _, _) in &results[1..] {
                let d = doc["max_abs_diff"][format!("lift_vs_{}", m.name())]
                    .as_f64()
                    .unwrap_or(f64::NAN);
                let tol = tols
                    .iter()
                    .find(|(n, _)| *n == m.name())
                    .map(|t| t.1)
                    .unwrap_or(1e-7);
                println!(
                    "lift vs {}: max |difference| {d:.3e} (absolute), {:.3e} relative to max(1, max |H_lift|) = {scale:.3e}; tolerance (relative) {tol:e}",
                    m.name(),
                    d / scale
                );
            }
            println!("{}", if passed { "passed" } else { "FAILED" });
        }
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SIM)
    }
}

#[allow(clippy::too_many_arguments)]
fn optimize(
    path: &Path,
    method: OptMethod,
    max_iterations: u64,
    target_cost: f64,
    gradient_tolerance: f64,
    max_seconds: Option<f64>,
    out: Option<&Path>,
    json: bool,
) -> ExitCode {
    use dualsim::opt::OptimizeOptions;
    if !(target_cost >= 0.0)
        || !(gradient_tolerance >= 0.0)
        || max_seconds.is_some_and(|m| !(m > 0.0))
    {
        eprintln!(
            "error: --target-cost and --gradient-tolerance must be >= 0 and --max-seconds > 0"
        );
        return ExitCode::from(EXIT_INPUT);
    }
    let (_, obj) = match load_objective(path) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let opts = OptimizeOptions {
        method,
        max_iterations,
        target_cost,
        gradient_tolerance,
        max_seconds,
        progress: true,
        ..Default::default()
    };
    let report = match dualsim::opt::optimize(&obj, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            // a method that cannot take this objective is a usage error
            let input = matches!(e, dualsim::opt::OptError::Unsupported { .. });
            return ExitCode::from(if input { EXIT_INPUT } else { EXIT_SIM });
        }
    };
    let mut code = ExitCode::SUCCESS;
    if let Some(dir) = out {
        let written = (|| -> Result<(), String> {
            let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            let text = dualsim::opt::optimized_scene_toml(&src, &obj, &report.delta)
                .map_err(|e| e.to_string())?;
            let file = dir.join("scene.toml");
            let optimized =
                scene::parse(&text, &file.display().to_string()).map_err(|e| e.to_string())?;
            let traj = dualsim::sim::rollout(
                &optimized.world,
                &optimized.initial,
                &optimized.controls,
                optimized.steps,
            )
            .map_err(|e| e.error.to_string())?;
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            atomic_write(&file, text.as_bytes()).map_err(|e| e.to_string())?;
            write_json(dir, "trajectory.json", &trajectory_json(&optimized, &traj))
                .map_err(|e| e.to_string())
        })();
        if let Err(e) = written {
            eprintln!(
                "error: writing the optimized scene into {}: {e}",
                dir.display()
            );
            code = ExitCode::from(EXIT_SIM);
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("report serializes")
        );
    } else {
        println!(
            "{}: cost {:.3e} -> {:.3e} in {} iterations, {:.3} s, |grad| {:.3e}, {} ({})",
            report.method,
            report.cost.first().copied().unwrap_or(f64::NAN),
            report.cost.last().copied().unwrap_or(f64::NAN),
            report.iterations,
            report.wall_seconds,
            report.gradient_norm,
            if report.converged {
                "converged"
            } else {
                "not converged"
            },
            report.termination
        );
        for (k, v) in &report.solution {
            println!("{k}: {v}");
        }
    }
    if let Some(e) = &report.error {
        eprintln!(
            "error: the optimization stopped: {e}; the best iterate (cost {:.6e}) is reported",
            report.cost.last().copied().unwrap_or(f64::NAN)
        );
        return ExitCode::from(EXIT_SIM);
    }
    code
}
