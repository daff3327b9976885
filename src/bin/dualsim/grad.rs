//! `dualsim grad SCENE --of ... --wrt ...`: the Jacobian of final-state
//! quantities with respect to inputs (optionally checked against finite
//! differences of the whole rollout).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use dualsim::diff::{DiffOptions, Gradient, Method, Partials, names};
use dualsim::math::DMat;
use dualsim::scene::Scene;

use crate::check::print_rollout_report;
use crate::{EXIT_INPUT, EXIT_SIM, load_scene, progress};

#[allow(clippy::too_many_arguments)]
pub(crate) fn grad(
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
        eprintln!(
            "error: --check compares the exact Jacobian with fd: the complementarity-aware gradient is not a derivative of the rollout"
        );
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
        exact_grad(&scene, &outputs, &groups, &inputs, method, &opts, check)
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
        print_matrix(&row_labels, &col_labels, &rows);
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

/// `grad --gradient exact`: the rows of the requested outputs of the
/// rollout's Jacobian (`method`), and with `check` its comparison with fd
/// of the whole rollout.
fn exact_grad(
    scene: &Scene,
    outputs: &[names::Output],
    groups: &[(String, Vec<dualsim::diff::Input>)],
    inputs: &[dualsim::diff::Input],
    method: Method,
    opts: &DiffOptions,
    check: bool,
) -> Result<(Vec<f64>, DMat<f64>, Option<dualsim::diff::RolloutReport>), dualsim::diff::DiffError> {
    dualsim::diff::rollout_jacobian(
        &scene.world,
        &scene.initial,
        &scene.controls,
        scene.steps,
        inputs,
        method,
        opts,
    )
    .and_then(|rj| {
        let checked = if check {
            let labels = names::input_labels(&scene.world, groups);
            Some(dualsim::diff::compare_rollout_jacobian(
                &scene.world,
                &scene.initial,
                &scene.controls,
                scene.steps,
                inputs,
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
        names::output_rows(&scene.world, &rj.last, &rj.jacobian, outputs)
            .map(|(v, j)| (v, j, checked))
    })
}

/// The Jacobian's rows (labelled) under its column labels (standard output).
fn print_matrix(row_labels: &[String], col_labels: &[String], rows: &[Vec<f64>]) {
    let lw = row_labels.iter().map(|l| l.len()).max().unwrap_or(0);
    let widths: Vec<usize> = col_labels.iter().map(|c| c.len().max(13)).collect();
    let mut head = format!("{:lw$}", "");
    for (c, w) in col_labels.iter().zip(&widths) {
        head.push_str(&format!(" {c:>w$}"));
    }
    println!("{head}");
    for (label, r) in row_labels.iter().zip(rows) {
        let mut line = format!("{label:lw$}");
        for (x, w) in r.iter().zip(&widths) {
            line.push_str(&format!(" {x:>w$.6e}"));
        }
        println!("{line}");
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
