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

/// The local inputs of every step: `Q(0..nv)`, `V(0..nv)`, the model
/// parameters, `U(0..nv)`.
fn locals(nv: usize, model: &[Param]) -> Vec<Param> {
    (0..nv)
        .map(Param::Q)
        .chain((0..nv).map(Param::V))
        .chain(model.iter().copied())
        .chain((0..nv).map(Param::U))
        .collect()
}

/// The contracted second derivative of one step: `λᵀ ∂²Φ/∂z²` (`m × m`)
/// or its product with a direction.
trait SecondOrder {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError>;
    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError>;
    /// `∂²Φ_i/∂z²` for every output `i` (`2 nv` matrices `m × m`): the
    /// same hyper-dual evaluations as one contraction, kept so that any
    /// `λ` contracts them by a weighted sum (DDP's repeated backward
    /// passes).
    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError>;
}

/// Gradients and Hessians of a vector function `g` of `m` seeds (`outs`
/// entries), by 8 × 8 hyper-dual blocks (`⌈m/8⌉(⌈m/8⌉+1)/2`
/// evaluations).
#[allow(clippy::type_complexity)]
fn blocks_second(
    m: usize,
    outs: usize,
    mut g: impl FnMut(&[H]) -> Result<Vec<H>, DiffError>,
) -> Result<(Vec<DVec<f64>>, Vec<DMat<f64>>), DiffError> {
    let nb = m.div_ceil(B);
    let mut grads = vec![DVec::zeros(m); outs];
    let mut hess = vec![DMat::zeros(m, m); outs];
    for bi in 0..nb {
        for bj in bi..nb {
            let seeds: Vec<H> = (0..m)
                .map(|k| {
                    let mut d = H::from_re(0.0);
                    if k / B == bi {
                        d = d.derivative1(k % B);
                    }
                    if k / B == bj {
                        d = d.derivative2(k % B);
                    }
                    d
                })
                .collect();
            let v = g(&seeds)?;
            for ((gi, hi), vi) in grads.iter_mut().zip(hess.iter_mut()).zip(&v) {
                if bi == bj {
                    let gb = vi.eps1.unwrap_generic(Const::<B>, U1);
                    for a in 0..B.min(m - bi * B) {
                        gi[bi * B + a] = gb[a];
                    }
                }
                let hb = vi.eps1eps2.unwrap_generic(Const::<B>, Const::<B>);
                for a in 0..B.min(m - bi * B) {
                    for c in 0..B.min(m - bj * B) {
                        hi[(bi * B + a, bj * B + c)] = hb[(a, c)];
                        hi[(bj * B + c, bi * B + a)] = hb[(a, c)];
                    }
                }
            }
        }
    }
    Ok((grads, hess))
}

/// `∂²gᵢ/∂z²` of a vector function `g` of `m` seeds (`outs` entries).
fn blocks_tensor(
    m: usize,
    outs: usize,
    g: impl FnMut(&[H]) -> Result<Vec<H>, DiffError>,
) -> Result<Vec<DMat<f64>>, DiffError> {
    Ok(blocks_second(m, outs, g)?.1)
}

/// Gradient and Hessian of a scalar function `g` of `m` seeds.
fn blocks_hessian(
    m: usize,
    mut g: impl FnMut(&[H]) -> Result<H, DiffError>,
) -> Result<(DVec<f64>, DMat<f64>), DiffError> {
    let (mut gs, mut hs) = blocks_second(m, 1, |s| Ok(vec![g(s)?]))?;
    Ok((gs.remove(0), hs.remove(0)))
}

/// `(∂²g/∂z²) dir` of a scalar function of `m` seeds: one
/// `HyperDualSVec64<8, 1>` evaluation per 8 seeds (`ε₂` along `dir`).
fn blocks_hvp(
    m: usize,
    dir: &DVec<f64>,
    mut g: impl FnMut(&[H1]) -> Result<H1, DiffError>,
) -> Result<DVec<f64>, DiffError> {
    let mut out = DVec::zeros(m);
    for bi in 0..m.div_ceil(B) {
        let seeds: Vec<H1> = (0..m)
            .map(|k| {
                let mut d = H1::from_re(0.0).derivative2(0) * H1::from_re(dir[k]);
                if k / B == bi {
                    d += H1::from_re(0.0).derivative1(k % B);
                }
                d
            })
            .collect();
        let v = g(&seeds)?;
        let hb = v.eps1eps2.unwrap_generic(Const::<B>, U1);
        for a in 0..B.min(m - bi * B) {
            out[bi * B + a] = hb[a];
        }
    }
    Ok(out)
}

/// A step that is the root of one residual: what the second-order
/// contraction needs from the f64 solve.
struct RootStep<Bk: ImplicitStep> {
    b: Bk,
    world: Arc<World<f64>>,
    state: State<f64>,
    u: DVec<f64>,
    next: State<f64>,
    locals: Arc<Vec<Param>>,
    y: DVec<f64>,
    st: Bk::Structure,
    jy: DMat<f64>,
    lu: LiftedLu,
    /// `Y = dy/dz` (`n × m`).
    dy: DMat<f64>,
    /// `∂O/∂v⁺` (`2 nv × nv`).
    out_v: DMat<f64>,
}

impl<Bk: ImplicitStep> RootStep<Bk> {
    /// `μ = (∂r/∂y)⁻ᵀ (∂O/∂y)ᵀ λ` (refined for ill-conditioned backends).
    fn mu(&self, lambda: &DVec<f64>) -> DVec<f64> {
        let nv = self.world.model.nv;
        let mut b = DVec::zeros(self.y.len());
        b.rows_mut(0, nv)
            .copy_from(&(self.out_v.transpose() * lambda));
        let mut mu = self.lu.solve_t(&b);
        for _ in 0..Bk::REFINE {
            let res = self.jy.transpose() * &mu - &b;
            mu -= self.lu.solve_t(&res);
        }
        mu
    }

    /// The residual `r` and the output `O` at `(z̄ + s, y* + Y s)` in the
    /// seed scalar.
    #[allow(clippy::type_complexity)]
    fn parts<T: Scalar>(&self, seeds: &[T]) -> Result<(DVec<T>, DVec<T>), DiffError> {
        let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, seeds)?;
        let n = self.y.len();
        let mut yt: DVec<T> = self.y.map(T::from_re);
        for (j, s) in seeds.iter().enumerate() {
            for i in 0..n {
                let c = self.dy[(i, j)];
                if c != 0.0 {
                    yt[i] += *s * T::from_re(c);
                }
            }
        }
        let p = wt.problem(&xt, &ut);
        let r = self.b.residual(&p, &self.st, &yt)?;
        let nv = self.world.model.nv;
        let v = yt.rows(0, nv).into_owned();
        let q = integrate_model(&wt.model, &xt.q, &v, wt.dt).map_err(SimError::from)?;
        let o = tangent(&wt.model, &self.next.q.map(T::from_re), &State { q, v });
        Ok((r, o))
    }

    /// `G(z̄ + s, y* + Y s) = λᵀ O − μᵀ r` in the seed scalar.
    fn lagrangian<T: Scalar>(
        &self,
        lambda: &DVec<f64>,
        mu: &DVec<f64>,
        seeds: &[T],
    ) -> Result<T, DiffError> {
        let (r, o) = self.parts(seeds)?;
        Ok(contract(&r, &o, lambda, mu))
    }
}

/// `λᵀ o − μᵀ r`, skipping zero multipliers.
fn contract<T: Scalar>(r: &DVec<T>, o: &DVec<T>, lambda: &DVec<f64>, mu: &DVec<f64>) -> T {
    let mut g = T::zero();
    for (oi, li) in o.iter().zip(lambda.iter()) {
        if *li != 0.0 {
            g += *oi * T::from_re(*li);
        }
    }
    for (ri, mi) in r.iter().zip(mu.iter()) {
        if *mi != 0.0 {
            g -= *ri * T::from_re(*mi);
        }
    }
    g
}

impl<Bk: ImplicitStep> SecondOrder for RootStep<Bk> {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        let mu = self.mu(lambda);
        Ok(blocks_hessian(self.locals.len(), |s| self.lagrangian(lambda, &mu, s))?.1)
    }

    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError> {
        let mu = self.mu(lambda);
        blocks_hvp(self.locals.len(), dir, |s| self.lagrangian(lambda, &mu, s))
    }

    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError> {
        let outs = 2 * self.world.model.nv;
        let units: Vec<DVec<f64>> = (0..outs)
            .map(|i| DVec::from_fn(outs, |j, _| if i == j { 1.0 } else { 0.0 }))
            .collect();
        let mus: Vec<DVec<f64>> = units.iter().map(|e| self.mu(e)).collect();
        blocks_tensor(self.locals.len(), outs, |s| {
            let (r, o) = self.parts(s)?;
            Ok(units
                .iter()
                .zip(&mus)
                .map(|(e, mu)| contract(&r, &o, e, mu))
                .collect())
        })
    }
}

/// A step that splits at an impact (ccd): the split step itself in the
/// seed scalar, contracted with `λ`.
struct SplitStep {
    world: Arc<World<f64>>,
    state: State<f64>,
    u: DVec<f64>,
    next: State<f64>,
    locals: Arc<Vec<Param>>,
}

impl SplitStep {
    fn contracted<T: Scalar>(&self, lambda: &DVec<f64>, seeds: &[T]) -> Result<T, DiffError> {
        let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, seeds)?;
        let next = crate::sim::step(&wt, &xt, &ut)?.state;
        let o = tangent(&wt.model, &self.next.q.map(T::from_re), &next);
        let mut g = T::zero();
        for (oi, li) in o.iter().zip(lambda.iter()) {
            g += *oi * T::from_re(*li);
        }
        Ok(g)
    }
}

impl SecondOrder for SplitStep {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        Ok(blocks_hessian(self.locals.len(), |s| self.contracted(lambda, s))?.1)
    }

    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError> {
        blocks_hvp(self.locals.len(), dir, |s| self.contracted(lambda, s))
    }

    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError> {
        blocks_tensor(self.locals.len(), 2 * self.world.model.nv, |s| {
            let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, s)?;
            let next = crate::sim::step(&wt, &xt, &ut)?.state;
            Ok(tangent(&wt.model, &self.next.q.map(H::from_re), &next)
                .iter()
                .copied()
                .collect())
        })
    }
}

/// A rollout linearized along its nominal trajectory: per step the
/// states, the step Jacobian with respect to the local inputs and
/// (with second order) the contracted second derivative.
pub struct Linearization {
    world: Arc<World<f64>>,
    locals: Arc<Vec<Param>>,
    /// The model parameters among the local inputs.
    model: Vec<Param>,
    /// `x_0 … x_N`.
    pub states: Vec<State<f64>>,
    /// The controls `u_0 … u_{N-1}`.
    pub controls: Vec<DVec<f64>>,
    /// `J_k = ∂ξ_{k+1}/∂(ξ_k, p, u_k)` (`2 nv × (3 nv + n_p)`).
    pub jacobians: Vec<DMat<f64>>,
    second: Vec<Box<dyn SecondOrder>>,
}

impl std::fmt::Debug for Linearization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linearization")
            .field("steps", &self.jacobians.len())
            .field("locals", &self.locals.len())
            .finish()
    }
}

/// Builds one step's linearization (generic over the backend).
#[allow(clippy::too_many_arguments)]
fn step_lin<Bk: ImplicitStep + 'static>(
    b: &Bk,
    world: &Arc<World<f64>>,
    locals: &Arc<Vec<Param>>,
    x: &State<f64>,
    u: &DVec<f64>,
    second: bool,
    opts: &DiffOptions,
    ws: &mut Bk::Workspace<f64>,
) -> Result<(State<f64>, DMat<f64>, Option<Box<dyn SecondOrder>>), DiffError> {
    crate::sim::check_inputs(world, x, u)?;
    let p = world.problem(x, u);
    if b.splits(&p)? {
        let sj = step_jacobian(world, x, u, locals, Method::Ift, opts)?;
        let so: Option<Box<dyn SecondOrder>> = second.then(|| {
            Box::new(SplitStep {
                world: world.clone(),
                state: x.clone(),
                u: u.clone(),
                next: sj.next.clone(),
                locals: locals.clone(),
            }) as Box<dyn SecondOrder>
        });
        return Ok((sj.next, sj.jacobian, so));
    }
    if !second {
        let sj = ift(b, world, x, u, locals, opts.partials, Some(ws))?;
        return Ok((sj.next, sj.jacobian, None));
    }
    let (y, st) = b.solve_root_with(&p, ws)?;
    let nv = world.model.nv;
    let jy = dense_jacobian(b, &p, &st, &y)?;
    let lu = if Bk::REDUNDANT {
        LiftedLu::pseudo(&jy, nv)?
    } else {
        LiftedLu::new(&jy).ok_or(DiffError::Singular("residual Jacobian"))?
    };
    let rz = param_partials(b, &p, world, x, u, &st, &y, locals, opts.partials)?;
    let mut dy = DMat::zeros(y.len(), locals.len());
    for c in 0..locals.len() {
        let rhs = rz.column(c).into_owned();
        let mut col = -lu.solve(&rhs);
        for _ in 0..Bk::REFINE {
            let res = &jy * &col + &rhs;
            col -= lu.solve(&res);
        }
        dy.set_column(c, &col);
    }
    let first = ift_output(world, x, locals, &y, &dy)?;
    let vparams: Vec<Param> = (0..nv).map(Param::V).collect();
    let mut ev = DMat::zeros(y.len(), nv);
    for i in 0..nv {
        ev[(i, i)] = 1.0;
    }
    let out_v = ift_output(world, x, &vparams, &y, &ev)?.jacobian;
    let so = RootStep {
        b: b.clone(),
        world: world.clone(),
        state: x.clone(),
        u: u.clone(),
        next: first.next.clone(),
        locals: locals.clone(),
        y,
        st,
        jy,
        lu,
        dy,
        out_v,
    };
    Ok((first.next, first.jacobian, Some(Box::new(so))))
}

impl Linearization {
    /// Runs the rollout from `x0` for `steps` steps and linearizes every
    /// step with respect to `(ξ, model, u)`; with `second`, also prepares
    /// each step's contracted second derivative (one dense
    /// factorization of `∂r/∂y` per step).
    pub fn new(
        world: &World<f64>,
        x0: &State<f64>,
        controls: &Controls<f64>,
        steps: usize,
        model: &[Param],
        second: bool,
        opts: &DiffOptions,
    ) -> Result<Self, DiffError> {
        super::complementarity::check(world, Method::Ift, opts)?;
        if opts.gradient != Gradient::Exact {
            return Err(DiffError::Unsupported {
                option: "--gradient complementarity_aware",
                backend: world.solver.name(),
                method: "adjoint",
                why: "the complementarity-aware gradient is a forward quantity; use --method ift",
            });
        }
        for p in model {
            if matches!(p, Param::Q(_) | Param::V(_) | Param::U(_)) {
                return Err(DiffError::BadParam(format!(
                    "{p:?} is not a model parameter"
                )));
            }
        }
        let mut w = world.clone();
        if let Some(rho) = opts.rho {
            w.params.rho = rho;
        }
        let world = Arc::new(w);
        let nv = world.model.nv;
        let locals = Arc::new(locals(nv, model));
        let mut states = vec![x0.clone()];
        let mut us = Vec::with_capacity(steps);
        let mut jacobians = Vec::with_capacity(steps);
        let mut seconds = Vec::new();
        let mut ws = crate::contact::Workspace::default();
        for k in 0..steps {
            let u = controls.at(k).clone();
            let x = states[k].clone();
            let (next, jac, so) = crate::contact::with_backend_workspace!(
                world.solver,
                world.backends,
                &mut ws,
                |b, w| step_lin(&b, &world, &locals, &x, &u, second, opts, w)
            )
            .map_err(|e| DiffError::AtStep {
                step: k,
                source: Box::new(e),
            })?;
            states.push(next);
            us.push(u);
            jacobians.push(jac);
            if let Some(so) = so {
                seconds.push(so);
            }
        }
        Ok(Linearization {
            world,
            locals,
            model: model.to_vec(),
            states,
            controls: us,
            jacobians,
            second: seconds,
        })
    }

    /// The number of steps.
    pub fn steps(&self) -> usize {
        self.jacobians.len()
    }

    /// The world (with the derivative's ρ).
    pub fn world(&self) -> &World<f64> {
        &self.world
    }

    /// The number of local inputs per step, `m = 3 nv + n_p`.
    pub fn locals(&self) -> usize {
        self.locals.len()
    }

    /// `λᵀ ∂²Φ_k/∂z²` (`m × m`), `λ` an adjoint on `ξ_{k+1}`.
    pub fn step_hessian(&self, k: usize, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        self.second_at(k)?.hessian(lambda).map_err(|e| at(k, e))
    }

    /// `∂²Φ_{k,i}/∂z²` for every output `i` of step `k` (`2 nv`
    /// matrices `m × m`; `Σᵢ λᵢ` of them is [`Self::step_hessian`]).
    pub fn step_tensor(&self, k: usize) -> Result<Vec<DMat<f64>>, DiffError> {
        self.second_at(k)?.tensor().map_err(|e| at(k, e))
    }

    /// `(λᵀ ∂²Φ_k/∂z²) dir` (`m`).
    pub fn step_hvp(
        &self,
        k: usize,
        lambda: &DVec<f64>,
        dir: &DVec<f64>,
    ) -> Result<DVec<f64>, DiffError> {
        self.second_at(k)?.hvp(lambda, dir).map_err(|e| at(k, e))
    }

    fn second_at(&self, k: usize) -> Result<&dyn SecondOrder, DiffError> {
        self.second
            .get(k)
            .map(|b| b.as_ref())
            .ok_or(DiffError::BadParam(format!(
                "step {k} was linearized without second order"
            )))
    }

    /// The seeds of stage `k`'s cost: `Q(0..nv)`, `V(0..nv)` and, for
    /// `k < N`, `U(0..nv)`.
    fn stage_params(&self, k: usize) -> Vec<Param> {
        let nv = self.world.model.nv;
        let mut p: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
        if k < self.steps() {
            p.extend((0..nv).map(Param::U));
        }
        p
    }

    fn stage_eval<C: StageCost, T: Scalar>(
        &self,
        cost: &C,
        k: usize,
        seeds: &[T],
    ) -> Result<T, DiffError> {
        let nv = self.world.model.nv;
        let u = self
            .controls
            .get(k)
            .cloned()
            .unwrap_or_else(|| DVec::zeros(nv));
        let (wt, xt, ut) = seeded(
            &self.world,
            &self.states[k],
            &u,
            &self.stage_params(k),
            seeds,
        )?;
        let uu = (k < self.steps()).then_some(&ut);
        Ok(cost.eval(k, &wt, &xt, uu))
    }

    /// Value of stage `k`'s cost.
    fn stage_value<C: StageCost>(&self, cost: &C, k: usize) -> Result<f64, DiffError> {
        if !cost.active(k) {
            return Ok(0.0);
        }
        let zeros = vec![0.0; self.stage_params(k).len()];
        self.stage_eval(cost, k, &zeros)
    }

    /// Gradient of stage `k`'s cost with respect to `(ξ_k, u_k)`.
    pub fn stage_gradient<C: StageCost>(&self, cost: &C, k: usize) -> Result<DVec<f64>, DiffError> {
        let m = self.stage_params(k).len();
        let mut g = DVec::zeros(m);
        if !cost.active(k) {
            return Ok(g);
        }
        for start in (0..m).step_by(B) {
            let seeds: Vec<D> = (0..m)
                .map(|j| {
                    if (start..start + B).contains(&j) {
                        D::from_re(0.0).derivative(j - start)
                    } else {
                        D::from_re(0.0)
                    }
                })
                .collect();
            let v = self.stage_eval(cost, k, &seeds)?;
            let e = v.eps.unwrap_generic(Const::<B>, U1);
            for j in start..m.min(start + B) {
                g[j] = e[j - start];
            }
        }
        Ok(g)
    }

    /// Gradient and Hessian of stage `k`'s cost with respect to
    /// `(ξ_k, u_k)`.
    pub fn stage_hessian<C: StageCost>(
        &self,
        cost: &C,
        k: usize,
    ) -> Result<(DVec<f64>, DMat<f64>), DiffError> {
        let m = self.stage_params(k).len();
        if !cost.active(k) {
            return Ok((DVec::zeros(m), DMat::zeros(m, m)));
        }
        blocks_hessian(m, |s| self.stage_eval(cost, k, s))
    }

    /// `∇²c_k dir`.
    fn stage_hvp<C: StageCost>(
        &self,
        cost: &C,
        k: usize,
        dir: &DVec<f64>,
    ) -> Result<DVec<f64>, DiffError> {
        let m = self.stage_params(k).len();
        if !cost.active(k) {
            return Ok(DVec::zeros(m));
        }
        blocks_hvp(m, dir, |s| self.stage_eval(cost, k, s))
    }

    /// The total cost `Σ_k c_k`.
    pub fn cost<C: StageCost>(&self, cost: &C) -> Result<f64, DiffError> {
        let mut c = 0.0;
        for k in 0..=self.steps() {
            c += self.stage_value(cost, k)?;
        }
        Ok(c)
    }

    /// The adjoints `λ_0 … λ_N` (`λ_k = ∂f/∂ξ_k`) and the local gradients
    /// `w_k = ∂f/∂z_k` of every step (`m` each).
    pub fn adjoints<C: StageCost>(
        &self,
        cost: &C,
    ) -> Result<(Vec<DVec<f64>>, Vec<DVec<f64>>), DiffError> {
        let nv = self.world.model.nv;
        let n = self.steps();
        let m = self.locals();
        let np = self.model.len();
        let mut lambdas = vec![DVec::zeros(2 * nv); n + 1];
        let mut ws = vec![DVec::zeros(m); n];
        lambdas[n] = self.stage_gradient(cost, n)?;
        for k in (0..n).rev() {
            let mut w = self.jacobians[k].transpose() * &lambdas[k + 1];
            if cost.active(k) {
                let g = self.stage_gradient(cost, k)?;
                for i in 0..2 * nv {
                    w[i] += g[i];
                }
                for i in 0..nv {
                    w[2 * nv + np + i] += g[2 * nv + i];
                }
            }
            lambdas[k] = w.rows(0, 2 * nv).into_owned();
            ws[k] = w;
        }
        Ok((lambdas, ws))
    }
}

fn at(k: usize, e: DiffError) -> DiffError {
    DiffError::AtStep {
        step: k,
        source: Box::new(e),
    }
}

/// Where each decision variable enters: the initial tangent, a model
/// parameter slot, or a step's control.
#[derive(Clone, Debug)]
struct InputMap {
    nv: usize,
    model: Vec<Param>,
    /// Per input: `Init(row of ξ_0)`, `Model(slot)`, `Control(step, i)`.
    kinds: Vec<Kind>,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Init(usize),
    Model(usize),
    Control(usize, usize),
}

impl InputMap {
    fn new(nv: usize, steps: usize, inputs: &[Input]) -> Result<Self, DiffError> {
        let mut model: Vec<Param> = Vec::new();
        let mut kinds = Vec::with_capacity(inputs.len());
        for inp in inputs {
            kinds.push(match *inp {
                Input::Config(i) if i < nv => Kind::Init(i),
                Input::Velocity(i) if i < nv => Kind::Init(nv + i),
                Input::Model(p @ (Param::Q(_) | Param::V(_) | Param::U(_))) => {
                    return Err(DiffError::BadParam(format!(
                        "{p:?} is not a model parameter"
                    )));
                }
                Input::Model(p) => {
                    let slot = model.iter().position(|q| *q == p).unwrap_or_else(|| {
                        model.push(p);
                        model.len() - 1
                    });
                    Kind::Model(slot)
                }
                Input::Control { step, index } if step < steps && index < nv => {
                    Kind::Control(step, index)
                }
                _ => {
                    return Err(DiffError::BadParam(format!(
                        "{inp:?} is outside the rollout"
                    )));
                }
            });
        }
        Ok(InputMap { nv, model, kinds })
    }

    /// `T_k = ∂z_k/∂θ` restricted to `cols` (`m × cols.len()`), from the
    /// state sensitivity `s` (`2 nv × n`).
    fn local_tangent(&self, k: usize, s: &DMat<f64>, cols: &[usize]) -> DMat<f64> {
        let nv = self.nv;
        let np = self.model.len();
        let mut t = DMat::zeros(3 * nv + np, cols.len());
        for (j, &c) in cols.iter().enumerate() {
            t.view_mut((0, j), (2 * nv, 1)).copy_from(&s.column(c));
            match self.kinds[c] {
                Kind::Model(slot) => t[(2 * nv + slot, j)] = 1.0,
                Kind::Control(step, i) if step == k => t[(2 * nv + np + i, j)] = 1.0,
                _ => {}
            }
        }
        t
    }

    /// The columns that can be nonzero in `T_k`: every input but the
    /// controls of later steps.
    fn live(&self, k: usize) -> Vec<usize> {
        (0..self.kinds.len())
            .filter(|&c| !matches!(self.kinds[c], Kind::Control(step, _) if step > k))
            .collect()
    }

    /// The local direction `ż_k` of the input direction `v`, given `ṡ_k`.
    fn local_dir(&self, k: usize, sdot: &DVec<f64>, v: &DVec<f64>) -> DVec<f64> {
        let nv = self.nv;
        let np = self.model.len();
        let mut z = DVec::zeros(3 * nv + np);
        z.rows_mut(0, 2 * nv).copy_from(sdot);
        for (c, kind) in self.kinds.iter().enumerate() {
            match *kind {
                Kind::Model(slot) => z[2 * nv + slot] += v[c],
                Kind::Control(step, i) if step == k => z[2 * nv + np + i] += v[c],
                _ => {}
            }
        }
        z
    }

    /// Scatters a step's local gradient `w_k` (controls and model parts)
    /// into `g`.
    fn scatter(&self, k: usize, w: &DVec<f64>, g: &mut DVec<f64>) {
        let nv = self.nv;
        let np = self.model.len();
        for (c, kind) in self.kinds.iter().enumerate() {
            match *kind {
                Kind::Model(slot) => g[c] += w[2 * nv + slot],
                Kind::Control(step, i) if step == k => g[c] += w[2 * nv + np + i],
                _ => {}
            }
        }
    }

    fn scatter_init(&self, lambda0: &DVec<f64>, g: &mut DVec<f64>) {
        for (c, kind) in self.kinds.iter().enumerate() {
            if let Kind::Init(r) = *kind {
                g[c] += lambda0[r];
            }
        }
    }
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
