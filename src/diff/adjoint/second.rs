use super::*;

/// A step that is the root of one residual: what the second-order
/// contraction needs from the f64 solve.
pub(super) struct RootStep<Bk: ImplicitStep> {
    pub(super) b: Bk,
    pub(super) world: Arc<World<f64>>,
    pub(super) state: State<f64>,
    pub(super) u: DVec<f64>,
    pub(super) next: State<f64>,
    pub(super) locals: Arc<Vec<Param>>,
    pub(super) y: DVec<f64>,
    pub(super) st: Bk::Structure,
    pub(super) jy: DMat<f64>,
    pub(super) lu: LiftedLu,
    /// `Y = dy/dz` (`n × m`).
    pub(super) dy: DMat<f64>,
    /// `∂O/∂v⁺` (`2 nv × nv`).
    pub(super) out_v: DMat<f64>,
}

impl<Bk: ImplicitStep> RootStep<Bk> {
    /// `μ = (∂r/∂y)⁻ᵀ (∂O/∂y)ᵀ λ` (refined for ill-conditioned backends).
    pub(super) fn mu(&self, lambda: &DVec<f64>) -> DVec<f64> {
        let nv = self.world.model.nv;
        let mut b = DVec::zeros(self.y.len());
        b.rows_mut(0, nv)
            .copy_from(&(self.out_v.transpose() * lambda));
        let mut mu = self.lu.solve_t(&b);
        for _ in 0..Bk::REFINE {
            let res = self.jy.transpose() * &mu - &b;
            mu -= self.lu.solve_t(&res);
        }
        mu
    }

    /// The residual `r` and the output `O` at `(z̄ + s, y* + Y s)` in the
    /// seed scalar.
    #[allow(clippy::type_complexity)]
    pub(super) fn parts<T: Scalar>(&self, seeds: &[T]) -> Result<(DVec<T>, DVec<T>), DiffError> {
        let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, seeds)?;
        let n = self.y.len();
        let mut yt: DVec<T> = self.y.map(T::from_re);
        for (j, s) in seeds.iter().enumerate() {
            for i in 0..n {
                let c = self.dy[(i, j)];
                if c != 0.0 {
                    yt[i] += *s * T::from_re(c);
                }
            }
        }
        let p = wt.problem(&xt, &ut);
        let r = self.b.residual(&p, &self.st, &yt)?;
        let nv = self.world.model.nv;
        let v = yt.rows(0, nv).into_owned();
        let q = integrate_model(&wt.model, &xt.q, &v, wt.dt).map_err(SimError::from)?;
        let o = tangent(&wt.model, &self.next.q.map(T::from_re), &State { q, v });
        Ok((r, o))
    }

    /// `G(z̄ + s, y* + Y s) = λᵀ O − μᵀ r` in the seed scalar.
    pub(super) fn lagrangian<T: Scalar>(
        &self,
        lambda: &DVec<f64>,
        mu: &DVec<f64>,
        seeds: &[T],
    ) -> Result<T, DiffError> {
        let (r, o) = self.parts(seeds)?;
        Ok(contract(&r, &o, lambda, mu))
    }
}

/// `λᵀ o − μᵀ r`, skipping zero multipliers.
pub(super) fn contract<T: Scalar>(
    r: &DVec<T>,
    o: &DVec<T>,
    lambda: &DVec<f64>,
    mu: &DVec<f64>,
) -> T {
    let mut g = T::zero();
    for (oi, li) in o.iter().zip(lambda.iter()) {
        if *li != 0.0 {
            g += *oi * T::from_re(*li);
        }
    }
    for (ri, mi) in r.iter().zip(mu.iter()) {
        if *mi != 0.0 {
            g -= *ri * T::from_re(*mi);
        }
    }
    g
}

impl<Bk: ImplicitStep> SecondOrder for RootStep<Bk> {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        let mu = self.mu(lambda);
        Ok(blocks_hessian(self.locals.len(), |s| self.lagrangian(lambda, &mu, s))?.1)
    }

    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError> {
        let mu = self.mu(lambda);
        blocks_hvp(self.locals.len(), dir, |s| self.lagrangian(lambda, &mu, s))
    }

    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError> {
        let outs = 2 * self.world.model.nv;
        let units: Vec<DVec<f64>> = (0..outs)
            .map(|i| DVec::from_fn(outs, |j, _| if i == j { 1.0 } else { 0.0 }))
            .collect();
        let mus: Vec<DVec<f64>> = units.iter().map(|e| self.mu(e)).collect();
        blocks_tensor(self.locals.len(), outs, |s| {
            let (r, o) = self.parts(s)?;
            Ok(units
                .iter()
                .zip(&mus)
                .map(|(e, mu)| contract(&r, &o, e, mu))
                .collect())
        })
    }
}

/// A step that splits at an impact (ccd): the split step itself in the
/// seed scalar, contracted with `λ`.
pub(super) struct SplitStep {
    pub(super) world: Arc<World<f64>>,
    pub(super) state: State<f64>,
    pub(super) u: DVec<f64>,
    pub(super) next: State<f64>,
    pub(super) locals: Arc<Vec<Param>>,
}

impl SplitStep {
    pub(super) fn contracted<T: Scalar>(
        &self,
        lambda: &DVec<f64>,
        seeds: &[T],
    ) -> Result<T, DiffError> {
        let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, seeds)?;
        let next = crate::sim::step(&wt, &xt, &ut)?.state;
        let o = tangent(&wt.model, &self.next.q.map(T::from_re), &next);
        let mut g = T::zero();
        for (oi, li) in o.iter().zip(lambda.iter()) {
            g += *oi * T::from_re(*li);
        }
        Ok(g)
    }
}

impl SecondOrder for SplitStep {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        Ok(blocks_hessian(self.locals.len(), |s| self.contracted(lambda, s))?.1)
    }

    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError> {
        blocks_hvp(self.locals.len(), dir, |s| self.contracted(lambda, s))
    }

    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError> {
        blocks_tensor(self.locals.len(), 2 * self.world.model.nv, |s| {
            let (wt, xt, ut) = seeded(&self.world, &self.state, &self.u, &self.locals, s)?;
            let next = crate::sim::step(&wt, &xt, &ut)?.state;
            Ok(tangent(&wt.model, &self.next.q.map(H::from_re), &next)
                .iter()
                .copied()
                .collect())
        })
    }
}
