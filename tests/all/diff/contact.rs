//! Derivatives through contact: the four methods agree on the example
//! scenes at ρ ∈ {1e-2, 1e-4}; no NaN at rest, at zero velocity, at zero
//! rotation or at first touch; Hessians through contact; relaxation as
//! smoothing.

use std::path::Path;

use dualsim::diff::{
    CheckOptions, CheckStatus, DiffOptions, Input, Method, Param, check, lift_step,
    rollout_jacobian, seeded, step_jacobian,
};
use dualsim::math::{DMat, Mat3, Pose, Vec3};
use dualsim::prelude::*;
use dualsim::scene::{self, Scene};
use num_dual::{Dual2SVec64, HyperDual64};

fn load(name: &str) -> Scene {
    scene::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenes")
            .join(name),
    )
    .unwrap()
}

/// The state after `k` steps of a scene.
fn state_at(s: &Scene, k: usize) -> State<f64> {
    rollout(&s.world, &s.initial, &s.controls, k)
        .unwrap()
        .last()
        .clone()
}

/// Runs `diff::check` at one state with the given ρ and FD step 1e-6, and
/// asserts agreement (ift vs lift ≤ 1e-9, unrolled ≤ 1e-7, fd ≤ 1e-5,
/// relative to max(1, ‖J‖∞) per block) and finite Jacobians.
fn agree(label: &str, world: &World<f64>, x: &State<f64>, u: &DVec<f64>, rho: f64) {
    // the one-step comparison at this state (no event steps, no rollout)
    let opts = CheckOptions {
        samples: 1,
        diff: DiffOptions {
            rho: Some(rho),
            fd_eps: 1e-6,
            ..Default::default()
        },
        max_event_samples: 0,
        rollout: None,
        ..Default::default()
    };
    let report = check(world, x, &Controls::Constant(u.clone()), 1, &opts).unwrap();
    let worst = |k: &str| {
        report
            .blocks
            .iter()
            .map(|b| b.max_rel_diff[k])
            .fold(0.0, f64::max)
    };
    let (l, un, f) = (
        worst("ift_vs_lift"),
        worst("ift_vs_unrolled"),
        worst("ift_vs_fd"),
    );
    println!(
        "{label:<28} rho {rho:.0e}: lift {l:.1e}  unrolled {un:.1e}  fd {f:.1e}  (fd skipped {})",
        report.fd_skipped_columns
    );
    assert!(
        report.blocks.iter().all(|b| b.norm.is_finite()),
        "{label}: non-finite Jacobian"
    );
    assert!(
        l <= 1e-9 && un <= 1e-7 && f <= 1e-5,
        "{label} at rho {rho:e}: {l:e} {un:e} {f:e}"
    );
    // Columns where central differences straddle a kink or a curvature
    // scale below ε are left out of the fd comparison; they must be rare.
    let columns = report.blocks.len(); // a lower bound on the number of input columns
    assert!(
        report.fd_skipped_columns * 20 <= columns.max(20),
        "{label}: {} fd columns skipped",
        report.fd_skipped_columns
    );
    assert!(report.passed);
}

fn first_contact_step(s: &Scene) -> usize {
    let mut x = s.initial.clone();
    for k in 0..s.steps {
        let out = step(&s.world, &x, s.controls.at(k)).unwrap();
        if out.contacts.iter().any(|c| c.normal_impulse > 1e-3) {
            return k;
        }
        x = out.state;
    }
    panic!("no contact in the scene");
}

#[test]
fn methods_agree_on_the_example_scenes() {
    let mut cases: Vec<(String, World<f64>, State<f64>, DVec<f64>)> = Vec::new();
    let ff = load("free_flight.toml");
    cases.push((
        "free flight".into(),
        ff.world.clone(),
        state_at(&ff, 10),
        ff.controls.at(10).clone(),
    ));
    let sd = load("sphere_drop.toml");
    let touch = first_contact_step(&sd);
    for (name, k) in [
        ("sphere drop, before impact", 1),
        ("sphere drop, first touch", touch),
        ("sphere drop, after impact", 15),
    ] {
        cases.push((
            name.into(),
            sd.world.clone(),
            state_at(&sd, k),
            sd.controls.at(k).clone(),
        ));
    }
    let bt = load("box_toss.toml");
    cases.push((
        "box toss, in the air".into(),
        bt.world.clone(),
        state_at(&bt, 2),
        bt.controls.at(2).clone(),
    ));
    cases.push((
        "box toss, at rest".into(),
        bt.world.clone(),
        state_at(&bt, 450),
        bt.controls.at(450).clone(),
    ));
    let sl = load("sliding_box.toml");
    cases.push((
        "sliding box".into(),
        sl.world.clone(),
        state_at(&sl, 200),
        sl.controls.at(200).clone(),
    ));
    let bi = load("box_incline.toml");
    cases.push((
        "incline, sliding".into(),
        bi.world.clone(),
        state_at(&bi, 50),
        bi.controls.at(50).clone(),
    ));
    let mut stick = bi.clone();
    for m in stick.world.materials.iter_mut() {
        m.friction = 1.0;
    }
    for s in stick.world.statics.iter_mut() {
        s.material.friction = 1.0;
    }
    cases.push((
        "incline, sticking".into(),
        stick.world.clone(),
        state_at(&stick, 50),
        stick.controls.at(50).clone(),
    ));
    let cp = load("capsule_pile.toml");
    cases.push((
        "capsule pile".into(),
        cp.world.clone(),
        state_at(&cp, 150),
        cp.controls.at(150).clone(),
    ));
    for (label, w, x, u) in &cases {
        for rho in [1e-2, 1e-4] {
            agree(label, w, x, u, rho);
        }
    }
}

/// As ρ → 1e-8 the exact methods still agree with each other; central
/// differences need a step below the relaxed gap ρ/γ of resting contacts.
#[test]
fn small_rho_exact_methods_agree_fd_needs_a_small_step() {
    let bt = load("box_toss.toml");
    let x = state_at(&bt, 450);
    let u = bt.controls.at(450).clone();
    let nv = bt.world.model.nv;
    let params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    let rel = |a: &DMat<f64>, b: &DMat<f64>| (a - b).abs().max() / a.abs().max().max(1.0);
    let o = |eps: f64| DiffOptions {
        rho: Some(1e-8),
        fd_eps: eps,
        ..Default::default()
    };
    let ift = step_jacobian(&bt.world, &x, &u, &params, Method::Ift, &o(1e-6)).unwrap();
    let lift = step_jacobian(&bt.world, &x, &u, &params, Method::Lift, &o(1e-6)).unwrap();
    let unr = step_jacobian(&bt.world, &x, &u, &params, Method::Unrolled, &o(1e-6)).unwrap();
    let fd_small = step_jacobian(&bt.world, &x, &u, &params, Method::Fd, &o(1e-9)).unwrap();
    let (a, b, c) = (
        rel(&ift.jacobian, &lift.jacobian),
        rel(&ift.jacobian, &unr.jacobian),
        rel(&ift.jacobian, &fd_small.jacobian),
    );
    println!("rho 1e-8: lift {a:e}, unrolled {b:e}, fd(eps 1e-9) {c:e}");
    assert!(a <= 1e-9 && b <= 1e-7);
    assert!(c <= 1e-4, "{c:e}");
    assert!(ift.jacobian.iter().all(|x| x.is_finite()));
}

/// No NaN or infinite derivative at zero velocity and zero rotation (a box
/// at rest exactly on the ground, identity orientation, v = 0) and at first
/// touch.
#[test]
fn derivatives_are_finite_at_rest_zero_velocity_zero_rotation() {
    let mut w = World::<f64>::new(0.01);
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (1.0 / 24.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        Material {
            friction: 0.5,
            restitution: 0.0,
        },
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    });
    // exactly touching (gap 0 at q), zero velocity, identity rotation
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
    let u = w.zero_control();
    let params: Vec<Param> = (0..6)
        .map(Param::Q)
        .chain((0..6).map(Param::V))
        .chain((0..6).map(Param::U))
        .chain([
            Param::Mass(0),
            Param::Friction(0),
            Param::Shape(0, 2),
            Param::Dt,
        ])
        .collect();
    for m in Method::ALL {
        let j = step_jacobian(&w, &x, &u, &params, m, &DiffOptions::default()).unwrap();
        assert!(j.jacobian.iter().all(|e| e.is_finite()), "{m:?}");
    }
    // and the supported box barely follows a height perturbation: ∂z⁺/∂z
    // is small (the relaxed contact is a stiff spring, 0.037 at ρ = 1e-6)
    // where a free body would give 1
    let j = step_jacobian(&w, &x, &u, &params, Method::Ift, &DiffOptions::default()).unwrap();
    assert!(j.jacobian[(2, 2)].abs() < 0.1, "{}", j.jacobian[(2, 2)]);
}

/// Hessian of a cost of a rollout through sliding contact with respect to
/// controls and parameters: lift (Dual2SVec64) equals unrolled
/// (HyperDual64) to 1e-8, central differences of ift gradients to 1e-5,
/// and is symmetric to 1e-10.
#[test]
fn hessians_through_contact_agree() {
    let mut s = load("sliding_box.toml");
    s.world.params.rho = 1e-5;
    let steps = 8;
    let x0 = state_at(&s, 20);
    let u = s.controls.at(0).clone();
    let params = [Param::U(0), Param::U(1), Param::Friction(0), Param::Mass(0)];
    fn cost<T: Scalar>(x: &State<T>) -> T {
        x.q[0] * x.q[0]
            + x.q[1] * x.q[1] * T::from_re(2.0)
            + x.v[0] * x.v[0]
            + x.q[2] * T::from_re(3.0)
    }
    type D2 = Dual2SVec64<4>;
    let seeds: Vec<D2> = (0..4)
        .map(|j| {
            let mut g = nalgebra::SMatrix::<f64, 1, 4>::zeros();
            g[j] = 1.0;
            D2::new(
                0.0,
                num_dual::Derivative::some(g),
                num_dual::Derivative::none(),
            )
        })
        .collect();
    let (wd, mut xd, ud) = seeded(&s.world, &x0, &u, &params, &seeds).unwrap();
    for _ in 0..steps {
        xd = lift_step(&wd, &xd, &ud, 2).unwrap();
    }
    let h_lift = cost(&xd)
        .v2
        .unwrap_generic(nalgebra::Const::<4>, nalgebra::Const::<4>);
    let mut h_unr = nalgebra::SMatrix::<f64, 4, 4>::zeros();
    for i in 0..4 {
        for j in i..4 {
            let mut d = vec![HyperDual64::from_re(0.0); 4];
            d[i] += HyperDual64::new(0.0, 1.0, 0.0, 0.0);
            d[j] += HyperDual64::new(0.0, 0.0, 1.0, 0.0);
            let (wh, xh, uh) = seeded(&s.world, &x0, &u, &params, &d).unwrap();
            let end = rollout(&wh, &xh, &Controls::Constant(uh), steps).unwrap();
            h_unr[(i, j)] = cost(end.last()).eps1eps2;
            h_unr[(j, i)] = h_unr[(i, j)];
        }
    }
    // gradient by ift (rollout Jacobian of the final state, chained)
    let grad = |shift: Option<(usize, f64)>| -> nalgebra::SVector<f64, 4> {
        let mut d = [0.0; 4];
        if let Some((k, e)) = shift {
            d[k] = e;
        }
        let (w1, x1, u1) = seeded(&s.world, &x0, &u, &params, &d).unwrap();
        // controls are constant over the rollout: the gradient w.r.t. U(i)
        // sums the per-step control columns
        let mut ins: Vec<Input> = Vec::new();
        for k in 0..steps {
            ins.push(Input::Control { step: k, index: 0 });
            ins.push(Input::Control { step: k, index: 1 });
        }
        ins.push(Input::Model(Param::Friction(0)));
        ins.push(Input::Model(Param::Mass(0)));
        let rj = rollout_jacobian(
            &w1,
            &x1,
            &Controls::Constant(u1),
            steps,
            &ins,
            Method::Ift,
            &DiffOptions::default(),
        )
        .unwrap();
        let nv = w1.model.nv;
        let xq = &rj.last.q;
        let xv = &rj.last.v;
        // ∂cost/∂(tangent of q, v)
        let mut dc = DVec::zeros(2 * nv);
        dc[0] = 2.0 * xq[0];
        dc[1] = 4.0 * xq[1];
        dc[2] = 3.0;
        dc[nv] = 2.0 * xv[0];
        let g_all = rj.jacobian.transpose() * dc;
        let mut g = nalgebra::SVector::<f64, 4>::zeros();
        for k in 0..steps {
            g[0] += g_all[2 * k];
            g[1] += g_all[2 * k + 1];
        }
        g[2] = g_all[2 * steps];
        g[3] = g_all[2 * steps + 1];
        g
    };
    let eps = 1e-5;
    let mut h_fd = nalgebra::SMatrix::<f64, 4, 4>::zeros();
    for k in 0..4 {
        let col = (grad(Some((k, eps))) - grad(Some((k, -eps)))) / (2.0 * eps);
        h_fd.set_column(k, &col);
    }
    let scale = h_unr.abs().max().max(1.0);
    let d_lu = (h_lift - h_unr).abs().max() / scale;
    let d_fd = (h_lift - h_fd).abs().max() / scale;
    let asym = (h_lift - h_lift.transpose()).abs().max() / scale;
    println!(
        "Hessian through contact: ‖H‖ {scale:e}, lift vs unrolled {d_lu:e}, vs FD of ift gradients {d_fd:e}, asymmetry {asym:e}"
    );
    assert!(d_lu <= 1e-8, "{d_lu:e}");
    assert!(d_fd <= 1e-5, "{d_fd:e}");
    assert!(asym <= 1e-10, "{asym:e}");
    assert!(
        h_unr[(2, 2)].abs() + h_unr[(0, 2)].abs() > 1e-6,
        "friction enters the Hessian"
    );
}

/// Silico V-D: a block on the ground (h = 0.1, g = 1, μ = 1, m = 1) pushed
/// by F. At ρ = 1e-8, ∂x⁺/∂F is ≈ 0 below F = 1 (sticking) and ≈ h²/m =
/// 0.01 above; for larger ρ it is a smooth monotone curve.
#[test]
fn relaxation_smooths_the_friction_gradient() {
    let curve = |rho: f64, forces: &[f64]| -> Vec<f64> {
        forces
            .iter()
            .map(|&f| dualsim::demo::push_gradient(f, rho).unwrap())
            .collect()
    };
    let forces: Vec<f64> = (0..=40).map(|i| 0.5 + i as f64 * 0.025).collect();
    let hard = curve(1e-8, &forces);
    for (f, g) in forces.iter().zip(&hard) {
        if *f < 0.95 {
            assert!(g.abs() < 1e-4, "F = {f}: {g}");
        }
        if *f > 1.05 {
            assert!((g - 0.01).abs() < 1e-4, "F = {f}: {g}");
        }
    }
    for rho in [1e-3, 1e-2] {
        let c = curve(rho, &forces);
        for w in c.windows(2) {
            assert!(w[1] >= w[0] - 1e-9, "monotone at rho {rho}");
        }
        // smooth: no jump larger than a small fraction of the range
        let max_jump = c
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(0.0, f64::max);
        assert!(max_jump < 0.2 * 0.01, "rho {rho}: jump {max_jump}");
        assert!(c[0] >= -1e-9 && c[c.len() - 1] <= 0.01 + 1e-6);
    }
    // and the hard curve does jump
    let max_jump = hard
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max);
    assert!(max_jump > 0.5 * 0.01);
}

/// The kink test of `fd` on known second differences: a slope jump inside
/// the stencil grows with the step (kink), round-off does not (error, so
/// the column is compared).
#[test]
fn kink_test_tells_a_slope_jump_from_solver_error() {
    use dualsim::diff::second_difference_grows;
    // f(x) = |x − a|, a = 0.4 ε: s(h) = 2 (h − |a|) for h > |a|
    let eps = 1e-7;
    let a: f64 = 0.4e-7;
    let f = |x: f64| (x - a).abs();
    let s = |h: f64| DVec::from_vec(vec![f(h) + f(-h) - 2.0 * f(0.0)]);
    assert!((s(eps)[0] - 1.2e-7).abs() < 1e-20);
    assert!(second_difference_grows(&s(eps), &s(2.0 * eps)));
    // a smooth map: s(2ε) = 4 s(ε) (also "not smooth within ε" once it
    // is large enough to reach the candidate threshold)
    let g = |x: f64| 1e4 * x * x;
    let sg = |h: f64| DVec::from_vec(vec![g(h) + g(-h) - 2.0 * g(0.0)]);
    assert!(second_difference_grows(&sg(eps), &sg(2.0 * eps)));
    // solver error of ~1e-9 on each solve: s does not grow with the step
    let s1 = DVec::from_vec(vec![2e-9, -1e-9]);
    let s2 = DVec::from_vec(vec![-1.9e-9, 1.2e-9]);
    assert!(!second_difference_grows(&s1, &s2));
}

/// An accuracy regression of `fd` — here round-off: at ε = 1e-12 each
/// difference quotient carries ~1e-16/1e-12 = 1e-4 relative error — is a
/// FAILURE, not a column skipped as a kink (before, 31 of box_toss's
/// columns were skipped and whole blocks read fd = 0). The same scene
/// passes at the default ε with no column skipped.
#[test]
fn an_inaccurate_fd_fails_instead_of_being_skipped() {
    let s = load("box_toss.toml");
    let opts = |fd_eps: f64| CheckOptions {
        samples: 2,
        diff: DiffOptions {
            fd_eps,
            ..Default::default()
        },
        ..Default::default()
    };
    let good = check(&s.world, &s.initial, &s.controls, s.steps, &opts(1e-7)).unwrap();
    assert!(good.passed, "{:#?}", good.blocks);
    assert_eq!(good.fd_skipped_columns, 0);
    assert!(good.blocks.iter().all(|b| b.fd_compared > 0));

    let bad = check(&s.world, &s.initial, &s.controls, s.steps, &opts(1e-12)).unwrap();
    println!(
        "fd_eps 1e-12: {} columns skipped, {} of {} blocks failed",
        bad.fd_skipped_columns,
        bad.blocks.iter().filter(|b| !b.passed).count(),
        bad.blocks.len()
    );
    assert!(!bad.passed);
    assert_eq!(bad.status, CheckStatus::Failed);
    // the errors are compared, not skipped: at most one column in ten
    let columns: usize = bad
        .blocks
        .iter()
        .filter(|b| b.of == "position")
        .map(|b| b.fd_compared + b.fd_skipped)
        .sum();
    assert!(
        bad.fd_skipped_columns * 10 <= columns,
        "{} of {columns} columns skipped",
        bad.fd_skipped_columns
    );
    let worst = bad
        .blocks
        .iter()
        .map(|b| b.max_rel_diff["ift_vs_fd"])
        .fold(0.0, f64::max);
    assert!(worst > 1e-5, "fd error {worst:e} is not seen");
}

/// A block whose `fd` columns are skipped beyond the stated share fails:
/// sliding_box under `implicit_ncp` has a column skipped at the default ε
/// (the box coming to rest: the stick–slip kink of the friction law, as
/// `dualsim check --solver implicit_ncp` prints); with a share of 0
/// every block with a skipped column fails, with the default share (0.5)
/// the scene passes.
#[test]
fn a_block_with_too_many_skipped_columns_fails() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/sliding_box.toml");
    let s = scene::load_with(
        &path,
        &scene::LoadOptions {
            solver: Some(dualsim::contact::SolverKind::ImplicitNcp),
        },
    )
    .unwrap();
    // the one-step comparisons at the regular samples (the rollout of
    // this scene under implicit_ncp has no derivative: the box comes to
    // rest, a kink)
    let opts = |share: f64| CheckOptions {
        max_fd_skipped_share: share,
        diff: DiffOptions {
            fd_eps: 1e-7, // as `dualsim check`
            ..Default::default()
        },
        max_event_samples: 0,
        rollout: None,
        ..Default::default()
    };
    let r = check(&s.world, &s.initial, &s.controls, s.steps, &opts(0.5)).unwrap();
    assert!(r.passed, "{:#?}", r.blocks);
    assert_eq!(r.max_fd_skipped_share, 0.5);
    let per_block: usize = r.blocks.iter().map(|b| b.fd_skipped).sum();
    assert!(
        r.fd_skipped_columns > 0,
        "nothing skipped: pick another scene"
    );
    assert!(per_block >= r.fd_skipped_columns);
    for b in &r.blocks {
        assert!(b.fd_compared > 0 && 2 * b.fd_skipped <= b.fd_compared + b.fd_skipped);
    }
    let strict = check(&s.world, &s.initial, &s.controls, s.steps, &opts(0.0)).unwrap();
    assert!(!strict.passed);
    for b in &strict.blocks {
        let lift_ok = b.max_rel_diff["ift_vs_lift"] <= 1e-9
            && b.max_rel_diff["ift_vs_unrolled"] <= 1e-7
            && b.max_rel_diff["ift_vs_fd"] <= 1e-5;
        assert!(lift_ok);
        assert_eq!(b.passed, b.fd_skipped == 0, "{} / {}", b.of, b.wrt);
    }
}

/// A scene without a moving body has no Jacobian block: not a pass.
#[test]
fn check_with_nothing_to_compare_is_not_a_pass() {
    let s = scene::parse(
        "[sim]\ndt = 0.01\nsteps = 5\n\n[[static]]\nname = \"ground\"\nshape = { type = \"plane\", normal = [0.0, 0.0, 1.0] }\n",
        "statics.toml",
    )
    .unwrap();
    let r = check(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &CheckOptions::default(),
    )
    .unwrap();
    assert!(r.blocks.is_empty());
    assert!(!r.passed);
    assert_eq!(r.status, CheckStatus::NothingChecked);
}
