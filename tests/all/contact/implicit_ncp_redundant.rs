//! Derivatives of `implicit_ncp` on redundant contacts (issue #16,
//! point 6): a box flat on the ground touches it at four corners, whose
//! normal impulses are not unique (three equations for four impulses), so
//! `∂r/∂y` is singular.
//!
//! * Resting (sticking) flat: `v⁺` is unique and so are its derivatives;
//!   the minimum-norm (pseudo-inverse) solve of `ift`, `lift` and
//!   `unrolled` gives the closed form below, and `fd` agrees.
//! * Sliding and spinning flat: the corners slip in different directions,
//!   so the friction torque, and with it `v⁺`, depends on how the weight
//!   is distributed over the corners: the step map is set-valued and has
//!   no derivative. Every derivative method that solves with `∂r/∂y`
//!   refuses with `SolveError::NotUnique` instead of returning the
//!   minimum-norm number.

use dualsim::contact::{SolveError, SolverKind};
use dualsim::diff::{DiffError, Param};
use dualsim::math::DMat;
use dualsim::prelude::*;

const H: f64 = 0.01;
/// Half height of the box: the lever arm of the corners below the centre.
const C: f64 = 0.25;

fn flat_box(v: [f64; 6]) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(H);
    w.solver = SolverKind::ImplicitNcp;
    let mat = Material {
        friction: 0.5,
        restitution: 0.0,
    };
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * (0.5 * 0.5 / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::new(0.3, 0.2, C),
        }),
        mat,
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat,
    });
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, C]]);
    x0.v.copy_from_slice(&v);
    (w, x0)
}

/// The box at rest on its face: after one step it rests exactly (gap 0,
/// sticking), and every input that keeps it resting and sticking moves
/// `v⁺` by the closed form of a rigid box held at the four corners:
///
/// * `∂v⁺/∂v = 0`, `∂v⁺/∂u = 0` (absorbed by the contacts);
/// * lifting by δz: `v⁺_z = −δz/h`, so `q⁺_z` does not move;
/// * tilting by δ about x (world frame): `ω⁺_x = −δ/h` brings the corners
///   back to the ground, and they do not slip: `v⁺_y = c δ/h` (c the
///   corners' depth below the centre), `q⁺_y = c δ`; about y:
///   `ω⁺_y = −δ/h`, `v⁺_x = −c δ/h`, `q⁺_x = −c δ`;
/// * horizontal shifts and the yaw leave the contact unchanged: 0.
///
/// Tolerance: `ift`, `lift`, `unrolled` to 1e-9 of the largest entry
/// (1/h = 100); `fd` to 1e-6 (its difference quotient, ε = 1e-6).
#[test]
fn resting_flat_box_has_the_closed_form_derivative() {
    let (w, x0) = flat_box([0.0; 6]);
    // settle one step (exact complementarity: the gap is 0 after it)
    let x1 = dualsim::sim::step(&w, &x0, &w.zero_control())
        .expect("step")
        .state;
    let params: Vec<Param> = (0..6)
        .map(Param::Q)
        .chain((0..6).map(Param::V))
        .chain((0..6).map(Param::U))
        .collect();
    let mut want = DMat::<f64>::zeros(12, params.len());
    // rows 0..6: tangent of q⁺; rows 6..12: v⁺
    want[(6 + 2, 2)] = -1.0 / H; // lift
    want[(6 + 3, 3)] = -1.0 / H; // tilt about x
    want[(6 + 1, 3)] = C / H;
    want[(1, 3)] = C;
    want[(6 + 4, 4)] = -1.0 / H; // tilt about y
    want[(6, 4)] = -C / H;
    want[(0, 4)] = -C;
    // the unperturbed rows of q⁺: q ⊕ h v⁺ with v⁺ = 0 moves with q
    for k in [0, 1, 5] {
        want[(k, k)] = 1.0;
    }
    let u = w.zero_control();
    for (m, tol) in [
        (Method::Ift, 1e-9),
        (Method::Lift, 1e-9),
        (Method::Unrolled, 1e-9),
        (Method::Fd, 1e-6),
    ] {
        let j = step_jacobian(&w, &x1, &u, &params, m, &DiffOptions::default())
            .unwrap_or_else(|e| panic!("{m:?}: {e}"));
        let err = (&j.jacobian - &want).amax() / want.amax();
        assert!(
            err <= tol,
            "{m:?}: relative error {err:e} > {tol:e}\n{}",
            j.jacobian
        );
    }
}

/// Sliding at 1 m/s and spinning at 3 rad/s on the four corners: the
/// derivative is refused (typed) by `ift`, `lift` and `unrolled`, while
/// the step itself runs.
#[test]
fn sliding_spinning_flat_box_is_set_valued() {
    let (w, x0) = flat_box([1.0, 0.0, 0.0, 0.0, 0.0, 3.0]);
    let u = w.zero_control();
    // two steps: the box settles flat onto its corners
    let mut x = x0;
    for _ in 0..2 {
        x = dualsim::sim::step(&w, &x, &u).expect("step").state;
    }
    assert!(x.v[5].abs() > 1.0 && x.v[0] > 0.5, "still sliding: {}", x.v);
    let params = [Param::V(0), Param::V(5), Param::Q(2)];
    for m in [Method::Ift, Method::Lift, Method::Unrolled] {
        match step_jacobian(&w, &x, &u, &params, m, &DiffOptions::default()) {
            Err(DiffError::Sim(SimError::Solve(SolveError::NotUnique {
                null_dims,
                velocity_part,
            }))) => {
                assert!(null_dims >= 1, "{m:?}");
                assert!(velocity_part > 1e-6, "{m:?}: {velocity_part:e}");
            }
            other => panic!("{m:?}: expected NotUnique, got {other:?}"),
        }
    }
}
