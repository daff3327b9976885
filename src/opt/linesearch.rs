//! A weak-Wolfe line search by bisection and doubling (Lewis and Overton,
//! "Nonsmooth optimization via quasi-Newton methods", 2013) for
//! argmin's L-BFGS, in which a trial point whose simulation fails is a
//! trial that went too far.
//!
//! argmin's Moré–Thuente search interpolates the cost and slope of its
//! trials, which `+∞` (the cost of a failed simulation) breaks, and asks
//! for the gradient at every trial, which a failed simulation cannot
//! give: L-BFGS stopped with an error at the first such trial. Here, from
//! `t = 1` along the direction `d` (slope `g₀·d < 0`):
//!
//! * a trial whose cost is `+∞`, whose gradient fails, or that misses
//!   sufficient decrease `f(t) ≤ f₀ + c₁ t g₀·d` (`c₁ = 10⁻⁴`) bounds the
//!   step from above;
//! * a trial whose slope is still steep, `g(t)·d < c₂ g₀·d` (`c₂ = 0.9`),
//!   bounds it from below;
//! * the next trial bisects the bracket, or doubles the step while no
//!   upper bound is known; the first trial that satisfies both conditions
//!   is taken (its curvature `yᵀs > 0` keeps L-BFGS's update positive
//!   definite).
//!
//! When the bracket shrinks to nothing (the cost jumps, or the simulation
//! starts failing, at one step length: no step meets both conditions), or
//! after 60 trials, the search fails with an error that says so; L-BFGS
//! then stops and reports its best iterate.

use argmin::core::{
    CostFunction, Error, Gradient, IterState, KV, Problem, Solver, TerminationReason,
    TerminationStatus,
};
use argmin::solver::linesearch::LineSearch;

const C1: f64 = 1e-4;
const C2: f64 = 0.9;
const MAX_TRIALS: usize = 60;

type St = IterState<Vec<f64>, Vec<f64>, (), (), (), f64>;

/// The line search (module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct WolfeBisection {
    dir: Vec<f64>,
    x0: Vec<f64>,
    f0: f64,
    slope0: f64,
    lo: f64,
    hi: f64,
    t: f64,
    trials: usize,
    failed: usize,
    accepted: bool,
}

impl LineSearch<Vec<f64>, f64> for WolfeBisection {
    fn search_direction(&mut self, direction: Vec<f64>) {
        self.dir = direction;
    }

    fn initial_step_length(&mut self, step_length: f64) -> Result<(), Error> {
        if !(step_length > 0.0 && step_length.is_finite()) {
            return Err(Error::msg(format!(
                "line search: initial step {step_length} must be positive and finite"
            )));
        }
        self.t = step_length;
        Ok(())
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl WolfeBisection {
    fn trial<O>(&mut self, problem: &mut Problem<O>, state: St) -> Result<(St, Option<KV>), Error>
    where
        O: CostFunction<Param = Vec<f64>, Output = f64>
            + Gradient<Param = Vec<f64>, Gradient = Vec<f64>>,
    {
        if self.trials >= MAX_TRIALS {
            return Err(Error::msg(format!(
                "line search: no step in {MAX_TRIALS} trials meets the Wolfe conditions \
                 (bracket [{:e}, {:e}], {} trials failed to simulate)",
                self.lo, self.hi, self.failed
            )));
        }
        self.trials += 1;
        let t = self.t;
        let x: Vec<f64> = self
            .x0
            .iter()
            .zip(&self.dir)
            .map(|(a, d)| a + t * d)
            .collect();
        let f = problem.cost(&x)?;
        let decrease = f.is_finite() && f <= self.f0 + C1 * t * self.slope0;
        let g = if decrease {
            problem
                .gradient(&x)
                .ok()
                .filter(|g| g.iter().all(|v| v.is_finite()))
        } else {
            None
        };
        if !f.is_finite() || (decrease && g.is_none()) {
            self.failed += 1;
        }
        match g {
            None => self.hi = t,
            Some(g) => {
                if dot(&g, &self.dir) < C2 * self.slope0 {
                    self.lo = t;
                } else {
                    self.accepted = true;
                    return Ok((state.param(x).cost(f).gradient(g), None));
                }
            }
        }
        if self.hi.is_finite() && self.hi - self.lo <= 1e-12 * self.hi {
            return Err(Error::msg(format!(
                "line search: no step meets the Wolfe conditions: the cost jumps, or the \
                 simulation fails, just beyond step {:e} along the direction ({} of {} trials \
                 failed to simulate)",
                self.lo, self.failed, self.trials
            )));
        }
        self.t = if self.hi.is_finite() {
            0.5 * (self.lo + self.hi)
        } else {
            2.0 * self.lo
        };
        // not accepted: the state stays at the start
        Ok((state.param(self.x0.clone()).cost(self.f0), None))
    }
}

impl<O> Solver<O, St> for WolfeBisection
where
    O: CostFunction<Param = Vec<f64>, Output = f64>
        + Gradient<Param = Vec<f64>, Gradient = Vec<f64>>,
{
    fn name(&self) -> &str {
        "weak-Wolfe bisection line search"
    }

    fn init(&mut self, problem: &mut Problem<O>, mut state: St) -> Result<(St, Option<KV>), Error> {
        let x0 = state
            .take_param()
            .ok_or_else(|| Error::msg("line search: no starting point"))?;
        let f0 = match state.get_cost() {
            c if c.is_finite() => c,
            _ => problem.cost(&x0)?,
        };
        let g0 = match state.take_gradient() {
            Some(g) => g,
            None => problem.gradient(&x0)?,
        };
        let slope0 = dot(&g0, &self.dir);
        if !(slope0 < 0.0) {
            return Err(Error::msg(format!(
                "line search: not a descent direction (slope {slope0:e})"
            )));
        }
        if !(self.t > 0.0) {
            self.t = 1.0;
        }
        *self = WolfeBisection {
            dir: std::mem::take(&mut self.dir),
            x0,
            f0,
            slope0,
            lo: 0.0,
            hi: f64::INFINITY,
            t: self.t,
            trials: 0,
            failed: 0,
            accepted: false,
        };
        self.trial(problem, state)
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: St,
    ) -> Result<(St, Option<KV>), Error> {
        self.trial(problem, state)
    }

    fn terminate(&mut self, _state: &St) -> TerminationStatus {
        if self.accepted {
            TerminationStatus::Terminated(TerminationReason::SolverConverged)
        } else {
            TerminationStatus::NotTerminated
        }
    }
}
