//! `dualsim::linalg`: the SVD every pseudo-inverse of the library goes
//! through ([`Svd`], [`BlockSvd`]) against closed forms.

use dualsim::linalg::{BlockSvd, Svd};
use dualsim::math::{DMat, DVec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The residual Jacobian `∂r/∂y` of a free ball (mass `m`, radius `r`,
/// inertia `i`) over a frictionless plane, one contact at the bottom of
/// the ball, inactive (its rows are `f = 0`): `[[M, −Wᵀ], [0, I]]`, with
/// the off-diagonal world-inertia round-off `tiny` that a ball carries
/// after an impact (order 1e-66: the square of a 1e-33 quaternion part).
/// Rows and columns: `v` (linear, angular), then `f` (normal, t1, t2).
fn ball_over_plane(m: f64, r: f64, i: f64, tiny: f64) -> DMat<f64> {
    let mut j = DMat::zeros(9, 9);
    for d in 0..3 {
        j[(d, d)] = m;
        j[(3 + d, 3 + d)] = i;
        j[(6 + d, 6 + d)] = 1.0;
    }
    j[(3, 4)] = tiny;
    j[(4, 3)] = tiny;
    j[(3, 5)] = 1.3 * tiny;
    j[(5, 3)] = 1.3 * tiny;
    j[(4, 5)] = -1.2 * tiny;
    j[(5, 4)] = -1.2 * tiny;
    // −Wᵀ: the normal (0, 0, 1) at the contact point (0, 0, −r); the
    // tangents t1 = (0, −1, 0)… as the contact frame orders them: only
    // the pattern matters here, and that a tangent row reaches the spin
    // through the lever arm r.
    j[(2, 6)] = -1.0;
    j[(1, 7)] = 1.0;
    j[(3, 7)] = r;
    j[(0, 8)] = -1.0;
    j[(4, 8)] = r;
    j
}

/// The exact inverse of [`ball_over_plane`] with `tiny = 0`:
/// `[[M⁻¹, M⁻¹Wᵀ], [0, I]]` (the tiny entries change it by O(tiny)).
fn ball_over_plane_inverse(m: f64, r: f64, i: f64) -> DMat<f64> {
    let a = ball_over_plane(m, r, i, 0.0);
    let mut inv = DMat::zeros(9, 9);
    for d in 0..3 {
        inv[(d, d)] = 1.0 / m;
        inv[(3 + d, 3 + d)] = 1.0 / i;
        inv[(6 + d, 6 + d)] = 1.0;
    }
    // M⁻¹ Wᵀ = −M⁻¹ (the −Wᵀ block)
    for row in 0..6 {
        for c in 6..9 {
            inv[(row, c)] = -a[(row, c)] / a[(row, row)];
        }
    }
    inv
}

fn reconstruction_miss(a: &DMat<f64>, svd: &Svd) -> f64 {
    let mut us = svd.u.clone();
    for (k, mut col) in us.column_iter_mut().enumerate() {
        col *= svd.singular_values[k];
    }
    (&us * &svd.v_t - a).amax()
}

/// The case of issue 43's randomized test (#21: a frictionless ball that
/// leaves the plane in the step of its impact), whose derivatives by
/// every exact method were off by 2.8e-4 (a spin `∂ω_y/∂v_x = 0.19` from
/// nothing) because nalgebra's SVD of this matrix missed it by 1.1e-3:
/// its pseudo-inverse must be the inverse, to round-off times the
/// condition number (~1e3 here: masses 0.58 against inertias 1.9e-3), so
/// 1e-10 relative.
#[test]
fn pseudo_inverse_of_a_ball_jacobian_with_tiny_inertia_round_off_is_its_inverse() {
    let (m, r) = (0.5840898550511904, 0.09083080033648853);
    let i = 0.4 * m * r * r;
    let want = ball_over_plane_inverse(m, r, i);
    for tiny in [0.0, 4.994525865323299e-66, 1e-40, 1e-300] {
        let j = ball_over_plane(m, r, i, tiny);
        for (name, pinv) in [
            ("Svd", {
                let svd = Svd::new(&j);
                let smax = svd.max_singular_value();
                assert!(
                    reconstruction_miss(&j, &svd) <= 1e-14 * smax,
                    "{tiny:e}: U S Vᵀ misses by {:e}",
                    reconstruction_miss(&j, &svd)
                );
                svd.pseudo_inverse(1e-12 * smax).unwrap()
            }),
            ("BlockSvd", {
                let b = BlockSvd::new(&j);
                let smax = b.max_singular_value();
                assert_eq!(b.null_part(1e-12 * smax, 6), (0, 0.0), "{tiny:e}");
                b.pseudo_inverse(1e-12 * smax).unwrap()
            }),
        ] {
            let err = (&pinv - &want).amax() / want.amax();
            println!(
                "tiny = {tiny:e}: {name} pseudo-inverse off the closed-form inverse by {err:.1e} (relative)"
            );
            assert!(err < 1e-10, "{name}, tiny = {tiny:e}: {err:e}");
        }
    }
}

/// Random matrices with a spread of scales (entries of 1, of 1e-66 and
/// exact zeros), square and rectangular, full rank and rank-deficient:
/// `U S Vᵀ` reconstructs `A` to `1e-14 max(m, n) max|A|`, the singular
/// values of a constructed rank-`k` matrix past `k` are below
/// `1e-13 σ_max`, and the pseudo-inverse meets the Moore–Penrose
/// conditions `A P A = A` and `P A P = P` to round-off (relative to the
/// condition number of the kept part).
#[test]
fn svd_reconstructs_random_matrices_and_its_pseudo_inverse_is_moore_penrose() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1368);
    let mut worst = (0.0f64, 0.0f64);
    for case in 0..300 {
        let (m, n) = (rng.random_range(1..12), rng.random_range(1..12));
        let entry = |rng: &mut Xoshiro256PlusPlus| match rng.random_range(0..4) {
            0 => 0.0,
            1 => rng.random_range(-1.0..1.0) * 1e-66,
            _ => rng.random_range(-1.0..1.0),
        };
        let full = DMat::from_fn(m, n, |_, _| entry(&mut rng));
        // every third case: rank k < min(m, n) by a product
        let k = m.min(n);
        let (a, rank) = if case % 3 == 0 && k > 1 {
            let k = rng.random_range(1..k);
            let l = DMat::from_fn(m, k, |_, _| rng.random_range(-1.0..1.0));
            let rr = DMat::from_fn(k, n, |_, _| rng.random_range(-1.0..1.0));
            (l * rr, Some(k))
        } else {
            (full, None)
        };
        let svd = Svd::new(&a);
        let smax = svd.max_singular_value();
        assert!(smax.is_finite(), "case {case}: the decomposition failed");
        let scale = a.amax().max(f64::MIN_POSITIVE);
        let miss = reconstruction_miss(&a, &svd) / scale;
        worst.0 = worst.0.max(miss);
        assert!(
            miss <= 1e-14 * m.max(n) as f64,
            "case {case} ({m} × {n}): {miss:e}"
        );
        let s = &svd.singular_values;
        assert!(s.iter().zip(s.iter().skip(1)).all(|(a, b)| a >= b), "{s}");
        if let Some(k) = rank {
            assert!(s[k] <= 1e-13 * smax, "case {case}: rank {k}, {s}");
        }
        if smax == 0.0 {
            continue;
        }
        let cut = 1e-11 * smax;
        let p = svd.pseudo_inverse(cut).unwrap();
        let smin = s.iter().copied().filter(|&x| x > cut).fold(smax, f64::min);
        let cond = smax / smin;
        let e1 = (&a * &p * &a - &a).amax() / scale;
        let e2 = (&p * &a * &p - &p).amax() / p.amax();
        worst.1 = worst.1.max(e1.max(e2) / cond);
        assert!(
            e1 <= 1e-13 * cond && e2 <= 1e-13 * cond,
            "case {case}: {e1:e} {e2:e}, condition {cond:e}"
        );
        // the minimum-norm solve is the pseudo-inverse's
        let b = DVec::from_fn(m, |_, _| rng.random_range(-1.0..1.0));
        let x = svd.solve(&b, cut).unwrap();
        assert!((&x - &p * &b).amax() <= 1e-12 * cond * b.amax() * p.amax().max(1.0));
    }
    println!(
        "300 random matrices: worst reconstruction {:.1e} (relative to max|A|), worst Moore–Penrose residual {:.1e} (relative, per unit of condition number)",
        worst.0, worst.1
    );
}

/// A NaN or an infinity is refused, not decomposed: NaN singular values
/// (which every caller refuses as a singular system), no pseudo-inverse.
#[test]
fn svd_of_a_non_finite_matrix_is_refused() {
    for bad in [f64::NAN, f64::INFINITY] {
        let mut a = DMat::identity(3, 3);
        a[(1, 2)] = bad;
        let svd = Svd::new(&a);
        assert!(svd.max_singular_value().is_nan());
        assert!(svd.pseudo_inverse(0.0).is_none());
        assert!(svd.solve(&DVec::zeros(3), 0.0).is_none());
        assert!(BlockSvd::new(&a).max_singular_value().is_nan());
    }
}
