//! The contact-free step: the variational free-body dynamics alone
//! (`dynamics::free`). Every backend reduces to it when no contact
//! candidate is active, and it is the step used until a contact backend
//! is selected.

use super::backend::{check_rows, dense_solve, free_body_solve};
use super::{ContactBackend, Param, SolveError, SolveStats, StepProblem, StepSolution};
use crate::Scalar;
use crate::contact::space::partials::kernel_partials;
use crate::dynamics::articulated::articulated_velocity;
use crate::dynamics::articulated::{articulated_residual, has_articulated};
use crate::dynamics::free::momentum_residual;
use crate::dynamics::free::{NewtonParams, free_flight_velocity, integrate_model};
use crate::math::{DMat, DVec};

/// Free flight: ignores all contact.
#[derive(Clone, Copy, Debug, Default)]
pub struct FreeFlight {
    /// Newton tuning for the rotational equations.
    pub newton: NewtonParams,
}

/// Not a registered backend (it ignores contact): the contact-free step
/// and the test oracle of the structured solves.
impl ContactBackend for FreeFlight {
    const NAME: &'static str = "free_flight";
    type Params = NewtonParams;
    type Structure = ();
    type Workspace<T: Scalar> = ();

    fn new(params: &NewtonParams) -> Self {
        FreeFlight { newton: *params }
    }

    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        let (mut v_next, iterations) =
            free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &self.newton)?;
        articulated_velocity(p.model, p.q, p.v, p.u, p.h, &mut v_next);
        let q_next = integrate_model(p.model, p.q, &v_next, p.h)?;
        Ok(StepSolution {
            q_next,
            v_next,
            contacts: Vec::new(),
            stats: SolveStats {
                iterations,
                ..Default::default()
            },
        })
    }

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, ()), SolveError> {
        let (v, _) = free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &self.newton)?;
        Ok((v, ()))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        _: &(),
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        let mut r = DVec::zeros(p.model.nv);
        momentum_residual(p.model, p.q, p.v, y, p.u, &p.gravity, p.h, &mut r)?;
        articulated_residual(p.model, p.q, p.v, y, p.u, p.h, &mut r);
        Ok(r)
    }

    fn same_structure(_: &(), _: &()) -> bool {
        true
    }

    fn kernel_partials(
        &self,
        p: &StepProblem<'_, f64>,
        _: &(),
        y: &DVec<f64>,
        params: &[Param],
    ) -> Result<Option<DMat<f64>>, SolveError> {
        kernel_partials(p, &[], &[], y, params)
    }

    /// Block diagonal: `diag(m 𝟙, ∂P⁺/∂ω⁺)` per body.
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        _: &(),
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        if has_articulated(p.model) {
            return dense_solve(self, p, &(), y, rhs);
        }
        check_rows(y, rhs)?;
        let mut out = DMat::zeros(rhs.nrows(), rhs.ncols());
        for i in 0..p.model.bodies.len() {
            free_body_solve(p, i, y, rhs, &mut out)?;
        }
        Ok(out)
    }
}
