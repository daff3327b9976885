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
//! [`nt_scaling`](crate::math::cone::nt_scaling)); without it the Jordan-product linearization
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
//! `H = M(q)`, see [`robot`](crate::contact::space::robot)). Units are further split into islands
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
//! `∂φ/∂v⁺ / h` ([`robot`](crate::contact::space::robot)); against a free body, the body's side is
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
use crate::contact::candidates::{
    candidates_into, penetrating_into, Candidate, CandidateKey, DetectScratch, Partner,
};
use crate::contact::island::{islands_into, Island, IslandScratch};
use crate::contact::mehrotra as solve;
use crate::contact::{ContactImpulse, SolveError, SolveStats, StepProblem, StepSolution};
use crate::dynamics::free::{free_flight_velocity_into, integrate_model_into};
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
        let mut ws = Workspace::default();
        let mut out = StepSolution::empty();
        self.step_core(p, &mut ws, None, true, false, &mut out)?;
        Ok((out, ws.structure()))
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
        let mut ws = Workspace::default();
        let mut out = StepSolution::empty();
        self.step_core(p, &mut ws, Some(&cands), more_rounds, false, &mut out)?;
        Ok((out, ws.structure()))
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
        let mut out = StepSolution::empty();
        self.solve_into_workspace(p, ws, &mut out)?;
        Ok(out)
    }

    /// [`solve_with_workspace`](Self::solve_with_workspace) into `out`,
    /// whose storage is reused: with the workspace of the previous step, a
    /// steady-state `f64` step of free bodies with closed-form pairs
    /// allocates nothing.
    pub fn solve_into_workspace<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
        out: &mut StepSolution<T>,
    ) -> Result<(), SolveError> {
        refuse_point_clouds("ipm", p)?;
        let warm = self.params.warm_start_contacts;
        self.step_core(p, ws, None, true, warm, out)
    }

    /// [`solve_with_workspace`](Self::solve_with_workspace), also
    /// returning the final candidate set and contact unknowns.
    pub fn solve_structured_with_workspace<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
    ) -> Result<(StepSolution<T>, Structure<T>), SolveError> {
        let out = self.solve_with_workspace(p, ws)?;
        Ok((out, ws.structure()))
    }

    /// The step: free flight, candidates (`given`, or detected at `q`),
    /// candidate rounds (with `more_rounds`, features penetrating at `q⁺`
    /// that were no candidate are added and the step solved again). The
    /// first round starts each contact from `ws`'s previous solution when
    /// `warm_contacts` (safeguarded, [`solve::solve_island_warm`]), a
    /// later round from the previous round's. `ws` receives the final
    /// candidates and their unknowns.
    fn step_core<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
        given: Option<&[Candidate<T>]>,
        more_rounds: bool,
        warm_contacts: bool,
        out: &mut StepSolution<T>,
    ) -> Result<(), SolveError> {
        let params = &self.params;
        let ff_iters = free_flight_velocity_into(
            p.model,
            p.q,
            p.v,
            p.u,
            &p.gravity,
            p.h,
            &params.newton,
            &mut ws.v_free,
        )?;
        // Articulated joints (robots) take their own explicit step; a
        // robot with a contact candidate on a link is a unit of an island
        // and its velocity is solved for with the contacts.
        crate::dynamics::articulated::articulated_velocity(
            p.model,
            p.q,
            p.v,
            p.u,
            p.h,
            &mut ws.v_free,
        );
        match given {
            Some(c) => {
                ws.cands.clear();
                ws.cands.extend_from_slice(c);
            }
            None => candidates_into(p, params.margin, &mut ws.detect, &mut ws.cands),
        }
        let mut total_iters = 0;
        let mut round = 0;
        let mut first = true;
        loop {
            if ws.cands.is_empty() {
                // Exactly the free-flight step.
                integrate_model_into(p.model, p.q, &ws.v_free, p.h, &mut out.q_next)?;
                if more_rounds {
                    penetrating_into(p, &out.q_next, &mut ws.detect, &mut ws.found);
                }
                if !more_rounds || ws.found.is_empty() || round >= params.max_candidate_rounds {
                    solve::copy_vec(&mut out.v_next, &ws.v_free);
                    out.contacts.clear();
                    out.stats = SolveStats {
                        iterations: ff_iters,
                        ..Default::default()
                    };
                    ws.contacts.clear();
                    ws.cands.clear();
                    return Ok(());
                }
                std::mem::swap(&mut ws.cands, &mut ws.found);
                round += 1;
                continue;
            }
            // The previous step's contacts start the first round only with
            // the warm start (they stay in `ws.contacts`, storage reused).
            self.solve_round(p, ws, first, first && !warm_contacts, out)?;
            first = false;
            total_iters += out.stats.iterations;
            // Features that were no candidate but penetrate at q⁺: add them
            // and solve again.
            if more_rounds {
                penetrating_into(p, &out.q_next, &mut ws.detect, &mut ws.found);
                let cands = &ws.cands;
                ws.found
                    .retain(|c| !cands.iter().any(|d| d.key() == c.key()));
            } else {
                ws.found.clear();
            }
            if ws.found.is_empty() || round >= params.max_candidate_rounds {
                out.stats.iterations = total_iters;
                return Ok(());
            }
            ws.cands.append(&mut ws.found);
            round += 1;
        }
    }

    /// Solves the step for the candidate set `ws.cands` into `out`; the
    /// first solve of a step starts from `ws.contacts` with the warm
    /// safeguard (every contact cold with `cold`), a later one from the
    /// previous round's velocity and contacts. `ws.contacts` receives this
    /// round's contact unknowns.
    fn solve_round<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        ws: &mut Workspace<T>,
        first: bool,
        cold: bool,
        out: &mut StepSolution<T>,
    ) -> Result<(), SolveError> {
        let params = &self.params;
        let Workspace {
            contacts,
            round,
            cands,
            island_scratch,
            islands,
            work,
            v_free,
            v0,
            round_v,
            ..
        } = ws;
        solve::copy_vec(&mut out.v_next, v_free);
        out.contacts.clear();
        out.stats = SolveStats {
            iterations: 0,
            contacts: cands.len(),
            ..Default::default()
        };
        islands_into(p.model, cands, island_scratch, islands);
        let mut written = 0;
        for (k, island) in islands.iter().enumerate() {
            let src: &DVec<T> = if !first {
                round_v
            } else if params.warm_start {
                p.v
            } else {
                v_free
            };
            island.gather_into(src, v0);
            let prev: &[(CandidateKey, DVec<T>)] = contacts;
            let x0 = |i: usize| {
                if cold {
                    None
                } else {
                    lookup(prev, &island.contacts[i].key())
                }
            };
            if work.len() <= k {
                work.push(solve::Work::default());
            }
            let w = &mut work[k];
            // The first round of a rollout step starts from the previous
            // step's contacts (safeguarded: retried cold when the warm
            // attempt stalls); a later round from the previous round's.
            let sol = if first {
                solve::solve_island_warm(p, island, v0, x0, params, w)?
            } else {
                solve::solve_island(p, island, v0, x0, params, w)?
            };
            for (c, x) in island.contacts.iter().zip(sol.xs) {
                if round.len() == written {
                    round.push((c.key(), x.clone()));
                } else {
                    round[written].0 = c.key();
                    solve::copy_vec(&mut round[written].1, x);
                }
                written += 1;
            }
            island.scatter(sol.v, &mut out.v_next);
            let stats = &mut out.stats;
            stats.iterations = stats.iterations.max(sol.iterations);
            stats.residual = stats.residual.max(sol.residual);
            stats.complementarity = stats.complementarity.max(sol.complementarity);
            stats.capped |= sol.capped;
            push_impulses(island, sol.xs, sol.eval, out);
        }
        round.truncate(written);
        integrate_model_into(p.model, p.q, &out.v_next, p.h, &mut out.q_next)?;
        solve::copy_vec(round_v, &out.v_next);
        std::mem::swap(contacts, round);
        contacts.sort_unstable_by_key(|e| e.0);
        Ok(())
    }
}

/// The contact impulses of a solved island, appended to `out.contacts`
/// (and its largest penetration to `out.stats`).
fn push_impulses<T: Scalar>(
    island: &Island<T>,
    xs: &[DVec<T>],
    eval: &crate::contact::space::evaluate::Eval<T>,
    out: &mut StepSolution<T>,
) {
    for ((cand, x), ce) in island.contacts.iter().zip(xs).zip(&eval.contacts) {
        let f = cand.law.impulse(x);
        let (t1, t2) = ce.tangents;
        out.stats.max_penetration = out.stats.max_penetration.max(-ce.contact.gap.re());
        out.contacts.push(ContactImpulse {
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

/// The unknowns of candidate `key` in a list sorted by key.
fn lookup<'a, T: Scalar>(
    sorted: &'a [(CandidateKey, DVec<T>)],
    key: &CandidateKey,
) -> Option<&'a DVec<T>> {
    sorted
        .binary_search_by(|e| e.0.cmp(key))
        .ok()
        .map(|i| &sorted[i].1)
}

/// What `ipm` carries from one step of a rollout to the next
/// ([`ContactBackend::Workspace`](crate::contact::ContactBackend::Workspace)):
/// the previous step's contact unknowns by candidate (the initial point of
/// the candidates the next step shares with it), and every buffer of a
/// step (candidates, islands, each island's solve), reused.
#[derive(Clone, Debug)]
pub struct Workspace<T: Scalar> {
    /// Contact unknowns of the last solve, sorted by candidate key.
    contacts: Vec<(CandidateKey, DVec<T>)>,
    /// This round's contact unknowns (swapped into `contacts`).
    round: Vec<(CandidateKey, DVec<T>)>,
    /// The candidate set (final, after a step).
    cands: Vec<Candidate<T>>,
    /// Penetrating features found at `q⁺`.
    found: Vec<Candidate<T>>,
    detect: DetectScratch<T>,
    island_scratch: IslandScratch,
    islands: Vec<Island<T>>,
    /// The buffers of each island's solve.
    work: Vec<solve::Work<T>>,
    v_free: DVec<T>,
    v0: DVec<T>,
    round_v: DVec<T>,
}

impl<T: Scalar> Default for Workspace<T> {
    fn default() -> Self {
        Workspace {
            contacts: Vec::new(),
            round: Vec::new(),
            cands: Vec::new(),
            found: Vec::new(),
            detect: DetectScratch::default(),
            island_scratch: IslandScratch::default(),
            islands: Vec::new(),
            work: Vec::new(),
            v_free: DVec::zeros(0),
            v0: DVec::zeros(0),
            round_v: DVec::zeros(0),
        }
    }
}

impl<T: Scalar> Workspace<T> {
    /// The final candidates of the last step and their unknowns (in
    /// candidate order).
    fn structure(&self) -> Structure<T> {
        let xs = self
            .cands
            .iter()
            .map(|c| {
                lookup(&self.contacts, &c.key())
                    .cloned()
                    .expect("every candidate was solved")
            })
            .collect();
        Structure {
            candidates: self.cands.clone(),
            xs,
        }
    }
}
