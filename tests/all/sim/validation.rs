//! Issue 20 through the Rust API: a failed rollout keeps its trajectory;
//! options no backend implements are refused by `step` / `World::validate`
//! for every backend (not silently simulated without them); values outside
//! the documented ranges are refused and the edges of the ranges simulate;
//! penetration is measured geometrically.

use dualsim::contact::{Feature, SolverKind};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::RolloutError;
use dualsim::sim::penetration::gaps;
use dualsim::sim::validate;

const BACKENDS: [SolverKind; 3] = [
    SolverKind::Ipm,
    SolverKind::SingleLevel,
    SolverKind::Bilevel,
];

fn ground(restitution: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution,
        },
    }
}

/// A ball of radius 0.1 above the ground.
fn ball_world(mass: f64, restitution: f64, z: f64) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    let mat = Material {
        friction: 0.5,
        restitution,
    };
    w.add_body(
        "ball",
        mass,
        Mat3::identity() * (0.004 * mass),
        Some(Shape::Sphere { radius: 0.1 }),
        mat,
    )
    .unwrap();
    w.statics.push(ground(0.0));
    let x = State::at_rest(&w.model, &[[0.0, 0.0, z]]);
    (w, x)
}

fn assert_unsupported(e: &SimError, backend: &str, needle: &str) {
    match e {
        SimError::Unsupported {
            backend: b,
            feature,
        } => {
            assert_eq!(*b, backend);
            assert!(feature.contains(needle), "{feature}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert_eq!(e.kind(), "unsupported");
}

/// The features a backend may lack (`contact::Feature`), each with a
/// world that needs it and the words its refusal must name. The `match`
/// is exhaustive: a new feature does not compile until it is covered here.
fn needs(feature: Feature) -> (World<f64>, State<f64>, &'static str) {
    let robot_world = |ignore_limits: bool| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenes/double_pendulum.urdf");
        let robot =
            dualsim::dynamics::urdf::load_file(path, dualsim::dynamics::urdf::BaseJoint::Fixed)
                .unwrap();
        let mut w = World::<f64>::new(0.001);
        let r = w
            .add_robot("pendulum", &robot.model, &Pose::identity())
            .unwrap();
        w.robots[r].ignore_joint_limits = ignore_limits;
        let x = State {
            q: w.model.neutral(),
            v: DVec::zeros(w.model.nv),
        };
        (w, x)
    };
    match feature {
        // e = (0.5 + 0) / 2 between the ball and the ground (average)
        Feature::Restitution => {
            let (w, x) = ball_world(1.0, 0.5, 0.5);
            (w, x, "restitution (e = 0.25 between `ball` and `ground`")
        }
        Feature::Ccd => {
            let (mut w, x) = ball_world(1.0, 0.0, 0.5);
            w.ccd = true;
            (w, x, "continuous collision")
        }
        Feature::Robots => {
            let (w, x) = robot_world(true);
            (w, x, "articulated robots (robot `pendulum`")
        }
        Feature::JointLimits => {
            let (w, x) = robot_world(false);
            (w, x, "joint limits (robot `pendulum`")
        }
    }
}

/// Every backend of the registry (`SolverKind::ALL`) against every
/// feature: a feature the backend implements (`SolverKind::supports`)
/// simulates; one it does not is refused by `validate` and by `step` with
/// `SimError::Unsupported` naming the backend and the feature (the answer
/// without it is never returned silently), and a rollout stops at step 0.
/// For restitution, the variants of the combination are checked too.
#[test]
fn step_refuses_options_no_backend_implements() {
    let (mut refused, mut simulated) = (0, 0);
    for &kind in SolverKind::ALL {
        for feature in [
            Feature::Restitution,
            Feature::Ccd,
            Feature::Robots,
            Feature::JointLimits,
        ] {
            let (mut w, x, needle) = needs(feature);
            w.solver = kind;
            if kind == SolverKind::Lcp {
                // (lcp takes the pyramid cone only)
                w.friction_cone = dualsim::contact::FrictionCone::Pyramid;
            }
            if kind.supports(feature) {
                w.validate(&x)
                    .unwrap_or_else(|e| panic!("{kind} {feature:?}: {e}"));
                step(&w, &x, &w.zero_control())
                    .unwrap_or_else(|e| panic!("{kind} {feature:?}: {e}"));
                simulated += 1;
                continue;
            }
            // (`validate` checks the joint limits before the other features)
            assert_unsupported(&w.validate(&x).unwrap_err(), kind.name(), needle);
            if feature != Feature::JointLimits {
                // (`step` checks the features; the limits are `validate`'s,
                // see `validate_refuses_joint_limits_unless_ignored`)
                let e = step(&w, &x, &w.zero_control()).unwrap_err();
                assert_unsupported(&e, kind.name(), needle);
                let r = rollout(&w, &x, &Controls::Constant(w.zero_control()), 5).unwrap_err();
                assert_eq!((r.step, r.completed.states.len()), (0, 1));
            }
            refused += 1;
        }
        if kind.supports(Feature::Restitution) {
            continue;
        }
        // combined to zero by `min` with the ground's 0: honoured (inelastic is right)
        let (mut w, x) = ball_world(1.0, 0.5, 0.5);
        w.solver = kind;
        w.restitution_combine = dualsim::geometry::Combine::Min;
        step(&w, &x, &w.zero_control()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        // the ground's restitution alone, combined by max
        let (mut w, x) = ball_world(1.0, 0.0, 0.5);
        w.solver = kind;
        w.statics[0].material.restitution = 0.8;
        w.restitution_combine = dualsim::geometry::Combine::Max;
        assert_unsupported(
            &step(&w, &x, &w.zero_control()).unwrap_err(),
            kind.name(),
            "e = 0.8",
        );
        // two free bodies with restitution, no static geometry
        let mut w = World::<f64>::new(0.01);
        w.solver = kind;
        let m = Material {
            friction: 0.5,
            restitution: 1.0,
        };
        for n in ["a", "b"] {
            w.add_body(
                n,
                1.0,
                Mat3::identity() * 0.004,
                Some(Shape::Sphere { radius: 0.1 }),
                m,
            )
            .unwrap();
        }
        let x2 = State::at_rest(&w.model, &[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]);
        assert_unsupported(
            &step(&w, &x2, &w.zero_control()).unwrap_err(),
            kind.name(),
            "between `a` and `b`",
        );
    }
    println!("{refused} refusals, {simulated} simulated");
    // 7 backends × 4 features, of which lcp takes 3 and the rest robots
    // only or nothing: the test can only pass by refusing most of them.
    assert_eq!(refused + simulated, 4 * SolverKind::ALL.len());
    assert!(refused >= SolverKind::ALL.len() * 2, "{refused}");
}

/// URDF joint limits: `World::validate` refuses a robot with finite limits
/// unless it says `ignore_joint_limits`, for every backend.
#[test]
fn validate_refuses_joint_limits_unless_ignored() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes/double_pendulum.urdf");
    let robot = dualsim::dynamics::urdf::load_file(path, dualsim::dynamics::urdf::BaseJoint::Fixed)
        .unwrap();
    for kind in BACKENDS {
        let mut w = World::<f64>::new(0.001);
        w.solver = kind;
        let r = w
            .add_robot_with_collisions("pendulum", &robot, &Pose::identity())
            .unwrap();
        let x = State {
            q: w.model.neutral(),
            v: DVec::zeros(w.model.nv),
        };
        let e = w.validate(&x).unwrap_err();
        // every limited joint, by its joint name
        assert_unsupported(
            &e,
            kind.name(),
            "joint limits (robot `pendulum`, 2 limited joints: joint `shoulder` [-10, 10], \
             joint `elbow` [-10, 10])",
        );
        w.robots[r].ignore_joint_limits = true;
        if kind == SolverKind::Ipm {
            w.validate(&x).unwrap();
            step(&w, &x, &w.zero_control()).unwrap();
        } else {
            // free-body backends refuse a robot (their step panicked on one)
            assert_unsupported(
                &w.validate(&x).unwrap_err(),
                kind.name(),
                "articulated robots (robot `pendulum`",
            );
            assert_unsupported(
                &step(&w, &x, &w.zero_control()).unwrap_err(),
                kind.name(),
                "articulated robots",
            );
        }
    }
}

/// A failed step keeps the steps before it: the completed trajectory is the
/// same as a rollout stopped just before the failing step. The failure is
/// forced by construction: one interior-point iteration per step takes the
/// free flight (no contact candidate) but cannot solve a step with contact
/// (the complementarity must fall from its start to ρ), so the rollout
/// fails at the box's first contact step, whatever the solver's progress.
#[test]
fn failed_rollout_keeps_the_completed_trajectory() {
    let mut w = World::<f64>::new(0.01);
    w.params.max_iterations = 1;
    // (and without the continuation in ρ that would solve it again)
    w.backends.ipm.continuation_iterations = 0;
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (0.25 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.25),
        }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(ground(0.0));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.5]]);
    x0.v.copy_from_slice(&[1.0, 1.5, 1.0, 0.5, -0.8, 2.0]);
    let c = Controls::Constant(w.zero_control());
    let e: RolloutError<f64> = rollout(&w, &x0, &c, 500).unwrap_err();
    assert!(e.step > 10, "{e}");
    assert_eq!(e.error.kind(), "max_iterations");
    assert_eq!(e.completed.states.len(), e.step + 1);
    assert_eq!(e.completed.stats.len(), e.step);
    assert!(
        e.to_string().starts_with(&format!("step {}: ", e.step)),
        "{e}"
    );
    let before = rollout(&w, &x0, &c, e.step).unwrap();
    assert_eq!(before.last(), e.completed.last());
    // continuing from the last completed state fails at once, the same way
    let again = step(&w, e.completed.last(), &w.zero_control()).unwrap_err();
    assert_eq!(again, e.error);
    // `?` into SimError and DiffError drops the trajectory and keeps the error
    let as_sim: SimError = e.clone().into();
    assert_eq!(as_sim, e.error);
    let as_diff: dualsim::diff::DiffError = e.clone().into();
    assert_eq!(as_diff, dualsim::diff::DiffError::Sim(e.error.clone()));
}

/// Values outside the documented ranges are typed errors of `validate`.
#[test]
fn validate_refuses_values_outside_the_ranges() {
    let check = |w: &World<f64>, x: &State<f64>, needle: &str| {
        let e = w.validate(x).unwrap_err();
        assert_eq!(e.kind(), "out_of_range", "{e}");
        assert!(e.to_string().contains(needle), "`{needle}` not in {e}");
    };
    let (w, x) = ball_world(1e300, 0.0, 1.0);
    check(&w, &x, "body `ball`: mass");
    let (mut w, x) = ball_world(1.0, 0.0, 1.0);
    w.dt = 1e10;
    check(&w, &x, "sim.dt");
    w.dt = 0.01;
    w.set_gravity(Vec3::new(0.0, 1e300, 1e300));
    check(&w, &x, "sim.gravity");
    w.set_gravity(Vec3::new(0.0, 0.0, -9.81));
    let mut fast = x.clone();
    fast.v[0] = 1e4;
    check(&w, &fast, "speed");
    let mut spin = x.clone();
    spin.v[5] = 300.0;
    check(&w, &spin, "rotation per step");
    w.model.bodies[0].inertia.inertia = Mat3::from_diagonal(&Vec3::new(0.1, 0.1, 0.5));
    check(&w, &x, "triangle inequality");
    let (mut w, x) = ball_world(1.0, 0.0, 1.0);
    w.shapes[0] = Some(Shape::Sphere { radius: 1e-9 });
    check(&w, &x, "shape radius");
    // a light ball would float 10 m above the ground with the default rho = 1e-6
    let (w, x) = ball_world(1e-6, 0.0, 0.1);
    check(&w, &x, "lower `[solver_params] rho`");
    assert!(
        (validate::relaxation_gap(1e-6, 1e-6, 9.81, 0.01).unwrap() - 1e-6 / 9.81e-8).abs() < 1e-9
    );
    // the nominal world passes
    let (w, x) = ball_world(1.0, 0.0, 1.0);
    w.validate(&x).unwrap();
    assert_eq!(validate::scaled_norm(&[3e300, 4e300, 0.0]), 5e300);
}

/// The edges of the ranges simulate without a failure or a non-finite
/// value, in every backend: the lightest and heaviest ball resting on the
/// ground, the shortest and longest time step, the strongest gravity, the
/// fastest body.
#[test]
fn edges_of_the_ranges_simulate() {
    for kind in BACKENDS {
        for (mass, dt, g, v) in [
            (validate::MASS.0, 0.01, 9.81, 0.0),
            (validate::MASS.1, 0.01, 9.81, 0.0),
            (1.0, validate::DT.0, 9.81, 0.0),
            (1.0, validate::DT.1, 9.81, 0.0),
            (1.0, 0.01, validate::GRAVITY_MAX, 0.0),
            (1.0, 0.001, 9.81, validate::SPEED_MAX),
        ] {
            let (mut w, mut x) = ball_world(mass, 0.0, 0.1);
            w.solver = kind;
            w.dt = dt;
            w.set_gravity(Vec3::new(0.0, 0.0, -g));
            // a relaxation at half the largest the resting-gap check allows
            w.params.rho =
                (0.5 * validate::RELAXATION_GAP_FRACTION * 0.1 * mass * g * dt).min(1e-6);
            // the fast ball moves sideways above the ground
            x.v[0] = v;
            w.validate(&x).unwrap();
            let traj = rollout(&w, &x, &Controls::Constant(w.zero_control()), 50)
                .unwrap_or_else(|e| panic!("{kind:?} m={mass} dt={dt} g={g} v={v}: {e}"));
            assert!(traj.states.iter().all(|s| s.is_finite()));
            if v == 0.0 {
                // at rest on the ground within the relaxation's gap (≤ 1 % of the radius)
                let z = traj.last().q[2];
                assert!(
                    (z - 0.1).abs() <= validate::RELAXATION_GAP_FRACTION * 0.1,
                    "{kind:?} m={mass} dt={dt} g={g}: z = {z}"
                );
            }
        }
    }
}

/// Penetration measured geometrically, independent of any solver: the
/// deepest pair and the pairs without a closed form counted as unmeasured.
#[test]
fn penetration_is_measured_geometrically() {
    let (w, x) = ball_world(1.0, 0.0, 0.03);
    let g = gaps(&w, &x, 0.0);
    let d = g.deepest().unwrap();
    assert_eq!((d.a.as_str(), d.b.as_str()), ("ball", "ground"));
    assert!((d.gap + 0.07).abs() < 1e-15 && (g.max_penetration() - 0.07).abs() < 1e-15);
    assert_eq!(g.unmeasured, 0);
    // two boxes (closed-form box–box): 0.25 half extents, centres 0.3
    // apart along x, so they overlap by 0.2
    let mut w = World::<f64>::new(0.01);
    for n in ["a", "b"] {
        w.add_body(
            n,
            1.0,
            Mat3::identity() * 0.04,
            Some(Shape::Box {
                half_extents: Vec3::repeat(0.25),
            }),
            Material::default(),
        )
        .unwrap();
    }
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0], [0.3, 0.0, 0.0]]);
    let g = gaps(&w, &x, 0.0);
    assert_eq!(g.unmeasured, 0);
    assert!(
        (g.max_penetration() - 0.2).abs() < 1e-12,
        "{}",
        g.max_penetration()
    );
    // two cylinders: no closed form, counted as unmeasured
    let mut w = World::<f64>::new(0.01);
    for n in ["a", "b"] {
        w.add_body(
            n,
            1.0,
            Mat3::identity() * 0.04,
            Some(Shape::Cylinder {
                radius: 0.25,
                half_length: 0.25,
            }),
            Material::default(),
        )
        .unwrap();
    }
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.0], [0.3, 0.0, 0.0]]);
    let g = gaps(&w, &x, 0.0);
    assert!(g.pairs.is_empty());
    assert_eq!(g.unmeasured, 1);
}

/// Each backend reads its own `[solver_params]` keys: a key is honoured
/// (it reaches `World::backends` of the chosen backend), an unknown key and
/// an out-of-range value are refused at their line and column, and the
/// shared keys keep working under every backend.
#[test]
fn backend_params_from_scene_files() {
    // line 4: `lcp` solves the pyramid cone only (refused at load otherwise)
    let scene = |solver: &str, extra: &str| {
        let cone = if solver == "lcp" {
            "friction_cone = \"pyramid\""
        } else {
            ""
        };
        format!(
            "[sim]\ndt = 0.01\nsolver = \"{solver}\"\n{cone}\n[solver_params]\nrho = 1e-7\n{extra}\n\n[[body]]\nname = \"ball\"\nmass = 1.0\n\
             inertia = [0.004, 0.004, 0.004]\nposition = [0.0, 0.0, 0.2]\nshape = {{ type = \"sphere\", radius = 0.1 }}\n"
        )
    };
    for kind in SolverKind::ALL {
        let name = kind.name();
        // The interior-point family's keys (`newton`, `fraction_to_boundary`,
        // `warm_start`) are tested where the backend reads them; every
        // backend of this build reads `margin`.
        let ipm_family = kind.param_keys().contains(&"newton");
        let extra = if ipm_family {
            "margin = 0.07\nnewton = { max_iterations = 7 }"
        } else {
            "margin = 0.07"
        };
        let s = dualsim::scene::parse(&scene(name, extra), "t.toml")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.world.solver, *kind);
        assert_eq!(s.world.params.rho, 1e-7);
        assert_eq!(
            s.world.solver.contact_margin(&s.world.backends),
            0.07,
            "{name}"
        );
        // the other backends keep their defaults
        for other in SolverKind::ALL.iter().filter(|k| *k != kind) {
            assert_eq!(other.contact_margin(&s.world.backends), 0.02);
        }
        let e = dualsim::scene::parse(&scene(name, "margn = 0.07"), "t.toml").unwrap_err();
        assert_eq!(
            (e.line, e.column, e.path.as_str()),
            (7, 1, "solver_params.margn"),
            "{e}"
        );
        assert!(
            e.message.contains("margin"),
            "the message lists the accepted keys: {e}"
        );
        if !ipm_family {
            // A key of another backend is refused, naming the path.
            let e = dualsim::scene::parse(&scene(name, "fraction_to_boundary = 0.5"), "t.toml")
                .unwrap_err();
            assert_eq!(
                (e.line, e.path.as_str()),
                (7, "solver_params.fraction_to_boundary"),
                "{e}"
            );
            let e = dualsim::scene::parse(&scene(name, "margin = -1.0"), "t.toml").unwrap_err();
            assert!(
                e.message.contains("margin") && e.message.contains(name),
                "{e}"
            );
            continue;
        }
        let e = dualsim::scene::parse(&scene(name, "fraction_to_boundary = 1.5"), "t.toml")
            .unwrap_err();
        assert_eq!(
            (e.line, e.path.as_str()),
            (7, "solver_params.fraction_to_boundary"),
            "{e}"
        );
        assert!(
            e.message.contains("(0, 1)") && e.message.contains(name),
            "{e}"
        );
        let e = dualsim::scene::parse(&scene(name, "warm_start = 3"), "t.toml").unwrap_err();
        assert_eq!(
            (e.line, e.path.as_str()),
            (7, "solver_params.warm_start"),
            "{e}"
        );
    }
}

/// The registry: every name parses back to its backend, planned names are
/// told apart from unknown ones, and the feature table is the backends'.
#[test]
fn registry_names_and_features() {
    for kind in SolverKind::ALL {
        assert_eq!(kind.name().parse::<SolverKind>().unwrap(), *kind);
        assert_eq!(kind.to_string(), kind.name());
        assert!(!kind.param_keys().is_empty());
    }
    assert_eq!("lcp".parse::<SolverKind>().unwrap(), SolverKind::Lcp);
    assert_eq!("soft".parse::<SolverKind>().unwrap(), SolverKind::Soft);
    assert!(!"lpc".parse::<SolverKind>().unwrap_err().planned);
    assert_eq!(SolverKind::default(), SolverKind::Ipm);
    assert!(SolverKind::Ipm.supports(dualsim::contact::Feature::Robots));
    assert!(!SolverKind::SingleLevel.supports(dualsim::contact::Feature::Robots));
}

/// A polytope whose half-spaces do not bound a volume (a slab, a wedge, a
/// pyramid without a base) is a located scene error naming a direction of
/// unboundedness; a bounded one (a cube, a tetrahedron) is accepted.
/// The cone's half angle is refused at π/2 and above.
#[test]
fn unbounded_polytopes_and_flat_cones_are_refused() {
    let scene = |shape: &str| {
        format!(
            "[sim]\ndt = 0.01\nsteps = 2\n\n[[body]]\nname = \"p\"\nmass = 1.0\ninertia = [0.1, 0.1, 0.1]\nposition = [0.0, 0.0, 5.0]\nshape = {shape}\n"
        )
    };
    let poly = |normals: &str, offsets: &str| {
        scene(&format!(
            "{{ type = \"polytope\", normals = {normals}, offsets = {offsets} }}"
        ))
    };
    for (normals, offsets, dir) in [
        // slab |z| ≤ 0.5: unbounded in x and y
        ("[[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]", "[0.5, 0.5]", ""),
        // a single half-space
        ("[[0.0, 0.0, 1.0]]", "[0.5]", ""),
        // a square prism without caps: unbounded along ±z
        (
            "[[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0]]",
            "[0.5, 0.5, 0.5, 0.5]",
            "",
        ),
        // a pyramid without its base: unbounded along −z
        (
            "[[1.0, 0.0, 1.0], [-1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, -1.0, 1.0]]",
            "[0.5, 0.5, 0.5, 0.5]",
            "",
        ),
    ] {
        let e = dualsim::scene::parse(&poly(normals, offsets), "t.toml").unwrap_err();
        assert_eq!(
            (e.line, e.column, e.path.as_str()),
            (10, 40, "body[0].shape.normals"),
            "{e}"
        );
        assert!(e.message.contains("do not bound a volume"), "{e}");
        assert!(e.message.contains(dir), "{normals}: {e}");
    }
    // bounded: a cube and a tetrahedron
    for (normals, offsets) in [
        (
            "[[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]",
            "[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]",
        ),
        (
            "[[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]",
            "[0.3, 0.3, 0.3, 0.3]",
        ),
    ] {
        dualsim::scene::parse(&poly(normals, offsets), "t.toml").unwrap();
    }
    for angle in ["1.5707963267948966", "2.0"] {
        let e = dualsim::scene::parse(
            &scene(&format!(
                "{{ type = \"cone\", height = 1.0, half_angle = {angle} }}"
            )),
            "t.toml",
        )
        .unwrap_err();
        assert_eq!(e.path, "body[0].shape.half_angle", "{e}");
        assert_eq!(e.line, 10, "{e}");
        assert!(e.message.contains("(0, pi/2)"), "{e}");
    }
}

/// A friction cone the backend does not solve is refused when the scene is
/// loaded (a scene error at `sim.friction_cone` naming the backend), for
/// every backend and both cones; a cone it solves loads and steps without
/// an `unsupported` error. `lcp` with a robot and the default (exact) cone
/// was refused only at its first step.
#[test]
fn friction_cones_a_backend_cannot_solve_are_refused_at_load() {
    let urdf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes/double_pendulum.urdf");
    let mut refused = 0;
    for kind in SolverKind::ALL.iter().copied() {
        for (cone, key) in [
            (dualsim::contact::FrictionCone::Exact, "exact"),
            (dualsim::contact::FrictionCone::Pyramid, "pyramid"),
        ] {
            let robot = if kind.supports(Feature::Robots) {
                format!(
                    "[[robot]]\nname = \"arm\"\nurdf = {:?}\nbase_position = [0.0, 0.0, 3.0]\n\
                     ignore_joint_limits = true\n",
                    urdf.display().to_string()
                )
            } else {
                String::new()
            };
            let src = format!(
                "[sim]\ndt = 0.001\nsteps = 1\nsolver = \"{}\"\nfriction_cone = \"{key}\"\n\
                 [[body]]\nname = \"b\"\nmass = 1.0\ninertia = [0.1, 0.1, 0.1]\n\
                 position = [0.0, 0.0, 0.1]\nshape = {{ type = \"sphere\", radius = 0.1 }}\n\
                 [[static]]\nname = \"ground\"\nshape = {{ type = \"plane\", normal = [0.0, 0.0, 1.0] }}\n\
                 {robot}",
                kind.name()
            );
            let loaded = dualsim::scene::parse(&src, "cone.toml");
            if validate::cone_supported(kind, cone) {
                let s = loaded.unwrap_or_else(|e| panic!("{kind:?} {key}: {e}"));
                if let Err(e) = step(&s.world, &s.initial, s.controls.at(0)) {
                    assert_ne!(e.kind(), "unsupported", "{kind:?} {key}: {e}");
                }
            } else {
                let e = loaded.expect_err(key);
                assert_eq!((e.line, e.path.as_str()), (5, "sim.friction_cone"), "{e}");
                assert!(
                    e.message.contains(kind.name()) && e.message.contains(key),
                    "{kind:?}: {e}"
                );
                refused += 1;
            }
        }
    }
    // lcp (exact), implicit_ncp, convex and soft (pyramid)
    assert_eq!(refused, 4);
}
