//! Derivatives of the conic proximity α* and the witness point p* with
//! respect to both poses and the shape parameters (DCOL's
//! `proximity_gradient.jl`).
//!
//! # Parameters θ
//!
//! In this order: the tangent of pose a (6: `δr` then `δω`, the perturbed
//! pose being `(exp(δω) ⊗ q_a, r_a + δr)`, i.e. world-frame rotation), the
//! tangent of pose b (6), the parameters of shape a then of shape b in the
//! order of [`super::primitive::shape_params_mut`].
//! `∂G/∂θ_k` and `∂h/∂θ_k` come from assembling the problem once per
//! parameter with a [`Dual64`] seeded on that parameter (the assembly is
//! generic, [`super::assemble`]).
//!
//! # Envelope theorem (α only)
//!
//! α* is the optimal value of `min cᵀx s.t. G(θ)x + s = h(θ), s ∈ K`; with
//! the duals z (Silico eq. 6/15)
//!
//! ```text
//! ∂α*/∂θ = zᵀ (∂G/∂θ x* − ∂h/∂θ) = −zᵀ ∂s(x*; θ)/∂θ
//! ```
//!
//! one inner product per parameter, no factorization.
//!
//! # Implicit-function theorem (α and p)
//!
//! The KKT residual, w = (x, s, z),
//!
//! ```text
//! F(w; θ) = [ c + G(θ)ᵀz ;  s + G(θ)x − h(θ) ;  s ∘ z ] = 0
//! ∂F/∂w   = [ 0  0  Gᵀ ;  G  I  0 ;  0  L(z)  L(s) ]
//! ∂F/∂θ   = [ ∂Gᵀ z ;  ∂G x − ∂h ;  0 ]
//! dw/dθ   = −(∂F/∂w)⁻¹ ∂F/∂θ
//! ```
//!
//! with `L(u)` the arrow matrix of the Jordan product. The Jacobian is
//! evaluated at the interior-point solution (gap ≤ 1e-12), i.e. it is the
//! Jacobian of the slightly relaxed residual `s ∘ z = μe`, which stays
//! nonsingular when the exact one is not (e.g. face-face contact, where p*
//! is not unique; there dp/dθ is the derivative of the central-path point).
//! The two routes agree on ∂α/∂θ (tests: within 1e-6).

#![allow(non_snake_case)]

use nalgebra::{DMatrix, DVector};

use super::primitive::shape_params_mut;
use super::{ConicParams, ConicProblem, Proximity, ProximityError, problem, proximity};
use crate::Scalar;
use crate::geometry::Shape;
use crate::math::{Pose, Vec3, so3};
use crate::scalar::Dual64;

/// Derivatives of α* and p* with respect to θ (module docs for the order).
#[derive(Clone, Debug, PartialEq)]
pub struct ProximityJacobian {
    /// `∂α/∂θ` by the envelope theorem.
    pub dalpha_envelope: DVector<f64>,
    /// `∂α/∂θ` by the implicit-function theorem.
    pub dalpha_ift: DVector<f64>,
    /// `∂p/∂θ` (3 × nθ) by the implicit-function theorem.
    pub dpoint: DMatrix<f64>,
    /// `∂z/∂θ` (rows of the problem × nθ) of the duals, by the
    /// implicit-function theorem.
    pub dz: DMatrix<f64>,
    /// Number of parameters of shape a.
    pub n_params_a: usize,
    /// Number of parameters of shape b.
    pub n_params_b: usize,
}

impl ProximityJacobian {
    /// Number of parameters nθ = 12 + n_params_a + n_params_b.
    pub fn len(&self) -> usize {
        self.dalpha_envelope.len()
    }
    /// Always false (there are at least the 12 pose parameters).
    pub fn is_empty(&self) -> bool {
        false
    }
    /// `∂α/∂(δr_a, δω_a)` (envelope).
    pub fn dalpha_dpose_a(&self) -> [f64; 6] {
        std::array::from_fn(|i| self.dalpha_envelope[i])
    }
    /// `∂α/∂(δr_b, δω_b)` (envelope).
    pub fn dalpha_dpose_b(&self) -> [f64; 6] {
        std::array::from_fn(|i| self.dalpha_envelope[6 + i])
    }
    /// `∂α/∂(shape a parameters)` (envelope).
    pub fn dalpha_dshape_a(&self) -> &[f64] {
        &self.dalpha_envelope.as_slice()[12..12 + self.n_params_a]
    }
    /// `∂α/∂(shape b parameters)` (envelope).
    pub fn dalpha_dshape_b(&self) -> &[f64] {
        &self.dalpha_envelope.as_slice()[12 + self.n_params_a..]
    }
}

/// Number of parameters θ of a pair.
pub fn n_params(shape_a: &Shape<f64>, shape_b: &Shape<f64>) -> usize {
    let mut a = shape_a.clone();
    let mut b = shape_b.clone();
    12 + shape_params_mut(&mut a).len() + shape_params_mut(&mut b).len()
}

/// The shapes and poses with `delta` added to parameter `k` (manifold
/// perturbation for the poses). With `T = Dual64` and `delta = ε` this seeds
/// derivative direction k; with `T = f64` it perturbs (finite differences).
///
/// ```
/// use dualsim::collision::conic::proximity_gradient::perturbed;
/// use dualsim::geometry::Shape;
/// use dualsim::math::Pose;
/// let s = Shape::Sphere { radius: 1.0 };
/// let (sa, pa, _, _) = perturbed(&s, &Pose::identity(), &s, &Pose::identity(), 0, 0.5);
/// assert_eq!(pa.translation.x, 0.5);
/// let (sa, ..) = perturbed(&s, &Pose::identity(), &s, &Pose::identity(), 12, 0.5);
/// assert_eq!(sa, Shape::Sphere { radius: 1.5 });
/// ```
#[allow(clippy::type_complexity)]
pub fn perturbed<T: Scalar>(
    shape_a: &Shape<f64>,
    pose_a: &Pose<f64>,
    shape_b: &Shape<f64>,
    pose_b: &Pose<f64>,
    k: usize,
    delta: T,
) -> (Shape<T>, Pose<T>, Shape<T>, Pose<T>) {
    let mut sa = shape_a.cast::<T>();
    let mut sb = shape_b.cast::<T>();
    let mut pa = pose_a.cast::<T>();
    let mut pb = pose_b.cast::<T>();
    let na = shape_params_mut(&mut sa).len();
    let nb = shape_params_mut(&mut sb).len();
    assert!(k < 12 + na + nb, "parameter index out of range");
    let perturb_pose = |p: &mut Pose<T>, j: usize| {
        if j < 3 {
            p.translation[j] += delta;
        } else {
            let mut w = Vec3::zeros();
            w[j - 3] = delta;
            p.rotation = so3::exp(&w) * p.rotation;
        }
    };
    match k {
        0..=5 => perturb_pose(&mut pa, k),
        6..=11 => perturb_pose(&mut pb, k - 6),
        _ if k < 12 + na => *shape_params_mut(&mut sa)[k - 12] += delta,
        _ => *shape_params_mut(&mut sb)[k - 12 - na] += delta,
    }
    (sa, pa, sb, pb)
}

/// `(∂G/∂θ_k, ∂h/∂θ_k)` from one dual-number assembly.
fn problem_derivative(
    shape_a: &Shape<f64>,
    pose_a: &Pose<f64>,
    shape_b: &Shape<f64>,
    pose_b: &Pose<f64>,
    k: usize,
) -> Result<(DMatrix<f64>, DVector<f64>), ProximityError> {
    let (sa, pa, sb, pb) = perturbed(shape_a, pose_a, shape_b, pose_b, k, Dual64::new(0.0, 1.0));
    let pr: ConicProblem<Dual64> = problem(&sa, &pa, &sb, &pb)?;
    Ok((pr.g.map(|v| v.eps), pr.h.map(|v| v.eps)))
}

/// Solves the proximity problem and differentiates α* (envelope theorem and
/// IFT) and p* (IFT) with respect to θ (module docs).
///
/// ```
/// use dualsim::collision::conic::{proximity_gradient, ConicParams};
/// use dualsim::geometry::Shape;
/// use dualsim::math::{so3, Pose, Vec3};
/// let a = Shape::Sphere { radius: 1.0 };
/// let b = Shape::Sphere { radius: 0.5 };
/// let pb = Pose::new(so3::identity(), Vec3::new(3.0, 0.0, 0.0));
/// let (prox, jac) = proximity_gradient(&a, &Pose::identity(), &b, &pb, &ConicParams::default()).unwrap();
/// assert!((jac.dalpha_dpose_b()[0] - 2.0 / 3.0).abs() < 1e-8);
/// assert!((jac.dalpha_ift[6] - 2.0 / 3.0).abs() < 1e-8);
/// // ∂α/∂R_b = −α/(R_a + R_b)
/// assert!((jac.dalpha_dshape_b()[0] + 2.0 / 1.5).abs() < 1e-8);
/// # let _ = prox;
/// ```
pub fn proximity_gradient(
    shape_a: &Shape<f64>,
    pose_a: &Pose<f64>,
    shape_b: &Shape<f64>,
    pose_b: &Pose<f64>,
    params: &ConicParams,
) -> Result<(Proximity, ProximityJacobian), ProximityError> {
    let pr = problem(shape_a, pose_a, shape_b, pose_b)?;
    // the same solve as `proximity` (bit for bit the same point)
    let prox = proximity(shape_a, pose_a, shape_b, pose_b, params)?;
    let (x, s, z) = (&prox.solution.x, &prox.solution.s, &prox.solution.z);
    let (n, m) = (pr.g.ncols(), pr.g.nrows());

    // KKT Jacobian ∂F/∂w, w = (x, s, z)
    let mut J = DMatrix::zeros(n + 2 * m, n + 2 * m);
    J.view_mut((0, n + m), (n, m)).copy_from(&pr.g.transpose());
    J.view_mut((n, 0), (m, n)).copy_from(&pr.g);
    J.view_mut((n, n), (m, m)).fill_with_identity();
    J.view_mut((n + m, n), (m, m))
        .copy_from(&pr.layout.arrow(z));
    J.view_mut((n + m, n + m), (m, m))
        .copy_from(&pr.layout.arrow(s));
    // Row equilibration (the complementarity rows mix O(1) and O(μ)
    // entries) and two rounds of iterative refinement of every solve.
    let row_scale: Vec<f64> = (0..n + 2 * m)
        .map(|i| {
            let r = J.row(i).amax();
            if r > 0.0 { 1.0 / r } else { 1.0 }
        })
        .collect();
    for (i, sc) in row_scale.iter().enumerate() {
        J.row_mut(i).scale_mut(*sc);
    }
    let lu = J.clone().lu();
    let solve = |b: &DVector<f64>| -> Option<DVector<f64>> {
        let b = DVector::from_fn(b.len(), |i, _| b[i] * row_scale[i]);
        let mut x = lu.solve(&b)?;
        for _ in 0..2 {
            let r = &b - &J * &x;
            x += lu.solve(&r)?;
        }
        Some(x)
    };

    let mut sa = shape_a.clone();
    let mut sb = shape_b.clone();
    let n_params_a = shape_params_mut(&mut sa).len();
    let n_params_b = shape_params_mut(&mut sb).len();
    let nt = 12 + n_params_a + n_params_b;
    let mut dalpha_envelope = DVector::zeros(nt);
    let mut dalpha_ift = DVector::zeros(nt);
    let mut dpoint = DMatrix::zeros(3, nt);
    let mut dz = DMatrix::zeros(m, nt);
    for k in 0..nt {
        let (dg, dh) = problem_derivative(shape_a, pose_a, shape_b, pose_b, k)?;
        let ds_fixed = &dg * x - &dh; // −∂s/∂θ at fixed x
        dalpha_envelope[k] = z.dot(&ds_fixed);
        let mut rhs = DVector::zeros(n + 2 * m);
        rhs.rows_mut(0, n).copy_from(&(dg.transpose() * z));
        rhs.rows_mut(n, m).copy_from(&ds_fixed);
        let dw = solve(&(-rhs)).ok_or(ProximityError::NoConvergence {
            iters: prox.solution.iters,
            residual: f64::INFINITY,
        })?;
        if dw.iter().any(|v| !v.is_finite()) {
            return Err(ProximityError::NoConvergence {
                iters: prox.solution.iters,
                residual: f64::NAN,
            });
        }
        dalpha_ift[k] = dw[3];
        for j in 0..3 {
            dpoint[(j, k)] = dw[j];
        }
        for j in 0..m {
            dz[(j, k)] = dw[n + m + j];
        }
    }
    Ok((
        prox,
        ProximityJacobian {
            dalpha_envelope,
            dalpha_ift,
            dpoint,
            dz,
            n_params_a,
            n_params_b,
        },
    ))
}

/// α* as a `T` whose derivative parts are the exact first derivatives with
/// respect to whatever the dual parts of the shapes and poses carry
/// (envelope theorem: `α_T = α* − Σᵢ zᵢ (s_T,ᵢ(x*) − re s_T,ᵢ(x*))`).
/// Second derivative parts are not exact.
///
/// ```
/// use dualsim::collision::conic::{proximity, ConicParams};
/// use dualsim::collision::conic::proximity_gradient::alpha_lifted;
/// use dualsim::geometry::Shape;
/// use dualsim::math::{so3, Pose, Vec3};
/// use dualsim::scalar::Dual64;
/// let a = Shape::Sphere { radius: Dual64::from(1.0) };
/// let b = Shape::Sphere { radius: Dual64::from(0.5) };
/// let pb = Pose::new(so3::identity(), Vec3::new(Dual64::new(3.0, 1.0), 0.0.into(), 0.0.into()));
/// let prox = proximity(&a, &Pose::identity(), &b, &pb, &ConicParams::default()).unwrap();
/// let alpha = alpha_lifted(&a, &Pose::identity(), &b, &pb, &prox).unwrap();
/// assert!((alpha.eps - 2.0 / 3.0).abs() < 1e-8);
/// ```
pub fn alpha_lifted<T: Scalar>(
    shape_a: &Shape<T>,
    pose_a: &Pose<T>,
    shape_b: &Shape<T>,
    pose_b: &Pose<T>,
    prox: &Proximity,
) -> Result<T, ProximityError> {
    let pr = problem(shape_a, pose_a, shape_b, pose_b)?;
    let x = prox.solution.x.map(T::from_re);
    let s = pr.slack(&x);
    let mut alpha = T::from_re(prox.alpha);
    for (i, si) in s.iter().enumerate() {
        alpha -= T::from_re(prox.solution.z[i]) * (*si - T::from_re(si.re()));
    }
    Ok(alpha)
}
