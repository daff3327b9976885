//! `convex`: Todorov's convex, smooth and invertible contact model (ICRA
//! 2011), on the contact-space driver
//! ([`delassus`](crate::contact::delassus)), and inverse dynamics with
//! contact ([`inverse`]).
//!
//! # The model
//!
//! The contact impulse `f` (three per contact, contact frame; one for a
//! frictionless contact, whose tangential unknowns are held at zero) is
//! the minimizer of
//!
//! `½ fᵀ(A + R) f + fᵀc + d_F(f) + d_V(A f + c)`,
//! `d_V(v) = −κ Σ log v_N`,
//! `d_F(f) = −κ Σ [log f_N + log(μ² f_N² − ‖f_T‖²)]`,
//!
//! with `A = W K⁻¹ Wᵀ` and `c` the contact-space linearization of the step
//! (driver docs). The step's contact rows are its stationarity at the
//! exact point, with `ŷ = (φ(q⁺)/h, v_t)` in place of `A f + c`:
//!
//! `R f + ŷ + ∇d_F(f) + Aᵀ ∇d_V(ŷ) = 0`,
//!
//! smooth in every input (no kink anywhere in the feasible region), so all
//! four derivative methods apply with no skipped column. `A` is the
//! Delassus operator at the point (`Aᵀ` because the dynamics Jacobian of
//! a rotating body is not exactly symmetric: the stationarity of the
//! linearized objective carries the transpose).
//!
//! # Unknowns
//!
//! A friction contact's three unknowns are not `f` but `z = (ρ, w)` with
//! `μ f_N = ρ cosh‖w‖`, `f_T = ρ (sinh‖w‖ / ‖w‖) w`, so that the cone's
//! slack is `q = μ² f_N² − ‖f_T‖² = ρ²` exactly (every `ρ > 0`, `w` is an
//! impulse strictly inside the cone). With `f` as unknowns, a sliding
//! contact sits at `q ≈ 2κ‖f_T‖/‖v_t‖` (1.6e-10 for the 30° incline's box:
//! `f ≈ 1e-2`, `f² ≈ 1e-4`), so `q` computed from `f` kept about 6 of its
//! 16 digits: the residual could not be evaluated below 4e-10 and
//! `∂r/∂y` (condition number 1.3e12, Skeel's 8.7e11) carried the same
//! relative error, and `ift`, `lift` and `fd` disagreed by 1e-7 … 1e-4.
//! In `(ρ, w)` the barrier's slack is an unknown's square, computed to
//! round-off. A frictionless contact's unknowns are `(f_N, 0, 0)`.
//!
//! # Derivatives
//!
//! The root of the linearization loop is polished by Newton steps on the
//! exact residual (while they shrink it and keep every `ρ > 0`), and
//! `ift`'s solves with `∂r/∂y` are an LU with iterative refinement whose
//! residuals are evaluated in twice the working precision (Ogita–Rump–
//! Oishi `Dot2`); `lift` and `unrolled` refine their derivative parts by
//! [`ContactBackend::REFINE`] more passes.
//!
//! # Constants (the slides give none)
//!
//! * `R_c = regularization / σ_c` on all three components, with `σ_c` the
//!   normal's effective mass at the first linearization (`R` relative to
//!   `A`'s diagonal, as MuJoCo later made it). Default `regularization =
//!   1e-4`: the contact yields at `R f` (a resting 1 kg box at h = 0.01
//!   creeps 1e-5 m/s tangentially under a tangential load of 10 % of its
//!   weight).
//! * `κ = barrier` (J). Default 1e-8: a resting contact's normal velocity
//!   is about `√(κ a)` (`a = 1/σ`), so a 1 kg body rests `h · 1e-4` m
//!   (1 µm at h = 0.01) above its support, comparable with `ipm`'s
//!   `ρ / (m g h)` at its default ρ.
//!
//! As `R, κ → 0` the model tends to the complementarity solution (the
//! `ipm` step at ρ → 0): see the table in `docs/backends.md`.
//!
//! # Inverse dynamics
//!
//! Given `q`, `v` and `v⁺` (every candidate's `ŷ_N > 0`), `A` and `ŷ` are
//! known; the stationarity is then `R f + r + ∇d_F(f) = 0` with
//! `r = ŷ + Aᵀ ∇d_V(ŷ)`: the minimizer of `½ fᵀRf + fᵀr + d_F(f)`,
//! separable per contact and unique. The applied generalized forces follow
//! from the dynamics, `u = (r_dyn(v⁺; u = 0) − Σ Wᵀ f) / h`.

pub mod solver;

use nalgebra::{Matrix3, Vector3};

use crate::contact::candidates::{candidates, Candidate};
use crate::contact::delassus::{
    self, contact_velocities, with_primal, Delassus, DriverParams, Formulation, InnerStats,
    Structure,
};
use crate::contact::island::islands;
use crate::contact::space::evaluate::evaluate;
use crate::contact::{ContactBackend, Feature, SolveError, StepProblem, StepSolution};
use crate::dynamics::articulated::{articulated_dofs, has_articulated};
use crate::dynamics::rnea::rnea;
use crate::dynamics::free::momentum_residual;
use crate::math::{DMat, DVec};
use crate::Scalar;

/// Tuning of `convex` (`[solver_params]`; every key optional).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Contact candidate distance at `q` (m). Default 0.02 (as `ipm`).
    pub margin: f64,
    /// `R` relative to the normal's inverse effective mass (module docs).
    /// Default 1e-4.
    pub regularization: f64,
    /// The barrier weight κ (J). Default 1e-8.
    pub barrier: f64,
    /// Inner tolerance on the stationarity's ∞-norm (m/s). Default 1e-13.
    pub inner_tolerance: f64,
    /// Inner Newton iteration cap. Default 200.
    pub inner_max_iterations: usize,
    /// Cap of outer (linearization) iterations per island. Default 30.
    pub max_outer_iterations: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            margin: 0.02,
            regularization: 1e-4,
            barrier: 1e-8,
            inner_tolerance: 1e-13,
            inner_max_iterations: 200,
            max_outer_iterations: 30,
        }
    }
}

/// The `convex` backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Convex {
    /// Tuning.
    pub params: Params,
}

fn failure(e: solver::Failure) -> SolveError {
    match e {
        solver::Failure::MaxIterations {
            iterations,
            residual,
        } => SolveError::MaxIterations {
            iters: iterations,
            residual,
            complementarity: 0.0,
        },
        solver::Failure::Infeasible => SolveError::Infeasible {
            backend: "convex",
            what: "no impulse keeps every candidate's normal velocity positive",
        },
        solver::Failure::NonFinite => SolveError::NonFinite {
            backend: "convex",
            what: "the contact solve's iterate",
        },
    }
}

/// Whether a contact is frictionless (one unknown).
fn frictionless(mu: f64) -> bool {
    mu <= 0.0
}

/// The reduced layout (1 or 3 rows per contact) of the full one.
fn reduce(mu: &[f64]) -> (Vec<usize>, Vec<usize>) {
    let dims: Vec<usize> = mu.iter().map(|m| if frictionless(*m) { 1 } else { 3 }).collect();
    let mut rows = Vec::new();
    for (k, d) in dims.iter().enumerate() {
        for r in 0..*d {
            rows.push(3 * k + r);
        }
    }
    (dims, rows)
}

/// `∇d_F` of one contact (generic; frictionless: normal entry only).
fn grad_f<T: Scalar>(mu: T, kappa: T, f: &Vector3<T>) -> Vector3<T> {
    if frictionless(mu.re()) {
        return Vector3::new(-kappa / f[0], T::zero(), T::zero());
    }
    let q = mu * mu * f[0] * f[0] - f[1] * f[1] - f[2] * f[2];
    let two = T::from_re(2.0);
    Vector3::new(
        -kappa / f[0] - kappa * two * mu * mu * f[0] / q,
        kappa * two * f[1] / q,
        kappa * two * f[2] / q,
    )
}

/// `∇d_F` of a friction contact with its cone slack `q = μ² f_N² − ‖f_T‖²`
/// given (not recomputed from `f`: near the cone's boundary that
/// difference cancels).
fn grad_f_slack<T: Scalar>(mu: T, kappa: T, f: &Vector3<T>, q: T) -> Vector3<T> {
    let two = T::from_re(2.0);
    Vector3::new(
        -kappa / f[0] - kappa * two * mu * mu * f[0] / q,
        kappa * two * f[1] / q,
        kappa * two * f[2] / q,
    )
}

/// `(cosh t, sinh t / t)` as functions of `x = t²` (even, so smooth at
/// `t = 0`: a Taylor series below `t = 0.1`, no square root of zero).
fn cosh_sinhc<T: Scalar>(x: T) -> (T, T) {
    if x.re() < 1e-2 {
        let (mut c, mut s) = (T::zero(), T::zero());
        let (mut tc, mut ts) = (T::one(), T::one());
        for k in 0..9 {
            c += tc;
            s += ts;
            let k2 = (2 * k + 1) as f64;
            tc = tc * x / T::from_re(k2 * (k2 + 1.0));
            ts = ts * x / T::from_re((k2 + 1.0) * (k2 + 2.0));
        }
        (c, s)
    } else {
        let t = x.sqrt();
        (t.cosh(), t.sinh() / t)
    }
}

/// A friction contact's impulse and cone slack from its unknowns
/// `z = (ρ, w)` (module docs, *Unknowns*): `μ f_N = ρ cosh‖w‖`,
/// `f_T = ρ sinh‖w‖ w / ‖w‖`, `q = ρ²`.
fn hyperbolic<T: Scalar>(mu: T, z: &Vector3<T>) -> (Vector3<T>, T) {
    let (c, sc) = cosh_sinhc(z[1] * z[1] + z[2] * z[2]);
    (
        Vector3::new(z[0] * c / mu, z[0] * sc * z[1], z[0] * sc * z[2]),
        z[0] * z[0],
    )
}

/// The unknowns `z = (ρ, w)` of a friction impulse strictly inside its
/// cone (`None` on or outside it).
fn unknowns_of(mu: f64, f: &Vector3<f64>) -> Option<Vector3<f64>> {
    if frictionless(mu) {
        return Some(Vector3::new(f[0], 0.0, 0.0));
    }
    let (n, t) = (mu * f[0], (f[1] * f[1] + f[2] * f[2]).sqrt());
    let q = (n - t) * (n + t);
    if !(f[0] > 0.0 && q > 0.0 && q.is_finite()) {
        return None;
    }
    let rho = q.sqrt();
    if t == 0.0 {
        return Some(Vector3::new(rho, 0.0, 0.0));
    }
    let a = (t / n).atanh() / t;
    Some(Vector3::new(rho, a * f[1], a * f[2]))
}

/// `∇²d_F` of one contact (f64; frictionless: the tangential block is the
/// identity so that the held-at-zero rows stay invertible).
fn hess_f(mu: f64, kappa: f64, f: &Vector3<f64>) -> Matrix3<f64> {
    if frictionless(mu) {
        return Matrix3::new(kappa / (f[0] * f[0]), 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0);
    }
    let m2 = mu * mu;
    let q = m2 * f[0] * f[0] - f[1] * f[1] - f[2] * f[2];
    let ft = Vector3::new(0.0, f[1], f[2]);
    let mut h = Matrix3::zeros();
    h[(0, 0)] = kappa / (f[0] * f[0]) - 2.0 * kappa * m2 / q
        + 4.0 * kappa * m2 * m2 * f[0] * f[0] / (q * q);
    for i in 1..3 {
        h[(0, i)] = -4.0 * kappa * m2 * f[0] * ft[i] / (q * q);
        h[(i, 0)] = h[(0, i)];
        for j in 1..3 {
            h[(i, j)] = 4.0 * kappa * ft[i] * ft[j] / (q * q)
                + if i == j { 2.0 * kappa / q } else { 0.0 };
        }
    }
    h
}

impl Convex {
    /// `R_c` of a contact with impulse scale `scale`.
    fn r_of<T: Scalar>(&self, scale: T) -> T {
        T::from_re(self.params.regularization) / scale
    }

    /// Solves a step and reports the contact-space iteration counts.
    pub fn solve_with_stats(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(StepSolution<f64>, InnerStats), SolveError> {
        let (sol, _, _, st) = delassus::solve_f64(self, p)?;
        Ok((sol, st))
    }
}

impl Formulation for Convex {
    const POLISH_UPDATE: bool = true;

    fn driver(&self) -> DriverParams {
        DriverParams {
            margin: self.params.margin,
            max_outer: self.params.max_outer_iterations,
        }
    }

    fn solve_linear(
        &self,
        a: &DMat<f64>,
        c: &DVec<f64>,
        mu: &[f64],
        scale: &[f64],
        z0: Option<&DVec<f64>>,
        _accept: f64,
        stats: &mut InnerStats,
    ) -> Result<DVec<f64>, SolveError> {
        let (dims, rows) = reduce(mu);
        let n = rows.len();
        let ar = DMat::from_fn(n, n, |i, j| a[(rows[i], rows[j])]);
        let cr = DVec::from_fn(n, |i, _| c[rows[i]]);
        let rr = DVec::from_fn(n, |i, _| self.r_of(scale[rows[i] / 3]));
        // The previous unknowns as impulses (the inner solve works on f).
        let f0 = z0.map(|z| {
            let m = mu.len();
            let fs: Vec<Vector3<f64>> = (0..m)
                .map(|k| self.impulse(mu[k], 1.0, &z.fixed_rows::<3>(3 * k).into_owned()))
                .collect();
            DVec::from_fn(n, |i, _| fs[rows[i] / 3][rows[i] % 3])
        });
        let opts = solver::Options {
            tolerance: self.params.inner_tolerance,
            max_iterations: self.params.inner_max_iterations,
        };
        let (f, st) = solver::forward(
            &ar,
            &cr,
            mu,
            &dims,
            &rr,
            self.params.barrier,
            f0.as_ref(),
            &opts,
        )
        .map_err(failure)?;
        stats.iterations += st.iterations;
        let mut full = DVec::zeros(c.len());
        for (i, r) in rows.iter().enumerate() {
            full[*r] = f[i];
        }
        let mut out = DVec::zeros(c.len());
        for (k, m) in mu.iter().enumerate() {
            let z = unknowns_of(*m, &full.fixed_rows::<3>(3 * k).into_owned()).ok_or(
                SolveError::Singular(
                    "convex contact model: an impulse on its friction cone's boundary",
                ),
            )?;
            out.fixed_rows_mut::<3>(3 * k).copy_from(&z);
        }
        Ok(out)
    }

    fn impulse<T: Scalar>(&self, mu: T, _scale: T, z: &Vector3<T>) -> Vector3<T> {
        if frictionless(mu.re()) {
            Vector3::new(z[0], T::zero(), T::zero())
        } else {
            hyperbolic(mu, z).0
        }
    }

    /// Newton steps on the exact residual from the linearization loop's
    /// root while they shrink it and keep every impulse inside its cone
    /// (module docs, *Derivatives*).
    fn polish_root(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
        mut y: DVec<f64>,
    ) -> Result<DVec<f64>, SolveError> {
        let nv = p.model.nv;
        if y.len() > POLISH_MAX_UNKNOWNS || s.candidates.is_empty() {
            return Ok(y);
        }
        let mut res = ContactBackend::residual(self, p, s, &y)?;
        let mut norm = res.amax();
        for _ in 0..4 {
            if !(norm > 0.0 && norm.is_finite()) {
                break;
            }
            let j = crate::contact::backend::dense_jacobian(self, p, s, &y)?;
            let Ok(d) = refined_solve(&j, &DMat::from_column_slice(res.len(), 1, res.as_slice()))
            else {
                break;
            };
            let next = &y - d.column(0);
            if !strictly_feasible(s, nv, &next) {
                break;
            }
            let Ok(r) = ContactBackend::residual(self, p, s, &next) else {
                break;
            };
            let n = r.amax();
            if !(n < norm) {
                break;
            }
            y = next;
            res = r;
            norm = n;
        }
        Ok(y)
    }

    fn barrier(&self) -> Option<f64> {
        Some(self.params.barrier)
    }

    fn with_barrier(&self, kappa: f64) -> Option<Self> {
        let mut c = *self;
        c.params.barrier = kappa;
        Some(c)
    }

    /// The inverse problem at `ŷ` (module docs, *Inverse dynamics*): the
    /// minimizer of `½ fᵀRf + fᵀr + d_F(f)`, `r = ŷ + Aᵀ ∇d_V(ŷ)`.
    fn centred(
        &self,
        a: &DMat<f64>,
        yhat: &[Vector3<f64>],
        mu: &[f64],
        scale: &[f64],
    ) -> Option<Vec<Vector3<f64>>> {
        let (dims, rows) = reduce(mu);
        let n = rows.len();
        let ar = DMat::from_fn(n, n, |i, j| a[(rows[i], rows[j])]);
        let vr = DVec::from_fn(n, |i, _| yhat[rows[i] / 3][rows[i] % 3]);
        let rr = DVec::from_fn(n, |i, _| self.r_of(scale[rows[i] / 3]));
        let opts = solver::Options {
            tolerance: self.params.inner_tolerance,
            max_iterations: self.params.inner_max_iterations,
        };
        let (f, _, _) =
            solver::inverse(&ar, &vr, mu, &dims, &rr, self.params.barrier, &opts).ok()?;
        let mut full = vec![Vector3::zeros(); mu.len()];
        for (i, r) in rows.iter().enumerate() {
            full[r / 3][r % 3] = f[i];
        }
        full.iter()
            .zip(mu)
            .map(|(f, m)| unknowns_of(*m, f))
            .collect()
    }

    /// The barriers' arguments: `ρ` (or a frictionless contact's `f_N`)
    /// and every normal velocity `ŷ_N` positive.
    fn admissible(&self, yhat: &[Vector3<f64>], z: &[Vector3<f64>]) -> bool {
        yhat.iter().zip(z).all(|(y, z)| y[0] > 0.0 && z[0] > 0.0)
    }

    fn contact_rows<T: Scalar>(
        &self,
        mu: &[T],
        scale: &[T],
        yhat: &[Vector3<T>],
        z: &[Vector3<T>],
        at_times: &dyn Fn(&[Vector3<T>]) -> Vec<Vector3<T>>,
        out: &mut [Vector3<T>],
    ) {
        let kappa = T::from_re(self.params.barrier);
        let gv: Vec<Vector3<T>> = yhat
            .iter()
            .map(|y| Vector3::new(-kappa / y[0], T::zero(), T::zero()))
            .collect();
        let agv = at_times(&gv);
        for k in 0..z.len() {
            let r = self.r_of(scale[k]);
            let (f, gf) = if frictionless(mu[k].re()) {
                let f = self.impulse(mu[k], scale[k], &z[k]);
                (f, grad_f(mu[k], kappa, &f))
            } else {
                let (f, q) = hyperbolic(mu[k], &z[k]);
                (f, grad_f_slack(mu[k], kappa, &f, q))
            };
            let g = f * r + yhat[k] + gf + agv[k];
            out[k] = if frictionless(mu[k].re()) {
                Vector3::new(g[0], z[k][1], z[k][2])
            } else {
                g
            };
        }
    }
}

/// Largest stacked root (`nv + 3 × candidates`) that
/// [`Formulation::polish_root`] polishes (each Newton step evaluates the
/// dense `∂r/∂y`; a larger step keeps the linearization loop's root).
const POLISH_MAX_UNKNOWNS: usize = 400;

/// `rhs − J X` with every dot product evaluated in twice the working
/// precision (error-free products by `mul_add`, error-free sums; Ogita,
/// Rump and Oishi's `Dot2`), so that iterative refinement converges to
/// the solution of the f64 system even when `J` is ill-conditioned.
fn residual_twice_precise(j: &DMat<f64>, x: &DMat<f64>, rhs: &DMat<f64>) -> DMat<f64> {
    let n = j.nrows();
    DMat::from_fn(n, rhs.ncols(), |i, c| {
        let (mut s, mut e) = (rhs[(i, c)], 0.0);
        for k in 0..j.ncols() {
            let (a, b) = (j[(i, k)], x[(k, c)]);
            let prod = a * b;
            let prod_err = a.mul_add(b, -prod);
            let t = s - prod;
            let bb = t - s;
            let sum_err = (s - (t - bb)) + (-prod - bb);
            s = t;
            e += sum_err - prod_err;
        }
        s + e
    })
}

/// `J X = rhs` by LU and iterative refinement with residuals in twice
/// the working precision (module docs, *Derivatives*).
pub(crate) fn refined_solve(j: &DMat<f64>, rhs: &DMat<f64>) -> Result<DMat<f64>, SolveError> {
    // Block by block over the independent blocks of `J` (its contact
    // islands): the same solve, one small LU per island.
    crate::linalg::solve_by_blocks(
        j,
        rhs,
        SolveError::Singular("residual Jacobian"),
        refined_solve_dense,
    )
}

/// [`refined_solve`] of one block.
fn refined_solve_dense(j: &DMat<f64>, rhs: &DMat<f64>) -> Result<DMat<f64>, SolveError> {
    if j.nrows() == 0 {
        return Ok(DMat::zeros(0, rhs.ncols()));
    }
    let lu = j.clone().lu();
    if !lu.is_invertible() {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    let mut x = lu
        .solve(rhs)
        .ok_or(SolveError::Singular("residual Jacobian"))?;
    for _ in 0..6 {
        let r = residual_twice_precise(j, &x, rhs);
        let d = lu
            .solve(&r)
            .ok_or(SolveError::Singular("residual Jacobian"))?;
        x += &d;
        if !x.iter().all(|v| v.is_finite()) {
            return Err(SolveError::Singular("residual Jacobian"));
        }
        if d.amax() <= 1e-15 * x.amax() {
            break;
        }
    }
    Ok(x)
}

/// Whether every impulse of `y` is strictly inside its friction cone
/// (the barrier's domain).
fn strictly_feasible(s: &Structure, nv: usize, y: &DVec<f64>) -> bool {
    s.candidates.iter().enumerate().all(|(k, c)| {
        // frictionless: f_N; otherwise ρ (module docs, *Unknowns*)
        c.mu.is_finite() && y[nv + 3 * k] > 0.0
    })
}

impl ContactBackend for Convex {
    const NAME: &'static str = "convex";
    /// The barrier's curvature makes `∂r/∂y` ill-conditioned (module
    /// docs, *Derivatives*).
    const REFINE: usize = 2;
    type Params = Params;
    type Structure = Structure;
    type Workspace<T: Scalar> = ();

    fn new(params: &Params) -> Self {
        Convex { params: *params }
    }

    fn jacobian_groups(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
    ) -> Option<Vec<Vec<usize>>> {
        crate::contact::delassus::jacobian_groups(p, s)
    }

    fn check_params(p: &Params) -> Result<(), String> {
        crate::contact::implicit_ncp::check_common(
            p.margin,
            p.inner_tolerance,
            p.inner_max_iterations,
            p.max_outer_iterations,
        )?;
        for (k, x) in [("regularization", p.regularization), ("barrier", p.barrier)] {
            if !(x > 0.0 && x.is_finite()) {
                return Err(format!("`{k}` must be a finite number > 0, got {x}"));
            }
        }
        Ok(())
    }

    /// Articulated robots (free bodies and robot links alike).
    fn supports(feature: Feature) -> bool {
        matches!(feature, Feature::Robots)
    }

    fn contact_margin(params: &Params) -> f64 {
        params.margin
    }

    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        Ok(delassus::solve(self, p)?.0)
    }

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Structure), SolveError> {
        let (_, y, s, _) = delassus::solve_f64(self, p)?;
        Ok((y, s))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Structure,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        delassus::residual(self, p, s, y)
    }

    fn same_structure(a: &Structure, b: &Structure) -> bool {
        Structure::same(a, b)
    }

    /// LU with iterative refinement in twice the working precision
    /// (module docs, *Derivatives*).
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        crate::contact::backend::check_rows(y, rhs)?;
        let j = crate::contact::backend::dense_jacobian(self, p, s, y)?;
        refined_solve(&j, rhs)
    }

    /// [`inverse`] (module docs).
    fn inverse<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        v_next: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        Ok(inverse(self, p, v_next)?.u)
    }
}

/// Inverse dynamics with contact: the result of [`inverse`].
#[derive(Clone, Debug)]
pub struct Inverse<T: Scalar> {
    /// The applied generalized forces (the `u` of a step) that produce
    /// `v⁺`.
    pub u: DVec<T>,
    /// The contact candidates at `q` (as the forward step finds them).
    pub candidates: Vec<Candidate<f64>>,
    /// Each candidate's impulse (contact frame).
    pub impulses: Vec<Vector3<T>>,
}

/// Inverse dynamics with contact (module docs): the controls `u` of the
/// step from `(p.q, p.v)` to `v_next` under the `convex` model (`p.u` is
/// ignored). Generic over the scalar: the per-contact problems are solved
/// in f64, then refined by Newton steps in `T` (exact derivative parts).
/// Refused (typed) when a candidate's normal velocity is not positive
/// (the model cannot produce that motion).
pub fn inverse<T: Scalar>(
    backend: &Convex,
    p: &StepProblem<'_, T>,
    v_next: &DVec<T>,
) -> Result<Inverse<T>, SolveError> {
    let nv = p.model.nv;
    if v_next.len() != nv {
        return Err(SolveError::InvalidInput {
            backend: "convex",
            what: "v_next does not match the model's velocities",
        });
    }
    let zero_u = DVec::zeros(p.u.len());
    let p0 = StepProblem { u: &zero_u, ..*p };
    // Candidates and impulse scales as the forward step sets them (both
    // functions of the start of the step).
    let cands: Vec<Candidate<f64>> = with_primal(p, |pf| {
        let mut cands = candidates(pf, backend.params.margin);
        delassus::metric_conic(&mut cands);
        Ok::<_, SolveError>(cands)
    })?;
    let mut r_dyn = DVec::zeros(nv);
    momentum_residual(p.model, p.q, p.v, v_next, &zero_u, &p.gravity, p.h, &mut r_dyn)?;
    // Robots: the contact step's impulse balance `h (RNEA(q, v, (v⁺ − v)/h)
    // − u) = Wᵀ f` (`contact::space::robot::robot_dynamics`), in impulse
    // units as the free bodies' rows.
    if has_articulated(p.model) {
        let acc = (v_next - p.v) / p.h;
        let mut data = p.model.data();
        let tau = rnea(p.model, &mut data, p.q, p.v, &acc).clone();
        for i in articulated_dofs(p.model) {
            r_dyn[i] = tau[i] * p.h;
        }
    }
    let kappa = backend.params.barrier;
    let mut impulses = vec![Vector3::zeros(); cands.len()];
    let cands_t: Vec<Candidate<T>> = cands
        .iter()
        .map(|c| c.with_mu(crate::contact::candidates::pair_mu(p, c.a, c.b)))
        .collect();
    for island in islands(p.model, cands_t) {
        let v_local = island.gather(v_next);
        let xs: Vec<DVec<T>> = island
            .contacts
            .iter()
            .map(|c| DVec::zeros(c.law.size()))
            .collect();
        let ev = evaluate(&p0, &island, &v_local, &xs)?;
        let del = Delassus::new(&island, &ev)?;
        let yhat = contact_velocities(&ev, p.h);
        if yhat.iter().any(|y| !(y[0].re() > 0.0)) {
            return Err(SolveError::Unsupported {
                backend: "convex",
                what: "inverse dynamics of a motion whose normal velocity at a contact \
                       candidate is not positive (the model keeps every candidate separating)",
            });
        }
        let gv: Vec<Vector3<T>> = yhat
            .iter()
            .map(|y| Vector3::new(-T::from_re(kappa) / y[0], T::zero(), T::zero()))
            .collect();
        let agv = del.apply_transpose(&gv);
        let scale = delassus::scales(p, &island)?;
        let m = island.contacts.len();
        // The island's problem in f64 (reduced layout: one row for a
        // frictionless contact), solved by the contact-space inverse.
        let mus: Vec<f64> = island.contacts.iter().map(|c| c.mu.re()).collect();
        let (dims, rows) = reduce(&mus);
        let cols: Vec<Vec<Vector3<T>>> = (0..3 * m)
            .map(|j| {
                let mut e = vec![Vector3::zeros(); m];
                e[j / 3][j % 3] = T::one();
                del.apply(&e)
            })
            .collect();
        let n = rows.len();
        let a_red = DMat::from_fn(n, n, |i, j| cols[rows[j]][rows[i] / 3][rows[i] % 3].re());
        let v_red = DVec::from_fn(n, |i, _| yhat[rows[i] / 3][rows[i] % 3].re());
        let r_red = DVec::from_fn(n, |i, _| backend.r_of(scale[rows[i] / 3]).re());
        let (f_red, _, _) = solver::inverse(
            &a_red,
            &v_red,
            &mus,
            &dims,
            &r_red,
            kappa,
            &solver::Options {
                tolerance: backend.params.inner_tolerance,
                max_iterations: backend.params.inner_max_iterations,
            },
        )
        .map_err(failure)?;
        let mut f64s = vec![Vector3::<f64>::zeros(); m];
        for (i, r) in rows.iter().enumerate() {
            f64s[r / 3][r % 3] = f_red[i];
        }
        for k in 0..m {
            let mu_t = island.contacts[k].mu;
            let mu = mus[k];
            let r_t: T = backend.r_of(scale[k]);
            let r_k = r_t.re();
            let rvec: Vector3<T> = yhat[k] + agv[k];
            let d = dims[k];
            let f1 = f64s[k];
            let mut f: Vector3<T> = Vector3::zeros();
            for i in 0..d {
                f[i] = T::from_re(f1[i]);
            }
            // Newton refinement in T: g(f) = R f + r + ∇d_F(f).
            let kt = T::from_re(kappa);
            for _ in 0..T::DERIVATIVE_ORDER {
                let g = f * r_t + rvec + grad_f(mu_t, kt, &f);
                let g = if frictionless(mu) {
                    Vector3::new(g[0], T::zero(), T::zero())
                } else {
                    g
                };
                let fp = f.map(|x| x.re());
                let hm = hess_f(mu, kappa, &fp) + Matrix3::identity() * r_k;
                let hi = hm.try_inverse().ok_or(SolveError::Singular("inverse contact Hessian"))?;
                for i in 0..3 {
                    let mut acc = T::zero();
                    for j in 0..3 {
                        acc += T::from_re(hi[(i, j)]) * g[j];
                    }
                    f[i] -= acc;
                }
            }
            let gi = cands
                .iter()
                .position(|c| c.key() == island.contacts[k].key())
                .expect("island contacts are candidates");
            impulses[gi] = f;
            for (u, w) in &ev.contacts[k].blocks {
                let unit = &island.units[*u];
                for l in 0..w.ncols() {
                    let generalized = w[(0, l)] * f[0] + w[(1, l)] * f[1] + w[(2, l)] * f[2];
                    r_dyn[unit.dofs[l]] -= generalized;
                }
            }
        }
    }
    let u = r_dyn / p.h;
    Ok(Inverse {
        u,
        candidates: cands,
        impulses,
    })
}
