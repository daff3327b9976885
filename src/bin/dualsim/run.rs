//! `dualsim run SCENE`: the simulation of a scene file, its summary and
//! its trajectory file; the simulation loops the other commands share.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use dualsim::contact::SolverKind;
use dualsim::scene::Scene;
use dualsim::sim::{RolloutError, State, StepOutput, Trajectory, rollout_inspect};
use dualsim::viz::{RunReport, StepContacts, TrajectoryWriter, run_report};

use crate::{EXIT_INPUT, EXIT_SIM, load_scene_with, progress};

pub(crate) fn run(
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
pub(crate) fn simulate(
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
pub(crate) fn simulate_streaming(
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

/// `--steps N`: refused (exit 2, located at the scene's first `per_step`)
/// when the scene's `per_step` controls have fewer than N rows — the steps
/// past them would silently repeat the last row.
pub(crate) fn override_steps(scene: &mut Scene, path: &Path, n: usize) -> Result<(), ExitCode> {
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

pub(crate) fn print_summary(r: &RunReport) {
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

pub(crate) fn error_message(r: &RunReport) -> String {
    r.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}
