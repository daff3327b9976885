//! Articulated-body algorithm (forward dynamics), world frame.
//!
//! A joint with several coordinates is treated as a chain of one-coordinate
//! joints through massless intermediate frames (the "expanded tree"), the
//! velocity-product term `oc_i` being attached to its last coordinate. With
//! `I^A_i` and `p^A_i` the articulated inertia and bias force of body `i`
//! (world frame, `p^A_i` starting from `ov_i ×* oI_i ov_i`), for each
//! coordinate `k` of joint `i`, last first:
//!
//! ```text
//! U_k = I^A S_k,   D_k = S_kᵀ U_k,   u_k = τ_k − S_kᵀ p^A
//! I^A ← I^A − U_k U_kᵀ / D_k,       p^A ← p^A + U_k u_k / D_k (+ I^A oc_i for the last k)
//! ```
//!
//! then `I^A_λ += I^A`, `p^A_λ += p^A`. Forward: `a = oa_λ` (`(−g, 0)` at a
//! root), and for each coordinate, first to last (adding `oc_i` before the
//! last): `q̈_k = (u_k − U_kᵀ a)/D_k`, `a ← a + S_k q̈_k`.

use super::kinematics::{forward_position_body, forward_velocity_body, gravity_acceleration};
use super::{Data, Model};
use crate::Scalar;
use crate::math::DVec;
use crate::math::spatial::force_cross;

/// Forward dynamics `q̈ = M(q)⁻¹ (τ − c(q, v))`; the result is in
/// `data.ddq` (nv).
///
/// ```
/// use dualsim::dynamics::{aba::aba, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3};
/// // A point mass on a horizontal hinge falls with θ̈ = g / r.
/// let mut m = Model::<f64>::new();
/// let mut link = RigidInertia::new(1.0, Mat3::zeros());
/// link.com = Vec3::new(2.0, 0.0, 0.0);
/// m.add_body("l", None, Joint::Revolute { axis: [0.0, 1.0, 0.0] }, Pose::identity(), link).unwrap();
/// let mut d = m.data();
/// let z = DVec::zeros(1);
/// assert!((aba(&m, &mut d, &z, &z, &z)[0] - 9.81 / 2.0).abs() < 1e-14);
/// ```
#[track_caller]
pub fn aba<'a, T: Scalar>(
    model: &Model<T>,
    data: &'a mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    tau: &DVec<T>,
) -> &'a DVec<T> {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    assert_eq!(v.len(), model.nv, "v has nv entries");
    assert_eq!(tau.len(), model.nv, "tau has nv entries");
    let nb = model.bodies.len();
    for i in 0..nb {
        forward_position_body(model, data, i, q);
        forward_velocity_body(model, data, i, v);
        let inertia = &data.oinertia[i];
        data.oia[i] = inertia.matrix();
        let h = inertia.mul_vec(&data.ov[i]);
        data.opa[i] = force_cross(&data.ov[i], &h);
    }
    for i in (0..nb).rev() {
        let b = &model.bodies[i];
        let nv = b.joint.nv();
        let mut ia = data.oia[i];
        let mut pa = data.opa[i];
        let c = data.oc[i];
        if nv == 0 {
            pa += ia * c;
        }
        for kk in (0..nv).rev() {
            let k = b.idx_v + kk;
            let s = data.os[k];
            let u_col = ia * s;
            let d = s.dot(&u_col);
            let u = tau[k] - s.dot(&pa);
            data.u_cols[k] = u_col;
            data.d_diag[k] = d;
            data.u_bias[k] = u;
            let dinv = T::one() / d;
            ia -= (u_col * dinv) * u_col.transpose();
            pa += u_col * (u * dinv);
            if kk + 1 == nv {
                pa += ia * c;
            }
        }
        if let Some(p) = b.parent {
            data.oia[p] += ia;
            data.opa[p] += pa;
        }
    }
    let a0 = gravity_acceleration(model);
    for i in 0..nb {
        let b = &model.bodies[i];
        let nv = b.joint.nv();
        let mut a = match b.parent {
            Some(p) => data.oa[p],
            None => a0,
        };
        if nv == 0 {
            a += data.oc[i];
        }
        for kk in 0..nv {
            let k = b.idx_v + kk;
            if kk + 1 == nv {
                a += data.oc[i];
            }
            let qdd = (data.u_bias[k] - data.u_cols[k].dot(&a)) / data.d_diag[k];
            data.ddq[k] = qdd;
            a += data.os[k] * qdd;
        }
        data.oa[i] = a;
    }
    &data.ddq
}
