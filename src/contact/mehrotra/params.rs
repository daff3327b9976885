use super::*;

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
