//! Closed-form partials of a step residual with respect to the state and
//! the control, `∂r/∂q`, `∂r/∂v`, `∂r/∂u` (the `ift` right-hand sides for
//! `Param::Q`, `Param::V`, `Param::U`), instead of a dual-number
//! evaluation of the whole residual per block of 8 parameters.
//!
//! `q` is perturbed on the manifold, `q ⊕ δ` (per free body: world-frame
//! translation and rotation, as [`Param::Q`](super::Param::Q)). Per free
//! body `i` (dynamics rows `k = idx_v .. k + 6`, see `dynamics::free`):
//!
//! ```text
//! r_lin = m (ṗ⁺ − ṗ) − h (m g + f),   r_ang = P⁺(ω⁺) − P⁻(ω) − h τ,
//! P±(ω) = c(ω) I ω ± (h/2) ω × I ω,  I = R I_b Rᵀ (at q)
//! ∂r/∂u = −h 𝟙₆
//! ∂r_lin/∂ṗ = −m 𝟙,   ∂r_ang/∂ω = −∂P⁻/∂ω = −rotational_jacobian(I, ω, −h)
//! ∂r_ang/∂δθ = ∂P⁺/∂I[dI] − ∂P⁻/∂I[dI],  dI = [δθ]× I − I [δθ]×
//! ```
//!
//! (the last by one forward-mode evaluation in `δθ` per body). The
//! contact rows and the contact impulses `−Σ_c W_cᵀ f_c` in the dynamics
//! rows depend on `q` only through the poses of the contact's bodies at
//! `q⁺ = (q ⊕ δ) ⊕ h v⁺`: per contact one forward-mode evaluation of the
//! contact kinematics in the 12 directions `(δ_a, δ_b)` gives
//! `∂y_c/∂δ` (3 × 12) and `∂(W_iᵀ f_c)/∂δ` at fixed `f_c` (6 × 12 per
//! body), the same machinery as the Newton matrix's `K` and `G` (see
//! `contact::ipm::kinematics`); the contact rows are then
//! `C_c ∂y_c/∂δ` with `C_c = ∂r_c/∂y_c`. Contact rows do not depend on
//! `v` or `u`.

use nalgebra::{Const, Matrix3, U1};
use num_dual::DualSVec64;

use crate::contact::ipm::kinematics::{contact_kinematics, Other};
use crate::contact::ipm::residual::{local_jacobian, Candidate, Partner};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::{rotational_jacobian, world_inertia, DynamicsError};
use crate::math::integrate::phi_scalar;
use crate::math::{integrate, so3, DMat, DVec, Quat, Vec3};
use crate::Scalar;

/// `∂r/∂q` (tangent directions `q ⊕ δ`), `∂r/∂v`, `∂r/∂u` at a solution,
/// each `n × nv` (`n` = number of unknowns of the residual).
#[derive(Clone, Debug)]
pub struct StatePartials {
    /// `∂r/∂δ` at `δ = 0`.
    pub dq: DMat<f64>,
    /// `∂r/∂v`.
    pub dv: DMat<f64>,
    /// `∂r/∂u`.
    pub du: DMat<f64>,
}

impl StatePartials {
    /// All zero, `n` rows, `nv` columns.
    pub fn zeros(n: usize, nv: usize) -> Self {
        StatePartials { dq: DMat::zeros(n, nv), dv: DMat::zeros(n, nv), du: DMat::zeros(n, nv) }
    }
}

fn retraction(body: usize) -> impl Fn(crate::math::RetractionError) -> SolveError {
    move |source| SolveError::from(DynamicsError::Retraction { body, source })
}

/// `P(ω) = c(ω) I ω + s (h/2) ω × I ω`.
fn momentum<S: Scalar>(iw: &Matrix3<S>, w: &Vec3<S>, h: S, s: f64) -> Result<Vec3<S>, crate::math::RetractionError> {
    let c = phi_scalar(w, h)?;
    let iww = iw * w;
    Ok(iww * c + w.cross(&iww) * (h * S::from_re(0.5 * s)))
}

/// The dynamics rows' partials of every free body (see the module docs);
/// `v⁺ = y[..nv]`.
pub fn dynamics_partials(p: &StepProblem<'_, f64>, y: &DVec<f64>, out: &mut StatePartials) -> Result<(), SolveError> {
    type E = DualSVec64<3>;
    let h = p.h;
    let lone = p.model.lone_free_bodies();
    for (i, b) in p.model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let m = b.inertia.mass;
        for d in 0..6 {
            out.du[(k + d, k + d)] = -h;
        }
        for d in 0..3 {
            out.dv[(k + d, k + d)] = -m;
        }
        let iw = world_inertia(p.model, i, p.q);
        let w0 = Vec3::new(p.v[k + 3], p.v[k + 4], p.v[k + 5]);
        let w1 = Vec3::new(y[k + 3], y[k + 4], y[k + 5]);
        let jm = rotational_jacobian(&iw, &w0, -h).map_err(retraction(i))?;
        out.dv.view_mut((k + 3, k + 3), (3, 3)).copy_from(&(-jm));
        // I(δθ) = R(δθ) I_b R(δθ)ᵀ with R(δθ) = φ(δθ) R.
        let kq = b.idx_q;
        let r = Quat::new(E::from_re(p.q[kq + 3]), E::from_re(p.q[kq + 4]), E::from_re(p.q[kq + 5]), E::from_re(p.q[kq + 6]));
        let dth = Vec3::from_fn(|j, _| E::from_re(0.0).derivative(j));
        let rd = so3::to_matrix(&(integrate::phi(&dth).map_err(retraction(i))? * r));
        let iwd = rd * b.inertia.inertia.map(E::from_re) * rd.transpose();
        let hd = E::from_re(h);
        let ra = momentum(&iwd, &w1.map(E::from_re), hd, 1.0).map_err(retraction(i))?
            - momentum(&iwd, &w0.map(E::from_re), hd, -1.0).map_err(retraction(i))?;
        for row in 0..3 {
            let g = ra[row].eps.unwrap_generic(Const::<3>, U1);
            for j in 0..3 {
                out.dq[(k + 3 + row, k + 3 + j)] = g[j];
            }
        }
    }
    Ok(())
}

/// The contact rows' and contact impulses' `∂/∂δ` of every candidate
/// (offsets of the candidates' unknowns in `y` as `offsets`, in candidate
/// order). A contact with static geometry is seeded in its body's 6
/// directions only, a body pair in 12.
pub fn contact_partials(
    p: &StepProblem<'_, f64>,
    cands: &[Candidate<f64>],
    offsets: &[usize],
    y: &DVec<f64>,
    out: &mut StatePartials,
) -> Result<(), SolveError> {
    for (cand, &off) in cands.iter().zip(offsets) {
        match cand.b {
            Partner::Body(_) => contact_partial::<12>(p, cand, off, y, out)?,
            Partner::Static(_) => contact_partial::<6>(p, cand, off, y, out)?,
        }
    }
    Ok(())
}

/// [`contact_partials`] of one contact, in `N` = 6 (static partner) or 12
/// (body pair) forward-mode directions.
fn contact_partial<const N: usize>(
    p: &StepProblem<'_, f64>,
    cand: &Candidate<f64>,
    off: usize,
    y: &DVec<f64>,
    out: &mut StatePartials,
) -> Result<(), SolveError> {
    type E<const M: usize> = DualSVec64<M>;
    let grad = |x: &E<N>| -> nalgebra::SVector<f64, N> { x.eps.unwrap_generic(Const::<N>, U1) };
    let h = E::<N>::from_re(p.h);
    {
        let ba = &p.model.bodies[cand.a];
        let body_q = |idx_q: usize, seed: usize, body: usize| -> Result<[E<N>; 7], SolveError> {
            let q: [E<N>; 7] = core::array::from_fn(|k| E::<N>::from_re(p.q[idx_q + k]));
            let d: [E<N>; 6] = core::array::from_fn(|k| E::<N>::from_re(0.0).derivative(seed + k));
            integrate(&q, &d, E::<N>::from_re(1.0)).map_err(retraction(body))
        };
        let body_v = |idx_v: usize| -> [E<N>; 6] { core::array::from_fn(|k| E::<N>::from_re(y[idx_v + k])) };
        let qa = body_q(ba.idx_q, 0, cand.a)?;
        let shape_a = p.shapes[cand.a].as_ref().ok_or(SolveError::Singular("candidate body without shape"))?.cast::<E<N>>();
        let shape_b;
        let (other, jb, kb) = match cand.b {
            Partner::Body(j) => {
                let bb = &p.model.bodies[j];
                shape_b = p.shapes[j].as_ref().ok_or(SolveError::Singular("candidate body without shape"))?.cast::<E<N>>();
                (Other::Body { shape: &shape_b, q: body_q(bb.idx_q, 6, j)?, v: body_v(bb.idx_v) }, j, Some(bb.idx_v))
            }
            Partner::Static(j) => {
                shape_b = p.statics[j].shape.cast::<E<N>>();
                (Other::Static { shape: &shape_b, pose: p.statics[j].pose.cast::<E<N>>() }, cand.a, None)
            }
        };
        let kin = contact_kinematics(&shape_a, &qa, &body_v(ba.idx_v), &other, h, cand.feature, cand.axis, cand.a, jb)?;
        let n = cand.law.size();
        let x = y.rows(off, n).into_owned();
        let f = cand.law.impulse(&x).map(E::<N>::from_re);
        let (_, c) = local_jacobian(cand.law, &x, cand.mu, false);
        // Columns of each side's δ: (body, v offset, first seed).
        let mut sides = vec![(ba.idx_v, 0)];
        if let Some(kb) = kb {
            sides.push((kb, 6));
        }
        // Contact rows: C ∂y/∂δ.
        let dy = DMat::from_fn(3, N, |r, j| grad(&kin.y[r])[j]);
        let rows = &c * dy;
        for &(kv, seed) in &sides {
            let mut blk = out.dq.view_mut((off, kv), (n, 6));
            blk += rows.columns(seed, 6);
        }
        // Dynamics rows: −∂(W_iᵀ f)/∂δ.
        let ws = [Some(kin.w_a), kin.w_b];
        for (wi, &(kw, _)) in ws.iter().zip(&sides) {
            let Some(w) = wi else { continue };
            let gen = w.transpose() * f;
            for r in 0..6 {
                let g = grad(&gen[r]);
                for &(kv, seed) in &sides {
                    for j in 0..6 {
                        out.dq[(kw + r, kv + j)] -= g[seed + j];
                    }
                }
            }
        }
    }
    Ok(())
}
