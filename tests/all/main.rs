//! dualsim's integration tests, in one test crate (one binary: the
//! generic solver stack is compiled once), one module per area of `src/`
//! (STYLE.md §12, nalgebra's `tests/lib.rs`). Shared fixtures live in
//! [`common`]. The two process-wide hooks are per thread, so they share
//! the binary with every other test: `sim::alloc_step`'s counting global
//! allocator counts the allocations of the thread that reads them, and
//! `scene::fuzz`'s panic hook silences only the panics of its own guarded
//! cases (every other panic goes to the default hook).

mod common;

mod cli;
mod collision;
mod contact;
mod diff;
mod dynamics;
mod linalg;
mod macros;
mod opt;
mod scalar;
mod scene;
mod sim;
