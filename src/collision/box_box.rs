//! Box (a) against box (b): separating axes, then face clipping (as ODE's
//! `dBoxBox` and MuJoCo's box–box).
//!
//! [`box_box`] tests the 15 separating axes (3 face normals of each box,
//! 9 cross products of their edge directions) for the one of largest
//! separation (least penetration); an edge axis wins only if it beats the
//! best face axis by 5 % of its magnitude (ODE's fudge factor, so that
//! resting faces stay faces).
//!
//! * **Edge–edge** (an edge axis wins and the closest points of the two
//!   supporting edges lie on both edges): one contact, the closest points
//!   of the edge lines, normal `± e_a × e_b`.
//! * **Face**: the winning face of box `R` is the reference face, the face
//!   of the other box `I` most anti-parallel to it the incident face. The
//!   incident quad is clipped against the reference rectangle: its
//!   vertices inside the rectangle, the reference corners inside the quad,
//!   and the crossings of its edges with the rectangle's sides, at most 8
//!   points. Each test accepts a point up to a tolerance `tol` outside
//!   (1e-6 of the larger box's largest half extent); of two points within
//!   `2 tol` the one nearer the true clipped polygon is kept, so that the
//!   points move continuously with the poses where faces are flush.
//!
//! Each point is returned as a contact **feature** with a fixed identity,
//! evaluated in closed form at any poses by [`box_box_feature`] (the
//! `ipm` backend re-evaluates a candidate's gap at every iterate of a step
//! by its feature index):
//!
//! * a box vertex against a face plane of the other box (an incident
//!   vertex against the reference face, a reference corner against the
//!   incident face): `gap = m · x − d`, normal the face's outward normal;
//! * an edge against an edge (the edge–edge case, and an incident edge
//!   crossing a side of the reference face at an angle whose sine is at
//!   least 0.1): the closest points of the two edge lines, normal
//!   `± e_a × e_b / ‖e_a × e_b‖`, oriented from b to a by the centres
//!   (decided on primal values);
//! * a point of an incident edge crossing a side of the reference face at
//!   a smaller angle (fixed on the edge at its parameter there) against the
//!   reference face plane, like a vertex: two nearly parallel edges have no
//!   well-defined edge–edge normal. Its index holds the parameter, so it
//!   changes as the edge moves along the side.
//!
//! Where ODE gives every clipped point the reference normal and its depth
//! below the reference plane, these features each keep the normal of their
//! own vertex–face, point–face or edge–edge geometry, so that every one satisfies the
//! envelope property of the module docs (`δgap = n · (δpoint_a −
//! δpoint_b)` under rigid motions), which `ipm`'s impulse map relies on;
//! for parallel faces (a box resting on a box) both agree.
//!
//! Feature indices: `0..96` vertex–face, `((o · 8 + v) · 6 + f)` with
//! `o = 0` a vertex of a against a face of b, `o = 1` a vertex of b against
//! a face of a, `v` the vertex (bit `i` set: `+h_i`, as in
//! [`box_plane`](super::box_plane::box_plane)), `f = 2 · axis + (sign > 0)`;
//! `96..240` edge–edge, `96 + 12 e_a + e_b` with `e = 4 · axis + bit(sign
//! of axis+1) + 2 · bit(sign of axis+2)` (axes mod 3); from 240 an edge
//! point against a face, `240 + ((o · 12 + e) · 6 + f) · 2⁴⁰ + t` with the
//! point at `mid + dir · half · (2t/(2⁴⁰ − 1) − 1)` (a 64-bit `usize`).
//!
//! Every decision (axis, reference face, which points) is taken on primal
//! values; every returned quantity is computed in `T`.

use super::{Contact, direction_or_z};
use crate::Scalar;
use crate::math::{Pose, Vec3, so3};

/// First edge–edge feature index.
pub const EDGE_EDGE: usize = 96;

/// First edge-point–face feature index.
pub const EDGE_POINT: usize = 240;

/// Below this sine of their angle, an incident edge crossing a side of the
/// reference face gives an edge-point feature instead of an edge–edge one.
const PARALLEL_SINE: f64 = 0.1;

/// Positions of an edge point along its edge.
const T_LEVELS: usize = 1 << 40;

/// Number of box–box contact features (96 vertex–face, 144 edge–edge,
/// 144 · 2⁴⁰ edge-point–face).
pub const FEATURES: usize = EDGE_POINT + 144 * T_LEVELS;

/// An edge axis must beat the best face axis by this share of the face
/// axis's separation (ODE's `fudge_factor` 1.05).
const EDGE_BIAS: f64 = 0.05;

/// Relative tolerance (× the largest half extent) of the inside tests
/// and of the merging of coincident clip points.
const REL_TOL: f64 = 1e-6;

/// A box in the world: centre, axes (columns of the rotation), half extents.
struct Placed<T: Scalar> {
    c: Vec3<T>,
    axes: [Vec3<T>; 3],
    h: Vec3<T>,
}

impl<T: Scalar> Placed<T> {
    fn new(pose: &Pose<T>, h: &Vec3<T>) -> Self {
        let axes = core::array::from_fn(|k| {
            let mut e = Vec3::zeros();
            e[k] = T::one();
            so3::rotate(&pose.rotation, &e)
        });
        Placed {
            c: pose.translation,
            axes,
            h: *h,
        }
    }

    /// Vertex `v` (bit `i` set: `+h_i`).
    fn vertex(&self, v: usize) -> Vec3<T> {
        let mut x = self.c;
        for i in 0..3 {
            let t = self.axes[i] * self.h[i];
            x = if v & (1 << i) == 0 { x - t } else { x + t };
        }
        x
    }

    /// Edge `e`: midpoint, unit direction, half length.
    fn edge(&self, e: usize) -> (Vec3<T>, Vec3<T>, T) {
        let ax = e / 4;
        let (i1, i2) = ((ax + 1) % 3, (ax + 2) % 3);
        let s1 = if e & 1 == 0 { -T::one() } else { T::one() };
        let s2 = if e & 2 == 0 { -T::one() } else { T::one() };
        let mid = self.c + self.axes[i1] * (self.h[i1] * s1) + self.axes[i2] * (self.h[i2] * s2);
        (mid, self.axes[ax], self.h[ax])
    }

    fn re(&self) -> Placed<f64> {
        Placed {
            c: self.c.map(|x| x.re()),
            axes: core::array::from_fn(|k| self.axes[k].map(|x| x.re())),
            h: self.h.map(|x| x.re()),
        }
    }
}

/// Vertex index from per-axis signs.
fn vertex_id(s: [f64; 3]) -> usize {
    (0..3).filter(|&i| s[i] > 0.0).map(|i| 1 << i).sum()
}

/// Edge index of the edge along `ax` with per-axis signs `s` (`s[ax]` unused).
fn edge_id(ax: usize, s: [f64; 3]) -> usize {
    ax * 4 + usize::from(s[(ax + 1) % 3] > 0.0) + 2 * usize::from(s[(ax + 2) % 3] > 0.0)
}

fn face_id(ax: usize, sign: f64) -> usize {
    2 * ax + usize::from(sign > 0.0)
}

fn sign(x: f64) -> f64 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}

/// Vertex `v` of `vb` against face `f` of `fb`: `(gap, vertex, outward normal)`.
fn vertex_face<T: Scalar>(
    vb: &Placed<T>,
    v: usize,
    fb: &Placed<T>,
    f: usize,
) -> (T, Vec3<T>, Vec3<T>) {
    let ax = f / 2;
    let m = if f % 2 == 1 {
        fb.axes[ax]
    } else {
        -fb.axes[ax]
    };
    let d = m.dot(&fb.c) + fb.h[ax];
    let x = vb.vertex(v);
    (m.dot(&x) - d, x, m)
}

/// Edge `ea` of `a` against edge `eb` of `b`: closest points of the lines.
fn edge_edge<T: Scalar>(a: &Placed<T>, ea: usize, b: &Placed<T>, eb: usize) -> Contact<T> {
    let (pa, ua, _) = a.edge(ea);
    let (pb, ub, _) = b.edge(eb);
    let w = pa - pb;
    let bb = ua.dot(&ub);
    let d = ua.dot(&w);
    let e = ub.dot(&w);
    let den = T::one() - bb * bb;
    let (xa, xb, n) = if den.re() > 1e-12 {
        let s = (bb * e - d) / den;
        let t = (e - bb * d) / den;
        let (n, _) = direction_or_z(&ua.cross(&ub));
        (pa + ua * s, pb + ub * t, n)
    } else {
        // Parallel edges (not selected by `box_box`; a feature evaluated
        // far from where it was selected): the common perpendicular
        // through a's midpoint.
        let xb = pb + ub * e;
        let (n, _) = direction_or_z(&(pa - xb));
        (pa, xb, n)
    };
    let n = if n.map(|x| x.re()).dot(&(a.c - b.c).map(|x| x.re())) < 0.0 {
        -n
    } else {
        n
    };
    Contact {
        gap: n.dot(&(xa - xb)),
        point_a: xa,
        point_b: xb,
        normal: n,
    }
}

fn evaluate<T: Scalar>(a: &Placed<T>, b: &Placed<T>, feature: usize) -> Option<Contact<T>> {
    if feature < EDGE_EDGE {
        let (o, v, f) = (feature / 48, (feature / 6) % 8, feature % 6);
        Some(if o == 0 {
            let (gap, x, m) = vertex_face(a, v, b, f);
            Contact {
                gap,
                point_a: x,
                point_b: x - m * gap,
                normal: m,
            }
        } else {
            let (gap, x, m) = vertex_face(b, v, a, f);
            Contact {
                gap,
                point_a: x - m * gap,
                point_b: x,
                normal: -m,
            }
        })
    } else if feature < EDGE_POINT {
        let k = feature - EDGE_EDGE;
        Some(edge_edge(a, k / 12, b, k % 12))
    } else if feature < FEATURES {
        let k = feature - EDGE_POINT;
        let t = k % T_LEVELS;
        let k = k / T_LEVELS;
        let (o, e, f) = (k / 72, (k / 6) % 12, k % 6);
        let s = T::from_re(2.0 * t as f64 / (T_LEVELS - 1) as f64 - 1.0);
        let (pb, fb) = if o == 0 { (a, b) } else { (b, a) };
        let (mid, dir, half) = pb.edge(e);
        let x = mid + dir * (half * s);
        let ax = f / 2;
        let m = if f % 2 == 1 {
            fb.axes[ax]
        } else {
            -fb.axes[ax]
        };
        let gap = m.dot(&x) - (m.dot(&fb.c) + fb.h[ax]);
        Some(if o == 0 {
            Contact {
                gap,
                point_a: x,
                point_b: x - m * gap,
                normal: m,
            }
        } else {
            Contact {
                gap,
                point_a: x - m * gap,
                point_b: x,
                normal: -m,
            }
        })
    } else {
        None
    }
}

/// Contact `feature` (module docs) of box a (half extents `ha`) at
/// `pose_a` against box b at `pose_b`, at any poses; `None` for an index
/// `≥ FEATURES`.
///
/// ```
/// use dualsim::collision::box_box::box_box_feature;
/// use dualsim::math::{Pose, so3, Vec3};
/// let h = Vec3::<f64>::new(0.5, 0.5, 0.5);
/// let above = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, 1.1));
/// // Vertex 0 (−x, −y, −z) of a against face +z (f = 5) of b.
/// let c = box_box_feature(&above, &h, &Pose::identity(), &h, 5).unwrap();
/// assert!((c.gap - 0.1).abs() < 1e-15 && c.normal == Vec3::z());
/// ```
pub fn box_box_feature<T: Scalar>(
    pose_a: &Pose<T>,
    ha: &Vec3<T>,
    pose_b: &Pose<T>,
    hb: &Vec3<T>,
    feature: usize,
) -> Option<Contact<T>> {
    evaluate(&Placed::new(pose_a, ha), &Placed::new(pose_b, hb), feature)
}

/// Separation of the boxes along unit axis `l` (negative: overlap).
fn separation(a: &Placed<f64>, b: &Placed<f64>, l: &Vec3<f64>) -> f64 {
    let ra: f64 = (0..3).map(|k| a.h[k] * l.dot(&a.axes[k]).abs()).sum();
    let rb: f64 = (0..3).map(|k| b.h[k] * l.dot(&b.axes[k]).abs()).sum();
    l.dot(&(b.c - a.c)).abs() - ra - rb
}

/// The contacts of box a (half extents `ha`) at `pose_a` against box b at
/// `pose_b`, each with its feature index (module docs): one edge–edge
/// contact, or up to 8 points of the clipped incident face. Contacts at
/// any gap are returned (the caller keeps those below its distance); a
/// face pair whose projections do not overlap gives none.
///
/// ```
/// use dualsim::collision::box_box::box_box;
/// use dualsim::math::{Pose, so3, Vec3};
/// // A 0.2 m cube 0.01 m into a 1 m cube's top face: its 4 bottom corners.
/// let big = Vec3::<f64>::new(0.5, 0.5, 0.5);
/// let small = Vec3::<f64>::new(0.1, 0.1, 0.1);
/// let top = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, 0.59));
/// let cs = box_box(&top, &small, &Pose::identity(), &big);
/// assert_eq!(cs.len(), 4);
/// for (_, c) in &cs {
///     assert!((c.gap + 0.01).abs() < 1e-12 && c.normal == Vec3::z());
/// }
/// ```
pub fn box_box<T: Scalar>(
    pose_a: &Pose<T>,
    ha: &Vec3<T>,
    pose_b: &Pose<T>,
    hb: &Vec3<T>,
) -> Vec<(usize, Contact<T>)> {
    let a = Placed::new(pose_a, ha);
    let b = Placed::new(pose_b, hb);
    let (af, bf) = (a.re(), b.re());
    let scale = af.h.amax().max(bf.h.amax());
    let tol = REL_TOL * scale;
    let d = bf.c - af.c;

    // Face axes: (separation, reference is a, axis).
    let mut face = (f64::NEG_INFINITY, true, 0);
    for (is_a, r) in [(true, &af), (false, &bf)] {
        for k in 0..3 {
            let s = separation(&af, &bf, &r.axes[k]);
            if s > face.0 {
                face = (s, is_a, k);
            }
        }
    }
    // Edge axes.
    let mut edge = (f64::NEG_INFINITY, 0, 0, Vec3::zeros());
    for i in 0..3 {
        for j in 0..3 {
            let l = af.axes[i].cross(&bf.axes[j]);
            let n = l.norm();
            if n < 1e-6 {
                continue;
            }
            let l = l / n;
            let s = separation(&af, &bf, &l);
            if s > edge.0 {
                edge = (s, i, j, l);
            }
        }
    }
    if edge.0 > face.0 + EDGE_BIAS * face.0.abs() + tol {
        let (_, i, j, l) = edge;
        // Axis from a to b; each box's edge farthest towards the other.
        let l = l * sign(l.dot(&d));
        let sa: [f64; 3] = core::array::from_fn(|k| sign(af.axes[k].dot(&l)));
        let sb: [f64; 3] = core::array::from_fn(|k| sign(-bf.axes[k].dot(&l)));
        let (ea, eb) = (edge_id(i, sa), edge_id(j, sb));
        let c = edge_edge(&a, ea, &b, eb);
        // Keep it if the closest points lie on both edges.
        let (ma, ua, la) = af.edge(ea);
        let (mb, ub, lb) = bf.edge(eb);
        let on_a = ua.dot(&(c.point_a.map(|x| x.re()) - ma)).abs() <= la + tol;
        let on_b = ub.dot(&(c.point_b.map(|x| x.re()) - mb)).abs() <= lb + tol;
        if on_a && on_b {
            return vec![(EDGE_EDGE + 12 * ea + eb, c)];
        }
    }
    face_contacts(&a, &b, &af, &bf, face.1, face.2, tol)
}

/// The clipped incident face against reference face axis `k` of a
/// (`ref_a`) or b.
fn face_contacts<T: Scalar>(
    a: &Placed<T>,
    b: &Placed<T>,
    af: &Placed<f64>,
    bf: &Placed<f64>,
    ref_a: bool,
    k: usize,
    tol: f64,
) -> Vec<(usize, Contact<T>)> {
    let (r, i) = if ref_a { (af, bf) } else { (bf, af) };
    // Reference face: outward normal towards the incident box.
    let sr = sign(r.axes[k].dot(&(i.c - r.c)));
    let n = r.axes[k] * sr;
    let (k1, k2) = ((k + 1) % 3, (k + 2) % 3);
    let cr = r.c + n * r.h[k];
    let proj = |x: &Vec3<f64>| [r.axes[k1].dot(&(x - cr)), r.axes[k2].dot(&(x - cr))];
    // Incident face: most anti-parallel to n.
    let j = (0..3)
        .max_by(|&x, &y| i.axes[x].dot(&n).abs().total_cmp(&i.axes[y].dot(&n).abs()))
        .unwrap_or(0);
    let si = -sign(i.axes[j].dot(&n));
    let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
    let ci = i.c + i.axes[j] * (si * i.h[j]);

    // Feature ids in (a, b) order.
    let vf = |vertex_of_a: bool, v: usize, f: usize| (usize::from(!vertex_of_a) * 8 + v) * 6 + f;
    // Clip points (2-D, on the reference face), each with its excess: how
    // far (≤ tol) it lies outside the true clipped polygon, and its
    // feature. Of two points within `merge` (twice the tests' tolerance,
    // so that a point accepted at its edge still finds its partner
    // through round-off) of each other the one of
    // smaller excess is kept (the first of equal excess): a point
    // accepted by the tolerance of a test (an incident vertex up to `tol`
    // outside the rectangle) gives way to the point on the polygon next
    // to it (the crossing of its edge with the side). Keeping the first
    // instead made the contact point jump by `tol` where the excess
    // passes `tol` (faces flush within `tol`: `box_tower`'s boxes), a
    // jump of the step map that finite differences see.
    let merge = 2.0 * tol;
    let mut pts: Vec<([f64; 2], f64, usize)> = Vec::with_capacity(8);
    let mut add = |p: [f64; 2], excess: f64, feature: usize| match pts
        .iter_mut()
        .find(|(q, _, _)| (q[0] - p[0]).abs() <= merge && (q[1] - p[1]).abs() <= merge)
    {
        Some(kept) if excess < kept.1 => *kept = (p, excess, feature),
        Some(_) => {}
        None => pts.push((p, excess, feature)),
    };
    let outside = |p: [f64; 2], h1: f64, h2: f64| (p[0].abs() - h1).max(p[1].abs() - h2).max(0.0);
    let mut signs = [0.0; 3];
    // Incident vertices inside the reference rectangle.
    signs[j] = si;
    for (s1, s2) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
        signs[j1] = s1;
        signs[j2] = s2;
        let v = vertex_id(signs);
        let p = proj(&i.vertex(v));
        if p[0].abs() <= r.h[k1] + tol && p[1].abs() <= r.h[k2] + tol {
            add(
                p,
                outside(p, r.h[k1], r.h[k2]),
                vf(!ref_a, v, face_id(k, sr)),
            );
        }
    }
    // Reference corners inside the incident quad.
    signs = [0.0; 3];
    signs[k] = sr;
    for (s1, s2) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
        signs[k1] = s1;
        signs[k2] = s2;
        let v = vertex_id(signs);
        let x = r.vertex(v);
        let q = [i.axes[j1].dot(&(x - ci)), i.axes[j2].dot(&(x - ci))];
        if q[0].abs() <= i.h[j1] + tol && q[1].abs() <= i.h[j2] + tol {
            add(
                proj(&x),
                outside(q, i.h[j1], i.h[j2]),
                vf(ref_a, v, face_id(j, si)),
            );
        }
    }
    // Incident edges crossing the reference rectangle's sides.
    let face_edges = |ax: usize, s: f64, x1: usize, x2: usize| {
        let mut v = Vec::with_capacity(4);
        for (along, other) in [(x1, x2), (x2, x1)] {
            for so in [-1.0, 1.0] {
                let mut sg = [0.0; 3];
                sg[ax] = s;
                sg[other] = so;
                v.push((edge_id(along, sg), other, so));
            }
        }
        v
    };
    for (ei, _, _) in face_edges(j, si, j1, j2) {
        let (m, u, l) = i.edge(ei);
        let (p0, p1) = (proj(&(m - u * l)), proj(&(m + u * l)));
        for (er, across, so) in face_edges(k, sr, k1, k2) {
            // The side is where the 2-D coordinate of axis `across` is
            // `so · h`; the coordinate along it must stay within its edge.
            // An edge within `tol` of parallel to the side does not cross
            // it (its end points, kept above, are the polygon's corners
            // there), so a tiny turn adds no point.
            let (c, o) = if across == k1 { (0, 1) } else { (1, 0) };
            let along_h = if across == k1 { r.h[k2] } else { r.h[k1] };
            let den = p1[c] - p0[c];
            if den.abs() <= tol {
                continue;
            }
            let t = (so * r.h[across] - p0[c]) / den;
            // Up to `tol` beyond the edge's ends (the same tolerance as
            // the merging below, so that such a point merges with the
            // end vertex next to it instead of standing beside it) …
            let t_tol = tol / (2.0 * l);
            if !(-t_tol..=1.0 + t_tol).contains(&t) {
                continue;
            }
            let beyond = (t - t.clamp(0.0, 1.0)).abs() * 2.0 * l;
            let t = t.clamp(0.0, 1.0);
            let y = p0[o] + t * (p1[o] - p0[o]);
            if y.abs() > along_h + tol {
                continue;
            }
            let mut p = [0.0; 2];
            p[c] = so * r.h[across];
            p[o] = y;
            // Edges crossing at an angle: an edge–edge feature (its index
            // does not depend on the poses). Nearly parallel (sine below
            // `PARALLEL_SINE`): the point of incident edge `ei` at `t`
            // against the reference face.
            let feature = if u.cross(&r.edge(er).1).norm() >= PARALLEL_SINE {
                let (ea, eb) = if ref_a { (er, ei) } else { (ei, er) };
                EDGE_EDGE + 12 * ea + eb
            } else {
                let tq = (t * (T_LEVELS - 1) as f64).round() as usize;
                let o = usize::from(ref_a);
                EDGE_POINT + ((o * 12 + ei) * 6 + face_id(k, sr)) * T_LEVELS + tq
            };
            // … or beyond the side's end
            add(p, beyond.max(y.abs() - along_h).max(0.0), feature);
        }
    }
    pts.into_iter()
        .filter_map(|(_, _, feature)| evaluate(a, b, feature).map(|c| (feature, c)))
        .collect()
}
