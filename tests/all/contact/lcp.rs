//! Tests of the `lcp` backend (issue 15): Jade's sliding prisms (exact
//! Coulomb deceleration with one and with four contacts), the `ipm`
//! incline and resting-box scenes, refused features, derivatives.
//! Each test states its tolerance; worlds are built through the Rust API
//! (the scenes of `contact_ipm.rs`).

use dualsim::contact::{FrictionCone, SolverKind};
use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
use dualsim::math::{DMat, Pose, Quat, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;

const LCP: SolverKind = SolverKind::Lcp;

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

fn cube_inertia(m: f64, edge: f64) -> Mat3<f64> {
    Mat3::identity() * (m * edge * edge / 6.0)
}

fn run(world: &World<f64>, x0: &State<f64>, steps: usize) -> Trajectory<f64> {
    rollout(world, x0, &Controls::Constant(world.zero_control()), steps).expect("rollout")
}

/// Jade V-C: v₀ = 2, μ = 0.16, g = 9, h = 0.01. `corners`: a box on its
/// face (four contacts) or a sphere whose rotational inertia is so large
/// that it does not roll (one contact).
fn sliding(corners: bool, cone: FrictionCone) -> (World<f64>, State<f64>) {
    sliding_with(corners, cone, 1e12)
}

/// [`sliding`] with the sphere's principal moment `sphere_inertia`.
fn sliding_with(
    corners: bool,
    cone: FrictionCone,
    sphere_inertia: f64,
) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = LCP;
    w.friction_cone = cone;
    w.gravity = Vec3::new(0.0, 0.0, -9.0);
    let (shape, inertia, z) = if corners {
        (
            Shape::Box {
                half_extents: Vec3::repeat(0.25),
            },
            cube_inertia(1.0, 0.5),
            0.25,
        )
    } else {
        (
            Shape::Sphere { radius: 0.25 },
            Mat3::identity() * sphere_inertia,
            0.25,
        )
    };
    w.add_body("slider", 1.0, inertia, Some(shape), mat(0.16))
        .unwrap();
    w.statics.push(ground(0.16));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, z]]);
    x0.v[0] = 2.0;
    (w, x0)
}

#[test]
fn sliding_loses_mu_g_h_per_step_with_one_and_four_contacts() {
    let (v0, mu, g, h) = (2.0, 0.16, 9.0, 0.01);
    let drop = mu * g * h; // 0.0144
    for corners in [false, true] {
        {
            let cone = FrictionCone::Pyramid;
            let (w, x0) = sliding(corners, cone);
            let traj = run(&w, &x0, 160);
            let contacts = traj.stats[5].contacts;
            let mut worst: f64 = 0.0;
            let mut rest_at = None;
            for k in 1..=160 {
                let v = traj.states[k].v[0];
                let expected = (v0 - drop * k as f64).max(0.0);
                worst = worst.max((v - expected).abs());
                if rest_at.is_none() && v.abs() < 1e-12 {
                    rest_at = Some(k);
                }
            }
            let other = traj
                .states
                .iter()
                .map(|s| s.v[1].abs().max(s.v[2].abs()).max(s.v.rows(3, 3).amax()))
                .fold(0.0, f64::max);
            println!(
                "lcp sliding ({} contacts, {cone:?}): max |v_x − (v₀ − μgh k)| = {worst:.2e}, rest after step {rest_at:?}, other velocity components ≤ {other:.2e}",
                contacts
            );
            assert_eq!(contacts, if corners { 4 } else { 1 });
            // The sphere's rotation (inertia 1e12) costs ~1e-13.
            assert!(worst < 1e-9, "{worst:e}");
            assert_eq!(rest_at, Some(139));
            assert!(other < 1e-9, "{other:e}");
        }
    }
}

fn box_toss(h: f64) -> (World<f64>, State<f64>, usize) {
    let mut w = World::<f64>::new(h);
    w.solver = LCP;
    w.friction_cone = FrictionCone::Pyramid;
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

/// `contact_ipm.rs`'s `box_toss_comes_to_rest`: at rest on its face after
/// 5 s. `lcp` is exact (no relaxation; stabilized to zero penetration), so
/// the closed form z = 0.25 holds to round-off: 1e-9 (measured
/// max penetration ≤ 6.4e-16, |v|∞ ≤ 4.3e-15).
#[test]
fn box_toss_comes_to_rest() {
    for h in [0.1, 0.05, 0.01, 0.005] {
        let (w, x0, steps) = box_toss(h);
        let traj = run(&w, &x0, steps);
        let s = traj.last();
        let pen = traj
            .stats
            .iter()
            .map(|s| s.max_penetration)
            .fold(0.0, f64::max);
        println!(
            "lcp box_toss h={h}: z = {:.9}, |v|inf = {:.3e}, max penetration {pen:.2e}",
            s.q[2],
            s.v.amax()
        );
        assert!(
            (s.q[2] - 0.25).abs() < 1e-9,
            "h={h}: z − 0.25 = {:e}",
            s.q[2] - 0.25
        );
        assert!(s.v.amax() < 1e-6, "h={h}: |v|inf = {}", s.v.amax());
    }
}

/// Box on a plane tilted by θ about y (rising towards +x).
fn incline(theta: f64, mu: f64) -> (World<f64>, State<f64>, usize) {
    let h = 0.01;
    let mut w = World::<f64>::new(h);
    w.solver = LCP;
    w.friction_cone = FrictionCone::Pyramid;
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

/// `contact_ipm.rs`: drift below 1e-6 m over 2 s at θ = 20°, μ = 0.5.
#[test]
fn box_on_incline_sticks_below_friction_angle() {
    let (w, x0, steps) = incline(20f64.to_radians(), 0.5);
    let traj = run(&w, &x0, steps);
    let d = traj.last().q.fixed_rows::<3>(0) - x0.q.fixed_rows::<3>(0);
    println!("lcp incline stick: drift {:.3e} m over 2 s", d.norm());
    assert!(d.norm() < 1e-6, "drift {}", d.norm());
}

/// `contact_ipm.rs`: acceleration g(sin θ − μ cos θ) at θ = 30°, μ = 0.3.
/// The slide is along a facet direction of the pyramid (the incline's
/// tangent x), where the pyramid is the exact cone, and the semi-implicit
/// step gains exactly h a per step once sliding: held to 1e-9 relative
/// (measured 3.6e-15).
#[test]
fn box_on_incline_slides_above_friction_angle() {
    let (theta, mu, g) = (30f64.to_radians(), 0.3, 9.81);
    let (w, x0, steps) = incline(theta, mu);
    let h = w.dt;
    let traj = run(&w, &x0, steps);
    let down = Vec3::new(-theta.cos(), 0.0, -theta.sin());
    let speed = |k: usize| down.dot(&traj.states[k].v.fixed_rows::<3>(0).into_owned());
    let (k0, k1) = (20, steps);
    let a = (speed(k1) - speed(k0)) / ((k1 - k0) as f64 * h);
    let expected = g * (theta.sin() - mu * theta.cos());
    let rel = (a - expected).abs() / expected;
    println!("lcp incline slide: a = {a:.6} (expected {expected:.6}, rel err {rel:.2e})");
    assert!(rel < 1e-9, "a = {a} vs {expected} (rel {rel:e})");
}

/// `lcp` declares restitution and continuous collision (their physics:
/// tests/all/contact/lcp_bounce.rs); a resting box with e = 0.5 stays at rest (its
/// contacts do not approach at the start of a step: no bounce).
#[test]
fn restitution_and_ccd_are_implemented() {
    assert!(LCP.supports(dualsim::contact::Feature::Restitution));
    assert!(LCP.supports(dualsim::contact::Feature::Ccd));
    let (mut w, mut x0) = sliding(true, FrictionCone::Pyramid);
    x0.v[0] = 0.0;
    w.statics[0].material.restitution = 0.5;
    for m in w.materials.iter_mut() {
        m.restitution = 0.5;
    }
    let x = run(&w, &x0, 20);
    let last = x.last();
    println!(
        "resting box, e = 0.5: z = {}, |v| = {:e}",
        last.q[2],
        last.v.amax()
    );
    assert!((last.q[2] - 0.25).abs() < 1e-9 && last.v.amax() < 1e-9);
}

/// The exact cone is refused (the box is not the Coulomb cone: diagonal
/// sliding would feel √2 μ), naming the backend and the cone.
#[test]
fn exact_cone_is_refused() {
    let (w, x0) = sliding(true, FrictionCone::Exact);
    let err = step(&w, &x0, &w.zero_control());
    let msg = format!("{err:?}");
    assert!(err.is_err(), "exact cone accepted");
    assert!(msg.contains("lcp") && msg.contains("exact"), "{msg}");
}

/// The four derivative methods agree on a sliding step (one contact)
/// and, on the redundant four-corner box, in the `v⁺` rows (pseudo-inverse).
#[test]
fn derivative_methods_agree_while_sliding() {
    for corners in [false, true] {
        // A solid sphere (it slides for 40 steps while it spins up): the
        // inertia of 1e12 of the sliding test would put the dynamics rows
        // 1e12 above the contact rows in the pseudo-inverse's threshold.
        let (w, x0) = sliding_with(corners, FrictionCone::Pyramid, 0.4 * 0.25 * 0.25);
        let x = run(&w, &x0, 20).last().clone();
        let u = w.zero_control();
        let nv = w.model.nv;
        let params: Vec<Param> = (0..nv).map(Param::V).chain([Param::Friction(0)]).collect();
        let o = DiffOptions {
            fd_eps: 1e-6,
            ..Default::default()
        };
        let rel = |a: &DMat<f64>, b: &DMat<f64>| (a - b).abs().max() / a.abs().max().max(1.0);
        let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o).unwrap();
        let fd = step_jacobian(&w, &x, &u, &params, Method::Fd, &o).unwrap();
        let unr = step_jacobian(&w, &x, &u, &params, Method::Unrolled, &o).unwrap();
        let lift = step_jacobian(&w, &x, &u, &params, Method::Lift, &o).unwrap();
        let (a, b, c) = (
            rel(&ift.jacobian, &fd.jacobian),
            rel(&ift.jacobian, &unr.jacobian),
            rel(&ift.jacobian, &lift.jacobian),
        );
        println!(
            "lcp sliding derivatives (corners {corners}): fd {a:.2e}, unrolled {b:.2e}, lift {c:.2e}"
        );
        // ∂v⁺_x/∂μ_body = −g h / 2 (the pair's μ is the average).
        let dmu = ift.jacobian[(6, nv)];
        println!("  dv_x/dmu = {dmu}");
        assert!((dmu + 0.045).abs() < 1e-8, "{dmu}");
        assert!(a < 1e-6 && b < 1e-8 && c < 1e-8, "{a:e} {b:e} {c:e}");
    }
}

/// A frictionless box resting on frictionless ground under `lcp` (μ = 0,
/// no slip, pressing contacts): for μ > 0 it sticks with `f_t = 0`, and at
/// μ = 0 nothing pushes it sideways, so every derivative of the step with
/// respect to the friction coefficient is zero (the closed form), and the
/// derivative with respect to the tangential velocity is the free slide's
/// (`∂v⁺_x/∂v_x = 1`: frictionless). The bound's row `f_t = ±μ f_n` gave
/// `∂v⁺_x/∂μ = ∂v⁺_y/∂μ = g h/2` (measured: 4.905e-2 by `ift` and `lift`
/// before the fix), a sideways push on an arbitrary side. Held to
/// round-off (1e-12; `fd` 1e-8): the rows are exact.
#[test]
fn frictionless_resting_contact_has_no_friction_derivative() {
    let mut w = World::<f64>::new(0.01);
    w.solver = LCP;
    w.friction_cone = FrictionCone::Pyramid;
    w.gravity = Vec3::new(0.0, 0.0, -9.81);
    w.add_body(
        "box",
        1.0,
        cube_inertia(1.0, 0.5),
        Some(Shape::Box {
            half_extents: Vec3::new(0.25, 0.25, 0.25),
        }),
        mat(0.0),
    )
    .unwrap();
    w.statics.push(ground(0.0));
    // at rest on the ground, at zero gap
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.25]]);
    let u = w.zero_control();
    let nv = w.model.nv;
    let params = [Param::Friction(0), Param::V(0)];
    let o = DiffOptions {
        fd_eps: 1e-6,
        ..Default::default()
    };
    for method in [Method::Ift, Method::Lift, Method::Unrolled, Method::Fd] {
        let j = step_jacobian(&w, &x, &u, &params, method, &o).unwrap();
        let dmu = j.jacobian.column(0).amax();
        let dvx = j.jacobian[(nv, 1)];
        println!("{method:?}: max |d x+/d mu| = {dmu:e}, dvx+/dvx = {dvx}");
        // exact methods to round-off; fd (one-sided at μ = 0, ε = 1e-6)
        // to its round-off, about 1e-16 / ε
        let tol = if method == Method::Fd { 1e-8 } else { 1e-12 };
        assert!(
            dmu < tol,
            "{method:?}: d x+/d mu = {}",
            j.jacobian.column(0)
        );
        assert!((dvx - 1.0).abs() < 1e-9, "{method:?}: dvx+/dvx = {dvx}");
    }
}
