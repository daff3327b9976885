//! Tests of the `implicit_ncp` backend's contact-space solver
//! (`contact::implicit_ncp::solver`): closed forms, random problems with
//! redundant contacts, the Jacobian against finite differences.

use dualsim::contact::implicit_ncp::solver::*;
use nalgebra::{DMatrix, DVector, Vector3};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

type Rng64 = Xoshiro256PlusPlus;

const METHODS: [Method; 2] = [Method::LevenbergMarquardt, Method::Dogleg];

fn rng(seed: u64) -> Rng64 {
    Rng64::seed_from_u64(seed)
}

fn uniform_vector(rng: &mut Rng64, scale: f64) -> Vector3<f64> {
    Vector3::from_fn(|_, _| rng.random_range(-scale..=scale))
}

fn unit_vector(rng: &mut Rng64) -> Vector3<f64> {
    loop {
        let v = uniform_vector(rng, 1.0);
        let n2 = v.norm_squared();
        if n2 > 0.01 && n2 <= 1.0 {
            return v / n2.sqrt();
        }
    }
}

/// Two unit vectors completing `n` to a right-handed orthonormal frame,
/// turned by a random angle about `n`.
fn tangents(rng: &mut Rng64, n: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let t1 = loop {
        let t = n.cross(&unit_vector(rng));
        if t.norm() > 0.1 {
            break t.normalize();
        }
    };
    (t1, n.cross(&t1))
}

/// Rows of the 3×6 Jacobian (body twist `(v, ω)` → contact velocity in
/// the frame `n, t1, t2`) of a contact at `p` (body frame origin).
fn contact_rows(p: &Vector3<f64>, frame: [Vector3<f64>; 3]) -> DMatrix<f64> {
    DMatrix::from_fn(3, 6, |i, j| {
        let d = frame[i];
        // d · (v + ω × p) = d·v + ω·(p × d)
        if j < 3 { d[j] } else { p.cross(&d)[j - 3] }
    })
}

fn random_inverse_mass(rng: &mut Rng64) -> DMatrix<f64> {
    let b = DMatrix::from_fn(6, 6, |_, _| rng.random_range(-1.0..1.0));
    let mut m = &b * b.transpose();
    for i in 0..6 {
        m[(i, i)] += rng.random_range(0.05..2.0);
    }
    m.cholesky().unwrap().inverse()
}

/// Contact problem of `n` contacts on 1–5 random rigid bodies against
/// the world, each body's normals within a cone about its own "up"
/// direction narrow enough (`tan θ < 1/μ`) that lifting the body
/// separates all its contacts: a solution exists for every `c`
/// (Acary, Cadoux, Lemaréchal, Malick 2011). Many contacts per body and
/// duplicated contacts make `A` rank-deficient.
struct Problem {
    a: DMatrix<f64>,
    c: DVector<f64>,
    mu: Vec<f64>,
    info: String,
}

fn random_problem(rng: &mut Rng64, n: usize) -> Problem {
    let bodies = rng.random_range(1..=5usize);
    let inverse_mass: Vec<_> = (0..bodies).map(|_| random_inverse_mass(rng)).collect();
    let up: Vec<_> = (0..bodies).map(|_| unit_vector(rng)).collect();
    let flat = rng.random_bool(0.3);
    let mut owner = Vec::with_capacity(n);
    let mut rows: Vec<DMatrix<f64>> = Vec::with_capacity(n);
    let mut mu = Vec::with_capacity(n);
    for k in 0..n {
        let mu_k: f64 = if rng.random_bool(0.1) {
            0.0
        } else {
            rng.random_range(0.0..=2.0)
        };
        if k > 0 && rng.random_bool(0.1) {
            // a duplicated contact (same body, point and frame)
            let other = rng.random_range(0..k);
            owner.push(owner[other]);
            rows.push(rows[other].clone());
            mu.push(mu_k);
            continue;
        }
        let b = rng.random_range(0..bodies);
        let max_tilt = 0.9 * (1.0 / mu_k).atan();
        let tilt: f64 = if flat {
            0.0
        } else {
            rng.random_range(0.0..=max_tilt)
        };
        let (t1, _) = tangents(rng, &up[b]);
        let normal = up[b] * tilt.cos() + t1 * tilt.sin();
        let (t1, t2) = tangents(rng, &normal);
        let p = uniform_vector(rng, 1.0);
        owner.push(b);
        rows.push(contact_rows(&p, [normal, t1, t2]));
        mu.push(mu_k);
    }
    let m = 3 * n;
    let mut a = DMatrix::zeros(m, m);
    for k in 0..n {
        let left = &rows[k] * &inverse_mass[owner[k]];
        for l in 0..n {
            if owner[l] == owner[k] {
                a.view_mut((3 * k, 3 * l), (3, 3))
                    .copy_from(&(&left * rows[l].transpose()));
            }
        }
    }
    let mean_diag = a.diagonal().mean();
    a /= mean_diag;
    // free velocity: a body velocity (c in the range of A), arbitrary,
    // or both
    let mut c = DVector::zeros(m);
    let kind = rng.random_range(0..3);
    if kind != 1 {
        let twists: Vec<_> = (0..bodies)
            .map(|b| {
                let mut t = DVector::from_fn(6, |_, _| rng.random_range(-1.0..1.0));
                // gravity-like approach along −up
                for i in 0..3 {
                    t[i] -= up[b][i] * rng.random_range(0.0..2.0);
                }
                t
            })
            .collect();
        for k in 0..n {
            c.rows_mut(3 * k, 3)
                .copy_from(&(&rows[k] * &twists[owner[k]]));
        }
        let scale = norm_inf(&c).max(1e-300);
        c /= scale;
    }
    if kind != 0 {
        c += DVector::from_fn(m, |_, _| rng.random_range(-1.0..1.0));
    }
    let rank = a.clone().svd(false, false).rank(1e-9);
    let info = format!("kind {kind} flat {flat} bodies {bodies} n {n} rank {rank}/{m}");
    Problem { a, c, mu, info }
}

/// Largest violation of the contact conditions at `x`: the contact
/// equation `A f + c = v` and, per contact, the cone and complementarity
/// conditions and the sliding direction.
fn check_solution(p: &Problem, x: &DVector<f64>) {
    let n = p.mu.len();
    let mut f = DVector::zeros(3 * n);
    let mut v = DVector::zeros(3 * n);
    for k in 0..n {
        let (fk, vk) = impulse_velocity(p.mu[k], &local(x, k));
        f.rows_mut(3 * k, 3).copy_from(&fk);
        v.rows_mut(3 * k, 3).copy_from(&vk);
    }
    let equation = norm_inf(&(&p.a * &f + &p.c - &v));
    assert!(equation <= 1e-10, "‖A f + c − v‖∞ = {equation:e}");
    for k in 0..n {
        let (fk, vk) = (local(&f, k), local(&v, k));
        let (f_n, v_n) = (fk[0], vk[0]);
        let (f_t, v_t) = (fk.fixed_rows::<2>(1), vk.fixed_rows::<2>(1));
        assert!(
            f_n >= 0.0 && v_n >= 0.0,
            "contact {k}: f_N = {f_n}, v_N = {v_n}"
        );
        assert!(f_n * v_n <= 1e-12, "contact {k}: f_N v_N = {}", f_n * v_n);
        assert!(
            f_t.norm() <= p.mu[k] * f_n * (1.0 + 1e-9) + 1e-300,
            "contact {k}: ‖f_F‖ = {} > μ f_N = {}",
            f_t.norm(),
            p.mu[k] * f_n
        );
        if v_t.norm() > 1e-9 && f_n > 1e-9 && p.mu[k] > 0.0 {
            // sliding: on the cone boundary, against the velocity
            assert!(
                (f_t.norm() - p.mu[k] * f_n).abs() <= 1e-9 * (1.0 + f_n),
                "contact {k}: sliding inside the cone"
            );
            let cosine = f_t.dot(&v_t) / (f_t.norm() * v_t.norm());
            assert!(
                cosine <= -1.0 + 1e-9,
                "contact {k}: cos(f_F, v_F) = {cosine}"
            );
        }
    }
}

fn options(method: Method) -> Options {
    Options {
        method,
        max_iterations: std::env::var("MAXIT")
            .map(|e| e.parse().unwrap())
            .unwrap_or(100),
        ..Options::default()
    }
}

#[test]
fn random_rigid_body_problems() {
    for method in METHODS {
        let mut rng = rng(1);
        let (mut iterations, mut newton, mut worst) = (0, 0, 0);
        let mut failures = 0;
        for trial in 0..500 {
            let n = rng.random_range(1..=30);
            let p = random_problem(&mut rng, n);
            match solve(&p.a, &p.c, &p.mu, None, &options(method)) {
                Ok((x, stats)) => {
                    check_solution(&p, &x);
                    iterations += stats.iterations;
                    newton += stats.newton_accepted;
                    worst = worst.max(stats.iterations);
                }
                Err(e) => {
                    failures += 1;
                    println!("{method:?} trial {trial} {}: {e}", p.info);
                }
            }
        }
        println!(
            "{method:?}: mean iterations {:.2}, max {worst}, Newton accepted {:.1}%, failures {failures}",
            iterations as f64 / 500.0,
            100.0 * newton as f64 / iterations as f64
        );
        // Seeded (rng(1), 500 problems up to 30 contacts, rank-deficient
        // and flat-valley kinds included): measured 14 typed failures for
        // Levenberg–Marquardt and 4 for the dogleg (MaxIterations at
        // residuals 4e-5 … 0.3 on problems whose A has rank ≤ 29/90),
        // every other solve checked above. The bound is the measurement:
        // a solver change that loses a single problem fails here, one that
        // gains some passes (lower the bound then).
        let bound = match method {
            Method::LevenbergMarquardt => 14,
            Method::Dogleg => 4,
        };
        assert!(
            failures <= bound,
            "{method:?}: {failures} of 500 random problems failed (bound {bound})"
        );
    }
}

/// Closed forms: A = I gives x = c after one Newton step (r = c − x is
/// linear); a 2 kg point mass (A = I/2) with c = (−1, 0.3, 0) sticks for
/// μ ≥ 0.3 with f = (2, −0.6, 0) and slides for μ = 0.1 with
/// f = (2, −0.2, 0), v = (0, 0.2, 0); a separating contact (c_N > 0) has
/// f = 0, v = c.
#[test]
fn closed_forms() {
    let c = DVector::from_vec(vec![-1.0, 0.3, 0.0]);
    for method in [Method::Dogleg, Method::LevenbergMarquardt] {
        let opts = Options {
            method,
            tolerance: 1e-13,
            max_iterations: 100,
        };
        let id = DMatrix::<f64>::identity(3, 3);
        let x0 = DVector::from_vec(vec![0.5, -0.2, 0.1]);
        let (x, st) = solve(&id, &c, &[0.5], Some(&x0), &opts).unwrap();
        assert!((&x - &c).amax() < 1e-14, "{method:?}: A = I: x = {x}");
        // One Newton step (the dogleg's first trial); Levenberg–Marquardt's
        // damped steps take a few.
        if matches!(method, Method::Dogleg) {
            assert!(
                st.iterations <= 1,
                "A = I took {} iterations",
                st.iterations
            );
        }
        let half = DMatrix::<f64>::identity(3, 3) * 0.5;
        for mu in [0.3, 0.5, 1.0] {
            let (x, _) = solve(&half, &c, &[mu], None, &opts).unwrap();
            let (f, v) = impulse_velocity(mu, &Vector3::new(x[0], x[1], x[2]));
            assert!(
                (f - Vector3::new(2.0, -0.6, 0.0)).amax() < 1e-9,
                "{method:?} μ = {mu}: f = {f}"
            );
            assert!(v.amax() < 1e-9, "{method:?} μ = {mu}: v = {v}");
        }
        let (x, _) = solve(&half, &c, &[0.1], None, &opts).unwrap();
        let (f, v) = impulse_velocity(0.1, &Vector3::new(x[0], x[1], x[2]));
        assert!(
            (f - Vector3::new(2.0, -0.2, 0.0)).amax() < 1e-9,
            "{method:?} slide: f = {f}"
        );
        assert!(
            (v - Vector3::new(0.0, 0.2, 0.0)).amax() < 1e-9,
            "{method:?} slide: v = {v}"
        );
        let sep = DVector::from_vec(vec![0.4, 0.3, -0.1]);
        let (x, _) = solve(&half, &sep, &[0.5], None, &opts).unwrap();
        let (f, v) = impulse_velocity(0.5, &Vector3::new(x[0], x[1], x[2]));
        assert!(f.amax() < 1e-12 && (v - Vector3::new(0.4, 0.3, -0.1)).amax() < 1e-12);
    }
}
