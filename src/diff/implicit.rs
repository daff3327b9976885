//! Backends whose step is the root of a residual.
//!
//! The contract lives with the backends: [`ContactBackend`](crate::contact::ContactBackend)
//! (`contact::backend`), whose implicit-function part (`solve_root`,
//! `residual`, `same_structure`, `solve_jacobian`, `kernel_partials`) is
//! what the four derivative methods use. `ImplicitStep` is its name from
//! the derivative side.

pub use crate::contact::ContactBackend as ImplicitStep;
