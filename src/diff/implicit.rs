//! Backends whose step is the root of a residual.
//!
//! # Solving with `∂r/∂y`
//!
//! The implicit-function derivative `dy/dθ = −(∂r/∂y)⁻¹ ∂r/∂θ` needs
//! solves with the residual Jacobian for many right-hand sides (one per
//! parameter). [`ImplicitStep::solve_jacobian`] does them; its default is
//! the dense path (`∂r/∂y` by dual-number evaluation of the residual in
//! column blocks of 8, one dense LU), kept as the fallback and as the test
//! oracle of the structured solves:
//!
//! * [`FreeFlight`]: `∂r/∂v⁺` is block diagonal, per free body
//!   `diag(m 𝟙, ∂P⁺/∂ω⁺)` (`dynamics::free::rotational_jacobian` at the
//!   solution, world inertia at `q`).
//! * [`Ipm`]: per island, the reduced Newton system in `v⁺` with the
//!   per-contact eliminations (`contact::ipm::solve::IslandJacobian`,
//!   exact contact Jacobian `K` and geometric stiffness `G`, unscaled cone
//!   rows, i.e. the exact Jacobian of `r_ρ`), factored once at the
//!   solution; bodies in no island have the free-body block above.
//!
//! Both are exact: they are the same matrix as the dense path, factored
//! by its block structure.

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use super::partials::kernel_partials;
use super::Param;
use crate::contact::free_flight::FreeFlight;
use crate::contact::ipm::residual::{evaluate, local_residual, Candidate, CandidateKey, Island, Partner, UnitKind};
use crate::contact::ipm::solve::IslandJacobian;
use crate::contact::ipm::{islands, Ipm};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::articulated::{articulated_residual, has_articulated};
use crate::dynamics::free::{
    free_flight_velocity, momentum_residual, rotational_jacobian, world_inertia, DynamicsError,
};
use crate::geometry::Shape;
use crate::math::{DMat, DVec, Vec3};
use crate::Scalar;

/// Width of the dual-number column blocks of the dense path.
const BLOCK: usize = 8;
type D = DualSVec64<BLOCK>;

/// Exact `∂r/∂y` at `y` (f64) by dual-number evaluation of the residual in
/// column blocks of 8 (the dense path).
pub(crate) fn dense_jacobian<B: ImplicitStep + ?Sized>(
    b: &B,
    p: &StepProblem<'_, f64>,
    s: &B::Structure,
    y: &DVec<f64>,
) -> Result<DMat<f64>, SolveError> {
    let model = p.model.cast::<D>();
    let shapes: Vec<Option<Shape<D>>> = p.shapes.iter().map(|s| s.as_ref().map(|s| s.cast())).collect();
    let materials: Vec<_> = p.materials.iter().map(|m| m.cast()).collect();
    let statics: Vec<_> = p.statics.iter().map(|s| s.cast()).collect();
    let link_shapes: Vec<_> = p.link_shapes.iter().map(|s| s.cast()).collect();
    let (q, v, u) = (p.q.map(D::from_re), p.v.map(D::from_re), p.u.map(D::from_re));
    let pd = StepProblem {
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
        gravity: p.gravity.map(D::from_re),
        h: D::from_re(p.h),
        friction_cone: p.friction_cone,
        params: p.params,
    };
    let n = y.len();
    let mut jy = DMat::zeros(n, n);
    for start in (0..n).step_by(BLOCK) {
        let mut yd = y.map(D::from_re);
        let w = BLOCK.min(n - start);
        for j in 0..w {
            yd[start + j] = D::from_re(y[start + j]).derivative(j);
        }
        let r = b.residual(&pd, s, &yd)?;
        for (i, ri) in r.iter().enumerate() {
            let g = ri.eps.unwrap_generic(Const::<BLOCK>, U1);
            for j in 0..w {
                jy[(i, start + j)] = g[j];
            }
        }
    }
    Ok(jy)
}

/// The dense path of [`ImplicitStep::solve_jacobian`] (its default, and
/// the oracle of the structured solves): `∂r/∂y` by dual-number
/// evaluation of the residual in column blocks of 8, one dense LU.
pub fn dense_solve<B: ImplicitStep + ?Sized>(
    b: &B,
    p: &StepProblem<'_, f64>,
    s: &B::Structure,
    y: &DVec<f64>,
    rhs: &DMat<f64>,
) -> Result<DMat<f64>, SolveError> {
    let lu = dense_jacobian(b, p, s, y)?.lu();
    if !lu.is_invertible() {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    lu.solve(rhs).ok_or(SolveError::Singular("residual Jacobian"))
}

/// Solves the free body `i`'s block `diag(m 𝟙, ∂P⁺/∂ω⁺)` of `∂r/∂v⁺` at
/// `v⁺ = y[..nv]`: rows `idx_v..idx_v + 6` of `rhs` into the same rows of
/// `out`.
fn free_body_solve(
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
    let x = jr.lu().solve(&b3).ok_or(SolveError::Singular("residual Jacobian"))?;
    out.rows_mut(k + 3, 3).copy_from(&x);
    Ok(())
}

/// A step that is the root `y*` of a residual `r(y; θ) = 0`, with `v⁺` the
/// first `nv` entries of `y` and `q⁺ = q ⊕ h v⁺`.
///
/// The residual must be generic and exact (no frozen linearization). The
/// discrete decisions the f64 solve takes (active contact candidates, the
/// layout of `y`) are returned as the [`Structure`](ImplicitStep::Structure)
/// and passed back to `residual`, so that a problem in a dual scalar with
/// the same primal values is evaluated as the same system.
pub trait ImplicitStep {
    /// What the f64 solve decided.
    type Structure;

    /// Solves in f64 and returns `y*` (with `κ = p.params.rho`).
    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Self::Structure), SolveError>;

    /// The residual `r(y; θ)` of the problem `p` at `y` (complementarity
    /// relaxed to `p.params.rho`).
    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        s: &Self::Structure,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError>;

    /// Whether two solves settled on the same structure (the step map is
    /// differentiable only where it does not change).
    fn same_structure(a: &Self::Structure, b: &Self::Structure) -> bool;

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
        Ok(self.solve_jacobian(p, s, y, rhs)?.rows(0, p.model.nv).into_owned())
    }

    /// `∂r/∂θ` for `params` at `y` from generated kernels (see
    /// [`super::partials`]), where the backend has them (`Ok(None)`
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

impl ImplicitStep for FreeFlight {
    type Structure = ();

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, ()), SolveError> {
        let (v, _) = free_flight_velocity(p.model, p.q, p.v, p.u, &p.gravity, p.h, &self.newton)?;
        Ok((v, ()))
    }

    fn residual<T: Scalar>(&self, p: &StepProblem<'_, T>, _: &(), y: &DVec<T>) -> Result<DVec<T>, SolveError> {
        let mut r = DVec::zeros(p.model.nv);
        momentum_residual(p.model, p.q, p.v, y, p.u, &p.gravity, p.h, &mut r)?;
        articulated_residual(p.model, p.q, p.v, y, p.u, p.h, &mut r);
        Ok(r)
    }

    fn same_structure(_: &(), _: &()) -> bool {
        true
    }

    fn kernel_partials(
        &self,
        p: &StepProblem<'_, f64>,
        _: &(),
        y: &DVec<f64>,
        params: &[Param],
    ) -> Result<Option<DMat<f64>>, SolveError> {
        kernel_partials(p, &[], &[], y, params)
    }

    /// Block diagonal: `diag(m 𝟙, ∂P⁺/∂ω⁺)` per body.
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        _: &(),
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        if has_articulated(p.model) {
            return dense_solve(self, p, &(), y, rhs);
        }
        check_rows(y, rhs)?;
        let mut out = DMat::zeros(rhs.nrows(), rhs.ncols());
        for i in 0..p.model.bodies.len() {
            free_body_solve(p, i, y, rhs, &mut out)?;
        }
        Ok(out)
    }
}

fn check_rows(y: &DVec<f64>, rhs: &DMat<f64>) -> Result<(), SolveError> {
    if rhs.nrows() != y.len() {
        return Err(SolveError::Singular("right-hand side rows do not match the unknowns"));
    }
    Ok(())
}

/// Offset in `y` of each candidate's unknowns, in candidate order, keyed
/// by `(a, b, feature)`.
fn candidate_offsets(nv: usize, cands: &[Candidate<f64>]) -> Vec<(CandidateKey, usize)> {
    let mut offsets = Vec::with_capacity(cands.len());
    let mut off = nv;
    for c in cands {
        offsets.push((c.key(), off));
        off += c.law.size();
    }
    offsets
}

fn offset_in<T: Scalar>(offsets: &[(CandidateKey, usize)], c: &Candidate<T>) -> Result<usize, SolveError> {
    offsets
        .iter()
        .find(|(k, _)| *k == c.key())
        .map(|(_, o)| *o)
        .ok_or(SolveError::Singular("unknown contact candidate"))
}

/// The structured solve of [`Ipm`]'s `∂r/∂y` (all rows of `X`, or with
/// `contacts = false` only the `nv` rows of `v⁺`).
fn ipm_solve(
    p: &StepProblem<'_, f64>,
    cands: &[Candidate<f64>],
    y: &DVec<f64>,
    rhs: &DMat<f64>,
    contacts: bool,
) -> Result<DMat<f64>, SolveError> {
    check_rows(y, rhs)?;
    let nb = p.model.bodies.len();
    let m = rhs.ncols();
    let offsets = candidate_offsets(p.model.nv, cands);
    let mut out = DMat::zeros(if contacts { rhs.nrows() } else { p.model.nv }, m);
    let mut in_island = vec![false; nb];
    for island in islands(p.model, cands.to_vec()) {
        let (v_local, xs) = island_point(p, &island, &offsets, y)?;
        let jac = IslandJacobian::new(p, &island, &v_local, &xs)?;
        let mut bd = DMat::zeros(island.dim(), m);
        for u in &island.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                bd.row_mut(u.offset + l).copy_from(&rhs.row(d));
            }
            if let UnitKind::Body(g) = u.kind {
                in_island[g] = true;
            }
        }
        let bc = island
            .contacts
            .iter()
            .map(|c| Ok(rhs.rows(offset_in(&offsets, c)?, c.law.size()).into_owned()))
            .collect::<Result<Vec<_>, SolveError>>()?;
        let (xv, xc) = jac.solve(&island, &bd, &bc, contacts)?;
        for u in &island.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out.row_mut(d).copy_from(&xv.row(u.offset + l));
            }
        }
        for (c, x) in island.contacts.iter().zip(xc.iter().flatten()) {
            out.rows_mut(offset_in(&offsets, c)?, x.nrows()).copy_from(x);
        }
    }
    for (i, _) in in_island.iter().enumerate().filter(|(_, b)| !**b) {
        free_body_solve(p, i, y, rhs, &mut out)?;
    }
    Ok(out)
}

/// Island-local velocity (island layout) and contact unknowns from `y`.
fn island_point(
    p: &StepProblem<'_, f64>,
    island: &Island<f64>,
    offsets: &[(CandidateKey, usize)],
    y: &DVec<f64>,
) -> Result<(DVec<f64>, Vec<DVec<f64>>), SolveError> {
    let v_local = island.gather(&y.rows(0, p.model.nv).into_owned());
    let xs = island
        .contacts
        .iter()
        .map(|c| Ok(y.rows(offset_in(offsets, c)?, c.law.size()).into_owned()))
        .collect::<Result<Vec<_>, SolveError>>()?;
    Ok((v_local, xs))
}

/// The implicit unknowns `y = (v⁺, x_1, …, x_m)` of a contact backend:
/// the next velocity followed by every contact's unknowns in order.
fn stacked_root(v_next: &DVec<f64>, xs: &[DVec<f64>]) -> DVec<f64> {
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

/// `y = (v⁺, x_c for each candidate in order)`; the residual rows are the
/// dynamics of every body (with the contact impulses of its island) and
/// each candidate's contact rows with complementarity relaxed to ρ.
impl ImplicitStep for Ipm {
    type Structure = Vec<Candidate<f64>>;

    fn solve_root(
        &self,
        p: &StepProblem<'_, f64>,
    ) -> Result<(DVec<f64>, Vec<Candidate<f64>>), SolveError> {
        let (sol, st) = self.solve_structured(p)?;
        Ok((stacked_root(&sol.v_next, &st.xs), st.candidates))
    }

    fn residual<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        cands: &Vec<Candidate<f64>>,
        y: &DVec<T>,
    ) -> Result<DVec<T>, SolveError> {
        let nv = p.model.nv;
        let mut r = DVec::zeros(y.len());
        let v_next = y.rows(0, nv).into_owned();
        let mut r_dyn = DVec::zeros(nv);
        momentum_residual(p.model, p.q, p.v, &v_next, p.u, &p.gravity, p.h, &mut r_dyn)?;
        articulated_residual(p.model, p.q, p.v, &v_next, p.u, p.h, &mut r_dyn);
        r.rows_mut(0, nv).copy_from(&r_dyn);
        // Offsets of each candidate's unknowns in y, by key.
        let offsets = candidate_offsets(nv, cands);
        let offset_of = |c: &Candidate<T>| {
            offsets.iter().find(|(k, _)| *k == c.key()).map(|(_, o)| *o).expect("known candidate")
        };
        // The candidates in T, with the friction coefficient recomputed from
        // the materials (so that derivatives with respect to friction flow).
        let cands_t: Vec<Candidate<T>> = cands
            .iter()
            .map(|c| {
                let mu = match c.b {
                    Partner::Body(j) => p.friction_combine.apply(p.materials[c.a].friction, p.materials[j].friction),
                    Partner::Static(j) => {
                        p.friction_combine.apply(p.materials[c.a].friction, p.statics[j].material.friction)
                    }
                };
                Candidate { a: c.a, link: c.link, b: c.b, feature: c.feature, mu, law: c.law, axis: c.axis, parts: c.parts }
            })
            .collect();
        let kappa = T::from_re(p.params.rho);
        for island in islands(p.model, cands_t) {
            let v_local = island.gather(&v_next);
            let xs: Vec<DVec<T>> = island
                .contacts
                .iter()
                .map(|c| y.rows(offset_of(c), c.law.size()).into_owned())
                .collect();
            let ev = evaluate(p, &island, &v_local, &xs)?;
            let mut rows = r.rows(0, nv).into_owned();
            island.scatter(&ev.r_dyn, &mut rows);
            r.rows_mut(0, nv).copy_from(&rows);
            for ((c, x), ce) in island.contacts.iter().zip(&xs).zip(&ev.contacts) {
                let rc = local_residual(c.law, x, &ce.y, c.mu, kappa, None, false);
                r.rows_mut(offset_of(c), rc.len()).copy_from(&rc);
            }
        }
        Ok(r)
    }

    /// Per island, the reduced system in `v⁺` with per-contact
    /// eliminations ([`IslandJacobian`]); bodies in no island, the
    /// free-body block.
    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        cands: &Vec<Candidate<f64>>,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        if has_articulated(p.model) {
            return dense_solve(self, p, cands, y, rhs);
        }
        ipm_solve(p, cands, y, rhs, true)
    }

    /// As `solve_jacobian`, without recovering the contact rows.
    fn solve_jacobian_velocity(
        &self,
        p: &StepProblem<'_, f64>,
        cands: &Vec<Candidate<f64>>,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        if has_articulated(p.model) {
            return Ok(dense_solve(self, p, cands, y, rhs)?.rows(0, p.model.nv).into_owned());
        }
        ipm_solve(p, cands, y, rhs, false)
    }

    fn kernel_partials(
        &self,
        p: &StepProblem<'_, f64>,
        cands: &Vec<Candidate<f64>>,
        y: &DVec<f64>,
        params: &[Param],
    ) -> Result<Option<DMat<f64>>, SolveError> {
        let offsets: Vec<usize> = candidate_offsets(p.model.nv, cands).into_iter().map(|(_, o)| o).collect();
        kernel_partials(p, cands, &offsets, y, params)
    }

    fn same_structure(a: &Vec<Candidate<f64>>, b: &Vec<Candidate<f64>>) -> bool {
        let key = |c: &Candidate<f64>| c.key();
        let mut ka: Vec<_> = a.iter().map(key).collect();
        let mut kb: Vec<_> = b.iter().map(key).collect();
        ka.sort_unstable_by_key(|k| (k.0, k.1, format!("{:?}", k.2), k.3));
        kb.sort_unstable_by_key(|k| (k.0, k.1, format!("{:?}", k.2), k.3));
        ka == kb
    }
}

/// `y = (v⁺, u_c for each pair of convex parts in order)`, `u_c` the
/// pair's collision primal-dual unknowns and contact unknowns
/// (`contact::silico::single_level`); dense `∂r/∂y`.
impl ImplicitStep for crate::contact::silico::single_level::SingleLevel {
    type Structure = Vec<crate::contact::silico::pairs::ConicPair>;

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Self::Structure), SolveError> {
        let (sol, pairs, xs) = self.solve_structured(p)?;
        Ok((stacked_root(&sol.v_next, &xs), pairs))
    }

    fn residual<T: Scalar>(&self, p: &StepProblem<'_, T>, s: &Self::Structure, y: &DVec<T>) -> Result<DVec<T>, SolveError> {
        crate::contact::silico::single_level::SingleLevel::residual(self, p, s, y)
    }

    fn same_structure(a: &Self::Structure, b: &Self::Structure) -> bool {
        let key = |c: &crate::contact::silico::pairs::ConicPair| (c.a, format!("{:?}", c.b), c.feature);
        let mut ka: Vec<_> = a.iter().map(key).collect();
        let mut kb: Vec<_> = b.iter().map(key).collect();
        ka.sort();
        kb.sort();
        ka == kb
    }
}

/// The `ipm` residual with conic contact kinematics
/// (`contact::silico::bilevel`); the same structured solves as `ipm`.
impl ImplicitStep for crate::contact::silico::bilevel::Bilevel {
    type Structure = Vec<Candidate<f64>>;

    fn solve_root(&self, p: &StepProblem<'_, f64>) -> Result<(DVec<f64>, Vec<Candidate<f64>>), SolveError> {
        let (sol, st) = self.solve_structured(p)?;
        Ok((stacked_root(&sol.v_next, &st.xs), st.candidates))
    }

    fn residual<T: Scalar>(&self, p: &StepProblem<'_, T>, s: &Vec<Candidate<f64>>, y: &DVec<T>) -> Result<DVec<T>, SolveError> {
        self.ipm().residual(p, s, y)
    }

    fn solve_jacobian(
        &self,
        p: &StepProblem<'_, f64>,
        s: &Vec<Candidate<f64>>,
        y: &DVec<f64>,
        rhs: &DMat<f64>,
    ) -> Result<DMat<f64>, SolveError> {
        self.ipm().solve_jacobian(p, s, y, rhs)
    }

    fn same_structure(a: &Vec<Candidate<f64>>, b: &Vec<Candidate<f64>>) -> bool {
        <Ipm as ImplicitStep>::same_structure(a, b)
    }
}
