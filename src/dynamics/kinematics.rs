//! Forward kinematics of the articulated model in the world frame.
//!
//! For body `i` with parent `λ(i)` the forward pass computes
//!
//! ```text
//! oMp_i = oM_λ · placement_i,   oMi = oMp_i · X_J(q_i)
//! oS_i  = oMi · S_i             (S_i the joint's motion subspace, per coordinate)
//! ov_i  = ov_λ + oS_i q̇_i
//! oc_i  = ov_λ × (oS_i q̇_i) [+ oMp_i · (ṗ × ω, 0) for a free joint]
//! ```
//!
//! so that `oa_i = oa_λ + oS_i q̈_i + oc_i` (`oc_i = d(oS_i)/dt · q̇_i`). All
//! spatial vectors are expressed at the world origin, linear part first.
//! For the free joint (velocities in the parent joint frame, see
//! `dynamics::model`) the motion subspace is `oMp · [[I, [p]×], [0, I]]`:
//! its angular columns rotate about the body origin `p`.

use super::{Data, Joint, Model};
use crate::Scalar;
use crate::math::spatial::{join, motion_cross};
use crate::math::{DVec, Pose, Quat, Vec3, Vec6, so3};

/// Joint transform with the quaternion of a free or spherical joint
/// normalized (so that intermediate Runge–Kutta stages stay valid).
#[inline]
pub(crate) fn joint_transform<T: Scalar>(joint: &Joint, q: &[T]) -> Pose<T> {
    let mut x = joint.transform(q);
    if matches!(joint, Joint::Free | Joint::Spherical) {
        x.rotation = so3::normalize(&x.rotation);
    }
    x
}

/// Positions: `omp`, `omi`, `oinertia` and the motion subspace columns `os`.
pub(crate) fn forward_position_body<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    i: usize,
    q: &DVec<T>,
) {
    let b = &model.bodies[i];
    let om_parent = match b.parent {
        Some(p) => data.omi[p],
        None => Pose::identity(),
    };
    let omp = om_parent * b.placement;
    let qj = &q.as_slice()[b.idx_q..b.idx_q + b.joint.nq()];
    let omi = omp * joint_transform(&b.joint, qj);
    data.omp[i] = omp;
    data.omi[i] = omi;
    data.oinertia[i] = b.inertia.transformed(&omi);
    let k0 = b.idx_v;
    motion_subspace(
        &b.joint,
        &omp,
        &omi,
        qj,
        &mut data.os[k0..k0 + b.joint.nv()],
    );
}

/// The world motion subspace columns of a joint (one per velocity
/// coordinate, at the world origin, linear part first) from its parent
/// joint frame `omp`, its body frame `omi` and its coordinates `qj`.
pub(crate) fn motion_subspace<T: Scalar>(
    joint: &Joint,
    omp: &Pose<T>,
    omi: &Pose<T>,
    qj: &[T],
    os: &mut [Vec6<T>],
) {
    let z = Vec3::zeros();
    match *joint {
        Joint::Revolute { axis } => {
            os[0] = omi.act_motion(&join(&z, &crate::math::vec3(axis)));
        }
        Joint::Prismatic { axis } => {
            os[0] = omi.act_motion(&join(&crate::math::vec3(axis), &z));
        }
        Joint::Spherical => {
            for a in 0..3 {
                let mut e = Vec3::zeros();
                e[a] = T::one();
                os[a] = omi.act_motion(&join(&z, &e));
            }
        }
        Joint::Free => {
            let p = Vec3::new(qj[0], qj[1], qj[2]);
            for a in 0..3 {
                let mut e = Vec3::zeros();
                e[a] = T::one();
                os[a] = omp.act_motion(&join(&e, &z));
                os[3 + a] = omp.act_motion(&join(&p.cross(&e), &e));
            }
        }
        Joint::Fixed => {}
    }
}

/// Velocities: `ov` and `oc` of body `i` (positions already computed).
pub(crate) fn forward_velocity_body<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    i: usize,
    v: &DVec<T>,
) {
    let b = &model.bodies[i];
    let v_parent = match b.parent {
        Some(p) => data.ov[p],
        None => Vec6::zeros(),
    };
    let mut vj = Vec6::zeros();
    for k in b.idx_v..b.idx_v + b.joint.nv() {
        vj += data.os[k] * v[k];
    }
    data.ov[i] = v_parent + vj;
    let mut c = motion_cross(&v_parent, &vj);
    if b.joint == Joint::Free {
        let k = b.idx_v;
        let pd = Vec3::new(v[k], v[k + 1], v[k + 2]);
        let w = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
        c += data.omp[i].act_motion(&join(&pd.cross(&w), &Vec3::zeros()));
    }
    data.oc[i] = c;
}

/// The spatial acceleration of the world minus gravity, `(−g, 0)`.
#[inline]
pub(crate) fn gravity_acceleration<T: Scalar>(model: &Model<T>) -> Vec6<T> {
    join(&(-model.gravity), &Vec3::zeros())
}

/// Forward kinematics: fills `data.omi` (world pose of each body),
/// `data.omp`, `data.oinertia`, `data.os` (world motion subspace) and, when
/// `v` is given, `data.ov` and `data.oc`.
///
/// ```
/// use dualsim::dynamics::{kinematics::forward_kinematics, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3, so3};
/// let mut m = Model::<f64>::new();
/// let link = RigidInertia::new(1.0, Mat3::identity() * 0.01);
/// let a = m.add_body("a", None, Joint::Revolute { axis: [0.0, 0.0, 1.0] }, Pose::identity(), link).unwrap();
/// let pl = Pose::new(so3::identity(), Vec3::new(1.0, 0.0, 0.0));
/// m.add_body("b", Some(a), Joint::Fixed, pl, link).unwrap();
/// let mut d = m.data();
/// forward_kinematics(&m, &mut d, &DVec::from_element(1, std::f64::consts::FRAC_PI_2), None);
/// assert!((d.omi[1].translation - Vec3::new(0.0, 1.0, 0.0)).norm() < 1e-15);
/// ```
#[track_caller]
pub fn forward_kinematics<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: Option<&DVec<T>>,
) {
    assert_eq!(q.len(), model.nq, "q has nq entries");
    if let Some(v) = v {
        assert_eq!(v.len(), model.nv, "v has nv entries");
    }
    for i in 0..model.bodies.len() {
        forward_position_body(model, data, i, q);
        if let Some(v) = v {
            forward_velocity_body(model, data, i, v);
        }
    }
}

/// World rotation of a quaternion-valued joint coordinate (helper for tests
/// and integrators).
#[inline]
pub fn quat_at<T: Scalar>(q: &DVec<T>, idx: usize) -> Quat<T> {
    Quat::new(q[idx], q[idx + 1], q[idx + 2], q[idx + 3])
}
