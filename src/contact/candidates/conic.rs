//! Candidates of shape pairs without a closed form: the conic collision
//! program (`collision::conic`), as in the `bilevel` backend.
//!
//! The closed-form pairs of [`crate::collision::pair_features`] cover
//! sphere, capsule and box against the plane, and sphere–sphere,
//! sphere–capsule, capsule–capsule, sphere–box and box–box. Every other
//! pair (any pair with a cylinder, cone, ellipsoid, polytope, padded polygon
//! or bundle, or against static geometry other than a plane) is split into
//! convex parts (`collision::conic::convex_parts`: a union bundle gives one
//! part per member) and each pair of parts is a candidate whose gap is the
//! conic proximity `φ = α* − 1` of the two parts
//! ([`conic_contact`](crate::collision::conic::contact::conic_contact)),
//! re-solved at every iterate of the step. Such a candidate carries
//! `parts = Some((part_a, part_b))` and the feature index
//! `part_a · n_parts_b + part_b`.
//!
//! The gap of a conic candidate is a scaling, not a distance: the two
//! parts, scaled by `α*` about their own origins, touch. A part pair is a
//! candidate when its bounding balls (inflated by `limit`) meet and the
//! scaling does not prove it farther apart than `limit`
//! (`(α* − 1)(r_a + r_b) > limit` with `r` the radius of a ball about the
//! part's origin contained in it, [`conic_inradius`]); with `limit = 0`
//! (the search for penetrating pairs after a solve), when `α* < 1`.

use super::silico::{conic_bounding_radius, conic_inradius};
use crate::collision::conic::{ConicParams, convex_parts, proximity};
use crate::collision::frame::least_aligned_axis;
use crate::collision::world_plane;
use crate::geometry::Shape;
use crate::math::Pose;

/// The barrier parameter μ of `ipm`'s conic programs
/// ([`ConicParts::smoothing`](super::ConicParts::smoothing)):
/// `10 ρ`. The gap `α_μ − 1` of the central point is smooth in the poses
/// (a face on a face has no kink) and lies above the exact one by `O(μ)`,
/// so a resting contact sits slightly into its support. Measured with
/// ρ = 1e-6 (`tests/all/contact/ipm_pairs.rs` and the example scenes): with μ = ρ two
/// of the 55 drops of pairs of shape types reach the 50-iteration cap,
/// with 3ρ none but `peg_in_hole` needs 47 iterations, with 10ρ at most 20
/// and 29. At 10ρ the `polytope_drop` polytope rests 3e-6 m into the
/// ground (at ρ, 1e-6 m above it); at 100ρ a box on a box rests 2e-5 m
/// into it.
pub fn smoothing(rho: f64) -> f64 {
    10.0 * rho
}

/// Cosine above which two capsules count as parallel
/// ([`near_parallel_capsules`]): about 5.7°.
pub const PARALLEL_CAPSULES: f64 = 0.995;

/// Whether two capsules' axes are within [`PARALLEL_CAPSULES`] of parallel
/// at these poses. The closed-form capsule–capsule contact is one pair of
/// closest points of the segments, which jumps from one end to the other as
/// the segments pass through parallel (a line contact): a capsule resting
/// along another then stalls the step's Newton iteration. Such a pair is
/// treated as a pair without a closed form (the conic program's
/// central-path witness point moves smoothly along the line contact).
pub fn near_parallel_capsules<T: crate::Scalar>(
    sa: &Shape<T>,
    pa: &Pose<T>,
    sb: &Shape<T>,
    pb: &Pose<T>,
) -> bool {
    if !matches!((sa, sb), (Shape::Capsule { .. }, Shape::Capsule { .. })) {
        return false;
    }
    let za = crate::math::so3::rotate(&pa.rotation, &crate::math::Vec3::z()).map(|x| x.re());
    let zb = crate::math::so3::rotate(&pb.rotation, &crate::math::Vec3::z()).map(|x| x.re());
    za.dot(&zb).abs() > PARALLEL_CAPSULES
}

/// A pair of convex parts that may touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartPair {
    /// Part of shape a (flattened union order).
    pub part_a: usize,
    /// Part of shape b.
    pub part_b: usize,
    /// `part_a · n_parts_b + part_b`.
    pub feature: usize,
    /// World axis of the tangent frame (least aligned with the conic normal).
    pub axis: usize,
}

/// Refuses a problem with a point cloud (on a body, a static or a robot
/// link): it has neither a closed form nor a conic form, and no backend of
/// this build collides it. Called by `ipm`, `single_level` and `bilevel`
/// before they solve anything, so the run stops at its first step with
/// this error instead of letting the cloud pass through everything.
pub fn refuse_point_clouds<T: crate::Scalar>(
    backend: &'static str,
    p: &crate::contact::StepProblem<'_, T>,
) -> Result<(), crate::contact::SolveError> {
    let cloud = p
        .shapes
        .iter()
        .flatten()
        .chain(p.statics.iter().map(|s| &s.shape))
        .chain(p.link_shapes.iter().map(|l| &l.shape))
        .any(has_points);
    if cloud {
        Err(crate::contact::SolveError::Unsupported {
            backend,
            what: "point-cloud shapes (`points`): no backend of this build collides them",
        })
    } else {
        Ok(())
    }
}

/// Whether a shape is or contains a point cloud.
pub fn has_points<T: crate::Scalar>(shape: &Shape<T>) -> bool {
    match shape {
        Shape::Points { .. } => true,
        Shape::Bundle { parts, .. } => parts.iter().any(|(s, _)| has_points(s)),
        _ => false,
    }
}

/// The pairs of convex parts of `sa` at `pa` and `sb` at `pb` (world
/// poses) that may be closer than `limit` (module docs). A part pair whose
/// proximity cannot be computed is kept (the step then fails on it with a
/// typed error instead of ignoring it).
pub fn near_part_pairs(
    sa: &Shape<f64>,
    pa: &Pose<f64>,
    sb: &Shape<f64>,
    pb: &Pose<f64>,
    limit: f64,
) -> Vec<PartPair> {
    let parts_a = convex_parts(sa, pa);
    let parts_b = convex_parts(sb, pb);
    let params = ConicParams {
        tol_gap: 1e-8,
        ..ConicParams::default()
    };
    let mut out = Vec::new();
    for (ka, (sa, pa)) in parts_a.iter().enumerate() {
        let ra = conic_bounding_radius(sa);
        for (kb, (sb, pb)) in parts_b.iter().enumerate() {
            let balls_near = match (sb, ra) {
                (Shape::Plane { normal, offset }, Some(ra)) => {
                    let (n, off) = world_plane(normal, *offset, pb);
                    n.dot(&pa.translation) - off - ra < limit
                }
                (_, Some(ra)) => match conic_bounding_radius(sb) {
                    Some(rb) => (pa.translation - pb.translation).norm() - ra - rb < limit,
                    None => true,
                },
                (_, None) => true,
            };
            if !balls_near {
                continue;
            }
            let axis = match proximity(sa, pa, sb, pb, &params) {
                Ok(pr) => {
                    let r_in = conic_inradius(sa)
                        + if matches!(sb, Shape::Plane { .. }) {
                            0.0
                        } else {
                            conic_inradius(sb)
                        };
                    let near = if limit <= 0.0 {
                        pr.alpha < 1.0
                    } else {
                        pr.alpha < 1.0 || r_in <= 0.0 || (pr.alpha - 1.0) * r_in <= limit
                    };
                    if !near {
                        continue;
                    }
                    pr.normal.map(|n| least_aligned_axis(&n)).unwrap_or(0)
                }
                Err(_) => 0,
            };
            out.push(PartPair {
                part_a: ka,
                part_b: kb,
                feature: ka * parts_b.len() + kb,
                axis,
            });
        }
    }
    out
}
