use super::*;

/// [`solve_island`] with one restart (see [`Params::restart_after`]): the
/// iterations of both attempts count against the step's cap.
pub(super) fn solve_with_restart<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, SolveError> {
    let max = p.params.max_iterations;
    let stall = (params.restart_after > 0).then_some((params.restart_after, params.restart_step));
    let first = match solve_island(p, pf, isl, v0, params, max, stall, None) {
        Err(SolveError::MaxIterations { iters, .. }) if iters < max => {
            let again = Params {
                initial_scale: params.restart_scale,
                ..*params
            };
            match solve_island(p, pf, isl, v0, &again, max - iters, None, None) {
                Ok(mut sol) => {
                    sol.iterations += iters;
                    Ok(sol)
                }
                Err(SolveError::MaxIterations {
                    iters: more,
                    residual,
                    complementarity,
                }) => Err(SolveError::MaxIterations {
                    iters: iters + more,
                    residual,
                    complementarity,
                }),
                Err(e) => Err(e),
            }
        }
        other => other,
    };
    let Err(SolveError::MaxIterations { iters, .. }) = first else {
        return first;
    };
    // Fallbacks after failure only: steps that converge within the cap
    // are solved exactly as without them.
    let mut spent = iters;
    if params.continuation_iterations > 0 {
        match continuation(p, pf, isl, v0, params) {
            Ok(mut sol) => {
                sol.iterations += spent;
                return Ok(sol);
            }
            Err(used) => spent += used,
        }
    }
    if params.friction_continuation_iterations > 0 {
        if let Ok(mut sol) = friction_continuation(p, pf, isl, v0, params) {
            sol.iterations += spent;
            return Ok(sol);
        }
    }
    first
}

/// Smallest reduction `ρ_next / ρ` of the continuation (after failed
/// stages the reduction is brought towards 1 down to this).
pub(super) const CONT_MIN_REDUCTION: f64 = 0.9;

/// Iteration cap of one continuation stage.
pub(super) const CONT_STAGE_CAP: usize = 40;

/// The continuation in ρ of a step whose attempts failed
/// ([`Params::continuation_iterations`]): `Err(iterations used)` when it
/// does not reach the step's ρ within its budget. The returned iterations
/// are the continuation's own.
pub(super) fn continuation<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, usize> {
    let target = p.params.rho;
    let from = params.continuation_from;
    if target > 0.1 * from {
        return Err(0);
    }
    let budget = params.continuation_iterations;
    let cap = CONT_STAGE_CAP.min(budget);
    let sol = solve_at_rho(p, pf, isl, v0, params, from, None, cap)?;
    let used = sol.iterations;
    descend(p, pf, isl, v0, params, from, sol, budget, used)
}

/// One stage of a continuation: the island at relaxation `rho` (the
/// step's other settings unchanged) from `start` (None: the usual start),
/// at most `cap` iterations; `Err(iterations used)` when it fails.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_at_rho<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    rho: f64,
    start: Option<DVec<T>>,
    cap: usize,
) -> Result<IslSol<T>, usize> {
    if cap == 0 {
        return Err(0);
    }
    let sp = crate::contact::SolverParams {
        rho,
        accept_at_cap: false,
        ..*p.params
    };
    let spf = crate::contact::SolverParams { rho, ..sp };
    let ps = StepProblem { params: &sp, ..*p };
    let pfs = StepProblem {
        params: &spf,
        ..*pf
    };
    match solve_island(&ps, &pfs, isl, v0, params, cap, None, start) {
        Ok(sol) => Ok(sol),
        Err(SolveError::MaxIterations { iters, .. }) => Err(iters),
        Err(_) => Err(cap),
    }
}

/// The descent in ρ of [`continuation`] from a root `sol` at `rho` down
/// to the step's own ρ, `used` iterations already spent of `budget`.
/// On success the returned iterations are `used` plus the descent's.
#[allow(clippy::too_many_arguments)]
pub(super) fn descend<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    mut rho: f64,
    mut sol: IslSol<T>,
    budget: usize,
    mut used: usize,
) -> Result<IslSol<T>, usize> {
    let target = p.params.rho;
    let mut reduction: f64 = 0.5;
    while used < budget {
        let next = (rho * reduction).max(target);
        let cap = CONT_STAGE_CAP.min(budget - used);
        // The last stage is at the step's own ρ, with its own
        // convergence test (and no acceptance at the cap).
        match solve_at_rho(p, pf, isl, v0, params, next, Some(sol.u.clone()), cap) {
            Ok(s) => {
                used += s.iterations;
                sol = s;
                rho = next;
                if rho <= target {
                    sol.iterations = used;
                    return Ok(sol);
                }
                reduction = (reduction * reduction).max(1e-2);
            }
            Err(spent) => {
                used += spent;
                reduction = reduction.sqrt();
                if reduction > CONT_MIN_REDUCTION {
                    return Err(used);
                }
            }
        }
    }
    Err(used)
}

/// Smallest increment of the friction scale in the continuation in
/// friction (after failed stages the increment is halved down to this).
pub(super) const FRICTION_MIN_INCREMENT: f64 = 1.0 / 64.0;

/// The island with every pair's friction coefficient scaled by `scale`.
pub(super) fn with_friction_scale<T: Scalar>(isl: &Isl<T>, scale: f64) -> Isl<T> {
    let pairs = isl
        .pairs
        .iter()
        .map(|lp| Lowered {
            mu: lp.mu * T::from_re(scale),
            ..lp.clone()
        })
        .collect();
    Isl::new(isl.bodies.clone(), isl.local.clone(), pairs)
}

/// The continuation in friction of a step that the attempts and the
/// continuation in ρ did not solve
/// ([`Params::friction_continuation_iterations`]): `Err(iterations used)`
/// when it does not reach the step's own problem within its budget. The
/// friction stages are at `ρ_f = max(ρ, friction_continuation_rho)`; the
/// last one is on `isl` itself (the step's own friction), followed, when
/// `ρ_f` is above the step's ρ, by the descent in ρ of [`continuation`]
/// to the step's own problem. The returned iterations are its own.
pub(super) fn friction_continuation<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, usize> {
    let budget = params.friction_continuation_iterations;
    let first = params.friction_continuation_from;
    let rho_f = p.params.rho.max(params.friction_continuation_rho);
    let sp = crate::contact::SolverParams {
        rho: rho_f,
        accept_at_cap: false,
        ..*p.params
    };
    let spf = crate::contact::SolverParams { rho: rho_f, ..sp };
    // The stages never accept an iterate at the cap.
    let ps = StepProblem { params: &sp, ..*p };
    let pfs = StepProblem {
        params: &spf,
        ..*pf
    };
    let mut used = 0_usize;
    // One stage at friction scale `s` (below 1 a copy of the island with
    // scaled coefficients; at 1 the island itself), optionally followed
    // by the continuation in ρ (down to ρ_f) when it fails.
    let solve = |s: f64, start: Option<DVec<T>>, cap: usize, rho_fallback: bool| {
        let scaled;
        let il = if s >= 1.0 {
            isl
        } else {
            scaled = with_friction_scale(isl, s);
            &scaled
        };
        match solve_island(&ps, &pfs, il, v0, params, cap, None, start) {
            Ok(sol) => Ok((sol, 0)),
            Err(e) => {
                let spent = match e {
                    SolveError::MaxIterations { iters, .. } => iters,
                    _ => cap,
                };
                if rho_fallback && params.continuation_iterations > 0 {
                    match continuation(&ps, &pfs, il, v0, params) {
                        Ok(sol) => Ok((sol, spent)),
                        Err(more) => Err(spent + more),
                    }
                } else {
                    Err(spent)
                }
            }
        }
    };
    let mut sol = match solve(first, None, CONT_STAGE_CAP.min(budget), true) {
        Ok((s, spent)) => {
            used += spent + s.iterations;
            s
        }
        Err(spent) => return Err(used + spent),
    };
    let mut scale = first;
    let mut increment = first;
    while used < budget {
        let next = (scale + increment).min(1.0);
        let cap = CONT_STAGE_CAP.min(budget - used);
        let attempt = solve(next, Some(sol.u.clone()), cap, false);
        if trace::enabled() {
            eprintln!(
                "friction stage {next:.4} at rho {rho_f:e}: converged {}",
                attempt.is_ok()
            );
        }
        match attempt {
            Ok((s, _)) => {
                used += s.iterations;
                sol = s;
                scale = next;
                if scale >= 1.0 {
                    if rho_f <= p.params.rho {
                        sol.iterations = used;
                        return Ok(sol);
                    }
                    return descend(p, pf, isl, v0, params, rho_f, sol, budget, used);
                }
                increment *= 2.0;
            }
            Err(spent) => {
                used += spent;
                increment *= 0.5;
                if increment < FRICTION_MIN_INCREMENT {
                    return Err(used);
                }
            }
        }
    }
    Err(used)
}
