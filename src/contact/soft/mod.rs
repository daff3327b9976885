//! `soft`: the soft-minimum contact model over oriented point clouds
//! (Beker et al., issue #19): contact forces are a smooth function
//! `Λ(q, v)` of the state, added to the dynamics `M v̇ = τ − c + Σ Λ`
//! (eqs. 24–25), with no contact solver.
//!
//! # Geometry: oriented point clouds
//!
//! Every body's shape becomes an oriented point cloud `{(pᵢ, nᵢ)}` (body
//! frame, [`cloud`]): the `points` shape as written (normals normalized),
//! every other primitive sampled at `points_per_meter` (face grids for
//! boxes and polytopes, spherical grids for spheres and ellipsoids,
//! cylindrical and spherical grids for capsules and cylinders, bundles
//! part by part). Cones and padded polygons are refused (typed error).
//! A static plane is an exact half-space (a one-point cloud: its SSDF is
//! the plane distance); other static shapes are sampled like bodies.
//! A robot link's cloud is its attached collision shapes
//! (`StepProblem::link_shapes`, several per link) sampled the same way,
//! placed at their poses in the link frame and merged.
//!
//! # Robot links (eqs. 21–23 on joint coordinates)
//!
//! A link's cloud moves with the link's world pose `oMi(q)` (forward
//! kinematics over the joints from its root; fixed or floating base). Its
//! material point `p` moves at `ṗ = J_p v`, `J_p`'s column `k` being
//! `lin(S_k) + ang(S_k) × p` for the world motion subspace `S_k` (at the
//! world origin, `dynamics::kinematics`) of every joint coordinate from
//! the root to the link, zero elsewhere. The point–plane force `f` at `p`
//! enters the generalized forces as `J_pᵀ f`: per coordinate
//! `S_kᵀ (f, p × f)`, so each pair's wrench on the link, taken about the
//! world origin, is mapped once by the `S_k` of its path. A link and a
//! free body (or static geometry) form a pair as two free bodies do, with
//! the same action–reaction at `p`; link–link pairs (self-collision, two
//! robots) are not evaluated, as in every backend. The robot's step is
//! the semi-implicit Euler step of the articulated dynamics with the soft
//! forces as applied joint forces,
//! `v⁺ = v + h ABA(q, v, u + Λ(q, v))` (`dynamics::articulated`; its
//! residual rows `v⁺ − v − h ABA(q, v, u + Λ)` beside the free bodies'),
//! and the inverse dynamics `u = RNEA(q, v, (v⁺ − v)/h) − Λ(q, v)`.
//!
//! # The model (paper eqs. 8–25)
//!
//! * Soft signed distance of a point `p` to a cloud `S` (eqs. 8–9):
//!   `dᵢ = ‖p − pᵢ‖²`, `φ̂_S(p) = Σ σ_ε₁(−d)ᵢ nᵢᵀ(p − pᵢ)`, a softmin
//!   with temperature `ε₁` (m², `distance_smoothing`).
//! * A pair's separation field `Φ₁₂` stacks `φ̂_S₂` at every point of `S₁`
//!   and `φ̂_S₁` at every point of `S₂`; its soft distance is
//!   `σ_ε₂(−Φ)ᵀΦ` (eq. 11 relaxed, `ε₂` in m, `separation_smoothing`).
//! * Point–plane force (eqs. 14–20): `φ = nᵢᵀ(p − pᵢ)`,
//!   `λ_n = k s⁺_ε₃(−φ) d(v_n / v_d)`,
//!   `λ_t = −μ λ_n v_t / √(v_s² + ‖v_t‖²)`, `λ = λ_n nᵢ + λ_t`, with
//!   `s⁺_ε(x) = ε ln(1 + e^{x/ε})` and `v = v_n nᵢ + v_t` the velocity of
//!   the point relative to the plane.
//! * Point–SSDF force (eqs. 21–22) `Λ_S(p) = Σ σ_ε₁(−d)ᵢ λᵢ` and pair
//!   force (eq. 23) `Λ₁₂ = Σ_f σ_ε₂(−Φ)_f Λ_S(p_f)`.
//!
//! **Sign of eq. 21.** As printed, `λ̄ᵢ = (Jᵢ − J)ᵀ λ` applies `+λ` to
//! the body owning the plane point and `−λ` to the body owning `p`; since
//! `λ_n > 0` points along the plane's outward normal `nᵢ`, that pushes `p`
//! *into* the other body. The force on `p`'s body must be `+λ`:
//! `λ̄ᵢ = (J − Jᵢ)ᵀ λ` (tested: a point mass on a plane settles at the
//! closed-form depth instead of falling through).
//!
//! **Where the reaction acts.** `Jᵢ` and `vᵢ` are taken at `p` (the
//! plane body's material point that coincides with `p`) rather than at
//! `pᵢ`: each point-plane pair is then an exact action–reaction at one
//! point, so the total linear and angular momentum are conserved by the
//! contact forces (a reaction at `pᵢ` would add the torque
//! `(pᵢ − p) × λ`), and `v − vᵢ` is the relative velocity of the two
//! material points in contact.
//!
//! **Damping profile.** The published `d` (eqs. 16–17) is only C¹ (its
//! curvature jumps at `v_n = 0` and `2 v_d`), so Hessians through it jump
//! there. The default `damping_profile = "smoothed"` replaces the piece on
//! `(0, 2 v_d]` by the quintic `(1 − x/2)³(1 + x/2)`, which has the
//! published value and slope at both ends and zero curvature at both (C²
//! everywhere, monotone, `d(0) = 1` so the resting depth is unchanged);
//! `"published"` keeps eqs. 16–17 (see `docs/backends.md`, the Hessian
//! plot).
//!
//! # Numerical safety (every scalar)
//!
//! Softmins are log-sum-exp with the shift by the *primal* minimum (a
//! constant: derivatives exact, no overflow); the softplus never forms
//! `e^{x/ε}` for large `x` (`max(x, 0) + ε ln(1 + e^{−|x|/ε})`); the
//! friction's norm is `√(v_s² + ‖v_t‖²) ≥ v_s > 0` (finite derivatives at
//! zero tangential velocity); no norm of a point difference is formed
//! (`dᵢ` is squared), so coincident points have finite derivatives. A
//! softmin weight below `e^{−60}` of the largest is zero without forming
//! its exponential (on primal values; its contribution, derivatives
//! included, is below f64 resolution): the cost of far points is one
//! squared distance, or none with `prune` (below).
//!
//! # Time stepping and the contract
//!
//! * `integrator = "euler"` (default): semi-implicit Euler. The soft
//!   forces are evaluated at the start of the step `(q, v)` and enter the
//!   discrete dynamics as applied forces: the residual is the
//!   free-flight residual with `u + Λ(q, v)` (robots: the articulated
//!   rows above):
//!   `r = m(ṗ⁺ − ṗ) − h(m g + f + Λ_f)`,
//!   `r_rot = P⁺(ω⁺) − P⁻(ω) − h(τ + Λ_τ)` (`dynamics::free`), exact and
//!   generic, with `y = v⁺` and `q⁺ = q ⊕ h v⁺`. `∂r/∂y` is the
//!   free-flight block diagonal (`Λ` does not depend on `v⁺`). All four
//!   derivative methods apply.
//! * `integrator = "rk4"`: the classical four-stage Runge–Kutta method on
//!   `(q, v)` with `q̇ = v` through the retraction (stage configurations
//!   `q ⊕ c h v_s`, the final `q⁺ = q ⊕ h v̄` with `v̄` the RK4 average of
//!   the stage velocities) and `v̇ = M⁻¹(τ − c + Λ)`, `c` including the
//!   gyroscopic `ω × Iω`. It is fourth order for translations; rotations
//!   use the averaged world angular velocity (second order in general,
//!   exact for a constant `ω`). Its `q⁺` is not `q ⊕ h v⁺`, so it does not
//!   fit the implicit contract: `solve_root`/`residual` refuse it with a
//!   typed error, i.e. `ift` and `lift` are refused, and `unrolled` and `fd`
//!   (which differentiate the generic `solve`) are exact. Inverse dynamics
//!   is Euler only.
//!
//! # Cut-off and cost
//!
//! Pairs whose bounding balls (about a free
//! body's centre of mass or a link's frame origin, radius the cloud's
//! largest point distance from it) are more than `margin`
//! apart are skipped (decided on primal values at the start of the step,
//! returned as the structure so a dual evaluation uses the same pairs).
//! Beyond the cut-off every point's plane distance exceeds `margin`, so
//! each point–plane force is below `k ε₃ ln(1 + e^{−margin/ε₃})`, i.e. a
//! fraction `e^{−margin/ε₃}/ln 2` of the force at touch (`k ε₃ ln 2`):
//! 3e-9 at the defaults (up to the SSDF's leakage from far faces, weighted
//! by `e^{−Δd/ε₁}`).
//!
//! **Pruning (exact).** Within a pair, with `prune = true` (default), only
//! the terms that can be nonzero are evaluated; the result is the one of
//! the evaluation of every point pair (`prune = false`), term by term and
//! in the same order:
//!
//! * *SSDF queries.* Each cloud's primal points (world) are put in a
//!   kd-tree ([`tree`], built at each step in `O(I log I)`). For a point
//!   `p`, the tree gives the nearest squared distance `d_min` and then
//!   every point with `dᵢ ≤ (d_min + 60 ε₁)(1 + 1e-9)`, sorted by index.
//!   [`softmin_weights`](model::softmin_weights) zeroes exactly the
//!   weights with `dᵢ − d_min > 60 ε₁` (primal values, the scalar's own
//!   `dᵢ`); the tree's f64 distances differ from those by a few ulps
//!   (another summation order), which the factor `1 + 1e-9` covers, and a
//!   box is pruned only when its distance to `p` exceeds the radius. So
//!   every point with a nonzero weight is visited, the nearest included
//!   (the shift `d_min` is the same), and the omitted points are those
//!   the full evaluation multiplies by an exact zero.
//! * *Forces where the field weighs.* The separation field's softmin
//!   weights (temperature `ε₂`) are exactly zero for entries more than
//!   `60 ε₂` above its minimum. Before the field, `bound` is the entry of
//!   each cloud's point nearest to the other's centre (the smaller of
//!   the two): an entry of the field, so at least its minimum. A point's
//!   force is evaluated when its `φ̂ − bound ≤ 60 ε₂` (primal values;
//!   `fl(a − b)` is monotone in `b`, so this holds for every entry whose
//!   weight is not zeroed), with the weights of its SSDF (no second pass).
//!   A skipped entry's finite force is multiplied by a zero weight (every
//!   part of the scalar zero: value and derivatives), so its term is zero
//!   in both evaluations; an entry with a nonzero weight and no force
//!   (not reached by the argument above) would be evaluated afterwards.
//!
//! Both decisions are on primal values and the skipped terms are exact
//! zeros, so the dual parts agree too (`tests/all/contact/soft_prune.rs`).
//! The per-point buffers ([`model::Scratch`]) are reused across the points
//! of a side (one per thread); the trees and the clouds are rebuilt at each
//! step with the scene (allocations per step, not per point).
//!
//! A point-level cut-off (skipping the points of one cloud farther than
//! `margin` from the other's bounding box) is *not* used: the SSDF is a
//! plane distance `nᵢᵀ(p − pᵢ)`, which is near zero at a point far from
//! every sample but in the plane of a face beyond its edge, so
//! `e^{−margin/ε₃}` does not bound such a point's force. With the tree a
//! far point costs a search and the thin shell
//! `d_min ≤ dᵢ ≤ d_min + 60 ε₁` instead of `I₂` distances.
//!
//! The worst case is still `I₁ I₂` per pair (an `ε₁` whose `√(60 ε₁)`
//! spans the clouds): a pair whose point-count product exceeds
//! `max_pair_points` (default 1e8) is refused with a typed error. Pairs
//! are evaluated in parallel (rayon) when there
//! are several and their total work reaches [`PARALLEL_WORK`] point–plane
//! evaluations, and within a pair the points of one side when
//! `I₁ I₂ ≥` [`PARALLEL_WORK`]; sums are taken in a fixed order, so the
//! result does not depend on the threads.
//!
//! # Defaults (and why)
//!
//! See [`Params`]. The stability of the explicit forces needs
//! `h √(k/m) ≲ 1`, `h g / v_d ≲ 1` and `h μ g / v_s ≲ 1`: at the defaults
//! and `m = 1` kg, `h ≤ 2` ms.
//!
//! # Not modelled
//!
//! Restitution (`e > 0`: the damping sets the bounce), continuous
//! collision and joint limits are refused before simulating
//! ([`ContactBackend::supports`]); link–link contact is not evaluated
//! (above).
//!
//! Files: `mod.rs` (parameters and the backend), `scene.rs` (the clouds,
//! statics and trees of a step, and the pairs within the cut-off),
//! `forces.rs` (the generalized soft forces and the integrators),
//! `cloud.rs`, `model.rs` and `tree.rs`.

mod scene;
mod forces;
use scene::*;
use forces::*;

pub mod cloud;
pub mod model;
pub mod tree;

use rayon::prelude::*;

use self::cloud::{sample, Cloud};
use self::model::{
    plane_entry, point_entry, softmin_weights, Constants, DampingProfile, Force, Scratch, Side,
};
use self::tree::Tree;
use super::backend::{check_rows, dense_solve, free_body_solve};
use super::{
    ContactBackend, ContactImpulse, Feature, SolveError, SolveStats, StepProblem, StepSolution,
};
use crate::collision::world_plane;
use crate::dynamics::free::{
    free_flight_velocity, integrate_model, momentum_residual, orientation, position,
    world_inertia, NewtonParams,
};
use crate::geometry::Shape;
use crate::dynamics::aba::aba;
use crate::dynamics::articulated::{
    articulated_dofs, articulated_residual, articulated_velocity, has_articulated,
};
use crate::dynamics::kinematics::{joint_transform, motion_subspace};
use crate::dynamics::rnea::rnea;
use crate::math::{so3, DMat, DVec, Pose, Vec3, Vec6};
use crate::Scalar;

/// Work (`I₁ I₂` point–plane evaluations) from which one side of a pair
/// is evaluated in parallel.
pub const PARALLEL_WORK: usize = 1 << 14;

/// The time integrator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Integrator {
    /// Semi-implicit Euler (module docs); every derivative method.
    #[default]
    Euler,
    /// Classical Runge–Kutta (module docs); `run`, `unrolled` and `fd`
    /// only.
    Rk4,
}

/// Tuning of `soft` (`[solver_params]`; every key optional).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Cut-off (m): pairs whose bounding balls are farther apart are not
    /// evaluated (module docs). Default 0.02 = 20 ε₃: the force there is
    /// 3e-9 of the force at touch.
    pub margin: f64,
    /// `k` (N/m). Default 1e4: a 1 kg body rests 0.51 mm deep at the
    /// default ε₃ (`φ* = −ε₃ ln(e^{mg/(kε₃)} − 1)`).
    pub stiffness: f64,
    /// `ε₃` (m), the softplus width: the force at zero distance is
    /// `k ε₃ ln 2`. Default 1e-3 (1 mm, the scale of the resting depth).
    pub softness: f64,
    /// `v_d` (m/s): damping `k s⁺ / v_d` per unit approach speed. Default
    /// 0.05: about critical damping for 1 kg at the default `k`
    /// (`2√(k' m) ≈ 160` Ns/m, `k s⁺/v_d = mg/v_d ≈ 200` Ns/m at rest).
    pub damping_velocity: f64,
    /// `v_s` (m/s): below it friction is viscous. Default 0.01 (1 % of
    /// 1 m/s: a sliding body decelerates within 0.005 % of μg at 1 m/s).
    pub stiction_velocity: f64,
    /// `ε₁` (m²), the SSDF's temperature. Default 1e-4 (a length scale of
    /// 1 cm, below the default spacing of 5 cm: faces stay sharp, edges
    /// are rounded over about a centimetre).
    pub distance_smoothing: f64,
    /// `ε₂` (m), the separation field's temperature. Default 1e-3 (a
    /// point 7 mm farther than the deepest one weighs e^{-7} as much).
    pub separation_smoothing: f64,
    /// `"euler"` (default) or `"rk4"` (module docs).
    pub integrator: Integrator,
    /// Sampling density of primitives (points per metre along a face).
    /// Default 20 (5 cm spacing: a 0.2 m cube has 96 points).
    pub points_per_meter: f64,
    /// `"smoothed"` (default, C²) or `"published"` (eqs. 16–17, C¹).
    pub damping_profile: DampingProfile,
    /// Whether the evaluation visits only the terms that can be nonzero
    /// (default `true`: kd-tree softmin queries and forces only for the
    /// separation field's nonzero weights, module docs); `false` computes
    /// every point pair (the reference evaluation; the same result).
    pub prune: bool,
    /// Largest product `I₁ I₂` of a pair's point counts (a pair's
    /// worst-case work per force evaluation, reached when `ε₁` spans the
    /// clouds); a larger pair is refused with a typed error. Default 1e8.
    pub max_pair_points: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            margin: 0.02,
            stiffness: 1e4,
            softness: 1e-3,
            damping_velocity: 0.05,
            stiction_velocity: 0.01,
            distance_smoothing: 1e-4,
            separation_smoothing: 1e-3,
            integrator: Integrator::Euler,
            points_per_meter: 20.0,
            damping_profile: DampingProfile::Smoothed,
            prune: true,
            max_pair_points: 1e8,
        }
    }
}

impl Params {
    /// The model's constants.
    pub fn constants(&self) -> Constants {
        Constants {
            stiffness: self.stiffness,
            softness: self.softness,
            damping_velocity: self.damping_velocity,
            stiction_velocity: self.stiction_velocity,
            distance_smoothing: self.distance_smoothing,
            separation_smoothing: self.separation_smoothing,
            profile: self.damping_profile,
        }
    }
}

/// The `soft` backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Soft {
    /// Tuning.
    pub params: Params,
    /// Newton tuning of the rotational equations (as free flight).
    pub newton: NewtonParams,
}

/// The other side of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Other {
    /// A body.
    Body(usize),
    /// A static geometry.
    Static(usize),
}

/// What the f64 step decided: the pairs within the cut-off and the size
/// of every body's cloud (sampling counts are decided on primal values).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Structure {
    /// The pairs within the cut-off.
    pub pairs: Vec<Pair>,
    /// Points per body (0: none).
    pub points: Vec<usize>,
}

/// A pair within the cut-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The first body.
    pub a: usize,
    /// The other side.
    pub b: Other,
}

fn positive(key: &str, x: f64, unit: &str) -> Result<(), String> {
    if x > 0.0 && x.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "`{key}` must be a finite number > 0 ({unit}), got {x}"
        ))
    }
}

impl ContactBackend for Soft {
    const NAME: &'static str = "soft";
    type Params = Params;
    type Structure = Structure;
    type Workspace<T: Scalar> = ();

    fn new(params: &Params) -> Self {
        Soft {
            params: *params,
            newton: NewtonParams::default(),
        }
    }

    fn check_params(p: &Params) -> Result<(), String> {
        if !(p.margin >= 0.0 && p.margin.is_finite()) {
            return Err(format!(
                "`margin` must be a finite number >= 0 (m), got {}",
                p.margin
            ));
        }
        positive("stiffness", p.stiffness, "N/m")?;
        positive("softness", p.softness, "m")?;
        positive("damping_velocity", p.damping_velocity, "m/s")?;
        positive("stiction_velocity", p.stiction_velocity, "m/s")?;
        positive("distance_smoothing", p.distance_smoothing, "m²")?;
        positive("separation_smoothing", p.separation_smoothing, "m")?;
        if !(p.max_pair_points >= 1.0) {
            return Err(format!(
                "`max_pair_points` must be a number >= 1, got {}",
                p.max_pair_points
            ));
        }
        if !(p.points_per_meter > 0.0 && p.points_per_meter <= 1e4) {
            return Err(format!(
                "`points_per_meter` must be in (0, 10000], got {}",
                p.points_per_meter
            ));
        }
        Ok(())
    }

    /// Robots (fixed and floating base, with or without link shapes);
    /// restitution, continuous collision and joint limits are refused
    /// (module docs).
    fn supports(feature: Feature) -> bool {
        matches!(feature, Feature::Robots)
    }

    fn contact_margin(params: &Params) -> f64 {
        params.margin
    }

    fn solve<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
        let (sc, pairs) = self.setup(p)?;
        let mut contacts = Vec::new();
        let lam = self.forces(p, p.v, &sc, &pairs, Some(&mut contacts));
        let max_penetration = contacts
            .iter()
            .map(|c| -c.gap.re())
            .fold(0.0, f64::max);
        let (q_next, v_next, iterations) = match self.params.integrator {
            Integrator::Euler => {
                let (v_next, it) = self.euler(p, &lam)?;
                (integrate_model(p.model, p.q, &v_next, p.h)?, v_next, it)
            }
            Integrator::Rk4 => {
                let (q, v) = self.rk4(p, &pairs)?;
                (q, v, 4)
            }
        };
        let n = contacts.len();
        Ok(StepSolution {
            q_next,
            v_next,
            contacts,
            stats: SolveStats {
                iterations,
                max_penetration,
                contacts: n,
                ..Default::default()
            },
        })
    }

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Structure), SolveError> {
        self.euler_only()?;
        let (sc, pairs) = self.setup(p)?;
        let lam = self.forces(p, p.v, &sc, &pairs, None);
        let (v, _) = self.euler(p, &lam)?;
        let points = sc.bodies.iter().map(|c| c.as_ref().map_or(0, |c| c.len())).collect();
        Ok((v, Structure { pairs, points }))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Structure,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        self.euler_only()?;
        if p.friction_cone == crate::contact::FrictionCone::Pyramid {
            return Err(unsupported(
                "the pyramid friction cone (its smooth friction \
                 mu lambda_n v_t / sqrt(v_s^2 + |v_t|^2) is isotropic, the smoothed Coulomb cone)",
            ));
        }
        let sc = self.scene(p, p.q)?;
        let counts = sc.bodies.iter().map(|c| c.as_ref().map_or(0, |c| c.len()));
        if !counts.eq(s.points.iter().copied()) {
            return Err(SolveError::Singular(
                "soft: the point clouds' sizes differ from the solve's structure",
            ));
        }
        let lam = self.forces(p, p.v, &sc, &s.pairs, None);
        let u = p.u + lam;
        let mut r = DVec::zeros(p.model.nv);
        momentum_residual(p.model, p.q, p.v, y, &u, &p.gravity, p.h, &mut r)?;
        articulated_residual(p.model, p.q, p.v, y, &u, p.h, &mut r);
        Ok(r)
    }

    fn same_structure(a: &Structure, b: &Structure) -> bool {
        a == b
    }

    /// Block diagonal, as free flight (`Λ` does not depend on `v⁺`).
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Structure,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        if has_articulated(p.model) {
            return dense_solve(self, p, s, y, rhs);
        }
        check_rows(y, rhs)?;
        let mut out = DMat::zeros(rhs.nrows(), rhs.ncols());
        for i in 0..p.model.bodies.len() {
            free_body_solve(p, i, y, rhs, &mut out)?;
        }
        Ok(out)
    }

    /// `τ = M v̇ + c − Σ Λ` in the discrete form of the Euler step:
    /// `u = r(v⁺; u = 0)/h − Λ(q, v)` (no solver).
    fn inverse<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        v_next: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        if self.params.integrator != Integrator::Euler {
            return Err(unsupported(
                "inverse dynamics under `integrator = \"rk4\"` (use \"euler\")",
            ));
        }
        if v_next.len() != p.model.nv {
            return Err(SolveError::InvalidInput {
                backend: "soft",
                what: "v_next does not match the model's velocities",
            });
        }
        let (lam, _) = self.generalized_forces(p)?;
        let zero = DVec::zeros(p.u.len());
        let mut r = DVec::zeros(p.model.nv);
        momentum_residual(p.model, p.q, p.v, v_next, &zero, &p.gravity, p.h, &mut r)?;
        let mut u = r / p.h - &lam;
        if has_articulated(p.model) {
            // robots: u = RNEA(q, v, (v⁺ − v)/h) − Λ (the inverse of ABA)
            let acc = (v_next - p.v) / p.h;
            let mut data = p.model.data();
            let tau = rnea(p.model, &mut data, p.q, p.v, &acc);
            for k in articulated_dofs(p.model) {
                u[k] = tau[k] - lam[k];
            }
        }
        Ok(u)
    }
}

impl Soft {
    fn euler_only(&self) -> Result<(), SolveError> {
        match self.params.integrator {
            Integrator::Euler => Ok(()),
            Integrator::Rk4 => Err(unsupported(
                "implicit derivatives (`ift`, `lift`) under `integrator = \"rk4\"`: its q⁺ is \
                 not q ⊕ h v⁺ (use `unrolled` or `fd`, or `integrator = \"euler\"`)",
            )),
        }
    }
}
