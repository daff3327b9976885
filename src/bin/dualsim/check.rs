//! `dualsim check SCENE`: the derivative methods (ift, lift, unrolled, fd)
//! compared along a scene's trajectory, and the text form of the
//! whole-rollout comparison it shares with `grad --check`.

use std::path::Path;
use std::process::ExitCode;

use dualsim::contact::SolverKind;
use dualsim::diff::{CheckOptions, CheckReport, CheckStatus, DiffOptions, Partials};

use crate::{EXIT_INPUT, EXIT_NOTHING_CHECKED, EXIT_SIM, load_scene_with, progress};

#[allow(clippy::too_many_arguments)]
pub(crate) fn check(
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
        print_check(&report, &opts);
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

/// The text form of `check`'s report (standard output).
fn print_check(report: &CheckReport, opts: &CheckOptions) {
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

/// The text form of the whole-rollout comparison of `check` and `grad --check`.
pub(crate) fn print_rollout_report(r: &dualsim::diff::RolloutReport) {
    println!(
        "whole rollout ({} steps): the Jacobian grad returns ({}) against fd of the rollout, per entry (|J - fd| <= {:e} max(|J_ij|, sqrt(row max * column max)) + round-off)",
        r.steps,
        if r.method.is_empty() {
            "given"
        } else {
            &r.method
        },
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
