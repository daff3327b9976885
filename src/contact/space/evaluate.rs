//! The step residual of one island: dynamics rows, per-contact equality
//! rows and relaxed complementarity rows, with the blocks of its Jacobian.
//!
//! See the [module docs](super) for the maths. Contact `c` has local
//! unknowns `x_c` (layout per [`Law`](crate::contact::law::Law)) and sees the island velocity only
//! through its contact-space quantities `y_c = (φ_c(q⁺), v_t1, v_t2)`
//! (see [`space`](super)); the impulse it
//! applies is `f_c = E x_c = (γ, b₁, b₂)` in the contact frame, mapped to
//! generalized impulses by `W_cᵀ`.

use super::robot::{candidate_kinematics, robot_dynamics};
use super::{Other, contact_kinematics};
use crate::Scalar;
use crate::collision::Contact;
use crate::contact::candidates::{Candidate, Partner};
use crate::contact::island::{Island, UnitKind, islands, local_v};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::articulated::{articulated_dofs, articulated_residual};
use crate::dynamics::free::{
    DynamicsError, body_residual, momentum_residual, rotational_jacobian, world_inertia,
};
use crate::dynamics::rnea::rnea;
use crate::math::{DMat, DVec, Vec3};
use nalgebra::{Matrix3x6, Matrix3xX, Matrix6, Vector6};
/// Dynamics residual (6) and its Jacobian (6 × 6) of one body at `v⁺`,
/// without contact impulses (see `dynamics::free`):
/// `r = (m(ṗ⁺ − ṗ) − h(m g + f), P⁺(ω⁺) − P⁻(ω) − h τ)`.
pub fn body_dynamics<T: Scalar>(
    p: &StepProblem<'_, T>,
    i: usize,
    v_next: &Vector6<T>,
) -> Result<(Vector6<T>, Matrix6<T>), DynamicsError> {
    let r = body_residual(p.model, i, p.q, p.v, v_next, p.u, &p.gravity, p.h)?;
    let m = p.model.bodies[i].inertia.mass;
    let iw = world_inertia(p.model, i, p.q);
    let w1 = Vec3::new(v_next[3], v_next[4], v_next[5]);
    let mut jac = Matrix6::zeros();
    for d in 0..3 {
        jac[(d, d)] = m;
    }
    let err = |source| DynamicsError::Retraction { body: i, source };
    jac.fixed_view_mut::<3, 3>(3, 3)
        .copy_from(&rotational_jacobian(&iw, &w1, p.h).map_err(err)?);
    Ok((r, jac))
}

/// One contact evaluated at `q⁺(v⁺)`.
#[derive(Clone, Debug)]
pub struct ContactEval<T: Scalar> {
    /// The contact at `q⁺`.
    pub contact: Contact<T>,
    /// Tangent basis.
    pub tangents: (Vec3<T>, Vec3<T>),
    /// Contact-space quantities `y = (φ, v_t1, v_t2)`.
    pub y: Vec3<T>,
    /// `(island unit, W block)` for each side of the pair that moves:
    /// impulse `f` → generalized impulse `Wᵀ f` on the unit's velocities
    /// (3 × 6 for a free body, 3 × n for a robot).
    pub blocks: Vec<(usize, Matrix3xX<T>)>,
}

/// Island evaluation: the dynamics residual including contact impulses,
/// the per-unit dynamics Jacobians and the contact geometry at `q⁺`.
#[derive(Clone, Debug)]
pub struct Eval<T: Scalar> {
    /// `r_dyn(v⁺) − Σ W_cᵀ E x_c` (island layout, [`Island::dim`] rows).
    pub r_dyn: DVec<T>,
    /// `∂r_dyn/∂v⁺` per island unit (without contact terms).
    pub jac: Vec<DMat<T>>,
    /// Contacts in island order.
    pub contacts: Vec<ContactEval<T>>,
}

/// Evaluates the island at velocity `v` (island layout) and contact
/// unknowns `xs`.
pub fn evaluate<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
) -> Result<Eval<T>, SolveError> {
    let mut ev = Eval {
        r_dyn: DVec::zeros(0),
        jac: Vec::new(),
        contacts: Vec::new(),
    };
    evaluate_into(p, island, v, xs, &mut ev)?;
    Ok(ev)
}

/// Copies the impulse-map blocks `src` into `dst`, reusing `dst`'s
/// storage where the shapes agree (the solver's steady state: no heap).
fn set_blocks<T: Scalar>(
    dst: &mut Vec<(usize, Matrix3xX<T>)>,
    src: &[(
        usize,
        nalgebra::MatrixView<'_, T, nalgebra::U3, nalgebra::Dyn>,
    )],
) {
    dst.truncate(src.len());
    for (k, (u, w)) in src.iter().enumerate() {
        match dst.get_mut(k) {
            Some((du, dw)) if dw.ncols() == w.ncols() => {
                *du = *u;
                dw.copy_from(w);
            }
            Some(slot) => *slot = (*u, w.into_owned()),
            None => dst.push((*u, w.into_owned())),
        }
    }
}

/// [`evaluate`] into `ev`, reusing its storage: after the first call with
/// the same island, free-body islands evaluate without heap allocation.
/// On error `ev` is left partially written.
pub fn evaluate_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    ev: &mut Eval<T>,
) -> Result<(), SolveError> {
    evaluate_parts(p, island, v, xs, ev, true)
}

/// [`evaluate`] without the robots' `∂r_dyn/∂v⁺` (their mass matrices):
/// for an exact residual alone. The robot units' [`Eval::jac`] blocks are
/// zero, not the Jacobian (free bodies' blocks come with their residual
/// and are filled).
pub fn evaluate_residual<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
) -> Result<Eval<T>, SolveError> {
    let mut ev = Eval {
        r_dyn: DVec::zeros(0),
        jac: Vec::new(),
        contacts: Vec::new(),
    };
    evaluate_parts(p, island, v, xs, &mut ev, false)?;
    Ok(ev)
}

fn evaluate_parts<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    ev: &mut Eval<T>,
    need_jac: bool,
) -> Result<(), SolveError> {
    let dim = island.dim();
    if ev.r_dyn.len() != dim {
        ev.r_dyn = DVec::zeros(dim);
    }
    ev.jac.truncate(island.units.len());
    for (k, u) in island.units.iter().enumerate() {
        let n = u.size();
        if ev.jac.len() == k {
            ev.jac.push(DMat::zeros(n, n));
        } else if ev.jac[k].shape() != (n, n) {
            ev.jac[k] = DMat::zeros(n, n);
        }
        match &u.kind {
            UnitKind::Body(g) => {
                let vb: Vector6<T> = v.fixed_rows::<6>(u.offset).into_owned();
                let (r, j) = body_dynamics(p, *g, &vb)?;
                ev.r_dyn.fixed_rows_mut::<6>(u.offset).copy_from(&r);
                ev.jac[k].copy_from(&j);
            }
            UnitKind::Robot(ru) => {
                let (r, j) = robot_dynamics(p, ru, &v.as_slice()[u.offset..u.offset + n], need_jac);
                ev.r_dyn.rows_mut(u.offset, n).copy_from(&r);
                match j {
                    Some(j) => ev.jac[k].copy_from(&j),
                    None => ev.jac[k].fill(T::zero()),
                }
            }
        }
    }
    ev.contacts.truncate(island.contacts.len());
    for (c, (cand, x)) in island.contacts.iter().zip(xs).enumerate() {
        let la = island.local[cand.a];
        let ua = &island.units[la];
        match &ua.kind {
            UnitKind::Robot(ru) => {
                let lb = match cand.b {
                    Partner::Body(j) => Some(island.local[j]),
                    Partner::Static(_) => None,
                };
                let vb = lb
                    .map(|lb| local_v(v, island.units[lb].offset))
                    .unwrap_or([T::zero(); 6]);
                let kin = candidate_kinematics(
                    p,
                    ru,
                    cand,
                    &v.as_slice()[ua.offset..ua.offset + ua.size()],
                    vb,
                )?;
                let wb = kin.w_b.map(|wb| Matrix3xX::from_fn(6, |i, j| wb[(i, j)]));
                let mut src = vec![(la, kin.w.as_view())];
                if let (Some(lb), Some(wb)) = (lb, &wb) {
                    src.push((lb, wb.as_view()));
                }
                let dst = slot(&mut ev.contacts, c, &kin.contact, kin.tangents, kin.y);
                set_blocks(dst, &src);
            }
            UnitKind::Body(_) => {
                let ba = &p.model.bodies[cand.a];
                let qa: [T; 7] = core::array::from_fn(|k| p.q[ba.idx_q + k]);
                let shape_a = p.shapes[cand.a]
                    .as_ref()
                    .expect("candidate bodies have shapes");
                let (other, lb, jb) = match cand.b {
                    Partner::Body(j) => {
                        let bb = &p.model.bodies[j];
                        let lb = island.local[j];
                        (
                            Other::Body {
                                shape: p.shapes[j].as_ref().expect("candidate bodies have shapes"),
                                q: core::array::from_fn(|k| p.q[bb.idx_q + k]),
                                v: local_v(v, island.units[lb].offset),
                            },
                            Some(lb),
                            j,
                        )
                    }
                    Partner::Static(j) => (
                        Other::Static {
                            shape: &p.statics[j].shape,
                            pose: p.statics[j].pose,
                        },
                        None,
                        cand.a,
                    ),
                };
                let kin = contact_kinematics(
                    shape_a,
                    &qa,
                    &local_v(v, ua.offset),
                    &other,
                    p.h,
                    cand.feature,
                    cand.parts,
                    cand.axis,
                    cand.a,
                    jb,
                )?;
                let view =
                    |w: &Matrix3x6<T>| -> Matrix3xX<T> { Matrix3xX::from_fn(6, |i, j| w[(i, j)]) };
                let dst = slot(&mut ev.contacts, c, &kin.contact, kin.tangents, kin.y);
                // Free-body blocks are 3 × 6: copied in place once sized.
                let sides = 1 + usize::from(lb.is_some() && kin.w_b.is_some());
                dst.truncate(sides);
                // (By reference: moving the 3 × 6 blocks through an array
                // cost a memcpy each.)
                let mut put = |k: usize, u: usize, w: &Matrix3x6<T>| match dst.get_mut(k) {
                    Some((du, dw)) if dw.ncols() == 6 => {
                        *du = u;
                        dw.copy_from(w);
                    }
                    Some(s) => *s = (u, view(w)),
                    None => dst.push((u, view(w))),
                };
                put(0, la, &kin.w_a);
                if let (Some(lb), Some(wb)) = (lb, kin.w_b.as_ref()) {
                    put(1, lb, wb);
                }
            }
        }
        let f = cand.law.impulse(x);
        for (li, w) in &ev.contacts[c].blocks {
            let u = &island.units[*li];
            for k in 0..u.size() {
                let generalized = w[(0, k)] * f[0] + w[(1, k)] * f[1] + w[(2, k)] * f[2];
                ev.r_dyn[u.offset + k] -= generalized;
            }
        }
    }
    Ok(())
}

/// Contact `c`'s evaluation slot with its geometry set, returning its
/// impulse-map blocks for the caller to fill.
fn slot<'a, T: Scalar>(
    contacts: &'a mut Vec<ContactEval<T>>,
    c: usize,
    contact: &Contact<T>,
    tangents: (Vec3<T>, Vec3<T>),
    y: Vec3<T>,
) -> &'a mut Vec<(usize, Matrix3xX<T>)> {
    if c == contacts.len() {
        contacts.push(ContactEval {
            contact: *contact,
            tangents,
            y,
            blocks: Vec::with_capacity(2),
        });
    } else {
        let ce = &mut contacts[c];
        ce.contact = *contact;
        ce.tangents = tangents;
        ce.y = y;
    }
    &mut contacts[c].blocks
}

/// The rows of a contact residual that `v` and `u` enter (`ipm`, and the
/// contact-space backends whose contact rows do not see `v`): each unit's
/// dynamics without contact impulses (for the units of an island the rows
/// [`evaluate`] writes — `body_residual`, and for robots
/// `h (RNEA(q, v, (v⁺ − v)/h) − u)` as `robot_dynamics` has them, one
/// RNEA for all such robots, whose trees are independent — the momentum
/// and articulated rows for the others), zero in the contact rows.
pub fn dynamics_rows<T: Scalar>(
    p: &StepProblem<'_, T>,
    cands: &[Candidate<f64>],
    y: &DVec<T>,
) -> Result<DVec<T>, SolveError> {
    let nv = p.model.nv;
    let mut r = DVec::zeros(y.len());
    let v_next = y.rows(0, nv).into_owned();
    let mut r_dyn = DVec::zeros(nv);
    momentum_residual(p.model, p.q, p.v, &v_next, p.u, &p.gravity, p.h, &mut r_dyn)?;
    let cands_t: Vec<Candidate<T>> = cands.iter().map(|c| c.with_mu(T::from_re(c.mu))).collect();
    let mut robot_dofs = Vec::new();
    for island in islands(p.model, cands_t) {
        for u in &island.units {
            match &u.kind {
                UnitKind::Body(g) => {
                    let vb = nalgebra::Vector6::from_fn(|k, _| v_next[u.dofs[k]]);
                    let rb = body_residual(p.model, *g, p.q, p.v, &vb, p.u, &p.gravity, p.h)?;
                    for (k, &d) in u.dofs.iter().enumerate() {
                        r_dyn[d] = rb[k];
                    }
                }
                UnitKind::Robot(_) => robot_dofs.extend_from_slice(&u.dofs),
            }
        }
    }
    // Articulated joints in no island (ABA form), only if there are any.
    if articulated_dofs(p.model)
        .iter()
        .any(|d| !robot_dofs.contains(d))
    {
        articulated_residual(p.model, p.q, p.v, &v_next, p.u, p.h, &mut r_dyn);
    }
    if !robot_dofs.is_empty() {
        let mut a = DVec::zeros(nv);
        for &d in &robot_dofs {
            a[d] = (v_next[d] - p.v[d]) / p.h;
        }
        let mut data = p.model.data();
        let tau = rnea(p.model, &mut data, p.q, p.v, &a);
        for &d in &robot_dofs {
            r_dyn[d] = p.h * (tau[d] - p.u[d]);
        }
    }
    r.rows_mut(0, nv).copy_from(&r_dyn);
    Ok(r)
}
