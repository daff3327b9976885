//! Bound-constrained `newton`, `gauss_newton` and `gradient`: Bertsekas'
//! projected Newton method (Bertsekas 1982, "Projected Newton methods for
//! optimization problems with simple constraints").
//!
//! argmin has no bound-constrained Newton or gradient solver, so with
//! `[[objective.bounds]]` these three methods run this loop instead of
//! argmin's trust region and steepest descent. At an iterate `δ` with
//! gradient `g`:
//!
//! * the active set `A` holds the variables within `ε = min(10⁻³,
//!   ‖P(δ − g) − δ‖)` of a bound whose gradient pushes them out of the box;
//!   the free set `F` is the rest;
//! * the direction is Newton's on the free set, `d_F = −(H_FF + μ I)⁻¹ g_F`
//!   (`H` the exact or the Gauss–Newton Hessian; `μ` Levenberg–Marquardt,
//!   raised until the Cholesky factorization succeeds), and `d_A = −g_A`;
//!   `gradient` takes `d = −g`;
//! * the step is `δ(α) = P(δ + α d)`, `α = α₀, α₀/2, …`, accepted by
//!   Bertsekas' Armijo condition
//!   `f(δ) − f(δ(α)) ≥ σ (α Σ_F (−g_i d_i) + Σ_A g_i (δ_i − δ_i(α)))`,
//!   `σ = 10⁻⁴`; a simulation that fails at a trial is a rejected trial;
//! * it stops on the projected gradient norm `‖P(δ − g) − δ‖` (zero
//!   exactly at a point that satisfies the KKT conditions), the target
//!   cost, the iteration limit or the time budget.
//!
//! Near a non-degenerate solution the active set settles and the
//! iteration is Newton's method on the free variables (quadratic
//! convergence with the exact Hessian).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::solve::{OptMethod, Shared};
use super::{HessianMethod, Objective, OptError};
use crate::math::{DMat, DVec};

const SIGMA: f64 = 1e-4;
const MU_MIN: f64 = 1e-12;
const MU_MAX: f64 = 1e12;

/// How the loop ended: the termination string, iterations, the error.
pub(super) struct Ended {
    pub termination: String,
    pub iterations: u64,
    pub error: Option<String>,
}

/// Runs the projected Newton (or gradient) method from `x0` (feasible).
#[allow(clippy::too_many_arguments)]
pub(super) fn minimize(
    obj: &Objective,
    method: OptMethod,
    shared: &Arc<Mutex<Shared>>,
    x0: &[f64],
    f0: f64,
    gtol: f64,
    target: f64,
    max_iters: u64,
    max_seconds: Option<f64>,
) -> Ended {
    let start = shared.lock().unwrap_or_else(|e| e.into_inner()).start;
    let deadline = max_seconds.map(|m| start + std::time::Duration::from_secs_f64(m));
    let out_of_time = || format!("time budget of {} s used", max_seconds.unwrap_or(0.0));
    let (lo, hi) = bounds(obj, x0.len());
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let mut x = x0.to_vec();
    let mut f = f0;
    let mut mu = 1e-8;
    let mut alpha0: f64 = 1.0;
    let mut it = 0u64;
    let end = |termination: String, it: u64, error: Option<String>| Ended {
        termination,
        iterations: it,
        error,
    };
    loop {
        if f <= target {
            return end("target cost reached".into(), it, None);
        }
        let d = match derivatives(obj, method, &x) {
            Ok(d) => d,
            Err(e) => return end("stopped by an error".into(), it, Some(e.to_string())),
        };
        let g: Vec<f64> = d.gradient.iter().copied().collect();
        let pg = obj.projected_gradient_norm(&x, &g);
        lock().grad_norm = pg;
        if pg <= gtol {
            lock().converged = true;
            return end(
                format!(
                    "first-order optimality: projected gradient norm {pg:.3e} <= {gtol:.3e} \
                     (tolerance x cost scale)"
                ),
                it,
                None,
            );
        }
        if it >= max_iters {
            return end("iteration limit".into(), it, None);
        }
        if deadline.is_some_and(|t| Instant::now() >= t) {
            return end(out_of_time(), it, None);
        }
        let (active, free) = active_set(&x, &g, (&lo, &hi), pg.min(1e-3));
        let arc = ArcSearch {
            x: &x,
            f,
            g: &g,
            active: &active,
            lo: &lo,
            hi: &hi,
        };
        let accepted = loop {
            let Some(dir) = direction(method, &g, &free, &d.hessian, &mut mu) else {
                break None;
            };
            let alpha = if method == OptMethod::Gradient {
                alpha0
            } else {
                1.0
            };
            let found = arc.search(obj, &dir, alpha, deadline);
            match found {
                Some(t) => break Some(t),
                None if method != OptMethod::Gradient && mu < MU_MAX => {
                    // a shorter, more gradient-like step
                    mu = (mu * 100.0).max(1e-6);
                }
                None => break None,
            }
        };
        it += 1;
        let mut s = lock();
        match accepted {
            Some((trial, ft, alpha)) => {
                if method == OptMethod::Gradient {
                    alpha0 = 2.0 * alpha;
                } else if alpha == 1.0 {
                    mu = (mu / 10.0).max(MU_MIN);
                }
                x = trial;
                f = ft;
                s.offer(&x, f);
                s.record(it);
            }
            None => {
                s.record(it);
                drop(s);
                if deadline.is_some_and(|t| Instant::now() >= t) {
                    return end(out_of_time(), it, None);
                }
                return end(
                    format!("no decrease found along the projection arc (regularization {mu:.1e})"),
                    it,
                    None,
                );
            }
        }
    }
}

/// The box of `obj` (unbounded where it has none) for `n` variables.
fn bounds(obj: &Objective, n: usize) -> (Vec<f64>, Vec<f64>) {
    obj.bounds()
        .map(|(l, h)| (l.to_vec(), h.to_vec()))
        .unwrap_or_else(|| (vec![f64::NEG_INFINITY; n], vec![f64::INFINITY; n]))
}

/// The value, gradient and Hessian `method` uses at `x` (the exact or the
/// Gauss–Newton Hessian; none for `gradient`).
fn derivatives(
    obj: &Objective,
    method: OptMethod,
    x: &[f64],
) -> Result<super::Derivatives, OptError> {
    match method {
        OptMethod::Newton => obj.hessian(x, HessianMethod::Adjoint),
        OptMethod::GaussNewton => obj.gauss_newton(x),
        _ => obj.gradient(x).map(|(value, gradient)| super::Derivatives {
            value,
            gradient,
            hessian: DMat::zeros(0, 0),
        }),
    }
}

/// The active set at `x` (gradient `g`): the variables within `eps` of a
/// bound of the box `(lo, hi)` whose gradient pushes them out; and the
/// free set, the rest.
fn active_set(
    x: &[f64],
    g: &[f64],
    (lo, hi): (&[f64], &[f64]),
    eps: f64,
) -> (Vec<bool>, Vec<usize>) {
    let n = x.len();
    let active: Vec<bool> = (0..n)
        .map(|i| (x[i] - lo[i] <= eps && g[i] > 0.0) || (hi[i] - x[i] <= eps && g[i] < 0.0))
        .collect();
    let free: Vec<usize> = (0..n).filter(|&i| !active[i]).collect();
    (active, free)
}

/// The search direction: `−g`, on the free set (not for `gradient`)
/// Newton's `−(H_FF + μ I)⁻¹ g_F`, `μ` raised until the Cholesky
/// factorization succeeds; `None` when it fails at `μ ≥ MU_MAX`.
fn direction(
    method: OptMethod,
    g: &[f64],
    free: &[usize],
    hessian: &DMat<f64>,
    mu: &mut f64,
) -> Option<Vec<f64>> {
    let mut dir: Vec<f64> = g.iter().map(|gi| -gi).collect();
    if method != OptMethod::Gradient && !free.is_empty() {
        let m = free.len();
        let mut h = DMat::from_fn(m, m, |a, b| hessian[(free[a], free[b])]);
        let sym = (&h + h.transpose()) * 0.5;
        h = sym;
        let chol = loop {
            let mut hm = h.clone();
            for a in 0..m {
                hm[(a, a)] += *mu;
            }
            match hm.cholesky() {
                Some(c) => break Some(c),
                None if *mu < MU_MAX => *mu = (*mu * 10.0).max(1e-8),
                None => break None,
            }
        };
        let chol = chol?;
        let gf = DVec::from_fn(m, |a, _| g[free[a]]);
        let df = -chol.solve(&gf);
        for (a, &i) in free.iter().enumerate() {
            dir[i] = df[a];
        }
    }
    Some(dir)
}

/// The iterate of the projection arc search: `x`, its cost `f`, gradient
/// `g` and active set, and the box `(lo, hi)`.
struct ArcSearch<'a> {
    x: &'a [f64],
    f: f64,
    g: &'a [f64],
    active: &'a [bool],
    lo: &'a [f64],
    hi: &'a [f64],
}

impl ArcSearch<'_> {
    /// The first step along the projection arc `P(x + α dir)`, `α = alpha,
    /// alpha/2, …` down to 1e-12 (or until the `deadline`), that Bertsekas'
    /// Armijo condition accepts: `(trial, its cost, α)`.
    fn search(
        &self,
        obj: &Objective,
        dir: &[f64],
        mut alpha: f64,
        deadline: Option<Instant>,
    ) -> Option<(Vec<f64>, f64, f64)> {
        let ArcSearch {
            x,
            f,
            g,
            active,
            lo,
            hi,
        } = *self;
        let n = x.len();
        while alpha > 1e-12 {
            if deadline.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            let trial: Vec<f64> = (0..n)
                .map(|i| (x[i] + alpha * dir[i]).clamp(lo[i], hi[i]))
                .collect();
            let ft = obj.value(&trial).unwrap_or(f64::INFINITY);
            let predicted: f64 = (0..n)
                .map(|i| {
                    if active[i] {
                        g[i] * (x[i] - trial[i])
                    } else {
                        -alpha * g[i] * dir[i]
                    }
                })
                .sum();
            if ft.is_finite() && f - ft >= SIGMA * predicted && ft <= f {
                return Some((trial, ft, alpha));
            }
            alpha *= 0.5;
        }
        None
    }
}

/// Bounds of an objective refused by a method that cannot honour them.
pub(super) fn refuse(method: OptMethod) -> OptError {
    OptError::Unsupported {
        method: method.name(),
        what: "take bounds ([[objective.bounds]]): use newton, gauss_newton, gradient, ddp or \
               cem, or remove the bounds"
            .into(),
    }
}
