//! Oriented point clouds `{(pᵢ, nᵢ)}` of collision shapes (body frame):
//! the `points` shape as written, and every other primitive sampled with a
//! spacing of about `1 / points_per_meter` (module docs of `soft`).
//!
//! * box: a uniform grid of cell centres on each face (at least one cell
//!   per edge), the face's normal;
//! * polytope: per face, the centres of a square grid in the face plane
//!   that fall inside the face (the face's centroid when none does);
//! * sphere and ellipsoid: a spherical grid (latitude circles at equal
//!   polar angles, poles included, each with a number of points
//!   proportional to its circumference); an ellipsoid is the sphere grid scaled by its radii
//!   with normals `diag(1/r) u` normalized;
//! * capsule: a cylindrical grid on the side and two hemispherical grids;
//! * cylinder: a cylindrical grid on the side and rings of cell centres on
//!   the two caps;
//! * bundle (union): the parts' clouds at their poses.
//!
//! Cones, padded polygons, intersections of bundles and planes as body
//! shapes are not sampled ([`SampleError`]). The numbers of points are
//! decided on primal values; positions and normals are generic, so that a
//! shape parameter's derivative flows through the cloud.

use crate::geometry::{BundleOp, Shape};
use crate::math::{so3, Vec3};
use crate::Scalar;

/// An oriented point cloud: points and outward unit normals.
#[derive(Clone, Debug, PartialEq)]
pub struct Cloud<T: Scalar> {
    /// Points.
    pub points: Vec<Vec3<T>>,
    /// Outward unit normals (one per point).
    pub normals: Vec<Vec3<T>>,
}

impl<T: Scalar> Cloud<T> {
    fn new() -> Self {
        Cloud {
            points: Vec::new(),
            normals: Vec::new(),
        }
    }

    fn push(&mut self, p: Vec3<T>, n: Vec3<T>) {
        self.points.push(p);
        self.normals.push(n);
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the cloud has no point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Radius of the ball about the origin that holds every point (f64).
    pub fn radius(&self) -> f64 {
        self.points
            .iter()
            .map(|p| p.map(|x| x.re()).norm())
            .fold(0.0, f64::max)
    }
}

/// A shape the `soft` backend cannot turn into a point cloud.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleError {
    /// The shape's type name.
    pub shape: &'static str,
}

/// Number of cells of a length `len` at `ppm` points per metre (≥ `min`),
/// rounded to the nearest: the count jumps where `len · ppm` crosses a
/// half-integer (a size written as a round number at a round density is
/// far from a jump; the counts are part of the backend's structure, so a
/// derivative across a jump is reported as a change of structure).
fn cells(len: f64, ppm: f64, min: usize) -> usize {
    let n = (len * ppm).round();
    if n.is_finite() && n >= min as f64 {
        n as usize
    } else {
        min
    }
}

fn t<T: Scalar>(x: f64) -> T {
    T::from_re(x)
}

/// The oriented point cloud of `shape` (body frame) at `ppm` points per
/// metre (module docs).
pub fn sample<T: Scalar>(shape: &Shape<T>, ppm: f64) -> Result<Cloud<T>, SampleError> {
    let mut c = Cloud::new();
    sample_into(shape, ppm, &mut c)?;
    Ok(c)
}

/// Largest number of points sampled for one shape.
pub const MAX_CLOUD_POINTS: f64 = 1e6;

fn sample_into<T: Scalar>(
    shape: &Shape<T>,
    ppm: f64,
    c: &mut Cloud<T>,
) -> Result<(), SampleError> {
    // A bound on the samples of a primitive (its largest extent d gives
    // at most 6 (ppm d + 1)² points): refuse before allocating them.
    let extent = match shape {
        Shape::Box { half_extents } => 2.0 * half_extents.map(|x| x.re()).amax(),
        Shape::Sphere { radius } => 2.0 * radius.re(),
        Shape::Ellipsoid { radii } => 2.0 * radii.map(|x| x.re()).amax(),
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => 2.0 * (radius.re() + half_length.re()),
        _ => 0.0,
    };
    let bound = 6.0 * (ppm * extent + 1.0).powi(2);
    if !(bound <= MAX_CLOUD_POINTS) {
        return Err(SampleError { shape: "oversized" });
    }
    match shape {
        Shape::Points { points, normals } => {
            for (p, n) in points.iter().zip(normals) {
                let norm = n.norm();
                c.push(*p, n / norm);
            }
        }
        Shape::Box { half_extents } => sample_box(half_extents, ppm, c),
        Shape::Sphere { radius } => {
            sphere_grid(ppm * radius.re(), |u: Vec3<T>| (u * *radius, u), c, Part::Whole)
        }
        Shape::Ellipsoid { radii } => {
            let rmax = radii.map(|x| x.re()).amax();
            sphere_grid(
                ppm * rmax,
                |u: Vec3<T>| {
                    let p = u.component_mul(radii);
                    let n = u.component_div(radii);
                    let nn = n.norm();
                    (p, n / nn)
                },
                c,
                Part::Whole,
            )
        }
        Shape::Capsule {
            radius,
            half_length,
        } => {
            side_grid(*radius, *half_length, ppm, c);
            let up = Vec3::new(T::zero(), T::zero(), *half_length);
            let r = *radius;
            sphere_grid(ppm * r.re(), |u: Vec3<T>| (u * r + up, u), c, Part::Top);
            sphere_grid(ppm * r.re(), |u: Vec3<T>| (u * r - up, u), c, Part::Bottom);
        }
        Shape::Cylinder {
            radius,
            half_length,
        } => {
            side_grid(*radius, *half_length, ppm, c);
            let rings = cells(radius.re(), ppm, 1);
            for s in [1.0, -1.0] {
                for k in 0..rings {
                    let rk = *radius * t::<T>((k as f64 + 0.5) / rings as f64);
                    let nphi = cells(
                        2.0 * std::f64::consts::PI * rk.re(),
                        ppm,
                        if k == 0 { 1 } else { 3 },
                    );
                    for j in 0..nphi {
                        let a = 2.0 * std::f64::consts::PI * (j as f64 + 0.5) / nphi as f64;
                        let p = Vec3::new(
                            rk * t::<T>(a.cos()),
                            rk * t::<T>(a.sin()),
                            *half_length * t::<T>(s),
                        );
                        c.push(p, Vec3::new(T::zero(), T::zero(), t(s)));
                    }
                }
            }
        }
        Shape::Polytope { normals, offsets, .. } => sample_polytope(normals, offsets, ppm, c),
        Shape::Bundle {
            parts,
            op: BundleOp::Union,
        } => {
            for (s, pose) in parts {
                let mut pc = Cloud::new();
                sample_into(s, ppm, &mut pc)?;
                for (p, n) in pc.points.iter().zip(&pc.normals) {
                    c.push(
                        so3::rotate(&pose.rotation, p) + pose.translation,
                        so3::rotate(&pose.rotation, n),
                    );
                }
            }
        }
        other => {
            return Err(SampleError {
                shape: other.type_name(),
            })
        }
    }
    Ok(())
}

fn sample_box<T: Scalar>(h: &Vec3<T>, ppm: f64, c: &mut Cloud<T>) {
    for a in 0..3 {
        let (u, v) = ((a + 1) % 3, (a + 2) % 3);
        let nu = cells(2.0 * h[u].re(), ppm, 1);
        let nv = cells(2.0 * h[v].re(), ppm, 1);
        for s in [1.0, -1.0] {
            let mut n = Vec3::zeros();
            n[a] = t(s);
            for i in 0..nu {
                for j in 0..nv {
                    let mut p = Vec3::zeros();
                    p[a] = h[a] * t::<T>(s);
                    p[u] = h[u] * t::<T>(2.0 * (i as f64 + 0.5) / nu as f64 - 1.0);
                    p[v] = h[v] * t::<T>(2.0 * (j as f64 + 0.5) / nv as f64 - 1.0);
                    c.push(p, n);
                }
            }
        }
    }
}

/// Which part of the unit sphere [`sphere_grid`] covers.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Whole,
    Top,
    Bottom,
}

/// Unit-sphere grid (a sphere whose radius is `rppm` cells), mapped by
/// `map(u) = (p, n)`: latitude circles at equal polar angles, the poles
/// included (one point each), each circle with a number of points
/// proportional to its circumference. The hemispheres (`Top`, `Bottom`)
/// leave their equator out (a capsule's side grid covers it).
fn sphere_grid<T: Scalar>(
    rppm: f64,
    map: impl Fn(Vec3<T>) -> (Vec3<T>, Vec3<T>),
    c: &mut Cloud<T>,
    part: Part,
) {
    use std::f64::consts::PI;
    let n = cells(PI * rppm, 1.0, 2);
    // polar angles θ_k = π k / n, k = 0..=n (whole), 0..n/2 (top)
    let ks: Vec<usize> = match part {
        Part::Whole => (0..=n).collect(),
        Part::Top => (0..n.div_ceil(2)).filter(|k| 2 * k < n).collect(),
        Part::Bottom => (0..n.div_ceil(2)).filter(|k| 2 * k < n).map(|k| n - k).collect(),
    };
    for k in ks {
        let th = PI * k as f64 / n as f64;
        let nphi = if k == 0 || k == n {
            1
        } else {
            cells(2.0 * PI * rppm * th.sin(), 1.0, 3)
        };
        // alternate circles are rotated by half a cell
        let shift = if k % 2 == 0 { 0.5 } else { 0.0 };
        for j in 0..nphi {
            let ph = 2.0 * PI * (j as f64 + shift) / nphi as f64;
            let u = Vec3::new(t(th.sin() * ph.cos()), t(th.sin() * ph.sin()), t(th.cos()));
            let (p, n) = map(u);
            c.push(p, n);
        }
    }
}

/// The side of a cylinder of radius `r` about the z axis, `|z| ≤ l`.
fn side_grid<T: Scalar>(r: T, l: T, ppm: f64, c: &mut Cloud<T>) {
    let nz = cells(2.0 * l.re(), ppm, 1);
    let nphi = cells(2.0 * std::f64::consts::PI * r.re(), ppm, 3);
    for i in 0..nz {
        let z = l * t::<T>(2.0 * (i as f64 + 0.5) / nz as f64 - 1.0);
        for j in 0..nphi {
            let a = 2.0 * std::f64::consts::PI * (j as f64 + 0.5) / nphi as f64;
            let n = Vec3::new(t(a.cos()), t(a.sin()), T::zero());
            c.push(Vec3::new(n[0] * r, n[1] * r, z), n);
        }
    }
}

/// Face grids of the polytope `A x ≤ b` (f64 geometry; the points are
/// constants of the scalar).
fn sample_polytope<T: Scalar>(normals: &[Vec3<T>], offsets: &[T], ppm: f64, c: &mut Cloud<T>) {
    let a: Vec<Vec3<f64>> = normals
        .iter()
        .map(|n| {
            let n = n.map(|x| x.re());
            n / n.norm()
        })
        .collect();
    let b: Vec<f64> = normals
        .iter()
        .zip(offsets)
        .map(|(n, o)| o.re() / n.map(|x| x.re()).norm())
        .collect();
    let m = a.len();
    let inside = |x: &Vec3<f64>, skip: usize| {
        (0..m).all(|k| k == skip || a[k].dot(x) <= b[k] + 1e-9 * (1.0 + b[k].abs()))
    };
    for f in 0..m {
        let n = a[f];
        // the face's vertices: intersections with two other planes
        let mut verts = Vec::new();
        for i in 0..m {
            for j in i + 1..m {
                if i == f || j == f {
                    continue;
                }
                let mat = nalgebra::Matrix3::from_rows(&[
                    n.transpose(),
                    a[i].transpose(),
                    a[j].transpose(),
                ]);
                if mat.determinant().abs() < 1e-12 {
                    continue;
                }
                if let Some(x) = mat.lu().solve(&Vec3::new(b[f], b[i], b[j])) {
                    if inside(&x, usize::MAX) {
                        verts.push(x);
                    }
                }
            }
        }
        if verts.is_empty() {
            continue;
        }
        let centroid = verts.iter().sum::<Vec3<f64>>() / verts.len() as f64;
        let e1 = n.cross(&if n[0].abs() < 0.9 { Vec3::x() } else { Vec3::y() }).normalize();
        let e2 = n.cross(&e1);
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for v in &verts {
            for (d, e) in [e1, e2].iter().enumerate() {
                let s = e.dot(&(v - centroid));
                lo[d] = lo[d].min(s);
                hi[d] = hi[d].max(s);
            }
        }
        let nu = cells(hi[0] - lo[0], ppm, 1);
        let nv = cells(hi[1] - lo[1], ppm, 1);
        let mut any = false;
        for i in 0..nu {
            for j in 0..nv {
                let s = lo[0] + (hi[0] - lo[0]) * (i as f64 + 0.5) / nu as f64;
                let r = lo[1] + (hi[1] - lo[1]) * (j as f64 + 0.5) / nv as f64;
                let x = centroid + e1 * s + e2 * r;
                if inside(&x, f) {
                    c.push(x.map(t), n.map(t));
                    any = true;
                }
            }
        }
        if !any {
            c.push(centroid.map(t), n.map(t));
        }
    }
}

/// An oriented point cloud of `shape` (body frame) with exactly `n`
/// points: the smallest sampling density whose cloud ([`sample`]) has at
/// least `n` points (found by bisection on `points_per_meter`), thinned to
/// `n` by farthest-point selection (greedy, starting from the first
/// point: every kept point is the one farthest from those kept so far,
/// so the kept points stay spread over the surface). The points are
/// primal values (`f64`). Meant for building a `points` shape of a given
/// size (benchmarks at a stated point count); `None` when `n` is 0 or
/// more than [`MAX_CLOUD_POINTS`], or the shape is not sampled.
///
/// ```
/// use dualsim::contact::soft::cloud::sample_exact;
/// use dualsim::geometry::Shape;
/// use dualsim::math::Vec3;
/// let cube = Shape::Box { half_extents: Vec3::repeat(0.1) };
/// for n in [1, 26, 100] {
///     assert_eq!(sample_exact(&cube, n).unwrap().len(), n);
/// }
/// ```
pub fn sample_exact(shape: &Shape<f64>, n: usize) -> Option<Cloud<f64>> {
    if n == 0 || n as f64 > MAX_CLOUD_POINTS {
        return None;
    }
    let count = |ppm: f64| sample(shape, ppm).map(|c| c.len()).unwrap_or(usize::MAX);
    // bracket: count(lo) < n <= count(hi)
    let mut lo = 1e-3;
    if count(lo) >= n {
        return thin(sample(shape, lo).ok()?, n);
    }
    let mut hi = 1.0;
    while count(hi) < n {
        hi *= 2.0;
        if hi > 1e4 {
            return None;
        }
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if count(mid) >= n {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    thin(sample(shape, hi).ok()?, n)
}

/// Farthest-point thinning of `c` to `n` points (see [`sample_exact`]).
fn thin(c: Cloud<f64>, n: usize) -> Option<Cloud<f64>> {
    if c.len() < n {
        return None;
    }
    if c.len() == n {
        return Some(c);
    }
    let mut keep = vec![0usize];
    let mut dist: Vec<f64> = c
        .points
        .iter()
        .map(|p| (p - c.points[0]).norm_squared())
        .collect();
    while keep.len() < n {
        let (far, _) = dist
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |b, (i, &d)| if d > b.1 { (i, d) } else { b });
        keep.push(far);
        for (d, p) in dist.iter_mut().zip(&c.points) {
            *d = d.min((p - c.points[far]).norm_squared());
        }
    }
    keep.sort_unstable();
    Some(Cloud {
        points: keep.iter().map(|&i| c.points[i]).collect(),
        normals: keep.iter().map(|&i| c.normals[i]).collect(),
    })
}
