use super::*;

/// Levenberg–Marquardt with Nielsen's update of `λ`, at most `budget`
/// iterations; `Ok(true)` when `‖r‖∞ ≤ tolerance`, `Ok(false)` when out of
/// budget or stalled.
pub(super) fn levenberg_marquardt(
    ws: &mut Workspace,
    tolerance: f64,
    budget: usize,
    stats: &mut Stats,
) -> Result<bool, Failure> {
    let start = stats.iterations;
    let mut lambda = f64::NAN;
    let mut nu = 2.0;
    let initial = LM_INITIAL;
    let mut linearized = false;
    // accepted steps in a row that lowered ‖r‖ by less than 10 %
    let mut stagnant = 0;
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            let moving = ws.linearize();
            if !moving || (stagnant >= STAGNANT_STEPS && stats.iterations - start + 2 < budget) {
                stagnant = 0;
                stats.iterations += 1;
                if residual_search(ws) {
                    continue;
                }
                if !moving {
                    return Ok(false);
                }
                // the search overwrote g = Jᵀr (J and JᵀJ are intact)
                ws.g.gemv_tr(1.0, &ws.j, &ws.r, 0.0);
            }
            linearized = true;
            if lambda.is_nan() {
                let relative = if ws.lambda_relative.is_nan() {
                    initial
                } else {
                    ws.lambda_relative
                };
                lambda = relative * ws.h_max;
            }
        }
        stats.iterations += 1;
        let used = ws.factor(lambda).ok_or(Failure::NonFinite)?;
        ws.step.copy_from(&ws.g);
        ws.step.neg_mut();
        cholesky_solve(&ws.l, &mut ws.step);
        ws.xt.copy_from(&ws.x);
        ws.xt += &ws.step;
        let ell_t = ws.evaluate_trial();
        let predicted = ws.ell - ws.model();
        if ell_t < ws.ell && predicted > 0.0 {
            let rho = (ws.ell - ell_t) / predicted;
            if used <= ws.lambda_min {
                stats.newton_accepted += 1;
            }
            stagnant = if ell_t > 0.81 * ws.ell { stagnant + 1 } else { 0 };
            ws.accept_trial(ell_t);
            linearized = false;
            lambda = used * (1.0 / 3.0f64).max(1.0 - (2.0 * rho - 1.0).powi(3));
            ws.lambda_relative = lambda / ws.h_max.max(f64::MIN_POSITIVE);
            nu = 2.0;
        } else {
            if !ws.xt.iter().all(|e| e.is_finite()) {
                return Err(Failure::NonFinite);
            }
            lambda = used * nu;
            nu *= 2.0;
            if lambda > STALL_LAMBDA * ws.h_max.max(f64::MIN_POSITIVE) {
                if stats.iterations - start < budget && residual_search(ws) {
                    stats.iterations += 1;
                    linearized = false;
                    lambda = f64::NAN;
                    nu = 2.0;
                    continue;
                }
                return Ok(false);
            }
        }
    }
}

/// Roots in `(0, 1)` of `qa t² + qb t + qc` into `out`; returns their
/// number.
pub(super) fn quadratic_roots(qa: f64, qb: f64, qc: f64, out: &mut [f64; 2]) -> usize {
    let mut count = 0;
    let mut push = |t: f64| {
        if t > 0.0 && t < 1.0 {
            out[count] = t;
            count += 1;
        }
    };
    if qa == 0.0 {
        if qb != 0.0 {
            push(-qc / qb);
        }
        return count;
    }
    let disc = qb * qb - 4.0 * qa * qc;
    if !(disc >= 0.0) {
        return 0;
    }
    // the cancellation-free pair of roots
    let q = -0.5 * (qb + qb.signum() * disc.sqrt());
    push(q / qa);
    if q != 0.0 {
        push(qc / q);
    }
    count
}

/// Parameters `t ∈ (0, 1)` where `base + t dir` crosses a kink surface of
/// some contact, sorted, into `out`.
pub(super) fn segment_breakpoints(mu: &[f64], base: &DVector<f64>, dir: &DVector<f64>, out: &mut Vec<f64>) {
    out.clear();
    for (k, &mu_k) in mu.iter().enumerate() {
        let i = 3 * k;
        let (an, a1, a2) = (base[i], base[i + 1], base[i + 2]);
        let (dn, d1, d2) = (dir[i], dir[i + 1], dir[i + 2]);
        // plane x_N = 0
        if dn != 0.0 {
            let t = -an / dn;
            if t > 0.0 && t < 1.0 {
                out.push(t);
            }
        }
        // cone ‖x_F‖² = μ² x_N² on the side x_N < 0
        let mu = friction(mu_k);
        if mu > 0.0 {
            let m2 = mu * mu;
            let qa = d1 * d1 + d2 * d2 - m2 * dn * dn;
            let qb = 2.0 * (a1 * d1 + a2 * d2 - m2 * an * dn);
            let qc = a1 * a1 + a2 * a2 - m2 * an * an;
            let mut roots = [0.0; 2];
            let count = quadratic_roots(qa, qb, qc, &mut roots);
            for &t in &roots[..count] {
                if an + t * dn < 0.0 {
                    out.push(t);
                }
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out.dedup_by(|later, earlier| *later - *earlier <= 1e-12);
}

/// Edge-aware search on the segment `x + seg_start + t dir`, `t ∈ (0, 1]`:
/// evaluates `ℓ` at the kink crossings and at `t = 1`, and between two
/// consecutive evaluated points at the minimizer of `‖r‖` along the secant
/// of `r` (exact where `r` is affine between kinks); keeps the best point
/// below `best` in `xb`, `rb`. `rp` must hold the residual at `t = 0` and
/// holds the one at `t = 1` on return.
pub(super) fn search_segment(ws: &mut Workspace, best: &mut f64) {
    ws.base.copy_from(&ws.x);
    ws.base += &ws.seg_start;
    let mut breaks = std::mem::take(&mut ws.breaks);
    segment_breakpoints(&ws.problem.mu, &ws.base, &ws.dir, &mut breaks);
    breaks.push(1.0);
    let mut t_prev = 0.0;
    let mut ell_prev = 0.5 * ws.rp.norm_squared();
    for &t in &breaks {
        ws.xt.copy_from(&ws.base);
        ws.xt.axpy(t, &ws.dir, 1.0);
        let ell = ws.evaluate_trial();
        if ell < *best {
            *best = ell;
            ws.xb.copy_from(&ws.xt);
            ws.rb.copy_from(&ws.rt);
        }
        // minimizer s of ½‖rp + s (rt − rp)‖² on (0, 1)
        let (mut num, mut den) = (0.0, 0.0);
        for (p, q) in ws.rp.iter().zip(ws.rt.iter()) {
            num -= p * (q - p);
            den += (q - p) * (q - p);
        }
        if den > 0.0 && num > 0.0 && num < den {
            let s = num / den;
            let predicted = ell_prev - 0.5 * num * num / den;
            if predicted < ell.min(ell_prev).min(*best) {
                ws.xi.copy_from(&ws.base);
                ws.xi.axpy(t_prev + s * (t - t_prev), &ws.dir, 1.0);
                let ell_i = ws.problem.evaluate(&ws.xi, &mut ws.f, &mut ws.ri);
                if ell_i < *best {
                    *best = ell_i;
                    std::mem::swap(&mut ws.xi, &mut ws.xb);
                    std::mem::swap(&mut ws.ri, &mut ws.rb);
                }
            }
        }
        std::mem::swap(&mut ws.rp, &mut ws.rt);
        t_prev = t;
        ell_prev = ell;
    }
    ws.breaks = breaks;
}

/// Escape from a flat valley (module documentation, "Globalization"):
/// the edge-aware search along `x + t d`, `t ∈ (0, T]`, where `d` is the
/// part of `r` in `null(J)` (`r` itself when `J` is the symmetric `−A` of
/// a sticking block), with `T` long enough to reach every kink the
/// redundant impulses can cross. Needs the linearization at the iterate
/// (overwrites `g`, `gn`, `step` and the factorization); accepts the best
/// point and returns `true` if it lowers `ℓ`.
pub(super) fn residual_search(ws: &mut Workspace) -> bool {
    let r_inf = norm_inf(&ws.r);
    if r_inf.is_nan() || r_inf <= 0.0 {
        return false;
    }
    let mu_max = ws.problem.mu.iter().fold(0.0, |m: f64, &e| m.max(friction(e)));
    let scale = norm_inf(&ws.x).max(norm_inf(ws.problem.c)).max(f64::MIN_POSITIVE);
    // d = r − (JᵀJ + λ)⁻¹ JᵀJ r (plus one refinement step): the part of r
    // in null(J), along which ℓ is flat inside the current pieces
    if ws.factor(ws.lambda_min).is_none() {
        return false;
    }
    ws.jp.gemv(1.0, &ws.j, &ws.r, 0.0);
    ws.g.gemv_tr(1.0, &ws.j, &ws.jp, 0.0);
    ws.gn.copy_from(&ws.g);
    cholesky_solve(&ws.l, &mut ws.gn);
    ws.jp.gemv(1.0, &ws.j, &ws.gn, 0.0);
    ws.step.gemv_tr(1.0, &ws.j, &ws.jp, 0.0);
    ws.step -= &ws.g;
    ws.step.neg_mut();
    cholesky_solve(&ws.l, &mut ws.step);
    ws.gn += &ws.step;
    ws.dir.copy_from(&ws.r);
    ws.dir -= &ws.gn;
    let d_inf = norm_inf(&ws.dir);
    if d_inf.is_nan() || d_inf <= 0.0 {
        return false;
    }
    let reach = 10.0 * (1.0 + mu_max) * scale / d_inf;
    if !reach.is_finite() {
        return false;
    }
    ws.seg_start.fill(0.0);
    ws.dir *= reach;
    ws.rp.copy_from(&ws.r);
    let mut best = ws.ell;
    search_segment(ws, &mut best);
    if best < ws.ell {
        ws.accept_best(best);
        true
    } else {
        false
    }
}

/// Dogleg trust region with the edge-aware search, at most `budget`
/// iterations; `Ok(true)` when `‖r‖∞ ≤ tolerance`, `Ok(false)` when out of
/// budget or stalled.
pub(super) fn dogleg(
    ws: &mut Workspace,
    tolerance: f64,
    budget: usize,
    stats: &mut Stats,
) -> Result<bool, Failure> {
    let start = stats.iterations;
    let mut radius = f64::NAN;
    let mut linearized = false;
    let (mut gn_norm, mut cauchy_norm) = (0.0, 0.0);
    loop {
        if let Some(done) = converged(ws, tolerance, budget, start, stats)? {
            return Ok(done);
        }
        if !linearized {
            if !ws.linearize() {
                stats.iterations += 1;
                if residual_search(ws) {
                    radius = f64::NAN;
                    continue;
                }
                return Ok(false);
            }
            linearized = true;
            ws.factor(ws.lambda_min).ok_or(Failure::NonFinite)?;
            ws.gauss_newton();
            gn_norm = ws.gn.norm();
            // Cauchy point −(gᵀg / ‖Jg‖²) g
            let g2 = ws.g.norm_squared();
            ws.jp.gemv(1.0, &ws.j, &ws.g, 0.0);
            let jg2 = ws.jp.norm_squared();
            ws.cauchy.copy_from(&ws.g);
            ws.cauchy *= -g2 / jg2;
            cauchy_norm = ws.cauchy.norm();
            if !gn_norm.is_finite() || !cauchy_norm.is_finite() {
                return Err(Failure::NonFinite);
            }
            if radius.is_nan() {
                radius = gn_norm.max(cauchy_norm);
            }
        }
        stats.iterations += 1;
        // best ℓ of this iteration (its point in xb, rb once below ℓ)
        let mut best = ws.ell;
        let newton_inside = gn_norm <= radius;
        if newton_inside {
            ws.xt.copy_from(&ws.x);
            ws.xt += &ws.gn;
            let ell_t = ws.evaluate_trial();
            if ell_t < ws.ell {
                ws.step.copy_from(&ws.gn);
                let rho = (ws.ell - ell_t) / (ws.ell - ws.model());
                if rho >= ETA {
                    ws.accept_trial(ell_t);
                    linearized = false;
                    stats.newton_accepted += 1;
                    if rho > 0.75 {
                        radius = radius.max(2.0 * gn_norm);
                    } else if rho < 0.25 {
                        radius = 0.25 * gn_norm;
                    }
                    continue;
                }
            }
        }
        // first segment: 0 → p1, the Cauchy point cut at the radius
        let cut = cauchy_norm >= radius;
        ws.seg_start.fill(0.0);
        ws.dir.copy_from(&ws.cauchy);
        if cut {
            ws.dir *= radius / cauchy_norm;
        }
        ws.rp.copy_from(&ws.r);
        search_segment(ws, &mut best);
        let end_norm = if cut {
            radius
        } else {
            // second segment: p1 → p2, the Gauss–Newton point or the point
            // of p1 → gn on the trust-region boundary
            ws.seg_start.copy_from(&ws.dir);
            ws.dir.copy_from(&ws.gn);
            ws.dir -= &ws.seg_start;
            if !newton_inside {
                let dd = ws.dir.norm_squared();
                let pd = ws.seg_start.dot(&ws.dir);
                let pp = ws.seg_start.norm_squared();
                let tau = if dd > 0.0 {
                    let disc = (pd * pd + dd * (radius * radius - pp)).max(0.0);
                    ((-pd + disc.sqrt()) / dd).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                ws.dir *= tau;
            }
            search_segment(ws, &mut best);
            if newton_inside {
                gn_norm
            } else {
                radius
            }
        };
        // ratio test at the best point
        if best < ws.ell {
            ws.step.copy_from(&ws.xb);
            ws.step -= &ws.x;
            let step_norm = ws.step.norm();
            let rho = (ws.ell - best) / (ws.ell - ws.model());
            if rho >= ETA {
                ws.accept_best(best);
                linearized = false;
                if rho > 0.75 && step_norm >= 0.9 * radius {
                    radius *= 2.0;
                } else if rho < 0.25 {
                    radius = 0.25 * step_norm;
                }
                continue;
            }
        }
        radius = 0.25 * radius.min(end_norm);
        if !(radius > STALL_RADIUS * (1.0 + norm_inf(&ws.x))) {
            if stats.iterations - start < budget && residual_search(ws) {
                stats.iterations += 1;
                radius = f64::NAN;
                linearized = false;
                continue;
            }
            return Ok(false);
        }
    }
}
