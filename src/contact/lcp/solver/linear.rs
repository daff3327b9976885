use super::*;

/// `A x + b` into `w`.
pub(super) fn eval_w(p: &Problem<'_>, x: &DVector<f64>, w: &mut DVector<f64>) {
    w.copy_from(p.b);
    w.gemv(1.0, p.a, x, 1.0);
}

/// The scaled natural-map residual of `x` (module docs); 0 at a solution.
pub fn residual(p: &Problem<'_>, x: &DVector<f64>) -> f64 {
    let mut w = p.b.clone();
    w.gemv(1.0, p.a, x, 1.0);
    residual_w(p, x, &w)
}

pub(super) fn residual_w(p: &Problem<'_>, x: &DVector<f64>, w: &DVector<f64>) -> f64 {
    let amax = p.a.amax();
    let k = if amax > 0.0 { 1.0 / amax } else { 1.0 };
    let scale = x.amax() + k * p.b.amax();
    if scale == 0.0 {
        return 0.0;
    }
    let mut r: f64 = 0.0;
    for i in 0..p.n() {
        let (l, h) = p.bounds(i, x);
        let z = (x[i] - k * w[i]).max(l).min(h);
        let ri = (x[i] - z).abs();
        if !ri.is_finite() {
            return f64::INFINITY;
        }
        // A point outside its bounds (l > h cannot happen for x_n ≥ 0).
        r = r.max(ri).max(l - x[i]).max(x[i] - h);
    }
    r / scale
}

/// The coefficient tying friction row `i` to its normal in status `s`.
pub(super) fn tie(p: &Problem<'_>, i: usize, s: Status) -> Option<f64> {
    match (p.findex[i], s) {
        (Some(_), Status::Lo) => Some(p.lo[i]),
        (Some(_), Status::Hi) => Some(p.hi[i]),
        _ => None,
    }
}

/// Column `j` of `A T` at row `r` (the tied friction rows of `j` added).
pub(super) fn at(p: &Problem<'_>, children: &[Vec<usize>], status: &[Status], r: usize, j: usize) -> f64 {
    let mut v = p.a[(r, j)];
    for &i in &children[j] {
        if let Some(c) = tie(p, i, status[i]) {
            v += c * p.a[(r, i)];
        }
    }
    v
}

/// Solves the `k × k` column-major system in `m` (overwritten) for `rhs`
/// in place, LU with partial pivoting. `None` if a pivot is below
/// `1e-13 max|m|` (nearly singular).
pub(super) fn lu_solve(m: &mut [f64], k: usize, rhs: &mut [f64], piv: &mut [usize]) -> Option<()> {
    let big = m[..k * k].iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if k == 0 {
        return Some(());
    }
    if big == 0.0 {
        return None;
    }
    let tiny = 1e-13 * big;
    for c in 0..k {
        let mut pr = c;
        let mut pv = m[c * k + c].abs();
        for r in c + 1..k {
            let v = m[c * k + r].abs();
            if v > pv {
                pv = v;
                pr = r;
            }
        }
        if pv <= tiny {
            return None;
        }
        piv[c] = pr;
        if pr != c {
            for cc in 0..k {
                m.swap(cc * k + c, cc * k + pr);
            }
            rhs.swap(c, pr);
        }
        let d = m[c * k + c];
        for r in c + 1..k {
            let f = m[c * k + r] / d;
            if f != 0.0 {
                m[c * k + r] = f;
                for cc in c + 1..k {
                    m[cc * k + r] -= f * m[cc * k + c];
                }
                rhs[r] -= f * rhs[c];
            } else {
                m[c * k + r] = 0.0;
            }
        }
    }
    for c in (0..k).rev() {
        let mut v = rhs[c];
        for cc in c + 1..k {
            v -= m[cc * k + c] * rhs[cc];
        }
        rhs[c] = v / m[c * k + c];
    }
    Some(())
}

/// Pseudo-inverse of a square matrix (SVD, singular values below
/// `k ε σ_max` dropped).
pub(super) fn pinv(m: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let k = m.nrows();
    if k == 0 {
        return Some(m);
    }
    let svd = crate::linalg::Svd::new(&m);
    let smax = svd.max_singular_value();
    if !(smax > 0.0 && smax.is_finite()) {
        return None;
    }
    svd.pseudo_inverse(k.max(4) as f64 * f64::EPSILON * smax)
}

/// Solves `M δ = rhs` with `M` the `k × k` system in `ws.m` and the
/// right-hand side in `ws.rhs`, the result in `ws.rhs`: LU when it is
/// well conditioned and `min_norm` is off, else the pseudo-inverse.
pub(super) fn sub_solve(ws: &mut Workspace, k: usize, min_norm: bool) -> Option<()> {
    if !min_norm {
        // Keep the system for the pseudo-inverse fallback.
        ws.m0.clear();
        ws.m0.extend_from_slice(&ws.m[..k * k]);
        ws.r0.clear();
        ws.r0.extend_from_slice(&ws.rhs[..k]);
        if lu_solve(&mut ws.m, k, &mut ws.rhs, &mut ws.piv).is_some() {
            return Some(());
        }
        ws.m[..k * k].copy_from_slice(&ws.m0);
        ws.rhs[..k].copy_from_slice(&ws.r0);
    }
    let mat = DMatrix::from_column_slice(k, k, &ws.m[..k * k]);
    let pi = pinv(mat)?;
    let r = DVector::from_column_slice(&ws.rhs[..k]);
    let d = pi * r;
    ws.rhs[..k].copy_from_slice(d.as_slice());
    Some(())
}

/// `x` from a complete active set `status` (module docs), into `ws.x`
/// (and `w` into `ws.w`). `min_norm`: the pseudo-inverse solution. `None`
/// when the system cannot be solved.
pub fn solve_active_set(
    p: &Problem<'_>,
    status: &[Status],
    ws: &mut Workspace,
    min_norm: bool,
) -> Option<()> {
    let n = p.n();
    ws.resize(n);
    ws.set_children(p);
    active_solve(p, status, ws, min_norm)
}

pub(super) fn active_solve(p: &Problem<'_>, status: &[Status], ws: &mut Workspace, min_norm: bool) -> Option<()> {
    let n = p.n();
    // Constant part x_K.
    ws.xk.fill(0.0);
    for i in 0..n {
        if p.findex[i].is_none() {
            match status[i] {
                Status::Lo => ws.xk[i] = p.lo[i],
                Status::Hi => ws.xk[i] = p.hi[i],
                _ => {}
            }
        }
    }
    for i in 0..n {
        if let (Some(k), Some(c)) = (p.findex[i], tie(p, i, status[i])) {
            if status[k] != Status::Free {
                ws.xk[i] = c * ws.xk[k];
            }
        }
    }
    ws.cols.clear();
    ws.cols
        .extend((0..n).filter(|&i| status[i] == Status::Free));
    let k = ws.cols.len();
    // rhs = −(b + A x_K)_C, M = (A T)_CC.
    ws.w.copy_from(p.b);
    ws.w.gemv(1.0, p.a, &ws.xk, 1.0);
    for (ri, &r) in ws.cols.iter().enumerate() {
        ws.rhs[ri] = -ws.w[r];
        for (ci, &j) in ws.cols.iter().enumerate() {
            ws.m[ci * k + ri] = at(p, &ws.children, status, r, j);
        }
    }
    sub_solve(ws, k, min_norm)?;
    ws.x.copy_from(&ws.xk);
    for ci in 0..k {
        let j = ws.cols[ci];
        let v = ws.rhs[ci];
        ws.x[j] = v;
        for &i in &ws.children[j] {
            if let Some(c) = tie(p, i, status[i]) {
                ws.x[i] = c * v;
            }
        }
    }
    if !ws.x.iter().all(|v| v.is_finite()) {
        return None;
    }
    let x = std::mem::take(&mut ws.x);
    eval_w(p, &x, &mut ws.w);
    ws.x = x;
    Some(())
}
