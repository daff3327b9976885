//! `check`'s whole-rollout comparison (issue 43): the Jacobian `grad`
//! returns against finite differences of the whole rollout, per entry.

use std::path::Path;

use dualsim::diff::{
    CheckOptions, DiffOptions, Input, Method, Param, RolloutCheckOptions, check,
    compare_rollout_jacobian, rollout_jacobian,
};
use dualsim::scene;

fn load(name: &str) -> scene::Scene {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes")
        .join(name);
    scene::load(&p).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The state and model inputs of the two-ball scene, with labels.
fn two_ball_inputs(s: &scene::Scene) -> (Vec<Input>, Vec<String>) {
    let m = &s.world.model;
    let cue = m.bodies[0].idx_v;
    let target = m.bodies[1].idx_v;
    let inputs = vec![
        Input::Config(cue),
        Input::Config(target),
        Input::Velocity(cue),
        Input::Model(Param::Mass(0)),
        Input::Model(Param::Friction(0)),
        Input::Model(Param::Friction(1)),
    ];
    let labels = [
        "cue.position.x",
        "target.position.x",
        "cue.velocity.x",
        "cue.mass",
        "cue.friction",
        "target.friction",
    ]
    .map(String::from)
    .to_vec();
    (inputs, labels)
}

/// A correct rollout Jacobian passes the comparison; the same Jacobian
/// with one entry wrong (the sign of ∂x_target/∂x_cue flipped, or that
/// entry off by 1 %) is rejected, and the report names that entry. The
/// friction columns sit at μ = 0: their differences are one-sided, with
/// no error.
#[test]
fn an_injected_wrong_rollout_derivative_is_rejected() {
    let s = load("nimble_two_ball.toml");
    let (inputs, labels) = two_ball_inputs(&s);
    let opts = DiffOptions::default();
    let rj = rollout_jacobian(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &inputs,
        Method::Ift,
        &opts,
    )
    .unwrap();
    let ro = RolloutCheckOptions {
        max_columns: inputs.len(),
        ..Default::default()
    };
    let compare = |j: &dualsim::math::DMat<f64>| {
        compare_rollout_jacobian(
            &s.world,
            &s.initial,
            &s.controls,
            s.steps,
            &inputs,
            &labels,
            j,
            1e-7,
            &ro,
        )
        .unwrap()
    };
    let good = compare(&rj.jacobian);
    assert!(good.passed, "{good:#?}");
    assert!(good.skipped.is_empty(), "{:?}", good.skipped);
    // ∂(target x)/∂(cue x): row of the target's x, column 0
    let row = s.world.model.bodies[1].idx_v;
    assert!(
        (rj.jacobian[(row, 0)] - 1.0).abs() < 1e-9,
        "∂x_f/∂x_cue = {}",
        rj.jacobian[(row, 0)]
    );
    for wrong in [-rj.jacobian[(row, 0)], 1.01 * rj.jacobian[(row, 0)]] {
        let mut j = rj.jacobian.clone();
        j[(row, 0)] = wrong;
        let bad = compare(&j);
        assert!(!bad.passed, "a wrong entry {wrong} passed: {bad:#?}");
        let (r, c, _, _) = bad.worst_entry.clone().unwrap();
        assert_eq!(
            (r.as_str(), c.as_str()),
            ("target.q_tangent[0]", "cue.position.x")
        );
    }
}

/// `check` on the two-ball scene: the impact lands exactly on the
/// boundary of steps 32 and 33, the event steps are sampled, both balls
/// are impact bodies, every column is compared (the scene is small) and
/// the whole-rollout comparison passes. Friction is 0: the one-step fd
/// of the friction columns is one-sided, no error. At the impact steps
/// the one-step map jumps (a ±ε perturbation moves the impact into this
/// step or the next): those columns are taken one-sided on the nominal's
/// side ([`dualsim::diff::jumps_within`]) and compared, so the whole
/// check, with its defaults (event steps and the rollout comparison on),
/// passes with nothing skipped.
#[test]
fn check_samples_the_impact_and_compares_the_whole_rollout() {
    let s = load("nimble_two_ball.toml");
    // as `dualsim check` runs it (its fd step is 1e-7)
    let opts = CheckOptions {
        diff: DiffOptions {
            fd_eps: 1e-7,
            ..CheckOptions::default().diff
        },
        ..Default::default()
    };
    assert!(opts.rollout.is_some() && opts.max_event_samples > 0);
    let r = check(&s.world, &s.initial, &s.controls, s.steps, &opts).unwrap();
    assert!(r.passed, "{r:#?}");
    assert!(r.fd_skipped.is_empty(), "{:?}", r.fd_skipped);
    // the impact steps' jumping columns, compared one-sided
    assert!(
        r.fd_one_sided.iter().any(|c| (31..=32).contains(&c.step)),
        "{:?}",
        r.fd_one_sided
    );
    assert!(r.fd_one_sided.iter().all(|c| (31..=33).contains(&c.step)));
    let ro = r.rollout.as_ref().expect("the rollout comparison runs");
    assert!(
        ro.event_steps.iter().any(|k| (31..=33).contains(k)),
        "{:?}",
        ro.event_steps
    );
    assert!(
        r.sample_steps.iter().any(|k| ro.event_steps.contains(k)),
        "samples {:?}, events {:?}",
        r.sample_steps,
        ro.event_steps
    );
    assert_eq!(ro.impact_bodies, ["cue", "target"]);
    assert!(!ro.sampled, "{} candidate columns", ro.candidate_columns);
    assert!(ro.skipped.is_empty(), "{:?}", ro.skipped);
    assert!(ro.passed, "{ro:#?}");
    // lift and unrolled agree with ift at every sampled step, the impact
    // steps included
    for b in &r.blocks {
        for m in ["ift_vs_lift", "ift_vs_unrolled"] {
            assert!(
                b.max_rel_diff[m] <= 1e-9,
                "{} / {}: {m} {}",
                b.of,
                b.wrt,
                b.max_rel_diff[m]
            );
        }
    }
}

/// The Jacobian the code before the boundary-impact fix returned on this
/// scene (issue 43: `∂x_target,f/∂(x_cue, x_target, v_cue) = (−33.5,
/// 34.5, −10.04)` by `ift`, `lift` and `unrolled`, where continuous time
/// and fd give (1, 0, 1)) is rejected by the rollout comparison, and the
/// worst entry is one of those three.
#[test]
fn the_pre_fix_boundary_impact_jacobian_is_rejected() {
    let s = load("nimble_two_ball.toml");
    let (inputs, labels) = two_ball_inputs(&s);
    let rj = rollout_jacobian(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &inputs,
        Method::Ift,
        &DiffOptions::default(),
    )
    .unwrap();
    let row = s.world.model.bodies[1].idx_v;
    let mut old = rj.jacobian.clone();
    for (c, v) in [(0, -33.5), (1, 34.5), (2, -10.04)] {
        old[(row, c)] = v;
    }
    let ro = RolloutCheckOptions {
        max_columns: inputs.len(),
        ..Default::default()
    };
    let r = compare_rollout_jacobian(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &inputs,
        &labels,
        &old,
        1e-7,
        &ro,
    )
    .unwrap();
    assert!(!r.passed, "{r:#?}");
    let (out, input, _, _) = r.worst_entry.clone().unwrap();
    assert_eq!(out, "target.q_tangent[0]");
    assert!(labels[..3].contains(&input), "{input}");
    assert!(r.worst_ratio > 1e3, "{}", r.worst_ratio);
}
