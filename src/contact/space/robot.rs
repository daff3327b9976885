//! Robots as island units: the dynamics rows of an articulated system
//! and the kinematics of contacts on its links.
//!
//! A robot (a subtree of the model that is not a lone free body: a fixed
//! base, or a floating base whose root has a free joint) is one unit of an
//! island; its unknowns are all its `n` joint velocities `v⁺` (for a
//! floating base, the six base velocities first: world-frame `ṗ` and `ω`). Its
//! dynamics rows are the semi-implicit Euler step of the articulated
//! dynamics with the contact impulses,
//!
//! ```text
//! M(q) (v⁺ − v) − h (u − b(q, v)) − Σ_c W_cᵀ f_c = 0,
//!     = h (RNEA(q, v, (v⁺ − v)/h) − u) − Σ_c W_cᵀ f_c,
//! ```
//!
//! (without contact exactly `v⁺ = v + h ABA(q, v, u)`,
//! `dynamics::articulated`), with Jacobian `M(q)` (CRBA). A contact on
//! link `i` is evaluated at `q⁺ = q ⊕ h v⁺` (forward kinematics of the
//! robot's links); with `J_i(q⁺)` the world-frame Jacobian of the witness
//! point `p` on link `i` (`∂ṗ/∂v`, columns `lin(S_k) + ang(S_k) × p` of
//! the world motion subspace `S_k` of every joint from the root to `i`):
//!
//! ```text
//! y = (φ(q⁺), t₁ᵀ J_i v⁺, t₂ᵀ J_i v⁺),
//! W = [nᵀ J_i D; t₁ᵀ J_i; t₂ᵀ J_i]
//! ```
//!
//! where `D = ∂(q ⊕ h v⁺)/∂v⁺ / h` in the joints' tangent coordinates:
//! the identity for revolute and prismatic joints, the right Jacobian of
//! SO(3) `J_r(h ω)` for a spherical joint (`q ⊗ exp(h ω)`) and the
//! retraction's differential `L(h ω)` for the rotation of a free joint
//! (as for free bodies, [`super::phi_rotation_jacobian`]), so
//! the normal row is `∂φ(q⁺(v⁺))/∂v⁺ / h`: the normal impulse is
//! variationally consistent with the gap at `q⁺`. The other side is
//! static geometry or a free body (its block of `W` and its share of
//! `v_t` as in [`space`](super)); link–link contact is not modelled.
//!
//! The exact Newton blocks `K = ∂y/∂v⁺` and `G = ∂(Wᵀ f)/∂v⁺` come from
//! forward-mode dual evaluations of the same function
//! ([`robot_contact_jacobian`], `DualSVec64<8>`, eight velocity columns
//! per pass).

use std::any::Any;
use std::cell::RefCell;

use super::{Other, pose_after, shape_pair_contact, side};
use crate::Scalar;
use crate::collision::Contact;
use crate::collision::frame::tangent_basis_from;
use crate::contact::candidates::{Candidate, Partner};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::crba::crba;
use crate::dynamics::free::DynamicsError;
use crate::dynamics::kinematics::{joint_transform, motion_subspace};
use crate::dynamics::rnea::rnea;
use crate::dynamics::{Data, Joint, Model, configuration};
use crate::geometry::AttachedShape;
use crate::math::{DMat, DVec, Mat3, Pose, Vec3, Vec6, so3};
use nalgebra::{Const, Matrix3x6, Matrix3xX, U1};
use num_dual::DualSVec64;

/// The robots of a model that can be island units: every subtree that is
/// not a lone free body (those are stepped by `dynamics::free`) and that
/// has velocity coordinates; a floating-base robot's unit includes its six
/// base coordinates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RobotUnit {
    /// Root body.
    pub root: usize,
    /// Bodies of the subtree (ascending, parents before children).
    pub bodies: Vec<usize>,
    /// Global velocity indices of its coordinates (ascending body order).
    pub dofs: Vec<usize>,
}

/// Per body: the root of its subtree.
pub fn roots<T: Scalar>(model: &Model<T>) -> Vec<usize> {
    let mut root = vec![0; model.bodies.len()];
    for (i, b) in model.bodies.iter().enumerate() {
        root[i] = match b.parent {
            Some(p) => root[p],
            None => i,
        };
    }
    root
}

/// The robot units of `model` (see [`RobotUnit`]).
pub fn robot_units<T: Scalar>(model: &Model<T>) -> Vec<RobotUnit> {
    let root = roots(model);
    let lone = model.lone_free_bodies();
    let mut out: Vec<RobotUnit> = Vec::new();
    for (i, b) in model.bodies.iter().enumerate() {
        let r = root[i];
        if lone[r] {
            continue;
        }
        let u = match out.iter().position(|u| u.root == r) {
            Some(u) => u,
            None => {
                out.push(RobotUnit {
                    root: r,
                    bodies: Vec::new(),
                    dofs: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[u].bodies.push(i);
        out[u].dofs.extend(b.idx_v..b.idx_v + b.joint.nv());
    }
    out.retain(|u| !u.dofs.is_empty());
    out
}

thread_local! {
    /// One dynamics workspace ([`Data`]) per scalar type and thread for
    /// [`robot_dynamics`], replaced when the model's sizes change: the
    /// contact-space residual is evaluated many times per step and per
    /// derivative (in dual numbers, where a fresh `Data` of a 30-dof robot
    /// is half a megabyte of zeroed matrices), and its caller
    /// ([`StepProblem`]) borrows the model without a workspace.
    static DATA: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's workspace for `model` in scalar `T`.
fn with_data<T: Scalar, R>(model: &Model<T>, f: impl FnOnce(&mut Data<T>) -> R) -> R {
    DATA.with(|cell| {
        let mut all = cell.borrow_mut();
        let i = match all.iter().position(|b| b.is::<Data<T>>()) {
            Some(i) => i,
            None => {
                all.push(Box::new(model.data()));
                all.len() - 1
            }
        };
        let data = all[i].downcast_mut::<Data<T>>().expect("checked by is");
        if data.mass_matrix.nrows() != model.nv || data.omi.len() != model.bodies.len() {
            *data = model.data();
        }
        f(data)
    })
}

/// Dynamics rows of a robot unit without contact impulses and their
/// Jacobian: `r = h (RNEA(q, v, (v⁺ − v)/h) − u)` on the unit's
/// coordinates, `∂r/∂v⁺ = M(q)` (module docs), the latter only with
/// `need_jac`.
pub fn robot_dynamics<T: Scalar>(
    p: &StepProblem<'_, T>,
    unit: &RobotUnit,
    v_unit: &[T],
    need_jac: bool,
) -> (DVec<T>, Option<DMat<T>>) {
    let n = unit.dofs.len();
    let mut a = DVec::zeros(p.model.nv);
    for (l, &d) in unit.dofs.iter().enumerate() {
        a[d] = (v_unit[l] - p.v[d]) / p.h;
    }
    with_data(p.model, |data| {
        let tau = rnea(p.model, data, p.q, p.v, &a);
        let r = DVec::from_fn(n, |l, _| p.h * (tau[unit.dofs[l]] - p.u[unit.dofs[l]]));
        if !need_jac {
            return (r, None);
        }
        let m = crba(p.model, data, p.q);
        let jac = DMat::from_fn(n, n, |i, j| m[(unit.dofs[i], unit.dofs[j])]);
        (r, Some(jac))
    })
}

/// A contact on a robot link evaluated at `q⁺`.
#[derive(Clone, Debug)]
pub struct RobotKinematics<S: Scalar> {
    /// Gap, witness points and normal at `q⁺`.
    pub contact: Contact<S>,
    /// Tangent basis at `q⁺`.
    pub tangents: (Vec3<S>, Vec3<S>),
    /// `(φ, v_t1, v_t2)`.
    pub y: Vec3<S>,
    /// Impulse map (3 × unit size): `Wᵀ f` is the generalized impulse.
    pub w: Matrix3xX<S>,
    /// Impulse map of the free body on the other side (negated), if any
    /// (as in [`super::Kinematics::w_b`]).
    pub w_b: Option<Matrix3x6<S>>,
}

/// The contact `feature` of link shape `ls` against `other` (static
/// geometry, or a free body with its `q` and `v⁺`) at `q⁺ = q ⊕ h v⁺`,
/// `v⁺` given on the unit's coordinates (module docs). The tangent frame
/// is built from world axis `axis`. `body_b` is the free body's index
/// (reported in errors).
#[allow(clippy::too_many_arguments)]
pub fn robot_contact_kinematics<S: Scalar>(
    model: &Model<S>,
    q: &DVec<S>,
    unit: &RobotUnit,
    v_unit: &[S],
    h: S,
    ls: &AttachedShape<S>,
    other: &Other<'_, S>,
    feature: usize,
    parts: Option<crate::contact::candidates::ConicParts>,
    axis: usize,
    body_b: usize,
) -> Result<RobotKinematics<S>, SolveError> {
    let mut v_full = DVec::zeros(model.nv);
    let mut local = vec![usize::MAX; model.nv];
    for (l, &d) in unit.dofs.iter().enumerate() {
        v_full[d] = v_unit[l];
        local[d] = l;
    }
    let q_next = configuration::integrate(model, q, &v_full, h).map_err(|source| {
        DynamicsError::Retraction {
            body: unit.root,
            source,
        }
    })?;
    // Forward kinematics of the unit's links only (parents come first).
    let mut omi = vec![Pose::identity(); model.bodies.len()];
    let mut os = vec![Vec6::zeros(); model.nv];
    for &b in &unit.bodies {
        let body = &model.bodies[b];
        let omp = match body.parent {
            Some(pa) => omi[pa],
            None => Pose::identity(),
        } * body.placement;
        let qj = &q_next.as_slice()[body.idx_q..body.idx_q + body.joint.nq()];
        omi[b] = omp * joint_transform(&body.joint, qj);
        motion_subspace(
            &body.joint,
            &omp,
            &omi[b],
            qj,
            &mut os[body.idx_v..body.idx_v + body.joint.nv()],
        );
    }
    let pose_a = omi[ls.body] * ls.pose;
    let (contact, pb) = match other {
        Other::Body { shape, q, v } => {
            let pb = pose_after(q, v, h).map_err(|source| DynamicsError::Retraction {
                body: body_b,
                source,
            })?;
            (
                shape_pair_contact(&ls.shape, &pose_a, shape, &pb, feature, parts)?,
                Some((pb, v)),
            )
        }
        Other::Static { shape, pose } => (
            shape_pair_contact(&ls.shape, &pose_a, shape, pose, feature, parts)?,
            None,
        ),
    };
    let n = contact.normal;
    let (t1, t2) = tangent_basis_from(&n, axis);
    let p = contact.point_a;
    let nu = unit.dofs.len();
    let mut w = Matrix3xX::zeros(nu);
    let mut vp = Vec3::zeros();
    let mut b = Some(ls.body);
    while let Some(i) = b {
        let body = &model.bodies[i];
        let k0 = body.idx_v;
        let nvj = body.joint.nv();
        // Point-velocity columns of this joint.
        let cols: Vec<Vec3<S>> = (k0..k0 + nvj)
            .map(|k| {
                let s = &os[k];
                Vec3::new(s[0], s[1], s[2]) + Vec3::new(s[3], s[4], s[5]).cross(&p)
            })
            .collect();
        for (c, col) in cols.iter().enumerate() {
            vp += col * v_full[k0 + c];
            w[(1, local[k0 + c])] = t1.dot(col);
            w[(2, local[k0 + c])] = t2.dot(col);
        }
        // Normal row: nᵀ J D (D the retraction's differential).
        let rot = |first: usize, d: Mat3<S>, w: &mut Matrix3xX<S>| {
            for c in 0..3 {
                let mut e = S::zero();
                for a in 0..3 {
                    e += n.dot(&cols[first + a]) * d[(a, c)];
                }
                w[(0, local[k0 + first + c])] = e;
            }
        };
        match body.joint {
            Joint::Spherical => {
                let x = Vec3::new(v_full[k0], v_full[k0 + 1], v_full[k0 + 2]) * h;
                rot(0, so3::left_jacobian(&x).transpose(), &mut w);
            }
            Joint::Free => {
                for c in 0..3 {
                    w[(0, local[k0 + c])] = n.dot(&cols[c]);
                }
                let x = Vec3::new(v_full[k0 + 3], v_full[k0 + 4], v_full[k0 + 5]) * h;
                let l = super::phi_rotation_jacobian(&x)
                    .map_err(|source| DynamicsError::Retraction { body: i, source })?;
                rot(3, l, &mut w);
            }
            _ => {
                for (c, col) in cols.iter().enumerate() {
                    w[(0, local[k0 + c])] = n.dot(col);
                }
            }
        }
        b = body.parent;
    }
    let mut w_b = None;
    if let Some((pb, vb)) = pb {
        let (vpb, wb) =
            side(&pb, vb, h, &contact.point_b, [&n, &t1, &t2], -S::one()).map_err(|source| {
                DynamicsError::Retraction {
                    body: body_b,
                    source,
                }
            })?;
        vp += vpb;
        w_b = Some(wb);
    }
    let y = Vec3::new(contact.gap, t1.dot(&vp), t2.dot(&vp));
    Ok(RobotKinematics {
        contact,
        tangents: (t1, t2),
        y,
        w,
        w_b,
    })
}

/// [`robot_contact_kinematics`] of candidate `cand` (a link shape against
/// static geometry or a free body) in the problem's scalar; `v_body` is the
/// free body's `v⁺` (ignored for static geometry).
pub fn candidate_kinematics<T: Scalar>(
    p: &StepProblem<'_, T>,
    unit: &RobotUnit,
    cand: &Candidate<T>,
    v_unit: &[T],
    v_body: [T; 6],
) -> Result<RobotKinematics<T>, SolveError> {
    let ls = &p.link_shapes[cand.link.expect("a link-shape candidate")];
    let (other, jb) = match cand.b {
        Partner::Static(j) => (
            Other::Static {
                shape: &p.statics[j].shape,
                pose: p.statics[j].pose,
            },
            cand.a,
        ),
        Partner::Body(j) => {
            let k = p.model.bodies[j].idx_q;
            let shape = p.shapes[j].as_ref().expect("candidate bodies have shapes");
            (
                Other::Body {
                    shape,
                    q: core::array::from_fn(|d| p.q[k + d]),
                    v: v_body,
                },
                j,
            )
        }
    };
    robot_contact_kinematics(
        p.model,
        p.q,
        unit,
        v_unit,
        p.h,
        ls,
        &other,
        cand.feature,
        cand.parts,
        cand.axis,
        jb,
    )
}

/// Exact primal Jacobians of a robot-link contact at unit velocity
/// `v_unit` (and the free body's `v_body`, ignored for static geometry)
/// and impulse `f`, by forward-mode dual numbers, eight columns per
/// evaluation: `K_i = ∂y/∂v_i` and `G[i][j] = ∂(W_iᵀ f)/∂v_j` for the
/// sides `i, j` in order (robot, then the free body if any).
pub fn robot_contact_jacobian<T: Scalar>(
    p: &StepProblem<'_, T>,
    unit: &RobotUnit,
    cand: &Candidate<T>,
    v_unit: &[f64],
    v_body: &[f64; 6],
    f: &Vec3<f64>,
) -> Result<(Vec<Matrix3xX<f64>>, Vec<Vec<DMat<f64>>>), SolveError> {
    const B: usize = 8;
    type D = DualSVec64<B>;
    let c = |x: T| D::from_re(x.re());
    let model = p.model.cast::<D>();
    let q = p.q.map(c);
    let ls = p.link_shapes[cand.link.expect("a link-shape candidate")].cast::<D>();
    let shape_b;
    let (static_pose, body) = match cand.b {
        Partner::Static(j) => {
            shape_b = p.statics[j].shape.cast::<D>();
            (Some(p.statics[j].pose.cast::<D>()), None)
        }
        Partner::Body(j) => {
            shape_b = p.shapes[j]
                .as_ref()
                .expect("candidate bodies have shapes")
                .cast::<D>();
            let k = p.model.bodies[j].idx_q;
            let qb: [D; 7] = core::array::from_fn(|d| c(p.q[k + d]));
            (None, Some((j, qb)))
        }
    };
    let fd = f.map(D::from_re);
    let n = unit.dofs.len();
    let nb = if body.is_some() { 6 } else { 0 };
    let sizes = if body.is_some() { vec![n, 6] } else { vec![n] };
    let mut ks: Vec<Matrix3xX<f64>> = sizes.iter().map(|&m| Matrix3xX::zeros(m)).collect();
    let mut gs: Vec<Vec<DMat<f64>>> = sizes
        .iter()
        .map(|&a| sizes.iter().map(|&b| DMat::zeros(a, b)).collect())
        .collect();
    // Column `col` of all n + nb velocities: (side, index within side).
    let side_of = |col: usize| if col < n { (0, col) } else { (1, col - n) };
    let grad = |x: &D| -> nalgebra::SVector<f64, B> { x.eps.unwrap_generic(Const::<B>, U1) };
    for start in (0..n + nb).step_by(B) {
        let width = B.min(n + nb - start);
        let seed = |col: usize, x: f64| {
            let x = D::from_re(x);
            if col >= start && col < start + width {
                x.derivative(col - start)
            } else {
                x
            }
        };
        let v: Vec<D> = (0..n).map(|l| seed(l, v_unit[l])).collect();
        let vb: [D; 6] = core::array::from_fn(|d| seed(n + d, v_body[d]));
        let (other, jb) = match (&static_pose, &body) {
            (Some(pose), _) => (
                Other::Static {
                    shape: &shape_b,
                    pose: *pose,
                },
                cand.a,
            ),
            (None, Some((j, qb))) => (
                Other::Body {
                    shape: &shape_b,
                    q: *qb,
                    v: vb,
                },
                *j,
            ),
            (None, None) => unreachable!(),
        };
        let kin = robot_contact_kinematics(
            &model,
            &q,
            unit,
            &v,
            c(p.h),
            &ls,
            &other,
            cand.feature,
            cand.parts,
            cand.axis,
            jb,
        )?;
        let mut gens: Vec<DVec<D>> = vec![kin.w.transpose() * fd];
        if let Some(wb) = kin.w_b {
            let g6 = wb.transpose() * fd;
            gens.push(DVec::from_fn(6, |r, _| g6[r]));
        }
        for jj in 0..width {
            let (sj, cj) = side_of(start + jj);
            for r in 0..3 {
                ks[sj][(r, cj)] = grad(&kin.y[r])[jj];
            }
            for (si, generalized) in gens.iter().enumerate() {
                for r in 0..generalized.len() {
                    gs[si][sj][(r, cj)] = grad(&generalized[r])[jj];
                }
            }
        }
    }
    Ok((ks, gs))
}
