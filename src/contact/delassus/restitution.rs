use super::*;

/// The combined restitution of a candidate pair (`restitution_combine`
/// of the two materials; its derivative parts flow).
pub fn pair_restitution<T: Scalar>(p: &StepProblem<'_, T>, a: usize, b: Partner) -> T {
    match b {
        Partner::Body(j) => p
            .restitution_combine
            .apply(p.materials[a].restitution, p.materials[j].restitution),
        Partner::Static(j) => p.restitution_combine.apply(
            p.materials[a].restitution,
            p.statics[j].material.restitution,
        ),
    }
}

/// Gap (m) within which (in magnitude) a contact is touching: the
/// restitution bias keeps its gap however small its sign
/// ([`restitution_bias`]), and `lcp`'s continuous collision times its
/// impact from there ([`crate::contact::lcp::ccd`]).
pub const TOUCH: f64 = 1e-9;

/// The restitution bias of each contact of an island,
/// `b_c = e_c v_n⁻_c − φ̄_c(q)/h`, with `v_n⁻_c` the contact's
/// normal velocity at the start of the step (`W_c(q) v`, positive when
/// separating), `φ_c(q)` its gap there, `φ̄ = φ` for `φ ≥ −TOUCH` and 0
/// below, and `e_c` the pair's combined restitution, so that the normal
/// row `φ(q⁺)/h + b ≥ 0` reads `(φ(q⁺) − φ(q))/h ≥ −e v_n⁻` (Newton's law
/// on the step's normal velocity; a contact penetrating deeper than
/// [`TOUCH`] keeps its position correction). `φ̄` is smooth through a
/// zero gap, so a contact whose gap closed on the step boundary gets the
/// same law, and the same derivative, whatever the sign of its round-off
/// gap (before, `max(φ, 0)` made `∂v⁺/∂φ = −1/h` for a gap of −1e-17). It
/// applies to the contacts that bounce in this step: approaching
/// (`v_n⁻ < 0`), reaching the surface within the step on their start
/// velocity (`φ(q) + h v_n⁻ < 0`) and with a gap at most the
/// formulation's [`bounce_gap`](Formulation::bounce_gap); the others get
/// zero. `None` when the formulation has no impact law or no contact of the
/// island bounces. Branches on primal values only.
pub fn restitution_bias<T: Scalar, F: Formulation>(
    form: &F,
    p: &StepProblem<'_, T>,
    island: &Island<T>,
) -> Result<Option<Vec<T>>, SolveError> {
    let Some(touch) = form.bounce_gap(p.ccd) else {
        return Ok(None);
    };
    let es: Vec<T> = island
        .contacts
        .iter()
        .map(|c| pair_restitution(p, c.a, c.b))
        .collect();
    if es.iter().all(|e| e.re() <= 0.0) {
        return Ok(None);
    }
    let v0 = DVec::zeros(island.dim());
    let ev = evaluate(p, island, &v0, &zero_xs(island))?;
    let v = island.gather(p.v);
    Ok(Some(
        ev.contacts
            .iter()
            .zip(&es)
            .map(|(ce, e)| {
                let mut vn = T::zero();
                for (u, w) in &ce.blocks {
                    let o = island.units[*u].offset;
                    for k in 0..w.ncols() {
                        vn += w[(0, k)] * v[o + k];
                    }
                }
                let gap = ce.contact.gap;
                // A contact within `TOUCH` of the surface keeps its gap
                // (smooth through zero: the sign of a round-off gap does
                // not choose the law); a deeper one keeps its position
                // correction.
                let above = if gap.re() >= -TOUCH { gap } else { T::zero() };
                if e.re() > 0.0 && vn.re() < 0.0 && gap.re() <= touch && (gap + p.h * vn).re() < 0.0
                {
                    *e * vn - above / p.h
                } else {
                    T::zero()
                }
            })
            .collect(),
    ))
}
