//! Reverse mode and exact second order through rollouts.
//!
//! A rollout is a chain of step maps in local coordinates. With `x̄_k` the
//! nominal states, `ξ_k = x_k ⊖ x̄_k` (the tangent, `2 nv`) and the step's
//! local inputs `z_k = (ξ_k, p, u_k)` — the state, the model parameters
//! being differentiated, the step's control — each step is
//! `ξ_{k+1} = Φ_k(z_k)`, and a rollout cost is `f = Σ_k c_k(ξ_k, u_k) +
//! c_N(ξ_N)` ([`StageCost`]).
//!
//! # First order: the adjoint
//!
//! One forward rollout keeps, per step, the step's Jacobian `J_k =
//! ∂Φ_k/∂z_k` (`2 nv × m`, `m = 3 nv + n_p`: the implicit-function
//! Jacobian of [`ift`](super::Method::Ift), one factorization of `∂r/∂y`
//! per step, the backend's own block-structured solve). One backward pass
//! then accumulates `λ_k = ∂f/∂ξ_k`:
//!
//! ```text
//! λ_N = ∇_ξ c_N,   w_k = J_kᵀ λ_{k+1} + ∇_z c_k,   λ_k = w_k[ξ],
//! ∂f/∂u_k = w_k[u],   ∂f/∂p = Σ_k w_k[p]
//! ```
//!
//! The cost is one step Jacobian of `m` local columns per step, whatever
//! the number of decision variables (the forward [`rollout_jacobian`](super::rollout_jacobian)
//! carries one column per decision variable through every step).
//!
//! # Second order: the second-order implicit function theorem
//!
//! The step solves `r(y; z) = 0` and outputs `Φ(z) = O(z, y(z))` (`v⁺ =
//! y[..nv]`, `q⁺ = (q ⊕ δ) ⊕ h v⁺`). Contracted with an adjoint `λ`, its
//! Hessian is that of the Lagrangian `G(z, y) = λᵀ O(z, y) − μᵀ r(z, y)`
//! with `μ = (∂r/∂y)⁻ᵀ (∂O/∂y)ᵀ λ` (one transposed solve with the f64
//! factorization), restricted to the solution's tangent:
//!
//! ```text
//! λᵀ ∂²Φ/∂z² = [I; Y]ᵀ ∇²G [I; Y],     Y = dy/dz = −(∂r/∂y)⁻¹ ∂r/∂z
//! ```
//!
//! (`G_y = 0` by the choice of `μ`, so `y`'s own second derivatives
//! drop out; this equals `λᵀ(∂O/∂y) d²y + …` with `d²y = −(∂r/∂y)⁻¹
//! (r_yy[dy,dy] + 2 r_yz[dy,dz] + r_zz[dz,dz])`). The right-hand side is
//! one hyper-dual evaluation of the residual and the output map at the
//! solution, seeded along `[I; Y]`, per 8 × 8 block of `z` — never a
//! hyper-dual solve. A step that splits at an impact (`lcp` with ccd)
//! has no single residual; its contracted Hessian is the split step run
//! in hyper-dual numbers (documented exception).
//!
//! On top of it:
//!
//! * the full Hessian, stage-wise: with `T_k = ∂z_k/∂θ` from the forward
//!   sensitivities, `∇²f = Σ_k T_kᵀ (λ_{k+1}ᵀ ∂²Φ_k + ∇²c_k) T_k +
//!   T_Nᵀ ∇²c_N T_N` (the second-order chain rule; each step's block is
//!   `m × m`, ⌈m/8⌉(⌈m/8⌉+1)/2 hyper-dual evaluations);
//! * Hessian–vector products by forward-over-reverse: the direction's
//!   tangent `ż_k` forward, then `λ̇_k = J_kᵀ λ̇_{k+1} + (λ_{k+1}ᵀ
//!   ∂²Φ_k + ∇²c_k) ż_k` backward, each `(·) ż_k` one
//!   `HyperDualSVec64<8, 1>` evaluation per 8 local inputs.
//!
//! Files: `mod.rs` (the rollout gradient, Hessian and Hessian–vector
//! product), `blocks.rs` (the per-step second-order blocks), `second.rs`
//! (the second-order terms of a root step and of a ccd split step),
//! `linearization.rs` ([`Linearization`]: the forward sweep's per-step
//! linearizations) and `inputs.rs` (the map from decision variables to the
//! steps' inputs).

use std::sync::Arc;

use nalgebra::{Const, U1};
use num_dual::{DualSVec64, HyperDualSVec64};

use super::step::{LiftedLu, ift, ift_output, param_partials, step_jacobian, tangent};
use super::{DiffError, DiffOptions, Gradient, ImplicitStep, Input, Method, Param, seeded};
use crate::Scalar;
use crate::contact::backend::dense_jacobian;
use crate::dynamics::free::integrate_model;
use crate::math::{DMat, DVec};
use crate::sim::{Controls, SimError, State, World};

mod blocks;
mod inputs;
mod linearization;
mod second;
use blocks::*;
use inputs::*;
pub use linearization::*;
use second::*;

/// Width of the seed blocks.
const B: usize = 8;
type D = DualSVec64<B>;
type H = HyperDualSVec64<B, B>;
type H1 = HyperDualSVec64<B, 1>;

/// The costs of a rollout, stage by stage: `c_k(x_k, u_k)` for `k < N`
/// and `c_N(x_N)`, evaluated in any scalar (the adjoint seeds them in
/// dual and hyper-dual numbers). Costs do not depend on the model
/// parameters.
pub trait StageCost {
    /// Whether stage `k` (0 ≤ k ≤ N) has a cost term.
    fn active(&self, k: usize) -> bool;
    /// `c_k` at the state `x` (and the control `u`, `None` at `k = N`).
    fn eval<T: Scalar>(&self, k: usize, world: &World<T>, x: &State<T>, u: Option<&DVec<T>>) -> T;
}

/// Value and gradient of a rollout cost, by the adjoint (one forward
/// rollout with step Jacobians, one backward pass).
pub fn rollout_gradient<C: StageCost>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    cost: &C,
    opts: &DiffOptions,
) -> Result<(f64, DVec<f64>), DiffError> {
    let map = InputMap::new(world.model.nv, steps, inputs)?;
    let lin = Linearization::new(world, x0, controls, steps, &map.model, false, opts)?;
    let value = lin.cost(cost)?;
    let (lambdas, ws) = lin.adjoints(cost)?;
    let mut g = DVec::zeros(inputs.len());
    for (k, w) in ws.iter().enumerate() {
        map.scatter(k, w, &mut g);
    }
    map.scatter_init(&lambdas[0], &mut g);
    Ok((value, g))
}

/// Value, gradient and exact Hessian of a rollout cost, stage-wise by the
/// second-order adjoint (module docs).
pub fn rollout_hessian<C: StageCost>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    cost: &C,
    opts: &DiffOptions,
) -> Result<(f64, DVec<f64>, DMat<f64>), DiffError> {
    let nv = world.model.nv;
    let map = InputMap::new(nv, steps, inputs)?;
    let lin = Linearization::new(world, x0, controls, steps, &map.model, true, opts)?;
    let n = inputs.len();
    let np = map.model.len();
    let value = lin.cost(cost)?;
    let (lambdas, ws) = lin.adjoints(cost)?;
    let mut g = DVec::zeros(n);
    for (k, w) in ws.iter().enumerate() {
        map.scatter(k, w, &mut g);
    }
    map.scatter_init(&lambdas[0], &mut g);
    // Forward sensitivities S_k = ∂ξ_k/∂θ and the stage-wise sum.
    let mut s = DMat::zeros(2 * nv, n);
    for (c, kind) in map.kinds.iter().enumerate() {
        if let Kind::Init(r) = *kind {
            s[(r, c)] = 1.0;
        }
    }
    let mut hess = DMat::zeros(n, n);
    let mut add = |t: &DMat<f64>, q: &DMat<f64>, cols: &[usize]| {
        let block = t.transpose() * (q * t);
        for (a, &ca) in cols.iter().enumerate() {
            for (b, &cb) in cols.iter().enumerate() {
                hess[(ca, cb)] += block[(a, b)];
            }
        }
    };
    for k in 0..steps {
        let cols = map.live(k);
        let t = map.local_tangent(k, &s, &cols);
        let mut q = lin.step_hessian(k, &lambdas[k + 1])?;
        if cost.active(k) {
            let (_, c) = lin.stage_hessian(cost, k)?;
            embed_stage(&mut q, &c, nv, np);
        }
        add(&t, &q, &cols);
        let full = map.local_tangent(k, &s, &(0..n).collect::<Vec<_>>());
        s = &lin.jacobians[k] * full;
    }
    if cost.active(steps) {
        let cols: Vec<usize> = (0..n).collect();
        let (_, c) = lin.stage_hessian(cost, steps)?;
        add(&s, &c, &cols);
    }
    let sym = (&hess + hess.transpose()) * 0.5;
    Ok((value, g, sym))
}

/// Adds a stage cost's `(ξ, u)` Hessian into a step's `(ξ, p, u)` block.
fn embed_stage(q: &mut DMat<f64>, c: &DMat<f64>, nv: usize, np: usize) {
    let idx = |i: usize| if i < 2 * nv { i } else { i + np };
    for i in 0..c.nrows() {
        for j in 0..c.ncols() {
            q[(idx(i), idx(j))] += c[(i, j)];
        }
    }
}

/// Value, gradient and the Hessian–vector product `∇²f v` of a rollout
/// cost by forward-over-reverse (module docs).
pub fn rollout_hvp<C: StageCost>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    cost: &C,
    v: &DVec<f64>,
    opts: &DiffOptions,
) -> Result<(f64, DVec<f64>, DVec<f64>), DiffError> {
    if v.len() != inputs.len() {
        return Err(DiffError::BadParam(format!(
            "the direction has {} entries for {} inputs",
            v.len(),
            inputs.len()
        )));
    }
    let nv = world.model.nv;
    let map = InputMap::new(nv, steps, inputs)?;
    let lin = Linearization::new(world, x0, controls, steps, &map.model, true, opts)?;
    let np = map.model.len();
    let value = lin.cost(cost)?;
    let (lambdas, ws) = lin.adjoints(cost)?;
    let mut g = DVec::zeros(inputs.len());
    for (k, w) in ws.iter().enumerate() {
        map.scatter(k, w, &mut g);
    }
    map.scatter_init(&lambdas[0], &mut g);
    // forward: ṡ_k and ż_k
    let mut sdot = DVec::zeros(2 * nv);
    for (c, kind) in map.kinds.iter().enumerate() {
        if let Kind::Init(r) = *kind {
            sdot[r] += v[c];
        }
    }
    let mut zdots = Vec::with_capacity(steps);
    for k in 0..steps {
        let z = map.local_dir(k, &sdot, v);
        sdot = &lin.jacobians[k] * &z;
        zdots.push(z);
    }
    // backward: λ̇
    let mut hv = DVec::zeros(inputs.len());
    let stage_dir = |k: usize, z: &DVec<f64>| -> DVec<f64> {
        // (ξ, p, u) → (ξ, u)
        let mut d: Vec<f64> = z.rows(0, 2 * nv).iter().copied().collect();
        if k < steps {
            d.extend(z.rows(2 * nv + np, nv).iter());
        }
        DVec::from_vec(d)
    };
    let mut ld = if cost.active(steps) {
        let mut zn = DVec::zeros(2 * nv);
        zn.copy_from(&sdot);
        lin.stage_hvp(cost, steps, &zn)?
    } else {
        DVec::zeros(2 * nv)
    };
    for k in (0..steps).rev() {
        let mut w = lin.jacobians[k].transpose() * &ld;
        w += lin.step_hvp(k, &lambdas[k + 1], &zdots[k])?;
        if cost.active(k) {
            let c = lin.stage_hvp(cost, k, &stage_dir(k, &zdots[k]))?;
            for i in 0..2 * nv {
                w[i] += c[i];
            }
            for i in 0..nv {
                w[2 * nv + np + i] += c[2 * nv + i];
            }
        }
        map.scatter(k, &w, &mut hv);
        ld = w.rows(0, 2 * nv).into_owned();
    }
    map.scatter_init(&ld, &mut hv);
    Ok((value, g, hv))
}

/// The Jacobian of the final state with respect to `inputs` by reverse
/// accumulation (`2 nv` adjoints carried backward; the cost does not grow
/// with the number of inputs). Equals [`super::rollout_jacobian`] with
/// `ift`.
pub fn reverse_rollout_jacobian(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    opts: &DiffOptions,
) -> Result<super::RolloutJacobian, DiffError> {
    let nv = world.model.nv;
    let map = InputMap::new(nv, steps, inputs)?;
    let lin = Linearization::new(world, x0, controls, steps, &map.model, false, opts)?;
    let mut lam = DMat::<f64>::identity(2 * nv, 2 * nv);
    let mut jac = DMat::zeros(2 * nv, inputs.len());
    for k in (0..steps).rev() {
        let w = &lam * &lin.jacobians[k];
        for r in 0..2 * nv {
            let row = w.row(r).transpose();
            let mut g = jac.row(r).transpose();
            map.scatter(k, &row, &mut g);
            jac.set_row(r, &g.transpose());
        }
        lam = w.columns(0, 2 * nv).into_owned();
    }
    for r in 0..2 * nv {
        let row = lam.row(r).transpose();
        let mut g = jac.row(r).transpose();
        map.scatter_init(&row, &mut g);
        jac.set_row(r, &g.transpose());
    }
    Ok(super::RolloutJacobian {
        last: lin.states[steps].clone(),
        jacobian: jac,
    })
}

/// The states `x_0 … x_N` of a rollout and their sensitivities
/// `S_k = ∂ξ_k/∂θ` (`2 nv × inputs`, the tangent at `x_k`), by forward
/// chaining of the `ift` step Jacobians (what Gauss–Newton's residual
/// Jacobians at every stage need).
pub fn state_sensitivities(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    opts: &DiffOptions,
) -> Result<(Vec<State<f64>>, Vec<DMat<f64>>), DiffError> {
    let nv = world.model.nv;
    let map = InputMap::new(nv, steps, inputs)?;
    let lin = Linearization::new(world, x0, controls, steps, &map.model, false, opts)?;
    let n = inputs.len();
    let mut s = DMat::zeros(2 * nv, n);
    for (c, kind) in map.kinds.iter().enumerate() {
        if let Kind::Init(r) = *kind {
            s[(r, c)] = 1.0;
        }
    }
    let all: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(steps + 1);
    for k in 0..steps {
        let t = map.local_tangent(k, &s, &all);
        let next = &lin.jacobians[k] * t;
        out.push(std::mem::replace(&mut s, next));
    }
    out.push(s);
    Ok((lin.states, out))
}

/// `x ⊖ nominal` as `(q ⊖ q̄, v)` minus `(0, v̄)`: the local coordinates
/// `ξ` of a state around a nominal one (what DDP's feedback acts on).
pub fn state_difference(world: &World<f64>, nominal: &State<f64>, x: &State<f64>) -> DVec<f64> {
    let nv = world.model.nv;
    let mut t = tangent(&world.model, &nominal.q, x);
    for i in 0..nv {
        t[nv + i] -= nominal.v[i];
    }
    t
}
