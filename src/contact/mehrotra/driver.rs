use super::*;

/// Solves one island from the initial velocity `v0` (island layout)
/// and, where given, initial contact unknowns `x0` (e.g. the solution of
/// a previous candidate round; they must be interior).
pub fn solve_island<'w, 'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: impl Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    w: &'w mut Work<T>,
) -> Result<IslandSolution<'w, T>, SolveError> {
    let sp = p.params;
    let e = solve_island_capped(
        p,
        island,
        v0,
        &x0,
        params,
        sp.max_iterations,
        sp.accept_at_cap,
        false,
        w,
    );
    let e = continue_failed(p, island, v0, params, e, 0, w)?;
    Ok(w.solution(e))
}

/// What the interior-point loop carries from one iteration to the next.
pub(super) struct LoopState {
    /// Iterations (Newton directions) so far.
    pub(super) iter: usize,
    /// Chord steps (`Params::reuse_factorization`) may run on this island.
    pub(super) reuse_allowed: bool,
    /// The current factorization may serve the next step.
    pub(super) reuse: bool,
    /// The steps the current factorization has served.
    pub(super) chords: usize,
    /// The last accepted step length: a warm attempt of a large island
    /// runs past its cap while it is long (it is converging), up to the
    /// solve's own cap.
    pub(super) last_alpha: f64,
    /// Consecutive short steps.
    pub(super) short_steps: usize,
    /// The contact blocks of the Newton matrix: closed form while the
    /// iteration makes progress, exact once a step is short (see
    /// `Params::exact_jacobian_below`). Decided on primal values, so a
    /// dual scalar follows the f64 iterates exactly.
    pub(super) lin: Linearization,
    /// The measures at ρ of the current point when a chord step has just
    /// computed them (the same evaluation, not repeated).
    pub(super) known: Option<Measures>,
}

impl LoopState {
    fn new(params: &Params, dim: usize) -> Self {
        LoopState {
            iter: 0,
            reuse_allowed: params.reuse_factorization && dim >= SPARSE_MIN_ROWS,
            reuse: false,
            chords: 0,
            last_alpha: 0.0,
            short_steps: 0,
            lin: if params.exact_jacobian_below > 1.0 {
                Linearization::Exact
            } else {
                Linearization::ClosedForm
            },
            known: None,
        }
    }
}

/// [`solve_island`] with the iteration cap `max_iterations`; at the cap
/// the iterate is returned (flagged `capped`) when `accept_at_cap`, else
/// [`SolveError::MaxIterations`]. The steps: [`initial_point`], then per
/// iteration the convergence test (then [`polish`]), the cap, and
/// [`iterate`].
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_island_capped<'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: &dyn Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    max_iterations: usize,
    accept_at_cap: bool,
    extend_while_converging: bool,
    w: &mut Work<T>,
) -> Result<Ended, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
    initial_point(p, island, v0, x0, params, w)?;
    let mut st = LoopState::new(params, island.dim());
    loop {
        let m = st
            .known
            .take()
            .unwrap_or_else(|| measures(island, &w.cur.ev, &w.cur.xs, rho));
        if trace_enabled() {
            let (iter, alpha, lin) = (st.iter, st.last_alpha, st.lin);
            trace_iteration(
                island, &w.cur.ev, &w.cur.xs, rho, iter, &w.warm, alpha, lin, &m,
            );
        }
        if m.eq <= sp.tolerance && m.comp_dev <= params.complementarity_tolerance * rho {
            return polish(p, island, params, &mut st, w);
        }
        let extend = extend_while_converging
            && st.last_alpha >= WARM_PROGRESS_STEP
            && st.iter < sp.max_iterations;
        if st.iter >= max_iterations && accept_at_cap && !extend {
            return Ok(Ended {
                iterations: st.iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if st.iter >= max_iterations && !extend {
            return Err(SolveError::MaxIterations {
                iters: st.iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        st.iter += 1;
        iterate(p, island, params, &m, &mut st, w)?;
    }
}

/// One interior-point iteration from the current point (measures `m` at
/// ρ): a chord step on the previous factorization where it may serve, else
/// a factorization, the predictor ([`centering`]), the corrector's line
/// search ([`search_directions`]), a centering step when the accepted step
/// is short ([`recentre`]), and the move to the point taken.
fn iterate<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    params: &Params,
    m: &Measures,
    st: &mut LoopState,
    w: &mut Work<T>,
) -> Result<(), SolveError> {
    let rho = p.params.rho;
    let nt = params.nesterov_todd;
    let Work {
        cur,
        trial,
        best,
        center,
        dv,
        dxs,
        dx_aff,
        rc,
        dir,
        fac,
        plain,
        warm: _,
    } = w;
    let nu = mean_comp(island, &cur.xs, None);
    // A chord step on the previous iteration's factorization
    // (`Params::reuse_factorization`): kept when it contracts the
    // residual by `CHORD_CONTRACTION`, else this iteration factors.
    // Tried near the final phase only (ν within twice ρ: the mean
    // wanders around ρ by the complementarity deviations), where the
    // iteration's own target is ρ or next to it.
    if st.reuse && nu <= 2.0 * rho {
        let ftb = params.fraction_to_boundary;
        let (c, tr) = (&mut st.chords, &mut *trial);
        st.known = chord_step(
            p, island, rho, nt, ftb, m.merit, cur, tr, c, fac, rc, dir, dv, dxs,
        );
        if st.known.is_some() {
            st.reuse = st.chords < MAX_CHORD_STEPS;
            st.last_alpha = 1.0;
            return Ok(());
        }
    }
    st.chords = 0;
    let lin = st.lin;
    factor_into(p, island, &cur.ev, &cur.v, &cur.xs, nt, lin, fac)?;
    let sigma = centering(island, nt, rho, nu, cur, fac, rc, dir, dv, dx_aff)?;
    let kappa = (sigma * nu).max(rho);
    // Corrector (centering + second-order term). Once the target has
    // reached ρ the affine term `dz ∘ ds` is of the order of ρ itself
    // and would keep the iterate off the central point, so the final
    // phase takes Newton steps on r_ρ (with their own second-order
    // term, `Params::final_corrector`).
    let second_order = sigma * nu > rho;
    // (At κ = ρ the loop's own measures of this point.)
    let merit0 = if kappa == rho {
        m.merit
    } else {
        measures(island, &cur.ev, &cur.xs, kappa).merit
    };
    // Final phase: the Newton direction of r_ρ into `dx_aff`, whose own
    // second-order term the first trial direction then carries
    // (`Params::final_corrector`).
    let final_corrector = !second_order && (params.final_corrector || st.reuse_allowed);
    if final_corrector {
        local_residuals(island, &cur.ev, &cur.xs, T::from_re(kappa), None, nt, rc);
        direction(island, &cur.ev, fac, rc, dir, dv, dx_aff)?;
    }
    let with_term = second_order || final_corrector;
    let dirs = [
        Some((with_term, nt)),
        with_term.then_some((false, nt)),
        nt.then_some((false, false)),
    ];
    let work = SearchWork {
        trial: &mut *trial,
        best: &mut *best,
        dv: &mut *dv,
        dxs: &mut dxs[..],
        dx_aff: &dx_aff[..],
        rc: &mut rc[..],
        dir: &mut *dir,
        fac: &*fac,
        plain: &mut *plain,
    };
    let s = search_directions(p, island, params, kappa, merit0, lin, dirs, cur, work)?;
    let mut taken = s.taken;
    // One short step is ordinary interior-point progress (the first
    // iterations of a resting contact take one); two in a row mean the
    // closed-form blocks may be stalling the iterate.
    if s.accepted_alpha < params.exact_jacobian_below {
        st.short_steps += 1;
        if st.short_steps >= 2 {
            st.lin = Linearization::Exact;
        }
    } else {
        st.short_steps = 0;
    }
    if s.accepted_alpha < params.recenter_below
        && recentre(p, island, params, nu, cur, center, fac, rc, dir, dv, dxs)?
    {
        taken = Some(Taken::Center);
    }
    st.last_alpha = s.accepted_alpha;
    // The factorization may be reused by the next iteration when it
    // is the final phase's (the target at ρ, no second-order term)
    // and its own direction was taken in full.
    st.reuse = st.reuse_allowed
        && !second_order
        && taken == Some(Taken::Trial)
        && s.accepted_alpha == 1.0
        && s.accepted_fac;
    match taken {
        Some(Taken::Trial) => std::mem::swap(cur, trial),
        Some(Taken::Center) => std::mem::swap(cur, center),
        None if s.best_merit.is_some() => std::mem::swap(cur, best),
        // Every trial point failed to evaluate.
        None => {
            return Err(SolveError::Singular(
                "line search: no trial point could be evaluated",
            ));
        }
    }
    Ok(())
}

/// The predictor (affine scaling, κ = 0) into `dx_aff`, for the
/// centering σ = (ν_aff / ν)³; at ν ≤ ρ the target is ρ whatever σ is
/// (σ ≤ 1), and the solve is skipped (σ = 0).
#[allow(clippy::too_many_arguments)]
fn centering<T: Scalar>(
    island: &Island<T>,
    nt: bool,
    rho: f64,
    nu: f64,
    cur: &Point<T>,
    fac: &Factored<T>,
    rc: &mut [DVec<T>],
    dir: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dx_aff: &mut [DVec<T>],
) -> Result<f64, SolveError> {
    if nu <= rho {
        return Ok(0.0);
    }
    local_residuals(island, &cur.ev, &cur.xs, T::zero(), None, nt, rc);
    direction(island, &cur.ev, fac, rc, dir, dv, dx_aff)?;
    let alpha_aff = boundary_step(island, &cur.xs, dx_aff).min(1.0);
    let nu_aff = mean_comp(island, &cur.xs, Some((&*dx_aff, alpha_aff)));
    Ok(if nu > 0.0 {
        (nu_aff / nu).clamp(0.0, 1.0).powi(3)
    } else {
        0.0
    })
}
