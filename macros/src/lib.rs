//! `#[kernel]`: compile-time symbolic differentiation for dualsim.
//!
//! Put `#[dualsim::kernel]` on a function generic over its scalar
//! `T: Scalar` and written in the *kernel language* below. The function is
//! kept (re-emitted so that it compiles generically) and two siblings are
//! generated, with derivatives computed **by symbolic differentiation inside
//! the macro** — no runtime AD:
//!
//! * `<name>_jacobian(args) -> (value, [[T; NIN]; NOUT])`
//! * `<name>_hessian(args) -> (value, jacobian, [[[T; NIN]; NIN]; NOUT])`
//!   (not with `#[kernel(jacobian)]`, for large kernels whose Hessian is not
//!   needed: its code grows with the square of the number of inputs)
//!
//! `NIN` counts every scalar input, flattened in argument order (`x: T` is
//! one, `p: [T; 3]` is three); `NOUT` is 1 for a kernel returning `T` and `M`
//! for `[T; M]` (the Jacobian of a scalar kernel is `[[T; NIN]; 1]`).
//! `J[o][k] = ∂out[o]/∂in[k]`, `H[o][i][k] = ∂²out[o]/∂in[i]∂in[k]`.
//! Structurally zero entries are the constant `T::zero()` and cost nothing;
//! common subexpressions (between the value, the Jacobian and the Hessian)
//! are computed once.
//!
//! ```ignore
//! use dualsim::{kernel, Scalar};
//!
//! /// Signed gap between a sphere (centre `p`, radius `r`) and the plane
//! /// `n·x = offset`.
//! #[kernel]
//! fn sphere_plane_gap<T: Scalar>(n: [T; 3], offset: T, p: [T; 3], r: T) -> T {
//!     let d = n[0] * p[0] + n[1] * p[1] + n[2] * p[2];
//!     d - offset - r
//! }
//!
//! let (g, jac) = sphere_plane_gap_jacobian([0.0, 0.0, 1.0], 0.0, [1.0, 2.0, 3.0], 0.5);
//! assert_eq!(g, 2.5);
//! assert_eq!(jac[0], [1.0, 2.0, 3.0, -1.0, 0.0, 0.0, 1.0, -1.0]);
//! let (_, _, hess) = sphere_plane_gap_hessian([0.0, 0.0, 1.0], 0.0, [1.0, 2.0, 3.0], 0.5);
//! assert_eq!(hess[0][0][4], 1.0); // ∂²g/∂n₀∂p₀
//! ```
//! (Compiled and checked against num-dual in dualsim's
//! `tests/all/macros/kernel_macro.rs`; the example is `ignore`d here because a
//! proc-macro crate cannot depend on the crate that re-exports it.)
//!
//! # The kernel language
//!
//! * **Signature**: `fn name<T: Scalar>(a: T, b: [T; N], ...) -> T` or
//!   `-> [T; M]`, exactly one generic parameter (any name), `N`/`M` integer
//!   literals, plain argument names (no `mut`, no patterns, no `self`).
//! * **Body**: immutable `let` bindings (`let x = ...;`, optionally
//!   annotated `let x: [T; 3] = ...;`; shadowing is allowed) followed by the
//!   result expression (no trailing `;`).
//! * **Expressions**: `+ - * /` and unary `-` on scalars; numeric literals
//!   (`2`, `0.5`, `1e-3`; they become `T::from_re(lit)` — every literal is a
//!   scalar, so `1 / 2` is `0.5`); variables; `sqrt sin cos exp ln abs` in
//!   method (`x.sqrt()`) or function (`sqrt(x)`) form; `x.powi(n)` /
//!   `powi(x, n)` with an integer literal `n`; array literals `[a, b, c]`;
//!   literal indices `x[2]`; parentheses; calls to other kernels.
//! * **Calls to other kernels** `g(a, b)`: `g` must itself be a `#[kernel]`
//!   in scope; its generated siblings give the chain rule (`f_jacobian`
//!   calls `g_jacobian`, `f_hessian` calls `g_hessian`; plain `g` when all
//!   of its arguments are constants; a call repeated with the same arguments
//!   is made once). Kernels may live in other modules
//!   (`geom::norm2(a)`, turbofish allowed). The macro sees one function at
//!   a time, so it cannot see what `g` returns: a call is a scalar unless it
//!   is the initializer of an annotated `let r: [T; 3] = g(..);`, the result
//!   of a kernel declared `-> [T; 3]`, or indexed directly (`g(..)[1]`); a
//!   wrong guess is a type error at the call. Arguments are passed with
//!   their shapes. A function that is not a kernel shows up as a missing
//!   `g_jacobian` / `g_hessian`.
//! * **Inlining**: `#[kernel(inline)]` (or `#[kernel(jacobian, inline)]`)
//!   inlines every called kernel, transitively: the callees' bodies become
//!   part of the caller's expression DAG, so structural zeros, constant
//!   folding and shared subexpressions carry across the former call
//!   boundaries, instead of a product with each callee's Jacobian taken as
//!   dense (3–4× fewer operations on the crate's 58-input contact kernels).
//!   The callees must be kernels of the same crate, and a callee's own
//!   calls are resolved from the inlining kernel's module (write them so
//!   that they name the same kernels there, e.g. through a glob import);
//!   see `inline.rs` for how the sources are collected (each kernel also
//!   emits a hidden `__dualsim_kernel_<name>` macro holding its source).
//! * Everything else — `mut`, assignment, loops, `if`/`match`, closures,
//!   blocks, macros, method calls other than the ones above, non-literal
//!   indices, paths and constants, casts, array arithmetic — is a compile
//!   error pointing at the offending syntax.
//!
//! # Semantics of the derivatives
//!
//! * `abs(x)`' = `sign(x)·x'` with the sign decided on the primal part
//!   (`x.re() >= 0.0` → +1), like every branch in dualsim.
//! * `sqrt(x)' = 0.5/sqrt(x)·x'`: singular at `x = 0`, like num-dual's (use
//!   `dualsim::scalar::safe_norm` outside kernels if zero is reachable).
//! * Structural zeros are exact zeros even where IEEE arithmetic would give
//!   `0·∞ = NaN`.
//! * The value returned by the generated functions is the kernel's
//!   expression after constant folding (`2·(3·x)` → `6·x`): equal to the
//!   original function's up to rounding.
//! * The generated functions work for any `T: Scalar`, so `f_jacobian` can
//!   itself be called with dual numbers.
//!
//! # Structure
//!
//! A small compiler, one stage per module: `parse` (syn → AST,
//! rejecting unsupported syntax) → `ast` → `graph` (hash-consed
//! DAG = common-subexpression elimination, simplifying constructors, shape
//! checking, inlining of callees) → `diff` (symbolic differentiation) →
//! `expand` (Rust via `quote`). `inline` is the front end of
//! `#[kernel(inline)]`: it collects the callees' sources before the
//! pipeline runs. Errors are `syn::Error`s with
//! the span of the offending syntax, finished with `into_compile_error()`.
#![warn(missing_docs)]

use proc_macro::TokenStream;

mod ast;
mod diff;
mod expand;
mod graph;
mod inline;
mod parse;

/// Generates `<name>_jacobian` and `<name>_hessian` for a kernel function
/// (see the crate docs for the language). Arguments, comma-separated:
/// `jacobian` generates `<name>_jacobian` only (for large kernels whose
/// Hessian is not needed: the Hessian's code grows with the square of the
/// number of inputs; such a kernel can be called from other
/// `#[kernel(jacobian)]`s or inlined); `inline` inlines the called kernels
/// (see the crate docs); `partial(a, b, ...)` also generates
/// `<name>_partial(args) -> (value, [[T; NSEL]; NOUT])`, the Jacobian
/// columns of the arguments `a`, `b`, ... only (flattened in argument
/// order): the code of the other columns is not generated, for callers
/// that need a few columns of a kernel with many inputs.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    inline::start(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Internal: one step of `#[kernel(inline)]`'s collection of its callees'
/// sources (see `inline.rs`). Not an API.
#[doc(hidden)]
#[proc_macro]
pub fn __kernel_inline(input: TokenStream) -> TokenStream {
    inline::step(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
