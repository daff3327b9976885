//! The backend contract: what every contact formulation implements, for
//! simulating and for differentiating (`diff`'s four methods), and the
//! pieces of it that are the same for every backend.
//!
//! A backend is a type implementing [`ContactBackend`] in its own folder
//! under `contact/`, plus one line in the registry (`contact/registry.rs`),
//! which generates [`SolverKind`](super::SolverKind) (names, parsing, the
//! feature table) and [`BackendParams`](super::BackendParams) (every
//! backend's `[solver_params]`), and the one `match` that `sim` and `diff`
//! go through. Nothing above `contact` names a backend.
//!
//! # Departures from the target design (CONTACT-LAYER.md)
//!
//! * The workspace is per backend ([`ContactBackend::Workspace`], what a
//!   backend carries from one step of a rollout to the next) rather than
//!   one `Workspace<T>` of every buffer: `ipm` keeps its previous contact
//!   solution there (warm start) and allocates its island buffers once per
//!   island solve; the step's setup (candidates, islands, output) still
//!   allocates.
//! * The f64 root and its structure come from a separate method
//!   ([`ContactBackend::solve_root`]) instead of being returned by
//!   `solve`, so that a plain simulation step does not build the stacked
//!   unknowns.
//!
//! # Solving with `∂r/∂y`
//!
//! The implicit-function derivative `dy/dθ = −(∂r/∂y)⁻¹ ∂r/∂θ` needs
//! solves with the residual Jacobian for many right-hand sides (one per
//! parameter). [`ContactBackend::solve_jacobian`] does them; its default is
//! the dense path ([`dense_solve`]: `∂r/∂y` by dual-number evaluation of
//! the residual in column blocks of 8, one dense LU), kept as the fallback
//! and as the test oracle of the structured solves (`FreeFlight`: block
//! diagonal per free body; `ipm`: per island, the reduced Newton system in
//! `v⁺` with per-contact eliminations, factored once at the solution).

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use super::{SolveError, StepProblem, StepSolution};
use crate::Scalar;
use crate::dynamics::free::{DynamicsError, rotational_jacobian, world_inertia};
use crate::geometry::Shape;
use crate::math::{DMat, DVec, Vec3};

/// An input of a step or rollout derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// Tangent direction `i` of the configuration (`q ⊕ δ eᵢ`; per free
    /// body: 3 world-frame translations, 3 world-frame rotations).
    Q(usize),
    /// Entry `i` of the velocity.
    V(usize),
    /// Entry `i` of the control (generalized force).
    U(usize),
    /// Mass of body `b`.
    Mass(usize),
    /// Principal moment `k` (body frame diagonal entry) of body `b`.
    Inertia(usize, usize),
    /// Friction coefficient of body `b`.
    Friction(usize),
    /// Restitution of body `b`.
    Restitution(usize),
    /// Size parameter `k` of body `b`'s shape: the `k`-th of
    /// [`Shape::params`](crate::geometry::Shape::params) (sphere: radius;
    /// box: half extents; capsule and cylinder: radius, half length; cone:
    /// height, half angle; ellipsoid: radii; padded polygon: radius).
    Shape(usize, usize),
    /// Component `k` of gravity.
    Gravity(usize),
    /// The time step.
    Dt,
}

/// A model feature a backend may or may not implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// Restitution `e > 0` (elastic impacts).
    Restitution,
    /// Continuous collision (time of impact).
    Ccd,
    /// URDF joint position limits as unilateral constraints.
    JointLimits,
    /// Articulated robots at all.
    Robots,
}

/// A step that is the root `y*` of a residual `r(y; θ) = 0`, with `v⁺` the
/// first `nv` entries of `y` and `q⁺ = q ⊕ h v⁺`.
///
/// The residual must be generic and exact (no frozen linearization). The
/// discrete decisions the f64 solve takes (active contact candidates, the
/// layout of `y`) are returned as the [`Structure`](ContactBackend::Structure)
/// and passed back to `residual`, so that a problem in a dual scalar with
/// the same primal values is evaluated as the same system.
pub trait ContactBackend: Clone + std::fmt::Debug + Send + Sync {
    /// The backend's name in scene files and on the command line (the
    /// registry checks it against its own line).
    const NAME: &'static str;

    /// Whether the backend relaxes complementarity to `ρ`
    /// ([`SolverParams::rho`](super::SolverParams)), so that a resting
    /// body floats at the gap `ρ / (m ‖g‖ h)` (checked by
    /// `sim::validate::check_relaxation_gap`). Default false.
    const RELAXED: bool = false;

    /// Whether `∂r/∂y` is singular by design where contacts are redundant
    /// (several contacts of one rigid pair whose impulses are not unique,
    /// while `v⁺` is): the derivative methods then solve with the
    /// pseudo-inverse (minimum-norm solution), whose `v⁺` rows are exact
    /// when the right-hand side is consistent. Default false (a singular
    /// `∂r/∂y` is an error).
    const REDUNDANT: bool = false;

    /// Extra refinement passes of the derivative parts in `lift` and in a
    /// dual-scalar solve (`unrolled`), beyond the derivative order: each
    /// pass re-evaluates the residual in the scalar, zeroes its primal part
    /// (the f64 root does not move) and subtracts `(∂r/∂y)⁻¹` of it. For a
    /// backend whose `∂r/∂y` is ill-conditioned (`convex`: its barrier
    /// curvature), so that the f64 factorization's error is refined away.
    /// Default 0.
    const REFINE: usize = 0;

    /// The backend's own tuning: the keys of `[solver_params]` beyond the
    /// shared `rho`, `tolerance` and `max_iterations`, read by serde with
    /// every field optional (`#[serde(default, deny_unknown_fields)]`).
    type Params: Clone
        + std::fmt::Debug
        + Default
        + PartialEq
        + serde::de::DeserializeOwned
        + Send
        + Sync;

    /// What the f64 solve decided (the contact set and layout of `y`).
    type Structure: Clone + std::fmt::Debug;

    /// What the backend carries from one step of a rollout to the next
    /// (a warm start, reused buffers); `()` for a backend that carries
    /// nothing. A fresh workspace is [`Default`].
    type Workspace<T: Scalar>: Default + Clone + std::fmt::Debug + Send;

    /// The backend with this tuning.
    fn new(params: &Self::Params) -> Self;

    /// Refuses tuning values the backend cannot work with (a message
    /// naming the key and the accepted range). Default: all accepted.
    fn check_params(_params: &Self::Params) -> Result<(), String> {
        Ok(())
    }

    /// Whether the backend models `feature`; a problem that needs a feature
    /// its backend does not model is refused before simulating
    /// (`World::check_supported`). Default: none.
    fn supports(_feature: Feature) -> bool {
        false
    }

    /// Distance (m) within which pairs become contact candidates at the
    /// start of a step (used to report gaps of nearby pairs). Default 0.
    fn contact_margin(_params: &Self::Params) -> f64 {
        0.0
    }

    /// The backend's name.
    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Solves one step.
    fn solve<T: Scalar>(&self, problem: &StepProblem<'_, T>)
    -> Result<StepSolution<T>, SolveError>;

    /// Solves one step of a rollout with the workspace the previous steps
    /// left (a fresh one for the first step). Default:
    /// [`solve`](Self::solve), ignoring the workspace.
    fn solve_with<T: Scalar>(
        &self,
        problem: &StepProblem<'_, T>,
        _workspace: &mut Self::Workspace<T>,
    ) -> Result<StepSolution<T>, SolveError> {
        self.solve(problem)
    }

    /// [`solve_with`](Self::solve_with) into `out`, reusing its storage
    /// (`sim::step_into`). Default: `*out = solve_with(…)`; a backend whose
    /// steady-state step allocates nothing overrides it.
    fn solve_into<T: Scalar>(
        &self,
        problem: &StepProblem<'_, T>,
        workspace: &mut Self::Workspace<T>,
        out: &mut StepSolution<T>,
    ) -> Result<(), SolveError> {
        *out = self.solve_with(problem, workspace)?;
        Ok(())
    }

    /// Inverse dynamics: the applied generalized forces `u` (the control
    /// of a step) under which the step from `(p.q, p.v)` reaches the
    /// velocity `v_next` (`p.u` is ignored). Default: refused with
    /// [`SolveError::Unsupported`] (a backend whose contact impulses are
    /// not a function of the motion has no inverse).
    fn inverse<T: Scalar>(
        &self,
        _p: &StepProblem<'_, T>,
        _v_next: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        Err(SolveError::Unsupported {
            backend: Self::NAME,
            what: "inverse dynamics (use `convex`)",
        })
    }

    /// Whether the step of `p` is not the root of one residual
    /// (`q⁺ ≠ q ⊕ h v⁺`: `lcp`'s step split at a time of impact under
    /// continuous collision). The derivative methods then differentiate
    /// the step itself (`diff`). Default: never.
    fn splits(&self, _p: &StepProblem<'_, f64>) -> Result<bool, SolveError> {
        Ok(false)
    }

    /// Solves in f64 and returns `y*` (with `κ = p.params.rho`).
    fn solve_root(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(DVec<f64>, Self::Structure), SolveError>;

    /// [`solve_root`](Self::solve_root) as one step of a rollout, with
    /// the workspace the previous steps left (what
    /// [`solve_with`](Self::solve_with) keeps). Default: `solve_root`,
    /// ignoring the workspace.
    fn solve_root_with(
        &self,
        p: &StepProblem<'_, f64>,
        _workspace: &mut Self::Workspace<f64>,
    ) -> Result<(DVec<f64>, Self::Structure), SolveError> {
        self.solve_root(p)
    }

    /// The residual `r(y; θ)` of the problem `p` at `y` (complementarity
    /// relaxed to `p.params.rho`).
    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Self::Structure,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError>;

    /// Groups of the unknowns of `y` such that the residual rows of a
    /// group's indices depend on that group's unknowns only (contact
    /// islands): `∂r/∂y` is then evaluated with the columns of different
    /// groups sharing dual-number slots (a few residual evaluations
    /// instead of one per 8 unknowns), and certified by one directional
    /// derivative (the dense path where it does not agree). Default
    /// `None` (the dense path).
    fn jacobian_groups(
        &self,
        _p: &StepProblem<'_, f64>,
        _s: &Self::Structure,
    ) -> Option<Vec<Vec<usize>>> {
        None
    }

    /// Whether two solves settled on the same structure (the step map is
    /// differentiable only where it does not change).
    fn same_structure(a: &Self::Structure, b: &Self::Structure) -> bool;

    /// The part of [`residual`](Self::residual) through which the previous
    /// velocity `p.v` and the control `p.u` enter, for a backend whose
    /// residual separates as `r(y; θ) = d(y; q, v, u, …) + g(y; q, …)`
    /// with `g` independent of `v` and `u`: `Some(d)` (the length of `y`),
    /// so that `∂r/∂v = ∂d/∂v` and `∂r/∂u = ∂d/∂u`. `ift` then evaluates
    /// only `d` in dual numbers for its `Param::V` and `Param::U` columns
    /// ([`Partials::Kernel`](crate::diff::Partials); `Partials::Dual`
    /// evaluates the whole residual for every column). Default `None`.
    fn velocity_control_residual<T: Scalar>(
        &self,
        _p: &StepProblem<'_, T>,
        _s: &Self::Structure,
        _y: &DVec<T>,
    ) -> Option<Result<DVec<T>, SolveError>> {
        None
    }

    /// Solves `(∂r/∂y) X = rhs` at `y` (f64, `rhs` with `y.len()` rows
    /// and any number of columns). The default is the dense path (exact
    /// `∂r/∂y` by dual-number evaluation of [`residual`](Self::residual),
    /// one LU); backends override it with a solve by their own block
    /// structure, factored once for all columns (see the module docs).
    /// A singular Jacobian is `SolveError::Singular`.
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Self::Structure,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        dense_solve(self, p, s, y, rhs)
    }

    /// The first `nv` rows (the `v⁺` rows) of the solution of
    /// `(∂r/∂y) X = rhs`: all the implicit-function derivative of a step
    /// needs. Default: [`solve_jacobian`](Self::solve_jacobian), truncated.
    fn solve_jacobian_velocity(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Self::Structure,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        Ok(self
            .solve_jacobian(p, s, y, rhs)?
            .rows(0, p.model.nv)
            .into_owned())
    }

    /// `∂r/∂θ` for `params` at `y` from generated kernels (see
    /// `crate::diff::partials`), where the backend has them (`Ok(None)`
    /// otherwise, and by default: `ift` then evaluates every column by
    /// dual numbers).
    fn kernel_partials(
        &self,
        _p: &StepProblem<'_, f64>,
        _s: &Self::Structure,
        _y: &DVec<f64>,
        _params: &[Param],
    ) -> Result<Option<DMat<f64>>, SolveError> {
        Ok(None)
    }
}

/// The field names of a serde-deserializable struct (the keys of a
/// backend's `[solver_params]`), read off its `Deserialize` impl.
pub fn param_keys<P: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Grab(Option<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for &mut Grab {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _v: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(serde::de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut g = Grab(None);
    let _ = P::deserialize(&mut g);
    g.0.unwrap_or(&[])
}

/// Width of the dual-number column blocks of the dense path.
const BLOCK: usize = 8;
type D = DualSVec64<BLOCK>;

/// Exact `∂r/∂y` at `y` (f64) by dual-number evaluation of the residual:
/// by groups of unknowns where the backend names them
/// ([`ContactBackend::jacobian_groups`], certified), else in column blocks
/// of 8 (the dense path).
pub(crate) fn dense_jacobian<B: ContactBackend + ?Sized>(
    b: &B,
    p: &StepProblem<'_, f64>,
    s: &B::Structure,
    y: &DVec<f64>,
) -> Result<DMat<f64>, SolveError> {
    if let Some(groups) = b.jacobian_groups(p, s) {
        if let Some(j) = grouped_jacobian(b, p, s, y, &groups)? {
            return Ok(j);
        }
    }
    with_cast::<D, _>(p, |pd| {
        dual_jacobian(y, |yd| b.residual(pd, s, yd).map(Some))
            .map(|j| j.expect("the residual is evaluated"))
    })
}

/// `∂r/∂y` with the columns of different groups sharing the dual slots:
/// pass `k` seeds slot `j` with column `8k + j` of every group, and row
/// `i` reads its own group's columns. Certified by one directional
/// derivative `(∂r/∂y) w` (a coupling between groups shows there); `None`
/// when the groups do not partition `y` or the certificate fails.
fn grouped_jacobian<B: ContactBackend + ?Sized>(
    b: &B,
    p: &StepProblem<'_, f64>,
    s: &B::Structure,
    y: &DVec<f64>,
    groups: &[Vec<usize>],
) -> Result<Option<DMat<f64>>, SolveError> {
    let n = y.len();
    let mut owner = vec![usize::MAX; n];
    for (g, cols) in groups.iter().enumerate() {
        for &c in cols {
            if c >= n || owner[c] != usize::MAX {
                return Ok(None);
            }
            owner[c] = g;
        }
    }
    if owner.contains(&usize::MAX) {
        return Ok(None);
    }
    let passes = groups
        .iter()
        .map(|g| g.len().div_ceil(BLOCK))
        .max()
        .unwrap_or(0);
    if passes * BLOCK >= n {
        // No fewer evaluations than the dense path.
        return Ok(None);
    }
    with_cast::<D, _>(p, |pd| {
        let mut jy = DMat::zeros(n, n);
        let mut yd = y.map(D::from_re);
        for pass in 0..passes {
            for (i, x) in yd.iter_mut().enumerate() {
                *x = D::from_re(y[i]);
            }
            for g in groups {
                for slot in 0..BLOCK {
                    if let Some(&c) = g.get(pass * BLOCK + slot) {
                        yd[c] = D::from_re(y[c]).derivative(slot);
                    }
                }
            }
            let r = b.residual(pd, s, &yd)?;
            if r.len() != n {
                return Err(SolveError::Singular(
                    "a residual whose length is not the unknowns'",
                ));
            }
            for (i, ri) in r.iter().enumerate() {
                let e = ri.eps.unwrap_generic(Const::<BLOCK>, U1);
                let g = &groups[owner[i]];
                for slot in 0..BLOCK {
                    if let Some(&c) = g.get(pass * BLOCK + slot) {
                        jy[(i, c)] = e[slot];
                    }
                }
            }
        }
        // The certificate: (∂r/∂y) w by one dual evaluation against the
        // assembled matrix's, within round-off of Σ_j |J_ij w_j|.
        let w = |j: usize| 1.0 + (j as f64 * 0.618_033_988_749_895).fract();
        for (i, x) in yd.iter_mut().enumerate() {
            *x = D::from_re(y[i]) + D::from_re(w(i)) * D::from_re(0.0).derivative(0);
        }
        let r = b.residual(pd, s, &yd)?;
        if r.len() != n {
            return Ok(None);
        }
        let mut bounds = vec![0.0f64; n];
        let mut jw = vec![0.0f64; n];
        for (c, col) in jy.column_iter().enumerate() {
            for (i, &a) in col.iter().enumerate() {
                jw[i] += a * w(c);
                bounds[i] += (a * w(c)).abs();
            }
        }
        let bmax = bounds.iter().fold(0.0f64, |a, &b| a.max(b));
        for (i, ri) in r.iter().enumerate() {
            let d = ri.eps.unwrap_generic(Const::<BLOCK>, U1)[0];
            if !((d - jw[i]).abs() <= 1e-9 * bounds[i] + 1e-14 * bmax) {
                return Ok(None);
            }
        }
        Ok(Some(jy))
    })
}

/// Runs `f` on a copy of the f64 problem `p` in the scalar `T` (every
/// value's derivative part zero).
pub(crate) fn with_cast<T: Scalar, R>(
    p: &StepProblem<'_, f64>,
    f: impl FnOnce(&StepProblem<'_, T>) -> R,
) -> R {
    let model = p.model.cast::<T>();
    let shapes: Vec<Option<Shape<T>>> = p
        .shapes
        .iter()
        .map(|s| s.as_ref().map(|s| s.cast()))
        .collect();
    let materials: Vec<_> = p.materials.iter().map(|m| m.cast()).collect();
    let statics: Vec<_> = p.statics.iter().map(|s| s.cast()).collect();
    let link_shapes: Vec<_> = p.link_shapes.iter().map(|s| s.cast()).collect();
    let (q, v, u) = (
        p.q.map(T::from_re),
        p.v.map(T::from_re),
        p.u.map(T::from_re),
    );
    let pt = StepProblem {
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
        gravity: p.gravity.map(T::from_re),
        h: T::from_re(p.h),
        friction_cone: p.friction_cone,
        params: p.params,
        ccd: p.ccd,
    };
    f(&pt)
}

/// The dual-number scalar of [`dual_jacobian`].
pub(crate) type JacobianDual = D;

/// `∂r/∂y` at `y` of a residual `r` evaluated in dual numbers, in column
/// blocks of 8 (`Ok(None)` when `r` returns `None`).
pub(crate) fn dual_jacobian(
    y: &DVec<f64>,
    mut r: impl FnMut(&DVec<D>) -> Result<Option<DVec<D>>, SolveError>,
) -> Result<Option<DMat<f64>>, SolveError> {
    let n = y.len();
    let mut jy = DMat::zeros(n, n);
    for start in (0..n).step_by(BLOCK) {
        let mut yd = y.map(D::from_re);
        let w = BLOCK.min(n - start);
        for j in 0..w {
            yd[start + j] = D::from_re(y[start + j]).derivative(j);
        }
        let Some(r) = r(&yd)? else {
            return Ok(None);
        };
        if r.len() != n {
            return Err(SolveError::Singular(
                "a residual whose length is not the unknowns'",
            ));
        }
        for (i, ri) in r.iter().enumerate() {
            let g = ri.eps.unwrap_generic(Const::<BLOCK>, U1);
            for j in 0..w {
                jy[(i, start + j)] = g[j];
            }
        }
    }
    Ok(Some(jy))
}

/// The dense path of [`ContactBackend::solve_jacobian`] (its default, and
/// the oracle of the structured solves): `∂r/∂y` by dual-number
/// evaluation of the residual in column blocks of 8, one dense LU.
pub fn dense_solve<B: ContactBackend + ?Sized>(
    b: &B,
    p: &StepProblem<'_, f64>,
    s: &B::Structure,
    y: &DVec<f64>,
    rhs: &DMat<f64>,
) -> Result<DMat<f64>, SolveError> {
    let jac = dense_jacobian(b, p, s, y)?;
    if jac.nrows() == 0 {
        // Nothing to solve (a world without moving bodies); nalgebra's LU
        // solve does not accept an empty system.
        return Ok(DMat::zeros(0, rhs.ncols()));
    }
    let lu = jac.lu();
    if !lu.is_invertible() {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    lu.solve(rhs)
        .ok_or(SolveError::Singular("residual Jacobian"))
}

/// Solves the free body `i`'s block `diag(m 𝟙, ∂P⁺/∂ω⁺)` of `∂r/∂v⁺` at
/// `v⁺ = y[..nv]`: rows `idx_v..idx_v + 6` of `rhs` into the same rows of
/// `out`.
pub(crate) fn free_body_solve(
    p: &StepProblem<'_, f64>,
    i: usize,
    y: &DVec<f64>,
    rhs: &DMat<f64>,
    out: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let b = &p.model.bodies[i];
    // Rows of bodies that are not lone free bodies are not part of the
    // free-body residual (zero rows), and a massless body has a zero
    // block: singular.
    if !p.model.is_lone_free_body(i) || b.inertia.mass == 0.0 {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    let k = b.idx_v;
    let m = b.inertia.mass;
    for d in 0..3 {
        let row = rhs.row(k + d) / m;
        out.row_mut(k + d).copy_from(&row);
    }
    let iw = world_inertia(p.model, i, p.q);
    let w1 = Vec3::new(y[k + 3], y[k + 4], y[k + 5]);
    let jr = rotational_jacobian(&iw, &w1, p.h)
        .map_err(|source| SolveError::from(DynamicsError::Retraction { body: i, source }))?;
    let b3: DMat<f64> = rhs.rows(k + 3, 3).into_owned();
    let x = jr
        .lu()
        .solve(&b3)
        .ok_or(SolveError::Singular("residual Jacobian"))?;
    out.rows_mut(k + 3, 3).copy_from(&x);
    Ok(())
}

/// Refuses a right-hand side whose rows do not match the unknowns.
pub(crate) fn check_rows(y: &DVec<f64>, rhs: &DMat<f64>) -> Result<(), SolveError> {
    if rhs.nrows() != y.len() {
        return Err(SolveError::Singular(
            "right-hand side rows do not match the unknowns",
        ));
    }
    Ok(())
}

/// The implicit unknowns `y = (v⁺, x_1, …, x_m)` of a contact backend:
/// the next velocity followed by every contact's unknowns in order.
pub(crate) fn stacked_root(v_next: &DVec<f64>, xs: &[DVec<f64>]) -> DVec<f64> {
    let nv = v_next.len();
    let mut y = DVec::zeros(nv + xs.iter().map(|x| x.len()).sum::<usize>());
    y.rows_mut(0, nv).copy_from(v_next);
    let mut off = nv;
    for x in xs {
        y.rows_mut(off, x.len()).copy_from(x);
        off += x.len();
    }
    y
}
