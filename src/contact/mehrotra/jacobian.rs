use super::*;

/// The exact Jacobian `∂r_ρ/∂(v⁺, x)` of one island's residual at a point,
/// factorized by the KKT reduction of the [module docs](super) (the same
/// reduced system the solver's final Newton steps use, with unscaled
/// cone rows), for solves with many right-hand sides: the
/// implicit-function derivatives of a step.
///
/// With `J = [H − G, −Σ WᵀE; C K, A]`, a solve `J [X_v; X_c] = [B_d; B_c]`
/// is
///
/// ```text
/// (H − G + Σ_c W_cᵀ E A_c⁻¹ C_c K_c) X_v = B_d + Σ_c W_cᵀ E A_c⁻¹ B_c,
/// X_c = A_c⁻¹ (B_c − C_c K_c X_v),
/// ```
///
/// one LU of the reduced `6 n_b × 6 n_b` matrix and one of each contact's
/// `A_c`, shared by every column.
pub struct IslandJacobian {
    pub(super) ev: Eval<f64>,
    pub(super) fac: Factored<f64>,
}

impl IslandJacobian {
    /// Evaluates and factors the island's Jacobian at velocity `v` (island
    /// layout) and contact unknowns `xs`.
    pub fn new(
        p: &StepProblem<'_, f64>,
        island: &Island<f64>,
        v: &DVec<f64>,
        xs: &[DVec<f64>],
    ) -> Result<Self, SolveError> {
        let ev = evaluate(p, island, v, xs)?;
        let fac = factor(p, island, &ev, v, xs, false, Linearization::Exact)?;
        Ok(IslandJacobian { ev, fac })
    }

    /// Solves `J [X_v; X_c] = [B_d; B_c]` for every column at once: `bd`
    /// holds the dynamics rows (island layout, [`Island::dim`] rows), `bc[c]`
    /// contact `c`'s rows (`law.size()` each). Returns `X_v` and, when
    /// `contacts` is set, `X_c` in the same layout (`X_c` costs one more
    /// pass over the contacts; the implicit-function derivative of a step
    /// needs only `X_v`).
    ///
    /// Columns where `B_c` is zero (e.g. derivatives with respect to
    /// velocities and controls, or to the configuration of bodies not in
    /// the contact) skip the contact's `A_c⁻¹ B_c`. With more columns than
    /// the reduced system has rows, `X_v` is `R⁻¹` (from the LU factors)
    /// times the reduced right-hand side, one matrix product, instead of a
    /// pair of triangular solves per column.
    pub fn solve(
        &self,
        island: &Island<f64>,
        bd: &DMat<f64>,
        bc: &[DMat<f64>],
        contacts: bool,
    ) -> Result<(DMat<f64>, Option<Vec<DMat<f64>>>), SolveError> {
        let m = bd.ncols();
        let singular = || SolveError::Singular("contact block");
        let mut rhs = bd.clone();
        // A_c⁻¹ B_c column by column, on the non-zero columns of B_c (all
        // m columns kept, zero elsewhere, only when `contacts` asks for
        // X_c), in two reused column buffers.
        let mut ainv_b: Vec<DMat<f64>> = Vec::with_capacity(if contacts { bc.len() } else { 0 });
        let (mut bj, mut uj) = (DVec::zeros(0), DVec::zeros(0));
        for (c, (cand, ce)) in island.contacts.iter().zip(&self.ev.contacts).enumerate() {
            let n = bc[c].nrows();
            if bj.len() != n {
                bj = DVec::zeros(n);
                uj = DVec::zeros(n);
            }
            let mut u_all = contacts.then(|| DMat::zeros(n, m));
            for j in 0..m {
                let col = bc[c].column(j);
                if col.iter().all(|x| *x == 0.0) {
                    continue;
                }
                bj.copy_from(&col);
                if !self.fac.local[c].solve_into(&bj, &mut uj) {
                    return Err(singular());
                }
                let eu = cand.law.impulse(&uj);
                for (lw, w) in &ce.blocks {
                    let un = &island.units[*lw];
                    for i in 0..un.size() {
                        rhs[(un.offset + i, j)] +=
                            w[(0, i)] * eu[0] + w[(1, i)] * eu[1] + w[(2, i)] * eu[2];
                    }
                }
                if let Some(u) = &mut u_all {
                    u.set_column(j, &uj);
                }
            }
            if let Some(u) = u_all {
                ainv_b.push(u);
            }
        }
        let xv = if m > rhs.nrows() {
            let inv = self
                .fac
                .reduced
                .try_inverse()
                .ok_or(SolveError::Singular("reduced system"))?;
            inv * rhs
        } else {
            self.fac
                .reduced
                .solve_mat(&rhs)
                .ok_or(SolveError::Singular("reduced system"))?
        };
        if !contacts {
            return Ok((xv, None));
        }
        let mut xc = Vec::with_capacity(bc.len());
        for (c, u) in ainv_b.into_iter().enumerate() {
            let mut dy = DMat::zeros(3, m);
            for (lk, k) in &self.fac.k_blocks[c] {
                let un = &island.units[*lk];
                let kd = DMat::from_fn(3, un.size(), |i, j| k[(i, j)]);
                dy += kd * xv.rows(un.offset, un.size());
            }
            xc.push(u - self.fac.local[c].ainv_c() * dy);
        }
        Ok((xv, Some(xc)))
    }
}
