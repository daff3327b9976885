//! Many independent rollouts in parallel.
//!
//! [`batch_rollouts`] runs one [`rollout`] per initial
//! state (each with its own [`Controls`]) of the same world, in parallel
//! on a [rayon] thread pool: a local pool of [`BatchOptions::threads`]
//! threads when given, else rayon's global pool. The result holds one
//! entry per rollout, in input order; a rollout that fails is its own
//! `Err` ([`RolloutError`], with the steps it completed) and leaves the
//! others untouched. The batch of rollout Jacobians (by `ift`) is
//! [`crate::diff::batch_rollout_jacobians`] (in `diff`, which sits above
//! `sim`).
//!
//! # Bitwise identical to serial runs
//!
//! Each rollout is computed by the same code as a serial
//! [`rollout`], on one thread from start to end, and
//! reads only its own inputs and the shared `&World` (immutable). There is
//! no shared mutable state on the step's path: the contact backends keep
//! their warm start inside one call, the conic collision solver's
//! per-thread workspace is scratch storage (every solve starts from its own
//! initial point; nothing is carried from one query to the next), the
//! factorizations are sequential (faer without its parallel feature), and
//! no floating-point reduction is split across threads. So every number of
//! a batched rollout is bitwise equal to that of the same rollout run
//! alone, whatever the thread count or scheduling (`tests/all/sim/batch.rs`
//! compares the bits of every `q`, `v` at every step with 1 and 2
//! threads). The only process-wide mutable state is a set of diagnostic
//! counters of the conic solver, which it only increments, never reads.
//!
//! ```
//! use dualsim::prelude::*;
//! use dualsim::sim::batch::{batch_rollouts, BatchOptions};
//! let mut world = World::<f64>::new(0.01);
//! world.add_body("ball", 1.0, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! let starts: Vec<_> = (0..4)
//!     .map(|i| State::at_rest(&world.model, &[[0.0, 0.0, 1.0 + i as f64]]))
//!     .collect();
//! let controls = vec![Controls::Constant(world.zero_control()); 4];
//! let out = batch_rollouts(&world, &starts, &controls, 10, &BatchOptions { threads: Some(2) }).unwrap();
//! let serial = rollout(&world, &starts[3], &controls[3], 10).unwrap();
//! assert_eq!(out[3].as_ref().unwrap().last(), serial.last());
//! ```

use rayon::prelude::*;

use super::{Controls, RolloutError, State, Trajectory, World, rollout};
use crate::Scalar;

/// Options of a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchOptions {
    /// Number of threads: `Some(n)` (n ≥ 1) runs the batch on a local pool
    /// of `n` threads built for this call; `None` uses rayon's global pool
    /// (as many threads as cores, or `RAYON_NUM_THREADS`).
    pub threads: Option<usize>,
}

/// A batch that cannot run at all (a rollout's own failure is its entry of
/// the result instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// `starts` and `controls` differ in length (one control sequence per
    /// rollout).
    #[error("{starts} initial states but {controls} control sequences (one per rollout)")]
    Size {
        /// Number of initial states.
        starts: usize,
        /// Number of control sequences.
        controls: usize,
    },
    /// `threads = Some(0)`.
    #[error("threads = 0: a batch needs at least one thread (None uses the global pool)")]
    ZeroThreads,
    /// The local thread pool could not be built.
    #[error("cannot build a pool of {threads} threads: {message}")]
    ThreadPool {
        /// Requested thread count.
        threads: usize,
        /// rayon's message.
        message: String,
    },
}

/// Runs `f` on the pool the options ask for (module docs).
pub fn run_in_pool<R: Send>(
    opts: &BatchOptions,
    f: impl FnOnce() -> R + Send,
) -> Result<R, BatchError> {
    match opts.threads {
        None => Ok(f()),
        Some(0) => Err(BatchError::ZeroThreads),
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| BatchError::ThreadPool {
                    threads: n,
                    message: e.to_string(),
                })?;
            Ok(pool.install(f))
        }
    }
}

/// Runs `steps` steps from each of `starts` under the matching entry of
/// `controls`, in parallel (module docs). Entry `i` of the result is
/// exactly `rollout(world, &starts[i], &controls[i], steps)`.
pub fn batch_rollouts<T: Scalar>(
    world: &World<T>,
    starts: &[State<T>],
    controls: &[Controls<T>],
    steps: usize,
    opts: &BatchOptions,
) -> Result<Vec<Result<Trajectory<T>, RolloutError<T>>>, BatchError> {
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
            .map(|(x0, us)| rollout(world, x0, us, steps))
            .collect()
    })
}
