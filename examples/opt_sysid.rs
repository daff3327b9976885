//! System identification by Gauss–Newton with exact (`ift`) Jacobians: a
//! tossed box (`examples/scenes/opt_sysid.toml`) is sampled every 5 steps;
//! starting from mass ×1.3, friction ×0.8 and inertia ×(1.25, 0.8, 1.2),
//! its mass, friction and principal moments are recovered from noise-free
//! samples, then from samples with Gaussian noise (σ = 1e-4), where the
//! errors are compared with the Cramér–Rao standard deviations. Writes
//! the convergence plot of both fits.
//!
//! ```text
//! cargo run --release --features examples --example opt_sysid               # 60 steps
//! cargo run --release --features examples --example opt_sysid -- --steps 40 # reduced
//! ```

use std::path::PathBuf;

use dualsim::opt::OptimizeOptions;
use dualsim::opt::compare::convergence_svg;
use dualsim::opt::sysid::identify;

fn main() {
    let mut steps: Option<usize> = None;
    let mut out = PathBuf::from("dualsim-out/opt_sysid");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--steps" => steps = args.next().and_then(|s| s.parse().ok()),
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            other => {
                eprintln!("unknown argument {other} (expected --steps N, --out DIR)");
                std::process::exit(2);
            }
        }
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/opt_sysid.toml");
    let mut scene = dualsim::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
    if let Some(n) = steps {
        scene.steps = n;
    }
    let factors = [1.3, 0.8, 1.25, 0.8, 1.2];
    let opts = OptimizeOptions {
        target_cost: 1e-26,
        gradient_tolerance: 1e-14,
        max_iterations: 60,
        ..Default::default()
    };
    let mut reports = Vec::new();
    std::fs::create_dir_all(&out).unwrap();
    let mut md = String::new();
    for (noise, name) in [(0.0, "noise-free"), (1e-4, "noise 1e-4")] {
        let id = identify(&scene, 5, noise, 7, &factors, &opts).unwrap_or_else(|e| panic!("{e}"));
        md += &format!(
            "{name}: Gauss-Newton, {} iterations, cost {:.3e}, {:.3} s\n\n| parameter | truth | guess | estimate | relative error | Cramér-Rao σ | error / σ |\n|---|---|---|---|---|---|---|\n",
            id.report.iterations,
            id.report.cost.last().unwrap(),
            id.report.wall_seconds
        );
        for i in 0..id.labels.len() {
            md += &format!(
                "| {} | {} | {:.6} | {:.12} | {:.2e} | {:.2e} | {:.2} |\n",
                id.labels[i],
                id.truth[i],
                id.guess[i],
                id.estimate[i],
                id.relative_error[i],
                id.crb_sigma[i],
                id.z_score[i]
            );
        }
        md += "\n";
        let mut r = id.report.clone();
        r.method = format!("gauss_newton, {name}");
        reports.push(r);
    }
    println!("{md}");
    dualsim::viz::atomic_write(&out.join("results.md"), md.as_bytes()).unwrap();
    let svg = convergence_svg(
        &reports,
        &format!("system identification, {} steps", scene.steps),
    );
    dualsim::viz::atomic_write(&out.join("convergence.svg"), svg.as_bytes()).unwrap();
    eprintln!("wrote {}/convergence.svg, results.md", out.display());
}
