use super::*;

/// One island's f64 solve.
pub(super) struct IslandSolution {
    pub(super) v: DVec<f64>,
    pub(super) z: Vec<Vector3<f64>>,
    pub(super) residual: f64,
}

pub(super) fn solve_island<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    v0: DVec<f64>,
    scale: &mut Vec<f64>,
    stats: &mut InnerStats,
) -> Result<IslandSolution, SolveError> {
    let dp = form.driver();
    let m = island.contacts.len();
    let mus: Vec<f64> = island.contacts.iter().map(|c| c.mu).collect();
    let mut v = v0;
    let mut z: Option<DVec<f64>> = None;
    let mut last = f64::INFINITY;
    let mut best: Option<IslandSolution> = None;
    let mut polish = if F::POLISH_UPDATE {
        POLISH_OUTER_UPDATE
    } else {
        4
    };
    // ∞-norms of the last two outer updates of `v` (`POLISH_UPDATE`).
    let (mut step_prev, mut step_now) = (f64::INFINITY, f64::INFINITY);
    // The point of lowest exact residual, where the fallback starts:
    // `(v, z, residual, outside the formulation's domain)`.
    let mut lowest: Option<(DVec<f64>, DVec<f64>, f64, bool)> = None;
    let mut inner_error = None;
    let mut stalled = 0;
    let bias = restitution_bias(form, p, island)?;
    for it in 0..=dp.max_outer {
        let zs: Vec<Vector3<f64>> = match &z {
            Some(z) => (0..m)
                .map(|k| z.fixed_rows::<Z>(Z * k).into_owned())
                .collect(),
            None => vec![Vector3::zeros(); m],
        };
        if scale.is_empty() {
            *scale = scales(p, island)?;
        }
        let ev = if z.is_some() {
            let (rd, rows, ev, yhat) =
                island_residual(form, p, island, scale, &v, &zs, bias.as_deref(), true)?;
            let res = rd
                .amax()
                .max(rows.iter().map(|r| r.amax()).fold(0.0, f64::max));
            if !res.is_finite() {
                return Err(SolveError::Singular(
                    "non-finite residual in a contact-space solve",
                ));
            }
            // Converged: polish towards round-off (the derivative methods
            // and finite differences need the root, not a point within
            // the tolerance): go on while each linearization shrinks the
            // residual at least 4-fold (with `POLISH_UPDATE`, or the
            // update of `v`), keep the best point.
            let step_shrinks = F::POLISH_UPDATE && step_now <= 0.25 * step_prev;
            if let Some(b) = &best {
                if res > p.params.tolerance || (res >= b.residual && !step_shrinks) {
                    stats.outer += it;
                    return Ok(best.take().expect("checked"));
                }
            }
            // Admissible points first, then the lowest residual.
            let out = !form.admissible(&yhat, &zs);
            if lowest.as_ref().is_none_or(|l| (out, res) < (l.3, l.2)) {
                lowest = z.as_ref().map(|z| (v.clone(), z.clone(), res, out));
                stalled = 0;
            } else if lowest.is_some() && res > p.params.tolerance {
                // Not below the lowest residual: the loop cycles (typically
                // between the vertices of a face standing behind one conic
                // contact point); hand over to the fallback.
                stalled += 1;
                if stalled == STALL_OUTER {
                    break;
                }
            }
            let shrinking = res <= 0.25 * last || step_shrinks;
            last = res;
            if res <= p.params.tolerance {
                let sol = IslandSolution {
                    v: v.clone(),
                    z: zs,
                    residual: res,
                };
                if !shrinking || polish == 0 || it == dp.max_outer {
                    stats.outer += it;
                    return Ok(sol);
                }
                polish -= 1;
                best = Some(sol);
            }
            ev
        } else {
            // Before the first solve there are no unknowns to test.
            evaluate(p, island, &v, &zero_xs(island))?
        };
        if it == dp.max_outer {
            break;
        }
        let update = linearized_update(
            form,
            p,
            island,
            &ev,
            bias.as_deref(),
            &mus,
            scale,
            &z,
            last,
            stats,
        )?;
        let (dv, znew) = match update {
            Ok(u) => u,
            Err(e) => {
                inner_error = Some(e);
                break;
            }
        };
        step_prev = step_now;
        step_now = dv.amax();
        v += dv;
        z = Some(znew);
    }
    if let Some(b) = best {
        stats.outer += dp.max_outer;
        return Ok(b);
    }
    stats.outer += dp.max_outer;
    if let Some((v, z, res, _)) = lowest {
        if let Some(sol) = newton_fallback(form, p, island, scale, bias.as_deref(), v, z, res) {
            return Ok(sol);
        }
    }
    Err(inner_error.unwrap_or(SolveError::MaxIterations {
        iters: dp.max_outer,
        residual: last,
        complementarity: 0.0,
    }))
}

/// One linearization of [`solve_island`]'s loop at the evaluation `ev`:
/// the Delassus operator `A` and `c = ŷ(v_k) − W K⁻¹ r_k` (plus the
/// restitution `bias`), the formulation's contact-space solve from the
/// previous unknowns `z` (accepted within a thousandth of the last exact
/// residual `last`, see below), and the update of `v` by the new
/// impulses: `Ok(Ok((Δv, z)))`, or `Ok(Err(_))` when the inner solve
/// failed (the loop hands over to its fallback).
#[allow(clippy::too_many_arguments)]
fn linearized_update<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    ev: &Eval<f64>,
    bias: Option<&[f64]>,
    mus: &[f64],
    scale: &[f64],
    z: &Option<DVec<f64>>,
    last: f64,
    stats: &mut InnerStats,
) -> Result<Result<(DVec<f64>, DVec<f64>), SolveError>, SolveError> {
    let m = island.contacts.len();
    let del = Delassus::new(island, ev)?;
    let a = del.matrix();
    // c = ŷ(v_k) − W K⁻¹ r_k (r_k: the contact-free residual).
    let dv0 = del.velocity(&[], Some(&(-&ev.r_dyn)));
    let wdv = del.contact_velocity(&dv0);
    let yhat = contact_velocities(ev, p.h);
    let mut c = DVec::zeros(Z * m);
    for k in 0..m {
        c.fixed_rows_mut::<Z>(Z * k).copy_from(&(yhat[k] + wdv[k]));
        if let Some(b) = bias {
            c[Z * k] += b[k];
        }
    }
    // Inexact Newton: the linearized problem's `c` mixes position-level
    // normal rows (φ(q⁺)/h) with velocity-level tangential rows, so
    // away from the root it may be slightly off the range of a rigid
    // motion of redundant contacts and have no exact solution (the
    // inner solve then stalls at that floor). An inner point within a
    // thousandth of the current exact residual is as good as exact
    // for this linearization; the floor shrinks with the outer
    // residual, and convergence is tested on the exact residual.
    let accept = (0.1 * p.params.tolerance).max(1e-3 * last.min(c.amax()));
    let znew = match form.solve_linear(&a, &c, mus, scale, z.as_ref(), accept, stats) {
        Ok(z) => z,
        Err(e) => return Ok(Err(e)),
    };
    stats.solves += 1;
    let f: Vec<Vector3<f64>> = (0..m)
        .map(|k| form.impulse(mus[k], scale[k], &znew.fixed_rows::<Z>(Z * k).into_owned()))
        .collect();
    let dv = del.velocity(&f, Some(&(-&ev.r_dyn)));
    Ok(Ok((dv, znew)))
}

/// Outer iterations past the tolerance spent polishing the root towards
/// round-off with [`Formulation::POLISH_UPDATE`] ([`solve_island`]).
pub(super) const POLISH_OUTER_UPDATE: usize = 8;

/// Outer iterations without a new lowest exact residual after which an
/// island's linearization loop hands over to [`newton_fallback`].
pub(super) const STALL_OUTER: usize = 8;

/// Marks every conic candidate (a shape pair without a closed form,
/// `parts` set: any pair with a cylinder, cone, ellipsoid, polytope, padded
/// polygon or bundle, or two capsules within 5.7° of parallel) to have its
/// gap in metres ([`metric_gap`](crate::contact::space::metric_gap)). The
/// conic program's gap is the scaling `α* − 1`, while the contact-space
/// linearization takes the normal row of `W` (the witness point's velocity
/// along the normal) as the rate of the gap: with the scaling, `ŷ_N = φ/h`
/// and `A f + c` disagree by the factor between the two and the
/// linearization loop does not converge (measured before the conversion:
/// residual 3–30 after 30 iterations on `bundles`, `peg_in_hole`,
/// `polytope_drop`).
pub fn metric_conic<T: Scalar>(cands: &mut [Candidate<T>]) {
    for c in cands {
        if let Some(parts) = &mut c.parts {
            parts.metric = true;
        }
    }
}

/// The f64 step of a contact-space backend: `(solution, y*, structure)`.
pub fn solve_f64<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
) -> Result<(StepSolution<f64>, DVec<f64>, Structure, InnerStats), SolveError> {
    solve_f64_without(form, p, &|_| false)
}

/// [`solve_f64`] with the contact candidates for which `leave_out` holds
/// left out of the step's contact problem (at `q` and among those found
/// penetrating at `q⁺`), so that the structure, the residual and every
/// derivative of the step are those of the problem without them. `lcp`'s
/// continuous collision leaves the impacting pair out of the sub-step
/// that ends at its time of impact (its gap closes there by construction;
/// the impact solve takes it).
pub fn solve_f64_without<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    leave_out: &dyn Fn(&Candidate<f64>) -> bool,
) -> Result<(StepSolution<f64>, DVec<f64>, Structure, InnerStats), SolveError> {
    form.refuse(p)?;
    let dp = form.driver();
    let (mut v_free, ff_iters) = free_flight_velocity(
        p.model,
        p.q,
        p.v,
        p.u,
        &p.gravity,
        p.h,
        &NewtonParams::default(),
    )?;
    articulated_velocity(p.model, p.q, p.v, p.u, p.h, &mut v_free);
    let mut detect = DetectScratch::default();
    let mut cands = Vec::new();
    candidates_into(p, dp.margin, &mut detect, &mut cands);
    cands.retain(|c| !leave_out(c));
    metric_conic(&mut cands);
    let mut stats = InnerStats::default();
    // Candidate rounds: features penetrating at q⁺ that were no candidate
    // are added and the step solved again (as `ipm` does).
    for round in 0..4 {
        let mut out = StepSolution {
            q_next: DVec::zeros(0),
            v_next: v_free.clone(),
            contacts: Vec::new(),
            stats: SolveStats {
                iterations: ff_iters,
                contacts: cands.len(),
                ..Default::default()
            },
        };
        let mut zs = vec![Vector3::zeros(); cands.len()];
        let mut cand_scale = vec![1.0; cands.len()];
        let mut max_res: f64 = 0.0;
        for island in islands(p.model, cands.clone()) {
            let v0 = island.gather(&v_free);
            let mut scale: Vec<f64> = Vec::new();
            let sol = solve_island(form, p, &island, v0, &mut scale, &mut stats)?;
            max_res = max_res.max(sol.residual);
            island.scatter(&sol.v, &mut out.v_next);
            for (k, c) in island.contacts.iter().enumerate() {
                let i = index_of(&cands, &c.key())?;
                zs[i] = sol.z[k];
                cand_scale[i] = scale[k];
            }
        }
        out.q_next = integrate_model(p.model, p.q, &out.v_next, p.h)?;
        let mut found = Vec::new();
        penetrating_into(p, &out.q_next, &mut detect, &mut found);
        found.retain(|c| !leave_out(c) && !cands.iter().any(|d| d.key() == c.key()));
        if !found.is_empty() && round < 3 {
            metric_conic(&mut found);
            cands.extend(found);
            continue;
        }
        let zflat: Vec<DVec<f64>> = zs
            .iter()
            .map(|z| DVec::from_column_slice(z.as_slice()))
            .collect();
        let y = stacked_root(&out.v_next, &zflat);
        let mus: Vec<f64> = cands.iter().map(|c| c.mu).collect();
        let mut s = Structure {
            pieces: form.pieces(&mus, &zs),
            candidates: cands,
            scale: cand_scale,
        };
        let polished = form.polish_root(p, &s, y.clone())?;
        let y = if polished != y {
            let nv = p.model.nv;
            out.v_next = polished.rows(0, nv).into_owned();
            out.q_next = integrate_model(p.model, p.q, &out.v_next, p.h)?;
            let zp: Vec<Vector3<f64>> = (0..s.candidates.len())
                .map(|k| polished.fixed_rows::<Z>(nv + Z * k).into_owned())
                .collect();
            s.pieces = form.pieces(&mus, &zp);
            polished
        } else {
            y
        };
        out.stats.iterations = stats.iterations;
        out.stats.residual = max_res;
        contacts_into(form, p, &s, &y, &mut out)?;
        return Ok((out, y, s, stats));
    }
    unreachable!("the last candidate round returns")
}

/// The contact impulses at `y` (every island evaluated at the root).
pub(super) fn contacts_into<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    s: &Structure,
    y: &DVec<T>,
    out: &mut StepSolution<T>,
) -> Result<(), SolveError> {
    let nv = p.model.nv;
    out.contacts.clear();
    let v_next = y.rows(0, nv).into_owned();
    for island in islands(p.model, candidates_in(p, &s.candidates)) {
        let v_local = island.gather(&v_next);
        let ev = evaluate(p, &island, &v_local, &zero_xs(&island))?;
        let scale = if F::SCALE_MOVES_ROOT {
            Some(scales(p, &island)?)
        } else {
            None
        };
        for (ci, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
            let i = index_of(&s.candidates, &cand.key())?;
            let z: Vector3<T> = y.fixed_rows::<Z>(nv + Z * i).into_owned();
            let sc = scale
                .as_ref()
                .map_or_else(|| T::from_re(s.scale[i]), |sc| sc[ci]);
            let f = form.impulse(cand.mu, sc, &z);
            let (t1, t2) = ce.tangents;
            out.stats.max_penetration = out.stats.max_penetration.max(-ce.contact.gap.re());
            out.contacts.push(ContactImpulse {
                body_a: cand.a,
                body_b: match cand.b {
                    Partner::Body(j) => Some(j),
                    Partner::Static(_) => None,
                },
                point: ce.contact.point_a,
                normal: ce.contact.normal,
                normal_impulse: f[0],
                tangent_impulse: t1 * f[1] + t2 * f[2],
                gap: ce.contact.gap,
            });
        }
    }
    Ok(())
}

/// Runs `f` on the primal (f64) copy of `p`.
pub fn with_primal<T: Scalar, R>(
    p: &StepProblem<'_, T>,
    f: impl FnOnce(&StepProblem<'_, f64>) -> R,
) -> R {
    let model = p.model.cast::<f64>();
    let shapes: Vec<_> = p
        .shapes
        .iter()
        .map(|s| s.as_ref().map(|s| s.cast()))
        .collect();
    let materials: Vec<_> = p.materials.iter().map(|m| m.cast()).collect();
    let statics: Vec<_> = p.statics.iter().map(|s| s.cast()).collect();
    let link_shapes: Vec<_> = p.link_shapes.iter().map(|s| s.cast()).collect();
    let re = |x: &DVec<T>| x.map(|x| x.re());
    let (q, v, u) = (re(p.q), re(p.v), re(p.u));
    let pf = StepProblem {
        model: &model,
        shapes: &shapes,
        materials: &materials,
        statics: &statics,
        link_shapes: &link_shapes,
        friction_combine: p.friction_combine,
        restitution_combine: p.restitution_combine,
        q: &q,
        v: &v,
        u: &u,
        gravity: p.gravity.map(|x| x.re()),
        h: p.h.re(),
        friction_cone: p.friction_cone,
        params: p.params,
        ccd: p.ccd,
    };
    f(&pf)
}

/// The step in any scalar: the f64 solve, then the refinement of the
/// derivative parts (module docs).
pub fn solve<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
) -> Result<(StepSolution<T>, Structure, InnerStats), SolveError> {
    solve_without(form, p, &|_| false)
}

/// [`solve`] with the candidates for which `leave_out` holds left out
/// ([`solve_f64_without`]).
pub fn solve_without<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    leave_out: &dyn Fn(&Candidate<f64>) -> bool,
) -> Result<(StepSolution<T>, Structure, InnerStats), SolveError> {
    let (sol, y, s, stats, jinv) = with_primal(p, |pf| -> Result<_, SolveError> {
        let (sol, y, s, stats) = solve_f64_without(form, pf, leave_out)?;
        let jinv = if T::DERIVATIVE_ORDER > 0 {
            let j = dense_jacobian(form, pf, &s, &y)?;
            // The pseudo-inverse only where `∂r/∂y` is singular by design
            // (redundant contacts); otherwise the inverse: a truncated SVD
            // would drop a well-defined but small singular value (`convex`:
            // 1e-12 of the largest at a sliding contact).
            Some(if F::REDUNDANT {
                pinv_unique(&j, pf.model.nv)?
            } else {
                inverse_by_blocks(&j).ok_or(SolveError::Singular("residual Jacobian"))?
            })
        } else {
            None
        };
        Ok((sol, y, s, stats, jinv))
    })?;
    let mut yt: DVec<T> = y.map(T::from_re);
    if let Some(jinv) = jinv {
        for pass in 0..T::DERIVATIVE_ORDER + F::REFINE {
            let mut r = residual(form, p, &s, &yt)?;
            if pass >= T::DERIVATIVE_ORDER {
                // Refinement of the derivative parts only
                // (`ContactBackend::REFINE`).
                r = r.map(|x| x - T::from_re(x.re()));
            }
            let n = r.len();
            for i in 0..n {
                let mut acc = T::zero();
                for (j, &a) in jinv.row(i).iter().enumerate() {
                    if a != 0.0 {
                        acc += T::from_re(a) * r[j];
                    }
                }
                yt[i] -= acc;
            }
        }
    }
    let nv = p.model.nv;
    let v_next = yt.rows(0, nv).into_owned();
    let q_next = integrate_model(p.model, p.q, &v_next, p.h)?;
    let mut out = StepSolution {
        q_next,
        v_next,
        contacts: Vec::new(),
        stats: sol.stats,
    };
    out.stats.max_penetration = 0.0;
    contacts_into(form, p, &s, &yt, &mut out)?;
    Ok((out, s, stats))
}
