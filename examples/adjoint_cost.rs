//! What reverse mode and the second-order adjoint cost, as multiples of
//! one f64 rollout, measured in one run: the 30-step box push (180
//! controls) and the 7-dof arm reaching through contact (100 steps × 7
//! torques, running costs).
//!
//! ```text
//! cargo run --release --features examples --example adjoint_cost
//! ```
//!
//! Each figure is the median of several runs on this machine; the f64
//! rollout is `sim::rollout` (warm-started steps, as the adjoint's
//! forward pass takes them).

use std::path::PathBuf;
use std::time::Instant;

use dualsim::opt::{HessianMethod, Objective};
use dualsim::scene;

fn median(mut f: impl FnMut(), reps: usize) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let mut push = scene::load(&root.join("opt_box_push.toml")).expect("scene");
    push.steps = 30;
    // `ADJOINT_COST_PROFILE=hvp` (or `gradient`): only that computation on
    // the box push, 50 times (for a profiler)
    if let Ok(what) = std::env::var("ADJOINT_COST_PROFILE") {
        let obj = Objective::from_scene(&push).expect("objective");
        let d = vec![0.0; obj.dim()];
        let v = vec![1.0; obj.dim()];
        for _ in 0..50 {
            if what == "hvp" {
                drop(obj.hessian_vector(&d, &v).expect("hvp"));
            } else {
                drop(obj.gradient(&d).expect("gradient"));
            }
        }
        return;
    }
    let arm = scene::load(&root.join("opt_arm7_reach.toml")).expect("scene");
    println!(
        "| scene | n | f64 rollout (ms) | adjoint gradient | forward gradient | Hessian-vector product | exact Hessian (adjoint) | exact Hessian (lift) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, s, lift) in [
        ("box push, 30 steps", &push, true),
        ("arm reach, 100 steps", &arm, false),
    ] {
        let obj = Objective::from_scene(s).expect("objective");
        let n = obj.dim();
        let d = vec![0.0; n];
        let v: Vec<f64> = (0..n).map(|i| ((i % 7) as f64 - 3.0) / 3.0).collect();
        let reps = 5;
        let (w, x, us) = obj.at(&d).expect("objective");
        let roll = median(
            || drop(dualsim::sim::rollout(&w, &x, &us, s.steps).expect("rollout")),
            reps,
        );
        let adj = median(|| drop(obj.gradient(&d).expect("gradient")), reps);
        let fwd = median(|| drop(obj.gradient_forward(&d).expect("gradient")), reps);
        let hvp = median(|| drop(obj.hessian_vector(&d, &v).expect("hvp")), reps);
        let hes = median(
            || drop(obj.hessian(&d, HessianMethod::Adjoint).expect("hessian")),
            3,
        );
        let lifted = if lift {
            let t = median(
                || drop(obj.hessian(&d, HessianMethod::Lift).expect("hessian")),
                1,
            );
            format!("{:.0}× ({:.2} s)", t / roll, t)
        } else {
            "not run (minutes)".into()
        };
        println!(
            "| {name} | {n} | {:.2} | {:.1}× | {:.1}× | {:.1}× ({:.1}× the adjoint gradient) | {:.0}× ({:.3} s, {:.0} gradients) | {lifted} |",
            roll * 1e3,
            adj / roll,
            fwd / roll,
            hvp / roll,
            hvp / adj,
            hes / roll,
            hes,
            hes / adj,
        );
    }
}
