//! Box (a) against a half-space (b): one contact per vertex.

use super::Contact;
use crate::Scalar;
use crate::math::{Pose, Vec3};

/// The eight vertices of a box with half extents `half` at `pose`, each
/// against the half-space `n · x ≤ d`: `gap = n · x − d`, `point_a = x`,
/// `point_b = x − gap n`. Vertex `k` has local coordinates
/// `(±hx, ±hy, ±hz)` with the signs given by the bits of `k` (bit 0 → x).
///
/// ```
/// use dualsim::collision::box_plane::box_plane;
/// use dualsim::math::{Pose, so3, Vec3};
/// let pose = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, 1.0));
/// let cs = box_plane(&pose, &Vec3::new(0.5, 0.5, 0.5), &Vec3::z(), 0.0);
/// let lowest = cs.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
/// assert_eq!(lowest, 0.5);
/// ```
pub fn box_plane<T: Scalar>(pose: &Pose<T>, half: &Vec3<T>, n: &Vec3<T>, d: T) -> [Contact<T>; 8] {
    core::array::from_fn(|k| box_plane_vertex(pose, half, n, d, k))
}

/// Vertex `k` (`0..8`) of [`box_plane`] alone.
///
/// ```
/// use dualsim::collision::box_plane::{box_plane, box_plane_vertex};
/// use dualsim::math::{Pose, so3, Vec3};
/// let pose = Pose::new(so3::exp(&Vec3::new(0.1, 0.2, 0.3)), Vec3::new(0.0, 0.0, 1.0));
/// let h = Vec3::new(0.5, 0.4, 0.3);
/// assert_eq!(box_plane(&pose, &h, &Vec3::z(), 0.0)[5], box_plane_vertex(&pose, &h, &Vec3::z(), 0.0, 5));
/// ```
pub fn box_plane_vertex<T: Scalar>(
    pose: &Pose<T>,
    half: &Vec3<T>,
    n: &Vec3<T>,
    d: T,
    k: usize,
) -> Contact<T> {
    let local = Vec3::new(
        if k & 1 == 0 { -half.x } else { half.x },
        if k & 2 == 0 { -half.y } else { half.y },
        if k & 4 == 0 { -half.z } else { half.z },
    );
    let x = pose.act(&local);
    let gap = n.dot(&x) - d;
    Contact {
        gap,
        point_a: x,
        point_b: x - n * gap,
        normal: *n,
    }
}
