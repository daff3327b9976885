//! Stage 3: symbolic differentiation on the DAG.
//!
//! Forward mode, one flattened input at a time: `d(node, k)` is the node of
//! ∂node/∂xₖ, memoized per `(node, k)`. Derivatives are built with the
//! simplifying constructors of [`Graph`], so structural zeros collapse to the
//! constant 0 and everything shared is shared (the value's temporaries, the
//! derivative of a subexpression used twice, ...). Second derivatives are
//! derivatives of first-derivative nodes; the Hessian is computed for
//! `j ≥ i` and mirrored.
//!
//! Rules (`s` is the node itself):
//!
//! | node | derivative |
//! |---|---|
//! | `a ± b`, `a·b`, `a/b` | `a′ ± b′`, `a′b + ab′`, `(a′ − s·b′)/b` |
//! | `sqrt a` | `a′ · 0.5/s` (singular at `a = 0`, like num-dual) |
//! | `sin a`, `cos a`, `exp a`, `ln a` | `a′ cos a`, `−a′ sin a`, `a′ s`, `a′/a` |
//! | `abs a` | `a′ · sign(a)`, the sign decided on `a.re() >= 0` |
//! | `a.powi(n)` | `n · a.powi(n−1) · a′` |
//! | output `o` of `f(args)` (not inlined) | `Σᵢ J_f[o][i] · argᵢ′` (from `f_jacobian`) |
//! | `J_f[o][i]` | `Σⱼ H_f[o][i][j] · argⱼ′` (from `f_hessian`) |

use crate::ast::Func;
use crate::graph::{Graph, Id, Node, Val};
use std::collections::HashMap;

/// Memoized symbolic derivatives on a graph.
#[derive(Default)]
pub struct Diff {
    memo: HashMap<(Id, usize), Id>,
}

impl Diff {
    /// ∂`node`/∂x_`k`.
    pub fn d(&mut self, g: &mut Graph, node: Id, k: usize) -> Id {
        if let Some(&r) = self.memo.get(&(node, k)) {
            return r;
        }
        let r = match g.nodes[node] {
            Node::Const(_) | Node::Sign(_) => g.zero(),
            Node::Input(i) => g.konst(if i == k { 1.0 } else { 0.0 }),
            Node::Add(a, b) => {
                let (da, db) = (self.d(g, a, k), self.d(g, b, k));
                g.add(da, db)
            }
            Node::Sub(a, b) => {
                let (da, db) = (self.d(g, a, k), self.d(g, b, k));
                g.sub(da, db)
            }
            Node::Mul(a, b) => {
                let (da, db) = (self.d(g, a, k), self.d(g, b, k));
                let x = g.mul(da, b);
                let y = g.mul(a, db);
                g.add(x, y)
            }
            Node::Div(a, b) => {
                let (da, db) = (self.d(g, a, k), self.d(g, b, k));
                let sdb = g.mul(node, db);
                let num = g.sub(da, sdb);
                g.div(num, b)
            }
            Node::Neg(a) => {
                let da = self.d(g, a, k);
                g.neg(da)
            }
            Node::Func(f, a) => {
                let da = self.d(g, a, k);
                if g.is(da, 0.0) {
                    da
                } else {
                    let f1 = match f {
                        Func::Sqrt => {
                            let half = g.konst(0.5);
                            g.div(half, node)
                        }
                        Func::Sin => g.func(Func::Cos, a),
                        Func::Cos => {
                            let s = g.func(Func::Sin, a);
                            g.neg(s)
                        }
                        Func::Exp => node,
                        Func::Ln => return self.store(node, k, g.div(da, a)),
                        Func::Abs => g.sign(a),
                    };
                    g.mul(f1, da)
                }
            }
            Node::Powi(a, n) => {
                let da = self.d(g, a, k);
                if g.is(da, 0.0) {
                    da
                } else {
                    let p = g.powi(a, n - 1);
                    let c = g.konst(f64::from(n));
                    let f1 = g.mul(c, p);
                    g.mul(f1, da)
                }
            }
            Node::Call(_) => unreachable!("a call node is not a value"),
            Node::CallOut { call, out } => {
                let args: Vec<Id> = g.call_info(call).args.iter().flat_map(Val::flat).collect();
                let mut acc = g.zero();
                for (i, a) in args.into_iter().enumerate() {
                    let da = self.d(g, a, k);
                    if !g.is(da, 0.0) {
                        let j = g.intern(Node::CallJac { call, out, arg: i });
                        let t = g.mul(j, da);
                        acc = g.add(acc, t);
                    }
                }
                acc
            }
            Node::CallJac { call, out, arg } => {
                let args: Vec<Id> = g.call_info(call).args.iter().flat_map(Val::flat).collect();
                let mut acc = g.zero();
                for (j, a) in args.into_iter().enumerate() {
                    let da = self.d(g, a, k);
                    if !g.is(da, 0.0) {
                        let h = g.intern(Node::CallHess {
                            call,
                            out,
                            i: arg.min(j),
                            j: arg.max(j),
                        });
                        let t = g.mul(h, da);
                        acc = g.add(acc, t);
                    }
                }
                acc
            }
            Node::CallHess { .. } => {
                unreachable!("third derivatives of a called kernel are never formed")
            }
        };
        self.store(node, k, r)
    }

    fn store(&mut self, node: Id, k: usize, r: Id) -> Id {
        self.memo.insert((node, k), r);
        r
    }
}

/// The Jacobian `J[o][k]` of `outputs` with respect to `nin` inputs.
pub fn jacobian(g: &mut Graph, diff: &mut Diff, outputs: &[Id], nin: usize) -> Vec<Vec<Id>> {
    outputs
        .iter()
        .map(|&o| (0..nin).map(|k| diff.d(g, o, k)).collect())
        .collect()
}

/// The Hessians `H[o][i][j]` from the Jacobian rows (symmetric; the upper
/// triangle is differentiated, the lower one mirrored).
pub fn hessian(g: &mut Graph, diff: &mut Diff, jac: &[Vec<Id>]) -> Vec<Vec<Vec<Id>>> {
    jac.iter()
        .map(|row| {
            let n = row.len();
            let mut h = vec![vec![0; n]; n];
            #[allow(clippy::needless_range_loop)] // h is filled symmetrically
            for i in 0..n {
                for j in i..n {
                    let v = diff.d(g, row[i], j);
                    h[i][j] = v;
                    h[j][i] = v;
                }
            }
            h
        })
        .collect()
}
