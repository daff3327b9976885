use super::*;

/// `∂r/∂θ` at `y` for `params` (f64, one column per parameter), by
/// dual-number evaluation of the residual in column blocks of 8: the
/// structure `st` and `y` are fixed, only the problem data is seeded.
/// With `split`, the `Param::V` and `Param::U` columns are blocked
/// together and evaluate only the backend's
/// [`velocity_control_residual`](ImplicitStep::velocity_control_residual)
/// where it has one.
#[allow(clippy::too_many_arguments)]
pub(super) fn residual_param_jacobian<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    st: &B::Structure,
    y: &DVec<f64>,
    params: &[Param],
    split: bool,
) -> Result<DMat<f64>, DiffError> {
    let n = y.len();
    let yd = y.map(D::from_re);
    let mut jth = DMat::zeros(n, params.len());
    // Column order: the other parameters first, then `V` and `U` (so that
    // as many blocks as possible hold only those).
    let vu = |p: &Param| split && matches!(p, Param::V(_) | Param::U(_));
    let order: Vec<usize> = (0..params.len())
        .filter(|&j| !vu(&params[j]))
        .chain((0..params.len()).filter(|&j| vu(&params[j])))
        .collect();
    for block in order.chunks(BLOCK) {
        let chunk: Vec<Param> = block.iter().map(|&j| params[j]).collect();
        let seeds: Vec<D> = (0..chunk.len())
            .map(|j| D::from_re(0.0).derivative(j))
            .collect();
        let (wd, sd, ud) = seeded(world, state, u, &chunk, &seeds)?;
        let prob = wd.problem(&sd, &ud);
        let partial = if block.iter().all(|&j| vu(&params[j])) {
            b.velocity_control_residual(&prob, st, &yd)
        } else {
            None
        };
        let r = match partial {
            Some(r) => r?,
            None => b.residual(&prob, st, &yd)?,
        };
        for (i, ri) in r.iter().enumerate() {
            let g = eps_column(ri);
            for (k, &j) in block.iter().enumerate() {
                jth[(i, j)] = g[k];
            }
        }
    }
    Ok(jth)
}

/// `∂r/∂θ` for `params`: with [`Partials::Kernel`] from the backend's
/// generated kernels ([`ImplicitStep::kernel_partials`]) where it has
/// them, otherwise (and with [`Partials::Dual`]) by
/// [`residual_param_jacobian`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn param_partials<B: ImplicitStep>(
    b: &B,
    p: &crate::contact::StepProblem<'_, f64>,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    st: &B::Structure,
    y: &DVec<f64>,
    params: &[Param],
    partials: Partials,
) -> Result<DMat<f64>, DiffError> {
    if partials == Partials::Kernel {
        // The same typed errors as the dual path for parameters that do
        // not exist.
        check_params(world, state, u, params)?;
        if let Some(j) = b.kernel_partials(p, st, y, params)? {
            return Ok(j);
        }
    }
    residual_param_jacobian(
        b,
        world,
        state,
        u,
        st,
        y,
        params,
        partials == Partials::Kernel,
    )
}

/// `DiffError::BadParam` for a parameter that does not exist in `world`
/// (as [`seeded`] reports it).
pub(super) fn check_params(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
) -> Result<(), DiffError> {
    let nv = world.model.nv;
    let nb = world.model.bodies.len();
    for prm in params {
        let ok = match *prm {
            Param::Q(i) | Param::V(i) | Param::U(i) => i < nv,
            Param::Mass(b) | Param::Friction(b) | Param::Restitution(b) => b < nb,
            Param::Inertia(b, k) => b < nb && k < 3,
            Param::Gravity(k) => k < 3,
            Param::Dt => true,
            Param::Shape(..) => false,
        };
        if !ok {
            // `seeded` knows the shapes' parameters; one f64 evaluation.
            seeded::<f64>(world, state, u, &[*prm], &[0.0]).map(|_| ())?;
        }
    }
    Ok(())
}

/// Per free body, the Jacobian of its output tangent `q⁺ ⊖ q⁺₀` (6 rows),
/// `q⁺ = (q ⊕ δ) ⊕ h v⁺`, with respect to `(δ, v⁺, h)` (13 columns) at
/// `δ = 0` (one forward-mode evaluation per body); `None` for bodies that
/// are not free roots (their tangent rows are zero).
pub(super) fn output_blocks(
    model: &Model<f64>,
    q: &DVec<f64>,
    v_next: &DVec<f64>,
    h: f64,
    q_next: &DVec<f64>,
) -> Result<Vec<Option<nalgebra::SMatrix<f64, 6, 13>>>, DiffError> {
    type E = DualSVec64<13>;
    let mut out = Vec::with_capacity(model.bodies.len());
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            out.push(None);
            continue;
        }
        let (kq, kv) = (b.idx_q, b.idx_v);
        let err = |source| {
            SimError::from(crate::dynamics::free::DynamicsError::Retraction { body: i, source })
        };
        let qb: [E; 7] = core::array::from_fn(|j| E::from_re(q[kq + j]));
        let dq: [E; 6] = core::array::from_fn(|j| E::from_re(0.0).derivative(j));
        let q0 = crate::math::integrate(&qb, &dq, E::from_re(1.0)).map_err(err)?;
        let vb: [E; 6] = core::array::from_fn(|j| E::from_re(v_next[kv + j]).derivative(6 + j));
        let q1 = crate::math::integrate(&q0, &vb, E::from_re(h).derivative(12)).map_err(err)?;
        let qn: [E; 7] = core::array::from_fn(|j| E::from_re(q_next[kq + j]));
        let t = crate::math::difference(&qn, &q1);
        let mut m = nalgebra::SMatrix::<f64, 6, 13>::zeros();
        for (r, tr) in t.iter().enumerate() {
            m.set_row(r, &tr.eps.unwrap_generic(Const::<13>, U1).transpose());
        }
        out.push(Some(m));
    }
    Ok(out)
}

/// The implicit-function Jacobian of one step:
///
/// 1. `y*` and the structure from the f64 solve;
/// 2. `∂r/∂θ` for every parameter ([`residual_param_jacobian`]);
/// 3. `dy/dθ = −(∂r/∂y)⁻¹ ∂r/∂θ` by [`ImplicitStep::solve_jacobian`]
///    (the backend's block-structured factorization at the solution,
///    factored once for all columns);
/// 4. the output map: `v⁺` rows are `dv⁺/dθ`; the tangent rows of body `b`
///    are `T_δ dδ_b/dθ + T_v dv⁺_b/dθ + T_h dh/dθ` with the per-body
///    blocks of [`output_blocks`] (`δ` moves only with `Param::Q`, `h` only
///    with `Param::Dt`).
pub(crate) fn ift<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    partials: Partials,
    ws: Option<&mut B::Workspace<f64>>,
) -> Result<StepJacobian, DiffError> {
    let p = world.problem(state, u);
    let (y, st) = match ws {
        Some(ws) => b.solve_root_with(&p, ws)?,
        None => b.solve_root(&p)?,
    };
    let jth = param_partials(b, &p, world, state, u, &st, &y, params, partials)?;
    let dy = -b
        .solve_jacobian_velocity(&p, &st, &y, &jth)
        .map_err(|e| match e {
            crate::contact::SolveError::OutOfRange { column, miss } => DiffError::NoDerivative {
                input: params
                    .get(column)
                    .map_or_else(|| format!("column {column}"), |p| format!("{p:?}")),
                miss,
            },
            e => singular(e),
        })?;
    ift_output(world, state, params, &y, &dy)
}

/// The output map of [`ift`] (its step 4): the step Jacobian from the
/// root `y` and `dy/dθ` (rows: `y`'s unknowns, `v⁺` first; one column per
/// parameter of `params`).
pub(crate) fn ift_output(
    world: &World<f64>,
    state: &State<f64>,
    params: &[Param],
    y: &DVec<f64>,
    dy: &DMat<f64>,
) -> Result<StepJacobian, DiffError> {
    let nv = world.model.nv;
    let v_next = y.rows(0, nv).into_owned();
    let q_next =
        integrate_model(&world.model, &state.q, &v_next, world.dt).map_err(SimError::from)?;
    let blocks = output_blocks(&world.model, &state.q, &v_next, world.dt, &q_next)?;
    let mut jac = DMat::zeros(2 * nv, params.len());
    jac.rows_mut(nv, nv).copy_from(&dy.rows(0, nv));
    for (bi, blk) in blocks.iter().enumerate() {
        let Some(t) = blk else { continue };
        let kv = world.model.bodies[bi].idx_v;
        let tv = t.fixed_view::<6, 6>(0, 6);
        let rows = tv * dy.rows(kv, 6);
        jac.rows_mut(kv, 6).copy_from(&rows);
        for (j, prm) in params.iter().enumerate() {
            match *prm {
                Param::Q(i) if (kv..kv + 6).contains(&i) => {
                    let mut col = jac.view_mut((kv, j), (6, 1));
                    col += t.column(i - kv);
                }
                Param::Dt => {
                    let mut col = jac.view_mut((kv, j), (6, 1));
                    col += t.column(12);
                }
                _ => {}
            }
        }
    }
    if crate::dynamics::articulated::has_articulated(&world.model) {
        // Robot joints: the output map of the whole configuration, by
        // forward-mode columns (tangent rows of the articulated dofs).
        let t = articulated_output(&world.model, &state.q, &v_next, world.dt, &q_next)?;
        let dofs = crate::dynamics::articulated::articulated_dofs(&world.model);
        let tv = t.columns(nv, nv).into_owned();
        let moved = &tv * dy.rows(0, nv);
        for &r in &dofs {
            for (j, prm) in params.iter().enumerate() {
                let mut val = moved[(r, j)];
                match *prm {
                    Param::Q(i) => val += t[(r, i)],
                    Param::Dt => val += t[(r, 2 * nv)],
                    _ => {}
                }
                jac[(r, j)] = val;
            }
        }
    }
    Ok(StepJacobian {
        next: State {
            q: q_next,
            v: v_next,
        },
        jacobian: jac,
        nonsmooth: Vec::new(),
        nonsmooth_why: Vec::new(),
        one_sided: Vec::new(),
    })
}

/// `∂(q⁺ ⊖ q⁺₀)/∂(δ, v⁺, h)` of `q⁺ = (q ⊕ δ) ⊕ h v⁺` for the whole
/// configuration (`nv × (2 nv + 1)`), by forward-mode column blocks.
pub(super) fn articulated_output(
    model: &Model<f64>,
    q: &DVec<f64>,
    v_next: &DVec<f64>,
    h: f64,
    q_next: &DVec<f64>,
) -> Result<DMat<f64>, DiffError> {
    let nv = model.nv;
    let n = 2 * nv + 1;
    let md = model.cast::<D>();
    let qn = q_next.map(D::from_re);
    let mut out = DMat::zeros(nv, n);
    for start in (0..n).step_by(BLOCK) {
        let seed = |k: usize, x: f64| {
            if (start..start + BLOCK).contains(&k) {
                D::from_re(x).derivative(k - start)
            } else {
                D::from_re(x)
            }
        };
        let delta = DVec::from_fn(nv, |i, _| seed(i, 0.0));
        let vd = DVec::from_fn(nv, |i, _| seed(nv + i, v_next[i]));
        let hd = seed(2 * nv, h);
        let q0 = integrate_model(&md, &q.map(D::from_re), &delta, D::from_re(1.0))
            .map_err(SimError::from)?;
        let q1 = integrate_model(&md, &q0, &vd, hd).map_err(SimError::from)?;
        let t = crate::dynamics::free::difference_model(&md, &qn, &q1);
        for (r, tr) in t.iter().enumerate() {
            let g = eps_column(tr);
            for j in 0..BLOCK.min(n - start) {
                out[(r, start + j)] = g[j];
            }
        }
    }
    Ok(out)
}
