//! Silico §VI-B (Le Cleac'h et al. 2023): robustness of `single_level`
//! against `bilevel` on the polytope drop, and momentum error on stacked
//! boxes. Scenes and measures: `dualsim::experiments::silico`.
//!
//! ```text
//! cargo run --release --features examples --example silico_robustness -- [--runs N] [--backend single_level|bilevel|both]
//!     [--experiment drop|stack|all] [--drop planar|chamfered|both] [--stack planar|towers|both]
//!     [--threads T] [--hz RATE] [--settle STEPS] [--continue-at-cap]
//!     [--restart-after K] [--restart-step A] [--continuation N]
//!     [--friction-continuation N] [--friction-continuation-rho R] [--failures]
//! ```
//!
//! `--failures` lists every failed drop run (rate, ρ, seed), the step that
//! failed, the solver's error and the state before that step (height,
//! speed, spin, the lowest vertex above the ground), to tell iteration-cap
//! stalls from singular systems and other errors, and the same step
//! solved again with a 10× larger iteration cap (a slow solve converges
//! there, a stalled one does not).
//!
//! `--hz RATE` runs the drop at that one rate only; `--settle STEPS` first
//! settles each tower quasi-statically in the backend's own model
//! (`experiment::settle`) before measuring its momentum.
//!
//! Drop: 6 time steps (1/10 … 1/100 s) × 6 relaxations ρ (1e-3 … 1e-10) ×
//! N seeds (default 100: 3600 runs per backend), 1.5 s each, iteration cap
//! 30. Stack: 10 towers × 6 time steps × 6 ρ, 1 s each (cap 30).

use dualsim::contact::SolverKind;
use dualsim::experiments::silico::{
    Drop, DropRun, Stack, StackRun, momentum_error, polytope_vertices, run_drop, settle,
};
use dualsim::geometry::Shape;
use std::time::Instant;

const HZ: [f64; 6] = [10.0, 20.0, 30.0, 50.0, 75.0, 100.0];
const RHO: [f64; 6] = [1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10];
const CAP: usize = 30;

fn parallel<T: Send>(jobs: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = std::sync::Mutex::new((0..jobs).map(|_| None).collect::<Vec<Option<T>>>());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= jobs {
                        break;
                    }
                    let r = f(k);
                    out.lock().unwrap()[k] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|x| x.unwrap())
        .collect()
}

/// `single_level` restart tuning from the command line (defaults: the library's).
#[derive(Clone, Copy)]
struct Tuning {
    restart_after: Option<usize>,
    restart_step: Option<f64>,
    continuation: Option<usize>,
    friction_continuation: Option<usize>,
    friction_continuation_rho: Option<f64>,
}

impl Tuning {
    fn apply(self, w: &mut dualsim::sim::World<f64>) {
        if let Some(k) = self.restart_after {
            w.backends.single_level.restart_after = k;
            w.backends.bilevel.restart_after = k;
        }
        if let Some(n) = self.continuation {
            w.backends.single_level.continuation_iterations = n;
        }
        if let Some(n) = self.friction_continuation {
            w.backends.single_level.friction_continuation_iterations = n;
        }
        if let Some(r) = self.friction_continuation_rho {
            w.backends.single_level.friction_continuation_rho = r;
        }
        if let Some(a) = self.restart_step {
            w.backends.single_level.restart_step = a;
            w.backends.bilevel.restart_step = a;
        }
    }
}

fn drop_table(
    kind: Drop,
    solver: SolverKind,
    runs: usize,
    threads: usize,
    only_hz: Option<f64>,
    tuning: Tuning,
    failures: bool,
) {
    let t0 = Instant::now();
    let cells: Vec<(f64, f64)> = HZ
        .iter()
        .filter(|&&hz| only_hz.is_none_or(|o| o == hz))
        .flat_map(|&hz| RHO.iter().map(move |&r| (hz, r)))
        .collect();
    let jobs = cells.len() * runs;
    let res: Vec<DropRun> = parallel(jobs, threads, |k| {
        let (hz, rho) = cells[k / runs];
        let mut w = kind.world(solver, 1.0 / hz, rho, CAP);
        tuning.apply(&mut w);
        run_drop(kind, &w, (k % runs) as u64, 1.5)
    });
    println!(
        "\n### `{}`: {} polytope drop, {} runs ({} s)\n",
        solver.name(),
        kind.name(),
        jobs,
        t0.elapsed().as_secs()
    );
    println!(
        "| rate (Hz) | runs | failures | failure % | mean iterations / step | mean penetration (m) | max penetration (m) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let row = |label: String, rs: &[&DropRun]| {
        let n = rs.len();
        let fails = rs.iter().filter(|r| r.failed).count();
        let steps: usize = rs.iter().map(|r| r.steps).sum();
        let iters: usize = rs.iter().map(|r| r.iterations).sum();
        let mean_pen = rs.iter().map(|r| r.mean_penetration).sum::<f64>() / n as f64;
        let max_pen = rs.iter().map(|r| r.max_penetration).fold(0.0, f64::max);
        println!(
            "| {label} | {n} | {fails} | {:.2} | {:.2} | {:.2e} | {:.2e} |",
            100.0 * fails as f64 / n as f64,
            iters as f64 / steps.max(1) as f64,
            mean_pen,
            max_pen
        );
    };
    for &hz in &HZ {
        let rs: Vec<&DropRun> = res
            .iter()
            .enumerate()
            .filter(|(k, _)| cells[k / runs].0 == hz)
            .map(|x| x.1)
            .collect();
        if rs.is_empty() {
            continue;
        }
        row(format!("{hz}"), &rs);
    }
    let all: Vec<&DropRun> = res.iter().collect();
    row("all".into(), &all);
    let cont: usize = res.iter().map(|r| r.continued).sum();
    if cont > 0 {
        let ci: usize = res.iter().map(|r| r.continued_iterations).sum();
        let cmax = res
            .iter()
            .filter(|r| r.continued > 0)
            .map(|r| r.continued_iterations / r.continued)
            .max()
            .unwrap_or(0);
        let steps: usize = res.iter().map(|r| r.steps).sum();
        let iters: usize = res.iter().map(|r| r.iterations).sum();
        println!(
            "\nsteps solved by the continuations (in ρ, then in friction): {cont} in {} runs, {:.1} iterations each on average (failed attempts included; largest run mean {cmax}); mean iterations / step without them: {:.2}",
            res.iter().filter(|r| r.continued > 0).count(),
            ci as f64 / cont as f64,
            (iters - ci) as f64 / (steps - cont).max(1) as f64
        );
    }
    if failures {
        println!("\nfailed runs:\n");
        println!(
            "| rate (Hz) | ρ | seed | step | error | height (m) | speed (m/s) | spin (rad/s) | lowest vertex (m) | at a 10× cap |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for (k, r) in res.iter().enumerate() {
            if r.failed {
                let (hz, rho) = cells[k / runs];
                let mut w = kind.world(solver, 1.0 / hz, rho, CAP);
                tuning.apply(&mut w);
                describe_failure(kind, &w, hz, rho, (k % runs) as u64);
            }
        }
    }
    println!("\nper ρ (all rates):\n");
    println!(
        "| ρ | runs | failures | failure % | mean iterations / step | mean penetration (m) | max penetration (m) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &rho in &RHO {
        let rs: Vec<&DropRun> = res
            .iter()
            .enumerate()
            .filter(|(k, _)| cells[k / runs].1 == rho)
            .map(|x| x.1)
            .collect();
        row(format!("{rho:e}"), &rs);
    }
}

/// Re-runs a failed drop and prints its failing step (`--failures`).
fn describe_failure(kind: Drop, w: &dualsim::sim::World<f64>, hz: f64, rho: f64, seed: u64) {
    let Shape::Polytope {
        normals, offsets, ..
    } = kind.shape()
    else {
        unreachable!("drop shapes are polytopes")
    };
    let verts = polytope_vertices(&normals, &offsets);
    let mut x = kind.initial(w, seed);
    let u = w.zero_control();
    for k in 0..(1.5 * hz).round() as usize {
        match dualsim::sim::step(w, &x, &u) {
            Ok(o) => x = o.state,
            Err(e) => {
                let rot = dualsim::math::Quat::new(x.q[3], x.q[4], x.q[5], x.q[6]);
                let low = verts
                    .iter()
                    .map(|v| dualsim::math::so3::rotate(&rot, v).z + x.q[2])
                    .fold(f64::INFINITY, f64::min);
                let n3 = |o: usize| (0..3).map(|d| x.v[o + d].powi(2)).sum::<f64>().sqrt();
                // The same step with a 10× larger cap: a slow solve
                // converges, a stalled one does not.
                let mut wide = w.clone();
                wide.params.max_iterations = 10 * w.params.max_iterations;
                let wider = match dualsim::sim::step(&wide, &x, &u) {
                    Ok(o) => format!("converges in {}", o.stats.iterations),
                    Err(e) => format!("fails: {e}"),
                };
                println!(
                    "| {hz} | {rho:e} | {seed} | {k} | {e} | {:.4} | {:.3} | {:.3} | {low:.2e} | {wider} |",
                    x.q[2],
                    n3(0),
                    n3(3)
                );
                return;
            }
        }
    }
    println!("| {hz} | {rho:e} | {seed} | – | (did not fail when re-run) | | | | | |");
}

fn stack_table(
    kind: Stack,
    solvers: &[SolverKind],
    threads: usize,
    settle_steps: usize,
    continue_at_cap: bool,
) {
    let how = if continue_at_cap {
        ", steps at the cap go on with their last iterate"
    } else {
        ""
    };
    println!(
        "\n### Stacking ({}): two boxes, 10 towers × 6 rates × 6 ρ, 1 s{how}\n",
        kind.name()
    );
    println!(
        "| backend | runs | failed runs | runs with capped steps | mean momentum error (kg m/s) | max run error |"
    );
    println!("|---|---|---|---|---|---|");
    let mut means = Vec::new();
    let mut cells: Vec<Vec<Option<f64>>> = Vec::new();
    for &solver in solvers {
        let jobs = 10 * HZ.len() * RHO.len();
        let runs: Vec<Option<StackRun>> = parallel(jobs, threads, |k| {
            let way = k % 10;
            let hz = HZ[(k / 10) % HZ.len()];
            let rho = RHO[k / (10 * HZ.len())];
            let (mut w, x0) = kind.world(way, solver, 1.0 / hz, rho, CAP);
            w.params.accept_at_cap = continue_at_cap;
            if settle_steps > 0 {
                let x1 = settle(&w, &x0, settle_steps)?;
                momentum_error(&w, &x1, 1.0)
            } else {
                momentum_error(&w, &x0, 1.0)
            }
        });
        let capped = runs.iter().flatten().filter(|r| r.capped_steps > 0).count();
        let res: Vec<Option<f64>> = runs.iter().map(|r| r.map(|r| r.error)).collect();
        let ok: Vec<f64> = res.iter().flatten().copied().collect();
        let mean = ok.iter().sum::<f64>() / ok.len().max(1) as f64;
        let max = ok.iter().copied().fold(0.0, f64::max);
        if ok.is_empty() {
            println!(
                "| {} | {} | {} | {capped} | – | – |",
                solver.name(),
                jobs,
                jobs
            );
        } else {
            println!(
                "| {} | {} | {} | {capped} | {:.3e} | {:.3e} |",
                solver.name(),
                jobs,
                jobs - ok.len(),
                mean,
                max
            );
        }
        means.push(mean);
        cells.push(res);
    }
    // Breakdown: mean error (failed runs left out) per rate and per ρ.
    let cell_mean = |res: &[Option<f64>], keep: &dyn Fn(usize) -> bool| {
        let v: Vec<f64> = res
            .iter()
            .enumerate()
            .filter(|(k, _)| keep(*k))
            .filter_map(|(_, e)| *e)
            .collect();
        let failed = res
            .iter()
            .enumerate()
            .filter(|(k, e)| keep(*k) && e.is_none())
            .count();
        if v.is_empty() {
            format!("– ({failed} failed)")
        } else {
            format!(
                "{:.2e} ({failed} failed)",
                v.iter().sum::<f64>() / v.len() as f64
            )
        }
    };
    let names: Vec<&str> = solvers.iter().map(|s| s.name()).collect();
    println!("\nper rate (mean momentum error, failed runs left out):\n");
    println!("| rate (Hz) | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    for (i, hz) in HZ.iter().enumerate() {
        let row: Vec<String> = cells
            .iter()
            .map(|res| cell_mean(res, &|k| (k / 10) % HZ.len() == i))
            .collect();
        println!("| {hz} | {} |", row.join(" | "));
    }
    println!("\nper ρ:\n");
    println!("| ρ | {} |", names.join(" | "));
    println!("|---|{}", "---|".repeat(names.len()));
    for (i, rho) in RHO.iter().enumerate() {
        let row: Vec<String> = cells
            .iter()
            .map(|res| cell_mean(res, &|k| k / (10 * HZ.len()) == i))
            .collect();
        println!("| {rho:e} | {} |", row.join(" | "));
    }
    if means.len() == 2 && means.iter().all(|m| *m > 0.0) {
        println!(
            "\nratio bilevel / single_level = {:.1}",
            means[1] / means[0]
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let runs: usize = opt("--runs")
        .map(|s| s.parse().expect("--runs N"))
        .unwrap_or(100);
    let threads: usize = opt("--threads")
        .map(|s| s.parse().expect("--threads T"))
        .unwrap_or(1);
    let backend = opt("--backend").unwrap_or_else(|| "both".into());
    let only_hz: Option<f64> = opt("--hz").map(|s| s.parse().expect("--hz RATE"));
    let continue_at_cap = args.iter().any(|a| a == "--continue-at-cap");
    let failures = args.iter().any(|a| a == "--failures");
    let settle_steps: usize = opt("--settle")
        .map(|s| s.parse().expect("--settle STEPS"))
        .unwrap_or(0);
    let experiment = opt("--experiment").unwrap_or_else(|| "all".into());
    let tuning = Tuning {
        restart_after: opt("--restart-after").map(|s| s.parse().expect("--restart-after K")),
        continuation: opt("--continuation").map(|s| s.parse().expect("--continuation N")),
        friction_continuation: opt("--friction-continuation")
            .map(|s| s.parse().expect("--friction-continuation N")),
        friction_continuation_rho: opt("--friction-continuation-rho")
            .map(|s| s.parse().expect("--friction-continuation-rho R")),
        restart_step: opt("--restart-step").map(|s| s.parse().expect("--restart-step A")),
    };
    let drops: Vec<Drop> = match opt("--drop").as_deref() {
        None | Some("both") => vec![Drop::Planar, Drop::Chamfered],
        Some("planar") => vec![Drop::Planar],
        Some("chamfered") => vec![Drop::Chamfered],
        Some(other) => panic!("unknown drop {other}"),
    };
    let stacks: Vec<Stack> = match opt("--stack").as_deref() {
        None | Some("both") => vec![Stack::Planar, Stack::Towers],
        Some("planar") => vec![Stack::Planar],
        Some("towers") => vec![Stack::Towers],
        Some(other) => panic!("unknown stack {other}"),
    };
    let solvers: Vec<SolverKind> = match backend.as_str() {
        "single_level" => vec![SolverKind::SingleLevel],
        "bilevel" => vec![SolverKind::Bilevel],
        "both" => vec![SolverKind::SingleLevel, SolverKind::Bilevel],
        other => panic!("unknown backend {other}"),
    };
    if experiment == "drop" || experiment == "all" {
        for &kind in &drops {
            for &s in &solvers {
                drop_table(kind, s, runs, threads, only_hz, tuning, failures);
            }
        }
    }
    if experiment == "stack" || experiment == "all" {
        for &kind in &stacks {
            stack_table(kind, &solvers, threads, settle_steps, continue_at_cap);
        }
    }
}
