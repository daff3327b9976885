//! `dualsim optimize SCENE`: minimization of the scene's `[objective]`,
//! optionally writing the optimized scene and its trajectory.

use std::path::Path;
use std::process::ExitCode;

use dualsim::opt::OptMethod;
use dualsim::scene;
use dualsim::viz::{atomic_write, trajectory_json};

use crate::{EXIT_INPUT, EXIT_SIM, load_objective, write_json};

#[allow(clippy::too_many_arguments)]
pub(crate) fn optimize(
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
