use super::*;

/// An event of Dantzig's ratio test.
#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    To(usize, Status),
}

/// Dantzig principal pivoting (module docs); the result in `ws.x`,
/// `ws.status`. Returns the pivots taken.
pub(super) fn dantzig(p: &Problem<'_>, opts: &Options, ws: &mut Workspace) -> Result<usize, (usize, DantzigFailure)> {
    let n = p.n();
    ws.status.iter_mut().for_each(|s| *s = Status::Unset);
    ws.x.fill(0.0);
    let amax = p.a.amax().max(f64::MIN_POSITIVE);
    let mut pivots = 0;
    let cap = 20 * n + 20;
    let order = (0..n)
        .filter(|&i| p.findex[i].is_none())
        .chain((0..n).filter(|&i| p.findex[i].is_some()));
    let order: Vec<usize> = order.collect();
    for d in order {
        ws.seen.clear();
        loop {
            let x = std::mem::take(&mut ws.x);
            eval_w(p, &x, &mut ws.w);
            ws.x = x;
            let wscale = p.b.amax() + amax * ws.x.amax();
            let tw = 1e-13 * wscale.max(f64::MIN_POSITIVE);
            let tx = 1e-13 * ws.x.amax();
            let (l, h) = p.bounds(d, &ws.x);
            let (xd, wd) = (ws.x[d], ws.w[d]);
            if wd.abs() <= tw && xd >= l - tx && xd <= h + tx {
                ws.status[d] = Status::Free;
                break;
            }
            if wd > 0.0 && xd <= l + tx {
                ws.status[d] = Status::Lo;
                ws.x[d] = l;
                break;
            }
            if wd < 0.0 && xd >= h - tx {
                ws.status[d] = Status::Hi;
                ws.x[d] = h;
                break;
            }
            pivots += 1;
            if pivots > cap {
                return Err((pivots, DantzigFailure::PivotCap));
            }
            let s = if wd > 0.0 { -1.0 } else { 1.0 };
            if direction(p, ws, d, s).is_none() {
                return Err((pivots, DantzigFailure::Unbounded { row: d }));
            }
            let Some((t, Event::To(j, st))) = ratio_test(p, opts, ws, d, wd, amax) else {
                return Err((pivots, DantzigFailure::Unbounded { row: d }));
            };
            // The bound the event meets, before the step (the frozen test
            // stops there).
            let frozen = match (p.findex[j], st) {
                (Some(nrm), Status::Lo) => p.lo[j] * ws.x[nrm],
                (Some(nrm), Status::Hi) => p.hi[j] * ws.x[nrm],
                _ => 0.0,
            };
            {
                let (x, dx) = (&mut ws.x, &ws.dx);
                x.axpy(t, dx, 1.0);
            }
            match (p.findex[j], st) {
                (_, Status::Free) => {}
                (Some(nrm), _) => {
                    ws.x[j] = match opts.ratio_test {
                        RatioTest::Moving => tie(p, j, st).expect("bounded") * ws.x[nrm],
                        RatioTest::Frozen => frozen,
                    };
                }
                (None, Status::Lo) => ws.x[j] = p.lo[j],
                (None, Status::Hi) => ws.x[j] = p.hi[j],
                _ => {}
            }
            ws.status[j] = st;
            if j == d {
                break;
            }
            if !ws.seen.insert(ws.status.clone()) {
                return Err((pivots, DantzigFailure::Loop { row: d }));
            }
        }
    }
    Ok(pivots)
}

/// The pivot's direction (module docs): `Δx_d = s`, `Δw = 0` on the free
/// rows, in `ws.dx` and `ws.dw = A Δx`. `None` if the free rows' system is
/// singular.
fn direction(p: &Problem<'_>, ws: &mut Workspace, d: usize, s: f64) -> Option<()> {
    let n = p.n();
    // Direction: Δx_d = s, Δw_C = 0.
    ws.cols.clear();
    ws.cols
        .extend((0..n).filter(|&i| ws.status[i] == Status::Free));
    let k = ws.cols.len();
    for (ri, &r) in ws.cols.iter().enumerate() {
        ws.rhs[ri] = -s * at(p, &ws.children, &ws.status, r, d);
        for (ci, &j) in ws.cols.iter().enumerate() {
            ws.m[ci * k + ri] = at(p, &ws.children, &ws.status, r, j);
        }
    }
    sub_solve(ws, k, false)?;
    ws.dx.fill(0.0);
    let set = |dx: &mut DVector<f64>, j: usize, v: f64, status: &[Status]| {
        dx[j] = v;
        for &i in &ws.children[j] {
            if let Some(c) = tie(p, i, status[i]) {
                dx[i] = c * v;
            }
        }
    };
    set(&mut ws.dx, d, s, &ws.status);
    for ci in 0..k {
        set(&mut ws.dx, ws.cols[ci], ws.rhs[ci], &ws.status);
    }
    let dx = std::mem::take(&mut ws.dx);
    ws.dw.gemv(1.0, p.a, &dx, 0.0);
    ws.dx = dx;
    Some(())
}

/// Dantzig's ratio test along `ws.dx` for the driven row `d` (its
/// velocity `wd`): the step to the first event and the event; `None` if
/// no event bounds the step.
fn ratio_test(
    p: &Problem<'_>,
    opts: &Options,
    ws: &Workspace,
    d: usize,
    wd: f64,
    amax: f64,
) -> Option<(f64, Event)> {
    let n = p.n();
    let dxmax = ws.dx.amax();
    let ex = 1e-12 * dxmax;
    let ew = 1e-12 * amax * dxmax;
    // Ratio test.
    let mut best = f64::INFINITY;
    let mut event: Option<Event> = None;
    let mut consider = |t: f64, e: Event| {
        let t = t.max(0.0);
        if t < best {
            best = t;
            event = Some(e);
        }
    };
    let (x, dx, w, dw) = (&ws.x, &ws.dx, &ws.w, &ws.dw);
    // The driven row's velocity reaching zero.
    if dw[d] * wd < 0.0 && dw[d].abs() > ew {
        consider(-wd / dw[d], Event::To(d, Status::Free));
    }
    // Bounds of the driven row and of the free rows.
    let bound_tests = |j: usize, consider: &mut dyn FnMut(f64, Event)| match p.findex[j] {
        Some(nrm) => {
            for (c, st) in [(p.hi[j], Status::Hi), (p.lo[j], Status::Lo)] {
                let num = c * x[nrm] - x[j];
                let den = match opts.ratio_test {
                    RatioTest::Moving => dx[j] - c * dx[nrm],
                    RatioTest::Frozen => dx[j],
                };
                let toward = if st == Status::Hi { den > ex } else { den < -ex };
                if toward {
                    consider(num / den, Event::To(j, st));
                }
            }
        }
        None => {
            if dx[j] > ex && p.hi[j].is_finite() {
                consider((p.hi[j] - x[j]) / dx[j], Event::To(j, Status::Hi));
            }
            if dx[j] < -ex && p.lo[j].is_finite() {
                consider((p.lo[j] - x[j]) / dx[j], Event::To(j, Status::Lo));
            }
        }
    };
    bound_tests(d, &mut consider);
    for j in 0..n {
        if j == d {
            continue;
        }
        match ws.status[j] {
            Status::Free => bound_tests(j, &mut consider),
            Status::Lo if dw[j] < -ew => {
                consider(-w[j] / dw[j], Event::To(j, Status::Free))
            }
            Status::Hi if dw[j] > ew => {
                consider(-w[j] / dw[j], Event::To(j, Status::Free))
            }
            _ => {}
        }
    }
    event.map(|e| (best, e))
}
