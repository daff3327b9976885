//! The interior-point driver of the contact layer: Mehrotra's
//! predictor–corrector on one island (the formulation and the steps are
//! in the [`ipm` module docs](crate::contact::ipm)), with its tuning
//! ([`Params`], shared by `ipm`, `single_level` and `bilevel`), its
//! safeguarded warm start ([`solve_island_warm`]) and the factorization
//! of the island's exact Jacobian for the implicit-function derivatives
//! ([`IslandJacobian`]). `ipm` and `bilevel` are this driver with two
//! contact kinematics (closed-form pairs and conic proximity).
//!
//! Departure from the target design (one driver for every interior-point
//! backend): `single_level` still runs its own predictor–corrector loop.
//! Its unknowns include every conic pair's primal–dual point, so its
//! Newton system has a block per conic program that this driver's
//! per-contact elimination does not have; it shares the cone algebra
//! ([`math::cone`](crate::math::cone)), the friction laws
//! ([`law`](crate::contact::law)), the candidates and [`Params`]. Folding
//! it in needs the driver to be generic over the KKT system (a small
//! trait: evaluate, factor, solve, boundary step), the next step of this
//! module.
//!
//! # The reduced system
//!
//! Each Newton direction eliminates every contact's local unknowns and
//! solves the reduced system in the island's velocities (one block row and
//! column per unit: 6 for a free body, a robot's dofs), whose off-diagonal
//! blocks couple only units that share a contact. How it is stored and
//! factored depends on its size and on the scalar:
//!
//! * `f64`, at least [`SPARSE_MIN_ROWS`] rows (a pile): block-sparse
//!   ([`BlockCsc`]), its pattern built from the island's contacts and
//!   refilled in place at every iteration, factored by [`BlockLu`] (faer's
//!   AMD order of the blocks, static pivoting between blocks, checked by
//!   its backward error), or by faer's pivoting sparse LU ([`SparseLu`])
//!   when that check fails; symbolic analysis once per pattern, numeric
//!   factorization per iteration. The factorization's fill still grows
//!   with the island (as n^1.5 on a 2-D contact graph), so near
//!   convergence a factorization serves several Newton steps (chord
//!   steps, [`Params::reuse_factorization`]; a departure from
//!   CONTACT-LAYER.md's one factorization per iteration).
//! * otherwise dense: [`DenseLu`] (generic, storage reused), or faer's dense
//!   LU for `f64` islands of at least [`FAER_MIN_ROWS`] rows that the
//!   sparse path does not take.
//!
//! Dual and other generic scalars always take the dense generic path:
//! assembly is O(n²) and the LU O(n³) in the island's `n` velocity
//! unknowns, so differentiating a step through a dual scalar (`Method::Forward`)
//! on an island of hundreds of bodies is far slower than an `f64` step; the
//! implicit-function methods (`ift`, `lift`) factor in `f64` and use the
//! sparse path.

use crate::contact::island::{Island, UnitKind};
use crate::contact::law::{local_jacobian_with, local_residual_fixed, Law};
use crate::contact::space::contact_jacobian;
use crate::contact::space::evaluate::{evaluate, evaluate_into, Eval};
use crate::contact::space::robot::robot_contact_jacobian;
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::NewtonParams;
use crate::linalg::{BlockCsc, BlockLu, DenseLu, SmallLu, SparseLu};
use crate::math::cone::{jordan, nt_scaling, orthant_step, soc_central_point, soc_step};
use crate::math::{DMat, DVec, Vec3};
use crate::scalar::safe_norm;
use crate::Scalar;
use nalgebra::{Matrix3, Matrix3xX, Matrix6, SMatrix, SVector};

/// Tuning of the interior point (the shared `SolverParams` carry ρ, the
/// tolerance and the iteration cap). Every field is a key of the scene
/// file's `[solver_params]` when the backend is `ipm`, `single_level` or
/// `bilevel` (which share it).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Fraction to the boundary τ for orthant and second-order cone
    /// variables. Default 0.95 (Dojo, Silico).
    pub fraction_to_boundary: f64,
    /// Convergence needs `‖z ∘ s − ρ e‖∞ ≤ complementarity_tolerance · ρ`.
    /// Default 1e-6: a loose band lets each step stop at a different point
    /// of it, which shows up as a step-to-step chatter of resting bodies
    /// (impulse error ∝ this tolerance); the final Newton phase converges
    /// quadratically, so a tight value costs one or two iterations.
    pub complementarity_tolerance: f64,
    /// Line search: step shrink factor. Default 0.5.
    pub backtrack_factor: f64,
    /// Line search: maximum number of halvings (the last trial is
    /// accepted). Default 10.
    pub max_backtracks: usize,
    /// Armijo constant of the sufficient decrease `‖r‖² ≤ (1 − c α) ‖r₀‖²`.
    /// Default 1e-4.
    pub armijo: f64,
    /// When no direction achieves a sufficient decrease with a step of at
    /// least this length (the iterate is pinned against a cone boundary),
    /// a pure centering step towards `κ = ν` is taken instead. Default 1e-3.
    pub recenter_below: f64,
    /// Contact candidate distance at `q` (m), added to the speculative
    /// motion bound. Default 0.02.
    pub margin: f64,
    /// Initial value of every cone variable (`scale · e`, Dojo initializes
    /// at a multiple of the cone identity). Default 0.01: of the order of
    /// the impulse `m ‖g‖ h` of a unit mass at h = 0.001…0.01; a start at 1
    /// lets large first Newton steps reach spurious far solutions of the
    /// nonlinear problem at large h (box toss at h = 0.1).
    pub initial_scale: f64,
    /// Warm start: initial `v⁺` is the previous velocity `v` (good for
    /// resting contact). Otherwise the free-flight velocity. Default true.
    pub warm_start: bool,
    /// In a rollout (`sim::rollout`, `sim::step_with`), contacts that were
    /// candidates in the previous step start from that step's contact
    /// unknowns (kept in the rollout's workspace) instead of the default
    /// initial point. A single `sim::step` always starts cold. Default
    /// true: a resting contact then converges at once (0 iterations
    /// instead of 5). Safeguarded: a contact that opens or closes starts at
    /// the wrong corner of its complementarity (γ ≈ 0 with a large slack,
    /// or the reverse) where the interior point can stall, so the warm
    /// attempt of an island gets at most [`Params::warm_attempt_iterations`]
    /// iterations; then the island is solved again from the default
    /// initial point with the full budget.
    pub warm_start_contacts: bool,
    /// Iterations an island's warm attempt may take before it is solved
    /// again cold (see [`Params::warm_start_contacts`]). Default 4: a
    /// resting island converges in 0–2; an impact stalls at any cap, so
    /// a larger one only wastes iterations. An island of at least
    /// [`SPARSE_MIN_ROWS`] rows whose last step was long (at least half
    /// the Newton step: it is converging, as a large settling island does
    /// in 4–8 iterations, where the cold solve takes 15–20) goes on past
    /// this cap, up to the iteration cap.
    pub warm_attempt_iterations: usize,
    /// Warm start: recentre each warm contact's friction pair on the new
    /// step's sliding velocity before the first iteration (see
    /// `recentre_friction` in this module's source). Default true: a
    /// contact whose sliding direction turned between steps otherwise
    /// starts at the old central point, pinned against the cone boundary
    /// at κ = ρ, and the warm attempt crawls (steps of 0.1–0.3) until it
    /// is solved again cold; on a 16 × 16 layer of spheres this took the
    /// median step from 8 iterations to 3.
    pub warm_recentre_friction: bool,
    /// Final phase (the centering target at ρ): each iteration takes the
    /// Newton direction `d` of `r_ρ`, then tries first the direction whose
    /// complementarity rows also carry `d`'s own second-order term
    /// `dz ∘ ds` (one more solve with the same factorization), falling
    /// back to `d` when that gives no sufficient decrease. A contact whose
    /// gap changes by a fraction `δ` in a step is left `ρ δ²` off its
    /// complementarity target by the plain Newton step: on layers of 144 to
    /// 361 touching spheres (`δ` ≈ 0.16) that costs a third iteration per
    /// warm step, and with the term they take two. Default false: with it
    /// on, `dualsim check` of `examples/scenes/capsule_pile.toml` fails
    /// its finite-difference comparison (velocity and angular velocity
    /// with respect to the controls, 2.3e-5 and 2.4e-5 against the
    /// tolerance 1e-5; with respect to gravity 1.8e-4), which is not yet
    /// explained. Islands of at least [`SPARSE_MIN_ROWS`] rows take the
    /// term anyway when [`reuse_factorization`](Self::reuse_factorization)
    /// is on.
    pub final_corrector: bool,
    /// Chord steps, on islands of at least [`SPARSE_MIN_ROWS`] rows (where
    /// the factorization is most of an iteration; on the small dense
    /// islands they did not pay): once the centering target is ρ (the
    /// mean complementarity within twice ρ) and an iteration took its
    /// full Newton step, the next iterations first try the full Newton
    /// step of `r_ρ` solved with that same factorization, kept while each
    /// shrinks the merit `‖r_ρ‖²` at least 8-fold (at most 8 in a row);
    /// otherwise the iteration factors as usual. In `f64` the steps after
    /// convergence (`polish_steps`) go on with chord steps on the same
    /// factorization while they are kept, and factor afresh only when one
    /// is not. The same root with fewer factorizations: a warm step of a
    /// layer of 361 touching spheres (1045 contacts) factors once on
    /// average instead of 5 times, with 7 chord steps of about a sixth
    /// of a factored iteration each (111.1 M instead of 246.9 M
    /// instructions per step). On those islands the final phase's factored iterations
    /// also carry their own second-order term, as with
    /// [`final_corrector`](Self::final_corrector) whatever that says: the
    /// chord steps then start nearer the root (one fewer per warm step of
    /// that layer, 121.6 M instead of 125.8 M instructions; `dualsim
    /// check`'s failure with `final_corrector` is on small islands). Chord
    /// steps count as iterations in the statistics and against the
    /// iteration caps. Default true.
    pub reuse_factorization: bool,
    /// Nesterov–Todd scaling of the second-order-cone rows of the Newton
    /// system (search directions only). Default true: without it the
    /// Jordan-product linearization stalls against the cone boundary when
    /// a contact slides at small ρ.
    pub nesterov_todd: bool,
    /// Newton tuning of the free-flight solve of bodies without contact.
    pub newton: NewtonParams,
    /// After a solve, features that were not candidates but penetrate at
    /// `q⁺` are added and the step is solved again, at most this many
    /// times. Default 4.
    pub max_candidate_rounds: usize,
    /// Full Newton steps on `r_ρ` with the exact Jacobian after
    /// convergence. Default 2: in a dual scalar each one makes one more
    /// derivative order exact (the `unrolled` method's gradients and
    /// Hessians), and it tightens the primal residual to round-off. In
    /// `f64` (no derivative parts) they stop as soon as the residual is
    /// at round-off, so 0 is possible.
    pub polish_steps: usize,
    /// The Newton matrix's contact blocks are built in closed form from the
    /// impulse map (`K = diag(h, 1, 1) W`, no geometric stiffness; no dual
    /// numbers) until two consecutive iterations accept a step shorter
    /// than this (one short step is ordinary interior-point progress); from
    /// then on the solve uses the exact blocks (one forward-mode dual
    /// evaluation of the contact kinematics per contact and iteration).
    /// Both converge to the same root; the closed form is a fraction of the
    /// cost and loses the quadratic rate only by terms of order
    /// `h ‖f‖ ‖r‖ / ‖M‖` (contact frames and lever arms moving with `q⁺`),
    /// which can stall an iterate pinned against a cone. Values above 1
    /// make every iteration exact. Default 0.3 (a resting sphere's solve
    /// takes steps of 0.40 then 0.29 from the default start: with 0.5 it
    /// went exact in every step of a pile, doubling its cost, at the same
    /// iteration count).
    pub exact_jacobian_below: f64,
    /// `single_level` only: an attempt that has taken at least this many
    /// iterations, whose equalities are not yet met and whose last three
    /// accepted steps were all shorter than [`Params::restart_step`] (it
    /// is pinned against a cone boundary) starts again from its initial
    /// point with every cone variable at [`Params::restart_scale`]. The
    /// iterations of both attempts count against the iteration cap. 0
    /// disables. Default 10.
    pub restart_after: usize,
    /// See [`Params::restart_after`]. Default 0.2.
    pub restart_step: f64,
    /// See [`Params::restart_after`]. Default 1: a start far inside the
    /// cones, the opposite of `initial_scale`'s default.
    pub restart_scale: f64,
    /// `single_level` and `ipm` (an island; `continue_failed`): a step
    /// whose attempts fail at the iteration cap is solved again by
    /// continuation in ρ: first at the relaxation
    /// [`Params::continuation_from`] from the usual start, then at smaller
    /// ρ down to the step's own, each stage warm-started from the previous
    /// stage's solution (a stage that fails is retried from the last
    /// solution with a smaller reduction of ρ). The answer is a root of
    /// the step's own problem, accepted by its own convergence test. This
    /// is the budget of iterations of all stages together, counted on top
    /// of the failed attempts' in the step's iterations. 0 disables.
    /// Default 300.
    pub continuation_iterations: usize,
    /// See [`Params::continuation_iterations`]: the first ρ of the
    /// continuation (it is skipped when the step's ρ is not below a tenth
    /// of it). Default 3e-2.
    pub continuation_from: f64,
    /// `single_level` only: a step that the continuation in ρ
    /// ([`Params::continuation_iterations`]) does not solve either is
    /// solved again by continuation in friction: every pair's friction
    /// coefficient scaled by [`Params::friction_continuation_from`], at
    /// ρ_f = max(ρ, [`Params::friction_continuation_rho`]) (from the usual
    /// start, then by continuation in ρ if that fails), then the scale
    /// raised to 1, each stage warm-started from the previous stage's root
    /// (the increment doubled after a stage that converged, halved after
    /// one that did not, giving up below 1/64), then, when ρ_f is above
    /// the step's ρ, down in ρ as the continuation in ρ goes. The last
    /// stage is the step's own problem (its ρ, friction and time step),
    /// accepted by its own convergence test, so the answer is a root of
    /// the same residual. This is the budget of iterations of all
    /// its stages, counted on top of the earlier attempts' in the step's
    /// iterations. 0 disables. Default 300.
    pub friction_continuation_iterations: usize,
    /// See [`Params::friction_continuation_iterations`]: the first scale
    /// of the friction coefficients, in (0, 1). Default 0.1.
    pub friction_continuation_from: f64,
    /// See [`Params::friction_continuation_iterations`]: the friction
    /// stages are solved at `max(ρ, friction_continuation_rho)`; when that
    /// is above the step's ρ, the root at the step's friction is then
    /// followed down to the step's ρ as in the continuation in ρ. Default
    /// 1e-3.
    pub friction_continuation_rho: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            fraction_to_boundary: 0.95,
            complementarity_tolerance: 1e-6,
            backtrack_factor: 0.5,
            max_backtracks: 10,
            armijo: 1e-4,
            recenter_below: 1e-3,
            margin: 0.02,
            initial_scale: 0.01,
            warm_start: true,
            warm_start_contacts: true,
            warm_attempt_iterations: 4,
            warm_recentre_friction: true,
            final_corrector: false,
            reuse_factorization: true,
            nesterov_todd: true,
            newton: NewtonParams::default(),
            max_candidate_rounds: 4,
            polish_steps: 2,
            exact_jacobian_below: 0.3,
            restart_after: 10,
            restart_step: 0.2,
            restart_scale: 1.0,
            continuation_iterations: 300,
            continuation_from: 3e-2,
            friction_continuation_iterations: 300,
            friction_continuation_from: 0.1,
            friction_continuation_rho: 1e-3,
        }
    }
}

/// Refuses tuning the interior point cannot work with (the message names
/// the key and its range).
pub fn check_params(p: &Params) -> Result<(), String> {
    let open01 = [
        ("fraction_to_boundary", p.fraction_to_boundary),
        ("backtrack_factor", p.backtrack_factor),
        ("armijo", p.armijo),
        ("friction_continuation_from", p.friction_continuation_from),
    ];
    for (k, x) in open01 {
        if !(x > 0.0 && x < 1.0) {
            return Err(format!("`{k}` must be in (0, 1), got {x}"));
        }
    }
    let positive = [
        ("complementarity_tolerance", p.complementarity_tolerance),
        ("initial_scale", p.initial_scale),
        ("restart_step", p.restart_step),
        ("restart_scale", p.restart_scale),
        ("continuation_from", p.continuation_from),
        ("friction_continuation_rho", p.friction_continuation_rho),
        ("newton.tolerance", p.newton.tolerance),
    ];
    for (k, x) in positive {
        if !(x > 0.0 && x.is_finite()) {
            return Err(format!("`{k}` must be a finite number > 0, got {x}"));
        }
    }
    let non_negative = [
        ("margin", p.margin),
        ("recenter_below", p.recenter_below),
        ("exact_jacobian_below", p.exact_jacobian_below),
    ];
    for (k, x) in non_negative {
        if !(x >= 0.0 && x.is_finite()) {
            return Err(format!("`{k}` must be a finite number >= 0, got {x}"));
        }
    }
    let counts = [
        ("max_backtracks", p.max_backtracks, 0, 60),
        ("max_candidate_rounds", p.max_candidate_rounds, 0, 100),
        ("polish_steps", p.polish_steps, 0, 100),
        (
            "warm_attempt_iterations",
            p.warm_attempt_iterations,
            0,
            100_000,
        ),
        ("restart_after", p.restart_after, 0, 100_000),
        (
            "continuation_iterations",
            p.continuation_iterations,
            0,
            100_000,
        ),
        (
            "friction_continuation_iterations",
            p.friction_continuation_iterations,
            0,
            100_000,
        ),
        ("newton.max_iterations", p.newton.max_iterations, 1, 100_000),
    ];
    for (k, n, lo, hi) in counts {
        if n < lo || n > hi {
            return Err(format!(
                "`{k}` must be a whole number in [{lo}, {hi}], got {n}"
            ));
        }
    }
    Ok(())
}

/// The result of one island's solve, held in its [`Work`].
#[derive(Clone, Copy, Debug)]
pub struct IslandSolution<'a, T: Scalar> {
    /// Velocity of the island bodies (6 each, island order).
    pub v: &'a DVec<T>,
    /// Contact unknowns.
    pub xs: &'a [DVec<T>],
    /// Final evaluation (contact geometry at q⁺).
    pub eval: &'a Eval<T>,
    /// Iterations (Newton directions computed).
    pub iterations: usize,
    /// Final equality residual (∞-norm).
    pub residual: f64,
    /// Final complementarity `max zᵢ sᵢ`.
    pub complementarity: f64,
    /// Stopped at the iteration cap ([`crate::contact::SolverParams::accept_at_cap`]).
    pub capped: bool,
}

/// How a solve ended (its point is the work's current point).
#[derive(Clone, Copy, Debug)]
struct Ended {
    iterations: usize,
    residual: f64,
    complementarity: f64,
    capped: bool,
}

/// Measures of a point: equality residual ‖·‖∞, deviation of the
/// complementarity rows from `κ e` (‖·‖∞), largest `z s`, and the merit
/// `‖r_κ‖²`.
struct Measures {
    eq: f64,
    comp_dev: f64,
    comp_max: f64,
    merit: f64,
}

fn measures<T: Scalar>(island: &Island<T>, ev: &Eval<T>, xs: &[DVec<T>], kappa: f64) -> Measures {
    let mut eq: f64 = 0.0;
    let mut merit = 0.0;
    for r in ev.r_dyn.iter() {
        eq = eq.max(r.re().abs());
        merit += r.re() * r.re();
    }
    let mut comp_dev: f64 = 0.0;
    let mut comp_max: f64 = 0.0;
    let k = T::from_re(kappa);
    for ((cand, x), ce) in island.contacts.iter().zip(xs).zip(&ev.contacts) {
        let r = local_residual_fixed(cand.law, x.as_slice(), &ce.y, cand.mu, k, None, false);
        let ne = cand.law.equalities();
        for (i, ri) in r.iter().take(cand.law.size()).enumerate() {
            let a = ri.re().abs();
            merit += a * a;
            if i < ne {
                eq = eq.max(a);
            } else {
                comp_dev = comp_dev.max(a);
            }
        }
        for &(z, s) in cand.law.orthant_pairs() {
            comp_max = comp_max.max(x[z].re() * x[s].re());
        }
        for &(z, s) in cand.law.soc_pairs() {
            let d: f64 = (0..3).map(|i| x[z + i].re() * x[s + i].re()).sum();
            comp_max = comp_max.max(d);
        }
    }
    Measures {
        eq,
        comp_dev,
        comp_max,
        merit,
    }
}

/// Recentres the friction pair of every warm contact (exact cone) on the
/// new step's tangential velocity `v_t = y₁,₂` at the warm velocity: the
/// central point for `κ = ρ` with `β₀ = μγ` kept, that is `η_t = v_t`,
/// `b = −β₀ η_t / ψ` and `ψ` the positive root of
/// `ψ² − (ρ/β₀) ψ − ‖v_t‖² = 0` (from `β₀ψ + bᵀη_t = ρ`,
/// `β₀ η_t + ψ b = 0`). An unchanged contact maps to itself (the central
/// point is unique given `β₀` and `η_t`); a contact whose sliding turned
/// gets its friction turned with it instead of starting pinned against
/// the cone's boundary.
///
/// Only where the new velocity predicts the sliding: a contact that was
/// sliding (`‖b‖ ≥ 0.9 β₀`) or whose sliding speed has not jumped
/// (`‖v_t‖ ≤ 2‖η_t‖ + ρ/β₀`). A sticking contact that the start velocity
/// shows moving (a collapsing stack, an impact) keeps its previous
/// friction: the start velocity is the previous step's, and turning its
/// friction to oppose it made the warm attempts of a collapsing pyramid
/// of 30 spheres fail more often (mean iterations per step 8.3 against
/// 6.3 with this rule). The evaluation `ev` at the same velocity stays
/// current: only its `r_dyn` depends on the impulses, and it is updated
/// by each recentred contact's change of impulse (a new evaluation of the
/// island cost 2.7 M instructions per warm step of a 1045-contact layer).
fn recentre_friction<T: Scalar>(
    island: &Island<T>,
    ev: &mut Eval<T>,
    xs: &mut [DVec<T>],
    warm: &[bool],
    rho: f64,
) {
    let k = T::from_re(rho);
    let Eval {
        r_dyn, contacts, ..
    } = ev;
    for (((x, ce), cand), _) in xs
        .iter_mut()
        .zip(contacts.iter())
        .zip(&island.contacts)
        .zip(warm)
        .filter(|w| *w.1)
    {
        if cand.law != Law::Exact {
            continue;
        }
        let y = ce.y;
        let b0 = cand.mu * x[0];
        if !(b0.re() > 0.0) {
            continue;
        }
        let norm2 = |a: f64, b: f64| (a * a + b * b).sqrt();
        let b_norm = norm2(x[3].re(), x[4].re());
        let eta = norm2(x[6].re(), x[7].re());
        let vt = norm2(y[1].re(), y[2].re());
        if !(b_norm >= 0.9 * x[2].re() || vt <= 2.0 * eta + rho / b0.re()) {
            continue;
        }
        let Some((psi, b1, b2)) = soc_central_point(b0, y[1], y[2], k) else {
            continue;
        };
        let f_old = cand.law.impulse(&*x);
        x[2] = b0;
        x[3] = b1;
        x[4] = b2;
        x[5] = psi;
        x[6] = y[1];
        x[7] = y[2];
        // `r_dyn` carries `−Wᵀ f`: it follows the new impulse.
        let df = f_old - cand.law.impulse(&*x);
        for (li, w) in &ce.blocks {
            let u = &island.units[*li];
            for j in 0..u.size() {
                r_dyn[u.offset + j] += w[(0, j)] * df[0] + w[(1, j)] * df[1] + w[(2, j)] * df[2];
            }
        }
    }
}

/// Whether `DUALSIM_IPM_TRACE` is set (read once): a diagnostic trace of
/// every interior-point iteration on stderr.
fn trace_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DUALSIM_IPM_TRACE").is_some())
}

/// One line per iteration (see [`trace_enabled`]): the island's size,
/// whether it started warm, the equality residual, the complementarity's
/// deviation from ρ and its mean ν, the last accepted step, the
/// linearization, and the contact furthest from κ = ρ with its gap `y₀`,
/// tangential velocity, impulse and pair variables.
#[allow(clippy::too_many_arguments)]
fn trace_iteration<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    rho: f64,
    iter: usize,
    warm: &[bool],
    last_alpha: f64,
    lin: Linearization,
    m: &Measures,
) {
    let nu = mean_comp(island, xs, None);
    let mut worst = (0.0, 0);
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let r = local_residual_fixed(
            cand.law,
            x.as_slice(),
            &ce.y,
            cand.mu,
            T::from_re(rho),
            None,
            false,
        );
        let ne = cand.law.equalities();
        let dev = r
            .iter()
            .take(cand.law.size())
            .skip(ne)
            .fold(0.0f64, |a, v| a.max(v.re().abs()));
        if dev > worst.0 {
            worst = (dev, c);
        }
    }
    let warm_n = warm.iter().filter(|w| **w).count();
    let mut line = format!(
        "ipm: {} contacts ({warm_n} warm) it {iter}: eq {:.2e} comp_dev {:.2e} nu {:.2e} alpha {:.3} {:?}",
        island.contacts.len(),
        m.eq,
        m.comp_dev,
        nu,
        last_alpha,
        lin
    );
    if let (Some(x), Some(ce)) = (xs.get(worst.1), ev.contacts.get(worst.1)) {
        let xv: Vec<String> = x.iter().map(|v| format!("{:.2e}", v.re())).collect();
        line += &format!(
            " | worst #{} dev {:.2e} y ({:.2e}, {:.2e}, {:.2e}) x [{}]",
            worst.1,
            worst.0,
            ce.y[0].re(),
            ce.y[1].re(),
            ce.y[2].re(),
            xv.join(", ")
        );
    }
    eprintln!("{line}");
}

/// Mean complementarity `ν = (Σ zᵢsᵢ + Σ zᵀs) / degree` of `x + α dx`.
fn mean_comp<T: Scalar>(island: &Island<T>, xs: &[DVec<T>], dxs: Option<(&[DVec<T>], f64)>) -> f64 {
    let mut sum = 0.0;
    let mut deg = 0;
    for (c, cand) in island.contacts.iter().enumerate() {
        let val = |i: usize| {
            let mut v = xs[c][i].re();
            if let Some((d, a)) = dxs {
                v += a * d[c][i].re();
            }
            v
        };
        for &(z, s) in cand.law.orthant_pairs() {
            sum += val(z) * val(s);
        }
        for &(z, s) in cand.law.soc_pairs() {
            sum += (0..3).map(|i| val(z + i) * val(s + i)).sum::<f64>();
        }
        deg += cand.law.degree();
    }
    sum / deg.max(1) as f64
}

/// Largest step keeping every cone variable in its cone (may be ∞).
fn boundary_step<T: Scalar>(island: &Island<T>, xs: &[DVec<T>], dxs: &[DVec<T>]) -> f64 {
    let mut alpha = f64::INFINITY;
    for ((cand, x), d) in island.contacts.iter().zip(xs).zip(dxs) {
        for &(z, s) in cand.law.orthant_pairs() {
            alpha = alpha.min(orthant_step(x[z].re(), d[z].re()));
            alpha = alpha.min(orthant_step(x[s].re(), d[s].re()));
        }
        for &(z, s) in cand.law.soc_pairs() {
            for base in [z, s] {
                let xv = [x[base].re(), x[base + 1].re(), x[base + 2].re()];
                let dv = [d[base].re(), d[base + 1].re(), d[base + 2].re()];
                alpha = alpha.min(soc_step(xv, dv));
            }
        }
    }
    alpha
}

/// Islands whose reduced system has at least this many rows (16 bodies)
/// are factored by faer's blocked LU when the scalar is `f64`; smaller
/// ones, and every dual scalar, by nalgebra's LU (generic over `Scalar`).
pub const FAER_MIN_ROWS: usize = 96;

/// Islands whose reduced system has at least this many rows (16 free
/// bodies) are assembled block-sparsely and factored by faer's sparse LU
/// when the scalar is `f64` (see the [module docs](self)). Measured on
/// square layers of touching spheres (`examples/scaling.rs`, callgrind
/// time of one step): at 96 rows the two paths are within 8 % (dense
/// 443 ms, sparse 478 ms), at 216 rows sparse is 2.3× faster (1.78 s
/// against 4.06 s) and at 600 rows 6.7× (12.6 s against 84.8 s). The
/// crossover lies between 96 and 216 rows; not measured more finely.
pub const SPARSE_MIN_ROWS: usize = 96;

/// A warm attempt ([`solve_island_warm`]) whose last accepted step was at
/// least this long goes on past [`Params::warm_attempt_iterations`].
const WARM_PROGRESS_STEP: f64 = 0.5;

fn is_f64<T: Scalar>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>()
}

/// LU of the reduced system: [`DenseLu`] (any scalar, storage reused
/// across iterations), faer's dense (`f64`, large islands) or faer's sparse
/// (`f64`, large islands, block-sparse assembly).
// One per factorization buffer, never moved in the iterations: the size of
// the sparse variant costs nothing, boxing it would cost an allocation.
#[allow(clippy::large_enum_variant)]
enum ReducedLu<T: Scalar> {
    Dense(DenseLu<T>),
    Faer(faer::linalg::solvers::PartialPivLu<f64>),
    Sparse(SparseReduced),
}

/// The sparse factorizations of one block pattern: the block LU with
/// static pivoting first ([`BlockLu`]), faer's pivoting sparse LU when it
/// fails (a small diagonal pivot or a backward error above its bound).
struct SparseReduced {
    block: Option<BlockLu>,
    pivoting: Option<SparseLu>,
    /// Which one holds the current factorization.
    by_block: bool,
}

impl SparseReduced {
    fn nrows(&self) -> usize {
        match (&self.block, &self.pivoting) {
            (Some(b), _) => b.nrows(),
            (None, Some(p)) => p.nrows(),
            (None, None) => 0,
        }
    }

    fn factor(&mut self, a: &BlockCsc<f64>) -> bool {
        if let Some(b) = &mut self.block {
            if b.factor(a) {
                self.by_block = true;
                return true;
            }
        }
        self.by_block = false;
        if self.pivoting.is_none() {
            self.pivoting = SparseLu::new(a);
        }
        self.pivoting.as_mut().is_some_and(|p| p.factor(a))
    }

    fn solve_in_place(&self, b: &mut [f64]) -> bool {
        match (&self.block, &self.pivoting) {
            (Some(lu), _) if self.by_block => lu.solve_in_place(b),
            (_, Some(lu)) if !self.by_block => lu.solve_in_place(b),
            _ => false,
        }
    }

    fn solve_columns_in_place(&self, b: &mut [f64], ncols: usize) -> bool {
        match (&self.block, &self.pivoting) {
            (Some(lu), _) if self.by_block => {
                let n = lu.nrows();
                b.chunks_mut(n.max(1))
                    .take(ncols)
                    .all(|c| lu.solve_in_place(c))
            }
            (_, Some(lu)) if !self.by_block => lu.solve_columns_in_place(b, ncols),
            _ => false,
        }
    }
}

impl<T: Scalar> ReducedLu<T> {
    /// Factors `r`, reusing the storage of a previous dense factorization;
    /// `false` when `r` is singular.
    fn factor(&mut self, r: &DMat<T>) -> bool {
        use std::any::Any;
        if r.nrows() >= FAER_MIN_ROWS {
            if let Some(r64) = (r as &dyn Any).downcast_ref::<DMat<f64>>() {
                let m = faer::Mat::<f64>::from_fn(r64.nrows(), r64.ncols(), |i, j| r64[(i, j)]);
                *self = ReducedLu::Faer(m.partial_piv_lu());
                return true;
            }
        }
        if !matches!(self, ReducedLu::Dense(_)) {
            *self = ReducedLu::Dense(DenseLu::default());
        }
        match self {
            ReducedLu::Dense(lu) => lu.factor(r),
            ReducedLu::Faer(_) | ReducedLu::Sparse(_) => unreachable!("set to dense above"),
        }
    }

    /// Factors the block-sparse `a` (`T` is `f64`), redoing the symbolic
    /// analysis when the pattern is `fresh`; `false` when singular (or `T`
    /// is not `f64`).
    fn factor_sparse(&mut self, a: &BlockCsc<T>, fresh: bool) -> bool {
        use std::any::Any;
        let Some(a) = (a as &dyn Any).downcast_ref::<BlockCsc<f64>>() else {
            return false;
        };
        let reuse = !fresh && matches!(self, ReducedLu::Sparse(lu) if lu.nrows() == a.dim());
        if !reuse {
            *self = ReducedLu::Sparse(SparseReduced {
                block: BlockLu::new(a),
                pivoting: None,
                by_block: false,
            });
        }
        match self {
            ReducedLu::Sparse(lu) => lu.factor(a),
            _ => false,
        }
    }

    /// Solves in place; `false` when the solution is not finite.
    fn solve_in_place(&self, b: &mut DVec<T>) -> bool {
        match self {
            ReducedLu::Dense(lu) => lu.solve_in_place(b),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::Solve;
                // T is f64 here (only f64 systems are factored by faer).
                let rhs = faer::Mat::<f64>::from_fn(b.nrows(), 1, |i, _| b[i].re());
                let x = lu.solve(&rhs);
                for i in 0..b.nrows() {
                    b[i] = T::from_re(x[(i, 0)]);
                }
                b.iter().all(|e| e.re().is_finite())
            }
            ReducedLu::Sparse(lu) => {
                use std::any::Any;
                // T is f64 here (only f64 systems are factored sparsely).
                match (b as &mut dyn Any).downcast_mut::<DVec<f64>>() {
                    Some(b) => lu.solve_in_place(b.as_mut_slice()),
                    None => false,
                }
            }
        }
    }

    /// Solves for every column of `rhs`.
    fn solve_mat(&self, rhs: &DMat<T>) -> Option<DMat<T>> {
        match self {
            ReducedLu::Dense(lu) => lu.solve_mat(rhs),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::Solve;
                let b =
                    faer::Mat::<f64>::from_fn(rhs.nrows(), rhs.ncols(), |i, j| rhs[(i, j)].re());
                let x = lu.solve(&b);
                if !x.col_iter().all(|c| c.iter().all(|e| e.is_finite())) {
                    return None;
                }
                Some(DMat::from_fn(rhs.nrows(), rhs.ncols(), |i, j| {
                    T::from_re(x[(i, j)])
                }))
            }
            ReducedLu::Sparse(lu) => {
                use std::any::Any;
                let mut out = rhs.clone();
                let ncols = out.ncols();
                let x = (&mut out as &mut dyn Any).downcast_mut::<DMat<f64>>()?;
                lu.solve_columns_in_place(x.as_mut_slice(), ncols)
                    .then_some(out)
            }
        }
    }

    /// The inverse of the reduced matrix.
    fn try_inverse(&self) -> Option<DMat<T>> {
        let n = match self {
            ReducedLu::Dense(lu) => lu.nrows(),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::ShapeCore;
                lu.nrows()
            }
            ReducedLu::Sparse(lu) => lu.nrows(),
        };
        self.solve_mat(&DMat::<T>::identity(n, n))
    }
}

/// LU of `A_c` and `A_c⁻¹ C_c` of one contact (the local block of the KKT
/// reduction), fixed-size per friction law: no heap.
enum LocalLu<T: Scalar> {
    N2(SmallLu<T, 2>, SMatrix<T, 2, 3>),
    N8(SmallLu<T, 8>, SMatrix<T, 8, 3>),
    N12(SmallLu<T, 12>, SMatrix<T, 12, 3>),
}

fn local_lu<T: Scalar, const N: usize>(
    law: Law,
    x: &[T],
    mu: T,
    nt: bool,
) -> Option<(SmallLu<T, N>, SMatrix<T, N, 3>)> {
    let mut a = SMatrix::<T, N, N>::zeros();
    let mut c = SMatrix::<T, N, 3>::zeros();
    local_jacobian_with(law, x, mu, nt, |is_a, i, j, v| {
        if is_a {
            a[(i, j)] = v
        } else {
            c[(i, j)] = v
        }
    });
    let lu = SmallLu::new(&a)?;
    let ainv_c = lu.solve(&c);
    Some((lu, ainv_c))
}

macro_rules! with_local {
    ($self:expr, |$lu:ident, $ac:ident| $body:expr) => {
        match $self {
            LocalLu::N2($lu, $ac) => $body,
            LocalLu::N8($lu, $ac) => $body,
            LocalLu::N12($lu, $ac) => $body,
        }
    };
}

impl<T: Scalar> LocalLu<T> {
    fn new(law: Law, x: &[T], mu: T, nt: bool) -> Option<Self> {
        Some(match law.size() {
            2 => {
                let (l, c) = local_lu::<T, 2>(law, x, mu, nt)?;
                LocalLu::N2(l, c)
            }
            8 => {
                let (l, c) = local_lu::<T, 8>(law, x, mu, nt)?;
                LocalLu::N8(l, c)
            }
            12 => {
                let (l, c) = local_lu::<T, 12>(law, x, mu, nt)?;
                LocalLu::N12(l, c)
            }
            n => unreachable!("no friction law has {n} unknowns"),
        })
    }

    /// `out = A_c⁻¹ r`; `false` when not finite.
    fn solve_into(&self, r: &DVec<T>, out: &mut DVec<T>) -> bool {
        with_local!(self, |lu, _ac| {
            let b = SVector::from_fn(|i, _| r[i]);
            let x = lu.solve(&b);
            out.as_mut_slice().copy_from_slice(x.as_slice());
            x.iter().all(|e| e.re().is_finite())
        })
    }

    /// `A_c⁻¹ C_c dy`, element `i`.
    fn ainv_c_times(&self, dy: &Vec3<T>, i: usize) -> T {
        with_local!(self, |_lu, ac| ac[(i, 0)] * dy[0]
            + ac[(i, 1)] * dy[1]
            + ac[(i, 2)] * dy[2])
    }

    /// `A_c⁻¹ C_c` as a dynamic matrix.
    fn ainv_c(&self) -> DMat<T> {
        with_local!(self, |_lu, ac| DMat::from_column_slice(
            ac.nrows(),
            3,
            ac.as_slice()
        ))
    }

    /// `E A_c⁻¹ C_c` (3 × 3): the impulse response to `dy`.
    fn n3(&self, law: Law) -> Matrix3<T> {
        with_local!(self, |_lu, ac| {
            let mut m = Matrix3::zeros();
            for j in 0..3 {
                m.set_column(j, &law.impulse(&ac.column(j)));
            }
            m
        })
    }
}

/// Factorized Newton system of one iterate: the reduced matrix in `v⁺`
/// and the per-contact blocks needed to recover `dx_c`. Its storage is
/// reused by [`factor_into`].
struct Factored<T: Scalar> {
    /// The reduced matrix, assembled (dense path).
    r: DMat<T>,
    /// The reduced matrix, assembled (sparse path), with the pattern of
    /// the island being solved.
    sparse: Option<BlockCsc<T>>,
    reduced: ReducedLu<T>,
    /// LU of each `A_c`, with `A_c⁻¹ C_c`.
    local: Vec<LocalLu<T>>,
    /// `(island unit, K block)` of each contact, `K = ∂y/∂v⁺`.
    k_blocks: Vec<Vec<(usize, Matrix3xX<T>)>>,
    /// Nesterov–Todd scaling `(W, W⁻¹)` of each contact's friction cone
    /// pair at the factored point, when its rows were scaled and the
    /// island has at least [`SPARSE_MIN_ROWS`] rows (chord steps'
    /// right-hand sides, [`chord_residuals`], which run only there).
    nt_w: Vec<Option<(Matrix3<T>, Matrix3<T>)>>,
}

impl<T: Scalar> Factored<T> {
    fn empty() -> Self {
        Factored {
            r: DMat::zeros(0, 0),
            sparse: None,
            reduced: ReducedLu::Dense(DenseLu::default()),
            local: Vec::new(),
            k_blocks: Vec::new(),
            nt_w: Vec::new(),
        }
    }
}

/// How the contact blocks `K = ∂y/∂v⁺` and `G = ∂(Wᵀf)/∂v⁺` of the
/// Newton matrix are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Linearization {
    /// Closed form from the impulse map at the iterate: `K = diag(h, 1, 1) W`
    /// (the normal row is exact, `W`'s normal row being `∂φ/∂v⁺ / h`; the
    /// tangent rows leave out the motion of the contact frame and lever
    /// arms with `q⁺`, which is O(h)) and `G = 0`. No dual numbers: the
    /// Newton iterations converge to the same root, at a linear rate of
    /// order `h ‖f‖ ‖r‖ / ‖M‖` once close.
    ClosedForm,
    /// Exact `K` and `G` by one forward-mode dual evaluation of the contact
    /// kinematics: the Jacobian the implicit-function derivatives and the
    /// polishing steps of a dual scalar need.
    Exact,
}

fn factor<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ev: &Eval<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    nt: bool,
    lin: Linearization,
) -> Result<Factored<T>, SolveError> {
    let mut fac = Factored::empty();
    factor_into(p, island, ev, v, xs, nt, lin, &mut fac)?;
    Ok(fac)
}

/// Where the reduced matrix is assembled: dense, or block-sparse (blocks
/// indexed by island unit).
enum Target<'a, T: Scalar> {
    Dense(&'a mut DMat<T>),
    Sparse(&'a mut BlockCsc<T>),
}

/// `r[rows of unit lw, cols of unit lk] += Wᵀ N K − G` for one pair of
/// sides of a contact (`N = E A_c⁻¹ C_c`, 3 × 3), without temporaries.
/// `(lw, ow, W)`: unit, its offset in the island velocity, its `W` block.
fn add_block<T: Scalar, G: std::ops::Index<(usize, usize), Output = f64>>(
    target: &mut Target<'_, T>,
    (lw, ow, w): (usize, usize, &Matrix3xX<T>),
    n3: &Matrix3<T>,
    (lk, ok, k): (usize, usize, &Matrix3xX<T>),
    g: Option<&G>,
) -> Result<(), SolveError> {
    match target {
        Target::Dense(r) => block_product(w, n3, k, g, |i, j, v| r[(ow + i, ok + j)] += v),
        Target::Sparse(s) => {
            let b = s.block(lw, lk).ok_or(SolveError::Singular(
                "reduced system (block outside the pattern)",
            ))?;
            block_product(w, n3, k, g, |i, j, v| s.add(b, i, j, v));
        }
    }
    Ok(())
}

/// `put(i, j, (Wᵀ N K − G)[(i, j)])` for every entry of one block.
#[inline]
fn block_product<T: Scalar, G: std::ops::Index<(usize, usize), Output = f64>>(
    w: &Matrix3xX<T>,
    n3: &Matrix3<T>,
    k: &Matrix3xX<T>,
    g: Option<&G>,
    mut put: impl FnMut(usize, usize, T),
) {
    // The closed form (no G) uses W's primal values (see `Linearization`).
    let wv = |a: usize, i: usize| match g {
        Some(_) => w[(a, i)],
        None => T::from_re(w[(a, i)].re()),
    };
    for i in 0..w.ncols() {
        // Row i of Wᵀ N.
        let wn: [T; 3] = core::array::from_fn(|a| {
            wv(0, i) * n3[(0, a)] + wv(1, i) * n3[(1, a)] + wv(2, i) * n3[(2, a)]
        });
        for j in 0..k.ncols() {
            let mut add = wn[0] * k[(0, j)] + wn[1] * k[(1, j)] + wn[2] * k[(2, j)];
            if let Some(g) = g {
                add -= T::from_re(g[(i, j)]);
            }
            put(i, j, add);
        }
    }
}

/// The block pattern of an island's reduced system: the diagonal blocks
/// and a block for every ordered pair of units sharing a contact.
fn reduced_pattern<T: Scalar>(island: &Island<T>, ev: &Eval<T>) -> BlockCsc<T> {
    let sizes: Vec<usize> = island.units.iter().map(|u| u.size()).collect();
    let coupled = ev.contacts.iter().flat_map(|ce| {
        ce.blocks
            .iter()
            .flat_map(move |(a, _)| ce.blocks.iter().map(move |(b, _)| (*b, *a)))
    });
    BlockCsc::new(&sizes, coupled)
}

/// `s` has the island's unit layout and every block its contacts need.
fn pattern_covers<T: Scalar>(s: &BlockCsc<T>, island: &Island<T>, ev: &Eval<T>) -> bool {
    s.sizes().len() == island.units.len()
        && s.sizes()
            .iter()
            .zip(&island.units)
            .all(|(&n, u)| n == u.size())
        && ev.contacts.iter().all(|ce| {
            ce.blocks
                .iter()
                .all(|(a, _)| ce.blocks.iter().all(|(b, _)| s.block(*b, *a).is_some()))
        })
}

/// The island's unit offsets are consecutive in unit order (the layout
/// [`BlockCsc`] assumes).
fn consecutive_units<T: Scalar>(island: &Island<T>) -> bool {
    let mut o = 0;
    island.units.iter().all(|u| {
        let ok = u.offset == o;
        o += u.size();
        ok
    })
}

/// Sets slot `s` of `ks` to `(u, K)` with `K[(i, j)] = val(i, j)`
/// (`ncols` columns), reusing its storage when the shape agrees.
fn set_k<T: Scalar>(
    ks: &mut Vec<(usize, Matrix3xX<T>)>,
    s: usize,
    u: usize,
    ncols: usize,
    val: impl Fn(usize, usize) -> T,
) {
    if ks.len() == s {
        ks.push((u, Matrix3xX::zeros(ncols)));
    } else if ks[s].1.ncols() != ncols {
        ks[s].1 = Matrix3xX::zeros(ncols);
    }
    let (ku, k) = &mut ks[s];
    *ku = u;
    for j in 0..ncols {
        for i in 0..3 {
            k[(i, j)] = val(i, j);
        }
    }
}

/// The geometric stiffness blocks `G[i][j] = ∂(W_iᵀ f)/∂v_j` of a contact.
// A free body's blocks stay on the stack (one value per contact and
// factorization, never stored): boxing them would put the heap back.
#[allow(clippy::large_enum_variant)]
enum Stiffness {
    Body([[Matrix6<f64>; 2]; 2]),
    Robot(Vec<Vec<DMat<f64>>>),
}

#[allow(clippy::too_many_arguments)]
fn factor_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ev: &Eval<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    nt: bool,
    lin: Linearization,
    fac: &mut Factored<T>,
) -> Result<(), SolveError> {
    let dim = island.dim();
    let sparse = is_f64::<T>() && dim >= SPARSE_MIN_ROWS && consecutive_units(island);
    let mut fresh = false;
    let mut target = match &mut fac.sparse {
        Some(s) if sparse && pattern_covers(s, island, ev) => Target::Sparse(s),
        slot if sparse => {
            fresh = true;
            Target::Sparse(slot.insert(reduced_pattern(island, ev)))
        }
        _ => {
            if fac.r.shape() != (dim, dim) {
                fac.r = DMat::zeros(dim, dim);
            } else {
                fac.r.fill(T::zero());
            }
            Target::Dense(&mut fac.r)
        }
    };
    match &mut target {
        Target::Dense(r) => {
            for (u, j) in island.units.iter().zip(&ev.jac) {
                r.view_mut((u.offset, u.offset), (u.size(), u.size()))
                    .copy_from(j);
            }
        }
        Target::Sparse(s) => {
            s.clear();
            for (ui, (u, j)) in island.units.iter().zip(&ev.jac).enumerate() {
                let b = s.block(ui, ui).ok_or(SolveError::Singular(
                    "reduced system (block outside the pattern)",
                ))?;
                for c in 0..u.size() {
                    for r in 0..u.size() {
                        s.add(b, r, c, j[(r, c)]);
                    }
                }
            }
        }
    }
    fac.local.clear();
    fac.nt_w.clear();
    fac.k_blocks.truncate(xs.len());
    while fac.k_blocks.len() < xs.len() {
        fac.k_blocks.push(Vec::with_capacity(2));
    }
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        // Only where chord steps may run (`Params::reuse_factorization`
        // needs `SPARSE_MIN_ROWS` rows): elsewhere no step reads it.
        fac.nt_w.push(match cand.law.soc_pairs() {
            [(z, s)] if nt && dim >= SPARSE_MIN_ROWS => {
                let zz = Vec3::new(x[*z], x[z + 1], x[z + 2]);
                let ss = Vec3::new(x[*s], x[s + 1], x[s + 2]);
                let (w, winv, _) = nt_scaling(&zz, &ss);
                Some((w, winv))
            }
            _ => None,
        });
        let lu = LocalLu::new(cand.law, x.as_slice(), cand.mu, nt)
            .ok_or(SolveError::Singular("contact block"))?;
        let n3 = lu.n3(cand.law);
        let ks = &mut fac.k_blocks[c];
        let la = ce.blocks[0].0;
        // A conic-program contact (`bilevel`) has a gap whose gradient is
        // not the rigid motion of its witness points: always exact.
        if lin == Linearization::ClosedForm && cand.parts.is_none() {
            // K = diag(h, 1, 1) W on the primal values, in place.
            let h = p.h.re();
            ks.truncate(ce.blocks.len());
            for (s, (u, w)) in ce.blocks.iter().enumerate() {
                let row_scale = |i: usize| if i == 0 { h } else { 1.0 };
                set_k(ks, s, *u, w.ncols(), |i, j| {
                    T::from_re(w[(i, j)].re() * row_scale(i))
                });
            }
            for (lw, w) in ce.blocks.iter() {
                let ow = island.units[*lw].offset;
                for (lk, k) in ks.iter() {
                    let ok = island.units[*lk].offset;
                    let no_g = None::<&Matrix6<f64>>;
                    add_block(&mut target, (*lw, ow, w), &n3, (*lk, ok, k), no_g)?;
                }
            }
            fac.local.push(lu);
            continue;
        }
        // Exact primal K and geometric stiffness G of the contact.
        let f = cand.law.impulse(x).map(|e| e.re());
        let unit_v = |li: usize| -> Vec<f64> {
            let u = &island.units[li];
            (0..u.size()).map(|k| v[u.offset + k].re()).collect()
        };
        // (unit, K) per moving side and G[i][j] = ∂(W_iᵀ f)/∂v_j.
        let g = match &island.units[la].kind {
            UnitKind::Robot(ru) => {
                let lb = ce.blocks.get(1).map(|b| b.0);
                let vb: [f64; 6] = match lb {
                    Some(lb) => {
                        let o = island.units[lb].offset;
                        core::array::from_fn(|k| v[o + k].re())
                    }
                    None => [0.0; 6],
                };
                let (k, g) = robot_contact_jacobian(p, ru, cand, &unit_v(la), &vb, &f)?;
                let units = std::iter::once(la).chain(lb);
                *ks = units
                    .zip(k.iter())
                    .map(|(u, k)| (u, k.map(T::from_re)))
                    .collect();
                Stiffness::Robot(g)
            }
            UnitKind::Body(_) => {
                let lb = ce.blocks.get(1).map(|b| b.0);
                let re6 = |li: usize| -> [f64; 6] {
                    let o = island.units[li].offset;
                    core::array::from_fn(|k| v[o + k].re())
                };
                let va = re6(la);
                let vb = lb.map(re6).unwrap_or([0.0; 6]);
                let (ka, kb, g) = contact_jacobian(p, cand, &va, &vb, &f)?;
                ks.truncate(1 + usize::from(lb.is_some()));
                set_k(ks, 0, la, 6, |i, j| T::from_re(ka[(i, j)]));
                if let Some(lb) = lb {
                    set_k(ks, 1, lb, 6, |i, j| T::from_re(kb[(i, j)]));
                }
                Stiffness::Body(g)
            }
        };
        for (i, (lw, w)) in ce.blocks.iter().enumerate() {
            let ow = island.units[*lw].offset;
            for (j, (lk, k)) in ks.iter().enumerate() {
                let ok = island.units[*lk].offset;
                let (wb, kb) = ((*lw, ow, w), (*lk, ok, k));
                match &g {
                    Stiffness::Body(g) => add_block(&mut target, wb, &n3, kb, Some(&g[i][j]))?,
                    Stiffness::Robot(g) => add_block(&mut target, wb, &n3, kb, Some(&g[i][j]))?,
                }
            }
        }
        fac.local.push(lu);
    }
    let ok = match target {
        Target::Dense(r) => fac.reduced.factor(r),
        Target::Sparse(s) => fac.reduced.factor_sparse(s, fresh),
    };
    if !ok {
        return Err(SolveError::Singular("reduced system"));
    }
    Ok(())
}

/// Buffers of [`direction`]: the right-hand side and `A_c⁻¹ r_c`.
struct DirWork<T: Scalar> {
    ainv_r: Vec<DVec<T>>,
}

/// Newton direction for the local residuals `rc` (dynamics residual from
/// `ev`): `(H + Σ Wᵀ E A⁻¹ C K) dv = −r_d − Σ Wᵀ E A⁻¹ r_c`,
/// `dx_c = −A_c⁻¹ (r_c + C_c K_c dv)`, into `dv` and `dxs`.
fn direction<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    f: &Factored<T>,
    rc: &[DVec<T>],
    work: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dxs: &mut [DVec<T>],
) -> Result<(), SolveError> {
    for (d, r) in dv.iter_mut().zip(ev.r_dyn.iter()) {
        *d = -*r;
    }
    for (c, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
        let u = &mut work.ainv_r[c];
        if !f.local[c].solve_into(&rc[c], u) {
            return Err(SolveError::Singular("contact block"));
        }
        let eu = cand.law.impulse(u);
        for (lw, w) in &ce.blocks {
            let un = &island.units[*lw];
            for k in 0..un.size() {
                dv[un.offset + k] -= w[(0, k)] * eu[0] + w[(1, k)] * eu[1] + w[(2, k)] * eu[2];
            }
        }
    }
    if !f.reduced.solve_in_place(dv) {
        return Err(SolveError::Singular("reduced system"));
    }
    for c in 0..ev.contacts.len() {
        let mut dy = Vec3::zeros();
        for (lk, k) in &f.k_blocks[c] {
            let un = &island.units[*lk];
            for j in 0..un.size() {
                let d = dv[un.offset + j];
                dy[0] += k[(0, j)] * d;
                dy[1] += k[(1, j)] * d;
                dy[2] += k[(2, j)] * d;
            }
        }
        let ar = &work.ainv_r[c];
        for (i, out) in dxs[c].iter_mut().enumerate() {
            *out = -(ar[i] + f.local[c].ainv_c_times(&dy, i));
        }
    }
    Ok(())
}

/// Largest merit ratio `‖r_ρ(trial)‖² / ‖r_ρ(cur)‖²` of a chord step that
/// is kept (`Params::reuse_factorization`): the residual's norm must
/// shrink at least √8 ≈ 2.8-fold, or the factorization is too stale to be
/// worth more solves than one new factorization (a chord step costs about
/// a sixth of a factored iteration on the 1045-contact layer; 1/16 there
/// refactored 0.4 times more per step, 1/4 gave the same steps as 1/8).
const CHORD_CONTRACTION: f64 = 1.0 / 8.0;

/// Consecutive chord steps one factorization may serve.
const MAX_CHORD_STEPS: usize = 8;

/// A chord step: the full Newton step of `r_ρ` at `cur` computed with
/// `fac`, the factorization of an earlier iterate, into `trial`. True when
/// the step keeps `fraction_to_boundary` of the distance to every cone
/// boundary, evaluates, and brings the merit `‖r_ρ‖²` from `merit0` to at
/// most [`CHORD_CONTRACTION`] of it; then `cur` moves there (swapped with
/// `trial`), `chords` counts it, and the new point's measures at ρ are
/// returned (the caller's next test needs them).
/// Decided on primal values, so every scalar takes the same steps.
#[allow(clippy::too_many_arguments)]
fn chord_step<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    rho: f64,
    nt: bool,
    fraction_to_boundary: f64,
    merit0: f64,
    cur: &mut Point<T>,
    trial: &mut Point<T>,
    chords: &mut usize,
    fac: &Factored<T>,
    rc: &mut [DVec<T>],
    dir: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dxs: &mut [DVec<T>],
) -> Option<Measures> {
    if nt {
        chord_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), fac, rc);
    } else {
        local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
    }
    direction(island, &cur.ev, fac, rc, dir, dv, dxs).ok()?;
    if fraction_to_boundary * boundary_step(island, &cur.xs, dxs) < 1.0 {
        return None;
    }
    trial.step_from(p, island, cur, dv, dxs, 1.0, false).ok()?;
    let measured = measures(island, &trial.ev, &trial.xs, rho);
    let mt = measured.merit;
    let kept = mt <= CHORD_CONTRACTION * merit0;
    if trace_enabled() {
        let verdict = if kept { "kept" } else { "rejected" };
        eprintln!("ipm: chord step: merit {merit0:.3e} -> {mt:.3e} ({verdict})");
    }
    if !kept {
        return None;
    }
    std::mem::swap(cur, trial);
    *chords += 1;
    Some(measured)
}

/// The local residuals of a chord step on a factorization with scaled cone
/// rows: as [`local_residuals`] with `nt`, but each friction cone pair's
/// rows scaled by the factored point's Nesterov–Todd scaling `W₀`,
/// `(W₀⁻¹ z) ∘ (W₀ s) − κ e`, instead of the current point's (`λ ∘ λ − κ e`,
/// `λ = W⁻¹ z = W s`). `W₀` is an automorphism of the cone, so this
/// equation has the central point `z ∘ s = κ e` as its root too; it
/// contracts the same as the current scaling on the 1045-contact layer
/// (same merit at every chord step to three digits) and saves a scaling
/// (square roots and divisions) per contact and chord step.
fn chord_residuals<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: T,
    fac: &Factored<T>,
    out: &mut [DVec<T>],
) {
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let scaled = match (fac.nt_w.get(c), cand.law.soc_pairs()) {
            (Some(Some(ws)), [(z, s)]) => Some((ws, *z, *s)),
            _ => None,
        };
        let r = local_residual_fixed(cand.law, x.as_slice(), &ce.y, cand.mu, kappa, None, false);
        let o = out[c].as_mut_slice();
        o.copy_from_slice(&r.as_slice()[..cand.law.size()]);
        if let Some(((w, winv), z, s)) = scaled {
            let zz = Vec3::new(x[z], x[z + 1], x[z + 2]);
            let ss = Vec3::new(x[s], x[s + 1], x[s + 2]);
            let mut j = jordan(&(winv * zz), &(w * ss));
            j[0] -= kappa;
            let row = cand.law.equalities() + cand.law.orthant_pairs().len();
            o[row..row + 3].copy_from_slice(j.as_slice());
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn local_residuals<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: T,
    corrector: Option<&[DVec<T>]>,
    nt: bool,
    out: &mut [DVec<T>],
) {
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let r = local_residual_fixed(
            cand.law,
            x.as_slice(),
            &ce.y,
            cand.mu,
            kappa,
            corrector.map(|d| d[c].as_slice()),
            nt,
        );
        out[c]
            .as_mut_slice()
            .copy_from_slice(&r.as_slice()[..cand.law.size()]);
    }
}

/// A point of the iteration: velocities, contact unknowns and their
/// evaluation.
struct Point<T: Scalar> {
    v: DVec<T>,
    xs: Vec<DVec<T>>,
    ev: Eval<T>,
}

/// `dst = src`, reusing `dst`'s storage when the length agrees.
pub(crate) fn copy_vec<T: Scalar>(dst: &mut DVec<T>, src: &DVec<T>) {
    if dst.len() == src.len() {
        dst.copy_from(src);
    } else {
        *dst = src.clone();
    }
}

/// `dst = src` for a list of vectors, reusing storage where lengths agree.
fn copy_vecs<T: Scalar>(dst: &mut Vec<DVec<T>>, src: &[DVec<T>]) {
    dst.truncate(src.len());
    for (d, x) in dst.iter_mut().zip(src) {
        copy_vec(d, x);
    }
    for x in &src[dst.len()..] {
        dst.push(x.clone());
    }
}

impl<T: Scalar> Point<T> {
    fn empty() -> Self {
        Point {
            v: DVec::zeros(0),
            xs: Vec::new(),
            ev: Eval {
                r_dyn: DVec::zeros(0),
                jac: Vec::new(),
                contacts: Vec::new(),
            },
        }
    }

    /// Takes the values (and shapes) of `v` and `xs`; the evaluation is
    /// left to the caller.
    fn assign(&mut self, v: &DVec<T>, xs: &[DVec<T>]) {
        copy_vec(&mut self.v, v);
        copy_vecs(&mut self.xs, xs);
    }

    /// `self = from + α d` (α applied to the derivative parts only with
    /// `tangent`), then evaluated.
    #[allow(clippy::too_many_arguments)]
    fn step_from(
        &mut self,
        p: &StepProblem<'_, T>,
        island: &Island<T>,
        from: &Point<T>,
        dv: &DVec<T>,
        dxs: &[DVec<T>],
        alpha: f64,
        tangent: bool,
    ) -> Result<(), SolveError> {
        let a = T::from_re(alpha);
        let scale = |d: T| {
            if tangent {
                d - T::from_re(d.re())
            } else {
                d * a
            }
        };
        for ((t, v), d) in self.v.iter_mut().zip(from.v.iter()).zip(dv.iter()) {
            *t = *v + scale(*d);
        }
        for ((t, x), d) in self.xs.iter_mut().zip(&from.xs).zip(dxs) {
            for ((ti, xi), di) in t.iter_mut().zip(x.iter()).zip(d.iter()) {
                *ti = *xi + scale(*di);
            }
        }
        evaluate_into(p, island, &self.v, &self.xs, &mut self.ev)
    }
}

/// Every buffer one island's solve needs: the iterate, the line search's
/// trial, its best rejected trial and the recentring trial, the Newton
/// directions, residuals and factors. Sized by the first solve and reused
/// by the next ones where the shapes agree (a rollout's workspace keeps one
/// per island, so a steady-state step allocates none of it); the
/// iterations themselves do not allocate (free bodies; a robot's
/// kinematics still does). The solution of the last solve stays in it
/// ([`IslandSolution`] borrows it).
pub struct Work<T: Scalar> {
    warm: Vec<bool>,
    cur: Point<T>,
    trial: Point<T>,
    best: Point<T>,
    center: Point<T>,
    dv: DVec<T>,
    dxs: Vec<DVec<T>>,
    dx_aff: Vec<DVec<T>>,
    rc: Vec<DVec<T>>,
    dir: DirWork<T>,
    fac: Factored<T>,
    plain: Factored<T>,
}

impl<T: Scalar> Default for Work<T> {
    fn default() -> Self {
        Work {
            warm: Vec::new(),
            cur: Point::empty(),
            trial: Point::empty(),
            best: Point::empty(),
            center: Point::empty(),
            dv: DVec::zeros(0),
            dxs: Vec::new(),
            dx_aff: Vec::new(),
            rc: Vec::new(),
            dir: DirWork { ainv_r: Vec::new() },
            fac: Factored::empty(),
            plain: Factored::empty(),
        }
    }
}

impl<T: Scalar> std::fmt::Debug for Work<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Work")
            .field("velocities", &self.cur.v.len())
            .field("contacts", &self.cur.xs.len())
            .finish_non_exhaustive()
    }
}

impl<T: Scalar> Clone for Work<T> {
    /// A fresh work (buffers are scratch; nothing of a solve is carried).
    fn clone(&self) -> Self {
        Work::default()
    }
}

impl<T: Scalar> Work<T> {
    fn solution(&self, e: Ended) -> IslandSolution<'_, T> {
        IslandSolution {
            v: &self.cur.v,
            xs: &self.cur.xs,
            eval: &self.cur.ev,
            iterations: e.iterations,
            residual: e.residual,
            complementarity: e.complementarity,
            capped: e.capped,
        }
    }
}

/// Solves one island from the initial velocity `v0` (island layout)
/// and, where given, initial contact unknowns `x0` (e.g. the solution of
/// a previous candidate round; they must be interior).
pub fn solve_island<'w, 'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: impl Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    w: &'w mut Work<T>,
) -> Result<IslandSolution<'w, T>, SolveError> {
    let sp = p.params;
    let e = solve_island_capped(
        p,
        island,
        v0,
        &x0,
        params,
        sp.max_iterations,
        sp.accept_at_cap,
        false,
        w,
    );
    let e = continue_failed(p, island, v0, params, e, 0, w)?;
    Ok(w.solution(e))
}

/// [`solve_island`] started from the previous step's contact unknowns
/// `x0` (a rollout's contact warm start, [`Params::warm_start_contacts`]),
/// safeguarded: the warm attempt may take at most
/// [`Params::warm_attempt_iterations`] iterations; when it has not
/// converged by then (a contact that opened or closed starts at the wrong
/// corner of its complementarity and the interior point stalls there) or
/// fails, the island is solved again from the default initial point with
/// the full iteration budget. The reported iterations count both attempts.
pub fn solve_island_warm<'w, 'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: impl Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    w: &'w mut Work<T>,
) -> Result<IslandSolution<'w, T>, SolveError> {
    let sp = p.params;
    let cap = params.warm_attempt_iterations.min(sp.max_iterations);
    let spent = if (0..island.contacts.len()).any(|i| x0(i).is_some()) {
        // A large island (the sparse path) goes on past the cap while it
        // converges (see `Params::warm_attempt_iterations`).
        let extend = island.dim() >= SPARSE_MIN_ROWS;
        match solve_island_capped(p, island, v0, &x0, params, cap, false, extend, w) {
            Ok(e) => return Ok(w.solution(e)),
            // Only the iterations actually run count; every failure of
            // the warm attempt falls back to the cold start.
            Err(SolveError::MaxIterations { iters, .. }) => iters,
            Err(_) => 0,
        }
    } else {
        0
    };
    let e = solve_island_capped(
        p,
        island,
        v0,
        &|_| None,
        params,
        sp.max_iterations,
        sp.accept_at_cap,
        false,
        w,
    );
    let e = continue_failed(p, island, v0, params, e, spent, w)?;
    Ok(w.solution(e))
}

/// Smallest reduction `ρ_next / ρ` of the continuation in ρ (after failed
/// stages the reduction is brought towards 1, down to this).
const CONT_MIN_REDUCTION: f64 = 0.9;

/// Iteration cap of one stage of the continuation in ρ.
const CONT_STAGE_CAP: usize = 40;

/// The end of an island's solve `e` (after `spent` iterations of earlier
/// attempts): when it failed at the iteration cap, the island is solved
/// again by continuation in ρ ([`Params::continuation_iterations`]): at
/// [`Params::continuation_from`] from the default initial point, then at
/// smaller ρ, each stage started from the previous stage's solution (ρ
/// multiplied by 0.5, by the square of the last reduction after a stage
/// that converged, at most a hundredfold; after a stage that did not
/// converge within 40 iterations the reduction is brought back to its
/// square root, giving up above 0.9). The last stage is at the step's
/// own ρ, accepted by the step's own convergence test: the answer is a
/// root of the step's residual like any other, and its derivatives are
/// the implicit-function derivatives at that root. Where the continuation
/// does not reach the step's ρ within its budget, the original failure
/// is returned. The iterations of all stages count on top of the failed
/// attempts'.
///
/// Why: an island whose contacts slide in many directions at once (a
/// pyramid of 55 or more spheres at μ = 0.5 settling) stalls at small ρ
/// with a few sliding contacts' friction pinned against the cone, while
/// the same step at ρ = 1e-4 converges in 8 iterations; the path from a
/// larger ρ leads the iterate around the stall.
fn continue_failed<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    params: &Params,
    e: Result<Ended, SolveError>,
    spent: usize,
    w: &mut Work<T>,
) -> Result<Ended, SolveError> {
    let failed = match e {
        Ok(mut e) => {
            e.iterations += spent;
            return Ok(e);
        }
        Err(SolveError::MaxIterations {
            iters,
            residual,
            complementarity,
        }) => SolveError::MaxIterations {
            iters: iters + spent,
            residual,
            complementarity,
        },
        Err(e) => return Err(e),
    };
    let SolveError::MaxIterations { iters: before, .. } = failed else {
        unreachable!()
    };
    let target = p.params.rho;
    let from = params.continuation_from;
    let budget = params.continuation_iterations;
    if budget == 0 || target > 0.1 * from {
        return Err(failed);
    }
    let mut used = 0_usize;
    // The last stage's solution, the next stage's start (this fallback
    // allocates: it runs only after a failed solve).
    let mut start: Option<(DVec<T>, Vec<DVec<T>>)> = None;
    let mut rho = from;
    let mut reduction: f64 = 0.5;
    let mut next = from;
    loop {
        let cap = CONT_STAGE_CAP.min(budget.saturating_sub(used));
        if cap == 0 {
            return Err(failed);
        }
        let sp = crate::contact::SolverParams {
            rho: next,
            accept_at_cap: false,
            ..*p.params
        };
        let ps = StepProblem { params: &sp, ..*p };
        let r = match &start {
            None => solve_island_capped(&ps, island, v0, &|_| None, params, cap, false, false, w),
            Some((v, xs)) => {
                solve_island_capped(&ps, island, v, &|i| xs.get(i), params, cap, false, false, w)
            }
        };
        match r {
            Ok(e) => {
                used += e.iterations;
                if next <= target {
                    return Ok(Ended {
                        iterations: before + used,
                        ..e
                    });
                }
                rho = next;
                match &mut start {
                    Some((v, xs)) => {
                        copy_vec(v, &w.cur.v);
                        copy_vecs(xs, &w.cur.xs);
                    }
                    None => start = Some((w.cur.v.clone(), w.cur.xs.clone())),
                }
                if next < from {
                    reduction = (reduction * reduction).max(1e-2);
                }
            }
            Err(e) => {
                used += match e {
                    SolveError::MaxIterations { iters, .. } => iters,
                    _ => cap,
                };
                // Not even the first stage converged, or the reduction
                // is back near 1: give up.
                reduction = reduction.sqrt();
                if start.is_none() || reduction > CONT_MIN_REDUCTION {
                    return Err(failed);
                }
            }
        }
        next = (rho * reduction).max(target);
    }
}

/// [`solve_island`] with the iteration cap `max_iterations`; at the cap
/// the iterate is returned (flagged `capped`) when `accept_at_cap`, else
/// [`SolveError::MaxIterations`].
#[allow(clippy::too_many_arguments)]
fn solve_island_capped<'x, T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: &DVec<T>,
    x0: &dyn Fn(usize) -> Option<&'x DVec<T>>,
    params: &Params,
    max_iterations: usize,
    accept_at_cap: bool,
    extend_while_converging: bool,
    w: &mut Work<T>,
) -> Result<Ended, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
    // The initial point in the work's buffers (their storage reused).
    w.warm.clear();
    w.warm
        .extend((0..island.contacts.len()).map(|i| x0(i).is_some()));
    copy_vec(&mut w.cur.v, v0);
    w.cur.xs.truncate(island.contacts.len());
    for (i, c) in island.contacts.iter().enumerate() {
        if w.cur.xs.len() == i {
            w.cur.xs.push(DVec::zeros(0));
        }
        let x = &mut w.cur.xs[i];
        match x0(i) {
            Some(x0) => copy_vec(x, x0),
            None => c.law.initial_into(params.initial_scale, x),
        }
    }
    {
        let Work {
            cur,
            trial,
            best,
            center,
            dv,
            dxs,
            dx_aff,
            rc,
            dir,
            ..
        } = &mut *w;
        for pt in [trial, best, center] {
            pt.assign(&cur.v, &cur.xs);
        }
        copy_vec(dv, &cur.v);
        for b in [dxs, dx_aff, rc, &mut dir.ainv_r] {
            copy_vecs(b, &cur.xs);
        }
    }
    let warm = std::mem::take(&mut w.warm);
    // Start on the linear equalities where the cones allow it: the gap
    // slack at the gap of the initial velocity (when larger than the
    // scale), β₀ = μγ, η_t = v_t with ψ = ‖v_t‖ + scale (exact cone),
    // ηₖ = ψ + dₖᵀv_t with ψ = ‖v_t‖₁ + scale and s_ψ = μγ − Σβₖ > 0
    // (pyramid).
    {
        let cur = &mut w.cur;
        evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        let scale = T::from_re(params.initial_scale);
        for (((x, ce), cand), _) in cur
            .xs
            .iter_mut()
            .zip(&cur.ev.contacts)
            .zip(&island.contacts)
            .zip(&warm)
            .filter(|w| !*w.1)
        {
            let y = ce.y;
            if y[0].re() > x[1].re() {
                x[1] = y[0];
            }
            match cand.law {
                Law::Frictionless => {}
                Law::Exact => {
                    x[2] = cand.mu * x[0];
                    x[6] = y[1];
                    x[7] = y[2];
                    x[5] = safe_norm(&Vec3::new(y[1], y[2], T::zero())) + scale;
                }
                Law::Pyramid => {
                    let psi = y[1].abs() + y[2].abs() + scale;
                    let beta = cand.mu * x[0] * T::from_re(0.125);
                    for k in 0..4 {
                        x[2 + k] = beta;
                    }
                    x[6] = psi + y[1];
                    x[7] = psi - y[1];
                    x[8] = psi + y[2];
                    x[9] = psi - y[2];
                    x[10] = psi;
                    x[11] = cand.mu * x[0] * T::from_re(0.5);
                }
            }
        }
        // (Every contact warm: nothing moved, the evaluation stands.)
        if warm.iter().any(|w| !*w) {
            evaluate_into(p, island, &cur.v, &cur.xs, &mut cur.ev)?;
        }
        if params.warm_recentre_friction && warm.iter().any(|w| *w) {
            recentre_friction(island, &mut cur.ev, &mut cur.xs, &warm, rho);
        }
    }
    w.warm = warm;
    let mut iter = 0;
    // Chord steps (`Params::reuse_factorization`): `reuse` when the
    // current factorization may serve the next step, `chords` the steps it
    // has served.
    let reuse_allowed = params.reuse_factorization && island.dim() >= SPARSE_MIN_ROWS;
    let mut reuse = false;
    let mut chords = 0;
    // A warm attempt of a large island runs past its cap while its last
    // step was long (it is converging), up to the solve's own cap.
    let mut last_alpha = 0.0;
    // The contact blocks of the Newton matrix: closed form while the
    // iteration makes progress, exact once a step is short (see
    // `Params::exact_jacobian_below`). Decided on primal values, so a dual
    // scalar follows the f64 iterates exactly.
    let mut short_steps = 0;
    let mut lin = if params.exact_jacobian_below > 1.0 {
        Linearization::Exact
    } else {
        Linearization::ClosedForm
    };
    // The measures at ρ of the current point when a chord step has just
    // computed them (the same evaluation, not repeated).
    let mut known: Option<Measures> = None;
    loop {
        let m = known
            .take()
            .unwrap_or_else(|| measures(island, &w.cur.ev, &w.cur.xs, rho));
        if trace_enabled() {
            trace_iteration(
                island, &w.cur.ev, &w.cur.xs, rho, iter, &w.warm, last_alpha, lin, &m,
            );
        }
        if m.eq <= sp.tolerance && m.comp_dev <= params.complementarity_tolerance * rho {
            // Polish: full Newton steps on r_ρ (unscaled cone rows), the
            // same in every scalar: at least `polish_steps`, with the loop's
            // linearization, until the residual is at round-off
            // (`1e-6 · tolerance`; finite differences of a step divide the
            // solution's error by their step), at most four more, the last
            // two exact (a closed-form matrix contracts linearly).
            // In f64 (no derivative parts to make exact) the steps stop as
            // soon as the residual is at round-off, which a warm-started
            // resting contact already is.
            let tight = sp.tolerance * 1e-6;
            let max_steps = params.polish_steps + 4;
            let required = if T::DERIVATIVE_ORDER == 0 {
                0
            } else {
                params.polish_steps
            };
            let mut k = 0;
            // Chord steps here (f64, islands of at least
            // `SPARSE_MIN_ROWS` rows): first on the loop's own
            // factorization (scaled rows) while it may still serve, then on
            // the first polish step's (unscaled rows, at a point next to
            // the root). Tried on islands of every size, chord steps on the
            // loop's factorization made `dualsim check` on
            // `examples/scenes/capsule_pile.toml` (small islands) fail its
            // finite-difference comparison (8e-4 against 1e-5) though every
            // solve ended at round-off, not explained; hence the size gate.
            let polish_chord_allowed = reuse_allowed && T::DERIVATIVE_ORDER == 0;
            let mut polish_chord = polish_chord_allowed && reuse;
            let mut polish_nt = params.nesterov_todd;
            // Each kept chord step shrinks the merit 8-fold, so the few
            // left to reach round-off are not capped by the loop's count.
            chords = 0;
            // Chord steps go on to half of `tight`: they converge
            // linearly, and stopping just below `tight` left a 6 × 6
            // layer's rollout 8e-13 away from the one that refactors
            // (4e-14 at half of it; a Newton step lands at round-off),
            // while a hundredth of it is below the round-off the chord
            // steps reach on the 1045-contact layer (3e-15), which cost
            // one rejected chord step per solve.
            let chord_tight = tight * 0.5;
            while k < max_steps {
                let Work {
                    cur,
                    trial,
                    dv,
                    dxs,
                    rc,
                    dir,
                    fac,
                    ..
                } = &mut *w;
                let mm = known
                    .take()
                    .unwrap_or_else(|| measures(island, &cur.ev, &cur.xs, rho));
                if polish_chord && (mm.eq > chord_tight || mm.comp_dev > chord_tight) {
                    let ftb = params.fraction_to_boundary;
                    let m0 = mm.merit;
                    let (c, tr) = (&mut chords, &mut *trial);
                    known = chord_step(
                        p, island, rho, polish_nt, ftb, m0, cur, tr, c, fac, rc, dir, dv, dxs,
                    );
                    if known.is_some() {
                        polish_chord = chords < MAX_CHORD_STEPS;
                        continue;
                    }
                }
                if k >= required && mm.eq <= tight && mm.comp_dev <= tight {
                    break;
                }
                let l = if k + 2 >= max_steps {
                    Linearization::Exact
                } else {
                    lin
                };
                k += 1;
                factor_into(p, island, &cur.ev, &cur.v, &cur.xs, false, l, fac)?;
                local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
                direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
                if boundary_step(island, &cur.xs, dxs) <= 1.0 {
                    break;
                }
                if trial
                    .step_from(p, island, cur, dv, dxs, 1.0, false)
                    .is_err()
                {
                    break;
                }
                std::mem::swap(cur, trial);
                polish_chord = polish_chord_allowed;
                polish_nt = false;
                chords = 0;
            }
            // Then, in a dual scalar, one Newton step per derivative order
            // with the exact Jacobian that moves only the derivative parts
            // (the primal stays where the f64 solve puts it): at the root,
            // each makes one more derivative order exact.
            for _ in 0..T::DERIVATIVE_ORDER {
                let Work {
                    cur,
                    trial,
                    dv,
                    dxs,
                    rc,
                    dir,
                    fac,
                    ..
                } = &mut *w;
                let l = Linearization::Exact;
                factor_into(p, island, &cur.ev, &cur.v, &cur.xs, false, l, fac)?;
                local_residuals(island, &cur.ev, &cur.xs, T::from_re(rho), None, false, rc);
                direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
                if trial.step_from(p, island, cur, dv, dxs, 1.0, true).is_err() {
                    break;
                }
                std::mem::swap(cur, trial);
            }
            let m = measures(island, &w.cur.ev, &w.cur.xs, rho);
            if trace_enabled() {
                eprintln!(
                    "ipm: converged after polishing: eq {:.2e} comp_dev {:.2e}, {k} Newton steps",
                    m.eq, m.comp_dev
                );
            }
            return Ok(Ended {
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: false,
            });
        }
        let extend =
            extend_while_converging && last_alpha >= WARM_PROGRESS_STEP && iter < sp.max_iterations;
        if iter >= max_iterations && accept_at_cap && !extend {
            return Ok(Ended {
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if iter >= max_iterations && !extend {
            return Err(SolveError::MaxIterations {
                iters: iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        iter += 1;
        let nt = params.nesterov_todd;
        let Work {
            cur,
            trial,
            best,
            center,
            dv,
            dxs,
            dx_aff,
            rc,
            dir,
            fac,
            plain,
            warm: _,
        } = &mut *w;
        let nu = mean_comp(island, &cur.xs, None);
        // A chord step on the previous iteration's factorization
        // (`Params::reuse_factorization`): kept when it contracts the
        // residual by `CHORD_CONTRACTION`, else this iteration factors.
        // Tried near the final phase only (ν within twice ρ: the mean
        // wanders around ρ by the complementarity deviations), where the
        // iteration's own target is ρ or next to it.
        if reuse && nu <= 2.0 * rho {
            let ftb = params.fraction_to_boundary;
            let (c, tr) = (&mut chords, &mut *trial);
            known = chord_step(
                p, island, rho, nt, ftb, m.merit, cur, tr, c, fac, rc, dir, dv, dxs,
            );
            if known.is_some() {
                reuse = chords < MAX_CHORD_STEPS;
                last_alpha = 1.0;
                continue;
            }
        }
        chords = 0;
        factor_into(p, island, &cur.ev, &cur.v, &cur.xs, nt, lin, fac)?;
        // Predictor (affine scaling, κ = 0), for the centering σ; at ν ≤ ρ
        // the target is ρ whatever σ is (σ ≤ 1), and the solve is skipped.
        let sigma = if nu <= rho {
            0.0
        } else {
            local_residuals(island, &cur.ev, &cur.xs, T::zero(), None, nt, rc);
            direction(island, &cur.ev, fac, rc, dir, dv, dx_aff)?;
            let alpha_aff = boundary_step(island, &cur.xs, dx_aff).min(1.0);
            let nu_aff = mean_comp(island, &cur.xs, Some((dx_aff, alpha_aff)));
            if nu > 0.0 {
                (nu_aff / nu).clamp(0.0, 1.0).powi(3)
            } else {
                0.0
            }
        };
        let kappa = (sigma * nu).max(rho);
        // Corrector (centering + second-order term). Once the target has
        // reached ρ the affine term `dz ∘ ds` is of the order of ρ itself
        // and would keep the iterate off the central point, so the final
        // phase takes Newton steps on r_ρ (with their own second-order
        // term, `Params::final_corrector`).
        let second_order = sigma * nu > rho;
        // (At κ = ρ the loop's own measures of this point.)
        let merit0 = if kappa == rho {
            m.merit
        } else {
            measures(island, &cur.ev, &cur.xs, kappa).merit
        };
        // Backtracking line search on ‖r_κ‖² along the corrector; when it
        // finds no sufficient decrease (the second-order term can make the
        // corrector an ascent direction far from the solution), along the
        // pure Newton direction of r_κ; failing that, the shortest trial
        // of the Newton direction is taken.
        // (second-order term, Nesterov–Todd scaled): the corrector, then the
        // Newton direction, then (when NT scaling is on) the unscaled
        // Newton direction, which is a descent direction of ‖r_κ‖².
        // Final phase: the Newton direction of r_ρ into `dx_aff`, whose own
        // second-order term the first trial direction then carries
        // (`Params::final_corrector`).
        let final_corrector = !second_order && (params.final_corrector || reuse_allowed);
        if final_corrector {
            local_residuals(island, &cur.ev, &cur.xs, T::from_re(kappa), None, nt, rc);
            direction(island, &cur.ev, fac, rc, dir, dv, dx_aff)?;
        }
        let with_term = second_order || final_corrector;
        let dirs = [
            Some((with_term, nt)),
            with_term.then_some((false, nt)),
            nt.then_some((false, false)),
        ];
        /// Where the point to move to is.
        #[derive(PartialEq)]
        enum Taken {
            Trial,
            Center,
        }
        let mut taken = None;
        let mut best_merit: Option<f64> = None;
        let mut accepted_alpha = 0.0;
        let mut plain_ready = false;
        let mut accepted_fac = false;
        for (so, scaled) in dirs.into_iter().flatten() {
            let corrector = so.then_some(dx_aff.as_slice());
            local_residuals(
                island,
                &cur.ev,
                &cur.xs,
                T::from_re(kappa),
                corrector,
                scaled,
                rc,
            );
            let f = if scaled == nt {
                &*fac
            } else {
                if !plain_ready {
                    factor_into(p, island, &cur.ev, &cur.v, &cur.xs, scaled, lin, plain)?;
                    plain_ready = true;
                }
                &*plain
            };
            direction(island, &cur.ev, f, rc, dir, dv, dxs)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                if trial
                    .step_from(p, island, cur, dv, dxs, alpha, false)
                    .is_ok()
                {
                    let merit = measures(island, &trial.ev, &trial.xs, kappa).merit;
                    if merit <= (1.0 - params.armijo * alpha) * merit0 {
                        accepted_alpha = alpha;
                        accepted_fac = scaled == nt;
                        taken = Some(Taken::Trial);
                        break;
                    }
                    if best_merit.is_none_or(|m| merit < m) {
                        best_merit = Some(merit);
                        std::mem::swap(best, trial);
                    }
                }
                alpha *= params.backtrack_factor;
            }
            if taken.is_some() {
                break;
            }
        }
        // One short step is ordinary interior-point progress (the first
        // iterations of a resting contact take one); two in a row mean the
        // closed-form blocks may be stalling the iterate.
        if accepted_alpha < params.exact_jacobian_below {
            short_steps += 1;
            if short_steps >= 2 {
                lin = Linearization::Exact;
            }
        } else {
            short_steps = 0;
        }
        if accepted_alpha < params.recenter_below {
            // Blocked against a cone boundary (a badly centred pair): take
            // a pure centering step towards κ = ν instead, accepted without
            // the merit test, so the next iterations can make progress.
            let kc = T::from_re(nu.max(rho));
            local_residuals(island, &cur.ev, &cur.xs, kc, None, nt, rc);
            direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                if center
                    .step_from(p, island, cur, dv, dxs, alpha, false)
                    .is_ok()
                {
                    taken = Some(Taken::Center);
                    break;
                }
                alpha *= params.backtrack_factor;
            }
        }
        last_alpha = accepted_alpha;
        // The factorization may be reused by the next iteration when it
        // is the final phase's (the target at ρ, no second-order term)
        // and its own direction was taken in full.
        reuse = reuse_allowed
            && !second_order
            && taken == Some(Taken::Trial)
            && accepted_alpha == 1.0
            && accepted_fac;
        match taken {
            Some(Taken::Trial) => std::mem::swap(cur, trial),
            Some(Taken::Center) => std::mem::swap(cur, center),
            None if best_merit.is_some() => std::mem::swap(cur, best),
            // Every trial point failed to evaluate.
            None => {
                return Err(SolveError::Singular(
                    "line search: no trial point could be evaluated",
                ))
            }
        }
    }
}

/// The exact Jacobian `∂r_ρ/∂(v⁺, x)` of one island's residual at a point,
/// factorized by the KKT reduction of the [module docs](super) (the same
/// reduced system the solver's final Newton steps use, with unscaled
/// cone rows), for solves with many right-hand sides: the
/// implicit-function derivatives of a step.
///
/// With `J = [H − G, −Σ WᵀE; C K, A]`, a solve `J [X_v; X_c] = [B_d; B_c]`
/// is
///
/// ```text
/// (H − G + Σ_c W_cᵀ E A_c⁻¹ C_c K_c) X_v = B_d + Σ_c W_cᵀ E A_c⁻¹ B_c,
/// X_c = A_c⁻¹ (B_c − C_c K_c X_v),
/// ```
///
/// one LU of the reduced `6 n_b × 6 n_b` matrix and one of each contact's
/// `A_c`, shared by every column.
pub struct IslandJacobian {
    ev: Eval<f64>,
    fac: Factored<f64>,
}

impl IslandJacobian {
    /// Evaluates and factors the island's Jacobian at velocity `v` (island
    /// layout) and contact unknowns `xs`.
    pub fn new(
        p: &StepProblem<'_, f64>,
        island: &Island<f64>,
        v: &DVec<f64>,
        xs: &[DVec<f64>],
    ) -> Result<Self, SolveError> {
        let ev = evaluate(p, island, v, xs)?;
        let fac = factor(p, island, &ev, v, xs, false, Linearization::Exact)?;
        Ok(IslandJacobian { ev, fac })
    }

    /// Solves `J [X_v; X_c] = [B_d; B_c]` for every column at once: `bd`
    /// holds the dynamics rows (island layout, [`Island::dim`] rows), `bc[c]`
    /// contact `c`'s rows (`law.size()` each). Returns `X_v` and, when
    /// `contacts` is set, `X_c` in the same layout (`X_c` costs one more
    /// pass over the contacts; the implicit-function derivative of a step
    /// needs only `X_v`).
    ///
    /// Columns where `B_c` is zero (e.g. derivatives with respect to
    /// velocities and controls, or to the configuration of bodies not in
    /// the contact) skip the contact's `A_c⁻¹ B_c`. With more columns than
    /// the reduced system has rows, `X_v` is `R⁻¹` (from the LU factors)
    /// times the reduced right-hand side, one matrix product, instead of a
    /// pair of triangular solves per column.
    pub fn solve(
        &self,
        island: &Island<f64>,
        bd: &DMat<f64>,
        bc: &[DMat<f64>],
        contacts: bool,
    ) -> Result<(DMat<f64>, Option<Vec<DMat<f64>>>), SolveError> {
        let m = bd.ncols();
        let singular = || SolveError::Singular("contact block");
        let mut rhs = bd.clone();
        // A_c⁻¹ B_c column by column, on the non-zero columns of B_c (all
        // m columns kept, zero elsewhere, only when `contacts` asks for
        // X_c), in two reused column buffers.
        let mut ainv_b: Vec<DMat<f64>> = Vec::with_capacity(if contacts { bc.len() } else { 0 });
        let (mut bj, mut uj) = (DVec::zeros(0), DVec::zeros(0));
        for (c, (cand, ce)) in island.contacts.iter().zip(&self.ev.contacts).enumerate() {
            let n = bc[c].nrows();
            if bj.len() != n {
                bj = DVec::zeros(n);
                uj = DVec::zeros(n);
            }
            let mut u_all = contacts.then(|| DMat::zeros(n, m));
            for j in 0..m {
                let col = bc[c].column(j);
                if col.iter().all(|x| *x == 0.0) {
                    continue;
                }
                bj.copy_from(&col);
                if !self.fac.local[c].solve_into(&bj, &mut uj) {
                    return Err(singular());
                }
                let eu = cand.law.impulse(&uj);
                for (lw, w) in &ce.blocks {
                    let un = &island.units[*lw];
                    for i in 0..un.size() {
                        rhs[(un.offset + i, j)] +=
                            w[(0, i)] * eu[0] + w[(1, i)] * eu[1] + w[(2, i)] * eu[2];
                    }
                }
                if let Some(u) = &mut u_all {
                    u.set_column(j, &uj);
                }
            }
            if let Some(u) = u_all {
                ainv_b.push(u);
            }
        }
        let xv = if m > rhs.nrows() {
            let inv = self
                .fac
                .reduced
                .try_inverse()
                .ok_or(SolveError::Singular("reduced system"))?;
            inv * rhs
        } else {
            self.fac
                .reduced
                .solve_mat(&rhs)
                .ok_or(SolveError::Singular("reduced system"))?
        };
        if !contacts {
            return Ok((xv, None));
        }
        let mut xc = Vec::with_capacity(bc.len());
        for (c, u) in ainv_b.into_iter().enumerate() {
            let mut dy = DMat::zeros(3, m);
            for (lk, k) in &self.fac.k_blocks[c] {
                let un = &island.units[*lk];
                let kd = DMat::from_fn(3, un.size(), |i, j| k[(i, j)]);
                dy += kd * xv.rows(un.offset, un.size());
            }
            xc.push(u - self.fac.local[c].ainv_c() * dy);
        }
        Ok((xv, Some(xc)))
    }
}
