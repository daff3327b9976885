use super::*;

/// A rollout linearized along its nominal trajectory: per step the
/// states, the step Jacobian with respect to the local inputs and
/// (with second order) the contracted second derivative.
pub struct Linearization {
    pub(super) world: Arc<World<f64>>,
    pub(super) locals: Arc<Vec<Param>>,
    /// The model parameters among the local inputs.
    pub(super) model: Vec<Param>,
    /// `x_0 … x_N`.
    pub states: Vec<State<f64>>,
    /// The controls `u_0 … u_{N-1}`.
    pub controls: Vec<DVec<f64>>,
    /// `J_k = ∂ξ_{k+1}/∂(ξ_k, p, u_k)` (`2 nv × (3 nv + n_p)`).
    pub jacobians: Vec<DMat<f64>>,
    pub(super) second: Vec<Box<dyn SecondOrder>>,
}

impl std::fmt::Debug for Linearization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linearization")
            .field("steps", &self.jacobians.len())
            .field("locals", &self.locals.len())
            .finish()
    }
}

/// Builds one step's linearization (generic over the backend).
#[allow(clippy::too_many_arguments)]
pub(super) fn step_lin<Bk: ImplicitStep + 'static>(
    b: &Bk,
    world: &Arc<World<f64>>,
    locals: &Arc<Vec<Param>>,
    x: &State<f64>,
    u: &DVec<f64>,
    second: bool,
    opts: &DiffOptions,
    ws: &mut Bk::Workspace<f64>,
) -> Result<(State<f64>, DMat<f64>, Option<Box<dyn SecondOrder>>), DiffError> {
    crate::sim::check_inputs(world, x, u)?;
    let p = world.problem(x, u);
    if b.splits(&p)? {
        let sj = step_jacobian(world, x, u, locals, Method::Ift, opts)?;
        let so: Option<Box<dyn SecondOrder>> = second.then(|| {
            Box::new(SplitStep {
                world: world.clone(),
                state: x.clone(),
                u: u.clone(),
                next: sj.next.clone(),
                locals: locals.clone(),
            }) as Box<dyn SecondOrder>
        });
        return Ok((sj.next, sj.jacobian, so));
    }
    if !second {
        let sj = ift(b, world, x, u, locals, opts.partials, Some(ws))?;
        return Ok((sj.next, sj.jacobian, None));
    }
    let (y, st) = b.solve_root_with(&p, ws)?;
    let nv = world.model.nv;
    let jy = dense_jacobian(b, &p, &st, &y)?;
    let lu = if Bk::REDUNDANT {
        LiftedLu::pseudo(&jy, nv)?
    } else {
        LiftedLu::new(&jy).ok_or(DiffError::Singular("residual Jacobian"))?
    };
    let rz = param_partials(b, &p, world, x, u, &st, &y, locals, opts.partials)?;
    let mut dy = DMat::zeros(y.len(), locals.len());
    for c in 0..locals.len() {
        let rhs = rz.column(c).into_owned();
        let mut col = -lu.solve(&rhs);
        for _ in 0..Bk::REFINE {
            let res = &jy * &col + &rhs;
            col -= lu.solve(&res);
        }
        dy.set_column(c, &col);
    }
    let first = ift_output(world, x, locals, &y, &dy)?;
    let vparams: Vec<Param> = (0..nv).map(Param::V).collect();
    let mut ev = DMat::zeros(y.len(), nv);
    for i in 0..nv {
        ev[(i, i)] = 1.0;
    }
    let out_v = ift_output(world, x, &vparams, &y, &ev)?.jacobian;
    let so = RootStep {
        b: b.clone(),
        world: world.clone(),
        state: x.clone(),
        u: u.clone(),
        next: first.next.clone(),
        locals: locals.clone(),
        y,
        st,
        jy,
        lu,
        dy,
        out_v,
    };
    Ok((first.next, first.jacobian, Some(Box::new(so))))
}

impl Linearization {
    /// Runs the rollout from `x0` for `steps` steps and linearizes every
    /// step with respect to `(ξ, model, u)`; with `second`, also prepares
    /// each step's contracted second derivative (one dense
    /// factorization of `∂r/∂y` per step).
    pub fn new(
        world: &World<f64>,
        x0: &State<f64>,
        controls: &Controls<f64>,
        steps: usize,
        model: &[Param],
        second: bool,
        opts: &DiffOptions,
    ) -> Result<Self, DiffError> {
        super::super::complementarity::check(world, Method::Ift, opts)?;
        if opts.gradient != Gradient::Exact {
            return Err(DiffError::Unsupported {
                option: "--gradient complementarity_aware",
                backend: world.solver.name(),
                method: "adjoint",
                why: "the complementarity-aware gradient is a forward quantity; use --method ift",
            });
        }
        for p in model {
            if matches!(p, Param::Q(_) | Param::V(_) | Param::U(_)) {
                return Err(DiffError::BadParam(format!(
                    "{p:?} is not a model parameter"
                )));
            }
        }
        let mut w = world.clone();
        if let Some(rho) = opts.rho {
            w.params.rho = rho;
        }
        let world = Arc::new(w);
        let nv = world.model.nv;
        let locals = Arc::new(locals(nv, model));
        let mut states = vec![x0.clone()];
        let mut us = Vec::with_capacity(steps);
        let mut jacobians = Vec::with_capacity(steps);
        let mut seconds = Vec::new();
        let mut ws = crate::contact::Workspace::default();
        for k in 0..steps {
            let u = controls.at(k).clone();
            let x = states[k].clone();
            let (next, jac, so) = crate::contact::with_backend_workspace!(
                world.solver,
                world.backends,
                &mut ws,
                |b, w| step_lin(&b, &world, &locals, &x, &u, second, opts, w)
            )
            .map_err(|e| DiffError::AtStep {
                step: k,
                source: Box::new(e),
            })?;
            states.push(next);
            us.push(u);
            jacobians.push(jac);
            if let Some(so) = so {
                seconds.push(so);
            }
        }
        Ok(Linearization {
            world,
            locals,
            model: model.to_vec(),
            states,
            controls: us,
            jacobians,
            second: seconds,
        })
    }

    /// The number of steps.
    pub fn steps(&self) -> usize {
        self.jacobians.len()
    }

    /// The world (with the derivative's ρ).
    pub fn world(&self) -> &World<f64> {
        &self.world
    }

    /// The number of local inputs per step, `m = 3 nv + n_p`.
    pub fn locals(&self) -> usize {
        self.locals.len()
    }

    /// `λᵀ ∂²Φ_k/∂z²` (`m × m`), `λ` an adjoint on `ξ_{k+1}`.
    pub fn step_hessian(&self, k: usize, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError> {
        self.second_at(k)?.hessian(lambda).map_err(|e| at(k, e))
    }

    /// `∂²Φ_{k,i}/∂z²` for every output `i` of step `k` (`2 nv`
    /// matrices `m × m`; `Σᵢ λᵢ` of them is [`Self::step_hessian`]).
    pub fn step_tensor(&self, k: usize) -> Result<Vec<DMat<f64>>, DiffError> {
        self.second_at(k)?.tensor().map_err(|e| at(k, e))
    }

    /// `(λᵀ ∂²Φ_k/∂z²) dir` (`m`).
    pub fn step_hvp(
        &self,
        k: usize,
        lambda: &DVec<f64>,
        dir: &DVec<f64>,
    ) -> Result<DVec<f64>, DiffError> {
        self.second_at(k)?.hvp(lambda, dir).map_err(|e| at(k, e))
    }

    pub(super) fn second_at(&self, k: usize) -> Result<&dyn SecondOrder, DiffError> {
        self.second
            .get(k)
            .map(|b| b.as_ref())
            .ok_or(DiffError::BadParam(format!(
                "step {k} was linearized without second order"
            )))
    }

    /// The seeds of stage `k`'s cost: `Q(0..nv)`, `V(0..nv)` and, for
    /// `k < N`, `U(0..nv)`.
    pub(super) fn stage_params(&self, k: usize) -> Vec<Param> {
        let nv = self.world.model.nv;
        let mut p: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
        if k < self.steps() {
            p.extend((0..nv).map(Param::U));
        }
        p
    }

    pub(super) fn stage_eval<C: StageCost, T: Scalar>(
        &self,
        cost: &C,
        k: usize,
        seeds: &[T],
    ) -> Result<T, DiffError> {
        let nv = self.world.model.nv;
        let u = self
            .controls
            .get(k)
            .cloned()
            .unwrap_or_else(|| DVec::zeros(nv));
        let (wt, xt, ut) = seeded(
            &self.world,
            &self.states[k],
            &u,
            &self.stage_params(k),
            seeds,
        )?;
        let uu = (k < self.steps()).then_some(&ut);
        Ok(cost.eval(k, &wt, &xt, uu))
    }

    /// Value of stage `k`'s cost.
    pub(super) fn stage_value<C: StageCost>(&self, cost: &C, k: usize) -> Result<f64, DiffError> {
        if !cost.active(k) {
            return Ok(0.0);
        }
        let zeros = vec![0.0; self.stage_params(k).len()];
        self.stage_eval(cost, k, &zeros)
    }

    /// Gradient of stage `k`'s cost with respect to `(ξ_k, u_k)`.
    pub fn stage_gradient<C: StageCost>(&self, cost: &C, k: usize) -> Result<DVec<f64>, DiffError> {
        let m = self.stage_params(k).len();
        let mut g = DVec::zeros(m);
        if !cost.active(k) {
            return Ok(g);
        }
        for start in (0..m).step_by(B) {
            let seeds: Vec<D> = (0..m)
                .map(|j| {
                    if (start..start + B).contains(&j) {
                        D::from_re(0.0).derivative(j - start)
                    } else {
                        D::from_re(0.0)
                    }
                })
                .collect();
            let v = self.stage_eval(cost, k, &seeds)?;
            let e = v.eps.unwrap_generic(Const::<B>, U1);
            for j in start..m.min(start + B) {
                g[j] = e[j - start];
            }
        }
        Ok(g)
    }

    /// Gradient and Hessian of stage `k`'s cost with respect to
    /// `(ξ_k, u_k)`.
    pub fn stage_hessian<C: StageCost>(
        &self,
        cost: &C,
        k: usize,
    ) -> Result<(DVec<f64>, DMat<f64>), DiffError> {
        let m = self.stage_params(k).len();
        if !cost.active(k) {
            return Ok((DVec::zeros(m), DMat::zeros(m, m)));
        }
        blocks_hessian(m, |s| self.stage_eval(cost, k, s))
    }

    /// `∇²c_k dir`.
    pub(super) fn stage_hvp<C: StageCost>(
        &self,
        cost: &C,
        k: usize,
        dir: &DVec<f64>,
    ) -> Result<DVec<f64>, DiffError> {
        let m = self.stage_params(k).len();
        if !cost.active(k) {
            return Ok(DVec::zeros(m));
        }
        blocks_hvp(m, dir, |s| self.stage_eval(cost, k, s))
    }

    /// The total cost `Σ_k c_k`.
    pub fn cost<C: StageCost>(&self, cost: &C) -> Result<f64, DiffError> {
        let mut c = 0.0;
        for k in 0..=self.steps() {
            c += self.stage_value(cost, k)?;
        }
        Ok(c)
    }

    /// The adjoints `λ_0 … λ_N` (`λ_k = ∂f/∂ξ_k`) and the local gradients
    /// `w_k = ∂f/∂z_k` of every step (`m` each).
    pub fn adjoints<C: StageCost>(
        &self,
        cost: &C,
    ) -> Result<(Vec<DVec<f64>>, Vec<DVec<f64>>), DiffError> {
        let nv = self.world.model.nv;
        let n = self.steps();
        let m = self.locals();
        let np = self.model.len();
        let mut lambdas = vec![DVec::zeros(2 * nv); n + 1];
        let mut ws = vec![DVec::zeros(m); n];
        lambdas[n] = self.stage_gradient(cost, n)?;
        for k in (0..n).rev() {
            let mut w = self.jacobians[k].transpose() * &lambdas[k + 1];
            if cost.active(k) {
                let g = self.stage_gradient(cost, k)?;
                for i in 0..2 * nv {
                    w[i] += g[i];
                }
                for i in 0..nv {
                    w[2 * nv + np + i] += g[2 * nv + i];
                }
            }
            lambdas[k] = w.rows(0, 2 * nv).into_owned();
            ws[k] = w;
        }
        Ok((lambdas, ws))
    }
}
