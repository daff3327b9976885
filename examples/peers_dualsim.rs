//! The dualsim side of the peer comparison (`bench/peers/`): builds the
//! scenes described in `bench/peers/scenes.json` (written by
//! `bench/peers/scenes.py`, which the MuJoCo / Nimble / Pinocchio side reads
//! too) and prints one JSON line per figure with median timings and the
//! quantities that show the runs are comparable (resting height,
//! penetration, failed steps, `τ` / `q̈` of the tree).
//!
//! ```text
//! cargo run --release --features examples --example peers_dualsim -- --scenes bench/peers/scenes.json \
//!     [--only box,box_jacobian,pile120,sphere_pile,humanoid] [--reps 200] [--budget 20]
//! ```
//!
//! What is timed (wall clock, `Instant`):
//! * `box_step`: one f64 `step` of the settled resting box; steps are
//!   chained (the state stays at rest), timed in batches of `batch` steps,
//!   the figure is the median batch time / `batch`.
//! * `box_jacobian`: one `step_jacobian_with` call by `ift` with respect
//!   to `q`, `v` and `u` (3 nv columns; it returns the next state too),
//!   chained as `rollout_jacobian` chains them, median of single calls;
//!   also from the same settled state each call (`step_jacobian`, cold).
//! * `pile120`, `sphere_pile`: the whole rollout (wall time of all steps),
//!   median over repetitions (at least one; more while within `--budget`).
//! * `humanoid_*`: `rnea`, `aba`, `rnea_derivatives`, `aba_derivatives`
//!   on the tree imported from the URDF, median batch time / `batch`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dualsim::diff::{DiffOptions, Method, Param, step_jacobian, step_jacobian_with};
use dualsim::dynamics::{
    aba::aba, aba_derivatives::aba_derivatives, rnea::rnea, rnea_derivatives::rnea_derivatives,
    urdf,
};
use dualsim::math::Vec3;
use dualsim::prelude::*;
use serde_json::{Value, json};

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// Median seconds per call of `f`, timed in `reps` batches of `batch` calls
/// after `warmup` calls.
fn time_batched(reps: usize, batch: usize, warmup: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..warmup {
        f();
    }
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        for _ in 0..batch {
            f();
        }
        t.push(t0.elapsed().as_secs_f64() / batch as f64);
    }
    median(t)
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("scenes.json: `{k}` is not a number"))
}

fn vecf(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn ground(friction: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction,
            restitution: 0.0,
        },
    }
}

fn emit(v: Value) {
    println!("{v}");
}

/// The cube resting on the plane, settled for `settle_steps`.
fn box_world(s: &Value) -> (World<f64>, State<f64>) {
    let (edge, mass, mu) = (num(s, "edge"), num(s, "mass"), num(s, "friction"));
    let mut w = World::<f64>::new(num(s, "dt"));
    w.add_body(
        "box",
        mass,
        Mat3::identity() * (mass * edge * edge / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(edge / 2.0),
        }),
        Material {
            friction: mu,
            restitution: 0.0,
        },
    )
    .unwrap();
    w.statics.push(ground(mu));
    let x0 = State::at_rest(&w.model, &[[0.0, 0.0, edge / 2.0]]);
    let n = s["settle_steps"].as_u64().unwrap() as usize;
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), n).unwrap();
    (w, traj.last().clone())
}

struct Run {
    steps: usize,
    failed: usize,
    capped: usize,
    max_penetration: f64,
    iterations: Vec<usize>,
    last: State<f64>,
}

/// Steps `steps` times; a failed step (solver error) is counted and the
/// run stops there.
fn run(w: &World<f64>, x0: &State<f64>, steps: usize) -> Run {
    let u = w.zero_control();
    let mut x = x0.clone();
    let mut ws = dualsim::contact::Workspace::default();
    let mut r = Run {
        steps: 0,
        failed: 0,
        capped: 0,
        max_penetration: 0.0,
        iterations: Vec::with_capacity(steps),
        last: x0.clone(),
    };
    for _ in 0..steps {
        // Chained as a rollout (the backend's workspace; `ipm`'s contact
        // warm start is opt-in and off by default).
        match dualsim::sim::step_with(w, &x, &u, &mut ws) {
            Ok(out) => {
                r.steps += 1;
                r.capped += out.stats.capped as usize;
                r.max_penetration = r.max_penetration.max(out.stats.max_penetration);
                r.iterations.push(out.stats.iterations);
                x = out.state;
            }
            Err(e) => {
                eprintln!("peers_dualsim: step {} failed: {e}", r.steps);
                r.failed += 1;
                break;
            }
        }
    }
    r.last = x;
    r
}

fn pile_figure(name: &str, w: &World<f64>, x0: &State<f64>, steps: usize, budget: f64) {
    let mut times = Vec::new();
    let t_all = Instant::now();
    let mut last = None;
    while times.is_empty() || (times.len() < 5 && t_all.elapsed().as_secs_f64() < budget) {
        let t0 = Instant::now();
        let r = run(w, x0, steps);
        times.push(t0.elapsed().as_secs_f64());
        last = Some(r);
    }
    let r = last.unwrap();
    let free: Vec<_> = w.model.bodies.iter().filter(|b| b.is_free_root()).collect();
    let zmin = free
        .iter()
        .map(|b| r.last.q[b.idx_q + 2])
        .fold(f64::INFINITY, f64::min);
    let mut it = r.iterations.clone();
    it.sort();
    emit(json!({
        "engine": "dualsim", "figure": name, "median_s": median(times.clone()), "reps": times.len(),
        "bodies": free.len(), "steps": steps, "steps_done": r.steps, "failed_steps": r.failed,
        "capped_steps": r.capped, "max_penetration": r.max_penetration,
        "min_body_z": zmin,
        "median_iterations": it.get(it.len() / 2).copied().unwrap_or(0),
    }));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let scenes_path =
        PathBuf::from(opt("--scenes").unwrap_or_else(|| "bench/peers/scenes.json".into()));
    let reps: usize = opt("--reps")
        .map(|s| s.parse().expect("--reps N"))
        .unwrap_or(200);
    let budget: f64 = opt("--budget")
        .map(|s| s.parse().expect("--budget SECONDS"))
        .unwrap_or(20.0);
    let only =
        opt("--only").unwrap_or_else(|| "box,box_jacobian,pile120,sphere_pile,humanoid".into());
    let want = |k: &str| only.split(',').any(|o| o == k);
    let scenes: Value =
        serde_json::from_str(&std::fs::read_to_string(&scenes_path).expect("read scenes.json"))
            .expect("parse scenes.json");
    // Paths in scenes.json are relative to the repository root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let batch = scenes["timing"]["batch"].as_u64().unwrap_or(10) as usize;

    if want("box") || want("box_jacobian") {
        let s = &scenes["box"];
        let (w, x) = box_world(s);
        let u = w.zero_control();
        let half = num(s, "edge") / 2.0;
        if want("box") {
            let out = step(&w, &x, &u).unwrap();
            let mut xc = x.clone();
            // Chained steps as in a rollout (the backend's workspace).
            let mut ws = dualsim::contact::Workspace::default();
            let t = time_batched(reps, batch, 20, || {
                let out = dualsim::sim::step_with(&w, &xc, &u, &mut ws).unwrap();
                xc = black_box(out.state);
            });
            let last = dualsim::sim::step_with(&w, &xc, &u, &mut ws).unwrap();
            // The criterion benches' protocol: every step from the same
            // settled state, each a cold `step`.
            let t_fixed = time_batched(reps, batch, 20, || {
                black_box(step(&w, black_box(&x), &u).unwrap());
            });
            emit(json!({
                "engine": "dualsim", "figure": "box_step", "median_s": t, "reps": reps, "batch": batch,
                "median_s_from_settled_state": t_fixed, "iterations_after_timing": last.stats.iterations,
                "z": out.state.q[2], "penetration": half - out.state.q[2],
                "max_penetration_solver": out.stats.max_penetration,
                "vz": out.state.v[2], "iterations": out.stats.iterations, "contacts": out.stats.contacts,
                "z_after_timing": xc.q[2],
            }));
        }
        if want("box_jacobian") {
            let nv = w.model.nv;
            let mut ps: Vec<Param> = (0..nv).map(Param::Q).collect();
            ps.extend((0..nv).map(Param::V));
            ps.extend((0..nv).map(Param::U));
            let o = DiffOptions::default();
            let j = step_jacobian(&w, &x, &u, &ps, Method::Ift, &o).unwrap();
            let jr = (reps / 2).max(20);
            // Chained as in a rollout (`rollout_jacobian`'s protocol: each
            // step and its Jacobian from one solve, started from the
            // previous step's contacts through the workspace).
            let mut ws = dualsim::contact::Workspace::default();
            let mut xc = x.clone();
            let t = time_batched(jr, 1, 10, || {
                let sj = step_jacobian_with(&w, &xc, &u, &ps, Method::Ift, &o, &mut ws).unwrap();
                xc = black_box(sj).next;
            });
            // Every call from the same settled state, a cold solve each.
            let t_fixed = time_batched(jr, 1, 10, || {
                black_box(step_jacobian(&w, &x, &u, &ps, Method::Ift, &o).unwrap());
            });
            // ∂vz⁺/∂uz: a resting box's vertical velocity does not respond to a
            // small vertical force (contact holds), h/m without contact.
            let row_vz = nv + 2;
            emit(json!({
                "engine": "dualsim", "figure": "box_jacobian", "median_s": t, "reps": jr,
                "median_s_from_settled_state": t_fixed,
                "method": "ift", "rows": j.jacobian.nrows(), "cols": j.jacobian.ncols(),
                "dvz_duz": j.jacobian[(row_vz, 2 * nv + 2)], "dvx_dux": j.jacobian[(nv, 2 * nv)],
            }));
        }
    }

    if want("pile120") {
        let s = &scenes["pile120"];
        let (r, m, mu) = (num(s, "radius"), num(s, "mass"), num(s, "friction"));
        let mut w = World::<f64>::new(num(s, "dt"));
        let pos: Vec<[f64; 3]> = s["positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let p = vecf(p);
                [p[0], p[1], p[2]]
            })
            .collect();
        for i in 0..pos.len() {
            w.add_body(
                &format!("s{i}"),
                m,
                Mat3::identity() * (0.4 * m * r * r),
                Some(Shape::Sphere { radius: r }),
                Material {
                    friction: mu,
                    restitution: 0.0,
                },
            )
            .unwrap();
        }
        w.statics.push(ground(mu));
        let x0 = State::at_rest(&w.model, &pos);
        pile_figure(
            "pile120",
            &w,
            &x0,
            s["steps"].as_u64().unwrap() as usize,
            budget,
        );
    }

    if want("sphere_pile") {
        let s = &scenes["sphere_pile"];
        let path = root.join(s["toml"].as_str().unwrap());
        let scene = dualsim::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        pile_figure(
            "sphere_pile",
            &scene.world,
            &scene.initial,
            scene.steps,
            budget,
        );
    }

    if want("humanoid") {
        let s = &scenes["humanoid"];
        let path = root.join(s["urdf"].as_str().unwrap());
        let robot =
            urdf::load_file(&path, urdf::BaseJoint::Floating).unwrap_or_else(|e| panic!("{e}"));
        let m = robot.model;
        let q = DVec::from_vec(vecf(&s["q"]));
        let v = DVec::from_vec(vecf(&s["v"]));
        let a = DVec::from_vec(vecf(&s["a"]));
        let tau = DVec::from_vec(vecf(&s["tau"]));
        assert_eq!((q.len(), v.len()), (m.nq, m.nv), "humanoid state sizes");
        let mut d = m.data();
        let tau_out: Vec<f64> = rnea(&m, &mut d, &q, &v, &a).iter().copied().collect();
        let ddq_out: Vec<f64> = aba(&m, &mut d, &q, &v, &tau).iter().copied().collect();
        let hreps = reps.max(100);
        let hb = batch.max(10);
        let t_rnea = time_batched(hreps, hb, 100, || {
            black_box(rnea(&m, &mut d, black_box(&q), &v, &a)[0]);
        });
        let t_aba = time_batched(hreps, hb, 100, || {
            black_box(aba(&m, &mut d, black_box(&q), &v, &tau)[0]);
        });
        let t_drnea = time_batched(hreps, hb, 50, || {
            rnea_derivatives(&m, &mut d, black_box(&q), &v, &a);
            black_box(d.dtau_dq[(0, 0)]);
        });
        let t_daba = time_batched(hreps, hb, 50, || {
            aba_derivatives(&m, &mut d, black_box(&q), &v, &tau);
            black_box(d.ddq_dq[(0, 0)]);
        });
        let common = json!({"nq": m.nq, "nv": m.nv, "bodies": m.bodies.len()});
        for (fig, t) in [
            ("humanoid_rnea", t_rnea),
            ("humanoid_aba", t_aba),
            ("humanoid_rnea_derivatives", t_drnea),
            ("humanoid_aba_derivatives", t_daba),
        ] {
            emit(
                json!({"engine": "dualsim", "figure": fig, "median_s": t, "reps": hreps, "batch": hb,
                        "model": common}),
            );
        }
        emit(
            json!({"engine": "dualsim", "figure": "humanoid_values", "tau": tau_out, "ddq": ddq_out}),
        );
    }
}
