//! `lcp`: velocity-level contact as a boxed linear complementarity
//! problem (Nimble, Werling et al. 2021; Jade, Yang et al. 2023), on the
//! contact-space driver ([`delassus`](crate::contact::delassus)).
//!
//! # The step
//!
//! The velocity-level step `M(v⁺ − v) = h(u − c) + Jᵀf` with, per contact,
//! the impulse `f = (f_n, f_t1, f_t2)` (contact frame; the unknowns `z` of
//! the driver are the impulses themselves) and its contact-space velocity
//! `ŷ = (φ(q⁺)/h, v_t1, v_t2)`. Per island and linearization the driver
//! gives `ŷ ≈ A f + c` with `A = W K⁻¹ Wᵀ` (the Delassus operator), and
//! the contact law is the boxed LCP with `w = ŷ`:
//!
//! * normal row: `f_n ≥ 0`, `w_n ≥ 0`, `f_n w_n = 0`;
//! * friction rows (ODE's `findex`): `−μ f_n ≤ f_t ≤ μ f_n`, with
//!   `w_t = 0` strictly inside, `w_t ≤ 0` at `+μ f_n`, `w_t ≥ 0` at
//!   `−μ f_n` — the box of two tangent directions (a four-sided pyramid
//!   in `(f_n, f_t1, f_t2)`, Nimble's and ODE's model); with a z-up
//!   plane the tangents are the world x and y axes. A scene must say
//!   `friction_cone = "pyramid"` (the polyhedral model; note that `ipm`'s
//!   pyramid is the four-generator cone `|f_t1| + |f_t2| ≤ μ f_n`, the
//!   box's inscribed diamond); the exact cone is refused.
//!
//! # Stabilization
//!
//! The normal "velocity" is the gap at the end of the step over h,
//! `φ(q⁺)/h`, not `v_n⁺` with a Baumgarte term: a full implicit position
//! correction (Nimble App. B's position correction with gain 1 and no
//! separate pass), which keeps a resting contact at zero gap and is the
//! same normal row as `ipm` without relaxation. Nimble App. B's *LCP*
//! stabilization (the least-squares impulses of the clamping set) is in
//! the solver ([`solver`], module docs).
//!
//! # The solver
//!
//! [`solver`]: Nimble's fallback order (the previous outer iteration's
//! active set, verified; Dantzig pivoting with Jade's moving-bound ratio
//! test and loop detection; an exhaustive search of active sets for small
//! islands; projected Gauss–Seidel with its active set polished), then a
//! typed failure (reported as [`SolveError::MaxIterations`] with the
//! solver's residual).
//!
//! # Residual and derivatives
//!
//! The exact residual's contact rows are the active-set rows of the boxed
//! LCP at the exact point, each row's piece chosen on primal values by the
//! natural map `f − σ ŷ` (`σ` the contact's impulse scale `1 / A_nn`):
//!
//! * normal: `ŷ_n` where `f_n − σ ŷ_n > 0` (clamping), else `f_n`;
//! * friction: `f_t − μ f_n` above `+μ f_n`, `f_t + μ f_n` below `−μ f_n`,
//!   else `ŷ_t` (sticking); at `f_n = 0` always a bound's row (`f_t = 0`),
//!   even where the slip is exactly zero (after a head-on frictional
//!   impact): the sticking row there would leave the tangential impulse
//!   unbounded in the derivative.
//!
//! At a root with strict complementarity the pieces are the solver's
//! active set (kept in [`Structure::pieces`](crate::contact::delassus::Structure),
//! so a perturbation that changes it is reported as a kink); on a piece
//! the rows are smooth, so `ift`, `lift`, `unrolled` and `fd` apply. With
//! redundant contacts `∂r/∂y` is singular and the derivatives come from
//! its pseudo-inverse (the `v⁺` rows are exact), as for `implicit_ncp`.
//!
//! # Restitution and continuous collision
//!
//! Newton's impact law: a contact of a pair with combined restitution
//! `e > 0` that bounces in the step has the normal row
//! `φ(q⁺)/h + e v_n⁻ − φ̄(q)/h ≥ 0`, i.e. `v_n⁺ ≥ −e v_n⁻` on the
//! step's normal velocity, with `φ̄ = φ` for a gap of at least
//! `−TOUCH` (`TOUCH = 1e-9` m; smooth through zero, so the sign of a
//! round-off gap does not choose the law) and `φ̄ = 0` for a deeper
//! penetration, which keeps its position correction
//! ([`restitution_bias`](crate::contact::delassus::restitution_bias));
//! the bias depends on the start of the step only, so every derivative
//! method carries the bounce Jacobian. Continuous collision
//! (`[sim] ccd = true`) splits the step at each time of impact ([`ccd`]),
//! on a step boundary as inside a step: there the final state and its
//! derivatives are the continuous-time ones.
//!
//! Without continuous collision, what is and is not exact (a contact
//! approaching at `v_n⁻ < 0` from a gap `φ ∈ [0, −h v_n⁻)` at the start of
//! the step; constant velocity): the velocity after the step is Newton's,
//! `v_n⁺ = −e v_n⁻`, and so is its derivative; the gap after it is
//! `φ − e h v_n⁻` where continuous time gives `e(−h v_n⁻ − φ)`, off by
//! `(1 + e) φ`, and `∂φ⁺/∂φ = 1` where continuous time gives `−e`. The
//! bounce belongs to the step that starts within one step's travel of the
//! surface, so the rollout is discontinuous where the gap closes on a
//! step boundary (the bounce moves to the neighbouring step, a jump of
//! `h |v_n|` in position); on the boundary itself the derivatives are the
//! one-sided limit from the side where the bounce is in the step that
//! starts touching (the same as for an impact inside that step), never
//! `1/h`-sized. No single-step law with `q⁺ = q ⊕ h v⁺` can do better:
//! `∂φ⁺/∂φ = 1 + h ∂v_n⁺/∂φ`, so an exact `∂φ⁺/∂φ = −e` forces
//! `∂v_n⁺/∂φ = −(1 + e)/h`. The "mirror" row
//! `φ(q⁺)/h + e(v_n⁻ + φ(q)/h) ≥ 0` is that choice: the gap after the
//! bouncing step is exact but the velocity carries `−(1 + e) φ/h`, whose
//! error grows over the following steps (`(1 + e) φ` per step), so it is
//! not used.

pub mod ccd;
pub mod solver;

use nalgebra::Vector3;

use crate::contact::delassus::{self, DriverParams, Formulation, InnerStats, Structure};
use crate::contact::{ContactBackend, Feature, SolveError, StepProblem, StepSolution};
use crate::math::{DMat, DVec};
use crate::Scalar;

use solver::{LcpError, Options, RatioTest, Status};

/// Tuning of `lcp` (`[solver_params]`; every key optional).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Contact candidate distance at `q` (m). Default 0.02 (as `ipm`).
    pub margin: f64,
    /// Cap of outer (linearization) iterations per island. Default 30.
    pub max_outer_iterations: usize,
    /// Acceptance threshold of the boxed LCP solver (its scaled
    /// natural-map residual, `solver` docs). Default 1e-8: the
    /// linearizations that follow start from the accepted active set and
    /// solve it exactly, so this decides only whether an active set is
    /// kept.
    pub lcp_tolerance: f64,
    /// Dantzig's ratio test: `"moving"` (default, Jade's fix) or
    /// `"frozen"` (ODE's, for comparison).
    pub ratio_test: RatioName,
    /// Largest island (rows = 3 × contacts) for the exhaustive search of
    /// active sets. Default 9.
    pub exhaustive_max: usize,
    /// Projected Gauss–Seidel sweeps of the last fallback. Default 2000.
    pub pgs_sweeps: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            margin: 0.02,
            max_outer_iterations: 30,
            lcp_tolerance: 1e-8,
            ratio_test: RatioName::Moving,
            exhaustive_max: 9,
            pgs_sweeps: 2000,
        }
    }
}

/// Dantzig's ratio test, by name in scene files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RatioName {
    /// Jade's moving friction bound.
    #[default]
    Moving,
    /// ODE's frozen bound.
    Frozen,
}

/// The `lcp` backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lcp {
    /// Tuning.
    pub params: Params,
}

/// The boxed LCP rows of one contact (normal, then its two friction rows
/// with `findex` to the normal).
pub(crate) fn bounds(mu: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<Option<usize>>) {
    let n = 3 * mu.len();
    let (mut lo, mut hi, mut fi) = (vec![0.0; n], vec![f64::INFINITY; n], vec![None; n]);
    for (k, m) in mu.iter().enumerate() {
        for d in 1..3 {
            lo[3 * k + d] = -m;
            hi[3 * k + d] = *m;
            fi[3 * k + d] = Some(3 * k);
        }
    }
    (lo, hi, fi)
}

/// The status of each row of one contact's impulse `z` (primal values):
/// the active set the solver settled on.
pub(crate) fn statuses(mu: f64, z: &Vector3<f64>) -> [Status; 3] {
    let tol = 1e-12 * z.amax();
    let sn = if z[0] > tol { Status::Free } else { Status::Lo };
    let st = |t: f64| {
        let b = mu * z[0];
        if b - t <= tol {
            Status::Hi
        } else if t + b <= tol {
            Status::Lo
        } else {
            Status::Free
        }
    };
    [sn, st(z[1]), st(z[2])]
}

/// The active-set rows of one contact at `(ŷ, f)` (module docs); pieces
/// chosen on primal values.
pub fn contact_rows<T: Scalar>(mu: T, sigma: T, y: &Vector3<T>, f: &Vector3<T>) -> Vector3<T> {
    let rn = if (f[0] - sigma * y[0]).re() > 0.0 {
        y[0]
    } else {
        f[0]
    };
    let bound = mu * f[0];
    // the primal slip and tangential impulse, for a frictionless contact
    // that presses without slipping (below)
    let scale = (0..3).fold(0.0f64, |m, i| m.max(y[i].re().abs()).max(f[i].re().abs()));
    let small = 1e-12 * (1.0 + scale);
    let rt = |k: usize| {
        let u = (f[k] - sigma * y[k]).re();
        if mu.re() == 0.0 && f[0].re() > 0.0 && y[k].re().abs() <= small && f[k].re().abs() <= small
        {
            // μ = 0 with a pressing normal impulse and no slip (a ball
            // dropped head-on): f_t is 0 on a whole neighbourhood (for
            // μ > 0 it sticks with f_t = 0; at μ = 0 any other input
            // leaves f_t = 0), so its row is `f_t = 0`, both partials
            // zero. The bound's row `f_t = ±μ f_n` would give
            // `∂f_t/∂μ = ±f_n` on an arbitrary side (a spin from
            // nothing), the sticking row a tangential impulse that a
            // frictionless contact cannot make. The impact LCP of
            // [`ccd`] uses the same row.
            f[k]
        } else if bound.re() <= 0.0 {
            // A contact without normal impulse: the box is the point
            // f_t = 0, whatever the slip (even an exactly zero one).
            if u >= 0.0 {
                f[k] - bound
            } else {
                f[k] + bound
            }
        } else if u > bound.re() {
            f[k] - bound
        } else if u < -bound.re() {
            f[k] + bound
        } else {
            y[k]
        }
    };
    Vector3::new(rn, rt(1), rt(2))
}

impl Lcp {
    fn options(&self) -> Options {
        Options {
            tolerance: self.params.lcp_tolerance,
            ratio_test: match self.params.ratio_test {
                RatioName::Moving => RatioTest::Moving,
                RatioName::Frozen => RatioTest::Frozen,
            },
            exhaustive_max: self.params.exhaustive_max,
            pgs_sweeps: self.params.pgs_sweeps,
            ..Options::default()
        }
    }
}

impl Formulation for Lcp {
    /// The scales only choose pieces (on primal values) in
    /// [`contact_rows`], and the impulses are the unknowns themselves.
    const SCALE_MOVES_ROOT: bool = false;
    const ROWS_USE_DELASSUS: bool = false;

    fn driver(&self) -> DriverParams {
        DriverParams {
            margin: self.params.margin,
            max_outer: self.params.max_outer_iterations,
        }
    }

    /// The exact cone is refused: the box (module docs) is not the
    /// Coulomb cone (a contact sliding diagonally would feel `√2 μ f_n`).
    fn refuse(&self, p: &StepProblem<'_, f64>) -> Result<(), SolveError> {
        if p.friction_cone == crate::contact::FrictionCone::Exact {
            return Err(SolveError::Unsupported {
                backend: Self::NAME,
                what: "the exact friction cone (its friction is the box \
                       |f_t1|, |f_t2| <= mu f_n: set friction_cone = \"pyramid\")",
            });
        }
        Ok(())
    }

    fn solve_linear(
        &self,
        a: &DMat<f64>,
        c: &DVec<f64>,
        mu: &[f64],
        _scale: &[f64],
        z0: Option<&DVec<f64>>,
        _accept: f64,
        stats: &mut InnerStats,
    ) -> Result<DVec<f64>, SolveError> {
        let (lo, hi, fi) = bounds(mu);
        let p = solver::Problem {
            a,
            b: c,
            lo: &lo,
            hi: &hi,
            findex: &fi,
        };
        let guess: Option<Vec<Status>> = z0.map(|z| {
            (0..mu.len())
                .flat_map(|k| statuses(mu[k], &z.fixed_rows::<3>(3 * k).into_owned()))
                .collect()
        });
        let mut ws = solver::Workspace::new(c.len());
        match solver::solve(&p, &self.options(), guess.as_deref(), &mut ws) {
            Ok(st) => {
                stats.iterations += st.pivots + st.exhaustive_tried + st.pgs_sweeps;
                if st.stage == solver::Stage::Guess {
                    stats.newton_accepted += 1;
                }
                Ok(ws.x)
            }
            Err(LcpError::Invalid(what)) => Err(SolveError::InvalidInput {
                backend: Lcp::NAME,
                what,
            }),
            Err(LcpError::Unsolved {
                residual,
                iterations,
                ..
            }) => Err(SolveError::MaxIterations {
                iters: iterations,
                residual,
                complementarity: residual,
            }),
        }
    }

    fn impulse<T: Scalar>(&self, _mu: T, _scale: T, z: &Vector3<T>) -> Vector3<T> {
        *z
    }

    fn contact_rows<T: Scalar>(
        &self,
        mu: &[T],
        scale: &[T],
        yhat: &[Vector3<T>],
        z: &[Vector3<T>],
        _at_times: &dyn Fn(&[Vector3<T>]) -> Vec<Vector3<T>>,
        out: &mut [Vector3<T>],
    ) {
        for k in 0..z.len() {
            out[k] = contact_rows(mu[k], scale[k], &yhat[k], &z[k]);
        }
    }

    /// Every candidate bounces without continuous collision; with it,
    /// only contacts touching at the start of the (sub)step, and of those
    /// only the ones without a time of impact reach the bias (approaching
    /// slower than `TOUCH/h`, or penetrating deeper than `TOUCH`): the
    /// others are met at their time of impact ([`ccd`], "Classification").
    fn bounce_gap(&self, ccd: bool) -> Option<f64> {
        Some(if ccd {
            ccd::TOUCH
        } else {
            f64::INFINITY
        })
    }

    fn pieces(&self, mu: &[f64], z: &[Vector3<f64>]) -> Vec<u8> {
        mu.iter()
            .zip(z)
            .map(|(m, z)| {
                statuses(*m, z)
                    .iter()
                    .fold(0u8, |acc, s| 3 * acc + (*s as u8 - 1))
            })
            .collect()
    }
}

impl ContactBackend for Lcp {
    const NAME: &'static str = "lcp";
    const REDUNDANT: bool = true;
    type Params = Params;
    type Structure = Structure;
    type Workspace<T: Scalar> = ();

    fn new(params: &Params) -> Self {
        Lcp { params: *params }
    }

    fn check_params(p: &Params) -> Result<(), String> {
        if !(p.margin >= 0.0 && p.margin.is_finite()) {
            return Err(format!("`margin` must be a finite number >= 0, got {}", p.margin));
        }
        if !(p.lcp_tolerance > 0.0 && p.lcp_tolerance.is_finite()) {
            return Err(format!(
                "`lcp_tolerance` must be a finite number > 0, got {}",
                p.lcp_tolerance
            ));
        }
        if p.max_outer_iterations == 0 {
            return Err("`max_outer_iterations` must be at least 1".into());
        }
        if p.exhaustive_max > 12 {
            return Err(format!(
                "`exhaustive_max` must be at most 12 (3^12 active sets), got {}",
                p.exhaustive_max
            ));
        }
        Ok(())
    }

    /// Articulated robots (the driver's units); no restitution, no
    /// continuous collision.
    fn supports(feature: Feature) -> bool {
        matches!(
            feature,
            Feature::Robots | Feature::Restitution | Feature::Ccd
        )
    }

    fn contact_margin(params: &Params) -> f64 {
        params.margin
    }

    /// Under continuous collision, the split step ([`ccd`]).
    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        if p.ccd {
            return ccd::step(self, p);
        }
        Ok(delassus::solve(self, p)?.0)
    }

    /// A step split at a time of impact has no single residual: refused
    /// ([`ccd::SPLIT`]; the derivative methods ask [`splits`](ContactBackend::splits)
    /// first and differentiate the split step itself).
    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Structure), SolveError> {
        if ccd::splits(self, p)? {
            return Err(SolveError::Unsupported {
                backend: Self::NAME,
                what: ccd::SPLIT,
            });
        }
        let (_, y, s, _) = delassus::solve_f64(self, p)?;
        Ok((y, s))
    }

    fn splits(&self, p: &StepProblem<'_, f64>) -> Result<bool, SolveError> {
        ccd::splits(self, p)
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

impl Lcp {
    /// Solves a step and reports the contact-space counts (`iterations`:
    /// pivots, active sets tried and PGS sweeps; `newton_accepted`: solves
    /// settled by the previous outer iteration's active set).
    pub fn solve_with_stats(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(StepSolution<f64>, InnerStats), SolveError> {
        if ccd::splits(self, p)? {
            return Err(SolveError::Unsupported {
                backend: Self::NAME,
                what: ccd::SPLIT,
            });
        }
        let (sol, _, _, st) = delassus::solve_f64(self, p)?;
        Ok((sol, st))
    }
}
