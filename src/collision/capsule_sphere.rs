//! Capsule (a) against sphere (b).

use super::Contact;
use super::sphere_sphere::sphere_sphere;
use crate::Scalar;
use crate::math::Vec3;
use crate::scalar::clamp01;

/// Parameter `t ∈ [0, 1]` of the point of segment `[e0, e1]` closest to `p`
/// (clamped on primal values; a degenerate segment gives 0).
pub fn closest_on_segment<T: Scalar>(e0: &Vec3<T>, e1: &Vec3<T>, p: &Vec3<T>) -> T {
    let d = e1 - e0;
    let dd = d.norm_squared();
    if dd.re() <= 0.0 {
        return T::zero();
    }
    clamp01((p - e0).dot(&d) / dd)
}

/// Capsule `([e0, e1], ra)` against sphere `(cb, rb)`: the closest point of
/// the segment to `cb` as a sphere of radius `ra`, then [`sphere_sphere`].
///
/// ```
/// use dualsim::collision::capsule_sphere::capsule_sphere;
/// use dualsim::math::Vec3;
/// let c = capsule_sphere(&Vec3::new(-1.0, 0.0, 0.0), &Vec3::new(1.0, 0.0, 0.0), 0.5,
///                        &Vec3::new(0.3, 0.0, -2.0), 0.5);
/// assert!((c.gap - 1.0_f64).abs() < 1e-15);
/// assert!((c.normal - Vec3::new(0.0, 0.0, 1.0)).norm() < 1e-15);
/// ```
pub fn capsule_sphere<T: Scalar>(
    e0: &Vec3<T>,
    e1: &Vec3<T>,
    ra: T,
    cb: &Vec3<T>,
    rb: T,
) -> Contact<T> {
    let t = closest_on_segment(e0, e1, cb);
    let c = e0 + (e1 - e0) * t;
    sphere_sphere(&c, ra, cb, rb)
}
