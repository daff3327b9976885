//! Tests of the `single_level` and `bilevel` contact backends (issue 6).
//! Each test states its tolerance; worlds are built through the Rust API.

use dualsim::math::{DMat, Pose, Vec3};
use dualsim::prelude::*;

fn mat(mu: f64) -> Material<f64> {
    Material {
        friction: mu,
        restitution: 0.0,
    }
}

fn ground(mu: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat(mu),
    }
}

fn run(world: &World<f64>, x0: &State<f64>, steps: usize) -> Trajectory<f64> {
    rollout(world, x0, &Controls::Constant(world.zero_control()), steps).expect("rollout")
}

/// Steps `w` from `x` `steps` times: the last state, or the first error.
/// `steps` steps from `x`. A step the solver returns as converged must
/// meet its own convergence test (equality residual ≤ the tolerance)
/// unless it is flagged as accepted at the cap (`stats.capped`), so that
/// the tests' "fails, or converges to the known answer" cannot take a
/// stalled iterate for a converged one.
fn land(w: &World<f64>, mut x: State<f64>, steps: usize) -> Result<State<f64>, SimError> {
    let u = w.zero_control();
    for k in 0..steps {
        let o = dualsim::sim::step(w, &x, &u)?;
        assert!(
            o.stats.capped || o.stats.residual <= w.params.tolerance,
            "step {k} returned as converged with residual {:e} > tolerance {:e}",
            o.stats.residual,
            w.params.tolerance
        );
        x = o.state;
    }
    Ok(x)
}

fn sphere_world(solver: SolverKind, rho: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = solver;
    w.params.rho = rho;
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.1,
        Some(Shape::Sphere { radius: 0.5 }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    (w.clone(), State::at_rest(&w.model, &[[0.0, 0.0, 0.7]]))
}

fn box_world(solver: SolverKind, rho: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = solver;
    w.params.rho = rho;
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (0.25 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::new(0.3, 0.2, 0.25),
        }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    (w.clone(), State::at_rest(&w.model, &[[0.0, 0.0, 0.4]]))
}

#[test]
fn sphere_rests_at_its_radius() {
    for solver in [SolverKind::SingleLevel, SolverKind::Bilevel] {
        let (w, x0) = sphere_world(solver, 1e-8);
        let t = run(&w, &x0, 150);
        let z = t.last().q[2];
        println!(
            "{solver:?}: z = {z}, iters {:?}",
            t.stats.iter().map(|s| s.iterations).max()
        );
        assert!((z - 0.5).abs() < 1e-4, "{solver:?}: z = {z}");
    }
}

#[test]
fn box_rests_at_its_half_height() {
    for solver in [SolverKind::SingleLevel, SolverKind::Bilevel] {
        let (w, x0) = box_world(solver, 1e-8);
        let t = run(&w, &x0, 150);
        let z = t.last().q[2];
        println!(
            "{solver:?}: z = {z}, q = {:?}, iters {:?}",
            t.last().q.as_slice(),
            t.stats.iter().map(|s| s.iterations).max()
        );
        assert!((z - 0.25).abs() < 1e-4, "{solver:?}: z = {z}");
    }
}

/// A sphere sliding on the ground (μ = 0.5, v₀ = 1 m/s along x): the
/// single-level step and `ipm` (closed-form sphere–plane) agree. Their gaps
/// differ (`α − 1 = d/R` against `d`), so the relaxed solutions differ at
/// the scale of ρ/γ; stated tolerance 1e-5 m, 1e-4 m/s after 0.3 s at
/// ρ = 1e-8.
#[test]
fn single_level_agrees_with_ipm_on_a_sliding_sphere() {
    let run_with = |solver| {
        let (w, mut x0) = sphere_world(solver, 1e-8);
        x0.q[2] = 0.5;
        x0.v[0] = 1.0;
        run(&w, &x0, 30).last().clone()
    };
    let a = run_with(SolverKind::SingleLevel);
    let b = run_with(SolverKind::Ipm);
    let dq = (&a.q - &b.q).abs().max();
    let dv = (&a.v - &b.v).abs().max();
    println!(
        "single_level vs ipm: |dq| {dq:e}, |dv| {dv:e}, x {} vs {}",
        a.q[0], b.q[0]
    );
    // The ball decelerates by sliding then rolls: x moved and the two agree.
    assert!(a.q[0] > 0.1);
    assert!(dq < 1e-5 && dv < 1e-4, "dq {dq:e}, dv {dv:e}");
}

/// `bilevel` and `single_level` settle the polytope of the drop
/// experiment, released face down 5 mm above the ground, to the same rest
/// pose (z = 0.2, level); tolerance 1e-5 m on the position. (Tilted
/// landings: `tests/all/contact/bilevel_face.rs`.)
#[test]
fn bilevel_and_single_level_agree_on_the_rest_pose() {
    use dualsim::experiments::silico::drop_world;
    let rest = |solver| {
        let w = drop_world(solver, 0.01, 1e-8, 50);
        let x = State::at_rest(&w.model, &[[0.02, -0.01, 0.205]]);
        run(&w, &x, 60).last().clone()
    };
    let a = rest(SolverKind::SingleLevel);
    let b = rest(SolverKind::Bilevel);
    println!(
        "single_level q {:?}\nbilevel      q {:?}",
        a.q.as_slice(),
        b.q.as_slice()
    );
    assert!((a.q[2] - 0.2).abs() < 1e-5 && (b.q[2] - 0.2).abs() < 1e-5);
    let d = (a.q.rows(0, 3) - b.q.rows(0, 3)).abs().max();
    assert!(d < 1e-5, "{d:e}");
    assert!((a.q[3].abs() - 1.0).abs() < 1e-6 && (b.q[3].abs() - 1.0).abs() < 1e-6);
}

/// Step Jacobians of `single_level` (box resting on the ground, and
/// falling onto it): the implicit-function derivative agrees with the
/// unrolled solver in dual numbers (1e-6 relative) and with central
/// differences (1e-4 relative, ε = 1e-7 at ρ = 1e-4).
#[test]
fn single_level_ift_matches_unrolled_and_fd() {
    use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
    let (w, x_rest) = box_world(SolverKind::SingleLevel, 1e-4);
    let mut x_fall = x_rest.clone();
    x_fall.q[2] = 0.26;
    x_fall.v[2] = -1.0;
    x_fall.v[3] = 0.3;
    let settle = run(&w, &State::at_rest(&w.model, &[[0.0, 0.0, 0.2501]]), 30)
        .last()
        .clone();
    let u = w.zero_control();
    let nv = w.model.nv;
    let params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    let rel = |a: &DMat<f64>, b: &DMat<f64>| (a - b).abs().max() / a.abs().max().max(1.0);
    for (label, x) in [("resting", settle), ("falling", x_fall)] {
        let o = DiffOptions {
            rho: None,
            fd_eps: 1e-7,
            ..Default::default()
        };
        let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o).unwrap();
        let unr = step_jacobian(&w, &x, &u, &params, Method::Unrolled, &o).unwrap();
        let fd = step_jacobian(&w, &x, &u, &params, Method::Fd, &o).unwrap();
        let (a, b) = (
            rel(&ift.jacobian, &unr.jacobian),
            rel(&ift.jacobian, &fd.jacobian),
        );
        println!(
            "{label}: ift vs unrolled {a:e}, ift vs fd {b:e} (nonsmooth fd columns {:?})",
            fd.nonsmooth
        );
        assert!(a < 1e-6, "{label}: unrolled {a:e}");
        assert!(b < 1e-4, "{label}: fd {b:e}");
        assert!(ift.jacobian.abs().max() > 0.5);
    }
}

/// Silico's planar drop, seed 97 at 10 Hz and ρ = 1e-4: the first impact
/// (a friction reversal within the step) pins the first attempt against
/// the friction cone. With the restart (`Params::restart_after`, default)
/// every step converges within the 30-iteration cap, both attempts
/// counted; with the restart disabled the same step reaches the cap. The
/// polygon lands on a vertex, tips onto its bottom face (centre 0.4 m above
/// the ground, within 1e-3 m) and slides: over the last step its speed
/// drops by μ g h = 0.1962 m/s (within 2e-3).
#[test]
fn single_level_restart_recovers_a_pinned_first_impact() {
    use dualsim::experiments::silico::{Drop, run_drop};
    let kind = Drop::Planar;
    let mut w = kind.world(SolverKind::SingleLevel, 0.1, 1e-4, 30);
    let with = run_drop(kind, &w, 97, 1.5);
    println!("with restart: {with:?}");
    assert!(!with.failed && with.steps == 15);
    assert!(with.max_penetration < 2e-3, "{:e}", with.max_penetration);
    let mut x = kind.initial(&w, 97);
    let u = w.zero_control();
    let mut max_iters = 0;
    let mut prev_vx = 0.0;
    for _ in 0..15 {
        prev_vx = x.v[0];
        let o = dualsim::sim::step(&w, &x, &u).expect("step");
        max_iters = max_iters.max(o.stats.iterations);
        x = o.state;
    }
    let dv = prev_vx - x.v[0];
    println!(
        "final z {:.6}, v_x {:.4} → {:.4} (Δ {dv:.5}), max iterations {max_iters}",
        x.q[2], prev_vx, x.v[0]
    );
    assert!(max_iters <= 30);
    assert!((x.q[2] - 0.4).abs() < 1e-3, "z {}", x.q[2]);
    assert!(
        x.v[0] > 0.0 && (dv - 0.2 * 9.81 * 0.1).abs() < 2e-3,
        "Δv {dv}"
    );
    w.backends.single_level.restart_after = 0;
    // Without the continuation fallbacks too, which would rescue the step.
    w.backends.single_level.continuation_iterations = 0;
    w.backends.single_level.friction_continuation_iterations = 0;
    // Without it: the step fails at the cap, or (should the solver no
    // longer need the restart) the run lands on the same known answer.
    match land(&w, kind.initial(&w, 97), 15) {
        Err(e) => println!("without restart: {e}"),
        Ok(y) => {
            println!("without restart: converged, z {:.6}", y.q[2]);
            assert!((y.q[2] - 0.4).abs() < 1e-3, "without restart: z {}", y.q[2]);
            assert!(y.v[0] > 0.0, "without restart: v_x {}", y.v[0]);
        }
    }
}

/// The chamfered drop, seed 36 at 10 Hz and ρ = 1e-3: at its first
/// impact (step 1: the box at 2 m/s, turning from an edge onto a face
/// within the step) both attempts stall against the friction cone and
/// reach the 30-iteration cap. The continuation in ρ
/// (`Params::continuation_iterations`) solves that step: more than 30
/// iterations in all, the step's own convergence test met (equality
/// residual ≤ the tolerance, every complementarity at ρ to 1e-3), and the
/// box lands on its face (z = 0.2 m, its half height, within 1e-3 m, by the
/// end of the 1.5 s run). The derivatives of that step: `ift` at the root
/// agrees with `unrolled` through every iteration of the failed attempts
/// and the continuation to 1e-6 (relative), and with central differences
/// to 1e-4. Without the continuation the run fails at that step.
#[test]
fn single_level_continuation_lands_a_stalled_first_impact() {
    use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
    use dualsim::experiments::silico::{Drop, run_drop};
    let kind = Drop::Chamfered;
    let (rho, seed) = (1e-3, 36);
    let mut w = kind.world(SolverKind::SingleLevel, 0.1, rho, 30);
    let run = run_drop(kind, &w, seed, 1.5);
    println!("with the continuation: {run:?}");
    assert!(!run.failed && run.steps == 15);
    assert!(run.continued >= 1);
    let u = w.zero_control();
    let mut x = kind.initial(&w, seed);
    let mut before = None;
    for _ in 0..15 {
        let o = dualsim::sim::step(&w, &x, &u).expect("step");
        if o.stats.iterations > 30 && before.is_none() {
            println!("continued step: {:?}", o.stats);
            assert!(o.stats.residual <= w.params.tolerance);
            assert!(
                (o.stats.complementarity - rho).abs() < 1e-3 * rho,
                "{:e}",
                o.stats.complementarity
            );
            before = Some(x.clone());
        }
        x = o.state;
    }
    println!("final z {:.6}", x.q[2]);
    assert!((x.q[2] - 0.2).abs() < 1e-3, "z {}", x.q[2]);
    // (the first impact, solved by the continuation while the attempts
    // stall at the cap; if they no longer do, the derivatives are checked
    // at the first impact all the same)
    let before = before.unwrap_or_else(|| first_contact_state(&w, kind.initial(&w, seed)));
    let nv = w.model.nv;
    let params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    let rel = |a: &DMat<f64>, b: &DMat<f64>| (a - b).abs().max() / a.abs().max().max(1.0);
    let o = DiffOptions {
        rho: None,
        fd_eps: 1e-7,
        ..Default::default()
    };
    let ift = step_jacobian(&w, &before, &u, &params, Method::Ift, &o).unwrap();
    let unr = step_jacobian(&w, &before, &u, &params, Method::Unrolled, &o).unwrap();
    let fd = step_jacobian(&w, &before, &u, &params, Method::Fd, &o).unwrap();
    let (a, b) = (
        rel(&ift.jacobian, &unr.jacobian),
        rel(&ift.jacobian, &fd.jacobian),
    );
    println!(
        "ift vs unrolled {a:e}, ift vs fd {b:e} (nonsmooth fd columns {:?})",
        fd.nonsmooth
    );
    assert!(a < 1e-6, "unrolled {a:e}");
    assert!(b < 1e-4, "fd {b:e}");
    w.backends.single_level.continuation_iterations = 0;
    // The continuation in friction would solve the step instead.
    w.backends.single_level.friction_continuation_iterations = 0;
    // Without it: fails at that step, or lands on the same known answer.
    match land(&w, kind.initial(&w, seed), 15) {
        Err(e) => println!("without the continuation: {e}"),
        Ok(y) => {
            println!("without the continuation: converged, z {:.6}", y.q[2]);
            assert!((y.q[2] - 0.2).abs() < 1e-3, "without: z {}", y.q[2]);
        }
    }
}

/// The state before the first step that has a contact.
fn first_contact_state(w: &World<f64>, mut x: State<f64>) -> State<f64> {
    let u = w.zero_control();
    loop {
        let o = dualsim::sim::step(w, &x, &u).expect("step");
        if !o.contacts.is_empty() {
            return x;
        }
        x = o.state;
    }
}

/// The chamfered drop, seed 7 at 10 Hz and ρ = 1e-3: at its first impact
/// (step 2: the box at 2.2 m/s spinning at 1.9 rad/s, turning from an edge
/// onto a face within the step, sliding) both attempts stall against the
/// friction cone, and the continuation in ρ loses its root on the way
/// down from ρ = 3e-2 (a fold). The continuation in friction
/// (`Params::friction_continuation_iterations`: the step at its own ρ
/// with μ scaled by 0.1, then μ raised to the scene's, each stage
/// warm-started) solves it: the step's own convergence test met at the
/// scene's μ (equality residual ≤ the tolerance, every complementarity
/// at ρ to 1e-3), every contact impulse inside the scene's friction cone,
/// and the box lands on its face (z = 0.2 m within 1e-3 m by the end of
/// the 1.5 s run). The derivatives of that step: `ift` at the root agrees
/// with `unrolled` through every iteration (failed attempts, failed
/// continuation in ρ, every friction stage) to 1e-6 (relative), and with
/// central differences to 1e-4. Without it the run fails at that step.
#[test]
fn single_level_friction_continuation_lands_a_folded_first_impact() {
    use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
    use dualsim::experiments::silico::{Drop, run_drop};
    let kind = Drop::Chamfered;
    let (rho, seed) = (1e-3, 7);
    let mut w = kind.world(SolverKind::SingleLevel, 0.1, rho, 30);
    let run = run_drop(kind, &w, seed, 1.5);
    println!("with the continuation in friction: {run:?}");
    assert!(!run.failed && run.steps == 15);
    let mu = w.materials[0].friction.min(w.statics[0].material.friction);
    let u = w.zero_control();
    let mut x = kind.initial(&w, seed);
    let mut before = None;
    for _ in 0..15 {
        let o = dualsim::sim::step(&w, &x, &u).expect("step");
        if o.stats.iterations > 30 && before.is_none() {
            println!("continued step: {:?}", o.stats);
            assert!(o.stats.residual <= w.params.tolerance);
            assert!(
                (o.stats.complementarity - rho).abs() < 1e-3 * rho,
                "{:e}",
                o.stats.complementarity
            );
            assert!(!o.contacts.is_empty());
            for c in &o.contacts {
                let ft = c.tangent_impulse.norm();
                println!(
                    "contact: normal impulse {:e}, tangent {ft:e}, ratio {:.4} (μ {mu})",
                    c.normal_impulse,
                    ft / c.normal_impulse
                );
                assert!(c.normal_impulse > 0.0 && ft <= mu * c.normal_impulse * (1.0 + 1e-9));
            }
            before = Some(x.clone());
        }
        x = o.state;
    }
    println!("final z {:.6}", x.q[2]);
    assert!((x.q[2] - 0.2).abs() < 1e-3, "z {}", x.q[2]);
    let before = before.unwrap_or_else(|| first_contact_state(&w, kind.initial(&w, seed)));
    let nv = w.model.nv;
    let params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    let rel = |a: &DMat<f64>, b: &DMat<f64>| (a - b).abs().max() / a.abs().max().max(1.0);
    let o = DiffOptions {
        rho: None,
        fd_eps: 1e-7,
        ..Default::default()
    };
    let ift = step_jacobian(&w, &before, &u, &params, Method::Ift, &o).unwrap();
    let unr = step_jacobian(&w, &before, &u, &params, Method::Unrolled, &o).unwrap();
    let fd = step_jacobian(&w, &before, &u, &params, Method::Fd, &o).unwrap();
    let (a, b) = (
        rel(&ift.jacobian, &unr.jacobian),
        rel(&ift.jacobian, &fd.jacobian),
    );
    println!(
        "ift vs unrolled {a:e}, ift vs fd {b:e} (nonsmooth fd columns {:?})",
        fd.nonsmooth
    );
    assert!(a < 1e-6, "unrolled {a:e}");
    assert!(b < 1e-4, "fd {b:e}");
    w.backends.single_level.friction_continuation_iterations = 0;
    // Without it: fails at that step, or lands on the same known answer.
    match land(&w, kind.initial(&w, seed), 15) {
        Err(e) => println!("without the continuation in friction: {e}"),
        Ok(y) => {
            println!(
                "without the continuation in friction: converged, z {:.6}",
                y.q[2]
            );
            assert!((y.q[2] - 0.2).abs() < 1e-3, "without: z {}", y.q[2]);
        }
    }
}

/// `SolverParams::accept_at_cap`: the planar drop under `bilevel` at
/// 10 Hz and ρ = 1e-10 with the cap forced down to 2 iterations and no
/// continuation in ρ or friction (which would solve the step again). The
/// free-flight steps take one iteration; the first step with a contact
/// candidate cannot converge in 2 (the interior point must bring the
/// complementarity from its start, of order 1, down to ρ = 1e-10, and an
/// iteration reduces it by at most a factor of about 100), so the failure
/// is by construction, not a property of the solver that may improve. By
/// default that step is `SolveError::MaxIterations`; with the flag the same
/// step returns its last iterate, finite, flagged `capped`, after exactly
/// the cap's iterations, and every converged step before it is unchanged.
#[test]
fn accept_at_cap_returns_the_last_iterate_flagged() {
    use dualsim::contact::SolveError;
    use dualsim::experiments::silico::Drop;
    const CAP: usize = 2;
    let kind = Drop::Planar;
    let mut strict = kind.world(SolverKind::Bilevel, 0.1, 1e-10, CAP);
    strict.backends.bilevel.continuation_iterations = 0;
    strict.backends.bilevel.friction_continuation_iterations = 0;
    let mut lenient = strict.clone();
    lenient.params.accept_at_cap = true;
    let u = strict.zero_control();
    let mut x = kind.initial(&strict, 0);
    for k in 0..15 {
        let a = dualsim::sim::step(&strict, &x, &u);
        let b = dualsim::sim::step(&lenient, &x, &u).expect("lenient step");
        match a {
            Ok(o) => {
                assert!(!o.stats.capped && !b.stats.capped);
                assert_eq!(o.state.q, b.state.q);
                x = o.state;
            }
            Err(e) => {
                println!("step {k}: {e}; lenient: {:?}", b.stats);
                let is_cap = matches!(
                    e,
                    dualsim::sim::SimError::Solve(SolveError::MaxIterations { iters: CAP, .. })
                );
                assert!(is_cap, "{e:?}");
                assert!(b.stats.capped && b.stats.iterations == CAP);
                assert!(
                    b.state
                        .q
                        .iter()
                        .chain(b.state.v.iter())
                        .all(|v| v.is_finite())
                );
                return;
            }
        }
    }
    panic!(
        "bilevel converged in {CAP} iterations on every step of a landing: impossible at ρ = 1e-10"
    );
}

/// `single_level`'s Newton matrix is built in closed form (pose kinematics
/// by an 18-wide dual per pair); it must equal the dual-number derivative
/// of the whole island residual. Checked at every step with contact
/// candidates of three chamfered drops (sliding, tipping and resting
/// contacts, polytope–plane) and of two 3-D towers (box–box pairs between
/// two moving bodies), each at the island's initial point and at a
/// perturbed point: largest difference ≤ 1e-9 relative to max(1, max |J|)
/// (measured 8e-16 over 93 steps; a wrong entry is O(1e-3) or more).
#[test]
fn single_level_newton_matrix_matches_dual_numbers() {
    use dualsim::contact::SingleLevel;
    use dualsim::experiments::silico::{Drop, Stack};
    let mut worlds = Vec::new();
    for seed in 0..3 {
        let w = Drop::Chamfered.world(SolverKind::SingleLevel, 0.02, 1e-6, 30);
        let x = Drop::Chamfered.initial(&w, seed);
        worlds.push((w, x, 40));
    }
    for way in [0, 7] {
        let (w, x) = Stack::Towers.world(way, SolverKind::SingleLevel, 0.02, 1e-6, 30);
        worlds.push((w, x, 5));
    }
    let (mut checked, mut worst) = (0, 0.0_f64);
    for (w, mut x, steps) in worlds {
        let backend = SingleLevel {
            params: w.backends.single_level,
        };
        let u = w.zero_control();
        for _ in 0..steps {
            let p = w.problem(&x, &u);
            if !backend.candidates(&p).is_empty() {
                let d = backend.newton_matrix_discrepancy(&p).expect("jacobians");
                worst = worst.max(d);
                checked += 1;
            }
            x = dualsim::sim::step(&w, &x, &u).expect("step").state;
        }
    }
    println!("{checked} steps checked, largest relative difference {worst:e}");
    assert!(checked >= 40, "only {checked} steps with contact");
    assert!(worst <= 1e-9, "closed-form Newton matrix off by {worst:e}");
}

/// `bilevel`'s step derivatives, against central differences and against
/// the closed form of a sliding sphere. A solid sphere (m = 1, R = 0.5,
/// I = m R²·2/5 = 0.1, μ = 0.5, h = 0.01) rests on the ground at its
/// relaxed gap ρ/(m g h) and slides along x at 1 m/s without spin; the
/// slip velocity of the contact point is `s = v + ω × (−R ẑ)`, the normal
/// impulse `N = m g h`. Coulomb's law makes the friction impulse
/// `−μ N ŝ⁺`, and since it changes `s` along `ŝ⁺` only, `ŝ⁺ = ŝ`: so
///
/// * `∂v⁺_x/∂v_x = 1`, `∂v⁺_x/∂u_x = h/m` (the friction's magnitude does
///   not depend on them);
/// * `∂v⁺_y/∂v_y = 1 − μ g h/|s|` (a sideways push turns the friction);
/// * `∂ω⁺_x/∂v_y = −(R m/I) μ g h/|s|` (and so the friction's torque);
/// * `∂v⁺_z/∂v_x = 0`.
///
/// Tolerances: ift against central differences 1e-6 relative to the
/// largest entry (ε = 1e-7: truncation O(ε²), round-off O(1e-16/ε);
/// measured 1.3e-7). Against the closed form: 1e-6 absolute on the
/// entries friction does not enter (measured 7.3e-9), plus 1e-3 of the
/// friction term μ g h/|s| where it does: the relaxation (ρ = 1e-8, inner
/// programs at 10 ρ) turns the friction by a relative O(1e-4) (measured
/// 1.3e-4 on both ∂v⁺_y/∂v_y and ∂ω⁺_x/∂v_y).
#[test]
fn bilevel_derivatives_of_a_sliding_sphere_match_fd_and_the_closed_form() {
    use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
    let rho = 1e-8;
    let (w, mut x) = sphere_world(SolverKind::Bilevel, rho);
    let (m, r, i, mu, g, h) = (1.0, 0.5, 0.1, 0.5, 9.81, w.dt);
    x.q[2] = r + rho / (m * g * h);
    x.v[0] = 1.0;
    let s = x.v[0]; // |s| with ω = 0
    let u = w.zero_control();
    let nv = w.model.nv;
    let params = [Param::V(0), Param::V(1), Param::U(0)];
    let o = DiffOptions {
        rho: None,
        fd_eps: 1e-7,
        ..Default::default()
    };
    let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o).unwrap();
    let unr = step_jacobian(&w, &x, &u, &params, Method::Unrolled, &o).unwrap();
    let fd = step_jacobian(&w, &x, &u, &params, Method::Fd, &o).unwrap();
    // still sliding after the step: the slip slowed by 3.5 μ g h, not stopped
    assert!(ift.next.v[0] > 0.5 && ift.next.v[4] > 0.1, "{}", ift.next.v);
    // rows: (q⁺ ⊖ q, v⁺); v⁺ = (ṗ, ω)
    let (vx, vy, vz, wx) = (nv, nv + 1, nv + 2, nv + 3);
    let turn = mu * g * h / s;
    let closed = [
        (vx, 0, 1.0, 0.0, "∂v⁺_x/∂v_x"),
        (vx, 2, h / m, 0.0, "∂v⁺_x/∂u_x"),
        (vy, 1, 1.0 - turn, turn, "∂v⁺_y/∂v_y"),
        (wx, 1, -(r * m / i) * turn, (r * m / i) * turn, "∂ω⁺_x/∂v_y"),
        (vz, 0, 0.0, 0.0, "∂v⁺_z/∂v_x"),
    ];
    let scale = ift.jacobian.abs().max().max(1.0);
    let vs_fd = (&ift.jacobian - &fd.jacobian).abs().max() / scale;
    println!(
        "bilevel sliding sphere: ift vs fd {vs_fd:e} (nonsmooth {:?})",
        fd.nonsmooth
    );
    assert!(fd.nonsmooth.is_empty(), "{:?}", fd.nonsmooth);
    assert!(vs_fd < 1e-6, "ift vs fd {vs_fd:e}");
    for (name, j) in [("ift", &ift.jacobian), ("unrolled", &unr.jacobian)] {
        for &(row, col, want, friction, what) in &closed {
            let err = (j[(row, col)] - want).abs();
            println!(
                "{name} {what} = {:.12} (closed form {want:.12}, error {err:.1e})",
                j[(row, col)]
            );
            let tol = 1e-6 + 1e-3 * friction;
            assert!(
                err < tol,
                "{name} {what} = {} vs {want} (error {err:e} > {tol:e})",
                j[(row, col)]
            );
        }
    }
}
