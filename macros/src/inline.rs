//! Inlining of called kernels (`#[kernel(inline)]`): how a kernel gets to
//! see the bodies of the kernels it calls.
//!
//! An attribute macro sees one item. To see its callees without global
//! state in the compiler process, every kernel `g` also emits a hidden
//! `macro_rules! __dualsim_kernel_g` that holds `g`'s source, made
//! path-addressable by `pub(crate) use` (so it is found wherever `g` is:
//! `geom::g(..)` → `geom::__dualsim_kernel_g!`). An inlining kernel `f`
//! expands to an invocation of its first callee's macro, passing its own
//! state (options, item, the sources collected so far); the callee's
//! macro expands to [`crate::__kernel_inline`]`!{ <g's source> <state> }`,
//! which adds `g`'s source and asks for the next missing callee the same
//! way — the callees of inlined kernels included — until every callee is
//! known. Then `f` is expanded with its callees' bodies lowered into its
//! own DAG ([`crate::graph::lower`]), so forward-mode sparsity, constant
//! folding and common subexpressions work across the former call
//! boundaries instead of multiplying each callee's (dense) Jacobian.
//!
//! Limits: every callee, transitively, must be a kernel of the same crate
//! (the macros are `pub(crate)`), and a callee's own calls are resolved
//! where `f` is, not where the callee is (its path as written in the
//! callee's body must name the same kernel from `f`'s module). A callee
//! that is not found is a compile error "cannot find macro
//! `__dualsim_kernel_g`" at the call.

use crate::ast::{Expr, Kernel};
use crate::graph::{Inline, path_key};
use proc_macro2::{Delimiter, Literal, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{Error, Ident, ItemFn, Path};

/// What `#[kernel(...)]` asked for.
#[derive(Clone)]
pub struct Options {
    /// Emit `<name>_hessian`.
    pub hessian: bool,
    /// Inline the called kernels.
    pub inline: bool,
    /// `partial(a, b, ...)`: also emit `<name>_partial`, the Jacobian
    /// columns of these arguments only.
    pub partial: Vec<Ident>,
}

impl Options {
    /// Parses the attribute's arguments: nothing, or a comma-separated
    /// subset of `jacobian` (no Hessian), `inline` and `partial(args)`.
    pub fn parse(attr: TokenStream) -> syn::Result<Options> {
        let mut o = Options {
            hessian: true,
            inline: false,
            partial: Vec::new(),
        };
        let bad = |span| {
            Err(Error::new(
                span,
                "`#[kernel]` takes no arguments, or `jacobian` (no `_hessian` sibling), \
                 `inline` (inline the called kernels) and/or `partial(arg, ...)` (also \
                 `<name>_partial`: the Jacobian columns of those arguments), comma-separated",
            ))
        };
        let mut expect_ident = true;
        let mut after_partial = false;
        for tt in attr {
            if after_partial {
                after_partial = false;
                let TokenTree::Group(g) = &tt else {
                    return bad(tt.span());
                };
                if g.delimiter() != Delimiter::Parenthesis {
                    return bad(tt.span());
                }
                let mut want_name = true;
                for t in g.stream() {
                    match (&t, want_name) {
                        (TokenTree::Ident(id), true) => o.partial.push(id.clone()),
                        (TokenTree::Punct(p), false) if p.as_char() == ',' => {}
                        _ => return bad(t.span()),
                    }
                    want_name = !want_name;
                }
                if o.partial.is_empty() {
                    return bad(g.span());
                }
                continue;
            }
            match (&tt, expect_ident) {
                (TokenTree::Ident(id), true) if id == "jacobian" && o.hessian => o.hessian = false,
                (TokenTree::Ident(id), true) if id == "inline" && !o.inline => o.inline = true,
                (TokenTree::Ident(id), true) if id == "partial" && o.partial.is_empty() => {
                    after_partial = true;
                }
                (TokenTree::Punct(p), false) if p.as_char() == ',' => {}
                _ => return bad(tt.span()),
            }
            expect_ident = !expect_ident;
        }
        if after_partial {
            return bad(proc_macro2::Span::call_site());
        }
        Ok(o)
    }
}

/// The name of the hidden macro holding kernel `name`'s source.
fn src_macro_name(name: &Ident) -> Ident {
    format_ident!("__dualsim_kernel_{}", name, span = name.span())
}

/// The hidden source macro of a kernel (`item` as written, without the
/// `#[kernel]` attribute).
pub fn src_macro(name: &Ident, item: &TokenStream) -> TokenStream {
    let m = src_macro_name(name);
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #m {
            ($($rest:tt)*) => { ::dualsim::__kernel_inline! { { #item } $($rest)* } };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #m;
    }
}

/// The kernel paths called in an expression, in order of appearance.
fn calls<'a>(e: &'a Expr, out: &mut Vec<&'a Path>) {
    match e {
        Expr::Lit { .. } | Expr::Var(_) => {}
        Expr::Neg { expr, .. } => calls(expr, out),
        Expr::Binary { lhs, rhs, .. } => {
            calls(lhs, out);
            calls(rhs, out);
        }
        Expr::Func { arg, .. } => calls(arg, out),
        Expr::Powi { base, .. } => calls(base, out),
        Expr::Index { base, .. } => calls(base, out),
        Expr::Array { elems, .. } => elems.iter().for_each(|x| calls(x, out)),
        Expr::Call { path, args, .. } => {
            out.push(path);
            args.iter().for_each(|x| calls(x, out));
        }
    }
}

/// A collected callee: its key, its source, its parsed form.
type Collected = (String, TokenStream, Kernel);

/// The first callee of `k` or of the collected kernels not yet collected.
fn missing<'a>(k: &'a Kernel, have: &'a [Collected]) -> Option<&'a Path> {
    let mut paths = Vec::new();
    for kk in std::iter::once(k).chain(have.iter().map(|(_, _, k)| k)) {
        for l in &kk.lets {
            calls(&l.init, &mut paths);
        }
        calls(&kk.tail, &mut paths);
    }
    paths
        .into_iter()
        .find(|p| !have.iter().any(|(key, _, _)| *key == path_key(p)))
}

/// The state passed along the chain: `{attr} {item} ("key" {source})*`.
fn state(attr: &TokenStream, item: &TokenStream, have: &[Collected]) -> TokenStream {
    let have = have.iter().map(|(key, src, _)| {
        let key = Literal::string(key);
        quote!(#key { #src })
    });
    quote!({ #attr } { #item } #(#have)*)
}

/// Asks for the source of `path` (via its hidden macro), or, when every
/// callee is known, expands the kernel.
fn next(
    k: &Kernel,
    opts: Options,
    attr: &TokenStream,
    item: &TokenStream,
    have: Vec<Collected>,
) -> syn::Result<TokenStream> {
    if let Some(path) = missing(k, &have) {
        let key = Literal::string(&path_key(path));
        let mut mpath = path.clone();
        for seg in mpath.segments.iter_mut() {
            seg.arguments = syn::PathArguments::None;
        }
        let last = mpath.segments.last_mut().expect("a path has a segment");
        last.ident = src_macro_name(&last.ident);
        let st = state(attr, item, &have);
        let span = last.ident.span();
        return Ok(quote_spanned!(span=> #mpath! { #key #st }));
    }
    let map: Inline = have.into_iter().map(|(key, _, k)| (key, k)).collect();
    finish(k, opts, item, &map)
}

/// The generated functions of `k` with `inline`'s kernels inlined, and its
/// own source macro.
pub fn finish(
    k: &Kernel,
    opts: Options,
    item: &TokenStream,
    inline: &Inline,
) -> syn::Result<TokenStream> {
    let code = crate::expand::expand(k, opts.hessian, &opts.partial, inline)?;
    let src = src_macro(&k.item.sig.ident, item);
    Ok(quote!(#code #src))
}

/// `#[kernel(...)]` on `item`.
pub fn start(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let opts = Options::parse(attr.clone())?;
    let f: ItemFn = syn::parse2(item.clone())?;
    let k = crate::parse::kernel(f)?;
    if opts.inline {
        next(&k, opts, &attr, &item, Vec::new())
    } else {
        finish(&k, opts, &item, &Inline::new())
    }
}

/// One step of the chain: `{ <callee source> } "key" {attr} {item}
/// ("key" {source})*`.
pub fn step(input: TokenStream) -> syn::Result<TokenStream> {
    let mut rest: Vec<TokenTree> = input.into_iter().collect();
    rest.reverse();
    let pop_group = |rest: &mut Vec<TokenTree>| -> syn::Result<TokenStream> {
        match rest.pop() {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => Ok(g.stream()),
            other => Err(Error::new(
                other.map_or_else(proc_macro2::Span::call_site, |t| t.span()),
                "__kernel_inline: expected a `{ ... }` group",
            )),
        }
    };
    let new_src = pop_group(&mut rest)?;
    let key_of = |t: Option<TokenTree>| -> syn::Result<Option<String>> {
        match t {
            None => Ok(None),
            Some(TokenTree::Literal(l)) => {
                let s: syn::LitStr = syn::parse2(TokenTree::Literal(l).into())?;
                Ok(Some(s.value()))
            }
            Some(t) => Err(Error::new(t.span(), "__kernel_inline: expected a key")),
        }
    };
    let new_key = key_of(rest.pop())?.ok_or_else(|| {
        Error::new(
            proc_macro2::Span::call_site(),
            "__kernel_inline: missing key",
        )
    })?;
    let attr = pop_group(&mut rest)?;
    let item = pop_group(&mut rest)?;
    let mut have_src = Vec::new();
    while let Some(key) = key_of(rest.pop())? {
        have_src.push((key, pop_group(&mut rest)?));
    }
    have_src.push((new_key, new_src));
    let mut have = Vec::new();
    for (key, src) in have_src {
        let f: ItemFn = syn::parse2(src.clone())?;
        let k = crate::parse::kernel(f)?;
        have.push((key, src, k));
    }
    let opts = Options::parse(attr.clone())?;
    let f: ItemFn = syn::parse2(item.clone())?;
    let k = crate::parse::kernel(f)?;
    next(&k, opts, &attr, &item, have)
}
