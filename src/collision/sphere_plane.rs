//! Sphere (a) against a half-space (b).

use super::Contact;
use crate::Scalar;
use crate::math::Vec3;

/// Sphere of centre `c` and radius `r` against the half-space
/// `n · x ≤ d` (`n` unit, world frame).
///
/// `gap = n · c − d − r`, `point_a = c − r n`, `point_b = c − (n · c − d) n`.
///
/// ```
/// use dualsim::collision::sphere_plane::sphere_plane;
/// use dualsim::math::Vec3;
/// let c = sphere_plane(&Vec3::new(1.0, 0.0, 2.0), 0.5, &Vec3::z(), 0.0);
/// assert_eq!(c.gap, 1.5);
/// assert_eq!(c.point_b, Vec3::new(1.0, 0.0, 0.0));
/// ```
pub fn sphere_plane<T: Scalar>(c: &Vec3<T>, r: T, n: &Vec3<T>, d: T) -> Contact<T> {
    let height = n.dot(c) - d;
    Contact {
        gap: height - r,
        point_a: c - n * r,
        point_b: c - n * height,
        normal: *n,
    }
}
