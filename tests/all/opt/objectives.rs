//! `dualsim::opt`, `dualsim hessian` and `dualsim optimize` against known
//! answers: the projectile's Hessian T²·I and its closed-form optimum, the
//! three Hessian methods on a contact scene within `check`'s tolerances,
//! located errors for bad objectives, and the box push at a reduced size.

use std::path::{Path, PathBuf};
use std::process::Command;

use dualsim::opt::{HessianMethod, Objective, OptMethod, OptimizeOptions};
use dualsim::scene;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scene_path(name: &str) -> PathBuf {
    root().join("examples/scenes").join(name)
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
}

fn max_abs(m: &dualsim::math::DMat<f64>) -> f64 {
    m.iter().fold(0.0_f64, |a, x| a.max(x.abs()))
}

/// T = steps · dt of the projectile scene.
const T: f64 = 0.5;

#[test]
fn projectile_hessian_is_t_squared_identity() {
    let s = scene::load(&scene_path("opt_projectile.toml")).unwrap();
    let obj = Objective::from_scene(&s).unwrap();
    assert_eq!(obj.dim(), 3);
    let d0 = vec![0.0; 3];
    let expected = dualsim::math::DMat::<f64>::identity(3, 3) * (T * T);
    // the gradient in closed form: T (x_T − target)
    let x_t = obj.outputs(&d0).unwrap();
    let target = [2.0, 0.5, 1.5];
    for m in HessianMethod::ALL {
        let d = obj.hessian(&d0, m).unwrap();
        let err = max_abs(&(&d.hessian - &expected));
        let tol = if m == HessianMethod::Fd { 1e-6 } else { 1e-12 };
        assert!(err <= tol, "{}: |H - T²I| = {err:e} > {tol:e}", m.name());
        for i in 0..3 {
            let g = T * (x_t[i] - target[i]);
            assert!(
                (d.gradient[i] - g).abs() <= 1e-12,
                "{}: gradient[{i}] {} vs {g}",
                m.name(),
                d.gradient[i]
            );
        }
    }
}

#[test]
fn hessian_command_prints_t_squared_identity_and_checks() {
    let out = bin()
        .args([
            "hessian",
            scene_path("opt_projectile.toml").to_str().unwrap(),
            "--check",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["wrt"], serde_json::json!(["ball.velocity"]));
    assert_eq!(v["method"], "lift");
    assert_eq!(v["passed"], true);
    for i in 0..3 {
        for j in 0..3 {
            let h = v["hessian"][i][j].as_f64().unwrap();
            let e = if i == j { T * T } else { 0.0 };
            assert!((h - e).abs() <= 1e-12, "H[{i}][{j}] = {h}");
        }
    }
}

#[test]
fn contact_scene_hessian_methods_agree_as_in_check() {
    // the box push at a reduced size (3 steps): sliding contact with friction
    let mut s = scene::load(&scene_path("opt_box_push.toml")).unwrap();
    s.steps = 3;
    let obj = Objective::from_scene(&s).unwrap();
    let d0 = vec![0.0; obj.dim()];
    let lift = obj.hessian(&d0, HessianMethod::Lift).unwrap();
    let unrolled = obj.hessian(&d0, HessianMethod::Unrolled).unwrap();
    let fd = obj.hessian(&d0, HessianMethod::Fd).unwrap();
    let scale = max_abs(&lift.hessian).max(1.0);
    // `check`'s tolerances: unrolled 1e-7, fd 1e-5, relative to max(1, |H|∞)
    let du = max_abs(&(&unrolled.hessian - &lift.hessian)) / scale;
    let df = max_abs(&(&fd.hessian - &lift.hessian)) / scale;
    assert!(du <= 1e-7, "lift vs unrolled {du:e}");
    assert!(df <= 1e-5, "lift vs fd {df:e}");
    // the Hessian is not trivially zero: contact couples the push to the position
    assert!(max_abs(&lift.hessian) > 1e-3, "{}", max_abs(&lift.hessian));
    // the gradient by hyper-duals equals the ift gradient
    let (v, g) = obj.gradient(&d0).unwrap();
    assert!((v - lift.value).abs() <= 1e-14 * v.abs().max(1.0));
    assert!(
        (&g - &lift.gradient).amax() <= 1e-9,
        "{:e}",
        (&g - &lift.gradient).amax()
    );
}

#[test]
fn newton_finds_the_projectile_optimum_in_closed_form() {
    let s = scene::load(&scene_path("opt_projectile.toml")).unwrap();
    let obj = Objective::from_scene(&s).unwrap();
    let x_t = obj.outputs(&[0.0; 3]).unwrap();
    let target = [2.0, 0.5, 1.5];
    for method in [OptMethod::Newton, OptMethod::GaussNewton, OptMethod::Lbfgs] {
        let opts = OptimizeOptions {
            method,
            target_cost: 1e-20,
            trust_radius: 10.0,
            ..Default::default()
        };
        let r = obj.clone();
        let rep = dualsim::opt::optimize(&r, &opts).unwrap();
        assert!(rep.converged, "{}: {rep:?}", method.name());
        // v* = v₀ + (target − x_T(v₀)) / T
        let v = rep.solution["ball.velocity"].as_array().unwrap();
        let v0 = [1.0, 0.0, 3.0];
        for i in 0..3 {
            let want = v0[i] + (target[i] - x_t[i]) / T;
            let got = v[i].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-8,
                "{}: v[{i}] = {got}, closed form {want}",
                method.name()
            );
        }
        if method == OptMethod::Newton {
            // a quadratic: one Newton step
            assert!(
                rep.iterations <= 2,
                "newton took {} iterations",
                rep.iterations
            );
        }
    }
}

/// Loads `src` as a scene file next to the projectile scene, returns the error.
fn objective_error(src: &str) -> scene::SceneError {
    scene::parse(src, "bad.toml").expect_err("the objective is refused")
}

const BASE: &str = "[sim]\ndt = 0.01\nsteps = 5\n\n[[body]]\nname = \"ball\"\nmass = 0.5\n\
inertia = [0.008, 0.008, 0.008]\nposition = [0.0, 0.0, 1.0]\nshape = { type = \"sphere\", radius = 0.1 }\n\n\
[[static]]\nname = \"ground\"\nshape = { type = \"plane\", normal = [0.0, 0.0, 1.0], offset = 0.0 }\n\n";

#[test]
fn bad_objectives_are_located() {
    // line 16 is `[objective]`, the fields follow
    let obj = |body: &str| format!("{BASE}[objective]\n{body}");
    let cases: [(&str, usize, usize, &str, &str); 6] = [
        (
            "of = [\"bal.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.velocity\"]\n",
            17,
            7,
            "objective.of[0]",
            "did you mean `ball`",
        ),
        (
            "of = [\"ball.position\"]\ntarget = [0, 0]\nwrt = [\"ball.velocity\"]\n",
            18,
            10,
            "objective.target",
            "one value per output row (3",
        ),
        (
            "of = [\"ball.position\"]\ntarget = [0, 0, 0]\nweights = [1, -1, 1]\nwrt = [\"ball.velocity\"]\n",
            19,
            15,
            "objective.weights[1]",
            ">= 0",
        ),
        (
            "of = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ground.friction\"]\n",
            19,
            8,
            "objective.wrt[0]",
            "static geometry",
        ),
        (
            "of = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.speed\"]\n",
            19,
            8,
            "objective.wrt[0]",
            "unknown body input field",
        ),
        (
            "of = [\"ball.mass\"]\ntarget = [0]\nwrt = [\"ball.velocity\"]\n",
            17,
            7,
            "objective.of[0]",
            "unknown output field",
        ),
    ];
    for (body, line, column, path, needle) in cases {
        let e = objective_error(&obj(body));
        assert_eq!(
            (e.line, e.column, e.path.as_str()),
            (line, column, path),
            "{e}"
        );
        assert!(e.to_string().contains(needle), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("bad.toml:{line}:{column}: {path}: ")),
            "{e}"
        );
    }
    // an unknown key and a negative regularization
    let e = objective_error(&obj(
        "of = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.velocity\"]\nsteps = 3\n",
    ));
    assert_eq!((e.line, e.path.as_str()), (20, "objective.steps"), "{e}");
    let e = objective_error(&obj(
        "of = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.velocity\"]\nregularization = -1\n",
    ));
    assert_eq!(
        (e.line, e.path.as_str()),
        (20, "objective.regularization"),
        "{e}"
    );
}

#[test]
fn bad_objective_exits_2_with_location_and_no_objective_too() {
    let dir = std::env::temp_dir().join(format!("dualsim-opt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, format!("{BASE}[objective]\nof = [\"ball.position\"]\ntarget = [0, 0]\nwrt = [\"ball.velocity\"]\n")).unwrap();
    let none = dir.join("none.toml");
    std::fs::write(&none, BASE).unwrap();
    for (file, needle) in [
        (&bad, "bad.toml:18:10: objective.target"),
        (&none, "no [objective]"),
    ] {
        for cmd in ["optimize", "hessian"] {
            let out = bin()
                .args([cmd, file.to_str().unwrap(), "--json"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(needle), "{cmd}: {err}");
            assert!(out.stdout.is_empty());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The box push at a reduced size (4 steps, 24 decision variables):
/// Newton and Gauss–Newton reach cost ≤ 1e-10, and the solution they
/// report, simulated again from the written scene, puts the box on the
/// goal.
#[test]
fn box_push_reduced_reaches_the_goal_and_out_is_loadable() {
    let mut s = scene::load(&scene_path("opt_box_push.toml")).unwrap();
    s.steps = 4;
    // a constant control repeats: per-step decision variables over 4 steps
    let obj = Objective::from_scene(&s).unwrap();
    assert_eq!(obj.dim(), 24);
    for method in [OptMethod::Newton, OptMethod::GaussNewton] {
        let opts = OptimizeOptions {
            method,
            target_cost: 1e-10,
            max_iterations: 60,
            ..Default::default()
        };
        let rep = dualsim::opt::optimize(&obj, &opts).unwrap();
        assert!(
            rep.converged && *rep.cost.last().unwrap() <= 1e-10,
            "{}: {rep:?}",
            method.name()
        );
        // the cost sequence is the best so far: non-increasing
        assert!(rep.cost.windows(2).all(|w| w[1] <= w[0]));
        let y = obj.outputs(&rep.delta).unwrap();
        assert!(
            (y[0] - 0.2).abs() <= 2e-5 && (y[1] - 0.05).abs() <= 2e-5,
            "{}: final position {y:?}",
            method.name()
        );
    }
    // the command line: --out writes a loadable scene whose rollout reaches the goal
    let dir = std::env::temp_dir().join(format!("dualsim-opt-out-{}", std::process::id()));
    let small = dir.join("push4.toml");
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read_to_string(scene_path("opt_box_push.toml"))
        .unwrap()
        .replace("steps = 8", "steps = 4");
    std::fs::write(&small, src).unwrap();
    let out_dir = dir.join("out");
    let out = bin()
        .args([
            "optimize",
            small.to_str().unwrap(),
            "--method",
            "gauss_newton",
            "--target-cost",
            "1e-10",
            "--json",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "method",
        "iterations",
        "cost",
        "gradient_norm",
        "converged",
        "solution",
        "wall_seconds",
    ] {
        assert!(v.get(k).is_some(), "no `{k}` in {v}");
    }
    assert_eq!(v["converged"], true);
    assert_eq!(v["solution"]["box.control"].as_array().unwrap().len(), 24);
    let written = scene::load(&out_dir.join("scene.toml")).unwrap();
    let traj = dualsim::sim::rollout(
        &written.world,
        &written.initial,
        &written.controls,
        written.steps,
    )
    .unwrap();
    let p = traj.last().q.clone();
    assert!(
        (p[0] - 0.2).abs() <= 2e-5 && (p[1] - 0.05).abs() <= 2e-5,
        "{p:?}"
    );
    assert!(Path::new(&out_dir.join("trajectory.json")).exists());
    // the written scene keeps the objective: re-optimizing starts converged
    let again = Objective::from_scene(&written).unwrap();
    assert!(again.value(&vec![0.0; again.dim()]).unwrap() <= 1e-9);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The arm reaching with running costs at a reduced size: the running
/// terms, the effort and the final term, summed by hand from the
/// simulated trajectory, equal the objective's value; the adjoint's
/// Hessian of that cost equals the hyper-dual `lift` one.
#[test]
fn running_costs_and_effort_sum_as_documented() {
    let mut s = scene::load(&scene_path("opt_arm7_reach.toml")).unwrap();
    s.steps = 5;
    let spec = s.objective.clone().unwrap();
    assert_eq!(spec.running.len(), 2);
    let obj = Objective::from_scene(&s).unwrap();
    let n = obj.dim();
    let d: Vec<f64> = (0..n).map(|i| 0.01 * ((i % 5) as f64 - 2.0)).collect();
    // by hand: outputs at every state, controls of every step
    let ks: Vec<usize> = (0..=s.steps).collect();
    let run = |of: &[String], ks: &[usize]| -> Vec<Vec<f64>> {
        let mut sp = spec.clone();
        sp.of = of.to_vec();
        let rows = {
            let w = &s.world;
            dualsim::diff::names::output_labels(
                w,
                &dualsim::diff::names::parse_outputs(w, &of.join(",")).unwrap(),
            )
            .len()
        };
        sp.target = vec![0.0; rows];
        sp.weights = vec![1.0; rows];
        sp.running.clear();
        sp.effort = None;
        let o = Objective::new(&s.world, &s.initial, &s.controls, s.steps, &sp).unwrap();
        o.outputs_at(&d, ks).unwrap()
    };
    let sq = |y: &[f64], t: &[f64], w: &[f64]| -> f64 {
        y.iter()
            .zip(t)
            .zip(w)
            .map(|((a, b), c)| 0.5 * c * (a - b) * (a - b))
            .sum()
    };
    let mut want = 0.0;
    let last = run(&spec.of, &[s.steps]);
    want += sq(&last[0], &spec.target, &spec.weights);
    for r in &spec.running {
        let ys = run(&r.of, &ks);
        for k in r.from..r.to.unwrap_or(s.steps) {
            want += sq(&ys[k], &r.target, &r.weights);
        }
    }
    let e = spec.effort.as_ref().unwrap();
    let (_, _, us) = obj.at(&d).unwrap();
    for k in 0..s.steps {
        want += sq(us.at(k).as_slice(), &e.target, &e.weights);
    }
    let got = obj.value(&d).unwrap();
    assert!(
        (got - want).abs() <= 1e-12 * want.abs(),
        "{got} vs by hand {want}"
    );
    let adj = obj.hessian(&d, HessianMethod::Adjoint).unwrap();
    let lift = obj.hessian(&d, HessianMethod::Lift).unwrap();
    let err = max_abs(&(&adj.hessian - &lift.hessian)) / max_abs(&lift.hessian).max(1.0);
    assert!(err <= 1e-9, "adjoint vs lift with running costs: {err:e}");
    let (_, gf) = obj.gradient_forward(&d).unwrap();
    let ge = (&adj.gradient - &gf).amax() / gf.amax().max(1.0);
    assert!(
        ge <= 1e-10,
        "adjoint vs forward (Gauss-Newton residual) gradient {ge:e}"
    );
}

/// Full DDP and trust-region Newton reach the same optimum of the arm
/// reaching through contact (effort makes it strict), at first-order
/// optimality; a problem whose decision variables are not per-step
/// controls is refused by DDP with a typed error.
#[test]
fn ddp_and_newton_agree_on_the_arm_reach() {
    let mut s = scene::load(&scene_path("opt_arm7_reach.toml")).unwrap();
    s.steps = 6;
    let obj = Objective::from_scene(&s).unwrap();
    let mut sols = Vec::new();
    for method in [OptMethod::Ddp, OptMethod::Newton] {
        let opts = OptimizeOptions {
            method,
            target_cost: 0.0,
            gradient_tolerance: 1e-9,
            max_iterations: 200,
            ..Default::default()
        };
        let rep = dualsim::opt::optimize(&obj, &opts).unwrap();
        assert!(rep.converged, "{}: {rep:?}", method.name());
        assert!(
            rep.termination.contains("first-order"),
            "{}: {}",
            method.name(),
            rep.termination
        );
        assert!(rep.relative_gradient_norm <= 1e-9);
        sols.push((rep.delta.clone(), *rep.cost.last().unwrap()));
    }
    let (a, b) = (&sols[0], &sols[1]);
    assert!((a.1 - b.1).abs() <= 1e-9 * b.1, "costs {} vs {}", a.1, b.1);
    let dd =
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
    let scale = b.0.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    assert!(
        dd <= 1e-4 * scale.max(1.0),
        "controls differ by {dd:e} (scale {scale:e})"
    );
    let c0 = obj.value(&vec![0.0; obj.dim()]).unwrap();
    assert!(a.1 < c0 * (1.0 - 1e-4), "ddp {} from {c0}", a.1);
    // DDP refuses a non-control decision variable
    let p = scene::load(&scene_path("opt_projectile.toml")).unwrap();
    let po = Objective::from_scene(&p).unwrap();
    let opts = OptimizeOptions {
        method: OptMethod::Ddp,
        ..Default::default()
    };
    let e = dualsim::opt::optimize(&po, &opts).unwrap_err();
    assert!(e.to_string().contains("per-step controls"), "{e}");
}

#[test]
fn bad_running_and_effort_terms_are_located() {
    let obj = |body: &str| {
        format!(
            "{BASE}[objective]\nof = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.velocity\"]\n{body}"
        )
    };
    // lines: 16 [objective], 17 of, 18 target, 19 wrt, 20 the new table
    let e = objective_error(&obj(
        "[[objective.running]]\nof = [\"ball.velocity\"]\ntarget = [0, 0]\n",
    ));
    assert_eq!(
        (e.line, e.path.as_str()),
        (22, "objective.running[0].target"),
        "{e}"
    );
    let e = objective_error(&obj(
        "[[objective.running]]\nof = [\"ball.velocity\"]\ntarget = [0, 0, 0]\nfrom = 4\nto = 2\n",
    ));
    assert!(e.to_string().contains("must be below"), "{e}");
    let e = objective_error(&obj(
        "[[objective.running]]\nof = [\"ball.velocity\"]\ntarget = [0, 0, 0]\nto = 9\n",
    ));
    assert_eq!(
        (e.line, e.path.as_str()),
        (23, "objective.running[0].to"),
        "{e}"
    );
    let e = objective_error(&obj("[objective.effort]\nweights = [1, 2]\n"));
    assert_eq!(
        (e.line, e.path.as_str()),
        (21, "objective.effort.weights"),
        "{e}"
    );
    assert!(
        e.to_string().contains("one value per control entry (6)"),
        "{e}"
    );
    let e = objective_error(&obj("[objective.effort]\ntarget = [1]\n"));
    assert!(e.to_string().contains("missing required field"), "{e}");
}

/// The box pushed for 10 steps of 50 ms with bounds on its wrench that
/// the unbounded optimum violates.
const BOUNDED_PUSH: &str = r#"
[sim]
dt = 0.05
steps = 10
gravity = [0.0, 0.0, -9.81]

[solver_params]
rho = 1e-4

[[body]]
name = "box"
mass = 1.0
inertia = [0.00667, 0.00667, 0.00667]
position = [0.0, 0.0, 0.1]
friction = 0.5
shape = { type = "box", half_extents = [0.1, 0.1, 0.1] }

[[static]]
name = "ground"
shape = { type = "plane", normal = [0.0, 0.0, 1.0], offset = 0.0 }
friction = 0.5

[[control]]
target = "box"
values = [6.0, 0.0, 0.0, 0.0, 0.0, 0.0]

[objective]
of = ["box.position"]
target = [0.2, 0.05, 0.1]
weights = [1.0, 1.0, 0.0]
wrt = ["box.control"]

[objective.effort]
weights = [1e-3]
target = [6.0, 0.0, 0.0, 0.0, 0.0, 0.0]

[[objective.bounds]]
wrt = "box.control"
lower = [5.0, -0.5, -5.0, -0.1, -0.1, -0.1]
upper = [6.3, 0.5, 5.0, 0.1, 0.1, 0.1]
"#;

#[test]
fn bounded_controls_newton_and_box_ddp_meet_the_kkt_conditions() {
    let s = scene::parse(BOUNDED_PUSH, "bounded_push.toml").unwrap();
    let obj = Objective::from_scene(&s).unwrap();
    let (lo, hi) = obj.bounds().map(|(l, h)| (l.to_vec(), h.to_vec())).unwrap();
    let mut sols = Vec::new();
    for method in [OptMethod::Ddp, OptMethod::Newton] {
        let opts = OptimizeOptions {
            method,
            target_cost: 0.0,
            gradient_tolerance: 1e-9,
            max_iterations: 100,
            ..Default::default()
        };
        let rep = dualsim::opt::optimize(&obj, &opts).unwrap();
        assert!(rep.converged, "{}: {rep:?}", method.name());
        let d = &rep.delta;
        // feasible
        for i in 0..d.len() {
            assert!(
                lo[i] <= d[i] && d[i] <= hi[i],
                "{}: entry {i}",
                method.name()
            );
        }
        // KKT with the gradient (the adjoint, checked against fd
        // elsewhere): free entries stationary, entries at a bound pushed
        // outward
        let (c, g) = obj.gradient(d).unwrap();
        let tol = 1e-7 * c;
        let mut active = 0;
        for i in 0..d.len() {
            if d[i] == lo[i] {
                assert!(
                    g[i] >= -tol,
                    "{}: g[{i}] = {:e} at lower",
                    method.name(),
                    g[i]
                );
                active += 1;
            } else if d[i] == hi[i] {
                assert!(
                    g[i] <= tol,
                    "{}: g[{i}] = {:e} at upper",
                    method.name(),
                    g[i]
                );
                active += 1;
            } else {
                assert!(
                    g[i].abs() <= tol,
                    "{}: g[{i}] = {:e} free",
                    method.name(),
                    g[i]
                );
            }
        }
        assert!(
            active >= 10,
            "{}: only {active} bounds active",
            method.name()
        );
        sols.push((rep.delta.clone(), c));
    }
    let (a, b) = (&sols[0], &sols[1]);
    assert!((a.1 - b.1).abs() <= 1e-9 * b.1, "costs {} vs {}", a.1, b.1);
    let dd =
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
    assert!(dd <= 1e-5, "controls differ by {dd:e}");
    // cem's samples stay in the box; lbfgs refuses bounds (typed)
    let opts = OptimizeOptions {
        method: OptMethod::Cem,
        max_iterations: 3,
        ..Default::default()
    };
    let rep = dualsim::opt::optimize(&obj, &opts).unwrap();
    assert!((0..rep.delta.len()).all(|i| lo[i] <= rep.delta[i] && rep.delta[i] <= hi[i]));
    let opts = OptimizeOptions {
        method: OptMethod::Lbfgs,
        ..Default::default()
    };
    let e = dualsim::opt::optimize(&obj, &opts).unwrap_err();
    assert!(
        matches!(
            e,
            dualsim::opt::OptError::Unsupported {
                method: "lbfgs",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_bounds_are_located() {
    let obj = |body: &str| {
        format!(
            "{BASE}[objective]\nof = [\"ball.position\"]\ntarget = [0, 0, 0]\nwrt = [\"ball.velocity\", \"ball.orientation\"]\n{body}"
        )
    };
    // lines: 16 [objective], 17 of, 18 target, 19 wrt, 20 [[objective.bounds]], 21 wrt, 22 …
    let cases: [(&str, usize, &str, &str); 6] = [
        (
            "wrt = \"ball.mass\"\nlower = [0.1]\n",
            21,
            "objective.bounds[0].wrt",
            "not a decision variable",
        ),
        (
            "wrt = \"ball.velocity\"\nlower = [0, 1]\n",
            22,
            "objective.bounds[0].lower",
            "one value per entry of `ball.velocity` (3)",
        ),
        (
            "wrt = \"ball.velocity\"\nlower = [1]\nupper = [0]\n",
            22,
            "objective.bounds[0].lower",
            "lower bound 1 > upper bound 0",
        ),
        (
            "wrt = \"ball.velocity\"\nupper = [-1, 0, 0]\n",
            22,
            "objective.bounds[0].upper",
            "outside this bound",
        ),
        (
            "wrt = \"ball.orientation\"\nupper = [1]\n",
            21,
            "objective.bounds[0].wrt",
            "not a vector quantity",
        ),
        (
            "wrt = \"ball.velocity\"\n",
            20,
            "objective.bounds[0]",
            "give `lower`, `upper` or both",
        ),
    ];
    for (body, line, path, msg) in cases {
        let e = objective_error(&obj(&format!("[[objective.bounds]]\n{body}")));
        assert_eq!((e.line, e.path.as_str()), (line, path), "{e}");
        assert!(e.to_string().contains(msg), "{e}");
    }
}

/// A ball pushed by 10 N for N = 100 steps of h = 10 ms without gravity
/// or contact ends at x_N = F h² N(N+1) / (2m) (semi-implicit Euler);
/// its mass is identified from x_N. From m = 1 the first L-BFGS trial
/// (step 1 along −∇f, ∇f ≈ 25) has a negative mass: a failed simulation
/// (the mass leaves its domain), which the line search must take as a
/// step too far, not as the end of the run.
#[test]
fn lbfgs_takes_a_failed_trial_as_a_step_too_far_and_identifies_the_mass() {
    let (f, h, n, m_true) = (10.0, 0.01, 100.0, 0.5);
    let x_n = f * h * h * n * (n + 1.0) / (2.0 * m_true);
    let src = format!(
        "[sim]\ndt = {h}\nsteps = {n}\ngravity = [0.0, 0.0, 0.0]\n\n[[body]]\nname = \"ball\"\nmass = 1.0\n\
         inertia = [0.004, 0.004, 0.004]\nposition = [0.0, 0.0, 1.0]\nshape = {{ type = \"sphere\", radius = 0.1 }}\n\n\
         [[control]]\ntarget = \"ball\"\nvalues = [{f}, 0.0, 0.0, 0.0, 0.0, 0.0]\n\n\
         [objective]\nof = [\"ball.position\"]\ntarget = [{x_n}, 0.0, 1.0]\nweights = [1.0, 0.0, 0.0]\nwrt = [\"ball.mass\"]\n"
    );
    let s = scene::parse(&src, "mass_id.toml").unwrap();
    let obj = Objective::from_scene(&s).unwrap();
    // the first trial of step 1 along −∇f leaves the mass's domain
    let (_, g) = obj.gradient(&[0.0]).unwrap();
    assert!(g[0] > 1.0, "∇f = {}", g[0]);
    assert!(
        obj.value(&[-g[0]]).is_err(),
        "a negative mass must not simulate"
    );
    let opts = OptimizeOptions {
        method: OptMethod::Lbfgs,
        target_cost: 0.0,
        gradient_tolerance: 1e-10,
        max_iterations: 100,
        ..Default::default()
    };
    let rep = dualsim::opt::optimize(&obj, &opts).unwrap();
    assert!(rep.error.is_none(), "{:?}", rep.error);
    assert!(rep.converged, "{rep:?}");
    let m = rep.solution["ball.mass"][0].as_f64().unwrap();
    assert!((m - m_true).abs() <= 1e-8, "mass {m}, closed form {m_true}");
}
