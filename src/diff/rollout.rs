//! Derivatives of whole rollouts.
//!
//! A rollout maps inputs θ (entries of the initial state) to the final state
//! `x_N = (q_N, v_N)`. Outputs are expressed in the tangent space of the
//! nominal final state: `(q_N(θ) ⊖ q_N(θ₀), v_N(θ))`, so rows are `2 nv`
//! (tangent of q first, then v). Initial-configuration inputs perturb on the
//! manifold too: `q₀ ⊕ δ`.
//!
//! * [`unrolled`]: the whole rollout in `DualSVec64<N>` (every solver
//!   iteration carries the derivative);
//! * [`fd`]: central differences `(x(θ + ε) ⊖ x(θ − ε)) / 2ε`.

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use crate::dynamics::free::integrate_model;
use crate::math::{DMat, DVec};
use crate::sim::{rollout, Controls, SimError, State, World};
use crate::Scalar;

/// An input of a rollout derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Entry `i` of the initial velocity.
    Velocity(usize),
    /// Tangent direction `i` of the initial configuration (`q₀ ⊕ δ eᵢ`).
    Config(usize),
}

fn perturbed<T: Scalar>(
    world: &World<T>,
    x0: &State<T>,
    inputs: &[Input],
    delta: &[T],
) -> Result<State<T>, SimError> {
    let nv = world.model.nv;
    let mut v = x0.v.clone();
    let mut dq = DVec::zeros(nv);
    for (inp, d) in inputs.iter().zip(delta) {
        match *inp {
            Input::Velocity(i) => v[i] += *d,
            Input::Config(i) => dq[i] += *d,
        }
    }
    let q = integrate_model(&world.model, &x0.q, &dq, T::one())?;
    Ok(State { q, v })
}

/// Jacobian of the final state (tangent, `2 nv` rows) with respect to
/// `inputs` by running the rollout in `DualSVec64<N>`, `N = inputs.len()`.
#[track_caller]
pub fn unrolled<const N: usize>(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
) -> Result<DMat<f64>, SimError> {
    assert_eq!(inputs.len(), N, "one dual direction per input");
    type D<const N: usize> = DualSVec64<N>;
    let w = world.cast::<D<N>>();
    let x0d = x0.cast::<D<N>>();
    let delta: Vec<D<N>> = (0..N).map(|i| D::<N>::from_re(0.0).derivative(i)).collect();
    let start = perturbed(&w, &x0d, inputs, &delta)?;
    let cd = match controls {
        Controls::Constant(u) => Controls::Constant(u.map(D::<N>::from_re)),
        Controls::PerStep(us) => Controls::PerStep(us.iter().map(|u| u.map(D::<N>::from_re)).collect()),
    };
    let traj = rollout(&w, &start, &cd, steps)?;
    let last = traj.last();
    let nominal = last.cast::<D<N>>();
    let t = super::step::tangent(&w.model, &nominal.q, last);
    let mut jac = DMat::zeros(t.len(), N);
    for (r, e) in t.iter().enumerate() {
        let g = e.eps.unwrap_generic(Const::<N>, U1);
        for c in 0..N {
            jac[(r, c)] = g[c];
        }
    }
    Ok(jac)
}

/// Jacobian of the final state (tangent, `2 nv` rows) with respect to
/// `inputs` by central differences with step `eps`.
pub fn fd(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    eps: f64,
) -> Result<DMat<f64>, SimError> {
    let nominal = rollout(world, x0, controls, steps)?.last().clone();
    let mut jac = DMat::zeros(2 * world.model.nv, inputs.len());
    for (c, inp) in inputs.iter().enumerate() {
        let run = |s: f64| -> Result<DVec<f64>, SimError> {
            let start = perturbed(world, x0, &[*inp], &[s])?;
            let last = rollout(world, &start, controls, steps)?.last().clone();
            Ok(super::step::tangent(&world.model, &nominal.q, &last))
        };
        let col = (run(eps)? - run(-eps)?) / (2.0 * eps);
        jac.set_column(c, &col);
    }
    Ok(jac)
}
