//! `sim::batch` and `diff::batch`: parallel rollouts (and their Jacobians)
//! equal the serial ones bit for bit, and a failing rollout is its own
//! `Err`.

use std::path::Path;

use dualsim::diff::{DiffOptions, Input, Method, batch_rollout_jacobians, rollout_jacobian};
use dualsim::prelude::*;
use dualsim::sim::batch::{BatchError, BatchOptions, batch_rollouts};

/// `examples/scenes/box_toss.toml` (a cube tossed with spin onto a plane,
/// ipm, exact cone) and `n` initial states: the scene's, with different
/// initial linear and angular velocities.
fn tosses(n: usize) -> (World<f64>, Vec<State<f64>>) {
    let scene = dualsim::scene::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/box_toss.toml"),
    )
    .unwrap();
    let starts = (0..n)
        .map(|i| {
            let mut x = scene.initial.clone();
            let s = i as f64;
            for (k, v) in x.v.iter_mut().enumerate() {
                *v += 0.3 * (s - 3.5) * (1.0 + 0.2 * k as f64) - 0.1 * (k as f64);
            }
            x
        })
        .collect();
    (scene.world, starts)
}

fn controls(world: &World<f64>, n: usize, steps: usize) -> Vec<Controls<f64>> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Controls::Constant(world.zero_control())
            } else {
                // a small horizontal push that changes every step
                Controls::PerStep(
                    (0..steps)
                        .map(|k| {
                            let mut u = world.zero_control();
                            u[0] = 0.5 * ((i + k) as f64 * 0.37).sin();
                            u
                        })
                        .collect(),
                )
            }
        })
        .collect()
}

/// Every `q`, `v` of every state, bitwise.
fn assert_same_bits(a: &Trajectory<f64>, b: &Trajectory<f64>, what: &str) {
    assert_eq!(a.states.len(), b.states.len(), "{what}: length");
    for (k, (xa, xb)) in a.states.iter().zip(&b.states).enumerate() {
        for (i, (p, q)) in xa.q.iter().zip(xb.q.iter()).enumerate() {
            assert_eq!(p.to_bits(), q.to_bits(), "{what}: q[{i}] at state {k}");
        }
        for (i, (p, q)) in xa.v.iter().zip(xb.v.iter()).enumerate() {
            assert_eq!(p.to_bits(), q.to_bits(), "{what}: v[{i}] at state {k}");
        }
        assert_eq!(xa.q.len(), xb.q.len());
        assert_eq!(xa.v.len(), xb.v.len());
    }
    assert_eq!(a.stats, b.stats, "{what}: solver statistics");
}

#[test]
fn batch_of_tosses_equals_serial_rollouts_bitwise() {
    let (n, steps) = (8, 80);
    let (world, starts) = tosses(n);
    let us = controls(&world, n, steps);
    let serial: Vec<_> = starts
        .iter()
        .zip(&us)
        .map(|(x, u)| rollout(&world, x, u, steps).unwrap())
        .collect();
    // the batch is a contact scene: every toss lands (contacts in the
    // last steps), and the rollouts differ from each other
    for t in &serial {
        assert!(
            t.last().q[2] < 0.26,
            "the box has landed: z = {}",
            t.last().q[2]
        );
    }
    assert_ne!(serial[0].last().q, serial[1].last().q);
    for threads in [Some(1), Some(2), None] {
        let batch = batch_rollouts(&world, &starts, &us, steps, &BatchOptions { threads }).unwrap();
        assert_eq!(batch.len(), n);
        for (i, (b, s)) in batch.iter().zip(&serial).enumerate() {
            let b = b.as_ref().unwrap_or_else(|e| panic!("rollout {i}: {e}"));
            assert_same_bits(b, s, &format!("threads {threads:?}, rollout {i}"));
        }
    }
}

#[test]
fn a_failing_rollout_is_its_own_err_and_the_others_are_unchanged() {
    let (n, steps) = (8, 40);
    let (world, mut starts) = tosses(n);
    let mut us = controls(&world, n, steps);
    // rollout 3: a control that becomes non-finite at step 5
    let mut bad: Vec<_> = (0..steps).map(|_| world.zero_control()).collect();
    bad[5][2] = f64::NAN;
    us[3] = Controls::PerStep(bad);
    // rollout 6: a non-finite initial state (fails at step 0)
    starts[6].v[1] = f64::INFINITY;
    for threads in [Some(1), Some(2)] {
        let batch = batch_rollouts(&world, &starts, &us, steps, &BatchOptions { threads }).unwrap();
        for (i, b) in batch.iter().enumerate() {
            let serial = rollout(&world, &starts[i], &us[i], steps);
            match (i, b, &serial) {
                (3, Err(e), Err(s)) => {
                    assert_eq!((e.step, e.error.kind()), (5, "non_finite"));
                    assert_eq!(e.error, s.error);
                    assert_eq!(e.completed.states.len(), 6);
                    assert_same_bits(&e.completed, &s.completed, "failed rollout 3");
                }
                (6, Err(e), Err(s)) => {
                    assert_eq!((e.step, e.error.kind()), (0, "non_finite"));
                    assert_eq!(e.error, s.error);
                    assert_eq!(e.completed.states.len(), 1);
                }
                (i, Ok(b), Ok(s)) if i != 3 && i != 6 => {
                    assert_same_bits(b, s, &format!("threads {threads:?}, rollout {i}"))
                }
                (i, b, s) => panic!(
                    "rollout {i}: batch {:?} vs serial {:?}",
                    b.as_ref().map(|_| ()),
                    s.as_ref().map(|_| ())
                ),
            }
        }
    }
}

#[test]
fn batch_refuses_mismatched_sizes_and_zero_threads() {
    let (world, starts) = tosses(3);
    let us = controls(&world, 2, 5);
    let opts = BatchOptions { threads: Some(2) };
    assert_eq!(
        batch_rollouts(&world, &starts, &us, 5, &opts).unwrap_err(),
        BatchError::Size {
            starts: 3,
            controls: 2
        }
    );
    let us = controls(&world, 3, 5);
    let zero = BatchOptions { threads: Some(0) };
    assert_eq!(
        batch_rollouts(&world, &starts, &us, 5, &zero).unwrap_err(),
        BatchError::ZeroThreads
    );
    let inputs = [Input::Velocity(0)];
    let e = batch_rollout_jacobians(
        &world,
        &starts,
        &us[..1],
        5,
        &inputs,
        Method::Ift,
        &DiffOptions::default(),
        &opts,
    )
    .unwrap_err();
    assert_eq!(
        e,
        BatchError::Size {
            starts: 3,
            controls: 1
        }
    );
}

#[test]
fn batched_ift_rollout_jacobians_equal_serial_bitwise() {
    let (n, steps) = (8, 30);
    let (world, mut starts) = tosses(n);
    let mut us = controls(&world, n, steps);
    // rollout 5 fails at step 2: its Err comes back, the others are kept
    let mut bad: Vec<_> = (0..steps).map(|_| world.zero_control()).collect();
    bad[2][0] = f64::NAN;
    us[5] = Controls::PerStep(bad);
    starts[0].v[0] += 0.25;
    let nv = world.model.nv;
    let mut inputs: Vec<Input> = (0..nv).map(Input::Velocity).collect();
    inputs.extend((0..nv).map(Input::Config));
    inputs.push(Input::Control { step: 0, index: 0 });
    inputs.push(Input::Control {
        step: steps - 1,
        index: 2,
    });
    let diff = DiffOptions::default();
    let serial: Vec<_> = starts
        .iter()
        .zip(&us)
        .map(|(x, u)| rollout_jacobian(&world, x, u, steps, &inputs, Method::Ift, &diff))
        .collect();
    // the Jacobians are not trivial: contact at the end of each toss
    // that succeeded (the box is on the ground after 0.3 s)
    for (i, s) in serial.iter().enumerate() {
        match s {
            Ok(j) => {
                assert_eq!(j.jacobian.shape(), (2 * nv, inputs.len()));
                assert!(j.jacobian.iter().all(|x| x.is_finite()), "rollout {i}");
            }
            Err(e) => assert_eq!(i, 5, "only rollout 5 fails: {e}"),
        }
    }
    // a non-finite control is refused, not turned into a NaN Jacobian
    assert_eq!(
        serial[5].as_ref().unwrap_err().to_string(),
        "non-finite value in control"
    );
    for threads in [Some(1), Some(2)] {
        let batch = batch_rollout_jacobians(
            &world,
            &starts,
            &us,
            steps,
            &inputs,
            Method::Ift,
            &diff,
            &BatchOptions { threads },
        )
        .unwrap();
        assert_eq!(batch.len(), n);
        for (i, (b, s)) in batch.iter().zip(&serial).enumerate() {
            match (b, s) {
                (Ok(b), Ok(s)) => {
                    for (p, q) in b.jacobian.iter().zip(s.jacobian.iter()) {
                        assert_eq!(p.to_bits(), q.to_bits(), "threads {threads:?}, rollout {i}");
                    }
                    for (p, q) in b
                        .last
                        .q
                        .iter()
                        .chain(b.last.v.iter())
                        .zip(s.last.q.iter().chain(s.last.v.iter()))
                    {
                        assert_eq!(p.to_bits(), q.to_bits(), "threads {threads:?}, rollout {i}");
                    }
                }
                (Err(b), Err(s)) => assert_eq!(b, s),
                _ => panic!("rollout {i}: batch and serial disagree on failure"),
            }
        }
    }
}
