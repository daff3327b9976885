use super::*;

/// Exact primal `∂r/∂u` of an island at `u`, by forward-mode dual numbers
/// over the whole island residual (column blocks of 16) except the slack
/// columns. The reference for [`island_jacobian`]
/// ([`SingleLevel::newton_matrix_discrepancy`]); not used by the solver.
pub(super) fn island_jacobian_dual<T: Scalar>(
    pd: &StepProblem<'_, D>,
    isl: &Isl<T>,
    pairs_d: &[Lowered<D>],
    u: &DVec<f64>,
) -> Result<DMat<f64>, SolveError> {
    let n = u.len();
    let mut j = DMat::zeros(n, n);
    let mut is_slack = vec![false; n];
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        is_slack[off + lp.n..off + lp.n + lp.m()].fill(true);
    }
    let cols: Vec<usize> = (0..n).filter(|&c| !is_slack[c]).collect();
    for block in cols.chunks(BLOCK) {
        let mut ud = u.map(D::from_re);
        for (k, &c) in block.iter().enumerate() {
            ud[c] = D::from_re(u[c]).derivative(k);
        }
        let (r, _) = island_residual(
            pd,
            &isl.bodies,
            &isl.local,
            pairs_d,
            &isl.offsets,
            &ud,
            D::from_re(0.0),
        )?;
        for (i, ri) in r.iter().enumerate() {
            let g = ri.eps.unwrap_generic(Const::<BLOCK>, U1);
            for (k, &c) in block.iter().enumerate() {
                j[(i, c)] = g[k];
            }
        }
    }
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        slack_columns(lp.n, &lp.layout, off, u, &mut j);
    }
    Ok(j)
}

/// The slack columns of a pair's collision program and its
/// complementarity rows: `s` enters only the feasibility rows, as `I`, and
/// the complementarity rows (from `z0`), as `∂(s ∘ z)/∂s = Arw(z)`; those
/// rows take `∂(s ∘ z)/∂z = Arw(s)` in the `z` columns.
pub(super) fn slack_columns(
    n: usize,
    layout: &ConeLayout,
    off: usize,
    u: &DVec<f64>,
    j: &mut DMat<f64>,
) {
    let m = layout.dim();
    let (s0, z0) = (off + n, off + n + m);
    for i in 0..m {
        j[(s0 + i, s0 + i)] = 1.0;
    }
    // (row block, column block, the other factor's start)
    for (col, other) in [(s0, z0), (z0, s0)] {
        for i in 0..layout.n_orthant {
            j[(z0 + i, col + i)] = u[other + i];
        }
        for (st, d) in layout.soc_blocks() {
            for k in 0..d {
                j[(z0 + st, col + st + k)] = u[other + st + k];
            }
            for k in 1..d {
                j[(z0 + st + k, col + st)] = u[other + st + k];
                j[(z0 + st + k, col + st + k)] = u[other + st];
            }
        }
    }
}

/// Gradient part of an `N`-wide dual.
pub(super) fn grad<const N: usize>(x: &DualSVec64<N>) -> nalgebra::SVector<f64, N> {
    x.eps.unwrap_generic(Const::<N>, U1)
}

/// A dual with value `re` and gradient `g`.
pub(super) fn with_grad<const N: usize>(re: f64, g: nalgebra::SVector<f64, N>) -> DualSVec64<N> {
    DualSVec64::new(re, num_dual::Derivative::some(g))
}

/// Derivatives of a pair's contact frame and impulse maps
/// ([`pair_jacobian`]): for `y_t = (t₁·v_t, t₂·v_t)` and the generalized
/// impulses `W_aᵀ f`, `W_bᵀ f` at fixed `f`, their gradients with respect
/// to the dual slots `v_a` (0–5), `v_b` (6–11, `N = 18` only), the witness
/// point `p` (`N − 6 … N − 4`) and the unnormalized normal `d_a`
/// (`N − 3 … N − 1`).
pub(super) struct FrameGrads<const N: usize> {
    pub(super) yt: [nalgebra::SVector<f64, N>; 2],
    pub(super) generalized: [Option<[nalgebra::SVector<f64, N>; 6]>; 2],
    /// Primal `W_a`, `W_b`.
    pub(super) w: [Option<nalgebra::Matrix3x6<f64>>; 2],
}

/// One side of a pair at `q⁺`: body translation `r⁺`, velocity `v⁺`, and
/// `Θ = ∂θ/∂ω⁺ = h L(hω⁺)` (world-frame rotation increment of the pose).
pub(super) struct SideState {
    pub(super) r: Vec3<f64>,
    pub(super) v: [f64; 6],
    pub(super) theta: nalgebra::Matrix3<f64>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn frame_grads<const N: usize>(
    a: &SideState,
    b: Option<&SideState>,
    h: f64,
    p: &Vec3<f64>,
    da: &Vec3<f64>,
    axis: usize,
    f: &Vec3<f64>,
) -> Result<FrameGrads<N>, crate::math::RetractionError> {
    type V<const M: usize> = nalgebra::SVector<f64, M>;
    let (sp, sd) = (N - 6, N - 3);
    let seed = |x: f64, k: usize| DualSVec64::<N>::from_re(x).derivative(k);
    let side_state = |st: &SideState, slot: usize| {
        // r⁺ = r + h v_lin: the pose's translation as a dual (the rotation
        // is not used by `side`).
        let v: [DualSVec64<N>; 6] = core::array::from_fn(|k| seed(st.v[k], slot + k));
        let t = Vec3::from_fn(|d, _| {
            let mut g = V::<N>::zeros();
            g[slot + d] = h;
            with_grad(st.r[d], g)
        });
        (Pose::new(crate::math::so3::identity(), t), v)
    };
    let hk = DualSVec64::<N>::from_re(h);
    let pk = Vec3::from_fn(|d, _| seed(p[d], sp + d));
    // d_a(v_a, z): δd_a = δθ_a × d_a = −[d_a]× Θ_a δω_a, plus its own slots.
    let dtheta = -(crate::math::skew(da) * a.theta);
    let dak = Vec3::from_fn(|d, _| {
        let mut g = V::<N>::zeros();
        for k in 0..3 {
            g[3 + k] = dtheta[(d, k)];
        }
        g[sd + d] = 1.0;
        with_grad(da[d], g)
    });
    let (normal, _) = direction_or_z(&dak);
    let (t1, t2) = tangent_basis_from(&normal, axis);
    let frame = [&normal, &t1, &t2];
    let (pose_a, va) = side_state(a, 0);
    let (mut vt, w_a) = side(&pose_a, &va, hk, &pk, frame, DualSVec64::from_re(1.0))?;
    let mut w_b = None;
    if let Some(b) = b {
        let (pose_b, vb) = side_state(b, 6);
        let (vtb, wbm) = side(&pose_b, &vb, hk, &pk, frame, DualSVec64::from_re(-1.0))?;
        vt += vtb;
        w_b = Some(wbm);
    }
    let fk = f.map(DualSVec64::<N>::from_re);
    let gens = |w: &nalgebra::Matrix3x6<DualSVec64<N>>| {
        let g = w.transpose() * fk;
        core::array::from_fn(|r| grad(&g[r]))
    };
    Ok(FrameGrads {
        yt: [grad(&t1.dot(&vt)), grad(&t2.dot(&vt))],
        generalized: [Some(gens(&w_a)), w_b.as_ref().map(gens)],
        w: [Some(w_a.map(|x| x.re())), w_b.map(|w| w.map(|x| x.re()))],
    })
}

/// Exact primal `∂r/∂u` of an island at `u` (`j` is resized and
/// overwritten), in closed form except for the pose kinematics (below).
///
/// The rows of a pair (`super` module docs) are linear or bilinear in its
/// own unknowns: stationarity `e_α + G(q⁺)ᵀ z` (`∂/∂z = Gᵀ`), feasibility
/// `G(q⁺) w + s − h(q⁺)` (`∂/∂w = G`, `∂/∂s = I`), the complementarity
/// rows (`Arw(z)`, `Arw(s)`) and the contact law (`ipm`'s closed-form
/// local Jacobian `∂r/∂x`, `∂r/∂y`). Only the part poses `q⁺(v⁺)`, the
/// contact frame (the normal is the direction of
/// `d_a = −Σ_{rows of a} G_pᵀ z`) and the impulse maps `W(q⁺, p, n)` are
/// nonlinear; their derivatives with respect to the 18 inputs
/// `(v_a, v_b, p, d_a)` come from ONE evaluation in an 18-wide dual
/// ([`K`]), as `ipm` does for its contact kinematics
/// (`contact::space::contact_jacobian`), and reach the `z`
/// columns through `∂d_a/∂z_i = −G_{p,i}ᵀ`. `∂G/∂v⁺` needs only the
/// p-columns of `G` (the α and ε columns do not depend on the pose):
/// `G_{p,i}(p − r) = −M_{y,i} Rᵀ (p − r)` and `G_pᵀ z = −R Σ M_{y,i}ᵀ z_i`
/// per shape. The dynamics rows take `dynamics::free`'s closed-form
/// `∂r_dyn/∂v⁺`.
pub(super) fn island_jacobian<T: Scalar>(
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    u: &DVec<f64>,
    j: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let n = u.len();
    if j.shape() != (n, n) {
        *j = DMat::zeros(n, n);
    } else {
        // slice fill: a memset (nalgebra's `fill` walks the entries one by one)
        j.as_mut_slice().fill(0.0);
    }
    for (li, &g) in isl.bodies.iter().enumerate() {
        let vb: Vector6<f64> = u.fixed_rows::<6>(6 * li).into_owned();
        let (_, jac) = crate::contact::space::evaluate::body_dynamics(pf, g, &vb)?;
        j.fixed_view_mut::<6, 6>(6 * li, 6 * li).copy_from(&jac);
    }
    for (lp, &off) in isl.pairs_f.iter().zip(&isl.offsets) {
        pair_jacobian(pf, isl, lp, off, u, j)?;
        slack_columns(lp.n, &lp.layout, off, u, j);
    }
    Ok(())
}

/// The entries of pair `lp` (unknowns from `off`) in [`island_jacobian`].
pub(super) fn pair_jacobian<T: Scalar>(
    pf: &StepProblem<'_, f64>,
    isl: &Isl<T>,
    lp: &Lowered<f64>,
    off: usize,
    u: &DVec<f64>,
    j: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let (n, m) = (lp.n, lp.m());
    let law = lp.pair.law;
    let c0 = off + n + 2 * m;
    let h = pf.h;
    let la = isl.local[lp.pair.a];
    let (gb, lb) = match lp.pair.b {
        Partner::Body(g) => (g, Some(isl.local[g])),
        Partner::Static(_) => (lp.pair.a, None),
    };
    let retraction =
        |body| move |source| SolveError::from(DynamicsError::Retraction { body, source });
    // Body pose at q⁺ and Θ = h L(hω⁺) (`pose_after`: r⁺ = r + h v,
    // R⁺ = φ(hω⁺) R, so δR⁺ = [Θ δω]× R⁺).
    let body_state = |g: usize, li: usize| -> Result<(Pose<f64>, SideState), SolveError> {
        let b = &pf.model.bodies[g];
        let q: [f64; 7] = core::array::from_fn(|k| pf.q[b.idx_q + k]);
        let v: [f64; 6] = core::array::from_fn(|k| u[6 * li + k]);
        let pose = pose_after(&q, &v, h).map_err(retraction(g))?;
        let w = Vec3::new(v[3], v[4], v[5]) * h;
        let theta = crate::contact::space::phi_rotation_jacobian(&w).map_err(retraction(g))? * h;
        let r = pose.translation;
        Ok((pose, SideState { r, v, theta }))
    };
    let (pose_a, sa) = body_state(lp.pair.a, la)?;
    let wa = pose_a * lp.local_a;
    let (sb, wb) = match lb {
        Some(lb) => {
            let (pose_b, sb) = body_state(gb, lb)?;
            (Some(sb), pose_b * lp.local_b)
        }
        None => (None, lp.local_b),
    };
    let pr = assemble(&lp.cone_a, &wa, &lp.cone_b, &wb);
    let z = &u.as_slice()[off + n + m..off + 2 * m + n];
    // Stationarity (rows off..off+n) and feasibility (rows off+n..) in
    // the collision unknowns.
    for i in 0..m {
        for c in 0..n {
            let g = pr.g[(i, c)];
            j[(off + n + i, off + c)] = g;
            j[(off + c, off + n + m + i)] = g;
        }
    }
    // Their pose derivatives, per moving shape with body translation r⁺:
    // `G_{p,i}(p − r_part) = −M_{y,i} R_partᵀ(p − r_part)` varies by
    // `G_{p,i}(−h δv + [p − r⁺]× Θ δω)`; the p-rows of `Gᵀz`,
    // `g = Σ_i G_{p,i}ᵀ z_i`, by `−[g]× Θ δω`.
    let p = Vec3::new(u[off], u[off + 1], u[off + 2]);
    let gsum = |who: Owner| -> Vec3<f64> {
        let mut acc = Vec3::zeros();
        for i in 0..m {
            if pr.owner[i] == who {
                acc += Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * z[i];
            }
        }
        acc
    };
    let g_a = gsum(Owner::A);
    for (who, st, li) in [(Owner::A, Some(&sa), Some(la)), (Owner::B, sb.as_ref(), lb)] {
        let (Some(st), Some(li)) = (st, li) else {
            continue;
        };
        let lever = crate::math::skew(&(p - st.r)) * st.theta;
        let gs = if who == Owner::A { g_a } else { gsum(who) };
        let dstat = -(crate::math::skew(&gs) * st.theta);
        for i in 0..m {
            if pr.owner[i] != who {
                continue;
            }
            let gp = Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]);
            let ang = lever.transpose() * gp;
            for d in 0..3 {
                j[(off + n + i, 6 * li + d)] += -h * gp[d];
                j[(off + n + i, 6 * li + 3 + d)] += ang[d];
            }
        }
        for r in 0..3 {
            for d in 0..3 {
                j[(off + r, 6 * li + 3 + d)] += dstat[(r, d)];
            }
        }
    }
    // Contact geometry: the normal from `d_a = −g_a`, the witness point,
    // the impulse maps at `q⁺` (dual slots, [`frame_grads`]).
    let xk = DVec::from_column_slice(&u.as_slice()[c0..c0 + law.size()]);
    let f = law.impulse(&xk);
    let da = -g_a;
    let axis = lp.pair.axis;
    let at = PairAt {
        la,
        lb,
        off,
        n,
        m,
        c0,
        law,
        mu: lp.mu,
    };
    match &sb {
        Some(sb) => {
            let fg =
                frame_grads::<18>(&sa, Some(sb), h, &p, &da, axis, &f).map_err(retraction(gb))?;
            at.fill(&fg, &pr, &xk, j);
        }
        None => {
            let fg = frame_grads::<12>(&sa, None, h, &p, &da, axis, &f)
                .map_err(retraction(lp.pair.a))?;
            at.fill(&fg, &pr, &xk, j);
        }
    }
    Ok(())
}

/// Where a pair's unknowns and bodies sit in the island ([`pair_jacobian`]).
pub(super) struct PairAt {
    pub(super) la: usize,
    pub(super) lb: Option<usize>,
    pub(super) off: usize,
    pub(super) n: usize,
    pub(super) m: usize,
    pub(super) c0: usize,
    pub(super) law: Law,
    pub(super) mu: f64,
}

impl PairAt {
    /// Adds the contact rows and the contact impulses' dynamics entries
    /// from the frame gradients.
    pub(super) fn fill<const N: usize>(
        &self,
        fg: &FrameGrads<N>,
        pr: &crate::collision::conic::ConicProblem<f64>,
        xk: &DVec<f64>,
        j: &mut DMat<f64>,
    ) {
        let PairAt {
            la,
            lb,
            off,
            n,
            m,
            c0,
            law,
            mu,
        } = *self;
        let (sp, sd) = (N - 6, N - 3);
        // Column of dual slot k (the d_a slots spread over the z columns of a).
        let spread = |k: usize, val: f64, row: usize, j: &mut DMat<f64>| {
            if val == 0.0 {
                return;
            }
            if k < 6 {
                j[(row, 6 * la + k)] += val;
            } else if k < sp {
                if let Some(lb) = lb {
                    j[(row, 6 * lb + k - 6)] += val;
                }
            } else if k < sd {
                j[(row, off + k - sp)] += val;
            } else {
                for i in 0..m {
                    if pr.owner[i] == Owner::A {
                        // ∂d_a/∂z_i = −G_{p,i}ᵀ
                        j[(row, off + n + m + i)] -= val * pr.g[(i, k - sd)];
                    }
                }
            }
        };
        // Contact rows: ∂r/∂x, ∂r/∂y with y = (α − 1, t₁·v_t, t₂·v_t).
        let (ax, cy) = crate::contact::law::local_jacobian(law, xk, mu, false);
        let ls = law.size();
        for r in 0..ls {
            for c in 0..ls {
                j[(c0 + r, c0 + c)] = ax[(r, c)];
            }
            j[(c0 + r, off + 3)] += cy[(r, 0)];
            for k in 0..N {
                let val = cy[(r, 1)] * fg.yt[0][k] + cy[(r, 2)] * fg.yt[1][k];
                spread(k, val, c0 + r, j);
            }
        }
        // Dynamics rows: −Wᵀ E x.
        let e = law.impulse_map::<f64>();
        for (side_k, lbody) in [(0, Some(la)), (1, lb)] {
            let (Some(lbody), Some(gg), Some(w)) = (lbody, &fg.generalized[side_k], fg.w[side_k]) else {
                continue;
            };
            let we = w.transpose() * &e;
            for r in 0..6 {
                for c in 0..ls {
                    j[(6 * lbody + r, c0 + c)] -= we[(r, c)];
                }
                for k in 0..N {
                    spread(k, -gg[r][k], 6 * lbody + r, j);
                }
            }
        }
    }
}
