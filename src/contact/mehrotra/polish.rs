use super::*;

/// The end of a converged solve. Polish: full Newton steps on r_ρ
/// (unscaled cone rows), the same in every scalar: at least
/// `polish_steps`, with the loop's linearization, until the residual is
/// at round-off (`1e-6 · tolerance`; finite differences of a step divide
/// the solution's error by their step), at most four more, the last two
/// exact (a closed-form matrix contracts linearly). In f64 (no derivative
/// parts to make exact) the steps stop as soon as the residual is at
/// round-off, which a warm-started resting contact already is. Then the
/// [`derivative_steps`].
pub(super) fn polish<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    params: &Params,
    st: &mut LoopState,
    w: &mut Work<T>,
) -> Result<Ended, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
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
    let polish_chord_allowed = st.reuse_allowed && T::DERIVATIVE_ORDER == 0;
    let mut polish_chord = polish_chord_allowed && st.reuse;
    let mut polish_nt = params.nesterov_todd;
    // Each kept chord step shrinks the merit 8-fold, so the few
    // left to reach round-off are not capped by the loop's count.
    st.chords = 0;
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
        let mm = st
            .known
            .take()
            .unwrap_or_else(|| measures(island, &cur.ev, &cur.xs, rho));
        if polish_chord && (mm.eq > chord_tight || mm.comp_dev > chord_tight) {
            let ftb = params.fraction_to_boundary;
            let m0 = mm.merit;
            let (c, tr) = (&mut st.chords, &mut *trial);
            st.known = chord_step(
                p, island, rho, polish_nt, ftb, m0, cur, tr, c, fac, rc, dir, dv, dxs,
            );
            if st.known.is_some() {
                polish_chord = st.chords < MAX_CHORD_STEPS;
                continue;
            }
        }
        if k >= required && mm.eq <= tight && mm.comp_dev <= tight {
            break;
        }
        let l = if k + 2 >= max_steps {
            Linearization::Exact
        } else {
            st.lin
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
        st.chords = 0;
    }
    derivative_steps(p, island, w)?;
    let m = measures(island, &w.cur.ev, &w.cur.xs, rho);
    if trace_enabled() {
        eprintln!(
            "ipm: converged after polishing: eq {:.2e} comp_dev {:.2e}, {k} Newton steps",
            m.eq, m.comp_dev
        );
    }
    Ok(Ended {
        iterations: st.iter,
        residual: m.eq,
        complementarity: m.comp_max,
        capped: false,
    })
}

/// In a dual scalar, one Newton step per derivative order with the exact
/// Jacobian that moves only the derivative parts (the primal stays where
/// the f64 solve puts it): at the root, each makes one more derivative
/// order exact. None in f64.
pub(super) fn derivative_steps<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    w: &mut Work<T>,
) -> Result<(), SolveError> {
    let rho = p.params.rho;
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
    Ok(())
}
