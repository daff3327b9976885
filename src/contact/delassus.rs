//! Contact-space backends: the Delassus operator of an island and the
//! driver shared by the backends that solve for contact impulses in
//! contact space (`implicit_ncp`, `convex`).
//!
//! # The step
//!
//! The unknowns are `y = (v⁺, z_1, …, z_m)`, three per candidate `c`
//! (in candidate order). Each candidate sees the island velocity through
//! its contact-space velocity `ŷ_c(v⁺) = (φ_c(q⁺)/h, v_t1, v_t2)` (the
//! gap at `q⁺ = q ⊕ h v⁺` over the step: a normal velocity `≥ 0` keeps
//! the gap at the end of the step non-negative, as `ipm`'s position-level
//! rows do) and acts through its impulse `f_c(z_c)` (contact frame) and
//! the impulse map `W_c` at `q⁺` ([`space`](crate::contact::space)). The
//! residual is exact (no frozen linearization):
//!
//! * dynamics rows `r_dyn(v⁺) − Σ_c W_cᵀ f_c(z_c)`;
//! * each backend's contact rows in `(ŷ_c, z_c)` ([`Formulation`]).
//!
//! # The solve (f64)
//!
//! Per island, a fixed-point iteration on contact-space linearizations:
//! at `v_k`, with the per-unit dynamics Jacobians `K_u = ∂r_dyn/∂v⁺`, the
//! impulse maps `W_c` and the contact-free residual `r_k`,
//!
//! `v⁺ = v_k + K⁻¹ (Σ_c W_cᵀ f_c − r_k)`, hence `ŷ ≈ A f + c` with
//! `A = W K⁻¹ Wᵀ` (the Delassus operator, [`Delassus`]) and
//! `c = ŷ(v_k) − W K⁻¹ r_k`.
//!
//! The backend solves its contact-space problem in `(A, c)` exactly
//! ([`Formulation::solve_linear`]); `v⁺` is updated; the exact residual is
//! evaluated at the new point, and the loop stops when it is below the
//! tolerance. The linearization leaves out the change of the contact
//! frame and lever arms with `v⁺` (the geometric stiffness, `O(h)`), so
//! the loop converges linearly with a small rate (2–4 outer iterations at
//! h = 0.01) and its fixed point is the root of the exact residual.
//!
//! # Derivatives and other scalars
//!
//! The solve runs in f64 (the problem's primal values); in a scalar with
//! derivative parts the root is then refined by
//! [`Scalar::DERIVATIVE_ORDER`] Newton steps on the exact residual in that
//! scalar with the f64 Jacobian at the root (each step makes one more
//! derivative order exact; the primal part does not move). The Jacobian's
//! inverse is the pseudo-inverse: with redundant contacts (a box's four
//! corners on a plane) the impulses are not unique and `∂r/∂y` is
//! singular, but `v⁺` and its derivatives are unique; the minimum-norm
//! solution has the right velocity rows. The same solve serves `ift`
//! ([`pinv_solve`]).

use nalgebra::{Dyn, Matrix3xX, Vector3};

use crate::contact::backend::{
    dense_jacobian, dual_jacobian, stacked_root, with_cast, JacobianDual,
};
use crate::contact::candidates::{
    candidates_into, pair_mu, penetrating_into, Candidate, CandidateKey, DetectScratch, Partner,
};
use crate::contact::island::{islands, Island};
use crate::contact::space::evaluate::{evaluate, evaluate_residual, Eval};
use crate::contact::{
    ContactBackend, ContactImpulse, FrictionCone, SolveError, SolveStats, StepProblem, StepSolution,
};
use crate::dynamics::articulated::{articulated_residual, articulated_velocity};
use crate::dynamics::free::{
    free_flight_velocity, integrate_model, momentum_residual, NewtonParams,
};
use crate::linalg::{inverse_by_blocks, BlockSvd};
use crate::math::{DMat, DVec};
use crate::Scalar;

/// Unknowns per candidate.
pub const Z: usize = 3;

/// What a contact-space backend supplies to the shared driver.
pub trait Formulation: ContactBackend<Structure = Structure> {
    /// Whether the root (the unknowns `z` or the impulses) moves with the
    /// per-contact impulse scales ([`scales`]), so that the derivative
    /// methods need the scales' own derivatives (default). Where the
    /// scales only weigh rows that vanish at the root or choose pieces on
    /// primal values (`lcp`), [`residual`] takes the forward solve's f64
    /// scales ([`Structure::scale`]) as constants instead of recomputing
    /// them in the scalar type for every evaluation (an articulated
    /// Delassus operator and its factorization each time).
    const SCALE_MOVES_ROOT: bool = true;

    /// Whether [`contact_rows`](Formulation::contact_rows) calls its
    /// `at_times` argument (`Aᵀ g`, `convex`). Where it does not, the
    /// exact residual is evaluated without building the Delassus
    /// operator (a factorization of the island's mass matrix in the
    /// scalar type), and `at_times` must not be called.
    const ROWS_USE_DELASSUS: bool = true;

    /// Whether polishing a converged root also goes on while the update
    /// of `v` shrinks, where the residual already sits at round-off
    /// (`convex`; default: the residual alone decides). A mode of light
    /// links that no contact row holds (a leg moving on its resting foot,
    /// a capsule rolling on its crossings) is weighted by its small
    /// inertia in the dynamics rows, so a residual at round-off (1e-15)
    /// can leave `v` 1e-11 off there, and the linearization shrinks that
    /// error only linearly; central differences of the step see it as
    /// noise of that size divided by ε. A formulation whose step map is
    /// smooth everywhere (`convex`) is compared column by column against
    /// central differences, so it polishes on; the others keep the
    /// residual criterion (their roots sit on kinks where the extra
    /// iterations can move a redundant contact's split of the impulse).
    const POLISH_UPDATE: bool = false;

    /// Candidate margin (m) at `q` and the cap of outer iterations.
    fn driver(&self) -> DriverParams;

    /// Refuses what the formulation does not model (before solving).
    fn refuse(&self, p: &StepProblem<'_, f64>) -> Result<(), SolveError> {
        if p.friction_cone == FrictionCone::Pyramid {
            return Err(SolveError::Unsupported {
                backend: Self::NAME,
                what: "the pyramid friction cone (it solves the exact Coulomb cone)",
            });
        }
        Ok(())
    }

    /// The contact-space problem of one linearization:
    /// the unknowns `z` (three per contact) with `ŷ = A f(z) + c`, from
    /// the previous outer iterate's `z0` when there is one. `scale` is the
    /// per-contact impulse scale (`1 / A_nn`); `accept` the residual
    /// (∞-norm) at which a stalled inner solve may still hand its best
    /// point to the linearization loop (inexact Newton: a thousandth of
    /// the current exact residual, at least a tenth of the step's
    /// tolerance). Adds its iteration counts to `stats`.
    fn solve_linear(
        &self,
        a: &DMat<f64>,
        c: &DVec<f64>,
        mu: &[f64],
        scale: &[f64],
        z0: Option<&DVec<f64>>,
        accept: f64,
        stats: &mut InnerStats,
    ) -> Result<DVec<f64>, SolveError>;

    /// Impulse (contact frame) of one contact from its unknowns.
    fn impulse<T: Scalar>(&self, mu: T, scale: T, z: &Vector3<T>) -> Vector3<T>;

    /// The contact rows of one island at the exact point: `yhat[c]` is
    /// `ŷ_c(v⁺)`, `z[c]` the unknowns; `at_times` applies the transpose
    /// of the island's Delassus operator at this point (`Aᵀ g` for
    /// contact-space `g`).
    #[allow(clippy::too_many_arguments)]
    fn contact_rows<T: Scalar>(
        &self,
        mu: &[T],
        scale: &[T],
        yhat: &[Vector3<T>],
        z: &[Vector3<T>],
        at_times: &dyn Fn(&[Vector3<T>]) -> Vec<Vector3<T>>,
        out: &mut [Vector3<T>],
    );

    /// Polishes the f64 root `y` of the exact residual (default: as it
    /// is). `convex` takes Newton steps on it: its `∂r/∂y` is
    /// ill-conditioned, so finite differences need the root to round-off.
    fn polish_root(
        &self,
        _p: &StepProblem<'_, f64>,
        _s: &Structure,
        y: DVec<f64>,
    ) -> Result<DVec<f64>, SolveError> {
        Ok(y)
    }

    /// Whether the contact unknowns `z` and contact-space velocities `ŷ`
    /// (restitution bias included) lie where the formulation's contact
    /// rows are defined (default: everywhere). `convex` needs its
    /// barriers' arguments positive.
    fn admissible(&self, _yhat: &[Vector3<f64>], _z: &[Vector3<f64>]) -> bool {
        true
    }

    /// The weight κ of a barrier formulation's barriers (default `None`:
    /// no barrier). `newton_fallback` then follows the barrier path
    /// from a larger weight down to κ ([`Formulation::with_barrier`],
    /// [`Formulation::centred`]).
    fn barrier(&self) -> Option<f64> {
        None
    }

    /// The formulation with barrier weight `kappa` (default `None`: no
    /// barrier).
    fn with_barrier(&self, _kappa: f64) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// The unknowns at which the contact rows vanish for the contact-space
    /// velocities `yhat` (restitution bias included) and the Delassus
    /// operator `a` at the point: a centred point of a barrier
    /// formulation, where its fallback starts (default `None`: not
    /// supplied; also `None` when `yhat` is outside the domain).
    fn centred(
        &self,
        _a: &DMat<f64>,
        _yhat: &[Vector3<f64>],
        _mu: &[f64],
        _scale: &[f64],
    ) -> Option<Vec<Vector3<f64>>> {
        None
    }

    /// The smooth piece of each contact at the root, for
    /// [`ContactBackend::same_structure`] (empty: one piece).
    fn pieces(&self, _mu: &[f64], _z: &[Vector3<f64>]) -> Vec<u8> {
        Vec::new()
    }

    /// Newton's impact law: `Some(δ)` adds to the normal row of every
    /// contact whose gap at the start of the step is at most `δ` (m) the
    /// restitution bias `e · min(v_n⁻, 0)` ([`restitution_bias`]), so
    /// that the row reads `φ(q⁺)/h + e v_n⁻ ≥ 0`; `ccd` is the problem's
    /// continuous-collision flag. Default `None`: inelastic contacts.
    fn bounce_gap(&self, _ccd: bool) -> Option<f64> {
        None
    }
}

/// The combined restitution of a candidate pair (`restitution_combine`
/// of the two materials; its derivative parts flow).
pub fn pair_restitution<T: Scalar>(p: &StepProblem<'_, T>, a: usize, b: Partner) -> T {
    match b {
        Partner::Body(j) => p
            .restitution_combine
            .apply(p.materials[a].restitution, p.materials[j].restitution),
        Partner::Static(j) => p.restitution_combine.apply(
            p.materials[a].restitution,
            p.statics[j].material.restitution,
        ),
    }
}

/// Gap (m) within which (in magnitude) a contact is touching: the
/// restitution bias keeps its gap however small its sign
/// ([`restitution_bias`]), and `lcp`'s continuous collision times its
/// impact from there ([`crate::contact::lcp::ccd`]).
pub const TOUCH: f64 = 1e-9;

/// The restitution bias of each contact of an island,
/// `b_c = e_c v_n⁻_c − φ̄_c(q)/h`, with `v_n⁻_c` the contact's
/// normal velocity at the start of the step (`W_c(q) v`, positive when
/// separating), `φ_c(q)` its gap there, `φ̄ = φ` for `φ ≥ −TOUCH` and 0
/// below, and `e_c` the pair's combined restitution, so that the normal
/// row `φ(q⁺)/h + b ≥ 0` reads `(φ(q⁺) − φ(q))/h ≥ −e v_n⁻` (Newton's law
/// on the step's normal velocity; a contact penetrating deeper than
/// [`TOUCH`] keeps its position correction). `φ̄` is smooth through a
/// zero gap, so a contact whose gap closed on the step boundary gets the
/// same law, and the same derivative, whatever the sign of its round-off
/// gap (before, `max(φ, 0)` made `∂v⁺/∂φ = −1/h` for a gap of −1e-17). It
/// applies to the contacts that bounce in this step: approaching
/// (`v_n⁻ < 0`), reaching the surface within the step on their start
/// velocity (`φ(q) + h v_n⁻ < 0`) and with a gap at most the
/// formulation's [`bounce_gap`](Formulation::bounce_gap); the others get
/// zero. `None` when the formulation has no impact law or no contact of the
/// island bounces. Branches on primal values only.
pub fn restitution_bias<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    island: &Island<T>,
) -> Result<Option<Vec<T>>, SolveError> {
    let Some(touch) = form.bounce_gap(p.ccd) else {
        return Ok(None);
    };
    let es: Vec<T> = island
        .contacts
        .iter()
        .map(|c| pair_restitution(p, c.a, c.b))
        .collect();
    if es.iter().all(|e| e.re() <= 0.0) {
        return Ok(None);
    }
    let v0 = DVec::zeros(island.dim());
    let ev = evaluate(p, island, &v0, &zero_xs(island))?;
    let v = island.gather(p.v);
    Ok(Some(
        ev.contacts
            .iter()
            .zip(&es)
            .map(|(ce, e)| {
                let mut vn = T::zero();
                for (u, w) in &ce.blocks {
                    let o = island.units[*u].offset;
                    for k in 0..w.ncols() {
                        vn += w[(0, k)] * v[o + k];
                    }
                }
                let gap = ce.contact.gap;
                // A contact within `TOUCH` of the surface keeps its gap
                // (smooth through zero: the sign of a round-off gap does
                // not choose the law); a deeper one keeps its position
                // correction.
                let above = if gap.re() >= -TOUCH { gap } else { T::zero() };
                if e.re() > 0.0 && vn.re() < 0.0 && gap.re() <= touch && (gap + p.h * vn).re() < 0.0
                {
                    *e * vn - above / p.h
                } else {
                    T::zero()
                }
            })
            .collect(),
    ))
}

/// Driver settings of a contact-space backend.
#[derive(Clone, Copy, Debug)]
pub struct DriverParams {
    /// Candidate margin at `q` (m).
    pub margin: f64,
    /// Outer (linearization) iteration cap (the tolerance on the exact
    /// residual's ∞-norm is the step's shared `tolerance`).
    pub max_outer: usize,
}

/// Iteration counts of the contact-space solves of a step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InnerStats {
    /// Outer (linearization) iterations, summed over islands.
    pub outer: usize,
    /// Inner iterations, summed.
    pub iterations: usize,
    /// Inner iterations whose full Newton step was accepted.
    pub newton_accepted: usize,
    /// Inner solves.
    pub solves: usize,
}

/// What the f64 solve decided: the candidates, each one's impulse scale
/// and smooth piece.
#[derive(Clone, Debug)]
pub struct Structure {
    /// Candidates in `y` order.
    pub candidates: Vec<Candidate<f64>>,
    /// Per-candidate impulse scale.
    pub scale: Vec<f64>,
    /// Per-candidate smooth piece at the root ([`Formulation::pieces`]).
    pub pieces: Vec<u8>,
}

impl Structure {
    /// Whether two solves settled on the same candidates and pieces.
    pub fn same(a: &Structure, b: &Structure) -> bool {
        let key = |s: &Structure| {
            let mut k: Vec<(CandidateKey, u8)> = s
                .candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (c.key(), s.pieces.get(i).copied().unwrap_or(0)))
                .collect();
            k.sort_unstable();
            k
        };
        key(a) == key(b)
    }
}

/// The Delassus operator of an island at one point: per unit, the
/// factored dynamics Jacobian `K_u`; per contact side, `K_u⁻¹ W_cᵀ`.
pub struct Delassus<'a, T: Scalar> {
    island: &'a Island<T>,
    ev: &'a Eval<T>,
    lus: Vec<nalgebra::LU<T, Dyn, Dyn>>,
    /// Factors of `K_uᵀ` (for `Aᵀ`).
    lus_t: Vec<nalgebra::LU<T, Dyn, Dyn>>,
}

impl<'a, T: Scalar> Delassus<'a, T> {
    /// Factors every unit's dynamics Jacobian of `ev`.
    pub fn new(island: &'a Island<T>, ev: &'a Eval<T>) -> Result<Self, SolveError> {
        let factor = |j: DMat<T>| {
            let lu = j.lu();
            if lu.is_invertible() {
                Ok(lu)
            } else {
                Err(SolveError::Singular("dynamics Jacobian of an island unit"))
            }
        };
        let lus = ev
            .jac
            .iter()
            .map(|j| factor(j.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let lus_t = ev
            .jac
            .iter()
            .map(|j| factor(j.transpose()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Delassus {
            island,
            ev,
            lus,
            lus_t,
        })
    }

    /// `K⁻¹ (Σ_c W_cᵀ g_c + rhs)` in the island layout (`rhs` in island
    /// layout, or zero).
    pub fn velocity(&self, g: &[Vector3<T>], rhs: Option<&DVec<T>>) -> DVec<T> {
        self.velocity_with(&self.lus, g, rhs)
    }

    fn velocity_with(
        &self,
        lus: &[nalgebra::LU<T, Dyn, Dyn>],
        g: &[Vector3<T>],
        rhs: Option<&DVec<T>>,
    ) -> DVec<T> {
        let mut gen = match rhs {
            Some(r) => r.clone(),
            None => DVec::zeros(self.island.dim()),
        };
        for (ce, gc) in self.ev.contacts.iter().zip(g) {
            for (u, w) in &ce.blocks {
                let o = self.island.units[*u].offset;
                for k in 0..w.ncols() {
                    gen[o + k] += w[(0, k)] * gc[0] + w[(1, k)] * gc[1] + w[(2, k)] * gc[2];
                }
            }
        }
        for (unit, lu) in self.island.units.iter().zip(lus) {
            let n = unit.size();
            let x = lu
                .solve(&gen.rows(unit.offset, n).into_owned())
                .unwrap_or_else(|| DVec::zeros(n));
            gen.rows_mut(unit.offset, n).copy_from(&x);
        }
        gen
    }

    /// `W dv` per contact (contact-space velocity of an island velocity).
    pub fn contact_velocity(&self, dv: &DVec<T>) -> Vec<Vector3<T>> {
        self.ev
            .contacts
            .iter()
            .map(|ce| {
                let mut out = Vector3::zeros();
                for (u, w) in &ce.blocks {
                    let o = self.island.units[*u].offset;
                    for k in 0..w.ncols() {
                        for r in 0..3 {
                            out[r] += w[(r, k)] * dv[o + k];
                        }
                    }
                }
                out
            })
            .collect()
    }

    /// `A_cc[0, 0] = e_Nᵀ W_c K⁻¹ W_cᵀ e_N`: per unit `u` the contact
    /// touches, `g_uᵀ K_u⁻¹ g_u` with `g_u` the sum of its normal rows of
    /// `W_c` on `u` (the normal entry of `A e_N` without applying `A`).
    pub fn normal_diagonal(&self, c: usize) -> T {
        let ce = &self.ev.contacts[c];
        let mut d = T::zero();
        for (i, (u, _)) in ce.blocks.iter().enumerate() {
            if ce.blocks[..i].iter().any(|(v, _)| v == u) {
                continue;
            }
            let n = self.island.units[*u].size();
            let mut g = DVec::zeros(n);
            for (v, w) in &ce.blocks {
                if v == u {
                    for k in 0..w.ncols() {
                        g[k] += w[(0, k)];
                    }
                }
            }
            let x = self.lus[*u].solve(&g).unwrap_or_else(|| DVec::zeros(n));
            for k in 0..n {
                d += g[k] * x[k];
            }
        }
        d
    }

    /// `A g = W K⁻¹ Wᵀ g`.
    pub fn apply(&self, g: &[Vector3<T>]) -> Vec<Vector3<T>> {
        self.contact_velocity(&self.velocity(g, None))
    }

    /// `Aᵀ g = W K⁻ᵀ Wᵀ g`.
    pub fn apply_transpose(&self, g: &[Vector3<T>]) -> Vec<Vector3<T>> {
        self.contact_velocity(&self.velocity_with(&self.lus_t, g, None))
    }
}

impl Delassus<'_, f64> {
    /// The dense operator `A` (`3m × 3m`), block by block over the units
    /// two contacts share.
    pub fn matrix(&self) -> DMat<f64> {
        let m = self.ev.contacts.len();
        let mut a = DMat::zeros(Z * m, Z * m);
        // Per unit: its contacts and K_u⁻¹ W_cᵀ.
        let mut per_unit: Vec<Vec<(usize, &Matrix3xX<f64>, DMat<f64>)>> =
            vec![Vec::new(); self.island.units.len()];
        for (c, ce) in self.ev.contacts.iter().enumerate() {
            for (u, w) in &ce.blocks {
                let wt: DMat<f64> = DMat::from_fn(w.ncols(), 3, |i, j| w[(j, i)]);
                let x = self.lus[*u]
                    .solve(&wt)
                    .unwrap_or_else(|| DMat::zeros(w.ncols(), 3));
                per_unit[*u].push((c, w, x));
            }
        }
        for list in &per_unit {
            for (c, w, _) in list {
                for (d, _, x) in list {
                    let blk = *w * x;
                    for r in 0..3 {
                        for k in 0..3 {
                            a[(Z * c + r, Z * d + k)] += blk[(r, k)];
                        }
                    }
                }
            }
        }
        a
    }
}

/// Each contact's impulse scale `σ_c = 1 / A_NN` with `A` the Delassus
/// operator at `v⁺ = 0` (`q⁺ = q`): a function of the start of the step
/// only, so that the forward step and the inverse dynamics (which knows
/// `v⁺` but not the forward solve's iterates) agree on it.
pub fn scales<T: Scalar>(p: &StepProblem<'_, T>, island: &Island<T>) -> Result<Vec<T>, SolveError> {
    let v0 = DVec::zeros(island.dim());
    let ev = evaluate(p, island, &v0, &zero_xs(island))?;
    let del = Delassus::new(island, &ev)?;
    let m = island.contacts.len();
    Ok((0..m)
        .map(|k| {
            let d = del.normal_diagonal(k);
            if d.re() > 0.0 && d.re().is_finite() {
                T::one() / d
            } else {
                T::one()
            }
        })
        .collect())
}

/// `ŷ_c = (φ/h, v_t1, v_t2)` of every contact of an evaluation.
pub fn contact_velocities<T: Scalar>(ev: &Eval<T>, h: T) -> Vec<Vector3<T>> {
    ev.contacts
        .iter()
        .map(|ce| Vector3::new(ce.y[0] / h, ce.y[1], ce.y[2]))
        .collect()
}

/// Zero contact unknowns in each candidate's law layout (the evaluation's
/// impulse terms vanish: `r_dyn` is the contact-free residual).
pub(crate) fn zero_xs<T: Scalar>(island: &Island<T>) -> Vec<DVec<T>> {
    island
        .contacts
        .iter()
        .map(|c| DVec::zeros(c.law.size()))
        .collect()
}

/// The exact island residual at `(v, z)` into `(dyn rows, contact rows)`,
/// with the evaluation and the contact-space velocities `ŷ` (restitution
/// bias included).
#[allow(clippy::type_complexity)]
fn island_residual<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    scale: &[T],
    v: &DVec<T>,
    z: &[Vector3<T>],
    bias: Option<&[T]>,
    need_jac: bool,
) -> Result<(DVec<T>, Vec<Vector3<T>>, Eval<T>, Vec<Vector3<T>>), SolveError> {
    // The robots' mass matrices only where the caller linearizes or the
    // contact rows apply the Delassus operator.
    let ev = if need_jac || F::ROWS_USE_DELASSUS {
        evaluate(p, island, v, &zero_xs(island))?
    } else {
        evaluate_residual(p, island, v, &zero_xs(island))?
    };
    let mus: Vec<T> = island.contacts.iter().map(|c| c.mu).collect();
    let f: Vec<Vector3<T>> = island
        .contacts
        .iter()
        .enumerate()
        .map(|(k, c)| form.impulse(c.mu, scale[k], &z[k]))
        .collect();
    let del = if F::ROWS_USE_DELASSUS {
        Some(Delassus::new(island, &ev)?)
    } else {
        None
    };
    // r_dyn − Σ Wᵀ f: the contact-free residual minus the generalized
    // impulses.
    let mut rd = ev.r_dyn.clone();
    for (ce, fc) in ev.contacts.iter().zip(&f) {
        for (u, w) in &ce.blocks {
            let o = island.units[*u].offset;
            for k in 0..w.ncols() {
                rd[o + k] -= w[(0, k)] * fc[0] + w[(1, k)] * fc[1] + w[(2, k)] * fc[2];
            }
        }
    }
    let mut yhat = contact_velocities(&ev, p.h);
    if let Some(b) = bias {
        for (y, b) in yhat.iter_mut().zip(b) {
            y[0] += *b;
        }
    }
    let mut rows = vec![Vector3::zeros(); z.len()];
    let at_times = |g: &[Vector3<T>]| match &del {
        Some(del) => del.apply_transpose(g),
        None => unreachable!("contact_rows of a formulation without ROWS_USE_DELASSUS"),
    };
    form.contact_rows(&mus, scale, &yhat, z, &at_times, &mut rows);
    drop(del);
    Ok((rd, rows, ev, yhat))
}

/// The per-candidate friction coefficients in `T` from the materials
/// (their derivative parts flow), in the f64 structure's order.
pub(crate) fn candidates_in<T: Scalar>(
    p: &StepProblem<'_, T>,
    cands: &[Candidate<f64>],
) -> Vec<Candidate<T>> {
    cands
        .iter()
        .map(|c| c.with_mu(pair_mu(p, c.a, c.b)))
        .collect()
}

/// Position of each candidate (by key) in the structure.
fn index_of(cands: &[Candidate<f64>], key: &CandidateKey) -> Result<usize, SolveError> {
    cands
        .iter()
        .position(|c| c.key() == *key)
        .ok_or(SolveError::Singular("unknown contact candidate"))
}

/// The exact residual `r(y)` of a contact-space backend (module docs).
pub fn residual<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    s: &Structure,
    y: &DVec<T>,
) -> Result<DVec<T>, SolveError> {
    let nv = p.model.nv;
    if y.len() != nv + Z * s.candidates.len() {
        return Err(SolveError::Singular("unknowns do not match the structure"));
    }
    let v_next = y.rows(0, nv).into_owned();
    let mut r = DVec::zeros(y.len());
    let mut r_dyn = DVec::zeros(nv);
    momentum_residual(p.model, p.q, p.v, &v_next, p.u, &p.gravity, p.h, &mut r_dyn)?;
    articulated_residual(p.model, p.q, p.v, &v_next, p.u, p.h, &mut r_dyn);
    for island in islands(p.model, candidates_in(p, &s.candidates)) {
        let idx: Vec<usize> = island
            .contacts
            .iter()
            .map(|c| index_of(&s.candidates, &c.key()))
            .collect::<Result<_, _>>()?;
        let z: Vec<Vector3<T>> = idx
            .iter()
            .map(|&i| y.fixed_rows::<Z>(nv + Z * i).into_owned())
            .collect();
        // The impulse scales in T: a function of the start of the step
        // (and of masses, inertias, shapes), so their derivative parts
        // flow (`convex`'s R depends on them).
        let scale: Vec<T> = if F::SCALE_MOVES_ROOT {
            scales(p, &island)?
        } else {
            idx.iter().map(|&i| T::from_re(s.scale[i])).collect()
        };
        let bias = restitution_bias(form, p, &island)?;
        let v_local = island.gather(&v_next);
        let (rd, rows, _, _) = island_residual(
            form,
            p,
            &island,
            &scale,
            &v_local,
            &z,
            bias.as_deref(),
            false,
        )?;
        island.scatter(&rd, &mut r_dyn);
        for (&i, row) in idx.iter().zip(&rows) {
            r.fixed_rows_mut::<Z>(nv + Z * i).copy_from(row);
        }
    }
    r.rows_mut(0, nv).copy_from(&r_dyn);
    Ok(r)
}

/// The unknowns of `y` by contact island (each island's velocities and
/// impulses), the velocities of the bodies in no island last: the groups
/// of [`ContactBackend::jacobian_groups`](crate::contact::ContactBackend::jacobian_groups)
/// for the residual of [`residual`].
pub fn jacobian_groups(p: &StepProblem<'_, f64>, s: &Structure) -> Option<Vec<Vec<usize>>> {
    let nv = p.model.nv;
    let mut seen = vec![false; nv];
    let mut groups = Vec::new();
    for island in islands(p.model, s.candidates.clone()) {
        let mut g = Vec::new();
        for u in &island.units {
            for &d in &u.dofs {
                *seen.get_mut(d)? = true;
                g.push(d);
            }
        }
        for c in &island.contacts {
            let i = index_of(&s.candidates, &c.key()).ok()?;
            g.extend((0..Z).map(|k| nv + Z * i + k));
        }
        groups.push(g);
    }
    let rest: Vec<usize> = (0..nv).filter(|&d| !seen[d]).collect();
    if !rest.is_empty() {
        groups.push(rest);
    }
    Some(groups)
}

/// One island's f64 solve.
struct IslandSolution {
    v: DVec<f64>,
    z: Vec<Vector3<f64>>,
    residual: f64,
}

fn solve_island<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    v0: DVec<f64>,
    scale: &mut Vec<f64>,
    stats: &mut InnerStats,
) -> Result<IslandSolution, SolveError> {
    let dp = form.driver();
    let m = island.contacts.len();
    let mus: Vec<f64> = island.contacts.iter().map(|c| c.mu).collect();
    let mut v = v0;
    let mut z: Option<DVec<f64>> = None;
    let mut last = f64::INFINITY;
    let mut best: Option<IslandSolution> = None;
    let mut polish = if F::POLISH_UPDATE {
        POLISH_OUTER_UPDATE
    } else {
        4
    };
    // ∞-norms of the last two outer updates of `v` (`POLISH_UPDATE`).
    let (mut step_prev, mut step_now) = (f64::INFINITY, f64::INFINITY);
    // The point of lowest exact residual, where the fallback starts:
    // `(v, z, residual, outside the formulation's domain)`.
    let mut lowest: Option<(DVec<f64>, DVec<f64>, f64, bool)> = None;
    let mut inner_error = None;
    let mut stalled = 0;
    let bias = restitution_bias(form, p, island)?;
    for it in 0..=dp.max_outer {
        let zs: Vec<Vector3<f64>> = match &z {
            Some(z) => (0..m)
                .map(|k| z.fixed_rows::<Z>(Z * k).into_owned())
                .collect(),
            None => vec![Vector3::zeros(); m],
        };
        if scale.is_empty() {
            *scale = scales(p, island)?;
        }
        let ev = if z.is_some() {
            let (rd, rows, ev, yhat) =
                island_residual(form, p, island, scale, &v, &zs, bias.as_deref(), true)?;
            let res = rd
                .amax()
                .max(rows.iter().map(|r| r.amax()).fold(0.0, f64::max));
            if !res.is_finite() {
                return Err(SolveError::Singular(
                    "non-finite residual in a contact-space solve",
                ));
            }
            // Converged: polish towards round-off (the derivative methods
            // and finite differences need the root, not a point within
            // the tolerance): go on while each linearization shrinks the
            // residual at least 4-fold (with `POLISH_UPDATE`, or the
            // update of `v`), keep the best point.
            let step_shrinks = F::POLISH_UPDATE && step_now <= 0.25 * step_prev;
            if let Some(b) = &best {
                if res > p.params.tolerance || (res >= b.residual && !step_shrinks) {
                    stats.outer += it;
                    return Ok(best.take().expect("checked"));
                }
            }
            // Admissible points first, then the lowest residual.
            let out = !form.admissible(&yhat, &zs);
            if lowest.as_ref().is_none_or(|l| (out, res) < (l.3, l.2)) {
                lowest = z.as_ref().map(|z| (v.clone(), z.clone(), res, out));
                stalled = 0;
            } else if lowest.is_some() && res > p.params.tolerance {
                // Not below the lowest residual: the loop cycles (typically
                // between the vertices of a face standing behind one conic
                // contact point); hand over to the fallback.
                stalled += 1;
                if stalled == STALL_OUTER {
                    break;
                }
            }
            let shrinking = res <= 0.25 * last || step_shrinks;
            last = res;
            if res <= p.params.tolerance {
                let sol = IslandSolution {
                    v: v.clone(),
                    z: zs,
                    residual: res,
                };
                if !shrinking || polish == 0 || it == dp.max_outer {
                    stats.outer += it;
                    return Ok(sol);
                }
                polish -= 1;
                best = Some(sol);
            }
            ev
        } else {
            // Before the first solve there are no unknowns to test.
            evaluate(p, island, &v, &zero_xs(island))?
        };
        if it == dp.max_outer {
            break;
        }
        let del = Delassus::new(island, &ev)?;
        let a = del.matrix();
        // c = ŷ(v_k) − W K⁻¹ r_k (r_k: the contact-free residual).
        let dv0 = del.velocity(&[], Some(&(-&ev.r_dyn)));
        let wdv = del.contact_velocity(&dv0);
        let yhat = contact_velocities(&ev, p.h);
        let mut c = DVec::zeros(Z * m);
        for k in 0..m {
            c.fixed_rows_mut::<Z>(Z * k).copy_from(&(yhat[k] + wdv[k]));
            if let Some(b) = &bias {
                c[Z * k] += b[k];
            }
        }
        // Inexact Newton: the linearized problem's `c` mixes position-level
        // normal rows (φ(q⁺)/h) with velocity-level tangential rows, so
        // away from the root it may be slightly off the range of a rigid
        // motion of redundant contacts and have no exact solution (the
        // inner solve then stalls at that floor). An inner point within a
        // thousandth of the current exact residual is as good as exact
        // for this linearization; the floor shrinks with the outer
        // residual, and convergence is tested on the exact residual.
        let accept = (0.1 * p.params.tolerance).max(1e-3 * last.min(c.amax()));
        let znew = match form.solve_linear(&a, &c, &mus, scale, z.as_ref(), accept, stats) {
            Ok(z) => z,
            Err(e) => {
                inner_error = Some(e);
                break;
            }
        };
        stats.solves += 1;
        let f: Vec<Vector3<f64>> = (0..m)
            .map(|k| form.impulse(mus[k], scale[k], &znew.fixed_rows::<Z>(Z * k).into_owned()))
            .collect();
        let dv = del.velocity(&f, Some(&(-&ev.r_dyn)));
        step_prev = step_now;
        step_now = dv.amax();
        v += dv;
        z = Some(znew);
    }
    if let Some(b) = best {
        stats.outer += dp.max_outer;
        return Ok(b);
    }
    stats.outer += dp.max_outer;
    if let Some((v, z, res, _)) = lowest {
        if let Some(sol) = newton_fallback(form, p, island, scale, bias.as_deref(), v, z, res) {
            return Ok(sol);
        }
    }
    Err(inner_error.unwrap_or(SolveError::MaxIterations {
        iters: dp.max_outer,
        residual: last,
        complementarity: 0.0,
    }))
}

/// Outer iterations past the tolerance spent polishing the root towards
/// round-off with [`Formulation::POLISH_UPDATE`] ([`solve_island`]).
const POLISH_OUTER_UPDATE: usize = 8;

/// Outer iterations without a new lowest exact residual after which an
/// island's linearization loop hands over to [`newton_fallback`].
const STALL_OUTER: usize = 8;

/// Largest island (`dim + 3 × contacts` unknowns) that
/// [`newton_fallback`] takes on (each iteration evaluates the island's
/// residual twice per unknown).
const FALLBACK_MAX_UNKNOWNS: usize = 120;

/// Iteration cap of [`newton_fallback`].
const FALLBACK_ITERATIONS: usize = 40;

/// What the fallbacks evaluate an island's exact residual with: the
/// step, the island, its impulse scales, the restitution bias, and the
/// contact normals at `q` ([`normals_at_start`]) that no point
/// [`admissible_residual`] accepts may turn by 90° or more.
#[derive(Clone, Copy)]
struct FallbackIsland<'a> {
    p: &'a StepProblem<'a, f64>,
    island: &'a Island<f64>,
    scale: &'a [f64],
    bias: Option<&'a [f64]>,
    reference: &'a [Vector3<f64>],
}

/// The island's exact residual at `(v, z)` stacked as one vector
/// (dynamics rows, then three contact rows per contact), with the
/// contact-space velocities `ŷ` (restitution bias included) for
/// [`Formulation::admissible`] and the contact normals at `q⁺`; `None`
/// where it cannot be evaluated.
#[allow(clippy::type_complexity)]
fn stacked_island_residual<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<(
    DVec<f64>,
    Vec<Vector3<f64>>,
    Vec<Vector3<f64>>,
    Vec<Vector3<f64>>,
)> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    let n = island.dim();
    let m = island.contacts.len();
    let v = y.rows(0, n).into_owned();
    let z: Vec<Vector3<f64>> = (0..m)
        .map(|k| y.fixed_rows::<Z>(n + Z * k).into_owned())
        .collect();
    let (rd, rows, ev, yhat) = island_residual(form, p, island, scale, &v, &z, bias, false).ok()?;
    let mut r = DVec::zeros(n + Z * m);
    r.rows_mut(0, n).copy_from(&rd);
    for (k, row) in rows.iter().enumerate() {
        r.fixed_rows_mut::<Z>(n + Z * k).copy_from(row);
    }
    let normals = ev.contacts.iter().map(|c| c.contact.normal).collect();
    r.iter()
        .all(|x| x.is_finite())
        .then_some((r, yhat, z, normals))
}

/// The contact normals at `q` (`v⁺ = 0`): [`admissible_residual`]'s
/// reference (`None` where the island cannot be evaluated there).
fn normals_at_start(p: &StepProblem<'_, f64>, island: &Island<f64>) -> Option<Vec<Vector3<f64>>> {
    let ev = evaluate(p, island, &DVec::zeros(island.dim()), &zero_xs(island)).ok()?;
    Some(ev.contacts.iter().map(|c| c.contact.normal).collect())
}

/// The fallback of an island whose linearization loop did not converge:
/// damped Newton steps on the island's exact residual `r(v⁺, z)` from the
/// loop's best point, with the exact `∂r/∂(v⁺, z)` by dual numbers (the
/// linearization loop leaves out how the contact points, normals and lever
/// arms move with `v⁺`; where that matters — one contact point standing for
/// a face of a polytope, whose conic witness point slides across the face
/// as it tilts — the loop cycles between the faces' vertices). The step is
/// the least-squares solution (SVD: redundant contacts make `∂r/∂y`
/// singular) and is halved until the residual's 2-norm decreases.
///
/// A barrier formulation ([`Formulation::barrier`]) instead follows its
/// barrier path ([`barrier_fallback`]): Newton on a barrier's residual
/// from an uncentred point (the loop's, whose impulses may sit at the
/// cone's boundary) stalls.
///
/// Returns a point whose exact residual (∞-norm) is within the step's
/// tolerance, or `None`. Runs in f64 only; the root it returns is the
/// exact residual's, so the derivative methods are unchanged.
#[allow(clippy::too_many_arguments)]
fn newton_fallback<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    scale: &[f64],
    bias: Option<&[f64]>,
    v: DVec<f64>,
    z: DVec<f64>,
    res: f64,
) -> Option<IslandSolution> {
    let n = island.dim();
    let m = island.contacts.len();
    let dim = n + Z * m;
    if dim > FALLBACK_MAX_UNKNOWNS || !res.is_finite() {
        return None;
    }
    let reference = normals_at_start(p, island)?;
    let fi = FallbackIsland {
        p,
        island,
        scale,
        bias,
        reference: &reference,
    };
    if let Some(kappa) = form.barrier() {
        return barrier_fallback(form, &fi, v, z, res, kappa);
    }
    let mut y = DVec::zeros(dim);
    y.rows_mut(0, n).copy_from(&v);
    y.rows_mut(n, Z * m).copy_from(&z);
    // A start outside the formulation's domain is pulled towards
    // `v⁺ = 0`, where each gap is the one at the start of the step.
    let mut start = admissible_residual(form, &fi, &y);
    let mut t = 1.0;
    while start.is_none() && t > 1e-6 {
        t *= 0.5;
        y.rows_mut(0, n).copy_from(&(&v * t));
        start = admissible_residual(form, &fi, &y);
    }
    let (y, r) = damped_newton(form, &fi, y, start?, true)?;
    Some(island_solution(n, m, &y, &r))
}

/// The island's stacked residual at `y` where `y` is in the formulation's
/// domain ([`Formulation::admissible`]) and no contact normal has turned
/// by 90° or more from its direction at `q` (`reference`,
/// [`normals_at_start`]), else `None`.
///
/// The normal test keeps the fallbacks' Newton steps on the exact
/// residual from roots the step cannot have: a body that passes through a
/// wall within the step sees that wall's signed distance positive again
/// on the far side, with the normal reversed, and the exact residual has
/// a root there. Measured on `peg_in_hole` under `convex` (the state
/// 29 of its rollout, the peg's x angular velocity −1e-7 off): the
/// barrier-path fallback's Newton steps went to a root with the peg at
/// 24.7 m/s through `wall_px` (residual 3.3e-11, every gap positive);
/// `check`'s central differences divided that by ε.
fn admissible_residual<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<DVec<f64>> {
    let reference = fi.reference;
    stacked_island_residual(form, fi, y)
        .filter(|(_, yhat, z, normals)| {
            form.admissible(yhat, z) && normals.iter().zip(reference).all(|(n, n0)| n.dot(n0) > 0.0)
        })
        .map(|(r, _, _, _)| r)
}

fn island_solution(n: usize, m: usize, y: &DVec<f64>, r: &DVec<f64>) -> IslandSolution {
    IslandSolution {
        v: y.rows(0, n).into_owned(),
        z: (0..m)
            .map(|k| y.fixed_rows::<Z>(n + Z * k).into_owned())
            .collect(),
        residual: r.amax(),
    }
}

/// The exact `∂r/∂y` of an island's stacked residual at `y` (dual
/// numbers; `None` where the residual cannot be evaluated).
fn island_jacobian<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    y: &DVec<f64>,
) -> Option<DMat<f64>> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    type D = JacobianDual;
    let n = island.dim();
    let m = island.contacts.len();
    with_cast::<D, _>(p, |pd| {
        let isl = Island {
            units: island.units.clone(),
            contacts: island
                .contacts
                .iter()
                .map(|c| c.with_mu(D::from_re(c.mu)))
                .collect(),
            local: island.local.clone(),
        };
        let sd: Vec<D> = scale.iter().map(|&x| D::from_re(x)).collect();
        let bd: Option<Vec<D>> = bias.map(|b| b.iter().map(|&x| D::from_re(x)).collect());
        dual_jacobian(y, |yd| {
            let v = yd.rows(0, n).into_owned();
            let z: Vec<Vector3<D>> = (0..m)
                .map(|k| yd.fixed_rows::<Z>(n + Z * k).into_owned())
                .collect();
            let Ok((rd, rows, _, _)) =
                island_residual(form, pd, &isl, &sd, &v, &z, bd.as_deref(), false)
            else {
                return Ok(None);
            };
            let mut r = DVec::zeros(n + Z * m);
            r.rows_mut(0, n).copy_from(&rd);
            for (k, row) in rows.iter().enumerate() {
                r.fixed_rows_mut::<Z>(n + Z * k).copy_from(row);
            }
            Ok(Some(r))
        })
        .ok()
        .flatten()
        .filter(|j| j.iter().all(|x| x.is_finite()))
    })
}

/// Damped Newton on an island's exact residual from `(y, r)` (module docs
/// of [`newton_fallback`]); below the step's tolerance it polishes
/// towards round-off while each step shrinks the residual 4-fold when
/// `polish` is set. `Some((y, r))` within the tolerance, else `None`.
#[allow(clippy::too_many_arguments)]
fn damped_newton<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    mut y: DVec<f64>,
    mut r: DVec<f64>,
    polish: bool,
) -> Option<(DVec<f64>, DVec<f64>)> {
    let p = fi.p;
    let mut polish = if polish { 4 } else { 0 };
    for _ in 0..FALLBACK_ITERATIONS {
        let converged = r.amax() <= p.params.tolerance;
        if converged && polish == 0 {
            break;
        }
        let jac = island_jacobian(form, fi, &y)?;
        let step = jac.svd(true, true).solve(&r, 1e-12).ok()?;
        let norm = r.norm();
        let mut lambda = 1.0;
        let mut next = None;
        while lambda > 1e-6 {
            let trial = &y - &step * lambda;
            if let Some(rt) = admissible_residual(form, fi, &trial) {
                if rt.norm() < (1.0 - 1e-4 * lambda) * norm {
                    next = Some((trial, rt));
                    break;
                }
            }
            lambda *= 0.5;
        }
        let Some((yn, rn)) = next else {
            if converged {
                break;
            }
            return None;
        };
        if converged {
            polish -= 1;
            if rn.amax() > 0.25 * r.amax() {
                if rn.amax() < r.amax() {
                    (y, r) = (yn, rn);
                }
                break;
            }
        }
        y = yn;
        r = rn;
    }
    (r.amax() <= p.params.tolerance).then_some((y, r))
}

/// Barrier weight reduction per stage of [`barrier_fallback`].
const BARRIER_REDUCTION: f64 = 10.0;

/// The fallback of a barrier formulation: the barrier path
/// ([`barrier_path`]) from two starts in turn. First the loop's point of
/// lowest residual `(v, z)` itself, at the weight among `κ 10^j`
/// (`j = 0 … 8`) where its exact residual is lowest. Then, if that path
/// fails, a centred point: at the loop's best velocity `v` (pulled
/// towards `v⁺ = 0` until every contact-space velocity is in the domain),
/// the unknowns are the centred ones ([`Formulation::centred`]) at the
/// weight `κ₀ = s² max_c σ_c` (`s`: the velocity scale, the larger of the
/// contact-space velocities there and the loop's residual; `σ_c`: the
/// impulse scales), the problem's natural energy (as the inner solve's
/// first stage).
#[allow(clippy::too_many_arguments)]
fn barrier_fallback<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    v: DVec<f64>,
    z: DVec<f64>,
    res: f64,
    kappa: f64,
) -> Option<IslandSolution> {
    let FallbackIsland {
        p,
        island,
        scale,
        bias,
        ..
    } = *fi;
    let n = island.dim();
    let m = island.contacts.len();
    let mus: Vec<f64> = island.contacts.iter().map(|c| c.mu).collect();
    // First from the loop's point itself, at the weight (κ 10^j, j =
    // 0 … 8) where its residual is lowest: its impulses balance the
    // dynamics rows, which the centred start below does not (at a gliding
    // contact the centred impulse is of order ‖ŷ‖/R: on `peg_in_hole`'s
    // perturbed squeeze steps a start residual of 2e4, from which the
    // first stage's Newton steps wandered to the peg rising at 3 m/s).
    let mut y = DVec::zeros(n + Z * m);
    y.rows_mut(0, n).copy_from(&v);
    y.rows_mut(n, Z * m).copy_from(&z);
    let start = (0..=8)
        .map(|j| kappa * 10f64.powi(j))
        .filter_map(|k| {
            let r = admissible_residual(&form.with_barrier(k)?, fi, &y)?;
            Some((r.amax(), k))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, k)) = start {
        if let Some(sol) = barrier_path(form, fi, y, k, kappa) {
            return Some(sol);
        }
    }
    // Contact-space velocities and Delassus operator at `v`.
    let point = |v: &DVec<f64>| -> Option<(Vec<Vector3<f64>>, DMat<f64>)> {
        let ev = evaluate(p, island, v, &zero_xs(island)).ok()?;
        let mut yhat = contact_velocities(&ev, p.h);
        if let Some(b) = bias {
            for (y, b) in yhat.iter_mut().zip(b) {
                y[0] += *b;
            }
        }
        let a = Delassus::new(island, &ev).ok()?.matrix();
        Some((yhat, a))
    };
    let mut t = 1.0;
    let mut v0 = v.clone();
    let (yhat, a) = loop {
        if let Some((yhat, a)) = point(&v0) {
            if yhat
                .iter()
                .all(|y| y[0] > 0.0 && y.iter().all(|x| x.is_finite()))
            {
                break (yhat, a);
            }
        }
        t *= 0.5;
        if t < 1e-6 {
            return None;
        }
        v0 = &v * t;
    };
    let s = yhat.iter().map(|y| y.amax()).fold(res, f64::max);
    let sigma = scale.iter().copied().fold(0.0, f64::max);
    let k = (s * s * sigma).max(kappa);
    let z = form.with_barrier(k)?.centred(&a, &yhat, &mus, scale)?;
    let mut y = DVec::zeros(n + Z * m);
    y.rows_mut(0, n).copy_from(&v0);
    for (c, zc) in z.iter().enumerate() {
        y.fixed_rows_mut::<Z>(n + Z * c).copy_from(zc);
    }
    barrier_path(form, fi, y, k, kappa)
}

/// [`barrier_fallback`]'s continuation from `y` at the weight `k` down to
/// `kappa`: [`damped_newton`] on the exact residual at each weight to the
/// step's tolerance, the weight divided by [`BARRIER_REDUCTION`] per stage
/// (by its square root after a stage that fails, from that stage's start;
/// squared again, up to [`BARRIER_REDUCTION`], after each stage that
/// succeeds) down to κ, where the root is polished.
#[allow(clippy::too_many_arguments)]
fn barrier_path<F: Formulation>(
    form: &F,
    fi: &FallbackIsland<'_>,
    mut y: DVec<f64>,
    mut k: f64,
    kappa: f64,
) -> Option<IslandSolution> {
    let island = fi.island;
    let n = island.dim();
    let m = island.contacts.len();
    let mut reduction = BARRIER_REDUCTION;
    let mut stages = 0;
    loop {
        let fk = form.with_barrier(k)?;
        let last = k <= kappa;
        let r = admissible_residual(&fk, fi, &y)?;
        stages += 1;
        match damped_newton(&fk, fi, y.clone(), r, last) {
            Some((yn, rn)) => {
                if last {
                    return Some(island_solution(n, m, &yn, &rn));
                }
                y = yn;
                // After a success the reduction grows back (squared, up
                // to BARRIER_REDUCTION): a reduction shrunk for good
                // left some of `peg_in_hole`'s perturbed steps among the
                // four gliding walls at 1.33 per stage after their first
                // stages failed, 71 stages from there to κ, beyond
                // BARRIER_STAGES.
                reduction = (reduction * reduction).min(BARRIER_REDUCTION);
                k = (k / reduction).max(kappa);
            }
            None => {
                // Back to the last centred weight (above the first one
                // when the first stage fails: a larger weight is a
                // smoother problem), a smaller reduction.
                if stages > BARRIER_STAGES || reduction < 1.5 {
                    return None;
                }
                k *= reduction;
                reduction = reduction.sqrt();
                k = (k / reduction).max(kappa);
            }
        }
        if stages > BARRIER_STAGES {
            return None;
        }
    }
}

/// Cap of [`barrier_fallback`]'s stages.
const BARRIER_STAGES: usize = 40;

/// Marks every conic candidate (a shape pair without a closed form,
/// `parts` set: any pair with a cylinder, cone, ellipsoid, polytope, padded
/// polygon or bundle, or two capsules within 5.7° of parallel) to have its
/// gap in metres ([`metric_gap`](crate::contact::space::metric_gap)). The
/// conic program's gap is the scaling `α* − 1`, while the contact-space
/// linearization takes the normal row of `W` (the witness point's velocity
/// along the normal) as the rate of the gap: with the scaling, `ŷ_N = φ/h`
/// and `A f + c` disagree by the factor between the two and the
/// linearization loop does not converge (measured before the conversion:
/// residual 3–30 after 30 iterations on `bundles`, `peg_in_hole`,
/// `polytope_drop`).
pub fn metric_conic<T: Scalar>(cands: &mut [Candidate<T>]) {
    for c in cands {
        if let Some(parts) = &mut c.parts {
            parts.metric = true;
        }
    }
}

/// The f64 step of a contact-space backend: `(solution, y*, structure)`.
pub fn solve_f64<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
) -> Result<(StepSolution<f64>, DVec<f64>, Structure, InnerStats), SolveError> {
    form.refuse(p)?;
    let dp = form.driver();
    let (mut v_free, ff_iters) = free_flight_velocity(
        p.model,
        p.q,
        p.v,
        p.u,
        &p.gravity,
        p.h,
        &NewtonParams::default(),
    )?;
    articulated_velocity(p.model, p.q, p.v, p.u, p.h, &mut v_free);
    let mut detect = DetectScratch::default();
    let mut cands = Vec::new();
    candidates_into(p, dp.margin, &mut detect, &mut cands);
    metric_conic(&mut cands);
    let mut stats = InnerStats::default();
    // Candidate rounds: features penetrating at q⁺ that were no candidate
    // are added and the step solved again (as `ipm` does).
    for round in 0..4 {
        let mut out = StepSolution {
            q_next: DVec::zeros(0),
            v_next: v_free.clone(),
            contacts: Vec::new(),
            stats: SolveStats {
                iterations: ff_iters,
                contacts: cands.len(),
                ..Default::default()
            },
        };
        let mut zs = vec![Vector3::zeros(); cands.len()];
        let mut cand_scale = vec![1.0; cands.len()];
        let mut max_res: f64 = 0.0;
        for island in islands(p.model, cands.clone()) {
            let v0 = island.gather(&v_free);
            let mut scale: Vec<f64> = Vec::new();
            let sol = solve_island(form, p, &island, v0, &mut scale, &mut stats)?;
            max_res = max_res.max(sol.residual);
            island.scatter(&sol.v, &mut out.v_next);
            for (k, c) in island.contacts.iter().enumerate() {
                let i = index_of(&cands, &c.key())?;
                zs[i] = sol.z[k];
                cand_scale[i] = scale[k];
            }
        }
        out.q_next = integrate_model(p.model, p.q, &out.v_next, p.h)?;
        let mut found = Vec::new();
        penetrating_into(p, &out.q_next, &mut detect, &mut found);
        found.retain(|c| !cands.iter().any(|d| d.key() == c.key()));
        if !found.is_empty() && round < 3 {
            metric_conic(&mut found);
            cands.extend(found);
            continue;
        }
        let zflat: Vec<DVec<f64>> = zs
            .iter()
            .map(|z| DVec::from_column_slice(z.as_slice()))
            .collect();
        let y = stacked_root(&out.v_next, &zflat);
        let mus: Vec<f64> = cands.iter().map(|c| c.mu).collect();
        let mut s = Structure {
            pieces: form.pieces(&mus, &zs),
            candidates: cands,
            scale: cand_scale,
        };
        let polished = form.polish_root(p, &s, y.clone())?;
        let y = if polished != y {
            let nv = p.model.nv;
            out.v_next = polished.rows(0, nv).into_owned();
            out.q_next = integrate_model(p.model, p.q, &out.v_next, p.h)?;
            let zp: Vec<Vector3<f64>> = (0..s.candidates.len())
                .map(|k| polished.fixed_rows::<Z>(nv + Z * k).into_owned())
                .collect();
            s.pieces = form.pieces(&mus, &zp);
            polished
        } else {
            y
        };
        out.stats.iterations = stats.iterations;
        out.stats.residual = max_res;
        contacts_into(form, p, &s, &y, &mut out)?;
        return Ok((out, y, s, stats));
    }
    unreachable!("the last candidate round returns")
}

/// The contact impulses at `y` (every island evaluated at the root).
fn contacts_into<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    s: &Structure,
    y: &DVec<T>,
    out: &mut StepSolution<T>,
) -> Result<(), SolveError> {
    let nv = p.model.nv;
    out.contacts.clear();
    let v_next = y.rows(0, nv).into_owned();
    for island in islands(p.model, candidates_in(p, &s.candidates)) {
        let v_local = island.gather(&v_next);
        let ev = evaluate(p, &island, &v_local, &zero_xs(&island))?;
        let scale = if F::SCALE_MOVES_ROOT {
            Some(scales(p, &island)?)
        } else {
            None
        };
        for (ci, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
            let i = index_of(&s.candidates, &cand.key())?;
            let z: Vector3<T> = y.fixed_rows::<Z>(nv + Z * i).into_owned();
            let sc = scale
                .as_ref()
                .map_or_else(|| T::from_re(s.scale[i]), |sc| sc[ci]);
            let f = form.impulse(cand.mu, sc, &z);
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
    Ok(())
}

/// Runs `f` on the primal (f64) copy of `p`.
pub fn with_primal<T: Scalar, R>(
    p: &StepProblem<'_, T>,
    f: impl FnOnce(&StepProblem<'_, f64>) -> R,
) -> R {
    let model = p.model.cast::<f64>();
    let shapes: Vec<_> = p
        .shapes
        .iter()
        .map(|s| s.as_ref().map(|s| s.cast()))
        .collect();
    let materials: Vec<_> = p.materials.iter().map(|m| m.cast()).collect();
    let statics: Vec<_> = p.statics.iter().map(|s| s.cast()).collect();
    let link_shapes: Vec<_> = p.link_shapes.iter().map(|s| s.cast()).collect();
    let re = |x: &DVec<T>| x.map(|x| x.re());
    let (q, v, u) = (re(p.q), re(p.v), re(p.u));
    let pf = StepProblem {
        model: &model,
        shapes: &shapes,
        materials: &materials,
        statics: &statics,
        link_shapes: &link_shapes,
        friction_combine: p.friction_combine,
        restitution_combine: p.restitution_combine,
        q: &q,
        v: &v,
        u: &u,
        gravity: p.gravity.map(|x| x.re()),
        h: p.h.re(),
        friction_cone: p.friction_cone,
        params: p.params,
        ccd: p.ccd,
    };
    f(&pf)
}

/// Pseudo-inverse of a square matrix (SVD of the whole matrix, singular
/// values below `1e-12 σ_max` dropped). Not block by block as
/// [`pinv_unique`]: on the drone of `tests/all/diff/complementarity.rs` (a box on
/// four corners under `lcp`, whose complementarity-aware gradient solves
/// with this pseudo-inverse) the block-wise one differed from the whole
/// matrix's by 1.2e-2 (entries of 70) on a 6 × 6 matrix of blocks 1, 1,
/// 1 and 3 (not explained), and the exact gradient's range test failed.
pub fn pinv(j: &DMat<f64>) -> Result<DMat<f64>, SolveError> {
    if j.nrows() == 0 {
        return Ok(DMat::zeros(0, 0));
    }
    let svd = j.clone().svd(true, true);
    let smax = svd.singular_values.max();
    if !(smax > 0.0 && smax.is_finite()) {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    svd.pseudo_inverse(1e-12 * smax)
        .map_err(|_| SolveError::Singular("residual Jacobian"))
}

/// The pseudo-inverse of `∂r/∂y` (as [`pinv`]) when it determines the
/// velocity rows: every null vector of `J` (right singular vector of a
/// dropped singular value) must have no part in the first `nv` unknowns
/// (`v⁺`). Redundant contacts of a resting or uniformly sliding body only
/// leave the impulses undetermined; where the distribution of the
/// impulses moves `v⁺` (Coulomb friction on redundant contacts whose slip
/// directions differ, as a box that slides and spins flat on its four
/// corners), the step map is set-valued, the solve's `v⁺` is one point of
/// a family and no derivative exists: [`SolveError::NotUnique`], with the
/// size of the null space's velocity part.
pub fn pinv_unique(j: &DMat<f64>, nv: usize) -> Result<DMat<f64>, SolveError> {
    if j.nrows() == 0 {
        return Ok(DMat::zeros(0, 0));
    }
    let svd = BlockSvd::new(j);
    let smax = svd.max_singular_value();
    if !(smax > 0.0 && smax.is_finite()) {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    let cut = 1e-12 * smax;
    let (dim, part) = svd.null_part(cut, nv.min(j.ncols()));
    if part > NOT_UNIQUE {
        return Err(SolveError::NotUnique {
            null_dims: dim,
            velocity_part: part,
        });
    }
    svd.pseudo_inverse(cut)
        .ok_or(SolveError::Singular("residual Jacobian"))
}

/// Largest velocity part ([`pinv_unique`]) of the unit null space of
/// `∂r/∂y` taken as round-off of a rank-deficient but velocity-determined
/// system.
pub const NOT_UNIQUE: f64 = 1e-8;

/// `(∂r/∂y) X = rhs` by the pseudo-inverse (module docs).
pub fn pinv_solve<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    s: &Structure,
    y: &DVec<f64>,
    rhs: &DMat<f64>,
) -> Result<DMat<f64>, SolveError> {
    crate::contact::backend::check_rows(y, rhs)?;
    let j = dense_jacobian(form, p, s, y)?;
    let x = pinv_unique(&j, p.model.nv)? * rhs;
    // The minimum-norm solution is the derivative only when the system is
    // consistent (redundant rows, not a true singularity).
    let scale = rhs.amax().max(1.0);
    let r = &j * &x - rhs;
    let (mut column, mut miss) = (0, 0.0f64);
    for (c, col) in r.column_iter().enumerate() {
        let m = col.amax() / scale;
        if !(m <= miss) {
            (column, miss) = (c, m);
        }
    }
    if !(miss <= 1e-6) {
        return Err(SolveError::OutOfRange { column, miss });
    }
    Ok(x)
}

/// The step in any scalar: the f64 solve, then the refinement of the
/// derivative parts (module docs).
pub fn solve<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
) -> Result<(StepSolution<T>, Structure, InnerStats), SolveError> {
    let (sol, y, s, stats, jinv) = with_primal(p, |pf| -> Result<_, SolveError> {
        let (sol, y, s, stats) = solve_f64(form, pf)?;
        let jinv = if T::DERIVATIVE_ORDER > 0 {
            let j = dense_jacobian(form, pf, &s, &y)?;
            // The pseudo-inverse only where `∂r/∂y` is singular by design
            // (redundant contacts); otherwise the inverse: a truncated SVD
            // would drop a well-defined but small singular value (`convex`:
            // 1e-12 of the largest at a sliding contact).
            Some(if F::REDUNDANT {
                pinv_unique(&j, pf.model.nv)?
            } else {
                inverse_by_blocks(&j).ok_or(SolveError::Singular("residual Jacobian"))?
            })
        } else {
            None
        };
        Ok((sol, y, s, stats, jinv))
    })?;
    let mut yt: DVec<T> = y.map(T::from_re);
    if let Some(jinv) = jinv {
        for pass in 0..T::DERIVATIVE_ORDER + F::REFINE {
            let mut r = residual(form, p, &s, &yt)?;
            if pass >= T::DERIVATIVE_ORDER {
                // Refinement of the derivative parts only
                // (`ContactBackend::REFINE`).
                r = r.map(|x| x - T::from_re(x.re()));
            }
            let n = r.len();
            for i in 0..n {
                let mut acc = T::zero();
                for (j, &a) in jinv.row(i).iter().enumerate() {
                    if a != 0.0 {
                        acc += T::from_re(a) * r[j];
                    }
                }
                yt[i] -= acc;
            }
        }
    }
    let nv = p.model.nv;
    let v_next = yt.rows(0, nv).into_owned();
    let q_next = integrate_model(p.model, p.q, &v_next, p.h)?;
    let mut out = StepSolution {
        q_next,
        v_next,
        contacts: Vec::new(),
        stats: sol.stats,
    };
    out.stats.max_penetration = 0.0;
    contacts_into(form, p, &s, &yt, &mut out)?;
    Ok((out, s, stats))
}

/// The unknowns of a unit test's island as fixed-size vectors (used by
/// the backends' tests).
#[doc(hidden)]
pub fn rows3(z: &DVec<f64>) -> Vec<Vector3<f64>> {
    (0..z.len() / Z)
        .map(|k| z.fixed_rows::<Z>(Z * k).into_owned())
        .collect()
}
