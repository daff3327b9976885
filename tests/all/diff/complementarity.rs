//! Nimble's complementarity-aware gradients (Werling et al. 2021, IV-D;
//! `diff::complementarity`, issue 15): the clamped actuator (Fig. 3) and
//! the drone on the ground (VII-C) have exactly zero true gradients by
//! every method; the aware gradient is the free-flight closed form and
//! lets gradient descent escape; unsupported combinations are refused.

use std::path::Path;
use std::process::Command;

use dualsim::contact::SolverKind;
use dualsim::diff::{
    DiffError, DiffOptions, Gradient, Input, Method, Param, aware_rollout_gradient,
    rollout_jacobian, step_jacobian,
};
use dualsim::math::{DMat, DVec};
use dualsim::scene::{self, Scene};
use dualsim::sim::{Controls, rollout};

fn load(rel: &str) -> Scene {
    scene::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).expect("scene")
}

const BALL: &str = "examples/scenes/nimble_ball.toml";
const DRONE: &str = "tests/data/nimble_drone.toml";

fn aware() -> DiffOptions {
    DiffOptions {
        gradient: Gradient::ComplementarityAware,
        ..Default::default()
    }
}

/// Every step's vertical force.
fn uz_inputs(steps: usize) -> Vec<Input> {
    (0..steps)
        .map(|step| Input::Control { step, index: 2 })
        .collect()
}

/// Every control entry of every step (step-major).
fn all_inputs(steps: usize, nv: usize) -> Vec<Input> {
    (0..steps)
        .flat_map(|step| (0..nv).map(move |index| Input::Control { step, index }))
        .collect()
}

/// Fig. 3 at u = 0: the final height's derivative with respect to every
/// step's vertical force is zero by ift, lift, unrolled and fd (round-off:
/// 1e-14, fd's velocity row 1e-9; fd at ε = 1e-6 stays on the clamping
/// piece, f_n = m g h ≫ ε).
#[test]
fn clamped_actuator_true_gradient_is_zero_by_every_method() {
    let sc = load(BALL);
    let inputs = uz_inputs(sc.steps);
    for method in Method::ALL {
        let rj = rollout_jacobian(
            &sc.world,
            &sc.initial,
            &sc.controls,
            sc.steps,
            &inputs,
            method,
            &DiffOptions::default(),
        )
        .expect("rollout jacobian");
        let dz = rj.jacobian.row(2).amax();
        assert!(dz < 1e-14, "{}: max |∂z_N/∂u_z| = {dz:e}", method.name());
        // the velocity row too (fd: round-off of v⁺, 1e-16, over 2ε)
        let tol = if method == Method::Fd { 1e-9 } else { 1e-14 };
        let dvz = rj.jacobian.row(sc.world.model.nv + 2).amax();
        assert!(dvz < tol, "{}: max |∂v_z/∂u_z| = {dvz:e}", method.name());
    }
}

/// Fig. 3, aware: with the loss `(z_N − z*)²`, z* above the ball, every
/// step is reclassified separating and `∂ℓ/∂u_z,k = 2 (z_N − z*) h² (N − k) / m`
/// (free flight: a force at step k moves the ball by h²/m per remaining
/// step), to 1e-12 relative; negative, so descent pushes up.
#[test]
fn clamped_actuator_aware_gradient_is_the_free_flight_closed_form() {
    let sc = load(BALL);
    let nv = sc.world.model.nv;
    let (h, m, n) = (sc.world.dt, 1.0, sc.steps);
    let target = sc.initial.q[2] + 0.5;
    let z = sc.initial.q[2]; // at rest: z_N = z_0
    let mut w = DMat::zeros(1, 2 * nv);
    w[(0, 2)] = 2.0 * (z - target);
    let inputs = uz_inputs(n);
    let g = aware_rollout_gradient(
        &sc.world,
        &sc.initial,
        &sc.controls,
        n,
        &inputs,
        &w,
        &DiffOptions::default(),
    )
    .expect("aware gradient");
    assert_eq!(g.reclassified_steps, n);
    assert!((g.last.q[2] - z).abs() < 1e-9, "the ball rests");
    for k in 0..n {
        let want = 2.0 * (z - target) * h * h * (n - k) as f64 / m;
        let got = g.gradient[(0, k)];
        assert!(got < 0.0, "step {k}: {got:e} does not push up");
        assert!(
            (got - want).abs() <= 1e-12 * want.abs(),
            "step {k}: {got:e} vs closed form {want:e}"
        );
    }
    // The exact gradient of the same loss (ift) is zero.
    let rj = rollout_jacobian(
        &sc.world,
        &sc.initial,
        &sc.controls,
        n,
        &inputs,
        Method::Ift,
        &DiffOptions::default(),
    )
    .unwrap();
    assert!((&w * &rj.jacobian).amax() < 1e-14);
}

/// The aware option through `rollout_jacobian` and `step_jacobian`
/// (vector output: every clamping contact freed, Frobenius criterion):
/// one step of the resting ball gives `∂v_z⁺/∂u_z = h/m`,
/// `∂z⁺/∂u_z = h²/m` (exact: 0).
#[test]
fn aware_step_jacobian_is_free_flight_for_the_resting_ball() {
    let sc = load(BALL);
    let nv = sc.world.model.nv;
    let h = sc.world.dt;
    let u = sc.world.zero_control();
    let params = [Param::U(2)];
    let exact = step_jacobian(
        &sc.world,
        &sc.initial,
        &u,
        &params,
        Method::Ift,
        &DiffOptions::default(),
    )
    .unwrap();
    assert!(exact.jacobian[(nv + 2, 0)].abs() < 1e-14);
    let aw = step_jacobian(&sc.world, &sc.initial, &u, &params, Method::Ift, &aware()).unwrap();
    assert!((aw.jacobian[(nv + 2, 0)] - h).abs() < 1e-14);
    assert!((aw.jacobian[(2, 0)] - h * h).abs() < 1e-14);
}

/// Loss `(z_N − z*)²` and its gradient over every control entry.
fn loss_grad(sc: &Scene, us: &[DVec<f64>], target: f64, gradient: Gradient) -> (f64, DMat<f64>) {
    let nv = sc.world.model.nv;
    let controls = Controls::PerStep(us.to_vec());
    let inputs = all_inputs(sc.steps, nv);
    let last = rollout(&sc.world, &sc.initial, &controls, sc.steps)
        .unwrap()
        .last()
        .clone();
    let z = last.q[2];
    let mut w = DMat::zeros(1, 2 * nv);
    w[(0, 2)] = 2.0 * (z - target);
    let g = match gradient {
        Gradient::Exact => {
            let rj = rollout_jacobian(
                &sc.world,
                &sc.initial,
                &controls,
                sc.steps,
                &inputs,
                Method::Ift,
                &DiffOptions::default(),
            )
            .unwrap();
            &w * &rj.jacobian
        }
        Gradient::ComplementarityAware => {
            aware_rollout_gradient(
                &sc.world,
                &sc.initial,
                &controls,
                sc.steps,
                &inputs,
                &w,
                &DiffOptions::default(),
            )
            .unwrap()
            .gradient
        }
    };
    ((z - target).powi(2), g)
}

/// VII-C, short: the drone (40 steps) and gradient descent with step 2000
/// on its 240 controls, target 0.5 m above the rest height. Exact: the
/// gradient is zero (1e-15) and the loss does not move (1e-12) in 4
/// iterations; aware: the loss falls at least 100-fold in 4 iterations
/// (measured: 0.25 → 3.0e-5, examples/nimble_drone.rs).
#[test]
fn drone_escapes_the_ground_only_with_aware_gradients() {
    let sc = load(DRONE);
    assert_eq!(sc.world.solver, SolverKind::Lcp);
    let nv = sc.world.model.nv;
    let target = sc.initial.q[2] + 0.5;
    let alpha = 2000.0;
    for gradient in [Gradient::Exact, Gradient::ComplementarityAware] {
        let mut us = vec![DVec::zeros(nv); sc.steps];
        let mut losses = Vec::new();
        for _ in 0..=4 {
            let (loss, g) = loss_grad(&sc, &us, target, gradient);
            losses.push(loss);
            if gradient == Gradient::Exact {
                assert!(g.amax() < 1e-15, "exact gradient {:e}", g.amax());
            }
            for (k, u) in us.iter_mut().enumerate() {
                for i in 0..nv {
                    u[i] -= alpha * g[(0, k * nv + i)];
                }
            }
        }
        let (first, last) = (losses[0], losses[4]);
        assert!((first - 0.25).abs() < 1e-9, "rest loss {first}");
        match gradient {
            Gradient::Exact => assert!((last - first).abs() < 1e-12, "{losses:?}"),
            Gradient::ComplementarityAware => {
                assert!(last < first / 100.0, "{losses:?}")
            }
        }
    }
}

fn unsupported(e: DiffError) -> (&'static str, &'static str, &'static str) {
    match e {
        DiffError::Unsupported {
            option,
            backend,
            method,
            ..
        } => (option, backend, method),
        e => panic!("not a refusal: {e:?}"),
    }
}

/// The aware gradient with another method or another backend is refused
/// with a typed error naming the option, the backend and the method
/// (never silently the exact gradient).
#[test]
fn aware_gradient_is_refused_outside_lcp_and_ift() {
    let sc = load(BALL);
    let u = sc.world.zero_control();
    let inputs = uz_inputs(3);
    for method in [Method::Lift, Method::Unrolled, Method::Fd] {
        let e = step_jacobian(&sc.world, &sc.initial, &u, &[Param::U(2)], method, &aware())
            .unwrap_err();
        assert_eq!(
            unsupported(e),
            ("--gradient complementarity_aware", "lcp", method.name())
        );
        let e = rollout_jacobian(
            &sc.world,
            &sc.initial,
            &sc.controls,
            3,
            &inputs,
            method,
            &aware(),
        )
        .unwrap_err();
        assert_eq!(unsupported(e).2, method.name());
    }
    let mut w = sc.world.clone();
    w.solver = SolverKind::Ipm;
    w.friction_cone = dualsim::contact::FrictionCone::Exact;
    for method in Method::ALL {
        let e = step_jacobian(&w, &sc.initial, &u, &[Param::U(2)], method, &aware()).unwrap_err();
        assert_eq!(
            unsupported(e),
            ("--gradient complementarity_aware", "ipm", method.name())
        );
    }
    let weights = DMat::zeros(1, 2 * w.model.nv);
    let e = aware_rollout_gradient(
        &w,
        &sc.initial,
        &sc.controls,
        3,
        &inputs,
        &weights,
        &DiffOptions::default(),
    )
    .unwrap_err();
    assert_eq!(unsupported(e).1, "ipm");
    // the exact gradient is unaffected
    assert!(
        step_jacobian(
            &w,
            &sc.initial,
            &u,
            &[Param::U(2)],
            Method::Ift,
            &DiffOptions::default()
        )
        .is_ok()
    );
}

fn dualsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run dualsim")
}

/// CLI: `--gradient` values; an unknown one is a usage error (exit 2);
/// refused combinations exit 2 with the typed message; the aware
/// gradient of the ball's height is the closed form `h² (N − k) / m`.
#[test]
fn cli_gradient_option() {
    let base = [
        "grad",
        BALL,
        "--of",
        "ball.position",
        "--wrt",
        "ball.control",
    ];
    let run = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        dualsim(&a)
    };
    let o = run(&["--gradient", "aware"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("complementarity_aware"));
    let o = run(&["--gradient", "complementarity_aware", "--method", "fd"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--gradient complementarity_aware") && err.contains("`lcp`"));
    assert!(err.contains("`fd`"), "{err}");
    let o = dualsim(&[
        "grad",
        "examples/scenes/sphere_drop.toml",
        "--of",
        "ball.position",
        "--wrt",
        "ball.velocity",
        "--gradient",
        "complementarity_aware",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`ipm`"));
    let o = run(&["--gradient", "complementarity_aware", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["gradient"], "complementarity_aware");
    let z = &doc["jacobian"][2];
    let n = 20;
    for k in 0..n {
        let want = 1e-4 * (n - k) as f64;
        let got = z[6 * k + 2].as_f64().unwrap();
        assert!(
            (got - want).abs() < 1e-12 * want,
            "step {k}: {got} vs {want}"
        );
    }
    let o = run(&["--gradient", "exact", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let z = doc["jacobian"][2].as_array().unwrap();
    assert!(z.iter().all(|x| x.as_f64().unwrap().abs() < 1e-14));
}
