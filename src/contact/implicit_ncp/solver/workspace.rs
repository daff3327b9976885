use super::*;

/// Buffers of one [`solve`] call (allocated once).
pub(super) struct Workspace<'p> {
    pub(super) problem: Problem<'p>,
    /// Iterate, its residual and `ℓ = ½‖r‖²`.
    pub(super) x: DVector<f64>,
    pub(super) r: DVector<f64>,
    pub(super) ell: f64,
    /// Scratch impulse of `evaluate`.
    pub(super) f: DVector<f64>,
    /// Trial point and its residual.
    pub(super) xt: DVector<f64>,
    pub(super) rt: DVector<f64>,
    /// Best point of a search and its residual.
    pub(super) xb: DVector<f64>,
    pub(super) rb: DVector<f64>,
    /// Residual at the previous point of a search; secant point and its
    /// residual.
    pub(super) rp: DVector<f64>,
    pub(super) xi: DVector<f64>,
    pub(super) ri: DVector<f64>,
    /// Start of the solve; iterate saved across an attempt on the true
    /// problem.
    pub(super) start: DVector<f64>,
    pub(super) anchor: DVector<f64>,
    /// Jacobian, lower triangle of `JᵀJ`, Cholesky factor of `JᵀJ + λI`.
    pub(super) j: DMatrix<f64>,
    pub(super) h: DMatrix<f64>,
    pub(super) l: DMatrix<f64>,
    /// `g = Jᵀr`, trial step, Gauss–Newton and Cauchy points.
    pub(super) g: DVector<f64>,
    pub(super) step: DVector<f64>,
    pub(super) gn: DVector<f64>,
    pub(super) cauchy: DVector<f64>,
    /// Current search segment `x + seg_start + t dir` and its base point.
    pub(super) seg_start: DVector<f64>,
    pub(super) dir: DVector<f64>,
    pub(super) base: DVector<f64>,
    pub(super) jp: DVector<f64>,
    /// Kink crossings of a segment.
    pub(super) breaks: Vec<f64>,
    /// `max diag(JᵀJ)` and the regularization floor at the current `J`.
    pub(super) h_max: f64,
    pub(super) lambda_min: f64,
    /// Levenberg–Marquardt damping relative to `max diag(JᵀJ)`, kept from
    /// one stage to the next (`NaN` before the first step).
    pub(super) lambda_relative: f64,
}

impl<'p> Workspace<'p> {
    pub(super) fn new(a: &'p DMatrix<f64>, c: &'p DVector<f64>, mu: &[f64], x: DVector<f64>) -> Self {
        let m = x.len();
        let zero = || DVector::zeros(m);
        let mut ws = Self {
            problem: Problem {
                a,
                c,
                mu: mu.to_vec(),
                eps: 0.0,
            },
            r: zero(),
            ell: 0.0,
            f: zero(),
            xt: zero(),
            rt: zero(),
            xb: zero(),
            rb: zero(),
            rp: zero(),
            xi: zero(),
            ri: zero(),
            start: x.clone(),
            anchor: zero(),
            j: DMatrix::zeros(m, m),
            h: DMatrix::zeros(m, m),
            l: DMatrix::zeros(m, m),
            g: zero(),
            step: zero(),
            gn: zero(),
            cauchy: zero(),
            seg_start: zero(),
            dir: zero(),
            base: zero(),
            jp: zero(),
            breaks: Vec::with_capacity(3 * m + 1),
            h_max: 0.0,
            lambda_min: 0.0,
            lambda_relative: f64::NAN,
            x,
        };
        ws.evaluate_iterate();
        ws
    }

    /// Residual and `ℓ` at the iterate.
    pub(super) fn evaluate_iterate(&mut self) {
        self.ell = self.problem.evaluate(&self.x, &mut self.f, &mut self.r);
    }

    /// Residual and `ℓ` at the trial point.
    pub(super) fn evaluate_trial(&mut self) -> f64 {
        self.problem.evaluate(&self.xt, &mut self.f, &mut self.rt)
    }

    /// Accepts the trial point.
    pub(super) fn accept_trial(&mut self, ell: f64) {
        std::mem::swap(&mut self.x, &mut self.xt);
        std::mem::swap(&mut self.r, &mut self.rt);
        self.ell = ell;
    }

    /// Accepts the best point of a search.
    pub(super) fn accept_best(&mut self, ell: f64) {
        std::mem::swap(&mut self.x, &mut self.xb);
        std::mem::swap(&mut self.r, &mut self.rb);
        self.ell = ell;
    }

    /// Jacobian, `JᵀJ`, `g = Jᵀr` and the regularization floor at the
    /// iterate; `false` at a stationary point of `ℓ` (`g ≈ 0`, `r ≠ 0`).
    pub(super) fn linearize(&mut self) -> bool {
        self.problem.jacobian(&self.x, &mut self.j);
        let m = self.x.len();
        for q in 0..m {
            let col_q = self.j.column(q);
            for p in q..m {
                self.h[(p, q)] = self.j.column(p).dot(&col_q);
            }
        }
        self.g.gemv_tr(1.0, &self.j, &self.r, 0.0);
        self.h_max = self.h.diagonal().iter().fold(0.0, |m: f64, &d| m.max(d));
        self.lambda_min = LAMBDA_FLOOR * self.h_max.max(f64::MIN_POSITIVE);
        self.g.norm_squared() > STATIONARY * STATIONARY * self.h_max * 2.0 * self.ell
    }

    /// Factors `JᵀJ + λI` into `l`, raising `λ` tenfold until the
    /// factorization succeeds; returns the `λ` used (`None`: not finite).
    pub(super) fn factor(&mut self, lambda: f64) -> Option<f64> {
        let mut lambda = lambda.max(self.lambda_min);
        while lambda.is_finite() {
            if cholesky(&self.h, lambda, &mut self.l) {
                return Some(lambda);
            }
            lambda *= 10.0;
        }
        None
    }

    /// `½‖r + J p‖²` for `p = step` (uses `jp`).
    pub(super) fn model(&mut self) -> f64 {
        self.jp.gemv(1.0, &self.j, &self.step, 0.0);
        self.jp += &self.r;
        0.5 * self.jp.norm_squared()
    }

    /// Gauss–Newton point `gn = −(JᵀJ + λI)⁻¹ g` (with `l` factored at
    /// `λ`) plus one step of iterative refinement towards `−(JᵀJ)⁺ g`.
    pub(super) fn gauss_newton(&mut self) {
        self.gn.copy_from(&self.g);
        self.gn.neg_mut();
        cholesky_solve(&self.l, &mut self.gn);
        // correction e = (JᵀJ + λI)⁻¹ (−g − JᵀJ gn), in `step`
        self.jp.gemv(1.0, &self.j, &self.gn, 0.0);
        self.step.gemv_tr(1.0, &self.j, &self.jp, 0.0);
        self.step += &self.g;
        self.step.neg_mut();
        cholesky_solve(&self.l, &mut self.step);
        self.gn += &self.step;
    }
}

/// Cholesky factor of `H + λI` (lower triangle of `h` read) into the lower
/// triangle of `l`; `false` if a pivot is not positive.
pub(super) fn cholesky(h: &DMatrix<f64>, lambda: f64, l: &mut DMatrix<f64>) -> bool {
    let m = h.nrows();
    l.copy_from(h);
    for i in 0..m {
        l[(i, i)] += lambda;
    }
    let data = l.as_mut_slice();
    for j in 0..m {
        let (done, rest) = data.split_at_mut(j * m);
        let col_j = &mut rest[..m];
        // left-looking: column j −= Σ_{k<j} L[j,k] · column k
        for col_k in done.chunks_exact(m) {
            let ljk = col_k[j];
            if ljk != 0.0 {
                for (y, &x) in col_j[j..].iter_mut().zip(&col_k[j..]) {
                    *y -= ljk * x;
                }
            }
        }
        let pivot = col_j[j];
        if !(pivot > 0.0) || !pivot.is_finite() {
            return false;
        }
        let d = pivot.sqrt();
        col_j[j] = d;
        for y in &mut col_j[j + 1..] {
            *y /= d;
        }
    }
    true
}

/// Solves `L Lᵀ y = b` in place (`l` from [`cholesky`]).
pub(super) fn cholesky_solve(l: &DMatrix<f64>, b: &mut DVector<f64>) {
    let m = l.nrows();
    let data = l.as_slice();
    let b = b.as_mut_slice();
    for (j, col) in data.chunks_exact(m).enumerate() {
        b[j] /= col[j];
        let bj = b[j];
        for (y, &x) in b[j + 1..].iter_mut().zip(&col[j + 1..]) {
            *y -= x * bj;
        }
    }
    for (j, col) in data.chunks_exact(m).enumerate().rev() {
        let dot: f64 = b[j + 1..].iter().zip(&col[j + 1..]).map(|(y, x)| x * y).sum();
        b[j] = (b[j] - dot) / col[j];
    }
}
