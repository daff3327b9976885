//! Sphere (a) against sphere (b).

use super::{Contact, direction_or_z};
use crate::Scalar;
use crate::math::Vec3;

/// Spheres `(ca, ra)` and `(cb, rb)`: `n = (ca − cb)/‖ca − cb‖`,
/// `gap = ‖ca − cb‖ − ra − rb`, `point_a = ca − ra n`, `point_b = cb + rb n`.
/// Coincident centres give `n = +z` (zero-safe).
///
/// ```
/// use dualsim::collision::sphere_sphere::sphere_sphere;
/// use dualsim::math::Vec3;
/// let c = sphere_sphere(&Vec3::new(0.0, 0.0, 2.0), 0.5, &Vec3::zeros(), 0.5);
/// assert_eq!((c.gap, c.normal.z, c.point_a.z, c.point_b.z), (1.0, 1.0, 1.5, 0.5));
/// ```
pub fn sphere_sphere<T: Scalar>(ca: &Vec3<T>, ra: T, cb: &Vec3<T>, rb: T) -> Contact<T> {
    let (n, dist) = direction_or_z(&(ca - cb));
    Contact {
        gap: dist - ra - rb,
        point_a: ca - n * ra,
        point_b: cb + n * rb,
        normal: n,
    }
}
