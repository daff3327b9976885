use super::*;

/// A column of `fd` is a kink candidate when its one-sided slopes differ by
/// more than this, relative to `max(1, ‖central difference‖∞)`.
pub const KINK_SLOPE_JUMP: f64 = 1e-3;

/// The kink test of `fd`: whether the second difference
/// `s(h) = f(h) + f(−h) − 2 f(0)` grows with the step, given `s(ε)` and
/// `s(2ε)`.
///
/// The one-sided slopes of a column differ by `s(ε)/ε`. Where the map is
/// smooth, `s(h) ≈ h² f''` (truncation: `s(2ε) = 4 s(ε)`); at a kink with
/// slope jump `J` at `|a| < ε`, `s(h) = J (h − |a|)`, so `s(2ε) ≥ 2 s(ε)`
/// (a curvature scale below ε, such as resting contact at small ρ, looks
/// the same). Error of the solves — round-off `δ` divided by a small ε, an
/// inaccurate solver, a jump of the solve's iterate — does not grow with
/// the step: `s(2ε) ≈ s(ε) ≈ δ`. Only a growth of at least 1.5× (the
/// midpoint between 1 and 2) is a kink; anything else is error, and the
/// column is compared (so an accuracy regression fails instead of being
/// left out).
///
/// ```
/// use dualsim::diff::second_difference_grows;
/// use dualsim::math::DVec;
/// let s = |h: f64| DVec::from_vec(vec![(h - 0.3e-7f64).max(0.0) * 2.0]); // |x| kink at 0.3 ε
/// assert!(second_difference_grows(&s(1e-7), &s(2e-7)));
/// let noise = DVec::from_vec(vec![3e-12]);
/// assert!(!second_difference_grows(&noise, &(-&noise)));
/// ```
pub fn second_difference_grows(s_eps: &DVec<f64>, s_2eps: &DVec<f64>) -> bool {
    s_2eps.amax() >= 1.5 * s_eps.amax()
}

/// Whether `s(2h) ≈ 4 s(h)` (within ±25 %, on the ∞-norms): the growth
/// of a smooth map's second difference, `s(h) ≈ h² f''`.
pub(crate) fn quadratic_ratio(s_h: &DVec<f64>, s_2h: &DVec<f64>) -> bool {
    let r = s_2h.amax() / s_h.amax();
    (3.0..=5.0).contains(&r)
}

/// The second half of `fd`'s kink test: given the second differences at
/// ε/2, ε and 2ε, whether they grow as a smooth map's (`1 : 4 : 16`,
/// each ratio within ±25 %, and the two ratios' vectors aligned:
/// `‖s(2ε) − 4 s(ε)‖∞ ≤ ‖s(2ε)‖∞ / 4`, the same for `s(ε)` against
/// `s(ε/2)`).
///
/// A slope jump `J` at `|a| < 2ε` gives `s(h) = J (h − |a|)⁺`: the ratios
/// `s(ε)/s(ε/2)` and `s(2ε)/s(ε)` cannot both be 4 (the first is 4 at
/// `|a| = ε/3`, where the second is 2.5), so a kink is never taken for
/// curvature; the column of a map this test accepts is the Richardson
/// extrapolation `(4 D(ε/2) − D(ε)) / 3` of the central differences
/// `D(h)`, whose truncation error is `O(ε⁴)` instead of `ε² f'''/6`.
///
/// ```
/// use dualsim::diff::second_difference_is_quadratic;
/// use dualsim::math::DVec;
/// let at = |f: &dyn Fn(f64) -> f64, h: f64| DVec::from_vec(vec![f(h) + f(-h) - 2.0 * f(0.0)]);
/// let smooth = |x: f64| (1.0 + x / 1e-6).exp(); // curvature scale 1e-6
/// let e = 1e-7;
/// assert!(second_difference_is_quadratic(&at(&smooth, e / 2.0), &at(&smooth, e), &at(&smooth, 2.0 * e)));
/// let kink = |x: f64| (x - e / 3.0).abs();
/// assert!(!second_difference_is_quadratic(&at(&kink, e / 2.0), &at(&kink, e), &at(&kink, 2.0 * e)));
/// ```
pub fn second_difference_is_quadratic(
    s_half: &DVec<f64>,
    s_eps: &DVec<f64>,
    s_2eps: &DVec<f64>,
) -> bool {
    let aligned = |a: &DVec<f64>, b: &DVec<f64>| (b - a * 4.0).amax() <= 0.25 * b.amax();
    quadratic_ratio(s_half, s_eps)
        && quadratic_ratio(s_eps, s_2eps)
        && aligned(s_half, s_eps)
        && aligned(s_eps, s_2eps)
}

/// The direction of a one-sided finite difference of `p` at `world` with
/// largest step `reach` (`+1` forward, `−1` backward), or `None` when the
/// central difference stays inside the parameter's domain
/// ([`domain_room`](super::super::domain_room)): at μ = 0 the difference is
/// forward, at a restitution of 1 backward.
pub(crate) fn one_sided(world: &World<f64>, p: &Param, reach: f64) -> Option<f64> {
    let (below, above) = super::super::domain_room(world, p);
    if below >= reach && above >= reach {
        None
    } else if below < above {
        Some(1.0)
    } else {
        Some(-1.0)
    }
}

/// The one-sided second-order difference `(−3 f(0) + 4 f(sε) − f(2sε)) /
/// (2sε)` from `zero = f(0)`, `f1 = f(sε)`, `f2 = f(2sε)`, and whether the
/// map has a kink within `2ε` on that side (its second difference is a
/// slope jump, not curvature: the same test as the central differences').
pub(crate) fn one_sided_column(
    zero: &DVec<f64>,
    f1: &DVec<f64>,
    f2: &DVec<f64>,
    eps: f64,
    s: f64,
) -> (DVec<f64>, bool) {
    let column = (f1 * 4.0 - f2 - zero * 3.0) / (2.0 * s * eps);
    let second = f2 - f1 * 2.0 + zero;
    let kink = second.amax() / eps > KINK_SLOPE_JUMP * column.amax().max(1.0);
    (column, kink)
}

pub(super) fn fd<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    eps: f64,
    extrapolate: bool,
) -> Result<StepJacobian, DiffError> {
    let nv = world.model.nv;
    let solve = |w: &World<f64>,
                 s: &State<f64>,
                 uu: &DVec<f64>|
     -> Result<(State<f64>, B::Structure), DiffError> {
        let (y, st) = b.solve_root(&w.problem(s, uu))?;
        let v = y.rows(0, nv).into_owned();
        let q = integrate_model(&w.model, &s.q, &v, w.dt).map_err(SimError::from)?;
        Ok((State { q, v }, st))
    };
    let (nominal, st0) = solve(world, state, u)?;
    let zero = tangent(&world.model, &nominal.q, &nominal);
    let mut jac = DMat::zeros(2 * nv, params.len());
    let mut changed = Vec::new();
    let mut jumped = Vec::new();
    for (c, p) in params.iter().enumerate() {
        let run = |d: f64| -> Result<(DVec<f64>, B::Structure), DiffError> {
            let (w, s, uu) = seeded(world, state, u, &[*p], &[d])?;
            let (next, st) = solve(&w, &s, &uu)?;
            Ok((tangent(&w.model, &nominal.q, &next), st))
        };
        // Outside the domain on one side (μ = 0): one-sided differences
        // (the central ones' refinements reach 2ε).
        if let Some(side) = one_sided(world, p, 2.0 * eps) {
            let (f1, s1) = run(side * eps)?;
            let (f2, s2) = run(2.0 * side * eps)?;
            let (column, kink) = one_sided_column(&zero, &f1, &f2, eps, side);
            if kink {
                changed.push((c, NonSmooth::Kink));
            } else if !B::same_structure(&s1, &st0) || !B::same_structure(&s2, &st0) {
                changed.push((c, NonSmooth::Structure));
            }
            jac.set_column(c, &column);
            continue;
        }
        let (plus, sp) = run(eps)?;
        let (minus, sm) = run(-eps)?;
        let central = (&plus - &minus) / (2.0 * eps);
        // forward − backward one-sided slopes = s(ε)/ε, s the second difference
        let s1 = &plus + &minus - &zero * 2.0;
        // The second difference at 2ε, for the kink test and for
        // Richardson's extrapolation `(4 D(ε) − D(2ε)) / 3` where the
        // second difference grows as a smooth map's (truncation
        // `O(ε⁴)`: a barrier's curvature at the scale of ε leaves the
        // central difference a truncation error `ε² f‴/6` above `fd`'s
        // tolerance). A failed solve there counts as not smooth.
        let pair =
            |h: f64| -> Result<(DVec<f64>, DVec<f64>), DiffError> { Ok((run(h)?.0, run(-h)?.0)) };
        let mut column = central.clone();
        let candidate = s1.amax() / eps > KINK_SLOPE_JUMP * central.amax().max(1.0);
        // the solves at ±2ε: for the kink and jump tests of a candidate,
        // and for the extrapolation
        // (`None`: not needed, or a solve failed there)
        let far = if candidate || extrapolate {
            pair(2.0 * eps).ok()
        } else {
            None
        };
        let kink = if !extrapolate {
            // Plain central differences: the solve at 2ε only for a kink
            // candidate (is the jump in the map's slope, or error of the
            // solves? see `second_difference_grows`).
            candidate
                && match &far {
                    Some((p2, m2)) => second_difference_grows(&s1, &(p2 + m2 - &zero * 2.0)),
                    None => true,
                }
        } else {
            extrapolated_kink(
                candidate,
                far.clone(),
                &s1,
                &zero,
                &central,
                eps,
                pair,
                &mut column,
            )
        };
        // A jump of the map itself (`jump_column`).
        let jump = jump_column(candidate && !kink, &far, &minus, &zero, &plus, eps);
        match jump {
            Some((one_sided, kinked)) => {
                column = one_sided;
                if kinked {
                    changed.push((c, NonSmooth::Kink));
                } else {
                    jumped.push(c);
                }
            }
            None if kink => changed.push((c, NonSmooth::Kink)),
            None if !B::same_structure(&sp, &st0) || !B::same_structure(&sm, &st0) => {
                changed.push((c, NonSmooth::Structure))
            }
            None => {}
        }
        jac.set_column(c, &column);
    }
    Ok(StepJacobian {
        next: nominal,
        jacobian: jac,
        nonsmooth: changed.iter().map(|c| c.0).collect(),
        nonsmooth_why: changed.iter().map(|c| c.1).collect(),
        one_sided: jumped,
    })
}

/// With Richardson's extrapolation (`fd`'s `extrapolate`): whether a kink
/// candidate's map has a kink within ±2ε (`far`: the solves at ±2ε, `None`
/// if not needed or failed; `s1`: the second difference at ε); where the
/// map is smooth, `column` becomes the extrapolated central difference.
#[allow(clippy::too_many_arguments)] // the loop state of `fd`
fn extrapolated_kink(
    candidate: bool,
    far: Option<(DVec<f64>, DVec<f64>)>,
    s1: &DVec<f64>,
    zero: &DVec<f64>,
    central: &DVec<f64>,
    eps: f64,
    pair: impl Fn(f64) -> Result<(DVec<f64>, DVec<f64>), DiffError>,
    column: &mut DVec<f64>,
) -> bool {
    match far.clone() {
        // (only a kink candidate needs the solve at 2ε)
        None => candidate,
        Some((p2, m2)) => {
            let s2 = &p2 + &m2 - zero * 2.0;
            let grows = second_difference_grows(s1, &s2);
            if quadratic_ratio(s1, &s2) {
                // curvature, not round-off, dominates within ±2ε
                // (`s(2ε) ≈ 4 s(ε)`): extrapolate (where round-off
                // dominates, extrapolating would amplify it by 4/3)
                let central2 = (&p2 - &m2) / (4.0 * eps);
                *column = (central * 4.0 - central2) / 3.0;
            }
            if !candidate || !grows {
                false
            } else {
                // Grows: a kink within ±2ε, or a smooth map's
                // curvature at the scale of ε (a barrier's)? The
                // second differences at (ε/2, ε, 2ε), else one
                // scale finer at (ε/4, ε/2, ε), must grow as a
                // smooth map's (`second_difference_is_quadratic`:
                // a kink's do at no scale); the column is then
                // extrapolated from the central differences at that
                // scale.
                match pair(0.5 * eps) {
                    Err(_) => true,
                    Ok((ph, mh)) => {
                        let sh = &ph + &mh - zero * 2.0;
                        let half = (&ph - &mh) / eps;
                        if second_difference_is_quadratic(&sh, s1, &s2) {
                            *column = (&half * 4.0 - central) / 3.0;
                            false
                        } else {
                            match pair(0.25 * eps) {
                                Ok((pq, mq))
                                    if second_difference_is_quadratic(
                                        &(&pq + &mq - zero * 2.0),
                                        &sh,
                                        s1,
                                    ) =>
                                {
                                    // Two Richardson levels: where
                                    // the scale of ε is not fine
                                    // enough, the `ε⁴` term of the
                                    // central differences is not
                                    // negligible either.
                                    let quarter = (&pq - &mq) / (0.5 * eps);
                                    let r_half = (&quarter * 4.0 - &half) / 3.0;
                                    let r_eps = (&half * 4.0 - central) / 3.0;
                                    *column = (r_half * 16.0 - r_eps) / 15.0;
                                    false
                                }
                                _ => true,
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A jump of the map itself (not of its slope: the second differences do
/// not grow, one difference holds it all), tested when `candidate` (a kink
/// candidate that is no kink): the column is the one-sided difference on
/// the nominal's side, with whether it is kinked there
/// (`one_sided_column`).
fn jump_column(
    candidate: bool,
    far: &Option<(DVec<f64>, DVec<f64>)>,
    minus: &DVec<f64>,
    zero: &DVec<f64>,
    plus: &DVec<f64>,
    eps: f64,
) -> Option<(DVec<f64>, bool)> {
    match far {
        Some((p2, m2)) if candidate => {
            let samples = [
                m2.clone(),
                minus.clone(),
                zero.clone(),
                plus.clone(),
                p2.clone(),
            ];
            smooth_side(&samples).map(|side| {
                let (near, far) = if side > 0.0 { (plus, p2) } else { (minus, m2) };
                one_sided_column(zero, near, far, eps, side)
            })
        }
        _ => None,
    }
}
