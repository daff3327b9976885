//! Reverse mode and exact second order through rollouts
//! (`dualsim::diff::adjoint`), against independent references: the
//! forward `ift` rollout Jacobian (gradients, reverse Jacobians), the
//! hyper-dual `lift` Hessian, central differences of the forward
//! gradient, and `H v` of the assembled Hessian for the Hessian–vector
//! product. Every example scene with an objective is covered, plus a
//! continuous-collision impact inside a step (the split step).

use std::path::PathBuf;

use dualsim::diff::{DiffOptions, Input, Method, Param, rollout_jacobian};
use dualsim::math::{DMat, DVec};
use dualsim::opt::{HessianMethod, Objective};
use dualsim::scene::{self, ObjectiveSpec, Scene};

fn load(name: &str) -> Scene {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes")
        .join(name);
    scene::load(&p).unwrap()
}

fn objective(s: &Scene) -> Objective {
    Objective::from_scene(s).unwrap()
}

fn rel(a: &DMat<f64>, b: &DMat<f64>) -> f64 {
    (a - b).amax() / b.amax().max(1.0)
}

/// The example scenes with an `[objective]`, at sizes a test affords
/// (steps cut where the full run takes seconds).
fn examples() -> Vec<(&'static str, Scene)> {
    let mut out = Vec::new();
    for (name, steps) in [
        ("opt_box_push.toml", None),
        ("opt_projectile.toml", None),
        ("opt_sysid.toml", Some(20)),
        ("opt_arm7.toml", Some(4)),
        ("soft_box_push.toml", Some(30)),
        ("opt_arm7_reach.toml", Some(4)),
    ] {
        let mut s = load(name);
        if let Some(n) = steps {
            s.steps = n;
        }
        out.push((name, s));
    }
    out
}

#[test]
fn adjoint_gradient_equals_the_forward_ift_gradient_on_every_objective() {
    for (name, s) in examples() {
        let obj = objective(&s);
        let d0 = vec![0.0; obj.dim()];
        let (va, ga) = obj.gradient(&d0).unwrap();
        let (vf, gf) = obj.gradient_forward(&d0).unwrap();
        let scale = gf.amax().max(1.0);
        let err = (&ga - &gf).amax() / scale;
        assert!(err <= 1e-10, "{name}: adjoint vs forward gradient {err:e}");
        assert!(
            (va - vf).abs() <= 1e-12 * vf.abs().max(1.0),
            "{name}: {va} vs {vf}"
        );
        assert!(gf.amax() > 1e-8, "{name}: a zero gradient checks nothing");
    }
}

#[test]
fn adjoint_hessian_equals_lift_and_fd_of_the_forward_gradient() {
    for (name, s) in examples() {
        if name == "soft_box_push.toml" {
            // 180 variables at 30 steps: lift takes minutes (compared on
            // the command line in docs/optimization.md)
            continue;
        }
        let obj = objective(&s);
        let d0 = vec![0.0; obj.dim()];
        let adj = obj.hessian(&d0, HessianMethod::Adjoint).unwrap();
        let lift = obj.hessian(&d0, HessianMethod::Lift).unwrap();
        let e = rel(&adj.hessian, &lift.hessian);
        assert!(e <= 1e-9, "{name}: adjoint vs lift Hessian {e:e}");
        let fd = obj.hessian(&d0, HessianMethod::Fd).unwrap();
        let e = rel(&adj.hessian, &fd.hessian);
        assert!(e <= 1e-5, "{name}: adjoint vs fd Hessian {e:e}");
        let ge = (&adj.gradient - &lift.gradient).amax() / lift.gradient.amax().max(1.0);
        assert!(ge <= 1e-10, "{name}: gradients {ge:e}");
    }
}

#[test]
fn projectile_adjoint_hessian_is_t_squared_identity() {
    let obj = objective(&load("opt_projectile.toml"));
    let d = obj.hessian(&[0.0; 3], HessianMethod::Adjoint).unwrap();
    let t = 0.5;
    let err = (&d.hessian - DMat::<f64>::identity(3, 3) * (t * t)).amax();
    assert!(err <= 1e-12, "|H − T²I| = {err:e}");
}

#[test]
fn hessian_vector_product_equals_the_assembled_hessian_times_v() {
    for name in ["opt_box_push.toml", "opt_arm7.toml", "opt_sysid.toml"] {
        let mut s = load(name);
        s.steps = s.steps.min(6);
        let obj = objective(&s);
        let n = obj.dim();
        let d0 = vec![0.0; n];
        let h = obj.hessian(&d0, HessianMethod::Adjoint).unwrap();
        // a direction with every entry different
        let v: Vec<f64> = (0..n)
            .map(|i| ((i * 7 + 3) % 11) as f64 / 11.0 - 0.4)
            .collect();
        let (_, g, hv) = obj.hessian_vector(&d0, &v).unwrap();
        let expect = &h.hessian * DVec::from_column_slice(&v);
        let err = (&hv - &expect).amax() / expect.amax().max(1.0);
        assert!(err <= 1e-10, "{name}: Hv vs H·v {err:e}");
        assert!(expect.amax() > 1e-6, "{name}: H v is not trivially zero");
        assert!((&g - &h.gradient).amax() <= 1e-12 * h.gradient.amax().max(1.0));
    }
}

#[test]
fn reverse_rollout_jacobian_equals_the_forward_one() {
    let s = load("opt_box_push.toml");
    let nv = s.world.model.nv;
    let mut inputs: Vec<Input> = (0..nv)
        .map(Input::Velocity)
        .chain((0..nv).map(Input::Config))
        .collect();
    inputs.push(Input::Model(Param::Mass(0)));
    inputs.push(Input::Model(Param::Friction(0)));
    for k in 0..s.steps {
        inputs.extend((0..nv).map(|index| Input::Control { step: k, index }));
    }
    let o = DiffOptions::default();
    let f = rollout_jacobian(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &inputs,
        Method::Ift,
        &o,
    )
    .unwrap();
    let r = rollout_jacobian(
        &s.world,
        &s.initial,
        &s.controls,
        s.steps,
        &inputs,
        Method::Adjoint,
        &o,
    )
    .unwrap();
    let e = rel(&r.jacobian, &f.jacobian);
    assert!(e <= 1e-12, "reverse vs forward rollout Jacobian {e:e}");
}

/// Two balls with restitution 0.5 and a lateral offset, the impact
/// inside a step under continuous collision: the step splits, and the
/// final position of the target depends nonlinearly on the cue's
/// velocity (the impact normal turns with it).
#[test]
fn split_impact_step_hessian_matches_fd_of_the_gradient() {
    let toml = r#"
[sim]
dt = 0.01
steps = 60
gravity = [0.0, 0.0, 0.0]
solver = "lcp"
friction_cone = "pyramid"
ccd = true

[[body]]
name = "cue"
mass = 1.0
inertia = [0.004, 0.004, 0.004]
position = [0.0, 0.0, 0.0]
velocity = [1.0, 0.0, 0.0]
friction = 0.0
restitution = 0.5
shape = { type = "sphere", radius = 0.1 }

[[body]]
name = "target"
mass = 1.0
inertia = [0.004, 0.004, 0.004]
position = [0.3253, 0.06, 0.0]
friction = 0.0
restitution = 0.5
shape = { type = "sphere", radius = 0.1 }
"#;
    let s = scene::parse(toml, "split.toml").unwrap();
    let spec = ObjectiveSpec {
        of: vec!["target.position".into()],
        target: vec![0.6, 0.3, 0.0],
        weights: vec![1.0, 1.0, 1.0],
        wrt: vec!["cue.velocity".into()],
        regularization: 0.0,
        ..Default::default()
    };
    let obj = Objective::new(&s.world, &s.initial, &s.controls, s.steps, &spec).unwrap();
    let d0 = vec![0.0; 3];
    let adj = obj.hessian(&d0, HessianMethod::Adjoint).unwrap();
    let fd = obj.hessian(&d0, HessianMethod::Fd).unwrap();
    let e = rel(&adj.hessian, &fd.hessian);
    assert!(e <= 1e-5, "split step: adjoint vs fd Hessian {e:e}");
    assert!(
        adj.hessian[(1, 1)].abs() > 1e-3,
        "the oblique impact makes the cost curved: {}",
        adj.hessian
    );
    let (_, gf) = obj.gradient_forward(&d0).unwrap();
    assert!((&adj.gradient - &gf).amax() <= 1e-10 * gf.amax().max(1.0));
}
