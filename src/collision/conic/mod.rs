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

pub mod primitive;
pub mod proximity_gradient;
pub mod solve;

use nalgebra::{DMatrix, DVector};

pub use primitive::{lower, LocalCone};
pub use proximity_gradient::{proximity_gradient, ProximityJacobian};
pub use solve::{ConeLayout, ConicParams, ConicSolution, Scaling};

use crate::geometry::{BundleOp, Shape};
use crate::math::{so3, Pose, Vec3};
use crate::scalar::safe_normalize;
use crate::Scalar;

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

/// Rows of one shape placed at a pose: `G` block (p, α, ε columns) and `h`.
fn place<T: Scalar>(l: &LocalCone<T>, pose: &Pose<T>) -> (nalgebra::MatrixXx3<T>, DMatrix<T>, DMatrix<T>, DVector<T>) {
    let r = so3::to_matrix(&pose.rotation);
    let my = l.m.columns(0, 3);
    let gp = -(my * r.transpose());
    let h = &gp * pose.translation;
    let ga = -l.m.columns(3, 1).into_owned();
    let ge = -l.m.columns(4, l.n_aux).into_owned();
    (gp, ga, ge, h)
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
        soc: a.layout.soc.iter().chain(b.layout.soc.iter()).copied().collect(),
    };
    let m = layout.dim();
    let mut g = DMatrix::zeros(m, n);
    let mut h = DVector::zeros(m);
    let mut owner = Vec::with_capacity(m);
    // α ≥ 0  ⇔  s = α = 0 − (−1)α
    g[(0, 3)] = -T::one();
    owner.push(Owner::Alpha);
    let pa = place(a, pose_a);
    let pb = place(b, pose_b);
    // destination rows: orthant rows of a, of b, then SOC rows of a, of b
    let (oa, ob) = (a.layout.n_orthant, b.layout.n_orthant);
    let (sa, sb) = (a.layout.dim() - oa, b.layout.dim() - ob);
    let mut rows_a: Vec<usize> = (1..1 + oa).collect();
    rows_a.extend(1 + oa + ob..1 + oa + ob + sa);
    let mut rows_b: Vec<usize> = (1 + oa..1 + oa + ob).collect();
    rows_b.extend(1 + oa + ob + sa..1 + oa + ob + sa + sb);
    owner.resize(m, Owner::A);
    for (blk, rows, eps_col, who) in [(&pa, &rows_a, 4, Owner::A), (&pb, &rows_b, 4 + a.n_aux, Owner::B)] {
        let (gp, ga, ge, hh) = blk;
        for (i, &dst) in rows.iter().enumerate() {
            for j in 0..3 {
                g[(dst, j)] = gp[(i, j)];
            }
            g[(dst, 3)] = ga[(i, 0)];
            for j in 0..ge.ncols() {
                g[(dst, eps_col + j)] = ge[(i, j)];
            }
            h[dst] = hh[i];
            owner[dst] = who;
        }
    }
    ConicProblem { g, h, layout, owner, n_aux_a: a.n_aux }
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
    let mut s = shape.clone();
    let ok = primitive::shape_params_mut(&mut s).iter().all(|v| v.re().is_finite())
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
        return Err(ProximityError::InvalidShape("half-space against half-space"));
    }
    let a = lower(shape_a)?;
    let b = lower(shape_b)?;
    Ok(assemble(&a, pose_a, &b, pose_b))
}

/// Solves an assembled problem and reads off α, p and the dual normal.
pub fn solve_problem(pr: &ConicProblem<f64>, params: &ConicParams) -> Result<Proximity, ProximityError> {
    let n = pr.g.ncols();
    let mut c = DVector::zeros(n);
    c[3] = 1.0;
    let sol = solve::solve_conic(&c, &pr.g, &pr.h, &pr.layout, params)?;
    // ∂α/∂r = −zᵀ ∂s/∂r restricted to the rows of one shape; s = h − G x
    // with h = G_p r, so ∂s/∂r = G_p and ∂α/∂r = −G_pᵀ z.
    let mut da = Vec3::zeros();
    let mut db = Vec3::zeros();
    for (i, o) in pr.owner.iter().enumerate() {
        let gp = Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]);
        match o {
            Owner::A => da -= gp * sol.z[i],
            Owner::B => db -= gp * sol.z[i],
            Owner::Alpha => {}
        }
    }
    let alpha = sol.x[3];
    let normal = if db.norm() > 1e-9 {
        safe_normalize(&db).map(|(u, _)| u)
    } else {
        None
    };
    Ok(Proximity {
        alpha,
        phi: alpha - 1.0,
        point: Vec3::new(sol.x[0], sol.x[1], sol.x[2]),
        normal,
        dalpha_dr_a: da,
        dalpha_dr_b: db,
        solution: sol,
    })
}

/// Proximity of two convex shapes at world poses (module docs).
///
/// The shapes may be in any scalar; the solve uses their primal values.
/// Poses must carry unit quaternions. Non-finite input gives
/// [`ProximityError::NonFinite`]; an infeasible or unbounded problem
/// (a zero-size shape away from its partner, an open polytope) gives
/// [`ProximityError::NoConvergence`], never a panic or a NaN.
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
    let pr = problem(shape_a, pose_a, shape_b, pose_b)?.re();
    solve_problem(&pr, params)
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
        Shape::Bundle { parts, op: BundleOp::Union } => {
            parts.iter().flat_map(|(s, p)| convex_parts(s, &(*pose * *p))).collect()
        }
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
            out.push(PartProximity { part_a: i, part_b: j, proximity });
        }
    }
    Ok(out)
}
