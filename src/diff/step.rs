//! One step's Jacobian by each method, and the generic `lift` step.

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use super::{seeded, DiffError, ImplicitStep, Method, Param};
use crate::contact::ipm::Ipm;
use crate::contact::SolverKind;
use crate::dynamics::free::{difference_model, integrate_model};
use crate::dynamics::Model;
use crate::math::{DMat, DVec};
use crate::sim::{step, SimError, State, World};
use crate::Scalar;

/// Width of the dual-number column blocks.
const BLOCK: usize = 8;
type D = DualSVec64<BLOCK>;

/// Options of the derivative methods.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffOptions {
    /// Relaxation ρ at which derivatives are taken (`None`: the world's).
    pub rho: Option<f64>,
    /// Central-difference step. Default 1e-6.
    pub fd_eps: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { rho: None, fd_eps: 1e-6 }
    }
}

/// A step's next state and its Jacobian (`2 nv` rows: tangent of `q⁺`,
/// then `v⁺`; one column per parameter).
#[derive(Clone, Debug)]
pub struct StepJacobian {
    /// The next state (f64).
    pub next: State<f64>,
    /// `∂x⁺/∂θ`.
    pub jacobian: DMat<f64>,
    /// `fd` only: columns where the step map is not smooth within ±ε, so
    /// that the difference quotient is not a derivative: the ±ε
    /// perturbation changed the solver's structure (the contact candidate
    /// set), or the one-sided differences disagree by more than 0.1% of
    /// `max(1, ‖column‖∞)` (a kink — e.g. a contact exactly at a capsule's
    /// segment end — or a curvature scale below ε, as for resting contact
    /// at very small ρ, where the relaxed gap ρ/γ is shorter than ε).
    pub nonsmooth: Vec<usize>,
}

/// `(q ⊖ q_nominal, v)` as one vector of length `2 nv`.
pub(crate) fn tangent<T: Scalar>(model: &Model<T>, nominal_q: &DVec<T>, x: &State<T>) -> DVec<T> {
    let nv = model.nv;
    let dq = difference_model(model, nominal_q, &x.q);
    let mut out = DVec::zeros(2 * nv);
    out.rows_mut(0, nv).copy_from(&dq);
    out.rows_mut(nv, nv).copy_from(&x.v);
    out
}

fn eps_column<const N: usize>(x: &DualSVec64<N>) -> nalgebra::SVector<f64, N> {
    x.eps.unwrap_generic(Const::<N>, U1)
}

fn with_rho(world: &World<f64>, opts: &DiffOptions) -> World<f64> {
    let mut w = world.clone();
    if let Some(rho) = opts.rho {
        w.params.rho = rho;
    }
    w
}

/// Calls `$body` with `$b` bound to the world's backend as an
/// [`ImplicitStep`].
macro_rules! with_backend {
    ($world:expr, |$b:ident| $body:expr) => {
        match $world.solver {
            SolverKind::Ipm => {
                let $b = Ipm { params: $world.ipm };
                $body
            }
        }
    };
}

/// Exact `∂r/∂y` at `y` (f64), by dual-number evaluation of the residual
/// in column blocks.
fn residual_jacobian<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    st: &B::Structure,
    y: &DVec<f64>,
) -> Result<DMat<f64>, DiffError> {
    let n = y.len();
    let wd = world.cast::<D>();
    let sd = state.cast::<D>();
    let ud = u.map(D::from_re);
    let pd = wd.problem(&sd, &ud);
    let mut jy = DMat::zeros(n, n);
    for start in (0..n).step_by(BLOCK) {
        let mut yd = y.map(D::from_re);
        for j in 0..BLOCK.min(n - start) {
            yd[start + j] = D::from_re(y[start + j]).derivative(j);
        }
        let r = b.residual(&pd, st, &yd)?;
        for (i, ri) in r.iter().enumerate() {
            let g = eps_column(ri);
            for j in 0..BLOCK.min(n - start) {
                jy[(i, start + j)] = g[j];
            }
        }
    }
    Ok(jy)
}

fn ift<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
) -> Result<StepJacobian, DiffError> {
    let p = world.problem(state, u);
    let (y, st) = b.solve_root(&p)?;
    let nv = world.model.nv;
    let jy = residual_jacobian(b, world, state, u, &st, &y)?;
    let lu = jy.lu();
    if !lu.is_invertible() {
        return Err(DiffError::Singular);
    }
    let v_next = y.rows(0, nv).into_owned();
    let q_next = integrate_model(&world.model, &state.q, &v_next, world.dt).map_err(SimError::from)?;
    let mut jac = DMat::zeros(2 * nv, params.len());
    let n = y.len();
    for start in (0..params.len()).step_by(BLOCK) {
        let chunk = &params[start..params.len().min(start + BLOCK)];
        let seeds: Vec<D> = (0..chunk.len()).map(|j| D::from_re(0.0).derivative(j)).collect();
        let (wd, sd, ud) = seeded(world, state, u, chunk, &seeds)?;
        let pd = wd.problem(&sd, &ud);
        // ∂r/∂θ for this block
        let r = b.residual(&pd, &st, &y.map(D::from_re))?;
        let mut jth = DMat::zeros(n, chunk.len());
        for (i, ri) in r.iter().enumerate() {
            let g = eps_column(ri);
            for j in 0..chunk.len() {
                jth[(i, j)] = g[j];
            }
        }
        let dy = -lu.solve(&jth).ok_or(DiffError::Singular)?;
        // y(θ) to first order, then the output map in the same dual scalar.
        let mut yd = y.map(D::from_re);
        for i in 0..n {
            let mut e = nalgebra::SVector::<f64, BLOCK>::zeros();
            for j in 0..chunk.len() {
                e[j] = dy[(i, j)];
            }
            yd[i].eps = num_dual::Derivative::some(e);
        }
        let vd = yd.rows(0, nv).into_owned();
        let qd = integrate_model(&wd.model, &sd.q, &vd, wd.dt).map_err(SimError::from)?;
        let t = tangent(&wd.model, &q_next.map(D::from_re), &State { q: qd, v: vd });
        for (i, ti) in t.iter().enumerate() {
            let g = eps_column(ti);
            for j in 0..chunk.len() {
                jac[(i, start + j)] = g[j];
            }
        }
    }
    Ok(StepJacobian { next: State { q: q_next, v: v_next }, jacobian: jac, nonsmooth: Vec::new() })
}

/// Solves `J x = r` in the scalar `T` with the f64 LU factors of `J`
/// (exact for dual parts: they enter linearly).
fn solve_lifted<T: Scalar>(lu: &nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>, r: &DVec<T>) -> DVec<T> {
    let mut x = r.clone();
    lu.p().permute_rows(&mut x);
    let l = lu.l().map(T::from_re);
    let uu = lu.u().map(T::from_re);
    l.solve_lower_triangular_unchecked_mut(&mut x);
    uu.solve_upper_triangular_unchecked_mut(&mut x);
    x
}

/// One step in any scalar `T` by the `lift` method: the primal problem is
/// solved in f64, then `order` Newton steps of the residual are taken in
/// `T` with the f64 factorization of `∂r/∂y`. For a dual scalar of
/// derivative order `k`, `order = k` makes every derivative part exact (the
/// chord iteration's error is multiplied by the nilpotent ε at each step).
/// The primal part is the f64 solution.
pub fn lift_step<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    with_backend!(world, |b| lift_step_with(&b, world, state, u, order))
}

fn lift_step_with<B: ImplicitStep, T: Scalar>(
    b: &B,
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    let w0 = world.cast::<f64>();
    let s0 = state.cast::<f64>();
    let u0 = u.map(|x| x.re());
    let (y, st) = b.solve_root(&w0.problem(&s0, &u0))?;
    let jy = residual_jacobian(b, &w0, &s0, &u0, &st, &y)?;
    let lu = jy.lu();
    if !lu.is_invertible() {
        return Err(DiffError::Singular);
    }
    let p = world.problem(state, u);
    let mut yt = y.map(T::from_re);
    for _ in 0..order {
        let r = b.residual(&p, &st, &yt)?;
        yt -= solve_lifted(&lu, &r);
    }
    let nv = world.model.nv;
    let v = yt.rows(0, nv).into_owned();
    let q = integrate_model(&world.model, &state.q, &v, world.dt).map_err(SimError::from)?;
    Ok(State { q, v })
}

fn unrolled(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    lift: bool,
) -> Result<StepJacobian, DiffError> {
    let nominal = step(world, state, u)?.state;
    let nv = world.model.nv;
    let mut jac = DMat::zeros(2 * nv, params.len());
    for start in (0..params.len()).step_by(BLOCK) {
        let chunk = &params[start..params.len().min(start + BLOCK)];
        let seeds: Vec<D> = (0..chunk.len()).map(|j| D::from_re(0.0).derivative(j)).collect();
        let (wd, sd, ud) = seeded(world, state, u, chunk, &seeds)?;
        let next = if lift { lift_step(&wd, &sd, &ud, 1)? } else { step(&wd, &sd, &ud)?.state };
        let t = tangent(&wd.model, &nominal.q.map(D::from_re), &next);
        for (i, ti) in t.iter().enumerate() {
            let g = eps_column(ti);
            for j in 0..chunk.len() {
                jac[(i, start + j)] = g[j];
            }
        }
    }
    Ok(StepJacobian { next: nominal, jacobian: jac, nonsmooth: Vec::new() })
}

fn fd<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    eps: f64,
) -> Result<StepJacobian, DiffError> {
    let nv = world.model.nv;
    let solve = |w: &World<f64>, s: &State<f64>, uu: &DVec<f64>| -> Result<(State<f64>, B::Structure), DiffError> {
        let (y, st) = b.solve_root(&w.problem(s, uu))?;
        let v = y.rows(0, nv).into_owned();
        let q = integrate_model(&w.model, &s.q, &v, w.dt).map_err(SimError::from)?;
        Ok((State { q, v }, st))
    };
    let (nominal, st0) = solve(world, state, u)?;
    let zero = tangent(&world.model, &nominal.q, &nominal);
    let mut jac = DMat::zeros(2 * nv, params.len());
    let mut changed = Vec::new();
    for (c, p) in params.iter().enumerate() {
        let run = |d: f64| -> Result<(DVec<f64>, B::Structure), DiffError> {
            let (w, s, uu) = seeded(world, state, u, &[*p], &[d])?;
            let (next, st) = solve(&w, &s, &uu)?;
            Ok((tangent(&w.model, &nominal.q, &next), st))
        };
        let (plus, sp) = run(eps)?;
        let (minus, sm) = run(-eps)?;
        let central = (&plus - &minus) / (2.0 * eps);
        let forward = (&plus - &zero) / eps;
        let backward = (&zero - &minus) / eps;
        let kink = (&forward - &backward).amax() > 1e-3 * central.amax().max(1.0);
        if kink || !B::same_structure(&sp, &st0) || !B::same_structure(&sm, &st0) {
            changed.push(c);
        }
        jac.set_column(c, &central);
    }
    Ok(StepJacobian { next: nominal, jacobian: jac, nonsmooth: changed })
}

/// The Jacobian of one step with respect to `params` by `method`.
///
/// ```
/// use dualsim::prelude::*;
/// use dualsim::diff::{step_jacobian, DiffOptions, Method, Param};
/// let mut w = World::<f64>::new(0.1);
/// w.add_body("b", 2.0, Mat3::identity(), None, Material::default()).unwrap();
/// let x = State::at_rest(&w.model, &[[0.0, 0.0, 1.0]]);
/// let u = w.zero_control();
/// let j = step_jacobian(&w, &x, &u, &[Param::U(0)], Method::Ift, &DiffOptions::default()).unwrap();
/// // v⁺ = v + h (g + u/m): ∂vₓ⁺/∂uₓ = h/m
/// assert!((j.jacobian[(6, 0)] - 0.05).abs() < 1e-14);
/// ```
pub fn step_jacobian(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    method: Method,
    opts: &DiffOptions,
) -> Result<StepJacobian, DiffError> {
    let w = with_rho(world, opts);
    match method {
        Method::Ift => with_backend!(w, |b| ift(&b, &w, state, u, params)),
        Method::Lift => unrolled(&w, state, u, params, true),
        Method::Unrolled => unrolled(&w, state, u, params, false),
        Method::Fd => with_backend!(w, |b| fd(&b, &w, state, u, params, opts.fd_eps)),
    }
}
