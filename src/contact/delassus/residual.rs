use super::*;

/// The exact island residual at `(v, z)` into `(dyn rows, contact rows)`,
/// with the evaluation and the contact-space velocities `ŷ` (restitution
/// bias included).
#[allow(clippy::type_complexity)]
pub(super) fn island_residual<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    scale: &[T],
    v: &DVec<T>,
    z: &[Vector3<T>],
    bias: Option<&[T]>,
    need_jac: bool,
) -> Result<(DVec<T>, Vec<Vector3<T>>, Eval<T>, Vec<Vector3<T>>), SolveError> {
    // The robots' mass matrices only where the caller linearizes or the
    // contact rows apply the Delassus operator.
    let ev = if need_jac || F::ROWS_USE_DELASSUS {
        evaluate(p, island, v, &zero_xs(island))?
    } else {
        evaluate_residual(p, island, v, &zero_xs(island))?
    };
    let mus: Vec<T> = island.contacts.iter().map(|c| c.mu).collect();
    let f: Vec<Vector3<T>> = island
        .contacts
        .iter()
        .enumerate()
        .map(|(k, c)| form.impulse(c.mu, scale[k], &z[k]))
        .collect();
    let del = if F::ROWS_USE_DELASSUS {
        Some(Delassus::new(island, &ev)?)
    } else {
        None
    };
    // r_dyn − Σ Wᵀ f: the contact-free residual minus the generalized
    // impulses.
    let mut rd = ev.r_dyn.clone();
    for (ce, fc) in ev.contacts.iter().zip(&f) {
        for (u, w) in &ce.blocks {
            let o = island.units[*u].offset;
            for k in 0..w.ncols() {
                rd[o + k] -= w[(0, k)] * fc[0] + w[(1, k)] * fc[1] + w[(2, k)] * fc[2];
            }
        }
    }
    let mut yhat = contact_velocities(&ev, p.h);
    if let Some(b) = bias {
        for (y, b) in yhat.iter_mut().zip(b) {
            y[0] += *b;
        }
    }
    let mut rows = vec![Vector3::zeros(); z.len()];
    let at_times = |g: &[Vector3<T>]| match &del {
        Some(del) => del.apply_transpose(g),
        None => unreachable!("contact_rows of a formulation without ROWS_USE_DELASSUS"),
    };
    form.contact_rows(&mus, scale, &yhat, z, &at_times, &mut rows);
    drop(del);
    Ok((rd, rows, ev, yhat))
}

/// The per-candidate friction coefficients in `T` from the materials
/// (their derivative parts flow), in the f64 structure's order.
pub(crate) fn candidates_in<T: Scalar>(
    p: &StepProblem<'_, T>,
    cands: &[Candidate<f64>],
) -> Vec<Candidate<T>> {
    cands
        .iter()
        .map(|c| c.with_mu(pair_mu(p, c.a, c.b)))
        .collect()
}

/// Position of each candidate (by key) in the structure.
pub(super) fn index_of(cands: &[Candidate<f64>], key: &CandidateKey) -> Result<usize, SolveError> {
    cands
        .iter()
        .position(|c| c.key() == *key)
        .ok_or(SolveError::Mismatch {
            what: "a contact candidate not in the structure",
        })
}

/// The exact residual `r(y)` of a contact-space backend (module docs).
pub fn residual<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    s: &Structure,
    y: &DVec<T>,
) -> Result<DVec<T>, SolveError> {
    let nv = p.model.nv;
    if y.len() != nv + Z * s.candidates.len() {
        return Err(SolveError::Mismatch {
            what: "the unknowns' length is not the structure's",
        });
    }
    let v_next = y.rows(0, nv).into_owned();
    let mut r = DVec::zeros(y.len());
    let mut r_dyn = DVec::zeros(nv);
    momentum_residual(p.model, p.q, p.v, &v_next, p.u, &p.gravity, p.h, &mut r_dyn)?;
    articulated_residual(p.model, p.q, p.v, &v_next, p.u, p.h, &mut r_dyn);
    for island in islands(p.model, candidates_in(p, &s.candidates)) {
        let idx: Vec<usize> = island
            .contacts
            .iter()
            .map(|c| index_of(&s.candidates, &c.key()))
            .collect::<Result<_, _>>()?;
        let z: Vec<Vector3<T>> = idx
            .iter()
            .map(|&i| y.fixed_rows::<Z>(nv + Z * i).into_owned())
            .collect();
        // The impulse scales in T: a function of the start of the step
        // (and of masses, inertias, shapes), so their derivative parts
        // flow (`convex`'s R depends on them).
        let scale: Vec<T> = if F::SCALE_MOVES_ROOT {
            scales(p, &island)?
        } else {
            idx.iter().map(|&i| T::from_re(s.scale[i])).collect()
        };
        let bias = restitution_bias(form, p, &island)?;
        let v_local = island.gather(&v_next);
        let (rd, rows, _, _) = island_residual(
            form,
            p,
            &island,
            &scale,
            &v_local,
            &z,
            bias.as_deref(),
            false,
        )?;
        island.scatter(&rd, &mut r_dyn);
        for (&i, row) in idx.iter().zip(&rows) {
            r.fixed_rows_mut::<Z>(nv + Z * i).copy_from(row);
        }
    }
    r.rows_mut(0, nv).copy_from(&r_dyn);
    Ok(r)
}

/// The unknowns of `y` by contact island (each island's velocities and
/// impulses), the velocities of the bodies in no island last: the groups
/// of [`ContactBackend::jacobian_groups`](crate::contact::ContactBackend::jacobian_groups)
/// for the residual of `residual`.
pub fn jacobian_groups(p: &StepProblem<'_, f64>, s: &Structure) -> Option<Vec<Vec<usize>>> {
    let nv = p.model.nv;
    let mut seen = vec![false; nv];
    let mut groups = Vec::new();
    for island in islands(p.model, s.candidates.clone()) {
        let mut g = Vec::new();
        for u in &island.units {
            for &d in &u.dofs {
                *seen.get_mut(d)? = true;
                g.push(d);
            }
        }
        for c in &island.contacts {
            let i = index_of(&s.candidates, &c.key()).ok()?;
            g.extend((0..Z).map(|k| nv + Z * i + k));
        }
        groups.push(g);
    }
    let rest: Vec<usize> = (0..nv).filter(|&d| !seen[d]).collect();
    if !rest.is_empty() {
        groups.push(rest);
    }
    Some(groups)
}
