use super::*;

pub(super) fn v3<T: Scalar>(u: &DVec<T>, i: usize) -> Vec3<T> {
    Vec3::new(u[i], u[i + 1], u[i + 2])
}

/// Smallest relative distance `(x₀ − ‖x₁‖) / x₀` to the boundary of `Q³`
/// at which a pair is Nesterov–Todd scaled.
pub(super) const NT_MARGIN: f64 = 1e-10;

/// The Nesterov–Todd scaling `(W, W⁻¹, λ)` of a friction cone pair, or
/// `None` when `z` or `s` is within [`NT_MARGIN`] of the cone boundary
/// (relative) or the scaling is not finite. At small ρ a sliding contact
/// has both `z` and `s` this close to the boundary: `det = x₀² − ‖x₁‖²`
/// then cancels to round-off (or below zero) and the scaling is NaN, which
/// made the whole direction NaN and the step stall at the iteration cap.
/// Such a pair keeps the plain linearization `Arw(s) dz + Arw(z) ds` for
/// the iteration (decided on primal values).
pub(super) fn nt_safe(
    z: &Vec3<f64>,
    s: &Vec3<f64>,
) -> Option<(Matrix3<f64>, Matrix3<f64>, Vec3<f64>)> {
    let rel = |x: &Vec3<f64>| {
        (x[0] - (x[1] * x[1] + x[2] * x[2]).sqrt()) / x[0].abs().max(f64::MIN_POSITIVE)
    };
    if !(rel(z) > NT_MARGIN && rel(s) > NT_MARGIN) {
        return None;
    }
    let (w, winv, lambda) = nt_scaling(z, s);
    let finite = w
        .iter()
        .chain(winv.iter())
        .chain(lambda.iter())
        .all(|x| x.is_finite());
    finite.then_some((w, winv, lambda))
}

/// `j` = `plain` with the friction cone rows replaced by their
/// Nesterov–Todd scaled linearization `Arw(λ)(W⁻¹ dz + W ds)` (where
/// [`nt_safe`] allows it); `false` (and `j` untouched) when no row is
/// scaled.
pub(super) fn scale_rows(
    isl_cones: &[ConeBlock],
    plain: &DMat<f64>,
    j: &mut DMat<f64>,
    u: &DVec<f64>,
) -> bool {
    let mut copied = false;
    for c in isl_cones.iter().filter(|c| c.nt) {
        let Some((w, winv, lambda)) = nt_safe(&v3(u, c.z), &v3(u, c.s)) else {
            continue;
        };
        if !copied {
            if j.shape() != plain.shape() {
                *j = plain.clone();
            } else {
                j.as_mut_slice().copy_from_slice(plain.as_slice());
            }
            copied = true;
        }
        let al = arrow(&lambda);
        for r in 0..3 {
            j.row_mut(c.row + r).fill(0.0);
        }
        j.view_mut((c.row, c.z), (3, 3)).copy_from(&(al * winv));
        j.view_mut((c.row, c.s), (3, 3)).copy_from(&(al * w));
    }
    copied
}

/// Right-hand side of a direction: `r_κ` with the complementarity rows
/// replaced (NT rows: `λ∘λ − κe`, where [`nt_safe`] allows the scaling,
/// as in [`scale_rows`]) and the Mehrotra term of `corr` added.
pub(super) fn direction_rhs<T: Scalar>(
    cones: &[ConeBlock],
    r0: &DVec<T>,
    u: &DVec<T>,
    kappa: f64,
    corr: Option<&DVec<f64>>,
    nt: bool,
) -> DVec<T> {
    let mut r = r0.clone();
    let k = T::from_re(kappa);
    let ur = u.map(|x| x.re());
    for c in cones {
        r[c.row] -= k;
        let scaled = if c.nt && nt {
            nt_safe(&v3(&ur, c.z), &v3(&ur, c.s))
        } else {
            None
        };
        if let Some((w, winv, _)) = scaled {
            let (_, _, lambda) = nt_scaling(&v3(u, c.z), &v3(u, c.s));
            let mut l = jordan(&lambda, &lambda);
            l[0] -= k;
            if let Some(d) = corr {
                let add = jordan(&(winv * v3(d, c.z)), &(w * v3(d, c.s)));
                l += add.map(T::from_re);
            }
            r.fixed_rows_mut::<3>(c.row).copy_from(&l);
        } else if let Some(d) = corr {
            if c.dim == 1 {
                r[c.row] += T::from_re(d[c.z] * d[c.s]);
            } else {
                let lay = ConeLayout {
                    n_orthant: 0,
                    soc: vec![c.dim],
                };
                let dz = DVec::from_fn(c.dim, |i, _| d[c.z + i]);
                let ds = DVec::from_fn(c.dim, |i, _| d[c.s + i]);
                let add = lay.jordan(&dz, &ds);
                for i in 0..c.dim {
                    r[c.row + i] += T::from_re(add[i]);
                }
            }
        }
    }
    r
}
