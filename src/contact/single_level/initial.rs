use super::*;

/// The pair's collision program at body poses `poses` (island order),
/// solved to its central point `s ∘ z = mu0 e`.
pub(super) fn pair_proximity<T: Scalar>(
    lp: &Lowered<T>,
    poses: &[Pose<T>],
    local: &[usize],
    mu0: f64,
) -> Result<crate::collision::conic::Proximity, SolveError> {
    let wa = (poses[local[lp.pair.a]] * lp.local_a).cast::<f64>();
    let wb = match lp.pair.b {
        Partner::Body(j) => (poses[local[j]] * lp.local_b).cast::<f64>(),
        Partner::Static(_) => lp.local_b.cast::<f64>(),
    };
    let ca = LocalCone {
        m: lp.cone_a.m.map(|x| x.re()),
        layout: lp.cone_a.layout.clone(),
        n_aux: lp.cone_a.n_aux,
    };
    let cb = LocalCone {
        m: lp.cone_b.m.map(|x| x.re()),
        layout: lp.cone_b.layout.clone(),
        n_aux: lp.cone_b.n_aux,
    };
    let pr = assemble(&ca, &wa, &cb, &wb);
    Ok(
        match solve_problem(
            &pr,
            &ConicParams {
                tol_gap: mu0,
                ..ConicParams::default()
            },
        ) {
            Ok(x) => x,
            Err(_) => solve_problem(
                &pr,
                &ConicParams {
                    tol_gap: 1e-8,
                    ..ConicParams::default()
                },
            )?,
        },
    )
}

/// Initial island unknowns (module docs).
pub(super) fn initial_point<T: Scalar>(
    p: &StepProblem<'_, T>,
    isl: &Isl<T>,
    v0: &DVec<T>,
    params: &Params,
) -> Result<DVec<T>, SolveError> {
    let scale = params.initial_scale;
    let mut u = DVec::zeros(isl.size);
    let mu0 = (scale * scale).max(p.params.rho);
    // v⁺₀ = v₀; every collision program at q ⊕ h v⁺₀.
    let mut poses = Vec::with_capacity(isl.bodies.len());
    for (li, &g) in isl.bodies.iter().enumerate() {
        let (q, v) = body_arrays(p, g, &v0.as_slice()[6 * li..6 * li + 6]);
        poses.push(
            pose_after(&q, &v, p.h)
                .map_err(|source| DynamicsError::Retraction { body: g, source })?,
        );
    }
    let proxes = isl
        .pairs
        .iter()
        .map(|lp| pair_proximity(lp, &poses, &isl.local, mu0))
        .collect::<Result<Vec<_>, _>>()?;
    u.rows_mut(0, v0.len()).copy_from(v0);
    for ((lp, &off), prox) in isl.pairs.iter().zip(&isl.offsets).zip(proxes) {
        let (n, m) = (lp.n, lp.m());
        let sol = &prox.solution;
        for i in 0..n {
            u[off + i] = T::from_re(sol.x[i]);
        }
        for i in 0..m {
            u[off + n + i] = T::from_re(sol.s[i]);
            u[off + n + m + i] = T::from_re(sol.z[i]);
        }
        let x0: DVec<T> = lp.pair.law.initial(scale);
        u.rows_mut(off + n + 2 * m, x0.len()).copy_from(&x0);
    }
    // Contact unknowns on their linear equalities where the cones allow it.
    let (_, evals) = island_residual(
        p,
        &isl.bodies,
        &isl.local,
        &isl.pairs,
        &isl.offsets,
        &u,
        T::from_re(p.params.rho),
    )?;
    let sc = T::from_re(scale);
    for ((lp, &off), ev) in isl.pairs.iter().zip(&isl.offsets).zip(&evals) {
        let c0 = off + lp.n + 2 * lp.m();
        let y = ev.y;
        if y[0].re() > u[c0 + 1].re() {
            u[c0 + 1] = y[0];
        }
        match lp.pair.law {
            Law::Frictionless => {}
            Law::Exact => {
                u[c0 + 2] = lp.mu * u[c0];
                u[c0 + 6] = y[1];
                u[c0 + 7] = y[2];
                u[c0 + 5] = safe_norm(&Vec3::new(y[1], y[2], T::zero())) + sc;
            }
            Law::Pyramid => {
                let psi = y[1].abs() + y[2].abs() + sc;
                let beta = lp.mu * u[c0] * T::from_re(0.125);
                for k in 0..4 {
                    u[c0 + 2 + k] = beta;
                }
                u[c0 + 6] = psi + y[1];
                u[c0 + 7] = psi - y[1];
                u[c0 + 8] = psi + y[2];
                u[c0 + 9] = psi - y[2];
                u[c0 + 10] = psi;
                u[c0 + 11] = lp.mu * u[c0] * T::from_re(0.5);
            }
        }
    }
    Ok(u)
}
