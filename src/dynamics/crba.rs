//! Composite rigid-body algorithm: the joint-space mass matrix `M(q)`.
//!
//! With the world-frame composite inertia `Y_i = Σ_{j ∈ subtree(i)} oI_j`,
//!
//! ```text
//! M_kl = oS_kᵀ Y_i oS_l   for k a coordinate of joint i and l a coordinate
//!                          of i or of one of its ancestors (M_lk = M_kl),
//! ```
//!
//! and `M_kl = 0` when the two coordinates lie on different branches.

use super::kinematics::forward_position_body;
use super::{Data, Model};
use crate::Scalar;
use crate::math::{DMat, DVec};

/// Fills `data.mass_matrix` with `M(q)` (both triangles) and
/// `data.oycrb` with the composite inertias; returns `M`.
///
/// ```
/// use dualsim::dynamics::{crba::crba, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3};
/// let mut m = Model::<f64>::new();
/// let mut link = RigidInertia::new(2.0, Mat3::zeros());
/// link.com = Vec3::new(0.5, 0.0, 0.0);
/// m.add_body("l", None, Joint::Revolute { axis: [0.0, 0.0, 1.0] }, Pose::identity(), link).unwrap();
/// let mut d = m.data();
/// assert!((crba(&m, &mut d, &DVec::zeros(1))[(0, 0)] - 0.5).abs() < 1e-15); // m r²
/// ```
#[track_caller]
pub fn crba<'a, T: Scalar>(model: &Model<T>, data: &'a mut Data<T>, q: &DVec<T>) -> &'a DMat<T> {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    for i in 0..model.bodies.len() {
        forward_position_body(model, data, i, q);
        data.oycrb[i] = data.oinertia[i].matrix();
    }
    data.mass_matrix.fill(T::zero());
    for i in (0..model.bodies.len()).rev() {
        let b = &model.bodies[i];
        for k in b.idx_v..b.idx_v + b.joint.nv() {
            let f = data.oycrb[i] * data.os[k];
            let mut j = Some(k);
            while let Some(l) = j {
                let m = data.os[l].dot(&f);
                data.mass_matrix[(k, l)] = m;
                data.mass_matrix[(l, k)] = m;
                j = model.dof_parent[l];
            }
        }
        if let Some(p) = b.parent {
            let y = data.oycrb[i];
            data.oycrb[p] += y;
        }
    }
    &data.mass_matrix
}

/// Kinetic energy `½ vᵀ M(q) v` computed from the body velocities
/// (`Σ ½ ov_iᵀ oI_i ov_i`).
#[track_caller]
pub fn kinetic_energy<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
) -> T {
    super::kinematics::forward_kinematics(model, data, q, Some(v));
    let mut e = T::zero();
    for i in 0..model.bodies.len() {
        e += data.ov[i].dot(&data.oinertia[i].mul_vec(&data.ov[i]));
    }
    e * T::from_re(0.5)
}

/// Potential energy `−Σ m_i g · c_i` (centres of mass in the world frame).
#[track_caller]
pub fn potential_energy<T: Scalar>(model: &Model<T>, data: &mut Data<T>, q: &DVec<T>) -> T {
    super::kinematics::forward_kinematics(model, data, q, None);
    let mut e = T::zero();
    for i in 0..model.bodies.len() {
        let inertia = &data.oinertia[i];
        e -= model.gravity.dot(&inertia.com) * inertia.mass;
    }
    e
}

/// Total spatial momentum `Σ oI_i ov_i` (linear momentum, angular momentum
/// about the world origin) of all bodies.
#[track_caller]
pub fn spatial_momentum<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
) -> crate::math::Vec6<T> {
    super::kinematics::forward_kinematics(model, data, q, Some(v));
    let mut h = crate::math::Vec6::zeros();
    for i in 0..model.bodies.len() {
        h += data.oinertia[i].mul_vec(&data.ov[i]);
    }
    h
}
