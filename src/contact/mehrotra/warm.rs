use super::*;

/// Recentres the friction pair of every warm contact (exact cone) on the
/// new step's tangential velocity `v_t = y₁,₂` at the warm velocity: the
/// central point for `κ = ρ` with `β₀ = μγ` kept, that is `η_t = v_t`,
/// `b = −β₀ η_t / ψ` and `ψ` the positive root of
/// `ψ² − (ρ/β₀) ψ − ‖v_t‖² = 0` (from `β₀ψ + bᵀη_t = ρ`,
/// `β₀ η_t + ψ b = 0`). An unchanged contact maps to itself (the central
/// point is unique given `β₀` and `η_t`); a contact whose sliding turned
/// gets its friction turned with it instead of starting pinned against
/// the cone's boundary.
///
/// Only where the new velocity predicts the sliding: a contact that was
/// sliding (`‖b‖ ≥ 0.9 β₀`) or whose sliding speed has not jumped
/// (`‖v_t‖ ≤ 2‖η_t‖ + ρ/β₀`). A sticking contact that the start velocity
/// shows moving (a collapsing stack, an impact) keeps its previous
/// friction: the start velocity is the previous step's, and turning its
/// friction to oppose it made the warm attempts of a collapsing pyramid
/// of 30 spheres fail more often (mean iterations per step 8.3 against
/// 6.3 with this rule). The evaluation `ev` at the same velocity stays
/// current: only its `r_dyn` depends on the impulses, and it is updated
/// by each recentred contact's change of impulse (a new evaluation of the
/// island cost 2.7 M instructions per warm step of a 1045-contact layer).
pub(super) fn recentre_friction<T: Scalar>(
    island: &Island<T>,
    ev: &mut Eval<T>,
    xs: &mut [DVec<T>],
    warm: &[bool],
    rho: f64,
) {
    let k = T::from_re(rho);
    let Eval {
        r_dyn, contacts, ..
    } = ev;
    for (((x, ce), cand), _) in xs
        .iter_mut()
        .zip(contacts.iter())
        .zip(&island.contacts)
        .zip(warm)
        .filter(|w| *w.1)
    {
        if cand.law != Law::Exact {
            continue;
        }
        let y = ce.y;
        let b0 = cand.mu * x[0];
        if !(b0.re() > 0.0) {
            continue;
        }
        let norm2 = |a: f64, b: f64| (a * a + b * b).sqrt();
        let b_norm = norm2(x[3].re(), x[4].re());
        let eta = norm2(x[6].re(), x[7].re());
        let vt = norm2(y[1].re(), y[2].re());
        if !(b_norm >= 0.9 * x[2].re() || vt <= 2.0 * eta + rho / b0.re()) {
            continue;
        }
        let Some((psi, b1, b2)) = soc_central_point(b0, y[1], y[2], k) else {
            continue;
        };
        let f_old = cand.law.impulse(&*x);
        x[2] = b0;
        x[3] = b1;
        x[4] = b2;
        x[5] = psi;
        x[6] = y[1];
        x[7] = y[2];
        // `r_dyn` carries `−Wᵀ f`: it follows the new impulse.
        let df = f_old - cand.law.impulse(&*x);
        for (li, w) in &ce.blocks {
            let u = &island.units[*li];
            for j in 0..u.size() {
                r_dyn[u.offset + j] += w[(0, j)] * df[0] + w[(1, j)] * df[1] + w[(2, j)] * df[2];
            }
        }
    }
}

/// A warm attempt ([`solve_island_warm`]) whose last accepted step was at
/// least this long goes on past [`Params::warm_attempt_iterations`].
pub(super) const WARM_PROGRESS_STEP: f64 = 0.5;

/// [`solve_island`] started from the previous step's contact unknowns
/// `x0` (a rollout's contact warm start, [`Params::warm_start_contacts`]),
/// safeguarded: the warm attempt may take at most
/// [`Params::warm_attempt_iterations`] iterations; when it has not
/// converged by then (a contact that opened or closed starts at the wrong
/// corner of its complementarity and the interior point stalls there) or
/// fails, the island is solved again from the default initial point with
/// the full iteration budget. The reported iterations count both attempts.
pub fn solve_island_warm<'w, 'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: impl Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    w: &'w mut Work<T>,
) -> Result<IslandSolution<'w, T>, SolveError> {
    let sp = p.params;
    let cap = params.warm_attempt_iterations.min(sp.max_iterations);
    let spent = if (0..island.contacts.len()).any(|i| x0(i).is_some()) {
        // A large island (the sparse path) goes on past the cap while it
        // converges (see `Params::warm_attempt_iterations`).
        let extend = island.dim() >= SPARSE_MIN_ROWS;
        match solve_island_capped(p, island, v0, &x0, params, cap, false, extend, w) {
            Ok(e) => return Ok(w.solution(e)),
            // Only the iterations actually run count; every failure of
            // the warm attempt falls back to the cold start.
            Err(SolveError::MaxIterations { iters, .. }) => iters,
            Err(_) => 0,
        }
    } else {
        0
    };
    let e = solve_island_capped(
        p,
        island,
        v0,
        &|_| None,
        params,
        sp.max_iterations,
        sp.accept_at_cap,
        false,
        w,
    );
    let e = continue_failed(p, island, v0, params, e, spent, w)?;
    Ok(w.solution(e))
}
