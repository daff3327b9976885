//! Capsule (a) against a half-space (b): one contact per end sphere.

use super::Contact;
use super::sphere_plane::sphere_plane;
use crate::Scalar;
use crate::math::Vec3;

/// Capsule with segment `[e0, e1]` and radius `r` against `n · x ≤ d`:
/// the two end spheres, each as [`sphere_plane`] (the closest point of a
/// segment to a plane is always attained at an end point, and a capsule
/// lying flat needs both ends to rest stably).
///
/// ```
/// use dualsim::collision::capsule_plane::capsule_plane;
/// use dualsim::math::Vec3;
/// let cs = capsule_plane(&Vec3::new(-1.0, 0.0, 1.0), &Vec3::new(1.0, 0.0, 2.0), 0.5, &Vec3::z(), 0.0);
/// assert_eq!((cs[0].gap, cs[1].gap), (0.5, 1.5));
/// ```
pub fn capsule_plane<T: Scalar>(
    e0: &Vec3<T>,
    e1: &Vec3<T>,
    r: T,
    n: &Vec3<T>,
    d: T,
) -> [Contact<T>; 2] {
    [sphere_plane(e0, r, n, d), sphere_plane(e1, r, n, d)]
}
