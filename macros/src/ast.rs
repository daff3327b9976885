//! The kernel language's abstract syntax tree.
//!
//! [`crate::parse`] builds it from `syn`'s tree after rejecting everything
//! outside the language, so every node here is meaningful: there is no
//! "unsupported" variant left to handle downstream. Each node keeps the span
//! of the syntax it came from for the error messages of later stages.

use proc_macro2::Span;
use syn::{Ident, ItemFn, Path};

/// The shape of a kernel value: a scalar `T` or a fixed-size array `[T; N]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `T`.
    Scalar,
    /// `[T; N]`.
    Array(usize),
}

impl Shape {
    /// How the shape is written in Rust, for error messages.
    pub fn describe(self) -> String {
        match self {
            Shape::Scalar => "a scalar `T`".to_string(),
            Shape::Array(n) => format!("an array `[T; {n}]`"),
        }
    }
}

/// A parsed kernel function.
pub struct Kernel {
    /// The original item (attributes, visibility and signature are reused).
    pub item: ItemFn,
    /// The scalar type parameter (`T` in `fn f<T: Scalar>`).
    pub scalar: Ident,
    /// The arguments, in order; their scalars are flattened in this order.
    pub args: Vec<Arg>,
    /// The shape of the result.
    pub ret: Shape,
    /// `let` bindings, in order.
    pub lets: Vec<Let>,
    /// The result expression.
    pub tail: Expr,
}

/// A kernel argument.
pub struct Arg {
    /// Its name.
    pub name: Ident,
    /// Its shape.
    pub shape: Shape,
}

/// An immutable `let` binding.
pub struct Let {
    /// The bound name.
    pub name: Ident,
    /// The annotated shape, if any (`let r: [T; 3] = ...`).
    pub ty: Option<Shape>,
    /// The initializer.
    pub init: Expr,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

/// An elementary function of one scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    /// `sqrt`
    Sqrt,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `exp`
    Exp,
    /// `ln`
    Ln,
    /// `abs`
    Abs,
}

impl Func {
    /// Looks a function up by its Rust name.
    pub fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "sqrt" => Func::Sqrt,
            "sin" => Func::Sin,
            "cos" => Func::Cos,
            "exp" => Func::Exp,
            "ln" => Func::Ln,
            "abs" => Func::Abs,
            _ => return None,
        })
    }

    /// The method name in `nalgebra::ComplexField`.
    pub fn name(self) -> &'static str {
        match self {
            Func::Sqrt => "sqrt",
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Exp => "exp",
            Func::Ln => "ln",
            Func::Abs => "abs",
        }
    }
}

/// An expression of the kernel language.
pub enum Expr {
    /// A numeric literal; becomes `T::from_re(value)`.
    Lit {
        /// Its value.
        value: f64,
        /// Where it was written.
        span: Span,
    },
    /// A variable (argument or `let` binding).
    Var(Ident),
    /// `-expr`.
    Neg {
        /// The operand.
        expr: Box<Expr>,
        /// The `-` and its operand.
        span: Span,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
        /// The operator's span.
        span: Span,
    },
    /// `arg.f()` or `f(arg)`.
    Func {
        /// Which function.
        func: Func,
        /// Its argument.
        arg: Box<Expr>,
        /// The function name's span.
        span: Span,
    },
    /// `base.powi(n)` or `powi(base, n)` with a literal `n`.
    Powi {
        /// The base.
        base: Box<Expr>,
        /// The literal exponent.
        exp: i32,
        /// The `powi` span.
        span: Span,
    },
    /// `base[index]` with a literal index.
    Index {
        /// The indexed array.
        base: Box<Expr>,
        /// The literal index.
        index: usize,
        /// The index literal's span.
        span: Span,
    },
    /// `[a, b, c]`.
    Array {
        /// The elements (scalars).
        elems: Vec<Expr>,
        /// The brackets' span.
        span: Span,
    },
    /// A call to another kernel.
    Call {
        /// The callee's path.
        path: Path,
        /// Its arguments.
        args: Vec<Expr>,
        /// The callee path's span.
        span: Span,
    },
}

impl Expr {
    /// The span errors about this expression point at.
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(id) => id.span(),
            Expr::Lit { span, .. }
            | Expr::Neg { span, .. }
            | Expr::Binary { span, .. }
            | Expr::Func { span, .. }
            | Expr::Powi { span, .. }
            | Expr::Index { span, .. }
            | Expr::Array { span, .. }
            | Expr::Call { span, .. } => *span,
        }
    }
}
