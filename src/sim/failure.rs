//! A failed rollout keeps what it computed.
//!
//! [`rollout`](super::rollout) stops at the first step that fails and
//! returns a [`RolloutError`]: the index of the failing step, the step's
//! [`SimError`] and the [`Trajectory`] of the steps completed before it
//! (`completed.states[0]` is the initial state, `completed.states[k]` the
//! state after step `k − 1`, so a failure at step `k` keeps `k + 1`
//! states). Nothing computed is thrown away: the command line writes it
//! with `run --out`, and an API user can continue from
//! `completed.last()`.
//!
//! ```
//! use dualsim::prelude::*;
//! use dualsim::sim::RolloutError;
//! let mut world = World::<f64>::new(0.01);
//! world.add_body("ball", 1.0, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! let x0 = State::at_rest(&world.model, &[[0.0, 0.0, 1.0]]);
//! // a control that becomes non-finite at step 3
//! let mut us = vec![world.zero_control(); 5];
//! us[3][0] = f64::NAN;
//! let err: RolloutError<f64> = rollout(&world, &x0, &Controls::PerStep(us), 5).unwrap_err();
//! assert_eq!(err.step, 3);
//! assert_eq!(err.completed.states.len(), 4); // x₀ and the states after steps 0, 1, 2
//! assert_eq!(err.error.kind(), "non_finite");
//! ```

use super::{SimError, Trajectory};
use crate::Scalar;
use crate::contact::SolveError;

/// A rollout that stopped at a failing step, with the trajectory of the
/// steps completed before it.
#[derive(Clone, thiserror::Error)]
#[error("step {step}: {error}")]
pub struct RolloutError<T: Scalar> {
    /// Index of the failing step (0-based): steps `0..step` completed.
    pub step: usize,
    /// Why the step failed.
    #[source]
    pub error: SimError,
    /// The states `x₀ … x_step` and the statistics of the completed steps.
    pub completed: Trajectory<T>,
}

impl<T: Scalar> std::fmt::Debug for RolloutError<T> {
    // The trajectory can be long: show its length only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RolloutError")
            .field("step", &self.step)
            .field("error", &self.error)
            .field("completed_states", &self.completed.states.len())
            .finish()
    }
}

impl<T: Scalar> From<RolloutError<T>> for SimError {
    /// Drops the completed trajectory (for callers that only propagate).
    fn from(e: RolloutError<T>) -> SimError {
        e.error
    }
}

impl SimError {
    /// A short machine-readable name of the failure (`run --json`'s
    /// `error.kind`): `max_iterations`, `singular`, `dynamics`,
    /// `collision`, `not_unique`, `unsupported`, `invalid_input`,
    /// `mismatch`, `infeasible`, `non_finite`, `size`, `out_of_range`.
    pub fn kind(&self) -> &'static str {
        match self {
            SimError::Solve(e) => match e {
                SolveError::MaxIterations { .. } => "max_iterations",
                SolveError::Dynamics(_) => "dynamics",
                SolveError::Singular(_) => "singular",
                SolveError::Mismatch { .. } => "mismatch",
                SolveError::InvalidInput { .. } => "invalid_input",
                SolveError::Infeasible { .. } => "infeasible",
                SolveError::NonFinite { .. } => "non_finite",
                SolveError::NotUnique { .. } => "not_unique",
                SolveError::OutOfRange { .. } => "singular",
                SolveError::Collision(_) => "collision",
                SolveError::Unsupported { .. } | SolveError::UnsupportedPair { .. } => {
                    "unsupported"
                }
            },
            SimError::Dynamics(_) => "dynamics",
            SimError::NonFinite { .. } => "non_finite",
            SimError::Size { .. } => "size",
            SimError::Unsupported { .. } => "unsupported",
            SimError::OutOfRange { .. } => "out_of_range",
        }
    }
}
