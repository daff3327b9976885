//! Tests of the Todorov backends (`implicit_ncp`, `convex`) and the
//! inverse dynamics of `convex`. Each test states its tolerance; worlds
//! are built through the Rust API (the same scenes as `contact_ipm.rs`).

use dualsim::contact::convex::{Convex, Params as ConvexParams, inverse};
use dualsim::contact::{FrictionCone, SolveError, SolverKind};
use dualsim::math::{Pose, Quat, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

const BACKENDS: [SolverKind; 2] = [SolverKind::ImplicitNcp, SolverKind::Convex];

use crate::common::fixtures::{cube_inertia, ground, mat, sphere_inertia};

fn run(world: &World<f64>, x0: &State<f64>, steps: usize) -> Trajectory<f64> {
    rollout(world, x0, &Controls::Constant(world.zero_control()), steps).expect("rollout")
}

fn max_penetration(traj: &Trajectory<f64>) -> f64 {
    traj.stats
        .iter()
        .map(|s| s.max_penetration)
        .fold(0.0, f64::max)
}

fn sphere_drop(kind: SolverKind) -> (World<f64>, State<f64>, usize) {
    let mut w = World::<f64>::new(0.1);
    w.solver = kind;
    w.add_body(
        "ball",
        1.0,
        sphere_inertia(1.0, 0.5),
        Some(Shape::Sphere { radius: 0.5 }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "fixed".into(),
        shape: Shape::Sphere { radius: 0.5 },
        pose: Pose::identity(),
        material: mat(0.5),
    });
    let x0 = State::at_rest(&w.model, &[[0.0, 0.0, 2.0]]);
    (w, x0, 20)
}

fn box_toss(kind: SolverKind, h: f64) -> (World<f64>, State<f64>, usize) {
    let mut w = World::<f64>::new(h);
    w.solver = kind;
    w.add_body(
        "box",
        1.0,
        cube_inertia(1.0, 0.5),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        mat(0.1),
    )
    .unwrap();
    w.statics.push(ground(0.1));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.5]]);
    x0.v.copy_from_slice(&[1.0, 1.5, 1.0, 0.5, -0.8, 2.0]);
    (w, x0, (5.0 / h).round() as usize)
}

fn sliding_box(kind: SolverKind) -> (World<f64>, State<f64>, usize) {
    let h = 0.002;
    let mut w = World::<f64>::new(h);
    w.solver = kind;
    w.gravity = Vec3::new(0.0, 0.0, -9.0);
    w.add_body(
        "box",
        1.0,
        cube_inertia(1.0, 0.5),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        mat(0.16),
    )
    .unwrap();
    w.statics.push(ground(0.16));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
    x0.v[0] = 2.0;
    (w, x0, (1.8 / h) as usize)
}

fn incline(kind: SolverKind, theta: f64, mu: f64) -> (World<f64>, State<f64>, usize) {
    let h = 0.01;
    let mut w = World::<f64>::new(h);
    w.solver = kind;
    let n = Vec3::new(-theta.sin(), 0.0, theta.cos());
    w.add_body(
        "box",
        1.0,
        cube_inertia(1.0, 0.5),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        mat(mu),
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "incline".into(),
        shape: Shape::Plane {
            normal: n,
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat(mu),
    });
    let c = n * 0.25;
    let mut x0 = State::at_rest(&w.model, &[[c.x, c.y, c.z]]);
    let r = Quat::new((-theta / 2.0).cos(), 0.0, (-theta / 2.0).sin(), 0.0);
    x0.q[3] = r.w;
    x0.q[4] = r.i;
    x0.q[5] = r.j;
    x0.q[6] = r.k;
    (w, x0, (2.0 / h).round() as usize)
}

/// `convex` is relaxed (R, κ): its resting gap and sticking creep are
/// bounded by these (module docs of `contact::convex`: gap ≈ h √(κ a),
/// creep ≈ R f).
const CONVEX_REST_GAP: f64 = 1e-4;

#[test]
fn sphere_drop_rests_on_fixed_sphere() {
    for kind in BACKENDS {
        let (w, x0, steps) = sphere_drop(kind);
        let traj = run(&w, &x0, steps);
        let q = &traj.last().q;
        let err = (Vec3::new(q[0], q[1], q[2]) - Vec3::new(0.0, 0.0, 1.0)).amax();
        println!("{kind}: sphere_drop centre error {err:.3e}");
        // implicit_ncp: exact complementarity (residual tolerance 1e-8);
        // convex: the barrier's rest gap.
        let tol = if kind == SolverKind::Convex {
            CONVEX_REST_GAP
        } else {
            1e-6
        };
        assert!(err < tol, "{kind}: centre off by {err}");
    }
}

#[test]
fn box_toss_comes_to_rest() {
    for kind in BACKENDS {
        for h in [0.05, 0.01] {
            let (w, x0, steps) = box_toss(kind, h);
            let traj = run(&w, &x0, steps);
            let s = traj.last();
            let vmax = s.v.amax();
            let pen = max_penetration(&traj);
            println!(
                "{kind} box_toss h={h}: z = {:.7}, |v|inf = {vmax:.3e}, max penetration {pen:.2e}",
                s.q[2]
            );
            let (ztol, vtol) = if kind == SolverKind::Convex {
                (CONVEX_REST_GAP, 1e-4)
            } else {
                (1e-6, 1e-6)
            };
            assert!((s.q[2] - 0.25).abs() < ztol, "{kind} h={h}: z = {}", s.q[2]);
            assert!(vmax < vtol, "{kind} h={h}: |v|inf = {vmax}");
        }
    }
}

#[test]
fn sliding_box_stopping_distance_and_deceleration() {
    let (v0, mu, g) = (2.0, 0.16, 9.0);
    let expected = v0 * v0 / (2.0 * mu * g);
    for kind in BACKENDS {
        let (w, x0, steps) = sliding_box(kind);
        let h = w.dt;
        let traj = run(&w, &x0, steps);
        let dist = traj.last().q[0] - x0.q[0];
        let rel = (dist - expected).abs() / expected;
        // the discrete closed form of the scheme (the continuous v₀²/2μg
        // differs from it by O(v₀ h), 1.4e-3 here)
        let discrete = crate::common::sliding_distance(v0, mu * g, h, steps);
        let rel_discrete = (dist - discrete).abs() / discrete;
        let (k0, k1) = ((0.1 / h) as usize, (1.2 / h) as usize);
        let pts: Vec<(f64, f64)> = (k0..k1)
            .map(|k| (k as f64 * h, traj.states[k].v[0]))
            .collect();
        let n = pts.len() as f64;
        let (mt, mv) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let slope = pts.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum::<f64>()
            / pts.iter().map(|p| (p.0 - mt).powi(2)).sum::<f64>();
        let rel_slope = (slope + mu * g).abs() / (mu * g);
        println!(
            "{kind} sliding_box: distance {dist:.6} (continuous {expected:.6}, rel {rel:.2e}; \
             discrete {discrete:.12}, rel {rel_discrete:.2e}), slope rel err {rel_slope:.2e}"
        );
        // implicit_ncp is exact (complementarity to 1e-8 of the impulse
        // scale): the discrete closed form to 1e-9 (measured 2.6e-15,
        // slope 7.7e-16). convex is smooth: its regularization R slows the
        // slide by a relative O(R) (module docs: creep ≈ R f), held to
        // 1e-4 (measured 1.4e-5, slope 1.5e-5).
        let tol = if kind == SolverKind::Convex {
            1e-4
        } else {
            1e-9
        };
        assert!(rel < 2e-3, "{kind}: distance {dist} vs {expected}");
        assert!(
            rel_discrete < tol,
            "{kind}: distance {dist} vs the scheme's {discrete} ({rel_discrete:e})"
        );
        assert!(rel_slope < tol, "{kind}: slope {slope} ({rel_slope:e})");
    }
}

#[test]
fn box_on_incline_sticks_below_friction_angle() {
    for kind in BACKENDS {
        let (w, x0, steps) = incline(kind, 20f64.to_radians(), 0.5);
        let traj = run(&w, &x0, steps);
        let d = traj.last().q.fixed_rows::<3>(0) - x0.q.fixed_rows::<3>(0);
        println!("{kind} incline stick: drift {:.3e} m over 2 s", d.norm());
        // convex creeps at R f (module docs): 2 s × 1e-4 × g sin θ h ≈ 7e-6 m.
        let tol = if kind == SolverKind::Convex {
            1e-4
        } else {
            1e-6
        };
        assert!(d.norm() < tol, "{kind}: drift {}", d.norm());
    }
}

#[test]
fn box_on_incline_slides_above_friction_angle() {
    let (theta, mu, g) = (30f64.to_radians(), 0.3, 9.81);
    for kind in BACKENDS {
        let (w, x0, steps) = incline(kind, theta, mu);
        let h = w.dt;
        let traj = run(&w, &x0, steps);
        let down = Vec3::new(-theta.cos(), 0.0, -theta.sin());
        let speed = |k: usize| down.dot(&traj.states[k].v.fixed_rows::<3>(0).into_owned());
        let (k0, k1) = (20, steps);
        let a = (speed(k1) - speed(k0)) / ((k1 - k0) as f64 * h);
        let expected = g * (theta.sin() - mu * theta.cos());
        let rel = (a - expected).abs() / expected;
        println!("{kind} incline slide: a = {a:.5} (expected {expected:.5}, rel {rel:.2e})");
        // the step gains exactly h a per step once sliding: implicit_ncp
        // (exact) to 1e-9 (measured 4.2e-15); convex (regularized by R)
        // to 1e-5 (measured 9.2e-7).
        let tol = if kind == SolverKind::Convex {
            1e-5
        } else {
            1e-9
        };
        assert!(rel < tol, "{kind}: a = {a} vs {expected} (rel {rel:e})");
    }
}

#[test]
fn pyramid_cone_is_refused() {
    for kind in BACKENDS {
        let (mut w, x0, _) = sliding_box(kind);
        w.friction_cone = FrictionCone::Pyramid;
        let err = step(&w, &x0, &w.zero_control()).unwrap_err().to_string();
        assert!(
            err.contains(kind.name()) && err.contains("pyramid"),
            "{kind}: {err}"
        );
    }
}

/// A random pile: `n` boxes and spheres resting on (or just above) the
/// ground, some overlapping in x, with random velocities.
fn random_pile(seed: u64, n: usize, kind: SolverKind) -> (World<f64>, State<f64>) {
    let mut rng = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((rng >> 11) as f64) / ((1u64 << 53) as f64)
    };
    let mut w = World::<f64>::new(0.01);
    w.solver = kind;
    let mut pos = Vec::new();
    for i in 0..n {
        let m = 0.5 + next();
        let mu = if i % 3 == 0 { 0.0 } else { 0.2 + next() };
        if i % 2 == 0 {
            let r = 0.1 + 0.05 * next();
            w.add_body(
                &format!("s{i}"),
                m,
                sphere_inertia(m, r),
                Some(Shape::Sphere { radius: r }),
                mat(mu),
            )
            .unwrap();
            pos.push([0.5 * i as f64, 0.1 * next(), r + 0.002 * next()]);
        } else {
            w.add_body(
                &format!("b{i}"),
                m,
                cube_inertia(m, 0.2),
                Some(Shape::Box {
                    half_extents: Vec3::repeat(0.1),
                }),
                mat(mu),
            )
            .unwrap();
            pos.push([0.5 * i as f64, 0.1 * next(), 0.1 + 0.002 * next()]);
        }
    }
    w.statics.push(ground(0.5));
    let mut x0 = State::at_rest(&w.model, &pos);
    for k in 0..x0.v.len() {
        x0.v[k] = 0.2 * (next() - 0.5);
    }
    (w, x0)
}

/// `inverse(forward(u)) = u` on random piles with 1–20 contacts, to 1e-9
/// relative to the largest control.
#[test]
fn convex_inverse_round_trip() {
    let mut checked = 0;
    for seed in 0..12u64 {
        let n = 1 + (seed as usize * 7) % 8;
        let (mut w, x0) = random_pile(seed, n, SolverKind::Convex);
        // The inverse recovers u from v⁺ through the regularization R: a
        // residual δ (m/s) left by the forward solve moves the recovered
        // impulse by δ / R and the control by δ / (R h). With Todorov's
        // constants of the closed form (R = 1e-2 relative, κ = 1e-6 J) and
        // the forward step solved to 1e-12 the round trip measures the
        // inverse, not the forward tolerance.
        w.backends.convex.regularization = 1e-2;
        w.backends.convex.barrier = 1e-6;
        w.params.tolerance = 1e-12;
        let mut u = w.zero_control();
        let mut s = seed;
        for k in 0..u.len() {
            s = s.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
            u[k] = 4.0 * (((s >> 11) as f64) / ((1u64 << 53) as f64) - 0.5);
        }
        let out = step(&w, &x0, &u).expect("forward step");
        let contacts = out.contacts.len();
        let backend = Convex {
            params: w.backends.convex,
        };
        let p = w.problem(&x0, &u);
        let inv = inverse(&backend, &p, &out.state.v).expect("inverse");
        let scale = u.amax().max(1.0);
        let err = (&inv.u - &u).amax() / scale;
        println!("seed {seed}: {n} bodies, {contacts} contacts, round trip rel err {err:.2e}");
        assert!(err < 1e-9, "seed {seed}: round trip error {err:.3e}");
        if contacts > 0 {
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} cases had contacts");
}

/// The same round trip on a floating-base robot in contact (the kneeling
/// quadruped of `tests/data/quadruped_convex.toml`: 14 velocities,
/// eight contacts on its links) and on a fixed-base robot without
/// contact (the double pendulum), with random joint torques and base
/// wrenches: the robots' rows of the inverse are the contact step's
/// impulse balance `h (RNEA(q, v, (v⁺ − v)/h) − u) = Wᵀ f`.
#[test]
fn convex_inverse_round_trip_robots() {
    for (file, min_contacts) in [
        ("tests/data/quadruped_convex.toml", 4),
        ("examples/scenes/double_pendulum.toml", 0),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let scene = dualsim::scene::load(&path).expect("scene");
        let mut w = scene.world.clone();
        w.solver = SolverKind::Convex;
        w.friction_cone = FrictionCone::Exact;
        w.backends.convex.regularization = 1e-2;
        w.backends.convex.barrier = 1e-6;
        w.params.tolerance = 1e-12;
        let mut x = scene.initial.clone();
        let mut s = 7u64;
        let mut worst: f64 = 0.0;
        let mut contacts = 0;
        for k in 0..20 {
            let mut u = w.zero_control();
            for e in u.iter_mut() {
                s = s.wrapping_mul(2862933555777941757).wrapping_add(3037000493);
                *e = 0.5 * (((s >> 11) as f64) / ((1u64 << 53) as f64) - 0.5);
            }
            let out = step(&w, &x, &u).expect("forward step");
            contacts = contacts.max(out.contacts.len());
            let backend = Convex {
                params: w.backends.convex,
            };
            let p = w.problem(&x, &u);
            let inv = inverse(&backend, &p, &out.state.v).expect("inverse");
            let err = (&inv.u - &u).amax() / u.amax().max(1.0);
            // 2e-8: the forward residual δ (≤ 1e-12) maps to δ / (R h) in
            // the control (R = 1e-2 relative, h = 5 ms here, 10 ms in the
            // piles above: 2e-8 at δ = 1e-12). The quadruped's step 7 is at
            // its residual's round-off floor, δ = 3.3e-13 … 5.3e-13 under
            // eight further Newton steps, and round-trips to 1.5e-8.
            assert!(err < 2e-8, "{file} step {k}: round trip error {err:.3e}");
            worst = worst.max(err);
            x = out.state;
        }
        println!("{file}: up to {contacts} contacts, worst round trip rel err {worst:.2e}");
        assert!(contacts >= min_contacts, "{file}: {contacts} contacts");
    }
}

/// A motion the model cannot produce (a candidate approaching through
/// the ground) is refused with a typed error.
#[test]
fn convex_inverse_refuses_penetrating_motion() {
    let (w, x0) = random_pile(3, 1, SolverKind::Convex);
    let mut v = x0.v.clone();
    v[2] = -1.0;
    let backend = Convex {
        params: ConvexParams::default(),
    };
    let u = w.zero_control();
    let p = w.problem(&x0, &u);
    match inverse(&backend, &p, &v) {
        Err(SolveError::Unsupported { backend, .. }) => assert_eq!(backend, "convex"),
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    // a next velocity of the wrong length is malformed input, not a
    // singular system
    let long = nalgebra::DVector::<f64>::zeros(v.len() + 1);
    match inverse(&backend, &p, &long) {
        Err(SolveError::InvalidInput { backend, what }) => {
            assert_eq!(backend, "convex");
            assert!(what.contains("v_next"), "{what}");
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// As R, κ → 0 `convex` tends to the complementarity solution, one step
/// at a time from the states of an `implicit_ncp` run (whose step is
/// exact): the largest difference of `v⁺`. Two runs: a frictionless box
/// tossed onto the ground (flight, impacts, rest; 40 states) and a box
/// sticking on a 20° incline (μ = 0.5). With friction and sliding the
/// model does not tend to complementarity: minimizing the contact-space
/// kinetic energy over the friction cone gives a sliding contact the
/// normal velocity μ‖v_t‖ (it glides at a height h μ ‖v_t‖; module docs
/// of `contact::convex`), so sliding states are left out of this test.
#[test]
fn convex_tends_to_complementarity() {
    let (mut wt, x0t, _) = box_toss(SolverKind::ImplicitNcp, 0.01);
    wt.materials[0].friction = 0.0;
    wt.statics[0].material.friction = 0.0;
    let toss = run(&wt, &x0t, 120);
    let (wi, x0i, _) = incline(SolverKind::ImplicitNcp, 20f64.to_radians(), 0.5);
    let stick = run(&wi, &x0i, 40);
    let cases: Vec<(&World<f64>, Vec<&State<f64>>)> = vec![
        (&wt, toss.states.iter().step_by(3).collect()),
        (&wi, stick.states.iter().step_by(2).collect()),
    ];
    println!(
        "| regularization | barrier (J) | frictionless toss: max |Δv⁺| | sticking: max |Δv⁺| |"
    );
    let mut last = [f64::INFINITY; 2];
    for (r, k) in [
        (1e-2, 1e-4),
        (1e-3, 1e-6),
        (1e-4, 1e-8),
        (1e-5, 1e-10),
        (1e-6, 1e-12),
    ] {
        let mut d = [0.0f64; 2];
        for (i, (w, states)) in cases.iter().enumerate() {
            let mut wc = (*w).clone();
            wc.solver = SolverKind::Convex;
            wc.backends.convex.regularization = r;
            wc.backends.convex.barrier = k;
            let u = w.zero_control();
            for s in states {
                let exact = step(w, s, &u).unwrap().state.v;
                let v = step(&wc, s, &u).unwrap().state.v;
                d[i] = d[i].max((&v - &exact).amax());
            }
        }
        println!("| {r:.0e} | {k:.0e} | {:.3e} | {:.3e} |", d[0], d[1]);
        for i in 0..2 {
            assert!(
                d[i] < last[i],
                "case {i}: no convergence: {} after {}",
                d[i],
                last[i]
            );
        }
        last = d;
    }
    assert!(last[0] < 1e-4 && last[1] < 1e-4, "closest {last:?}");
}

#[test]
fn step_in_dual_numbers_matches_f64() {
    use num_dual::DualSVec64;
    // the width every dual test uses (one direction seeded)
    type D = DualSVec64<8>;
    for kind in BACKENDS {
        // A sliding box (four sliding contacts, away from every kink).
        let (w, x0, _) = sliding_box(kind);
        let mut s = x0.clone();
        for _ in 0..100 {
            s = step(&w, &s, &w.zero_control()).unwrap().state;
        }
        let wd = w.cast::<D>();
        let mut sd: State<D> = State {
            q: s.q.map(D::from_re),
            v: s.v.map(D::from_re),
        };
        sd.v[0] = D::from_re(s.v[0]).derivative(0);
        let out_d = step(&wd, &sd, &wd.zero_control()).unwrap();
        let out = step(&w, &s, &w.zero_control()).unwrap();
        let primal = (out_d.state.q.map(|x| x.re) - &out.state.q).amax();
        // Central difference of q⁺ in v_x.
        let e = 1e-6;
        let mut sp = s.clone();
        sp.v[0] += e;
        let mut sm = s.clone();
        sm.v[0] -= e;
        let qp = step(&w, &sp, &w.zero_control()).unwrap().state.q;
        let qm = step(&w, &sm, &w.zero_control()).unwrap().state.q;
        let fd = (qp - qm) / (2.0 * e);
        let dual = out_d
            .state
            .q
            .map(|x| x.eps.unwrap_generic(nalgebra::Const::<8>, nalgebra::U1)[0]);
        let err = (&dual - &fd).amax();
        println!("{kind}: primal diff {primal:.2e}, |dq/dvx dual - fd| = {err:.2e}");
        assert!(primal < 1e-12, "{kind}: primal {primal}");
        assert!(err < 1e-6, "{kind}: derivative {err}");
    }
}

/// `dualsim inverse` on the trajectory of `dualsim run --out` of a box
/// pushed by per-step forces recovers those forces (to 1e-6 relative;
/// the forward step is solved to 1e-12).
#[test]
fn inverse_command_recovers_per_step_controls() {
    let dir = std::env::temp_dir().join(format!("dualsim-inverse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let steps = 30;
    let rows: Vec<[f64; 6]> = (0..steps)
        .map(|k| {
            let t = k as f64 * 0.01;
            [
                3.0 + 2.0 * (5.0 * t).sin(),
                1.0 - t,
                0.5 * t,
                0.0,
                0.0,
                0.1 * t,
            ]
        })
        .collect();
    let per_step = rows
        .iter()
        .map(|r| format!("{r:?}"))
        .collect::<Vec<_>>()
        .join(",\n  ");
    let scene = format!(
        r#"[sim]
dt = 0.01
steps = {steps}
solver = "convex"

[solver_params]
tolerance = 1e-12

[[body]]
name = "box"
mass = 1.5
inertia = [0.01, 0.01, 0.01]
position = [0.0, 0.0, 0.1]
friction = 0.3
shape = {{ type = "box", half_extents = [0.1, 0.1, 0.1] }}

[[static]]
name = "ground"
shape = {{ type = "plane", normal = [0.0, 0.0, 1.0] }}
friction = 0.3

[[control]]
target = "box"
per_step = [
  {per_step}
]
"#
    );
    let path = dir.join("push.toml");
    std::fs::write(&path, scene).unwrap();
    let bin = env!("CARGO_BIN_EXE_dualsim");
    let out = std::process::Command::new(bin)
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(bin)
        .args(["inverse", path.to_str().unwrap()])
        .arg(dir.join("trajectory.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["solver"], "convex");
    assert_eq!(doc["steps"], steps);
    let got = doc["controls"]["box"].as_array().unwrap();
    let mut worst: f64 = 0.0;
    for (k, row) in rows.iter().enumerate() {
        for d in 0..6 {
            let g = got[k][d].as_f64().unwrap();
            worst = worst.max((g - row[d]).abs() / 5.0);
        }
    }
    println!(
        "inverse of a pushed box: worst relative control error {worst:.2e}, max_residual {}",
        doc["max_residual"]
    );
    assert!(worst < 1e-6, "controls off by {worst}");
    // A backend without an inverse is refused (exit 2, naming it).
    let out = std::process::Command::new(bin)
        .args(["inverse", path.to_str().unwrap()])
        .arg(dir.join("trajectory.json"))
        .args(["--solver", "ipm"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ipm") && err.contains("inverse"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Todorov's pile experiment (`examples/todorov_table.rs`): five 0.2 m
/// boxes in two crossed rows dropped 1 cm onto the ground and onto each
/// other (one of the upper row falls 0.2 m past the lower), 100 steps of 10 ms with `implicit_ncp` at μ = 0.5: every step
/// converges (redundant box–box contacts, whose linearized problems can
/// be slightly inconsistent, go through the inexact-Newton acceptance of
/// `contact::delassus`), and the pile comes to rest without sinking.
#[test]
fn box_pile_converges_with_implicit_ncp() {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::ImplicitNcp;
    w.statics.push(ground(0.5));
    let mut pos = Vec::new();
    for i in 0..5 {
        let (row, col) = (i / 3, i % 3);
        let (x, y) = if row == 0 {
            (0.22 * (col as f64 - 1.0), 0.0)
        } else {
            (0.0, 0.22 * (col as f64 - 1.0))
        };
        pos.push([x, y, 0.11 + 0.21 * row as f64]);
        w.add_body(
            &format!("box{i}"),
            1.0,
            cube_inertia(1.0, 0.2),
            Some(Shape::Box {
                half_extents: Vec3::repeat(0.1),
            }),
            mat(0.5),
        )
        .unwrap();
    }
    let x0 = State::at_rest(&w.model, &pos);
    let traj = run(&w, &x0, 100);
    let last = traj.last();
    // Box 4 lands on box 1 (centre at 0.3 m); box 3 (at y = −0.22, clear
    // of the bottom row) falls to the ground beside it.
    for i in 0..5 {
        let z = last.q[w.model.bodies[i].idx_q + 2];
        let expected = if i == 4 { 0.3 } else { 0.1 };
        assert!((z - expected).abs() < 1e-6, "box {i}: z = {z}");
    }
    assert!(last.v.amax() < 1e-6, "|v| = {:e}", last.v.amax());
    assert!(max_penetration(&traj) < 1e-9);
}

/// `convex`'s derivatives on a sliding contact (the 30° incline's box,
/// μ = 0.3, and the sliding box): before the unknowns `(ρ, w)` the cone
/// slack was computed from `f` with 6 of its 16 digits (`q ≈ 1.6e-10`
/// from `f² ≈ 1e-4`), the root's residual stopped at 4e-10 and `ift`
/// differed from `lift` by 1.3e-6 and from `fd` by up to 7e-4 (relative).
/// Now every block of `check` is within its tolerance (lift 1e-9,
/// unrolled 1e-7, fd 1e-5 relative to max(1, ‖J‖∞)), with no `fd` column
/// skipped. Both are checked over their first 60 steps, in which the box
/// slides throughout (the sliding box stops after about 690 steps, the
/// incline's box never does) and which hold the event steps `check`
/// finds (35 of the sliding box, 51 of the incline): the whole-rollout
/// comparison takes about 100 rollouts of `convex` (about 50 iterations
/// a step), 16 s of CPU per scene at 60 steps against 6 minutes at 900.
#[test]
fn convex_check_passes_on_sliding_contacts() {
    use dualsim::diff::{CheckOptions, check};
    for file in [
        "examples/scenes/box_incline.toml",
        "examples/scenes/sliding_box.toml",
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let opts = dualsim::scene::LoadOptions {
            solver: Some(SolverKind::Convex),
        };
        let scene = dualsim::scene::load_with(&path, &opts).expect("scene");
        let copts = CheckOptions {
            diff: DiffOptions {
                fd_eps: 1e-7,
                ..CheckOptions::default().diff
            },
            ..Default::default()
        };
        let report = check(
            &scene.world,
            &scene.initial,
            &scene.controls,
            scene.steps.min(60),
            &copts,
        )
        .expect("check runs");
        let failed: Vec<_> = report.blocks.iter().filter(|b| !b.passed).collect();
        assert!(failed.is_empty(), "{file}: {failed:#?}");
        assert_eq!(report.fd_skipped_columns, 0, "{file}");
        let rollout = report.rollout.as_ref().expect("the rollout comparison ran");
        assert!(
            rollout.passed && rollout.skipped.is_empty(),
            "{file}: {rollout:#?}"
        );
        assert!(report.passed, "{file}");
    }
}

/// Distance from a cylinder (radius `r`, half-length `hl`, axis along
/// its body z, pose `q = (x, quaternion w i j k)`) to an axis-aligned box
/// (centre `c`, half extents `he`), independent of `collision`: the
/// smallest point–box distance over a dense sampling of the cylinder's
/// surface (0.5° around the axis, 0.1 mm along it, 1/60 of the radius
/// on the caps; error below 3e-6 m for the tilts of the test below).
fn cylinder_box_distance(q: &[f64], r: f64, hl: f64, c: [f64; 3], he: [f64; 3]) -> f64 {
    let rot = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
        q[3], q[4], q[5], q[6],
    ));
    let pos = Vec3::new(q[0], q[1], q[2]);
    let to_box = |p: Vec3<f64>| -> f64 {
        (0..3)
            .map(|k| ((p[k] - c[k]).abs() - he[k]).max(0.0).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (na, nz, nr) = (720, 3000, 60);
    let mut best = f64::INFINITY;
    for i in 0..na {
        let th = std::f64::consts::TAU * i as f64 / na as f64;
        let (ct, st) = (th.cos(), th.sin());
        for j in 0..=nz {
            let z = -hl + 2.0 * hl * j as f64 / nz as f64;
            best = best.min(to_box(pos + rot * Vec3::new(r * ct, r * st, z)));
        }
        for j in 0..=nr {
            let rr = r * j as f64 / nr as f64;
            for z in [-hl, hl] {
                best = best.min(to_box(pos + rot * Vec3::new(rr * ct, rr * st, z)));
            }
        }
    }
    best
}

/// `peg_in_hole` (examples/scenes, h = 0.02, μ = 0.3): under `convex` the
/// peg leaves its start x = 0.005 at step 3, where its lower end passes
/// the top edge of `wall_px` with 5–7 mm clearance and the step applies
/// 0.012 N s along −x there. Not a wrong gap and not another root: the
/// candidate's gap at `q⁺` is the cylinder–box distance (computed here
/// without `collision`, within 1e-5 m), the impulse lies on the friction
/// cone's boundary, and its normal velocity `φ(q⁺)/h` equals μ times the
/// peg's tangential speed there (1e-3 relative): Todorov's model
/// minimizes the contact-space kinetic energy over the friction cone and
/// leaves out complementarity, so a candidate whose `φ/h` is below
/// `μ ‖v_t‖` is pushed off until it glides at `φ = h μ ‖v_t‖` (the
/// "sliding contacts glide" of docs/backends.md), whether or not it
/// touched. `implicit_ncp` and `ipm` keep x = 0.005 (within 1e-4 m).
#[test]
fn convex_peg_glides_off_a_wall_it_passes() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/peg_in_hole.toml");
    let scene = dualsim::scene::load(&path).expect("scene");
    for kind in [SolverKind::ImplicitNcp, SolverKind::Ipm] {
        let mut w = scene.world.clone();
        w.solver = kind;
        let traj = run(&w, &scene.initial, scene.steps);
        let q = &traj.last().q;
        assert!(
            (q[0] - 0.005).abs() < 1e-4 && (q[2] - 0.15).abs() < 1e-4,
            "{kind:?}: peg ends at {:?}",
            &q.as_slice()[..3]
        );
    }
    let mut w = scene.world.clone();
    w.solver = SolverKind::Convex;
    let (h, mu) = (w.dt, 0.3);
    let wall = w
        .statics
        .iter()
        .find(|s| s.name == "wall_px")
        .expect("wall_px");
    let Shape::Box { half_extents } = &wall.shape else {
        panic!("wall_px is a box")
    };
    let (c, he) = (
        [
            wall.pose.translation.x,
            wall.pose.translation.y,
            wall.pose.translation.z,
        ],
        [half_extents.x, half_extents.y, half_extents.z],
    );
    let mut x = scene.initial.clone();
    let mut pushed = None;
    for k in 0..6 {
        let out = step(&w, &x, &w.zero_control()).expect("step");
        // wall_px's candidate: normal along −x, on the +x side
        if let Some(ci) = out
            .contacts
            .iter()
            .find(|ci| ci.normal.x < -0.9 && ci.point.x > 0.0 && ci.normal_impulse > 1e-3)
        {
            pushed = Some((k, out.state.clone(), ci.clone()));
            break;
        }
        x = out.state;
    }
    let (k, next, ci) = pushed.expect("convex pushes the peg off wall_px in the first 6 steps");
    let q = next.q.as_slice();
    let dist = cylinder_box_distance(q, 0.05, 0.15, c, he);
    // the peg's velocity at the contact point (ω in world coordinates)
    let v = next.v.as_slice();
    let r = ci.point - Vec3::new(q[0], q[1], q[2]);
    let vp = Vec3::new(v[0], v[1], v[2]) + Vec3::new(v[3], v[4], v[5]).cross(&r);
    let vt = vp - ci.normal * vp.dot(&ci.normal);
    let (yn, glide) = (ci.gap / h, mu * vt.norm());
    let cone = ci.tangent_impulse.norm() / (mu * ci.normal_impulse);
    println!(
        "step {}: impulse {:.4e} N s, normal {:?}, gap {:.6e} m, distance {:.6e} m, \
         phi/h {:.6} m/s, mu |v_t| {:.6} m/s, |f_T|/(mu f_N) {:.6}",
        k + 1,
        ci.normal_impulse,
        ci.normal.as_slice(),
        ci.gap,
        dist,
        yn,
        glide,
        cone
    );
    assert!(
        (ci.gap - dist).abs() < 1e-5,
        "gap {} vs distance {dist}",
        ci.gap
    );
    assert!(
        ci.gap > 4e-3,
        "the candidate does not touch: gap {}",
        ci.gap
    );
    assert!(
        (yn - glide).abs() < 1e-3 * glide,
        "phi/h {yn} vs mu |v_t| {glide}"
    );
    assert!((cone - 1.0).abs() < 1e-3, "|f_T| / (mu f_N) = {cone}");
    assert!(v[0] < -0.02, "the peg is pushed along -x: v_x = {}", v[0]);
}

/// `peg_in_hole` under `convex` from state 7 (the peg falls between the
/// hole's four walls, every wall contact gliding, symmetric in y): the
/// linearization loop diverges there and the barrier-path fallback finds
/// the root. Perturbations that break the symmetry (`fd`'s solves of
/// `dualsim check --samples 5`) can make the fallback's first stages
/// fail; it then went on at a reduction of 1.33 per stage, which it never
/// grew back, and ran out of stages ("no convergence after 30
/// iterations", residual 7.5e-2 or 1.2e-1) on these four. Each must now
/// solve, within 100 |δ| (∞-norm; the step's largest slope is 1/h = 50)
/// of the unperturbed `v⁺`. Not yet solved (docs/backends.md): the
/// perturbations of the y position (±2e-7), of the x angular velocity
/// (±2e-7) and of the x torque (±1e-7).
#[test]
fn convex_peg_squeeze_perturbed_steps_solve() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/peg_in_hole.toml");
    let mut scene = dualsim::scene::load(&path).expect("scene");
    scene.world.solver = SolverKind::Convex;
    let w = &scene.world;
    let u0 = w.zero_control();
    let mut x = scene.initial.clone();
    for _ in 0..7 {
        x = step(w, &x, &u0).expect("step").state;
    }
    let nominal = step(w, &x, &u0).expect("nominal step 7").state.v;
    // (v or u, index, δ): v1 the y velocity, v5 the z angular velocity,
    // u5 the z torque
    let cases: [(char, usize, f64); 4] = [
        ('v', 1, 1e-7),
        ('v', 5, -2e-7),
        ('u', 5, 1e-7),
        ('u', 5, -1e-7),
    ];
    for (kind, i, d) in cases {
        let (mut y, mut u) = (x.clone(), u0.clone());
        match kind {
            'v' => y.v[i] += d,
            _ => u[i] += d,
        }
        let out = step(w, &y, &u).unwrap_or_else(|e| panic!("{kind}{i} {d:+e}: {e}"));
        let dv = (&out.state.v - &nominal).amax();
        assert!(dv <= 100.0 * d.abs(), "{kind}{i} {d:+e}: |dv+| = {dv:e}");
    }
}
