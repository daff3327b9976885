//! Nimble's saddle at resting contact (Werling et al. 2021, IV-D and
//! VII-C): gradient descent on the controls of a body resting on the
//! ground, towards a target height, with the exact gradient and with the
//! complementarity-aware gradient (`diff::complementarity`).
//!
//! Two cases, each `N` steps of 10 ms with the `lcp` backend:
//!
//! * the clamped actuator (Fig. 3): a ball (`examples/scenes/nimble_ball.toml`)
//!   with a vertical force;
//! * the drone on the ground (VII-C): a flat box (`tests/data/nimble_drone.toml`)
//!   whose controls are its body wrench at every step (6 per step).
//!
//! Loss `ℓ = (z_N − z*)²` with `z*` half a metre above the rest height.
//! At `u = 0` every contact clamps: the exact gradient is zero and
//! gradient descent does not move (the loss is printed unchanged); the
//! complementarity-aware gradient reclassifies the clamping contacts
//! separating, the controls grow until the body lifts off, and the loss
//! falls to the target.
//!
//! ```text
//! cargo run --release --features examples --example nimble_drone
//! ```

use dualsim::diff::{
    DiffOptions, Gradient, Input, Method, aware_rollout_gradient, rollout_jacobian,
};
use dualsim::math::DMat;
use dualsim::scene::{self, Scene};
use dualsim::sim::{Controls, rollout};

/// Loss and its gradient with respect to every control entry of every
/// step (step-major), exact or complementarity-aware; and the steps the
/// aware gradient reclassified.
fn loss_and_gradient(
    sc: &Scene,
    us: &[dualsim::math::DVec<f64>],
    target: f64,
    gradient: Gradient,
) -> Result<(f64, Vec<f64>, usize), dualsim::diff::DiffError> {
    let nv = sc.world.model.nv;
    let controls = Controls::PerStep(us.to_vec());
    let inputs: Vec<Input> = (0..sc.steps)
        .flat_map(|step| (0..nv).map(move |index| Input::Control { step, index }))
        .collect();
    let last = rollout(&sc.world, &sc.initial, &controls, sc.steps)?
        .last()
        .clone();
    let z = last.q[2];
    let loss = (z - target).powi(2);
    // ∂ℓ/∂x_N: the tangent row of the body's z (row 2).
    let mut w = DMat::zeros(1, 2 * nv);
    w[(0, 2)] = 2.0 * (z - target);
    let (g, re) = match gradient {
        Gradient::Exact => {
            let rj = rollout_jacobian(
                &sc.world,
                &sc.initial,
                &controls,
                sc.steps,
                &inputs,
                Method::Ift,
                &DiffOptions::default(),
            )?;
            (&w * &rj.jacobian, 0)
        }
        Gradient::ComplementarityAware => {
            let a = aware_rollout_gradient(
                &sc.world,
                &sc.initial,
                &controls,
                sc.steps,
                &inputs,
                &w,
                &DiffOptions::default(),
            )?;
            (a.gradient, a.reclassified_steps)
        }
    };
    Ok((loss, g.iter().copied().collect(), re))
}

/// Gradient descent with a fixed step `alpha` from zero controls; prints
/// each iteration and returns the losses.
fn descend(sc: &Scene, target: f64, gradient: Gradient, iters: usize, alpha: f64) -> Vec<f64> {
    let nv = sc.world.model.nv;
    let mut us = vec![dualsim::math::DVec::zeros(nv); sc.steps];
    let mut losses = Vec::new();
    for it in 0..=iters {
        let (loss, g, re) = match loss_and_gradient(sc, &us, target, gradient) {
            Ok(r) => r,
            Err(e) => {
                println!("  {:>22} iter {it:>3}: failed: {e}", gradient.name());
                break;
            }
        };
        let gnorm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
        println!(
            "  {:>22} iter {it:>3}: loss {loss:.6e}  |grad| {gnorm:.3e}  reclassified steps {re:>3}/{}",
            gradient.name(),
            sc.steps
        );
        losses.push(loss);
        if it == iters {
            break;
        }
        for (k, u) in us.iter_mut().enumerate() {
            for i in 0..nv {
                u[i] -= alpha * g[k * nv + i];
            }
        }
    }
    losses
}

fn main() {
    let root = env!("CARGO_MANIFEST_DIR");
    for (name, path, iters, alpha) in [
        (
            "clamped actuator (ball)",
            "examples/scenes/nimble_ball.toml",
            8,
            15000.0,
        ),
        (
            "drone on the ground",
            "tests/data/nimble_drone.toml",
            12,
            2000.0,
        ),
    ] {
        let sc = scene::load(std::path::Path::new(&format!("{root}/{path}"))).expect("scene");
        let target = sc.initial.q[2] + 0.5;
        println!(
            "{name}: {path}, {} steps of {} s, target z* = {target} m (rest z = {} m), \
             gradient descent with step {alpha}",
            sc.steps, sc.world.dt, sc.initial.q[2]
        );
        let exact = descend(&sc, target, Gradient::Exact, iters, alpha);
        let aware = descend(&sc, target, Gradient::ComplementarityAware, iters, alpha);
        println!(
            "  loss after {iters} iterations: exact {:.6e} (start {:.6e}), complementarity-aware {:.6e} ({:.1e} of the start)\n",
            exact[exact.len() - 1],
            exact[0],
            aware[aware.len() - 1],
            aware[aware.len() - 1] / aware[0]
        );
    }
}
