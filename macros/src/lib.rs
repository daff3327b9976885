//! `#[kernel]`: compile-time symbolic differentiation for dualsim.
//!
//! Work in progress: the attribute currently returns its input unchanged.
use proc_macro::TokenStream;

/// Marks a kernel function (see the crate docs).
#[proc_macro_attribute]
pub fn kernel(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
