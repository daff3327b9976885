use super::*;

/// Largest island (`dim + 3 × contacts` unknowns) that
/// [`newton_fallback`] takes on (each iteration evaluates the island's
/// residual twice per unknown).
pub(super) const FALLBACK_MAX_UNKNOWNS: usize = 120;

/// Iteration cap of [`newton_fallback`].
pub(super) const FALLBACK_ITERATIONS: usize = 40;

/// What the fallbacks evaluate an island's exact residual with: the
/// step, the island, its impulse scales, the restitution bias, and the
/// contact normals at `q` ([`normals_at_start`]) that no point
/// [`admissible_residual`] accepts may turn by 90° or more.
#[derive(Clone, Copy)]
pub(super) struct FallbackIsland<'a> {
    pub(super) p: &'a StepProblem<'a, f64>,
    pub(super) island: &'a Island<f64>,
    pub(super) scale: &'a [f64],
    pub(super) bias: Option<&'a [f64]>,
    pub(super) reference: &'a [Vector3<f64>],
}

/// The island's exact residual at `(v, z)` stacked as one vector
/// (dynamics rows, then three contact rows per contact), with the
/// contact-space velocities `ŷ` (restitution bias included) for
/// [`Formulation::admissible`] and the contact normals at `q⁺`; `None`
/// where it cannot be evaluated.
#[allow(clippy::type_complexity)]
pub(super) fn stacked_island_residual<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<(
    DVec<f64>,
    Vec<Vector3<f64>>,
    Vec<Vector3<f64>>,
    Vec<Vector3<f64>>,
)> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    let n = island.dim();
    let m = island.contacts.len();
    let v = y.rows(0, n).into_owned();
    let z: Vec<Vector3<f64>> = (0..m)
        .map(|k| y.fixed_rows::<Z>(n + Z * k).into_owned())
        .collect();
    let (rd, rows, ev, yhat) = island_residual(form, p, island, scale, &v, &z, bias, false).ok()?;
    let mut r = DVec::zeros(n + Z * m);
    r.rows_mut(0, n).copy_from(&rd);
    for (k, row) in rows.iter().enumerate() {
        r.fixed_rows_mut::<Z>(n + Z * k).copy_from(row);
    }
    let normals = ev.contacts.iter().map(|c| c.contact.normal).collect();
    r.iter()
        .all(|x| x.is_finite())
        .then_some((r, yhat, z, normals))
}

/// The contact normals at `q` (`v⁺ = 0`): [`admissible_residual`]'s
/// reference (`None` where the island cannot be evaluated there).
pub(super) fn normals_at_start(
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
) -> Option<Vec<Vector3<f64>>> {
    let ev = evaluate(p, island, &DVec::zeros(island.dim()), &zero_xs(island)).ok()?;
    Some(ev.contacts.iter().map(|c| c.contact.normal).collect())
}

/// The fallback of an island whose linearization loop did not converge:
/// damped Newton steps on the island's exact residual `r(v⁺, z)` from the
/// loop's best point, with the exact `∂r/∂(v⁺, z)` by dual numbers (the
/// linearization loop leaves out how the contact points, normals and lever
/// arms move with `v⁺`; where that matters — one contact point standing for
/// a face of a polytope, whose conic witness point slides across the face
/// as it tilts — the loop cycles between the faces' vertices). The step is
/// the least-squares solution (SVD: redundant contacts make `∂r/∂y`
/// singular) and is halved until the residual's 2-norm decreases.
///
/// A barrier formulation ([`Formulation::barrier`]) instead follows its
/// barrier path ([`barrier_fallback`]): Newton on a barrier's residual
/// from an uncentred point (the loop's, whose impulses may sit at the
/// cone's boundary) stalls.
///
/// Returns a point whose exact residual (∞-norm) is within the step's
/// tolerance, or `None`. Runs in f64 only; the root it returns is the
/// exact residual's, so the derivative methods are unchanged.
#[allow(clippy::too_many_arguments)]
pub(super) fn newton_fallback<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    scale: &[f64],
    bias: Option<&[f64]>,
    v: DVec<f64>,
    z: DVec<f64>,
    res: f64,
) -> Option<IslandSolution> {
    let n = island.dim();
    let m = island.contacts.len();
    let dim = n + Z * m;
    if dim > FALLBACK_MAX_UNKNOWNS || !res.is_finite() {
        return None;
    }
    let reference = normals_at_start(p, island)?;
    let fi = FallbackIsland {
        p,
        island,
        scale,
        bias,
        reference: &reference,
    };
    if let Some(kappa) = form.barrier() {
        return barrier_fallback(form, &fi, v, z, res, kappa);
    }
    let mut y = DVec::zeros(dim);
    y.rows_mut(0, n).copy_from(&v);
    y.rows_mut(n, Z * m).copy_from(&z);
    // A start outside the formulation's domain is pulled towards
    // `v⁺ = 0`, where each gap is the one at the start of the step.
    let mut start = admissible_residual(form, &fi, &y);
    let mut t = 1.0;
    while start.is_none() && t > 1e-6 {
        t *= 0.5;
        y.rows_mut(0, n).copy_from(&(&v * t));
        start = admissible_residual(form, &fi, &y);
    }
    let (y, r) = damped_newton(form, &fi, y, start?, true)?;
    Some(island_solution(n, m, &y, &r))
}

/// The island's stacked residual at `y` where `y` is in the formulation's
/// domain ([`Formulation::admissible`]) and no contact normal has turned
/// by 90° or more from its direction at `q` (`reference`,
/// [`normals_at_start`]), else `None`.
///
/// The normal test keeps the fallbacks' Newton steps on the exact
/// residual from roots the step cannot have: a body that passes through a
/// wall within the step sees that wall's signed distance positive again
/// on the far side, with the normal reversed, and the exact residual has
/// a root there. Measured on `peg_in_hole` under `convex` (the state
/// 29 of its rollout, the peg's x angular velocity −1e-7 off): the
/// barrier-path fallback's Newton steps went to a root with the peg at
/// 24.7 m/s through `wall_px` (residual 3.3e-11, every gap positive);
/// `check`'s central differences divided that by ε.
pub(super) fn admissible_residual<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<DVec<f64>> {
    let reference = fi.reference;
    stacked_island_residual(form, fi, y)
        .filter(|(_, yhat, z, normals)| {
            form.admissible(yhat, z) && normals.iter().zip(reference).all(|(n, n0)| n.dot(n0) > 0.0)
        })
        .map(|(r, _, _, _)| r)
}

pub(super) fn island_solution(n: usize, m: usize, y: &DVec<f64>, r: &DVec<f64>) -> IslandSolution {
    IslandSolution {
        v: y.rows(0, n).into_owned(),
        z: (0..m)
            .map(|k| y.fixed_rows::<Z>(n + Z * k).into_owned())
            .collect(),
        residual: r.amax(),
    }
}

/// The exact `∂r/∂y` of an island's stacked residual at `y` (dual
/// numbers; `None` where the residual cannot be evaluated).
pub(super) fn island_jacobian<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<DMat<f64>> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    type D = JacobianDual;
    let n = island.dim();
    let m = island.contacts.len();
    with_cast::<D, _>(p, |pd| {
        let isl = Island {
            units: island.units.clone(),
            contacts: island
                .contacts
                .iter()
                .map(|c| c.with_mu(D::from_re(c.mu)))
                .collect(),
            local: island.local.clone(),
        };
        let sd: Vec<D> = scale.iter().map(|&x| D::from_re(x)).collect();
        let bd: Option<Vec<D>> = bias.map(|b| b.iter().map(|&x| D::from_re(x)).collect());
        dual_jacobian(y, |yd| {
            let v = yd.rows(0, n).into_owned();
            let z: Vec<Vector3<D>> = (0..m)
                .map(|k| yd.fixed_rows::<Z>(n + Z * k).into_owned())
                .collect();
            let Ok((rd, rows, _, _)) =
                island_residual(form, pd, &isl, &sd, &v, &z, bd.as_deref(), false)
            else {
                return Ok(None);
            };
            let mut r = DVec::zeros(n + Z * m);
            r.rows_mut(0, n).copy_from(&rd);
            for (k, row) in rows.iter().enumerate() {
                r.fixed_rows_mut::<Z>(n + Z * k).copy_from(row);
            }
            Ok(Some(r))
        })
        .ok()
        .flatten()
        .filter(|j| j.iter().all(|x| x.is_finite()))
    })
}

/// Damped Newton on an island's exact residual from `(y, r)` (module docs
/// of [`newton_fallback`]); below the step's tolerance it polishes
/// towards round-off while each step shrinks the residual 4-fold when
/// `polish` is set. `Some((y, r))` within the tolerance, else `None`.
#[allow(clippy::too_many_arguments)]
pub(super) fn damped_newton<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    mut y: DVec<f64>,
    mut r: DVec<f64>,
    polish: bool,
) -> Option<(DVec<f64>, DVec<f64>)> {
    let p = fi.p;
    let mut polish = if polish { 4 } else { 0 };
    for _ in 0..FALLBACK_ITERATIONS {
        let converged = r.amax() <= p.params.tolerance;
        if converged && polish == 0 {
            break;
        }
        let jac = island_jacobian(form, fi, &y)?;
        let step = crate::linalg::Svd::new(&jac).solve(&r, 1e-12)?;
        let norm = r.norm();
        let mut lambda = 1.0;
        let mut next = None;
        while lambda > 1e-6 {
            let trial = &y - &step * lambda;
            if let Some(rt) = admissible_residual(form, fi, &trial) {
                if rt.norm() < (1.0 - 1e-4 * lambda) * norm {
                    next = Some((trial, rt));
                    break;
                }
            }
            lambda *= 0.5;
        }
        let Some((yn, rn)) = next else {
            if converged {
                break;
            }
            return None;
        };
        if converged {
            polish -= 1;
            if rn.amax() > 0.25 * r.amax() {
                if rn.amax() < r.amax() {
                    (y, r) = (yn, rn);
                }
                break;
            }
        }
        y = yn;
        r = rn;
    }
    (r.amax() <= p.params.tolerance).then_some((y, r))
}

/// Barrier weight reduction per stage of [`barrier_fallback`].
pub(super) const BARRIER_REDUCTION: f64 = 10.0;

/// The fallback of a barrier formulation: the barrier path
/// ([`barrier_path`]) from two starts in turn. First the loop's point of
/// lowest residual `(v, z)` itself, at the weight among `κ 10^j`
/// (`j = 0 … 8`) where its exact residual is lowest. Then, if that path
/// fails, a centred point: at the loop's best velocity `v` (pulled
/// towards `v⁺ = 0` until every contact-space velocity is in the domain),
/// the unknowns are the centred ones ([`Formulation::centred`]) at the
/// weight `κ₀ = s² max_c σ_c` (`s`: the velocity scale, the larger of the
/// contact-space velocities there and the loop's residual; `σ_c`: the
/// impulse scales), the problem's natural energy (as the inner solve's
/// first stage).
#[allow(clippy::too_many_arguments)]
pub(super) fn barrier_fallback<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    v: DVec<f64>,
    z: DVec<f64>,
    res: f64,
    kappa: f64,
) -> Option<IslandSolution> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    let n = island.dim();
    let m = island.contacts.len();
    let mus: Vec<f64> = island.contacts.iter().map(|c| c.mu).collect();
    // First from the loop's point itself, at the weight (κ 10^j, j =
    // 0 … 8) where its residual is lowest: its impulses balance the
    // dynamics rows, which the centred start below does not (at a gliding
    // contact the centred impulse is of order ‖ŷ‖/R: on `peg_in_hole`'s
    // perturbed squeeze steps a start residual of 2e4, from which the
    // first stage's Newton steps wandered to the peg rising at 3 m/s).
    let mut y = DVec::zeros(n + Z * m);
    y.rows_mut(0, n).copy_from(&v);
    y.rows_mut(n, Z * m).copy_from(&z);
    let start = (0..=8)
        .map(|j| kappa * 10f64.powi(j))
        .filter_map(|k| {
            let r = admissible_residual(&form.with_barrier(k)?, fi, &y)?;
            Some((r.amax(), k))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, k)) = start {
        if let Some(sol) = barrier_path(form, fi, y, k, kappa) {
            return Some(sol);
        }
    }
    // Contact-space velocities and Delassus operator at `v`.
    let point = |v: &DVec<f64>| -> Option<(Vec<Vector3<f64>>, DMat<f64>)> {
        let ev = evaluate(p, island, v, &zero_xs(island)).ok()?;
        let mut yhat = contact_velocities(&ev, p.h);
        if let Some(b) = bias {
            for (y, b) in yhat.iter_mut().zip(b) {
                y[0] += *b;
            }
        }
        let a = Delassus::new(island, &ev).ok()?.matrix();
        Some((yhat, a))
    };
    let mut t = 1.0;
    let mut v0 = v.clone();
    let (yhat, a) = loop {
        if let Some((yhat, a)) = point(&v0) {
            if yhat
                .iter()
                .all(|y| y[0] > 0.0 && y.iter().all(|x| x.is_finite()))
            {
                break (yhat, a);
            }
        }
        t *= 0.5;
        if t < 1e-6 {
            return None;
        }
        v0 = &v * t;
    };
    let s = yhat.iter().map(|y| y.amax()).fold(res, f64::max);
    let sigma = scale.iter().copied().fold(0.0, f64::max);
    let k = (s * s * sigma).max(kappa);
    let z = form.with_barrier(k)?.centred(&a, &yhat, &mus, scale)?;
    let mut y = DVec::zeros(n + Z * m);
    y.rows_mut(0, n).copy_from(&v0);
    for (c, zc) in z.iter().enumerate() {
        y.fixed_rows_mut::<Z>(n + Z * c).copy_from(zc);
    }
    barrier_path(form, fi, y, k, kappa)
}

/// [`barrier_fallback`]'s continuation from `y` at the weight `k` down to
/// `kappa`: [`damped_newton`] on the exact residual at each weight to the
/// step's tolerance, the weight divided by [`BARRIER_REDUCTION`] per stage
/// (by its square root after a stage that fails, from that stage's start;
/// squared again, up to [`BARRIER_REDUCTION`], after each stage that
/// succeeds) down to κ, where the root is polished.
#[allow(clippy::too_many_arguments)]
pub(super) fn barrier_path<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    mut y: DVec<f64>,
    mut k: f64,
    kappa: f64,
) -> Option<IslandSolution> {
    let island = fi.island;
    let n = island.dim();
    let m = island.contacts.len();
    let mut reduction = BARRIER_REDUCTION;
    let mut stages = 0;
    loop {
        let fk = form.with_barrier(k)?;
        let last = k <= kappa;
        let r = admissible_residual(&fk, fi, &y)?;
        stages += 1;
        match damped_newton(&fk, fi, y.clone(), r, last) {
            Some((yn, rn)) => {
                if last {
                    return Some(island_solution(n, m, &yn, &rn));
                }
                y = yn;
                // After a success the reduction grows back (squared, up
                // to BARRIER_REDUCTION): a reduction shrunk for good
                // left some of `peg_in_hole`'s perturbed steps among the
                // four gliding walls at 1.33 per stage after their first
                // stages failed, 71 stages from there to κ, beyond
                // BARRIER_STAGES.
                reduction = (reduction * reduction).min(BARRIER_REDUCTION);
                k = (k / reduction).max(kappa);
            }
            None => {
                // Back to the last centred weight (above the first one
                // when the first stage fails: a larger weight is a
                // smoother problem), a smaller reduction.
                if stages > BARRIER_STAGES || reduction < 1.5 {
                    return None;
                }
                k *= reduction;
                reduction = reduction.sqrt();
                k = (k / reduction).max(kappa);
            }
        }
        if stages > BARRIER_STAGES {
            return None;
        }
    }
}

/// Cap of [`barrier_fallback`]'s stages.
pub(super) const BARRIER_STAGES: usize = 40;
