use super::*;

/// Smallest reduction `ρ_next / ρ` of the continuation in ρ (after failed
/// stages the reduction is brought towards 1, down to this).
pub(super) const CONT_MIN_REDUCTION: f64 = 0.9;

/// Iteration cap of one stage of the continuation in ρ.
pub(super) const CONT_STAGE_CAP: usize = 40;

/// The end of an island's solve `e` (after `spent` iterations of earlier
/// attempts): when it failed at the iteration cap, the island is solved
/// again by continuation in ρ ([`Params::continuation_iterations`]): at
/// [`Params::continuation_from`] from the default initial point, then at
/// smaller ρ, each stage started from the previous stage's solution (ρ
/// multiplied by 0.5, by the square of the last reduction after a stage
/// that converged, at most a hundredfold; after a stage that did not
/// converge within 40 iterations the reduction is brought back to its
/// square root, giving up above 0.9). The last stage is at the step's
/// own ρ, accepted by the step's own convergence test: the answer is a
/// root of the step's residual like any other, and its derivatives are
/// the implicit-function derivatives at that root. Where the continuation
/// does not reach the step's ρ within its budget, the original failure
/// is returned. The iterations of all stages count on top of the failed
/// attempts'.
///
/// Why: an island whose contacts slide in many directions at once (a
/// pyramid of 55 or more spheres at μ = 0.5 settling) stalls at small ρ
/// with a few sliding contacts' friction pinned against the cone, while
/// the same step at ρ = 1e-4 converges in 8 iterations; the path from a
/// larger ρ leads the iterate around the stall.
pub(super) fn continue_failed<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    params: &Params,
    e: Result<Ended, SolveError>,
    spent: usize,
    w: &mut Work<T>,
) -> Result<Ended, SolveError> {
    let failed = match e {
        Ok(mut e) => {
            e.iterations += spent;
            return Ok(e);
        }
        Err(SolveError::MaxIterations {
            iters,
            residual,
            complementarity,
        }) => SolveError::MaxIterations {
            iters: iters + spent,
            residual,
            complementarity,
        },
        Err(e) => return Err(e),
    };
    let SolveError::MaxIterations { iters: before, .. } = failed else {
        unreachable!()
    };
    let target = p.params.rho;
    let from = params.continuation_from;
    let budget = params.continuation_iterations;
    if budget == 0 || target > 0.1 * from {
        return Err(failed);
    }
    let mut used = 0_usize;
    // The last stage's solution, the next stage's start (this fallback
    // allocates: it runs only after a failed solve).
    let mut start: Option<(DVec<T>, Vec<DVec<T>>)> = None;
    let mut rho = from;
    let mut reduction: f64 = 0.5;
    let mut next = from;
    loop {
        let cap = CONT_STAGE_CAP.min(budget.saturating_sub(used));
        if cap == 0 {
            return Err(failed);
        }
        let sp = crate::contact::SolverParams {
            rho: next,
            accept_at_cap: false,
            ..*p.params
        };
        let ps = StepProblem { params: &sp, ..*p };
        let r = match &start {
            None => solve_island_capped(&ps, island, v0, &|_| None, params, cap, false, false, w),
            Some((v, xs)) => {
                solve_island_capped(&ps, island, v, &|i| xs.get(i), params, cap, false, false, w)
            }
        };
        match r {
            Ok(e) => {
                used += e.iterations;
                if next <= target {
                    return Ok(Ended {
                        iterations: before + used,
                        ..e
                    });
                }
                rho = next;
                match &mut start {
                    Some((v, xs)) => {
                        copy_vec(v, &w.cur.v);
                        copy_vecs(xs, &w.cur.xs);
                    }
                    None => start = Some((w.cur.v.clone(), w.cur.xs.clone())),
                }
                if next < from {
                    reduction = (reduction * reduction).max(1e-2);
                }
            }
            Err(e) => {
                used += match e {
                    SolveError::MaxIterations { iters, .. } => iters,
                    _ => cap,
                };
                // Not even the first stage converged, or the reduction
                // is back near 1: give up.
                reduction = reduction.sqrt();
                if start.is_none() || reduction > CONT_MIN_REDUCTION {
                    return Err(failed);
                }
            }
        }
        next = (rho * reduction).max(target);
    }
}
