//! The optimization examples at a reduced size (the same library code as
//! `examples/opt_box_push.rs`, `examples/opt_arm7.rs` and `examples/opt_sysid.rs`), and an
//! optimization that fails part way keeping its best iterate.

use std::path::PathBuf;
use std::process::Command;

use dualsim::opt::compare::{compare, convergence_svg, iterations_to, table};
use dualsim::opt::sysid::identify;
use dualsim::opt::{Objective, OptMethod, OptimizeOptions};
use dualsim::scene;

fn scene_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes")
        .join(name)
}

/// Box push, 4 steps (24 variables): Newton and Gauss–Newton reach
/// 1e-10 (L-BFGS's Moré–Thuente line search at this size tries a push that
/// spins the box too fast for a step and stops there with its best
/// iterate, better than the start); the plot has both panels' curves for every method.
#[test]
fn box_push_reduced() {
    let mut s = scene::load(&scene_path("opt_box_push.toml")).unwrap();
    s.steps = 4;
    let obj = Objective::from_scene(&s).unwrap();
    let base = OptimizeOptions {
        target_cost: 1e-10,
        max_iterations: 100,
        ..Default::default()
    };
    let reports = compare(&obj, &OptMethod::ALL, &base).unwrap();
    assert_eq!(reports.len(), 6);
    let lbfgs = &reports[2];
    assert!(
        lbfgs.converged || (lbfgs.error.is_some() && lbfgs.cost.last().unwrap() < &lbfgs.cost[0]),
        "{lbfgs:?}"
    );
    for r in [&reports[0], &reports[1], &reports[4]] {
        assert!(r.converged, "{} did not converge: {:?}", r.method, r.cost);
        assert!(iterations_to(r, 1e-10).is_some(), "{}", r.method);
        let y = obj.outputs(&r.delta).unwrap();
        assert!(
            (y[0] - 0.2).abs() <= 2e-5 && (y[1] - 0.05).abs() <= 2e-5,
            "{}: {y:?}",
            r.method
        );
    }
    // CEM's budget is newton's wall time (so how far it gets depends on the
    // machine: only what holds anywhere is checked)
    assert_eq!(reports[4].method, "ddp");
    let cem = &reports[5];
    assert_eq!(cem.method, "cem");
    assert!(cem.cost.windows(2).all(|w| w[1] <= w[0]) && cem.cost.len() >= 2);
    // gradient descent decreases the cost but is far from 1e-10 in 100 iterations
    let gd = &reports[3];
    assert!(gd.cost.last().unwrap() < &gd.cost[0] && iterations_to(gd, 1e-10).is_none());
    let svg = convergence_svg(&reports, "test");
    assert_eq!(svg.matches("<polyline").count(), 12);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let t = table(&reports, 1e-10);
    assert_eq!(t.lines().count(), 2 + 6);
}

/// The 7-dof arm lying on the ground, 2 steps (14 joint torques): Newton,
/// Gauss–Newton and L-BFGS reach 1e-10 and put the end effector on its
/// target (cost ≤ 1e-10 bounds each coordinate's error by 1.5e-5 m).
#[test]
fn arm7_reduced() {
    let mut s = scene::load(&scene_path("opt_arm7.toml")).unwrap();
    s.steps = 2;
    let obj = Objective::from_scene(&s).unwrap();
    assert_eq!(obj.dim(), 14);
    let base = OptimizeOptions {
        target_cost: 1e-10,
        max_iterations: 60,
        ..Default::default()
    };
    let methods = [OptMethod::Newton, OptMethod::GaussNewton, OptMethod::Lbfgs];
    let reports = compare(&obj, &methods, &base).unwrap();
    let target = [-0.1245, -0.2603, 0.0868];
    let y0 = obj.outputs(&[0.0; 14]).unwrap();
    let start: f64 = (0..3)
        .map(|i| (y0[i] - target[i]).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(start > 0.01, "the target is {start} m away at the start");
    for r in &reports {
        assert!(r.converged, "{} did not converge: {:?}", r.method, r.cost);
        let y = obj.outputs(&r.delta).unwrap();
        for i in 0..3 {
            assert!((y[i] - target[i]).abs() <= 1.5e-5, "{}: {y:?}", r.method);
        }
    }
    assert_eq!(
        convergence_svg(&reports, "arm7")
            .matches("<polyline")
            .count(),
        6
    );
}

/// System identification, 40 steps (the box lands and slides): mass,
/// friction and inertia to 1e-8 relative from noise-free samples; with
/// noise σ = 1e-4 every error within 3 Cramér–Rao standard deviations.
#[test]
fn sysid_reduced() {
    let mut s = scene::load(&scene_path("opt_sysid.toml")).unwrap();
    s.steps = 40;
    let factors = [1.3, 0.8, 1.25, 0.8, 1.2];
    let opts = OptimizeOptions {
        target_cost: 1e-26,
        gradient_tolerance: 1e-14,
        max_iterations: 40,
        ..Default::default()
    };
    let id = identify(&s, 5, 0.0, 7, &factors, &opts).unwrap();
    assert_eq!(
        id.labels,
        [
            "box.mass",
            "box.friction",
            "box.inertia.x",
            "box.inertia.y",
            "box.inertia.z"
        ]
    );
    assert_eq!(id.truth, [1.2, 0.4, 0.005, 0.01, 0.013]);
    for i in 0..5 {
        assert!((id.guess[i] / id.truth[i] - factors[i]).abs() < 1e-12);
        assert!(
            id.relative_error[i] <= 1e-8,
            "{}: relative error {:e}",
            id.labels[i],
            id.relative_error[i]
        );
    }
    let noisy = identify(&s, 5, 1e-4, 7, &factors, &opts).unwrap();
    for i in 0..5 {
        let z = noisy.z_score[i];
        assert!(
            z.is_finite() && z.abs() <= 3.0,
            "{}: error {:e} is {z} Cramér-Rao σ",
            noisy.labels[i],
            noisy.estimate[i] - noisy.truth[i]
        );
        // the noise does move the estimate
        assert!(noisy.relative_error[i] > 1e-9, "{}", noisy.labels[i]);
    }
}

/// Pushing a box at rest with L-BFGS from zero forces: after some
/// iterations the search direction leads to forces that spin the box
/// beyond what a step can integrate, right where the cost still
/// decreases steeply, so no step meets the Wolfe conditions; the run stops
/// with that message, exit status 1, and reports the best iterate, whose
/// cost is the last one recorded.
#[test]
fn a_failing_optimization_keeps_its_best_iterate() {
    let src = std::fs::read_to_string(scene_path("opt_box_push.toml"))
        .unwrap()
        .replace("steps = 8", "steps = 10")
        .replace("rho = 1e-4", "rho = 1e-6")
        .replace(
            "values = [6.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
            "values = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]",
        )
        .replace(
            "of = [\"box.position\"]",
            "of = [\"box.position\", \"box.velocity\"]",
        )
        .replace(
            "target = [0.2, 0.05, 0.1]",
            "target = [0.3, 0.1, 0.1, 0.0, 0.0, 0.0]",
        )
        .replace(
            "weights = [1.0, 1.0, 0.0]",
            "weights = [1.0, 1.0, 0.0, 0.1, 0.1, 0.0]",
        );
    let dir = std::env::temp_dir().join(format!("dualsim-opt-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("push_from_rest.toml");
    std::fs::write(&file, &src).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .args([
            "optimize",
            file.to_str().unwrap(),
            "--method",
            "lbfgs",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the optimization stopped") && err.contains("best iterate"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("line search") && e.contains("failed to simulate"),
        "{v}"
    );
    assert_eq!(v["converged"], false);
    // the reported solution is the best iterate: its cost is the last one recorded
    let costs: Vec<f64> = v["cost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let best = *costs.last().unwrap();
    assert!(best < costs[0], "{costs:?}");
    let s = scene::parse(&src, file.to_str().unwrap()).unwrap();
    let obj = Objective::from_scene(&s).unwrap();
    let u: Vec<f64> = v["solution"]["box.control"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    // the scene's control is zero, so the offsets are the controls
    let c = obj.value(&u).unwrap();
    assert!(
        (c - best).abs() <= 1e-12 * best.max(1.0),
        "cost at the solution {c} vs reported {best}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
