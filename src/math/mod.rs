//! Short aliases and the rotation / rigid-motion algebra, all generic over
//! [`Scalar`].
//!
//! * [`so3`]: unit quaternions `[w, x, y, z]`, rotation matrices, the
//!   exponential and logarithm maps (zero-safe, Taylor branches near zero);
//! * [`se3`]: rigid poses (compose, act, inverse, exp, log);
//! * [`spatial`]: spatial motion and force vectors and rigid-body inertia;
//! * [`integrate`](mod@integrate): the free-joint retraction `q ⊕ h v` used by the time
//!   stepper and its inverse `difference`.

pub mod cone;
pub mod integrate;
pub mod se3;
pub mod so3;
pub mod spatial;

pub use integrate::{RetractionError, difference, integrate};
pub use se3::Pose;

use crate::Scalar;

/// 3-vector.
pub type Vec3<T> = nalgebra::Vector3<T>;
/// 6-vector (a twist or a wrench: linear part first).
pub type Vec6<T> = nalgebra::Vector6<T>;
/// 3×3 matrix.
pub type Mat3<T> = nalgebra::Matrix3<T>;
/// 6×6 matrix.
pub type Mat6<T> = nalgebra::Matrix6<T>;
/// Quaternion (storage `[x, y, z, w]` as in nalgebra; build with
/// `Quat::new(w, x, y, z)`).
pub type Quat<T> = nalgebra::Quaternion<T>;
/// Dynamic vector.
pub type DVec<T> = nalgebra::DVector<T>;
/// Dynamic matrix.
pub type DMat<T> = nalgebra::DMatrix<T>;

/// The cross-product matrix `[a]×` with `[a]× b = a × b`.
///
/// ```
/// use dualsim::math::{skew, Vec3};
/// let a = Vec3::new(1.0, 2.0, 3.0);
/// let b = Vec3::new(-1.0, 0.5, 2.0);
/// assert_eq!(skew(&a) * b, a.cross(&b));
/// ```
#[inline]
pub fn skew<T: Scalar>(a: &Vec3<T>) -> Mat3<T> {
    let z = T::zero();
    Mat3::new(z, -a.z, a.y, a.z, z, -a.x, -a.y, a.x, z)
}

/// Converts a constant 3-vector into any scalar.
#[inline]
pub fn vec3<T: Scalar>(x: [f64; 3]) -> Vec3<T> {
    Vec3::new(T::from_re(x[0]), T::from_re(x[1]), T::from_re(x[2]))
}

/// Primal parts of a vector.
#[inline]
pub fn re_vec<T: Scalar>(x: &DVec<T>) -> DVec<f64> {
    x.map(|e| e.re())
}
