//! Rollout objectives and optimizers.

mod examples;
mod objectives;
