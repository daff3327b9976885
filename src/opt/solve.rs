//! argmin adapters and the optimization driver (see the module docs of
//! [`crate::opt`]).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use argmin::core::observers::{Observe, ObserverMode};
use argmin::core::{
    CostFunction, Error, Executor, Gradient, Hessian, KV, OptimizationResult, State,
    TerminationReason, TerminationStatus,
};
use argmin::solver::gradientdescent::SteepestDescent;
use argmin::solver::linesearch::BacktrackingLineSearch;
use argmin::solver::linesearch::condition::ArmijoCondition;
use argmin::solver::quasinewton::LBFGS;
use argmin::solver::trustregion::{Steihaug, TrustRegion};

use super::cem::{self, CemParams};
use super::projected::Ended;
use super::{Derivatives, HessianMethod, Objective, OptError};

/// An optimization method (module docs of [`crate::opt`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptMethod {
    /// Trust-region Newton with the exact Hessian.
    Newton,
    /// Trust-region Gauss–Newton.
    GaussNewton,
    /// L-BFGS.
    Lbfgs,
    /// Steepest descent.
    Gradient,
    /// Cross-entropy method.
    Cem,
    /// Full DDP over per-step controls (see `docs/optimization.md`).
    Ddp,
}

impl OptMethod {
    /// All methods, in report order.
    pub const ALL: [OptMethod; 6] = [
        OptMethod::Newton,
        OptMethod::GaussNewton,
        OptMethod::Lbfgs,
        OptMethod::Gradient,
        OptMethod::Cem,
        OptMethod::Ddp,
    ];

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            OptMethod::Newton => "newton",
            OptMethod::GaussNewton => "gauss_newton",
            OptMethod::Lbfgs => "lbfgs",
            OptMethod::Gradient => "gradient",
            OptMethod::Cem => "cem",
            OptMethod::Ddp => "ddp",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Options of [`optimize`].
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizeOptions {
    /// The method. Default `newton`.
    pub method: OptMethod,
    /// Iteration limit. Default 100.
    pub max_iterations: u64,
    /// Stop once the cost is at or below this. Default 1e-12.
    pub target_cost: f64,
    /// Stop once ‖∇f‖ ≤ this × the cost scale `max(f(δ₀), 1e-300)` (the
    /// cost at the start; first-order optimality relative to the cost, not
    /// for `cem`). Default 1e-10.
    pub gradient_tolerance: f64,
    /// Stop after this much wall time (seconds). Default none.
    pub max_seconds: Option<f64>,
    /// Initial trust-region radius (in the units of δ). Default 1.
    pub trust_radius: f64,
    /// Parameters of `cem`.
    pub cem: CemParams,
    /// Show a progress bar on standard error. Default false.
    pub progress: bool,
}

impl Default for OptimizeOptions {
    fn default() -> Self {
        OptimizeOptions {
            method: OptMethod::Newton,
            max_iterations: 100,
            target_cost: 1e-12,
            gradient_tolerance: 1e-10,
            max_seconds: None,
            trust_radius: 1.0,
            cem: CemParams::default(),
            progress: false,
        }
    }
}

/// The result of [`optimize`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct OptimizeReport {
    /// The method's name.
    pub method: String,
    /// Iterations done.
    pub iterations: u64,
    /// The best cost so far, at the start (entry 0) and after each iteration.
    pub cost: Vec<f64>,
    /// Wall time (s) at each entry of `cost`.
    pub times: Vec<f64>,
    /// ‖∇f‖ at the best iterate, or with bounds the projected gradient
    /// norm `‖P(δ − ∇f) − δ‖` (NaN if it could not be computed).
    pub gradient_norm: f64,
    /// ‖∇f‖ / the cost scale `max(f(δ₀), 1e-300)` at the best iterate
    /// (what [`OptimizeOptions::gradient_tolerance`] bounds).
    pub relative_gradient_norm: f64,
    /// Whether the target cost or the gradient tolerance was reached.
    pub converged: bool,
    /// Why the run stopped.
    pub termination: String,
    /// The best iterate's offsets δ from the scene's values.
    #[serde(skip)]
    pub delta: Vec<f64>,
    /// The best iterate: each decision variable's values.
    pub solution: serde_json::Map<String, serde_json::Value>,
    /// Total wall time (s).
    pub wall_seconds: f64,
    /// The error that stopped the run, if any (the best iterate is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the adapters and the observer share.
pub(super) struct Shared {
    pub(super) start: Instant,
    pub(super) best: (Vec<f64>, f64),
    pub(super) grad_norm: f64,
    cache: Option<(Vec<f64>, Derivatives)>,
    last_error: Option<String>,
    pub(super) cost: Vec<f64>,
    pub(super) times: Vec<f64>,
    stop: Option<String>,
    pub(super) converged: bool,
    pub(super) bar: indicatif::ProgressBar,
}

impl Shared {
    /// Records the best cost so far and the wall time after iteration `it`.
    pub(super) fn record(&mut self, it: u64) {
        let t = self.start.elapsed().as_secs_f64();
        let best = self.best.1;
        self.cost.push(best);
        self.times.push(t);
        self.bar.set_position(it);
        self.bar.set_message(format!("cost {best:.3e}"));
    }

    pub(super) fn offer(&mut self, p: &[f64], c: f64) {
        if c.is_finite() && c < self.best.1 {
            self.best = (p.to_vec(), c);
        }
    }
}

struct Problem<'a> {
    obj: &'a Objective,
    method: OptMethod,
    shared: Arc<Mutex<Shared>>,
}

impl Problem<'_> {
    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Value, gradient and (for the second-order methods) Hessian at `p`,
    /// cached for the Hessian call that follows the gradient call.
    fn derivatives(&self, p: &[f64]) -> Result<Derivatives, Error> {
        if let Some((q, d)) = &self.shared().cache {
            if q == p {
                return Ok(d.clone());
            }
        }
        let r = match self.method {
            OptMethod::Newton => self.obj.hessian(p, HessianMethod::Adjoint),
            OptMethod::GaussNewton => self.obj.gauss_newton(p),
            _ => self.obj.gradient(p).map(|(value, gradient)| Derivatives {
                value,
                gradient,
                hessian: crate::math::DMat::zeros(0, 0),
            }),
        };
        let mut s = self.shared();
        match r {
            Ok(d) => {
                s.offer(p, d.value);
                s.grad_norm = d.gradient.norm();
                s.cache = Some((p.to_vec(), d.clone()));
                Ok(d)
            }
            Err(e) => {
                s.last_error = Some(e.to_string());
                Err(Error::new(e))
            }
        }
    }
}

impl CostFunction for Problem<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        match self.obj.value(p) {
            Ok(c) => {
                self.shared().offer(p, c);
                Ok(c)
            }
            Err(e) => {
                // a failed simulation at a trial point: infinitely bad
                self.shared().last_error = Some(e.to_string());
                Ok(f64::INFINITY)
            }
        }
    }
}

impl Gradient for Problem<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, p: &Vec<f64>) -> Result<Vec<f64>, Error> {
        Ok(self.derivatives(p)?.gradient.iter().copied().collect())
    }
}

impl Hessian for Problem<'_> {
    type Param = Vec<f64>;
    type Hessian = Vec<Vec<f64>>;

    fn hessian(&self, p: &Vec<f64>) -> Result<Vec<Vec<f64>>, Error> {
        let h = self.derivatives(p)?.hessian;
        Ok(h.row_iter().map(|r| r.iter().copied().collect()).collect())
    }
}

/// Records the best cost after each iteration and stops on the gradient
/// tolerance or the time budget (by an error the driver recognizes).
struct Recorder {
    shared: Arc<Mutex<Shared>>,
    gradient_tolerance: f64,
    max_seconds: Option<f64>,
}

const STOP: &str = "dualsim-opt-stop";

impl<I: State<Float = f64>> Observe<I> for Recorder {
    fn observe_iter(&mut self, state: &I, _kv: &KV) -> Result<(), Error> {
        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let best = s.best.1;
        let t = s.start.elapsed().as_secs_f64();
        s.cost.push(best.min(state.get_best_cost()));
        s.times.push(t);
        s.bar.set_position(state.get_iter());
        s.bar.set_message(format!("cost {best:.3e}"));
        if s.grad_norm <= self.gradient_tolerance {
            s.stop = Some(format!(
                "first-order optimality: gradient norm {:.3e} <= {:.3e} (tolerance x cost scale)",
                s.grad_norm, self.gradient_tolerance
            ));
            s.converged = true;
            return Err(Error::msg(STOP));
        }
        if let Some(m) = self.max_seconds {
            if t >= m {
                s.stop = Some(format!("time budget of {m} s used"));
                return Err(Error::msg(STOP));
            }
        }
        Ok(())
    }
}

/// Minimizes the objective from δ = 0 (the scene's values).
pub fn optimize(obj: &Objective, opts: &OptimizeOptions) -> Result<OptimizeReport, OptError> {
    let n = obj.dim();
    let x0 = vec![0.0; n];
    let bar = progress_bar(opts);
    let start = Instant::now();
    let c0 = obj.value(&x0)?;
    let scale = c0.abs().max(1e-300);
    let gtol = opts.gradient_tolerance * scale;
    let shared = Arc::new(Mutex::new(Shared {
        start,
        best: (x0.clone(), c0),
        grad_norm: f64::INFINITY,
        cache: None,
        last_error: None,
        cost: vec![c0],
        times: vec![start.elapsed().as_secs_f64()],
        stop: None,
        converged: false,
        bar,
    }));
    let problem = Problem {
        obj,
        method: opts.method,
        shared: shared.clone(),
    };
    let recorder = Recorder {
        shared: shared.clone(),
        gradient_tolerance: gtol,
        max_seconds: opts.max_seconds,
    };
    let target = opts.target_cost;
    let max_iters = opts.max_iterations;
    macro_rules! run {
        ($solver:expr) => {{
            let r = Executor::new(problem, $solver)
                .configure(|s| s.param(x0.clone()).max_iters(max_iters).target_cost(target))
                .add_observer(recorder, ObserverMode::Always)
                .run();
            argmin_ended(r, &shared)
        }};
    }
    let bounded = obj.bounds().is_some();
    if bounded && opts.method == OptMethod::Lbfgs {
        return Err(super::projected::refuse(opts.method));
    }
    let ended = match opts.method {
        OptMethod::Newton | OptMethod::GaussNewton | OptMethod::Gradient if bounded => {
            super::projected::minimize(
                obj,
                opts.method,
                &shared,
                &x0,
                c0,
                gtol,
                target,
                max_iters,
                opts.max_seconds,
            )
        }
        OptMethod::Newton | OptMethod::GaussNewton => {
            let tr = TrustRegion::new(Steihaug::new().with_max_iters(4 * n.max(1) as u64))
                .with_radius(opts.trust_radius)
                .and_then(|t| t.with_max_radius(1e6 * opts.trust_radius))
                .map_err(|e| OptError::BadObjective(e.to_string()))?;
            run!(tr)
        }
        OptMethod::Lbfgs => {
            let l = LBFGS::new(super::linesearch::WolfeBisection::default(), 10)
                .with_tolerance_grad(gtol)
                .map_err(|e| OptError::BadObjective(e.to_string()))?;
            run!(l)
        }
        OptMethod::Gradient => {
            let ls = BacktrackingLineSearch::new(
                ArmijoCondition::new(1e-4).map_err(|e| OptError::BadObjective(e.to_string()))?,
            );
            run!(SteepestDescent::new(ls))
        }
        OptMethod::Ddp => run_ddp(obj, opts, &shared, (&x0, c0), gtol, start)?,
        OptMethod::Cem => run_cem(obj, opts, &shared, &x0),
    };
    report(obj, opts, &shared, ended, start, (gtol, scale))
}

/// The progress bar of a run (hidden without `opts.progress`).
fn progress_bar(opts: &OptimizeOptions) -> indicatif::ProgressBar {
    if opts.progress {
        let b = indicatif::ProgressBar::new(opts.max_iterations);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} iterations {msg} {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// How an argmin run ended: its termination reason, its iterations and
/// the error that stopped it (with the last simulation error recorded in
/// `shared`).
fn argmin_ended<S, I: State>(
    r: Result<OptimizationResult<Problem<'_>, S, I>, Error>,
    shared: &Mutex<Shared>,
) -> Ended {
    let mut error: Option<String> = None;
    let termination: String;
    let iterations;
    match r {
        Ok(res) => {
            iterations = res.state.get_iter();
            termination = match res.state.get_termination_status() {
                TerminationStatus::Terminated(TerminationReason::TargetCostReached) => {
                    "target cost reached".into()
                }
                TerminationStatus::Terminated(TerminationReason::MaxItersReached) => {
                    "iteration limit".into()
                }
                TerminationStatus::Terminated(TerminationReason::SolverConverged) => {
                    "solver converged".into()
                }
                TerminationStatus::Terminated(TerminationReason::SolverExit(msg)) => {
                    let s = shared.lock().unwrap_or_else(|e| e.into_inner());
                    error = Some(match &s.last_error {
                        Some(m) if !msg.contains(m.as_str()) => format!("{msg} ({m})"),
                        _ => msg.clone(),
                    });
                    "stopped by an error".into()
                }
                other => format!("{other:?}"),
            };
        }
        Err(e) => {
            let s = shared.lock().unwrap_or_else(|e| e.into_inner());
            iterations = s.cost.len().saturating_sub(1) as u64;
            if e.to_string() == STOP {
                termination = s.stop.clone().unwrap_or_default();
            } else {
                termination = "stopped by an error".into();
                error = Some(match &s.last_error {
                    Some(m) => format!("{e} ({m})"),
                    None => e.to_string(),
                });
            }
        }
    }
    Ended {
        termination,
        iterations,
        error,
    }
}

/// Full DDP from `x0` (cost `c0`) until the target cost, the iteration
/// limit, the time budget, first-order optimality or no decrease.
fn run_ddp(
    obj: &Objective,
    opts: &OptimizeOptions,
    shared: &Mutex<Shared>,
    (x0, c0): (&[f64], f64),
    gtol: f64,
    start: Instant,
) -> Result<Ended, OptError> {
    let (target, max_iters) = (opts.target_cost, opts.max_iterations);
    let bounded = obj.bounds().is_some();
    let mut error: Option<String> = None;
    let mut ddp = super::ddp::Ddp::new(obj)?;
    let deadline = opts
        .max_seconds
        .map(|m| start + std::time::Duration::from_secs_f64(m));
    let mut delta = x0.to_vec();
    let mut cost = c0;
    let mut it = 0u64;
    let termination = loop {
        if cost <= target {
            break "target cost reached".into();
        }
        if it >= max_iters {
            break "iteration limit".into();
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break format!("time budget of {} s used", opts.max_seconds.unwrap_or(0.0));
        }
        match ddp.iterate(&delta, cost, gtol, deadline) {
            Err(e) => {
                error = Some(e.to_string());
                break "stopped by an error".into();
            }
            Ok(r) if r.converged => {
                let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                s.converged = true;
                break format!(
                    "first-order optimality: {}gradient norm {:.3e} <= {gtol:.3e} (tolerance x cost scale)",
                    if bounded { "projected " } else { "" },
                    ddp.gradient_norm
                );
            }
            Ok(r) => {
                it += 1;
                let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                if r.accepted {
                    delta = r.delta;
                    cost = r.cost;
                    s.offer(&delta, cost);
                }
                s.record(it);
                if !r.accepted {
                    if ddp.out_of_time {
                        break format!("time budget of {} s used", opts.max_seconds.unwrap_or(0.0));
                    }
                    break format!("no decrease found (regularization {:.1e})", ddp.mu);
                }
            }
        }
    };
    Ok(Ended {
        termination,
        iterations: it,
        error,
    })
}

/// The cross-entropy method from `x0` until the target cost, the
/// iteration limit or the time budget.
fn run_cem(
    obj: &Objective,
    opts: &OptimizeOptions,
    shared: &Arc<Mutex<Shared>>,
    x0: &[f64],
) -> Ended {
    let (target, max_iters) = (opts.target_cost, opts.max_iterations);
    let mut iterations = 0;
    let sh = shared.clone();
    let mut cost = |p: &[f64]| -> Option<f64> {
        let r = obj.value(p);
        let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
        match r {
            Ok(c) => {
                s.offer(p, c);
                Some(c)
            }
            Err(e) => {
                s.last_error = Some(e.to_string());
                None
            }
        }
    };
    let mut reason = String::new();
    let mut stop = |it: usize, best: f64| -> bool {
        let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
        let t = s.start.elapsed().as_secs_f64();
        s.cost.push(best);
        s.times.push(t);
        s.bar.set_position(it as u64);
        s.bar.set_message(format!("cost {best:.3e}"));
        iterations = it as u64;
        if best <= target {
            reason = "target cost reached".into();
            true
        } else if it as u64 >= max_iters {
            reason = "iteration limit".into();
            true
        } else if opts.max_seconds.is_some_and(|m| t >= m) {
            reason = format!("time budget of {} s used", opts.max_seconds.unwrap_or(0.0));
            true
        } else {
            false
        }
    };
    let project = |p: &mut [f64]| obj.project(p);
    cem::minimize(&mut cost, x0, &opts.cem, &mut stop, &project);
    Ended {
        termination: reason,
        iterations,
        error: None,
    }
}

/// The report of a run that ended as `ended`: the best point found, its
/// gradient norm, whether it converged (relative to the cost scale
/// `scale`, `gtol` the gradient tolerance) and its solution.
fn report(
    obj: &Objective,
    opts: &OptimizeOptions,
    shared: &Mutex<Shared>,
    ended: Ended,
    start: Instant,
    (gtol, scale): (f64, f64),
) -> Result<OptimizeReport, OptError> {
    let Ended {
        termination,
        iterations,
        error,
    } = ended;
    let target = opts.target_cost;
    let wall_seconds = start.elapsed().as_secs_f64();
    let s = shared.lock().unwrap_or_else(|e| e.into_inner());
    s.bar.finish_and_clear();
    let (delta, best) = s.best.clone();
    let (cost, times) = (s.cost.clone(), s.times.clone());
    let converged_by_gradient = s.converged;
    drop(s);
    let gradient_norm = obj
        .gradient(&delta)
        .map(|(_, g)| obj.projected_gradient_norm(&delta, g.as_slice()))
        .unwrap_or(f64::NAN);
    let converged =
        error.is_none() && (best <= target || converged_by_gradient || gradient_norm <= gtol);
    let solution = obj
        .solution(&delta)?
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect();
    Ok(OptimizeReport {
        method: opts.method.name().to_string(),
        iterations,
        cost,
        times,
        gradient_norm,
        relative_gradient_norm: gradient_norm / scale,
        converged,
        termination,
        delta,
        solution,
        wall_seconds,
        error,
    })
}
