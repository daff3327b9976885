//! Derivative methods and `check`.

mod check_examples;
mod check_rollout;
mod check_todorov;
mod adjoint;
mod complementarity;
mod contact;
mod kernels;
mod methods;
