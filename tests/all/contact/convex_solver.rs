//! Tests of the `convex` backend's contact-space solver
//! (`contact::convex::solver`): closed forms, random problems, round
//! trips, the limit R, κ → 0 and the Jacobian against finite differences.

use dualsim::contact::convex::solver::*;
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

// -----------------------------------------------------------------------
// Random contact problems.
// -----------------------------------------------------------------------

/// One random contact problem.
struct Problem {
    a: DMatrix<f64>,
    c: DVector<f64>,
    mu: Vec<f64>,
    dims: Vec<usize>,
    r: DVector<f64>,
    kappa: f64,
    /// A strictly feasible point: `f_plus` in the cones, `A f_plus + c`
    /// with positive normal components.
    f_plus: DVector<f64>,
    /// Some body carries more than 6 contact rows (A is singular).
    rank_deficient: bool,
}

fn unit(rng: &mut Xoshiro256PlusPlus) -> [f64; 3] {
    loop {
        let x: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let n = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
        if n > 0.1 && n <= 1.0 {
            return x.map(|v| v / n);
        }
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// `A = J M⁻¹ Jᵀ` from random 3×6 contact Jacobians (rows: normal and two
/// tangents of a random frame at a random point, `[dᵀ, (p × d)ᵀ]`; 30 % of
/// the contacts between two bodies) on 1–5 bodies with random SPD 6×6
/// mass matrices (masses spread over 10^[-1, 1]). `c = v⁺ − A f⁺` for a
/// strictly feasible pair mixing pushing contacts (large `f⁺`, tiny
/// `v⁺_N`) and separating ones (tiny `f⁺`, large `v⁺_N`): the problem is
/// feasible and `c` has mixed signs. Velocities carry a random scale
/// 10^[-3, 3]; `R = 1e-3 diag(A) + 1e-12 max diag(A)`;
/// `κ = {1e-4, 1e-6, 1e-8}[index % 3] · ‖c‖∞² / max diag(A)`.
fn random_problem(rng: &mut Xoshiro256PlusPlus, index: usize) -> Problem {
    let nb = rng.random_range(1..=5usize);
    let n = rng.random_range(1..=20usize);
    let dims: Vec<usize> = (0..n)
        .map(|_| if rng.random_bool(0.6) { 3 } else { 1 })
        .collect();
    let mu: Vec<f64> = dims
        .iter()
        .map(|&d| {
            if d == 3 {
                rng.random_range(0.01..=2.0)
            } else {
                0.0
            }
        })
        .collect();
    let m: usize = dims.iter().sum();
    let mut minv = DMatrix::zeros(6 * nb, 6 * nb);
    for body in 0..nb {
        let q = DMatrix::from_fn(6, 6, |_, _| rng.random_range(-1.0..1.0));
        let mass = 10f64.powf(rng.random_range(-1.0..1.0));
        let mm = (&q * q.transpose() + DMatrix::identity(6, 6) * 0.2) * mass;
        let inv = mm.try_inverse().unwrap();
        minv.view_mut((6 * body, 6 * body), (6, 6)).copy_from(&inv);
    }
    let mut jac = DMatrix::zeros(m, 6 * nb);
    let mut rows_per_body = vec![0usize; nb];
    let mut o = 0;
    for &d in &dims {
        let normal = unit(rng);
        let t1 = {
            let x = cross(normal, unit(rng));
            let l = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
            x.map(|v| v / l)
        };
        let t2 = cross(normal, t1);
        let frame = [normal, t1, t2];
        let p: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
        let b1 = rng.random_range(0..nb);
        let b2 = if nb > 1 && rng.random_bool(0.3) {
            Some((b1 + rng.random_range(1..nb)) % nb)
        } else {
            None
        };
        for (body, sign) in std::iter::once((b1, 1.0)).chain(b2.map(|b| (b, -1.0))) {
            rows_per_body[body] += d;
            for (i, dir) in frame.iter().take(d).enumerate() {
                let w = cross(p, *dir);
                for j in 0..3 {
                    jac[(o + i, 6 * body + j)] = sign * dir[j];
                    jac[(o + i, 6 * body + 3 + j)] = sign * w[j];
                }
            }
        }
        o += d;
    }
    let a = &jac * &minv * jac.transpose();
    let a = (&a + a.transpose()) * 0.5;
    let vscale = 10f64.powf(rng.random_range(-3.0..3.0));
    let mut fp = DVector::zeros(m);
    let mut vp = DVector::zeros(m);
    let mut o = 0;
    for k in 0..n {
        let push = rng.random_bool(0.6);
        let fnorm = if push {
            rng.random_range(0.1..1.0)
        } else {
            1e-3
        };
        fp[o] = fnorm * vscale / a[(o, o)];
        vp[o] = vscale
            * if push {
                rng.random_range(1e-4..1e-2)
            } else {
                rng.random_range(0.1..1.0)
            };
        if dims[k] == 3 {
            let ang: f64 = rng.random_range(0.0..std::f64::consts::TAU);
            let rad = 0.9 * mu[k] * fp[o] * rng.random::<f64>();
            fp[o + 1] = rad * ang.cos();
            fp[o + 2] = rad * ang.sin();
            vp[o + 1] = vscale * rng.random_range(-1.0..1.0);
            vp[o + 2] = vscale * rng.random_range(-1.0..1.0);
        }
        o += dims[k];
    }
    let c = &vp - &a * &fp;
    let dmax = (0..m).map(|i| a[(i, i)]).fold(0.0_f64, f64::max);
    let r = DVector::from_fn(m, |i, _| 1e-3 * a[(i, i)] + 1e-12 * dmax);
    let kappa = [1e-4, 1e-6, 1e-8][index % 3] * inf_norm(&c).powi(2) / dmax;
    Problem {
        a,
        c,
        mu,
        dims,
        r,
        kappa,
        f_plus: fp,
        rank_deficient: rows_per_body.iter().any(|&rows| rows > 6),
    }
}

fn model<'a>(p: &'a Problem, a: &'a DMatrix<f64>) -> Model<'a> {
    Model::new(Some(a), p.c.as_slice(), &p.mu, &p.dims, p.r.as_slice())
}

/// `Σ_j |g_i(f + h_j e_j) − g_i(f)| / 4` with `h_j = 4 |f_j| ε` (4 to 8
/// ulps; one ulp can vanish inside a rounded product such as `μ f_N`):
/// how much `g_i` moves when `f` moves by its own rounding, estimated by
/// evaluating `g` (independent of the solver's analytic estimate).
fn ulp_noise(p: &Problem, a: &DMatrix<f64>, f: &DVector<f64>) -> DVector<f64> {
    let g = stationarity(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, f);
    let mut noise = DVector::zeros(f.len());
    for j in 0..f.len() {
        let mut fj = f.clone();
        fj[j] += 4.0 * f[j].abs().max(f64::MIN_POSITIVE) * f64::EPSILON;
        if model(p, a).feasible(fj.as_slice()) {
            let gj = stationarity(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, &fj);
            noise += (gj - &g).abs() * 0.25;
        }
    }
    // ... and when v = A f + c rounds: perturb c (normal rows).
    for (k, &o) in offsets(p.mu.len(), &p.dims, f.len()).iter().enumerate() {
        let _ = k;
        let mut c = p.c.clone();
        c[o] += 4.0 * p.c[o].abs() * f64::EPSILON;
        let mut q_c = c.clone();
        std::mem::swap(&mut q_c, &mut c);
        let gj = stationarity(a, &q_c, &p.mu, &p.dims, &p.r, p.kappa, f);
        if Model::new(Some(a), q_c.as_slice(), &p.mu, &p.dims, p.r.as_slice())
            .feasible(f.as_slice())
        {
            noise += (gj - &g).abs() * 0.25;
        }
    }
    noise
}

/// `Σ_j a_j b_j + c` in twice the working precision, rounded once
/// (Ogita, Rump & Oishi's Dot2).
fn dot2(a: impl Iterator<Item = f64>, b: impl Iterator<Item = f64>, c: f64) -> f64 {
    let (mut s, mut e) = (c, 0.0);
    for (x, y) in a.zip(b) {
        let p = x * y;
        let pe = x.mul_add(y, -p);
        let t = s + p;
        let z = t - s;
        e += (s - (t - z)) + (p - z) + pe;
        s = t;
    }
    s + e
}

/// The smallest barrier argument relative to its own rounding scale:
/// `min(v_N,k / (|A| |f| + |c|)_k, (μ f_N − ‖f_T‖) / (μ f_N))`. Below
/// about 1e-10 the problem is numerically ill-posed in f64: `κ / v_N` and
/// the cone terms carry ≳ 1e-6 relative rounding noise.
fn resolution(p: &Problem, a: &DMatrix<f64>, f: &DVector<f64>) -> f64 {
    let mdl = model(p, a);
    let v = mdl.normal_velocities(&mdl.a_times(f.as_slice()));
    let mut worst = f64::INFINITY;
    for (k, &o) in mdl.off.iter().enumerate() {
        let size: f64 = (0..f.len()).map(|j| (a[(o, j)] * f[j]).abs()).sum::<f64>() + p.c[o].abs();
        worst = worst.min(v[k] / size);
        if p.dims[k] == 3 {
            let mf = p.mu[k] * f[o];
            worst = worst.min((mf - f[o + 1].hypot(f[o + 2])) / mf);
        }
    }
    worst
}

/// Forward check: strictly feasible and every `|g_i| ≤ 1e-9 s_c +
/// 4 ulp_noise_i` (converged, or at the rounding floor: no f64 vector
/// next to `f` is meaningfully better). Returns `‖g‖∞ / s_c`.
#[track_caller]
fn check_forward(p: &Problem, a: &DMatrix<f64>, f: &DVector<f64>, what: &str) -> f64 {
    assert!(
        model(p, a).feasible(f.as_slice()),
        "{what}: not strictly feasible"
    );
    let g = stationarity(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, f);
    let noise = ulp_noise(p, a, f);
    // The velocity scale s_c = max(‖c‖∞, √(κ max(A_ii + R_i))) (= ‖c‖∞
    // unless c is tiny compared with the barrier's own velocity scale).
    let diag = (0..f.len())
        .map(|i| a[(i, i)] + p.r[i])
        .fold(0.0_f64, f64::max);
    let cn = inf_norm(&p.c).max((p.kappa * diag).sqrt());
    for i in 0..f.len() {
        assert!(
            g[i].abs() <= 1e-9 * cn + 4.0 * noise[i],
            "{what}: |g_{i}| = {:e} > 1e-9 s_c + 4·(one-ulp change {:e})",
            g[i].abs(),
            noise[i]
        );
    }
    inf_norm(&g) / cn
}

/// Round-trip check of `inverse(A, v)` with `v = A f + c` rounded once.
/// The inverse solves `h(x) = R x + r + ∇d_F(x) = 0`, `r = v + Aᵀ∇d_V(v)`,
/// and the forward solution satisfies `h(f) = g(f) ≈ 0` only up to its
/// residual, so `f' − f ≈ H⁻¹ h(f) − H⁻¹ h(f')` (`H = R + ∇²d_F`): require
/// `|f' − f| ≤ 1e-9 ‖f‖∞ + 4 (|H⁻¹ h(f)| + |H⁻¹ h(f')|)` componentwise, and
/// `|c' − c| ≤ 1e-9 ‖c‖∞ + 2 |A| |f' − f| + 8 ε (|A| |f| + |c|)`. Returns
/// the plain relative errors of f and c.
#[track_caller]
fn check_round_trip(p: &Problem, a: &DMatrix<f64>, f: &DVector<f64>, what: &str) -> (f64, f64) {
    let m = f.len();
    let v = DVector::from_fn(m, |i, _| {
        dot2(a.row(i).iter().copied(), f.iter().copied(), p.c[i])
    });
    let (fi, ci, _) = inverse(a, &v, &p.mu, &p.dims, &p.r, p.kappa, &Options::default())
        .unwrap_or_else(|e| panic!("{what}: inverse failed: {e}"));
    let r = &v + a.tr_mul(&barrier_gradient_v(&v, &p.dims, p.kappa).unwrap());
    let local = Model::new(None, r.as_slice(), &p.mu, &p.dims, p.r.as_slice());
    let correction = |x: &DVector<f64>| {
        let (h0, hb) = local.split(x.as_slice());
        let h = h0 + hb * p.kappa;
        local
            .jacobian(x.as_slice(), p.kappa)
            .lu()
            .solve(&h)
            .unwrap()
            .abs()
    };
    let slack = correction(f) + correction(&fi);
    let df = &fi - f;
    let fscale = inf_norm(f);
    for i in 0..m {
        let bound = 1e-9 * fscale + 4.0 * slack[i];
        assert!(
            df[i].abs() <= bound,
            "{what}: f_{i} off by {:e} > {bound:e}",
            df[i].abs()
        );
    }
    let aabs = a.abs();
    let dc_bound =
        aabs.clone() * df.abs() * 2.0 + (aabs * f.abs() + p.c.abs()) * (8.0 * f64::EPSILON);
    let cn = inf_norm(&p.c);
    for i in 0..m {
        let err = (ci[i] - p.c[i]).abs();
        assert!(
            err <= 1e-9 * cn + dc_bound[i],
            "{what}: c_{i} off by {err:e}"
        );
    }
    (inf_norm(&df) / fscale, inf_norm(&(&ci - &p.c)) / cn)
}

// -----------------------------------------------------------------------
// Closed forms.
// -----------------------------------------------------------------------

/// Scalar stationarity `(a + r) f + c − κ/f − a κ/(a f + c)`, increasing in
/// `f` on the feasible interval: bisection to the last bit.
fn scalar_root(a: f64, c: f64, r: f64, kappa: f64) -> f64 {
    let g = |f: f64| (a + r) * f + c - kappa / f - a * kappa / (a * f + c);
    let mut lo = (-c / a).max(0.0);
    let mut hi = lo + 1.0;
    while g(hi) < 0.0 {
        hi = lo + 2.0 * (hi - lo);
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if g(mid) < 0.0 || a * mid + c <= 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn closed_form_scalar_forward() {
    let a = DMatrix::from_element(1, 1, 1.0);
    let c = DVector::from_element(1, -1.0);
    let r = DVector::from_element(1, 1e-2);
    let (f, stats) = forward(&a, &c, &[0.0], &[1], &r, 1e-4, None, &Options::default()).unwrap();
    let v = f[0] - 1.0;
    println!("scalar: f = {:.10}, v = {v:.6e}, {stats:?}", f[0]);
    assert!((f[0] - 1.0061907).abs() < 5e-8, "f = {}", f[0]);
    assert!((v - 6.1907e-3).abs() < 5e-8, "v = {v}");
    assert!(stats.residual <= 1e-12);
    // ‖g‖ ≤ 1e-12 and ∂g/∂f ≈ 3.6 bound the error in f by 3e-13.
    let exact = scalar_root(1.0, -1.0, 1e-2, 1e-4);
    assert!(
        (f[0] - exact).abs() <= 3e-13,
        "f = {} vs bisection {exact}",
        f[0]
    );
    // Down to the rounding floor, f is the bisection root to a few ulps.
    let tight = Options {
        tolerance: 0.0,
        ..Options::default()
    };
    let (f, stats) = forward(&a, &c, &[0.0], &[1], &r, 1e-4, None, &tight).unwrap();
    println!("scalar at the rounding floor: f = {:.16}, {stats:?}", f[0]);
    assert!(
        (f[0] - exact).abs() <= 8.0 * f64::EPSILON,
        "f = {} vs {exact}",
        f[0]
    );
}

#[test]
fn closed_form_scalar_inverse() {
    let a = DMatrix::from_element(1, 1, 1.0);
    let c = DVector::from_element(1, -1.0);
    let r = DVector::from_element(1, 1e-2);
    // The inverse amplifies the forward residual by 1/(R + κ/f²) ≈ 100,
    // so for c to 1e-12 the forward solve goes down to its rounding floor.
    let tight = Options {
        tolerance: 0.0,
        ..Options::default()
    };
    let (f, _) = forward(&a, &c, &[0.0], &[1], &r, 1e-4, None, &tight).unwrap();
    let v = &a * &f + &c;
    let (fi, ci, stats) = inverse(&a, &v, &[0.0], &[1], &r, 1e-4, &Options::default()).unwrap();
    println!(
        "scalar inverse: f = {:.15}, c = {:.15}, {stats:?}",
        fi[0], ci[0]
    );
    assert!((fi[0] - f[0]).abs() <= 1e-12, "f {} vs {}", fi[0], f[0]);
    assert!((ci[0] + 1.0).abs() <= 1e-12, "c = {}", ci[0]);
    assert_eq!(stats.iterations, 0, "frictionless inverse is closed-form");
}

// -----------------------------------------------------------------------
// Random problems.
// -----------------------------------------------------------------------

#[test]
fn random_forward_and_round_trip() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let count = 300;
    let mut iterations = [0usize; 3];
    let mut plain_g = [0usize; 3];
    let mut plain_f = [0usize; 3];
    let mut plain_c = [0usize; 3];
    let mut worst = [[0.0_f64; 3]; 3];
    let mut deficient = 0;
    let mut frictional = 0;
    let mut max_iterations = 0;
    let mut unresolved = [0usize; 3];
    let mut beyond_f64 = 0;
    let mut total_iterations_failed = 0;
    for index in 0..count {
        let p = random_problem(&mut rng, index);
        let level = index % 3;
        deficient += p.rank_deficient as usize;
        frictional += p.dims.contains(&3) as usize;
        let what = format!("problem {index} (n = {}, κ level {level})", p.dims.len());
        let (f, stats) = match forward(
            &p.a,
            &p.c,
            &p.mu,
            &p.dims,
            &p.r,
            p.kappa,
            None,
            &Options::default(),
        ) {
            Ok(x) => x,
            Err(Failure::MaxIterations {
                iterations: its,
                residual,
            }) if level == 2 => {
                // At κ = 1e-8·scale a few solutions lie beyond f64: some
                // v_N or cone gap below 1000 ulps of its rounding, where
                // the solver stops at the floor and says so. The same
                // problem with 100 κ must then be solvable.
                println!(
                    "{what}: MaxIterations ({its} steps, ‖g‖∞ = {residual:.1e}) at the f64 floor"
                );
                beyond_f64 += 1;
                total_iterations_failed += its;
                let q = Problem {
                    kappa: 100.0 * p.kappa,
                    ..p
                };
                let (f, _) = forward(
                    &q.a,
                    &q.c,
                    &q.mu,
                    &q.dims,
                    &q.r,
                    q.kappa,
                    None,
                    &Options::default(),
                )
                .unwrap_or_else(|e| panic!("{what} with 100 κ: {e}"));
                check_forward(&q, &q.a, &f, &what);
                continue;
            }
            Err(e) => panic!("{what}: {e}"),
        };
        iterations[level] += stats.iterations;
        max_iterations = max_iterations.max(stats.iterations);
        let rel_g = check_forward(&p, &p.a, &f, &what);
        // Round trip only where f64 can resolve the solution (see
        // `resolution`); elsewhere the inverse must still succeed.
        let (rel_f, rel_c) = if resolution(&p, &p.a, &f) >= 1e-10 {
            check_round_trip(&p, &p.a, &f, &what)
        } else {
            unresolved[level] += 1;
            let v = &p.a * &f + &p.c;
            inverse(&p.a, &v, &p.mu, &p.dims, &p.r, p.kappa, &Options::default())
                .unwrap_or_else(|e| panic!("{what}: inverse failed: {e}"));
            (f64::NAN, f64::NAN)
        };
        for (k, x) in [rel_g, rel_f, rel_c].into_iter().enumerate() {
            if !x.is_nan() {
                worst[level][k] = worst[level][k].max(x);
            }
        }
        plain_g[level] += (rel_g <= 1e-9) as usize;
        plain_f[level] += (rel_f <= 1e-9) as usize;
        plain_c[level] += (rel_c <= 1e-9) as usize;
    }
    let total: usize = iterations.iter().sum::<usize>() + total_iterations_failed;
    println!(
        "{count} random forward solves ({deficient} rank-deficient, {frictional} with friction): \
         mean Newton iterations {:.2}, max {max_iterations}; {beyond_f64} reported MaxIterations \
         at the f64 floor (κ = 1e-8·scale only) and solve at 100 κ",
        total as f64 / count as f64
    );
    for level in 0..3 {
        let per = count / 3;
        println!(
            "  κ = {:.0e}·scale: mean iterations {:.2}; plain 1e-9 met by ‖g‖∞/‖c‖∞ {}/{per}, \
             round-trip f {}/{per}, c {}/{per} ({} below f64 resolution, not round-tripped); \
             worst {:.1e}, {:.1e}, {:.1e}",
            [1e-4, 1e-6, 1e-8][level],
            iterations[level] as f64 / per as f64,
            plain_g[level],
            plain_f[level],
            plain_c[level],
            unresolved[level],
            worst[level][0],
            worst[level][1],
            worst[level][2]
        );
    }
    assert!(deficient > 100, "too few rank-deficient cases: {deficient}");
    assert!(
        beyond_f64 <= 3,
        "{beyond_f64} problems beyond f64 at κ = 1e-8·scale"
    );
}

#[test]
fn converges_to_complementarity_as_r_and_kappa_vanish() {
    // Frictionless single contact, a = 2: the LCP solution is
    // f = max(0, −c/a), v = max(0, c).
    let a = DMatrix::from_element(1, 1, 2.0);
    for c0 in [-1.0, 1.0] {
        let c = DVector::from_element(1, c0);
        let exact = (-c0 / 2.0_f64).max(0.0);
        let mut last = f64::INFINITY;
        for j in 1..=6 {
            let r = DVector::from_element(1, 2.0 * 10f64.powi(-j));
            let kappa = 10f64.powi(-2 * j);
            let (f, _) =
                forward(&a, &c, &[0.0], &[1], &r, kappa, None, &Options::default()).unwrap();
            let err = (f[0] - exact).abs();
            println!(
                "c = {c0}: R = {:.0e}, κ = {kappa:.0e}: f = {:.12}, |f − f*| = {err:.2e}",
                r[0], f[0]
            );
            assert!(
                err < 0.5 * last,
                "error did not shrink: {err:e} after {last:e}"
            );
            last = err;
        }
        assert!(last < 1e-5, "final error {last:e}");
    }
}

#[test]
fn jacobian_matches_central_differences() {
    // At strictly feasible points (not solutions), symmetric and
    // non-symmetric A: central differences with h = 10^-3 … 10^-8 × the
    // contact's impulse scale, the best of the sweep within 1e-6 of the
    // column's size (a wrong entry would plateau above it at every h).
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut checked = 0;
    for index in 0..40 {
        let p = random_problem(&mut rng, index);
        let m = p.c.len();
        let skew = DMatrix::from_fn(m, m, |_, _| rng.random_range(-1.0..1.0));
        let a_ns = &p.a + skew * (0.1 * p.a.amax());
        let v_plus = &p.a * &p.f_plus + &p.c;
        for a in [&p.a, &a_ns] {
            // c such that f⁺ keeps its velocity v⁺ (strictly feasible).
            let p = Problem {
                c: &v_plus - a * &p.f_plus,
                a: a.clone(),
                mu: p.mu.clone(),
                dims: p.dims.clone(),
                r: p.r.clone(),
                f_plus: p.f_plus.clone(),
                ..p
            };
            let a = &p.a;
            let f = p.f_plus.clone();
            assert!(model(&p, a).feasible(f.as_slice()));
            let jac = stationarity_jacobian(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, &f);
            let off = offsets(p.mu.len(), &p.dims, m);
            for (k, &o) in off.iter().enumerate() {
                let scale = f.as_slice()[o..o + p.dims[k]]
                    .iter()
                    .fold(0.0_f64, |x, y| x.max(y.abs()));
                for j in o..o + p.dims[k] {
                    let col = jac.column(j);
                    // Best over the step sweep: truncation O(h²) falls and
                    // rounding O(ε ‖terms of g‖ / h) grows as h shrinks.
                    let err = (3..=8)
                        .map(|e| {
                            let h = 10f64.powi(-e) * scale;
                            let (mut fp, mut fm) = (f.clone(), f.clone());
                            fp[j] += h;
                            fm[j] -= h;
                            let gp = stationarity(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, &fp);
                            let gm = stationarity(a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, &fm);
                            inf_norm(&((gp - gm) / (2.0 * h) - col))
                        })
                        .fold(f64::INFINITY, f64::min);
                    assert!(
                        err <= 1e-6 * col.amax(),
                        "problem {index}, column {j}: |FD − J| = {err:e}, |J| = {:e}",
                        col.amax()
                    );
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 80);
}

#[test]
fn stationarity_uses_a_transpose() {
    // g = (A + R) f + c + ∇d_F + Aᵀ ∇d_V written out by hand for a
    // non-symmetric 2-contact A.
    let a = DMatrix::from_row_slice(
        4,
        4,
        &[
            2.0, 0.3, -0.1, 0.5, //
            0.1, 1.5, 0.2, 0.0, //
            -0.4, 0.0, 1.8, 0.1, //
            0.7, 0.2, 0.0, 1.0,
        ],
    );
    let c = DVector::from_row_slice(&[-1.0, 0.2, 0.3, 0.4]);
    let (mu, dims) = ([0.0, 0.8], [1, 3]);
    let r = DVector::from_element(4, 0.01);
    let f = DVector::from_row_slice(&[1.0, 0.9, 0.1, -0.2]);
    let kappa = 1e-2;
    let v = &a * &f + &c;
    let dv = DVector::from_row_slice(&[-kappa / v[0], -kappa / v[1], 0.0, 0.0]);
    let s = 0.64 * 0.81 - 0.01 - 0.04;
    let df = DVector::from_row_slice(&[
        -kappa / 1.0,
        -kappa * (1.0 / 0.9 + 2.0 * 0.64 * 0.9 / s),
        2.0 * kappa * 0.1 / s,
        2.0 * kappa * -0.2 / s,
    ]);
    let expected = &a * &f + r.component_mul(&f) + &c + df + a.transpose() * dv;
    let g = stationarity(&a, &c, &mu, &dims, &r, kappa, &f);
    assert!(inf_norm(&(&g - &expected)) <= 1e-14, "{g} vs {expected}");
}

#[test]
fn generic_barrier_gradients_match_f64() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for _ in 0..200 {
        let n = rng.random_range(1..=6usize);
        let dims: Vec<usize> = (0..n)
            .map(|_| if rng.random_bool(0.5) { 3 } else { 1 })
            .collect();
        let mu: Vec<f64> = dims
            .iter()
            .map(|&d| {
                if d == 3 {
                    rng.random_range(0.05..2.0)
                } else {
                    0.0
                }
            })
            .collect();
        let m: usize = dims.iter().sum();
        let mut f = DVector::zeros(m);
        let mut o = 0;
        for (k, &d) in dims.iter().enumerate() {
            f[o] = 10f64.powf(rng.random_range(-3.0..3.0));
            if d == 3 {
                let (ang, rad): (f64, f64) =
                    (rng.random_range(0.0..6.3), 0.95 * rng.random::<f64>());
                f[o + 1] = mu[k] * f[o] * rad * ang.cos();
                f[o + 2] = mu[k] * f[o] * rad * ang.sin();
            }
            o += d;
        }
        let v = DVector::from_fn(m, |_, _| 10f64.powf(rng.random_range(-3.0..3.0)));
        let kappa = 10f64.powf(rng.random_range(-8.0..0.0));
        let gf = barrier_gradient_f(&f, &mu, &dims, kappa);
        let gf_generic = barrier_gradient_f_generic(f.as_slice(), &mu, &dims, kappa);
        let gv = barrier_gradient_v(&v, &dims, kappa).unwrap();
        let gv_generic = barrier_gradient_v_generic(v.as_slice(), &dims, kappa);
        for i in 0..m {
            assert!(
                (gf[i] - gf_generic[i]).abs() <= 1e-12 * gf.amax(),
                "∇d_F[{i}]"
            );
            assert_eq!(gv[i], gv_generic[i], "∇d_V[{i}]");
        }
        let mut o = 0;
        for &d in &dims {
            assert!(gv[o] < 0.0 && (1..d).all(|t| gv[o + t] == 0.0));
            o += d;
        }
        // The same code in another scalar type.
        let f32s: Vec<f32> = f.iter().map(|&x| x as f32).collect();
        let mu32: Vec<f32> = mu.iter().map(|&x| x as f32).collect();
        let g32 = barrier_gradient_f_generic(&f32s, &mu32, &dims, kappa as f32);
        for i in 0..m {
            assert!(
                (g32[i] as f64 - gf[i]).abs() <= 1e-3 * gf.amax(),
                "f32 ∇d_F[{i}]"
            );
        }
    }
}

#[test]
fn infeasible_problems_are_reported() {
    let opts = Options::default();
    let r2 = DVector::from_element(2, 1e-3);
    // Two opposing frictionless contacts on a 1-DOF body, both penetrating.
    let a = DMatrix::from_row_slice(2, 2, &[1.0, -1.0, -1.0, 1.0]);
    let c = DVector::from_row_slice(&[-1.0, -1.0]);
    assert_eq!(
        forward(&a, &c, &[0.0, 0.0], &[1, 1], &r2, 1e-6, None, &opts),
        Err(Failure::Infeasible)
    );
    // Zero margin: v₁ + v₂ = 0 for every f.
    let c = DVector::from_row_slice(&[-1.0, 1.0]);
    assert_eq!(
        forward(&a, &c, &[0.0, 0.0], &[1, 1], &r2, 1e-6, None, &opts),
        Err(Failure::Infeasible)
    );
    // Frictional: a point mass squeezed between two opposing contacts.
    let jac = DMatrix::from_row_slice(
        6,
        3,
        &[
            0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, //
            0.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ],
    );
    let a = &jac * jac.transpose() * 0.5;
    let c = DVector::from_row_slice(&[-1.0, 0.3, 0.0, -0.5, 0.0, 0.2]);
    let r6 = DVector::from_element(6, 1e-3);
    let res = forward(&a, &c, &[0.5, 0.5], &[3, 3], &r6, 1e-6, None, &opts);
    assert_eq!(res, Err(Failure::Infeasible));
    // The same contacts separating: feasible.
    let c = DVector::from_row_slice(&[1.0, 0.3, 0.0, -0.5, 0.0, 0.2]);
    let (f, _) = forward(&a, &c, &[0.5, 0.5], &[3, 3], &r6, 1e-6, None, &opts).unwrap();
    assert!(f[0] < 1e-5 && f[3] > 0.0);
    // Inverse: v_N ≤ 0 is infeasible.
    let v = DVector::from_row_slice(&[0.0, 1.0]);
    assert_eq!(
        inverse(
            &DMatrix::identity(2, 2),
            &v,
            &[0.0, 0.0],
            &[1, 1],
            &r2,
            1e-6,
            &opts
        )
        .map(|x| x.2),
        Err(Failure::Infeasible)
    );
}

#[test]
fn phase_one_finds_a_start_the_guess_misses() {
    // A lever: pushing contact 1 drives contact 2 in. The cold start
    // (push each contact by its own velocity scale) is infeasible; a
    // strictly feasible point needs f ≈ (11, 11).
    let a = DMatrix::from_row_slice(2, 2, &[1.0, -0.9, -0.9, 1.0]);
    let c = DVector::from_row_slice(&[-1.0, 0.5]);
    let r = DVector::from_element(2, 1e-3);
    let (f, stats) = forward(
        &a,
        &c,
        &[0.0, 0.0],
        &[1, 1],
        &r,
        1e-8,
        None,
        &Options::default(),
    )
    .unwrap();
    let v = &a * &f + &c;
    println!(
        "lever: f = {:?}, v = {:?}, {stats:?}",
        f.as_slice(),
        v.as_slice()
    );
    assert!(v.iter().all(|&x| x > 0.0) && f.iter().all(|&x| x > 0.0));
    let p = Problem {
        a,
        c,
        mu: vec![0.0, 0.0],
        dims: vec![1, 1],
        r,
        kappa: 1e-8,
        f_plus: f.clone(),
        rank_deficient: false,
    };
    check_forward(&p, &p.a, &f, "lever");
}

#[test]
fn warm_start_from_a_neighbouring_problem() {
    // The next step's problem: c moved by `size` × ‖c‖∞ (random signs).
    // A warm start is only used when it is strictly feasible for the new
    // problem; with small κ the active contacts' v_N are tiny, so that
    // needs small changes of c.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let count = 60;
    for size in [1e-2, 1e-6] {
        let (mut cold, mut warm, mut used) = (0, 0, 0);
        for index in 0..count {
            let p = random_problem(&mut rng, index);
            let opts = Options::default();
            let (f0, _) = forward(&p.a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, None, &opts).unwrap();
            let cn = inf_norm(&p.c);
            let c = DVector::from_fn(p.c.len(), |i, _| {
                p.c[i] + size * cn * rng.random_range(-1.0..1.0)
            });
            let q = Problem { c, ..p };
            let what = format!("warm problem {index} (change {size:e})");
            let (fc, sc) = match forward(&q.a, &q.c, &q.mu, &q.dims, &q.r, q.kappa, None, &opts) {
                Ok(x) => x,
                Err(Failure::Infeasible) => continue, // the change can make it infeasible
                Err(e) => panic!("{what}: cold: {e}"),
            };
            let (fw, sw) = forward(&q.a, &q.c, &q.mu, &q.dims, &q.r, q.kappa, Some(&f0), &opts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_forward(&q, &q.a, &fw, &what);
            check_forward(&q, &q.a, &fc, &what);
            if model(&q, &q.a).feasible(f0.as_slice()) {
                used += 1;
                cold += sc.iterations;
                warm += sw.iterations;
            }
        }
        let used_f = used.max(1) as f64;
        println!(
            "warm start, c changed by {size:e}·‖c‖∞: {used}/{count} warm starts strictly feasible; \
             on those, mean iterations cold {:.2}, warm {:.2}",
            cold as f64 / used_f,
            warm as f64 / used_f
        );
        assert!(used > 0 && warm < cold, "warm starts did not help");
    }
}

#[test]
fn non_symmetric_a() {
    // A slightly non-symmetric A (rounding-level as assembled in floating
    // point, up to 1e-6 relative): forward converges, inverse inverts it
    // (Aᵀ on both sides).
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(13);
    for index in 0..60 {
        let mut p = random_problem(&mut rng, index);
        let m = p.c.len();
        let level = [1e-15, 1e-9, 1e-6][index % 3];
        // Skew-symmetric noise: the symmetric part of A stays PSD (a
        // symmetric perturbation of a singular A would make it indefinite,
        // which is outside the model).
        let noise = DMatrix::from_fn(m, m, |_, _| rng.random_range(-1.0..1.0));
        let noise = &noise - noise.transpose();
        let v_plus = &p.a * &p.f_plus + &p.c;
        p.a = &p.a + noise * (level * p.a.amax());
        p.c = &v_plus - &p.a * &p.f_plus; // keeps f⁺ strictly feasible
        let what = format!("non-symmetric problem {index} (asymmetry {level:e})");
        let (f, _) = match forward(
            &p.a,
            &p.c,
            &p.mu,
            &p.dims,
            &p.r,
            p.kappa,
            None,
            &Options::default(),
        ) {
            Ok(x) => x,
            Err(e) => panic!("{what}: {e}"),
        };
        check_forward(&p, &p.a, &f, &what);
        if resolution(&p, &p.a, &f) >= 1e-10 {
            check_round_trip(&p, &p.a, &f, &what);
        }
    }
}

#[test]
fn failures_are_typed() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
    let p = random_problem(&mut rng, 2);
    // One Newton step: the barrier's stationarity is nonlinear, so no
    // solver meets the tolerance in one step from its start (the failure
    // is forced by construction, not pinned on the solver's progress).
    let few = Options {
        max_iterations: 1,
        ..Options::default()
    };
    match forward(&p.a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, None, &few) {
        // (∞ when the budget runs out before a feasible point is found)
        Err(Failure::MaxIterations {
            iterations,
            residual,
        }) => {
            assert_eq!(iterations, 1);
            assert!(residual > 0.0);
        }
        other => panic!("expected MaxIterations, got {other:?}"),
    }
    let mut c = p.c.clone();
    c[0] = f64::NAN;
    let opts = Options::default();
    assert_eq!(
        forward(&p.a, &c, &p.mu, &p.dims, &p.r, p.kappa, None, &opts),
        Err(Failure::NonFinite)
    );
    let mut a = p.a.clone();
    a[(0, 0)] = f64::INFINITY;
    assert_eq!(
        forward(&a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, None, &opts),
        Err(Failure::NonFinite)
    );
    let v = DVector::from_element(p.c.len(), f64::NAN);
    assert_eq!(
        inverse(&p.a, &v, &p.mu, &p.dims, &p.r, p.kappa, &opts).map(|x| x.2),
        Err(Failure::NonFinite)
    );
    // A warm start that is not strictly feasible is ignored, not fatal.
    let bad = DVector::from_element(p.c.len(), -1.0);
    assert!(forward(&p.a, &p.c, &p.mu, &p.dims, &p.r, p.kappa, Some(&bad), &opts).is_ok());
    for (e, word) in [
        (Failure::Infeasible, "infeasible"),
        (
            Failure::MaxIterations {
                iterations: 3,
                residual: 1.0,
            },
            "3 Newton steps",
        ),
        (Failure::NonFinite, "non-finite"),
    ] {
        let text = e.to_string();
        assert!(text.contains(word), "{text}");
        let _: &dyn std::error::Error = &e;
    }
    // No contacts: nothing to solve.
    let (f, stats) = forward(
        &DMatrix::zeros(0, 0),
        &DVector::zeros(0),
        &[],
        &[],
        &DVector::zeros(0),
        1e-6,
        None,
        &opts,
    )
    .unwrap();
    assert_eq!((f.len(), stats.iterations), (0, 0));
}

/// A malformed layout is a typed error naming what is wrong, not a panic.
#[test]
fn malformed_layout_is_a_typed_error() {
    let v = DVector::from_element(4, 1.0);
    let e = barrier_gradient_v(&v, &[1, 2], 1.0).unwrap_err();
    assert_eq!(e, LayoutError::Dim { contact: 1, dim: 2 });
    assert!(e.to_string().contains("dims[1] = 2"), "{e}");
    assert_eq!(
        barrier_gradient_v(&v, &[3], 1.0).unwrap_err(),
        LayoutError::Length { sum: 3, len: 4 }
    );
    assert_eq!(
        try_offsets(1, &[1, 3], 4).unwrap_err(),
        LayoutError::Contacts { mu: 1, dims: 2 }
    );
    // and a well-formed one is accepted: −κ / v_N in the normal rows only
    let g = barrier_gradient_v(&v, &[1, 3], 2.0).unwrap();
    assert_eq!(g.as_slice(), &[-2.0, -2.0, 0.0, 0.0]);
}

#[test]
fn edge_cases_of_scale() {
    let opts = Options::default();
    let a = DMatrix::from_row_slice(
        4,
        4,
        &[
            2.0, 0.1, 0.0, 0.3, //
            0.1, 1.0, 0.2, 0.0, //
            0.0, 0.2, 1.5, 0.1, //
            0.3, 0.0, 0.1, 1.2,
        ],
    );
    let r = DVector::from_element(4, 1e-3);
    let (mu, dims) = ([0.5, 0.7], [3, 1]);
    // c = 0: the scale comes from √(κ A_ii); a large κ (above the
    // problem's natural energy); a frictionless row with μ > 0 (ignored).
    for (c, kappa) in [
        (DVector::zeros(4), 1e-6),
        (DVector::from_row_slice(&[-1.0, 0.5, 0.0, 0.2]), 1e3),
        (DVector::from_row_slice(&[-1e-9, 5e-10, 0.0, 2e-10]), 1e-24),
    ] {
        let (f, stats) = forward(&a, &c, &mu, &dims, &r, kappa, None, &opts)
            .unwrap_or_else(|e| panic!("c = {c:?}, κ = {kappa}: {e}"));
        let p = Problem {
            a: a.clone(),
            c: c.clone(),
            mu: mu.to_vec(),
            dims: dims.to_vec(),
            r: r.clone(),
            kappa,
            f_plus: f.clone(),
            rank_deficient: false,
        };
        check_forward(&p, &a, &f, &format!("κ = {kappa}"));
        check_round_trip(&p, &a, &f, &format!("κ = {kappa}"));
        println!("c = {:?}, κ = {kappa:e}: {stats:?}", c.as_slice());
    }
}
