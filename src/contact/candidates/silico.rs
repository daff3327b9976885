//! Contact candidates of the conic backends: pairs of convex parts
//! (`collision::conic::convex_parts`, a union bundle gives one part per
//! member) whose bounding balls, inflated by the speculative reach of the
//! step, come close.

use super::{Partner, body_pose, friction_law, pair_mu, speed_bound};
use crate::Scalar;
use crate::collision::conic::{ConicParams, convex_parts, proximity};
use crate::collision::frame::least_aligned_axis;
use crate::collision::{bounding_radius, world_plane};
use crate::contact::StepProblem;
use crate::contact::law::Law;
use crate::geometry::{BundleOp, Shape};
use crate::math::{DVec, Pose, Vec3};

/// A pair of convex parts that may touch during the step.
#[derive(Clone, Debug, PartialEq)]
pub struct ConicPair {
    /// First body (global index).
    pub a: usize,
    /// The other side.
    pub b: Partner,
    /// Part of body a's shape (flattened union order).
    pub part_a: usize,
    /// Part of the other shape.
    pub part_b: usize,
    /// Index of the pair among all part pairs of `(a, b)` (unique key with `a`, `b`).
    pub feature: usize,
    /// Combined friction coefficient.
    pub mu: f64,
    /// Friction law.
    pub law: Law,
    /// World axis of the tangent frame (fixed for the step).
    pub axis: usize,
}

/// Radius of a ball about the shape's origin containing it, for every
/// shape with a conic form (`None` for planes, point clouds and open
/// polytopes). Polytopes: the largest vertex norm (vertices by triple
/// intersections of face planes).
pub fn conic_bounding_radius<T: Scalar>(shape: &Shape<T>) -> Option<f64> {
    if let Some(r) = bounding_radius(shape) {
        return Some(r);
    }
    let re = |v: &Vec3<T>| v.map(|x| x.re());
    match shape {
        Shape::Cone { height, half_angle } => {
            let (hh, t) = (height.re(), half_angle.re().tan());
            Some((0.75 * hh).max(((0.25 * hh).powi(2) + (hh * t).powi(2)).sqrt()))
        }
        Shape::Polytope {
            hull: Some(hull), ..
        } => Some(hull.radius),
        Shape::Polytope {
            normals, offsets, ..
        } => {
            let n: Vec<Vec3<f64>> = normals.iter().map(re).collect();
            let b: Vec<f64> = offsets.iter().map(|x| x.re()).collect();
            polytope_radius(&n, &b, false)
        }
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => {
            let n: Vec<Vec3<f64>> = normals
                .iter()
                .map(|v| Vec3::new(v.x.re(), v.y.re(), 0.0))
                .collect();
            let b: Vec<f64> = offsets.iter().map(|x| x.re()).collect();
            polytope_radius(&n, &b, true).map(|r| r + radius.re())
        }
        Shape::Bundle { parts, op } => {
            let mut acc = 0.0_f64;
            for (s, pose) in parts {
                let r = conic_bounding_radius(s)? + re(&pose.translation).norm();
                acc = match op {
                    BundleOp::Union => acc.max(r),
                    BundleOp::Minkowski => acc + r,
                };
            }
            Some(acc)
        }
        _ => None,
    }
}

/// Radius of a ball about the shape's origin contained in it (0 when
/// unknown): `α S ⊇ S ⊕ B((α − 1) r)`, so two parts whose conic scaling
/// is `α` are at least `(α − 1)(r_a + r_b)` apart.
pub fn conic_inradius<T: Scalar>(shape: &Shape<T>) -> f64 {
    match shape {
        Shape::Sphere { radius } => radius.re(),
        Shape::Box { half_extents } => half_extents.map(|x| x.re()).min(),
        Shape::Capsule { radius, .. } => radius.re(),
        Shape::Cylinder {
            radius,
            half_length,
        } => radius.re().min(half_length.re()),
        Shape::Ellipsoid { radii } => radii.map(|x| x.re()).min(),
        Shape::Polytope {
            normals, offsets, ..
        } => normals
            .iter()
            .zip(offsets)
            .map(|(n, b)| b.re() / n.map(|x| x.re()).norm())
            .fold(f64::INFINITY, f64::min)
            .max(0.0),
        Shape::PaddedPolygon { radius, .. } => radius.re(),
        _ => 0.0,
    }
}

/// Whether the conic scaling of two parts at their poses proves them
/// farther apart than `limit` (module docs of [`conic_inradius`]).
fn provably_apart(
    sa: &Shape<f64>,
    pa: &Pose<f64>,
    sb: &Shape<f64>,
    pb: &Pose<f64>,
    limit: f64,
) -> bool {
    let r = conic_inradius(sa)
        + if matches!(sb, Shape::Plane { .. }) {
            0.0
        } else {
            conic_inradius(sb)
        };
    if r <= 0.0 {
        return false;
    }
    let params = ConicParams {
        tol_gap: 1e-8,
        ..ConicParams::default()
    };
    match proximity(sa, pa, sb, pb, &params) {
        Ok(pr) => (pr.alpha - 1.0) * r > limit,
        Err(_) => false,
    }
}

/// Largest vertex norm of `{x : nₖ·x ≤ bₖ}` (`planar`: of the polygon in
/// the xy plane); `None` when there is no vertex.
fn polytope_radius(n: &[Vec3<f64>], b: &[f64], planar: bool) -> Option<f64> {
    let k = n.len();
    if !planar && k > 16 {
        if let Some(r) = polytope_radius_polar(n, b) {
            return Some(r);
        }
    }
    let feasible = |x: &Vec3<f64>| {
        n.iter()
            .zip(b)
            .all(|(ni, bi)| ni.dot(x) <= bi + 1e-9 * (1.0 + bi.abs()))
    };
    let mut best: Option<f64> = None;
    if planar {
        for i in 0..k {
            for j in i + 1..k {
                let m = nalgebra::Matrix2::new(n[i].x, n[i].y, n[j].x, n[j].y);
                if let Some(x) = m
                    .try_inverse()
                    .map(|mi| mi * nalgebra::Vector2::new(b[i], b[j]))
                {
                    let x = Vec3::new(x.x, x.y, 0.0);
                    if feasible(&x) {
                        best = Some(best.unwrap_or(0.0).max(x.norm()));
                    }
                }
            }
        }
        return best;
    }
    for i in 0..k {
        for j in i + 1..k {
            for l in j + 1..k {
                let m = nalgebra::Matrix3::from_rows(&[
                    n[i].transpose(),
                    n[j].transpose(),
                    n[l].transpose(),
                ]);
                if m.determinant().abs() < 1e-12 {
                    continue;
                }
                if let Some(x) = m.try_inverse().map(|mi| mi * Vec3::new(b[i], b[j], b[l])) {
                    if feasible(&x) {
                        best = Some(best.unwrap_or(0.0).max(x.norm()));
                    }
                }
            }
        }
    }
    best
}

/// [`polytope_radius`] of a bounded polytope with the origin strictly
/// inside (every `bₖ > 0`; URDF mesh hulls), through its polar: the
/// polar `conv{nₖ / bₖ}` has a facet `{y : m·y = c}` (c > 0) for each
/// vertex `m / c` of the polytope. One convex hull of `k` points instead
/// of the `O(k⁴)` triple intersections; `None` (the caller falls back to
/// those) when an offset is not positive or the polar's hull fails or
/// does not hold the origin strictly inside (an open polytope).
fn polytope_radius_polar(n: &[Vec3<f64>], b: &[f64]) -> Option<f64> {
    use parry3d_f64::math::Vector as PVec;
    if b.iter().any(|bi| !(*bi > 0.0)) {
        return None;
    }
    let pts: Vec<PVec> = n
        .iter()
        .zip(b)
        .map(|(ni, bi)| PVec::new(ni.x / bi, ni.y / bi, ni.z / bi))
        .collect();
    let (verts, tris) = parry3d_f64::transformation::try_convex_hull(&pts).ok()?;
    let v = |i: u32| {
        Vec3::new(
            verts[i as usize].x,
            verts[i as usize].y,
            verts[i as usize].z,
        )
    };
    let mut best = 0.0_f64;
    for t in &tris {
        let (a, bb, c) = (v(t[0]), v(t[1]), v(t[2]));
        let m = (bb - a).cross(&(c - a));
        let (mn, off) = (m.norm(), m.dot(&a));
        if !(mn > 0.0) {
            continue;
        }
        // the facet's offset along its unit normal: > 0 with the origin inside
        if !(off / mn > 1e-12 * (1.0 + a.norm())) {
            return None;
        }
        best = best.max(mn / off);
    }
    (best > 0.0).then_some(best)
}

/// The convex parts of body `i`'s shape in its body frame.
pub fn body_parts<T: Scalar>(p: &StepProblem<'_, T>, i: usize) -> Vec<(Shape<T>, Pose<T>)> {
    match &p.shapes[i] {
        Some(s) => convex_parts(s, &Pose::identity()),
        None => Vec::new(),
    }
}

/// The convex parts of static `j` in the world frame.
pub fn static_parts<T: Scalar>(p: &StepProblem<'_, T>, j: usize) -> Vec<(Shape<T>, Pose<T>)> {
    convex_parts(&p.statics[j].shape, &p.statics[j].pose)
}

/// Part pairs of the step at `q` (see the module docs): a body part and a
/// static plane when the part's ball is within `margin + reach` of the
/// plane; a body part and any other static part, or two body parts, when
/// their balls are within `margin` plus both reaches. The tangent axis is
/// taken from the conic normal at `q`.
pub fn conic_candidates<T: Scalar>(
    p: &StepProblem<'_, T>,
    q: &DVec<T>,
    margin: f64,
) -> Vec<ConicPair> {
    let nb = p.model.bodies.len();
    let h = p.h.re();
    let g = p.gravity.map(|x| x.re()).norm();
    let poses: Vec<Pose<f64>> = (0..nb).map(|i| body_pose(p, q, i).cast()).collect();
    let parts: Vec<Vec<(Shape<f64>, Pose<f64>, f64)>> = (0..nb)
        .map(|i| {
            body_parts(p, i)
                .into_iter()
                .filter_map(|(s, lp)| {
                    let s = s.cast::<f64>();
                    let r = conic_bounding_radius(&s)?;
                    Some((s, poses[i] * lp.cast(), r))
                })
                .collect()
        })
        .collect();
    let reach: Vec<f64> = (0..nb)
        .map(|i| {
            let r = parts[i]
                .iter()
                .map(|(_, lp, rr)| (lp.translation - poses[i].translation).norm() + rr)
                .fold(0.0, f64::max);
            h * speed_bound(p, i, r) + h * h * g
        })
        .collect();
    let params = ConicParams {
        tol_gap: 1e-8,
        ..ConicParams::default()
    };
    let axis_of = |sa: &Shape<f64>, pa: &Pose<f64>, sb: &Shape<f64>, pb: &Pose<f64>| -> usize {
        match proximity(sa, pa, sb, pb, &params)
            .ok()
            .and_then(|pr| pr.normal)
        {
            Some(n) => least_aligned_axis(&n),
            None => 0,
        }
    };
    let mut out = Vec::new();
    for i in 0..nb {
        for j in 0..p.statics.len() {
            let sparts: Vec<(Shape<f64>, Pose<f64>)> = static_parts(p, j)
                .into_iter()
                .map(|(s, ps)| (s.cast(), ps.cast()))
                .collect();
            let mu = pair_mu(p, i, Partner::Static(j)).re();
            for (ka, (sa, pa, ra)) in parts[i].iter().enumerate() {
                for (kb, (sb, pb)) in sparts.iter().enumerate() {
                    let near = match sb {
                        Shape::Plane { normal, offset } => {
                            let (n, off) = world_plane(normal, *offset, pb);
                            n.dot(&pa.translation) - off - ra < margin + reach[i]
                        }
                        _ => match conic_bounding_radius(sb) {
                            Some(rb) => {
                                (pa.translation - pb.translation).norm() - ra - rb
                                    < margin + reach[i]
                            }
                            None => true,
                        },
                    };
                    if near && !provably_apart(sa, pa, sb, pb, margin + reach[i]) {
                        out.push(ConicPair {
                            a: i,
                            b: Partner::Static(j),
                            part_a: ka,
                            part_b: kb,
                            feature: ka * sparts.len() + kb,
                            mu,
                            law: friction_law(p, mu),
                            axis: axis_of(sa, pa, sb, pb),
                        });
                    }
                }
            }
        }
        for j in i + 1..nb {
            let mu = pair_mu(p, i, Partner::Body(j)).re();
            for (ka, (sa, pa, ra)) in parts[i].iter().enumerate() {
                for (kb, (sb, pb, rb)) in parts[j].iter().enumerate() {
                    let d = (pa.translation - pb.translation).norm() - ra - rb;
                    let limit = margin + reach[i] + reach[j];
                    if d < limit && !provably_apart(sa, pa, sb, pb, limit) {
                        out.push(ConicPair {
                            a: i,
                            b: Partner::Body(j),
                            part_a: ka,
                            part_b: kb,
                            feature: ka * parts[j].len() + kb,
                            mu,
                            law: friction_law(p, mu),
                            axis: axis_of(sa, pa, sb, pb),
                        });
                    }
                }
            }
        }
    }
    out
}
