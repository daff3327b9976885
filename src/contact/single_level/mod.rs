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

use nalgebra::{Const, Matrix3, Vector6, U1};
use num_dual::DualSVec64;

use crate::contact::candidates::pair_mu;
use crate::contact::candidates::silico::{body_parts, conic_candidates, static_parts, ConicPair};
use crate::collision::conic::{
    assemble, lower, solve_problem, ConeLayout, ConicParams, LocalCone, Owner,
};
use crate::collision::direction_or_z;
use crate::collision::frame::tangent_basis_from;
use crate::math::cone::{arrow, jordan, nt_scaling, orthant_step};
use crate::contact::space::{pose_after, side};
use crate::contact::candidates::Partner;
use crate::contact::law::{local_residual, Law};
use crate::contact::mehrotra::Params;
use crate::contact::{
    ContactBackend, ContactImpulse, SolveError, SolveStats, StepProblem, StepSolution,
};
use crate::dynamics::free::{body_residual, free_flight_velocity, integrate_model, DynamicsError};
use crate::geometry::Shape;
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

/// A pair lowered to conic form, in scalar `S`.
#[derive(Clone, Debug)]
pub struct Lowered<S: Scalar> {
    /// The pair.
    pub pair: ConicPair,
    /// Friction coefficient.
    pub mu: S,
    /// Conic constraint of part a.
    pub cone_a: LocalCone<S>,
    /// Conic constraint of part b.
    pub cone_b: LocalCone<S>,
    /// Pose of part a in body a's frame.
    pub local_a: Pose<S>,
    /// Pose of part b in body b's frame, or in the world for a static.
    pub local_b: Pose<S>,
    /// Number of collision primal unknowns `n = 4 + n_aux_a + n_aux_b`.
    pub n: usize,
    /// Cone layout of the collision rows (`m = layout.dim()`).
    pub layout: ConeLayout,
}

impl<S: Scalar> Lowered<S> {
    /// Number of collision rows.
    pub fn m(&self) -> usize {
        self.layout.dim()
    }
    /// Number of unknowns `n + 2m + law.size()`.
    pub fn size(&self) -> usize {
        self.n + 2 * self.m() + self.pair.law.size()
    }
}

/// Lowers a pair of the problem.
pub fn lower_pair<S: Scalar>(
    p: &StepProblem<'_, S>,
    pair: &ConicPair,
) -> Result<Lowered<S>, SolveError> {
    let missing = SolveError::Singular("no such convex part");
    let (sa, local_a) = body_parts(p, pair.a)
        .into_iter()
        .nth(pair.part_a)
        .ok_or(missing.clone())?;
    let (sb, local_b) = match pair.b {
        Partner::Body(j) => body_parts(p, j).into_iter().nth(pair.part_b),
        Partner::Static(j) => static_parts(p, j).into_iter().nth(pair.part_b),
    }
    .ok_or(missing)?;
    let cone_a = lower(&sa)?;
    let cone_b = lower(&sb)?;
    let n = 4 + cone_a.n_aux + cone_b.n_aux;
    let layout = ConeLayout {
        n_orthant: 1 + cone_a.layout.n_orthant + cone_b.layout.n_orthant,
        soc: cone_a
            .layout
            .soc
            .iter()
            .chain(cone_b.layout.soc.iter())
            .copied()
            .collect(),
    };
    Ok(Lowered {
        pair: pair.clone(),
        mu: pair_mu(p, pair.a, pair.b),
        cone_a,
        cone_b,
        local_a,
        local_b,
        n,
        layout,
    })
}

impl<S: Scalar> Lowered<S> {
    fn cast<U: Scalar>(&self) -> Lowered<U> {
        let c = |l: &LocalCone<S>| LocalCone {
            m: l.m.map(|x| U::from_re(x.re())),
            layout: l.layout.clone(),
            n_aux: l.n_aux,
        };
        Lowered {
            pair: self.pair.clone(),
            mu: U::from_re(self.mu.re()),
            cone_a: c(&self.cone_a),
            cone_b: c(&self.cone_b),
            local_a: self.local_a.cast(),
            local_b: self.local_b.cast(),
            n: self.n,
            layout: self.layout.clone(),
        }
    }
}

/// One pair evaluated at `q⁺`.
#[derive(Clone, Debug)]
pub struct PairEval<S: Scalar> {
    /// Local residual rows (stationarity, feasibility, complementarity,
    /// contact law).
    pub rows: DVec<S>,
    /// Generalized impulse on body a (`W_aᵀ f`).
    pub gen_a: Vector6<S>,
    /// Generalized impulse on body b, if it is a body.
    pub gen_b: Option<Vector6<S>>,
    /// `α − 1`.
    pub gap: S,
    /// Witness point.
    pub point: Vec3<S>,
    /// Normal from b to a.
    pub normal: Vec3<S>,
    /// Tangents.
    pub tangents: (Vec3<S>, Vec3<S>),
    /// Contact-space `(φ, v_t1, v_t2)`.
    pub y: Vec3<S>,
}

/// Jordan product `u ∘ v` of a cone layout, generic.
fn jordan_layout<S: Scalar>(layout: &ConeLayout, u: &[S], v: &[S]) -> Vec<S> {
    let mut w = vec![S::zero(); layout.dim()];
    for i in 0..layout.n_orthant {
        w[i] = u[i] * v[i];
    }
    for (s, d) in layout.soc_blocks() {
        let mut dot = S::zero();
        for j in 0..d {
            dot += u[s + j] * v[s + j];
        }
        w[s] = dot;
        for j in 1..d {
            w[s + j] = u[s] * v[s + j] + v[s] * u[s + j];
        }
    }
    w
}

/// Evaluates pair `lp` with body a at `pose_a` (q⁺) moving with `va`, the
/// other side (body pose at q⁺ and velocity) or `None` for a static, and
/// local unknowns `u`, complementarity relaxed to `kappa`.
pub fn pair_eval<S: Scalar>(
    lp: &Lowered<S>,
    pose_a: &Pose<S>,
    va: &[S; 6],
    other: Option<(&Pose<S>, &[S; 6])>,
    h: S,
    u: &[S],
    kappa: S,
) -> Result<PairEval<S>, SolveError> {
    let (n, m) = (lp.n, lp.m());
    let law = lp.pair.law;
    let wa = *pose_a * lp.local_a;
    let wb = match other {
        Some((pb, _)) => *pb * lp.local_b,
        None => lp.local_b,
    };
    let pr = assemble(&lp.cone_a, &wa, &lp.cone_b, &wb);
    let w = DVec::from_column_slice(&u[..n]);
    let s = &u[n..n + m];
    let z = &u[n + m..n + 2 * m];
    let xk = DVec::from_column_slice(&u[n + 2 * m..]);
    let mut rows = DVec::zeros(lp.size());
    // Stationarity e_α + Gᵀ z.
    for j in 0..n {
        let mut acc = if j == 3 { S::one() } else { S::zero() };
        for i in 0..m {
            acc += pr.g[(i, j)] * z[i];
        }
        rows[j] = acc;
    }
    // Feasibility G w + s − h.
    let gw = &pr.g * &w;
    for i in 0..m {
        rows[n + i] = gw[i] + s[i] - pr.h[i];
    }
    // Complementarity s ∘ z − κ e.
    let c = jordan_layout(&lp.layout, s, z);
    for i in 0..m {
        rows[n + m + i] = c[i];
    }
    rows[n + m] -= kappa;
    for i in 1..lp.layout.n_orthant {
        rows[n + m + i] -= kappa;
    }
    for (st, _) in lp.layout.soc_blocks() {
        rows[n + m + st] -= kappa;
    }
    // Contact geometry from the collision unknowns.
    let alpha = w[3];
    let point = Vec3::new(w[0], w[1], w[2]);
    let mut da = Vec3::zeros();
    for i in 0..m {
        if pr.owner[i] == Owner::A {
            da -= Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * z[i];
        }
    }
    let (normal, _) = direction_or_z(&da);
    let (t1, t2) = tangent_basis_from(&normal, lp.pair.axis);
    let frame = [&normal, &t1, &t2];
    let retraction =
        |body| move |source| SolveError::from(DynamicsError::Retraction { body, source });
    let (mut vt, w_a) =
        side(pose_a, va, h, &point, frame, S::one()).map_err(retraction(lp.pair.a))?;
    let mut w_b = None;
    if let Some((pb, vb)) = other {
        let jb = match lp.pair.b {
            Partner::Body(j) => j,
            Partner::Static(_) => lp.pair.a,
        };
        let (vtb, wbm) = side(pb, vb, h, &point, frame, -S::one()).map_err(retraction(jb))?;
        vt += vtb;
        w_b = Some(wbm);
    }
    let y = Vec3::new(alpha - S::one(), t1.dot(&vt), t2.dot(&vt));
    let rc = local_residual(law, &xk, &y, lp.mu, kappa, None, false);
    rows.rows_mut(n + 2 * m, rc.len()).copy_from(&rc);
    let f = law.impulse(&xk);
    Ok(PairEval {
        rows,
        gen_a: w_a.transpose() * f,
        gen_b: w_b.map(|wb| wb.transpose() * f),
        gap: alpha - S::one(),
        point,
        normal,
        tangents: (t1, t2),
        y,
    })
}

/// A cone block of the island unknowns: `z` and `s` starts, dimension
/// (1: orthant), first residual row, Nesterov–Todd scaled (friction).
#[derive(Clone, Copy, Debug)]
struct ConeBlock {
    z: usize,
    s: usize,
    dim: usize,
    row: usize,
    nt: bool,
}

/// An island of the single-level problem.
struct Isl<T: Scalar> {
    /// Global body indices.
    bodies: Vec<usize>,
    /// Global → local body index.
    local: Vec<usize>,
    /// Pairs (lowered in T).
    pairs: Vec<Lowered<T>>,
    /// The same on primal values (the Newton matrix).
    pairs_f: Vec<Lowered<f64>>,
    /// Offset of each pair's unknowns in the island vector.
    offsets: Vec<usize>,
    /// Total unknowns.
    size: usize,
    /// Cone blocks.
    cones: Vec<ConeBlock>,
    /// Whether each row is an equality row.
    equality: Vec<bool>,
}

impl<T: Scalar> Isl<T> {
    fn new(bodies: Vec<usize>, local: Vec<usize>, pairs: Vec<Lowered<T>>) -> Self {
        let mut offsets = Vec::with_capacity(pairs.len());
        let mut off = 6 * bodies.len();
        let mut cones = Vec::new();
        let mut equality = vec![true; off];
        for lp in &pairs {
            offsets.push(off);
            let (n, m) = (lp.n, lp.m());
            let law = lp.pair.law;
            equality.extend(std::iter::repeat_n(true, n + m));
            equality.extend(std::iter::repeat_n(false, m));
            equality.extend(std::iter::repeat_n(true, law.equalities()));
            equality.extend(std::iter::repeat_n(false, law.size() - law.equalities()));
            let (s0, z0) = (off + n, off + n + m);
            for i in 0..lp.layout.n_orthant {
                cones.push(ConeBlock {
                    z: z0 + i,
                    s: s0 + i,
                    dim: 1,
                    row: z0 + i,
                    nt: false,
                });
            }
            for (st, d) in lp.layout.soc_blocks() {
                cones.push(ConeBlock {
                    z: z0 + st,
                    s: s0 + st,
                    dim: d,
                    row: z0 + st,
                    nt: false,
                });
            }
            let c0 = off + n + 2 * m;
            let mut row = c0 + law.equalities();
            for &(z, s) in law.orthant_pairs() {
                cones.push(ConeBlock {
                    z: c0 + z,
                    s: c0 + s,
                    dim: 1,
                    row,
                    nt: false,
                });
                row += 1;
            }
            for &(z, s) in law.soc_pairs() {
                cones.push(ConeBlock {
                    z: c0 + z,
                    s: c0 + s,
                    dim: 3,
                    row,
                    nt: true,
                });
                row += 3;
            }
            off += lp.size();
        }
        let pairs_f = pairs.iter().map(|lp| lp.cast()).collect();
        Isl {
            bodies,
            local,
            pairs,
            pairs_f,
            offsets,
            size: off,
            cones,
            equality,
        }
    }

    fn degree(&self) -> usize {
        self.cones.len()
    }
}

fn body_arrays<S: Scalar>(p: &StepProblem<'_, S>, g: usize, v: &[S]) -> ([S; 7], [S; 6]) {
    let b = &p.model.bodies[g];
    (
        core::array::from_fn(|k| p.q[b.idx_q + k]),
        core::array::from_fn(|k| v[k]),
    )
}

/// Island residual `r_κ(u)` and the pair evaluations.
fn island_residual<S: Scalar>(
    p: &StepProblem<'_, S>,
    isl_bodies: &[usize],
    local: &[usize],
    pairs: &[Lowered<S>],
    offsets: &[usize],
    u: &DVec<S>,
    kappa: S,
) -> Result<(DVec<S>, Vec<PairEval<S>>), SolveError> {
    let mut r = DVec::zeros(u.len());
    let mut poses = Vec::with_capacity(isl_bodies.len());
    let mut vels = Vec::with_capacity(isl_bodies.len());
    for (li, &g) in isl_bodies.iter().enumerate() {
        let vb: Vector6<S> = u.fixed_rows::<6>(6 * li).into_owned();
        let rb = body_residual(p.model, g, p.q, p.v, &vb, p.u, &p.gravity, p.h)?;
        r.fixed_rows_mut::<6>(6 * li).copy_from(&rb);
        let (q, v) = body_arrays(p, g, vb.as_slice());
        let pose = pose_after(&q, &v, p.h)
            .map_err(|source| DynamicsError::Retraction { body: g, source })?;
        poses.push(pose);
        vels.push(v);
    }
    let mut evals = Vec::with_capacity(pairs.len());
    for (lp, &off) in pairs.iter().zip(offsets) {
        let la = local[lp.pair.a];
        let other = match lp.pair.b {
            Partner::Body(j) => Some((&poses[local[j]], &vels[local[j]])),
            Partner::Static(_) => None,
        };
        let ev = pair_eval(
            lp,
            &poses[la],
            &vels[la],
            other,
            p.h,
            &u.as_slice()[off..off + lp.size()],
            kappa,
        )?;
        r.rows_mut(off, lp.size()).copy_from(&ev.rows);
        {
            let mut seg = r.fixed_rows_mut::<6>(6 * la);
            seg -= ev.gen_a;
        }
        if let (Partner::Body(j), Some(gb)) = (lp.pair.b, ev.gen_b) {
            let mut seg = r.fixed_rows_mut::<6>(6 * local[j]);
            seg -= gb;
        }
        evals.push(ev);
    }
    Ok((r, evals))
}

/// The problem cast to scalar `S` on primal values: `f64` for the Newton
/// matrix, the dual scalar [`D`] for the dual-number reference
/// ([`SingleLevel::newton_matrix_discrepancy`]).
struct CastProblem<S: Scalar> {
    model: crate::dynamics::Model<S>,
    shapes: Vec<Option<Shape<S>>>,
    materials: Vec<crate::geometry::Material<S>>,
    statics: Vec<crate::geometry::StaticGeometry<S>>,
    q: DVec<S>,
    v: DVec<S>,
    u: DVec<S>,
}

impl<S: Scalar> CastProblem<S> {
    fn new<T: Scalar>(p: &StepProblem<'_, T>) -> Self {
        let c = |x: &DVec<T>| x.map(|e| S::from_re(e.re()));
        CastProblem {
            model: p.model.cast(),
            shapes: p
                .shapes
                .iter()
                .map(|s| s.as_ref().map(|s| s.cast()))
                .collect(),
            materials: p.materials.iter().map(|m| m.cast()).collect(),
            statics: p.statics.iter().map(|s| s.cast()).collect(),
            q: c(p.q),
            v: c(p.v),
            u: c(p.u),
        }
    }
    fn problem<'a, T: Scalar>(&'a self, p: &StepProblem<'a, T>) -> StepProblem<'a, S> {
        StepProblem {
            model: &self.model,
            shapes: &self.shapes,
            materials: &self.materials,
            statics: &self.statics,
            link_shapes: &[],
            friction_combine: p.friction_combine,
            restitution_combine: p.restitution_combine,
            q: &self.q,
            v: &self.v,
            u: &self.u,
            gravity: p.gravity.map(|x| S::from_re(x.re())),
            h: S::from_re(p.h.re()),
            friction_cone: p.friction_cone,
            params: p.params,
            ccd: p.ccd,
        }
    }
}

/// Exact primal `∂r/∂u` of an island at `u`, by forward-mode dual numbers
/// over the whole island residual (column blocks of 16) except the slack
/// columns. The reference for [`island_jacobian`]
/// ([`SingleLevel::newton_matrix_discrepancy`]); not used by the solver.
fn island_jacobian_dual<T: Scalar>(
    pd: &StepProblem<'_, D>,
    isl: &Isl<T>,
    pairs_d: &[Lowered<D>],
    u: &DVec<f64>,
) -> Result<DMat<f64>, SolveError> {
    let n = u.len();
    let mut j = DMat::zeros(n, n);
    let mut is_slack = vec![false; n];
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        is_slack[off + lp.n..off + lp.n + lp.m()].fill(true);
    }
    let cols: Vec<usize> = (0..n).filter(|&c| !is_slack[c]).collect();
    for block in cols.chunks(BLOCK) {
        let mut ud = u.map(D::from_re);
        for (k, &c) in block.iter().enumerate() {
            ud[c] = D::from_re(u[c]).derivative(k);
        }
        let (r, _) = island_residual(
            pd,
            &isl.bodies,
            &isl.local,
            pairs_d,
            &isl.offsets,
            &ud,
            D::from_re(0.0),
        )?;
        for (i, ri) in r.iter().enumerate() {
            let g = ri.eps.unwrap_generic(Const::<BLOCK>, U1);
            for (k, &c) in block.iter().enumerate() {
                j[(i, c)] = g[k];
            }
        }
    }
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        slack_columns(lp.n, &lp.layout, off, u, &mut j);
    }
    Ok(j)
}

/// The slack columns of a pair's collision program and its
/// complementarity rows: `s` enters only the feasibility rows, as `I`, and
/// the complementarity rows (from `z0`), as `∂(s ∘ z)/∂s = Arw(z)`; those
/// rows take `∂(s ∘ z)/∂z = Arw(s)` in the `z` columns.
fn slack_columns(n: usize, layout: &ConeLayout, off: usize, u: &DVec<f64>, j: &mut DMat<f64>) {
    let m = layout.dim();
    let (s0, z0) = (off + n, off + n + m);
    for i in 0..m {
        j[(s0 + i, s0 + i)] = 1.0;
    }
    // (row block, column block, the other factor's start)
    for (col, other) in [(s0, z0), (z0, s0)] {
        for i in 0..layout.n_orthant {
            j[(z0 + i, col + i)] = u[other + i];
        }
        for (st, d) in layout.soc_blocks() {
            for k in 0..d {
                j[(z0 + st, col + st + k)] = u[other + st + k];
            }
            for k in 1..d {
                j[(z0 + st + k, col + st)] = u[other + st + k];
                j[(z0 + st + k, col + st + k)] = u[other + st];
            }
        }
    }
}

/// Gradient part of an `N`-wide dual.
fn grad<const N: usize>(x: &DualSVec64<N>) -> nalgebra::SVector<f64, N> {
    x.eps.unwrap_generic(Const::<N>, U1)
}

/// A dual with value `re` and gradient `g`.
fn with_grad<const N: usize>(re: f64, g: nalgebra::SVector<f64, N>) -> DualSVec64<N> {
    DualSVec64::new(re, num_dual::Derivative::some(g))
}

/// Derivatives of a pair's contact frame and impulse maps
/// ([`pair_jacobian`]): for `y_t = (t₁·v_t, t₂·v_t)` and the generalized
/// impulses `W_aᵀ f`, `W_bᵀ f` at fixed `f`, their gradients with respect
/// to the dual slots `v_a` (0–5), `v_b` (6–11, `N = 18` only), the witness
/// point `p` (`N − 6 … N − 4`) and the unnormalized normal `d_a`
/// (`N − 3 … N − 1`).
struct FrameGrads<const N: usize> {
    yt: [nalgebra::SVector<f64, N>; 2],
    gen: [Option<[nalgebra::SVector<f64, N>; 6]>; 2],
    /// Primal `W_a`, `W_b`.
    w: [Option<nalgebra::Matrix3x6<f64>>; 2],
}

/// One side of a pair at `q⁺`: body translation `r⁺`, velocity `v⁺`, and
/// `Θ = ∂θ/∂ω⁺ = h L(hω⁺)` (world-frame rotation increment of the pose).
struct SideState {
    r: Vec3<f64>,
    v: [f64; 6],
    theta: nalgebra::Matrix3<f64>,
}

#[allow(clippy::too_many_arguments)]
fn frame_grads<const N: usize>(
    a: &SideState,
    b: Option<&SideState>,
    h: f64,
    p: &Vec3<f64>,
    da: &Vec3<f64>,
    axis: usize,
    f: &Vec3<f64>,
) -> Result<FrameGrads<N>, crate::math::RetractionError> {
    type V<const M: usize> = nalgebra::SVector<f64, M>;
    let (sp, sd) = (N - 6, N - 3);
    let seed = |x: f64, k: usize| DualSVec64::<N>::from_re(x).derivative(k);
    let side_state = |st: &SideState, slot: usize| {
        // r⁺ = r + h v_lin: the pose's translation as a dual (the rotation
        // is not used by `side`).
        let v: [DualSVec64<N>; 6] = core::array::from_fn(|k| seed(st.v[k], slot + k));
        let t = Vec3::from_fn(|d, _| {
            let mut g = V::<N>::zeros();
            g[slot + d] = h;
            with_grad(st.r[d], g)
        });
        (Pose::new(crate::math::so3::identity(), t), v)
    };
    let hk = DualSVec64::<N>::from_re(h);
    let pk = Vec3::from_fn(|d, _| seed(p[d], sp + d));
    // d_a(v_a, z): δd_a = δθ_a × d_a = −[d_a]× Θ_a δω_a, plus its own slots.
    let dtheta = -(crate::math::skew(da) * a.theta);
    let dak = Vec3::from_fn(|d, _| {
        let mut g = V::<N>::zeros();
        for k in 0..3 {
            g[3 + k] = dtheta[(d, k)];
        }
        g[sd + d] = 1.0;
        with_grad(da[d], g)
    });
    let (normal, _) = direction_or_z(&dak);
    let (t1, t2) = tangent_basis_from(&normal, axis);
    let frame = [&normal, &t1, &t2];
    let (pose_a, va) = side_state(a, 0);
    let (mut vt, w_a) = side(&pose_a, &va, hk, &pk, frame, DualSVec64::from_re(1.0))?;
    let mut w_b = None;
    if let Some(b) = b {
        let (pose_b, vb) = side_state(b, 6);
        let (vtb, wbm) = side(&pose_b, &vb, hk, &pk, frame, DualSVec64::from_re(-1.0))?;
        vt += vtb;
        w_b = Some(wbm);
    }
    let fk = f.map(DualSVec64::<N>::from_re);
    let gens = |w: &nalgebra::Matrix3x6<DualSVec64<N>>| {
        let g = w.transpose() * fk;
        core::array::from_fn(|r| grad(&g[r]))
    };
    Ok(FrameGrads {
        yt: [grad(&t1.dot(&vt)), grad(&t2.dot(&vt))],
        gen: [Some(gens(&w_a)), w_b.as_ref().map(gens)],
        w: [Some(w_a.map(|x| x.re())), w_b.map(|w| w.map(|x| x.re()))],
    })
}

/// Exact primal `∂r/∂u` of an island at `u` (`j` is resized and
/// overwritten), in closed form except for the pose kinematics (below).
///
/// The rows of a pair (`super` module docs) are linear or bilinear in its
/// own unknowns: stationarity `e_α + G(q⁺)ᵀ z` (`∂/∂z = Gᵀ`), feasibility
/// `G(q⁺) w + s − h(q⁺)` (`∂/∂w = G`, `∂/∂s = I`), the complementarity
/// rows (`Arw(z)`, `Arw(s)`) and the contact law (`ipm`'s closed-form
/// local Jacobian `∂r/∂x`, `∂r/∂y`). Only the part poses `q⁺(v⁺)`, the
/// contact frame (the normal is the direction of
/// `d_a = −Σ_{rows of a} G_pᵀ z`) and the impulse maps `W(q⁺, p, n)` are
/// nonlinear; their derivatives with respect to the 18 inputs
/// `(v_a, v_b, p, d_a)` come from ONE evaluation in an 18-wide dual
/// ([`K`]), as `ipm` does for its contact kinematics
/// (`contact::space::contact_jacobian`), and reach the `z`
/// columns through `∂d_a/∂z_i = −G_{p,i}ᵀ`. `∂G/∂v⁺` needs only the
/// p-columns of `G` (the α and ε columns do not depend on the pose):
/// `G_{p,i}(p − r) = −M_{y,i} Rᵀ (p − r)` and `G_pᵀ z = −R Σ M_{y,i}ᵀ z_i`
/// per shape. The dynamics rows take `dynamics::free`'s closed-form
/// `∂r_dyn/∂v⁺`.
fn island_jacobian<T: Scalar>(
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    u: &DVec<f64>,
    j: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let n = u.len();
    if j.shape() != (n, n) {
        *j = DMat::zeros(n, n);
    } else {
        // slice fill: a memset (nalgebra's `fill` walks the entries one by one)
        j.as_mut_slice().fill(0.0);
    }
    for (li, &g) in isl.bodies.iter().enumerate() {
        let vb: Vector6<f64> = u.fixed_rows::<6>(6 * li).into_owned();
        let (_, jac) = crate::contact::space::evaluate::body_dynamics(pf, g, &vb)?;
        j.fixed_view_mut::<6, 6>(6 * li, 6 * li).copy_from(&jac);
    }
    for (lp, &off) in isl.pairs_f.iter().zip(&isl.offsets) {
        pair_jacobian(pf, isl, lp, off, u, j)?;
        slack_columns(lp.n, &lp.layout, off, u, j);
    }
    Ok(())
}

/// The entries of pair `lp` (unknowns from `off`) in [`island_jacobian`].
fn pair_jacobian<T: Scalar>(
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    lp: &Lowered<f64>,
    off: usize,
    u: &DVec<f64>,
    j: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let (n, m) = (lp.n, lp.m());
    let law = lp.pair.law;
    let c0 = off + n + 2 * m;
    let h = pf.h;
    let la = isl.local[lp.pair.a];
    let (gb, lb) = match lp.pair.b {
        Partner::Body(g) => (g, Some(isl.local[g])),
        Partner::Static(_) => (lp.pair.a, None),
    };
    let retraction =
        |body| move |source| SolveError::from(DynamicsError::Retraction { body, source });
    // Body pose at q⁺ and Θ = h L(hω⁺) (`pose_after`: r⁺ = r + h v,
    // R⁺ = φ(hω⁺) R, so δR⁺ = [Θ δω]× R⁺).
    let body_state = |g: usize, li: usize| -> Result<(Pose<f64>, SideState), SolveError> {
        let b = &pf.model.bodies[g];
        let q: [f64; 7] = core::array::from_fn(|k| pf.q[b.idx_q + k]);
        let v: [f64; 6] = core::array::from_fn(|k| u[6 * li + k]);
        let pose = pose_after(&q, &v, h).map_err(retraction(g))?;
        let w = Vec3::new(v[3], v[4], v[5]) * h;
        let theta =
            crate::contact::space::phi_rotation_jacobian(&w).map_err(retraction(g))? * h;
        let r = pose.translation;
        Ok((pose, SideState { r, v, theta }))
    };
    let (pose_a, sa) = body_state(lp.pair.a, la)?;
    let wa = pose_a * lp.local_a;
    let (sb, wb) = match lb {
        Some(lb) => {
            let (pose_b, sb) = body_state(gb, lb)?;
            (Some(sb), pose_b * lp.local_b)
        }
        None => (None, lp.local_b),
    };
    let pr = assemble(&lp.cone_a, &wa, &lp.cone_b, &wb);
    let z = &u.as_slice()[off + n + m..off + 2 * m + n];
    // Stationarity (rows off..off+n) and feasibility (rows off+n..) in
    // the collision unknowns.
    for i in 0..m {
        for c in 0..n {
            let g = pr.g[(i, c)];
            j[(off + n + i, off + c)] = g;
            j[(off + c, off + n + m + i)] = g;
        }
    }
    // Their pose derivatives, per moving shape with body translation r⁺:
    // `G_{p,i}(p − r_part) = −M_{y,i} R_partᵀ(p − r_part)` varies by
    // `G_{p,i}(−h δv + [p − r⁺]× Θ δω)`; the p-rows of `Gᵀz`,
    // `g = Σ_i G_{p,i}ᵀ z_i`, by `−[g]× Θ δω`.
    let p = Vec3::new(u[off], u[off + 1], u[off + 2]);
    let gsum = |who: Owner| -> Vec3<f64> {
        let mut acc = Vec3::zeros();
        for i in 0..m {
            if pr.owner[i] == who {
                acc += Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * z[i];
            }
        }
        acc
    };
    let g_a = gsum(Owner::A);
    for (who, st, li) in [(Owner::A, Some(&sa), Some(la)), (Owner::B, sb.as_ref(), lb)] {
        let (Some(st), Some(li)) = (st, li) else {
            continue;
        };
        let lever = crate::math::skew(&(p - st.r)) * st.theta;
        let gs = if who == Owner::A { g_a } else { gsum(who) };
        let dstat = -(crate::math::skew(&gs) * st.theta);
        for i in 0..m {
            if pr.owner[i] != who {
                continue;
            }
            let gp = Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]);
            let ang = lever.transpose() * gp;
            for d in 0..3 {
                j[(off + n + i, 6 * li + d)] += -h * gp[d];
                j[(off + n + i, 6 * li + 3 + d)] += ang[d];
            }
        }
        for r in 0..3 {
            for d in 0..3 {
                j[(off + r, 6 * li + 3 + d)] += dstat[(r, d)];
            }
        }
    }
    // Contact geometry: the normal from `d_a = −g_a`, the witness point,
    // the impulse maps at `q⁺` (dual slots, [`frame_grads`]).
    let xk = DVec::from_column_slice(&u.as_slice()[c0..c0 + law.size()]);
    let f = law.impulse(&xk);
    let da = -g_a;
    let axis = lp.pair.axis;
    let at = PairAt {
        la,
        lb,
        off,
        n,
        m,
        c0,
        law,
        mu: lp.mu,
    };
    match &sb {
        Some(sb) => {
            let fg =
                frame_grads::<18>(&sa, Some(sb), h, &p, &da, axis, &f).map_err(retraction(gb))?;
            at.fill(&fg, &pr, &xk, j);
        }
        None => {
            let fg = frame_grads::<12>(&sa, None, h, &p, &da, axis, &f)
                .map_err(retraction(lp.pair.a))?;
            at.fill(&fg, &pr, &xk, j);
        }
    }
    Ok(())
}

/// Where a pair's unknowns and bodies sit in the island ([`pair_jacobian`]).
struct PairAt {
    la: usize,
    lb: Option<usize>,
    off: usize,
    n: usize,
    m: usize,
    c0: usize,
    law: Law,
    mu: f64,
}

impl PairAt {
    /// Adds the contact rows and the contact impulses' dynamics entries
    /// from the frame gradients.
    fn fill<const N: usize>(
        &self,
        fg: &FrameGrads<N>,
        pr: &crate::collision::conic::ConicProblem<f64>,
        xk: &DVec<f64>,
        j: &mut DMat<f64>,
    ) {
        let PairAt {
            la,
            lb,
            off,
            n,
            m,
            c0,
            law,
            mu,
        } = *self;
        let (sp, sd) = (N - 6, N - 3);
        // Column of dual slot k (the d_a slots spread over the z columns of a).
        let spread = |k: usize, val: f64, row: usize, j: &mut DMat<f64>| {
            if val == 0.0 {
                return;
            }
            if k < 6 {
                j[(row, 6 * la + k)] += val;
            } else if k < sp {
                if let Some(lb) = lb {
                    j[(row, 6 * lb + k - 6)] += val;
                }
            } else if k < sd {
                j[(row, off + k - sp)] += val;
            } else {
                for i in 0..m {
                    if pr.owner[i] == Owner::A {
                        // ∂d_a/∂z_i = −G_{p,i}ᵀ
                        j[(row, off + n + m + i)] -= val * pr.g[(i, k - sd)];
                    }
                }
            }
        };
        // Contact rows: ∂r/∂x, ∂r/∂y with y = (α − 1, t₁·v_t, t₂·v_t).
        let (ax, cy) = crate::contact::law::local_jacobian(law, xk, mu, false);
        let ls = law.size();
        for r in 0..ls {
            for c in 0..ls {
                j[(c0 + r, c0 + c)] = ax[(r, c)];
            }
            j[(c0 + r, off + 3)] += cy[(r, 0)];
            for k in 0..N {
                let val = cy[(r, 1)] * fg.yt[0][k] + cy[(r, 2)] * fg.yt[1][k];
                spread(k, val, c0 + r, j);
            }
        }
        // Dynamics rows: −Wᵀ E x.
        let e = law.impulse_map::<f64>();
        for (side_k, lbody) in [(0, Some(la)), (1, lb)] {
            let (Some(lbody), Some(gg), Some(w)) = (lbody, &fg.gen[side_k], fg.w[side_k]) else {
                continue;
            };
            let we = w.transpose() * &e;
            for r in 0..6 {
                for c in 0..ls {
                    j[(6 * lbody + r, c0 + c)] -= we[(r, c)];
                }
                for k in 0..N {
                    spread(k, -gg[r][k], 6 * lbody + r, j);
                }
            }
        }
    }
}

fn v3<T: Scalar>(u: &DVec<T>, i: usize) -> Vec3<T> {
    Vec3::new(u[i], u[i + 1], u[i + 2])
}

/// Smallest relative distance `(x₀ − ‖x₁‖) / x₀` to the boundary of `Q³`
/// at which a pair is Nesterov–Todd scaled.
const NT_MARGIN: f64 = 1e-10;

/// The Nesterov–Todd scaling `(W, W⁻¹, λ)` of a friction cone pair, or
/// `None` when `z` or `s` is within [`NT_MARGIN`] of the cone boundary
/// (relative) or the scaling is not finite. At small ρ a sliding contact
/// has both `z` and `s` this close to the boundary: `det = x₀² − ‖x₁‖²`
/// then cancels to round-off (or below zero) and the scaling is NaN, which
/// made the whole direction NaN and the step stall at the iteration cap.
/// Such a pair keeps the plain linearization `Arw(s) dz + Arw(z) ds` for
/// the iteration (decided on primal values).
fn nt_safe(z: &Vec3<f64>, s: &Vec3<f64>) -> Option<(Matrix3<f64>, Matrix3<f64>, Vec3<f64>)> {
    let rel = |x: &Vec3<f64>| {
        (x[0] - (x[1] * x[1] + x[2] * x[2]).sqrt()) / x[0].abs().max(f64::MIN_POSITIVE)
    };
    if !(rel(z) > NT_MARGIN && rel(s) > NT_MARGIN) {
        return None;
    }
    let (w, winv, lambda) = nt_scaling(z, s);
    let finite = w
        .iter()
        .chain(winv.iter())
        .chain(lambda.iter())
        .all(|x| x.is_finite());
    finite.then_some((w, winv, lambda))
}

/// `j` = `plain` with the friction cone rows replaced by their
/// Nesterov–Todd scaled linearization `Arw(λ)(W⁻¹ dz + W ds)` (where
/// [`nt_safe`] allows it); `false` (and `j` untouched) when no row is
/// scaled.
fn scale_rows(
    isl_cones: &[ConeBlock],
    plain: &DMat<f64>,
    j: &mut DMat<f64>,
    u: &DVec<f64>,
) -> bool {
    let mut copied = false;
    for c in isl_cones.iter().filter(|c| c.nt) {
        let Some((w, winv, lambda)) = nt_safe(&v3(u, c.z), &v3(u, c.s)) else {
            continue;
        };
        if !copied {
            if j.shape() != plain.shape() {
                *j = plain.clone();
            } else {
                j.as_mut_slice().copy_from_slice(plain.as_slice());
            }
            copied = true;
        }
        let al = arrow(&lambda);
        for r in 0..3 {
            j.row_mut(c.row + r).fill(0.0);
        }
        j.view_mut((c.row, c.z), (3, 3)).copy_from(&(al * winv));
        j.view_mut((c.row, c.s), (3, 3)).copy_from(&(al * w));
    }
    copied
}

/// Right-hand side of a direction: `r_κ` with the complementarity rows
/// replaced (NT rows: `λ∘λ − κe`, where [`nt_safe`] allows the scaling,
/// as in [`scale_rows`]) and the Mehrotra term of `corr` added.
fn direction_rhs<T: Scalar>(
    cones: &[ConeBlock],
    r0: &DVec<T>,
    u: &DVec<T>,
    kappa: f64,
    corr: Option<&DVec<f64>>,
    nt: bool,
) -> DVec<T> {
    let mut r = r0.clone();
    let k = T::from_re(kappa);
    let ur = u.map(|x| x.re());
    for c in cones {
        r[c.row] -= k;
        let scaled = if c.nt && nt {
            nt_safe(&v3(&ur, c.z), &v3(&ur, c.s))
        } else {
            None
        };
        if let Some((w, winv, _)) = scaled {
            let (_, _, lambda) = nt_scaling(&v3(u, c.z), &v3(u, c.s));
            let mut l = jordan(&lambda, &lambda);
            l[0] -= k;
            if let Some(d) = corr {
                let add = jordan(&(winv * v3(d, c.z)), &(w * v3(d, c.s)));
                l += add.map(T::from_re);
            }
            r.fixed_rows_mut::<3>(c.row).copy_from(&l);
        } else if let Some(d) = corr {
            if c.dim == 1 {
                r[c.row] += T::from_re(d[c.z] * d[c.s]);
            } else {
                let lay = ConeLayout {
                    n_orthant: 0,
                    soc: vec![c.dim],
                };
                let dz = DVec::from_fn(c.dim, |i, _| d[c.z + i]);
                let ds = DVec::from_fn(c.dim, |i, _| d[c.s + i]);
                let add = lay.jordan(&dz, &ds);
                for i in 0..c.dim {
                    r[c.row + i] += T::from_re(add[i]);
                }
            }
        }
    }
    r
}

struct Meas {
    eq: f64,
    comp_dev: f64,
    comp_max: f64,
    merit: f64,
}

/// Measures of `r_0` (κ = 0 residual) at target κ.
fn measures<T: Scalar>(isl: &Isl<T>, r0: &DVec<T>, u: &DVec<T>, kappa: f64) -> Meas {
    let mut r: Vec<f64> = r0.iter().map(|x| x.re()).collect();
    for c in &isl.cones {
        r[c.row] -= kappa;
    }
    let (mut eq, mut comp_dev, mut merit) = (0.0_f64, 0.0_f64, 0.0);
    for (i, ri) in r.iter().enumerate() {
        merit += ri * ri;
        if isl.equality[i] {
            eq = eq.max(ri.abs());
        } else {
            comp_dev = comp_dev.max(ri.abs());
        }
    }
    let mut comp_max: f64 = 0.0;
    for c in &isl.cones {
        let d: f64 = (0..c.dim).map(|i| u[c.z + i].re() * u[c.s + i].re()).sum();
        comp_max = comp_max.max(d);
    }
    Meas {
        eq,
        comp_dev,
        comp_max,
        merit,
    }
}

fn mean_comp<T: Scalar>(isl: &Isl<T>, u: &DVec<T>, du: Option<(&DVec<f64>, f64)>) -> f64 {
    let val = |i: usize| {
        let mut v = u[i].re();
        if let Some((d, a)) = du {
            v += a * d[i];
        }
        v
    };
    let mut sum = 0.0;
    for c in &isl.cones {
        sum += (0..c.dim).map(|i| val(c.z + i) * val(c.s + i)).sum::<f64>();
    }
    sum / isl.degree().max(1) as f64
}

fn boundary_step<T: Scalar>(isl: &Isl<T>, u: &DVec<T>, du: &DVec<f64>) -> f64 {
    let mut a = f64::INFINITY;
    for c in &isl.cones {
        for base in [c.z, c.s] {
            if c.dim == 1 {
                a = a.min(orthant_step(u[base].re(), du[base]));
            } else {
                let lay = ConeLayout {
                    n_orthant: 0,
                    soc: vec![c.dim],
                };
                let x = DVec::from_fn(c.dim, |i, _| u[base + i].re());
                let d = DVec::from_fn(c.dim, |i, _| du[base + i]);
                a = a.min(lay.max_step(&x, &d));
            }
        }
    }
    a
}

/// The result of one island's solve.
struct IslSol<T: Scalar> {
    u: DVec<T>,
    evals: Vec<PairEval<T>>,
    iterations: usize,
    residual: f64,
    complementarity: f64,
    capped: bool,
}

/// A Newton matrix factored once (f64 LU with partial pivoting, packed,
/// in reusable storage) and applied to right-hand sides in any scalar: the
/// matrix is primal, so `J⁻¹ r` in a dual scalar is the same as factoring
/// `J` embedded in that scalar. (`linalg::DenseLu<f64>` factors the same
/// way but solves only `f64` right-hand sides.)
#[derive(Default)]
struct Factored {
    lu: DMat<f64>,
    /// Step `k` swapped rows `k` and `piv[k]`.
    piv: Vec<usize>,
}

impl Factored {
    /// Factors `j` in place of the previous factors.
    fn factor(&mut self, j: &DMat<f64>) -> Result<(), SolveError> {
        let n = j.nrows();
        if self.lu.shape() != (n, n) {
            self.lu = DMat::zeros(n, n);
        }
        self.lu.as_mut_slice().copy_from_slice(j.as_slice());
        self.piv.clear();
        self.piv.resize(n, 0);
        let ok = lu_dispatch(self.lu.as_mut_slice(), n, &mut self.piv);
        if ok {
            Ok(())
        } else {
            Err(SolveError::Singular("single-level Newton system"))
        }
    }

    /// The Newton direction `−J⁻¹ rhs`.
    fn solve<T: Scalar>(&self, rhs: &DVec<T>) -> DVec<T> {
        let mut x = rhs.clone();
        let n = x.len();
        let xs = x.as_mut_slice();
        for (k, &p) in self.piv.iter().enumerate() {
            xs.swap(k, p);
        }
        let lu = &self.lu.as_slice()[..n * n];
        // forward (unit lower), column oriented
        for k in 0..n {
            let (head, tail) = xs.split_at_mut(k + 1);
            let xk = head[k];
            if xk.re() != 0.0 || T::DERIVATIVE_ORDER > 0 {
                for (xi, &l) in tail.iter_mut().zip(&lu[k * n + k + 1..(k + 1) * n]) {
                    if l != 0.0 {
                        *xi -= xk * T::from_re(l);
                    }
                }
            }
        }
        for k in (0..n).rev() {
            let col = &lu[k * n..(k + 1) * n];
            let (head, tail) = xs.split_at_mut(k);
            let xk = tail[0] / T::from_re(col[k]);
            tail[0] = xk;
            for (xi, &u) in head.iter_mut().zip(&col[..k]) {
                if u != 0.0 {
                    *xi -= xk * T::from_re(u);
                }
            }
        }
        for v in xs.iter_mut() {
            *v = -*v;
        }
        x
    }
}

/// The LU factorization of [`Factored::factor`] compiled for AVX2 when the
/// processor has it (the same operations in the same order, no FMA
/// contraction: bit for bit the baseline's result, wider registers).
fn lu_dispatch(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor supports AVX2 (checked just above).
            return unsafe { lu_avx2(lu, n, piv) };
        }
    }
    lu_in_place(lu, n, piv)
}

/// [`lu_in_place`] compiled with AVX2 enabled.
///
/// # Safety
/// The processor must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lu_avx2(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    lu_in_place(lu, n, piv)
}

/// Packed LU with partial pivoting of the column-major `n × n` matrix
/// `lu` (step `k` swaps rows `k` and `piv[k]`); `false` when a pivot
/// column is zero or not finite.
#[inline(always)]
fn lu_in_place(lu: &mut [f64], n: usize, piv: &mut [usize]) -> bool {
    let lu = &mut lu[..n * n];
    let piv = &mut piv[..n];
    // column-major: (i, k) at i + n k
    for k in 0..n {
        let col = &lu[k * n..(k + 1) * n];
        let mut best = k;
        let mut best_val = col[k].abs();
        for (i, v) in col.iter().enumerate().skip(k + 1) {
            if v.abs() > best_val {
                best = i;
                best_val = v.abs();
            }
        }
        if best_val == 0.0 || !best_val.is_finite() {
            return false;
        }
        if best != k {
            for c in lu.chunks_exact_mut(n) {
                c.swap(k, best);
            }
        }
        piv[k] = best;
        let inv = 1.0 / lu[k + n * k];
        for v in &mut lu[k * n + k + 1..(k + 1) * n] {
            *v *= inv;
        }
        let (left, right) = lu.split_at_mut((k + 1) * n);
        let lcol = &left[k * n + k + 1..(k + 1) * n];
        for colc in right.chunks_exact_mut(n) {
            let ukc = colc[k];
            if ukc != 0.0 {
                for (x, l) in colc[k + 1..].iter_mut().zip(lcol) {
                    *x -= l * ukc;
                }
            }
        }
    }
    true
}

/// The pair's collision program at body poses `poses` (island order),
/// solved to its central point `s ∘ z = mu0 e`.
fn pair_proximity<T: Scalar>(
    lp: &Lowered<T>,
    poses: &[Pose<T>],
    local: &[usize],
    mu0: f64,
) -> Result<crate::collision::conic::Proximity, SolveError> {
    let wa = (poses[local[lp.pair.a]] * lp.local_a).cast::<f64>();
    let wb = match lp.pair.b {
        Partner::Body(j) => (poses[local[j]] * lp.local_b).cast::<f64>(),
        Partner::Static(_) => lp.local_b.cast::<f64>(),
    };
    let ca = LocalCone {
        m: lp.cone_a.m.map(|x| x.re()),
        layout: lp.cone_a.layout.clone(),
        n_aux: lp.cone_a.n_aux,
    };
    let cb = LocalCone {
        m: lp.cone_b.m.map(|x| x.re()),
        layout: lp.cone_b.layout.clone(),
        n_aux: lp.cone_b.n_aux,
    };
    let pr = assemble(&ca, &wa, &cb, &wb);
    Ok(
        match solve_problem(
            &pr,
            &ConicParams {
                tol_gap: mu0,
                ..ConicParams::default()
            },
        ) {
            Ok(x) => x,
            Err(_) => solve_problem(
                &pr,
                &ConicParams {
                    tol_gap: 1e-8,
                    ..ConicParams::default()
                },
            )?,
        },
    )
}

/// Initial island unknowns (module docs).
fn initial_point<T: Scalar>(
    p: &StepProblem<'_, T>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<DVec<T>, SolveError> {
    let scale = params.initial_scale;
    let mut u = DVec::zeros(isl.size);
    let mu0 = (scale * scale).max(p.params.rho);
    // v⁺₀ = v₀; every collision program at q ⊕ h v⁺₀.
    let mut poses = Vec::with_capacity(isl.bodies.len());
    for (li, &g) in isl.bodies.iter().enumerate() {
        let (q, v) = body_arrays(p, g, &v0.as_slice()[6 * li..6 * li + 6]);
        poses.push(
            pose_after(&q, &v, p.h)
                .map_err(|source| DynamicsError::Retraction { body: g, source })?,
        );
    }
    let proxes = isl
        .pairs
        .iter()
        .map(|lp| pair_proximity(lp, &poses, &isl.local, mu0))
        .collect::<Result<Vec<_>, _>>()?;
    u.rows_mut(0, v0.len()).copy_from(v0);
    for ((lp, &off), prox) in isl.pairs.iter().zip(&isl.offsets).zip(proxes) {
        let (n, m) = (lp.n, lp.m());
        let sol = &prox.solution;
        for i in 0..n {
            u[off + i] = T::from_re(sol.x[i]);
        }
        for i in 0..m {
            u[off + n + i] = T::from_re(sol.s[i]);
            u[off + n + m + i] = T::from_re(sol.z[i]);
        }
        let x0: DVec<T> = lp.pair.law.initial(scale);
        u.rows_mut(off + n + 2 * m, x0.len()).copy_from(&x0);
    }
    // Contact unknowns on their linear equalities where the cones allow it.
    let (_, evals) = island_residual(
        p,
        &isl.bodies,
        &isl.local,
        &isl.pairs,
        &isl.offsets,
        &u,
        T::from_re(p.params.rho),
    )?;
    let sc = T::from_re(scale);
    for ((lp, &off), ev) in isl.pairs.iter().zip(&isl.offsets).zip(&evals) {
        let c0 = off + lp.n + 2 * lp.m();
        let y = ev.y;
        if y[0].re() > u[c0 + 1].re() {
            u[c0 + 1] = y[0];
        }
        match lp.pair.law {
            Law::Frictionless => {}
            Law::Exact => {
                u[c0 + 2] = lp.mu * u[c0];
                u[c0 + 6] = y[1];
                u[c0 + 7] = y[2];
                u[c0 + 5] = safe_norm(&Vec3::new(y[1], y[2], T::zero())) + sc;
            }
            Law::Pyramid => {
                let psi = y[1].abs() + y[2].abs() + sc;
                let beta = lp.mu * u[c0] * T::from_re(0.125);
                for k in 0..4 {
                    u[c0 + 2 + k] = beta;
                }
                u[c0 + 6] = psi + y[1];
                u[c0 + 7] = psi - y[1];
                u[c0 + 8] = psi + y[2];
                u[c0 + 9] = psi - y[2];
                u[c0 + 10] = psi;
                u[c0 + 11] = lp.mu * u[c0] * T::from_re(0.5);
            }
        }
    }
    Ok(u)
}

/// One attempt at an island: at most `cap` iterations. With `stall =
/// Some((k, a))` the attempt gives up after `k` or more iterations when
/// its equalities are not met and its last [`STALL_STEPS`] accepted steps
/// were shorter than `a`, returning
/// [`SolveError::MaxIterations`] with `iters < cap` (see
/// [`Params::restart_after`]).
fn solve_island<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    cap: usize,
    stall: Option<(usize, f64)>,
    start: Option<DVec<T>>,
) -> Result<IslSol<T>, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
    let mut u = match start {
        Some(u) => u,
        None => initial_point(p, isl, v0, params)?,
    };
    let res = |u: &DVec<T>| {
        island_residual(
            p,
            &isl.bodies,
            &isl.local,
            &isl.pairs,
            &isl.offsets,
            u,
            T::zero(),
        )
    };
    let (mut r0, mut evals) = res(&u)?;
    let mut iter = 0;
    // Consecutive iterations whose accepted step was short (stall test).
    let mut short_steps = 0_usize;
    // Newton matrices and their factors, reused across iterations.
    let mut j_plain = DMat::zeros(0, 0);
    let mut j_nt = DMat::zeros(0, 0);
    let mut lu_nt = Factored::default();
    let mut lu_plain = Factored::default();
    let tracing = trace::enabled();
    loop {
        let m = measures(isl, &r0, &u, rho);
        if m.eq <= sp.tolerance
            && m.comp_dev <= (params.complementarity_tolerance * rho).max(COMP_FLOOR)
        {
            for _ in 0..params.polish_steps {
                let ur = u.map(|x| x.re());
                island_jacobian(pf, isl, &ur, &mut j_plain)?;
                lu_plain.factor(&j_plain)?;
                let rhs = direction_rhs(&isl.cones, &r0, &u, rho, None, false);
                let du = lu_plain.solve(&rhs);
                let dre = du.map(|x| x.re());
                if boundary_step(isl, &u, &dre) <= 1.0 {
                    break;
                }
                let ut = &u + &du;
                let Ok((rt, et)) = res(&ut) else { break };
                u = ut;
                r0 = rt;
                evals = et;
            }
            let m = measures(isl, &r0, &u, rho);
            return Ok(IslSol {
                u,
                evals,
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: false,
            });
        }
        let stalled = iter < cap
            && m.eq > sp.tolerance
            && stall.is_some_and(|(k, _)| iter >= k && short_steps >= STALL_STEPS);
        if iter >= cap && sp.accept_at_cap {
            return Ok(IslSol {
                u,
                evals,
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if iter >= cap || stalled {
            return Err(SolveError::MaxIterations {
                iters: iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        iter += 1;
        let nt = params.nesterov_todd;
        let ur = u.map(|x| x.re());
        island_jacobian(pf, isl, &ur, &mut j_plain)?;
        let scaled_any = nt && scale_rows(&isl.cones, &j_plain, &mut j_nt, &ur);
        let r_aff = direction_rhs(&isl.cones, &r0, &u, 0.0, None, nt);
        lu_nt.factor(if scaled_any { &j_nt } else { &j_plain })?;
        // The unscaled factors, when they differ from the scaled ones and
        // once needed.
        let mut plain_ready = !scaled_any;
        let du_aff = lu_nt.solve(&r_aff).map(|x| x.re());
        if tracing {
            eprintln!(
                "  cond {:.2e} {}\n  delassus {}\n  aff-block {}\n  state {}",
                trace::condition(if scaled_any { &j_nt } else { &j_plain }),
                trace::null_and_rows(isl, if scaled_any { &j_nt } else { &j_plain }, &r0),
                trace::delassus(isl, &j_plain, &u),
                trace::blocking(isl, &u, &du_aff),
                trace::state(isl, &u)
            );
        }
        let alpha_aff = boundary_step(isl, &u, &du_aff).min(1.0);
        let nu = mean_comp(isl, &u, None);
        let nu_aff = mean_comp(isl, &u, Some((&du_aff, alpha_aff)));
        let sigma = if nu > 0.0 {
            (nu_aff / nu).clamp(0.0, 1.0).powi(3)
        } else {
            0.0
        };
        let kappa = (sigma * nu).max(rho);
        let second = if sigma * nu > rho {
            Some(&du_aff)
        } else {
            None
        };
        let merit0 = measures(isl, &r0, &u, kappa).merit;
        // Fraction to the boundary τ = max(τ₀, 1 − ν): full steps near the
        // solution, where a fixed τ would cap the convergence rate at
        // 1 − τ per iteration.
        let tau = params.fraction_to_boundary.max(1.0 - nu);
        let mut dirs = vec![(second, nt)];
        if second.is_some() {
            dirs.push((None, nt));
        }
        if nt {
            dirs.push((None, false));
        }
        let mut taken = None;
        let mut fallback: Option<(f64, (DVec<T>, DVec<T>, Vec<PairEval<T>>))> = None;
        let mut accepted = 0.0;
        for (so, scaled) in dirs {
            let rhs = direction_rhs(&isl.cones, &r0, &u, kappa, so, scaled);
            let du = if scaled || !scaled_any {
                lu_nt.solve(&rhs)
            } else {
                if !plain_ready {
                    lu_plain.factor(&j_plain)?;
                    plain_ready = true;
                }
                lu_plain.solve(&rhs)
            };
            let dre = du.map(|x| x.re());
            let mut a = (tau * boundary_step(isl, &u, &dre)).min(1.0);
            if tracing {
                eprintln!(
                    "  dir corr={} nt={scaled} a0={a:.2e} block {}",
                    so.is_some(),
                    trace::blocking(isl, &u, &dre)
                );
            }
            for _ in 0..=params.max_backtracks {
                let ut = &u + &du * T::from_re(a);
                if let Ok((rt, et)) = res(&ut) {
                    let merit = measures(isl, &rt, &ut, kappa).merit;
                    if merit <= (1.0 - params.armijo * a) * merit0 {
                        accepted = a;
                        taken = Some((ut, rt, et));
                        break;
                    }
                    if fallback.as_ref().is_none_or(|(mm, _)| merit < *mm) {
                        fallback = Some((merit, (ut, rt, et)));
                    }
                }
                a *= params.backtrack_factor;
            }
            if taken.is_some() {
                break;
            }
        }
        if accepted < params.recenter_below {
            let kc = nu.max(rho);
            let rhs = direction_rhs(&isl.cones, &r0, &u, kc, None, nt);
            let du = lu_nt.solve(&rhs);
            let dre = du.map(|x| x.re());
            let mut a = (params.fraction_to_boundary * boundary_step(isl, &u, &dre)).min(1.0);
            for _ in 0..=params.max_backtracks {
                let ut = &u + &du * T::from_re(a);
                if let Ok((rt, et)) = res(&ut) {
                    taken = Some((ut, rt, et));
                    break;
                }
                a *= params.backtrack_factor;
            }
        }
        if tracing {
            eprintln!("it {iter}: eq {:.2e} comp_dev {:.2e} nu {nu:.2e} sigma {sigma:.2e} kappa {kappa:.2e} alpha_aff {alpha_aff:.2e} accepted {accepted:.2e}", m.eq, m.comp_dev);
        }
        short_steps = if stall.is_some_and(|(_, a)| accepted < a) {
            short_steps + 1
        } else {
            0
        };
        let Some((un, rn, en)) = taken.or(fallback.map(|f| f.1)) else {
            return Err(SolveError::Singular(
                "line search: no trial point could be evaluated",
            ));
        };
        u = un;
        r0 = rn;
        evals = en;
    }
}

/// [`solve_island`] with one restart (see [`Params::restart_after`]): the
/// iterations of both attempts count against the step's cap.
fn solve_with_restart<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, SolveError> {
    let max = p.params.max_iterations;
    let stall = (params.restart_after > 0).then_some((params.restart_after, params.restart_step));
    let first = match solve_island(p, pf, isl, v0, params, max, stall, None) {
        Err(SolveError::MaxIterations { iters, .. }) if iters < max => {
            let again = Params {
                initial_scale: params.restart_scale,
                ..*params
            };
            match solve_island(p, pf, isl, v0, &again, max - iters, None, None) {
                Ok(mut sol) => {
                    sol.iterations += iters;
                    Ok(sol)
                }
                Err(SolveError::MaxIterations {
                    iters: more,
                    residual,
                    complementarity,
                }) => Err(SolveError::MaxIterations {
                    iters: iters + more,
                    residual,
                    complementarity,
                }),
                Err(e) => Err(e),
            }
        }
        other => other,
    };
    let Err(SolveError::MaxIterations { iters, .. }) = first else {
        return first;
    };
    // Fallbacks after failure only: steps that converge within the cap
    // are solved exactly as without them.
    let mut spent = iters;
    if params.continuation_iterations > 0 {
        match continuation(p, pf, isl, v0, params) {
            Ok(mut sol) => {
                sol.iterations += spent;
                return Ok(sol);
            }
            Err(used) => spent += used,
        }
    }
    if params.friction_continuation_iterations > 0 {
        if let Ok(mut sol) = friction_continuation(p, pf, isl, v0, params) {
            sol.iterations += spent;
            return Ok(sol);
        }
    }
    first
}

/// Smallest reduction `ρ_next / ρ` of the continuation (after failed
/// stages the reduction is brought towards 1 down to this).
const CONT_MIN_REDUCTION: f64 = 0.9;

/// Iteration cap of one continuation stage.
const CONT_STAGE_CAP: usize = 40;

/// The continuation in ρ of a step whose attempts failed
/// ([`Params::continuation_iterations`]): `Err(iterations used)` when it
/// does not reach the step's ρ within its budget. The returned iterations
/// are the continuation's own.
fn continuation<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, usize> {
    let target = p.params.rho;
    let from = params.continuation_from;
    if target > 0.1 * from {
        return Err(0);
    }
    let budget = params.continuation_iterations;
    let cap = CONT_STAGE_CAP.min(budget);
    let sol = solve_at_rho(p, pf, isl, v0, params, from, None, cap)?;
    let used = sol.iterations;
    descend(p, pf, isl, v0, params, from, sol, budget, used)
}

/// One stage of a continuation: the island at relaxation `rho` (the
/// step's other settings unchanged) from `start` (None: the usual start),
/// at most `cap` iterations; `Err(iterations used)` when it fails.
#[allow(clippy::too_many_arguments)]
fn solve_at_rho<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    rho: f64,
    start: Option<DVec<T>>,
    cap: usize,
) -> Result<IslSol<T>, usize> {
    if cap == 0 {
        return Err(0);
    }
    let sp = crate::contact::SolverParams {
        rho,
        accept_at_cap: false,
        ..*p.params
    };
    let spf = crate::contact::SolverParams { rho, ..sp };
    let ps = StepProblem { params: &sp, ..*p };
    let pfs = StepProblem { params: &spf, ..*pf };
    match solve_island(&ps, &pfs, isl, v0, params, cap, None, start) {
        Ok(sol) => Ok(sol),
        Err(SolveError::MaxIterations { iters, .. }) => Err(iters),
        Err(_) => Err(cap),
    }
}

/// The descent in ρ of [`continuation`] from a root `sol` at `rho` down
/// to the step's own ρ, `used` iterations already spent of `budget`.
/// On success the returned iterations are `used` plus the descent's.
#[allow(clippy::too_many_arguments)]
fn descend<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
    mut rho: f64,
    mut sol: IslSol<T>,
    budget: usize,
    mut used: usize,
) -> Result<IslSol<T>, usize> {
    let target = p.params.rho;
    let mut reduction: f64 = 0.5;
    while used < budget {
        let next = (rho * reduction).max(target);
        let cap = CONT_STAGE_CAP.min(budget - used);
        // The last stage is at the step's own ρ, with its own
        // convergence test (and no acceptance at the cap).
        match solve_at_rho(p, pf, isl, v0, params, next, Some(sol.u.clone()), cap) {
            Ok(s) => {
                used += s.iterations;
                sol = s;
                rho = next;
                if rho <= target {
                    sol.iterations = used;
                    return Ok(sol);
                }
                reduction = (reduction * reduction).max(1e-2);
            }
            Err(spent) => {
                used += spent;
                reduction = reduction.sqrt();
                if reduction > CONT_MIN_REDUCTION {
                    return Err(used);
                }
            }
        }
    }
    Err(used)
}

/// Smallest increment of the friction scale in the continuation in
/// friction (after failed stages the increment is halved down to this).
const FRICTION_MIN_INCREMENT: f64 = 1.0 / 64.0;

/// The island with every pair's friction coefficient scaled by `scale`.
fn with_friction_scale<T: Scalar>(isl: &Isl<T>, scale: f64) -> Isl<T> {
    let pairs = isl
        .pairs
        .iter()
        .map(|lp| Lowered {
            mu: lp.mu * T::from_re(scale),
            ..lp.clone()
        })
        .collect();
    Isl::new(isl.bodies.clone(), isl.local.clone(), pairs)
}

/// The continuation in friction of a step that the attempts and the
/// continuation in ρ did not solve
/// ([`Params::friction_continuation_iterations`]): `Err(iterations used)`
/// when it does not reach the step's own problem within its budget. The
/// friction stages are at `ρ_f = max(ρ, friction_continuation_rho)`; the
/// last one is on `isl` itself (the step's own friction), followed, when
/// `ρ_f` is above the step's ρ, by the descent in ρ of [`continuation`]
/// to the step's own problem. The returned iterations are its own.
fn friction_continuation<T: Scalar>(
    p: &StepProblem<'_, T>,
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<IslSol<T>, usize> {
    let budget = params.friction_continuation_iterations;
    let first = params.friction_continuation_from;
    let rho_f = p.params.rho.max(params.friction_continuation_rho);
    let sp = crate::contact::SolverParams {
        rho: rho_f,
        accept_at_cap: false,
        ..*p.params
    };
    let spf = crate::contact::SolverParams { rho: rho_f, ..sp };
    // The stages never accept an iterate at the cap.
    let ps = StepProblem { params: &sp, ..*p };
    let pfs = StepProblem { params: &spf, ..*pf };
    let mut used = 0_usize;
    // One stage at friction scale `s` (below 1 a copy of the island with
    // scaled coefficients; at 1 the island itself), optionally followed
    // by the continuation in ρ (down to ρ_f) when it fails.
    let solve = |s: f64, start: Option<DVec<T>>, cap: usize, rho_fallback: bool| {
        let scaled;
        let il = if s >= 1.0 {
            isl
        } else {
            scaled = with_friction_scale(isl, s);
            &scaled
        };
        match solve_island(&ps, &pfs, il, v0, params, cap, None, start) {
            Ok(sol) => Ok((sol, 0)),
            Err(e) => {
                let spent = match e {
                    SolveError::MaxIterations { iters, .. } => iters,
                    _ => cap,
                };
                if rho_fallback && params.continuation_iterations > 0 {
                    match continuation(&ps, &pfs, il, v0, params) {
                        Ok(sol) => Ok((sol, spent)),
                        Err(more) => Err(spent + more),
                    }
                } else {
                    Err(spent)
                }
            }
        }
    };
    let mut sol = match solve(first, None, CONT_STAGE_CAP.min(budget), true) {
        Ok((s, spent)) => {
            used += spent + s.iterations;
            s
        }
        Err(spent) => return Err(used + spent),
    };
    let mut scale = first;
    let mut increment = first;
    while used < budget {
        let next = (scale + increment).min(1.0);
        let cap = CONT_STAGE_CAP.min(budget - used);
        let attempt = solve(next, Some(sol.u.clone()), cap, false);
        if trace::enabled() {
            eprintln!(
                "friction stage {next:.4} at rho {rho_f:e}: converged {}",
                attempt.is_ok()
            );
        }
        match attempt {
            Ok((s, _)) => {
                used += s.iterations;
                sol = s;
                scale = next;
                if scale >= 1.0 {
                    if rho_f <= p.params.rho {
                        sol.iterations = used;
                        return Ok(sol);
                    }
                    return descend(p, pf, isl, v0, params, rho_f, sol, budget, used);
                }
                increment *= 2.0;
            }
            Err(spent) => {
                used += spent;
                increment *= 0.5;
                if increment < FRICTION_MIN_INCREMENT {
                    return Err(used);
                }
            }
        }
    }
    Err(used)
}

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
