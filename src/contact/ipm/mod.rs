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
//! [`space`](crate::contact::space)); the implicit-function derivatives always do. Then
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
//! [`candidates`](crate::contact::candidates) at `q` (closed-form
//! features, and pairs of convex parts for every pair without a closed
//! form, whose gap is the conic proximity relaxed to `10 ρ`). After a
//! solve, features that were no candidate but penetrate at `q⁺` are added
//! and the step is solved again (`max_candidate_rounds`).
//!
//! # The toolkit
//!
//! `ipm` is a thin backend on the contact toolkit: [`candidates`](crate::contact::candidates),
//! [`island`](crate::contact::island), the contact [`space`](crate::contact::space)
//! (kinematics, Jacobians, the island evaluation), the friction
//! [`law`](crate::contact::law)s and the interior-point driver
//! [`mehrotra`](crate::contact::mehrotra). This module holds the step: the
//! free flight, the candidate rounds, the warm start across a rollout.
//!
//! # Initial point
//!
//! `v⁺₀ = v` (warm start) or the free-flight velocity; every cone variable
//! at `initial_scale · e`, then the linear equalities are satisfied where
//! the cones allow it (`s = φ` when the gap is larger than the scale,
//! `β₀ = μγ`, `η_t = v_t`, `ψ = ‖v_t‖ + scale`).
mod backend;

pub use crate::contact::mehrotra::{check_params, Params};

use crate::contact::candidates::conic::refuse_point_clouds;
use crate::contact::candidates::{candidates, detect, Candidate, CandidateKey, Partner};
use crate::contact::island::islands;
use crate::contact::mehrotra as solve;
use crate::contact::{ContactImpulse, SolveError, SolveStats, StepProblem, StepSolution};
use crate::dynamics::free::{free_flight_velocity, integrate_model};
use crate::math::DVec;
use crate::Scalar;

/// The interior-point contact backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ipm {
    /// Tuning.
    pub params: Params,
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
        refuse_point_clouds("ipm", p)?;
        self.solve_structured_from(p, candidates(p, self.params.margin), true)
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
        refuse_point_clouds("ipm", p)?;
        let prev = if self.params.warm_start_contacts {
            std::mem::take(&mut ws.contacts)
        } else {
            Vec::new()
        };
        let (sol, st) = self.solve_structured_warm(p, candidates(p, self.params.margin), true, prev)?;
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
