//! Capsule (a) against box (b): the end spheres and the segment's closest
//! point.
//!
//! In the box frame the segment is `p(t) = p₀ + t d`, `t ∈ [0, 1]`, and its
//! squared distance to the box `|x_k| ≤ h_k` is
//! `f(t) = Σ_k max(0, |p_k(t)| − h_k)²`: convex and piecewise quadratic,
//! with breaks where `p_k(t) = ±h_k`. On each piece the axes outside the
//! box (signs `s_k = ±1`) are fixed and `f` is minimised at
//! `t = −Σ d_k (p₀_k − s_k h_k) / Σ d_k²`, clamped to the piece; the least
//! of the pieces' minima is the closest point `p(t*)`. Separated
//! (`f(t*) > 0`): the contact of the sphere of radius `r` at `p(t*)` with
//! the box ([`sphere_box`]). Segment inside the box (`f(t*) = 0`): the
//! axis of least penetration among the box's three face normals and the
//! three `d × e_k` (the separating axes of a segment and a box), with the
//! segment's deepest end as witness: `gap = −depth − r`.
//!
//! Contacts (features), as capsule–plane gives both end spheres: `0`, `1`
//! the end spheres `e₀`, `e₁` against the box ([`sphere_box`]), and `2` the
//! closest point above when it is strictly closer than both ends (a capsule
//! across an edge); a capsule lying flat on a face rests on its two ends.
//! Branches on primal values.

use super::Contact;
use super::sphere_box::sphere_box;
use crate::Scalar;
use crate::math::{Pose, Vec3, so3};
use crate::scalar::safe_normalize;

/// Parameter `t*` of the point of segment `[p0, p1]` (box frame) closest to
/// the box `|x_k| ≤ half_k`, and its squared distance `f(t*)` (primal).
/// A piece on which `f` is constant (a segment parallel to a face) gives
/// its midpoint.
pub fn closest_on_segment_to_box<T: Scalar>(
    p0: &Vec3<T>,
    p1: &Vec3<T>,
    half: &Vec3<T>,
) -> (T, f64) {
    let d = p1 - p0;
    let mut ts = [T::zero(); 8];
    ts[1] = T::one();
    let mut n = 2;
    for k in 0..3 {
        if d[k].re() == 0.0 {
            continue;
        }
        for s in [-1.0, 1.0] {
            let t = (half[k] * T::from_re(s) - p0[k]) / d[k];
            if t.re() > 0.0 && t.re() < 1.0 {
                ts[n] = t;
                n += 1;
            }
        }
    }
    ts[..n].sort_by(|a, b| a.re().total_cmp(&b.re()));
    let f_at = |t: f64| -> f64 {
        (0..3)
            .map(|k| {
                let x = p0[k].re() + t * d[k].re();
                let out = (x.abs() - half[k].re()).max(0.0);
                out * out
            })
            .sum()
    };
    let mut best = (T::zero(), f64::INFINITY);
    for i in 0..n - 1 {
        let (lo, hi) = (ts[i], ts[i + 1]);
        let mid = 0.5 * (lo.re() + hi.re());
        let (mut a, mut b) = (T::zero(), T::zero());
        for k in 0..3 {
            let x = p0[k].re() + mid * d[k].re();
            let s = if x > half[k].re() {
                1.0
            } else if x < -half[k].re() {
                -1.0
            } else {
                continue;
            };
            a += d[k] * d[k];
            b += d[k] * (p0[k] - half[k] * T::from_re(s));
        }
        let t = if a.re() > 0.0 {
            let free = -b / a;
            if free.re() <= lo.re() {
                lo
            } else if free.re() >= hi.re() {
                hi
            } else {
                free
            }
        } else {
            (lo + hi) * T::from_re(0.5)
        };
        let f = f_at(t.re());
        if f < best.1 {
            best = (t, f);
        }
    }
    best
}

/// The segment `[p0, p1]` (box frame) inside the box: the unit axis
/// `n` (box frame, pointing out of the box towards the segment) of least
/// penetration, the depth, and the deepest end's parameter (0, 1, or ½
/// when both ends are equally deep).
fn least_penetration<T: Scalar>(p0: &Vec3<T>, p1: &Vec3<T>, half: &Vec3<T>) -> (Vec3<T>, T, T) {
    let d = p1 - p0;
    let mut best: Option<(Vec3<T>, T, T)> = None;
    for k in 0..6 {
        let mut e = Vec3::zeros();
        e[k % 3] = T::one();
        let u = if k < 3 {
            e
        } else {
            match safe_normalize(&d.cross(&e)) {
                Some((u, _)) => u,
                None => continue,
            }
        };
        let (s0, s1) = (u.dot(p0), u.dot(p1));
        let reach = (0..3).fold(T::zero(), |acc, j| acc + half[j] * u[j].abs());
        let (lo, hi) = if s0.re() <= s1.re() {
            (s0, s1)
        } else {
            (s1, s0)
        };
        // Push along +u (depth reach − lo) or along −u (depth hi + reach).
        let (n, depth, deep) = if (reach - lo).re() <= (hi + reach).re() {
            (u, reach - lo, s0.re() <= s1.re())
        } else {
            (-u, hi + reach, s0.re() >= s1.re())
        };
        let t = if s0.re() == s1.re() {
            T::from_re(0.5)
        } else if deep {
            T::zero()
        } else {
            T::one()
        };
        if best.as_ref().is_none_or(|b| depth.re() < b.1.re()) {
            best = Some((n, depth, t));
        }
    }
    best.expect("the box's face normals are always candidate axes")
}

/// Capsule `([e0, e1], r)` against a box with half extents `half` at
/// `pose`: the segment's closest point to the box as a sphere (separated),
/// or the axis of least penetration (segment inside the box); see the
/// module docs.
///
/// ```
/// use dualsim::collision::pairs::capsule_box::capsule_box;
/// use dualsim::math::{Pose, Vec3};
/// // a capsule along the box's top edge x = 1, z = 1, 0.5 above it
/// let c = capsule_box(&Vec3::new(1.0, -1.0, 2.0), &Vec3::new(1.0, 1.0, 2.0), 0.5,
///                     &Pose::identity(), &Vec3::new(1.0, 1.0, 1.0));
/// assert_eq!((c.gap, c.normal.z, c.point_b.z), (0.5, 1.0, 1.0));
/// ```
pub fn capsule_box<T: Scalar>(
    e0: &Vec3<T>,
    e1: &Vec3<T>,
    r: T,
    pose: &Pose<T>,
    half: &Vec3<T>,
) -> Contact<T> {
    let (p0, p1) = (pose.act_inv(e0), pose.act_inv(e1));
    let (t, f) = closest_on_segment_to_box(&p0, &p1, half);
    if f > 0.0 {
        return sphere_box(&(e0 + (e1 - e0) * t), r, pose, half);
    }
    let (n_local, depth, t) = least_penetration(&p0, &p1, half);
    let n = so3::rotate(&pose.rotation, &n_local);
    let deepest = e0 + (e1 - e0) * t;
    let gap = -depth - r;
    let point_a = deepest - n * r;
    Contact {
        gap,
        point_a,
        point_b: point_a - n * gap,
        normal: n,
    }
}

/// Contact `feature` (see the module docs) alone: `0`, `1` the end
/// spheres, `2` [`capsule_box`]; `None` past 2.
pub fn capsule_box_feature<T: Scalar>(
    e0: &Vec3<T>,
    e1: &Vec3<T>,
    r: T,
    pose: &Pose<T>,
    half: &Vec3<T>,
    feature: usize,
) -> Option<Contact<T>> {
    match feature {
        0 => Some(sphere_box(e0, r, pose, half)),
        1 => Some(sphere_box(e1, r, pose, half)),
        2 => Some(capsule_box(e0, e1, r, pose, half)),
        _ => None,
    }
}

/// Every contact (see the module docs) with its feature into `out`: both
/// end spheres, and [`capsule_box`] when its gap is below both ends' by
/// more than `1e-9 (1 + r + ‖half‖)` (rounding).
///
/// ```
/// use dualsim::collision::pairs::capsule_box::capsule_box_into;
/// use dualsim::math::{Pose, Vec3};
/// let (h, pose) = (Vec3::new(1.0, 1.0, 1.0), Pose::identity());
/// let mut out = Vec::new();
/// // flat on the top face: the two ends
/// capsule_box_into(&Vec3::new(-0.5, 0.0, 1.5), &Vec3::new(0.5, 0.0, 1.5), 0.5, &pose, &h, &mut out);
/// assert_eq!(out.iter().map(|(k, c)| (*k, c.gap)).collect::<Vec<_>>(), [(0, 0.0), (1, 0.0)]);
/// // across the edge x = 1, z = 1 (its middle 0.1√2 from it): the ends and the edge
/// out.clear();
/// capsule_box_into(&Vec3::new(0.0, 0.0, 2.2), &Vec3::new(2.2, 0.0, 0.0), 0.1, &pose, &h, &mut out);
/// assert_eq!(out.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [0, 1, 2]);
/// ```
pub fn capsule_box_into<T: Scalar>(
    e0: &Vec3<T>,
    e1: &Vec3<T>,
    r: T,
    pose: &Pose<T>,
    half: &Vec3<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) {
    let c0 = sphere_box(e0, r, pose, half);
    let c1 = sphere_box(e1, r, pose, half);
    let c = capsule_box(e0, e1, r, pose, half);
    let tol = 1e-9 * (1.0 + r.re() + half.map(|x| x.re()).norm());
    out.push((0, c0));
    out.push((1, c1));
    if c.gap.re() < c0.gap.re().min(c1.gap.re()) - tol {
        out.push((2, c));
    }
}
