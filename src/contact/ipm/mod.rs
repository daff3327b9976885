//! `ipm`: primal–dual interior point on the nonlinear complementarity
//! problem of a time step (Dojo, Howell et al. 2022; Silico, Le Cleac'h et
//! al. 2023, §III-B).
//!
//! # The step residual
//!
//! Unknowns: the next velocity `v⁺` and, per contact candidate `c`, the
//! normal impulse `γ`, its slack `s` and the friction variables. With
//! `q⁺ = q ⊕ h v⁺`, the gap `φ_c(q⁺)` (nonlinear, re-evaluated by the
//! closed-form pair at every iterate), the tangential velocity
//! `v_t = [t₁ t₂]ᵀ (v_a(p_a) − v_b(p_b))` of the contact points at `v⁺`
//! and the contact frame `(n, t₁, t₂)` at `q⁺`:
//!
//! ```text
//! r_dyn(v⁺) − Σ_c W_cᵀ (γ, b₁, b₂) = 0          (dynamics::free, impulse units)
//! s − φ_c(q⁺(v⁺)) = 0,        γ s = κ          (impact, orthant)
//! ```
//!
//! Exact Coulomb friction (maximum dissipation as a second-order cone
//! complementarity, Dojo/Silico): `β = (β₀, b) ∈ Q³`, `η = (ψ, η_t) ∈ Q³`,
//!
//! ```text
//! β₀ − μ γ = 0,   η_t − v_t = 0,   β ∘ η = κ e,   e = (1, 0, 0)
//! ```
//!
//! (`β ∘ η = 0` with both in the cone means `‖b‖ ≤ μγ`, and when sliding
//! `b = −μγ v_t/‖v_t‖`). Pyramidal friction (`FrictionCone::Pyramid`,
//! directions `d = ±t₁, ±t₂`): `βₖ ≥ 0`, `ηₖ = ψ + dₖᵀ v_t ≥ 0`,
//! `s_ψ = μγ − Σβₖ ≥ 0`, `βₖ ηₖ = κ`, `ψ s_ψ = κ`, tangential impulse
//! `Σ βₖ dₖ`. `W_c` maps the contact-frame impulse to generalized impulses
//! (rows `[n; L(hω)ᵀ (r × n)] = ∂φ/∂v⁺ / h` and `[t; r × t]` on body a,
//! the negative on body b, `r` the lever arm at `q⁺`, `L` the differential
//! of the retraction; see below). The tangent frame is built from a world
//! axis fixed per candidate for the whole step
//! (`collision::frame::tangent_basis_from`), so it is smooth in the
//! iterates. A contact with `μ = 0` has no friction variables.
//!
//! The solution returned is the point of the central path with `κ = ρ`
//! (`SolverParams::rho`): complementarity is relaxed to ρ, which makes the
//! solution unique and smooth in the problem data (Silico). Small ρ is
//! accurate forward simulation; the gap of a resting contact is `ρ/γ`.
//!
//! # The solver: Mehrotra predictor–corrector
//!
//! Each iteration linearizes the residual in its primal values:
//! `∂r_dyn/∂v⁺` analytically (`dynamics::free::rotational_jacobian`; a
//! robot's `M(q)` by CRBA) and the contact blocks `K = ∂y/∂v⁺` in closed
//! form from the impulse map, `K = diag(h, 1, 1) W`. The normal row of
//! `W` is `∂φ/∂v⁺ / h = [n; L(hω)ᵀ (r × n)]`, `L` the differential of the
//! retraction (so the normal impulse is variationally consistent with the
//! gap at `q⁺`, and that row of `K` is exact); the friction rows are
//! `∂v_t/∂v⁺` with the contact frame and the lever arms held at the
//! iterate. What this leaves out — the motion of the witness points, lever
//! arms and contact frame with `q⁺`, and the geometric stiffness
//! `G = ∂(Wᵀ f)/∂v⁺` — is of order `h ‖f‖ ‖r‖` against `M`: the iteration
//! converges to the same root at a fast linear rate, without a single
//! dual-number evaluation (which was 58 % of a resting-box step). Once two
//! consecutive iterations accept a step shorter than
//! `Params::exact_jacobian_below` (an iterate pinned against a cone, where
//! the missing terms can stall it), the rest of the solve uses the exact `K` and `G` by one
//! forward-mode dual evaluation of the contact kinematics per contact (see
//! [`kinematics`]); the implicit-function derivatives always do. Then
//!
//! 1. the affine direction (`κ = 0`) and the largest step `α_aff ≤ 1` to
//!    the cone boundaries;
//! 2. `σ = clamp(ν_aff/ν, 0, 1)³` with `ν` the mean complementarity
//!    (`Σ zᵢsᵢ + Σ zᵀs` over the barrier degree) and the centering target
//!    `κ = max(σ ν, ρ)`;
//! 3. the corrector with the same factorization, complementarity rows
//!    `z ∘ s + dz_aff ∘ ds_aff − κ e` (once `σν ≤ ρ` the second-order term
//!    is dropped: it is of the order of ρ and would keep the iterate off
//!    the central point);
//! 4. `α = min(1, τ α_max)` (fraction to the boundary, τ = 0.95 for the
//!    orthant and the second-order cone alike) and backtracking on the
//!    residual norm `‖r_κ‖₂` (Armijo). If the corrector gives no decrease,
//!    the plain Newton direction of `r_κ` is tried, and (with Nesterov–Todd
//!    scaling on) the unscaled Newton direction, which is a descent
//!    direction of `‖r_κ‖²`.
//!
//! Second-order-cone rows use Nesterov–Todd scaling for the search
//! directions (`λ = W η = W⁻¹ β`, rows `Arw(λ)(W⁻¹ dβ + W dη) = κe − λ∘λ`,
//! [`cone::nt_scaling`]); without it the Jordan-product linearization
//! stalls against the cone boundary when a contact slides at small ρ.
//!
//! It stops when the equality residual is `≤ tolerance` (∞-norm) and the
//! complementarity rows are within `complementarity_tolerance · ρ` of
//! `ρ e`, or fails with `SolveError::MaxIterations`. Every decision
//! (candidates, step lengths, centering, convergence, fallbacks) is taken
//! on primal values, so the same iterates run in a dual scalar (the
//! `unrolled` derivative method); the Newton matrix is primal (lifted into
//! `T` with zero derivative parts), which does not change the fixed point
//! of the iteration or of its derivative parts.
//!
//! After convergence, Newton steps with the loop's matrix tighten the
//! primal residual to round-off: at least `polish_steps` of them in a
//! scalar with derivative parts, none when the residual already is at
//! round-off in `f64` (a warm-started resting contact); then, for a
//! scalar with derivative parts
//! ([`Scalar::DERIVATIVE_ORDER`](crate::Scalar::DERIVATIVE_ORDER) `= k`),
//! `k` Newton steps with the exact Jacobian that move only the derivative
//! parts (the primal stays bit for bit where the f64 solve puts it): at
//! the root each step makes one more derivative order exact, which is
//! what the `unrolled` method's gradients and Hessians rely on.
//!
//! # The KKT reduction
//!
//! Linearized, the system is `[H, −Σ WᵀE; C K, A] [dv; dx] = −[r_d; r_c]`,
//! block diagonal in the contact unknowns: contact `c` has a small local
//! Jacobian `A_c` (2 × 2, 8 × 8 or 12 × 12) and sees `v⁺` only through
//! `y_c = (φ, v_t1, v_t2)`, `dy_c = K_c dv`. Eliminating `dx_c =
//! −A_c⁻¹ (r_c + C_c K_c dv)` leaves the reduced system in `v⁺`:
//!
//! ```text
//! (H + Σ_c W_cᵀ E A_c⁻¹ C_c K_c) dv = −r_d − Σ_c W_cᵀ E A_c⁻¹ r_c,
//! ```
//!
//! `H` block diagonal per unit; each contact adds a block per pair of its
//! units. A unit is a free body (6 velocities, `H` the 6 × 6 Jacobian of
//! `dynamics::free`) or a whole robot (all its `n` joint velocities,
//! `H = M(q)`, see [`robot`]). Units are further split into islands
//! (connected by contact candidates) that are solved independently; units
//! without a candidate take the free-flight velocity (robots: the
//! semi-implicit Euler step of `dynamics::articulated`), so with no
//! candidate at all the step is exactly `FreeFlight`.
//!
//! # Robots
//!
//! Contacts on robot links (the [`AttachedShape`](crate::geometry::AttachedShape)s
//! of `StepProblem::link_shapes`, several per link allowed) against static
//! geometry and free bodies are candidates like a free body's; the robot's rows are
//! `M(q)(v⁺ − v) − h(u − b(q, v)) − Σ W_cᵀ f_c`, with
//! `W_c = [nᵀ J_i D; t₁ᵀ J_i; t₂ᵀ J_i]` from the world point Jacobian of
//! the witness point at `q⁺` (`D` the differential of `q ⊕ h v⁺`, the
//! identity for revolute and prismatic joints), so the normal row is again
//! `∂φ/∂v⁺ / h` ([`robot`]); against a free body, the body's side is
//! the free-body one above. Fixed- and floating-base robots are units (a
//! floating base's six velocities with its joints'; lone free bodies are
//! free-body units); link–link contact is not modelled.
//!
//! # Candidates
//!
//! At `q`, a sweep and prune over bounding boxes (`collision::broad_phase`)
//! and the closed-form pairs select features whose gap is below
//! `margin + h (speed bound of both bodies) + h² ‖g‖` (a speculative
//! margin, so a falling body is caught before it passes through). Their
//! gaps are then re-evaluated at `q⁺(v⁺)` inside the solver. After a
//! solve, features that were no candidate but penetrate at `q⁺` are added
//! and the step is solved again (`max_candidate_rounds`).
//!
//! No shape pair is skipped. Pairs with a closed form
//! ([`collision::pair_features`](crate::collision::pair_features):
//! sphere, box and capsule against a plane; sphere–sphere, sphere–capsule,
//! capsule–capsule, sphere–box, box–box) give one candidate per feature
//! (box vertex, capsule end, box–box vertex, edge point or edge–edge
//! feature of the clipped contact face). Every other pair — any pair with a
//! cylinder, cone, ellipsoid, polytope, padded polygon or bundle, or with
//! static geometry other than a plane — is split into convex parts and
//! each nearby pair of parts is a candidate whose gap is the conic
//! proximity `φ = α* − 1` of the parts, re-solved at every iterate (as in
//! `bilevel`), its conic program relaxed to `10 ρ` so that a
//! face-to-face contact has a smooth gap ([`conic_pairs`]). The same holds
//! for robot link shapes. Point clouds have neither form: a problem with one
//! is refused with `SolveError::Unsupported` before anything is solved
//! ([`conic_pairs::refuse_point_clouds`]).
//!
//! # Initial point
//!
//! `v⁺₀ = v` (warm start) or the free-flight velocity; every cone variable
//! at `initial_scale · e`, then the linear equalities are satisfied where
//! the cones allow it (`s = φ` when the gap is larger than the scale,
//! `β₀ = μγ`, `η_t = v_t`, `ψ = ‖v_t‖ + scale`).

mod backend;
pub mod cone;
pub mod conic_pairs;
pub mod kernels;
pub mod kinematics;
pub mod partials;
pub mod residual;
pub mod robot;
pub mod solve;

use self::conic_pairs::near_part_pairs;
use self::residual::{
    body_pose, Candidate, CandidateKey, ConicParts, Island, Law, Partner, Unit, UnitKind,
};
use self::robot::robot_units;
use super::{ContactImpulse, FrictionCone, SolveError, SolveStats, StepProblem, StepSolution};
use crate::collision::broad_phase::{sweep_and_prune, Aabb};
use crate::collision::frame::least_aligned_axis;
use crate::collision::pair_features;
use crate::contact::silico::pairs::conic_bounding_radius;
use crate::dynamics::free::{free_flight_velocity, integrate_model, NewtonParams};
use crate::geometry::Shape;
use crate::math::DVec;
use crate::math::Pose;
use crate::Scalar;

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
    /// a larger one only wastes iterations.
    pub warm_attempt_iterations: usize,
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
            nesterov_todd: true,
            newton: NewtonParams::default(),
            max_candidate_rounds: 4,
            polish_steps: 2,
            exact_jacobian_below: 0.3,
            restart_after: 10,
            restart_step: 0.2,
            restart_scale: 1.0,
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

/// The interior-point contact backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ipm {
    /// Tuning.
    pub params: Params,
}

/// Speed bound of a body's surface (‖ṗ‖ + ‖ω‖ R) on primal values.
fn speed_bound<T: Scalar>(p: &StepProblem<'_, T>, i: usize, radius: f64) -> f64 {
    let k = p.model.bodies[i].idx_v;
    let lin = (0..3).map(|d| p.v[k + d].re().powi(2)).sum::<f64>().sqrt();
    let ang = (3..6).map(|d| p.v[k + d].re().powi(2)).sum::<f64>().sqrt();
    lin + ang * radius
}

/// Radius of the broad phase's ball about a shape's origin: its bounding
/// radius, or (a shape with no bounding ball, e.g. an open polytope) a
/// ball that meets everything.
fn shape_radius<T: Scalar>(s: &Shape<T>) -> f64 {
    conic_bounding_radius(s).unwrap_or(1e9)
}

/// Contact candidates at `q` (see the module docs): every supported
/// feature whose gap at the start of the step is below
/// `margin + reach_a + reach_b`, with `reach = h (‖ṗ‖ + ‖ω‖ R) + h² ‖g‖`
/// (for a link shape, `ṗ` and `ω` of the link at the shape's origin).
pub fn candidates<T: Scalar>(p: &StepProblem<'_, T>, params: &Params) -> Vec<Candidate<T>> {
    let h = p.h.re();
    let g = p.gravity.map(|x| x.re()).norm();
    let reach: Vec<f64> = (0..p.model.bodies.len())
        .map(|i| match &p.shapes[i] {
            Some(s) => h * speed_bound(p, i, conic_bounding_radius(s).unwrap_or(0.0)) + h * h * g,
            None => 0.0,
        })
        .collect();
    let link_reach: Vec<f64> = if p.link_shapes.is_empty() {
        Vec::new()
    } else {
        let mut data = p.model.data();
        crate::dynamics::kinematics::forward_kinematics(p.model, &mut data, p.q, Some(p.v));
        p.link_shapes
            .iter()
            .map(|ls| {
                let r = conic_bounding_radius(&ls.shape).unwrap_or(0.0);
                let c = (data.omi[ls.body] * ls.pose).translation.map(|x| x.re());
                let ov = data.ov[ls.body].map(|x| x.re());
                let ang = crate::math::Vec3::new(ov[3], ov[4], ov[5]);
                let lin = crate::math::Vec3::new(ov[0], ov[1], ov[2]) + ang.cross(&c);
                h * (lin.norm() + ang.norm() * r) + h * h * g
            })
            .collect()
    };
    detect(p, p.q, &reach, &link_reach, params.margin)
}

/// Features whose gap at configuration `q` is below
/// `margin + reach_a + reach_b` (broad phase on bounding balls inflated by
/// the same amounts). `link_reach` is per link shape (empty: zero).
/// Link shapes (of links of robots that are island units,
/// [`robot::robot_units`]) are tested against static geometry and free
/// bodies.
pub fn detect<T: Scalar>(
    p: &StepProblem<'_, T>,
    q: &DVec<T>,
    reach: &[f64],
    link_reach: &[f64],
    margin: f64,
) -> Vec<Candidate<T>> {
    let nb = p.model.bodies.len();
    let mut out = Vec::new();
    // One pair of shapes: its closed-form features below `limit`, or (no
    // closed form) its pairs of convex parts that may come within `limit`
    // (`conic_pairs`). Never skipped.
    let smoothing = conic_pairs::smoothing(p.params.rho);
    let mut push = |a: usize,
                    link: Option<usize>,
                    b: Partner,
                    sa: &Shape<T>,
                    pa: &Pose<T>,
                    sb: &Shape<T>,
                    pb: &Pose<T>,
                    limit: f64| {
        let mu = match b {
            Partner::Body(j) => p
                .friction_combine
                .apply(p.materials[a].friction, p.materials[j].friction),
            Partner::Static(j) => p
                .friction_combine
                .apply(p.materials[a].friction, p.statics[j].material.friction),
        };
        let law = if mu.re() <= 0.0 {
            Law::Frictionless
        } else {
            match p.friction_cone {
                FrictionCone::Exact => Law::Exact,
                FrictionCone::Pyramid => Law::Pyramid,
            }
        };
        let closed = if conic_pairs::near_parallel_capsules(sa, pa, sb, pb) {
            None
        } else {
            pair_features(sa, pa, sb, pb)
        };
        match closed {
            Some(list) => {
                for &(feature, ref c) in &list {
                    if c.gap.re() < limit {
                        let axis = least_aligned_axis(&c.normal);
                        out.push(Candidate {
                            a,
                            link,
                            b,
                            feature,
                            mu,
                            law,
                            axis,
                            parts: None,
                        });
                    }
                }
            }
            None => {
                let (sa, pa, sb, pb) = (
                    sa.cast::<f64>(),
                    pa.cast::<f64>(),
                    sb.cast::<f64>(),
                    pb.cast::<f64>(),
                );
                for pp in near_part_pairs(&sa, &pa, &sb, &pb, limit) {
                    out.push(Candidate {
                        a,
                        link,
                        b,
                        feature: pp.feature,
                        mu,
                        law,
                        axis: pp.axis,
                        parts: Some(ConicParts {
                            part_a: pp.part_a,
                            part_b: pp.part_b,
                            smoothing,
                        }),
                    });
                }
            }
        }
    };
    // Bodies against static geometry (few statics: every pair).
    for i in 0..nb {
        let Some(sa) = &p.shapes[i] else { continue };
        let pose = body_pose(p, q, i);
        for (j, st) in p.statics.iter().enumerate() {
            push(
                i,
                None,
                Partner::Static(j),
                sa,
                &pose,
                &st.shape,
                &st.pose,
                margin + reach[i],
            );
        }
    }
    // Robot link shapes against static geometry and free bodies (every
    // pair: few link shapes).
    if !p.link_shapes.is_empty() {
        let units = robot_units(p.model);
        let lone = p.model.lone_free_bodies();
        let mut in_unit = vec![false; nb];
        for u in &units {
            for &b in &u.bodies {
                in_unit[b] = true;
            }
        }
        let mut data = p.model.data();
        crate::dynamics::kinematics::forward_kinematics(p.model, &mut data, q, None);
        for (k, ls) in p.link_shapes.iter().enumerate() {
            if !in_unit[ls.body] {
                continue;
            }
            let pose = data.omi[ls.body] * ls.pose;
            let r = link_reach.get(k).copied().unwrap_or(0.0);
            for (j, st) in p.statics.iter().enumerate() {
                push(
                    ls.body,
                    Some(k),
                    Partner::Static(j),
                    &ls.shape,
                    &pose,
                    &st.shape,
                    &st.pose,
                    margin + r,
                );
            }
            for j in 0..nb {
                let Some(sb) = &p.shapes[j] else { continue };
                if !lone[j] {
                    continue;
                }
                push(
                    ls.body,
                    Some(k),
                    Partner::Body(j),
                    &ls.shape,
                    &pose,
                    sb,
                    &body_pose(p, q, j),
                    margin + r + reach[j],
                );
            }
        }
    }
    // Body pairs through the broad phase (a shape without a bounding
    // ball, e.g. an open polytope, meets every other).
    let mut ids = Vec::new();
    let mut boxes = Vec::new();
    for i in 0..nb {
        if p.shapes[i].is_some() {
            let r = shape_radius(p.shapes[i].as_ref().unwrap());
            let k = p.model.bodies[i].idx_q;
            let c = [q[k].re(), q[k + 1].re(), q[k + 2].re()];
            ids.push(i);
            boxes.push(Aabb::ball(c, r + 0.5 * margin + reach[i]));
        }
    }
    for (bi, bj) in sweep_and_prune(&boxes) {
        let (i, j) = (ids[bi], ids[bj]);
        let (sa, sb) = (p.shapes[i].as_ref().unwrap(), p.shapes[j].as_ref().unwrap());
        push(
            i,
            None,
            Partner::Body(j),
            sa,
            &body_pose(p, q, i),
            sb,
            &body_pose(p, q, j),
            margin + reach[i] + reach[j],
        );
    }
    out
}

/// Splits candidates into islands of units (free bodies, robots)
/// connected by contact. Unit layout: units in order of their first body,
/// a free body's 6 velocities, a robot's joint velocities in `v` order.
pub fn islands<T: Scalar>(
    model: &crate::dynamics::Model<T>,
    cands: Vec<Candidate<T>>,
) -> Vec<Island<T>> {
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let nb = model.bodies.len();
    // The unit of each body: a lone free body is its own unit; the links of a
    // robot unit share their root's.
    let mut unit_root: Vec<usize> = (0..nb).collect();
    let robots = if cands.iter().any(|c| c.link.is_some()) {
        robot_units(model)
    } else {
        Vec::new()
    };
    for r in &robots {
        for &b in &r.bodies {
            unit_root[b] = r.root;
        }
    }
    let mut parent: Vec<usize> = (0..nb).collect();
    for c in &cands {
        if let Partner::Body(j) = c.b {
            let (ra, rb) = (
                find(&mut parent, unit_root[c.a]),
                find(&mut parent, unit_root[j]),
            );
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut island_of = vec![usize::MAX; nb];
    let mut out: Vec<Island<T>> = Vec::new();
    for c in cands {
        let root = find(&mut parent, unit_root[c.a]);
        if island_of[root] == usize::MAX {
            island_of[root] = out.len();
            out.push(Island {
                units: Vec::new(),
                contacts: Vec::new(),
                local: Vec::new(),
            });
        }
        out[island_of[root]].contacts.push(c);
    }
    let mut local = vec![usize::MAX; nb];
    let mut dims = vec![0; out.len()];
    for i in 0..nb {
        if unit_root[i] != i {
            continue; // a robot link other than the root: added with its root
        }
        let root = find(&mut parent, i);
        if island_of[root] == usize::MAX {
            continue;
        }
        let k = island_of[root];
        let isl = &mut out[k];
        let kind = match robots.iter().find(|r| r.root == i) {
            Some(r) => UnitKind::Robot(r.clone()),
            None => UnitKind::Body(i),
        };
        let dofs: Vec<usize> = match &kind {
            UnitKind::Robot(r) => r.dofs.clone(),
            UnitKind::Body(_) => {
                let v0 = model.bodies[i].idx_v;
                (v0..v0 + 6).collect()
            }
        };
        let u = isl.units.len();
        match &kind {
            UnitKind::Robot(r) => r.bodies.iter().for_each(|&b| local[b] = u),
            UnitKind::Body(_) => local[i] = u,
        }
        let n = dofs.len();
        isl.units.push(Unit {
            kind,
            dofs,
            offset: dims[k],
        });
        dims[k] += n;
    }
    for isl in &mut out {
        isl.local = local.clone();
    }
    out
}

/// The contact structure a solve settled on: the final candidate set and
/// each candidate's unknowns (in candidate order). Every decision behind it
/// was taken on primal values.
#[derive(Clone, Debug)]
pub struct Structure<T: Scalar> {
    /// Final candidates.
    pub candidates: Vec<Candidate<T>>,
    /// Their unknowns `x_c` at the solution.
    pub xs: Vec<DVec<T>>,
}

impl Ipm {
    /// Solves the step and also returns the final candidate set and the
    /// contact unknowns (used by the implicit-function derivatives).
    pub fn solve_structured<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        conic_pairs::refuse_point_clouds("ipm", p)?;
        self.solve_structured_from(p, candidates(p, &self.params), true)
    }

    /// [`solve_structured`](Self::solve_structured) from the candidate set
    /// `cands`; with `more_rounds`, features penetrating at `q⁺` that are
    /// not candidates are added (closed-form pairs) and the step solved
    /// again.
    pub fn solve_structured_from<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        cands: Vec<Candidate<T>>,
        more_rounds: bool,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        self.solve_structured_warm(p, cands, more_rounds, Vec::new())
    }

    /// One step of a rollout: [`solve_structured`](Self::solve_structured)
    /// with the contacts the previous step solved as the initial point of
    /// those that are candidates again (when
    /// [`Params::warm_start_contacts`]); the workspace receives this
    /// step's.
    pub fn solve_with_workspace<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
    ) -> Result<StepSolution<T>, SolveError> {
        Ok(self.solve_structured_with_workspace(p, ws)?.0)
    }

    /// [`solve_with_workspace`](Self::solve_with_workspace), also
    /// returning the final candidate set and contact unknowns.
    pub fn solve_structured_with_workspace<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        conic_pairs::refuse_point_clouds("ipm", p)?;
        let prev = if self.params.warm_start_contacts {
            std::mem::take(&mut ws.contacts)
        } else {
            Vec::new()
        };
        let (sol, st) = self.solve_structured_warm(p, candidates(p, &self.params), true, prev)?;
        ws.contacts.clear();
        ws.contacts.extend(
            st.candidates
                .iter()
                .map(|c| c.key())
                .zip(st.xs.iter().cloned()),
        );
        Ok((sol, st))
    }

    fn solve_structured_warm<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        mut cands: Vec<Candidate<T>>,
        more_rounds: bool,
        previous: Vec<(CandidateKey, DVec<T>)>,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        let params = &self.params;
        let (mut v_free, ff_iters) =
            free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &params.newton)?;
        // Articulated joints (robots) take their own explicit step; a
        // robot with a contact candidate on a link is a unit of an island
        // and its velocity is solved for with the contacts.
        crate::dynamics::articulated::articulated_velocity(
            p.model,
            p.q,
            p.v,
            p.u,
            p.h,
            &mut v_free,
        );
        let zero_reach = vec![0.0; p.model.bodies.len()];
        let mut total_iters = 0;
        let mut round = 0;
        let mut warm = Warm {
            v: None,
            xs: previous,
        };
        loop {
            if cands.is_empty() {
                // Exactly the free-flight step.
                let q_next = integrate_model(p.model, p.q, &v_free, p.h)?;
                let stats = SolveStats {
                    iterations: ff_iters,
                    ..Default::default()
                };
                let penetrating = if more_rounds {
                    detect(p, &q_next, &zero_reach, &[], 0.0)
                } else {
                    Vec::new()
                };
                if penetrating.is_empty() || round >= params.max_candidate_rounds {
                    let sol = StepSolution {
                        q_next,
                        v_next: v_free,
                        contacts: Vec::new(),
                        stats,
                    };
                    return Ok((
                        sol,
                        Structure {
                            candidates: Vec::new(),
                            xs: Vec::new(),
                        },
                    ));
                }
                cands = penetrating;
                round += 1;
                continue;
            }
            let mut sol = self.solve_candidates(p, &cands, v_free.clone(), &mut warm)?;
            total_iters += sol.stats.iterations;
            // Features that were no candidate but penetrate at q⁺: add them
            // and solve again.
            let found = if more_rounds {
                detect(p, &sol.q_next, &zero_reach, &[], 0.0)
            } else {
                Vec::new()
            };
            let extra: Vec<_> = found
                .into_iter()
                .filter(|c| !cands.iter().any(|d| d.key() == c.key()))
                .collect();
            if extra.is_empty() || round >= params.max_candidate_rounds {
                sol.stats.iterations = total_iters;
                let xs = cands
                    .iter()
                    .map(|c| {
                        warm.xs
                            .iter()
                            .find(|(key, _)| *key == c.key())
                            .map(|w| w.1.clone())
                            .expect("every candidate was solved")
                    })
                    .collect();
                return Ok((
                    sol,
                    Structure {
                        candidates: cands,
                        xs,
                    },
                ));
            }
            cands.extend(extra);
            round += 1;
        }
    }
}

/// What `ipm` carries from one step of a rollout to the next
/// ([`ContactBackend::Workspace`](crate::contact::ContactBackend::Workspace)):
/// the previous step's contact unknowns by candidate, the initial point of
/// the candidates the next step shares with it.
#[derive(Clone, Debug)]
pub struct Workspace<T: Scalar> {
    contacts: Vec<(CandidateKey, DVec<T>)>,
}

impl<T: Scalar> Default for Workspace<T> {
    fn default() -> Self {
        Workspace {
            contacts: Vec::new(),
        }
    }
}

/// Warm start of a candidate round from the previous round's solution
/// (or, in the first round of a rollout step, the previous step's).
struct Warm<T: Scalar> {
    /// `v⁺` of every body.
    v: Option<DVec<T>>,
    /// Contact unknowns by candidate key.
    xs: Vec<(CandidateKey, DVec<T>)>,
}

impl Ipm {
    /// Solves the step for a fixed candidate set; `v_free` is the
    /// free-flight velocity of every body. `warm` holds the previous
    /// round's solution (used to start this one) and receives this one's.
    fn solve_candidates<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        cands: &[Candidate<T>],
        v_free: DVec<T>,
        warm: &mut Warm<T>,
    ) -> Result<StepSolution<T>, SolveError> {
        let params = &self.params;
        let mut v_next = v_free;
        let mut stats = SolveStats {
            iterations: 0,
            contacts: cands.len(),
            ..Default::default()
        };
        let mut contacts = Vec::new();
        let mut new_xs = Vec::new();
        for island in islands(p.model, cands.to_vec()) {
            let src = match &warm.v {
                Some(v) => v,
                None if params.warm_start => p.v,
                None => &v_next,
            };
            let v0 = island.gather(src);
            let x0 = island
                .contacts
                .iter()
                .map(|c| {
                    warm.xs
                        .iter()
                        .find(|(key, _)| *key == c.key())
                        .map(|w| w.1.clone())
                })
                .collect();
            // The first round of a rollout step starts from the previous
            // step's contacts (safeguarded: retried cold when the warm
            // attempt stalls); a later round from the previous round's.
            let sol = if warm.v.is_none() {
                solve::solve_island_warm(p, &island, v0, x0, params)?
            } else {
                solve::solve_island(p, &island, v0, x0, params)?
            };
            for (c, x) in island.contacts.iter().zip(&sol.xs) {
                new_xs.push((c.key(), x.clone()));
            }
            island.scatter(&sol.v, &mut v_next);
            stats.iterations = stats.iterations.max(sol.iterations);
            stats.residual = stats.residual.max(sol.residual);
            stats.complementarity = stats.complementarity.max(sol.complementarity);
            stats.capped |= sol.capped;
            for ((cand, x), ce) in island.contacts.iter().zip(&sol.xs).zip(&sol.eval.contacts) {
                let f = cand.law.impulse(x);
                let (t1, t2) = ce.tangents;
                stats.max_penetration = stats.max_penetration.max(-ce.contact.gap.re());
                contacts.push(ContactImpulse {
                    body_a: cand.a,
                    body_b: match cand.b {
                        Partner::Body(j) => Some(j),
                        Partner::Static(_) => None,
                    },
                    point: ce.contact.point_a,
                    normal: ce.contact.normal,
                    normal_impulse: f[0],
                    tangent_impulse: t1 * f[1] + t2 * f[2],
                    gap: ce.contact.gap,
                });
            }
        }
        let q_next = integrate_model(p.model, p.q, &v_next, p.h)?;
        *warm = Warm {
            v: Some(v_next.clone()),
            xs: new_xs,
        };
        Ok(StepSolution {
            q_next,
            v_next,
            contacts,
            stats,
        })
    }
}
