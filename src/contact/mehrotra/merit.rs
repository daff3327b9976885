use super::*;

/// Measures of a point: equality residual ‖·‖∞, deviation of the
/// complementarity rows from `κ e` (‖·‖∞), largest `z s`, and the merit
/// `‖r_κ‖²`.
pub(super) struct Measures {
    pub(super) eq: f64,
    pub(super) comp_dev: f64,
    pub(super) comp_max: f64,
    pub(super) merit: f64,
}

pub(super) fn measures<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: f64,
) -> Measures {
    let mut eq: f64 = 0.0;
    let mut merit = 0.0;
    for r in ev.r_dyn.iter() {
        eq = eq.max(r.re().abs());
        merit += r.re() * r.re();
    }
    let mut comp_dev: f64 = 0.0;
    let mut comp_max: f64 = 0.0;
    let k = T::from_re(kappa);
    for ((cand, x), ce) in island.contacts.iter().zip(xs).zip(&ev.contacts) {
        let r = local_residual_fixed(cand.law, x.as_slice(), &ce.y, cand.mu, k, None, false);
        let ne = cand.law.equalities();
        for (i, ri) in r.iter().take(cand.law.size()).enumerate() {
            let a = ri.re().abs();
            merit += a * a;
            if i < ne {
                eq = eq.max(a);
            } else {
                comp_dev = comp_dev.max(a);
            }
        }
        for &(z, s) in cand.law.orthant_pairs() {
            comp_max = comp_max.max(x[z].re() * x[s].re());
        }
        for &(z, s) in cand.law.soc_pairs() {
            let d: f64 = (0..3).map(|i| x[z + i].re() * x[s + i].re()).sum();
            comp_max = comp_max.max(d);
        }
    }
    Measures {
        eq,
        comp_dev,
        comp_max,
        merit,
    }
}

/// Mean complementarity `ν = (Σ zᵢsᵢ + Σ zᵀs) / degree` of `x + α dx`.
pub(super) fn mean_comp<T: Scalar>(
    island: &Island<T>,
    xs: &[DVec<T>],
    dxs: Option<(&[DVec<T>], f64)>,
) -> f64 {
    let mut sum = 0.0;
    let mut deg = 0;
    for (c, cand) in island.contacts.iter().enumerate() {
        let val = |i: usize| {
            let mut v = xs[c][i].re();
            if let Some((d, a)) = dxs {
                v += a * d[c][i].re();
            }
            v
        };
        for &(z, s) in cand.law.orthant_pairs() {
            sum += val(z) * val(s);
        }
        for &(z, s) in cand.law.soc_pairs() {
            sum += (0..3).map(|i| val(z + i) * val(s + i)).sum::<f64>();
        }
        deg += cand.law.degree();
    }
    sum / deg.max(1) as f64
}
