use super::*;

/// The local inputs of every step: `Q(0..nv)`, `V(0..nv)`, the model
/// parameters, `U(0..nv)`.
pub(super) fn locals(nv: usize, model: &[Param]) -> Vec<Param> {
    (0..nv)
        .map(Param::Q)
        .chain((0..nv).map(Param::V))
        .chain(model.iter().copied())
        .chain((0..nv).map(Param::U))
        .collect()
}

/// The contracted second derivative of one step: `λᵀ ∂²Φ/∂z²` (`m × m`)
/// or its product with a direction.
pub(super) trait SecondOrder {
    fn hessian(&self, lambda: &DVec<f64>) -> Result<DMat<f64>, DiffError>;
    fn hvp(&self, lambda: &DVec<f64>, dir: &DVec<f64>) -> Result<DVec<f64>, DiffError>;
    /// `∂²Φ_i/∂z²` for every output `i` (`2 nv` matrices `m × m`): the
    /// same hyper-dual evaluations as one contraction, kept so that any
    /// `λ` contracts them by a weighted sum (DDP's repeated backward
    /// passes).
    fn tensor(&self) -> Result<Vec<DMat<f64>>, DiffError>;
}

/// Gradients and Hessians of a vector function `g` of `m` seeds (`outs`
/// entries), by 8 × 8 hyper-dual blocks (`⌈m/8⌉(⌈m/8⌉+1)/2`
/// evaluations).
#[allow(clippy::type_complexity)]
pub(super) fn blocks_second(
    m: usize,
    outs: usize,
    mut g: impl FnMut(&[H]) -> Result<Vec<H>, DiffError>,
) -> Result<(Vec<DVec<f64>>, Vec<DMat<f64>>), DiffError> {
    let nb = m.div_ceil(B);
    let mut grads = vec![DVec::zeros(m); outs];
    let mut hess = vec![DMat::zeros(m, m); outs];
    for bi in 0..nb {
        for bj in bi..nb {
            let seeds: Vec<H> = (0..m)
                .map(|k| {
                    let mut d = H::from_re(0.0);
                    if k / B == bi {
                        d = d.derivative1(k % B);
                    }
                    if k / B == bj {
                        d = d.derivative2(k % B);
                    }
                    d
                })
                .collect();
            let v = g(&seeds)?;
            for ((gi, hi), vi) in grads.iter_mut().zip(hess.iter_mut()).zip(&v) {
                if bi == bj {
                    let gb = vi.eps1.unwrap_generic(Const::<B>, U1);
                    for a in 0..B.min(m - bi * B) {
                        gi[bi * B + a] = gb[a];
                    }
                }
                let hb = vi.eps1eps2.unwrap_generic(Const::<B>, Const::<B>);
                for a in 0..B.min(m - bi * B) {
                    for c in 0..B.min(m - bj * B) {
                        hi[(bi * B + a, bj * B + c)] = hb[(a, c)];
                        hi[(bj * B + c, bi * B + a)] = hb[(a, c)];
                    }
                }
            }
        }
    }
    Ok((grads, hess))
}

/// `∂²gᵢ/∂z²` of a vector function `g` of `m` seeds (`outs` entries).
pub(super) fn blocks_tensor(
    m: usize,
    outs: usize,
    g: impl FnMut(&[H]) -> Result<Vec<H>, DiffError>,
) -> Result<Vec<DMat<f64>>, DiffError> {
    Ok(blocks_second(m, outs, g)?.1)
}

/// Gradient and Hessian of a scalar function `g` of `m` seeds.
pub(super) fn blocks_hessian(
    m: usize,
    mut g: impl FnMut(&[H]) -> Result<H, DiffError>,
) -> Result<(DVec<f64>, DMat<f64>), DiffError> {
    let (mut gs, mut hs) = blocks_second(m, 1, |s| Ok(vec![g(s)?]))?;
    Ok((gs.remove(0), hs.remove(0)))
}

/// `(∂²g/∂z²) dir` of a scalar function of `m` seeds: one
/// `HyperDualSVec64<8, 1>` evaluation per 8 seeds (`ε₂` along `dir`).
pub(super) fn blocks_hvp(
    m: usize,
    dir: &DVec<f64>,
    mut g: impl FnMut(&[H1]) -> Result<H1, DiffError>,
) -> Result<DVec<f64>, DiffError> {
    let mut out = DVec::zeros(m);
    for bi in 0..m.div_ceil(B) {
        let seeds: Vec<H1> = (0..m)
            .map(|k| {
                let mut d = H1::from_re(0.0).derivative2(0) * H1::from_re(dir[k]);
                if k / B == bi {
                    d += H1::from_re(0.0).derivative1(k % B);
                }
                d
            })
            .collect();
        let v = g(&seeds)?;
        let hb = v.eps1eps2.unwrap_generic(Const::<B>, U1);
        for a in 0..B.min(m - bi * B) {
            out[bi * B + a] = hb[a];
        }
    }
    Ok(out)
}
