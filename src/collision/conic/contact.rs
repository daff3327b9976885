//! The contact of two convex parts from their conic proximity (Silico,
//! Le Cleac'h et al. 2023): gap `φ = α* − 1` with `α*` the smallest
//! uniform scaling at which the parts touch, witness point `p*` on both
//! sides, normal (from b to a) the direction of `∂α/∂r_a` from the duals
//! (eq. 41). In a scalar with derivative parts
//! ([`Scalar::DERIVATIVE_ORDER`](crate::Scalar::DERIVATIVE_ORDER) > 0) the
//! derivative parts of α come from the envelope theorem (eq. 15) or, with
//! `alpha_ift`, the implicit-function theorem of the central point; those
//! of `p*` from the implicit-function theorem of
//! [`proximity_gradient`](super::proximity_gradient()); the normal is the normalized `−Σ G_pᵀ z`.
//! Used by the contact kinematics of `bilevel` and of `ipm`'s pairs
//! without a closed form.

use super::primitive::shape_params_mut;
use super::{ConicParams, Owner, ProximityError, problem, proximity, proximity_gradient};
use crate::Scalar;
use crate::collision::{Contact, direction_or_z};
use crate::geometry::Shape;
use crate::math::{Pose, Vec3, so3};

/// Tolerances of [`conic_contact`] (converged: duality measure 1e-10 and
/// residuals 1e-10). The `bilevel` step does not use them: its inner
/// programs are relaxed to `contact::bilevel::inner_mu`.
pub fn inner_params() -> ConicParams {
    ConicParams {
        tol_gap: 1e-10,
        ..ConicParams::default()
    }
}

/// The tangent `(δr, δω)` of `pose` at its primal value (`δω` world
/// frame: `q = exp(δω) ⊗ q_re`), zero primal parts.
fn pose_tangent<S: Scalar>(pose: &Pose<S>) -> [S; 6] {
    let q0 = crate::math::Quat::from(pose.rotation.coords.map(|x| S::from_re(x.re())));
    let dq = so3::mul(&pose.rotation, &so3::conj(&q0));
    let t = pose.translation;
    let d = |x: S| x - S::from_re(x.re());
    [
        d(t.x),
        d(t.y),
        d(t.z),
        dq.i * S::from_re(2.0),
        dq.j * S::from_re(2.0),
        dq.k * S::from_re(2.0),
    ]
}

/// Contact of two convex parts at world poses from their conic proximity
/// (module docs).
pub fn conic_contact<S: Scalar>(
    sa: &Shape<S>,
    pa: &Pose<S>,
    sb: &Shape<S>,
    pb: &Pose<S>,
) -> Result<Contact<S>, ProximityError> {
    conic_contact_with(sa, pa, sb, pb, &inner_params(), false)
}

/// [`conic_contact`] with the conic program solved to `params` (its
/// returned point is the central-path point of `μ = params.tol_gap`); with
/// `alpha_ift`, the derivative parts of α come from the implicit-function
/// theorem of that point (`ProximityJacobian::dalpha_ift`) instead of the
/// envelope theorem, which is exact only as μ → 0.
pub fn conic_contact_with<S: Scalar>(
    sa: &Shape<S>,
    pa: &Pose<S>,
    sb: &Shape<S>,
    pb: &Pose<S>,
    params: &ConicParams,
    alpha_ift: bool,
) -> Result<Contact<S>, ProximityError> {
    let params = *params;
    // A scalar without derivative parts (f64, or a user's f64 wrapper)
    // needs only the proximity; any other gets its derivative parts.
    let is_primal = S::DERIVATIVE_ORDER == 0;
    let (prox, jac) = if is_primal {
        (proximity(sa, pa, sb, pb, &params)?, None)
    } else {
        let (prox, jac) =
            proximity_gradient(&sa.cast(), &pa.cast(), &sb.cast(), &pb.cast(), &params)?;
        (prox, Some(jac))
    };
    // The derivative parts of the poses and shape parameters (θ of
    // `proximity_gradient`), when the scalar has them.
    let theta: Option<Vec<S>> = jac.as_ref().map(|_| {
        let mut theta: Vec<S> = pose_tangent(pa)
            .into_iter()
            .chain(pose_tangent(pb))
            .collect();
        let (mut ca, mut cb) = (sa.clone(), sb.clone());
        for v in shape_params_mut(&mut ca)
            .into_iter()
            .chain(shape_params_mut(&mut cb))
        {
            theta.push(*v - S::from_re(v.re()));
        }
        theta
    });
    let lin = |d: &nalgebra::DMatrix<f64>, row: usize, theta: &[S]| -> S {
        let mut acc = S::zero();
        for (k, t) in theta.iter().enumerate().take(d.ncols()) {
            acc += S::from_re(d[(row, k)]) * *t;
        }
        acc
    };
    let pr = problem(sa, pa, sb, pb)?;
    let x: nalgebra::DVector<S> = prox.solution.x.map(S::from_re);
    let s = pr.slack(&x);
    // Envelope theorem: α(θ) ≈ α* − zᵀ (s(x*; θ) − s*). With `alpha_ift`,
    // α from the IFT instead, and the duals in the normal carry their
    // derivative parts `∂z/∂θ θ` (exact at the central point).
    let mut alpha = S::from_re(prox.alpha);
    let mut da = Vec3::zeros();
    for (i, si) in s.iter().enumerate() {
        let z = S::from_re(prox.solution.z[i]);
        alpha -= z * (*si - S::from_re(si.re()));
        if pr.owner[i] == Owner::A {
            let zi = match (&jac, &theta) {
                (Some(j), Some(t)) if alpha_ift => z + lin(&j.dz, i, t),
                _ => z,
            };
            da -= Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * zi;
        }
    }
    let mut point = prox.point.map(S::from_re);
    if let (Some(j), Some(t)) = (&jac, &theta) {
        for r in 0..3 {
            point[r] += lin(&j.dpoint, r, t);
        }
        if alpha_ift {
            // α and its derivative parts from the IFT of the central point.
            alpha = S::from_re(prox.alpha);
            for (k, tk) in t.iter().enumerate().take(j.dalpha_ift.len()) {
                alpha += S::from_re(j.dalpha_ift[k]) * *tk;
            }
        }
    }
    let (normal, _) = direction_or_z(&da);
    Ok(Contact {
        gap: alpha - S::one(),
        point_a: point,
        point_b: point,
        normal,
    })
}
