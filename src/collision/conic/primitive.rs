//! Every convex primitive as a homogeneous conic constraint in its own
//! frame (one `match` arm per shape, so that all of them read side by side).
//!
//! A shape `S` (body frame, coordinates `y`) scaled by `α ≥ 0` about the
//! body origin is written as
//!
//! ```text
//! y ∈ α S   ⇔   ∃ ε :  M [y; α; ε] ∈ K
//! ```
//!
//! with `M` a matrix (rows = cone coordinates, columns = `y` (3), `α` (1),
//! the shape's auxiliary variables `ε`) and K a product of orthants (rows
//! first) and second-order cones `Q^d = {u₀ ≥ ‖u₁‖}`. The constraint is
//! *homogeneous* (no constant term) because scaling is about the origin:
//! `{(y, α)}` is the conic hull (perspective) of `S`. The rows are, with
//! `e_z` the body z axis:
//!
//! | shape | orthant rows (≥ 0) | second-order cones | ε |
//! |---|---|---|---|
//! | sphere R | — | `(Rα, y)` | — |
//! | ellipsoid a | — | `(α, y₁/a₁, y₂/a₂, y₃/a₃)` | — |
//! | box h | `h_iα ∓ y_i` | — | — |
//! | polytope A y ≤ b | `b_kα − a_kᵀy` | — | — |
//! | capsule R, L (half length) | `Lα ∓ ε` | `(Rα, y − ε e_z)` | ε ∈ ℝ (position on the segment) |
//! | cylinder R, L | `Lα ∓ y_z` | `(Rα, y_x, y_y)` | — |
//! | cone H, ν | `y_z + αH/4` (base) | `(tan ν (3αH/4 − y_z), y_x, y_y)` | — |
//! | padded polygon A q ≤ b (q in the xy plane), R | `b_kα − a_kᵀq` | `(Rα, y − q)` | q ∈ ℝ² |
//! | half-space n·y ≤ b | `bα − nᵀy` | — | — |
//!
//! Conventions and choices:
//!
//! * **Cone**: the body origin is the centroid of the solid cone, apex at
//!   `+3H/4 e_z`, base disc at `−H/4 e_z` (Silico eq. 54–55, DCOL), so
//!   scaling is about the centroid.
//! * **Cylinder**: the lateral surface is a 3-dimensional cone
//!   `(Rα, y_x, y_y)`, no auxiliary variable (Silico eq. 52 uses one; this is
//!   the same set with fewer variables).
//! * **Half-space (plane)** `n·y ≤ b`: scaled about the body origin like any
//!   polytope, `n·y ≤ αb`. With the usual `b = 0` (the surface passes
//!   through the frame origin) the half-space is invariant under scaling,
//!   which is Silico's treatment (eq. 42: the plane is not scaled and α
//!   measures only the partner). With `b > 0` the origin lies at depth `b`
//!   below the surface and the half-space grows with α like a polytope.
//!   Use `b ≥ 0`; a half-space against a half-space is not supported (the
//!   witness set is unbounded).
//! * **Padded polygon**: normals are taken in the xy plane (their z
//!   component is ignored).
//! * **Minkowski bundle** `Σᵢ (Rᵢ Sᵢ + tᵢ)` (parts at poses (Rᵢ, tᵢ) in the
//!   body frame; Silico eq. 25): scaling the sum about the body origin
//!   scales each part about its own origin *and* its offset,
//!   `y = Σᵢ (Rᵢ zᵢ + α tᵢ)` with `zᵢ ∈ α Sᵢ`. The part points `z₁ … z_{n−1}`
//!   become auxiliary variables (with the parts' own ε), and
//!   `z_n = R_nᵀ (y − αΣtᵢ − Σ_{i<n} Rᵢzᵢ)` is substituted.
//! * **Union bundle**: not convex; each part is its own shape (see
//!   [`super::proximity_parts`]). Inside a Minkowski sum it is an error, as
//!   are point clouds.

use nalgebra::DMatrix;

use super::ProximityError;
use super::solve::ConeLayout;
use crate::Scalar;
use crate::geometry::{BundleOp, Shape};
use crate::math::so3;

/// A shape's homogeneous conic constraint `M [y; α; ε] ∈ K` in its frame.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalCone<T: Scalar> {
    /// `rows × (4 + n_aux)`: columns `y` (3), `α`, `ε`.
    pub m: DMatrix<T>,
    /// Cone layout of the rows (orthant rows first).
    pub layout: ConeLayout,
    /// Number of auxiliary variables ε.
    pub n_aux: usize,
}

/// Where [`lower_into`] writes a shape's rows: orthant rows one at a time,
/// a second-order cone as a block of rows, each row a list of
/// `(column, value)` pairs (repeated columns add up).
pub trait RowSink<T: Scalar> {
    /// Starts a shape with `n_aux` auxiliary variables (4 + n_aux columns).
    fn begin(&mut self, n_aux: usize);
    /// One orthant row.
    fn orth(&mut self, entries: &[(usize, T)]);
    /// One second-order cone, its rows in order.
    fn soc(&mut self, rows: &[&[(usize, T)]]);
}

/// Rows under construction (the [`RowSink`] behind [`lower`]): dense rows,
/// row-major, in scalar `T`.
struct Builder<T: Scalar> {
    ncols: usize,
    orth: Vec<T>,
    soc: Vec<T>,
    soc_dims: Vec<usize>,
}

fn push_row<T: Scalar>(dst: &mut Vec<T>, ncols: usize, entries: &[(usize, T)]) {
    let at = dst.len();
    dst.resize(at + ncols, T::zero());
    for &(j, v) in entries {
        dst[at + j] += v;
    }
}

impl<T: Scalar> RowSink<T> for Builder<T> {
    fn begin(&mut self, n_aux: usize) {
        self.ncols = 4 + n_aux;
        self.orth.clear();
        self.soc.clear();
        self.soc_dims.clear();
    }
    fn orth(&mut self, entries: &[(usize, T)]) {
        push_row(&mut self.orth, self.ncols, entries);
    }
    fn soc(&mut self, rows: &[&[(usize, T)]]) {
        for r in rows {
            push_row(&mut self.soc, self.ncols, r);
        }
        self.soc_dims.push(rows.len());
    }
}

impl<T: Scalar> Builder<T> {
    fn finish(self) -> LocalCone<T> {
        let layout = ConeLayout {
            n_orthant: self.orth.len() / self.ncols,
            soc: self.soc_dims,
        };
        let n_orth = layout.n_orthant;
        let nc = self.ncols;
        let rows = n_orth + self.soc.len() / nc;
        let m = DMatrix::from_fn(rows, nc, |i, j| {
            if i < n_orth {
                self.orth[i * nc + j]
            } else {
                self.soc[(i - n_orth) * nc + j]
            }
        });
        LocalCone {
            m,
            layout,
            n_aux: nc - 4,
        }
    }
}

/// A shape's rows in primal values (`f64`), written by [`lower_into`] for
/// any scalar and reused from one query to the next (no allocation once
/// the buffers have grown to the shape's size): the [`RowSink`] of the
/// allocation-free proximity ([`super::ConicWorkspace`]).
#[derive(Clone, Debug, Default)]
pub struct PrimalRows {
    /// Columns per row (`4 + n_aux`).
    pub ncols: usize,
    /// Orthant rows, row-major.
    pub orth: Vec<f64>,
    /// Second-order cone rows, row-major, cone after cone.
    pub soc: Vec<f64>,
    /// Dimension of each second-order cone.
    pub soc_dims: Vec<usize>,
}

fn push_row_re<T: Scalar>(dst: &mut Vec<f64>, ncols: usize, entries: &[(usize, T)]) {
    let at = dst.len();
    dst.resize(at + ncols, 0.0);
    for &(j, v) in entries {
        dst[at + j] += v.re();
    }
}

impl<T: Scalar> RowSink<T> for PrimalRows {
    fn begin(&mut self, n_aux: usize) {
        self.ncols = 4 + n_aux;
        self.orth.clear();
        self.soc.clear();
        self.soc_dims.clear();
    }
    fn orth(&mut self, entries: &[(usize, T)]) {
        push_row_re(&mut self.orth, self.ncols, entries);
    }
    fn soc(&mut self, rows: &[&[(usize, T)]]) {
        for r in rows {
            push_row_re(&mut self.soc, self.ncols, r);
        }
        self.soc_dims.push(rows.len());
    }
}

impl PrimalRows {
    /// Number of auxiliary variables.
    pub fn n_aux(&self) -> usize {
        self.ncols - 4
    }
    /// Number of orthant rows.
    pub fn n_orthant(&self) -> usize {
        self.orth.len() / self.ncols
    }
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        (self.orth.len() + self.soc.len()) / self.ncols
    }
    /// Row `i` (orthant rows first, then the cones).
    pub fn row(&self, i: usize) -> &[f64] {
        let no = self.n_orthant();
        let nc = self.ncols;
        if i < no {
            &self.orth[i * nc..(i + 1) * nc]
        } else {
            &self.soc[(i - no) * nc..(i - no + 1) * nc]
        }
    }
}

const A: usize = 3; // column of α
const E: usize = 4; // first auxiliary column

/// Lowers a shape to its conic constraint (see the module docs).
///
/// ```
/// use dualsim::collision::conic::primitive::lower;
/// use dualsim::geometry::Shape;
/// let c = lower(&Shape::Sphere { radius: 2.0_f64 }).unwrap();
/// assert_eq!(c.layout.soc, vec![4]);
/// assert_eq!(c.m[(0, 3)], 2.0);
/// ```
pub fn lower<T: Scalar>(shape: &Shape<T>) -> Result<LocalCone<T>, ProximityError> {
    let mut b = Builder {
        ncols: 4,
        orth: Vec::new(),
        soc: Vec::new(),
        soc_dims: Vec::new(),
    };
    lower_into(shape, &mut b)?;
    Ok(b.finish())
}

/// Writes a shape's conic constraint into a [`RowSink`] (the table of the
/// module docs, one arm per shape). Allocation-free for every primitive
/// (a Minkowski bundle allocates while combining its parts).
///
/// ```
/// use dualsim::collision::conic::primitive::{lower_into, PrimalRows};
/// use dualsim::geometry::Shape;
/// use dualsim::math::Vec3;
/// let mut rows = PrimalRows::default();
/// lower_into(&Shape::Box { half_extents: Vec3::new(1.0_f64, 2.0, 3.0) }, &mut rows).unwrap();
/// assert_eq!((rows.n_orthant(), rows.n_rows()), (6, 6));
/// assert_eq!(rows.row(2), &[0.0, -1.0, 0.0, 2.0]);
/// ```
pub fn lower_into<T: Scalar, S: RowSink<T>>(
    shape: &Shape<T>,
    b: &mut S,
) -> Result<(), ProximityError> {
    let one = T::one();
    let quarter = T::from_re(0.25);
    match shape {
        Shape::Sphere { radius } => {
            b.begin(0);
            b.soc(&[&[(A, *radius)], &[(0, one)], &[(1, one)], &[(2, one)]]);
        }
        Shape::Ellipsoid { radii } => {
            b.begin(0);
            b.soc(&[
                &[(A, one)],
                &[(0, one / radii[0])],
                &[(1, one / radii[1])],
                &[(2, one / radii[2])],
            ]);
        }
        Shape::Box { half_extents } => {
            b.begin(0);
            for i in 0..3 {
                b.orth(&[(A, half_extents[i]), (i, -one)]);
                b.orth(&[(A, half_extents[i]), (i, one)]);
            }
        }
        Shape::Polytope {
            normals, offsets, ..
        } => {
            if normals.len() != offsets.len() || normals.is_empty() {
                return Err(ProximityError::InvalidShape(
                    "polytope: one offset per normal",
                ));
            }
            b.begin(0);
            for (n, o) in normals.iter().zip(offsets) {
                b.orth(&[(A, *o), (0, -n.x), (1, -n.y), (2, -n.z)]);
            }
        }
        Shape::Plane { normal, offset } => {
            b.begin(0);
            b.orth(&[(A, *offset), (0, -normal.x), (1, -normal.y), (2, -normal.z)]);
        }
        Shape::Capsule {
            radius,
            half_length,
        } => {
            b.begin(1);
            b.orth(&[(A, *half_length), (E, -one)]);
            b.orth(&[(A, *half_length), (E, one)]);
            b.soc(&[
                &[(A, *radius)],
                &[(0, one)],
                &[(1, one)],
                &[(2, one), (E, -one)],
            ]);
        }
        Shape::Cylinder {
            radius,
            half_length,
        } => {
            b.begin(0);
            b.orth(&[(A, *half_length), (2, -one)]);
            b.orth(&[(A, *half_length), (2, one)]);
            b.soc(&[&[(A, *radius)], &[(0, one)], &[(1, one)]]);
        }
        Shape::Cone { height, half_angle } => {
            let t = half_angle.tan();
            b.begin(0);
            b.orth(&[(2, one), (A, *height * quarter)]);
            b.soc(&[
                &[(A, t * *height * T::from_re(0.75)), (2, -t)],
                &[(0, one)],
                &[(1, one)],
            ]);
        }
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => {
            if normals.len() != offsets.len() || normals.is_empty() {
                return Err(ProximityError::InvalidShape(
                    "padded polygon: one offset per normal",
                ));
            }
            b.begin(2);
            for (n, o) in normals.iter().zip(offsets) {
                b.orth(&[(A, *o), (E, -n.x), (E + 1, -n.y)]);
            }
            b.soc(&[
                &[(A, *radius)],
                &[(0, one), (E, -one)],
                &[(1, one), (E + 1, -one)],
                &[(2, one)],
            ]);
        }
        Shape::Bundle {
            parts,
            op: BundleOp::Minkowski,
        } => minkowski(parts, b)?,
        Shape::Bundle {
            op: BundleOp::Union,
            ..
        } => return Err(ProximityError::NotConvex),
        Shape::Points { .. } => {
            return Err(ProximityError::InvalidShape(
                "point clouds have no conic form",
            ));
        }
    }
    Ok(())
}

/// Minkowski sum of parts at poses in the body frame (module docs).
fn minkowski<T: Scalar, S: RowSink<T>>(
    parts: &[(Shape<T>, crate::math::Pose<T>)],
    b: &mut S,
) -> Result<(), ProximityError> {
    if parts.is_empty() {
        return Err(ProximityError::InvalidShape("empty Minkowski bundle"));
    }
    let lowered: Vec<LocalCone<T>> = parts
        .iter()
        .map(|(s, _)| lower(s))
        .collect::<Result<_, _>>()?;
    let n = parts.len();
    // auxiliary columns: z_1..z_{n-1}, then each part's ε
    let mut eps_off = Vec::with_capacity(n);
    let mut off = E + 3 * (n - 1);
    for l in &lowered {
        eps_off.push(off);
        off += l.n_aux;
    }
    let ncols = off;
    let rots: Vec<_> = parts
        .iter()
        .map(|(_, p)| so3::to_matrix(&p.rotation))
        .collect();
    let t_sum = parts
        .iter()
        .fold(crate::math::Vec3::zeros(), |acc, (_, p)| {
            acc + p.translation
        });
    let rn = &rots[n - 1];

    // Maps one part's rows into bundle columns.
    let map_rows = |k: usize, rows: std::ops::Range<usize>| -> Vec<Vec<T>> {
        let l = &lowered[k];
        rows.map(|i| {
            let mut r = vec![T::zero(); ncols];
            let my = nalgebra::RowVector3::new(l.m[(i, 0)], l.m[(i, 1)], l.m[(i, 2)]);
            if k + 1 < n {
                for j in 0..3 {
                    r[E + 3 * k + j] += my[j];
                }
            } else {
                // z_n = R_nᵀ (y − α Σt − Σ_{i<n} R_i z_i)
                let a = my * rn.transpose();
                for j in 0..3 {
                    r[j] += a[j];
                }
                r[A] -= (a * t_sum)[0];
                for (i, ri) in rots.iter().enumerate().take(n - 1) {
                    let b = a * ri;
                    for j in 0..3 {
                        r[E + 3 * i + j] -= b[j];
                    }
                }
            }
            r[A] += l.m[(i, 3)];
            for j in 0..l.n_aux {
                r[eps_off[k] + j] += l.m[(i, 4 + j)];
            }
            r
        })
        .collect()
    };
    let entries = |r: &Vec<T>| -> Vec<(usize, T)> { r.iter().copied().enumerate().collect() };
    b.begin(ncols - 4);
    for (k, l) in lowered.iter().enumerate() {
        for r in map_rows(k, 0..l.layout.n_orthant) {
            b.orth(&entries(&r));
        }
    }
    for (k, l) in lowered.iter().enumerate() {
        for (s, d) in l.layout.soc_blocks() {
            let rows: Vec<Vec<(usize, T)>> = map_rows(k, s..s + d).iter().map(entries).collect();
            let refs: Vec<&[(usize, T)]> = rows.iter().map(|r| r.as_slice()).collect();
            b.soc(&refs);
        }
    }
    Ok(())
}

/// Every shape parameter as a mutable reference, in a fixed order: radius,
/// half extents, radii, normals then offsets, …; for a bundle each part's
/// parameters followed by the part's translation.
///
/// ```
/// use dualsim::collision::conic::primitive::shape_params_mut;
/// use dualsim::geometry::Shape;
/// let mut s = Shape::Capsule { radius: 1.0_f64, half_length: 2.0 };
/// assert_eq!(shape_params_mut(&mut s).len(), 2);
/// ```
pub fn shape_params_mut<T: Scalar>(shape: &mut Shape<T>) -> Vec<&mut T> {
    let mut v = Vec::new();
    push_params(shape, &mut v);
    v
}

fn push_params<'a, T: Scalar>(shape: &'a mut Shape<T>, v: &mut Vec<&'a mut T>) {
    match shape {
        Shape::Sphere { radius } => v.push(radius),
        Shape::Box { half_extents } => v.extend(half_extents.iter_mut()),
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => {
            v.push(radius);
            v.push(half_length);
        }
        Shape::Cone { height, half_angle } => {
            v.push(height);
            v.push(half_angle);
        }
        Shape::Ellipsoid { radii } => v.extend(radii.iter_mut()),
        Shape::Polytope {
            normals, offsets, ..
        } => {
            for n in normals.iter_mut() {
                v.extend(n.iter_mut());
            }
            v.extend(offsets.iter_mut());
        }
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => {
            for n in normals.iter_mut() {
                v.extend(n.iter_mut());
            }
            v.extend(offsets.iter_mut());
            v.push(radius);
        }
        Shape::Plane { normal, offset } => {
            v.extend(normal.iter_mut());
            v.push(offset);
        }
        Shape::Bundle { parts, .. } => {
            for (s, p) in parts.iter_mut() {
                push_params(s, v);
                v.extend(p.translation.iter_mut());
            }
        }
        Shape::Points { .. } => {}
    }
}

/// True when every parameter of [`shape_params_mut`] has a finite primal
/// value (without collecting them: no allocation).
///
/// ```
/// use dualsim::collision::conic::primitive::shape_params_finite;
/// use dualsim::geometry::Shape;
/// assert!(shape_params_finite(&Shape::Sphere { radius: 1.0 }));
/// assert!(!shape_params_finite(&Shape::Capsule { radius: 1.0, half_length: f64::NAN }));
/// ```
pub fn shape_params_finite<T: Scalar>(shape: &Shape<T>) -> bool {
    let f = |v: &T| v.re().is_finite();
    let fv = |v: &crate::math::Vec3<T>| v.iter().all(f);
    match shape {
        Shape::Sphere { radius } => f(radius),
        Shape::Box { half_extents } => fv(half_extents),
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => f(radius) && f(half_length),
        Shape::Cone { height, half_angle } => f(height) && f(half_angle),
        Shape::Ellipsoid { radii } => fv(radii),
        Shape::Polytope {
            normals, offsets, ..
        } => normals.iter().all(fv) && offsets.iter().all(f),
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => normals.iter().all(fv) && offsets.iter().all(f) && f(radius),
        Shape::Plane { normal, offset } => fv(normal) && f(offset),
        Shape::Bundle { parts, .. } => parts
            .iter()
            .all(|(s, p)| shape_params_finite(s) && fv(&p.translation)),
        Shape::Points { .. } => true,
    }
}
