//! Sphere (a) against box (b).

use super::{Contact, direction_or_z};
use crate::Scalar;
use crate::math::{Pose, Vec3, so3};

/// Sphere `(c, r)` against a box with half extents `half` at `pose`.
///
/// Outside the box: the closest box point `p` (clamping the local centre),
/// `n = (c − p)/‖c − p‖`, `gap = ‖c − p‖ − r`. Centre inside: the face of
/// least penetration, `n` its outward normal, `gap = −depth − r`. Branches
/// on primal values.
///
/// ```
/// use dualsim::collision::sphere_box::sphere_box;
/// use dualsim::math::{Pose, so3, Vec3};
/// let c = sphere_box(&Vec3::new(0.0, 0.0, 2.0), 0.5, &Pose::identity(), &Vec3::new(1.0, 1.0, 1.0));
/// assert_eq!((c.gap, c.normal.z, c.point_b.z), (0.5, 1.0, 1.0));
/// ```
pub fn sphere_box<T: Scalar>(c: &Vec3<T>, r: T, pose: &Pose<T>, half: &Vec3<T>) -> Contact<T> {
    let local = pose.act_inv(c);
    let mut clamped = local;
    let mut inside = true;
    for k in 0..3 {
        if local[k].re() > half[k].re() {
            clamped[k] = half[k];
            inside = false;
        } else if local[k].re() < -half[k].re() {
            clamped[k] = -half[k];
            inside = false;
        }
    }
    if !inside {
        let pb = pose.act(&clamped);
        let (n, dist) = direction_or_z(&(c - pb));
        return Contact {
            gap: dist - r,
            point_a: c - n * r,
            point_b: pb,
            normal: n,
        };
    }
    // Inside: the face with the smallest depth half_k − |local_k|.
    let mut best = 0;
    let mut best_depth = f64::INFINITY;
    for k in 0..3 {
        let depth = half[k].re() - local[k].re().abs();
        if depth < best_depth {
            best_depth = depth;
            best = k;
        }
    }
    let sign = if local[best].re() >= 0.0 {
        T::one()
    } else {
        -T::one()
    };
    let mut n_local = Vec3::zeros();
    n_local[best] = sign;
    let depth = half[best] - local[best] * sign;
    let mut face = local;
    face[best] = half[best] * sign;
    let n = so3::rotate(&pose.rotation, &n_local);
    Contact {
        gap: -depth - r,
        point_a: c - n * r,
        point_b: pose.act(&face),
        normal: n,
    }
}
