//! `bilevel`: the `ipm` step (see `contact::ipm`) whose contact
//! kinematics solve each pair's conic collision program separately at
//! every evaluation of the residual (every Newton iterate and line-search
//! trial) — the baseline of Silico §VI-B.
//!
//! Per pair of convex parts
//! ([`candidates::silico`](crate::contact::candidates::silico)) the
//! contact is the central-path point `s ∘ z = μ e` of the pair's conic
//! program with `μ = `[`inner_mu`]`(ρ) = 10 ρ`
//! ([`conic_contact_with`](crate::collision::conic::contact::conic_contact_with),
//! the same kinematics as `ipm`'s pairs without a closed form): gap
//! `φ = α_μ − 1`, witness point `p_μ` on both sides, normal (from b to a)
//! the direction of `∂α/∂r_a` from the duals (eq. 41). In a dual scalar
//! (the Newton matrix of `ipm` is one forward-mode evaluation of the
//! kinematics; the `unrolled` and `ift` derivatives) the derivative parts
//! of α, `p` and the duals in the normal come from the implicit-function
//! theorem of that point (`collision::conic::proximity_gradient`).
//!
//! # Face-to-face contact
//!
//! When a face rests on a face the exact (μ → 0) program's witness point
//! is not unique (any point of the contact face), and as a function of the
//! orientation it jumps from one edge of the face to the other at the
//! level orientation (Silico §V-B, Fig. 5): the upper-level residual is
//! discontinuous there. The central-path point is unique and smooth, but
//! it crosses the face within a tilt of O(μ) rad: for the 0.5 m face of
//! the drop box, `∂p/∂ω = −0.0976 / μ` m/rad (`tests/all/contact/bilevel_face.rs`,
//! which checks it against finite differences for μ = 1e-2 … 1e-10, so
//! the derivative itself is right). The step's Newton iteration has to
//! land the orientation inside that window; with the inner programs
//! solved to μ = 1e-10 at every ρ every run of the drop experiments failed
//! at its first face landing, gentle tilted landings included. Relaxed to
//! 10 ρ, landings converge for ρ ≥ 1e-6 and still fail at small ρ
//! (`docs/experiments.md`, "Why `bilevel` fails at a face landing"): that
//! part is inherent to the bilevel formulation. `single_level` does not
//! have it (the contact dynamics pick the witness point) and is the
//! backend to use; with `bilevel` use ρ ≥ 1e-6. The relaxed contact rests
//! O(μ) into its support (the drop box: 2–4 ρ at rest, up to 16 ρ during
//! the drops).

use crate::contact::candidates::silico::conic_candidates;
use crate::contact::candidates::{pair_mu, Candidate, ConicParts};
use crate::contact::ipm::{Ipm, Params, Structure};
use crate::contact::{ContactBackend, SolveError, StepProblem, StepSolution};
use crate::math::{DMat, DVec};
use crate::Scalar;

/// The barrier parameter μ of the inner collision programs of a step
/// with relaxation `rho`: `10 ρ`, as `ipm` relaxes its own conic pairs
/// ([`smoothing`](crate::contact::candidates::conic::smoothing)). The gap
/// and witness point are those of the central-path point `s ∘ z = μ e`,
/// with the derivative parts of α from the implicit-function theorem of
/// that point (module docs, "Face-to-face contact").
pub fn inner_mu(rho: f64) -> f64 {
    crate::contact::candidates::conic::smoothing(rho)
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
                    metric: false,
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
        crate::contact::candidates::conic::refuse_point_clouds("bilevel", p)?;
        self.ipm()
            .solve_structured_from(p, self.candidates(p), false)
    }
}

/// The `ipm` residual with conic contact kinematics
/// (`contact::bilevel`); the same structured solves as `ipm`.
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
