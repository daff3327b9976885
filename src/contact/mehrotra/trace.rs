use super::*;

/// Whether `DUALSIM_IPM_TRACE` is set (read once): a diagnostic trace of
/// every interior-point iteration on stderr.
pub(super) fn trace_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DUALSIM_IPM_TRACE").is_some())
}

/// One line per iteration (see [`trace_enabled`]): the island's size,
/// whether it started warm, the equality residual, the complementarity's
/// deviation from ρ and its mean ν, the last accepted step, the
/// linearization, and the contact furthest from κ = ρ with its gap `y₀`,
/// tangential velocity, impulse and pair variables.
#[allow(clippy::too_many_arguments)]
pub(super) fn trace_iteration<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    rho: f64,
    iter: usize,
    warm: &[bool],
    last_alpha: f64,
    lin: Linearization,
    m: &Measures,
) {
    let nu = mean_comp(island, xs, None);
    let mut worst = (0.0, 0);
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        let r = local_residual_fixed(
            cand.law,
            x.as_slice(),
            &ce.y,
            cand.mu,
            T::from_re(rho),
            None,
            false,
        );
        let ne = cand.law.equalities();
        let dev = r
            .iter()
            .take(cand.law.size())
            .skip(ne)
            .fold(0.0f64, |a, v| a.max(v.re().abs()));
        if dev > worst.0 {
            worst = (dev, c);
        }
    }
    let warm_n = warm.iter().filter(|w| **w).count();
    let mut line = format!(
        "ipm: {} contacts ({warm_n} warm) it {iter}: eq {:.2e} comp_dev {:.2e} nu {:.2e} alpha {:.3} {:?}",
        island.contacts.len(),
        m.eq,
        m.comp_dev,
        nu,
        last_alpha,
        lin
    );
    if let (Some(x), Some(ce)) = (xs.get(worst.1), ev.contacts.get(worst.1)) {
        let xv: Vec<String> = x.iter().map(|v| format!("{:.2e}", v.re())).collect();
        line += &format!(
            " | worst #{} dev {:.2e} y ({:.2e}, {:.2e}, {:.2e}) x [{}]",
            worst.1,
            worst.0,
            ce.y[0].re(),
            ce.y[1].re(),
            ce.y[2].re(),
            xv.join(", ")
        );
    }
    eprintln!("{line}");
}
