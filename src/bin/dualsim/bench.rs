//! `dualsim bench SCENE`: the time of the f64 step and of each derivative
//! method's one-step Jacobian, at a state of the scene's run.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use dualsim::diff::{DiffOptions, Method, Param};
use dualsim::sim::State;

use crate::run::simulate_streaming;
use crate::{EXIT_SIM, load_scene, progress};

pub(crate) fn bench(path: &Path, json: bool) -> ExitCode {
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
