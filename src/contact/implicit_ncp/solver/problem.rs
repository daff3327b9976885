use super::*;

/// Checks the dimensions shared by the public functions.
pub(super) fn check_dimensions(a: &DMatrix<f64>, mu: &[f64], x: &DVector<f64>) {
    let m = 3 * mu.len();
    assert!(
        a.nrows() == m && a.ncols() == m,
        "A is {}×{}, expected {m}×{m} for {} contacts",
        a.nrows(),
        a.ncols(),
        mu.len()
    );
    assert_eq!(x.len(), m, "vector has {} entries, expected {m}", x.len());
}

/// Contact `k`'s three entries of `x`.
#[doc(hidden)]
pub fn local(x: &DVector<f64>, k: usize) -> Vector3<f64> {
    Vector3::new(x[3 * k], x[3 * k + 1], x[3 * k + 2])
}

/// The problem the iterations run on: `r_ε(x) = (A − I) f_ε(x) − x + c`
/// with the working friction coefficients `mu` (`ε = 0`: the exact `f`).
pub(super) struct Problem<'p> {
    pub(super) a: &'p DMatrix<f64>,
    pub(super) c: &'p DVector<f64>,
    pub(super) mu: Vec<f64>,
    pub(super) eps: f64,
}

impl Problem<'_> {
    /// `r_ε(x)` into `r` (`f` is scratch); returns `½‖r_ε‖²`.
    pub(super) fn evaluate(&self, x: &DVector<f64>, f: &mut DVector<f64>, r: &mut DVector<f64>) -> f64 {
        for (k, &mu_k) in self.mu.iter().enumerate() {
            let local_x = local(x, k);
            let fk = if self.eps > 0.0 {
                smoothed_impulse(mu_k, &local_x, self.eps).0
            } else {
                impulse(mu_k, &local_x)
            };
            f.fixed_rows_mut::<3>(3 * k).copy_from(&fk);
        }
        r.gemv(1.0, self.a, f, 0.0);
        for (((ri, ci), xi), fi) in r.iter_mut().zip(self.c.iter()).zip(x.iter()).zip(f.iter()) {
            *ri += ci - xi - fi;
        }
        0.5 * r.norm_squared()
    }

    /// `J_ε = (A − I) Df_ε(x) − I` into `j`.
    pub(super) fn jacobian(&self, x: &DVector<f64>, j: &mut DMatrix<f64>) {
        for (k, &mu_k) in self.mu.iter().enumerate() {
            let local_x = local(x, k);
            let d = if self.eps > 0.0 {
                smoothed_impulse(mu_k, &local_x, self.eps).1
            } else {
                local_derivative(mu_k, &local_x)
            };
            let mut cols = j.columns_mut(3 * k, 3);
            if d == Matrix3::zeros() {
                cols.fill(0.0);
                continue;
            }
            cols.gemm(1.0, &self.a.columns(3 * k, 3), &d, 0.0);
            let mut block = cols.rows_mut(3 * k, 3);
            block -= d;
        }
        for i in 0..j.nrows() {
            j[(i, i)] -= 1.0;
        }
    }
}

/// Residual `r(x) = (A − I) f(x) − x + c` of the contact equation
/// `A f(x) + c = v(x)`.
///
/// # Panics
///
/// If `A` is not `3n × 3n` or `c`, `x` do not have `3n` entries, with `n =
/// mu.len()`.
pub fn residual(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    x: &DVector<f64>,
) -> DVector<f64> {
    check_dimensions(a, mu, x);
    check_dimensions(a, mu, c);
    let problem = Problem {
        a,
        c,
        mu: mu.to_vec(),
        eps: 0.0,
    };
    let mut f = DVector::zeros(x.len());
    let mut r = DVector::zeros(x.len());
    problem.evaluate(x, &mut f, &mut r);
    r
}

/// Generalized Jacobian `∂r/∂x = (A − I) Df(x) − I` of [`residual`], with
/// the block-diagonal `Df` of [`local_derivative`] (one-sided on kinks).
///
/// # Panics
///
/// If `A` is not `3n × 3n` or `x` does not have `3n` entries, with `n =
/// mu.len()`.
pub fn jacobian(a: &DMatrix<f64>, mu: &[f64], x: &DVector<f64>) -> DMatrix<f64> {
    check_dimensions(a, mu, x);
    let m = x.len();
    let no_c = DVector::zeros(0);
    let problem = Problem {
        a,
        c: &no_c,
        mu: mu.to_vec(),
        eps: 0.0,
    };
    let mut j = DMatrix::zeros(m, m);
    problem.jacobian(x, &mut j);
    j
}

/// Default start: exact solution of the decoupled problem with `A`
/// replaced by a per-contact isotropic diagonal (see the module
/// documentation).
#[doc(hidden)]
pub fn warm_start(a: &DMatrix<f64>, c: &DVector<f64>, mu: &[f64], x: &mut DVector<f64>) {
    let max_diag = a.diagonal().iter().fold(0.0, |m: f64, &d| m.max(d));
    // a diagonal entry far below the others (or not positive) would blow
    // the guess up: use the largest one instead (1 when A has none)
    let fallback = if max_diag > 0.0 { max_diag } else { 1.0 };
    let usable = |d: f64| if d > 1e-6 * fallback { d } else { fallback };
    for (k, &mu_k) in mu.iter().enumerate() {
        let i = 3 * k;
        let a_n = usable(a[(i, i)]);
        let a_t = usable(0.5 * (a[(i + 1, i + 1)] + a[(i + 2, i + 2)]));
        let (c_n, c_1, c_2) = (c[i], c[i + 1], c[i + 2]);
        let (x_n, scale) = if c_n >= 0.0 {
            // separated: f = 0, v = x = c
            (c_n, 1.0)
        } else {
            // a_n x_N = c_N, f_N = −x_N
            let f_n = -c_n / a_n;
            let bound = friction(mu_k) * f_n;
            let norm_c = c_1.hypot(c_2);
            if norm_c < a_t * bound {
                // sticking: a_t x_F = c_F
                (-f_n, 1.0 / a_t)
            } else if norm_c > 0.0 {
                // sliding along c_F: ‖x_F‖ − (1 − a_t) μ f_N = ‖c_F‖
                (-f_n, (norm_c + (1.0 - a_t) * bound) / norm_c)
            } else {
                (-f_n, 0.0)
            }
        };
        x[i] = x_n;
        x[i + 1] = scale * c_1;
        x[i + 2] = scale * c_2;
    }
}
