//! Contact frames: an orthonormal tangent basis for a unit normal.

use crate::math::Vec3;
use crate::scalar::safe_normalize;
use crate::Scalar;

/// Two unit tangents `(t1, t2)` with `(t1, t2, n)` a right-handed
/// orthonormal frame. `t1 = normalize(e × n)` where `e` is the world axis
/// least aligned with `n` (chosen on primal values, so the frame is smooth
/// in `n` away from the switching surfaces).
///
/// ```
/// use dualsim::collision::tangent_basis;
/// use dualsim::math::Vec3;
/// let n = Vec3::new(0.0, 0.0, 1.0_f64);
/// let (t1, t2) = tangent_basis(&n);
/// assert!(t1.dot(&n).abs() < 1e-15 && t2.dot(&n).abs() < 1e-15);
/// assert!((t1.cross(&t2) - n).norm() < 1e-15);
/// ```
pub fn tangent_basis<T: Scalar>(n: &Vec3<T>) -> (Vec3<T>, Vec3<T>) {
    let a = n.map(|x| x.re().abs());
    let mut e = Vec3::zeros();
    let k = if a.x <= a.y && a.x <= a.z {
        0
    } else if a.y <= a.z {
        1
    } else {
        2
    };
    e[k] = T::one();
    let (t1, _) = safe_normalize(&e.cross(n))
        .expect("a unit normal is never parallel to its least aligned axis");
    let t2 = n.cross(&t1);
    (t1, t2)
}
