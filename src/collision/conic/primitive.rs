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

use super::solve::ConeLayout;
use super::ProximityError;
use crate::geometry::{BundleOp, Shape};
use crate::math::so3;
use crate::Scalar;

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

/// Rows under construction.
struct Builder<T: Scalar> {
    ncols: usize,
    orth: Vec<Vec<T>>,
    soc: Vec<Vec<Vec<T>>>,
}

impl<T: Scalar> Builder<T> {
    fn new(n_aux: usize) -> Self {
        Builder { ncols: 4 + n_aux, orth: Vec::new(), soc: Vec::new() }
    }
    /// A row from `(column, value)` pairs.
    fn row(&self, entries: &[(usize, T)]) -> Vec<T> {
        let mut r = vec![T::zero(); self.ncols];
        for &(j, v) in entries {
            r[j] += v;
        }
        r
    }
    fn orth(&mut self, entries: &[(usize, T)]) {
        let r = self.row(entries);
        self.orth.push(r);
    }
    fn soc(&mut self, rows: Vec<Vec<T>>) {
        self.soc.push(rows);
    }
    fn finish(self) -> LocalCone<T> {
        let layout = ConeLayout {
            n_orthant: self.orth.len(),
            soc: self.soc.iter().map(|b| b.len()).collect(),
        };
        let rows: Vec<Vec<T>> = self.orth.into_iter().chain(self.soc.into_iter().flatten()).collect();
        let m = DMatrix::from_fn(rows.len(), self.ncols, |i, j| rows[i][j]);
        LocalCone { m, layout, n_aux: self.ncols - 4 }
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
    let one = T::one();
    let quarter = T::from_re(0.25);
    Ok(match shape {
        Shape::Sphere { radius } => {
            let mut b = Builder::new(0);
            let rows = vec![b.row(&[(A, *radius)]), b.row(&[(0, one)]), b.row(&[(1, one)]), b.row(&[(2, one)])];
            b.soc(rows);
            b.finish()
        }
        Shape::Ellipsoid { radii } => {
            let mut b = Builder::new(0);
            let rows = vec![
                b.row(&[(A, one)]),
                b.row(&[(0, one / radii[0])]),
                b.row(&[(1, one / radii[1])]),
                b.row(&[(2, one / radii[2])]),
            ];
            b.soc(rows);
            b.finish()
        }
        Shape::Box { half_extents } => {
            let mut b = Builder::new(0);
            for i in 0..3 {
                b.orth(&[(A, half_extents[i]), (i, -one)]);
                b.orth(&[(A, half_extents[i]), (i, one)]);
            }
            b.finish()
        }
        Shape::Polytope { normals, offsets } => {
            if normals.len() != offsets.len() || normals.is_empty() {
                return Err(ProximityError::InvalidShape("polytope: one offset per normal"));
            }
            let mut b = Builder::new(0);
            for (n, o) in normals.iter().zip(offsets) {
                b.orth(&[(A, *o), (0, -n.x), (1, -n.y), (2, -n.z)]);
            }
            b.finish()
        }
        Shape::Plane { normal, offset } => {
            let mut b = Builder::new(0);
            b.orth(&[(A, *offset), (0, -normal.x), (1, -normal.y), (2, -normal.z)]);
            b.finish()
        }
        Shape::Capsule { radius, half_length } => {
            let mut b = Builder::new(1);
            b.orth(&[(A, *half_length), (E, -one)]);
            b.orth(&[(A, *half_length), (E, one)]);
            let rows = vec![
                b.row(&[(A, *radius)]),
                b.row(&[(0, one)]),
                b.row(&[(1, one)]),
                b.row(&[(2, one), (E, -one)]),
            ];
            b.soc(rows);
            b.finish()
        }
        Shape::Cylinder { radius, half_length } => {
            let mut b = Builder::new(0);
            b.orth(&[(A, *half_length), (2, -one)]);
            b.orth(&[(A, *half_length), (2, one)]);
            let rows = vec![b.row(&[(A, *radius)]), b.row(&[(0, one)]), b.row(&[(1, one)])];
            b.soc(rows);
            b.finish()
        }
        Shape::Cone { height, half_angle } => {
            let t = half_angle.tan();
            let mut b = Builder::new(0);
            b.orth(&[(2, one), (A, *height * quarter)]);
            let rows = vec![
                b.row(&[(A, t * *height * T::from_re(0.75)), (2, -t)]),
                b.row(&[(0, one)]),
                b.row(&[(1, one)]),
            ];
            b.soc(rows);
            b.finish()
        }
        Shape::PaddedPolygon { normals, offsets, radius } => {
            if normals.len() != offsets.len() || normals.is_empty() {
                return Err(ProximityError::InvalidShape("padded polygon: one offset per normal"));
            }
            let mut b = Builder::new(2);
            for (n, o) in normals.iter().zip(offsets) {
                b.orth(&[(A, *o), (E, -n.x), (E + 1, -n.y)]);
            }
            let rows = vec![
                b.row(&[(A, *radius)]),
                b.row(&[(0, one), (E, -one)]),
                b.row(&[(1, one), (E + 1, -one)]),
                b.row(&[(2, one)]),
            ];
            b.soc(rows);
            b.finish()
        }
        Shape::Bundle { parts, op: BundleOp::Minkowski } => minkowski(parts)?,
        Shape::Bundle { op: BundleOp::Union, .. } => return Err(ProximityError::NotConvex),
        Shape::Points { .. } => return Err(ProximityError::InvalidShape("point clouds have no conic form")),
    })
}

/// Minkowski sum of parts at poses in the body frame (module docs).
fn minkowski<T: Scalar>(
    parts: &[(Shape<T>, crate::math::Pose<T>)],
) -> Result<LocalCone<T>, ProximityError> {
    if parts.is_empty() {
        return Err(ProximityError::InvalidShape("empty Minkowski bundle"));
    }
    let lowered: Vec<LocalCone<T>> = parts.iter().map(|(s, _)| lower(s)).collect::<Result<_, _>>()?;
    let n = parts.len();
    // auxiliary columns: z_1..z_{n-1}, then each part's ε
    let mut eps_off = Vec::with_capacity(n);
    let mut off = E + 3 * (n - 1);
    for l in &lowered {
        eps_off.push(off);
        off += l.n_aux;
    }
    let ncols = off;
    let rots: Vec<_> = parts.iter().map(|(_, p)| so3::to_matrix(&p.rotation)).collect();
    let t_sum = parts.iter().fold(crate::math::Vec3::zeros(), |acc, (_, p)| acc + p.translation);
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
    let mut orth = Vec::new();
    let mut soc = Vec::new();
    for (k, l) in lowered.iter().enumerate() {
        orth.extend(map_rows(k, 0..l.layout.n_orthant));
        for (s, d) in l.layout.soc_blocks() {
            soc.push(map_rows(k, s..s + d));
        }
    }
    let b = Builder { ncols, orth, soc };
    Ok(b.finish())
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
        Shape::Capsule { radius, half_length } | Shape::Cylinder { radius, half_length } => {
            v.push(radius);
            v.push(half_length);
        }
        Shape::Cone { height, half_angle } => {
            v.push(height);
            v.push(half_angle);
        }
        Shape::Ellipsoid { radii } => v.extend(radii.iter_mut()),
        Shape::Polytope { normals, offsets } => {
            for n in normals.iter_mut() {
                v.extend(n.iter_mut());
            }
            v.extend(offsets.iter_mut());
        }
        Shape::PaddedPolygon { normals, offsets, radius } => {
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
