//! `dualsim view TRAJECTORY|SCENE`: a self-contained 3-D HTML viewer of a
//! trajectory file, or of a scene file simulated first.

use std::path::Path;
use std::process::ExitCode;

use dualsim::viz::{atomic_write, partial_trajectory_json_with, trajectory_json_with};

use crate::run::{error_message, override_steps, print_summary, simulate};
use crate::{EXIT_INPUT, EXIT_SIM, load_scene};

pub(crate) fn view(path: &Path, out: Option<&Path>, steps: Option<usize>) -> ExitCode {
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
