//! `dualsim hessian SCENE`: value, gradient and Hessian of the scene's
//! `[objective]`, by one method or the methods compared (`--check`).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use dualsim::math::DMat;
use dualsim::opt::HessianMethod;

use crate::{EXIT_SIM, load_objective, progress};

fn matrix_json(m: &DMat<f64>) -> Vec<Vec<f64>> {
    m.row_iter().map(|r| r.iter().copied().collect()).collect()
}

pub(crate) fn hessian(path: &Path, method: HessianMethod, check: bool, json: bool) -> ExitCode {
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
