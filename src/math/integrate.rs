//! The free-joint retraction `q ⊕ h v` and its inverse.
//!
//! A free joint's configuration is `q = (p, r)`: position `p ∈ ℝ³` and unit
//! quaternion `r = [w, x, y, z]`; its velocity is `v = (ṗ, ω)` with both the
//! linear and the angular velocity in the world frame. One step of length
//! `h` maps
//!
//! ```text
//! p⁺ = p + h ṗ
//! r⁺ = φ(h ω) ⊗ r,      φ(x) = [√(1 − ‖x‖²/4), x/2]
//! ```
//!
//! φ is the quaternion "half-step" map used by Dojo's variational
//! integrator: with it the discrete Euler–Lagrange equations of a rigid body
//! are explicit in closed form (see `dynamics::free`) and conserve the
//! world-frame angular momentum and the kinetic energy exactly. It requires
//! `‖h ω‖ < 2`, i.e. a rotation of less than 180° per step; beyond that
//! [`integrate`] returns [`RetractionError::RotationTooLarge`].
//!
//! Because φ(x) rotates about x, the world-frame and body-frame angular
//! velocities of a step are related by the rotation at either end of it.
//!
//! [`difference`] is the exact inverse: `difference(q, integrate(q, v, h)) / h = v`.

use super::{Quat, Vec3};
use crate::Scalar;

/// The step's rotation is too large for the retraction.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum RetractionError {
    /// ‖h ω‖ ≥ 2 (a rotation of 180° or more in one step).
    #[error("rotation of ‖hω‖ = {angle:.3} rad per step is too large (must be < 2)")]
    RotationTooLarge {
        /// ‖h ω‖.
        angle: f64,
    },
}

/// φ(x) = [√(1 − ‖x‖²/4), x/2].
///
/// ```
/// use dualsim::math::{integrate::phi, Vec3};
/// let q = phi(&Vec3::new(0.2_f64, 0.0, 0.0)).unwrap();
/// assert!((q.norm() - 1.0).abs() < 1e-15);
/// ```
pub fn phi<T: Scalar>(x: &Vec3<T>) -> Result<Quat<T>, RetractionError> {
    let a = x * T::from_re(0.5);
    let c2 = T::one() - a.norm_squared();
    if !(c2.re() > 0.0) {
        return Err(RetractionError::RotationTooLarge {
            angle: x.map(|e| e.re()).norm(),
        });
    }
    Ok(Quat::new(c2.sqrt(), a.x, a.y, a.z))
}

/// `c(ω) = √(1 − h²‖ω‖²/4)`, the scalar part of φ(h ω).
pub fn phi_scalar<T: Scalar>(omega: &Vec3<T>, h: T) -> Result<T, RetractionError> {
    let c2 = T::one() - omega.norm_squared() * h * h * T::from_re(0.25);
    if !(c2.re() > 0.0) {
        return Err(RetractionError::RotationTooLarge {
            angle: (omega.map(|e| e.re()).norm() * h.re()),
        });
    }
    Ok(c2.sqrt())
}

/// One free joint: `q ⊕ h v` with `q = [p; r]` (7) and `v = [ṗ; ω]` (6).
///
/// ```
/// use dualsim::math::integrate;
/// let q = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0];
/// let v = [1.0, 0.0, 0.0, 0.0, 0.0, 0.5];
/// let q1 = integrate(&q, &v, 0.1).unwrap();
/// assert!((q1[0] - 0.1_f64).abs() < 1e-15);
/// ```
pub fn integrate<T: Scalar>(q: &[T], v: &[T], h: T) -> Result<[T; 7], RetractionError> {
    assert_eq!(q.len(), 7, "free joint q has 7 coordinates");
    assert_eq!(v.len(), 6, "free joint v has 6 coordinates");
    let r = Quat::new(q[3], q[4], q[5], q[6]);
    let w = Vec3::new(v[3], v[4], v[5]) * h;
    let r1 = phi(&w)? * r;
    Ok([
        q[0] + h * v[0],
        q[1] + h * v[1],
        q[2] + h * v[2],
        r1.w,
        r1.i,
        r1.j,
        r1.k,
    ])
}

/// Inverse of [`integrate`] with `h = 1`: the tangent `d` (6) such that
/// `integrate(q0, d, 1) = q1` (up to the sign of the quaternion).
///
/// ```
/// use dualsim::math::{difference, integrate};
/// let q: [f64; 7] = [0.5, 0.0, 1.0, 0.8, 0.6, 0.0, 0.0];
/// let v: [f64; 6] = [1.0, 2.0, 3.0, 0.1, -0.2, 0.3];
/// let d = difference(&q, &integrate(&q, &v, 0.5).unwrap());
/// for i in 0..6 { assert!((d[i] - 0.5 * v[i]).abs() < 1e-14); }
/// ```
pub fn difference<T: Scalar>(q0: &[T], q1: &[T]) -> [T; 6] {
    assert_eq!(q0.len(), 7, "free joint q has 7 coordinates");
    assert_eq!(q1.len(), 7, "free joint q has 7 coordinates");
    let r0 = Quat::new(q0[3], q0[4], q0[5], q0[6]);
    let r1 = Quat::new(q1[3], q1[4], q1[5], q1[6]);
    let mut d = r1 * r0.conjugate();
    if d.w.re() < 0.0 {
        d = -d;
    }
    let two = T::from_re(2.0);
    [
        q1[0] - q0[0],
        q1[1] - q0[1],
        q1[2] - q0[2],
        d.i * two,
        d.j * two,
        d.k * two,
    ]
}
