//! Recursive Newton–Euler algorithm (inverse dynamics), world frame.
//!
//! ```text
//! forward:  oa_0 = (−g, 0)
//!           oa_i = oa_λ + oS_i q̈_i + oc_i
//!           of_i = oI_i oa_i + ov_i ×* (oI_i ov_i)
//! backward: τ_i  = oS_iᵀ F_i,   F_i = Σ_{j ∈ subtree(i)} of_j
//! ```
//!
//! so that `τ = M(q) q̈ + c(q, v)` with gravity included in `c` (the
//! spatial acceleration of the world is set to `−g`, Featherstone's trick).
//! Kinematic quantities are described in `dynamics::kinematics`.

use super::kinematics::{forward_position_body, forward_velocity_body, gravity_acceleration};
use super::{Data, Model};
use crate::Scalar;
use crate::math::DVec;
use crate::math::spatial::force_cross;

/// Inverse dynamics `τ = RNEA(q, v, q̈)`; the result is in `data.tau` (nv).
///
/// Leaves `data.ov`, `data.oa` (acceleration minus gravity) and `data.of`
/// (subtree forces) filled.
///
/// ```
/// use dualsim::dynamics::{rnea::rnea, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3};
/// // A point mass 1 kg at 1 m from a horizontal hinge, held horizontal.
/// let mut m = Model::<f64>::new();
/// let mut link = RigidInertia::new(1.0, Mat3::zeros());
/// link.com = Vec3::new(1.0, 0.0, 0.0);
/// m.add_body("l", None, Joint::Revolute { axis: [0.0, 1.0, 0.0] }, Pose::identity(), link).unwrap();
/// let mut d = m.data();
/// let z = DVec::zeros(1);
/// let tau = rnea(&m, &mut d, &z, &z, &z);
/// assert!((tau[0] + 9.81).abs() < 1e-14); // gravity pulls the mass down: hold with −9.81 N·m about y
/// ```
#[track_caller]
pub fn rnea<'a, T: Scalar>(
    model: &Model<T>,
    data: &'a mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    a: &DVec<T>,
) -> &'a DVec<T> {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    assert_eq!(v.len(), model.nv, "v has nv entries");
    assert_eq!(a.len(), model.nv, "a has nv entries");
    let a0 = gravity_acceleration(model);
    for i in 0..model.bodies.len() {
        forward_position_body(model, data, i, q);
        forward_velocity_body(model, data, i, v);
        let b = &model.bodies[i];
        let mut acc = match b.parent {
            Some(p) => data.oa[p],
            None => a0,
        };
        for k in b.idx_v..b.idx_v + b.joint.nv() {
            acc += data.os[k] * a[k];
        }
        acc += data.oc[i];
        data.oa[i] = acc;
        let inertia = &data.oinertia[i];
        let h = inertia.mul_vec(&data.ov[i]);
        data.of[i] = inertia.mul_vec(&acc) + force_cross(&data.ov[i], &h);
    }
    for i in (0..model.bodies.len()).rev() {
        let b = &model.bodies[i];
        for k in b.idx_v..b.idx_v + b.joint.nv() {
            data.tau[k] = data.os[k].dot(&data.of[i]);
        }
        if let Some(p) = b.parent {
            let f = data.of[i];
            data.of[p] += f;
        }
    }
    &data.tau
}

/// Nonlinear effects `c(q, v) = RNEA(q, v, 0)` (Coriolis, centrifugal and
/// gravity); the result is in `data.bias`.
#[track_caller]
pub fn nonlinear_effects<'a, T: Scalar>(
    model: &Model<T>,
    data: &'a mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
) -> &'a DVec<T> {
    let mut zero = core::mem::replace(&mut data.tmp, DVec::zeros(0));
    zero.fill(T::zero());
    rnea(model, data, q, v, &zero);
    data.tmp = zero;
    data.bias.copy_from(&data.tau);
    &data.bias
}
