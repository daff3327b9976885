//! Stage 1: `syn` → [`crate::ast`], rejecting everything outside the kernel
//! language with a spanned [`syn::Error`].

use crate::ast::{Arg, BinOp, Expr, Func, Kernel, Let, Shape};
use syn::spanned::Spanned;
use syn::{Error, FnArg, GenericParam, ItemFn, Lit, Pat, ReturnType, Stmt, Type};

/// Functions a user may expect but that are not in the language; calling one
/// is reported here rather than as a missing `<name>_jacobian`.
const UNSUPPORTED_FUNCS: &[&str] = &[
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "log", "log2", "log10", "ln_1p", "exp_m1", "exp2", "powf", "powc", "cbrt", "hypot", "max",
    "min", "clamp", "floor", "ceil", "round", "trunc", "fract", "signum", "recip", "sin_cos",
    "mul_add", "norm", "dot", "cross",
];

const LANGUAGE: &str = "the kernel language has `let`, `+ - * /`, unary `-`, \
    sqrt/sin/cos/exp/ln/abs/powi(literal), literal indices, array literals, \
    numeric literals and calls to other kernels";

fn err<T>(span: proc_macro2::Span, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(Error::new(span, msg))
}

/// Parses and validates a `#[kernel]` function.
pub fn kernel(item: ItemFn) -> syn::Result<Kernel> {
    let sig = &item.sig;
    if let Some(c) = &sig.constness {
        return err(c.span(), "a kernel cannot be `const`");
    }
    if let Some(a) = &sig.asyncness {
        return err(a.span(), "a kernel cannot be `async`");
    }
    if let Some(u) = &sig.unsafety {
        return err(u.span(), "a kernel cannot be `unsafe`");
    }
    if let Some(v) = &sig.variadic {
        return err(v.span(), "a kernel cannot be variadic");
    }

    // Exactly one type parameter: the scalar.
    let mut scalar = None;
    for param in &sig.generics.params {
        match param {
            GenericParam::Type(tp) if scalar.is_none() => scalar = Some(tp.ident.clone()),
            other => {
                return err(
                    other.span(),
                    "a kernel has exactly one generic parameter, the scalar type `T: Scalar`",
                );
            }
        }
    }
    let Some(scalar) = scalar else {
        return err(
            sig.ident.span(),
            "a kernel must be generic over its scalar: `fn name<T: Scalar>(...)`",
        );
    };

    let mut args = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => {
                return err(r.span(), "a kernel is a free function, not a method");
            }
            FnArg::Typed(pt) => {
                let name = binding_name(&pt.pat)?;
                let shape = shape_of(&pt.ty, &scalar)?;
                args.push(Arg { name, shape });
            }
        }
    }

    let ret = match &sig.output {
        ReturnType::Default => {
            return err(
                sig.paren_token.span.join(),
                "a kernel returns `T` or `[T; M]`",
            );
        }
        ReturnType::Type(_, ty) => shape_of(ty, &scalar)?,
    };

    let stmts = &item.block.stmts;
    let mut lets = Vec::new();
    let mut tail = None;
    for (i, stmt) in stmts.iter().enumerate() {
        match stmt {
            Stmt::Local(local) => {
                if let Some(init) = &local.init
                    && let Some((else_token, _)) = &init.diverge
                {
                    return err(
                        else_token.span(),
                        "`let ... else` is not in the kernel language",
                    );
                }
                let (pat, ty) = match &local.pat {
                    Pat::Type(pt) => (&*pt.pat, Some(shape_of(&pt.ty, &scalar)?)),
                    p => (p, None),
                };
                let name = binding_name(pat)?;
                let Some(init) = &local.init else {
                    return err(
                        local.span(),
                        "a kernel binding needs an initializer: `let x = ...;`",
                    );
                };
                lets.push(Let {
                    name,
                    ty,
                    init: expr(&init.expr)?,
                });
            }
            Stmt::Expr(e, None) if i + 1 == stmts.len() => tail = Some(expr(e)?),
            Stmt::Expr(e, _) => {
                // Report what is wrong with the expression itself first (a
                // loop, an assignment, ...), then that it is a statement.
                expr(e)?;
                return err(
                    e.span(),
                    "a kernel statement is a `let` binding; only the final expression \
                     (without `;`) is the result",
                );
            }
            Stmt::Item(it) => return err(it.span(), "items are not allowed inside a kernel"),
            Stmt::Macro(m) => {
                return err(m.mac.path.span(), "macros are not in the kernel language");
            }
        }
    }
    let Some(tail) = tail else {
        return err(
            item.block.brace_token.span.close(),
            "a kernel body ends with its result expression (without `;`)",
        );
    };
    Ok(Kernel {
        scalar,
        args,
        ret,
        lets,
        tail,
        item,
    })
}

/// The name bound by an argument or `let` pattern: a plain identifier.
fn binding_name(pat: &Pat) -> syn::Result<syn::Ident> {
    match pat {
        Pat::Ident(pi) => {
            if let Some(m) = &pi.mutability {
                return err(m.span(), "kernel bindings are immutable: remove `mut`");
            }
            if let Some(r) = &pi.by_ref {
                return err(r.span(), "`ref` bindings are not in the kernel language");
            }
            if let Some((at, _)) = &pi.subpat {
                return err(at.span(), "patterns are not in the kernel language");
            }
            Ok(pi.ident.clone())
        }
        other => err(
            other.span(),
            "patterns are not in the kernel language: bind a plain name (`let x = ...;`)",
        ),
    }
}

/// `T` → scalar, `[T; N]` with a literal `N` → array.
fn shape_of(ty: &Type, scalar: &syn::Ident) -> syn::Result<Shape> {
    let bad = |span| {
        err(
            span,
            format!("kernel values are `{scalar}` or `[{scalar}; N]` with a literal `N`"),
        )
    };
    match ty {
        Type::Paren(p) => shape_of(&p.elem, scalar),
        Type::Group(g) => shape_of(&g.elem, scalar),
        Type::Path(tp) if tp.qself.is_none() && tp.path.is_ident(scalar) => Ok(Shape::Scalar),
        Type::Array(a) => {
            if shape_of(&a.elem, scalar)? != Shape::Scalar {
                return bad(a.elem.span());
            }
            match &a.len {
                syn::Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(n), ..
                }) => Ok(Shape::Array(n.base10_parse::<usize>()?)),
                other => err(other.span(), "the array length must be an integer literal"),
            }
        }
        other => bad(other.span()),
    }
}

fn int_literal(e: &syn::Expr) -> Option<syn::Result<i64>> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => Some(i.base10_parse::<i64>()),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => int_literal(expr).map(|r| r.map(|v| -v)),
        syn::Expr::Paren(p) => int_literal(&p.expr),
        syn::Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

fn powi_exponent(e: &syn::Expr) -> syn::Result<i32> {
    match int_literal(e) {
        Some(v) => {
            let v = v?;
            i32::try_from(v).map_err(|_| Error::new(e.span(), "the exponent does not fit in i32"))
        }
        None => err(
            e.span(),
            "the exponent of `powi` must be an integer literal",
        ),
    }
}

fn literal(l: &syn::ExprLit) -> syn::Result<Expr> {
    match &l.lit {
        Lit::Float(f) => {
            if !matches!(f.suffix(), "" | "f64" | "f32") {
                return err(f.span(), "unsupported literal suffix");
            }
            Ok(Expr::Lit {
                value: f.base10_parse::<f64>()?,
                span: f.span(),
            })
        }
        Lit::Int(i) => {
            if !matches!(i.suffix(), "" | "f64" | "f32") {
                return err(
                    i.span(),
                    "integer-typed literals are not kernel values; write `2` or `2.0`",
                );
            }
            Ok(Expr::Lit {
                value: i
                    .base10_digits()
                    .parse::<f64>()
                    .map_err(|e| Error::new(i.span(), e))?,
                span: i.span(),
            })
        }
        other => err(other.span(), "only numeric literals are kernel values"),
    }
}

/// Parses one expression.
fn expr(e: &syn::Expr) -> syn::Result<Expr> {
    use syn::Expr as E;
    match e {
        E::Lit(l) => literal(l).and_then(|e| match e {
            Expr::Lit { value, span } if !value.is_finite() => {
                err(span, "literal is not a finite f64")
            }
            e => Ok(e),
        }),
        E::Path(p) => match p.path.get_ident() {
            Some(id) if p.qself.is_none() => Ok(Expr::Var(id.clone())),
            _ => err(
                p.span(),
                "only local variables may be named in a kernel (no paths or constants)",
            ),
        },
        E::Paren(p) => expr(&p.expr),
        E::Group(g) => expr(&g.expr),
        E::Unary(u) => match u.op {
            syn::UnOp::Neg(minus) => Ok(Expr::Neg {
                expr: Box::new(expr(&u.expr)?),
                span: minus.span,
            }),
            op => err(
                op.span(),
                format!("operator is not in the kernel language; {LANGUAGE}"),
            ),
        },
        E::Binary(b) => {
            let op = match b.op {
                syn::BinOp::Add(_) => BinOp::Add,
                syn::BinOp::Sub(_) => BinOp::Sub,
                syn::BinOp::Mul(_) => BinOp::Mul,
                syn::BinOp::Div(_) => BinOp::Div,
                syn::BinOp::AddAssign(_)
                | syn::BinOp::SubAssign(_)
                | syn::BinOp::MulAssign(_)
                | syn::BinOp::DivAssign(_) => {
                    return err(
                        b.op.span(),
                        "kernel bindings are immutable: use a new `let`",
                    );
                }
                op => {
                    return err(
                        op.span(),
                        "operator is not in the kernel language (only `+ - * /` and unary `-`)",
                    );
                }
            };
            Ok(Expr::Binary {
                op,
                lhs: Box::new(expr(&b.left)?),
                rhs: Box::new(expr(&b.right)?),
                span: b.op.span(),
            })
        }
        E::MethodCall(m) => {
            if let Some(tf) = &m.turbofish {
                return err(tf.span(), "turbofish is not in the kernel language");
            }
            let name = m.method.to_string();
            let span = m.method.span();
            if let Some(func) = Func::from_name(&name) {
                if !m.args.is_empty() {
                    return err(m.args.span(), format!("`{name}` takes no arguments"));
                }
                return Ok(Expr::Func {
                    func,
                    arg: Box::new(expr(&m.receiver)?),
                    span,
                });
            }
            if name == "powi" {
                if m.args.len() != 1 {
                    return err(span, "`powi` takes one integer literal");
                }
                return Ok(Expr::Powi {
                    base: Box::new(expr(&m.receiver)?),
                    exp: powi_exponent(&m.args[0])?,
                    span,
                });
            }
            err(span, format!("unknown function `{name}`: {LANGUAGE}"))
        }
        E::Call(c) => {
            let path = match &*c.func {
                E::Path(p) if p.qself.is_none() => &p.path,
                other => {
                    return err(
                        other.span(),
                        "only kernels and elementary functions can be called",
                    );
                }
            };
            let span = path.span();
            if let Some(id) = path.get_ident() {
                let name = id.to_string();
                if let Some(func) = Func::from_name(&name) {
                    if c.args.len() != 1 {
                        return err(span, format!("`{name}` takes one argument"));
                    }
                    return Ok(Expr::Func {
                        func,
                        arg: Box::new(expr(&c.args[0])?),
                        span,
                    });
                }
                if name == "powi" {
                    if c.args.len() != 2 {
                        return err(span, "`powi(x, n)` takes a base and an integer literal");
                    }
                    return Ok(Expr::Powi {
                        base: Box::new(expr(&c.args[0])?),
                        exp: powi_exponent(&c.args[1])?,
                        span,
                    });
                }
                if UNSUPPORTED_FUNCS.contains(&name.as_str()) {
                    return err(span, format!("unknown function `{name}`: {LANGUAGE}"));
                }
            }
            let args = c.args.iter().map(expr).collect::<syn::Result<_>>()?;
            Ok(Expr::Call {
                path: path.clone(),
                args,
                span,
            })
        }
        E::Index(ix) => {
            let index = match &*ix.index {
                E::Lit(syn::ExprLit {
                    lit: Lit::Int(i), ..
                }) if matches!(i.suffix(), "" | "usize") => i.base10_parse::<usize>()?,
                other => {
                    return err(
                        other.span(),
                        "array indices in a kernel must be integer literals",
                    );
                }
            };
            Ok(Expr::Index {
                base: Box::new(expr(&ix.expr)?),
                index,
                span: ix.index.span(),
            })
        }
        E::Array(a) => Ok(Expr::Array {
            elems: a.elems.iter().map(expr).collect::<syn::Result<_>>()?,
            span: a.bracket_token.span.join(),
        }),
        E::Assign(a) => err(
            a.eq_token.span(),
            "kernel bindings are immutable: use a new `let`",
        ),
        E::ForLoop(f) => err(
            f.for_token.span(),
            "loops are not in the kernel language; unroll by hand",
        ),
        E::While(w) => err(
            w.while_token.span(),
            "loops are not in the kernel language; unroll by hand",
        ),
        E::Loop(l) => err(
            l.loop_token.span(),
            "loops are not in the kernel language; unroll by hand",
        ),
        E::If(i) => err(
            i.if_token.span(),
            "branches are not in the kernel language (derivatives would depend on them); \
             compute in straight-line code or use `abs`",
        ),
        E::Match(m) => err(
            m.match_token.span(),
            "branches are not in the kernel language",
        ),
        E::Closure(c) => err(
            c.or1_token.span(),
            "closures are not in the kernel language",
        ),
        E::Block(b) => err(
            b.block.brace_token.span.open(),
            "blocks are not in the kernel language",
        ),
        E::Macro(m) => err(m.mac.path.span(), "macros are not in the kernel language"),
        E::Field(f) => err(
            f.dot_token.span(),
            "field access is not in the kernel language",
        ),
        E::Cast(c) => err(c.as_token.span(), "casts are not in the kernel language"),
        E::Reference(r) => err(
            r.and_token.span(),
            "references are not in the kernel language",
        ),
        E::Return(r) => err(
            r.return_token.span(),
            "`return` is not in the kernel language",
        ),
        E::Tuple(t) => err(
            t.paren_token.span.join(),
            "tuples are not in the kernel language",
        ),
        E::Repeat(r) => err(
            r.bracket_token.span.join(),
            "write array literals element by element: `[a, b, c]`",
        ),
        other => err(
            other.span(),
            format!("expression is not in the kernel language; {LANGUAGE}"),
        ),
    }
}
