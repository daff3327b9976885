//! The contact-free step: the variational free-body dynamics alone
//! (`dynamics::free`). Every backend reduces to it when no contact
//! candidate is active, and it is the step used until a contact backend
//! is selected.

use super::{ContactBackend, SolveError, SolveStats, StepProblem, StepSolution};
use crate::dynamics::articulated::articulated_velocity;
use crate::dynamics::free::{free_flight_velocity, integrate_model, NewtonParams};
use crate::Scalar;

/// Free flight: ignores all contact.
#[derive(Clone, Copy, Debug, Default)]
pub struct FreeFlight {
    /// Newton tuning for the rotational equations.
    pub newton: NewtonParams,
}

impl ContactBackend for FreeFlight {
    fn name(&self) -> &'static str {
        "free_flight"
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
            stats: SolveStats { iterations, ..Default::default() },
        })
    }
}
