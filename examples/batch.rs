//! Serial vs batched wall time of independent rollouts (`sim::batch`) and
//! of their `ift` rollout Jacobians (`diff::batch_rollout_jacobians`).
//!
//! `examples/scenes/box_toss.toml` (a cube tossed with spin onto a plane,
//! `ipm`, exact cone) from N initial velocities; each figure is the median
//! of 5 runs, and the batched results are checked bitwise against the
//! serial ones before timing is reported.
//!
//! `cargo run --release --features examples --example batch -- [N] [STEPS] [THREADS]`
//! (defaults 16 rollouts, 200 steps, 2 threads; Jacobians over 30 steps
//! with respect to the initial state).

use std::path::Path;
use std::time::Instant;

use dualsim::diff::{DiffOptions, Input, Method, batch_rollout_jacobians, rollout_jacobian};
use dualsim::prelude::*;
use dualsim::sim::batch::{BatchOptions, batch_rollouts};

fn median(f: &mut impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("N STEPS THREADS are positive integers"))
        .collect();
    let n = args.first().copied().unwrap_or(16);
    let steps = args.get(1).copied().unwrap_or(200);
    let threads = args.get(2).copied().unwrap_or(2);
    let jac_steps = 30;
    let scene = dualsim::scene::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/box_toss.toml"),
    )
    .expect("box_toss.toml loads");
    let world = scene.world;
    let starts: Vec<State<f64>> = (0..n)
        .map(|i| {
            let mut x = scene.initial.clone();
            let s = i as f64 / n.max(1) as f64 - 0.5;
            for (k, v) in x.v.iter_mut().enumerate() {
                *v += s * (1.0 + 0.2 * k as f64);
            }
            x
        })
        .collect();
    let controls = vec![Controls::Constant(world.zero_control()); n];
    let opts = BatchOptions {
        threads: Some(threads),
    };
    let nv = world.model.nv;
    let inputs: Vec<Input> = (0..nv)
        .map(Input::Config)
        .chain((0..nv).map(Input::Velocity))
        .collect();
    let diff = DiffOptions::default();

    // the batch gives the serial results, bit for bit
    let serial: Vec<_> = starts
        .iter()
        .zip(&controls)
        .map(|(x, u)| rollout(&world, x, u, steps).expect("toss rolls out"))
        .collect();
    let batch = batch_rollouts(&world, &starts, &controls, steps, &opts).expect("batch runs");
    for (b, s) in batch.iter().zip(&serial) {
        let b = b.as_ref().expect("toss rolls out");
        for (xb, xs) in b.states.iter().zip(&s.states) {
            assert!(
                xb.q.iter()
                    .zip(xs.q.iter())
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
            assert!(
                xb.v.iter()
                    .zip(xs.v.iter())
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
        }
    }

    let t_roll_serial = median(&mut || {
        for (x, u) in starts.iter().zip(&controls) {
            rollout(&world, x, u, steps).expect("toss rolls out");
        }
    });
    let t_roll_batch = median(&mut || {
        batch_rollouts(&world, &starts, &controls, steps, &opts).expect("batch runs");
    });
    let t_jac_serial = median(&mut || {
        for (x, u) in starts.iter().zip(&controls) {
            rollout_jacobian(&world, x, u, jac_steps, &inputs, Method::Ift, &diff)
                .expect("jacobian");
        }
    });
    let t_jac_batch = median(&mut || {
        batch_rollout_jacobians(
            &world,
            &starts,
            &controls,
            jac_steps,
            &inputs,
            Method::Ift,
            &diff,
            &opts,
        )
        .expect("batch runs");
    });
    println!("{n} tosses of box_toss.toml, {threads} threads (median of 5 runs)");
    println!("| work | serial (s) | batch (s) | serial / batch |");
    println!("|---|---|---|---|");
    println!(
        "| {n} rollouts × {steps} steps | {t_roll_serial:.3} | {t_roll_batch:.3} | {:.2} |",
        t_roll_serial / t_roll_batch
    );
    println!(
        "| {n} `ift` rollout Jacobians × {jac_steps} steps ({} inputs) | {t_jac_serial:.3} | {t_jac_batch:.3} | {:.2} |",
        inputs.len(),
        t_jac_serial / t_jac_batch
    );
}
