use super::*;

/// The Delassus operator of an island at one point: per unit, the
/// factored dynamics Jacobian `K_u`; per contact side, `K_u⁻¹ W_cᵀ`.
pub struct Delassus<'a, T: Scalar> {
    pub(super) island: &'a Island<T>,
    pub(super) ev: &'a Eval<T>,
    pub(super) lus: Vec<nalgebra::LU<T, Dyn, Dyn>>,
    /// Factors of `K_uᵀ` (for `Aᵀ`).
    pub(super) lus_t: Vec<nalgebra::LU<T, Dyn, Dyn>>,
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

    pub(super) fn velocity_with(
        &self,
        lus: &[nalgebra::LU<T, Dyn, Dyn>],
        g: &[Vector3<T>],
        rhs: Option<&DVec<T>>,
    ) -> DVec<T> {
        let mut generalized = match rhs {
            Some(r) => r.clone(),
            None => DVec::zeros(self.island.dim()),
        };
        for (ce, gc) in self.ev.contacts.iter().zip(g) {
            for (u, w) in &ce.blocks {
                let o = self.island.units[*u].offset;
                for k in 0..w.ncols() {
                    generalized[o + k] += w[(0, k)] * gc[0] + w[(1, k)] * gc[1] + w[(2, k)] * gc[2];
                }
            }
        }
        for (unit, lu) in self.island.units.iter().zip(lus) {
            let n = unit.size();
            let x = lu
                .solve(&generalized.rows(unit.offset, n).into_owned())
                .unwrap_or_else(|| DVec::zeros(n));
            generalized.rows_mut(unit.offset, n).copy_from(&x);
        }
        generalized
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
