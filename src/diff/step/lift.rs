use super::*;

/// `P J = L U` of the f64 matrix `∂r/∂y` at the root (faer's blocked LU,
/// factored once per step), applied to vectors of any scalar with f64
/// coefficients: the dual parts of `J⁻¹ r` are exact because they enter
/// linearly. No copy of the factors in `T` (an `n × n` matrix of duals was
/// 72 n² bytes per solve, 450 MB for the 2 500 unknowns of the sphere
/// pile), and the zeros of the factors (one block per contact island) are
/// skipped.
pub(crate) struct LiftedLu {
    /// The pseudo-inverse instead of the factors, for a backend whose
    /// `∂r/∂y` is singular by design
    /// ([`ContactBackend::REDUNDANT`](crate::contact::ContactBackend::REDUNDANT)).
    pub(super) pinv: Option<DMat<f64>>,
    /// `(P r)_i = r[perm[i]]`.
    pub(super) perm: Vec<usize>,
    /// `L` (unit diagonal) strictly below the diagonal, `U` on and above.
    pub(super) lu: DMat<f64>,
}

impl LiftedLu {
    /// `None` when `J` is singular (a zero or non-finite pivot).
    pub(crate) fn new(j: &DMat<f64>) -> Option<Self> {
        let n = j.nrows();
        let f = faer::Mat::<f64>::from_fn(n, n, |r, c| j[(r, c)]).partial_piv_lu();
        let (l, u) = (f.L(), f.U());
        let lu = DMat::from_fn(n, n, |r, c| if r > c { l[(r, c)] } else { u[(r, c)] });
        if (0..n).any(|i| !(lu[(i, i)] != 0.0 && lu[(i, i)].is_finite())) {
            return None;
        }
        let perm = f.P().arrays().0.to_vec();
        Some(LiftedLu {
            pinv: None,
            perm,
            lu,
        })
    }

    /// The pseudo-inverse of `J` (redundant backends).
    pub(crate) fn pseudo(j: &DMat<f64>, nv: usize) -> Result<Self, DiffError> {
        let p = crate::contact::delassus::pinv_unique(j, nv).map_err(singular)?;
        Ok(LiftedLu {
            pinv: Some(p),
            perm: Vec::new(),
            lu: DMat::zeros(0, 0),
        })
    }

    /// `J⁻¹ r`, by column-oriented forward and back substitution.
    pub(crate) fn solve<T: Scalar>(&self, r: &DVec<T>) -> DVec<T> {
        if let Some(p) = &self.pinv {
            return DVec::from_fn(p.nrows(), |i, _| {
                let mut acc = T::zero();
                for (j, &a) in p.row(i).iter().enumerate() {
                    if a != 0.0 {
                        acc += T::from_re(a) * r[j];
                    }
                }
                acc
            });
        }
        let n = self.perm.len();
        let mut x = DVec::from_fn(n, |i, _| r[self.perm[i]]);
        for c in 0..n {
            let xc = x[c];
            for (i, &a) in self.lu.column(c).iter().enumerate().skip(c + 1) {
                if a != 0.0 {
                    x[i] -= xc * T::from_re(a);
                }
            }
        }
        for c in (0..n).rev() {
            x[c] /= T::from_re(self.lu[(c, c)]);
            let xc = x[c];
            for (i, &a) in self.lu.column(c).iter().enumerate().take(c) {
                if a != 0.0 {
                    x[i] -= xc * T::from_re(a);
                }
            }
        }
        x
    }

    /// `J⁻ᵀ b` (f64): with `P J = L U`, `Jᵀ = Uᵀ Lᵀ P`, so forward
    /// substitution with `Uᵀ`, back substitution with `Lᵀ`, then `Pᵀ`.
    /// The pseudo-inverse's transpose for a redundant backend (exact when
    /// `b` is in the range of `Jᵀ`, as an adjoint on `v⁺` is).
    pub(crate) fn solve_t(&self, b: &DVec<f64>) -> DVec<f64> {
        if let Some(p) = &self.pinv {
            return p.transpose() * b;
        }
        let n = self.perm.len();
        let mut w = b.clone();
        // Uᵀ w₁ = b (Uᵀ lower triangular)
        for i in 0..n {
            let mut acc = w[i];
            for k in 0..i {
                acc -= self.lu[(k, i)] * w[k];
            }
            w[i] = acc / self.lu[(i, i)];
        }
        // Lᵀ w₂ = w₁ (unit upper triangular)
        for i in (0..n).rev() {
            let mut acc = w[i];
            for k in i + 1..n {
                acc -= self.lu[(k, i)] * w[k];
            }
            w[i] = acc;
        }
        let mut out = DVec::zeros(n);
        for i in 0..n {
            out[self.perm[i]] = w[i];
        }
        out
    }
}

/// The f64 part of a `lift` step, shared by every scalar and every column
/// block: the root `y`, the backend's structure there and the LU of
/// `∂r/∂y` at it.
pub(super) struct Lifted<S> {
    pub(super) y: DVec<f64>,
    pub(super) st: S,
    pub(super) lu: LiftedLu,
}

pub(super) fn lift_prepare<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
) -> Result<Lifted<B::Structure>, DiffError> {
    let p0 = world.problem(state, u);
    let (y, st) = b.solve_root(&p0)?;
    let jy = dense_jacobian(b, &p0, &st, &y)?;
    let lu = if B::REDUNDANT {
        LiftedLu::pseudo(&jy, p0.model.nv)?
    } else {
        LiftedLu::new(&jy).ok_or(DiffError::Singular("residual Jacobian"))?
    };
    Ok(Lifted { y, st, lu })
}

/// `order` Newton steps of the residual in `T` from the f64 root.
pub(super) fn lift_from<B: ImplicitStep, T: Scalar>(
    b: &B,
    f: &Lifted<B::Structure>,
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    let p = world.problem(state, u);
    let mut yt = f.y.map(T::from_re);
    for _ in 0..order {
        let r = b.residual(&p, &f.st, &yt)?;
        yt -= f.lu.solve(&r);
    }
    if order > 0 {
        // Refinement of the derivative parts only
        // ([`ContactBackend::REFINE`](crate::contact::ContactBackend::REFINE)).
        for _ in 0..B::REFINE {
            let r = b.residual(&p, &f.st, &yt)?.map(|x| x - T::from_re(x.re()));
            yt -= f.lu.solve(&r);
        }
    }
    let nv = world.model.nv;
    let v = yt.rows(0, nv).into_owned();
    let q = integrate_model(&world.model, &state.q, &v, world.dt).map_err(SimError::from)?;
    Ok(State { q, v })
}

/// One step in any scalar `T` by the `lift` method: the primal problem is
/// solved in f64, then `order` Newton steps of the residual are taken in
/// `T` with the f64 factorization of `∂r/∂y`. For a dual scalar of
/// derivative order `k`, `order = k` makes every derivative part exact (the
/// chord iteration's error is multiplied by the nilpotent ε at each step).
/// The primal part is the f64 solution.
pub fn lift_step<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    with_world_backend!(world, |b| lift_step_with(&b, world, state, u, order))
}

pub(super) fn lift_step_with<B: ImplicitStep, T: Scalar>(
    b: &B,
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    let u0 = u.map(|x| x.re());
    let (w0, s0) = (world.cast::<f64>(), state.cast::<f64>());
    if b.splits(&w0.problem(&s0, &u0))? {
        // A split step (continuous collision) has no single residual: the
        // step itself in `T` (its contact solves are lifted, its time of
        // impact refined in `T`).
        return Ok(step(world, state, u)?.state);
    }
    let f = lift_prepare(b, &w0, &s0, &u0)?;
    lift_from(b, &f, world, state, u, order)
}

pub(super) fn unrolled(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    lift: bool,
) -> Result<StepJacobian, DiffError> {
    let nominal = step(world, state, u)?.state;
    let jacobian = if lift {
        // the f64 solve and the factorization once, for every column block
        with_world_backend!(world, |b| {
            let f = lift_prepare(&b, world, state, u)?;
            by_column_blocks(world, state, u, params, &nominal, |wd, sd, ud| {
                lift_from(&b, &f, wd, sd, ud, 1)
            })
        })?
    } else {
        by_column_blocks(world, state, u, params, &nominal, |wd, sd, ud| {
            Ok(step(wd, sd, ud)?.state)
        })?
    };
    Ok(StepJacobian {
        next: nominal,
        jacobian,
        nonsmooth: Vec::new(),
        nonsmooth_why: Vec::new(),
        one_sided: Vec::new(),
    })
}

/// The one-step Jacobian with respect to `params` (in the tangent space
/// of `nominal`), `step` taken in dual numbers on column blocks of 8.
pub(super) fn by_column_blocks(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    nominal: &State<f64>,
    mut step: impl FnMut(&World<D>, &State<D>, &DVec<D>) -> Result<State<D>, DiffError>,
) -> Result<DMat<f64>, DiffError> {
    let nv = world.model.nv;
    let mut jac = DMat::zeros(2 * nv, params.len());
    for start in (0..params.len()).step_by(BLOCK) {
        let chunk = &params[start..params.len().min(start + BLOCK)];
        let seeds: Vec<D> = (0..chunk.len())
            .map(|j| D::from_re(0.0).derivative(j))
            .collect();
        let (wd, sd, ud) = seeded(world, state, u, chunk, &seeds)?;
        let next = step(&wd, &sd, &ud)?;
        let t = tangent(&wd.model, &nominal.q.map(D::from_re), &next);
        for (i, ti) in t.iter().enumerate() {
            let g = eps_column(ti);
            for j in 0..chunk.len() {
                jac[(i, start + j)] = g[j];
            }
        }
    }
    Ok(jac)
}
