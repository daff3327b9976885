//! Cone operations of the interior point: the nonnegative orthant and the
//! second-order (Lorentz) cone `Q³ = {(x₀, x₁) : x₀ ≥ ‖x₁‖}`.
//!
//! * Jordan product `x ∘ y = (xᵀy, x₀ y₁ + y₀ x₁)` with identity
//!   `e = (1, 0, 0)`; its linearization is `x ∘ dy + dx ∘ y =
//!   Arw(x) dy + Arw(y) dx` with the arrow matrix
//!   `Arw(x) = [[x₀, x₁ᵀ], [x₁, x₀ I]]`.
//! * Fraction to the boundary: the largest `α ∈ (0, ∞]` with
//!   `x + α dx` in the cone (for `Q³` the smallest positive root of
//!   `(x₀ + α d₀)² − ‖x₁ + α d₁‖² = 0`), computed on primal values because
//!   it only chooses a step length.

use crate::Scalar;
use crate::math::Vec3;
use nalgebra::Matrix3;

/// Jordan product of two 3-vectors of `Q³`.
///
/// ```
/// use dualsim::math::cone::jordan;
/// use dualsim::math::Vec3;
/// let e = Vec3::new(1.0, 0.0, 0.0);
/// let x = Vec3::new(2.0, 0.5, -1.0);
/// assert_eq!(jordan(&e, &x), x);
/// ```
#[inline]
pub fn jordan<T: Scalar>(x: &Vec3<T>, y: &Vec3<T>) -> Vec3<T> {
    Vec3::new(
        x.dot(y),
        x[0] * y[1] + y[0] * x[1],
        x[0] * y[2] + y[0] * x[2],
    )
}

/// Arrow matrix `Arw(x)` with `Arw(x) y = x ∘ y`.
///
/// ```
/// use dualsim::math::cone::{arrow, jordan};
/// use dualsim::math::Vec3;
/// let (x, y) = (Vec3::new(2.0, 0.5, -1.0), Vec3::new(1.5, 0.3, 0.2));
/// assert!((arrow(&x) * y - jordan(&x, &y)).norm() < 1e-15);
/// ```
#[inline]
pub fn arrow<T: Scalar>(x: &Vec3<T>) -> Matrix3<T> {
    let z = T::zero();
    Matrix3::new(x[0], x[1], x[2], x[1], x[0], z, x[2], z, x[0])
}

/// Largest step `α` (possibly `∞`) keeping `x + α dx ≥ 0` for a scalar
/// `x > 0`.
///
/// ```
/// use dualsim::math::cone::orthant_step;
/// assert_eq!(orthant_step(1.0, -4.0), 0.25);
/// assert_eq!(orthant_step(1.0, 4.0), f64::INFINITY);
/// ```
#[inline]
pub fn orthant_step(x: f64, dx: f64) -> f64 {
    if dx < 0.0 { -x / dx } else { f64::INFINITY }
}

/// Largest step `α` (possibly `∞`) keeping `x + α dx ∈ Q³` for `x` in the
/// interior of `Q³`.
///
/// ```
/// use dualsim::math::cone::soc_step;
/// // From (1, 0, 0) towards (−1, 0, 0) the cone is left at α = 1/2.
/// assert!((soc_step([1.0, 0.0, 0.0], [-2.0, 0.0, 0.0]) - 0.5).abs() < 1e-15);
/// // Towards (0, 1, 0): (1)² = α²  →  α = 1.
/// assert!((soc_step([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]) - 1.0).abs() < 1e-15);
/// ```
pub fn soc_step(x: [f64; 3], d: [f64; 3]) -> f64 {
    // f(α) = a α² + 2 b α + c, c > 0.
    let a = d[0] * d[0] - d[1] * d[1] - d[2] * d[2];
    let b = x[0] * d[0] - x[1] * d[1] - x[2] * d[2];
    let c = x[0] * x[0] - x[1] * x[1] - x[2] * x[2];
    let quad_root = if a.abs() <= 1e-300 {
        if b < 0.0 {
            -c / (2.0 * b)
        } else {
            f64::INFINITY
        }
    } else {
        let disc = b * b - a * c;
        if a > 0.0 {
            if b >= 0.0 || disc < 0.0 {
                f64::INFINITY
            } else {
                // smallest positive root, written to avoid cancellation
                c / (-b + disc.sqrt())
            }
        } else {
            // a < 0: one positive root
            (-b - disc.max(0.0).sqrt()) / a
        }
    };
    // The scalar part must stay positive as well.
    quad_root.min(orthant_step(x[0], d[0]))
}

/// Degree-weighted inner product used by the centering rule:
/// `Σ zᵢ sᵢ` over orthant pairs plus `Σ zᵀ s` over cone pairs.
#[inline]
pub fn soc_dot<T: Scalar>(z: &Vec3<T>, s: &Vec3<T>) -> f64 {
    z.dot(s).re()
}

/// Nesterov–Todd scaling of a pair `z, s ∈ int Q³` (Vandenberghe, *The
/// CVXOPT linear and quadratic cone program solvers*, §4): the symmetric
/// `W` with `W s = W⁻¹ z = λ`. Returns `(W, W⁻¹, λ)`.
///
/// ```
/// use dualsim::math::cone::nt_scaling;
/// use dualsim::math::Vec3;
/// let (z, s) = (Vec3::new(2.0, 0.5, -1.0), Vec3::new(1.5, 0.3, 0.2));
/// let (w, winv, lambda) = nt_scaling(&z, &s);
/// assert!((w * s - lambda).norm() < 1e-12);
/// assert!((winv * z - lambda).norm() < 1e-12);
/// ```
pub fn nt_scaling<T: Scalar>(z: &Vec3<T>, s: &Vec3<T>) -> (Matrix3<T>, Matrix3<T>, Vec3<T>) {
    let det = |x: &Vec3<T>| x[0] * x[0] - x[1] * x[1] - x[2] * x[2];
    let (ds, dz) = (det(s), det(z));
    let sb = s / ds.sqrt();
    let zb = z / dz.sqrt();
    let jz = Vec3::new(zb[0], -zb[1], -zb[2]);
    let gamma = ((T::one() + zb.dot(&sb)) * T::from_re(0.5)).sqrt();
    let two = T::from_re(2.0);
    let wb = (sb + jz) / (gamma * two);
    // v = (w̄ + e) / √(2 (w̄₀ + 1)), W = η (2 v vᵀ − J)
    let mut v = wb;
    v[0] += T::one();
    let v = v / ((wb[0] + T::one()) * two).sqrt();
    let eta = (ds / dz).sqrt().sqrt();
    let j = Matrix3::from_diagonal(&Vec3::new(T::one(), -T::one(), -T::one()));
    // This matrix maps z to λ and its inverse maps s to λ (CVXOPT's roles
    // of s and z are exchanged with respect to ours).
    let m = (v * v.transpose() * two - j) * eta;
    let jv = j * v;
    let minv = (jv * jv.transpose() * two - j) / eta;
    let lambda = m * z;
    (minv, m, lambda)
}

/// The central point of a second-order cone pair `z = (z₀, z_t)`,
/// `s = (s₀, s_t)` in `Q³` with `z₀ > 0` and `s_t = (s₁, s₂)` given and
/// `κ > 0`: `z ∘ s = κ e` gives `z_t = −z₀ s_t / s₀` and
/// `s₀² − (κ/z₀) s₀ − ‖s_t‖² = 0`; returns `(s₀, z₁, z₂)` for the positive
/// root. Both points are strictly inside the cone, and the map is the
/// inverse of the central condition: a central pair's own `z₀` and `s_t`
/// give it back. `ipm`'s warm start recentres a contact's friction pair
/// (`z = β`, `s = η`) with it. `None` unless `z₀ > 0`, `κ > 0` and `s_t`
/// finite (the primal values): no central point exists there.
///
/// ```
/// use dualsim::math::cone::soc_central_point;
/// let (s0, z1, z2) = soc_central_point(0.5f64, 0.3, 0.4, 1e-2).unwrap();
/// assert!((s0 * 0.5 + z1 * 0.3 + z2 * 0.4 - 1e-2).abs() < 1e-15);
/// assert!(soc_central_point(0.0f64, 0.3, 0.4, 1e-2).is_none());
/// assert!(soc_central_point(0.5f64, 0.3, 0.4, 0.0).is_none());
/// ```
pub fn soc_central_point<T: Scalar>(z0: T, s1: T, s2: T, kappa: T) -> Option<(T, T, T)> {
    let finite = s1.re().is_finite() && s2.re().is_finite();
    if !(z0.re() > 0.0 && kappa.re() > 0.0 && finite && z0.re().is_finite()) {
        return None;
    }
    let a = kappa / z0;
    let s0 = (a + (a * a + T::from_re(4.0) * (s1 * s1 + s2 * s2)).sqrt()) * T::from_re(0.5);
    if !(s0.re() > 0.0 && s0.re().is_finite()) {
        return None;
    }
    Some((s0, -z0 * s1 / s0, -z0 * s2 / s0))
}
