//! Derivative methods agree: ift, lift, unrolled and central differences,
//! for one step and for Hessians of a rollout cost.

use dualsim::diff::{DiffOptions, Method, Param, lift_step, step_jacobian};
use dualsim::math::{DMat, Mat3, Vec3, so3};
use dualsim::prelude::*;
use num_dual::{Dual2SVec64, HyperDual64};

fn tumbler() -> (World<f64>, State<f64>, DVec<f64>) {
    let mut w = World::<f64>::new(0.05);
    w.add_body(
        "t",
        1.3,
        Mat3::from_diagonal(&Vec3::new(0.4, 0.9, 1.2)),
        None,
        Material::default(),
    )
    .unwrap();
    let mut x = State::at_rest(&w.model, &[[0.1, -0.2, 1.0]]);
    let r = so3::exp(&Vec3::new(0.3, -0.1, 0.2));
    x.q.as_mut_slice()[3..7].copy_from_slice(&[r.w, r.i, r.j, r.k]);
    x.v.copy_from_slice(&[0.5, -0.3, 1.0, 1.5, -2.0, 0.7]);
    let mut u = w.zero_control();
    u.copy_from_slice(&[0.2, 0.1, -0.3, 0.05, -0.02, 0.03]);
    (w, x, u)
}

fn all_params() -> Vec<Param> {
    let mut p: Vec<Param> = (0..6).map(Param::Q).collect();
    p.extend((0..6).map(Param::V));
    p.extend((0..6).map(Param::U));
    p.extend([
        Param::Mass(0),
        Param::Inertia(0, 0),
        Param::Inertia(0, 1),
        Param::Inertia(0, 2),
    ]);
    p.extend([Param::Gravity(2), Param::Dt]);
    p
}

fn rel(a: &DMat<f64>, b: &DMat<f64>) -> f64 {
    (a - b).abs().max() / a.abs().max().max(1.0)
}

#[test]
fn step_jacobians_agree_across_methods_in_free_flight() {
    let (w, x, u) = tumbler();
    let params = all_params();
    let o = DiffOptions::default();
    let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o)
        .unwrap()
        .jacobian;
    let lift = step_jacobian(&w, &x, &u, &params, Method::Lift, &o)
        .unwrap()
        .jacobian;
    let unr = step_jacobian(&w, &x, &u, &params, Method::Unrolled, &o)
        .unwrap()
        .jacobian;
    let fd = step_jacobian(&w, &x, &u, &params, Method::Fd, &o)
        .unwrap()
        .jacobian;
    let (a, b, c) = (rel(&ift, &lift), rel(&ift, &unr), rel(&ift, &fd));
    println!("ift vs lift {a:e}, vs unrolled {b:e}, vs fd {c:e}");
    assert!(a <= 1e-9, "ift vs lift {a:e}");
    assert!(b <= 1e-7, "ift vs unrolled {b:e}");
    assert!(c <= 1e-5, "ift vs fd {c:e}");
    // a known entry: ∂vₓ⁺/∂uₓ = h/m
    assert!((ift[(6, 12)] - 0.05 / 1.3).abs() < 1e-14);
    // ∂pₓ⁺/∂vₓ = h (symplectic Euler)
    assert!((ift[(0, 6)] - 0.05).abs() < 1e-14);
}

/// Hessian of a scalar cost of a 20-step rollout with respect to (controls,
/// mass): lift with Dual2SVec64 vs unrolled HyperDual64 (pairwise), and
/// symmetry.
#[test]
fn rollout_cost_hessian_lift_equals_unrolled() {
    let (w, x, u) = tumbler();
    let steps = 20;
    let params = [Param::U(0), Param::U(3), Param::U(4), Param::Mass(0)];
    // cost = ‖p_N‖² + (rotation part of q_N)ᵀ(…) — a smooth function of the final state
    fn cost<T: Scalar>(s: &State<T>) -> T {
        let p = Vec3::new(s.q[0], s.q[1], s.q[2]);
        let r = Vec3::new(s.q[4], s.q[5], s.q[6]);
        p.norm_squared() + r.norm_squared() * T::from_re(3.0) + s.v[3] * s.v[4]
    }
    // lift: Dual2SVec64<4>
    type D2 = Dual2SVec64<4>;
    let seeds: Vec<D2> = (0..4)
        .map(|j| {
            let mut d = D2::from_re(0.0);
            let mut g = nalgebra::SMatrix::<f64, 1, 4>::zeros();
            g[j] = 1.0;
            d.v1 = num_dual::Derivative::some(g);
            d
        })
        .collect();
    let (wd, mut xd, ud) = dualsim::diff::seeded(&w, &x, &u, &params, &seeds).unwrap();
    for _ in 0..steps {
        xd = lift_step(&wd, &xd, &ud, 2).unwrap();
    }
    let c = cost(&xd);
    let h_lift =
        c.v2.unwrap_generic(nalgebra::Const::<4>, nalgebra::Const::<4>);
    // unrolled: HyperDual64 for each pair
    let mut h_unr = nalgebra::SMatrix::<f64, 4, 4>::zeros();
    for i in 0..4 {
        for j in 0..4 {
            let mut deltas = vec![HyperDual64::from_re(0.0); 4];
            deltas[i] += HyperDual64::new(0.0, 1.0, 0.0, 0.0);
            deltas[j] += HyperDual64::new(0.0, 0.0, 1.0, 0.0);
            let (wh, xh, uh) = dualsim::diff::seeded(&w, &x, &u, &params, &deltas).unwrap();
            let traj = rollout(&wh, &xh, &Controls::Constant(uh), steps).unwrap();
            h_unr[(i, j)] = cost(traj.last()).eps1eps2;
        }
    }
    let scale = h_unr.abs().max().max(1.0);
    let diff = (h_lift - h_unr).abs().max() / scale;
    let asym = (h_lift - h_lift.transpose()).abs().max() / scale;
    println!("‖H‖∞ {scale:e}: lift vs unrolled {diff:e}, asymmetry {asym:e}");
    assert!(diff <= 1e-8, "{diff:e}");
    assert!(asym <= 1e-10, "{asym:e}");
    assert!(
        h_unr.abs().max() > 1e-3,
        "the Hessian is not trivially zero"
    );
}

/// Rollout Jacobians (chained ift, lift, unrolled, fd) agree, with inputs
/// of every kind: initial state, model parameters, per-step controls.
#[test]
fn rollout_jacobians_agree_across_methods() {
    use dualsim::diff::{Input, rollout_jacobian};
    let (w, x, u) = tumbler();
    let steps = 30;
    let controls = Controls::Constant(u);
    let mut inputs: Vec<Input> = (0..6).map(Input::Config).collect();
    inputs.extend((0..6).map(Input::Velocity));
    inputs.extend([
        Input::Model(Param::Mass(0)),
        Input::Model(Param::Inertia(0, 1)),
        Input::Model(Param::Dt),
    ]);
    inputs.extend([
        Input::Control { step: 0, index: 3 },
        Input::Control { step: 17, index: 0 },
    ]);
    let o = DiffOptions::default();
    let j = |m| {
        rollout_jacobian(&w, &x, &controls, steps, &inputs, m, &o)
            .unwrap()
            .jacobian
    };
    let (ift, lift, unr, fd) = (
        j(Method::Ift),
        j(Method::Lift),
        j(Method::Unrolled),
        j(Method::Fd),
    );
    let (a, b, c) = (rel(&ift, &lift), rel(&ift, &unr), rel(&ift, &fd));
    println!("rollout: ift vs lift {a:e}, vs unrolled {b:e}, vs fd {c:e}");
    assert!(a <= 1e-9 && b <= 1e-7 && c <= 1e-5, "{a:e} {b:e} {c:e}");
    // a control applied at step 17 of 30 moves x by h²(30 − 17)/m
    let expect = 0.05 * 0.05 * 13.0 / 1.3;
    assert!(
        (ift[(0, 16)] - expect).abs() < 1e-12,
        "{} vs {expect}",
        ift[(0, 16)]
    );
}

// ------------------------------------------------- structured ∂r/∂y solves

mod structured {
    use super::rel;
    use dualsim::contact::FrictionCone;
    use dualsim::contact::free_flight::FreeFlight;
    use dualsim::contact::ipm::Ipm;
    use dualsim::diff::{DiffOptions, ImplicitStep, Method, Param, dense_solve, step_jacobian};
    use dualsim::math::{DMat, Mat3, Pose, Vec3};
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

    fn settle(w: &World<f64>, x0: &State<f64>, steps: usize) -> State<f64> {
        rollout(w, x0, &Controls::Constant(w.zero_control()), steps)
            .unwrap()
            .last()
            .clone()
    }

    /// A box (edge 0.5, m = 1, μ = 0.5) resting on the ground, slightly
    /// tilted and pushed so that contacts are not symmetric.
    pub fn box_on_plane(cone: FrictionCone) -> (World<f64>, State<f64>, DVec<f64>) {
        let mut w = World::<f64>::new(0.01);
        w.friction_cone = cone;
        w.add_body(
            "box",
            1.0,
            Mat3::identity() * (0.25 / 6.0),
            Some(Shape::Box {
                half_extents: Vec3::repeat(0.25),
            }),
            mat(0.5),
        )
        .unwrap();
        w.statics.push(ground(0.5));
        let x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
        let x = settle(&w, &x0, 5);
        let mut u = w.zero_control();
        u.copy_from_slice(&[1.0, 0.5, 0.0, 0.02, -0.01, 0.03]);
        (w, x, u)
    }

    /// Five spheres (r = 0.1): four on the ground in a 2 × 2 grid, one on top.
    pub fn small_pile(cone: FrictionCone) -> (World<f64>, State<f64>, DVec<f64>) {
        let mut w = World::<f64>::new(0.01);
        w.friction_cone = cone;
        let r = 0.1;
        let pos = [
            [0.0, 0.0, r],
            [0.2, 0.0, r],
            [0.0, 0.2, r],
            [0.2, 0.2, r],
            [0.1, 0.1, 0.25],
        ];
        for (i, _) in pos.iter().enumerate() {
            w.add_body(
                &format!("s{i}"),
                0.1,
                Mat3::identity() * (0.4 * 0.1 * r * r),
                Some(Shape::Sphere { radius: r }),
                mat(0.5),
            )
            .unwrap();
        }
        w.statics.push(ground(0.5));
        let x0 = State::at_rest(&w.model, &pos);
        let x = settle(&w, &x0, 10);
        let mut u = w.zero_control();
        for (i, ui) in u.iter_mut().enumerate() {
            *ui = 0.01 * ((i * 7 % 5) as f64 - 2.0);
        }
        (w, x, u)
    }

    /// Deterministic right-hand sides.
    fn rhs(n: usize, m: usize) -> DMat<f64> {
        let mut s = 0x9e3779b97f4a7c15u64;
        DMat::from_fn(n, m, |_, _| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2001) as f64 / 1000.0 - 1.0
        })
    }

    fn fast_vs_dense<B: ImplicitStep>(
        b: &B,
        w: &World<f64>,
        x: &State<f64>,
        u: &DVec<f64>,
    ) -> (f64, usize) {
        let p = w.problem(x, u);
        let (y, st) = b.solve_root(&p).unwrap();
        // Few columns (triangular solves) and more columns than unknowns
        // (the product with the inverse of the reduced system).
        let mut worst: f64 = 0.0;
        for m in [9, y.len() + 3] {
            let r = rhs(y.len(), m);
            let fast = b.solve_jacobian(&p, &st, &y, &r).unwrap();
            let dense = dense_solve(b, &p, &st, &y, &r).unwrap();
            let fast_v = b.solve_jacobian_velocity(&p, &st, &y, &r).unwrap();
            let nv = w.model.nv;
            worst = worst
                .max(rel(&dense, &fast))
                .max(rel(&dense.rows(0, nv).into_owned(), &fast_v));
        }
        (worst, y.len() - w.model.nv)
    }

    #[test]
    fn structured_solve_equals_dense_on_contact_scenes() {
        for cone in [FrictionCone::Exact, FrictionCone::Pyramid] {
            for (name, (w, x, u)) in [("box", box_on_plane(cone)), ("pile", small_pile(cone))] {
                let (d, nc) = fast_vs_dense(
                    &Ipm {
                        params: w.backends.ipm,
                    },
                    &w,
                    &x,
                    &u,
                );
                println!("{name} {cone:?}: {nc} contact unknowns, structured vs dense solve {d:e}");
                assert!(nc > 0, "the scene has contacts");
                assert!(d <= 1e-12, "{name} {cone:?}: {d:e}");
            }
        }
        let (w, x, u) = super::tumbler();
        let (d, _) = fast_vs_dense(&FreeFlight::default(), &w, &x, &u);
        println!("free flight: structured vs dense solve {d:e}");
        assert!(d <= 1e-12, "free flight: {d:e}");
    }

    pub fn state_control_params(nv: usize) -> Vec<Param> {
        let mut p: Vec<Param> = (0..nv).map(Param::Q).collect();
        p.extend((0..nv).map(Param::V));
        p.extend((0..nv).map(Param::U));
        p
    }

    #[test]
    fn ift_equals_lift_on_contact_scenes() {
        let o = DiffOptions::default();
        for cone in [FrictionCone::Exact, FrictionCone::Pyramid] {
            for (name, (w, x, u)) in [("box", box_on_plane(cone)), ("pile", small_pile(cone))] {
                let mut params = state_control_params(w.model.nv);
                params.extend([
                    Param::Mass(0),
                    Param::Friction(0),
                    Param::Inertia(0, 1),
                    Param::Gravity(2),
                    Param::Dt,
                ]);
                let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o)
                    .unwrap()
                    .jacobian;
                let lift = step_jacobian(&w, &x, &u, &params, Method::Lift, &o)
                    .unwrap()
                    .jacobian;
                let d = rel(&lift, &ift);
                println!(
                    "{name} {cone:?}: ift vs lift {d:e} (‖J‖∞ {:e})",
                    lift.amax()
                );
                assert!(d <= 1e-9, "{name} {cone:?}: {d:e}");
            }
        }
    }

    /// `∂r/∂θ` by dual-number evaluation of the residual (blocks of 8).
    fn dual_partials<B: ImplicitStep>(
        b: &B,
        w: &World<f64>,
        x: &State<f64>,
        u: &DVec<f64>,
        st: &B::Structure,
        y: &DVec<f64>,
        params: &[Param],
    ) -> DMat<f64> {
        type D = num_dual::DualSVec64<8>;
        let mut out = DMat::zeros(y.len(), params.len());
        for (c, chunk) in params.chunks(8).enumerate() {
            let seeds: Vec<D> = (0..chunk.len())
                .map(|j| D::from_re(0.0).derivative(j))
                .collect();
            let (wd, sd, ud) = dualsim::diff::seeded(w, x, u, chunk, &seeds).unwrap();
            let r = b
                .residual(&wd.problem(&sd, &ud), st, &y.map(D::from_re))
                .unwrap();
            for (i, ri) in r.iter().enumerate() {
                let g = ri.eps.unwrap_generic(nalgebra::Const::<8>, nalgebra::U1);
                for j in 0..chunk.len() {
                    out[(i, 8 * c + j)] = g[j];
                }
            }
        }
        out
    }

    fn closed_vs_dual<B: ImplicitStep>(
        b: &B,
        w: &World<f64>,
        x: &State<f64>,
        u: &DVec<f64>,
    ) -> f64 {
        let p = w.problem(x, u);
        let (y, st) = b.solve_root(&p).unwrap();
        let params = state_control_params(w.model.nv);
        let kernel = b
            .kernel_partials(&p, &st, &y, &params)
            .unwrap()
            .expect("kernel partials");
        let dual = dual_partials(b, w, x, u, &st, &y, &params);
        rel(&dual, &kernel)
    }

    #[test]
    fn closed_form_state_partials_equal_dual_residual() {
        for cone in [FrictionCone::Exact, FrictionCone::Pyramid] {
            for (name, (w, x, u)) in [("box", box_on_plane(cone)), ("pile", small_pile(cone))] {
                let d = closed_vs_dual(
                    &Ipm {
                        params: w.backends.ipm,
                    },
                    &w,
                    &x,
                    &u,
                );
                println!("{name} {cone:?}: kernel ∂r/∂(q, v, u) vs dual {d:e}");
                assert!(d <= 1e-12, "{name} {cone:?}: {d:e}");
            }
        }
        let (w, x, u) = super::tumbler();
        let d = closed_vs_dual(&FreeFlight::default(), &w, &x, &u);
        println!("free flight: kernel ∂r/∂(q, v, u) vs dual {d:e}");
        assert!(d <= 1e-12, "free flight: {d:e}");
    }
}
