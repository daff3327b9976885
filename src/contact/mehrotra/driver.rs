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

/// [`solve_island`] with the iteration cap `max_iterations`; at the cap
/// the iterate is returned (flagged `capped`) when `accept_at_cap`, else
/// [`SolveError::MaxIterations`].
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
    // The initial point in the work's buffers (their storage reused).
    w.warm.clear();
    w.warm
        .extend((0..island.contacts.len()).map(|i| x0(i).is_some()));
    copy_vec(&mut w.cur.v, v0);
    w.cur.xs.truncate(island.contacts.len());
    for (i, c) in island.contacts.iter().enumerate() {
        if w.cur.xs.len() == i {
            w.cur.xs.push(DVec::zeros(0));
        }
        let x = &mut w.cur.xs[i];
        match x0(i) {
            Some(x0) => copy_vec(x, x0),
            None => c.law.initial_into(params.initial_scale, x),
        }
    }
    {
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
            ..
        } = &mut *w;
        for pt in [trial, best, center] {
            pt.assign(&cur.v, &cur.xs);
        }
        copy_vec(dv, &cur.v);
        for b in [dxs, dx_aff, rc, &mut dir.ainv_r] {
            copy_vecs(b, &cur.xs);
        }
    }
    let warm = std::mem::take(&mut w.warm);
    // Start on the linear equalities where the cones allow it: the gap
    // slack at the gap of the initial velocity (when larger than the
    // scale), β₀ = μγ, η_t = v_t with ψ = ‖v_t‖ + scale (exact cone),
    // ηₖ = ψ + dₖᵀv_t with ψ = ‖v_t‖₁ + scale and s_ψ = μγ − Σβₖ > 0
    // (pyramid).
    {
        let cur = &mut w.cur;
        evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        let scale = T::from_re(params.initial_scale);
        for (((x, ce), cand), _) in cur
            .xs
            .iter_mut()
            .zip(&cur.ev.contacts)
            .zip(&island.contacts)
            .zip(&warm)
            .filter(|w| !*w.1)
        {
            let y = ce.y;
            if y[0].re() > x[1].re() {
                x[1] = y[0];
            }
            match cand.law {
                Law::Frictionless => {}
                Law::Exact => {
                    x[2] = cand.mu * x[0];
                    x[6] = y[1];
                    x[7] = y[2];
                    x[5] = safe_norm(&Vec3::new(y[1], y[2], T::zero())) + scale;
                }
                Law::Pyramid => {
                    let psi = y[1].abs() + y[2].abs() + scale;
                    let beta = cand.mu * x[0] * T::from_re(0.125);
                    for k in 0..4 {
                        x[2 + k] = beta;
                    }
                    x[6] = psi + y[1];
                    x[7] = psi - y[1];
                    x[8] = psi + y[2];
                    x[9] = psi - y[2];
                    x[10] = psi;
                    x[11] = cand.mu * x[0] * T::from_re(0.5);
                }
            }
        }
        // (Every contact warm: nothing moved, the evaluation stands.)
        if warm.iter().any(|w| !*w) {
            evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        }
        if params.warm_recentre_friction && warm.iter().any(|w| *w) {
            recentre_friction(island, &mut cur.ev, &mut cur.xs, &warm, rho);
        }
    }
    w.warm = warm;
    let mut iter = 0;
    // Chord steps (`Params::reuse_factorization`): `reuse` when the
    // current factorization may serve the next step, `chords` the steps it
    // has served.
    let reuse_allowed = params.reuse_factorization && island.dim() >= SPARSE_MIN_ROWS;
    let mut reuse = false;
    let mut chords = 0;
    // A warm attempt of a large island runs past its cap while its last
    // step was long (it is converging), up to the solve's own cap.
    let mut last_alpha = 0.0;
    // The contact blocks of the Newton matrix: closed form while the
    // iteration makes progress, exact once a step is short (see
    // `Params::exact_jacobian_below`). Decided on primal values, so a dual
    // scalar follows the f64 iterates exactly.
    let mut short_steps = 0;
    let mut lin = if params.exact_jacobian_below > 1.0 {
        Linearization::Exact
    } else {
        Linearization::ClosedForm
    };
    // The measures at ρ of the current point when a chord step has just
    // computed them (the same evaluation, not repeated).
    let mut known: Option<Measures> = None;
    loop {
        let m = known
            .take()
            .unwrap_or_else(|| measures(island, &w.cur.ev, &w.cur.xs, rho));
        if trace_enabled() {
            trace_iteration(
                island, &w.cur.ev, &w.cur.xs, rho, iter, &w.warm, last_alpha, lin, &m,
            );
        }
        if m.eq <= sp.tolerance && m.comp_dev <= params.complementarity_tolerance * rho {
            // Polish: full Newton steps on r_ρ (unscaled cone rows), the
            // same in every scalar: at least `polish_steps`, with the loop's
            // linearization, until the residual is at round-off
            // (`1e-6 · tolerance`; finite differences of a step divide the
            // solution's error by their step), at most four more, the last
            // two exact (a closed-form matrix contracts linearly).
            // In f64 (no derivative parts to make exact) the steps stop as
            // soon as the residual is at round-off, which a warm-started
            // resting contact already is.
            let tight = sp.tolerance * 1e-6;
            let max_steps = params.polish_steps + 4;
            let required = if T::DERIVATIVE_ORDER == 0 {
                0
            } else {
                params.polish_steps
            };
            let mut k = 0;
            // Chord steps here (f64, islands of at least
            // `SPARSE_MIN_ROWS` rows): first on the loop's own
            // factorization (scaled rows) while it may still serve, then on
            // the first polish step's (unscaled rows, at a point next to
            // the root). Tried on islands of every size, chord steps on the
            // loop's factorization made `dualsim check` on
            // `examples/scenes/capsule_pile.toml` (small islands) fail its
            // finite-difference comparison (8e-4 against 1e-5) though every
            // solve ended at round-off, not explained; hence the size gate.
            let polish_chord_allowed = reuse_allowed && T::DERIVATIVE_ORDER == 0;
            let mut polish_chord = polish_chord_allowed && reuse;
            let mut polish_nt = params.nesterov_todd;
            // Each kept chord step shrinks the merit 8-fold, so the few
            // left to reach round-off are not capped by the loop's count.
            chords = 0;
            // Chord steps go on to half of `tight`: they converge
            // linearly, and stopping just below `tight` left a 6 × 6
            // layer's rollout 8e-13 away from the one that refactors
            // (4e-14 at half of it; a Newton step lands at round-off),
            // while a hundredth of it is below the round-off the chord
            // steps reach on the 1045-contact layer (3e-15), which cost
            // one rejected chord step per solve.
            let chord_tight = tight * 0.5;
            while k < max_steps {
                let Work {
                    cur,
                    trial,
                    dv,
                    dxs,
                    rc,
                    dir,
                    fac,
                    ..
                } = &mut *w;
                let mm = known
                    .take()
                    .unwrap_or_else(|| measures(island, &cur.ev, &cur.xs, rho));
                if polish_chord && (mm.eq > chord_tight || mm.comp_dev > chord_tight) {
                    let ftb = params.fraction_to_boundary;
                    let m0 = mm.merit;
                    let (c, tr) = (&mut chords, &mut *trial);
                    known = chord_step(
                        p, island, rho, polish_nt, ftb, m0, cur, tr, c, fac, rc, dir, dv, dxs,
                    );
                    if known.is_some() {
                        polish_chord = chords < MAX_CHORD_STEPS;
                        continue;
                    }
                }
                if k >= required && mm.eq <= tight && mm.comp_dev <= tight {
                    break;
                }
                let l = if k + 2 >= max_steps {
                    Linearization::Exact
                } else {
                    lin
                };
                k += 1;
                factor_into(p, island, &cur.ev, &cur.v, &cur.xs, false, l, fac)?;
                local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
                direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
                if boundary_step(island, &cur.xs, dxs) <= 1.0 {
                    break;
                }
                if trial
                    .step_from(p, island, cur, dv, dxs, 1.0, false)
                    .is_err()
                {
                    break;
                }
                std::mem::swap(cur, trial);
                polish_chord = polish_chord_allowed;
                polish_nt = false;
                chords = 0;
            }
            // Then, in a dual scalar, one Newton step per derivative order
            // with the exact Jacobian that moves only the derivative parts
            // (the primal stays where the f64 solve puts it): at the root,
            // each makes one more derivative order exact.
            for _ in 0..T::DERIVATIVE_ORDER {
                let Work {
                    cur,
                    trial,
                    dv,
                    dxs,
                    rc,
                    dir,
                    fac,
                    ..
                } = &mut *w;
                let l = Linearization::Exact;
                factor_into(p, island, &cur.ev, &cur.v, &cur.xs, false, l, fac)?;
                local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
                direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
                if trial.step_from(p, island, cur, dv, dxs, 1.0, true).is_err() {
                    break;
                }
                std::mem::swap(cur, trial);
            }
            let m = measures(island, &w.cur.ev, &w.cur.xs, rho);
            if trace_enabled() {
                eprintln!(
                    "ipm: converged after polishing: eq {:.2e} comp_dev {:.2e}, {k} Newton steps",
                    m.eq, m.comp_dev
                );
            }
            return Ok(Ended {
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: false,
            });
        }
        let extend =
            extend_while_converging && last_alpha >= WARM_PROGRESS_STEP && iter < sp.max_iterations;
        if iter >= max_iterations && accept_at_cap && !extend {
            return Ok(Ended {
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if iter >= max_iterations && !extend {
            return Err(SolveError::MaxIterations {
                iters: iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        iter += 1;
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
        } = &mut *w;
        let nu = mean_comp(island, &cur.xs, None);
        // A chord step on the previous iteration's factorization
        // (`Params::reuse_factorization`): kept when it contracts the
        // residual by `CHORD_CONTRACTION`, else this iteration factors.
        // Tried near the final phase only (ν within twice ρ: the mean
        // wanders around ρ by the complementarity deviations), where the
        // iteration's own target is ρ or next to it.
        if reuse && nu <= 2.0 * rho {
            let ftb = params.fraction_to_boundary;
            let (c, tr) = (&mut chords, &mut *trial);
            known = chord_step(
                p, island, rho, nt, ftb, m.merit, cur, tr, c, fac, rc, dir, dv, dxs,
            );
            if known.is_some() {
                reuse = chords < MAX_CHORD_STEPS;
                last_alpha = 1.0;
                continue;
            }
        }
        chords = 0;
        factor_into(p, island, &cur.ev, &cur.v, &cur.xs, nt, lin, fac)?;
        // Predictor (affine scaling, κ = 0), for the centering σ; at ν ≤ ρ
        // the target is ρ whatever σ is (σ ≤ 1), and the solve is skipped.
        let sigma = if nu <= rho {
            0.0
        } else {
            local_residuals(island, &cur.ev, &cur.xs, T::zero(), None, nt, rc);
            direction(island, &cur.ev, fac, rc, dir, dv, dx_aff)?;
            let alpha_aff = boundary_step(island, &cur.xs, dx_aff).min(1.0);
            let nu_aff = mean_comp(island, &cur.xs, Some((dx_aff, alpha_aff)));
            if nu > 0.0 {
                (nu_aff / nu).clamp(0.0, 1.0).powi(3)
            } else {
                0.0
            }
        };
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
        // Backtracking line search on ‖r_κ‖² along the corrector; when it
        // finds no sufficient decrease (the second-order term can make the
        // corrector an ascent direction far from the solution), along the
        // pure Newton direction of r_κ; failing that, the shortest trial
        // of the Newton direction is taken.
        // (second-order term, Nesterov–Todd scaled): the corrector, then the
        // Newton direction, then (when NT scaling is on) the unscaled
        // Newton direction, which is a descent direction of ‖r_κ‖².
        // Final phase: the Newton direction of r_ρ into `dx_aff`, whose own
        // second-order term the first trial direction then carries
        // (`Params::final_corrector`).
        let final_corrector = !second_order && (params.final_corrector || reuse_allowed);
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
        /// Where the point to move to is.
        #[derive(PartialEq)]
        enum Taken {
            Trial,
            Center,
        }
        let mut taken = None;
        let mut best_merit: Option<f64> = None;
        let mut accepted_alpha = 0.0;
        let mut plain_ready = false;
        let mut accepted_fac = false;
        for (so, scaled) in dirs.into_iter().flatten() {
            let corrector = so.then_some(dx_aff.as_slice());
            local_residuals(
                island,
                &cur.ev,
                &cur.xs,
                T::from_re(kappa),
                corrector,
                scaled,
                rc,
            );
            let f = if scaled == nt {
                &*fac
            } else {
                if !plain_ready {
                    factor_into(p, island, &cur.ev, &cur.v, &cur.xs, scaled, lin, plain)?;
                    plain_ready = true;
                }
                &*plain
            };
            direction(island, &cur.ev, f, rc, dir, dv, dxs)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                if trial
                    .step_from(p, island, cur, dv, dxs, alpha, false)
                    .is_ok()
                {
                    let merit = measures(island, &trial.ev, &trial.xs, kappa).merit;
                    if merit <= (1.0 - params.armijo * alpha) * merit0 {
                        accepted_alpha = alpha;
                        accepted_fac = scaled == nt;
                        taken = Some(Taken::Trial);
                        break;
                    }
                    if best_merit.is_none_or(|m| merit < m) {
                        best_merit = Some(merit);
                        std::mem::swap(best, trial);
                    }
                }
                alpha *= params.backtrack_factor;
            }
            if taken.is_some() {
                break;
            }
        }
        // One short step is ordinary interior-point progress (the first
        // iterations of a resting contact take one); two in a row mean the
        // closed-form blocks may be stalling the iterate.
        if accepted_alpha < params.exact_jacobian_below {
            short_steps += 1;
            if short_steps >= 2 {
                lin = Linearization::Exact;
            }
        } else {
            short_steps = 0;
        }
        if accepted_alpha < params.recenter_below {
            // Blocked against a cone boundary (a badly centred pair): take
            // a pure centering step towards κ = ν instead, accepted without
            // the merit test, so the next iterations can make progress.
            let kc = T::from_re(nu.max(rho));
            local_residuals(island, &cur.ev, &cur.xs, kc, None, nt, rc);
            direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                if center
                    .step_from(p, island, cur, dv, dxs, alpha, false)
                    .is_ok()
                {
                    taken = Some(Taken::Center);
                    break;
                }
                alpha *= params.backtrack_factor;
            }
        }
        last_alpha = accepted_alpha;
        // The factorization may be reused by the next iteration when it
        // is the final phase's (the target at ρ, no second-order term)
        // and its own direction was taken in full.
        reuse = reuse_allowed
            && !second_order
            && taken == Some(Taken::Trial)
            && accepted_alpha == 1.0
            && accepted_fac;
        match taken {
            Some(Taken::Trial) => std::mem::swap(cur, trial),
            Some(Taken::Center) => std::mem::swap(cur, center),
            None if best_merit.is_some() => std::mem::swap(cur, best),
            // Every trial point failed to evaluate.
            None => {
                return Err(SolveError::Singular(
                    "line search: no trial point could be evaluated",
                ))
            }
        }
    }
}
