//! Rollout objectives and their optimization: the `[objective]` of a scene
//! file (see [`crate::scene::ObjectiveSpec`]) as a function of decision
//! variables, with its value, gradient and exact Hessian, and optimizers
//! from the argmin crate around it.
//!
//! # The objective
//!
//! The decision variables θ are inputs of a rollout named as `dualsim
//! grad`'s IN (initial state entries, model parameters, per-step
//! controls), resolved by [`crate::diff::names::parse_inputs`]. They are
//! parameterized by their offset δ from the scene's values θ₀ (for a
//! configuration, `q = q₀ ⊕ δ`). With `y(δ)` the stacked final-state
//! outputs (rows as `grad` stacks them; an orientation contributes its
//! four quaternion components),
//!
//! ```text
//! f(δ) = ½ Σᵢ wᵢ (yᵢ(δ) − tᵢ)² + ½ r ‖δ‖²
//! ∇f   = Jᵀ W e + r δ                        (e = y − t, J = ∂y/∂δ)
//! ∇²f  = Jᵀ W J + Σᵢ wᵢ eᵢ ∇²yᵢ + r I        (Gauss–Newton drops the middle term)
//! ```
//!
//! * the value is an f64 rollout;
//! * the gradient is `J` by the implicit function theorem chained through
//!   the rollout ([`crate::diff::rollout_jacobian`] with `ift`);
//! * the exact Hessian runs the rollout in hyper-dual numbers
//!   (`HyperDualSVec64<8, 8>`, one 8 × 8 block of the Hessian per rollout,
//!   `⌈n/8⌉(⌈n/8⌉+1)/2` rollouts): [`HessianMethod::Lift`] takes each step
//!   by [`crate::diff::lift_step`] (f64 solve, then two Newton steps of the
//!   residual in the hyper-dual scalar: exact second derivatives of the
//!   step at the solver's solution), [`HessianMethod::Unrolled`] runs the
//!   whole solver in hyper-dual numbers; [`HessianMethod::Fd`] is central
//!   differences of the `ift` gradient (step [`FD_STEP`]), the reference.
//!
//! For an `orientation` decision variable the `ift` gradient is taken in
//! the tangent space at the current iterate, which equals the δ
//! parameterization's gradient only at δ = 0 (the Hessian methods
//! differentiate the δ parameterization itself).
//!
//! # Optimizers ([`optimize`])
//!
//! | method | how |
//! |---|---|
//! | `newton` | argmin's trust region (Steihaug–CG subproblem) with the exact Hessian ([`HessianMethod::Adjoint`]) |
//! | `gauss_newton` | the same trust region with the Gauss–Newton Hessian `Jᵀ W J + r I` (exact `ift` Jacobians) |
//! | `lbfgs` | argmin's L-BFGS (memory 10) with a weak-Wolfe bisection line search (`linesearch`) that takes a failed simulation as a step too far |
//! | `gradient` | argmin's steepest descent with a backtracking (Armijo) line search |
//! | `ddp` | full DDP over per-step controls (`ddp`, written here) |
//! | `cem` | cross-entropy method, zeroth order ([`cem`]; written here, argmin has none) |
//!
//! With bounds on the decision variables (`[[objective.bounds]]`), `ddp`
//! is box-DDP, `newton`, `gauss_newton` and `gradient` run Bertsekas'
//! projected Newton method (`projected`: argmin has no bound-constrained
//! solver), `cem` clamps its samples and `lbfgs` refuses
//! ([`OptError::Unsupported`]).
//!
//! argmin's nalgebra backend supports nalgebra 0.34 while dualsim uses
//! 0.35, so the adapters use argmin's `Vec<f64>` backend (parameters
//! `Vec<f64>`, Hessians `Vec<Vec<f64>>`). argmin's own `Newton` and
//! `GaussNewton` solvers need a matrix inverse that backend lacks, hence
//! the trust region for both, which is also the robust choice when the
//! Hessian through contact is indefinite.
//!
//! A simulation that fails at a trial point gives the cost `+∞` (the trust
//! region then shrinks); every finite evaluation is compared with the best
//! so far, and an optimization that stops on an error reports the best
//! iterate with the error ([`OptimizeReport::error`]).

pub mod cem;
pub mod compare;
mod ddp;
mod linesearch;
mod projected;
mod scene_out;
mod solve;
pub mod sysid;

pub use scene_out::optimized_scene_toml;
pub use solve::{OptMethod, OptimizeOptions, OptimizeReport, optimize};

use nalgebra::Const;
use num_dual::HyperDualSVec64;

use crate::Scalar;
use crate::diff::names::{self, Output, OutputField};
use crate::diff::rollout::seeded_rollout;
use crate::diff::{DiffError, DiffOptions, Input, lift_step};
use crate::math::{DMat, DVec};
use crate::scene::{ObjectiveSpec, Scene};
use crate::sim::{Controls, State, World, rollout, step};

/// Step of the finite-difference Hessian (central differences of the
/// `ift` gradient).
pub const FD_STEP: f64 = 1e-6;

/// A failed objective evaluation or optimization.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OptError {
    /// The scene has no `[objective]`.
    #[error("the scene has no [objective] table (see docs/scene-format.md)")]
    NoObjective,
    /// A name of the objective does not resolve (an objective built by
    /// hand; a scene file's objective is checked when it is loaded).
    #[error("objective: {0}")]
    BadObjective(String),
    /// A simulation or derivative failed.
    #[error(transparent)]
    Diff(#[from] DiffError),
    /// A method that cannot honour part of the objective (bounds under
    /// `lbfgs`, decision variables other than per-step controls under
    /// `ddp`).
    #[error("`{method}` cannot {what}")]
    Unsupported {
        /// The method's name.
        method: &'static str,
        /// What it cannot do, and what to use instead.
        what: String,
    },
    /// The cost or a derivative is not finite.
    #[error("the {what} is not finite at this point")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
    },
}

/// How the exact Hessian is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HessianMethod {
    /// The second-order adjoint, stage-wise ([`crate::diff::adjoint`]):
    /// one forward rollout with each step's factorization, one backward
    /// pass, and per step the second derivatives of the step contracted
    /// with its adjoint (the fastest exact method, the default).
    Adjoint,
    /// Hyper-dual numbers through [`crate::diff::lift_step`] (reference).
    Lift,
    /// The whole solver in hyper-dual numbers.
    Unrolled,
    /// Central differences of the `ift` gradient.
    Fd,
}

impl HessianMethod {
    /// All methods, in report order.
    pub const ALL: [HessianMethod; 4] = [
        HessianMethod::Adjoint,
        HessianMethod::Lift,
        HessianMethod::Unrolled,
        HessianMethod::Fd,
    ];

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            HessianMethod::Adjoint => "adjoint",
            HessianMethod::Lift => "lift",
            HessianMethod::Unrolled => "unrolled",
            HessianMethod::Fd => "fd",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Value, gradient and (exact or approximate) Hessian at one point.
#[derive(Clone, Debug)]
pub struct Derivatives {
    /// f(δ).
    pub value: f64,
    /// ∇f(δ).
    pub gradient: DVec<f64>,
    /// ∇²f(δ) (symmetric).
    pub hessian: DMat<f64>,
}

/// A rollout objective (see the module docs).
#[derive(Clone, Debug)]
pub struct Objective {
    world: World<f64>,
    initial: State<f64>,
    controls: Controls<f64>,
    steps: usize,
    outputs: Vec<Output>,
    /// `(steps, target)`: the outputs after `steps` steps against
    /// `target` (one stage, the final state, unless [`Objective::with_samples`]).
    stages: Vec<(usize, Vec<f64>)>,
    weights: Vec<f64>,
    groups: Vec<(String, Vec<Input>)>,
    inputs: Vec<Input>,
    regularization: f64,
    /// Running state terms: outputs, targets, weights, states `from..to`.
    running: Vec<Running>,
    /// Control effort: weights and targets per control entry.
    effort: Option<(Vec<f64>, Vec<f64>)>,
    /// Box bounds on δ (`lower − θ₀ ≤ δ ≤ upper − θ₀`), one pair per
    /// decision variable; `None` without `[[objective.bounds]]`.
    bounds: Option<(Vec<f64>, Vec<f64>)>,
}

/// A running state term of the objective.
#[derive(Clone, Debug)]
struct Running {
    outputs: Vec<Output>,
    target: Vec<f64>,
    weights: Vec<f64>,
    range: std::ops::Range<usize>,
}

/// Width of a hyper-dual block.
const B: usize = 8;
type H = HyperDualSVec64<B, B>;

impl Objective {
    /// The objective of a scene's `[objective]`.
    pub fn from_scene(scene: &Scene) -> Result<Self, OptError> {
        let spec = scene.objective.as_ref().ok_or(OptError::NoObjective)?;
        Self::new(
            &scene.world,
            &scene.initial,
            &scene.controls,
            scene.steps,
            spec,
        )
    }

    /// An objective on a rollout of `steps` steps.
    pub fn new(
        world: &World<f64>,
        initial: &State<f64>,
        controls: &Controls<f64>,
        steps: usize,
        spec: &ObjectiveSpec,
    ) -> Result<Self, OptError> {
        let bad = |e: DiffError| OptError::BadObjective(e.to_string());
        let outputs = names::parse_outputs(world, &spec.of.join(",")).map_err(bad)?;
        let groups = names::parse_inputs(world, &spec.wrt.join(","), steps).map_err(bad)?;
        let rows = names::output_labels(world, &outputs).len();
        if spec.target.len() != rows || spec.weights.len() != rows {
            return Err(OptError::BadObjective(format!(
                "{rows} output rows but {} targets and {} weights",
                spec.target.len(),
                spec.weights.len()
            )));
        }
        if spec.weights.iter().any(|w| !(*w >= 0.0)) || !(spec.regularization >= 0.0) {
            return Err(OptError::BadObjective(
                "weights and regularization must be >= 0".into(),
            ));
        }
        let inputs = groups.iter().flat_map(|(_, i)| i.iter().copied()).collect();
        let mut running = Vec::new();
        for (i, r) in spec.running.iter().enumerate() {
            let outputs = names::parse_outputs(world, &r.of.join(",")).map_err(bad)?;
            let rows = names::output_labels(world, &outputs).len();
            let to = r.to.unwrap_or(steps);
            if r.target.len() != rows || r.weights.len() != rows || r.from >= to || to > steps {
                return Err(OptError::BadObjective(format!(
                    "running[{i}]: {rows} output rows, {} targets, {} weights, states {}..{} of {steps}",
                    r.target.len(),
                    r.weights.len(),
                    r.from,
                    to
                )));
            }
            if r.weights.iter().any(|w| !(*w >= 0.0)) {
                return Err(OptError::BadObjective(format!(
                    "running[{i}]: weights must be >= 0"
                )));
            }
            running.push(Running {
                outputs,
                target: r.target.clone(),
                weights: r.weights.clone(),
                range: r.from..to,
            });
        }
        let nv = world.model.nv;
        let effort = match &spec.effort {
            None => None,
            Some(e) => {
                if e.weights.len() != nv
                    || e.target.len() != nv
                    || e.weights.iter().any(|w| !(*w >= 0.0))
                {
                    return Err(OptError::BadObjective(format!(
                        "effort: {nv} control entries, {} weights (each >= 0) and {} targets",
                        e.weights.len(),
                        e.target.len()
                    )));
                }
                Some((e.weights.clone(), e.target.clone()))
            }
        };
        let bounds = if spec.bounds.is_empty() {
            None
        } else {
            let n: usize = groups.iter().map(|(_, i)| i.len()).sum();
            let (mut lo, mut hi) = (vec![f64::NEG_INFINITY; n], vec![f64::INFINITY; n]);
            for (bi, b) in spec.bounds.iter().enumerate() {
                let mut offset = 0;
                let mut found = false;
                for (label, inputs) in &groups {
                    if *label == b.wrt {
                        found = true;
                        let width = crate::scene::bound_width(inputs);
                        if b.lower.len() != width
                            || b.upper.len() != width
                            || (0..width).any(|j| !(b.lower[j] <= b.upper[j]))
                        {
                            return Err(OptError::BadObjective(format!(
                                "bounds[{bi}] (`{}`): {width} entries, {} lower and {} upper bounds \
                                 (each lower <= upper)",
                                b.wrt,
                                b.lower.len(),
                                b.upper.len()
                            )));
                        }
                        for (i, inp) in inputs.iter().enumerate() {
                            let Some(x0) = names::input_value(world, initial, controls, *inp)
                            else {
                                return Err(OptError::BadObjective(format!(
                                    "bounds[{bi}]: `{}` is not a vector quantity (an orientation or \
                                     a floating base's coordinates)",
                                    b.wrt
                                )));
                            };
                            let j = i % width;
                            if !(b.lower[j] <= x0 && x0 <= b.upper[j]) {
                                return Err(OptError::BadObjective(format!(
                                    "bounds[{bi}]: the start value {x0} of `{}` entry {i} is outside \
                                     [{}, {}]",
                                    b.wrt, b.lower[j], b.upper[j]
                                )));
                            }
                            lo[offset + i] = b.lower[j] - x0;
                            hi[offset + i] = b.upper[j] - x0;
                        }
                    }
                    offset += inputs.len();
                }
                if !found {
                    return Err(OptError::BadObjective(format!(
                        "bounds[{bi}]: `{}` is not one of the decision variables",
                        b.wrt
                    )));
                }
            }
            Some((lo, hi))
        };
        Ok(Objective {
            world: world.clone(),
            initial: initial.clone(),
            controls: controls.clone(),
            steps,
            outputs,
            stages: vec![(steps, spec.target.clone())],
            weights: spec.weights.clone(),
            groups,
            inputs,
            regularization: spec.regularization,
            running,
            effort,
            bounds,
        })
    }

    /// The bounds on δ (`lower − θ₀`, `upper − θ₀` per decision
    /// variable), if the objective has any.
    pub fn bounds(&self) -> Option<(&[f64], &[f64])> {
        self.bounds
            .as_ref()
            .map(|(l, h)| (l.as_slice(), h.as_slice()))
    }

    /// `δ` projected onto the bounds (unchanged without bounds).
    pub fn project(&self, delta: &mut [f64]) {
        if let Some((lo, hi)) = &self.bounds {
            for ((d, l), h) in delta.iter_mut().zip(lo).zip(hi) {
                *d = d.clamp(*l, *h);
            }
        }
    }

    /// The first-order optimality measure: `‖P(δ − ∇f) − δ‖` under bounds
    /// (zero exactly at a KKT point), `‖∇f‖` without.
    pub fn projected_gradient_norm(&self, delta: &[f64], gradient: &[f64]) -> f64 {
        match &self.bounds {
            None => gradient.iter().map(|g| g * g).sum::<f64>().sqrt(),
            Some((lo, hi)) => delta
                .iter()
                .zip(gradient)
                .zip(lo.iter().zip(hi))
                .map(|((d, g), (l, h))| {
                    let p = (d - g).clamp(*l, *h) - d;
                    p * p
                })
                .sum::<f64>()
                .sqrt(),
        }
    }

    /// Number of decision variables.
    pub fn dim(&self) -> usize {
        self.inputs.len()
    }

    /// The decision variables' names as written (`box.control`).
    pub fn wrt(&self) -> Vec<String> {
        self.groups.iter().map(|(l, _)| l.clone()).collect()
    }

    /// One label per decision variable (`box.velocity.x`, `box.control[step 3][1]`).
    pub fn labels(&self) -> Vec<String> {
        names::input_labels(&self.world, &self.groups)
    }

    /// One label per output row.
    pub fn rows(&self) -> Vec<String> {
        names::output_labels(&self.world, &self.outputs)
    }

    /// The same objective on outputs sampled along the rollout: `samples`
    /// holds `(k, values)`, the outputs after `k` steps (1 ≤ k ≤ the
    /// rollout's steps) and their targets (one per output row, the same
    /// weights); the cost sums over the samples (for system
    /// identification from a trajectory). Control decision variables of
    /// steps at or after a sample do not affect it.
    pub fn with_samples(mut self, samples: Vec<(usize, Vec<f64>)>) -> Result<Self, OptError> {
        let rows = self.weights.len();
        for (k, t) in &samples {
            if *k == 0 || *k > self.steps || t.len() != rows {
                return Err(OptError::BadObjective(format!(
                    "a sample needs 1 <= k <= {} steps and {rows} values, got k = {k} and {} values",
                    self.steps,
                    t.len()
                )));
            }
        }
        if samples.is_empty() {
            return Err(OptError::BadObjective("no sample".into()));
        }
        self.stages = samples;
        Ok(self)
    }

    /// The number of steps of the rollout.
    pub fn steps(&self) -> usize {
        self.steps
    }

    fn check_len(&self, delta: &[f64]) {
        assert_eq!(delta.len(), self.dim(), "one offset per decision variable");
    }

    /// World, initial state and controls at offset δ.
    pub fn at(&self, delta: &[f64]) -> Result<(World<f64>, State<f64>, Controls<f64>), OptError> {
        self.check_len(delta);
        Ok(seeded_rollout(
            &self.world,
            &self.initial,
            &self.controls,
            self.steps,
            &self.inputs,
            delta,
        )?)
    }

    /// The outputs `y(δ)` at the final state (f64).
    pub fn outputs(&self, delta: &[f64]) -> Result<Vec<f64>, OptError> {
        Ok(self.outputs_at(delta, &[self.steps])?.remove(0))
    }

    /// The outputs after each of `steps` steps (f64).
    pub fn outputs_at(&self, delta: &[f64], steps: &[usize]) -> Result<Vec<Vec<f64>>, OptError> {
        let (w, x, us) = self.at(delta)?;
        let n = steps.iter().copied().max().unwrap_or(0);
        let traj = rollout(&w, &x, &us, n).map_err(DiffError::from)?;
        Ok(steps
            .iter()
            .map(|k| output_values(&w, &traj.states[*k], &self.outputs))
            .collect())
    }

    /// The cost in any scalar, the rollout stepped plainly (`lift =
    /// false`) or by [`lift_step`] of order 2.
    fn cost_in<T: Scalar>(&self, deltas: &[T], lift: bool) -> Result<T, OptError> {
        let (w, mut x, us) = seeded_rollout(
            &self.world,
            &self.initial,
            &self.controls,
            self.steps,
            &self.inputs,
            deltas,
        )?;
        let last = self.last_stage();
        let stages = Stages(self);
        let mut c = T::zero();
        for k in 0..=last {
            if crate::diff::StageCost::active(&stages, k) {
                let u = (k < self.steps).then(|| us.at(k));
                c += crate::diff::StageCost::eval(&stages, k, &w, &x, u);
            }
            if k == last {
                break;
            }
            x = if lift {
                lift_step(&w, &x, us.at(k), 2)?
            } else {
                step(&w, &x, us.at(k)).map_err(DiffError::from)?.state
            };
        }
        let mut reg = T::zero();
        for d in deltas {
            reg += *d * *d;
        }
        Ok(c + T::from_re(0.5 * self.regularization) * reg)
    }

    /// The last step with a cost term (the rollout runs that far).
    fn last_stage(&self) -> usize {
        let sampled = self.stages.iter().map(|s| s.0).max().unwrap_or(0);
        if self.effort.is_some() {
            return self.steps;
        }
        self.running
            .iter()
            .map(|r| r.range.end - 1)
            .fold(sampled, usize::max)
    }

    /// f(δ) by an f64 rollout.
    pub fn value(&self, delta: &[f64]) -> Result<f64, OptError> {
        self.check_len(delta);
        let c = self.cost_in::<f64>(delta, false)?;
        if !c.is_finite() {
            return Err(OptError::NonFinite { what: "cost" });
        }
        Ok(c)
    }

    /// The residuals at δ: the value, `e = y − t` and `J = ∂y/∂δ` (by
    /// `ift`), every term stacked (unweighted; [`Objective::weighted_residuals`]
    /// also gives each row's weight).
    pub fn residuals(&self, delta: &[f64]) -> Result<(f64, DVec<f64>, DMat<f64>), OptError> {
        let (value, e, j, _) = self.weighted_residuals(delta)?;
        Ok((value, e, j))
    }

    /// The residuals, their Jacobian and each row's weight: the sampled
    /// final-state terms, the running terms at each of their states, the
    /// control effort at each step (`f = ½ Σ wᵢ eᵢ² + ½ r ‖δ‖²`).
    pub fn weighted_residuals(
        &self,
        delta: &[f64],
    ) -> Result<(f64, DVec<f64>, DMat<f64>, DVec<f64>), OptError> {
        let (w, x, us) = self.at(delta)?;
        let n = self.dim();
        let last = self.last_stage();
        let (states, sens) = crate::diff::adjoint::state_sensitivities(
            &w,
            &x,
            &us,
            last,
            &self.inputs_before(last),
            &DiffOptions::default(),
        )?;
        let cols: Vec<usize> = (0..n)
            .filter(|c| !matches!(self.inputs[*c], Input::Control { step, .. } if step >= last))
            .collect();
        let mut es: Vec<f64> = Vec::new();
        let mut ws: Vec<f64> = Vec::new();
        let mut rows: Vec<nalgebra::RowDVector<f64>> = Vec::new();
        let mut push = |y: &[f64], j: &DMat<f64>, target: &[f64], weights: &[f64]| {
            es.extend(y.iter().zip(target).map(|(a, b)| a - b));
            ws.extend_from_slice(weights);
            for r in 0..j.nrows() {
                let mut row = nalgebra::RowDVector::zeros(n);
                for (i, c) in cols.iter().enumerate() {
                    row[*c] = j[(r, i)];
                }
                rows.push(row);
            }
        };
        for (k, target) in &self.stages {
            let (y, j) = names::output_rows(&w, &states[*k], &sens[*k], &self.outputs)?;
            push(&y, &j, target, &self.weights);
        }
        for r in &self.running {
            for k in r.range.clone() {
                let (y, j) = names::output_rows(&w, &states[k], &sens[k], &r.outputs)?;
                push(&y, &j, &r.target, &r.weights);
            }
        }
        if let Some((weights, target)) = &self.effort {
            for k in 0..self.steps {
                let u = us.at(k);
                for i in 0..u.len() {
                    es.push(u[i] - target[i]);
                    ws.push(weights[i]);
                    let mut row = nalgebra::RowDVector::zeros(n);
                    for (c, inp) in self.inputs.iter().enumerate() {
                        if *inp == (Input::Control { step: k, index: i }) {
                            row[c] = 1.0;
                        }
                    }
                    rows.push(row);
                }
            }
        }
        let e = DVec::from_vec(es);
        let wv = DVec::from_vec(ws);
        let j = if rows.is_empty() {
            DMat::zeros(0, n)
        } else {
            DMat::from_rows(&rows)
        };
        let d = DVec::from_column_slice(delta);
        let value = 0.5
            * e.iter()
                .zip(wv.iter())
                .map(|(ei, wi)| wi * ei * ei)
                .sum::<f64>()
            + 0.5 * self.regularization * d.norm_squared();
        if !value.is_finite() || !j.iter().all(|v| v.is_finite()) {
            return Err(OptError::NonFinite { what: "gradient" });
        }
        Ok((value, e, j, wv))
    }

    /// The decision variables that can move the states up to step `last`
    /// (the controls of later steps cannot).
    fn inputs_before(&self, last: usize) -> Vec<Input> {
        self.inputs
            .iter()
            .copied()
            .filter(|i| !matches!(i, Input::Control { step, .. } if *step >= last))
            .collect()
    }

    /// f(δ) and ∇f(δ) by the adjoint ([`crate::diff::rollout_gradient`]:
    /// one forward rollout with step Jacobians and one backward pass,
    /// whatever the number of decision variables).
    pub fn gradient(&self, delta: &[f64]) -> Result<(f64, DVec<f64>), OptError> {
        let (w, x, us) = self.at(delta)?;
        let (c, g) = crate::diff::rollout_gradient(
            &w,
            &x,
            &us,
            self.steps,
            &self.inputs,
            &Stages(self),
            &DiffOptions::default(),
        )?;
        let d = DVec::from_column_slice(delta);
        let value = c + 0.5 * self.regularization * d.norm_squared();
        let g = g + d * self.regularization;
        if !value.is_finite() || !g.iter().all(|v| v.is_finite()) {
            return Err(OptError::NonFinite { what: "gradient" });
        }
        Ok((value, g))
    }

    /// Value, gradient and exact Hessian by the second-order adjoint.
    fn adjoint_hessian(&self, delta: &[f64]) -> Result<Derivatives, OptError> {
        let (w, x, us) = self.at(delta)?;
        let (c, g, h) = crate::diff::rollout_hessian(
            &w,
            &x,
            &us,
            self.steps,
            &self.inputs,
            &Stages(self),
            &DiffOptions::default(),
        )?;
        let n = self.dim();
        let d = DVec::from_column_slice(delta);
        let value = c + 0.5 * self.regularization * d.norm_squared();
        let gradient = g + &d * self.regularization;
        let hessian = h + DMat::identity(n, n) * self.regularization;
        if !value.is_finite() || !gradient.iter().chain(hessian.iter()).all(|v| v.is_finite()) {
            return Err(OptError::NonFinite { what: "Hessian" });
        }
        Ok(Derivatives {
            value,
            gradient,
            hessian,
        })
    }

    /// f(δ), ∇f(δ) and the Hessian–vector product `∇²f(δ) v` by
    /// forward-over-reverse ([`crate::diff::rollout_hvp`]).
    pub fn hessian_vector(
        &self,
        delta: &[f64],
        v: &[f64],
    ) -> Result<(f64, DVec<f64>, DVec<f64>), OptError> {
        let (w, x, us) = self.at(delta)?;
        let dir = DVec::from_column_slice(v);
        let (c, g, hv) = crate::diff::rollout_hvp(
            &w,
            &x,
            &us,
            self.steps,
            &self.inputs,
            &Stages(self),
            &dir,
            &DiffOptions::default(),
        )?;
        let d = DVec::from_column_slice(delta);
        let value = c + 0.5 * self.regularization * d.norm_squared();
        Ok((
            value,
            g + d * self.regularization,
            hv + dir * self.regularization,
        ))
    }

    /// f(δ) and ∇f(δ) by the forward `ift` rollout Jacobian (`Jᵀ W e`;
    /// the reference of [`Objective::gradient`]).
    pub fn gradient_forward(&self, delta: &[f64]) -> Result<(f64, DVec<f64>), OptError> {
        let (value, e, j, w) = self.weighted_residuals(delta)?;
        let g = j.transpose() * e.component_mul(&w)
            + DVec::from_column_slice(delta) * self.regularization;
        Ok((value, g))
    }

    /// Value, gradient and the Gauss–Newton Hessian `Jᵀ W J + r I`.
    pub fn gauss_newton(&self, delta: &[f64]) -> Result<Derivatives, OptError> {
        let (value, e, j, w) = self.weighted_residuals(delta)?;
        let we = e.component_mul(&w);
        let gradient = j.transpose() * we + DVec::from_column_slice(delta) * self.regularization;
        let mut wj = j.clone();
        for (r, wi) in w.iter().enumerate() {
            wj.row_mut(r).scale_mut(*wi);
        }
        let n = self.dim();
        let hessian = j.transpose() * wj + DMat::identity(n, n) * self.regularization;
        Ok(Derivatives {
            value,
            gradient,
            hessian,
        })
    }

    /// Value, gradient and Hessian at δ by `method` (module docs).
    pub fn hessian(&self, delta: &[f64], method: HessianMethod) -> Result<Derivatives, OptError> {
        self.check_len(delta);
        match method {
            HessianMethod::Adjoint => self.adjoint_hessian(delta),
            HessianMethod::Lift => self.hyperdual_hessian(delta, true),
            HessianMethod::Unrolled => self.hyperdual_hessian(delta, false),
            HessianMethod::Fd => self.fd_hessian(delta),
        }
    }

    fn hyperdual_hessian(&self, delta: &[f64], lift: bool) -> Result<Derivatives, OptError> {
        let n = self.dim();
        let nb = n.div_ceil(B);
        let mut hessian = DMat::zeros(n, n);
        let mut gradient = DVec::zeros(n);
        let mut value = f64::NAN;
        for bi in 0..nb {
            for bj in bi..nb {
                let deltas: Vec<H> = (0..n)
                    .map(|k| {
                        let mut d = H::from_re(delta[k]);
                        if k / B == bi {
                            d = d.derivative1(k % B);
                        }
                        if k / B == bj {
                            d = d.derivative2(k % B);
                        }
                        d
                    })
                    .collect();
                let c = self.cost_in(&deltas, lift)?;
                value = c.re;
                let m = c.eps1eps2.unwrap_generic(Const::<B>, Const::<B>);
                if bi == bj {
                    let g = c.eps1.unwrap_generic(Const::<B>, nalgebra::U1);
                    for a in 0..B.min(n - bi * B) {
                        gradient[bi * B + a] = g[a];
                    }
                }
                for a in 0..B.min(n - bi * B) {
                    for b in 0..B.min(n - bj * B) {
                        hessian[(bi * B + a, bj * B + b)] = m[(a, b)];
                        hessian[(bj * B + b, bi * B + a)] = m[(a, b)];
                    }
                }
            }
        }
        if n == 0 {
            value = self.value(delta)?;
        }
        if !value.is_finite() || !gradient.iter().chain(hessian.iter()).all(|v| v.is_finite()) {
            return Err(OptError::NonFinite { what: "Hessian" });
        }
        Ok(Derivatives {
            value,
            gradient,
            hessian,
        })
    }

    fn fd_hessian(&self, delta: &[f64]) -> Result<Derivatives, OptError> {
        let n = self.dim();
        let (value, gradient) = self.gradient_forward(delta)?;
        let mut hessian = DMat::zeros(n, n);
        for j in 0..n {
            let mut p = delta.to_vec();
            p[j] += FD_STEP;
            let gp = self.gradient_forward(&p)?.1;
            p[j] -= 2.0 * FD_STEP;
            let gm = self.gradient_forward(&p)?.1;
            hessian.set_column(j, &((gp - gm) / (2.0 * FD_STEP)));
        }
        let sym = (&hessian + hessian.transpose()) * 0.5;
        Ok(Derivatives {
            value,
            gradient,
            hessian: sym,
        })
    }

    /// The decision variables' values at δ, per group as written
    /// (`box.control`: every step's 6 entries, step-major; an
    /// `orientation`: the quaternion `[w, x, y, z]`; a robot's `q`: all
    /// its coordinates).
    pub fn solution(&self, delta: &[f64]) -> Result<Vec<(String, Vec<f64>)>, OptError> {
        let (w, x, us) = self.at(delta)?;
        let m = &w.model;
        let mut out = Vec::new();
        for (label, inputs) in &self.groups {
            let first = inputs[0];
            let values: Vec<f64> = match first {
                Input::Control { .. } => inputs
                    .iter()
                    .map(|i| match *i {
                        Input::Control { step, index } => us.at(step)[index],
                        _ => unreachable!("a control group holds controls only"),
                    })
                    .collect(),
                Input::Velocity(_) => inputs
                    .iter()
                    .map(|i| match *i {
                        Input::Velocity(k) => x.v[k],
                        _ => unreachable!("a velocity group holds velocities only"),
                    })
                    .collect(),
                Input::Config(i) => {
                    if let Some(r) = w
                        .robots
                        .iter()
                        .find(|r| (r.idx_v..r.idx_v + r.nv).contains(&i))
                    {
                        x.q.rows(r.idx_q, r.nq).iter().copied().collect()
                    } else {
                        let b = &m.bodies[m.dof_body[i]];
                        if i - b.idx_v >= 3 {
                            x.q.rows(b.idx_q + 3, 4).iter().copied().collect()
                        } else {
                            x.q.rows(b.idx_q, 3).iter().copied().collect()
                        }
                    }
                }
                Input::Model(_) => inputs
                    .iter()
                    .map(|i| match *i {
                        Input::Model(p) => names::model_value(&w, p),
                        _ => unreachable!("a parameter group holds parameters only"),
                    })
                    .collect(),
            };
            out.push((label.clone(), values));
        }
        Ok(out)
    }
}

/// The stacked values of `outputs` at a final state, in any scalar (rows
/// as [`names::output_rows`] gives them; a robot's `q` only without a
/// floating base).
pub fn output_values<T: Scalar>(world: &World<T>, last: &State<T>, outputs: &[Output]) -> Vec<T> {
    let mut out = Vec::new();
    for o in outputs {
        match o.field {
            OutputField::RobotQ => {
                let r = &world.robots[o.body];
                out.extend(last.q.rows(r.idx_q, r.nq).iter().copied());
            }
            OutputField::RobotV => {
                let r = &world.robots[o.body];
                out.extend(last.v.rows(r.idx_v, r.nv).iter().copied());
            }
            OutputField::Position => {
                let k = world.model.bodies[o.body].idx_q;
                out.extend(last.q.rows(k, 3).iter().copied());
            }
            OutputField::Orientation => {
                let k = world.model.bodies[o.body].idx_q;
                out.extend(last.q.rows(k + 3, 4).iter().copied());
            }
            OutputField::Velocity => {
                let k = world.model.bodies[o.body].idx_v;
                out.extend(last.v.rows(k, 3).iter().copied());
            }
            OutputField::AngularVelocity => {
                let k = world.model.bodies[o.body].idx_v;
                out.extend(last.v.rows(k + 3, 3).iter().copied());
            }
            OutputField::LinkPosition
            | OutputField::LinkOrientation
            | OutputField::LinkVelocity
            | OutputField::LinkAngularVelocity => {
                out.extend(names::link_quantity(
                    &world.model,
                    &last.q,
                    &last.v,
                    o.body,
                    o.field,
                ));
            }
        }
    }
    out
}

/// The objective's stage costs as the adjoint sees them: at each sampled
/// step `k`, `½ Σᵢ wᵢ (yᵢ(x_k) − tᵢ)²`.
struct Stages<'a>(&'a Objective);

impl crate::diff::StageCost for Stages<'_> {
    fn active(&self, k: usize) -> bool {
        let o = self.0;
        o.stages.iter().any(|s| s.0 == k)
            || o.running.iter().any(|r| r.range.contains(&k))
            || (o.effort.is_some() && k < o.steps)
    }

    fn eval<T: Scalar>(&self, k: usize, world: &World<T>, x: &State<T>, u: Option<&DVec<T>>) -> T {
        let o = self.0;
        let mut c = T::zero();
        for (_, target) in o.stages.iter().filter(|s| s.0 == k) {
            let y = output_values(world, x, &o.outputs);
            for ((yi, ti), wi) in y.iter().zip(target).zip(&o.weights) {
                let e = *yi - T::from_re(*ti);
                c += T::from_re(0.5 * wi) * e * e;
            }
        }
        for r in o.running.iter().filter(|r| r.range.contains(&k)) {
            let y = output_values(world, x, &r.outputs);
            for ((yi, ti), wi) in y.iter().zip(&r.target).zip(&r.weights) {
                let e = *yi - T::from_re(*ti);
                c += T::from_re(0.5 * wi) * e * e;
            }
        }
        if let (Some((w, t)), Some(u)) = (&o.effort, u) {
            for ((ui, ti), wi) in u.iter().zip(t).zip(w) {
                let e = *ui - T::from_re(*ti);
                c += T::from_re(0.5 * wi) * e * e;
            }
        }
        c
    }
}
