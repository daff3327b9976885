//! Backends whose step is the root of a residual.

use crate::contact::free_flight::FreeFlight;
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::{free_flight_velocity, momentum_residual};
use crate::math::DVec;
use crate::Scalar;

/// A step that is the root `y*` of a residual `r(y; θ) = 0`, with `v⁺` the
/// first `nv` entries of `y` and `q⁺ = q ⊕ h v⁺`.
///
/// The residual must be generic and exact (no frozen linearization), and
/// every discrete decision the solve takes (active candidates, sizes of
/// `y`) must depend on primal values only, so that `residual` evaluated on
/// a problem in a dual scalar with the same primal values describes the
/// same system.
pub trait ImplicitStep {
    /// Solves in f64 and returns `y*` (with `κ = p.params.rho`).
    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<DVec<f64>, SolveError>;

    /// The residual `r(y; θ)` of the problem `p` at `y` (complementarity
    /// relaxed to `p.params.rho`).
    fn residual<T: Scalar>(&self, p: &StepProblem<'_, T>, y: &DVec<T>) -> Result<DVec<T>, SolveError>;
}

impl ImplicitStep for FreeFlight {
    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<DVec<f64>, SolveError> {
        let (v, _) = free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &self.newton)?;
        Ok(v)
    }

    fn residual<T: Scalar>(&self, p: &StepProblem<'_, T>, y: &DVec<T>) -> Result<DVec<T>, SolveError> {
        let mut r = DVec::zeros(p.model.nv);
        momentum_residual(p.model, p.q, p.v, y, p.u, &p.gravity, p.h, &mut r)?;
        Ok(r)
    }
}
