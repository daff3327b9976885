//! Convex hull (a) against convex hull (b): GJK/EPA for the direction of
//! least separation, then the active features and, for resting faces,
//! face clipping (as [`box_box`](super::box_box) does for boxes and
//! Nimble's App. C for meshes).
//!
//! [`hull_hull_into`] runs parry's GJK (EPA when the hulls overlap) on the two
//! hulls' support maps (in f64, on primal values) for the unit direction
//! `n` from a to b of least separation. The support sets of both hulls
//! along it (the vertices within `1e-7 R` of the support value, `R` the
//! hull's radius) name the witness features — a vertex, an edge or a
//! face of each — and give one contact:
//!
//! * **vertex–face** (a vertex against the other's face plane): `gap =
//!   m · x − d`, normal the face's outward normal `m`;
//! * **edge–edge**: the closest points of the two edge lines, normal
//!   `± e_a × e_b / ‖e_a × e_b‖`;
//! * **vertex–edge**, **vertex–vertex** (separated hulls only): the
//!   closest points of the vertex and the edge line, or the two vertices,
//!   normal along their difference.
//!
//! The normal of each is oriented from b to a (outward of b at its witness
//! point, decided on primal values), and the gap is signed.
//!
//! **Face clipping.** When a face of either hull at the witness feature
//! is within [`FACE_ANGLE`] of the direction `n` (a resting or nearly
//! resting face), that face is the reference face and the face of the
//! other hull at its witness feature most anti-parallel to it the
//! incident face. Projected along the reference normal, the incident
//! vertices inside the reference polygon are vertex–face contacts on the
//! reference face, the reference vertices inside the incident polygon
//! vertex–face contacts on the incident face, and each crossing of an
//! incident edge with a reference edge at an angle whose sine is at least
//! 0.1 an edge–edge contact. So a hull resting on another gets the
//! corners of their overlap.
//!
//! Each contact is a **feature** with a fixed identity, evaluated in
//! closed form at any poses and in any scalar by [`hull_hull_feature`]
//! (the contact layer re-evaluates a candidate at every iterate, and in
//! dual numbers for derivatives: the derivatives of gap, points and normal
//! with respect to both poses are those of the feature's formula).
//! Indices (64-bit `usize`, vertices and faces below 2²⁰, edges below
//! 2²⁴): vertex–face `o · 2⁴⁰ + v · 2²⁰ + f` (`o = 0`: vertex of a, face
//! of b; `o = 1`: vertex of b, face of a); edge–edge `2⁶⁰ + e_a · 2²⁴ +
//! e_b`; vertex–edge `2 · 2⁶⁰ + o · 2⁴⁸ + v · 2²⁴ + e`; vertex–vertex
//! `3 · 2⁶⁰ + v_a · 2²⁴ + v_b`.

use parry3d_f64::math::{Pose as PPose, Rot3 as PRot, Vector as PVec};
use parry3d_f64::query::details::contact_support_map_support_map;
use parry3d_f64::shape::SupportMap;

use super::{Contact, direction_or_z};
use crate::Scalar;
use crate::geometry::hull::HullMesh;
use crate::math::{Pose, Vec3, so3};

/// A face within this angle (rad) of the direction of least separation is
/// a reference face for clipping.
pub const FACE_ANGLE: f64 = 0.2;

/// Below this sine of their angle, a crossing of an incident and a
/// reference edge gives no edge–edge contact (nearly parallel edges have
/// no well-defined common normal; the vertices about them remain).
const PARALLEL_SINE: f64 = 0.1;

/// Support-set tolerance, relative to the hull's radius.
const SUPPORT_TOL: f64 = 1e-7;

/// Inside tests of the clipping accept points this far outside, relative
/// to the larger hull's radius.
const CLIP_TOL: f64 = 1e-9;

const KIND: usize = 1 << 60;
const VF: usize = 0;
const EE: usize = 1;
const VE: usize = 2;
const VV: usize = 3;
const B20: usize = 1 << 20;
const B24: usize = 1 << 24;

/// Largest vertex, face or edge count [`hull_hull_into`] takes (the indices
/// must fit the feature encoding).
pub const MAX_ELEMENTS: usize = B20;

/// Vertex–face feature index (module docs).
pub fn vertex_face_id(o: usize, v: usize, f: usize) -> usize {
    VF * KIND + o * (1 << 40) + v * B20 + f
}

/// Edge–edge feature index.
pub fn edge_edge_id(ea: usize, eb: usize) -> usize {
    EE * KIND + ea * B24 + eb
}

fn vertex_edge_id(o: usize, v: usize, e: usize) -> usize {
    VE * KIND + o * (1 << 48) + v * B24 + e
}

fn vertex_vertex_id(va: usize, vb: usize) -> usize {
    VV * KIND + va * B24 + vb
}

/// A hull at a pose, for evaluation in `T`.
struct Placed<'h, T: Scalar> {
    hull: &'h HullMesh,
    pose: &'h Pose<T>,
}

impl<T: Scalar> Placed<'_, T> {
    fn vertex(&self, v: usize) -> Option<Vec3<T>> {
        Some(self.pose.act(&self.hull.vertices.get(v)?.map(T::from_re)))
    }

    /// Face `f`'s world plane `(m, d)`: `m · x ≤ d` inside.
    fn plane(&self, f: usize) -> Option<(Vec3<T>, T)> {
        let n = self.hull.normals.get(f)?.map(T::from_re);
        let b = T::from_re(*self.hull.offsets.get(f)?);
        Some(super::world_plane(&n, b, self.pose))
    }

    /// Edge `e`: a point on it and its unit direction.
    fn edge(&self, e: usize) -> Option<(Vec3<T>, Vec3<T>)> {
        let [i, j] = *self.hull.edges.get(e)?;
        let x0 = self.vertex(i as usize)?;
        let x1 = self.vertex(j as usize)?;
        Some((x0, direction_or_z(&(x1 - x0)).0))
    }

    /// Orients `m` outward of this hull at its surface point `x` (the
    /// hull's origin is interior): `(m, 1)` or `(−m, −1)`.
    fn outward(&self, m: Vec3<T>, x: &Vec3<T>) -> (Vec3<T>, T) {
        let r = (x - self.pose.translation).map(|c| c.re());
        if m.map(|c| c.re()).dot(&r) < 0.0 {
            (-m, -T::one())
        } else {
            (m, T::one())
        }
    }
}

fn vertex_face<T: Scalar>(
    v: &Placed<T>,
    vi: usize,
    f: &Placed<T>,
    fi: usize,
) -> Option<(T, Vec3<T>, Vec3<T>)> {
    let x = v.vertex(vi)?;
    let (m, d) = f.plane(fi)?;
    Some((m.dot(&x) - d, x, m))
}

/// Closest points of the lines of edge `ea` of `a` and `eb` of `b`.
fn edge_edge<T: Scalar>(a: &Placed<T>, ea: usize, b: &Placed<T>, eb: usize) -> Option<Contact<T>> {
    let (pa, ua) = a.edge(ea)?;
    let (pb, ub) = b.edge(eb)?;
    let w = pa - pb;
    let bb = ua.dot(&ub);
    let d = ua.dot(&w);
    let e = ub.dot(&w);
    let den = T::one() - bb * bb;
    let (xa, xb, n) = if den.re() > 1e-12 {
        let s = (bb * e - d) / den;
        let t = (e - bb * d) / den;
        (pa + ua * s, pb + ub * t, direction_or_z(&ua.cross(&ub)).0)
    } else {
        // Parallel edges (never selected; a feature evaluated far from
        // where it was selected): the common perpendicular through a's point.
        let xb = pb + ub * e;
        (pa, xb, direction_or_z(&(pa - xb)).0)
    };
    let (n, _) = b.outward(n, &xb);
    Some(Contact {
        gap: n.dot(&(xa - xb)),
        point_a: xa,
        point_b: xb,
        normal: n,
    })
}

/// Vertex `vi` of `v` against the line of edge `ei` of `e`: `(x, y, m)`
/// with `y` the closest point of the line, `m` outward of `e`.
fn vertex_edge<T: Scalar>(
    v: &Placed<T>,
    vi: usize,
    e: &Placed<T>,
    ei: usize,
) -> Option<(Vec3<T>, Vec3<T>, Vec3<T>)> {
    let x = v.vertex(vi)?;
    let (p, u) = e.edge(ei)?;
    let y = p + u * u.dot(&(x - p));
    let (m, _) = e.outward(direction_or_z(&(x - y)).0, &y);
    Some((x, y, m))
}

/// Contact `feature` ([module docs](self)) of hull a at `pose_a` against
/// hull b at `pose_b`, at any poses; `None` for an index that names no
/// feature of these hulls.
///
/// ```
/// use dualsim::collision::hull_hull::{hull_hull_feature, vertex_face_id};
/// use dualsim::geometry::mesh::convex_hull;
/// use dualsim::math::{Pose, so3, Vec3};
/// let cube: Vec<Vec3<f64>> = (0..8)
///     .map(|i| Vec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
///     .collect();
/// let h = convex_hull(&cube).unwrap().mesh;
/// let above = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, 1.1));
/// // a vertex of a (z = −0.5 about the centre) against b's top face
/// let v = (0..8).find(|&k| h.vertices[k].z < 0.0).unwrap();
/// let f = (0..6).find(|&k| h.normals[k].z > 0.5).unwrap();
/// let c = hull_hull_feature::<f64>(&above, &h, &Pose::identity(), &h, vertex_face_id(0, v, f)).unwrap();
/// assert!((c.gap - 0.1).abs() < 1e-12 && (c.normal - Vec3::z()).norm() < 1e-12);
/// ```
pub fn hull_hull_feature<T: Scalar>(
    pose_a: &Pose<T>,
    hull_a: &HullMesh,
    pose_b: &Pose<T>,
    hull_b: &HullMesh,
    feature: usize,
) -> Option<Contact<T>> {
    let a = Placed {
        hull: hull_a,
        pose: pose_a,
    };
    let b = Placed {
        hull: hull_b,
        pose: pose_b,
    };
    let (kind, k) = (feature / KIND, feature % KIND);
    match kind {
        VF => {
            let (o, v, f) = (k >> 40, (k >> 20) % B20, k % B20);
            if o == 0 {
                let (gap, x, m) = vertex_face(&a, v, &b, f)?;
                Some(Contact {
                    gap,
                    point_a: x,
                    point_b: x - m * gap,
                    normal: m,
                })
            } else if o == 1 {
                let (gap, x, m) = vertex_face(&b, v, &a, f)?;
                Some(Contact {
                    gap,
                    point_a: x - m * gap,
                    point_b: x,
                    normal: -m,
                })
            } else {
                None
            }
        }
        EE => edge_edge(&a, k / B24, &b, k % B24),
        VE => {
            let (o, v, e) = (k >> 48, (k >> 24) % B24, k % B24);
            if o == 0 {
                let (x, y, m) = vertex_edge(&a, v, &b, e)?;
                Some(Contact {
                    gap: m.dot(&(x - y)),
                    point_a: x,
                    point_b: y,
                    normal: m,
                })
            } else if o == 1 {
                let (x, y, m) = vertex_edge(&b, v, &a, e)?;
                Some(Contact {
                    gap: m.dot(&(x - y)),
                    point_a: y,
                    point_b: x,
                    normal: -m,
                })
            } else {
                None
            }
        }
        VV => {
            let xa = a.vertex(k / B24)?;
            let xb = b.vertex(k % B24)?;
            let (m, _) = b.outward(direction_or_z(&(xa - xb)).0, &xb);
            Some(Contact {
                gap: m.dot(&(xa - xb)),
                point_a: xa,
                point_b: xb,
                normal: m,
            })
        }
        _ => None,
    }
}

/// A hull's support map for parry's GJK/EPA: the best vertex by hill
/// climbing over the vertex graph from the last answer.
struct Support<'h> {
    hull: &'h HullMesh,
    last: core::cell::Cell<usize>,
}

impl SupportMap for Support<'_> {
    fn local_support_point(&self, dir: PVec) -> PVec {
        let (k, _) = self
            .hull
            .support_from(&Vec3::new(dir.x, dir.y, dir.z), self.last.get());
        self.last.set(k);
        let v = self.hull.vertices[k];
        PVec::new(v.x, v.y, v.z)
    }
}

fn ppose(p: &Pose<f64>) -> PPose {
    let r = p.rotation;
    let t = p.translation;
    PPose::from_parts(
        PVec::new(t.x, t.y, t.z),
        PRot::from_xyzw(r.i, r.j, r.k, r.w),
    )
}

/// Vertices of `hull` within `tol` of its support value along `dir`,
/// into `out` (cleared first).
fn support_set(hull: &HullMesh, dir: &Vec3<f64>, tol: f64, out: &mut Vec<u32>) {
    out.clear();
    let (_, s) = hull.support(dir);
    out.extend(
        (0..hull.vertices.len())
            .filter(|&k| hull.vertices[k].dot(dir) >= s - tol)
            .map(|k| k as u32),
    );
}

/// The face of `hull` containing vertex `v` best aligned with `dir`
/// (local frame): `(face, cosine)`.
fn best_face(hull: &HullMesh, v: usize, dir: &Vec3<f64>) -> (usize, f64) {
    let mut best = (usize::MAX, f64::NEG_INFINITY);
    for &f in hull.faces_of_vertex(v) {
        let c = hull.normals[f as usize].dot(dir);
        if c > best.1 {
            best = (f as usize, c);
        }
    }
    best
}

/// Index of the edge `{i, j}` of `hull`, if it is one.
fn edge_index(hull: &HullMesh, i: u32, j: u32) -> Option<usize> {
    hull.edges.binary_search(&[i.min(j), i.max(j)]).ok()
}

/// Reused buffers of [`hull_hull_into`].
#[derive(Clone, Debug, Default)]
pub struct HullScratch {
    sa: Vec<u32>,
    sb: Vec<u32>,
    ids: Vec<usize>,
    rp: Vec<(f64, f64)>,
    ip: Vec<(f64, f64)>,
}

/// One side of a face clipping: a hull at a pose and one of its faces.
struct Side<'h> {
    pose: &'h Pose<f64>,
    hull: &'h HullMesh,
    face: usize,
}

/// The witness feature of the support sets `sa` (of a) and `sb` (of b).
fn witness_feature(
    ha: &HullMesh,
    sa: &[u32],
    hb: &HullMesh,
    sb: &[u32],
    dir_a: &Vec3<f64>,
    dir_b: &Vec3<f64>,
) -> Option<usize> {
    // classify a support set: vertex, edge (its index) or face (its index)
    enum W {
        V(usize),
        E(usize),
        F(usize),
    }
    let classify = |h: &HullMesh, s: &[u32], dir: &Vec3<f64>| -> Option<W> {
        Some(match s.len() {
            0 => return None,
            1 => W::V(s[0] as usize),
            2 => match edge_index(h, s[0], s[1]) {
                Some(e) => W::E(e),
                None => W::F(best_face(h, s[0] as usize, dir).0),
            },
            _ => W::F(best_face(h, s[0] as usize, dir).0),
        })
    };
    Some(match (classify(ha, sa, dir_a)?, classify(hb, sb, dir_b)?) {
        (W::V(v), W::F(f)) => vertex_face_id(0, v, f),
        (W::F(f), W::V(v)) => vertex_face_id(1, v, f),
        (W::E(ea), W::E(eb)) => edge_edge_id(ea, eb),
        (W::V(v), W::E(e)) => vertex_edge_id(0, v, e),
        (W::E(e), W::V(v)) => vertex_edge_id(1, v, e),
        (W::V(va), W::V(vb)) => vertex_vertex_id(va, vb),
        // an edge or a face against a face: parallel features, whose
        // contacts the clipping gives
        _ => return None,
    })
}

/// The contacts of hull a at `pose_a` against hull b at `pose_b`, each with
/// its feature index ([module docs](self)), appended to `out`; `false`
/// when GJK/EPA finds no direction (nothing appended) or a hull is too
/// large for the feature encoding. Contacts at any gap are returned (the
/// caller keeps those below its distance).
pub fn hull_hull_into<T: Scalar>(
    pose_a: &Pose<T>,
    hull_a: &HullMesh,
    pose_b: &Pose<T>,
    hull_b: &HullMesh,
    scratch: &mut HullScratch,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let big = |h: &HullMesh| {
        h.vertices.len() >= MAX_ELEMENTS
            || h.normals.len() >= MAX_ELEMENTS
            || h.edges.len() >= MAX_ELEMENTS
    };
    if big(hull_a) || big(hull_b) {
        return false;
    }
    let pa = pose_a.cast::<f64>();
    let pb = pose_b.cast::<f64>();
    let pos12 = ppose(&pa).inverse() * ppose(&pb);
    let Some(c) = contact_support_map_support_map(
        &pos12,
        &Support {
            hull: hull_a,
            last: Default::default(),
        },
        &Support {
            hull: hull_b,
            last: Default::default(),
        },
        f64::MAX,
    ) else {
        return false;
    };
    // directions of a toward b (a's frame) and of b toward a (b's frame)
    let dir_a = Vec3::new(c.normal1.x, c.normal1.y, c.normal1.z);
    let dir_b = Vec3::new(c.normal2.x, c.normal2.y, c.normal2.z);
    if !(dir_a.iter().chain(dir_b.iter()).all(|x| x.is_finite())) {
        return false;
    }
    let HullScratch {
        sa,
        sb,
        ids,
        rp,
        ip,
    } = scratch;
    let scratch2 = (rp, ip);
    support_set(hull_a, &dir_a, SUPPORT_TOL * hull_a.radius, sa);
    support_set(hull_b, &dir_b, SUPPORT_TOL * hull_b.radius, sb);
    ids.clear();
    ids.extend(witness_feature(hull_a, sa, hull_b, sb, &dir_a, &dir_b));
    let (fa, ca) = best_face(hull_a, sa[0] as usize, &dir_a);
    let (fb, cb) = best_face(hull_b, sb[0] as usize, &dir_b);
    if ca.max(cb) >= FACE_ANGLE.cos() {
        // reference face: the better aligned; incident: the other hull's face
        // at its witness most anti-parallel to it
        let world_dir = |p: &Pose<f64>, d: &Vec3<f64>| so3::rotate(&p.rotation, d);
        let tol = CLIP_TOL * hull_a.radius.max(hull_b.radius);
        if ca >= cb {
            let nr = world_dir(&pa, &hull_a.normals[fa]);
            let (fi, _) = best_face(hull_b, sb[0] as usize, &-so3::rotate_inv(&pb.rotation, &nr));
            let side = Side {
                pose: &pb,
                hull: hull_b,
                face: fi,
            };
            clip(
                &Side {
                    pose: &pa,
                    hull: hull_a,
                    face: fa,
                },
                &side,
                1,
                &nr,
                tol,
                scratch2,
                ids,
            );
        } else {
            let nr = world_dir(&pb, &hull_b.normals[fb]);
            let (fi, _) = best_face(hull_a, sa[0] as usize, &-so3::rotate_inv(&pa.rotation, &nr));
            let side = Side {
                pose: &pa,
                hull: hull_a,
                face: fi,
            };
            clip(
                &Side {
                    pose: &pb,
                    hull: hull_b,
                    face: fb,
                },
                &side,
                0,
                &nr,
                tol,
                scratch2,
                ids,
            );
        }
    }
    ids.sort_unstable();
    ids.dedup();
    for &id in ids.iter() {
        if let Some(c) = hull_hull_feature(pose_a, hull_a, pose_b, hull_b, id) {
            out.push((id, c));
        }
    }
    true
}

/// Clips the incident face `inc` against the reference face `re` (world
/// normal `nr`); `o_inc` is the side of the incident hull in the feature
/// encoding (`0`: a, `1`: b). Appends the feature indices to `ids`.
fn clip(
    re: &Side,
    inc: &Side,
    o_inc: usize,
    nr: &Vec3<f64>,
    tol: f64,
    (rp_buf, ip_buf): (&mut Vec<(f64, f64)>, &mut Vec<(f64, f64)>),
    ids: &mut Vec<usize>,
) {
    let (u, w) = crate::collision::frame::tangent_basis(nr);
    let proj = |s: &Side, v: u32| {
        let x = s.pose.act(&s.hull.vertices[v as usize]);
        (x.dot(&u), x.dot(&w))
    };
    let (hr, fr, hi, fi) = (re.hull, re.face, inc.hull, inc.face);
    let ref_face = hr.face(fr);
    let inc_face = hi.face(fi);
    rp_buf.clear();
    rp_buf.extend(ref_face.iter().map(|&v| proj(re, v)));
    ip_buf.clear();
    ip_buf.extend(inc_face.iter().map(|&v| proj(inc, v)));
    let (rp, ip) = (&rp_buf[..], &ip_buf[..]);
    // signed area orientation
    let orient = |p: &[(f64, f64)]| {
        let mut a = 0.0;
        for k in 0..p.len() {
            let (x0, y0) = p[k];
            let (x1, y1) = p[(k + 1) % p.len()];
            a += x0 * y1 - x1 * y0;
        }
        if a >= 0.0 { 1.0 } else { -1.0 }
    };
    let inside = |poly: &[(f64, f64)], s: f64, q: (f64, f64)| {
        (0..poly.len()).all(|k| {
            let (x0, y0) = poly[k];
            let (x1, y1) = poly[(k + 1) % poly.len()];
            let (ex, ey) = (x1 - x0, y1 - y0);
            let len = (ex * ex + ey * ey).sqrt();
            s * (ex * (q.1 - y0) - ey * (q.0 - x0)) >= -tol * len
        })
    };
    let sr = orient(rp);
    let o_ref = 1 - o_inc;
    for (k, &v) in inc_face.iter().enumerate() {
        if inside(rp, sr, ip[k]) {
            ids.push(vertex_face_id(o_inc, v as usize, fr));
        }
    }
    // crossings of incident and reference edges
    for i in 0..inc_face.len() {
        let (i0, i1) = (ip[i], ip[(i + 1) % ip.len()]);
        let di = (i1.0 - i0.0, i1.1 - i0.1);
        for r in 0..ref_face.len() {
            let (r0, r1) = (rp[r], rp[(r + 1) % rp.len()]);
            let dr = (r1.0 - r0.0, r1.1 - r0.1);
            let den = di.0 * dr.1 - di.1 * dr.0;
            let (li, lr) = (
                (di.0 * di.0 + di.1 * di.1).sqrt(),
                (dr.0 * dr.0 + dr.1 * dr.1).sqrt(),
            );
            if !(den.abs() >= PARALLEL_SINE * li * lr) {
                continue;
            }
            let (qx, qy) = (r0.0 - i0.0, r0.1 - i0.1);
            let t = (qx * dr.1 - qy * dr.0) / den;
            let s = (qx * di.1 - qy * di.0) / den;
            let world = |sd: &Side, face: &[u32], k: usize| {
                sd.pose
                    .act(&sd.hull.vertices[face[k % face.len()] as usize])
            };
            if (0.0..=1.0).contains(&t)
                && (0.0..=1.0).contains(&s)
                && lines_meet_within(
                    &world(inc, inc_face, i),
                    &world(inc, inc_face, i + 1),
                    &world(re, ref_face, r),
                    &world(re, ref_face, r + 1),
                )
            {
                let ei = edge_index(hi, inc_face[i], inc_face[(i + 1) % inc_face.len()]);
                let er = edge_index(hr, ref_face[r], ref_face[(r + 1) % ref_face.len()]);
                if let (Some(ei), Some(er)) = (ei, er) {
                    ids.push(if o_inc == 0 {
                        edge_edge_id(ei, er)
                    } else {
                        edge_edge_id(er, ei)
                    });
                }
            }
        }
    }
    // reference vertices whose foot on the incident face plane (along its
    // own normal) lies inside the incident polygon
    if inc_face.len() >= 3 {
        let mi = so3::rotate(&inc.pose.rotation, &hi.normals[fi]);
        let (u, w) = crate::collision::frame::tangent_basis(&mi);
        let proj = |sd: &Side, v: u32| {
            let x = sd.pose.act(&sd.hull.vertices[v as usize]);
            (x.dot(&u), x.dot(&w))
        };
        rp_buf.clear();
        rp_buf.extend(ref_face.iter().map(|&v| proj(re, v)));
        ip_buf.clear();
        ip_buf.extend(inc_face.iter().map(|&v| proj(inc, v)));
        let si = orient(ip_buf);
        for (k, &v) in ref_face.iter().enumerate() {
            if inside(ip_buf, si, rp_buf[k]) {
                ids.push(vertex_face_id(o_ref, v as usize, fi));
            }
        }
    }
}

/// Whether the closest points of the lines through `a0, a1` and `b0, b1`
/// lie on both segments (so that their distance is one between points of
/// the hulls).
fn lines_meet_within(a0: &Vec3<f64>, a1: &Vec3<f64>, b0: &Vec3<f64>, b1: &Vec3<f64>) -> bool {
    let (da, db, w) = (a1 - a0, b1 - b0, a0 - b0);
    let (aa, ab, bb) = (da.dot(&da), da.dot(&db), db.dot(&db));
    let (d, e) = (da.dot(&w), db.dot(&w));
    let den = aa * bb - ab * ab;
    if !(den > 1e-12 * aa * bb) {
        return false;
    }
    let s = (ab * e - bb * d) / den;
    let t = (aa * e - ab * d) / den;
    let slack = 1e-9;
    (-slack..=1.0 + slack).contains(&s) && (-slack..=1.0 + slack).contains(&t)
}
