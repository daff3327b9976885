//! The contact space: contact kinematics at `q⁺ = q ⊕ h v⁺` and its exact
//! Jacobian, for free bodies ([this module](self)) and robot links
//! ([`robot`]); the evaluation of an island's residual blocks from them
//! ([`evaluate`]); the generated `#[kernel]`s of the closed-form pairs
//! ([`kernels`]) and their parameter partials ([`partials`]).
//!
//! [`contact_kinematics`] maps the velocities of the two bodies of a
//! contact to the contact-space quantities `y = (φ(q⁺), v_t1, v_t2)` and
//! the impulse map `W` (`Wᵀ f` = generalized impulse of the contact-frame
//! impulse `f` applied at the witness points). It is generic, so the
//! Newton matrix is obtained by running it once in forward-mode dual
//! numbers (`DualSVec64<12>`, seeded on the primal values of the 12 body
//! velocities): `K = ∂y/∂v⁺` and the geometric stiffness
//! `G = ∂(Wᵀ f)/∂v⁺` at fixed `f`, both exact (contact points, lever arms
//! and the contact frame move with `q⁺`). The Newton matrix only needs
//! primal values; for a dual scalar `T` the derivative parts of the
//! iterates still converge to the implicit-function derivative, because the
//! residual itself is evaluated in `T`.

pub mod evaluate;
pub mod kernels;
pub mod partials;
pub mod robot;

use crate::Scalar;
use crate::collision::conic::ConicParams;
use crate::collision::conic::contact::{conic_contact, conic_contact_with, inner_params};
use crate::collision::conic::convex_parts;
use crate::collision::frame::tangent_basis_from;
use crate::collision::{Contact, pair_contact};
use crate::contact::candidates::{Candidate, ConicParts, Partner};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::DynamicsError;
use crate::geometry::Shape;
use crate::math::integrate::phi_scalar;
use crate::math::{Mat3, Pose, Quat, Vec3, integrate, skew};
use nalgebra::{Const, Matrix3x6, Matrix6, U1};
use num_dual::DualSVec64;

/// The far side of a contact.
#[derive(Clone, Debug)]
pub enum Other<'a, S: Scalar> {
    /// A moving body: shape, configuration at the start of the step (7)
    /// and velocity (6).
    Body {
        /// Shape.
        shape: &'a Shape<S>,
        /// `q` (7).
        q: [S; 7],
        /// `v⁺` (6).
        v: [S; 6],
    },
    /// Static geometry.
    Static {
        /// Shape.
        shape: &'a Shape<S>,
        /// Pose.
        pose: Pose<S>,
    },
}

/// A contact evaluated at `q⁺`.
#[derive(Clone, Debug)]
pub struct Kinematics<S: Scalar> {
    /// Gap, witness points and normal at `q⁺`.
    pub contact: Contact<S>,
    /// Tangent basis at `q⁺`.
    pub tangents: (Vec3<S>, Vec3<S>),
    /// `(φ, v_t1, v_t2)`.
    pub y: Vec3<S>,
    /// Impulse map of body a: rows `[n; L(hω)ᵀ (r × n)]` (= `∂φ/∂v⁺ / h`),
    /// `[t; r × t]` for both tangents.
    pub w_a: Matrix3x6<S>,
    /// Impulse map of body b (negated), if it is a body.
    pub w_b: Option<Matrix3x6<S>>,
}

pub(crate) fn pose_after<S: Scalar>(
    q: &[S; 7],
    v: &[S; 6],
    h: S,
) -> Result<Pose<S>, crate::math::RetractionError> {
    let q1 = integrate(q, v, h)?;
    Ok(Pose::new(
        Quat::new(q1[3], q1[4], q1[5], q1[6]),
        Vec3::new(q1[0], q1[1], q1[2]),
    ))
}

/// `L(x)`: the world-frame rotation increment of `φ(x)` per unit change of
/// `x`, `δθ = L(x) δx`; with `φ(x) = (c, u)`, `u = x/2`,
/// `c = √(1 − ‖u‖²)`: `L = c I + u uᵀ / c + [u]×` (`L(0) = I`).
///
/// ```
/// use dualsim::contact::space::phi_rotation_jacobian;
/// use dualsim::math::{Mat3, Vec3};
/// assert_eq!(phi_rotation_jacobian(&Vec3::<f64>::zeros()).unwrap(), Mat3::identity());
/// ```
pub fn phi_rotation_jacobian<S: Scalar>(
    x: &Vec3<S>,
) -> Result<Mat3<S>, crate::math::RetractionError> {
    let c = phi_scalar(x, S::one())?;
    let u = x * S::from_re(0.5);
    Ok(Mat3::identity() * c + u * u.transpose() / c + skew(&u))
}

pub(crate) fn side<S: Scalar>(
    pose: &Pose<S>,
    v: &[S; 6],
    h: S,
    point: &Vec3<S>,
    frame: [&Vec3<S>; 3],
    sign: S,
) -> Result<(Vec3<S>, Matrix3x6<S>), crate::math::RetractionError> {
    let r = point - pose.translation;
    let omega = Vec3::new(v[3], v[4], v[5]);
    let vp = Vec3::new(v[0], v[1], v[2]) + omega.cross(&r);
    let lt = phi_rotation_jacobian(&(omega * h))?.transpose();
    let mut w = Matrix3x6::zeros();
    for (row, dir) in frame.iter().enumerate() {
        // The normal row is ∂φ/∂v⁺ / h (variationally consistent with the
        // gap at q⁺); the friction rows are ∂v_t/∂v⁺.
        let moment = if row == 0 {
            lt * r.cross(dir)
        } else {
            r.cross(dir)
        };
        for d in 0..3 {
            w[(row, d)] = dir[d] * sign;
            w[(row, 3 + d)] = moment[d] * sign;
        }
    }
    Ok((vp * sign, w))
}

/// Contact `feature` of shape a at `pa` against shape b at `pb`: the
/// closed-form pair's feature, or (`parts = Some((k_a, k_b))`, a pair
/// without a closed form, see [`candidates::conic`](crate::contact::candidates::conic)) the conic contact of
/// convex parts `k_a` and `k_b`.
pub fn shape_pair_contact<S: Scalar>(
    shape_a: &Shape<S>,
    pa: &Pose<S>,
    sb: &Shape<S>,
    pb: &Pose<S>,
    feature: usize,
    parts: Option<ConicParts>,
) -> Result<Contact<S>, SolveError> {
    match parts {
        None => pair_contact(shape_a, pa, sb, pb, feature).ok_or(SolveError::Unsupported {
            backend: "ipm",
            what: "a contact candidate without a closed form and without convex parts",
        }),
        Some(cp) => {
            let part = |s: &Shape<S>, pose: &Pose<S>, k: usize| {
                convex_parts(s, pose)
                    .into_iter()
                    .nth(k)
                    .ok_or(SolveError::Mismatch {
                        what: "a convex part the shape does not have",
                    })
            };
            let (sa, qa) = part(shape_a, pa, cp.part_a)?;
            let (sb, qb) = part(sb, pb, cp.part_b)?;
            let contact = if cp.smoothing == inner_params().tol_gap {
                conic_contact(&sa, &qa, &sb, &qb)?
            } else {
                // Residuals to 1e-12 and centred to 1e-10 μ: with the
                // defaults (1e-10, 1e-6 μ) the noise of the witness point
                // and normal leaves the step's residual at ~1e-8 (its
                // tolerance) when several parts rest on one face.
                let params = ConicParams {
                    tol_gap: cp.smoothing,
                    tol_residual: 1e-12,
                    centering_tolerance: 1e-10,
                    ..inner_params()
                };
                conic_contact_with(&sa, &qa, &sb, &qb, &params, true)?
            };
            if cp.metric {
                metric_gap(contact, &qa.translation, &qb.translation)
            } else {
                Ok(contact)
            }
        }
    }
}

/// The conic contact of two convex parts with its gap in metres: with
/// `α* = 1 + φ` the scaling about the parts' origins `r_a`, `r_b` at which
/// they touch, at the witness point `p*` and normal `n` (from b to a),
/// `n·p* = n·r_a − α* ρ_a = n·r_b + α* ρ_b` with `ρ_a`, `ρ_b` the depths of
/// the unscaled parts below their origins along `∓n`, so their separation
/// along `n` is
///
/// `d = n·(r_a − r_b) − (ρ_a + ρ_b) = (1 − 1/α*) n·(r_a − r_b)`.
///
/// At contact (`α* = 1`) its rate is the witness points' relative normal
/// velocity (the change of `n` enters multiplied by `α* − 1 = 0`), the
/// normal row of the contact-space backends' impulse map, which the scaling
/// `α* − 1` is not (it is `d / (ρ_a + ρ_b)` to first order). Derivative
/// parts flow through `α*`, `n` and the origins.
pub fn metric_gap<S: Scalar>(
    mut c: Contact<S>,
    ra: &Vec3<S>,
    rb: &Vec3<S>,
) -> Result<Contact<S>, SolveError> {
    let alpha = S::one() + c.gap;
    let depth = c.normal.dot(&(ra - rb));
    if !(alpha.re() > 0.0 && depth.re() > 0.0) {
        return Err(SolveError::Singular(
            "a conic contact whose parts' origins are not separated along its normal",
        ));
    }
    c.gap = (S::one() - S::one() / alpha) * depth;
    Ok(c)
}

/// Contact `feature` of body a (shape, `q`, `v⁺`) against `other` at
/// `q⁺ = q ⊕ h v⁺`, tangent frame built from world axis `axis`. `body` is the index reported in errors.
#[allow(clippy::too_many_arguments)]
pub fn contact_kinematics<S: Scalar>(
    shape_a: &Shape<S>,
    qa: &[S; 7],
    va: &[S; 6],
    other: &Other<'_, S>,
    h: S,
    feature: usize,
    parts: Option<ConicParts>,
    axis: usize,
    body_a: usize,
    body_b: usize,
) -> Result<Kinematics<S>, SolveError> {
    let pa = pose_after(qa, va, h).map_err(|source| DynamicsError::Retraction {
        body: body_a,
        source,
    })?;
    let pair =
        |sb: &Shape<S>, pb: &Pose<S>| shape_pair_contact(shape_a, &pa, sb, pb, feature, parts);
    let (contact, pb) = match other {
        Other::Body { shape, q, v } => {
            let pb = pose_after(q, v, h).map_err(|source| DynamicsError::Retraction {
                body: body_b,
                source,
            })?;
            (pair(shape, &pb)?, Some((pb, v)))
        }
        Other::Static { shape, pose } => (pair(shape, pose)?, None),
    };
    let n = contact.normal;
    let (t1, t2) = tangent_basis_from(&n, axis);
    let frame = [&n, &t1, &t2];
    let (mut vt, w_a) = side(&pa, va, h, &contact.point_a, frame, S::one()).map_err(|source| {
        DynamicsError::Retraction {
            body: body_a,
            source,
        }
    })?;
    let mut w_b = None;
    if let Some((pb, vb)) = pb {
        let (vtb, wb) = side(&pb, vb, h, &contact.point_b, frame, -S::one()).map_err(|source| {
            DynamicsError::Retraction {
                body: body_b,
                source,
            }
        })?;
        vt += vtb;
        w_b = Some(wb);
    }
    let y = Vec3::new(contact.gap, t1.dot(&vt), t2.dot(&vt));
    Ok(Kinematics {
        contact,
        tangents: (t1, t2),
        y,
        w_a,
        w_b,
    })
}

/// The slices of body `i` in `q` and `v`.
pub fn body_qv<S: Scalar>(p_q: &[S], p_v: &[S], idx_q: usize, idx_v: usize) -> ([S; 7], [S; 6]) {
    (
        core::array::from_fn(|k| p_q[idx_q + k]),
        core::array::from_fn(|k| p_v[idx_v + k]),
    )
}

/// Exact primal Jacobians of one contact at body velocities `va`, `vb`
/// (6 each; `vb` ignored for static geometry) and impulse `f`:
/// `K_a, K_b = ∂y/∂v_a, ∂y/∂v_b` and `G[i][j] = ∂(W_iᵀ f)/∂v_j`.
pub type ContactJacobian = (Matrix3x6<f64>, Matrix3x6<f64>, [[Matrix6<f64>; 2]; 2]);

/// See [`ContactJacobian`].
pub fn contact_jacobian<T: Scalar>(
    p: &StepProblem<'_, T>,
    cand: &Candidate<T>,
    va: &[f64; 6],
    vb: &[f64; 6],
    f: &Vec3<f64>,
) -> Result<ContactJacobian, SolveError> {
    // Forward mode over the moving velocities only: 6 directions against
    // static geometry, 12 between two bodies (the cost of every dual
    // operation grows with the number of directions).
    match cand.b {
        Partner::Static(_) => contact_jacobian_n::<T, 6>(p, cand, va, vb, f),
        Partner::Body(_) => contact_jacobian_n::<T, 12>(p, cand, va, vb, f),
    }
}

/// [`contact_jacobian`] with `N` forward-mode directions: 6 (body `a`'s
/// velocity) or 12 (both bodies').
fn contact_jacobian_n<T: Scalar, const N: usize>(
    p: &StepProblem<'_, T>,
    cand: &Candidate<T>,
    va: &[f64; 6],
    vb: &[f64; 6],
    f: &Vec3<f64>,
) -> Result<ContactJacobian, SolveError> {
    type D<const N: usize> = DualSVec64<N>;
    let c = |x: T| D::<N>::from_re(x.re());
    let ba = &p.model.bodies[cand.a];
    let qa: [D<N>; 7] = core::array::from_fn(|k| c(p.q[ba.idx_q + k]));
    let va_d: [D<N>; 6] = core::array::from_fn(|k| D::<N>::from_re(va[k]).derivative(k));
    let shape_a = p.shapes[cand.a]
        .as_ref()
        .expect("candidate bodies have shapes")
        .cast::<D<N>>();
    let h = c(p.h);
    let fd = f.map(D::<N>::from_re);
    let shape_b;
    let (other, jb) = match cand.b {
        Partner::Body(j) => {
            let bb = &p.model.bodies[j];
            shape_b = p.shapes[j]
                .as_ref()
                .expect("candidate bodies have shapes")
                .cast::<D<N>>();
            let q: [D<N>; 7] = core::array::from_fn(|k| c(p.q[bb.idx_q + k]));
            // N = 12 here (see `contact_jacobian`).
            let v: [D<N>; 6] = core::array::from_fn(|k| D::<N>::from_re(vb[k]).derivative(6 + k));
            (
                Other::Body {
                    shape: &shape_b,
                    q,
                    v,
                },
                j,
            )
        }
        Partner::Static(j) => {
            shape_b = p.statics[j].shape.cast::<D<N>>();
            (
                Other::Static {
                    shape: &shape_b,
                    pose: p.statics[j].pose.cast::<D<N>>(),
                },
                cand.a,
            )
        }
    };
    let kin = contact_kinematics(
        &shape_a,
        &qa,
        &va_d,
        &other,
        h,
        cand.feature,
        cand.parts,
        cand.axis,
        cand.a,
        jb,
    )?;
    let grad = |x: &D<N>| -> nalgebra::SVector<f64, N> { x.eps.unwrap_generic(Const::<N>, U1) };
    let mut ka = Matrix3x6::zeros();
    let mut kb = Matrix3x6::zeros();
    for r in 0..3 {
        let g = grad(&kin.y[r]);
        for k in 0..6 {
            ka[(r, k)] = g[k];
            if N == 12 {
                kb[(r, k)] = g[6 + k];
            }
        }
    }
    let mut gm = [[Matrix6::zeros(); 2]; 2];
    let gens = [
        Some(kin.w_a.transpose() * fd),
        kin.w_b.map(|w| w.transpose() * fd),
    ];
    for (i, generalized) in gens.iter().enumerate() {
        let Some(generalized) = generalized else {
            continue;
        };
        for r in 0..6 {
            let g = grad(&generalized[r]);
            for k in 0..6 {
                gm[i][0][(r, k)] = g[k];
                if N == 12 {
                    gm[i][1][(r, k)] = g[6 + k];
                }
            }
        }
    }
    Ok((ka, kb, gm))
}
