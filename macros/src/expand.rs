//! Stage 4: emit Rust.
//!
//! Three functions come out of a kernel `f`:
//!
//! * `f` itself, re-emitted from the AST (literals become
//!   `T::from_re(lit)`, `sqrt(x)` becomes `x.sqrt()`), so it runs with any
//!   scalar, dual numbers included;
//! * `f_jacobian(args) -> (value, [[T; NIN]; NOUT])`;
//! * `f_hessian(args) -> (value, jacobian, [[[T; NIN]; NIN]; NOUT])`.
//!
//! The bodies are straight-line code: one `let` per DAG node reachable from
//! the requested outputs, in topological order. Constants are inlined
//! (`T::zero()`, `T::one()`, `T::from_re(c)`), inputs are read in place
//! (`x[2]`), and a call of another kernel `g` (not inlined) is one
//! `let (v, j[, h]) = g_jacobian(..)` / `g_hessian(..)` whose parts are read
//! where needed. `sin a` and `cos a` both reachable (the derivative of one
//! is the other) are one `let (s, c) = a.sin_cos();` (num-dual computes the
//! pair once; for `f64` LLVM already fuses them into one `sincos` call).

use crate::ast::{BinOp, Expr, Func, Kernel, Shape};
use crate::diff::{self, Diff};
use crate::graph::{self, Graph, Id, Inline, Lowered, Node, Val};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::HashMap;
use syn::Ident;

/// `T::from_re(c)` for a literal constant.
fn constant(t: &Ident, c: f64) -> TokenStream {
    let lit = Literal::f64_suffixed(c.abs());
    if c < 0.0 {
        quote!(<#t as ::dualsim::Scalar>::from_re(-#lit))
    } else {
        quote!(<#t as ::dualsim::Scalar>::from_re(#lit))
    }
}

fn shape_type(t: &Ident, s: Shape) -> TokenStream {
    match s {
        Shape::Scalar => quote!(#t),
        Shape::Array(n) => quote!([#t; #n]),
    }
}

/// Binding strength of an expression as emitted: sums 1, products 2,
/// negation 3, postfix forms and atoms 4.
fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Binary {
            op: BinOp::Add | BinOp::Sub,
            ..
        } => 1,
        Expr::Binary { .. } => 2,
        Expr::Neg { .. } => 3,
        _ => 4,
    }
}

/// `e`, parenthesized if it binds less tightly than `min`.
fn primal_at(t: &Ident, e: &Expr, min: u8) -> TokenStream {
    let tokens = primal_expr(t, e);
    if prec(e) < min {
        quote!((#tokens))
    } else {
        tokens
    }
}

/// The original function's body, from the AST (parenthesized only where
/// precedence requires it).
fn primal_expr(t: &Ident, e: &Expr) -> TokenStream {
    match e {
        Expr::Lit { value, span } => {
            let lit = Literal::f64_suffixed(*value);
            quote_spanned!(*span=> <#t as ::dualsim::Scalar>::from_re(#lit))
        }
        Expr::Var(id) => quote!(#id),
        Expr::Neg { expr, span } => {
            let a = primal_at(t, expr, 3);
            quote_spanned!(*span=> -#a)
        }
        Expr::Binary { op, lhs, rhs, span } => {
            let p = prec(e);
            let (a, b) = (primal_at(t, lhs, p), primal_at(t, rhs, p + 1));
            match op {
                BinOp::Add => quote_spanned!(*span=> #a + #b),
                BinOp::Sub => quote_spanned!(*span=> #a - #b),
                BinOp::Mul => quote_spanned!(*span=> #a * #b),
                BinOp::Div => quote_spanned!(*span=> #a / #b),
            }
        }
        Expr::Func { func, arg, span } => {
            let a = primal_at(t, arg, 4);
            let m = Ident::new(func.name(), *span);
            quote_spanned!(*span=> #a.#m())
        }
        Expr::Powi { base, exp, span } => {
            let a = primal_at(t, base, 4);
            quote_spanned!(*span=> #a.powi(#exp))
        }
        Expr::Index { base, index, span } => {
            let a = primal_at(t, base, 4);
            let i = Literal::usize_unsuffixed(*index);
            quote_spanned!(*span=> #a[#i])
        }
        Expr::Array { elems, .. } => {
            let es = elems.iter().map(|x| primal_expr(t, x));
            quote!([#(#es),*])
        }
        Expr::Call { path, args, span } => {
            let es = args.iter().map(|x| primal_expr(t, x));
            quote_spanned!(*span=> #path(#(#es),*))
        }
    }
}

fn primal(k: &Kernel) -> TokenStream {
    let t = &k.scalar;
    let attrs = &k.item.attrs;
    let vis = &k.item.vis;
    let sig = &k.item.sig;
    let lets = k.lets.iter().map(|l| {
        let name = &l.name;
        let init = primal_expr(t, &l.init);
        match l.ty {
            Some(s) => {
                let ty = shape_type(t, s);
                quote!(let #name: #ty = #init;)
            }
            None => quote!(let #name = #init;),
        }
    });
    let tail = primal_expr(t, &k.tail);
    quote! {
        #(#attrs)*
        #vis #sig {
            #(#lets)*
            #tail
        }
    }
}

/// Emits the straight-line code computing `roots`; returns the statements
/// and a function turning a node id into the expression that reads it.
/// Bindings per block of [`Emitter::statements`].
const CHUNK: usize = 48;

struct Emitter<'a> {
    g: &'a Graph,
    t: &'a Ident,
    inputs: Vec<TokenStream>,
}

impl Emitter<'_> {
    fn tmp(id: Id) -> Ident {
        format_ident!("__t{}", id)
    }

    /// The expression reading node `id` (a constant, an input, a temporary).
    fn read(&self, id: Id) -> TokenStream {
        let t = self.t;
        match self.g.nodes[id] {
            Node::Const(bits) => {
                let c = f64::from_bits(bits);
                if c == 0.0 {
                    quote!(#t::zero())
                } else if c == 1.0 {
                    quote!(#t::one())
                } else {
                    constant(t, c)
                }
            }
            Node::Input(k) => self.inputs[k].clone(),
            Node::CallOut { call, out } => {
                let v = format_ident!("__c{}_v", call);
                if self.g.call_info(call).scalar_out() {
                    quote!(#v)
                } else {
                    quote!(#v[#out])
                }
            }
            Node::CallJac { call, out, arg } => {
                let j = format_ident!("__c{}_j", call);
                quote!(#j[#out][#arg])
            }
            Node::CallHess { call, out, i, j } => {
                let h = format_ident!("__c{}_h", call);
                quote!(#h[#out][#i][#j])
            }
            _ => {
                let v = Self::tmp(id);
                quote!(#v)
            }
        }
    }

    /// The statements computing `roots`, grouped in blocks of
    /// [`CHUNK`] bindings, `let (a, b, ..) = { let a = ..; ..; (a, b, ..) };`,
    /// so that the lexical scopes of a long kernel nest about `√n` deep
    /// instead of `n` (LLVM's debug-info emission recurses once per level
    /// and overflows its stack on kernels of thousands of bindings).
    fn statements(&self, roots: &[Id]) -> Vec<TokenStream> {
        let flat = self.bindings(roots);
        flat.chunks(CHUNK)
            .map(|chunk| {
                let names: Vec<&Ident> = chunk.iter().flat_map(|(n, _)| n.iter()).collect();
                let stmts = chunk.iter().map(|(_, s)| s);
                quote!(let (#(#names,)*) = { #(#stmts)* (#(#names,)*) };)
            })
            .collect()
    }

    /// One `let` per reachable node, with the names it binds.
    fn bindings(&self, roots: &[Id]) -> Vec<(Vec<Ident>, TokenStream)> {
        let g = self.g;
        let t = self.t;
        // Reachability, and the derivative order needed from each call.
        let mut reach = vec![false; g.nodes.len()];
        let mut level = vec![0u8; g.nodes.len()];
        let mut stack: Vec<Id> = roots.to_vec();
        while let Some(id) = stack.pop() {
            if reach[id] {
                continue;
            }
            reach[id] = true;
            match g.nodes[id] {
                Node::CallJac { call, .. } => level[call] = level[call].max(1),
                Node::CallHess { call, .. } => level[call] = level[call].max(2),
                _ => {}
            }
            stack.extend(g.children(id));
        }
        // `sin a` and `cos a` both needed (the derivative of one is the
        // other): one `a.sin_cos()`, bound where the first of them is.
        let mut sin_cos: HashMap<Id, [Option<Id>; 2]> = HashMap::new();
        for (id, node) in g.nodes.iter().enumerate() {
            match *node {
                Node::Func(Func::Sin, a) if reach[id] => {
                    sin_cos.entry(a).or_default()[0] = Some(id)
                }
                Node::Func(Func::Cos, a) if reach[id] => {
                    sin_cos.entry(a).or_default()[1] = Some(id)
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        for id in 0..g.nodes.len() {
            if !reach[id] {
                continue;
            }
            if let Node::Func(Func::Sin | Func::Cos, a) = g.nodes[id]
                && let [Some(s), Some(c)] = sin_cos[&a]
            {
                if id == s.min(c) {
                    let (s, c, a) = (Self::tmp(s), Self::tmp(c), self.read(a));
                    out.push((
                        vec![s.clone(), c.clone()],
                        quote!(let (#s, #c): (#t, #t) = #a.sin_cos();),
                    ));
                }
                continue;
            }
            let r = |x: Id| self.read(x);
            let rhs = match g.nodes[id] {
                Node::Const(_)
                | Node::Input(_)
                | Node::CallOut { .. }
                | Node::CallJac { .. }
                | Node::CallHess { .. } => continue,
                Node::Add(a, b) => {
                    let (a, b) = (r(a), r(b));
                    quote!(#a + #b)
                }
                Node::Sub(a, b) => {
                    let (a, b) = (r(a), r(b));
                    quote!(#a - #b)
                }
                Node::Mul(a, b) => {
                    let (a, b) = (r(a), r(b));
                    quote!(#a * #b)
                }
                Node::Div(a, b) => {
                    let (a, b) = (r(a), r(b));
                    quote!(#a / #b)
                }
                Node::Neg(a) => {
                    let a = r(a);
                    quote!(-#a)
                }
                Node::Func(f, a) => {
                    let a = r(a);
                    let m = format_ident!("{}", f.name());
                    quote!(#a.#m())
                }
                Node::Sign(a) => {
                    let a = r(a);
                    quote! {
                        if <#t as ::dualsim::Scalar>::re(&#a) >= 0.0 { #t::one() } else { -#t::one() }
                    }
                }
                Node::Powi(a, n) => {
                    let a = r(a);
                    quote!(#a.powi(#n))
                }
                Node::Call(_) => {
                    let info = g.call_info(id);
                    let args = info.args.iter().map(|v| match v {
                        Val::Scalar(s) => r(*s),
                        Val::Array(xs) => {
                            let xs = xs.iter().map(|&x| r(x));
                            quote!([#(#xs),*])
                        }
                    });
                    let mut path = info.path.clone();
                    let (v, j, h) = (
                        format_ident!("__c{}_v", id),
                        format_ident!("__c{}_j", id),
                        format_ident!("__c{}_h", id),
                    );
                    let last = path.segments.last_mut().expect("a path has a segment");
                    let name = last.ident.clone();
                    let (pat, suffix) = match level[id] {
                        0 => (quote!(#v), None),
                        1 => (quote!((#v, #j)), Some("jacobian")),
                        _ => (quote!((#v, #j, #h)), Some("hessian")),
                    };
                    if let Some(suffix) = suffix {
                        last.ident = format_ident!("{}_{}", name, suffix, span = name.span());
                    }
                    // With the result type stated (when known), a callee of
                    // another shape is a type error at the call.
                    let ty = info.out.map(|s| {
                        let nin = info.args.iter().map(|a| a.flat().len()).sum::<usize>();
                        let (vt, nout) = match s {
                            Shape::Scalar => (quote!(#t), 1usize),
                            Shape::Array(n) => (quote!([#t; #n]), n),
                        };
                        match level[id] {
                            0 => quote!(: #vt),
                            1 => quote!(: (#vt, [[#t; #nin]; #nout])),
                            _ => quote!(: (#vt, [[#t; #nin]; #nout], [[[#t; #nin]; #nin]; #nout])),
                        }
                    });
                    let span = info.span;
                    let names = match level[id] {
                        0 => vec![v.clone()],
                        1 => vec![v.clone(), j.clone()],
                        _ => vec![v.clone(), j.clone(), h.clone()],
                    };
                    out.push((
                        names,
                        quote_spanned!(span=> let #pat #ty = #path(#(#args),*);),
                    ));
                    continue;
                }
            };
            let v = Self::tmp(id);
            out.push((vec![v.clone()], quote!(let #v: #t = #rhs;)));
        }
        out
    }
}

/// Expands a parsed kernel into the original function and its derivative
/// siblings.
pub fn expand(
    k: &Kernel,
    with_hessian: bool,
    partial: &[syn::Ident],
    inline: &Inline,
) -> syn::Result<TokenStream> {
    let Lowered {
        mut graph,
        inputs,
        outputs,
    } = graph::lower(k, inline)?;
    let t = &k.scalar;
    let nin = inputs.len();
    let nout = outputs.len();
    let mut d = Diff::default();
    let jac = diff::jacobian(&mut graph, &mut d, &outputs, nin);
    let hess = if with_hessian {
        diff::hessian(&mut graph, &mut d, &jac)
    } else {
        Vec::new()
    };

    let em = Emitter {
        g: &graph,
        t,
        inputs: inputs
            .iter()
            .map(|(name, idx)| match idx {
                None => quote!(#name),
                Some(i) => quote!(#name[#i]),
            })
            .collect(),
    };
    let value = match k.ret {
        Shape::Scalar => em.read(outputs[0]),
        Shape::Array(_) => {
            let xs = outputs.iter().map(|&o| em.read(o));
            quote!([#(#xs),*])
        }
    };
    let jac_tokens = {
        let rows = jac.iter().map(|row| {
            let xs = row.iter().map(|&x| em.read(x));
            quote!([#(#xs),*])
        });
        quote!([#(#rows),*])
    };
    let hess_tokens = {
        let mats = hess.iter().map(|m| {
            let rows = m.iter().map(|row| {
                let xs = row.iter().map(|&x| em.read(x));
                quote!([#(#xs),*])
            });
            quote!([#(#rows),*])
        });
        quote!([#(#mats),*])
    };

    let mut jac_roots: Vec<Id> = outputs.clone();
    jac_roots.extend(jac.iter().flatten());
    let mut hess_roots = jac_roots.clone();
    hess_roots.extend(hess.iter().flatten().flatten());
    let jac_stmts = em.statements(&jac_roots);
    let hess_stmts = if with_hessian {
        em.statements(&hess_roots)
    } else {
        Vec::new()
    };

    let name = &k.item.sig.ident;
    let vis = &k.item.vis;
    let ret_ty = shape_type(t, k.ret);
    let jac_ty = quote!([[#t; #nin]; #nout]);
    let hess_ty = quote!([[[#t; #nin]; #nin]; #nout]);

    let mut jac_sig = k.item.sig.clone();
    jac_sig.ident = format_ident!("{}_jacobian", name, span = name.span());
    jac_sig.output = syn::parse_quote!(-> (#ret_ty, #jac_ty));
    let mut hess_sig = k.item.sig.clone();
    hess_sig.ident = format_ident!("{}_hessian", name, span = name.span());
    hess_sig.output = syn::parse_quote!(-> (#ret_ty, #jac_ty, #hess_ty));

    let jac_doc = format!(
        "Value and Jacobian of [`{name}`] (generated by `#[kernel]`): \
         `J[o][k]` = ∂ output `o` / ∂ input `k`, inputs flattened in argument order \
         ({nin} inputs, {nout} outputs)."
    );
    let hess_doc = format!(
        "Value, Jacobian and Hessians of [`{name}`] (generated by `#[kernel]`): \
         `H[o][i][k]` = ∂² output `o` / ∂ input `i` ∂ input `k`."
    );
    let allow = quote!(#[allow(unused_variables, unused_parens, clippy::all, clippy::pedantic)]);
    let hessian_fn = if with_hessian {
        quote! {
            #[doc = #hess_doc]
            #[inline]
            #allow
            #vis #hess_sig {
                #(#hess_stmts)*
                (#value, #jac_tokens, #hess_tokens)
            }
        }
    } else {
        TokenStream::new()
    };
    // `<name>_partial`: the Jacobian columns of the `partial` arguments
    // only (flattened in argument order), for callers that need a few of
    // many columns: the other columns' code is not generated.
    let partial_fn = if partial.is_empty() {
        TokenStream::new()
    } else {
        for p in partial {
            if !inputs.iter().any(|(n, _)| n == p) {
                return Err(syn::Error::new(
                    p.span(),
                    format!("`partial({p})`: `{p}` is not an argument of the kernel"),
                ));
            }
        }
        let input_tokens = em.inputs.clone();
        let sel: Vec<usize> = (0..nin)
            .filter(|&i| partial.iter().any(|p| *p == inputs[i].0))
            .collect();
        let nsel = sel.len();
        let pjac: Vec<Vec<Id>> = outputs
            .iter()
            .map(|&o| sel.iter().map(|&i| d.d(&mut graph, o, i)).collect())
            .collect();
        let em = Emitter {
            g: &graph,
            t,
            inputs: input_tokens,
        };
        let value = match k.ret {
            Shape::Scalar => em.read(outputs[0]),
            Shape::Array(_) => {
                let xs = outputs.iter().map(|&o| em.read(o));
                quote!([#(#xs),*])
            }
        };
        let rows = pjac.iter().map(|row| {
            let xs = row.iter().map(|&x| em.read(x));
            quote!([#(#xs),*])
        });
        let mut roots: Vec<Id> = outputs.clone();
        roots.extend(pjac.iter().flatten());
        let stmts = em.statements(&roots);
        let mut sig = k.item.sig.clone();
        sig.ident = format_ident!("{}_partial", name, span = name.span());
        let pty = quote!([[#t; #nsel]; #nout]);
        sig.output = syn::parse_quote!(-> (#ret_ty, #pty));
        let names: Vec<String> = partial.iter().map(|p| format!("`{p}`")).collect();
        let doc = format!(
            "Value and the Jacobian columns of {} of [`{name}`] (generated by `#[kernel]`): \
             `J[o][k]` = ∂ output `o` / ∂ input `k` of those arguments, flattened in argument \
             order ({nsel} columns, {nout} outputs); the columns of [`{name}_jacobian`] at \
             those inputs.",
            names.join(", ")
        );
        quote! {
            #[doc = #doc]
            #[inline]
            #allow
            #vis #sig {
                #(#stmts)*
                (#value, [#(#rows),*])
            }
        }
    };
    let primal = primal(k);
    Ok(quote! {
        #primal

        #partial_fn

        #[doc = #jac_doc]
        #[inline]
        #allow
        #vis #jac_sig {
            #(#jac_stmts)*
            (#value, #jac_tokens)
        }

        #hessian_fn
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(src: &str) -> String {
        let item: syn::ItemFn = syn::parse_str(src).expect("valid Rust");
        let k = crate::parse::kernel(item).expect("valid kernel");
        expand(&k, true, &[], &Inline::new())
            .expect("expands")
            .to_string()
    }

    #[test]
    fn structural_zeros_and_cse() {
        let out =
            expand_str("fn f<T: Scalar>(x: [T; 2], y: T) -> T { let s = x[0] * x[1]; s * s + y }");
        if std::env::var_os("DUALSIM_KERNEL_DUMP").is_some() {
            eprintln!("{out}");
        }
        // `x[0] * x[1]` is computed once in each generated function.
        assert_eq!(out.matches("x [0usize] * x [1usize]").count(), 2, "{out}");
        // ∂f/∂y = 1 is a constant, and ∂²f/∂y² = 0 is emitted as zero.
        assert!(out.contains("T :: one ()"), "{out}");
        assert!(out.contains("T :: zero ()"), "{out}");
    }

    #[test]
    fn sin_and_cos_of_one_argument_are_one_sin_cos() {
        let out = expand_str("fn f<T: Scalar>(x: T, y: T) -> T { sin(x * y) + cos(x) }");
        // The derivatives need sin and cos of both `x·y` and `x`: one
        // `sin_cos` each, in each of the two generated functions.
        let generated = &out[out.find("fn f_jacobian").expect("generated")..];
        assert_eq!(generated.matches("sin_cos ()").count(), 4, "{out}");
        assert!(
            !generated.contains(". sin ()") && !generated.contains(". cos ()"),
            "{out}"
        );
    }
}

/// Operation counts of the crate's own kernels (`src/collision/kernels.rs`,
/// `src/contact/space/kernels.rs`), with and without inlining.
#[cfg(test)]
mod cost {
    use super::*;

    fn crate_kernels() -> HashMap<String, Kernel> {
        let mut out = HashMap::new();
        for src in [
            include_str!("../../src/collision/kernels.rs"),
            include_str!("../../src/contact/space/kernels.rs"),
        ] {
            let file = syn::parse_file(src).expect("parses");
            for item in file.items {
                if let syn::Item::Fn(f) = item
                    && f.attrs.iter().any(|a| a.path().is_ident("kernel"))
                {
                    let mut f = f.clone();
                    f.attrs.retain(|a| !a.path().is_ident("kernel"));
                    let k = crate::parse::kernel(f).expect("kernel");
                    out.insert(k.item.sig.ident.to_string(), k);
                }
            }
        }
        out
    }

    /// Operations (DAG nodes other than constants, inputs and reads of a
    /// call's results) of `name`'s value (`level` 0) or value and Jacobian
    /// (1), the costs of the called kernels' generated functions included.
    fn cost(name: &str, ks: &HashMap<String, Kernel>, inline: &Inline, level: u8) -> usize {
        let k = &ks[name];
        let l = graph::lower(k, inline).expect("lowers");
        let mut g = l.graph;
        let mut d = Diff::default();
        let jac = diff::jacobian(&mut g, &mut d, &l.outputs, l.inputs.len());
        let mut roots = l.outputs.clone();
        if level > 0 {
            roots.extend(jac.iter().flatten());
        }
        let mut reach = vec![false; g.nodes.len()];
        let mut lvl = vec![0u8; g.nodes.len()];
        let mut stack = roots;
        while let Some(id) = stack.pop() {
            if reach[id] {
                continue;
            }
            reach[id] = true;
            if let Node::CallJac { call, .. } = g.nodes[id] {
                lvl[call] = 1;
            }
            stack.extend(g.children(id));
        }
        let mut n = 0;
        for id in 0..g.nodes.len() {
            if !reach[id] {
                continue;
            }
            n += match g.nodes[id] {
                Node::Const(_) | Node::Input(_) | Node::CallOut { .. } | Node::CallJac { .. } => 0,
                Node::Call(_) => {
                    let key = graph::path_key(&g.call_info(id).path);
                    cost(&key, ks, inline, lvl[id])
                }
                _ => 1,
            };
        }
        n
    }

    /// Inlining never costs operations on the crate's kernels, and on the
    /// 58-input contact kernels it saves more than a third of them (the
    /// table: `cargo test -p dualsim-macros --lib cost -- --nocapture`).
    #[test]
    fn inlining_saves_operations_on_the_crate_kernels() {
        let ks = crate_kernels();
        let all: Inline = crate_kernels();
        let mut names: Vec<&String> = ks.keys().collect();
        names.sort();
        assert!(names.len() > 30, "{names:?}");
        for name in names {
            let chain = cost(name, &ks, &Inline::new(), 1);
            let inlined = cost(name, &ks, &all, 1);
            let value = cost(name, &ks, &all, 0);
            eprintln!(
                "{name:28} value {value:5}  jacobian: chain rule {chain:6}, inlined {inlined:6}"
            );
            assert!(inlined <= chain, "{name}: {inlined} > {chain}");
            if name.starts_with("contact_") && name != "contact_rows" {
                assert!(3 * inlined < 2 * chain, "{name}: {inlined} vs {chain}");
            }
        }
    }
}
