//! Derivative methods and `check`.

mod adjoint;
mod check_examples;
mod check_rollout;
mod check_todorov;
mod complementarity;
mod contact;
mod kernels;
mod methods;
