use super::*;

/// One pair evaluated at `q⁺`.
#[derive(Clone, Debug)]
pub struct PairEval<S: Scalar> {
    /// Local residual rows (stationarity, feasibility, complementarity,
    /// contact law).
    pub rows: DVec<S>,
    /// Generalized impulse on body a (`W_aᵀ f`).
    pub gen_a: Vector6<S>,
    /// Generalized impulse on body b, if it is a body.
    pub gen_b: Option<Vector6<S>>,
    /// `α − 1`.
    pub gap: S,
    /// Witness point.
    pub point: Vec3<S>,
    /// Normal from b to a.
    pub normal: Vec3<S>,
    /// Tangents.
    pub tangents: (Vec3<S>, Vec3<S>),
    /// Contact-space `(φ, v_t1, v_t2)`.
    pub y: Vec3<S>,
}

/// Jordan product `u ∘ v` of a cone layout, generic.
pub(super) fn jordan_layout<S: Scalar>(layout: &ConeLayout, u: &[S], v: &[S]) -> Vec<S> {
    let mut w = vec![S::zero(); layout.dim()];
    for i in 0..layout.n_orthant {
        w[i] = u[i] * v[i];
    }
    for (s, d) in layout.soc_blocks() {
        let mut dot = S::zero();
        for j in 0..d {
            dot += u[s + j] * v[s + j];
        }
        w[s] = dot;
        for j in 1..d {
            w[s + j] = u[s] * v[s + j] + v[s] * u[s + j];
        }
    }
    w
}

/// Evaluates pair `lp` with body a at `pose_a` (q⁺) moving with `va`, the
/// other side (body pose at q⁺ and velocity) or `None` for a static, and
/// local unknowns `u`, complementarity relaxed to `kappa`.
pub fn pair_eval<S: Scalar>(
    lp: &Lowered<S>,
    pose_a: &Pose<S>,
    va: &[S; 6],
    other: Option<(&Pose<S>, &[S; 6])>,
    h: S,
    u: &[S],
    kappa: S,
) -> Result<PairEval<S>, SolveError> {
    let (n, m) = (lp.n, lp.m());
    let law = lp.pair.law;
    let wa = *pose_a * lp.local_a;
    let wb = match other {
        Some((pb, _)) => *pb * lp.local_b,
        None => lp.local_b,
    };
    let pr = assemble(&lp.cone_a, &wa, &lp.cone_b, &wb);
    let w = DVec::from_column_slice(&u[..n]);
    let s = &u[n..n + m];
    let z = &u[n + m..n + 2 * m];
    let xk = DVec::from_column_slice(&u[n + 2 * m..]);
    let mut rows = DVec::zeros(lp.size());
    // Stationarity e_α + Gᵀ z.
    for j in 0..n {
        let mut acc = if j == 3 { S::one() } else { S::zero() };
        for i in 0..m {
            acc += pr.g[(i, j)] * z[i];
        }
        rows[j] = acc;
    }
    // Feasibility G w + s − h.
    let gw = &pr.g * &w;
    for i in 0..m {
        rows[n + i] = gw[i] + s[i] - pr.h[i];
    }
    // Complementarity s ∘ z − κ e.
    let c = jordan_layout(&lp.layout, s, z);
    for i in 0..m {
        rows[n + m + i] = c[i];
    }
    rows[n + m] -= kappa;
    for i in 1..lp.layout.n_orthant {
        rows[n + m + i] -= kappa;
    }
    for (st, _) in lp.layout.soc_blocks() {
        rows[n + m + st] -= kappa;
    }
    // Contact geometry from the collision unknowns.
    let alpha = w[3];
    let point = Vec3::new(w[0], w[1], w[2]);
    let mut da = Vec3::zeros();
    for i in 0..m {
        if pr.owner[i] == Owner::A {
            da -= Vec3::new(pr.g[(i, 0)], pr.g[(i, 1)], pr.g[(i, 2)]) * z[i];
        }
    }
    let (normal, _) = direction_or_z(&da);
    let (t1, t2) = tangent_basis_from(&normal, lp.pair.axis);
    let frame = [&normal, &t1, &t2];
    let retraction =
        |body| move |source| SolveError::from(DynamicsError::Retraction { body, source });
    let (mut vt, w_a) =
        side(pose_a, va, h, &point, frame, S::one()).map_err(retraction(lp.pair.a))?;
    let mut w_b = None;
    if let Some((pb, vb)) = other {
        let jb = match lp.pair.b {
            Partner::Body(j) => j,
            Partner::Static(_) => lp.pair.a,
        };
        let (vtb, wbm) = side(pb, vb, h, &point, frame, -S::one()).map_err(retraction(jb))?;
        vt += vtb;
        w_b = Some(wbm);
    }
    let y = Vec3::new(alpha - S::one(), t1.dot(&vt), t2.dot(&vt));
    let rc = local_residual(law, &xk, &y, lp.mu, kappa, None, false);
    rows.rows_mut(n + 2 * m, rc.len()).copy_from(&rc);
    let f = law.impulse(&xk);
    Ok(PairEval {
        rows,
        gen_a: w_a.transpose() * f,
        gen_b: w_b.map(|wb| wb.transpose() * f),
        gap: alpha - S::one(),
        point,
        normal,
        tangents: (t1, t2),
        y,
    })
}
