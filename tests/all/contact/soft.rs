//! The `soft` backend (issue #19): closed forms of the soft signed
//! distance and of the resting depth, momentum conservation, Coulomb
//! deceleration, parameter checks, refused features, inverse dynamics and
//! `dualsim check` on the soft example scenes. Each test states its
//! tolerance.

use dualsim::contact::SolverKind;
use dualsim::contact::soft::cloud::sample;
use dualsim::contact::soft::model::{cloud_ssdf, softplus, ssdf};
use dualsim::contact::soft::{Integrator, Params};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

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

fn soft_world(h: f64, params: Params) -> World<f64> {
    let mut w = World::<f64>::new(h);
    w.solver = SolverKind::Soft;
    w.backends.soft = params;
    w
}

/// The resting depth of a point mass on a plane: `φ* = −ε₃ ln(e^{mg/(kε₃)} − 1)`.
fn phi_star(m: f64, g: f64, k: f64, eps3: f64) -> f64 {
    -eps3 * ((m * g / (k * eps3)).exp() - 1.0).ln()
}

#[test]
fn sphere_cloud_ssdf_at_the_centre_is_minus_the_radius_for_every_eps1() {
    for r in [0.05f64, 0.1, 0.37] {
        let c = sample::<f64>(&Shape::Sphere { radius: r }, 30.0).unwrap();
        assert!(c.len() > 20);
        for eps1 in [1e-8, 1e-4, 1e-2, 1.0, 1e4] {
            let phi = cloud_ssdf(&c, &Vec3::zeros(), eps1);
            // exact up to the round-off of a sum of ~1000 equal weights
            assert!((phi + r).abs() <= 1e-13 * r, "r {r}, eps1 {eps1}: {phi}");
        }
    }
}

#[test]
fn one_point_cloud_is_the_plane_distance() {
    let p0 = Vec3::<f64>::new(0.1, -0.2, 0.3);
    let n = Vec3::new(1.0, 2.0, -2.0) / 3.0;
    for p in [
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(1.0, 2.0, 3.0),
        Vec3::new(-0.5, 0.25, 0.125),
        p0,
    ] {
        for eps1 in [1e-6f64, 1.0, 1e6] {
            let phi = ssdf(&[p0], &[n], &p, eps1);
            assert!((phi - n.dot(&(p - p0))).abs() < 1e-15, "{phi}");
        }
    }
}

#[test]
fn small_eps1_gives_the_nearest_face_and_large_eps1_an_ellipsoid() {
    let h = Vec3::<f64>::new(0.1, 0.2, 0.3);
    let c = sample(&Shape::Box { half_extents: h }, 20.0).unwrap();
    // ε₁ → 0: the distance to the nearest face's plane (inside and out)
    for (p, want) in [
        (Vec3::new(0.13, 0.01, 0.02), 0.03),
        (Vec3::new(0.01, -0.25, 0.05), 0.05),
        (Vec3::new(0.0, 0.02, 0.27), -0.03),
        (Vec3::new(0.07, 0.0, 0.0), -0.03),
    ] {
        let phi = cloud_ssdf(&c, &p, 1e-7);
        assert!((phi - want).abs() < 1e-12, "{p:?}: {phi} vs {want}");
    }
    // ε₁ → ∞: ε₁ (φ̂(p) − φ̂(0)) → (2/I) pᵀ P p, P = Σ pᵢ nᵢᵀ (symmetric
    // positive definite for a box): the level sets are ellipsoids.
    let eps1 = 1e4;
    let ni = c.len() as f64;
    let pm = c
        .points
        .iter()
        .zip(&c.normals)
        .fold(Mat3::zeros(), |a, (p, n)| a + p * n.transpose());
    assert!(pm.symmetric_eigen().eigenvalues.min() > 0.0);
    let phi0 = cloud_ssdf(&c, &Vec3::zeros(), eps1);
    for p in [
        Vec3::new(0.3, 0.0, 0.0),
        Vec3::new(0.0, 0.4, 0.1),
        Vec3::new(-0.2, 0.3, -0.5),
    ] {
        let got = eps1 * (cloud_ssdf(&c, &p, eps1) - phi0);
        let want = 2.0 / ni * p.dot(&(pm * p));
        assert!(((got - want) / want).abs() < 1e-3, "{p:?}: {got} vs {want}");
    }
}

#[test]
fn softplus_closed_forms_and_stability() {
    for eps in [1e-6, 1e-3, 1.0] {
        assert!((softplus(0.0, eps) - eps * 2f64.ln()).abs() <= 1e-16 * eps);
        // large arguments: no overflow, asymptotes exact
        assert_eq!(softplus(1e3, eps), 1e3);
        assert_eq!(softplus(-1e3, eps), 0.0);
    }
    // derivative at a huge argument: finite (dual numbers)
    let x = num_dual::Dual64::new(800.0, 1.0);
    let s = softplus(x, num_dual::Dual64::from_re(1e-3));
    assert!(s.eps.is_finite() && (s.eps - 1.0).abs() < 1e-15);
}

/// Settles `world` from `x0` and returns the body's height.
fn settle(w: &World<f64>, x0: &State<f64>, steps: usize) -> State<f64> {
    let u = w.zero_control();
    let mut x = x0.clone();
    for _ in 0..steps {
        x = step(w, &x, &u).unwrap().state;
    }
    x
}

#[test]
fn point_mass_and_box_rest_at_the_closed_form_depth() {
    let (m, g, k, eps3) = (1.0, 9.81, 1e4, 1e-3);
    let want = phi_star(m, g, k, eps3);
    assert!((want * 1e3 + 0.511).abs() < 5e-4, "{want}"); // −0.511 mm
    let params = Params {
        stiffness: k,
        softness: eps3,
        ..Params::default()
    };
    // a point mass: a one-point cloud at the centre of mass
    let mut w = soft_world(1e-3, params);
    w.set_gravity(Vec3::new(0.0, 0.0, -g));
    w.add_body(
        "point",
        m,
        Mat3::identity() * 1e-3,
        Some(Shape::Points {
            points: vec![Vec3::zeros()],
            normals: vec![Vec3::z()],
        }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    let x = settle(&w, &State::at_rest(&w.model, &[[0.0, 0.0, 0.002]]), 4000);
    let z = x.q[2];
    println!("point mass: rests at {z:e} m, closed form {want:e} m");
    assert!((z - want).abs() < 1e-9, "{z} vs {want}");
    // a box (0.2 m, 96 points): within 5 %
    let mut w = soft_world(1e-3, params);
    w.set_gravity(Vec3::new(0.0, 0.0, -g));
    w.add_body(
        "box",
        m,
        Mat3::identity() * (m * 0.04 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.1),
        }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    let x = settle(&w, &State::at_rest(&w.model, &[[0.0, 0.0, 0.101]]), 4000);
    let z = x.q[2] - 0.1;
    println!("box: rests at {z:e} m, closed form {want:e} m");
    assert!(((z - want) / want).abs() < 0.05, "{z} vs {want}");
}

fn two_bodies() -> (World<f64>, State<f64>) {
    let mut w = soft_world(2e-3, Params::default());
    w.set_gravity(Vec3::zeros());
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * 0.00667,
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.1),
        }),
        mat(0.5),
    )
    .unwrap();
    w.add_body(
        "capsule",
        0.5,
        Mat3::from_diagonal(&Vec3::new(0.003, 0.003, 0.001)),
        Some(Shape::Capsule {
            radius: 0.05,
            half_length: 0.1,
        }),
        mat(0.5),
    )
    .unwrap();
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0], [0.22, 0.03, 0.01]]);
    x.v[0] = 0.4;
    x.v[6] = -0.4;
    x.v[11] = 0.5;
    (w, x)
}

#[test]
fn colliding_bodies_conserve_linear_momentum() {
    let (w, x0) = two_bodies();
    let momentum = |x: &State<f64>| {
        Vec3::new(x.v[0], x.v[1], x.v[2]) * 1.0 + Vec3::new(x.v[6], x.v[7], x.v[8]) * 0.5
    };
    let p0 = momentum(&x0);
    let u = w.zero_control();
    let mut x = x0.clone();
    let mut touched = false;
    for _ in 0..150 {
        let out = step(&w, &x, &u).unwrap();
        touched |= out.contacts.iter().any(|c| c.normal_impulse > 1e-6);
        x = out.state;
    }
    assert!(touched, "the bodies collide");
    // the collision changed the velocities
    assert!((x.v[0] - x0.v[0]).abs() > 0.1);
    let p1 = momentum(&x);
    let rel = (p1 - p0).norm() / p0.norm().max(0.4);
    println!("relative change of linear momentum: {rel:e}");
    assert!(rel < 1e-12, "{rel}");
}

#[test]
fn sliding_box_decelerates_at_mu_g() {
    let (mu, g) = (0.5, 9.81);
    let mut w = soft_world(1e-3, Params::default());
    w.set_gravity(Vec3::new(0.0, 0.0, -g));
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (0.04 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.1),
        }),
        mat(mu),
    )
    .unwrap();
    w.statics.push(ground(mu));
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0995]]);
    x.v[0] = 3.0;
    let u = w.zero_control();
    let mut vs = Vec::new();
    for _ in 0..500 {
        x = step(&w, &x, &u).unwrap().state;
        vs.push(x.v[0]);
    }
    // from 0.1 s (settled) to 0.5 s, v from ~2.5 to ~0.6 m/s ≫ v_s = 0.01
    let decel = (vs[99] - vs[499]) / 0.4;
    println!("deceleration {decel} m/s², mu g = {}", mu * g);
    assert!(vs[499] > 0.3);
    assert!(((decel - mu * g) / (mu * g)).abs() < 0.01, "{decel}");
}

#[test]
fn parameters_are_checked_with_their_key_and_range() {
    let scene = |extra: &str| {
        format!(
            "[sim]\ndt = 0.002\nsolver = \"soft\"\n\n[solver_params]\n{extra}\n\n[[body]]\nname = \"ball\"\nmass = 1.0\n\
             inertia = [0.004, 0.004, 0.004]\nposition = [0.0, 0.0, 0.2]\nshape = {{ type = \"sphere\", radius = 0.1 }}\n"
        )
    };
    for (kv, key) in [
        ("stiffness = 0.0", "stiffness"),
        ("softness = -1e-3", "softness"),
        ("damping_velocity = -2.0", "damping_velocity"),
        ("stiction_velocity = 0.0", "stiction_velocity"),
        ("distance_smoothing = -1.0", "distance_smoothing"),
        ("separation_smoothing = 0.0", "separation_smoothing"),
        ("points_per_meter = 0.0", "points_per_meter"),
        ("margin = -0.1", "margin"),
    ] {
        let e = dualsim::scene::parse(&scene(kv), "t.toml").unwrap_err();
        assert!(
            e.message.contains(key) && e.message.contains("soft"),
            "{kv}: {e}"
        );
        assert_eq!(e.path, format!("solver_params.{key}"), "{e}");
    }
    for kv in ["integrator = \"rk5\"", "damping_profile = \"smooth\""] {
        let e = dualsim::scene::parse(&scene(kv), "t.toml").unwrap_err();
        assert!(
            e.message.contains("rk4") || e.message.contains("published"),
            "{e}"
        );
    }
    let s = dualsim::scene::parse(
        &scene("integrator = \"rk4\"\ndamping_profile = \"published\"\nstiffness = 2e4"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.world.backends.soft.integrator, Integrator::Rk4);
    assert_eq!(s.world.backends.soft.stiffness, 2e4);
}

#[test]
fn unmodelled_features_are_refused_before_simulating() {
    let mut w = soft_world(2e-3, Params::default());
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.004,
        Some(Shape::Sphere { radius: 0.1 }),
        Material {
            friction: 0.5,
            restitution: 0.5,
        },
    )
    .unwrap();
    w.statics.push(ground(0.5));
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.2]]);
    let e = step(&w, &x, &w.zero_control()).unwrap_err();
    assert!(e.to_string().contains("restitution"), "{e}");
    w.materials[0].restitution = 0.0;
    w.ccd = true;
    let e = step(&w, &x, &w.zero_control()).unwrap_err();
    assert!(e.to_string().contains("continuous"), "{e}");
    w.ccd = false;
    // a shape without point-cloud sampling: typed error naming it
    w.shapes[0] = Some(Shape::Cone {
        height: 0.2,
        half_angle: 0.5,
    });
    let e = step(&w, &x, &w.zero_control()).unwrap_err();
    assert!(e.to_string().contains("cone"), "{e}");
}

#[test]
fn inverse_dynamics_recovers_the_control() {
    let (w, x0) = two_bodies();
    let mut x = x0;
    let u0 = w.zero_control();
    // run into contact
    for _ in 0..40 {
        x = step(&w, &x, &u0).unwrap().state;
    }
    let u = DVec::from_fn(w.model.nv, |i, _| 0.3 * ((i as f64) * 1.7).sin());
    let out = step(&w, &x, &u).unwrap();
    assert!(out.contacts.iter().any(|c| c.normal_impulse > 1e-6));
    let got = dualsim::sim::inverse_step(&w, &x, &out.state.v).unwrap();
    let err = (&got - &u).amax();
    println!("inverse dynamics error {err:e}");
    assert!(err < 1e-9, "{err}");
}

#[test]
fn rk4_integrates_free_fall_exactly_and_refuses_implicit_derivatives() {
    let params = Params {
        integrator: Integrator::Rk4,
        ..Params::default()
    };
    let mut w = soft_world(0.01, params);
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.004,
        Some(Shape::Sphere { radius: 0.1 }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 2.0]]);
    x.v[0] = 1.0;
    x.v[5] = 3.0;
    let u = w.zero_control();
    for _ in 0..10 {
        x = step(&w, &x, &u).unwrap().state;
    }
    // free fall: exact for RK4 (polynomial of degree 2)
    assert!(
        (x.q[2] - (2.0 - 0.5 * 9.81 * 0.01)).abs() < 1e-12,
        "{}",
        x.q[2]
    );
    assert!((x.v[2] + 0.981).abs() < 1e-12);
    assert!((x.q[0] - 0.1).abs() < 1e-12);
    let e = dualsim::sim::inverse_step(&w, &x, &x.v).unwrap_err();
    assert!(e.to_string().contains("rk4"), "{e}");
}

#[test]
fn check_passes_on_the_soft_example_scenes_with_no_skipped_fd_column() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.starts_with("soft_") && name.ends_with(".toml")) {
            continue;
        }
        n += 1;
        // the one-step comparisons at the regular samples, with no fd
        // column skipped (the soft scenes' event steps and rollouts are
        // checked by diff::check_examples, with its stated exceptions)
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dualsim"))
            .args(["check", "--json", "--no-rollout", "--event-samples", "0"])
            .arg(&path)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{name}: {}", String::from_utf8_lossy(&out.stderr)));
        assert!(out.status.success(), "{name}: {doc}");
        assert_eq!(doc["status"], "passed", "{name}");
        assert!(!doc["blocks"].as_array().unwrap().is_empty(), "{name}");
        assert_eq!(doc["fd_skipped_columns"], 0, "{name}: {doc}");
    }
    assert!(n >= 3, "{n} soft scenes");
}

/// Point 3: the Hessian of a rollout cost of a pushed box (20 steps, the
/// 120 pushes of `soft_box_push.toml`): `lift` = `unrolled` (hyper-dual)
/// to 1e-10 and = central differences of `ift` gradients to 1e-6
/// (relative to the largest entry), symmetric.
#[test]
fn pushed_box_hessian_methods_agree() {
    use dualsim::opt::{HessianMethod, Objective};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/soft_box_push.toml");
    let mut s = dualsim::scene::load(&path).unwrap();
    s.steps = 20;
    let obj = Objective::from_scene(&s).unwrap();
    assert_eq!(obj.dim(), 120);
    let d0 = vec![0.0; obj.dim()];
    let lift = obj.hessian(&d0, HessianMethod::Lift).unwrap().hessian;
    let unrolled = obj.hessian(&d0, HessianMethod::Unrolled).unwrap().hessian;
    let fd = obj.hessian(&d0, HessianMethod::Fd).unwrap().hessian;
    let scale = lift.amax();
    let lu = (&lift - &unrolled).amax() / scale;
    let lf = (&lift - &fd).amax() / scale;
    let sym = (&lift - lift.transpose()).amax() / scale;
    println!(
        "Hessian 120x120, max |H| {scale:e}: |lift - unrolled| {lu:e}, |lift - fd(ift)| {lf:e}, asymmetry {sym:e}"
    );
    assert!(scale > 0.0);
    assert!(lu < 1e-10, "{lu}");
    assert!(lf < 1e-6, "{lf}");
    assert!(sym < 1e-12, "{sym}");
}

/// Point 3 at the step level: the pushed box (20 steps, pushes and
/// friction as parameters), `lift` in `Dual2SVec64` vs `unrolled` in
/// `HyperDual64`, and symmetry of the lifted Hessian.
#[test]
fn pushed_box_hessian_lift_dual2_equals_unrolled_hyperdual() {
    use dualsim::diff::{Param, lift_step, seeded};
    use num_dual::{Dual2SVec64, HyperDual64};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/soft_box_push.toml");
    let s = dualsim::scene::load(&path).unwrap();
    let (w, x) = (s.world.clone(), s.initial.clone());
    let mut u = w.zero_control();
    u[0] = 3.0;
    let steps = 20;
    let params = [Param::U(0), Param::U(1), Param::Friction(0), Param::Mass(0)];
    fn cost<T: Scalar>(s: &State<T>) -> T {
        let p = Vec3::new(s.q[0] - T::from_re(0.05), s.q[1], s.q[2] - T::from_re(0.1));
        p.norm_squared() + s.v[0] * s.v[0] + s.v[2] * s.v[5]
    }
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
    let (wd, mut xd, ud) = seeded(&w, &x, &u, &params, &seeds).unwrap();
    for _ in 0..steps {
        xd = lift_step(&wd, &xd, &ud, 2).unwrap();
    }
    let h_lift = cost(&xd)
        .v2
        .unwrap_generic(nalgebra::Const::<4>, nalgebra::Const::<4>);
    let mut h_unr = nalgebra::SMatrix::<f64, 4, 4>::zeros();
    for i in 0..4 {
        for j in 0..4 {
            let mut deltas = vec![HyperDual64::from_re(0.0); 4];
            deltas[i] += HyperDual64::new(0.0, 1.0, 0.0, 0.0);
            deltas[j] += HyperDual64::new(0.0, 0.0, 1.0, 0.0);
            let (wh, xh, uh) = seeded(&w, &x, &u, &params, &deltas).unwrap();
            let traj = rollout(&wh, &xh, &Controls::Constant(uh), steps).unwrap();
            h_unr[(i, j)] = cost(traj.last()).eps1eps2;
        }
    }
    let scale = h_unr.abs().max();
    let diff = (h_lift - h_unr).abs().max() / scale;
    let asym = (h_lift - h_lift.transpose()).abs().max() / scale;
    println!(
        "soft 4x4 Hessian, max |H| {scale:e}: lift (Dual2) vs unrolled (HyperDual) {diff:e}, asymmetry {asym:e}"
    );
    assert!(scale > 1e-6);
    assert!(diff <= 1e-10, "{diff:e}");
    assert!(asym <= 1e-12, "{asym:e}");
}

/// The published damping profile's Hessian jumps at `v_n = 0`, the
/// smoothed one's does not (a point mass resting on a plane, 5 steps of
/// 1 ms, d²z/dv₀² by hyper-dual numbers; `examples/soft_damping_hessian.rs`
/// plots it).
#[test]
fn published_profile_hessian_jumps_at_zero_normal_velocity_smoothed_does_not() {
    use dualsim::contact::soft::model::DampingProfile;
    use num_dual::HyperDual64;
    let p0 = Params::default();
    let z0 = phi_star(1.0, 9.81, p0.stiffness, p0.softness);
    let curvature = |profile, v0: f64| {
        let mut w = soft_world(
            1e-3,
            Params {
                damping_profile: profile,
                ..Params::default()
            },
        );
        w.add_body(
            "point",
            1.0,
            Mat3::identity() * 1e-3,
            Some(Shape::Points {
                points: vec![Vec3::zeros()],
                normals: vec![Vec3::z()],
            }),
            mat(0.5),
        )
        .unwrap();
        w.statics.push(ground(0.5));
        let w = w.cast::<HyperDual64>();
        let mut x = State::<HyperDual64>::at_rest(&w.model, &[[0.0, 0.0, z0]]);
        x.v[2] = HyperDual64::new(v0, 1.0, 1.0, 0.0);
        let u = w.zero_control();
        for _ in 0..5 {
            x = step(&w, &x, &u).unwrap().state;
        }
        x.q[2].eps1eps2
    };
    let jump = |profile| curvature(profile, 1e-9) - curvature(profile, -1e-9);
    let (jp, js) = (
        jump(DampingProfile::Published),
        jump(DampingProfile::Smoothed),
    );
    println!("d2z/dv0^2 jump across v0 = 0: published {jp:e}, smoothed {js:e}");
    assert!(jp > 1e-2, "{jp}");
    assert!(js.abs() < 1e-8, "{js}");
}

/// `dualsim inverse --solver soft` recovers the controls of a `run --out`
/// trajectory.
#[test]
fn cli_inverse_under_soft() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = root.join("examples/scenes/soft_collision.toml");
    let dir = std::env::temp_dir().join(format!("dualsim-soft-inverse-{}", std::process::id()));
    let bin = env!("CARGO_BIN_EXE_dualsim");
    let out = std::process::Command::new(bin)
        .args(["run", "--out"])
        .arg(&dir)
        .arg(&scene)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(bin)
        .args(["inverse", "--json", "--solver", "soft"])
        .arg(&scene)
        .arg(dir.join("trajectory.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["solver"], "soft");
    assert!(doc["max_residual"].as_f64().unwrap() < 1e-12, "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cut-off: a ball whose bounding ball is just beyond `margin` from
/// the ground is not evaluated (no force, no pair); just inside, its
/// force is below the documented bound `k ε₃ ln(1 + e^{−margin/ε₃})`.
#[test]
fn cut_off_skips_far_pairs_and_bounds_the_force_there() {
    let params = Params::default();
    let mut w = soft_world(1e-3, params);
    w.set_gravity(Vec3::zeros());
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.004,
        Some(Shape::Sphere { radius: 0.1 }),
        mat(0.5),
    )
    .unwrap();
    w.statics.push(ground(0.5));
    let u = w.zero_control();
    let far = State::at_rest(&w.model, &[[0.0, 0.0, 0.1 + params.margin + 1e-4]]);
    let out = step(&w, &far, &u).unwrap();
    assert!(out.contacts.is_empty());
    assert_eq!(out.state.v[2], 0.0);
    let near = State::at_rest(&w.model, &[[0.0, 0.0, 0.1 + params.margin - 1e-4]]);
    let out = step(&w, &near, &u).unwrap();
    assert_eq!(out.contacts.len(), 1);
    let force = out.state.v[2] / w.dt;
    let bound = params.stiffness
        * params.softness
        * (-(params.margin - 1e-4) / params.softness).exp().ln_1p();
    println!("force inside the cut-off {force:e} N, bound {bound:e} N");
    assert!(
        force > 0.0 && force <= bound * (1.0 + 1e-12),
        "{force} vs {bound}"
    );
}
