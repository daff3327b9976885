//! The pruned evaluation of `soft` (kd-tree softmin queries, forces only
//! where the separation field's weight is nonzero; `prune = true`, the
//! default) against the reference that computes every point pair
//! (`prune = false`): one step's `v⁺` (gravity off, so `v⁺ − v` is the
//! contact's effect) and its derivative along a dual direction (pose,
//! rotation and velocity seeded), on random poses from deep penetration
//! through touching to separated, for body–body and body–static pairs.
//! The pruning visits a superset of the terms the reference does not zero,
//! in the same order, so the two agree to 1e-14 of the contact's effect
//! (measured: exactly).

use dualsim::contact::SolverKind;
use dualsim::contact::soft::Params;
use dualsim::diff::{Param, seeded};
use dualsim::math::{Pose, Quat, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;
use num_dual::Dual64;

/// A small deterministic generator (xorshift), values in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn sym(&mut self) -> f64 {
        2.0 * self.next() - 1.0
    }
}

fn mat() -> Material<f64> {
    Material {
        friction: 0.4,
        restitution: 0.0,
    }
}

fn tee() -> Shape<f64> {
    let part = |he: [f64; 3], at: [f64; 3]| {
        (
            Shape::Box {
                half_extents: Vec3::from(he),
            },
            Pose {
                rotation: Quat::identity(),
                translation: Vec3::from(at),
            },
        )
    };
    Shape::Bundle {
        parts: vec![
            part([0.025, 0.1, 0.025], [0.05, 0.0, 0.0]),
            part([0.05, 0.025, 0.025], [-0.025, 0.0, 0.0]),
        ],
        op: dualsim::geometry::BundleOp::Union,
    }
}

/// Two bodies, the T (body 0) and a ball (body 1), and with
/// `with_static` a static box at the origin.
fn world(prune: bool, eps1: f64, with_static: bool) -> World<f64> {
    let mut w = World::<f64>::new(1e-3);
    w.solver = SolverKind::Soft;
    w.backends.soft = Params {
        prune,
        distance_smoothing: eps1,
        points_per_meter: 60.0,
        margin: 0.05,
        ..Params::default()
    };
    w.set_gravity(Vec3::zeros());
    w.add_body(
        "tee",
        1.0,
        Mat3::from_diagonal(&Vec3::new(0.0035, 0.0015, 0.0045)),
        Some(tee()),
        mat(),
    )
    .unwrap();
    w.add_body(
        "ball",
        0.5,
        Mat3::identity() * 0.0005,
        Some(Shape::Sphere { radius: 0.05 }),
        mat(),
    )
    .unwrap();
    if with_static {
        w.statics.push(StaticGeometry {
            name: "block".into(),
            shape: Shape::Box {
                half_extents: Vec3::new(0.08, 0.06, 0.04),
            },
            pose: Pose {
                rotation: Quat::new(0.15f64.cos(), 0.0, 0.0, 0.15f64.sin()),
                translation: Vec3::zeros(),
            },
            material: mat(),
        });
    }
    w
}

fn unit_quat(r: &mut Rng) -> [f64; 4] {
    let q = [r.sym(), r.sym(), r.sym(), r.sym()];
    let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    q.map(|x| x / n)
}

/// A random state: the T at the origin (body–body) or beside the static
/// block, the ball at `dist` from the T's centre along a random
/// direction, random orientations and velocities.
fn state(w: &World<f64>, r: &mut Rng, dist: f64, with_static: bool) -> State<f64> {
    let dir = Vec3::new(r.sym(), r.sym(), r.sym()).normalize();
    let tee_at = if with_static {
        // the T near the block's top face, the ball near the block's side
        [0.03 * r.sym(), 0.03 * r.sym(), 0.04 + 0.025 + dist - 0.1]
    } else {
        [0.0; 3]
    };
    let ball_at = if with_static {
        [0.08 + 0.05 + dist - 0.1, 0.02 * r.sym(), 0.01 * r.sym()]
    } else {
        (dir * dist).into()
    };
    let mut x = State::at_rest(&w.model, &[tee_at, ball_at]);
    for (b, q) in [(0, unit_quat(r)), (1, unit_quat(r))] {
        if with_static && b == 0 {
            continue;
        }
        let k = w.model.bodies[b].idx_q;
        for d in 0..4 {
            x.q[k + 3 + d] = q[d];
        }
    }
    for i in 0..x.v.len() {
        x.v[i] = 0.3 * r.sym();
    }
    x
}

/// The largest difference of the two steps' `v⁺` (primal and dual part)
/// relative to the contact's effect `max |v⁺ − v|` (each part).
fn compare(eps1: f64, with_static: bool, seed: u64) -> (f64, f64, f64) {
    let (wp, wr) = (
        world(true, eps1, with_static),
        world(false, eps1, with_static),
    );
    let mut r = Rng(seed);
    let u = wp.zero_control();
    let (mut worst_re, mut worst_du, mut smallest_effect) = (0.0f64, 0.0f64, f64::INFINITY);
    // from 6 cm deep (centre distance below the sum of the sizes) through
    // touching to beyond the cut-off
    for dist in [0.06, 0.09, 0.11, 0.125, 0.135, 0.15, 0.17, 0.2] {
        for _ in 0..3 {
            let x = state(&wp, &mut r, dist, with_static);
            let (vp, vr) = (
                step(&wp, &x, &u).unwrap().state.v,
                step(&wr, &x, &u).unwrap().state.v,
            );
            let effect = (&vr - &x.v).amax();
            if effect == 0.0 {
                // no pair within the cut-off: both must be free flight
                assert_eq!(vp, vr);
                continue;
            }
            smallest_effect = smallest_effect.min(effect);
            worst_re = worst_re.max((&vp - &vr).amax() / effect);
            // a dual direction: translation and rotation of the ball, the
            // T's angular velocity
            let params = [Param::Q(6), Param::Q(10), Param::V(4)];
            let deltas = [
                Dual64::new(0.0, 1.0),
                Dual64::new(0.0, 0.7),
                Dual64::new(0.0, -0.4),
            ];
            let dv = |w: &World<f64>| {
                let (wd, xd, ud) = seeded(w, &x, &u, &params, &deltas).unwrap();
                step(&wd, &xd, &ud).unwrap().state.v.map(|z| z.eps)
            };
            let (dp, dr) = (dv(&wp), dv(&wr));
            let scale = dr.amax();
            if scale > 0.0 {
                worst_du = worst_du.max((&dp - &dr).amax() / scale);
            }
        }
    }
    (worst_re, worst_du, smallest_effect)
}

#[test]
fn pruned_body_body_equals_every_point_pair() {
    for eps1 in [1e-4, 1e-5] {
        let (re, du, eff) = compare(eps1, false, 0x9e37_79b9_7f4a_7c15);
        println!(
            "T–ball, eps1 {eps1:e}: |v+ pruned − reference| / |v+ − v| = {re:e}, \
             derivative {du:e} (smallest contact effect {eff:e} m/s)"
        );
        assert!(eff.is_finite(), "no pose in contact");
        assert!(re <= 1e-14, "{re:e}");
        assert!(du <= 1e-14, "{du:e}");
    }
}

#[test]
fn pruned_body_static_equals_every_point_pair() {
    for eps1 in [1e-4, 1e-5] {
        let (re, du, eff) = compare(eps1, true, 0x2545_f491_4f6c_dd1d);
        println!(
            "T, ball – static block, eps1 {eps1:e}: |v+ pruned − reference| / |v+ − v| = {re:e}, \
             derivative {du:e} (smallest contact effect {eff:e} m/s)"
        );
        assert!(eff.is_finite(), "no pose in contact");
        assert!(re <= 1e-14, "{re:e}");
        assert!(du <= 1e-14, "{du:e}");
    }
}

/// The pair cap `max_pair_points` refuses a pair whose point-count product
/// exceeds it, with a typed error naming the key; a non-positive cap is
/// refused when checking the parameters.
#[test]
fn pair_cap_is_a_checked_key() {
    let mut w = world(true, 1e-4, false);
    w.backends.soft.max_pair_points = 1000.0;
    let x = State::at_rest(&w.model, &[[0.0; 3], [0.1, 0.0, 0.0]]);
    let err = step(&w, &x, &w.zero_control()).unwrap_err().to_string();
    assert!(err.contains("max_pair_points"), "{err}");
    w.backends.soft.max_pair_points = 1e8;
    assert!(step(&w, &x, &w.zero_control()).is_ok());
}
