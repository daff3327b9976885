use super::*;

/// Panics unless every frictional contact has `μ > 0` and every `μ ≥ 0`.
#[track_caller]
pub(super) fn check_mu(mu: &[f64], dims: &[usize]) {
    for (k, (&m, &d)) in mu.iter().zip(dims).enumerate() {
        assert!(
            m >= 0.0 && (d == 1 || m > 0.0),
            "mu[{k}] = {m} with dims[{k}] = {d}: friction needs μ > 0, frictionless contacts dims = 1"
        );
    }
}

/// `s = μ² f_N² − ‖f_T‖²` as `(μ f_N − ‖f_T‖)(μ f_N + ‖f_T‖)`.
pub(super) fn cone_gap(mu: f64, f: &[f64]) -> f64 {
    let a = mu * f[0];
    let t = f[1].hypot(f[2]);
    (a - t) * (a + t)
}

/// Gradient of the per-unit-κ friction barrier `−log f_N − log s`.
pub(super) fn cone_gradient(mu: f64, f: &[f64]) -> [f64; 3] {
    let s = cone_gap(mu, f);
    [
        -1.0 / f[0] - 2.0 * mu * mu * f[0] / s,
        2.0 * f[1] / s,
        2.0 * f[2] / s,
    ]
}

/// Hessian of the per-unit-κ friction barrier `−log f_N − log s`.
pub(super) fn cone_hessian(mu: f64, f: &[f64]) -> [[f64; 3]; 3] {
    let s = cone_gap(mu, f);
    let s2 = s * s;
    let mu2 = mu * mu;
    let (n, t1, t2) = (f[0], f[1], f[2]);
    // 1/f_N² − 2μ²/s + 4μ⁴f_N²/s², written without cancellation.
    let hnn = 1.0 / (n * n) + 2.0 * mu2 * (mu2 * n * n + t1 * t1 + t2 * t2) / s2;
    let hn1 = -4.0 * mu2 * n * t1 / s2;
    let hn2 = -4.0 * mu2 * n * t2 / s2;
    let h11 = 2.0 / s + 4.0 * t1 * t1 / s2;
    let h22 = 2.0 / s + 4.0 * t2 * t2 / s2;
    let h12 = 4.0 * t1 * t2 / s2;
    [[hnn, hn1, hn2], [hn1, h11, h12], [hn2, h12, h22]]
}

/// Is `f_k` strictly inside its cone (and `f_N > 0`)?
pub(super) fn in_cone(mu: f64, f: &[f64]) -> bool {
    if f.len() == 1 {
        f[0] > 0.0 && f[0].is_finite()
    } else {
        f[0] > 0.0 && f.iter().all(|x| x.is_finite()) && mu * f[0] > f[1].hypot(f[2])
    }
}

/// Largest `α > 0` keeping `f + α d` inside the (open) cone of one contact.
pub(super) fn cone_max_step(mu: f64, f: &[f64], d: &[f64]) -> f64 {
    let mut alpha = f64::INFINITY;
    if d[0] < 0.0 {
        alpha = -f[0] / d[0];
    }
    if f.len() == 3 {
        // q(α) = μ²(f_N + α d_N)² − ‖f_T + α d_T‖² = a2 α² + a1 α + a0.
        let a0 = cone_gap(mu, f);
        let a1 = 2.0 * (mu * mu * f[0] * d[0] - f[1] * d[1] - f[2] * d[2]);
        let a2 = mu * mu * d[0] * d[0] - d[1] * d[1] - d[2] * d[2];
        let disc = a1 * a1 - 4.0 * a2 * a0;
        let root = if a1 < 0.0 && (a2 <= 0.0 || disc >= 0.0) {
            2.0 * a0 / (-a1 + disc.max(0.0).sqrt())
        } else if a2 < 0.0 {
            (a1 + disc.sqrt()) / (-2.0 * a2)
        } else {
            f64::INFINITY
        };
        alpha = alpha.min(root);
    }
    alpha
}

#[doc(hidden)]
pub fn inf_norm(x: &DVector<f64>) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

pub(super) fn all_finite<'a>(x: impl IntoIterator<Item = &'a f64>) -> bool {
    x.into_iter().all(|v| v.is_finite())
}

// ---------------------------------------------------------------------------
// Public barrier gradients and stationarity.
// ---------------------------------------------------------------------------

/// `∇d_F(f)`, the gradient of the friction-cone barrier
/// `d_F(f) = −κ Σ_k [log f_N,k + log(μ_k² f_N,k² − ‖f_T,k‖²)]`
/// (frictionless contacts: `−κ log f_N,k`).
///
/// `f` must be strictly inside the cones; outside, the formula is evaluated
/// as is and the result is meaningless.
///
/// # Panics
/// If the sizes of `f`, `mu` and `dims` disagree or a `dims` entry is not 1 or 3.
#[track_caller]
pub fn barrier_gradient_f(
    f: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    kappa: f64,
) -> DVector<f64> {
    let off = offsets(mu.len(), dims, f.len());
    let mut out = DVector::zeros(f.len());
    for (k, &o) in off.iter().enumerate() {
        if dims[k] == 1 {
            out[o] = -kappa / f[o];
        } else {
            let gk = cone_gradient(mu[k], &f.as_slice()[o..o + 3]);
            for i in 0..3 {
                out[o + i] = kappa * gk[i];
            }
        }
    }
    out
}

/// `∇d_V(v)` of `d_V(v) = −κ Σ_k log v_N,k`: `−κ / v_N,k` in each contact's
/// normal row, zero in the tangential rows.
///
/// # Errors
/// [`LayoutError`] if a `dims` entry is not 1 or 3 or `Σ dims ≠ v.len()`.
pub fn barrier_gradient_v(
    v: &DVector<f64>,
    dims: &[usize],
    kappa: f64,
) -> Result<DVector<f64>, LayoutError> {
    let off = try_offsets(dims.len(), dims, v.len())?;
    let mut out = DVector::zeros(v.len());
    for &o in &off {
        out[o] = -kappa / v[o];
    }
    Ok(out)
}

/// [`barrier_gradient_f`] for any scalar (e.g. the engine's dual numbers),
/// on slices: closed-form, branching only on the layout `dims`.
///
/// # Panics
/// If the sizes of `f`, `mu` and `dims` disagree or a `dims` entry is not 1 or 3.
#[track_caller]
pub fn barrier_gradient_f_generic<T: RealField + Copy>(
    f: &[T],
    mu: &[T],
    dims: &[usize],
    kappa: T,
) -> Vec<T> {
    let off = offsets(mu.len(), dims, f.len());
    let two = T::one() + T::one();
    let mut out = vec![T::zero(); f.len()];
    for (k, &o) in off.iter().enumerate() {
        let f_n = f[o];
        if dims[k] == 1 {
            out[o] = -kappa / f_n;
        } else {
            let (t1, t2) = (f[o + 1], f[o + 2]);
            let mf = mu[k] * f_n;
            let s = mf * mf - t1 * t1 - t2 * t2;
            out[o] = -kappa * (T::one() / f_n + two * mu[k] * mf / s);
            out[o + 1] = two * kappa * t1 / s;
            out[o + 2] = two * kappa * t2 / s;
        }
    }
    out
}

/// [`barrier_gradient_v`] for any scalar (e.g. the engine's dual numbers),
/// on slices.
///
/// # Panics
/// If a `dims` entry is not 1 or 3 or `Σ dims ≠ v.len()`.
#[track_caller]
pub fn barrier_gradient_v_generic<T: RealField + Copy>(
    v: &[T],
    dims: &[usize],
    kappa: T,
) -> Vec<T> {
    let off = offsets(dims.len(), dims, v.len());
    let mut out = vec![T::zero(); v.len()];
    for &o in &off {
        out[o] = -kappa / v[o];
    }
    out
}

/// The forward stationarity residual
/// `g(f) = (A + R) f + c + ∇d_F(f) + Aᵀ ∇d_V(A f + c)`.
///
/// `f` must be strictly feasible for the result to mean anything.
///
/// # Panics
/// On inconsistent sizes or a malformed `dims`.
#[track_caller]
pub fn stationarity(
    a: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: &[f64],
    dims: &[usize],
    r: &DVector<f64>,
    kappa: f64,
    f: &DVector<f64>,
) -> DVector<f64> {
    let model = Model::new(Some(a), c.as_slice(), mu, dims, r.as_slice());
    assert_eq!(f.len(), model.m(), "f has the wrong length");
    let (g0, b) = model.split(f.as_slice());
    g0 + b * kappa
}

// ---------------------------------------------------------------------------
// The barrier problem shared by forward (with A) and inverse (per contact, A = 0).
// ---------------------------------------------------------------------------

/// `g(f) = (A + R) f + c + κ [∇b_F(f) + Aᵀ ∇b_V(A f + c)]`, with `A = None`
/// meaning no `A` term and no velocity barrier (the inverse's per-contact
/// problem).
#[doc(hidden)]
pub struct Model<'a> {
    pub(super) a: Option<&'a DMatrix<f64>>,
    /// `‖A − Aᵀ‖_max ≤ SYMMETRY · ‖A‖_max`: the objective `Φ` may serve as
    /// merit function.
    pub(super) symmetric: bool,
    pub(super) c: &'a [f64],
    pub(super) mu: &'a [f64],
    pub(super) dims: &'a [usize],
    #[allow(missing_docs)]
    pub off: Vec<usize>,
    pub(super) r: &'a [f64],
}

impl<'a> Model<'a> {
    #[track_caller]
    #[allow(missing_docs)]
    pub fn new(
        a: Option<&'a DMatrix<f64>>,
        c: &'a [f64],
        mu: &'a [f64],
        dims: &'a [usize],
        r: &'a [f64],
    ) -> Self {
        let m = c.len();
        let off = offsets(mu.len(), dims, m);
        assert_eq!(r.len(), m, "R has {} entries, expected {m}", r.len());
        if let Some(a) = a {
            assert_eq!(a.shape(), (m, m), "A is {:?}, expected {m}×{m}", a.shape());
        }
        let symmetric = a.is_none_or(|a| {
            let skew = (0..m)
                .flat_map(|i| (0..i).map(move |j| (i, j)))
                .fold(0.0_f64, |x, (i, j)| x.max((a[(i, j)] - a[(j, i)]).abs()));
            skew <= SYMMETRY * a.amax()
        });
        Self {
            a,
            symmetric,
            c,
            mu,
            dims,
            off,
            r,
        }
    }

    #[allow(missing_docs)]
    pub fn m(&self) -> usize {
        self.c.len()
    }

    /// `A f` (empty without `A`).
    #[allow(missing_docs)]
    pub fn a_times(&self, x: &[f64]) -> DVector<f64> {
        match self.a {
            Some(a) => a * DVector::from_column_slice(x),
            None => DVector::zeros(0),
        }
    }

    /// Normal velocities `(A f + c)_N` from a precomputed `A f`.
    #[allow(missing_docs)]
    pub fn normal_velocities(&self, af: &DVector<f64>) -> Vec<f64> {
        if self.a.is_none() {
            return Vec::new();
        }
        self.off.iter().map(|&o| af[o] + self.c[o]).collect()
    }

    /// `Φ(f) = ½ fᵀ(A + R) f + cᵀf + κ [b_F(f) + b_V(A f + c)]` (`+∞` outside
    /// the domain): the forward objective, whose gradient is
    /// `g(f) + skew(f)`.
    #[allow(missing_docs)]
    pub fn objective(&self, f: &[f64], kappa: f64) -> f64 {
        if !self.feasible(f) {
            return f64::INFINITY;
        }
        let af = self.a_times(f);
        let mut quad = 0.0;
        for i in 0..self.m() {
            let afi = if self.a.is_some() { af[i] } else { 0.0 };
            quad += f[i] * (0.5 * (afi + self.r[i] * f[i]) + self.c[i]);
        }
        let mut barrier = 0.0;
        for (k, &o) in self.off.iter().enumerate() {
            barrier -= f[o].ln();
            if self.dims[k] == 3 {
                barrier -= cone_gap(self.mu[k], &f[o..o + 3]).ln();
            }
        }
        for v in self.normal_velocities(&af) {
            barrier -= v.ln();
        }
        quad + kappa * barrier
    }

    /// `J − ½ (A − Aᵀ)`: the Hessian of `Φ` from the Jacobian of `g`.
    #[allow(missing_docs)]
    pub fn symmetrize(&self, mut jac: DMatrix<f64>) -> DMatrix<f64> {
        if let Some(a) = self.a {
            let m = self.m();
            for i in 0..m {
                for j in 0..m {
                    jac[(i, j)] -= 0.5 * (a[(i, j)] - a[(j, i)]);
                }
            }
        }
        jac
    }

    /// `∇Φ − g = ½ (Aᵀ − A) f`, zero for symmetric `A`.
    #[allow(missing_docs)]
    pub fn skew(&self, f: &[f64]) -> DVector<f64> {
        match self.a {
            None => DVector::zeros(self.m()),
            Some(a) => {
                let x = DVector::from_column_slice(f);
                (a.tr_mul(&x) - a * &x) * 0.5
            }
        }
    }

    /// No barrier argument near rounding level: `v_N,k ≥ 1e3 ε (|A| |f| + |c|)_k`
    /// and `μ f_N − ‖f_T‖ ≥ 1e3 ε μ f_N`.
    #[allow(missing_docs)]
    pub fn well_inside(&self, f: &[f64]) -> bool {
        let margin = 1e3 * f64::EPSILON;
        let cones = self.off.iter().enumerate().all(|(k, &o)| {
            self.dims[k] == 1 || {
                let a = self.mu[k] * f[o];
                a - f[o + 1].hypot(f[o + 2]) >= margin * a
            }
        });
        let velocities = match self.a {
            None => true,
            Some(a) => {
                let v = self.normal_velocities(&self.a_times(f));
                self.off.iter().enumerate().all(|(k, &o)| {
                    let size: f64 = (0..self.m()).map(|j| (a[(o, j)] * f[j]).abs()).sum::<f64>()
                        + self.c[o].abs();
                    v[k] >= margin * size
                })
            }
        };
        cones && velocities
    }

    #[allow(missing_docs)]
    pub fn feasible(&self, f: &[f64]) -> bool {
        let cones = self
            .off
            .iter()
            .enumerate()
            .all(|(k, &o)| in_cone(self.mu[k], &f[o..o + self.dims[k]]));
        cones
            && self
                .normal_velocities(&self.a_times(f))
                .iter()
                .all(|&v| v > 0.0 && v.is_finite())
    }

    /// `(g₀, b)` with `g = g₀ + κ b`: `g₀ = (A + R) f + c`,
    /// `b = ∇b_F(f) + Aᵀ ∇b_V(A f + c)` per unit κ.
    #[allow(missing_docs)]
    pub fn split(&self, f: &[f64]) -> (DVector<f64>, DVector<f64>) {
        let m = self.m();
        let af = self.a_times(f);
        let mut g0 = DVector::from_fn(m, |i, _| self.r[i] * f[i] + self.c[i]);
        let mut b = DVector::zeros(m);
        if let Some(a) = self.a {
            g0 += &af;
            for (k, v) in self.normal_velocities(&af).into_iter().enumerate() {
                let w = -1.0 / v;
                let row = self.off[k];
                for j in 0..m {
                    b[j] += a[(row, j)] * w;
                }
            }
        }
        for (k, &o) in self.off.iter().enumerate() {
            if self.dims[k] == 1 {
                b[o] += -1.0 / f[o];
            } else {
                let gk = cone_gradient(self.mu[k], &f[o..o + 3]);
                for i in 0..3 {
                    b[o + i] += gk[i];
                }
            }
        }
        (g0, b)
    }

    /// `∂g/∂f = A + R + κ ∇²b_F(f) + κ Aᵀ diag(1/v_N²) A`.
    #[allow(missing_docs)]
    pub fn jacobian(&self, f: &[f64], kappa: f64) -> DMatrix<f64> {
        let m = self.m();
        let mut h = match self.a {
            Some(a) => a.clone(),
            None => DMatrix::zeros(m, m),
        };
        for i in 0..m {
            h[(i, i)] += self.r[i];
        }
        for (k, &o) in self.off.iter().enumerate() {
            if self.dims[k] == 1 {
                h[(o, o)] += kappa / (f[o] * f[o]);
            } else {
                let hk = cone_hessian(self.mu[k], &f[o..o + 3]);
                for i in 0..3 {
                    for j in 0..3 {
                        h[(o + i, o + j)] += kappa * hk[i][j];
                    }
                }
            }
        }
        if let Some(a) = self.a {
            let v = self.normal_velocities(&self.a_times(f));
            // W = diag(√κ / v_N) A_N, then H += Wᵀ W.
            let w = DMatrix::from_fn(self.off.len(), m, |k, j| {
                kappa.sqrt() / v[k] * a[(self.off[k], j)]
            });
            // faer's blocked product: nalgebra's `gemm_tr` takes one dot
            // product per entry, the largest cost of a Newton iteration on
            // a pile (hundreds of contact rows).
            let w = faer::MatRef::from_column_major_slice(w.as_slice(), self.off.len(), m);
            faer::linalg::matmul::matmul(
                faer::MatMut::from_column_major_slice_mut(h.as_mut_slice(), m, m),
                faer::Accum::Add,
                w.transpose(),
                w,
                1.0,
                faer::Par::Seq,
            );
        }
        h
    }

    /// Largest `α` keeping `f + α d` strictly feasible (may be `∞`).
    #[allow(missing_docs)]
    pub fn max_step(&self, f: &[f64], d: &[f64]) -> f64 {
        let mut alpha = f64::INFINITY;
        for (k, &o) in self.off.iter().enumerate() {
            let e = o + self.dims[k];
            alpha = alpha.min(cone_max_step(self.mu[k], &f[o..e], &d[o..e]));
        }
        if self.a.is_some() {
            let ad = self.a_times(d);
            let v = self.normal_velocities(&self.a_times(f));
            for (k, &o) in self.off.iter().enumerate() {
                if ad[o] < 0.0 {
                    alpha = alpha.min(-v[k] / ad[o]);
                }
            }
        }
        alpha
    }

    /// `noise_i = Σ_j |J_ij f_j| + |c_i| + κ Σ_k |A_ki| (1 + |c_N,k| / v_N,k) / v_N,k`:
    /// `ε noise_i` is the rounding noise of `g_i` — what one ulp of `f`
    /// moves it by (the `J` term), the rounding of the terms of `g_i`, and
    /// that of `v_N = A f + c` amplified by the barrier.
    #[allow(missing_docs)]
    pub fn rounding_noise(&self, f: &[f64], jac: &DMatrix<f64>, kappa: f64) -> DVector<f64> {
        let m = self.m();
        let mut out = DVector::from_fn(m, |i, _| {
            (0..m).map(|j| (jac[(i, j)] * f[j]).abs()).sum::<f64>() + self.c[i].abs()
        });
        if let Some(a) = self.a {
            let v = self.normal_velocities(&self.a_times(f));
            for (k, &o) in self.off.iter().enumerate() {
                let w = kappa / v[k] * (1.0 + self.c[o].abs() / v[k]);
                for j in 0..m {
                    out[j] += a[(o, j)].abs() * w;
                }
            }
        }
        out
    }

    /// Per-contact scale of `A_kk + R_k` on the normal rows.
    #[allow(missing_docs)]
    pub fn normal_stiffness(&self, k: usize) -> f64 {
        let o = self.off[k];
        self.a.map_or(0.0, |a| a[(o, o)]) + self.r[o]
    }
}
