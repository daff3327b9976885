//! `bilevel`: the `ipm` step (see `contact::ipm`) whose contact
//! kinematics solve each pair's conic collision program separately, to
//! convergence, at every evaluation of the residual (every Newton iterate
//! and line-search trial) — the baseline of Silico §VI-B.
//!
//! Per pair of convex parts
//! ([`candidates::silico`](crate::contact::candidates::silico)) the
//! contact is
//! [`conic_contact`](crate::collision::conic::contact::conic_contact):
//! gap `φ = α* − 1`, witness point `p*` on both sides, normal (from b to
//! a) the direction of `∂α/∂r_a` from the duals (eq. 41).
//! In a dual scalar (the Newton matrix of `ipm` is one forward-mode
//! evaluation of the kinematics; the `unrolled` and `ift` derivatives) the
//! derivative parts of α come from the envelope theorem (eq. 15), those of
//! `p*` from the implicit-function theorem of
//! `collision::conic::proximity_gradient`, and the normal is the
//! normalized `−Σ G_pᵀ z` with `G_p` lifted and the duals `z` held at
//! their primal values (their derivative is not propagated: the Newton
//! matrix's geometric stiffness of a rotating normal is approximate).

use crate::collision::conic::contact::inner_params;
use crate::contact::candidates::silico::conic_candidates;
use crate::contact::candidates::{pair_mu, Candidate, ConicParts};
use crate::contact::ipm::{Ipm, Params, Structure};
use crate::contact::{ContactBackend, SolveError, StepProblem, StepSolution};
use crate::math::{DMat, DVec};
use crate::Scalar;

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
                    smoothing: inner_params().tol_gap,
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
