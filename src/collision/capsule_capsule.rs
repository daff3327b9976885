//! Capsule (a) against capsule (b).

use super::Contact;
use super::sphere_sphere::sphere_sphere;
use crate::Scalar;
use crate::math::Vec3;
use crate::scalar::clamp01;

/// Closest points of segments `[a0, a1]` and `[b0, b1]` as parameters
/// `(s, t) ∈ [0, 1]²` (Ericson, *Real-Time Collision Detection* §5.1.9;
/// clamps and the parallel case decided on primal values; parallel
/// segments use the point of `b` closest to the midpoint of `a`).
pub fn closest_segment_segment<T: Scalar>(
    a0: &Vec3<T>,
    a1: &Vec3<T>,
    b0: &Vec3<T>,
    b1: &Vec3<T>,
) -> (T, T) {
    let d1 = a1 - a0;
    let d2 = b1 - b0;
    let r = a0 - b0;
    let a = d1.norm_squared();
    let e = d2.norm_squared();
    let f = d2.dot(&r);
    let eps = 1e-12;
    if a.re() <= eps && e.re() <= eps {
        return (T::zero(), T::zero());
    }
    if a.re() <= eps {
        return (T::zero(), clamp01(f / e));
    }
    let c = d1.dot(&r);
    if e.re() <= eps {
        return (clamp01(-c / a), T::zero());
    }
    let b = d1.dot(&d2);
    let denom = a * e - b * b;
    let half = T::from_re(0.5);
    let mut s = if denom.re() > eps * a.re() * e.re() {
        clamp01((b * f - c * e) / denom)
    } else {
        half
    };
    let mut t = (b * s + f) / e;
    if t.re() < 0.0 {
        t = T::zero();
        s = clamp01(-c / a);
    } else if t.re() > 1.0 {
        t = T::one();
        s = clamp01((b - c) / a);
    }
    (s, t)
}

/// Capsules `([a0, a1], ra)` and `([b0, b1], rb)`: the closest points of the
/// two segments as spheres, then [`sphere_sphere`].
///
/// ```
/// use dualsim::collision::capsule_capsule::capsule_capsule;
/// use dualsim::math::Vec3;
/// let c = capsule_capsule(&Vec3::new(-1.0, 0.0, 1.0), &Vec3::new(1.0, 0.0, 1.0), 0.25,
///                         &Vec3::new(0.0, -1.0, 0.0), &Vec3::new(0.0, 1.0, 0.0), 0.25);
/// assert!((c.gap - 0.5_f64).abs() < 1e-15);
/// assert_eq!(c.normal, Vec3::new(0.0, 0.0, 1.0));
/// ```
pub fn capsule_capsule<T: Scalar>(
    a0: &Vec3<T>,
    a1: &Vec3<T>,
    ra: T,
    b0: &Vec3<T>,
    b1: &Vec3<T>,
    rb: T,
) -> Contact<T> {
    let (s, t) = closest_segment_segment(a0, a1, b0, b1);
    let ca = a0 + (a1 - a0) * s;
    let cb = b0 + (b1 - b0) * t;
    sphere_sphere(&ca, ra, &cb, rb)
}
