use super::*;

/// Solve `J X = B`: symmetric diagonal equilibration (`S J S` with
/// `S = diag(|J_ii|^-½)`, which removes the ill-conditioning barrier terms
/// put on the diagonal blocks), LU with partial pivoting (full pivoting as
/// fallback) and one step of iterative refinement. `None` if the solution is
/// not finite.
pub(super) fn newton_solve(j: DMatrix<f64>, rhs: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let n = j.nrows();
    let scale = DVector::from_fn(n, |i, _| {
        let d = j[(i, i)].abs();
        if d > 0.0 && d.is_finite() {
            1.0 / d.sqrt()
        } else {
            1.0
        }
    });
    let scaled = DMatrix::from_fn(n, n, |r, c| scale[r] * j[(r, c)] * scale[c]);
    // faer's blocked partial-pivoting LU (an order of magnitude faster than
    // nalgebra's unblocked one at the sizes of a pile); when it meets an
    // exactly singular pivot (a non-finite solution), nalgebra's full
    // pivoting, as before.
    let partial = faer::MatRef::from_column_major_slice(scaled.as_slice(), n, n).partial_piv_lu();
    let solve_partial = |b: &DMatrix<f64>| -> Option<DMatrix<f64>> {
        use faer::linalg::solvers::Solve;
        let sb = faer::Mat::<f64>::from_fn(n, b.ncols(), |r, c| scale[r] * b[(r, c)]);
        let y = partial.solve(&sb);
        let x = DMatrix::from_fn(n, b.ncols(), |r, c| scale[r] * y[(r, c)]);
        all_finite(x.iter()).then_some(x)
    };
    let refined = |solve: &dyn Fn(&DMatrix<f64>) -> Option<DMatrix<f64>>| {
        let mut x = solve(rhs)?;
        let correction = solve(&(rhs - &j * &x))?;
        x += correction;
        all_finite(x.iter()).then_some(x)
    };
    if let Some(x) = refined(&solve_partial) {
        return Some(x);
    }
    let full = scaled.full_piv_lu();
    let solve_full = |b: &DMatrix<f64>| -> Option<DMatrix<f64>> {
        let sb = DMatrix::from_fn(b.nrows(), b.ncols(), |r, c| scale[r] * b[(r, c)]);
        let y = full.solve(&sb)?;
        Some(DMatrix::from_fn(y.nrows(), y.ncols(), |r, c| {
            scale[r] * y[(r, c)]
        }))
    };
    refined(&solve_full)
}

/// One damped Newton step along `d` at barrier weight `kappa`, keeping
/// strict feasibility (fraction to the boundary). Returns the new point, its
/// residual `g` and the step length.
///
/// 1. Away from the solution (Newton decrement `> LOCAL_DECREMENT`), if
///    `objective` and `d` descends the objective `Φ` (always when `d` is
///    `Φ`'s Newton direction, i.e. for symmetric `A`): Armijo backtracking on
///    `Φ` from the full step. `Φ/κ` is self-concordant, so steps are
///    `≳ 1/(1 + λ)`, and unlike a residual merit `Φ` cannot be decreased by
///    creeping along the boundary.
/// 2. Otherwise the full step if it reduces `‖g‖₂` (Armijo) or, in the
///    quadratic basin, the weighted `‖W g‖₂` (each `g_i` measured against
///    its rounding noise: near the floor the plain norm is all noise of the
///    stiffest components).
/// 3. Otherwise Armijo backtracking on `‖g‖₂`, which every Newton direction
///    of `g` descends.
pub(super) fn newton_step(
    model: &Model,
    f: &DVector<f64>,
    d: &DVector<f64>,
    kappa: f64,
    g: &DVector<f64>,
    weight: &DVector<f64>,
    objective: bool,
) -> Option<(DVector<f64>, DVector<f64>, f64)> {
    let merit = g.norm();
    let residual_at = |alpha: f64| -> Option<(DVector<f64>, DVector<f64>)> {
        let trial = f + d * alpha;
        if !model.feasible(trial.as_slice()) {
            return None;
        }
        let (t0, tb) = model.split(trial.as_slice());
        Some((trial, t0 + tb * kappa))
    };
    let armijo = |tg: &DVector<f64>, alpha: f64| {
        let tn = tg.norm();
        tn < merit && tn <= (1.0 - ARMIJO * alpha) * merit
    };
    let first = (FRACTION_TO_BOUNDARY * model.max_step(f.as_slice(), d.as_slice())).min(1.0);
    let local = g.dot(d).abs() / kappa <= LOCAL_DECREMENT;
    let slope = (g + model.skew(f.as_slice())).dot(d);
    if objective && !local && slope < 0.0 {
        let phi = model.objective(f.as_slice(), kappa);
        let mut alpha = first;
        for _ in 0..MAX_BACKTRACKS {
            let trial = f + d * alpha;
            let value = model.objective(trial.as_slice(), kappa);
            if value < phi && value <= phi + ARMIJO * alpha * slope {
                let (t0, tb) = model.split(trial.as_slice());
                return Some((trial, t0 + tb * kappa, alpha));
            }
            alpha *= 0.5;
        }
    }
    if let Some((trial, tg)) = residual_at(first) {
        if armijo(&tg, first) {
            return Some((trial, tg, first));
        }
        if local && tg.component_mul(weight).norm() < g.component_mul(weight).norm() {
            return Some((trial, tg, first));
        }
    }
    let mut alpha = 0.5 * first;
    for _ in 0..MAX_BACKTRACKS {
        if let Some((trial, tg)) = residual_at(alpha) {
            if armijo(&tg, alpha) {
                return Some((trial, tg, alpha));
            }
        }
        alpha *= 0.5;
    }
    None
}

/// Phase 2: Newton on `g = 0` with barrier continuation down to `kappa`.
/// `iterations` is the running Newton-step count shared with phase 1.
#[allow(clippy::too_many_arguments)]
pub(super) fn barrier_newton(
    model: &Model,
    mut f: DVector<f64>,
    kappa: f64,
    kappa_max: f64,
    warm: bool,
    gscale: f64,
    opts: &Options,
    iterations: &mut usize,
) -> Result<(DVector<f64>, f64), Failure> {
    let m = model.m();
    let tol = opts.tolerance * gscale;
    let kappa_max = kappa_max.max(kappa);
    let rescue_max = RESCUE_CEILING * kappa_max;
    let mut stage = first_stage(model, &f, kappa, kappa_max, warm);
    let mut short_steps = 0;
    let mut stage_steps = 0;
    let mut stagnated = false;
    let mut polish = model.symmetric;
    loop {
        let (g0, b) = model.split(f.as_slice());
        let g = &g0 + &b * stage;
        if !all_finite(g.iter()) {
            return Err(Failure::NonFinite);
        }
        let last = stage <= kappa;
        let residual = inf_norm(&(&g0 + &b * kappa));
        if last && residual <= tol {
            return Ok((f, residual));
        }
        if *iterations >= opts.max_iterations {
            return Err(Failure::MaxIterations {
                iterations: *iterations,
                residual,
            });
        }
        let jac = model.jacobian(f.as_slice(), stage);
        // Merit weights: g_i in units of what is acceptable for it, the
        // tolerance or its rounding noise ε·(size of the terms of g_i).
        let noise = model.rounding_noise(f.as_slice(), &jac, stage);
        let weight = noise.map(|x| 1.0 / (tol + ROUNDING_FLOOR * f64::EPSILON * x));
        // At the rounding floor: every |g_i| is within ROUNDING_FLOOR·ε of
        // the size of its terms (weighted |g_i| ≤ 1) and the last Newton step
        // no longer gained a factor 2. That is the answer if no barrier
        // argument is itself within 1000 ulps of its rounding (else the point
        // is stuck on the boundary, or the solution is beyond f64: κ too
        // small for the problem's scale — reported as MaxIterations).
        let noisy = |g: &DVector<f64>| (0..m).all(|i| (g[i] * weight[i]).abs() <= 1.0);
        let floor_exit = |f: DVector<f64>, iterations: usize| {
            if model.well_inside(f.as_slice()) {
                Ok((f, residual))
            } else {
                Err(Failure::MaxIterations {
                    iterations,
                    residual,
                })
            }
        };
        if last && stagnated && noisy(&g) {
            return floor_exit(f, *iterations);
        }
        let (d_c, tangent, decrement) =
            newton_directions(model, &f, &g, jac, &b, stage, polish).ok_or(Failure::NonFinite)?;
        *iterations += 1;
        if last && !polish && decrement <= LOCAL_DECREMENT {
            polish = true;
        }
        if !last && decrement <= CENTERED {
            // Centred: predictor-corrector step to the next stage
            // (`predictor_step`).
            let next;
            (f, next) = predictor_step(model, f, &d_c, &tangent, stage, kappa, &g0, &b, &weight, polish);
            stage = next;
            stage_steps = 0;
            stagnated = false;
            continue;
        }
        let merit = g.component_mul(&weight).norm();
        match newton_step(
            model,
            &f,
            &d_c,
            stage,
            &g,
            &weight,
            model.symmetric || !polish,
        ) {
            Some((trial, tg, alpha)) => {
                f = trial;
                stagnated = tg.component_mul(&weight).norm() >= STAGNATION * merit;
                short_steps = if alpha < SHORT_STEP {
                    short_steps + 1
                } else {
                    0
                };
            }
            None if last && noisy(&g) => return floor_exit(f, *iterations),
            None if stage < rescue_max => short_steps = RESCUE_AFTER,
            None => {
                return Err(Failure::MaxIterations {
                    iterations: *iterations,
                    residual,
                })
            }
        }
        stage_steps += 1;
        let stalled = stage_steps >= STALL_STEPS && decrement > 1.0;
        if (short_steps >= RESCUE_AFTER || stalled) && stage < rescue_max {
            // Stuck against the boundary (the classic failure of a weak
            // barrier started off-centre: steps shrink, or creep along a
            // curved cone surface): strengthen the barrier and continue the
            // continuation from there.
            stage = (stage * RESCUE_FACTOR).min(rescue_max);
            short_steps = 0;
            stage_steps = 0;
            stagnated = false;
        }
    }
}

/// The first stage of the continuation: `κ_max`, or for a warm start the
/// least-squares fit `−g₀ᵀb / bᵀb` clamped to `[κ, κ_max]` (module docs).
fn first_stage(model: &Model, f: &DVector<f64>, kappa: f64, kappa_max: f64, warm: bool) -> f64 {
if warm {
    let (g0, b) = model.split(f.as_slice());
    let fit = -g0.dot(&b) / b.norm_squared();
    if fit.is_finite() {
        fit.clamp(kappa, kappa_max)
    } else {
        kappa_max
    }
} else {
    kappa_max
}
}

/// The Newton directions at `f` from one factorization of the Jacobian
/// `jac` at the stage: the corrector `d_c = −J⁻¹ g(κ_stage)`, the tangent
/// `t = −J⁻¹ b` and the Newton decrement `|gᵀ d_c| / κ_stage`; `None` if the
/// solve is not finite.
#[allow(clippy::type_complexity)]
fn newton_directions(
    model: &Model,
    f: &DVector<f64>,
    g: &DVector<f64>,
    jac: DMatrix<f64>,
    b: &DVector<f64>,
    stage: f64,
    polish: bool,
) -> Option<(DVector<f64>, DVector<f64>, f64)> {
    let m = model.m();
    // Non-symmetric A: until the final stage is nearly converged, Newton
    // on the objective Φ (gradient g + ½(Aᵀ − A) f, Hessian J with A's
    // symmetric part), whose minimiser is within the asymmetry of the
    // root of g; then Newton on g itself. Identical for symmetric A.
    let (dir_g, dir_j) = if polish {
        (g.clone(), jac)
    } else {
        (g + model.skew(f.as_slice()), model.symmetrize(jac))
    };
    // One factorization, two right-hand sides: the corrector
    // d_c = −J⁻¹ g(κ_stage) and the tangent t = −J⁻¹ b, so that
    // d(κ') = d_c + (κ' − κ_stage) t = −J⁻¹ g(κ') for any κ'.
    let mut rhs = DMatrix::zeros(m, 2);
    rhs.set_column(0, &-&dir_g);
    rhs.set_column(1, &-b);
    let sol = newton_solve(dir_j, &rhs)?;
    let d_c = sol.column(0).into_owned();
    let tangent = sol.column(1).into_owned();
    let decrement = dir_g.dot(&d_c).abs() / stage;
    Some((d_c, tangent, decrement))
}

/// The predictor–corrector step of a centred stage to the next stage
/// `κ'`: `f` moved by `d(κ') = d_c + (κ' − κ_stage) t` if that step is
/// accepted (else `f` unchanged: the next corrector starts there), and `κ'`.
/// The step to κ = 0 stops at `α_aff`; `1 − α_aff` measures how curved the
/// central path is, which bounds how far the linear predictor can be
/// trusted.
#[allow(clippy::too_many_arguments)] // the iteration's state
fn predictor_step(
    model: &Model,
    f: DVector<f64>,
    d_c: &DVector<f64>,
    tangent: &DVector<f64>,
    stage: f64,
    kappa: f64,
    g0: &DVector<f64>,
    b: &DVector<f64>,
    weight: &DVector<f64>,
    polish: bool,
) -> (DVector<f64>, f64) {
    let d_aff = d_c - tangent * stage;
    let alpha_aff = model.max_step(f.as_slice(), d_aff.as_slice());
    let sigma = (PREDICTOR_SAFETY * (1.0 - alpha_aff).abs())
        .clamp(MIN_REDUCTION, 1.0 / KAPPA_REDUCTION);
    let next = (stage * sigma).max(kappa);
    let d = d_c + tangent * (next - stage);
    let g_next = g0 + b * next;
    // The frozen Jacobian need not give a descent direction for
    // ‖g(κ_next)‖; if it does not, the next corrector starts at f.
    if let Some((trial, _, _)) = newton_step(
        model,
        &f,
        &d,
        next,
        &g_next,
        weight,
        model.symmetric || !polish,
    ) {
        return (trial, next);
    }
    (f, next)
}
