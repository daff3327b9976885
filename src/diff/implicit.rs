//! Backends whose step is the root of a residual.

use crate::contact::free_flight::FreeFlight;
use crate::contact::ipm::residual::{evaluate, local_residual, Candidate, Partner};
use crate::contact::ipm::{islands, Ipm};
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::articulated::articulated_residual;
use crate::dynamics::free::{free_flight_velocity, momentum_residual};
use crate::math::DVec;
use crate::Scalar;

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
        let n = p.model.nv + st.xs.iter().map(|x| x.len()).sum::<usize>();
        let mut y = DVec::zeros(n);
        y.rows_mut(0, p.model.nv).copy_from(&sol.v_next);
        let mut off = p.model.nv;
        for x in &st.xs {
            y.rows_mut(off, x.len()).copy_from(x);
            off += x.len();
        }
        Ok((y, st.candidates))
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
        let mut offsets = Vec::with_capacity(cands.len());
        let mut off = nv;
        for c in cands {
            offsets.push(((c.a, c.b, c.feature), off));
            off += c.law.size();
        }
        let offset_of = |c: &Candidate<T>| {
            offsets.iter().find(|(k, _)| *k == (c.a, c.b, c.feature)).map(|(_, o)| *o).expect("known candidate")
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
                Candidate { a: c.a, b: c.b, feature: c.feature, mu, law: c.law, axis: c.axis }
            })
            .collect();
        let kappa = T::from_re(p.params.rho);
        for island in islands(p.model.bodies.len(), cands_t) {
            let nbi = island.bodies.len();
            let mut v_local = DVec::zeros(6 * nbi);
            for (li, &g) in island.bodies.iter().enumerate() {
                let k = p.model.bodies[g].idx_v;
                v_local.fixed_rows_mut::<6>(6 * li).copy_from(&v_next.fixed_rows::<6>(k));
            }
            let xs: Vec<DVec<T>> = island
                .contacts
                .iter()
                .map(|c| y.rows(offset_of(c), c.law.size()).into_owned())
                .collect();
            let ev = evaluate(p, &island, &v_local, &xs)?;
            for (li, &g) in island.bodies.iter().enumerate() {
                let k = p.model.bodies[g].idx_v;
                r.fixed_rows_mut::<6>(k).copy_from(&ev.r_dyn.fixed_rows::<6>(6 * li));
            }
            for ((c, x), ce) in island.contacts.iter().zip(&xs).zip(&ev.contacts) {
                let rc = local_residual(c.law, x, &ce.y, c.mu, kappa, None, false);
                r.rows_mut(offset_of(c), rc.len()).copy_from(&rc);
            }
        }
        Ok(r)
    }

    fn same_structure(a: &Vec<Candidate<f64>>, b: &Vec<Candidate<f64>>) -> bool {
        let key = |c: &Candidate<f64>| (c.a, c.b, c.feature);
        let mut ka: Vec<_> = a.iter().map(key).collect();
        let mut kb: Vec<_> = b.iter().map(key).collect();
        ka.sort_unstable_by_key(|k| (k.0, format!("{:?}", k.1), k.2));
        kb.sort_unstable_by_key(|k| (k.0, format!("{:?}", k.1), k.2));
        ka == kb
    }
}
