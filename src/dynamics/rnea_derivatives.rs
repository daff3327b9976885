//! Analytical partial derivatives of the RNEA, `∂τ/∂q` and `∂τ/∂v`
//! (Carpentier & Mansard, "Analytical Derivatives of Rigid Body Dynamics
//! Algorithms", RSS 2018; Pinocchio's `rnea-derivatives.hxx`), world frame.
//!
//! Derivatives with respect to `q` are taken along the tangent space:
//! `∂τ/∂q · δ = d/dε τ(q ⊕ εδ, v, q̈)` at ε = 0 (for revolute and prismatic
//! joints this is the plain partial derivative).
//!
//! # The recursion
//!
//! Perturbing coordinate `k` of joint `i` moves the whole subtree of `i`
//! rigidly by the twist `S_k` ("transport", `x ↦ S_k × x` for motions,
//! `S_k ×*` for forces) and changes the subtree's velocities and
//! accelerations by terms that are the same for every body of the subtree:
//!
//! ```text
//! ∂v_l/∂q_k = S_k × v_l + w_k,                w_k  = v_b × S_k
//! ∂a_l/∂q_k = S_k × a_l + β_k + w_k × v_l,    β_k  = a_b × S_k + v_b × w_k
//! ∂v_l/∂q̇_k = S_k,  ∂a_l/∂q̇_k = γ_k + S_k × v_l,  γ_k = v_λ × S_k + v_i × S_k (+ free-joint term)
//! ```
//!
//! where `(v_b, a_b)` is the motion of the parent body `λ(i)` — or of body
//! `i` itself for the angular columns of a free joint, whose world-frame
//! rotation perturbation `r ↦ exp(δ) r` acts after the joint — and accelerations
//! include gravity (`a_0 = −g`). With `f_l = I_l a_l + v_l ×* I_l v_l`,
//! `∂f_l = I_l δa + (v_l ×* I_l + (·) ×* I_l v_l) δv`, and the `w_k × v_l`
//! and `S_k × v_l` terms fold into the composite matrix
//!
//! ```text
//! Ẏ_i = Σ_{l ∈ subtree(i)} v_l ×* I_l − I_l v_l × + (·) ×* (I_l v_l)      (Pinocchio's doYcrb)
//! ```
//!
//! With `Y_i` the composite inertia and `F_i` the subtree force, for a
//! coordinate `j` of joint `J` and a coordinate `k` of joint `K` on the same
//! branch:
//!
//! ```text
//! K ancestor of J (or K = J):   ∂τ_j/∂q_k = (Y_J S_j)·β_k + (Ẏ_Jᵀ S_j)·w_k
//!                                ∂τ_j/∂q̇_k = (Y_J S_j)·γ_k + (Ẏ_Jᵀ S_j)·S_k
//! K descendant of J:            ∂τ_j/∂q_k = S_j · (Y_K β_k + Ẏ_K w_k + S_k ×* F_K)
//!                                ∂τ_j/∂q̇_k = S_j · (Y_K γ_k + Ẏ_K S_k)
//! ```
//!
//! (the transport of `S_j` cancels that of `F_J` when `K` is an ancestor).
//! Inside a free joint the angular columns do not transport the linear ones
//! nor each other, so those pairs take the "descendant" form. Coordinates on
//! different branches do not interact. Cost `O(n d)` for depth `d`.

use super::rnea::rnea;
use super::{Data, Joint, Model};
use crate::Scalar;
use crate::math::spatial::{
    cross_force_operator, force_cross, join, motion_cross, motion_cross_matrix,
};
use crate::math::{DVec, Vec3, Vec6};

/// Computes `data.dtau_dq` and `data.dtau_dv` (nv × nv) at `(q, v, a)`,
/// and `∂τ/∂a = M(q)` into `data.mass_matrix` (from the same composite
/// inertias as the CRBA); `data.tau` holds `RNEA(q, v, a)` afterwards.
///
/// ```
/// use dualsim::dynamics::{rnea_derivatives::rnea_derivatives, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3};
/// let mut m = Model::<f64>::new();
/// let mut link = RigidInertia::new(1.0, Mat3::zeros());
/// link.com = Vec3::new(1.0, 0.0, 0.0);
/// m.add_body("l", None, Joint::Revolute { axis: [0.0, 1.0, 0.0] }, Pose::identity(), link).unwrap();
/// let mut d = m.data();
/// let z = DVec::zeros(1);
/// rnea_derivatives(&m, &mut d, &DVec::from_element(1, 0.3), &z, &z);
/// // τ = −m g r cos θ  ⇒  ∂τ/∂θ = m g r sin θ
/// assert!((d.dtau_dq[(0, 0)] - 9.81 * 0.3_f64.sin()).abs() < 1e-14);
/// ```
#[track_caller]
pub fn rnea_derivatives<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    a: &DVec<T>,
) {
    rnea(model, data, q, v, a);
    let nb = model.bodies.len();
    let a0 = super::kinematics::gravity_acceleration(model);
    // Forward: per-coordinate columns and per-body matrices.
    for i in 0..nb {
        let b = &model.bodies[i];
        let (v_par, a_par) = match b.parent {
            Some(p) => (data.ov[p], data.oa[p]),
            None => (Vec6::zeros(), a0),
        };
        let (vi, ai) = (data.ov[i], data.oa[i]);
        let nv = b.joint.nv();
        for kk in 0..nv {
            let k = b.idx_v + kk;
            let s = data.os[k];
            let own = b.joint == Joint::Free && kk >= 3;
            let (vb, ab) = if own { (vi, ai) } else { (v_par, a_par) };
            let w = motion_cross(&vb, &s);
            data.dvdq[k] = w;
            data.dadq[k] = motion_cross(&ab, &s) + motion_cross(&vb, &w);
            let mut g = motion_cross(&v_par, &s) + motion_cross(&vi, &s);
            if b.joint == Joint::Free {
                let iv = b.idx_v;
                let pd = Vec3::new(v[iv], v[iv + 1], v[iv + 2]);
                let om = Vec3::new(v[iv + 3], v[iv + 4], v[iv + 5]);
                let mut e = Vec3::zeros();
                e[kk % 3] = T::one();
                let lin = if kk < 3 { e.cross(&om) } else { pd.cross(&e) };
                g += data.omp[i].act_motion(&join(&lin, &Vec3::zeros()));
            }
            data.dadv[k] = g;
        }
        let inertia = &data.oinertia[i];
        let im = inertia.matrix();
        let h = inertia.mul_vec(&vi);
        data.oycrb[i] = im;
        // (v×*) I = −(I (v×))ᵀ because I is symmetric and v×* = −(v×)ᵀ.
        let b_mat = im * motion_cross_matrix(&vi);
        data.doycrb[i] = cross_force_operator(&h) - b_mat - b_mat.transpose();
    }
    data.dtau_dq.fill(T::zero());
    data.dtau_dv.fill(T::zero());
    data.mass_matrix.fill(T::zero());
    // Backward: composites, then the blocks of each joint against itself and
    // its ancestors (and the matching entries of M = ∂τ/∂a).
    for i in (0..nb).rev() {
        let b = &model.bodies[i];
        let nv = b.joint.nv();
        let (y, dy) = (data.oycrb[i], data.doycrb[i]);
        let f = data.of[i];
        for kk in 0..nv {
            let k = b.idx_v + kk;
            let s = data.os[k];
            data.ycrb_s[k] = y * s;
            data.doycrb_t_s[k] = dy.tr_mul(&s);
            data.dfdq[k] = y * data.dadq[k] + dy * data.dvdq[k] + force_cross(&s, &f);
            data.dfdv[k] = y * data.dadv[k] + dy * s;
        }
        // Same joint.
        for jj in 0..nv {
            let j = b.idx_v + jj;
            let (ys, dys) = (data.ycrb_s[j], data.doycrb_t_s[j]);
            for kk in 0..nv {
                let k = b.idx_v + kk;
                let mut dq = ys.dot(&data.dadq[k]) + dys.dot(&data.dvdq[k]);
                if b.joint == Joint::Free && kk >= 3 {
                    dq += data.os[j].dot(&force_cross(&data.os[k], &f));
                }
                data.dtau_dq[(j, k)] = dq;
                data.dtau_dv[(j, k)] = ys.dot(&data.dadv[k]) + dys.dot(&data.os[k]);
                data.mass_matrix[(j, k)] = ys.dot(&data.os[k]);
            }
        }
        // Ancestor joints: rows of this joint against ancestor columns and
        // ancestor rows against this joint's columns.
        if nv > 0 {
            let mut anc = model.dof_parent[b.idx_v];
            while let Some(l) = anc {
                for kk in 0..nv {
                    let k = b.idx_v + kk;
                    let (ys, dys) = (data.ycrb_s[k], data.doycrb_t_s[k]);
                    data.dtau_dq[(k, l)] = ys.dot(&data.dadq[l]) + dys.dot(&data.dvdq[l]);
                    data.dtau_dv[(k, l)] = ys.dot(&data.dadv[l]) + dys.dot(&data.os[l]);
                    data.dtau_dq[(l, k)] = data.os[l].dot(&data.dfdq[k]);
                    data.dtau_dv[(l, k)] = data.os[l].dot(&data.dfdv[k]);
                    let m = data.os[l].dot(&ys);
                    data.mass_matrix[(k, l)] = m;
                    data.mass_matrix[(l, k)] = m;
                }
                anc = model.dof_parent[l];
            }
        }
        if let Some(p) = b.parent {
            data.oycrb[p] += y;
            data.doycrb[p] += dy;
        }
    }
}
