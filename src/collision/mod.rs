//! Collision detection: contact frames, closed-form pairs and the broad phase.
//!
//! Every narrow-phase function is generic over [`Scalar`] and returns a
//! [`Contact`] in the conventions of Nimble (Werling et al. 2021, App. C):
//!
//! * `gap` is the signed distance between the shapes along `normal`
//!   (negative: penetration depth);
//! * `point_a`, `point_b` are the witness points on the surfaces of `a` and
//!   `b` (world frame), so that `gap = normal · (point_a − point_b)`;
//! * `normal` is the unit contact normal pointing **from b to a**, so moving
//!   `a` along `normal` increases the gap.
//!
//! To first order the gap varies with the witness points moving rigidly
//! with their bodies, `δgap = normal · (δpoint_a − δpoint_b)` (envelope
//! theorem for the smooth closed-form pairs); the contact backends build
//! their contact Jacobians from that.
//!
//! Closed-form pairs, one file each (`<a>_<b>.rs` holding the function
//! `<a>_<b>`): [`sphere_plane`](sphere_plane::sphere_plane),
//! [`sphere_sphere`](sphere_sphere::sphere_sphere),
//! [`box_plane`](box_plane::box_plane) (one contact per vertex),
//! [`capsule_plane`](capsule_plane::capsule_plane) (one per end sphere),
//! [`capsule_sphere`](capsule_sphere::capsule_sphere),
//! [`capsule_capsule`](capsule_capsule::capsule_capsule),
//! [`sphere_box`](sphere_box::sphere_box),
//! [`box_box`](box_box::box_box) (separating axes and face clipping, up to
//! 8 contacts), and the polytope hulls' [`hull_plane`] and
//! [`hull_hull`]. One table, [`pairs::Table`], maps each pair
//! of shape kinds to its functions (swapping and flipping reversed orders
//! once): [`pair_features`] gives each contact with its feature index,
//! which [`pair_contact`] evaluates alone; unsupported pairs return `None`.
//!
//! Zero-safety: every normal is built with
//! [`safe_normalize`]; a coincident pair of
//! centres falls back to the world `z` axis (decided on primal values).
//!
//! [`broad_phase`] finds candidate body pairs by sweep and prune on
//! axis-aligned bounding boxes (f64), so piles of hundreds of bodies do not
//! test every pair.

pub mod box_box;
pub mod box_plane;
#[doc(hidden)]
pub mod broad_phase;
pub mod capsule_capsule;
pub mod capsule_plane;
pub mod capsule_sphere;
#[doc(hidden)]
pub mod conic;
#[doc(hidden)]
pub mod frame;
pub mod hull_hull;
pub mod hull_plane;
#[doc(hidden)]
pub mod kernels;
pub mod pairs;
pub mod sphere_box;
pub mod sphere_plane;
pub mod sphere_sphere;

pub use frame::tangent_basis;

use crate::Scalar;
use crate::geometry::Shape;
use crate::math::{Pose, Vec3, so3};
use crate::scalar::safe_normalize;

/// One contact between shapes `a` and `b` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact<T: Scalar> {
    /// Signed gap (negative: penetration).
    pub gap: T,
    /// Witness point on `a` (world frame).
    pub point_a: Vec3<T>,
    /// Witness point on `b` (world frame).
    pub point_b: Vec3<T>,
    /// Unit normal from `b` to `a` (world frame).
    pub normal: Vec3<T>,
}

impl<T: Scalar> Contact<T> {
    /// The same contact seen with `a` and `b` exchanged.
    ///
    /// ```
    /// use dualsim::collision::sphere_sphere::sphere_sphere;
    /// use dualsim::math::Vec3;
    /// let c = sphere_sphere(&Vec3::new(0.0, 0.0, 2.0), 0.5, &Vec3::zeros(), 0.5);
    /// let f = c.flip();
    /// assert_eq!((f.gap, f.normal.z, f.point_a.z), (1.0, -1.0, 0.5));
    /// ```
    pub fn flip(&self) -> Self {
        Contact {
            gap: self.gap,
            point_a: self.point_b,
            point_b: self.point_a,
            normal: -self.normal,
        }
    }
}

/// Unit vector along `d`, or `+z` when `d` is zero (decided on primal values).
pub(crate) fn direction_or_z<T: Scalar>(d: &Vec3<T>) -> (Vec3<T>, T) {
    match safe_normalize(d) {
        Some((n, len)) => (n, len),
        None => (Vec3::new(T::zero(), T::zero(), T::one()), T::zero()),
    }
}

/// A plane `normal · x ≤ offset` given in the frame `pose`, in world
/// coordinates: `(unit normal, offset)`.
pub fn world_plane<T: Scalar>(normal: &Vec3<T>, offset: T, pose: &Pose<T>) -> (Vec3<T>, T) {
    let n = so3::rotate(&pose.rotation, normal);
    (n, offset + n.dot(&pose.translation))
}

/// End points of a capsule's segment (body z axis) in the world.
pub fn capsule_segment<T: Scalar>(half_length: T, pose: &Pose<T>) -> (Vec3<T>, Vec3<T>) {
    let axis = so3::rotate(
        &pose.rotation,
        &Vec3::new(T::zero(), T::zero(), half_length),
    );
    (pose.translation - axis, pose.translation + axis)
}

/// Radius of a ball about the shape's origin that contains it (`None` for
/// unbounded or unsupported shapes). Used for bounding boxes.
pub fn bounding_radius<T: Scalar>(shape: &Shape<T>) -> Option<f64> {
    match shape {
        Shape::Sphere { radius } => Some(radius.re()),
        Shape::Box { half_extents } => Some(half_extents.map(|x| x.re()).norm()),
        Shape::Capsule {
            radius,
            half_length,
        } => Some(radius.re() + half_length.re()),
        Shape::Cylinder {
            radius,
            half_length,
        } => Some((radius.re().powi(2) + half_length.re().powi(2)).sqrt()),
        Shape::Ellipsoid { radii } => Some(radii.map(|x| x.re()).amax()),
        _ => None,
    }
}

/// Contact `feature` of [`pair_features`] alone (box–plane and
/// capsule–plane compute only that vertex or end sphere, box–box only that
/// vertex–face or edge–edge feature, at any poses): the `contact` of the
/// pair's row in [`pairs::Table`].
pub fn pair_contact<T: Scalar>(
    a: &Shape<T>,
    pose_a: &Pose<T>,
    b: &Shape<T>,
    pose_b: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    pairs::Table::contact(a, pose_a, b, pose_b, feature)
}

/// All contacts between shape `a` at `pose_a` and shape `b` at `pose_b`,
/// each with its feature index (the argument of [`pair_contact`] that
/// evaluates it alone: the box vertex, the capsule end, the box–box
/// vertex–face or edge–edge feature). `None` when the pair has no closed
/// form here. Planes are supported as `b` only.
pub fn pair_features<T: Scalar>(
    a: &Shape<T>,
    pose_a: &Pose<T>,
    b: &Shape<T>,
    pose_b: &Pose<T>,
) -> Option<Vec<(usize, Contact<T>)>> {
    let mut out = Vec::new();
    pair_features_into(a, pose_a, b, pose_b, &mut out).then_some(out)
}

/// [`pair_features`] into `out` (cleared first; its storage reused, so
/// only box–box allocates); `false` when the pair has no closed form (no
/// row in [`pairs::Table`]).
pub fn pair_features_into<T: Scalar>(
    a: &Shape<T>,
    pose_a: &Pose<T>,
    b: &Shape<T>,
    pose_b: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    pairs::Table::features(a, pose_a, b, pose_b, out)
}

/// All contacts between shape `a` at `pose_a` and shape `b` at `pose_b`.
/// For every pair but box–box the list has a fixed order and the index of
/// a contact is its feature (e.g. the box vertex); box–box gives the
/// contacts of [`box_box::box_box`] (their features: [`pair_features`]).
/// `None` when the pair has no closed form here. Planes are supported as
/// `b` only.
pub fn pair_contacts<T: Scalar>(
    a: &Shape<T>,
    pose_a: &Pose<T>,
    b: &Shape<T>,
    pose_b: &Pose<T>,
) -> Option<Vec<Contact<T>>> {
    pair_features(a, pose_a, b, pose_b).map(|v| v.into_iter().map(|(_, c)| c).collect())
}
