use super::*;

/// One attempt at an island: at most `cap` iterations. With `stall =
/// Some((k, a))` the attempt gives up after `k` or more iterations when
/// its equalities are not met and its last [`STALL_STEPS`] accepted steps
/// were shorter than `a`, returning
/// [`SolveError::MaxIterations`] with `iters < cap` (see
/// [`Params::restart_after`]).
pub(super) fn solve_island<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    cap: usize,
    stall: Option<(usize, f64)>,
    start: Option<DVec<T>>,
) -> Result<IslSol<T>, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
    let mut u = match start {
        Some(u) => u,
        None => initial_point(p, isl, v0, params)?,
    };
    let res = |u: &DVec<T>| {
        island_residual(
            p,
            &isl.bodies,
            &isl.local,
            &isl.pairs,
            &isl.offsets,
            u,
            T::zero(),
        )
    };
    let (mut r0, mut evals) = res(&u)?;
    let mut iter = 0;
    // Consecutive iterations whose accepted step was short (stall test).
    let mut short_steps = 0_usize;
    // Newton matrices and their factors, reused across iterations.
    let mut j_plain = DMat::zeros(0, 0);
    let mut j_nt = DMat::zeros(0, 0);
    let mut lu_nt = Factored::default();
    let mut lu_plain = Factored::default();
    let tracing = trace::enabled();
    loop {
        let m = measures(isl, &r0, &u, rho);
        if m.eq <= sp.tolerance
            && m.comp_dev <= (params.complementarity_tolerance * rho).max(COMP_FLOOR)
        {
            let jf = (&mut j_plain, &mut lu_plain);
            return polish(pf, isl, params, rho, &res, u, r0, evals, iter, jf);
        }
        let stalled = iter < cap
            && m.eq > sp.tolerance
            && stall.is_some_and(|(k, _)| iter >= k && short_steps >= STALL_STEPS);
        if iter >= cap && sp.accept_at_cap {
            return Ok(IslSol {
                u,
                evals,
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if iter >= cap || stalled {
            return Err(SolveError::MaxIterations {
                iters: iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        iter += 1;
        let nt = params.nesterov_todd;
        let ur = u.map(|x| x.re());
        island_jacobian(pf, isl, &ur, &mut j_plain)?;
        let scaled_any = nt && scale_rows(&isl.cones, &j_plain, &mut j_nt, &ur);
        let r_aff = direction_rhs(&isl.cones, &r0, &u, 0.0, None, nt);
        lu_nt.factor(if scaled_any { &j_nt } else { &j_plain })?;
        // The unscaled factors, when they differ from the scaled ones and
        // once needed.
        let plain_ready = !scaled_any;
        let du_aff = lu_nt.solve(&r_aff).map(|x| x.re());
        if tracing {
            eprintln!(
                "  cond {:.2e} {}\n  delassus {}\n  aff-block {}\n  state {}",
                trace::condition(if scaled_any { &j_nt } else { &j_plain }),
                trace::null_and_rows(isl, if scaled_any { &j_nt } else { &j_plain }, &r0),
                trace::delassus(isl, &j_plain, &u),
                trace::blocking(isl, &u, &du_aff),
                trace::state(isl, &u)
            );
        }
        let alpha_aff = boundary_step(isl, &u, &du_aff).min(1.0);
        let nu = mean_comp(isl, &u, None);
        let nu_aff = mean_comp(isl, &u, Some((&du_aff, alpha_aff)));
        let sigma = if nu > 0.0 {
            (nu_aff / nu).clamp(0.0, 1.0).powi(3)
        } else {
            0.0
        };
        let kappa = (sigma * nu).max(rho);
        let second = if sigma * nu > rho {
            Some(&du_aff)
        } else {
            None
        };
        let merit0 = measures(isl, &r0, &u, kappa).merit;
        // Fraction to the boundary τ = max(τ₀, 1 − ν): full steps near the
        // solution, where a fixed τ would cap the convergence rate at
        // 1 − τ per iteration.
        let tau = params.fraction_to_boundary.max(1.0 - nu);
        let mut dirs = vec![(second, nt)];
        if second.is_some() {
            dirs.push((None, nt));
        }
        if nt {
            dirs.push((None, false));
        }
        let factors = Factors {
            lu_nt: &lu_nt,
            lu_plain: &mut lu_plain,
            j_plain: &j_plain,
            plain_ready,
            scaled_any,
        };
        let (mut taken, fallback, accepted) = search_directions(
            isl, params, &res, &r0, &u, kappa, merit0, tau, &dirs, factors, tracing,
        )?;
        if accepted < params.recenter_below {
            if let Some(t) = recentre(isl, params, &res, &r0, &u, nu.max(rho), nt, &lu_nt) {
                taken = Some(t);
            }
        }
        if tracing {
            eprintln!("it {iter}: eq {:.2e} comp_dev {:.2e} nu {nu:.2e} sigma {sigma:.2e} kappa {kappa:.2e} alpha_aff {alpha_aff:.2e} accepted {accepted:.2e}", m.eq, m.comp_dev);
        }
        short_steps = if stall.is_some_and(|(_, a)| accepted < a) {
            short_steps + 1
        } else {
            0
        };
        let Some((un, rn, en)) = taken.or(fallback.map(|f| f.1)) else {
            return Err(SolveError::Singular(
                "line search: no trial point could be evaluated",
            ));
        };
        u = un;
        r0 = rn;
        evals = en;
    }
}

/// A trial point: the unknowns, the residual there and its pairs' evaluations.
type Trial<T> = (DVec<T>, DVec<T>, Vec<PairEval<T>>);

/// The Newton factors a line search may use: the iteration's own (`lu_nt`,
/// Nesterov–Todd scaled when `scaled_any`) and the unscaled ones, factored
/// from `j_plain` into `lu_plain` when first needed (already there when
/// `plain_ready`).
pub(super) struct Factors<'a> {
    pub(super) lu_nt: &'a Factored,
    pub(super) lu_plain: &'a mut Factored,
    pub(super) j_plain: &'a DMat<f64>,
    pub(super) plain_ready: bool,
    pub(super) scaled_any: bool,
}

/// The polish of a converged attempt: at most `polish_steps` full Newton
/// steps on the unscaled residual, each kept when it stays inside the
/// cones and evaluates; then the attempt's result.
#[allow(clippy::too_many_arguments)]
fn polish<T: Scalar>(
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    params: &Params,
    rho: f64,
    res: &impl Fn(&DVec<T>) -> Result<(DVec<T>, Vec<PairEval<T>>), SolveError>,
    mut u: DVec<T>,
    mut r0: DVec<T>,
    mut evals: Vec<PairEval<T>>,
    iter: usize,
    (j_plain, lu_plain): (&mut DMat<f64>, &mut Factored),
) -> Result<IslSol<T>, SolveError> {
    for _ in 0..params.polish_steps {
        let ur = u.map(|x| x.re());
        island_jacobian(pf, isl, &ur, j_plain)?;
        lu_plain.factor(j_plain)?;
        let rhs = direction_rhs(&isl.cones, &r0, &u, rho, None, false);
        let du = lu_plain.solve(&rhs);
        let dre = du.map(|x| x.re());
        if boundary_step(isl, &u, &dre) <= 1.0 {
            break;
        }
        let ut = &u + &du;
        let Ok((rt, et)) = res(&ut) else { break };
        u = ut;
        r0 = rt;
        evals = et;
    }
    let m = measures(isl, &r0, &u, rho);
    Ok(IslSol {
        u,
        evals,
        iterations: iter,
        residual: m.eq,
        complementarity: m.comp_max,
        capped: false,
    })
}

/// Backtracking line search on ‖r_κ‖² from `u` along each direction of
/// `dirs` in turn (`(second-order term, Nesterov–Todd scaled)`), fraction
/// to the boundary `tau`, until one gives a sufficient decrease (Armijo,
/// from `merit0`): the accepted trial, the best rejected one (with its
/// merit) and the accepted step length (0 when none was).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn search_directions<T: Scalar>(
    isl: &Isl<T>,
    params: &Params,
    res: &impl Fn(&DVec<T>) -> Result<(DVec<T>, Vec<PairEval<T>>), SolveError>,
    r0: &DVec<T>,
    u: &DVec<T>,
    kappa: f64,
    merit0: f64,
    tau: f64,
    dirs: &[(Option<&DVec<f64>>, bool)],
    f: Factors<'_>,
    tracing: bool,
) -> Result<(Option<Trial<T>>, Option<(f64, Trial<T>)>, f64), SolveError> {
    let Factors {
        lu_nt,
        lu_plain,
        j_plain,
        mut plain_ready,
        scaled_any,
    } = f;
    let mut taken = None;
    let mut fallback: Option<(f64, Trial<T>)> = None;
    let mut accepted = 0.0;
    for &(so, scaled) in dirs {
        let rhs = direction_rhs(&isl.cones, r0, u, kappa, so, scaled);
        let du = if scaled || !scaled_any {
            lu_nt.solve(&rhs)
        } else {
            if !plain_ready {
                lu_plain.factor(j_plain)?;
                plain_ready = true;
            }
            lu_plain.solve(&rhs)
        };
        let dre = du.map(|x| x.re());
        let mut a = (tau * boundary_step(isl, u, &dre)).min(1.0);
        if tracing {
            eprintln!(
                "  dir corr={} nt={scaled} a0={a:.2e} block {}",
                so.is_some(),
                trace::blocking(isl, u, &dre)
            );
        }
        for _ in 0..=params.max_backtracks {
            let ut = u + &du * T::from_re(a);
            if let Ok((rt, et)) = res(&ut) {
                let merit = measures(isl, &rt, &ut, kappa).merit;
                if merit <= (1.0 - params.armijo * a) * merit0 {
                    accepted = a;
                    taken = Some((ut, rt, et));
                    break;
                }
                if fallback.as_ref().is_none_or(|(mm, _)| merit < *mm) {
                    fallback = Some((merit, (ut, rt, et)));
                }
            }
            a *= params.backtrack_factor;
        }
        if taken.is_some() {
            break;
        }
    }
    Ok((taken, fallback, accepted))
}

/// A pure centering step from `u` towards `κ = kc` (after a short
/// accepted step), accepted without the merit test: the longest trial
/// that evaluates, if any.
#[allow(clippy::too_many_arguments)]
fn recentre<T: Scalar>(
    isl: &Isl<T>,
    params: &Params,
    res: &impl Fn(&DVec<T>) -> Result<(DVec<T>, Vec<PairEval<T>>), SolveError>,
    r0: &DVec<T>,
    u: &DVec<T>,
    kc: f64,
    nt: bool,
    lu_nt: &Factored,
) -> Option<Trial<T>> {
    let rhs = direction_rhs(&isl.cones, r0, u, kc, None, nt);
    let du = lu_nt.solve(&rhs);
    let dre = du.map(|x| x.re());
    let mut a = (params.fraction_to_boundary * boundary_step(isl, u, &dre)).min(1.0);
    for _ in 0..=params.max_backtracks {
        let ut = u + &du * T::from_re(a);
        if let Ok((rt, et)) = res(&ut) {
            return Some((ut, rt, et));
        }
        a *= params.backtrack_factor;
    }
    None
}
