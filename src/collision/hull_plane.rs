//! Convex hull (a) against a half-space (b): one contact per hull vertex,
//! as [`box_plane`](super::box_plane) does for a box's eight.
//!
//! Vertex `k` of the hull ([`HullMesh::vertices`], in the polytope's
//! frame) at `x = pose · v_k` against the world half-space `n · x ≤ d`:
//!
//! ```text
//! gap = n · x − d,   point_a = x,   point_b = x − gap n,   normal = n.
//! ```
//!
//! The feature index is the vertex index. A face resting on the plane
//! gives its corners as contacts (the clipping of a face against a plane
//! keeps every corner), an edge its two ends, a vertex itself; the caller
//! keeps the vertices whose gap is below its distance. The contact is an
//! exact function of the pose in any scalar (the vertex is constant in the
//! body frame), so its derivatives with respect to the poses are those of
//! the formula above on the active vertex.

use super::Contact;
use crate::Scalar;
use crate::geometry::hull::HullMesh;
use crate::math::{Pose, Vec3};

/// Vertex `k` of `hull` at `pose` against the half-space `n · x ≤ d`
/// ([module docs](self)); `None` for `k` past the last vertex.
///
/// ```
/// use dualsim::collision::hull_plane::hull_plane_vertex;
/// use dualsim::geometry::mesh::convex_hull;
/// use dualsim::math::{Pose, so3, Vec3};
/// let cube: Vec<Vec3<f64>> = (0..8)
///     .map(|i| Vec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
///     .collect();
/// let hull = convex_hull(&cube).unwrap();
/// let pose = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, 0.6));
/// let c = hull_plane_vertex::<f64>(&pose, &hull.mesh, &Vec3::z(), 0.0, 0).unwrap();
/// assert!((c.gap - 0.1).abs() < 1e-15);
/// ```
pub fn hull_plane_vertex<T: Scalar>(
    pose: &Pose<T>,
    hull: &HullMesh,
    n: &Vec3<T>,
    d: T,
    k: usize,
) -> Option<Contact<T>> {
    let v = hull.vertices.get(k)?;
    let x = pose.act(&v.map(T::from_re));
    let gap = n.dot(&x) - d;
    Some(Contact {
        gap,
        point_a: x,
        point_b: x - n * gap,
        normal: *n,
    })
}

/// Every vertex of `hull` at `pose` against the half-space `n · x ≤ d`,
/// with its index, into `out` (appended).
pub fn hull_plane_into<T: Scalar>(
    pose: &Pose<T>,
    hull: &HullMesh,
    n: &Vec3<T>,
    d: T,
    out: &mut Vec<(usize, Contact<T>)>,
) {
    out.extend(
        (0..hull.vertices.len())
            .filter_map(|k| hull_plane_vertex(pose, hull, n, d, k).map(|c| (k, c))),
    );
}
