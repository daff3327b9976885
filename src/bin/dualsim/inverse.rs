//! `dualsim inverse SCENE TRAJECTORY`: inverse dynamics, the controls of
//! each step of a trajectory under an invertible contact model.

use std::path::Path;
use std::process::ExitCode;

use dualsim::contact::SolverKind;

use crate::{EXIT_INPUT, EXIT_SIM, load_scene_with};

/// Largest difference (m, rad, m/s, rad/s) between the trajectory's next
/// state and the forward step under the recovered controls that `dualsim
/// inverse` accepts.
const INVERSE_TOLERANCE: f64 = 1e-6;

/// `dualsim inverse`: the controls of every step of a trajectory, and
/// how well the forward step under them reproduces it (`max_residual`:
/// the largest difference of the next state, configuration and velocity).
pub(crate) fn inverse(
    path: &Path,
    traj: &Path,
    solver: Option<SolverKind>,
    json: bool,
) -> ExitCode {
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
