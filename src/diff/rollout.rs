//! Derivatives of whole rollouts.
//!
//! A rollout maps inputs θ — entries of the initial state, model
//! parameters, and the control of each step — to the final state `x_N`.
//! Outputs are in the tangent space of the nominal final state (`2 nv`
//! rows, see the module docs of [`crate::diff`]).
//!
//! * `Ift` chains the step Jacobians: `S₀ = ∂x₀/∂θ`,
//!   `S_{k+1} = A_k S_k + B_k` with `A_k = ∂x_{k+1}/∂x_k` and `B_k` the
//!   direct dependence of step `k` on θ (model parameters, step `k`'s
//!   control);
//! * `Lift` runs [`lift_step`] in `DualSVec64<8>` column
//!   blocks, `Unrolled` the plain rollout in the same scalar;
//! * `Fd` perturbs each input and reruns the rollout.

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use super::step::tangent;
use super::{DiffError, DiffOptions, Method, Param, lift_step, seeded, step_jacobian_with};
use crate::Scalar;
use crate::math::{DMat, DVec};
use crate::sim::{Controls, State, World, rollout as run, step};

/// An input of a rollout derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// Entry `i` of the initial velocity.
    Velocity(usize),
    /// Tangent direction `i` of the initial configuration (`q₀ ⊕ δ eᵢ`).
    Config(usize),
    /// A model parameter (mass, inertia, friction, shape size, gravity, dt);
    /// `Param::Q`/`V`/`U` are not allowed here.
    Model(Param),
    /// Entry `i` of the control of step `k`.
    Control {
        /// Step.
        step: usize,
        /// Generalized-force entry.
        index: usize,
    },
}

/// The final state of a rollout and its Jacobian (`2 nv` rows).
#[derive(Clone, Debug)]
pub struct RolloutJacobian {
    /// The final state (f64).
    pub last: State<f64>,
    /// `∂x_N/∂θ`.
    pub jacobian: DMat<f64>,
}

const BLOCK: usize = 8;
type D = DualSVec64<BLOCK>;

/// World and initial state in `T` with `deltas` added to the non-control
/// inputs, and the controls of every step with `deltas` added to the
/// control inputs.
pub fn seeded_rollout<T: Scalar>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    deltas: &[T],
) -> Result<(World<T>, State<T>, Controls<T>), DiffError> {
    let mut params = Vec::new();
    let mut pd = Vec::new();
    for (inp, d) in inputs.iter().zip(deltas) {
        match *inp {
            Input::Velocity(i) => params.push(Param::V(i)),
            Input::Config(i) => params.push(Param::Q(i)),
            Input::Model(p @ (Param::Q(_) | Param::V(_) | Param::U(_))) => {
                return Err(DiffError::BadParam(format!(
                    "{p:?} is not a model parameter"
                )));
            }
            Input::Model(p) => params.push(p),
            Input::Control { .. } => continue,
        }
        pd.push(*d);
    }
    let (w, x, _) = seeded(world, x0, &world.zero_control(), &params, &pd)?;
    let mut us: Vec<DVec<T>> = (0..steps).map(|k| controls.at(k).map(T::from_re)).collect();
    for (inp, d) in inputs.iter().zip(deltas) {
        if let Input::Control { step: k, index } = *inp {
            if k >= steps || index >= world.model.nv {
                return Err(DiffError::BadParam(format!(
                    "{inp:?} is outside the rollout"
                )));
            }
            us[k][index] += *d;
        }
    }
    Ok((w, x, Controls::PerStep(us)))
}

fn dual_rollout(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    lift: bool,
) -> Result<RolloutJacobian, DiffError> {
    let last = run(world, x0, controls, steps)?.last().clone();
    let nv = world.model.nv;
    let mut jac = DMat::zeros(2 * nv, inputs.len());
    for start in (0..inputs.len()).step_by(BLOCK) {
        let chunk = &inputs[start..inputs.len().min(start + BLOCK)];
        let seeds: Vec<D> = (0..chunk.len())
            .map(|j| D::from_re(0.0).derivative(j))
            .collect();
        let (w, mut x, us) = seeded_rollout(world, x0, controls, steps, chunk, &seeds)?;
        for k in 0..steps {
            x = if lift {
                lift_step(&w, &x, us.at(k), 1)?
            } else {
                step(&w, &x, us.at(k))?.state
            };
        }
        let t = tangent(&w.model, &last.q.map(D::from_re), &x);
        for (i, ti) in t.iter().enumerate() {
            let g = ti.eps.unwrap_generic(Const::<BLOCK>, U1);
            for j in 0..chunk.len() {
                jac[(i, start + j)] = g[j];
            }
        }
    }
    Ok(RolloutJacobian {
        last,
        jacobian: jac,
    })
}

fn fd_rollout(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    eps: f64,
) -> Result<RolloutJacobian, DiffError> {
    let last = run(world, x0, controls, steps)?.last().clone();
    let mut jac = DMat::zeros(2 * world.model.nv, inputs.len());
    for (c, inp) in inputs.iter().enumerate() {
        let go = |d: f64| -> Result<DVec<f64>, DiffError> {
            let (w, x, us) = seeded_rollout(world, x0, controls, steps, &[*inp], &[d])?;
            let end = run(&w, &x, &us, steps)?.last().clone();
            Ok(tangent(&w.model, &last.q, &end))
        };
        // one-sided where the parameter's domain ends within 2ε (μ = 0)
        let model = match inp {
            Input::Model(p) => super::step::one_sided(world, p, 2.0 * eps),
            _ => None,
        };
        let col = match model {
            Some(side) => {
                let zero = tangent(&world.model, &last.q, &last);
                super::step::one_sided_column(
                    &zero,
                    &go(side * eps)?,
                    &go(2.0 * side * eps)?,
                    eps,
                    side,
                )
                .0
            }
            None => (go(eps)? - go(-eps)?) / (2.0 * eps),
        };
        jac.set_column(c, &col);
    }
    Ok(RolloutJacobian {
        last,
        jacobian: jac,
    })
}

fn ift_rollout(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    opts: &DiffOptions,
) -> Result<RolloutJacobian, DiffError> {
    let nv = world.model.nv;
    let m = inputs.len();
    // S₀: the initial state's dependence on θ.
    let mut s = DMat::zeros(2 * nv, m);
    let mut model_params = Vec::new();
    for (c, inp) in inputs.iter().enumerate() {
        match *inp {
            Input::Config(i) => s[(i, c)] = 1.0,
            Input::Velocity(i) => s[(nv + i, c)] = 1.0,
            Input::Model(p @ (Param::Q(_) | Param::V(_) | Param::U(_))) => {
                return Err(DiffError::BadParam(format!(
                    "{p:?} is not a model parameter"
                )));
            }
            Input::Model(p) => model_params.push((c, p)),
            Input::Control { step: k, index } => {
                if k >= steps || index >= nv {
                    return Err(DiffError::BadParam(format!(
                        "{inp:?} is outside the rollout"
                    )));
                }
            }
        }
    }
    let mut params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    params.extend(model_params.iter().map(|(_, p)| *p));
    params.extend((0..nv).map(Param::U));
    let mut x = x0.clone();
    let mut ws = crate::contact::Workspace::default();
    for k in 0..steps {
        let u = controls.at(k);
        let sj = step_jacobian_with(world, &x, u, &params, Method::Ift, opts, &mut ws)?;
        let j = &sj.jacobian;
        let a = j.columns(0, 2 * nv);
        let mut next = a * &s;
        for (idx, (c, _)) in model_params.iter().enumerate() {
            let col = j.column(2 * nv + idx).into_owned();
            let mut target = next.column_mut(*c);
            target += col;
        }
        let ucol0 = 2 * nv + model_params.len();
        for (c, inp) in inputs.iter().enumerate() {
            if let Input::Control { step: ks, index } = *inp {
                if ks == k {
                    let col = j.column(ucol0 + index).into_owned();
                    let mut target = next.column_mut(c);
                    target += col;
                }
            }
        }
        s = next;
        x = sj.next;
    }
    Ok(RolloutJacobian {
        last: x,
        jacobian: s,
    })
}

/// The Jacobian of the final state of a `steps`-step rollout with respect
/// to `inputs`, by `method`. With `opts.rho` set, the rollout is the one
/// simulated at that relaxation (for every method alike).
pub fn rollout_jacobian(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    method: Method,
    opts: &DiffOptions,
) -> Result<RolloutJacobian, DiffError> {
    super::complementarity::check(world, method, opts)?;
    let mut w = world.clone();
    if let Some(rho) = opts.rho {
        w.params.rho = rho;
    }
    if opts.gradient == super::Gradient::ComplementarityAware {
        let weights = DMat::identity(2 * w.model.nv, 2 * w.model.nv);
        let g = super::complementarity::aware_rollout_gradient(
            &w, x0, controls, steps, inputs, &weights, opts,
        )?;
        return Ok(RolloutJacobian {
            last: g.last,
            jacobian: g.gradient,
        });
    }
    match method {
        Method::Ift => ift_rollout(&w, x0, controls, steps, inputs, opts),
        Method::Lift => dual_rollout(&w, x0, controls, steps, inputs, true),
        Method::Unrolled => dual_rollout(&w, x0, controls, steps, inputs, false),
        Method::Fd => fd_rollout(&w, x0, controls, steps, inputs, opts.fd_eps),
        Method::Adjoint => {
            super::adjoint::reverse_rollout_jacobian(&w, x0, controls, steps, inputs, opts)
        }
    }
}

/// Jacobian of the final state with respect to `inputs` by running the
/// rollout in `DualSVec64<N>` (the `unrolled` method with a compile-time
/// width): one dual direction per input, `inputs.len() ≤ N` (the other
/// directions stay zero, so one width serves every smaller input set and
/// the solver stack is compiled once for it). More inputs than `N` is a
/// [`DiffError::BadParam`].
pub fn unrolled<const N: usize>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
) -> Result<DMat<f64>, DiffError> {
    let n = inputs.len();
    if n > N {
        return Err(DiffError::BadParam(format!(
            "unrolled::<{N}> has {N} dual directions, one per input, but {n} inputs were given"
        )));
    }
    let last = run(world, x0, controls, steps)?.last().clone();
    let seeds: Vec<DualSVec64<N>> = (0..n)
        .map(|j| DualSVec64::<N>::from_re(0.0).derivative(j))
        .collect();
    let (w, x, us) = seeded_rollout(world, x0, controls, steps, inputs, &seeds)?;
    let traj = run(&w, &x, &us, steps)?;
    let t = tangent(&w.model, &last.q.map(DualSVec64::<N>::from_re), traj.last());
    let mut jac = DMat::zeros(t.len(), n);
    for (r, e) in t.iter().enumerate() {
        let g = e.eps.unwrap_generic(Const::<N>, U1);
        for c in 0..n {
            jac[(r, c)] = g[c];
        }
    }
    Ok(jac)
}

/// Jacobian of the final state with respect to `inputs` by central
/// differences with step `eps`.
pub fn fd(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    eps: f64,
) -> Result<DMat<f64>, DiffError> {
    Ok(fd_rollout(world, x0, controls, steps, inputs, eps)?.jacobian)
}
