//! `single_level`: contact dynamics and collision in ONE residual
//! (Silico, Le Cleac'h et al. 2023, problem 20).
//!
//! # Unknowns
//!
//! The next velocity `v⁺` of the island's bodies and, per pair of convex
//! parts `c` ([`candidates::silico`](crate::contact::candidates::silico)), the primal-dual unknowns of its collision
//! program (`collision::conic`: `min α s.t. G(q⁺) w + s = h(q⁺), s ∈ K`,
//! `w = (p, α, ε_a, ε_b)`) and the contact unknowns of `ipm`'s friction
//! law (`x_c = (γ, s_γ, …)`, [`Law`]):
//!
//! ```text
//! u_c = (w (n), s (m), z (m), x_c)
//! ```
//!
//! # Residual
//!
//! With `q⁺ = q ⊕ h v⁺` and the part poses at `q⁺`:
//!
//! ```text
//! r_dyn(v⁺) − Σ_c W_cᵀ E x_c = 0                    (dynamics)
//! e_α + G(q⁺)ᵀ z = 0                                 (collision stationarity)
//! G(q⁺) w + s − h(q⁺) = 0                            (collision feasibility)
//! s ∘ z = κ e                                        (collision complementarity)
//! s_γ − (α − 1) = 0,  γ s_γ = κ, friction as ipm     (contact)
//! ```
//!
//! The gap is `φ = α − 1`; the contact point is the witness point `p`,
//! the normal `n` (from b to a) the direction of `−Σ_{rows of a} G_pᵀ z`
//! (Silico eq. 41, `∂α/∂r_a` from the duals, no implicit-function
//! theorem); `W_c` has `ipm`'s rows `[n; L(hω)ᵀ (r × n)]`, `[t; r × t]`
//! with `r = p − r_body(q⁺)` and the tangent frame from a world axis fixed
//! for the step. At the solution `κ = ρ` (`SolverParams::rho`) for every
//! complementarity, collision rows included.
//!
//! # Solver
//!
//! Per island, a dense Newton system: the exact `∂r/∂u` on primal values,
//! in closed form (`island_jacobian`: the collision rows are linear or
//! bilinear in their unknowns, `G`, `Gᵀ`, `Arw`; the pose derivatives of
//! `G` and `h` from `δR⁺ = [h L(hω⁺) δω]× R⁺`; the contact law's local
//! Jacobian from `ipm`; the contact frame and impulse maps by one 12- or
//! 18-wide dual per pair, as `ipm`'s contact kinematics; checked against
//! the dual-number derivative of the whole residual by
//! [`SingleLevel::newton_matrix_discrepancy`]), factored once per
//! iteration (packed LU, reused storage), the friction cone rows
//! Nesterov–Todd scaled, Mehrotra predictor–corrector with the same
//! centering, fraction-to-boundary, backtracking and recentering rules as
//! `ipm` ([`crate::contact::ipm::Params`]), and the same convergence test.
//! An attempt pinned against a cone boundary (from iteration 10, equality
//! residual above tolerance, three consecutive accepted steps below 0.2)
//! is restarted once from the same `v⁺` with
//! every cone variable at 1 instead of 0.01; both attempts count against
//! the iteration cap ([`Params::restart_after`]).
//! A step whose attempts both fail at the cap is solved again by
//! continuation in ρ ([`Params::continuation_iterations`]): at a large ρ
//! from the usual start, then at smaller ρ down to the step's own, each
//! stage warm-started from the previous root; the last stage meets the
//! step's own convergence test, so the answer is a root of the same
//! residual (and the `ift` derivatives are taken there as for any step);
//! its iterations are added to the step's.
//! A step that this does not solve either is solved again by
//! continuation in friction ([`Params::friction_continuation_iterations`]):
//! at ρ_f = max(ρ, [`Params::friction_continuation_rho`]) with every
//! friction coefficient scaled by [`Params::friction_continuation_from`]
//! (from the usual start, then by continuation in ρ if that fails), then
//! with the scale raised to 1, then down in ρ to the step's own, each
//! stage warm-started from the previous root; the last stage is the
//! step's own island (its ρ, friction and time step) with its own
//! convergence test, so again the answer is a root of the same residual.
//! Both fallbacks run only after the attempts failed: a step that
//! converges within the cap is solved exactly as without them.
//! With `DUALSIM_SL_TRACE` set, every iteration is traced on stderr
//! (`trace`, a debugging aid).
//! Every decision is taken on primal values, so the solve runs in any
//! scalar (the `unrolled` method); the `ift` derivatives come from
//! [`crate::diff::ImplicitStep`] on the same residual.
//!
//! # Initial point
//!
//! `v⁺ = v`; each collision program is solved by `collision::conic` at
//! `q ⊕ h v` to its central point with `s ∘ z = scale² e` (a centred,
//! interior start), the contact unknowns as in `ipm`.
//!
//! # Files
//!
//! One per operation: `lowered.rs` (a pair in conic form, [`Lowered`]),
//! `pair.rs` (its residual rows, [`pair_eval`]), `residual.rs` (the
//! island and its residual), `jacobian.rs` (the Newton matrix, dual
//! columns and closed-form frames), `direction.rs` (Nesterov–Todd row
//! scaling, right-hand sides), `merit.rs` (measures, step to the
//! boundary), `factor.rs` (the f64 LU applied in any scalar),
//! `initial.rs` (the initial point), `driver.rs` (one attempt: the
//! predictor–corrector loop, its line search and polish),
//! `continuation.rs` (restarts and the continuations in ρ and in
//! friction), `trace.rs`; the backend itself here.

use nalgebra::{Const, Matrix3, Vector6, U1};
use num_dual::DualSVec64;

use crate::collision::conic::{
    assemble, lower, solve_problem, ConeLayout, ConicParams, LocalCone, Owner,
};
use crate::collision::direction_or_z;
use crate::collision::frame::tangent_basis_from;
use crate::contact::candidates::pair_mu;
use crate::contact::candidates::silico::{body_parts, conic_candidates, static_parts, ConicPair};
use crate::contact::candidates::Partner;
use crate::contact::law::{local_residual, Law};
use crate::contact::mehrotra::Params;
use crate::contact::space::{pose_after, side};
use crate::contact::{
    ContactBackend, ContactImpulse, SolveError, SolveStats, StepProblem, StepSolution,
};
use crate::dynamics::free::{body_residual, free_flight_velocity, integrate_model, DynamicsError};
use crate::geometry::Shape;
use crate::math::cone::{arrow, jordan, nt_scaling, orthant_step};
use crate::math::{DMat, DVec, Pose, Vec3};
use crate::scalar::safe_norm;
use crate::Scalar;

mod trace;

/// Absolute floor of the complementarity test `‖s ∘ z − ρe‖∞`: the slack
/// of an active collision row is `h − Gw`, a difference of O(1) numbers
/// computed through a Newton system whose condition grows as ρ shrinks,
/// so `s z` cannot be driven below a round-off plateau whatever ρ (at
/// ρ = 1e-10 `complementarity_tolerance · ρ` = 1e-16 is far below it). On
/// the chamfered drop at ρ ≤ 1e-8 the plateau is 3e-14 … 2e-13 with the
/// equality residual at 1e-15 (1e-14 here failed such solves at the
/// iteration cap); 1e-12 is 1% of ρ at ρ = 1e-10.
pub const COMP_FLOOR: f64 = 1e-12;

/// An attempt is pinned ([`Params::restart_after`]) after this many
/// consecutive short steps.
const STALL_STEPS: usize = 3;

/// Width of the dual-number column blocks of the Newton matrix.
const BLOCK: usize = 16;
type D = DualSVec64<BLOCK>;

/// The `single_level` backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleLevel {
    /// Interior-point tuning (shared with `ipm`).
    pub params: Params,
}

mod continuation;
mod direction;
mod driver;
mod factor;
mod initial;
mod jacobian;
mod lowered;
mod merit;
mod pair;
mod residual;

use continuation::*;
use direction::*;
use driver::*;
use factor::*;
use initial::*;
use jacobian::*;
pub use lowered::*;
use merit::*;
pub use pair::*;
use residual::*;

/// Islands of bodies connected by pairs: `(bodies, global → local, pair indices)`.
fn group(nb: usize, pairs: &[ConicPair]) -> Vec<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..nb).collect();
    for c in pairs {
        if let Partner::Body(j) = c.b {
            let (ra, rb) = (find(&mut parent, c.a), find(&mut parent, j));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut which = vec![usize::MAX; nb];
    let mut out: Vec<(Vec<usize>, Vec<usize>, Vec<usize>)> = Vec::new();
    for (k, c) in pairs.iter().enumerate() {
        let root = find(&mut parent, c.a);
        if which[root] == usize::MAX {
            which[root] = out.len();
            out.push((Vec::new(), Vec::new(), Vec::new()));
        }
        out[which[root]].2.push(k);
    }
    let mut local = vec![usize::MAX; nb];
    for i in 0..nb {
        let root = find(&mut parent, i);
        if which[root] != usize::MAX {
            let isl = &mut out[which[root]];
            local[i] = isl.0.len();
            isl.0.push(i);
        }
    }
    for isl in &mut out {
        isl.1 = local.clone();
    }
    out
}

impl SingleLevel {
    /// Candidates of the step (pairs of convex parts).
    pub fn candidates<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Vec<ConicPair> {
        conic_candidates(p, p.q, self.params.margin)
    }

    /// Solves the step; also returns the pairs and each pair's unknowns
    /// (in pair order).
    pub fn solve_structured<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
    ) -> Result<(StepSolution<T>, Vec<ConicPair>, Vec<DVec<T>>), SolveError> {
        SolveError::refuse_link_shapes("single_level", p)?;
        crate::contact::candidates::conic::refuse_point_clouds("single_level", p)?;
        let params = &self.params;
        let (mut v_next, ff_iters) =
            free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &params.newton)?;
        crate::dynamics::articulated::articulated_velocity(
            p.model,
            p.q,
            p.v,
            p.u,
            p.h,
            &mut v_next,
        );
        let pairs = self.candidates(p);
        let mut stats = SolveStats {
            iterations: if pairs.is_empty() { ff_iters } else { 0 },
            contacts: pairs.len(),
            ..Default::default()
        };
        let mut contacts = Vec::new();
        let mut xs: Vec<DVec<T>> = vec![DVec::zeros(0); pairs.len()];
        if !pairs.is_empty() {
            let cp = CastProblem::<f64>::new(p);
            let pf = cp.problem(p);
            for (bodies, local, idx) in group(p.model.bodies.len(), &pairs) {
                let lowered = idx
                    .iter()
                    .map(|&k| lower_pair(p, &pairs[k]))
                    .collect::<Result<Vec<_>, _>>()?;
                let isl = Isl::new(bodies, local, lowered);
                let mut v0 = DVec::zeros(6 * isl.bodies.len());
                for (li, &g) in isl.bodies.iter().enumerate() {
                    let k = p.model.bodies[g].idx_v;
                    let src = if params.warm_start { p.v } else { &v_next };
                    v0.fixed_rows_mut::<6>(6 * li)
                        .copy_from(&src.fixed_rows::<6>(k));
                }
                let sol = solve_with_restart(p, &pf, &isl, &v0, params)?;
                for (li, &g) in isl.bodies.iter().enumerate() {
                    let k = p.model.bodies[g].idx_v;
                    v_next
                        .fixed_rows_mut::<6>(k)
                        .copy_from(&sol.u.fixed_rows::<6>(6 * li));
                }
                stats.iterations = stats.iterations.max(sol.iterations);
                stats.residual = stats.residual.max(sol.residual);
                stats.complementarity = stats.complementarity.max(sol.complementarity);
                stats.capped |= sol.capped;
                for ((&k, lp), (ev, &off)) in idx
                    .iter()
                    .zip(&isl.pairs)
                    .zip(sol.evals.iter().zip(&isl.offsets))
                {
                    xs[k] = sol.u.rows(off, lp.size()).into_owned();
                    let c0 = off + lp.n + 2 * lp.m();
                    let xk = sol.u.rows(c0, lp.pair.law.size()).into_owned();
                    let f = lp.pair.law.impulse(&xk);
                    let (t1, t2) = ev.tangents;
                    stats.max_penetration = stats.max_penetration.max(-ev.gap.re());
                    contacts.push(ContactImpulse {
                        body_a: lp.pair.a,
                        body_b: match lp.pair.b {
                            Partner::Body(j) => Some(j),
                            Partner::Static(_) => None,
                        },
                        point: ev.point,
                        normal: ev.normal,
                        normal_impulse: f[0],
                        tangent_impulse: t1 * f[1] + t2 * f[2],
                        gap: ev.gap,
                    });
                }
            }
        }
        let q_next = integrate_model(p.model, p.q, &v_next, p.h)?;
        Ok((
            StepSolution {
                q_next,
                v_next,
                contacts,
                stats,
            },
            pairs,
            xs,
        ))
    }

    /// Largest difference between the Newton matrix the solver uses (closed
    /// form, [`island_jacobian`]) and the dual-number derivative of the
    /// whole island residual, relative to `max(1, max |J|)`, over every
    /// island of the step at its initial point and at that point moved by
    /// a deterministic perturbation (so that no entry is checked only at a
    /// symmetric point). A check of the closed form (tests).
    #[doc(hidden)]
    pub fn newton_matrix_discrepancy<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
    ) -> Result<f64, SolveError> {
        let pairs = self.candidates(p);
        let cf = CastProblem::<f64>::new(p);
        let pf = cf.problem(p);
        let cd = CastProblem::<D>::new(p);
        let pd = cd.problem(p);
        let mut worst = 0.0_f64;
        for (bodies, local, idx) in group(p.model.bodies.len(), &pairs) {
            let lowered = idx
                .iter()
                .map(|&k| lower_pair(p, &pairs[k]))
                .collect::<Result<Vec<_>, _>>()?;
            let isl = Isl::new(bodies, local, lowered);
            let pairs_d: Vec<Lowered<D>> = isl.pairs.iter().map(|lp| lp.cast()).collect();
            let mut v0 = DVec::zeros(6 * isl.bodies.len());
            for (li, &g) in isl.bodies.iter().enumerate() {
                let k = p.model.bodies[g].idx_v;
                v0.fixed_rows_mut::<6>(6 * li)
                    .copy_from(&p.v.fixed_rows::<6>(k));
            }
            let u0 = initial_point(p, &isl, &v0, &self.params)?.map(|x| x.re());
            let moved = DVec::from_fn(u0.len(), |i, _| {
                u0[i] + 1e-2 * (1.7 * i as f64 + 0.3).sin() * (1.0 + u0[i].abs())
            });
            for u in [&u0, &moved] {
                let mut jc = DMat::zeros(0, 0);
                island_jacobian(&pf, &isl, u, &mut jc)?;
                let jd = island_jacobian_dual(&pd, &isl, &pairs_d, u)?;
                let scale = jd.amax().max(1.0);
                worst = worst.max((&jc - &jd).amax() / scale);
            }
        }
        Ok(worst)
    }

    /// The global residual `r(y)` with `y = (v⁺, u_c for each pair in
    /// order)` (the `ift` derivatives): every body's dynamics with the
    /// impulses of its pairs, each pair's rows, complementarity relaxed
    /// to ρ.
    pub fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        pairs: &[ConicPair],
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        let nv = p.model.nv;
        let mut r = DVec::zeros(y.len());
        let v_next = y.rows(0, nv).into_owned();
        let mut r_dyn = DVec::zeros(nv);
        crate::dynamics::free::momentum_residual(
            p.model, p.q, p.v, &v_next, p.u, &p.gravity, p.h, &mut r_dyn,
        )?;
        crate::dynamics::articulated::articulated_residual(
            p.model, p.q, p.v, &v_next, p.u, p.h, &mut r_dyn,
        );
        let kappa = T::from_re(p.params.rho);
        let mut off = nv;
        let body_state = |g: usize| -> Result<(Pose<T>, [T; 6]), SolveError> {
            let b = &p.model.bodies[g];
            let (q, v) = body_arrays(p, g, &v_next.as_slice()[b.idx_v..b.idx_v + 6]);
            let pose = pose_after(&q, &v, p.h)
                .map_err(|source| DynamicsError::Retraction { body: g, source })?;
            Ok((pose, v))
        };
        for pair in pairs {
            let lp = lower_pair(p, pair)?;
            let (pa, va) = body_state(pair.a)?;
            let ob = match pair.b {
                Partner::Body(j) => Some(body_state(j)?),
                Partner::Static(_) => None,
            };
            let size = lp.size();
            let ev = pair_eval(
                &lp,
                &pa,
                &va,
                ob.as_ref().map(|(p, v)| (p, v)),
                p.h,
                &y.as_slice()[off..off + size],
                kappa,
            )?;
            r.rows_mut(off, size).copy_from(&ev.rows);
            let ka = p.model.bodies[pair.a].idx_v;
            {
                let mut seg = r_dyn.fixed_rows_mut::<6>(ka);
                seg -= ev.gen_a;
            }
            if let (Partner::Body(j), Some(gb)) = (pair.b, ev.gen_b) {
                let kb = p.model.bodies[j].idx_v;
                let mut seg = r_dyn.fixed_rows_mut::<6>(kb);
                seg -= gb;
            }
            off += size;
        }
        r.rows_mut(0, nv).copy_from(&r_dyn);
        Ok(r)
    }
}

/// `y = (v⁺, u_c for each pair of convex parts in order)`, `u_c` the
/// pair's collision primal-dual unknowns and contact unknowns
/// (`contact::single_level`); dense `∂r/∂y`.
impl ContactBackend for SingleLevel {
    const NAME: &'static str = "single_level";
    type Structure = Vec<ConicPair>;
    type Workspace<T: Scalar> = ();
    type Params = Params;
    const RELAXED: bool = true;

    fn new(params: &Params) -> Self {
        SingleLevel { params: *params }
    }

    fn check_params(p: &Params) -> Result<(), String> {
        crate::contact::ipm::check_params(p)
    }

    fn contact_margin(params: &Params) -> f64 {
        params.margin
    }

    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        Ok(self.solve_structured(p)?.0)
    }

    fn solve_root(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(DVec<f64>, Self::Structure), SolveError> {
        let (sol, pairs, xs) = self.solve_structured(p)?;
        Ok((
            crate::contact::backend::stacked_root(&sol.v_next, &xs),
            pairs,
        ))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Self::Structure,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        SingleLevel::residual(self, p, s, y)
    }

    fn same_structure(a: &Self::Structure, b: &Self::Structure) -> bool {
        let key = |c: &ConicPair| (c.a, format!("{:?}", c.b), c.feature);
        let mut ka: Vec<_> = a.iter().map(key).collect();
        let mut kb: Vec<_> = b.iter().map(key).collect();
        ka.sort();
        kb.sort();
        ka == kb
    }
}
