use super::*;

/// Tries every active set (rows with finite bounds: free, lower, upper);
/// the first that verifies is left in `ws`. Returns the sets tried.
pub(super) fn exhaustive(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> (usize, bool) {
    let n = p.n();
    let choices: Vec<Vec<Status>> = (0..n)
        .map(|i| {
            let mut c = vec![Status::Free];
            if p.findex[i].is_some() || p.lo[i].is_finite() {
                c.push(Status::Lo);
            }
            if p.findex[i].is_some() || p.hi[i].is_finite() {
                c.push(Status::Hi);
            }
            c
        })
        .collect();
    let mut idx = vec![0usize; n];
    let mut status: Vec<Status> = (0..n).map(|i| choices[i][0]).collect();
    let mut tried = 0;
    loop {
        tried += 1;
        if active_solve(p, &status, ws, false).is_some()
            && residual_w(p, &ws.x, &ws.w) <= opts.tolerance
        {
            ws.status.copy_from_slice(&status);
            return (tried, true);
        }
        // Next assignment (odometer).
        let mut i = 0;
        loop {
            if i == n {
                return (tried, false);
            }
            idx[i] += 1;
            if idx[i] < choices[i].len() {
                status[i] = choices[i][idx[i]];
                break;
            }
            idx[i] = 0;
            status[i] = choices[i][0];
            i += 1;
        }
    }
}

/// Projected Gauss–Seidel from `ws.x`; returns the sweeps taken.
pub(super) fn pgs(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> usize {
    let n = p.n();
    let dmax = (0..n).map(|i| p.a[(i, i)]).fold(0.0f64, f64::max);
    let reg = opts.pgs_regularization * dmax.max(f64::MIN_POSITIVE);
    for sweep in 0..opts.pgs_sweeps {
        let mut change: f64 = 0.0;
        for i in 0..n {
            let mut wi = p.b[i];
            for j in 0..n {
                wi += p.a[(i, j)] * ws.x[j];
            }
            let (l, h) = p.bounds(i, &ws.x);
            let d = p.a[(i, i)] + reg;
            let new = if d > 0.0 {
                (ws.x[i] - wi / d).max(l).min(h)
            } else {
                ws.x[i].max(l).min(h)
            };
            change = change.max((new - ws.x[i]).abs());
            ws.x[i] = new;
        }
        if change <= 1e-15 * ws.x.amax() {
            return sweep + 1;
        }
    }
    opts.pgs_sweeps
}

/// The active set of an approximate point: a row at (within a relative
/// `1e-7`) a bound is there, the others free.
pub(super) fn classify(p: &Problem<'_>, ws: &mut Workspace) {
    let n = p.n();
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    let tx = 1e-7 * x.amax();
    for i in 0..n {
        let (l, h) = p.bounds(i, &x);
        ws.status[i] = if h - l <= tx {
            if ws.w[i] >= 0.0 {
                Status::Lo
            } else {
                Status::Hi
            }
        } else if x[i] <= l + tx {
            Status::Lo
        } else if x[i] >= h - tx {
            Status::Hi
        } else {
            Status::Free
        };
    }
    ws.x = x;
}

/// Snaps `ws.x` onto the active set `status` (rows at a bound set to it,
/// tied friction rows to their normal) and corrects the free rows by the
/// minimum-norm solution of the clamped system's residual:
/// `x_C += −M⁺ (A x + b)_C` (iterative refinement that stays near the
/// given point when the clamped system is singular).
pub(super) fn refine(p: &Problem<'_>, status: &[Status], ws: &mut Workspace) -> Option<()> {
    let n = p.n();
    for i in 0..n {
        match (p.findex[i], status[i]) {
            (None, Status::Lo) => ws.x[i] = p.lo[i],
            (None, Status::Hi) => ws.x[i] = p.hi[i],
            _ => {}
        }
    }
    for i in 0..n {
        if let (Some(k), Some(c)) = (p.findex[i], tie(p, i, status[i])) {
            ws.x[i] = c * ws.x[k];
        }
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    ws.cols.clear();
    ws.cols.extend((0..n).filter(|&i| status[i] == Status::Free));
    let k = ws.cols.len();
    for (ri, &r) in ws.cols.iter().enumerate() {
        ws.rhs[ri] = -ws.w[r];
        for (ci, &j) in ws.cols.iter().enumerate() {
            ws.m[ci * k + ri] = at(p, &ws.children, status, r, j);
        }
    }
    sub_solve(ws, k, true)?;
    for ci in 0..k {
        let j = ws.cols[ci];
        let d = ws.rhs[ci];
        ws.x[j] += d;
        for &i in &ws.children[j] {
            if let Some(c) = tie(p, i, status[i]) {
                ws.x[i] = c * ws.x[j];
            }
        }
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    Some(())
}

/// Verifies `ws.x` (with `ws.w` fresh); then the stabilized point of
/// `ws.status` replaces it when it verifies too. Returns
/// `(accepted, residual, stabilized)`.
pub(super) fn accept(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> (bool, f64, bool) {
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    let r = residual_w(p, &ws.x, &ws.w);
    ws.best.copy_from(&ws.x);
    let status = std::mem::take(&mut ws.status);
    // The stabilized point of the largest clamping set: rows at a bound
    // with zero velocity (degenerate, as a redundant contact that carries
    // nothing) made free, the minimum-norm solution of that set.
    if opts.stabilize {
        let wscale = p.b.amax() + p.a.amax() * ws.x.amax();
        let mut wide = status.clone();
        let mut widened = false;
        for i in 0..p.n() {
            if matches!(status[i], Status::Lo | Status::Hi) && ws.w[i].abs() <= 1e-9 * wscale {
                let (l, h) = p.bounds(i, &ws.x);
                // Only rows whose bounds leave room (not a friction row
                // of a separated contact).
                if h - l > 0.0 {
                    wide[i] = Status::Free;
                    widened = true;
                }
            }
        }
        // Friction rows of a normal made free: on the side their velocity
        // points to (free where it is zero).
        for i in 0..p.n() {
            if let Some(k) = p.findex[i] {
                if wide[k] != status[k] {
                    wide[i] = if ws.w[i].abs() <= 1e-9 * wscale {
                        Status::Free
                    } else if ws.w[i] > 0.0 {
                        Status::Lo
                    } else {
                        Status::Hi
                    };
                }
            }
        }
        // The sticking set: besides, every friction row at a bound of a
        // contact whose normal is (or was made) free made free as well,
        // even where it slides. With redundant contacts the normal
        // impulses are not unique, and neither is the velocity: a
        // pivoting stage lands on a vertex of the solution set (the load
        // of a face on one of its points) where the lightly loaded points
        // slide at their bound (a plate squeezed between two box fingers on
        // prismatic joints pivots about one corner, although every point
        // sticking with the load shared solves the same LCP). The
        // minimum-norm point of the sticking set is the limit of uniformly
        // compliant contacts; where it verifies it is preferred. Where the
        // velocity is unique (a single contact, fixed normal impulses) it
        // verifies only if the slip was zero anyway.
        let mut stick = wide.clone();
        let mut sticking = false;
        for i in 0..p.n() {
            if let Some(k) = p.findex[i] {
                if wide[k] == Status::Free && matches!(stick[i], Status::Lo | Status::Hi) {
                    stick[i] = Status::Free;
                    sticking = true;
                }
            }
        }
        if sticking && active_solve(p, &stick, ws, true).is_some() {
            let rs = residual_w(p, &ws.x, &ws.w);
            // Strictly inside: every friction row taken off its bound
            // sticks with room (a millionth of its box) under a positive
            // normal. The acceptance tolerance alone would let a contact
            // whose slip is within it (a perturbed head-on impact, a
            // touching contact with no normal impulse) stick with its
            // friction a hair outside the box, and the step would stop
            // being smooth in its inputs.
            let inside = (0..p.n()).all(|i| {
                if stick[i] != Status::Free || status[i] == Status::Free || p.findex[i].is_none() {
                    return true;
                }
                let (l, h) = p.bounds(i, &ws.x);
                let room = 1e-6 * (h - l);
                h - l > 0.0 && ws.x[i] >= l + room && ws.x[i] <= h - room
            });
            if inside && rs <= opts.tolerance {
                ws.status = stick;
                return (true, rs, true);
            }
            ws.x.copy_from(&ws.best);
        }
        if widened && active_solve(p, &wide, ws, true).is_some() {
            let rs = residual_w(p, &ws.x, &ws.w);
            if rs <= opts.tolerance {
                ws.status = wide;
                return (true, rs, true);
            }
        }
        ws.x.copy_from(&ws.best);
    }
    // The stabilized (minimum-norm) point of the active set.
    if opts.stabilize && active_solve(p, &status, ws, true).is_some() {
        let rs = residual_w(p, &ws.x, &ws.w);
        if rs <= opts.tolerance {
            ws.status = status;
            return (true, rs, true);
        }
    }
    // The stage's point, refined on its active set (when the minimum-norm
    // point leaves the bounds).
    ws.x.copy_from(&ws.best);
    if refine(p, &status, ws).is_some() {
        let rr = residual_w(p, &ws.x, &ws.w);
        if rr <= opts.tolerance && rr <= r {
            ws.status = status;
            return (true, rr, false);
        }
    }
    ws.status = status;
    let best = std::mem::take(&mut ws.best);
    ws.x.copy_from(&best);
    ws.best = best;
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    (r <= opts.tolerance, r, false)
}
