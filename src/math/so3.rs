//! Rotations as unit quaternions `q = [w, x, y, z]` (Hamilton convention,
//! `q ⊗ v ⊗ q*` rotates a vector from the body frame to the world frame).
//!
//! The exponential map of a rotation vector ω (angle θ = ‖ω‖) is
//!
//! ```text
//! exp(ω) = [cos(θ/2), sin(θ/2)/θ · ω]
//! ```
//!
//! and the logarithm of `q = [w, u]` (w ≥ 0 after fixing the sign) is
//! `ω = 2 atan2(‖u‖, w)/‖u‖ · u`. Both coefficients are analytic functions
//! of θ² (resp. ‖u‖²) and are evaluated with Taylor polynomials near zero,
//! so first and second derivatives at exactly zero are the analytic limits
//! (d exp/dω = [0, ½ I] at ω = 0, d log/du = 2 I at the identity).

use super::{Mat3, Quat, Vec3, skew};
use crate::scalar::{Scalar, TAYLOR_THRESHOLD_SQ, cosc, horner, sinc};

/// The identity rotation.
#[inline]
pub fn identity<T: Scalar>() -> Quat<T> {
    Quat::new(T::one(), T::zero(), T::zero(), T::zero())
}

/// Hamilton product `a ⊗ b`.
#[inline]
pub fn mul<T: Scalar>(a: &Quat<T>, b: &Quat<T>) -> Quat<T> {
    a * b
}

/// Conjugate (the inverse of a unit quaternion).
#[inline]
pub fn conj<T: Scalar>(q: &Quat<T>) -> Quat<T> {
    q.conjugate()
}

/// Rotates `v` by the unit quaternion `q`: `q ⊗ [0, v] ⊗ q*`.
///
/// ```
/// use dualsim::math::{so3, Vec3};
/// let q = so3::exp(&Vec3::new(0.0, 0.0, std::f64::consts::FRAC_PI_2));
/// let v = so3::rotate(&q, &Vec3::new(1.0, 0.0, 0.0));
/// assert!((v - Vec3::new(0.0, 1.0, 0.0)).norm() < 1e-15);
/// ```
#[inline]
pub fn rotate<T: Scalar>(q: &Quat<T>, v: &Vec3<T>) -> Vec3<T> {
    // v + 2w (u × v) + 2 u × (u × v)
    let u = q.imag();
    let t = u.cross(v) * T::from_re(2.0);
    v + t * q.w + u.cross(&t)
}

/// Rotates `v` by the inverse of `q`.
#[inline]
pub fn rotate_inv<T: Scalar>(q: &Quat<T>, v: &Vec3<T>) -> Vec3<T> {
    rotate(&q.conjugate(), v)
}

/// Rotation matrix of a unit quaternion.
///
/// ```
/// use dualsim::math::{so3, Vec3};
/// let q = so3::exp(&Vec3::new(0.3, -0.2, 0.5));
/// let v = Vec3::new(1.0, 2.0, 3.0);
/// assert!((so3::to_matrix(&q) * v - so3::rotate(&q, &v)).norm() < 1e-14);
/// ```
pub fn to_matrix<T: Scalar>(q: &Quat<T>) -> Mat3<T> {
    let two = T::from_re(2.0);
    let u = q.imag();
    let s = skew(&u);
    Mat3::identity() + s * (q.w * two) + s * s * two
}

/// Exponential map: the unit quaternion rotating by ‖ω‖ about ω/‖ω‖.
///
/// ```
/// use dualsim::math::{so3, Vec3};
/// let q = so3::exp(&Vec3::new(0.0_f64, 0.0, 0.0));
/// assert_eq!(q.w, 1.0);
/// ```
pub fn exp<T: Scalar>(omega: &Vec3<T>) -> Quat<T> {
    // cos(θ/2) = 1 - 2·cosc(θ²)·(θ/2)²·… ; use half-angle φ = θ/2, φ² = θ²/4.
    let phi2 = omega.norm_squared() * T::from_re(0.25);
    let c = cos_of_sq(phi2);
    // sin(θ/2)/θ = ½ sin(φ)/φ
    let s = sinc(phi2) * T::from_re(0.5);
    let v = omega * s;
    Quat::new(c, v.x, v.y, v.z)
}

/// cos(√t) with exact derivatives at t = 0.
#[inline]
pub fn cos_of_sq<T: Scalar>(t: T) -> T {
    if t.re() < TAYLOR_THRESHOLD_SQ {
        horner(t, &[1.0, -0.5, 1.0 / 24.0, -1.0 / 720.0, 1.0 / 40320.0])
    } else {
        t.sqrt().cos()
    }
}

/// Logarithm map: the rotation vector ω with `exp(ω) = ±q`, ‖ω‖ ≤ π.
///
/// ```
/// use dualsim::math::{so3, Vec3};
/// let w = Vec3::new(0.4, -1.1, 0.7);
/// assert!((so3::log(&so3::exp(&w)) - w).norm() < 1e-14);
/// ```
pub fn log<T: Scalar>(q: &Quat<T>) -> Vec3<T> {
    // Fix the sign so that w >= 0 (shortest rotation).
    let q = if q.w.re() < 0.0 { -*q } else { *q };
    let u = q.imag();
    let s2 = u.norm_squared();
    let w = q.w;
    // ω = f · u with f = 2 atan2(s, w)/s.
    let f = if s2.re() < TAYLOR_THRESHOLD_SQ && w.re() > 0.5 {
        // atan(x)/x = 1 - x²/3 + x⁴/5 - x⁶/7 + x⁸/9, x = s/w, x² = s²/w²
        let x2 = s2 / (w * w);
        horner(
            x2,
            &[
                1.0,
                -1.0 / 3.0,
                1.0 / 5.0,
                -1.0 / 7.0,
                1.0 / 9.0,
                -1.0 / 11.0,
            ],
        ) * T::from_re(2.0)
            / w
    } else {
        let s = s2.sqrt();
        T::atan2(s, w) * T::from_re(2.0) / s
    };
    u * f
}

/// Rotation matrix exp(\[ω\]×) by Rodrigues' formula (zero-safe).
///
/// ```
/// use dualsim::math::{so3, Vec3};
/// let w = Vec3::new(0.1, 0.2, 0.3);
/// let r = so3::exp_matrix(&w);
/// assert!((r - so3::to_matrix(&so3::exp(&w))).norm() < 1e-15);
/// ```
pub fn exp_matrix<T: Scalar>(omega: &Vec3<T>) -> Mat3<T> {
    let t = omega.norm_squared();
    let s = skew(omega);
    Mat3::identity() + s * sinc(t) + s * s * cosc(t)
}

/// Normalizes a quaternion (its primal norm must be positive).
#[inline]
pub fn normalize<T: Scalar>(q: &Quat<T>) -> Quat<T> {
    let n = q.coords.norm();
    Quat::from_vector(q.coords / n)
}

/// Left Jacobian of SO(3): `J(ω) = I + (1 − cos θ)/θ² [ω]× + (θ − sin θ)/θ³ [ω]×²`
/// (zero-safe).
pub fn left_jacobian<T: Scalar>(omega: &Vec3<T>) -> Mat3<T> {
    let t = omega.norm_squared();
    let s = skew(omega);
    Mat3::identity() + s * cosc(t) + s * s * sinc3(t)
}

/// (θ − sin θ)/θ³ as a function of t = θ².
#[inline]
pub fn sinc3<T: Scalar>(t: T) -> T {
    if t.re() < TAYLOR_THRESHOLD_SQ {
        horner(
            t,
            &[
                1.0 / 6.0,
                -1.0 / 120.0,
                1.0 / 5040.0,
                -1.0 / 362880.0,
                1.0 / 39916800.0,
            ],
        )
    } else {
        let th = t.sqrt();
        (th - th.sin()) / (t * th)
    }
}
