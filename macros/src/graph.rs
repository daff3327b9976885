//! Stage 2: the expression DAG.
//!
//! Every node is hash-consed: building a node that already exists returns the
//! existing id, so a subexpression that occurs twice (in the user's code, in
//! two derivatives, or in a derivative and the value) is one node and is
//! emitted as one `let` temporary. This *is* common-subexpression elimination.
//!
//! The constructors ([`Graph::add`], [`Graph::mul`], ...) simplify as they
//! build: constants are folded, `0·x = 0`, `1·x = x`, `x + 0 = x`, `x + x = 2x`,
//! `x − x = 0`, `−(−x) = x`, `c·(d·x) = (cd)·x`. They are what makes the
//! derivatives of [`crate::diff`] sparse: a derivative that is structurally
//! zero is the constant-0 node and is never computed (`0·x` is folded even
//! though IEEE gives `0·∞ = NaN`; derivatives are exact where the value is
//! finite, like num-dual's).
//!
//! Calls of the kernels in an [`Inline`] map are lowered by evaluating the
//! callee's body on the caller's argument nodes (its parameters bound to
//! them in a fresh environment), so an inlined kernel leaves no trace in the
//! DAG; other calls become [`Node::Call`] and go through the chain rule.
//!
//! Ids are allocated in creation order and children are always created
//! before their parents, so increasing id order is a topological order.

// Guards like `Some(x) if x == 0.0` read as arithmetic (and match `-0.0`).
#![allow(clippy::redundant_guards)]

use crate::ast::{BinOp, Expr, Func, Kernel, Shape};
use std::collections::HashMap;
use syn::{Error, Ident, Path};

/// Index of a node in [`Graph::nodes`].
pub type Id = usize;

/// A node of the DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// A constant (bits of an `f64`, with `-0.0` normalized to `0.0`).
    Const(u64),
    /// The `k`-th flattened scalar input.
    Input(usize),
    /// `a + b` (operands sorted).
    Add(Id, Id),
    /// `a − b`.
    Sub(Id, Id),
    /// `a · b` (operands sorted).
    Mul(Id, Id),
    /// `a / b`.
    Div(Id, Id),
    /// `−a`.
    Neg(Id),
    /// An elementary function.
    Func(Func, Id),
    /// `sign(a)`, decided on the primal part: `+1` if `a.re() >= 0`, else `−1`.
    Sign(Id),
    /// `a.powi(n)`.
    Powi(Id, i32),
    /// A call of another kernel (index into [`Graph::calls`]).
    Call(usize),
    /// Output `out` of a call node.
    CallOut {
        /// The [`Node::Call`].
        call: Id,
        /// Flattened output index.
        out: usize,
    },
    /// ∂ output `out` / ∂ flattened argument `arg` of a call node.
    CallJac {
        /// The [`Node::Call`].
        call: Id,
        /// Flattened output index.
        out: usize,
        /// Flattened argument index.
        arg: usize,
    },
    /// ∂² output `out` / ∂ argument `i` ∂ argument `j` of a call (`i ≤ j`).
    CallHess {
        /// The [`Node::Call`].
        call: Id,
        /// Flattened output index.
        out: usize,
        /// First flattened argument index.
        i: usize,
        /// Second flattened argument index.
        j: usize,
    },
}

/// A lowered value: a scalar node or an array of scalar nodes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    /// A scalar.
    Scalar(Id),
    /// An array.
    Array(Vec<Id>),
}

impl Val {
    fn shape(&self) -> Shape {
        match self {
            Val::Scalar(_) => Shape::Scalar,
            Val::Array(v) => Shape::Array(v.len()),
        }
    }

    /// The scalars of the value, flattened.
    pub fn flat(&self) -> Vec<Id> {
        match self {
            Val::Scalar(s) => vec![*s],
            Val::Array(v) => v.clone(),
        }
    }
}

/// A call of another kernel.
pub struct Call {
    /// The callee (its `_jacobian` / `_hessian` siblings are derived from it).
    pub path: Path,
    /// The arguments, with their shapes.
    pub args: Vec<Val>,
    /// What the callee returns: a scalar, an array of known length, or
    /// (`None`) an array indexed directly whose length is unknown.
    pub out: Option<Shape>,
    /// Where the call was written.
    pub span: proc_macro2::Span,
}

impl Call {
    /// Whether the callee returns a scalar.
    pub fn scalar_out(&self) -> bool {
        self.out == Some(Shape::Scalar)
    }
}

/// The hash-consed expression DAG.
#[derive(Default)]
pub struct Graph {
    /// The nodes, in topological order.
    pub nodes: Vec<Node>,
    index: HashMap<Node, Id>,
    /// The kernel calls referenced by [`Node::Call`].
    pub calls: Vec<Call>,
    call_index: HashMap<(String, Vec<Val>, bool), Id>,
}

impl Graph {
    /// Returns the id of `node`, creating it if it is new.
    pub fn intern(&mut self, node: Node) -> Id {
        if let Some(&id) = self.index.get(&node) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(node);
        self.index.insert(node, id);
        id
    }

    /// A constant.
    pub fn konst(&mut self, c: f64) -> Id {
        let c = if c == 0.0 { 0.0 } else { c };
        self.intern(Node::Const(c.to_bits()))
    }

    /// The constant 0.
    pub fn zero(&mut self) -> Id {
        self.konst(0.0)
    }

    /// The value of a constant node.
    pub fn as_const(&self, a: Id) -> Option<f64> {
        match self.nodes[a] {
            Node::Const(bits) => Some(f64::from_bits(bits)),
            _ => None,
        }
    }

    /// Whether `a` is the constant `c`.
    pub fn is(&self, a: Id, c: f64) -> bool {
        self.as_const(a) == Some(c)
    }

    /// `a + b`, simplified.
    pub fn add(&mut self, a: Id, b: Id) -> Id {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => return self.konst(x + y),
            (Some(x), _) if x == 0.0 => return b,
            (_, Some(y)) if y == 0.0 => return a,
            _ => {}
        }
        if a == b {
            let two = self.konst(2.0);
            return self.mul(two, a);
        }
        if let Node::Neg(nb) = self.nodes[b] {
            return self.sub(a, nb);
        }
        if let Node::Neg(na) = self.nodes[a] {
            return self.sub(b, na);
        }
        self.intern(Node::Add(a.min(b), a.max(b)))
    }

    /// `a − b`, simplified.
    pub fn sub(&mut self, a: Id, b: Id) -> Id {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) => return self.konst(x - y),
            (_, Some(y)) if y == 0.0 => return a,
            (Some(x), _) if x == 0.0 => return self.neg(b),
            _ => {}
        }
        if a == b {
            return self.zero();
        }
        if let Node::Neg(nb) = self.nodes[b] {
            return self.add(a, nb);
        }
        self.intern(Node::Sub(a, b))
    }

    /// `a · b`, simplified.
    pub fn mul(&mut self, a: Id, b: Id) -> Id {
        let (ca, cb) = (self.as_const(a), self.as_const(b));
        if let (Some(x), Some(y)) = (ca, cb) {
            return self.konst(x * y);
        }
        // Put the constant (if any) first.
        let (c, x) = match (ca, cb) {
            (Some(c), _) => (Some(c), b),
            (_, Some(c)) => (Some(c), a),
            _ => (None, a),
        };
        if let Some(c) = c {
            if c == 0.0 {
                return self.zero();
            }
            if c == 1.0 {
                return x;
            }
            if c == -1.0 {
                return self.neg(x);
            }
            match self.nodes[x] {
                Node::Mul(p, q) => {
                    if let Some(d) = self.as_const(p) {
                        let k = self.konst(c * d);
                        return self.mul(k, q);
                    }
                }
                Node::Neg(y) => {
                    let k = self.konst(-c);
                    return self.mul(k, y);
                }
                _ => {}
            }
            let k = self.konst(c);
            return self.intern(Node::Mul(k.min(x), k.max(x)));
        }
        if let (Node::Neg(na), Node::Neg(nb)) = (self.nodes[a], self.nodes[b]) {
            return self.mul(na, nb);
        }
        self.intern(Node::Mul(a.min(b), a.max(b)))
    }

    /// `a / b`, simplified.
    pub fn div(&mut self, a: Id, b: Id) -> Id {
        match (self.as_const(a), self.as_const(b)) {
            (Some(x), Some(y)) if y != 0.0 => return self.konst(x / y),
            (Some(x), _) if x == 0.0 => return self.zero(),
            (_, Some(y)) if y == 1.0 => return a,
            (_, Some(y)) if y == -1.0 => return self.neg(a),
            _ => {}
        }
        self.intern(Node::Div(a, b))
    }

    /// `−a`, simplified.
    pub fn neg(&mut self, a: Id) -> Id {
        if let Some(x) = self.as_const(a) {
            return self.konst(-x);
        }
        match self.nodes[a] {
            Node::Neg(x) => x,
            Node::Sub(x, y) => self.sub(y, x),
            Node::Mul(p, q) if self.as_const(p).is_some() => {
                let k = self.konst(-self.as_const(p).unwrap_or(0.0));
                self.mul(k, q)
            }
            _ => self.intern(Node::Neg(a)),
        }
    }

    /// An elementary function, folded on constants.
    pub fn func(&mut self, f: Func, a: Id) -> Id {
        if let Some(x) = self.as_const(a) {
            let v = match f {
                Func::Sqrt => x.sqrt(),
                Func::Sin => x.sin(),
                Func::Cos => x.cos(),
                Func::Exp => x.exp(),
                Func::Ln => x.ln(),
                Func::Abs => x.abs(),
            };
            if v.is_finite() {
                return self.konst(v);
            }
        }
        self.intern(Node::Func(f, a))
    }

    /// `sign(a)` on the primal part.
    pub fn sign(&mut self, a: Id) -> Id {
        if let Some(x) = self.as_const(a) {
            return self.konst(if x >= 0.0 { 1.0 } else { -1.0 });
        }
        self.intern(Node::Sign(a))
    }

    /// `a.powi(n)`, simplified.
    pub fn powi(&mut self, a: Id, n: i32) -> Id {
        if n == 0 {
            return self.konst(1.0);
        }
        if n == 1 {
            return a;
        }
        if let Some(x) = self.as_const(a) {
            let v = x.powi(n);
            if v.is_finite() {
                return self.konst(v);
            }
        }
        self.intern(Node::Powi(a, n))
    }

    /// A call node (deduplicated like every other node).
    pub fn call(
        &mut self,
        path: &Path,
        args: Vec<Val>,
        out: Option<Shape>,
        span: proc_macro2::Span,
    ) -> Id {
        let scalar_out = out == Some(Shape::Scalar);
        let key = (quote::quote!(#path).to_string(), args.clone(), scalar_out);
        if let Some(&id) = self.call_index.get(&key) {
            if let Node::Call(c) = self.nodes[id]
                && self.calls[c].out.is_none()
            {
                self.calls[c].out = out;
            }
            return id;
        }
        self.calls.push(Call {
            path: path.clone(),
            args,
            out,
            span,
        });
        let id = self.intern(Node::Call(self.calls.len() - 1));
        self.call_index.insert(key, id);
        id
    }

    /// The call record of a [`Node::Call`] id.
    pub fn call_info(&self, call: Id) -> &Call {
        match self.nodes[call] {
            Node::Call(c) => &self.calls[c],
            _ => unreachable!("not a call node"),
        }
    }

    /// The children of a node.
    pub fn children(&self, id: Id) -> Vec<Id> {
        match self.nodes[id] {
            Node::Const(_) | Node::Input(_) => vec![],
            Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) | Node::Div(a, b) => vec![a, b],
            Node::Neg(a) | Node::Func(_, a) | Node::Sign(a) | Node::Powi(a, _) => vec![a],
            Node::Call(c) => self.calls[c].args.iter().flat_map(Val::flat).collect(),
            Node::CallOut { call, .. }
            | Node::CallJac { call, .. }
            | Node::CallHess { call, .. } => {
                vec![call]
            }
        }
    }
}

/// A kernel lowered to the DAG.
pub struct Lowered {
    /// The DAG.
    pub graph: Graph,
    /// For each flattened input: the argument name and the element index
    /// (`None` for a scalar argument).
    pub inputs: Vec<(Ident, Option<usize>)>,
    /// The flattened outputs.
    pub outputs: Vec<Id>,
}

fn err<T>(span: proc_macro2::Span, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(Error::new(span, msg))
}

/// Kernels whose bodies are inlined where they are called, by the callee
/// path as written at the call ([`path_key`]).
pub type Inline = HashMap<String, Kernel>;

/// The key of a callee path in an [`Inline`] map: its segments joined by
/// `::`, without generic arguments (`geom::norm2::<T>` → `geom::norm2`).
pub fn path_key(path: &Path) -> String {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let lead = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{lead}{}", segs.join("::"))
}

struct Lowerer<'a> {
    g: Graph,
    env: HashMap<String, Val>,
    inline: &'a Inline,
    /// The kernels being inlined, innermost last (a recursive call is an
    /// error instead of an endless expansion).
    stack: Vec<String>,
}

/// Lowers a parsed kernel, checking shapes; calls of the kernels in
/// `inline` are replaced by their bodies.
pub fn lower(k: &Kernel, inline: &Inline) -> syn::Result<Lowered> {
    let mut l = Lowerer {
        g: Graph::default(),
        env: HashMap::new(),
        inline,
        stack: vec![k.item.sig.ident.to_string()],
    };
    let mut inputs = Vec::new();
    for arg in &k.args {
        let val = match arg.shape {
            Shape::Scalar => {
                let id = l.g.intern(Node::Input(inputs.len()));
                inputs.push((arg.name.clone(), None));
                Val::Scalar(id)
            }
            Shape::Array(n) => Val::Array(
                (0..n)
                    .map(|j| {
                        let id = l.g.intern(Node::Input(inputs.len()));
                        inputs.push((arg.name.clone(), Some(j)));
                        id
                    })
                    .collect(),
            ),
        };
        l.env.insert(arg.name.to_string(), val);
    }
    for b in &k.lets {
        let v = l.expr(&b.init, b.ty)?;
        l.env.insert(b.name.to_string(), v);
    }
    let out = l.expr(&k.tail, Some(k.ret))?;
    Ok(Lowered {
        graph: l.g,
        inputs,
        outputs: out.flat(),
    })
}

impl Lowerer<'_> {
    fn scalar(&mut self, e: &Expr) -> syn::Result<Id> {
        match self.expr(e, Some(Shape::Scalar))? {
            Val::Scalar(id) => Ok(id),
            Val::Array(_) => unreachable!("shape checked"),
        }
    }

    /// Lowers `e`; when `expect` is given the value must have that shape
    /// (it also decides the result shape of a kernel call).
    fn expr(&mut self, e: &Expr, expect: Option<Shape>) -> syn::Result<Val> {
        let v = match e {
            Expr::Lit { value, .. } => Val::Scalar(self.g.konst(*value)),
            Expr::Var(id) => match self.env.get(&id.to_string()) {
                Some(v) => v.clone(),
                None => return err(id.span(), format!("unknown variable `{id}` in a kernel")),
            },
            Expr::Neg { expr, .. } => {
                let a = self.scalar(expr)?;
                Val::Scalar(self.g.neg(a))
            }
            Expr::Binary { op, lhs, rhs, .. } => {
                let a = self.scalar(lhs)?;
                let b = self.scalar(rhs)?;
                Val::Scalar(match op {
                    BinOp::Add => self.g.add(a, b),
                    BinOp::Sub => self.g.sub(a, b),
                    BinOp::Mul => self.g.mul(a, b),
                    BinOp::Div => self.g.div(a, b),
                })
            }
            Expr::Func { func, arg, .. } => {
                let a = self.scalar(arg)?;
                Val::Scalar(self.g.func(*func, a))
            }
            Expr::Powi { base, exp, .. } => {
                let a = self.scalar(base)?;
                Val::Scalar(self.g.powi(a, *exp))
            }
            Expr::Index { base, index, span } => {
                if let Some((path, args, span)) = match &**base {
                    Expr::Call { path, args, span }
                        if !self.inline.contains_key(&path_key(path)) =>
                    {
                        Some((path, args, span))
                    }
                    _ => None,
                } {
                    // `kernel(args)[i]`: an array-valued call whose length
                    // need not be known.
                    let call = self.call(path, args, None, *span)?;
                    Val::Scalar(self.g.intern(Node::CallOut { call, out: *index }))
                } else {
                    match self.expr(base, None)? {
                        Val::Array(v) => match v.get(*index) {
                            Some(&id) => Val::Scalar(id),
                            None => {
                                return err(
                                    *span,
                                    format!(
                                        "index {index} is out of bounds for `[T; {}]`",
                                        v.len()
                                    ),
                                );
                            }
                        },
                        Val::Scalar(_) => {
                            return err(
                                base.span(),
                                "a scalar cannot be indexed (a call of another kernel is a \
                                 scalar unless bound by `let r: [T; N] = f(..);`)",
                            );
                        }
                    }
                }
            }
            Expr::Array { elems, .. } => Val::Array(
                elems
                    .iter()
                    .map(|x| self.scalar(x))
                    .collect::<syn::Result<_>>()?,
            ),
            Expr::Call { path, args, span } if self.inline.contains_key(&path_key(path)) => {
                self.inline_call(path, args, *span)?
            }
            Expr::Call { path, args, span } => {
                let shape = expect.unwrap_or(Shape::Scalar);
                let call = self.call(path, args, Some(shape), *span)?;
                match shape {
                    Shape::Scalar => Val::Scalar(self.g.intern(Node::CallOut { call, out: 0 })),
                    Shape::Array(n) => Val::Array(
                        (0..n)
                            .map(|out| self.g.intern(Node::CallOut { call, out }))
                            .collect(),
                    ),
                }
            }
        };
        if let Some(s) = expect
            && v.shape() != s
        {
            return err(
                e.span(),
                format!("expected {}, found {}", s.describe(), v.shape().describe()),
            );
        }
        Ok(v)
    }

    /// The body of the kernel `path` (in [`Lowerer::inline`]) evaluated on
    /// `args`: the callee's nodes join the caller's DAG, so simplification
    /// and common subexpressions work across the call.
    fn inline_call(
        &mut self,
        path: &Path,
        args: &[Expr],
        span: proc_macro2::Span,
    ) -> syn::Result<Val> {
        let key = path_key(path);
        let inline = self.inline;
        let k = &inline[&key];
        if self.stack.contains(&key) {
            return err(
                span,
                format!("`{key}` calls itself (through inlined kernels)"),
            );
        }
        if args.len() != k.args.len() {
            return err(
                span,
                format!(
                    "`{key}` takes {} arguments, {} given",
                    k.args.len(),
                    args.len()
                ),
            );
        }
        let mut env = HashMap::new();
        for (a, param) in args.iter().zip(&k.args) {
            let v = self.expr(a, Some(param.shape))?;
            env.insert(param.name.to_string(), v);
        }
        let saved = std::mem::replace(&mut self.env, env);
        self.stack.push(key);
        let r = (|| {
            for b in &k.lets {
                let v = self.expr(&b.init, b.ty)?;
                self.env.insert(b.name.to_string(), v);
            }
            self.expr(&k.tail, Some(k.ret))
        })();
        self.stack.pop();
        self.env = saved;
        r
    }

    fn call(
        &mut self,
        path: &Path,
        args: &[Expr],
        out: Option<Shape>,
        span: proc_macro2::Span,
    ) -> syn::Result<Id> {
        let vals = args
            .iter()
            .map(|a| self.expr(a, None))
            .collect::<syn::Result<Vec<_>>>()?;
        Ok(self.g.call(path, vals, out, span))
    }
}
