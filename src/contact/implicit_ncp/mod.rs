//! `implicit_ncp`: Todorov's implicit complementarity (ICRA 2010), on the
//! contact-space driver ([`delassus`](crate::contact::delassus)).
//!
//! Each contact has a hybrid unknown `x = (x_N, x_F)` (three numbers, in
//! velocity units) that encodes both its impulse and its velocity:
//!
//! * `f̂_N = max(0, −x_N)`, `v_N = max(0, x_N)`;
//! * `s = min(1, μ f̂_N / ‖x_F‖)` (`s = 1` at `x_F = 0`),
//!   `f̂_F = −s x_F`, `v_F = (1 − s) x_F`;
//!
//! so that `v = x + f̂(x)` and every `x` satisfies the Coulomb laws exactly
//! (`f̂_N v_N = 0`, `‖f̂_F‖ ≤ μ f̂_N`, sliding against the impulse), with the
//! exact cone (no pyramid). The impulse is `f = σ f̂` with the per-contact
//! scale `σ = 1 / A_NN` (the normal's effective mass at the first
//! linearization): Todorov's `r(x) = (A − I) f(x) − x + c` mixes an
//! impulse with a velocity, which is only well scaled when `A`'s diagonal
//! is about 1. With the scale the contact-space equation
//! `ŷ = A f + c` reads `r(x) = (A σ − I) f̂(x) − x + c = 0` and its
//! solution does not depend on σ (only `x` does).
//!
//! The step's contact rows are `ŷ_c(v⁺) − x_c − f̂(x_c)`, with
//! `ŷ = (φ(q⁺)/h, v_t)`: the normal "velocity" is the gap at the end of
//! the step over h, so a contact at rest keeps a zero gap (the positions
//! do not drift), and the residual is that of `ipm` without relaxation.
//!
//! # Solvers
//!
//! [`solver`]: stabilized Gauss–Newton (Levenberg–Marquardt) and a dogleg
//! trust region whose line searches stop at the kinks of `r` (the planes
//! `x_N = 0` and cones `‖x_F‖ = μ max(0, −x_N)`), as the slides describe.
//! Constants (chosen here, the slides give none): see [`Params`].
//!
//! # Derivatives
//!
//! `r` is piecewise smooth. Away from the kinks `ift` applies (the
//! contact's piece — separated, sticking, sliding — is the structure: a
//! perturbation that changes it is reported as a kink by `diff`). With
//! redundant contacts (a box's four corners) the impulses are not unique
//! and `∂r/∂y` is singular; the derivatives of `v⁺` are, and come from the
//! pseudo-inverse (driver docs).

pub mod solver;

use nalgebra::Vector3;

use crate::contact::delassus::{self, DriverParams, Formulation, InnerStats, Structure};
use crate::contact::{ContactBackend, Feature, SolveError, StepProblem, StepSolution};
use crate::math::{DMat, DVec};
use crate::Scalar;

/// Tuning of `implicit_ncp` (`[solver_params]`; every key optional).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Contact candidate distance at `q` (m). Default 0.02 (as `ipm`).
    pub margin: f64,
    /// `"dogleg"` (default: Todorov's dogleg with kink-aware line
    /// searches) or `"levenberg_marquardt"`.
    pub method: MethodName,
    /// Inner tolerance on `‖r(x)‖∞` (m/s). Default 1e-12: the contact
    /// space problem is solved to round-off so that the outer loop (whose
    /// tolerance is the shared `tolerance`) converges.
    pub inner_tolerance: f64,
    /// Inner iteration cap. Default 100.
    pub inner_max_iterations: usize,
    /// Cap of outer (linearization) iterations per island. Default 30:
    /// the loop contracts by O(h) per iteration; a step that needs more
    /// is reported as `MaxIterations`.
    pub max_outer_iterations: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            margin: 0.02,
            method: MethodName::Dogleg,
            inner_tolerance: 1e-12,
            inner_max_iterations: 100,
            max_outer_iterations: 30,
        }
    }
}

/// The inner solver, by name in scene files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MethodName {
    /// Dogleg trust region with kink-aware line searches.
    #[default]
    Dogleg,
    /// Levenberg–Marquardt (stabilized Gauss–Newton).
    LevenbergMarquardt,
}

/// The `implicit_ncp` backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImplicitNcp {
    /// Tuning.
    pub params: Params,
}

/// The generic hybrid map of one contact: `(f̂(x), v(x))` (module docs).
/// Every branch is taken on primal values.
pub fn hybrid<T: Scalar>(mu: T, x: &Vector3<T>) -> (Vector3<T>, Vector3<T>) {
    let fn_ = if x[0].re() < 0.0 { -x[0] } else { T::zero() };
    let nf2 = x[1] * x[1] + x[2] * x[2];
    let s = if nf2.re() > 0.0 {
        let nf = nf2.sqrt();
        let lim = mu * fn_;
        if lim.re() < nf.re() {
            lim / nf
        } else {
            T::one()
        }
    } else {
        T::one()
    };
    let f = Vector3::new(fn_, -s * x[1], -s * x[2]);
    (f, x + f)
}

impl Formulation for ImplicitNcp {
    const ROWS_USE_DELASSUS: bool = false;

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
        accept: f64,
        stats: &mut InnerStats,
    ) -> Result<DVec<f64>, SolveError> {
        let mut a_s = a.clone();
        for (k, s) in scale.iter().enumerate() {
            for d in 0..3 {
                a_s.column_mut(3 * k + d).scale_mut(*s);
            }
        }
        let opts = solver::Options {
            method: match self.params.method {
                MethodName::Dogleg => solver::Method::Dogleg,
                MethodName::LevenbergMarquardt => solver::Method::LevenbergMarquardt,
            },
            // Relative to the problem's velocity scale (an absolute 1e-12
            // is below round-off for a fast body).
            tolerance: self.params.inner_tolerance * c.amax().max(1.0),
            max_iterations: self.params.inner_max_iterations,
        };
        match solver::solve(&a_s, c, mu, z0, &opts) {
            Ok((x, st)) => {
                stats.iterations += st.iterations;
                stats.newton_accepted += st.newton_accepted;
                Ok(x)
            }
            Err(solver::Failure::MaxIterations {
                iterations,
                residual,
                x,
            }) if residual <= accept => {
                stats.iterations += iterations;
                Ok(x)
            }
            Err(solver::Failure::MaxIterations {
                iterations,
                residual,
                ..
            }) => Err(SolveError::MaxIterations {
                iters: iterations,
                residual,
                complementarity: 0.0,
            }),
            Err(solver::Failure::NonFinite) => Err(SolveError::Singular(
                "non-finite iterate in the implicit complementarity solve",
            )),
        }
    }

    fn impulse<T: Scalar>(&self, mu: T, scale: T, z: &Vector3<T>) -> Vector3<T> {
        hybrid(mu, z).0 * scale
    }

    fn contact_rows<T: Scalar>(
        &self,
        mu: &[T],
        _scale: &[T],
        yhat: &[Vector3<T>],
        z: &[Vector3<T>],
        _at_times: &dyn Fn(&[Vector3<T>]) -> Vec<Vector3<T>>,
        out: &mut [Vector3<T>],
    ) {
        for k in 0..z.len() {
            out[k] = yhat[k] - hybrid(mu[k], &z[k]).1;
        }
    }

    fn pieces(&self, mu: &[f64], z: &[Vector3<f64>]) -> Vec<u8> {
        mu.iter()
            .zip(z)
            .map(|(m, x)| solver::piece(*m, x) as u8)
            .collect()
    }
}

impl ContactBackend for ImplicitNcp {
    const NAME: &'static str = "implicit_ncp";
    const REDUNDANT: bool = true;
    type Params = Params;
    type Structure = Structure;
    type Workspace<T: Scalar> = ();

    fn new(params: &Params) -> Self {
        ImplicitNcp { params: *params }
    }

    fn jacobian_groups(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
    ) -> Option<Vec<Vec<usize>>> {
        crate::contact::delassus::jacobian_groups(p, s)
    }

    fn check_params(p: &Params) -> Result<(), String> {
        check_common(
            p.margin,
            p.inner_tolerance,
            p.inner_max_iterations,
            p.max_outer_iterations,
        )
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

    /// The pseudo-inverse solve (redundant contacts make `∂r/∂y`
    /// singular; module docs).
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        delassus::pinv_solve(self, p, s, y, rhs)
    }
}

impl ImplicitNcp {
    /// Solves a step and reports the contact-space iteration counts
    /// (Todorov's table: iterations per step, accepted Newton steps).
    pub fn solve_with_stats(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(StepSolution<f64>, InnerStats), SolveError> {
        let (sol, _, _, st) = delassus::solve_f64(self, p)?;
        Ok((sol, st))
    }
}

/// Range checks shared by the contact-space backends' tuning.
pub(crate) fn check_common(
    margin: f64,
    inner_tolerance: f64,
    inner_max: usize,
    outer_max: usize,
) -> Result<(), String> {
    if !(margin >= 0.0 && margin.is_finite()) {
        return Err(format!("`margin` must be a finite number >= 0, got {margin}"));
    }
    if !(inner_tolerance > 0.0 && inner_tolerance.is_finite()) {
        return Err(format!(
            "`inner_tolerance` must be a finite number > 0, got {inner_tolerance}"
        ));
    }
    if inner_max == 0 {
        return Err("`inner_max_iterations` must be at least 1".into());
    }
    if outer_max == 0 {
        return Err("`max_outer_iterations` must be at least 1".into());
    }
    Ok(())
}
