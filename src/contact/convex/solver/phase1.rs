use super::*;

/// Phase 1: find `f` strictly inside the cones with `(A f + c)_N > 0`, by the
/// barrier method on `max t s.t. v_N ≥ t` (see the module docs).
#[allow(clippy::needless_range_loop)] // parallel per-contact arrays
pub(super) fn phase1(
    model: &Model,
    a: &DMatrix<f64>,
    mut f: DVector<f64>,
    scale: f64,
    opts: &Options,
    iterations: &mut usize,
) -> Result<DVector<f64>, Failure> {
    let n = model.off.len();
    let m = model.m();
    let normal_scale: Vec<f64> = (0..n).map(|k| scale / model.normal_stiffness(k)).collect();
    let bound = PHASE1_BOUND * normal_scale.iter().sum::<f64>();
    let nu: f64 = model
        .dims
        .iter()
        .map(|&d| if d == 3 { 4.0 } else { 2.0 })
        .sum();
    let vel = |f: &DVector<f64>| model.normal_velocities(&model.a_times(f.as_slice()));
    let v = vel(&f);
    let mut t = v.iter().cloned().fold(f64::INFINITY, f64::min) - scale;
    let mut eta = 1.0 / v.iter().map(|vk| 1.0 / (vk - t)).sum::<f64>();
    // φ_η(f, t) = −t + η [−Σ log(v − t) − Σ log-cone(f) + ½ Σ (f_N / F)²]
    let objective = |f: &DVector<f64>, t: f64, eta: f64| -> f64 {
        let mut omega = 0.0;
        for (k, vk) in vel(f).into_iter().enumerate() {
            omega -= (vk - t).ln();
            let o = model.off[k];
            let fk = &f.as_slice()[o..o + model.dims[k]];
            omega -= fk[0].ln();
            if model.dims[k] == 3 {
                omega -= cone_gap(model.mu[k], fk).ln();
            }
            omega += 0.5 * (fk[0] / normal_scale[k]).powi(2);
        }
        -t + eta * omega
    };
    loop {
        let v = vel(&f);
        if !all_finite(v.iter()) || !t.is_finite() {
            return Err(Failure::NonFinite);
        }
        if v.iter().all(|&vk| vk > 0.0) {
            return Ok(f);
        }
        // Farkas certificate from the barrier's multipliers.
        let u: Vec<f64> = v.iter().map(|vk| vk - t).collect();
        let inv_u: Vec<f64> = u.iter().map(|x| 1.0 / x).collect();
        let total: f64 = inv_u.iter().sum();
        let y: Vec<f64> = inv_u.iter().map(|x| x / total).collect();
        let (yc, defect) = farkas_terms(model, a, &y);
        if yc + bound * defect <= PHASE1_MARGIN * scale || eta < 1e-15 * scale {
            return Err(Failure::Infeasible);
        }
        if *iterations >= opts.max_iterations {
            return Err(Failure::MaxIterations {
                iterations: *iterations,
                residual: f64::INFINITY,
            });
        }
        let (grad, hess) = barrier_derivatives(model, a, &f, &inv_u, eta, &normal_scale);
        let d = newton_direction(&hess, &grad)?;
        let slope = grad.dot(&d);
        let decrement = -slope / eta;
        // Numerically infeasible: at a centred point the barrier method's
        // duality gap bounds the best margin by t + ν η (doubled for the
        // inexact centring); ν = Σ_k (1 + 1 + 2 [friction]).
        if decrement <= CENTERED && t + 2.0 * nu * eta <= PHASE1_MARGIN * scale {
            return Err(Failure::Infeasible);
        }
        // Fraction to the boundary: cones and u = v − t > 0.
        let df = d.rows(0, m).into_owned();
        let dt = d[m];
        let adf = model.a_times(df.as_slice());
        let mut alpha_max = f64::INFINITY;
        for (k, &o) in model.off.iter().enumerate() {
            let e = o + model.dims[k];
            alpha_max = alpha_max.min(cone_max_step(
                model.mu[k],
                &f.as_slice()[o..e],
                &df.as_slice()[o..e],
            ));
            let du = adf[o] - dt;
            if du < 0.0 {
                alpha_max = alpha_max.min(-u[k] / du);
            }
        }
        let phi = objective(&f, t, eta);
        let mut alpha = (FRACTION_TO_BOUNDARY * alpha_max).min(1.0);
        let mut accepted = false;
        for _ in 0..MAX_BACKTRACKS {
            let ft = &f + &df * alpha;
            let tt = t + dt * alpha;
            let cones_ok = model
                .off
                .iter()
                .enumerate()
                .all(|(k, &o)| in_cone(model.mu[k], &ft.as_slice()[o..o + model.dims[k]]));
            if cones_ok && vel(&ft).iter().all(|vk| vk - tt > 0.0) {
                let pt = objective(&ft, tt, eta);
                if pt <= phi + ARMIJO * alpha * slope {
                    f = ft;
                    t = tt;
                    accepted = true;
                    break;
                }
            }
            alpha *= 0.5;
        }
        *iterations += 1;
        if !accepted || decrement <= CENTERED {
            // Centred (or no further progress at this η): tighten the barrier.
            eta /= KAPPA_REDUCTION;
        }
    }
}

/// The Farkas certificate's terms for the multipliers `y` of the velocity
/// barrier: `yᵀc_N` and `max_k(w_N,k + μ_k ‖w_T,k‖)` with `w = A_Nᵀ y`
/// (module docs, phase 1).
#[allow(clippy::needless_range_loop)] // parallel per-contact arrays
fn farkas_terms(model: &Model, a: &DMatrix<f64>, y: &[f64]) -> (f64, f64) {
    let n = model.off.len();
    let m = model.m();
    let mut w = DVector::<f64>::zeros(m);
    for k in 0..n {
        let row = model.off[k];
        for j in 0..m {
            w[j] += a[(row, j)] * y[k];
        }
    }
    let mut defect = 0.0_f64;
    let mut yc = 0.0;
    for k in 0..n {
        let o = model.off[k];
        yc += y[k] * model.c[o];
        let tang = if model.dims[k] == 3 {
            model.mu[k] * w[o + 1].hypot(w[o + 2])
        } else {
            0.0
        };
        defect = defect.max(w[o] + tang);
    }
    (yc, defect)
}

/// Gradient and Hessian of `φ_η` in `x = (f, t)` (module docs, phase 1),
/// with `inv_u = 1/(v_N − t)`.
#[allow(clippy::needless_range_loop)] // parallel per-contact arrays
fn barrier_derivatives(
    model: &Model,
    a: &DMatrix<f64>,
    f: &DVector<f64>,
    inv_u: &[f64],
    eta: f64,
    normal_scale: &[f64],
) -> (DVector<f64>, DMatrix<f64>) {
    let n = model.off.len();
    let m = model.m();
    // Gradient and Hessian of φ_η in x = (f, t).
    let mut grad = DVector::zeros(m + 1);
    let mut hess = DMatrix::zeros(m + 1, m + 1);
    // velocity barrier: −Σ log(A_N f + c_N − t), Jacobian rows [A_N, −1].
    let mut rows = DMatrix::zeros(n, m + 1);
    for k in 0..n {
        for j in 0..m {
            rows[(k, j)] = a[(model.off[k], j)];
        }
        rows[(k, m)] = -1.0;
    }
    for k in 0..n {
        for j in 0..=m {
            grad[j] -= eta * rows[(k, j)] * inv_u[k];
        }
    }
    let scaled = DMatrix::from_fn(n, m + 1, |k, j| rows[(k, j)] * inv_u[k] * eta.sqrt());
    hess.gemm_tr(1.0, &scaled, &scaled, 0.0);
    grad[m] -= 1.0;
    for k in 0..n {
        let o = model.off[k];
        let fk = &f.as_slice()[o..o + model.dims[k]];
        let reg = 1.0 / (normal_scale[k] * normal_scale[k]);
        if model.dims[k] == 1 {
            grad[o] += eta * (-1.0 / fk[0] + fk[0] * reg);
            hess[(o, o)] += eta * (1.0 / (fk[0] * fk[0]) + reg);
        } else {
            let gk = cone_gradient(model.mu[k], fk);
            let hk = cone_hessian(model.mu[k], fk);
            for i in 0..3 {
                grad[o + i] += eta * gk[i];
                for j in 0..3 {
                    hess[(o + i, o + j)] += eta * hk[i][j];
                }
            }
            grad[o] += eta * fk[0] * reg;
            hess[(o, o)] += eta * reg;
        }
    }
    (grad, hess)
}

/// The Newton direction `−H⁻¹ ∇φ` of phase 1. Degenerate problems (a
/// direction along which v does not change) make this SPD system
/// ill-conditioned as η → 0: it is factored with a tiny diagonal shift and
/// refined against the unshifted matrix.
fn newton_direction(hess: &DMatrix<f64>, grad: &DVector<f64>) -> Result<DVector<f64>, Failure> {
    let m = hess.nrows() - 1;
    let shift = 1e-12 * hess.diagonal().amax();
    let mut shifted = hess.clone();
    for i in 0..=m {
        shifted[(i, i)] += shift;
    }
    let chol = shifted.cholesky().ok_or(Failure::NonFinite)?;
    let rhs = -grad;
    let mut d = chol.solve(&rhs);
    for _ in 0..2 {
        let res = &rhs - hess * &d;
        d += chol.solve(&res);
    }
    if !all_finite(d.iter()) {
        return Err(Failure::NonFinite);
    }
    Ok(d)
}
