//! The closed-form pairs as `#[kernel]`s: gap, witness points and normal
//! of one feature as a branch-free function of the two poses and the shape
//! sizes, with generated exact Jacobians (see the `#[kernel]` macro).
//!
//! Each pair kernel returns the contact as `[gap, point_a (3), point_b (3),
//! normal (3)]` (the conventions of [`Contact`](super::Contact)). A pose
//! is `[p (3), r (4)]` (position, quaternion `[w, x, y, z]`, not
//! normalized). The branches of the `f64` pair functions (which vertex,
//! which segment parameter is clamped, inside or outside the box) are
//! decided on primal values *outside* the kernel and passed in as
//! *selectors*: constant inputs whose Jacobian columns are ignored (e.g.
//! a box vertex's signs, or `t = w_t t_free + t_0` with `(w_t, t_0)` = (1, 0)
//! for an interior closest point and (0, 0) / (0, 1) for a clamped one).
//! [`selectors`] computes them with the same tests as the pair functions,
//! so that a kernel's value is the pair function's (to rounding) and its
//! Jacobian is the derivative of the pair function on the branch taken.
//!
//! Tested against the pair functions and num-dual in `tests/all/diff/kernels.rs`.

use crate::geometry::Shape;
use crate::math::{Pose, Vec3};
use crate::{Scalar, kernel};

/// `a · b`.
#[kernel]
pub fn dot3<T: Scalar>(a: [T; 3], b: [T; 3]) -> T {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `a × b`.
#[kernel]
pub fn cross3<T: Scalar>(a: [T; 3], b: [T; 3]) -> [T; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Rotation of `v` by the quaternion `q = [w, x, y, z]`
/// (`v + w t + u × t`, `t = 2 u × v`, as `math::so3::rotate`).
#[kernel(inline)]
pub fn rotate<T: Scalar>(q: [T; 4], v: [T; 3]) -> [T; 3] {
    let u = [q[1], q[2], q[3]];
    let c: [T; 3] = cross3(u, v);
    let t = [2 * c[0], 2 * c[1], 2 * c[2]];
    let ut: [T; 3] = cross3(u, t);
    [
        v[0] + t[0] * q[0] + ut[0],
        v[1] + t[1] * q[0] + ut[1],
        v[2] + t[2] * q[0] + ut[2],
    ]
}

/// `pose · x` for a pose `[p, r]`.
#[kernel(inline)]
pub fn act<T: Scalar>(pose: [T; 7], x: [T; 3]) -> [T; 3] {
    let rx: [T; 3] = rotate([pose[3], pose[4], pose[5], pose[6]], x);
    [rx[0] + pose[0], rx[1] + pose[1], rx[2] + pose[2]]
}

/// `pose⁻¹ · x = Rᵀ (x − p)`.
#[kernel(inline)]
pub fn act_inv<T: Scalar>(pose: [T; 7], x: [T; 3]) -> [T; 3] {
    rotate(
        [pose[3], -pose[4], -pose[5], -pose[6]],
        [x[0] - pose[0], x[1] - pose[1], x[2] - pose[2]],
    )
}

/// Sphere `(c, r)` against the world half-space `n · x ≤ d`.
#[kernel(jacobian, inline)]
pub fn sphere_plane_world<T: Scalar>(c: [T; 3], r: T, n: [T; 3], d: T) -> [T; 10] {
    let height = dot3(n, c) - d;
    [
        height - r,
        c[0] - n[0] * r,
        c[1] - n[1] * r,
        c[2] - n[2] * r,
        c[0] - n[0] * height,
        c[1] - n[1] * height,
        c[2] - n[2] * height,
        n[0],
        n[1],
        n[2],
    ]
}

/// Spheres `(ca, ra)`, `(cb, rb)` with distinct centres.
#[kernel(jacobian, inline)]
pub fn sphere_sphere_world<T: Scalar>(ca: [T; 3], ra: T, cb: [T; 3], rb: T) -> [T; 10] {
    let d = [ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]];
    let dist = sqrt(dot3(d, d));
    let n = [d[0] / dist, d[1] / dist, d[2] / dist];
    [
        dist - ra - rb,
        ca[0] - n[0] * ra,
        ca[1] - n[1] * ra,
        ca[2] - n[2] * ra,
        cb[0] + n[0] * rb,
        cb[1] + n[1] * rb,
        cb[2] + n[2] * rb,
        n[0],
        n[1],
        n[2],
    ]
}

/// The contact with `a` and `b` exchanged (as `Contact::flip`).
#[kernel]
pub fn flip<T: Scalar>(c: [T; 10]) -> [T; 10] {
    [
        c[0], c[4], c[5], c[6], c[1], c[2], c[3], -c[7], -c[8], -c[9],
    ]
}

/// The plane `nl · x ≤ off` given in the frame `pose`, in the world:
/// `[n (3), d]` (as `collision::world_plane`).
#[kernel(jacobian, inline)]
pub fn world_plane<T: Scalar>(nl: [T; 3], off: T, pose: [T; 7]) -> [T; 4] {
    let n: [T; 3] = rotate([pose[3], pose[4], pose[5], pose[6]], nl);
    [n[0], n[1], n[2], off + dot3(n, [pose[0], pose[1], pose[2]])]
}

/// End point `e = p + s R (0, 0, l)` of a capsule's segment (`s = −1`:
/// end 0, `s = 1`: end 1).
#[kernel(jacobian, inline)]
pub fn capsule_end<T: Scalar>(pose: [T; 7], l: T, s: T) -> [T; 3] {
    let ax: [T; 3] = rotate([pose[3], pose[4], pose[5], pose[6]], [0, 0, l]);
    [
        pose[0] + s * ax[0],
        pose[1] + s * ax[1],
        pose[2] + s * ax[2],
    ]
}

/// Sphere (radius `r`) at `pa` against the plane `(nl, off)` of the frame
/// `pb`.
#[kernel(jacobian, inline)]
pub fn sphere_plane<T: Scalar>(pa: [T; 7], r: T, pb: [T; 7], nl: [T; 3], off: T) -> [T; 10] {
    let pl: [T; 4] = world_plane(nl, off, pb);
    sphere_plane_world([pa[0], pa[1], pa[2]], r, [pl[0], pl[1], pl[2]], pl[3])
}

/// Capsule end `s` (selector, ±1) against a plane.
#[kernel(jacobian, inline)]
pub fn capsule_plane<T: Scalar>(
    pa: [T; 7],
    r: T,
    l: T,
    s: T,
    pb: [T; 7],
    nl: [T; 3],
    off: T,
) -> [T; 10] {
    let pl: [T; 4] = world_plane(nl, off, pb);
    let e: [T; 3] = capsule_end(pa, l, s);
    sphere_plane_world(e, r, [pl[0], pl[1], pl[2]], pl[3])
}

/// Box vertex with signs `sg` (selectors, ±1) against a plane.
#[kernel(jacobian, inline)]
pub fn box_plane<T: Scalar>(
    pa: [T; 7],
    half: [T; 3],
    sg: [T; 3],
    pb: [T; 7],
    nl: [T; 3],
    off: T,
) -> [T; 10] {
    let pl: [T; 4] = world_plane(nl, off, pb);
    let x: [T; 3] = act(pa, [sg[0] * half[0], sg[1] * half[1], sg[2] * half[2]]);
    let gap = pl[0] * x[0] + pl[1] * x[1] + pl[2] * x[2] - pl[3];
    [
        gap,
        x[0],
        x[1],
        x[2],
        x[0] - pl[0] * gap,
        x[1] - pl[1] * gap,
        x[2] - pl[2] * gap,
        pl[0],
        pl[1],
        pl[2],
    ]
}

/// Spheres at the origins of `pa`, `pb`.
#[kernel(jacobian, inline)]
pub fn sphere_sphere<T: Scalar>(pa: [T; 7], ra: T, pb: [T; 7], rb: T) -> [T; 10] {
    sphere_sphere_world([pa[0], pa[1], pa[2]], ra, [pb[0], pb[1], pb[2]], rb)
}

/// Capsule `(pa, ra, la)` against the sphere `(pb, rb)`; the segment
/// parameter is `t = wt t_free + t0` (selectors).
#[kernel(jacobian, inline)]
pub fn capsule_sphere<T: Scalar>(
    pa: [T; 7],
    ra: T,
    la: T,
    wt: T,
    t0: T,
    pb: [T; 7],
    rb: T,
) -> [T; 10] {
    let e0: [T; 3] = capsule_end(pa, la, -1);
    let e1: [T; 3] = capsule_end(pa, la, 1);
    let d = [e1[0] - e0[0], e1[1] - e0[1], e1[2] - e0[2]];
    let cb = [pb[0], pb[1], pb[2]];
    let t = wt * (dot3([cb[0] - e0[0], cb[1] - e0[1], cb[2] - e0[2]], d) / dot3(d, d)) + t0;
    sphere_sphere_world(
        [e0[0] + d[0] * t, e0[1] + d[1] * t, e0[2] + d[2] * t],
        ra,
        cb,
        rb,
    )
}

/// Capsule against capsule; the segment parameters are
/// `s = ws₀ s_free + ws₁ s_t0 + ws₂ s_t1 + s₀`, `t = wt t(s) + t₀`
/// (selectors; `s_t0`, `s_t1`: `s` with `t` clamped to 0, 1).
#[kernel(jacobian, inline)]
pub fn capsule_capsule<T: Scalar>(
    pa: [T; 7],
    ra: T,
    la: T,
    pb: [T; 7],
    rb: T,
    lb: T,
    sel: [T; 6],
) -> [T; 10] {
    let a0: [T; 3] = capsule_end(pa, la, -1);
    let a1: [T; 3] = capsule_end(pa, la, 1);
    let b0: [T; 3] = capsule_end(pb, lb, -1);
    let b1: [T; 3] = capsule_end(pb, lb, 1);
    let d1 = [a1[0] - a0[0], a1[1] - a0[1], a1[2] - a0[2]];
    let d2 = [b1[0] - b0[0], b1[1] - b0[1], b1[2] - b0[2]];
    let r = [a0[0] - b0[0], a0[1] - b0[1], a0[2] - b0[2]];
    let a = dot3(d1, d1);
    let e = dot3(d2, d2);
    let f = dot3(d2, r);
    let c = dot3(d1, r);
    let b = dot3(d1, d2);
    let denom = a * e - b * b;
    let s =
        sel[0] * ((b * f - c * e) / denom) + sel[1] * (-c / a) + sel[2] * ((b - c) / a) + sel[3];
    let t = sel[4] * ((b * s + f) / e) + sel[5];
    sphere_sphere_world(
        [a0[0] + d1[0] * s, a0[1] + d1[1] * s, a0[2] + d1[2] * s],
        ra,
        [b0[0] + d2[0] * t, b0[1] + d2[1] * t, b0[2] + d2[2] * t],
        rb,
    )
}

/// Sphere `(pa, r)` against the box `(pb, half)`, centre outside: the
/// clamped local point is `m_k half_k + w_k local_k` (selectors `m`
/// ∈ {−1, 0, 1}, `w = 1 − |m|`).
#[kernel(jacobian, inline)]
pub fn sphere_box_outside<T: Scalar>(
    pa: [T; 7],
    r: T,
    pb: [T; 7],
    half: [T; 3],
    m: [T; 3],
    w: [T; 3],
) -> [T; 10] {
    let c = [pa[0], pa[1], pa[2]];
    let l: [T; 3] = act_inv(pb, c);
    let q: [T; 3] = act(
        pb,
        [
            m[0] * half[0] + w[0] * l[0],
            m[1] * half[1] + w[1] * l[1],
            m[2] * half[2] + w[2] * l[2],
        ],
    );
    let d = [c[0] - q[0], c[1] - q[1], c[2] - q[2]];
    let dist = sqrt(dot3(d, d));
    let n = [d[0] / dist, d[1] / dist, d[2] / dist];
    [
        dist - r,
        c[0] - n[0] * r,
        c[1] - n[1] * r,
        c[2] - n[2] * r,
        q[0],
        q[1],
        q[2],
        n[0],
        n[1],
        n[2],
    ]
}

/// Sphere `(pa, r)` against the box `(pb, half)`, centre inside: the face
/// `m = ±e_k` (selector), `w = 1 − |m|`.
#[kernel(jacobian, inline)]
pub fn sphere_box_inside<T: Scalar>(
    pa: [T; 7],
    r: T,
    pb: [T; 7],
    half: [T; 3],
    m: [T; 3],
    w: [T; 3],
) -> [T; 10] {
    let c = [pa[0], pa[1], pa[2]];
    let l: [T; 3] = act_inv(pb, c);
    let depth = (1 - w[0]) * half[0] + (1 - w[1]) * half[1] + (1 - w[2]) * half[2] - dot3(m, l);
    let q: [T; 3] = act(
        pb,
        [
            w[0] * l[0] + m[0] * half[0],
            w[1] * l[1] + m[1] * half[1],
            w[2] * l[2] + m[2] * half[2],
        ],
    );
    let n: [T; 3] = rotate([pb[3], pb[4], pb[5], pb[6]], m);
    [
        -depth - r,
        c[0] - n[0] * r,
        c[1] - n[1] * r,
        c[2] - n[2] * r,
        q[0],
        q[1],
        q[2],
        n[0],
        n[1],
        n[2],
    ]
}

/// Which pair kernel computes a feature, with its selectors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PairKernel {
    /// [`sphere_plane`].
    SpherePlane,
    /// [`capsule_plane`] with the end sign.
    CapsulePlane(f64),
    /// [`box_plane`] with the vertex signs.
    BoxPlane([f64; 3]),
    /// [`sphere_sphere`].
    SphereSphere,
    /// [`capsule_sphere`] with `(wt, t0)`; `flip`: the capsule is `b`.
    CapsuleSphere {
        /// `(wt, t0)`.
        sel: [f64; 2],
        /// The capsule is `b`.
        flip: bool,
    },
    /// [`capsule_capsule`] with its selectors.
    CapsuleCapsule([f64; 6]),
    /// [`sphere_box_outside`] / [`sphere_box_inside`] with `(m, w)`;
    /// `flip`: the sphere is `b`.
    SphereBox {
        /// Centre inside the box.
        inside: bool,
        /// Clamp signs (outside) or face (inside).
        m: [f64; 3],
        /// `1 − |m|`.
        w: [f64; 3],
        /// The sphere is `b`.
        flip: bool,
    },
}

/// Parameter of the closest point of `[e0, e1]` to `p` as `(wt, t0)`
/// (the tests of `capsule_sphere::closest_on_segment`); `None` for a
/// degenerate segment.
fn segment_point_selectors(e0: &Vec3<f64>, e1: &Vec3<f64>, p: &Vec3<f64>) -> Option<[f64; 2]> {
    let d = e1 - e0;
    let dd = d.norm_squared();
    if dd <= 0.0 {
        return None;
    }
    let t = (p - e0).dot(&d) / dd;
    Some(if t <= 0.0 {
        [0.0, 0.0]
    } else if t >= 1.0 {
        [0.0, 1.0]
    } else {
        [1.0, 0.0]
    })
}

/// The branch of `capsule_capsule::closest_segment_segment` as
/// [`capsule_capsule`]'s selectors; `None` for degenerate segments.
fn segment_segment_selectors(
    a0: &Vec3<f64>,
    a1: &Vec3<f64>,
    b0: &Vec3<f64>,
    b1: &Vec3<f64>,
) -> Option<[f64; 6]> {
    let d1 = a1 - a0;
    let d2 = b1 - b0;
    let r = a0 - b0;
    let a = d1.norm_squared();
    let e = d2.norm_squared();
    let f = d2.dot(&r);
    let eps = 1e-12;
    if a <= eps || e <= eps {
        return None;
    }
    let c = d1.dot(&r);
    let b = d1.dot(&d2);
    let denom = a * e - b * b;
    // s as (weights of the free formulas, constant).
    let clamp = |x: f64, w: [f64; 3]| -> ([f64; 3], f64) {
        if x <= 0.0 {
            ([0.0; 3], 0.0)
        } else if x >= 1.0 {
            ([0.0; 3], 1.0)
        } else {
            (w, 0.0)
        }
    };
    if denom == 0.0 {
        // the blended kernel would evaluate 0 · ∞
        return None;
    }
    let (mut ws, mut s0) = if denom > eps * a * e {
        clamp((b * f - c * e) / denom, [1.0, 0.0, 0.0])
    } else {
        ([0.0; 3], 0.5)
    };
    let s = if ws[0] == 1.0 {
        (b * f - c * e) / denom
    } else {
        s0
    };
    let t = (b * s + f) / e;
    let (wt, t0) = if t < 0.0 {
        (ws, s0) = clamp(-c / a, [0.0, 1.0, 0.0]);
        (0.0, 0.0)
    } else if t > 1.0 {
        (ws, s0) = clamp((b - c) / a, [0.0, 0.0, 1.0]);
        (0.0, 1.0)
    } else {
        (1.0, 0.0)
    };
    Some([ws[0], ws[1], ws[2], s0, wt, t0])
}

/// Sphere centre `c` against the box `(pose, half)` as
/// `(inside, m, w)` selectors (the tests of `sphere_box::sphere_box`).
fn sphere_box_selectors(
    c: &Vec3<f64>,
    pose: &Pose<f64>,
    half: &Vec3<f64>,
) -> (bool, [f64; 3], [f64; 3]) {
    let local = pose.act_inv(c);
    let mut m = [0.0; 3];
    let mut inside = true;
    for k in 0..3 {
        if local[k] > half[k] {
            m[k] = 1.0;
            inside = false;
        } else if local[k] < -half[k] {
            m[k] = -1.0;
            inside = false;
        }
    }
    if !inside {
        return (false, m, m.map(|x| 1.0 - x.abs()));
    }
    let mut best = 0;
    let mut best_depth = f64::INFINITY;
    for k in 0..3 {
        let depth = half[k] - local[k].abs();
        if depth < best_depth {
            best_depth = depth;
            best = k;
        }
    }
    let mut m = [0.0; 3];
    m[best] = if local[best] >= 0.0 { 1.0 } else { -1.0 };
    (true, m, m.map(|x| 1.0 - x.abs()))
}

fn segment(pose: &Pose<f64>, half_length: f64) -> (Vec3<f64>, Vec3<f64>) {
    super::capsule_segment(half_length, pose)
}

/// The pair kernel and selectors of contact `feature` between `a` at
/// `pose_a` and `b` at `pose_b` (primal values, the same branches as
/// [`pair_contact`](super::pair_contact)): the `kernel` of the pair's row
/// in [`Table`](super::pairs::Table); `None` for pairs and degenerate
/// configurations the kernels do not cover (coincident sphere centres,
/// degenerate or exactly parallel segments, unsupported shapes).
pub fn selectors(
    a: &Shape<f64>,
    pose_a: &Pose<f64>,
    b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    super::pairs::kernel(a, pose_a, b, pose_b, feature)
}

impl PairKernel {
    /// The kernel of the same feature with `a` and `b` exchanged (`None`
    /// for kernels that take one order only).
    pub fn flipped(self) -> Option<PairKernel> {
        match self {
            PairKernel::CapsuleSphere { sel, flip } => {
                Some(PairKernel::CapsuleSphere { sel, flip: !flip })
            }
            PairKernel::SphereBox { inside, m, w, flip } => Some(PairKernel::SphereBox {
                inside,
                m,
                w,
                flip: !flip,
            }),
            _ => None,
        }
    }
}

fn distinct(x: &Vec3<f64>, y: &Vec3<f64>) -> bool {
    (x - y).norm_squared() != 0.0
}

/// Sphere–plane selectors (the table's row).
pub(crate) fn sphere_plane_selectors(
    _a: &Shape<f64>,
    _pose_a: &Pose<f64>,
    _b: &Shape<f64>,
    _pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    (feature == 0).then_some(PairKernel::SpherePlane)
}

/// Capsule–plane selectors: the end sign of `feature`.
pub(crate) fn capsule_plane_selectors(
    _a: &Shape<f64>,
    _pose_a: &Pose<f64>,
    _b: &Shape<f64>,
    _pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    (feature < 2).then(|| PairKernel::CapsulePlane(if feature == 0 { -1.0 } else { 1.0 }))
}

/// Box–plane selectors: the vertex signs of `feature`.
pub(crate) fn box_plane_selectors(
    _a: &Shape<f64>,
    _pose_a: &Pose<f64>,
    _b: &Shape<f64>,
    _pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    (feature < 8).then(|| {
        PairKernel::BoxPlane(core::array::from_fn(|k| {
            if feature & (1 << k) == 0 { -1.0 } else { 1.0 }
        }))
    })
}

/// Sphere–sphere (distinct centres).
pub(crate) fn sphere_sphere_selectors(
    _a: &Shape<f64>,
    pose_a: &Pose<f64>,
    _b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    (feature == 0 && distinct(&pose_a.translation, &pose_b.translation))
        .then_some(PairKernel::SphereSphere)
}

/// Capsule–sphere: the segment parameter's branch.
pub(crate) fn capsule_sphere_selectors(
    a: &Shape<f64>,
    pose_a: &Pose<f64>,
    _b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    let Shape::Capsule { half_length, .. } = a else {
        return None;
    };
    if feature != 0 {
        return None;
    }
    let pb = &pose_b.translation;
    let (e0, e1) = segment(pose_a, *half_length);
    let sel = segment_point_selectors(&e0, &e1, pb)?;
    let c =
        e0 + (e1 - e0) * (sel[0] * ((pb - e0).dot(&(e1 - e0)) / (e1 - e0).norm_squared()) + sel[1]);
    if !distinct(&c, pb) {
        return None;
    }
    Some(PairKernel::CapsuleSphere { sel, flip: false })
}

/// Capsule–capsule: the segment parameters' branches.
pub(crate) fn capsule_capsule_selectors(
    a: &Shape<f64>,
    pose_a: &Pose<f64>,
    b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    let (
        Shape::Capsule {
            half_length: la, ..
        },
        Shape::Capsule {
            half_length: lb, ..
        },
    ) = (a, b)
    else {
        return None;
    };
    if feature != 0 {
        return None;
    }
    let (a0, a1) = segment(pose_a, *la);
    let (b0, b1) = segment(pose_b, *lb);
    let sel = segment_segment_selectors(&a0, &a1, &b0, &b1)?;
    let c = super::pair_contact(a, pose_a, b, pose_b, 0)?;
    if !distinct(
        &(c.point_a + c.normal * a_radius(a)),
        &(c.point_b - c.normal * a_radius(b)),
    ) {
        return None;
    }
    Some(PairKernel::CapsuleCapsule(sel))
}

/// Sphere–box: inside or outside, and the clamp signs or face.
pub(crate) fn sphere_box_selectors_row(
    a: &Shape<f64>,
    pose_a: &Pose<f64>,
    b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    let Shape::Box { half_extents } = b else {
        return None;
    };
    if feature != 0 {
        return None;
    }
    let pa = &pose_a.translation;
    let (inside, m, w) = sphere_box_selectors(pa, pose_b, half_extents);
    if !inside && !distinct(pa, &super::pair_contact(a, pose_a, b, pose_b, 0)?.point_b) {
        return None;
    }
    Some(PairKernel::SphereBox {
        inside,
        m,
        w,
        flip: false,
    })
}

fn a_radius(s: &Shape<f64>) -> f64 {
    match s {
        Shape::Sphere { radius } | Shape::Capsule { radius, .. } => *radius,
        _ => 0.0,
    }
}
