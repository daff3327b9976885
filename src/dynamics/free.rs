//! Dynamics of free rigid bodies, continuous and discrete.
//!
//! For a body of mass `m` and body-frame inertia `I_b` at orientation `R`
//! (world inertia `I = R I_b Rᵀ`), with world-frame velocity `v = (ṗ, ω)`:
//!
//! ```text
//! M(q) = diag(m 𝟙, I),      c(q, v) = (−m g,  ω × I ω)
//! ```
//!
//! # Discrete dynamics (variational, as in Dojo)
//!
//! A step from `q` with the *interval* velocity `v` of the previous step to
//! the interval velocity `v⁺` of this step, `q⁺ = q ⊕ h v⁺`
//! (see [`crate::math::integrate`](mod@crate::math::integrate)), satisfies the discrete Euler–Lagrange
//! equations
//!
//! ```text
//! r_lin = m (ṗ⁺ − ṗ) − h (m g + f)
//! r_ang = P⁺(ω⁺) − P⁻(ω) − h τ,
//! P±(ω) = c(ω) I ω ± (h/2) ω × I ω,    c(ω) = √(1 − h²‖ω‖²/4),
//! ```
//!
//! with `I` the world inertia at `q` (the start of the step) and `(f, τ)`
//! the applied world-frame force and torque about the centre of mass.
//! Contact impulses are added to the right-hand side by the contact
//! backends. Because `P⁻(ω) = Fᵀ P⁺(ω)` for the step rotation `F = φ(h ω)`,
//! the world-frame angular momentum `P⁻(ω)` at each node is conserved
//! exactly when `τ = 0`; so is the kinetic energy `½ ωᵀ I ω` of the interval
//! velocity (to round-off, see `tests/sim/free_flight.rs`). The gyroscopic
//! term is therefore implicit, never an explicit `ω × I ω` force.
//!
//! The linear part is symplectic Euler, so a projectile follows the discrete
//! closed form `p_n = p₀ + n h ṗ₀ + h² g n(n + 1)/2` exactly.
//!
//! Only lone free bodies ([`super::Model::lone_free_bodies`]: free roots
//! without children) are handled; the entries of articulated bodies (the
//! base of a floating-base robot included) are left untouched (zero in `mass_matrix`),
//! use `dynamics::{rnea, crba, aba}` for those.

use super::{Data, Model};
use crate::Scalar;
use crate::math::{DVec, Mat3, Quat, RetractionError, Vec3, integrate::phi_scalar, skew, so3};

/// Failures of the free-body dynamics.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DynamicsError {
    /// The step rotates a body by 180° or more.
    #[error("body {body}: {source}")]
    Retraction {
        /// Index of the body.
        body: usize,
        /// The retraction's error.
        source: RetractionError,
    },
    /// Newton's method on the rotational equations did not converge.
    #[error(
        "body {body}: rotational Newton iteration did not converge in {iterations} iterations (residual {residual:e})"
    )]
    NoConvergence {
        /// Index of the body.
        body: usize,
        /// Iterations taken.
        iterations: usize,
        /// Final residual norm.
        residual: f64,
    },
}

/// Rotation of body `i` as a quaternion.
#[inline]
pub fn orientation<T: Scalar>(q: &DVec<T>, idx_q: usize) -> Quat<T> {
    Quat::new(q[idx_q + 3], q[idx_q + 4], q[idx_q + 5], q[idx_q + 6])
}

/// Position of the body origin.
#[inline]
pub fn position<T: Scalar>(q: &DVec<T>, idx_q: usize) -> Vec3<T> {
    Vec3::new(q[idx_q], q[idx_q + 1], q[idx_q + 2])
}

/// World-frame rotational inertia `R I_b Rᵀ` of body `i` at `q`.
pub fn world_inertia<T: Scalar>(model: &Model<T>, i: usize, q: &DVec<T>) -> Mat3<T> {
    let b = &model.bodies[i];
    let r = so3::to_matrix(&orientation(q, b.idx_q));
    r * b.inertia.inertia * r.transpose()
}

/// Fills `data.mass_matrix` with `M(q)` (block diagonal for free bodies).
pub fn mass_matrix<T: Scalar>(model: &Model<T>, data: &mut Data<T>, q: &DVec<T>) {
    data.mass_matrix.fill(T::zero());
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        for d in 0..3 {
            data.mass_matrix[(k + d, k + d)] = b.inertia.mass;
        }
        let iw = world_inertia(model, i, q);
        data.mass_matrix
            .fixed_view_mut::<3, 3>(k + 3, k + 3)
            .copy_from(&iw);
    }
}

/// Fills `data.bias` with `c(q, v) = (−m g, ω × I ω)` per body.
pub fn bias_forces<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    gravity: &Vec3<T>,
) {
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let lin = -gravity * b.inertia.mass;
        let w = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
        let iw = world_inertia(model, i, q);
        let gyro = w.cross(&(iw * w));
        data.bias.fixed_rows_mut::<3>(k).copy_from(&lin);
        data.bias.fixed_rows_mut::<3>(k + 3).copy_from(&gyro);
    }
}

/// Kinetic energy `½ mᵢ‖ṗᵢ‖² + ½ ωᵢᵀ Iᵢ ωᵢ` summed over the lone free bodies (robots: `crba::kinetic_energy`).
pub fn kinetic_energy<T: Scalar>(model: &Model<T>, q: &DVec<T>, v: &DVec<T>) -> T {
    let half = T::from_re(0.5);
    let mut e = T::zero();
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let pd = Vec3::new(v[k], v[k + 1], v[k + 2]);
        let w = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
        e += pd.norm_squared() * b.inertia.mass * half
            + w.dot(&(world_inertia(model, i, q) * w)) * half;
    }
    e
}

/// `P±(ω)` of one body (world frame), `sign = ±1`.
fn discrete_momentum_rot<T: Scalar>(
    iw: &Mat3<T>,
    w: &Vec3<T>,
    h: T,
    sign: f64,
) -> Result<Vec3<T>, RetractionError> {
    let c = phi_scalar(w, h)?;
    let iww = iw * w;
    Ok(iww * c + w.cross(&iww) * (h * T::from_re(0.5 * sign)))
}

/// Total world-frame linear and angular momentum (about the world origin)
/// of the lone free bodies at a node, in the discrete sense conserved by
/// the integrator (robots: `crba::spatial_momentum`):
/// `Σ m ṗ` and `Σ (p × m ṗ + P⁻(ω))`, where `v` is the velocity of the step
/// that ended at `q`.
pub fn discrete_momentum<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    h: T,
) -> Result<(Vec3<T>, Vec3<T>), DynamicsError> {
    let mut lin = Vec3::zeros();
    let mut ang = Vec3::zeros();
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let p = position(q, b.idx_q);
        let mpd = Vec3::new(v[k], v[k + 1], v[k + 2]) * b.inertia.mass;
        let w = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
        let iw = world_inertia(model, i, q);
        let pm = discrete_momentum_rot(&iw, &w, h, -1.0)
            .map_err(|source| DynamicsError::Retraction { body: i, source })?;
        lin += mpd;
        ang += p.cross(&mpd) + pm;
    }
    Ok((lin, ang))
}

/// Residual of the discrete dynamics without contact (see the module docs),
/// `r(v⁺) ∈ ℝ^nv`. `u` holds the applied world-frame force and torque of
/// each body (6 per body).
#[allow(clippy::too_many_arguments)]
pub fn momentum_residual<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    v_next: &DVec<T>,
    u: &DVec<T>,
    gravity: &Vec3<T>,
    h: T,
    out: &mut DVec<T>,
) -> Result<(), DynamicsError> {
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let vn = nalgebra::Vector6::from_fn(|d, _| v_next[k + d]);
        let r = body_residual(model, i, q, v, &vn, u, gravity, h)?;
        out.fixed_rows_mut::<6>(k).copy_from(&r);
    }
    Ok(())
}

/// The six rows of [`momentum_residual`] for the free body `i` at its next
/// velocity `v_next` (linear, angular; world frame). Shared by every
/// backend that builds its own per-body blocks.
#[allow(clippy::too_many_arguments)]
pub fn body_residual<T: Scalar>(
    model: &Model<T>,
    i: usize,
    q: &DVec<T>,
    v: &DVec<T>,
    v_next: &nalgebra::Vector6<T>,
    u: &DVec<T>,
    gravity: &Vec3<T>,
    h: T,
) -> Result<nalgebra::Vector6<T>, DynamicsError> {
    let b = &model.bodies[i];
    let k = b.idx_v;
    let m = b.inertia.mass;
    let mut out = nalgebra::Vector6::zeros();
    for d in 0..3 {
        out[d] = (v_next[d] - v[k + d]) * m - (gravity[d] * m + u[k + d]) * h;
    }
    let iw = world_inertia(model, i, q);
    let w0 = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
    let w1 = Vec3::new(v_next[3], v_next[4], v_next[5]);
    let err = |source| DynamicsError::Retraction { body: i, source };
    let r = discrete_momentum_rot(&iw, &w1, h, 1.0).map_err(err)?
        - discrete_momentum_rot(&iw, &w0, h, -1.0).map_err(err)?
        - Vec3::new(u[k + 3], u[k + 4], u[k + 5]) * h;
    out.fixed_rows_mut::<3>(3).copy_from(&r);
    Ok(out)
}

/// The 3×3 block `∂P⁺/∂ω` at `ω` (world frame).
pub fn rotational_jacobian<T: Scalar>(
    iw: &Mat3<T>,
    w: &Vec3<T>,
    h: T,
) -> Result<Mat3<T>, RetractionError> {
    let c = phi_scalar(w, h)?;
    let iww = iw * w;
    // ∂c/∂ω = −(h²/4) ω / c
    let dc = w * (-(h * h * T::from_re(0.25)) / c);
    let half_h = h * T::from_re(0.5);
    Ok(iw * c + iww * dc.transpose() + (skew(w) * iw - skew(&iww)) * half_h)
}

/// Parameters of the free-flight Newton solve.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewtonParams {
    /// Stop when the primal Newton step's ∞-norm falls below
    /// `tolerance · (1 + ‖ω‖∞)`. Default 1e-14 (raised to 8 ε of the
    /// scalar type when that is larger, e.g. for `f32`).
    pub tolerance: f64,
    /// Iteration cap. Default 50.
    pub max_iterations: usize,
}

impl Default for NewtonParams {
    fn default() -> Self {
        NewtonParams {
            tolerance: 1e-14,
            max_iterations: 50,
        }
    }
}

/// Solves the contact-free discrete dynamics for `v⁺`, body by body.
///
/// The linear part is explicit; the rotational part `P⁺(ω⁺) = P⁻(ω) + hτ`
/// is solved by Newton's method in `T`, with convergence decided on primal
/// values and one extra iteration after convergence so that the derivative
/// parts of a dual `T` are converged as well (Newton's map is exact for
/// them). Returns `v⁺` and the largest iteration count.
pub fn free_flight_velocity<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    u: &DVec<T>,
    gravity: &Vec3<T>,
    h: T,
    params: &NewtonParams,
) -> Result<(DVec<T>, usize), DynamicsError> {
    let mut v_next = DVec::zeros(model.nv);
    let iters = free_flight_velocity_into(model, q, v, u, gravity, h, params, &mut v_next)?;
    Ok((v_next, iters))
}

/// [`free_flight_velocity`] written into `v_next` (resized to `nv` only
/// when its length differs; the coordinates of bodies that are not lone
/// free bodies are set to zero). Returns the largest iteration count.
#[allow(clippy::too_many_arguments)]
pub fn free_flight_velocity_into<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    u: &DVec<T>,
    gravity: &Vec3<T>,
    h: T,
    params: &NewtonParams,
    v_next: &mut DVec<T>,
) -> Result<usize, DynamicsError> {
    if v_next.len() != model.nv {
        *v_next = DVec::zeros(model.nv);
    } else {
        v_next.fill(T::zero());
    }
    let mut max_iters = 0;
    // A tolerance below the scalar's resolution (f32) cannot be met.
    let tolerance = params.tolerance.max(8.0 * T::default_epsilon().re());
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let k = b.idx_v;
        let m = b.inertia.mass;
        for d in 0..3 {
            v_next[k + d] = v[k + d] + (gravity[d] + u[k + d] / m) * h;
        }
        let err = |source| DynamicsError::Retraction { body: i, source };
        let iw = world_inertia(model, i, q);
        let w0 = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
        let tau = Vec3::new(u[k + 3], u[k + 4], u[k + 5]);
        let target = discrete_momentum_rot(&iw, &w0, h, -1.0).map_err(err)? + tau * h;
        let mut w = w0;
        let mut converged_at = None;
        let mut res_norm = f64::INFINITY;
        let mut it = 0;
        while it < params.max_iterations {
            it += 1;
            let r = discrete_momentum_rot(&iw, &w, h, 1.0).map_err(err)? - target;
            res_norm = r.map(|x| x.re()).amax();
            // converged on the residual too: near the retraction's limit
            // (h‖ω‖/2 → 1) the Jacobian is ill-conditioned and the step
            // stalls at rounding level above the step tolerance while the
            // momentum balance already holds to the last bits
            let pscale = target
                .map(|x| x.re())
                .amax()
                .max((iw * w).map(|x| x.re()).amax());
            if converged_at.is_none() && res_norm <= 8.0 * T::default_epsilon().re() * pscale {
                converged_at = Some(it);
            }
            let jac = rotational_jacobian(&iw, &w, h).map_err(err)?;
            let Some(dw) = jac.lu().solve(&r) else {
                break;
            };
            w -= dw;
            if converged_at.is_some_and(|c| c < it) {
                break;
            }
            let scale = 1.0 + w.map(|x| x.re()).amax();
            if dw.map(|x| x.re()).amax() <= tolerance * scale {
                converged_at = Some(it);
            }
        }
        let Some(iters) = converged_at else {
            return Err(DynamicsError::NoConvergence {
                body: i,
                iterations: it,
                residual: res_norm,
            });
        };
        max_iters = max_iters.max(iters);
        v_next.fixed_rows_mut::<3>(k + 3).copy_from(&w);
    }
    Ok(max_iters)
}

/// `q⁺ = q ⊕ h v` for every free body.
pub fn integrate_model<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    h: T,
) -> Result<DVec<T>, DynamicsError> {
    let mut out = DVec::zeros(0);
    integrate_model_into(model, q, v, h, &mut out)?;
    Ok(out)
}

/// [`integrate_model`] written into `out` (its storage reused when the
/// length agrees; models with articulated joints allocate).
pub fn integrate_model_into<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    h: T,
    out: &mut DVec<T>,
) -> Result<(), DynamicsError> {
    if super::articulated::has_articulated(model) {
        *out = super::configuration::integrate(model, q, v, h)
            .map_err(|source| DynamicsError::Retraction { body: 0, source })?;
        return Ok(());
    }
    if out.len() == q.len() {
        out.copy_from(q);
    } else {
        *out = q.clone();
    }
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            continue;
        }
        let qi = crate::math::integrate(
            &q.as_slice()[b.idx_q..b.idx_q + 7],
            &v.as_slice()[b.idx_v..b.idx_v + 6],
            h,
        )
        .map_err(|source| DynamicsError::Retraction { body: i, source })?;
        out.as_mut_slice()[b.idx_q..b.idx_q + 7].copy_from_slice(&qi);
    }
    Ok(())
}

/// Tangent difference `d` with `q1 = q0 ⊕ d` (per body, see
/// [`crate::math::difference`]).
pub fn difference_model<T: Scalar>(model: &Model<T>, q0: &DVec<T>, q1: &DVec<T>) -> DVec<T> {
    if super::articulated::has_articulated(model) {
        return super::configuration::difference(model, q0, q1);
    }
    let mut out = DVec::zeros(model.nv);
    let lone = model.lone_free_bodies();
    for (b, _) in model.bodies.iter().zip(lone.iter()).filter(|&(_, &l)| l) {
        let d = crate::math::difference(
            &q0.as_slice()[b.idx_q..b.idx_q + 7],
            &q1.as_slice()[b.idx_q..b.idx_q + 7],
        );
        out.as_mut_slice()[b.idx_v..b.idx_v + 6].copy_from_slice(&d);
    }
    out
}
