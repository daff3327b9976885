//! The configuration manifold of a model: `q ⊕ h v`, its inverse, and the
//! time derivative `q̇(q, v)` of the coordinates.
//!
//! Per joint (conventions in `dynamics::model`):
//!
//! ```text
//! revolute, prismatic:  q ⊕ hv = q + h v,                    q̇ = v
//! spherical:            q ⊕ hv = q ⊗ exp(h ω_child),        q̇ = ½ q ⊗ [0, ω]
//! free:                 q ⊕ hv = (p + h ṗ, φ(h ω) ⊗ r),     q̇ = (ṗ, ½ [0, ω] ⊗ r)
//! ```
//!
//! with φ the free-body retraction of `math::integrate` (the free joint
//! shares the time stepper's retraction, so `‖h ω‖ < 2` is required).

use super::{Joint, Model};
use crate::Scalar;
use crate::math::{DVec, Quat, RetractionError, so3};

/// `q ⊕ h v` for every joint of `model`.
///
/// ```
/// use dualsim::dynamics::{configuration, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose};
/// let mut m = Model::<f64>::new();
/// m.add_body("b", None, Joint::Spherical, Pose::identity(), RigidInertia::new(1.0, Mat3::identity())).unwrap();
/// let q = m.neutral();
/// let v = DVec::from_vec(vec![0.0, 0.0, 1.0]);
/// let q1 = configuration::integrate(&m, &q, &v, 0.5).unwrap();
/// let back = configuration::difference(&m, &q, &q1);
/// assert!((back - v * 0.5).norm() < 1e-15);
/// ```
#[track_caller]
pub fn integrate<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    h: T,
) -> Result<DVec<T>, RetractionError> {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    assert_eq!(v.len(), model.nv, "v has nv entries");
    let mut out = q.clone();
    for b in &model.bodies {
        let (iq, iv) = (b.idx_q, b.idx_v);
        match b.joint {
            Joint::Revolute { .. } | Joint::Prismatic { .. } => out[iq] = q[iq] + v[iv] * h,
            Joint::Spherical => {
                let r = Quat::new(q[iq], q[iq + 1], q[iq + 2], q[iq + 3]);
                let w = crate::math::Vec3::new(v[iv], v[iv + 1], v[iv + 2]) * h;
                let r1 = r * so3::exp(&w);
                out.as_mut_slice()[iq..iq + 4].copy_from_slice(&[r1.w, r1.i, r1.j, r1.k]);
            }
            Joint::Free => {
                let x = crate::math::integrate(
                    &q.as_slice()[iq..iq + 7],
                    &v.as_slice()[iv..iv + 6],
                    h,
                )?;
                out.as_mut_slice()[iq..iq + 7].copy_from_slice(&x);
            }
            Joint::Fixed => {}
        }
    }
    Ok(out)
}

/// The tangent `d` (nv) with `q1 = q0 ⊕ d` (inverse of [`integrate`] with
/// `h = 1`).
#[track_caller]
pub fn difference<T: Scalar>(model: &Model<T>, q0: &DVec<T>, q1: &DVec<T>) -> DVec<T> {
    assert_eq!(q0.len(), model.nq, "q0 has nq entries");
    assert_eq!(q1.len(), model.nq, "q1 has nq entries");
    let mut d = DVec::zeros(model.nv);
    for b in &model.bodies {
        let (iq, iv) = (b.idx_q, b.idx_v);
        match b.joint {
            Joint::Revolute { .. } | Joint::Prismatic { .. } => d[iv] = q1[iq] - q0[iq],
            Joint::Spherical => {
                let r0 = Quat::new(q0[iq], q0[iq + 1], q0[iq + 2], q0[iq + 3]);
                let r1 = Quat::new(q1[iq], q1[iq + 1], q1[iq + 2], q1[iq + 3]);
                let w = so3::log(&(r0.conjugate() * r1));
                d.as_mut_slice()[iv..iv + 3].copy_from_slice(&[w.x, w.y, w.z]);
            }
            Joint::Free => {
                let x =
                    crate::math::difference(&q0.as_slice()[iq..iq + 7], &q1.as_slice()[iq..iq + 7]);
                d.as_mut_slice()[iv..iv + 6].copy_from_slice(&x);
            }
            Joint::Fixed => {}
        }
    }
    d
}

/// Time derivative of the coordinates, `q̇(q, v)` (nq), for integrating the
/// embedded ODE with a classical scheme (quaternions then need
/// renormalizing with [`normalize`]).
#[track_caller]
pub fn qdot<T: Scalar>(model: &Model<T>, q: &DVec<T>, v: &DVec<T>) -> DVec<T> {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    assert_eq!(v.len(), model.nv, "v has nv entries");
    let half = T::from_re(0.5);
    let mut out = DVec::zeros(model.nq);
    for b in &model.bodies {
        let (iq, iv) = (b.idx_q, b.idx_v);
        match b.joint {
            Joint::Revolute { .. } | Joint::Prismatic { .. } => out[iq] = v[iv],
            Joint::Spherical => {
                let r = Quat::new(q[iq], q[iq + 1], q[iq + 2], q[iq + 3]);
                let w = Quat::new(T::zero(), v[iv], v[iv + 1], v[iv + 2]);
                let rd = (r * w) * half;
                out.as_mut_slice()[iq..iq + 4].copy_from_slice(&[rd.w, rd.i, rd.j, rd.k]);
            }
            Joint::Free => {
                for a in 0..3 {
                    out[iq + a] = v[iv + a];
                }
                let r = Quat::new(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]);
                let w = Quat::new(T::zero(), v[iv + 3], v[iv + 4], v[iv + 5]);
                let rd = (w * r) * half;
                out.as_mut_slice()[iq + 3..iq + 7].copy_from_slice(&[rd.w, rd.i, rd.j, rd.k]);
            }
            Joint::Fixed => {}
        }
    }
    out
}

/// Renormalizes the quaternions of free and spherical joints in place.
pub fn normalize<T: Scalar>(model: &Model<T>, q: &mut DVec<T>) {
    for b in &model.bodies {
        let iq = match b.joint {
            Joint::Spherical => b.idx_q,
            Joint::Free => b.idx_q + 3,
            _ => continue,
        };
        let r = so3::normalize(&Quat::new(q[iq], q[iq + 1], q[iq + 2], q[iq + 3]));
        q.as_mut_slice()[iq..iq + 4].copy_from_slice(&[r.w, r.i, r.j, r.k]);
    }
}
