use super::*;

/// Buffers of [`direction`]: the right-hand side and `A_c⁻¹ r_c`.
pub(super) struct DirWork<T: Scalar> {
    pub(super) ainv_r: Vec<DVec<T>>,
}

/// Newton direction for the local residuals `rc` (dynamics residual from
/// `ev`): `(H + Σ Wᵀ E A⁻¹ C K) dv = −r_d − Σ Wᵀ E A⁻¹ r_c`,
/// `dx_c = −A_c⁻¹ (r_c + C_c K_c dv)`, into `dv` and `dxs`.
pub(super) fn direction<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    f: &Factored<T>,
    rc: &[DVec<T>],
    work: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dxs: &mut [DVec<T>],
) -> Result<(), SolveError> {
    for (d, r) in dv.iter_mut().zip(ev.r_dyn.iter()) {
        *d = -*r;
    }
    for (c, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
        let u = &mut work.ainv_r[c];
        if !f.local[c].solve_into(&rc[c], u) {
            return Err(SolveError::Singular("contact block"));
        }
        let eu = cand.law.impulse(u);
        for (lw, w) in &ce.blocks {
            let un = &island.units[*lw];
            for k in 0..un.size() {
                dv[un.offset + k] -= w[(0, k)] * eu[0] + w[(1, k)] * eu[1] + w[(2, k)] * eu[2];
            }
        }
    }
    if !f.reduced.solve_in_place(dv) {
        return Err(SolveError::Singular("reduced system"));
    }
    for c in 0..ev.contacts.len() {
        let mut dy = Vec3::zeros();
        for (lk, k) in &f.k_blocks[c] {
            let un = &island.units[*lk];
            for j in 0..un.size() {
                let d = dv[un.offset + j];
                dy[0] += k[(0, j)] * d;
                dy[1] += k[(1, j)] * d;
                dy[2] += k[(2, j)] * d;
            }
        }
        let ar = &work.ainv_r[c];
        for (i, out) in dxs[c].iter_mut().enumerate() {
            *out = -(ar[i] + f.local[c].ainv_c_times(&dy, i));
        }
    }
    Ok(())
}

/// Largest merit ratio `‖r_ρ(trial)‖² / ‖r_ρ(cur)‖²` of a chord step that
/// is kept (`Params::reuse_factorization`): the residual's norm must
/// shrink at least √8 ≈ 2.8-fold, or the factorization is too stale to be
/// worth more solves than one new factorization (a chord step costs about
/// a sixth of a factored iteration on the 1045-contact layer; 1/16 there
/// refactored 0.4 times more per step, 1/4 gave the same steps as 1/8).
pub(super) const CHORD_CONTRACTION: f64 = 1.0 / 8.0;

/// Consecutive chord steps one factorization may serve.
pub(super) const MAX_CHORD_STEPS: usize = 8;

/// A chord step: the full Newton step of `r_ρ` at `cur` computed with
/// `fac`, the factorization of an earlier iterate, into `trial`. True when
/// the step keeps `fraction_to_boundary` of the distance to every cone
/// boundary, evaluates, and brings the merit `‖r_ρ‖²` from `merit0` to at
/// most [`CHORD_CONTRACTION`] of it; then `cur` moves there (swapped with
/// `trial`), `chords` counts it, and the new point's measures at ρ are
/// returned (the caller's next test needs them).
/// Decided on primal values, so every scalar takes the same steps.
#[allow(clippy::too_many_arguments)]
pub(super) fn chord_step<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    rho: f64,
    nt: bool,
    fraction_to_boundary: f64,
    merit0: f64,
    cur: &mut Point<T>,
    trial: &mut Point<T>,
    chords: &mut usize,
    fac: &Factored<T>,
    rc: &mut [DVec<T>],
    dir: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dxs: &mut [DVec<T>],
) -> Option<Measures> {
    if nt {
        chord_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), fac, rc);
    } else {
        local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
    }
    direction(island, &cur.ev, fac, rc, dir, dv, dxs).ok()?;
    if fraction_to_boundary * boundary_step(island, &cur.xs, dxs) < 1.0 {
        return None;
    }
    trial.step_from(p, island, cur, dv, dxs, 1.0, false).ok()?;
    let measured = measures(island, &trial.ev, &trial.xs, rho);
    let mt = measured.merit;
    let kept = mt <= CHORD_CONTRACTION * merit0;
    if trace_enabled() {
        let verdict = if kept { "kept" } else { "rejected" };
        eprintln!("ipm: chord step: merit {merit0:.3e} -> {mt:.3e} ({verdict})");
    }
    if !kept {
        return None;
    }
    std::mem::swap(cur, trial);
    *chords += 1;
    Some(measured)
}

/// The local residuals of a chord step on a factorization with scaled cone
/// rows: as [`local_residuals`] with `nt`, but each friction cone pair's
/// rows scaled by the factored point's Nesterov–Todd scaling `W₀`,
/// `(W₀⁻¹ z) ∘ (W₀ s) − κ e`, instead of the current point's (`λ ∘ λ − κ e`,
/// `λ = W⁻¹ z = W s`). `W₀` is an automorphism of the cone, so this
/// equation has the central point `z ∘ s = κ e` as its root too; it
/// contracts the same as the current scaling on the 1045-contact layer
/// (same merit at every chord step to three digits) and saves a scaling
/// (square roots and divisions) per contact and chord step.
pub(super) fn chord_residuals<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: T,
    fac: &Factored<T>,
    out: &mut [DVec<T>],
) {
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let scaled = match (fac.nt_w.get(c), cand.law.soc_pairs()) {
            (Some(Some(ws)), [(z, s)]) => Some((ws, *z, *s)),
            _ => None,
        };
        let r = local_residual_fixed(cand.law, x.as_slice(), &ce.y, cand.mu, kappa, None, false);
        let o = out[c].as_mut_slice();
        o.copy_from_slice(&r.as_slice()[..cand.law.size()]);
        if let Some(((w, winv), z, s)) = scaled {
            let zz = Vec3::new(x[z], x[z + 1], x[z + 2]);
            let ss = Vec3::new(x[s], x[s + 1], x[s + 2]);
            let mut j = jordan(&(winv * zz), &(w * ss));
            j[0] -= kappa;
            let row = cand.law.equalities() + cand.law.orthant_pairs().len();
            o[row..row + 3].copy_from_slice(j.as_slice());
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn local_residuals<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: T,
    corrector: Option<&[DVec<T>]>,
    nt: bool,
    out: &mut [DVec<T>],
) {
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let r = local_residual_fixed(
            cand.law,
            x.as_slice(),
            &ce.y,
            cand.mu,
            kappa,
            corrector.map(|d| d[c].as_slice()),
            nt,
        );
        out[c]
            .as_mut_slice()
            .copy_from_slice(&r.as_slice()[..cand.law.size()]);
    }
}
