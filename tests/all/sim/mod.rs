//! Steps, rollouts, batches and input validation.

mod alloc_step;
mod batch;
mod step;
mod validation;
