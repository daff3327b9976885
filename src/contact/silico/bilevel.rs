//! `bilevel`: the `ipm` step (see `contact::ipm`) whose contact
//! kinematics solve each pair's conic collision program separately at
//! every evaluation of the residual (every Newton iterate and line-search
//! trial) — the baseline of Silico §VI-B.
//!
//! Per pair of convex parts ([`super::pairs`]) the contact is the
//! central-path point `s ∘ z = μ e` of the pair's conic program with
//! `μ = `[`inner_mu`]`(ρ) = 10 ρ` ([`conic_contact_with`], the same
//! kinematics as `ipm`'s pairs without a closed form): gap `φ = α_μ − 1`,
//! witness point `p_μ` on both sides, normal (from b to a) the direction
//! of `∂α/∂r_a` from the duals (eq. 41). In a dual scalar (the Newton
//! matrix of `ipm` is one forward-mode evaluation of the kinematics; the
//! `unrolled` and `ift` derivatives) the derivative parts of α, `p` and
//! the duals in the normal come from the implicit-function theorem of
//! that point (`collision::conic::proximity_gradient`).
//!
//! # Face-to-face contact
//!
//! When a face rests on a face the exact (μ → 0) program's witness point
//! is not unique (any point of the contact face), and as a function of the
//! orientation it jumps from one edge of the face to the other at the
//! level orientation (Silico §V-B, Fig. 5): the upper-level residual is
//! discontinuous there. The central-path point is unique and smooth, but
//! it crosses the face within a tilt of O(μ) rad: for the 0.5 m face of
//! the drop box, `∂p/∂ω = −0.0976 / μ` m/rad (`tests/bilevel_face.rs`,
//! which checks it against finite differences for μ = 1e-2 … 1e-10, so
//! the derivative itself is right). The step's Newton iteration has to
//! land the orientation inside that window; with the inner programs
//! solved to μ = 1e-10 at every ρ (as this backend did before issue 20)
//! every run of the drop experiments failed at its first face landing,
//! gentle tilted landings included. Relaxed to 10 ρ, landings converge for
//! ρ ≥ 1e-6 and still fail at small ρ (`docs/experiments.md`, "Why
//! `bilevel` fails at a face landing"): that part is inherent to the
//! bilevel formulation. `single_level` does not have it (the contact
//! dynamics pick the witness point) and is the backend to use; with
//! `bilevel` use ρ ≥ 1e-6. The relaxed contact rests O(μ) into its
//! support (the drop box: 2–4 ρ at rest, up to 16 ρ during the drops).

use std::any::TypeId;

use super::pairs::{conic_candidates, pair_mu};
use crate::collision::conic::primitive::shape_params_mut;
use crate::collision::conic::{
    problem, proximity, proximity_gradient, ConicParams, Owner, ProximityError,
};
use crate::collision::{direction_or_z, Contact};
use crate::contact::ipm::residual::{Candidate, ConicParts};
use crate::contact::ipm::{Ipm, Params, Structure};
use crate::contact::{ContactBackend, SolveError, StepProblem, StepSolution};
use crate::geometry::Shape;
use crate::math::{so3, DMat, DVec, Pose, Vec3};
use crate::Scalar;

/// Tolerances of [`conic_contact`] (converged: duality measure 1e-10 and
/// residuals 1e-10). The `bilevel` step does not use them: its inner
/// programs are relaxed to [`inner_mu`].
pub fn inner_params() -> ConicParams {
    ConicParams {
        tol_gap: 1e-10,
        ..ConicParams::default()
    }
}

/// The barrier parameter μ of the inner collision programs of a step
/// with relaxation `rho`: `10 ρ`, as `ipm` relaxes its own conic pairs
/// ([`crate::contact::ipm::conic_pairs::smoothing`]). The gap and witness
/// point are those of the central-path point `s ∘ z = μ e`, with the
/// derivative parts of α from the implicit-function theorem of that point
/// (module docs, "Face-to-face contact").
pub fn inner_mu(rho: f64) -> f64 {
    crate::contact::ipm::conic_pairs::smoothing(rho)
}

/// The tangent `(δr, δω)` of `pose` at its primal value (`δω` world
/// frame: `q = exp(δω) ⊗ q_re`), zero primal parts.
fn pose_tangent<S: Scalar>(pose: &Pose<S>) -> [S; 6] {
    let q0 = crate::math::Quat::from(pose.rotation.coords.map(|x| S::from_re(x.re())));
    let dq = so3::mul(&pose.rotation, &so3::conj(&q0));
    let t = pose.translation;
    let d = |x: S| x - S::from_re(x.re());
    [
        d(t.x),
        d(t.y),
        d(t.z),
        dq.i * S::from_re(2.0),
        dq.j * S::from_re(2.0),
        dq.k * S::from_re(2.0),
    ]
}

/// Contact of two convex parts at world poses from their conic proximity
/// (module docs).
pub fn conic_contact<S: Scalar>(
    sa: &Shape<S>,
    pa: &Pose<S>,
    sb: &Shape<S>,
    pb: &Pose<S>,
) -> Result<Contact<S>, ProximityError> {
    conic_contact_with(sa, pa, sb, pb, &inner_params(), false)
}

/// [`conic_contact`] with the conic program solved to `params` (its
/// returned point is the central-path point of `μ = params.tol_gap`); with
/// `alpha_ift`, the derivative parts of α come from the implicit-function
/// theorem of that point (`ProximityJacobian::dalpha_ift`) instead of the
/// envelope theorem, which is exact only as μ → 0.
pub fn conic_contact_with<S: Scalar>(
    sa: &Shape<S>,
    pa: &Pose<S>,
    sb: &Shape<S>,
    pb: &Pose<S>,
    params: &ConicParams,
    alpha_ift: bool,
) -> Result<Contact<S>, ProximityError> {
    let params = *params;
    let is_primal =
        TypeId::of::<S>() == TypeId::of::<f64>() || TypeId::of::<S>() == TypeId::of::<f32>();
    let (prox, jac) = if is_primal {
        (proximity(sa, pa, sb, pb, &params)?, None)
    } else {
        let (prox, jac) =
            proximity_gradient(&sa.cast(), &pa.cast(), &sb.cast(), &pb.cast(), &params)?;
        (prox, Some(jac))
    };
    // The derivative parts of the poses and shape parameters (θ of
    // `proximity_gradient`), when the scalar has them.
    let theta: Option<Vec<S>> = jac.as_ref().map(|_| {
        let mut theta: Vec<S> = pose_tangent(pa)
            .into_iter()
            .chain(pose_tangent(pb))
            .collect();
        let (mut ca, mut cb) = (sa.clone(), sb.clone());
        for v in shape_params_mut(&mut ca)
            .into_iter()
            .chain(shape_params_mut(&mut cb))
        {
            theta.push(*v - S::from_re(v.re()));
        }
        theta
    });
    let lin = |d: &nalgebra::DMatrix<f64>, row: usize, theta: &[S]| -> S {
        let mut acc = S::zero();
        for (k, t) in theta.iter().enumerate().take(d.ncols()) {
            acc += S::from_re(d[(row, k)]) * *t;
        }
        acc
    };
    let pr = problem(sa, pa, sb, pb)?;
    let x: nalgebra::DVector<S> = prox.solution.x.map(S::from_re);
    let s = pr.slack(&x);
    // Envelope theorem: α(θ) ≈ α* − zᵀ (s(x*; θ) − s*). With `alpha_ift`,
    // α from the IFT instead, and the duals in the normal carry their
    // derivative parts `∂z/∂θ θ` (exact at the central point).
    let mut alpha = S::from_re(prox.alpha);
    let mut da = Vec3::zeros();
    for (i, si) in s.iter().enumerate() {
        let z = S::from_re(prox.solution.z[i]);
        alpha -= z * (*si - S::from_re(si.re()));
        if pr.owner[i] == Owner::A {
            let zi = match (&jac, &theta) {
                (Some(j), Some(t)) if alpha_ift => z + lin(&j.dz, i, t),
                _ => z,
            };
            da -= Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * zi;
        }
    }
    let mut point = prox.point.map(S::from_re);
    if let (Some(j), Some(t)) = (&jac, &theta) {
        for r in 0..3 {
            point[r] += lin(&j.dpoint, r, t);
        }
        if alpha_ift {
            // α and its derivative parts from the IFT of the central point.
            alpha = S::from_re(prox.alpha);
            for (k, tk) in t.iter().enumerate().take(j.dalpha_ift.len()) {
                alpha += S::from_re(j.dalpha_ift[k]) * *tk;
            }
        }
    }
    let (normal, _) = direction_or_z(&da);
    Ok(Contact {
        gap: alpha - S::one(),
        point_a: point,
        point_b: point,
        normal,
    })
}

/// The `bilevel` backend: `ipm` with conic contact kinematics.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bilevel {
    /// Interior-point tuning (shared with `ipm`).
    pub params: Params,
}

impl Bilevel {
    /// The `ipm` solver it runs.
    pub fn ipm(&self) -> Ipm {
        Ipm {
            params: self.params,
        }
    }

    /// Candidates: every pair of convex parts of [`conic_candidates`].
    pub fn candidates<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Vec<Candidate<T>> {
        conic_candidates(p, p.q, self.params.margin)
            .into_iter()
            .map(|c| Candidate {
                a: c.a,
                link: None,
                b: c.b,
                feature: c.feature,
                mu: pair_mu(p, c.a, c.b),
                law: c.law,
                axis: c.axis,
                parts: Some(ConicParts {
                    part_a: c.part_a,
                    part_b: c.part_b,
                    smoothing: inner_mu(p.params.rho),
                }),
            })
            .collect()
    }

    /// Solves the step, returning the candidates and contact unknowns too.
    pub fn solve_structured<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        SolveError::refuse_link_shapes("bilevel", p)?;
        crate::contact::ipm::conic_pairs::refuse_point_clouds("bilevel", p)?;
        self.ipm()
            .solve_structured_from(p, self.candidates(p), false)
    }
}

/// The `ipm` residual with conic contact kinematics
/// (`contact::silico::bilevel`); the same structured solves as `ipm`.
impl ContactBackend for Bilevel {
    const NAME: &'static str = "bilevel";
    type Structure = Vec<Candidate<f64>>;
    type Workspace<T: Scalar> = ();
    type Params = Params;
    const RELAXED: bool = true;

    fn new(params: &Params) -> Self {
        Bilevel { params: *params }
    }

    fn check_params(p: &Params) -> Result<(), String> {
        crate::contact::ipm::check_params(p)
    }

    fn contact_margin(params: &Params) -> f64 {
        params.margin
    }

    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        Ok(self.solve_structured(p)?.0)
    }

    fn solve_root(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(DVec<f64>, Vec<Candidate<f64>>), SolveError> {
        let (sol, st) = self.solve_structured(p)?;
        Ok((
            crate::contact::backend::stacked_root(&sol.v_next, &st.xs),
            st.candidates,
        ))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Vec<Candidate<f64>>,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        self.ipm().residual(p, s, y)
    }

    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Vec<Candidate<f64>>,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        self.ipm().solve_jacobian(p, s, y, rhs)
    }

    fn same_structure(a: &Vec<Candidate<f64>>, b: &Vec<Candidate<f64>>) -> bool {
        <Ipm as ContactBackend>::same_structure(a, b)
    }
}
