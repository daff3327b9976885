//! Jade's two-ball targeting (Yang et al. 2023, section V, Fig. 10 and
//! Table I): the blue ball (radius 0.05, at (−0.4, 0)) is launched at the
//! yellow one (radius 0.05, at rest at the origin) on a frictionless
//! table; optimize the blue ball's initial velocity `(v_x, v_y)` so that
//! the yellow ball ends at `p_target = (0.3, 0.2)` after 0.2 s (20 steps
//! of 0.01 s), loss `10 ‖p_final − p_target‖²`, starting from `(4, −0.1)`.
//! Jade reports a final error of 1.56e-3 after 1000 epochs (Nimble
//! 2.49e-2); here the step is `lcp` with continuous collision
//! (`ccd = true`: the impact is resolved at its time of impact with the
//! line of centres there), and the gradient is the rollout Jacobian by
//! dual numbers (`Method::Unrolled`, the derivative of the split step
//! including the time of impact's).
//!
//! The table only carries the balls' weight (no friction), so it and
//! gravity are left out: the balls move in the plane z = 0. Both balls
//! have mass 1 and restitution 1.
//!
//! Gradient descent: `v ← v − α ∇L` with `α = 0.5`, halved while the loss
//! does not decrease (a backtracking safeguard), until the target error
//! is below `--tol` (default 1e-6) or `--iters` (default 1000) iterations.
//!
//! ```text
//! cargo run --release --features examples --example jade_two_ball
//! cargo run --release --features examples --example jade_two_ball -- --tol 1e-5 --iters 200
//! ```
//!
//! `tests/all/contact/jade_two_ball.rs` runs the same code.

use dualsim::contact::{FrictionCone, SolverKind};
use dualsim::diff::{DiffOptions, Input, Method, rollout_jacobian};
use dualsim::math::Vec3;
use dualsim::prelude::*;
use dualsim::sim::Controls;

/// Ball radius (m).
pub const RADIUS: f64 = 0.05;
/// Blue ball's start (m).
pub const BLUE: [f64; 2] = [-0.4, 0.0];
/// Target of the yellow ball (m).
pub const TARGET: [f64; 2] = [0.3, 0.2];
/// Step (s) and number of steps (0.2 s).
pub const DT: f64 = 0.01;
/// Steps of a rollout.
pub const STEPS: usize = 20;
/// Initial guess of the blue ball's velocity (m/s).
pub const V0: [f64; 2] = [4.0, -0.1];

/// The scene: two balls, `lcp`, continuous collision, no gravity.
pub fn world() -> World<f64> {
    let mut w = World::<f64>::new(DT);
    w.solver = SolverKind::Lcp;
    w.friction_cone = FrictionCone::Pyramid;
    w.gravity = Vec3::zeros();
    w.ccd = true;
    let mat = Material {
        friction: 0.0,
        restitution: 1.0,
    };
    for name in ["blue", "yellow"] {
        w.add_body(
            name,
            1.0,
            Mat3::identity() * (0.4 * RADIUS * RADIUS),
            Some(Shape::Sphere { radius: RADIUS }),
            mat,
        )
        .expect("a valid body");
    }
    w
}

/// The yellow ball's final position and its Jacobian with respect to the
/// blue ball's initial `(v_x, v_y)`, by `method`.
pub fn rollout(
    w: &World<f64>,
    v: [f64; 2],
    method: Method,
) -> Result<([f64; 2], [[f64; 2]; 2]), String> {
    let mut x0 = State::at_rest(&w.model, &[[BLUE[0], BLUE[1], 0.0], [0.0, 0.0, 0.0]]);
    x0.v[0] = v[0];
    x0.v[1] = v[1];
    let inputs = [Input::Velocity(0), Input::Velocity(1)];
    let controls = Controls::Constant(w.zero_control());
    let j = rollout_jacobian(
        w,
        &x0,
        &controls,
        STEPS,
        &inputs,
        method,
        &DiffOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    // The yellow ball is body 1: q[7..10], tangent rows 6..9.
    let p = [j.last.q[7], j.last.q[8]];
    let d = [
        [j.jacobian[(6, 0)], j.jacobian[(6, 1)]],
        [j.jacobian[(7, 0)], j.jacobian[(7, 1)]],
    ];
    Ok((p, d))
}

/// The result of [`optimize`].
pub struct Outcome {
    /// Gradient steps taken.
    pub iterations: usize,
    /// Rollouts run (line-search trials included).
    pub rollouts: usize,
    /// Optimized initial velocity of the blue ball.
    pub v: [f64; 2],
    /// The yellow ball's final position.
    pub p: [f64; 2],
    /// `‖p − p_target‖`.
    pub error: f64,
    /// `(iteration, loss, error)` at every accepted step.
    pub history: Vec<(usize, f64, f64)>,
}

fn loss(p: &[f64; 2]) -> f64 {
    10.0 * ((p[0] - TARGET[0]).powi(2) + (p[1] - TARGET[1]).powi(2))
}

/// Gradient descent from [`V0`] (module docs) until the error is below
/// `tol` or `max_iters` steps.
pub fn optimize(tol: f64, max_iters: usize) -> Result<Outcome, String> {
    let w = world();
    let mut v = V0;
    let (mut p, mut d) = rollout(&w, v, Method::Unrolled)?;
    let mut rollouts = 1;
    let mut l = loss(&p);
    let mut history = vec![(0, l, (l / 10.0).sqrt())];
    let mut alpha = 0.5;
    let mut it = 0;
    while it < max_iters && (l / 10.0).sqrt() >= tol {
        // ∇L = 20 Jᵀ (p − p_target)
        let r = [p[0] - TARGET[0], p[1] - TARGET[1]];
        let g = [
            20.0 * (d[0][0] * r[0] + d[1][0] * r[1]),
            20.0 * (d[0][1] * r[0] + d[1][1] * r[1]),
        ];
        let mut step = alpha;
        loop {
            let vn = [v[0] - step * g[0], v[1] - step * g[1]];
            let (pn, dn) = rollout(&w, vn, Method::Unrolled)?;
            rollouts += 1;
            let ln = loss(&pn);
            if ln < l {
                (v, p, d, l) = (vn, pn, dn, ln);
                break;
            }
            step *= 0.5;
            if step < 1e-12 {
                return Err(format!("no descent at iteration {it}: loss {l:e}"));
            }
        }
        // Let the step grow back after a backtracked one.
        alpha = (2.0 * step).min(0.5);
        it += 1;
        history.push((it, l, (l / 10.0).sqrt()));
    }
    Ok(Outcome {
        iterations: it,
        rollouts,
        v,
        p,
        error: (l / 10.0).sqrt(),
        history,
    })
}

#[allow(dead_code)]
fn main() {
    let (mut tol, mut iters) = (1e-6, 1000);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let val = args.next().and_then(|s| s.parse::<f64>().ok());
        match (a.as_str(), val) {
            ("--tol", Some(x)) if x > 0.0 => tol = x,
            ("--iters", Some(x)) if x >= 0.0 => iters = x as usize,
            _ => {
                eprintln!("unknown argument {a} (expected --tol X, --iters N)");
                std::process::exit(2);
            }
        }
    }
    // The gradient at the initial guess by every method.
    let w = world();
    for m in [Method::Ift, Method::Lift, Method::Unrolled, Method::Fd] {
        match rollout(&w, V0, m) {
            Ok((_, d)) => println!("gradient check at v0 = {V0:?}, {m:?}: dp/dv = {d:?}"),
            Err(e) => println!("gradient check at v0 = {V0:?}, {m:?}: {e}"),
        }
    }
    let t = std::time::Instant::now();
    let out = optimize(tol, iters).unwrap_or_else(|e| panic!("{e}"));
    for (k, l, e) in &out.history {
        if *k < 10 || k % 10 == 0 || *k == out.iterations {
            println!("iteration {k:4}: loss {l:.3e}, target error {e:.3e}");
        }
    }
    println!(
        "\nJade's two-ball targeting, lcp + ccd, gradient descent ({} iterations, {} rollouts, {:.2} s):\n  \
         initial velocity ({:.6}, {:.6}) m/s, final position ({:.6}, {:.6}), target error {:.2e} \
         (Jade: 1.56e-3, Nimble: 2.49e-2)",
        out.iterations,
        out.rollouts,
        t.elapsed().as_secs_f64(),
        out.v[0],
        out.v[1],
        out.p[0],
        out.p[1],
        out.error
    );
}
