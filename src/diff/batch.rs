//! Rollout Jacobians of many independent rollouts in parallel.
//!
//! [`batch_rollout_jacobians`] computes one [`rollout_jacobian`] per
//! initial state on a rayon pool chosen by
//! [`BatchOptions`], exactly as
//! [`crate::sim::batch::batch_rollouts`] runs rollouts: each entry is
//! computed on one thread by the same code as the serial call, so it is
//! bitwise equal to it (see the module docs of [`crate::sim::batch`] for
//! why nothing is shared), and a failing rollout is its own `Err`.

use rayon::prelude::*;

use super::{DiffError, DiffOptions, Input, Method, RolloutJacobian, rollout_jacobian};
use crate::sim::batch::{BatchError, BatchOptions, run_in_pool};
use crate::sim::{Controls, State, World};

/// `rollout_jacobian(world, &starts[i], &controls[i], steps, inputs,
/// method, diff)` for every `i`, in parallel; the result is in input
/// order. `Method::Ift` is the fast one (one factorization per step).
#[allow(clippy::too_many_arguments)]
pub fn batch_rollout_jacobians(
    world: &World<f64>,
    starts: &[State<f64>],
    controls: &[Controls<f64>],
    steps: usize,
    inputs: &[Input],
    method: Method,
    diff: &DiffOptions,
    opts: &BatchOptions,
) -> Result<Vec<Result<RolloutJacobian, DiffError>>, BatchError> {
    if starts.len() != controls.len() {
        return Err(BatchError::Size {
            starts: starts.len(),
            controls: controls.len(),
        });
    }
    run_in_pool(opts, || {
        starts
            .par_iter()
            .zip(controls.par_iter())
            .map(|(x0, us)| rollout_jacobian(world, x0, us, steps, inputs, method, diff))
            .collect()
    })
}
