//! Full DDP: a stage-wise Newton method over per-step controls with the
//! exact second-order terms of each step.
//!
//! Each iteration linearizes the rollout along the current controls
//! ([`Linearization`], second order), then runs the Riccati recursion
//! backward from `V_x = ∇c_N`, `V_xx = ∇²c_N`:
//!
//! ```text
//! Q_x  = c_x + Aᵀ V_x               Q_u  = c_u + Bᵀ V_x
//! Q_xx = c_xx + Aᵀ V_xx A + V_x·Φ_xx
//! Q_uu = c_uu + Bᵀ V_xx B + V_x·Φ_uu + μ I
//! Q_ux = c_ux + Bᵀ V_xx A + V_x·Φ_ux
//! k = −Q_uu⁻¹ Q_u,   K = −Q_uu⁻¹ Q_ux
//! V_x  = Q_x + Kᵀ Q_uu k + Kᵀ Q_u + Q_uxᵀ k
//! V_xx = Q_xx + Kᵀ Q_uu K + Kᵀ Q_ux + Q_uxᵀ K
//! ```
//!
//! `V_x·Φ_zz` is the step's second derivative contracted with `V_x`
//! ([`Linearization::step_hessian`]: the second-order implicit function
//! theorem at the solver's solution). iLQR and Crocoddyl's FDDP drop it;
//! "full" DDP keeps it, so that near the optimum the step is Newton's.
//! When some `Q_uu + μ I` is not positive definite (far from a minimum
//! `V_x·Φ` can make it indefinite), the iteration line-searches both the
//! iLQR step at the same `μ` (the recursion without `V_x·Φ`) and full DDP
//! at the smallest larger `μ` (×10) that is positive definite, and takes
//! the lower cost. `μ` (Levenberg–Marquardt) grows when no trial
//! decreases the cost, and shrinks after a success. The forward pass
//! rolls out `u_k = ū_k + α k_k + K_k (x_k ⊖ x̄_k)` for `α = 1, ½, …`
//! and accepts the first cost decrease of at least 10⁻⁴ of the predicted
//! one; a simulation that fails at a trial is a rejected trial (cost
//! +∞).

use std::time::Instant;

use super::{Objective, OptError, Stages};
use crate::diff::adjoint::state_difference;
use crate::diff::{DiffOptions, Input, Linearization};
use crate::math::{DMat, DVec};
use crate::sim::step;

/// Which control entries DDP moves: per step, the decision variable of
/// each moved entry.
struct Layout {
    /// `(control entry, decision variable)` per moved entry, the same
    /// entries at every step.
    entries: Vec<usize>,
    /// `column[k][j]`: the decision variable of entry `entries[j]` at step `k`.
    column: Vec<Vec<usize>>,
}

fn layout(obj: &Objective) -> Result<Layout, OptError> {
    let steps = obj.steps;
    let mut per: Vec<Vec<(usize, usize)>> = vec![Vec::new(); steps];
    for (c, inp) in obj.inputs.iter().enumerate() {
        match *inp {
            Input::Control { step, index } if step < steps => per[step].push((index, c)),
            _ => {
                return Err(OptError::Unsupported {
                    method: "ddp",
                    what: "optimize decision variables other than per-step controls: every \
                           decision variable must be a control entry (`NAME.control`); use \
                           newton for the others"
                        .into(),
                });
            }
        }
    }
    let entries: Vec<usize> = per
        .first()
        .map(|p| p.iter().map(|e| e.0).collect())
        .unwrap_or_default();
    if entries.is_empty()
        || per
            .iter()
            .any(|p| p.iter().map(|e| e.0).collect::<Vec<_>>() != entries)
    {
        return Err(OptError::BadObjective(
            "ddp needs the same control entries as decision variables at every step".into(),
        ));
    }
    let column = per
        .iter()
        .map(|p| p.iter().map(|e| e.1).collect())
        .collect();
    Ok(Layout { entries, column })
}

/// One DDP iteration's outcome.
pub(super) struct Iteration {
    /// The new offsets (unchanged when no trial was accepted).
    pub delta: Vec<f64>,
    /// The cost there.
    pub cost: f64,
    /// Whether a step was accepted.
    pub accepted: bool,
    /// Whether the iterate already met the gradient tolerance (no step
    /// taken).
    pub converged: bool,
}

/// A backward pass's feedforward and feedback terms and the predicted
/// decrease's linear and quadratic parts.
type Pass = (Vec<DVec<f64>>, Vec<DMat<f64>>, f64, f64);

/// An accepted forward pass.
struct Trial {
    delta: Vec<f64>,
    cost: f64,
    alpha: f64,
    ks: Vec<DVec<f64>>,
}

/// What every backward pass of one iteration reuses.
struct Parts<'p> {
    /// Per step, the second derivatives of each output.
    tensors: &'p [Vec<DMat<f64>>],
    /// Per step, the stage cost's gradient and Hessian in `(ξ, u)`.
    stage: &'p [(DVec<f64>, DMat<f64>)],
    /// The final stage's.
    terminal: &'p (DVec<f64>, DMat<f64>),
}

/// The DDP state carried between iterations.
pub(super) struct Ddp<'a> {
    obj: &'a Objective,
    lay: Layout,
    /// Levenberg–Marquardt regularization of `Q_uu`.
    pub mu: f64,
    /// The gradient norm at the current iterate (by the adjoint of the
    /// same linearization).
    pub gradient_norm: f64,
    /// Whether the last iteration stopped at the deadline.
    pub out_of_time: bool,
    /// The last backward pass's feedforward terms (the box QPs' warm start).
    warm: Vec<DVec<f64>>,
}

const MU_MIN: f64 = 1e-9;
const MU_MAX: f64 = 1e10;

impl<'a> Ddp<'a> {
    pub fn new(obj: &'a Objective) -> Result<Self, OptError> {
        Ok(Ddp {
            obj,
            lay: layout(obj)?,
            mu: 1e-6,
            gradient_norm: f64::INFINITY,
            out_of_time: false,
            warm: Vec::new(),
        })
    }

    /// One iteration from `delta` (cost `cost`).
    pub fn iterate(
        &mut self,
        delta: &[f64],
        cost: f64,
        gtol: f64,
        deadline: Option<Instant>,
    ) -> Result<Iteration, OptError> {
        let obj = self.obj;
        let (w, x0, us) = obj.at(delta)?;
        let lin = Linearization::new(&w, &x0, &us, obj.steps, &[], true, &DiffOptions::default())?;
        let stages = Stages(obj);
        let nv = w.model.nv;
        let n = obj.steps;
        let ent = &self.lay.entries;
        let nu = ent.len();
        let r = obj.regularization;
        // the gradient at the current iterate, from the same linearization
        let (_, ws) = lin.adjoints(&stages)?;
        let mut grad = vec![0.0; obj.dim()];
        for k in 0..n {
            for (j, &e) in ent.iter().enumerate() {
                let c = self.lay.column[k][j];
                grad[c] = ws[k][2 * nv + e] + r * delta[c];
            }
        }
        // ‖∇f‖, or under bounds the projected gradient norm
        self.gradient_norm = obj.projected_gradient_norm(delta, &grad);
        let stay = |converged: bool| Iteration {
            delta: delta.to_vec(),
            cost,
            accepted: false,
            converged,
        };
        if self.gradient_norm <= gtol {
            return Ok(stay(true));
        }
        // each step's second derivatives, once per linearization (every
        // backward pass contracts them with its own V_x)
        let tensors: Vec<Vec<DMat<f64>>> = (0..n)
            .map(|k| lin.step_tensor(k))
            .collect::<Result<_, _>>()?;
        let stage: Vec<(DVec<f64>, DMat<f64>)> = (0..n)
            .map(|k| lin.stage_hessian(&stages, k))
            .collect::<Result<_, _>>()?;
        let terminal = lin.stage_hessian(&stages, n)?;
        let parts = Parts {
            tensors: &tensors,
            stage: &stage,
            terminal: &terminal,
        };
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                self.out_of_time = true;
                return Ok(stay(false));
            }
            // full DDP at this μ; where its Q_uu is not positive definite
            // (far from a minimum V_x·Φ can be indefinite), the better of
            // this μ's iLQR step (without V_x·Φ) and full DDP at the
            // smallest larger μ that makes it positive definite
            let mut best: Option<Trial> = None;
            let mut best_mu = self.mu;
            if let Some(p) = self.backward(&lin, &parts, delta, nv, nu, true) {
                best = self.search(&lin, delta, cost, p, deadline)?;
            } else {
                let mu0 = self.mu;
                if let Some(p) = self.backward(&lin, &parts, delta, nv, nu, false) {
                    best = self.search(&lin, delta, cost, p, deadline)?;
                }
                while self.mu <= MU_MAX {
                    self.mu = (self.mu * 10.0).max(1e-6);
                    if let Some(p) = self.backward(&lin, &parts, delta, nv, nu, true) {
                        if let Some(t) = self.search(&lin, delta, cost, p, deadline)? {
                            if best.as_ref().is_none_or(|b| t.cost < b.cost) {
                                best = Some(t);
                                best_mu = self.mu;
                            }
                        }
                        break;
                    }
                }
                if best_mu != self.mu {
                    self.mu = mu0;
                }
            }
            match best {
                Some(t) => {
                    self.mu = (best_mu / 10.0).max(MU_MIN);
                    // the next iteration's box QPs start from these
                    // steps, shifted by what was taken
                    self.warm = t.ks.iter().map(|k| k * (1.0 - t.alpha)).collect();
                    return Ok(Iteration {
                        delta: t.delta,
                        cost: t.cost,
                        accepted: true,
                        converged: false,
                    });
                }
                None => {
                    self.mu = (self.mu * 10.0).max(1e-6);
                    if self.mu > MU_MAX {
                        return Ok(stay(false));
                    }
                }
            }
        }
    }

    /// The forward passes of one backward pass's steps, `α = 1, ½, …`:
    /// the first that decreases the cost by at least 10⁻⁴ of the
    /// predicted decrease.
    fn search(
        &self,
        lin: &Linearization,
        delta: &[f64],
        cost: f64,
        pass: Pass,
        deadline: Option<Instant>,
    ) -> Result<Option<Trial>, OptError> {
        let (ks, kk, dv1, dv2) = pass;
        let mut alpha = 1.0;
        while alpha > 1e-4 && !deadline.is_some_and(|d| Instant::now() >= d) {
            if let Some((d, c)) = self.forward(lin, delta, &ks, &kk, alpha)? {
                let expected = -(alpha * dv1 + 0.5 * alpha * alpha * dv2);
                if c.is_finite() && cost - c >= 1e-4 * expected.max(0.0) && c < cost {
                    return Ok(Some(Trial {
                        delta: d,
                        cost: c,
                        alpha,
                        ks,
                    }));
                }
            }
            alpha *= 0.5;
        }
        Ok(None)
    }

    /// The Riccati recursion; `None` when some `Q_uu + μ I` is not
    /// positive definite. Returns the feedforward and feedback terms and
    /// the predicted decrease's linear and quadratic parts.
    fn backward(
        &self,
        lin: &Linearization,
        parts: &Parts<'_>,
        delta: &[f64],
        nv: usize,
        nu: usize,
        full: bool,
    ) -> Option<Pass> {
        let n = self.obj.steps;
        let ent = &self.lay.entries;
        let r = self.obj.regularization;
        let mut vx = parts.terminal.0.clone();
        let mut vxx = parts.terminal.1.clone();
        let mut ks = vec![DVec::zeros(nu); n];
        let mut kk = vec![DMat::zeros(nu, 2 * nv); n];
        let (mut dv1, mut dv2) = (0.0, 0.0);
        for k in (0..n).rev() {
            let j = &lin.jacobians[k];
            let a = j.columns(0, 2 * nv).into_owned();
            let b = DMat::from_fn(2 * nv, nu, |i, c| j[(i, 2 * nv + ent[c])]);
            let (g, h) = &parts.stage[k];
            let m = parts.tensors[k][0].nrows();
            let mut f = DMat::zeros(m, m);
            for (vi, ti) in vx.iter().zip(&parts.tensors[k]) {
                if full && *vi != 0.0 {
                    f += ti * *vi;
                }
            }
            let ui = |c: usize| 2 * nv + ent[c];
            let qx = g.rows(0, 2 * nv).into_owned() + a.transpose() * &vx;
            let mut qu = DVec::from_fn(nu, |c, _| g[ui(c)] + r * delta[self.lay.column[k][c]])
                + b.transpose() * &vx;
            let qxx = h.view((0, 0), (2 * nv, 2 * nv)).into_owned()
                + a.transpose() * &vxx * &a
                + f.view((0, 0), (2 * nv, 2 * nv));
            let mut quu = DMat::from_fn(nu, nu, |p, q| h[(ui(p), ui(q))] + f[(ui(p), ui(q))])
                + b.transpose() * &vxx * &b;
            let qux = DMat::from_fn(nu, 2 * nv, |p, q| h[(ui(p), q)] + f[(ui(p), q)])
                + b.transpose() * &vxx * &a;
            for p in 0..nu {
                quu[(p, p)] += r;
            }
            let mut reg = quu.clone();
            for p in 0..nu {
                reg[(p, p)] += self.mu;
            }
            let (kff, kfb) = match self.obj.bounds() {
                None => {
                    let ch = reg.cholesky()?;
                    (-ch.solve(&qu), -ch.solve(&qux))
                }
                Some((lo, hi)) => {
                    // box-DDP: the feedforward term solves the box QP of
                    // the control's bounds; clamped controls get no feedback
                    let col = &self.lay.column[k];
                    let l = DVec::from_fn(nu, |c, _| lo[col[c]] - delta[col[c]]);
                    let h = DVec::from_fn(nu, |c, _| hi[col[c]] - delta[col[c]]);
                    let warm = self.warm.get(k).cloned().unwrap_or_else(|| DVec::zeros(nu));
                    let (kff, free) = box_qp(&reg, &qu, &l, &h, &warm)?;
                    let mut kfb = DMat::zeros(nu, 2 * nv);
                    let fi: Vec<usize> = (0..nu).filter(|&c| free[c]).collect();
                    if !fi.is_empty() {
                        let hf = DMat::from_fn(fi.len(), fi.len(), |a, b| reg[(fi[a], fi[b])]);
                        let qf = DMat::from_fn(fi.len(), 2 * nv, |a, b| qux[(fi[a], b)]);
                        let kf = -hf.cholesky()?.solve(&qf);
                        for (a, &c) in fi.iter().enumerate() {
                            kfb.set_row(c, &kf.row(a));
                        }
                    }
                    (kff, kfb)
                }
            };
            qu = qu.clone();
            dv1 += kff.dot(&qu);
            dv2 += kff.dot(&(&quu * &kff));
            vx = &qx
                + kfb.transpose() * &quu * &kff
                + kfb.transpose() * &qu
                + qux.transpose() * &kff;
            let v = &qxx
                + kfb.transpose() * &quu * &kfb
                + kfb.transpose() * &qux
                + qux.transpose() * &kfb;
            vxx = (&v + v.transpose()) * 0.5;
            ks[k] = kff;
            kk[k] = kfb;
        }
        Some((ks, kk, dv1, dv2))
    }

    /// The closed-loop rollout at step size `alpha`: the new offsets and
    /// their cost, summed along the same rollout (`None` when the
    /// simulation fails).
    fn forward(
        &self,
        lin: &Linearization,
        delta: &[f64],
        ks: &[DVec<f64>],
        kk: &[DMat<f64>],
        alpha: f64,
    ) -> Result<Option<(Vec<f64>, f64)>, OptError> {
        let obj = self.obj;
        let w = lin.world();
        let stages = Stages(obj);
        let mut x = lin.states[0].clone();
        let mut d = delta.to_vec();
        let mut cost = 0.0;
        for k in 0..obj.steps {
            let dx = state_difference(w, &lin.states[k], &x);
            let du = &ks[k] * alpha + &kk[k] * dx;
            let mut u = lin.controls[k].clone();
            for (j, &e) in self.lay.entries.iter().enumerate() {
                let c = self.lay.column[k][j];
                match obj.bounds() {
                    None => {
                        d[c] += du[j];
                        u[e] += du[j];
                    }
                    Some((lo, hi)) => {
                        d[c] = (delta[c] + du[j]).clamp(lo[c], hi[c]);
                        u[e] += d[c] - delta[c];
                    }
                }
            }
            if crate::diff::StageCost::active(&stages, k) {
                cost += crate::diff::StageCost::eval(&stages, k, w, &x, Some(&u));
            }
            match step(w, &x, &u) {
                Ok(o) => x = o.state,
                Err(_) => return Ok(None),
            }
        }
        if crate::diff::StageCost::active(&stages, obj.steps) {
            cost += crate::diff::StageCost::eval(&stages, obj.steps, w, &x, None);
        }
        cost += 0.5 * obj.regularization * d.iter().map(|v| v * v).sum::<f64>();
        Ok(cost.is_finite().then_some((d, cost)))
    }
}

/// Minimizes `½ xᵀ H x + gᵀ x` over `l ≤ x ≤ u` by projected Newton
/// (Tassa, Mansard and Todorov 2014, "Control-limited differential dynamic
/// programming", Algorithm 3), from `x0` clamped into the box. Returns the
/// minimizer and which entries are free (not clamped at a bound with the
/// gradient pushing outward); `None` when `H` restricted to the free set is
/// not positive definite.
fn box_qp(
    h: &DMat<f64>,
    g: &DVec<f64>,
    l: &DVec<f64>,
    u: &DVec<f64>,
    x0: &DVec<f64>,
) -> Option<(DVec<f64>, Vec<bool>)> {
    let n = g.len();
    let clamp = |x: &DVec<f64>| DVec::from_fn(n, |i, _| x[i].clamp(l[i], u[i]));
    let value = |x: &DVec<f64>| x.dot(g) + 0.5 * x.dot(&(h * x));
    let mut x = clamp(x0);
    let mut v = value(&x);
    let clamped_at = |x: &DVec<f64>| -> Vec<bool> {
        let grad = g + h * x;
        (0..n)
            .map(|i| (x[i] <= l[i] && grad[i] > 0.0) || (x[i] >= u[i] && grad[i] < 0.0))
            .collect()
    };
    for _ in 0..100 {
        let clamped = clamped_at(&x);
        let fi: Vec<usize> = (0..n).filter(|&i| !clamped[i]).collect();
        if fi.is_empty() {
            break;
        }
        let grad = g + h * &x;
        if fi.iter().map(|&i| grad[i] * grad[i]).sum::<f64>().sqrt() < 1e-13 * (1.0 + g.norm()) {
            break;
        }
        // Newton on the free set with the clamped entries held
        let xc = DVec::from_fn(n, |i, _| if clamped[i] { x[i] } else { 0.0 });
        let gc = g + h * xc;
        let hf = DMat::from_fn(fi.len(), fi.len(), |a, b| h[(fi[a], fi[b])]);
        let gf = DVec::from_fn(fi.len(), |a, _| gc[fi[a]]);
        let target = -hf.cholesky()?.solve(&gf);
        let mut search = DVec::zeros(n);
        for (a, &i) in fi.iter().enumerate() {
            search[i] = target[a] - x[i];
        }
        let sdotg = search.dot(&grad);
        if sdotg >= 0.0 {
            break;
        }
        // projected Armijo line search
        let mut step = 1.0;
        let mut next = None;
        while step > 1e-20 {
            let xt = clamp(&(&x + &search * step));
            let vt = value(&xt);
            if (vt - v) / (step * sdotg) > 0.1 {
                next = Some((xt, vt));
                break;
            }
            step *= 0.6;
        }
        let Some((xt, vt)) = next else {
            break;
        };
        let improvement = v - vt;
        x = xt;
        v = vt;
        if improvement < 1e-14 * (1.0 + v.abs()) {
            break;
        }
    }
    let clamped = clamped_at(&x);
    Some((x, clamped.iter().map(|c| !c).collect()))
}
