//! The `#[kernel]` macro.

mod kernel_defs;
mod kernel_macro;
