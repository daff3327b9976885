use super::*;

/// Puts the initial point of a solve in the work's buffers (their storage
/// reused): `v0`, each contact's `x0` where given (warm) or its law's
/// default point, then the cold contacts moved onto the linear equalities
/// where the cones allow it ([`start_on_equalities`]) and, with
/// [`Params::warm_recentre_friction`], the warm contacts' friction
/// recentred ([`recentre_friction`]). The current point is evaluated.
pub(super) fn initial_point<'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: &dyn Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    w: &mut Work<T>,
) -> Result<(), SolveError> {
    let rho = p.params.rho;
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
    {
        let cur = &mut w.cur;
        evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        start_on_equalities(island, params, &warm, cur);
        // (Every contact warm: nothing moved, the evaluation stands.)
        if warm.iter().any(|w| !*w) {
            evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        }
        if params.warm_recentre_friction && warm.iter().any(|w| *w) {
            recentre_friction(island, &mut cur.ev, &mut cur.xs, &warm, rho);
        }
    }
    w.warm = warm;
    Ok(())
}

/// Starts the cold contacts (`!warm[c]`) of `cur` (evaluated) on the linear
/// equalities where the cones allow it: the gap slack at the gap of the
/// initial velocity (when larger than the scale), β₀ = μγ, η_t = v_t with
/// ψ = ‖v_t‖ + scale (exact cone), ηₖ = ψ + dₖᵀv_t with ψ = ‖v_t‖₁ + scale
/// and s_ψ = μγ − Σβₖ > 0 (pyramid). The evaluation is left stale.
fn start_on_equalities<T: Scalar>(
    island: &Island<T>,
    params: &Params,
    warm: &[bool],
    cur: &mut Point<T>,
) {
    let scale = T::from_re(params.initial_scale);
    for (((x, ce), cand), _) in cur
        .xs
        .iter_mut()
        .zip(&cur.ev.contacts)
        .zip(&island.contacts)
        .zip(warm)
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
}
