//! Todorov's iteration table (ICRA 2010), reproduced as a trend with
//! `implicit_ncp`: piles of 5, 10 and 15 boxes dropped onto the ground,
//! μ ∈ {0.1, 0.5, 1, 2}; per step with contact, the mean inner iterations,
//! the share of iterations whose full Newton step was accepted, and the
//! mean number of contacts. No warm start (as in the paper's table). A
//! step may take more than one contact-space solve (`lin.`: the
//! linearizations of the driver, `contact::delassus`); the iterations are
//! summed over them.
//!
//! ```text
//! cargo run --release --features examples --example todorov_table [-- --method levenberg_marquardt] [--steps N]
//! ```

use dualsim::contact::SolverKind;
use dualsim::contact::implicit_ncp::{ImplicitNcp, MethodName, Params};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

/// Paper's table: (n_b, μ) → (iterations, Newton share).
const PAPER: [[(f64, f64); 3]; 4] = [
    [(3.8, 0.99), (4.8, 0.98), (6.5, 0.90)],
    [(2.6, 0.95), (5.3, 0.85), (7.5, 0.73)],
    [(2.8, 0.90), (4.9, 0.71), (10.2, 0.60)],
    [(2.9, 0.88), (4.6, 0.71), (16.2, 0.55)],
];

fn pile(n: usize, mu: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::ImplicitNcp;
    let mat = Material {
        friction: mu,
        restitution: 0.0,
    };
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat,
    });
    // A loose pile: rows of three boxes (0.2 m cubes), each row on the
    // one below and turned by 90°, dropped from 1 cm, with small
    // deterministic offsets and tilts.
    let mut pos = Vec::new();
    let mut rot = Vec::new();
    for i in 0..n {
        let (row, col) = (i / 3, i % 3);
        let jitter = |k: usize| 0.01 * (((i * 7 + k * 13) % 11) as f64 / 10.0 - 0.5);
        let (x, y) = if row % 2 == 0 {
            (0.22 * (col as f64 - 1.0), 0.0)
        } else {
            (0.0, 0.22 * (col as f64 - 1.0))
        };
        pos.push([x + jitter(1), y + jitter(2), 0.11 + 0.21 * row as f64]);
        let yaw = if row % 2 == 0 {
            0.0
        } else {
            std::f64::consts::FRAC_PI_2
        } + jitter(3);
        rot.push(
            *nalgebra::UnitQuaternion::from_euler_angles(jitter(4), jitter(5), yaw).quaternion(),
        );
        w.add_body(
            &format!("box{i}"),
            1.0,
            Mat3::identity() * (0.2 * 0.2 / 6.0),
            Some(Shape::Box {
                half_extents: Vec3::repeat(0.1),
            }),
            mat,
        )
        .unwrap();
    }
    let mut x0 = State::at_rest(&w.model, &pos);
    for (i, r) in rot.iter().enumerate() {
        let k = w.model.bodies[i].idx_q;
        x0.q[k + 3] = r.w;
        x0.q[k + 4] = r.i;
        x0.q[k + 5] = r.j;
        x0.q[k + 6] = r.k;
    }
    (w, x0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let method = match arg("--method").as_deref() {
        None | Some("dogleg") => MethodName::Dogleg,
        Some("levenberg_marquardt") => MethodName::LevenbergMarquardt,
        Some(m) => panic!("unknown --method {m} (dogleg, levenberg_marquardt)"),
    };
    let steps: usize = arg("--steps").map_or(100, |s| s.parse().expect("--steps N"));
    let tolerance: f64 = arg("--tolerance").map_or(1e-8, |s| s.parse().expect("--tolerance T"));
    let inner: f64 =
        arg("--inner-tolerance").map_or(1e-12, |s| s.parse().expect("--inner-tolerance T"));
    let backend = ImplicitNcp {
        params: Params {
            method,
            inner_tolerance: inner,
            ..Params::default()
        },
    };
    println!(
        "implicit_ncp ({method:?}), h = 0.01, {steps} steps, no warm start; paper in brackets"
    );
    println!("| μ | 5 boxes | 10 boxes | 15 boxes |");
    println!("|---|---|---|---|");
    for (mi, mu) in [0.1, 0.5, 1.0, 2.0].into_iter().enumerate() {
        let mut cells = Vec::new();
        for (ni, n) in [5, 10, 15].into_iter().enumerate() {
            let (mut w, mut s) = pile(n, mu);
            w.params.tolerance = tolerance;
            let u = w.zero_control();
            let (mut iters, mut accepted, mut with_contact, mut contacts, mut solves) =
                (0, 0, 0, 0, 0);
            let mut failed = 0;
            for k in 0..steps {
                let p = w.problem(&s, &u);
                let (sol, st) = match backend.solve_with_stats(&p) {
                    Ok(x) => x,
                    Err(e) => {
                        // Counted, and the rollout goes on with an `ipm`
                        // step so that the later states are the same kind
                        // of pile.
                        failed += 1;
                        if std::env::var("TABLE_TRACE").is_ok() {
                            eprintln!("{n} boxes, μ = {mu}: step {k}: {e}");
                        }
                        let mut wi = w.clone();
                        wi.solver = SolverKind::Ipm;
                        let out = dualsim::sim::step(&wi, &s, &u)
                            .unwrap_or_else(|e| panic!("ipm step {k}: {e}"));
                        s = out.state;
                        continue;
                    }
                };
                if !sol.contacts.is_empty() {
                    with_contact += 1;
                    solves += st.solves;
                    iters += st.iterations;
                    accepted += st.newton_accepted;
                    contacts += sol.contacts.len();
                }
                s = State {
                    q: sol.q_next,
                    v: sol.v_next,
                };
            }
            let per = iters as f64 / with_contact.max(1) as f64;
            let share = accepted as f64 / iters.max(1) as f64;
            let nc = contacts as f64 / with_contact.max(1) as f64;
            let outer = solves as f64 / with_contact.max(1) as f64;
            let (pi, ps) = PAPER[mi][ni];
            cells.push(format!(
                "{per:.1} it ({outer:.1} lin.), {:.0} % Newton, {nc:.0} contacts, {failed} failed [{pi} it, {:.0} %]",
                100.0 * share,
                100.0 * ps
            ));
        }
        println!("| {mu} | {} |", cells.join(" | "));
    }
}
