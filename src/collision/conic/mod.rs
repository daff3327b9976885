//! Conic proximity between convex primitives (DCOL, Tracy et al. 2023;
//! Silico, Le Cleac'h et al., Section IV-A and Appendix B).
//!
//! # Formulation
//!
//! Each shape states, in its own frame, the homogeneous conic constraint
//! `M [y; α; ε] ∈ K` meaning "the body-frame point `y` lies in the shape
//! scaled by α about the body origin" ([`primitive`]). With the shapes at
//! world poses `(R_a, r_a)`, `(R_b, r_b)` the proximity problem is
//!
//! ```text
//! minimize_{p, α, ε_a, ε_b}  α
//! subject to   M_a [R_aᵀ(p − r_a); α; ε_a] ∈ K_a
//!              M_b [R_bᵀ(p − r_b); α; ε_b] ∈ K_b
//!              α ≥ 0
//! ```
//!
//! i.e. the smallest uniform scaling of both shapes about their own origins
//! at which they touch, the witness point `p` (world frame) being the
//! touching point. It is written `min cᵀx s.t. Gx + s = h, s ∈ K` with
//! `x = [p, α, ε_a, ε_b]`, `c = e_α` and solved by the interior-point method
//! of [`solve`]. The proximity (P-SDF) is `φ = α − 1`: negative when the
//! shapes overlap, zero in contact, positive when apart.
//!
//! # Normal from the duals
//!
//! With `z = (z_α, z_a, z_b)` the duals, the envelope theorem (Silico
//! eq. 15) gives `∂α/∂θ = −zᵀ ∂s(x*; θ)/∂θ` at fixed `x*`. For the
//! translations this is (eq. 41)
//!
//! ```text
//! ∂α/∂r_b = R_b M_{b,y}ᵀ z_b = −∂α/∂r_a
//! ```
//!
//! a matrix-vector product and no implicit-function theorem; the unit
//! contact normal (pointing from a to b) is its direction. The full
//! derivatives (rotation, shape parameters, the witness point) are in
//! [`mod@proximity_gradient`].
//!
//! # Bundles
//!
//! A Minkowski bundle lowers to one conic constraint (Silico eq. 25, see
//! [`primitive`]). A union bundle is not convex: [`proximity_parts`] runs
//! one proximity per pair of parts (each part scaled about its own origin)
//! and [`proximity`] rejects it with [`ProximityError::NotConvex`].
//!
//! # Scalars
//!
//! The constraint evaluation ([`primitive::lower`], [`assemble`]) is generic
//! over `T: Scalar`; the solve runs in `f64` on primal values (the
//! derivative parts are recovered by the envelope theorem or the IFT in
//! [`mod@proximity_gradient`], or lifted to any scalar by
//! [`proximity_gradient::alpha_lifted`]).

pub mod contact;
pub mod primitive;
pub mod proximity_gradient;
pub mod solve;

use nalgebra::{DMatrix, DVector};

pub use primitive::{LocalCone, PrimalRows, lower};
pub use proximity_gradient::{ProximityJacobian, proximity_gradient};
pub use solve::{ConeLayout, ConicParams, ConicSolution, Scaling, SolveStats, SolverWorkspace};

use std::cell::RefCell;

use crate::Scalar;
use crate::geometry::{BundleOp, Shape};
use crate::math::{Pose, Vec3, so3};
use crate::scalar::safe_normalize;

/// Why a proximity could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProximityError {
    /// The interior-point method did not reach the tolerances.
    #[error("conic proximity did not converge after {iters} iterations (residual {residual:e})")]
    NoConvergence {
        /// Iterations performed.
        iters: usize,
        /// Last primal/dual residual (∞-norm).
        residual: f64,
    },
    /// A pose or shape parameter is not finite.
    #[error("non-finite pose or shape parameter")]
    NonFinite,
    /// The shape has no conic form (point cloud, malformed polytope, …).
    #[error("invalid shape: {0}")]
    InvalidShape(&'static str),
    /// A union bundle is not convex; use `proximity_parts`.
    #[error("a union bundle is not convex (use proximity_parts)")]
    NotConvex,
}

/// Which shape a row of the assembled problem belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The row `α ≥ 0`.
    Alpha,
    /// Shape a.
    A,
    /// Shape b.
    B,
}

/// The assembled conic program `min α s.t. Gx + s = h, s ∈ K`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConicProblem<T: Scalar> {
    /// `m × n` constraint matrix, columns `[p (3), α, ε_a, ε_b]`.
    pub g: DMatrix<T>,
    /// Right-hand side (m).
    pub h: DVector<T>,
    /// Cone layout of the rows.
    pub layout: ConeLayout,
    /// Owner of each row.
    pub owner: Vec<Owner>,
    /// Auxiliary variables of shape a (columns `4 .. 4 + n_aux_a`).
    pub n_aux_a: usize,
}

impl<T: Scalar> ConicProblem<T> {
    /// Slack `s(x) = h − Gx`.
    pub fn slack(&self, x: &DVector<T>) -> DVector<T> {
        &self.h - &self.g * x
    }

    /// Primal parts.
    pub fn re(&self) -> ConicProblem<f64> {
        ConicProblem {
            g: self.g.map(|v| v.re()),
            h: self.h.map(|v| v.re()),
            layout: self.layout.clone(),
            owner: self.owner.clone(),
            n_aux_a: self.n_aux_a,
        }
    }
}

/// Assembles the proximity problem of two lowered shapes at world poses
/// (module docs). Generic over the scalar, so that `∂G/∂θ`, `∂h/∂θ` come
/// from dual numbers.
///
/// ```
/// use dualsim::collision::conic::{assemble, lower};
/// use dualsim::geometry::Shape;
/// use dualsim::math::Pose;
/// let a = lower(&Shape::Sphere { radius: 1.0_f64 }).unwrap();
/// let pr = assemble(&a, &Pose::identity(), &a, &Pose::identity());
/// assert_eq!((pr.g.nrows(), pr.g.ncols()), (9, 4));
/// ```
pub fn assemble<T: Scalar>(
    a: &LocalCone<T>,
    pose_a: &Pose<T>,
    b: &LocalCone<T>,
    pose_b: &Pose<T>,
) -> ConicProblem<T> {
    let n = 4 + a.n_aux + b.n_aux;
    let layout = ConeLayout {
        n_orthant: 1 + a.layout.n_orthant + b.layout.n_orthant,
        soc: a
            .layout
            .soc
            .iter()
            .chain(b.layout.soc.iter())
            .copied()
            .collect(),
    };
    let m = layout.dim();
    let mut g = DMatrix::zeros(m, n);
    let mut h = DVector::zeros(m);
    let mut owner = vec![Owner::A; m];
    // α ≥ 0  ⇔  s = α = 0 − (−1)α
    g[(0, 3)] = -T::one();
    owner[0] = Owner::Alpha;
    // destination rows: orthant rows of a, of b, then SOC rows of a, of b
    let (oa, ob) = (a.layout.n_orthant, b.layout.n_orthant);
    let sa = a.layout.dim() - oa;
    for (l, pose, orth_start, soc_start, eps_col, who) in [
        (a, pose_a, 1, 1 + oa + ob, 4, Owner::A),
        (b, pose_b, 1 + oa, 1 + oa + ob + sa, 4 + a.n_aux, Owner::B),
    ] {
        // G_p = −M_y Rᵀ, h = G_p r, G_α = −M_α, G_ε = −M_ε
        let r = so3::to_matrix(&pose.rotation);
        let t = &pose.translation;
        let n_orth = l.layout.n_orthant;
        for i in 0..l.m.nrows() {
            let dst = if i < n_orth {
                orth_start + i
            } else {
                soc_start + i - n_orth
            };
            let (m0, m1, m2) = (l.m[(i, 0)], l.m[(i, 1)], l.m[(i, 2)]);
            let mut gp = [T::zero(); 3];
            for (j, v) in gp.iter_mut().enumerate() {
                *v = -((m0 * r[(j, 0)] + m1 * r[(j, 1)]) + m2 * r[(j, 2)]);
                g[(dst, j)] = *v;
            }
            g[(dst, 3)] = -l.m[(i, 3)];
            for k in 0..l.n_aux {
                g[(dst, eps_col + k)] = -l.m[(i, 4 + k)];
            }
            h[dst] = (gp[0] * t.x + gp[1] * t.y) + gp[2] * t.z;
            owner[dst] = who;
        }
    }
    ConicProblem {
        g,
        h,
        layout,
        owner,
        n_aux_a: a.n_aux,
    }
}

/// Result of a proximity query.
#[derive(Clone, Debug, PartialEq)]
pub struct Proximity {
    /// Minimum scaling α* ≥ 0.
    pub alpha: f64,
    /// Proximity φ = α* − 1 (negative when overlapping).
    pub phi: f64,
    /// Witness point p* (world frame): the touching point of the scaled
    /// shapes.
    pub point: Vec3<f64>,
    /// Unit contact normal pointing from a to b, the direction of
    /// `∂α/∂r_b` (Silico eq. 41); `None` when that gradient vanishes (α* = 0
    /// held by `α ≥ 0`).
    pub normal: Option<Vec3<f64>>,
    /// `∂α/∂r_a = −R_a M_{a,y}ᵀ z_a` (world frame).
    pub dalpha_dr_a: Vec3<f64>,
    /// `∂α/∂r_b = R_b M_{b,y}ᵀ z_b` (world frame).
    pub dalpha_dr_b: Vec3<f64>,
    /// The primal-dual solution (x = [p, α, ε_a, ε_b], s, z).
    pub solution: ConicSolution,
}

fn check_finite<T: Scalar>(shape: &Shape<T>, pose: &Pose<T>) -> Result<(), ProximityError> {
    let ok = primitive::shape_params_finite(shape)
        && pose.translation.iter().all(|v| v.re().is_finite())
        && pose.rotation.coords.iter().all(|v| v.re().is_finite());
    if ok {
        Ok(())
    } else {
        Err(ProximityError::NonFinite)
    }
}

/// Lowers, places and assembles the problem of two shapes.
pub fn problem<T: Scalar>(
    shape_a: &Shape<T>,
    pose_a: &Pose<T>,
    shape_b: &Shape<T>,
    pose_b: &Pose<T>,
) -> Result<ConicProblem<T>, ProximityError> {
    check_finite(shape_a, pose_a)?;
    check_finite(shape_b, pose_b)?;
    if matches!(shape_a, Shape::Plane { .. }) && matches!(shape_b, Shape::Plane { .. }) {
        return Err(ProximityError::InvalidShape(
            "half-space against half-space",
        ));
    }
    let a = lower(shape_a)?;
    let b = lower(shape_b)?;
    Ok(assemble(&a, pose_a, &b, pose_b))
}

/// `∂α/∂r_a`, `∂α/∂r_b` from the duals: `∂α/∂r = −zᵀ ∂s/∂r` restricted to
/// the rows of one shape; `s = h − G x` with `h = G_p r`, so `∂s/∂r = G_p`
/// and `∂α/∂r = −G_pᵀ z`. `g` column-major with `owner.len()` rows.
fn dalpha_dr(g: &[f64], owner: &[Owner], z: &[f64]) -> (Vec3<f64>, Vec3<f64>) {
    let m = owner.len();
    let mut da = Vec3::zeros();
    let mut db = Vec3::zeros();
    for (i, o) in owner.iter().enumerate() {
        let gp = Vec3::new(g[i], g[m + i], g[2 * m + i]);
        match o {
            Owner::A => da -= gp * z[i],
            Owner::B => db -= gp * z[i],
            Owner::Alpha => {}
        }
    }
    (da, db)
}

/// The unit normal, the direction of `∂α/∂r_b` when it does not vanish.
fn normal_of(db: &Vec3<f64>) -> Option<Vec3<f64>> {
    if db.norm() > 1e-9 {
        safe_normalize(db).map(|(u, _)| u)
    } else {
        None
    }
}

/// Solves an assembled problem and reads off α, p and the dual normal.
pub fn solve_problem(
    pr: &ConicProblem<f64>,
    params: &ConicParams,
) -> Result<Proximity, ProximityError> {
    with_workspace(|ws| {
        let n = pr.g.ncols();
        ws.c.clear();
        ws.c.resize(n, 0.0);
        ws.c[3] = 1.0;
        let st = solve::solve_conic_in(
            &mut ws.solver,
            &ws.c,
            pr.g.as_slice(),
            pr.h.as_slice(),
            &pr.layout,
            params,
        )?;
        let (x, s, z) = (ws.solver.x(), ws.solver.s(), ws.solver.z());
        let (da, db) = dalpha_dr(pr.g.as_slice(), &pr.owner, z);
        let alpha = x[3];
        Ok(Proximity {
            alpha,
            phi: alpha - 1.0,
            point: Vec3::new(x[0], x[1], x[2]),
            normal: normal_of(&db),
            dalpha_dr_a: da,
            dalpha_dr_b: db,
            solution: ConicSolution {
                x: DVector::from_column_slice(x),
                s: DVector::from_column_slice(s),
                z: DVector::from_column_slice(z),
                iters: st.iters,
                gap: st.gap,
            },
        })
    })
}

/// Everything a proximity query needs, sized on first use and reused: the
/// two shapes' rows, the assembled `G`, `h`, the solver's buffers and the
/// result. A query whose problem is no larger than an earlier one's
/// allocates nothing (Pinocchio's `Data`, faer's scratch); [`proximity`]
/// uses one per thread.
///
/// ```
/// use dualsim::collision::conic::{ConicParams, ConicWorkspace};
/// use dualsim::geometry::Shape;
/// use dualsim::math::{so3, Pose, Vec3};
/// let a = Shape::Sphere { radius: 1.0 };
/// let b = Shape::Sphere { radius: 0.5 };
/// let pb = Pose::new(so3::identity(), Vec3::new(3.0, 0.0, 0.0));
/// let mut ws = ConicWorkspace::new();
/// let pr = ws.proximity(&a, &Pose::identity(), &b, &pb, &ConicParams::default()).unwrap();
/// assert!((pr.alpha - 2.0).abs() < 1e-9);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConicWorkspace {
    rows_a: PrimalRows,
    rows_b: PrimalRows,
    /// `G`, column-major m × n (the layout of [`assemble`]).
    g: Vec<f64>,
    h: Vec<f64>,
    c: Vec<f64>,
    layout: ConeLayout,
    owner: Vec<Owner>,
    solver: SolverWorkspace,
    out: Option<Proximity>,
}

thread_local! {
    static WORKSPACE: RefCell<ConicWorkspace> = RefCell::new(ConicWorkspace::new());
}

/// Runs `f` with this thread's [`ConicWorkspace`] (a fresh one when it is
/// already in use further up the stack).
pub fn with_workspace<R>(f: impl FnOnce(&mut ConicWorkspace) -> R) -> R {
    let mut f = Some(f);
    let r = WORKSPACE.try_with(|w| match w.try_borrow_mut() {
        Ok(mut ws) => Some((f.take().expect("called once"))(&mut ws)),
        Err(_) => None,
    });
    match r {
        Ok(Some(r)) => r,
        _ => (f.take().expect("called once"))(&mut ConicWorkspace::new()),
    }
}

/// Copies a slice into a vector, reusing its storage when the length is
/// unchanged.
fn copy_into(dst: &mut DVector<f64>, src: &[f64]) {
    if dst.len() == src.len() {
        dst.as_mut_slice().copy_from_slice(src);
    } else {
        *dst = DVector::from_column_slice(src);
    }
}

impl ConicWorkspace {
    /// An empty workspace (allocates on first use).
    pub fn new() -> Self {
        Self::default()
    }

    /// Places the lowered rows of shapes a and b at their world poses into
    /// `G`, `h` (the same problem as [`assemble`], in primal values).
    fn assemble(&mut self, pose_a: &Pose<f64>, pose_b: &Pose<f64>) {
        let (a, b) = (&self.rows_a, &self.rows_b);
        let (n_aux_a, n_aux_b) = (a.n_aux(), b.n_aux());
        let n = 4 + n_aux_a + n_aux_b;
        let (oa, ob) = (a.n_orthant(), b.n_orthant());
        let (ra, rb) = (a.n_rows(), b.n_rows());
        let m = 1 + ra + rb;
        self.layout.n_orthant = 1 + oa + ob;
        self.layout.soc.clear();
        self.layout
            .soc
            .extend(a.soc_dims.iter().chain(b.soc_dims.iter()));
        self.g.clear();
        self.g.resize(m * n, 0.0);
        self.h.clear();
        self.h.resize(m, 0.0);
        self.owner.clear();
        self.owner.resize(m, Owner::A);
        // α ≥ 0  ⇔  s = α = 0 − (−1)α
        self.g[3 * m] = -1.0;
        self.owner[0] = Owner::Alpha;
        // destination rows: orthant rows of a, of b, then SOC rows of a, of b
        for (rows, pose, n_orth, soc_start, eps_col, who) in [
            (a, pose_a, oa, 1 + oa + ob, 4, Owner::A),
            (
                b,
                pose_b,
                ob,
                1 + oa + ob + (ra - oa),
                4 + n_aux_a,
                Owner::B,
            ),
        ] {
            let r = so3::to_matrix(&pose.rotation);
            let t = &pose.translation;
            let orth_start = if who == Owner::A { 1 } else { 1 + oa };
            for i in 0..rows.n_rows() {
                let dst = if i < n_orth {
                    orth_start + i
                } else {
                    soc_start + i - n_orth
                };
                let row = rows.row(i);
                // G_p = −M_y R_ᵀ, h = G_p r
                let mut gp = [0.0; 3];
                for (j, g) in gp.iter_mut().enumerate() {
                    *g = -((row[0] * r[(j, 0)] + row[1] * r[(j, 1)]) + row[2] * r[(j, 2)]);
                    self.g[j * m + dst] = *g;
                }
                self.g[3 * m + dst] = -row[3];
                for k in 0..rows.n_aux() {
                    self.g[(eps_col + k) * m + dst] = -row[4 + k];
                }
                self.h[dst] = (gp[0] * t.x + gp[1] * t.y) + gp[2] * t.z;
                self.owner[dst] = who;
            }
        }
    }

    /// [`proximity`] in this workspace: the result is kept in the workspace
    /// (its vectors reused from one query to the next).
    pub fn proximity<T: Scalar>(
        &mut self,
        shape_a: &Shape<T>,
        pose_a: &Pose<T>,
        shape_b: &Shape<T>,
        pose_b: &Pose<T>,
        params: &ConicParams,
    ) -> Result<&Proximity, ProximityError> {
        check_finite(shape_a, pose_a)?;
        check_finite(shape_b, pose_b)?;
        if matches!(shape_a, Shape::Plane { .. }) && matches!(shape_b, Shape::Plane { .. }) {
            return Err(ProximityError::InvalidShape(
                "half-space against half-space",
            ));
        }
        primitive::lower_into(shape_a, &mut self.rows_a)?;
        primitive::lower_into(shape_b, &mut self.rows_b)?;
        self.assemble(&pose_a.cast(), &pose_b.cast());
        let (m, n) = (self.h.len(), self.g.len() / self.h.len());
        self.c.clear();
        self.c.resize(n, 0.0);
        self.c[3] = 1.0;
        let st = solve::solve_conic_in(
            &mut self.solver,
            &self.c,
            &self.g,
            &self.h,
            &self.layout,
            params,
        )?;
        let (x, s, z) = (self.solver.x(), self.solver.s(), self.solver.z());
        debug_assert_eq!((x.len(), z.len()), (n, m));
        let (da, db) = dalpha_dr(&self.g, &self.owner, z);
        let alpha = x[3];
        let out = self.out.get_or_insert_with(|| Proximity {
            alpha: 0.0,
            phi: 0.0,
            point: Vec3::zeros(),
            normal: None,
            dalpha_dr_a: Vec3::zeros(),
            dalpha_dr_b: Vec3::zeros(),
            solution: ConicSolution {
                x: DVector::zeros(0),
                s: DVector::zeros(0),
                z: DVector::zeros(0),
                iters: 0,
                gap: 0.0,
            },
        });
        out.alpha = alpha;
        out.phi = alpha - 1.0;
        out.point = Vec3::new(x[0], x[1], x[2]);
        out.normal = normal_of(&db);
        out.dalpha_dr_a = da;
        out.dalpha_dr_b = db;
        copy_into(&mut out.solution.x, x);
        copy_into(&mut out.solution.s, s);
        copy_into(&mut out.solution.z, z);
        out.solution.iters = st.iters;
        out.solution.gap = st.gap;
        Ok(out)
    }
}

/// Proximity of two convex shapes at world poses (module docs).
///
/// The shapes may be in any scalar; the solve uses their primal values.
/// Poses must carry unit quaternions. Non-finite input gives
/// [`ProximityError::NonFinite`]; an infeasible or unbounded problem
/// (a zero-size shape away from its partner, an open polytope) gives
/// [`ProximityError::NoConvergence`], never a panic or a NaN. Runs in this
/// thread's [`ConicWorkspace`] (the only allocations are the returned
/// solution's three vectors; [`ConicWorkspace::proximity`] avoids those).
///
/// ```
/// use dualsim::collision::conic::{proximity, ConicParams};
/// use dualsim::geometry::Shape;
/// use dualsim::math::{so3, Pose, Vec3};
/// let a = Shape::Sphere { radius: 1.0 };
/// let b = Shape::Sphere { radius: 0.5 };
/// let pb = Pose::new(so3::identity(), Vec3::new(3.0, 0.0, 0.0));
/// let pr = proximity(&a, &Pose::identity(), &b, &pb, &ConicParams::default()).unwrap();
/// assert!((pr.alpha - 2.0).abs() < 1e-9);
/// assert!((pr.normal.unwrap() - Vec3::x()).norm() < 1e-6);
/// ```
pub fn proximity<T: Scalar>(
    shape_a: &Shape<T>,
    pose_a: &Pose<T>,
    shape_b: &Shape<T>,
    pose_b: &Pose<T>,
    params: &ConicParams,
) -> Result<Proximity, ProximityError> {
    with_workspace(|ws| {
        ws.proximity(shape_a, pose_a, shape_b, pose_b, params)
            .cloned()
    })
}

/// One proximity of a pair of convex parts.
#[derive(Clone, Debug, PartialEq)]
pub struct PartProximity {
    /// Index of the part of shape a (flattened union order; 0 for a convex
    /// shape).
    pub part_a: usize,
    /// Index of the part of shape b.
    pub part_b: usize,
    /// The proximity of the two parts.
    pub proximity: Proximity,
}

/// Convex parts of a shape at a world pose: union bundles are flattened
/// (recursively), anything else is one part.
pub fn convex_parts<T: Scalar>(shape: &Shape<T>, pose: &Pose<T>) -> Vec<(Shape<T>, Pose<T>)> {
    match shape {
        Shape::Bundle {
            parts,
            op: BundleOp::Union,
        } => parts
            .iter()
            .flat_map(|(s, p)| convex_parts(s, &(*pose * *p)))
            .collect(),
        _ => vec![(shape.clone(), *pose)],
    }
}

/// Proximity of every pair of convex parts (union bundles: each part its
/// own proximity, scaled about its own origin, as Silico's convex bundles).
///
/// ```
/// use dualsim::collision::conic::{proximity_parts, ConicParams};
/// use dualsim::geometry::{BundleOp, Shape};
/// use dualsim::math::{so3, Pose, Vec3};
/// let ball = Shape::Sphere { radius: 0.5 };
/// let at = |x: f64| Pose::new(so3::identity(), Vec3::new(x, 0.0, 0.0));
/// let dumbbell = Shape::Bundle { parts: vec![(ball.clone(), at(-1.0)), (ball.clone(), at(1.0))], op: BundleOp::Union };
/// let all = proximity_parts(&dumbbell, &Pose::identity(), &ball, &at(3.0), &ConicParams::default()).unwrap();
/// assert_eq!(all.len(), 2);
/// assert!((all[1].proximity.alpha - 2.0).abs() < 1e-9);
/// ```
pub fn proximity_parts<T: Scalar>(
    shape_a: &Shape<T>,
    pose_a: &Pose<T>,
    shape_b: &Shape<T>,
    pose_b: &Pose<T>,
    params: &ConicParams,
) -> Result<Vec<PartProximity>, ProximityError> {
    let pa = convex_parts(shape_a, pose_a);
    let pb = convex_parts(shape_b, pose_b);
    let mut out = Vec::with_capacity(pa.len() * pb.len());
    for (i, (sa, qa)) in pa.iter().enumerate() {
        for (j, (sb, qb)) in pb.iter().enumerate() {
            let proximity = proximity(sa, qa, sb, qb, params)?;
            out.push(PartProximity {
                part_a: i,
                part_b: j,
                proximity,
            });
        }
    }
    Ok(out)
}
