//! The boxed LCP solver of the `lcp` backend (`contact::lcp::solver`):
//! random contact-structured problems, a brute-force oracle on the small
//! ones, the ratio test (Jade IV-C4), stabilization and derivatives.

/// Random contact-structured boxed LCPs.
#[allow(dead_code)]
mod common {

    use nalgebra::{DMatrix, DVector};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A boxed LCP with owned data.
    #[derive(Clone, Debug)]
    pub struct Owned {
        pub a: DMatrix<f64>,
        pub b: DVector<f64>,
        pub lo: Vec<f64>,
        pub hi: Vec<f64>,
        pub findex: Vec<Option<usize>>,
        pub kind: Kind,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Kind {
        Spd,
        RankDeficient,
        IllConditioned,
        Redundant,
    }

    pub fn rng(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed)
    }

    fn normal(r: &mut Xoshiro256PlusPlus) -> f64 {
        // Box–Muller.
        let u1: f64 = r.random::<f64>().max(1e-300);
        let u2: f64 = r.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `m` contacts (normal row, then two friction rows with `±μ x_n` when
    /// `friction`), `A = J M⁻¹ Jᵀ` with `J` random of `dof` columns,
    /// `b = J v₀ + gap terms`.
    pub fn contact_lcp(r: &mut Xoshiro256PlusPlus, m: usize, friction: bool, kind: Kind) -> Owned {
        let per = if friction { 3 } else { 1 };
        let n = per * m;
        let dof = match kind {
            Kind::Spd | Kind::IllConditioned => n + r.random_range(0..4),
            Kind::RankDeficient => (n / 2).max(1) + r.random_range(0..(n / 2).max(1)),
            Kind::Redundant => n + 2,
        };
        let mut j = DMatrix::from_fn(n, dof, |_, _| normal(r));
        if kind == Kind::Redundant && m >= 2 {
            // Copy contacts onto others (exactly redundant rows).
            let copies = 1 + r.random_range(0..m / 2 + 1);
            for _ in 0..copies {
                let src = r.random_range(0..m);
                let dst = r.random_range(0..m);
                if src != dst {
                    for k in 0..per {
                        let row = j.row(per * src + k).into_owned();
                        j.row_mut(per * dst + k).copy_from(&row);
                    }
                }
            }
        }
        if kind == Kind::IllConditioned {
            // Column scales spanning 10^{-e}: cond(A) up to 10^{2e}.
            let e: f64 = r.random_range(3.0..6.3);
            for c in 0..dof {
                let s = 10f64.powf(-e * c as f64 / (dof.max(2) - 1) as f64);
                j.column_mut(c).scale_mut(s);
            }
        }
        let minv = DVector::from_fn(dof, |_, _| r.random_range(0.2..5.0));
        let a = &j * DMatrix::from_diagonal(&minv) * j.transpose();
        let a = (&a + a.transpose()) * 0.5;
        let v0 = DVector::from_fn(dof, |_, _| normal(r));
        let mut b = &j * v0;
        let mut lo = vec![0.0; n];
        let mut hi = vec![f64::INFINITY; n];
        let mut findex = vec![None; n];
        for c in 0..m {
            // Normal rows: a gap term pushes some apart, a pull others in.
            b[per * c] += r.random_range(-0.5..0.8) * b.amax().max(1e-3);
            if friction {
                let mu = r.random_range(0.05..1.2);
                for k in 1..3 {
                    lo[per * c + k] = -mu;
                    hi[per * c + k] = mu;
                    findex[per * c + k] = Some(per * c);
                }
            }
        }
        Owned {
            a,
            b,
            lo,
            hi,
            findex,
            kind,
        }
    }

    impl Owned {
        pub fn problem(&self) -> dualsim::contact::lcp::solver::Problem<'_> {
            dualsim::contact::lcp::solver::Problem {
                a: &self.a,
                b: &self.b,
                lo: &self.lo,
                hi: &self.hi,
                findex: &self.findex,
            }
        }
    }
}

use common::{Kind, Owned, contact_lcp, rng};
use dualsim::contact::lcp::solver::{
    LcpError, Options, Problem, RatioTest, Stage, Status, Workspace, jacobian_a_column, jacobian_b,
    residual, solve, solve_active_set,
};
use nalgebra::{DMatrix, DVector};
use rand::Rng;

const TOL: f64 = 1e-9;

/// Every solution of a small problem (all active sets, minimum-norm
/// solve of each): `(x, w)` pairs.
fn brute_force(p: &Problem<'_>) -> Vec<(DVector<f64>, DVector<f64>)> {
    let n = p.n();
    let choices: Vec<Vec<Status>> = (0..n)
        .map(|i| {
            let mut c = vec![Status::Free];
            if p.findex[i].is_some() || p.lo[i].is_finite() {
                c.push(Status::Lo);
            }
            if p.findex[i].is_some() || p.hi[i].is_finite() {
                c.push(Status::Hi);
            }
            c
        })
        .collect();
    let mut idx = vec![0usize; n];
    let mut ws = Workspace::new(n);
    let mut out = Vec::new();
    loop {
        let st: Vec<Status> = (0..n).map(|i| choices[i][idx[i]]).collect();
        if solve_active_set(p, &st, &mut ws, true).is_some() && residual(p, &ws.x) <= TOL {
            out.push((ws.x.clone(), ws.w.clone()));
        }
        let mut i = 0;
        loop {
            if i == n {
                return out;
            }
            idx[i] += 1;
            if idx[i] < choices[i].len() {
                break;
            }
            idx[i] = 0;
            i += 1;
        }
    }
}

fn close(a: &DVector<f64>, b: &DVector<f64>, scale: f64) -> bool {
    (a - b).amax() <= 1e-6 * scale.max(1e-12)
}

/// A 6×6 boxed LCP (two contacts, μ = 0.34) with cond(A) ≈ 5.0e12, found
/// by a random search (cond(A) fixed by construction, b and μ drawn): Nimble's
/// ill-conditioned `LCP_FAILURE` test matrix could not be located, so
/// this one is constructed to the same description (6×6, cond ≈ 5e12)
/// and to fail ODE's frozen ratio test.
fn six_by_six() -> Owned {
    #[rustfmt::skip]
    let a = [0.247438749342916, -0.33327428774306, 0.027753422597161, 0.05710903426003, -0.266494205328345, 0.00855075726011, -0.33327428774306, 0.449147759576131, -0.036957948196091, -0.076416840911768, 0.358525504391633, -0.01120287654746, 0.027753422597161, -0.036957948196091, 0.003800219687695, 0.007225327158906, -0.030561961300636, 0.001464729437044, 0.05710903426003, -0.076416840911768, 0.007225327158906, 0.014160085390295, -0.06230636972771, 0.002573911988446, -0.266494205328345, 0.358525504391633, -0.030561961300636, -0.06230636972771, 0.287673973695618, -0.009705737572005, 0.00855075726011, -0.01120287654746, 0.001464729437044, 0.002573911988446, -0.009705737572005, 0.000672961743238];
    let mu = 0.34;
    Owned {
        a: DMatrix::from_column_slice(6, 6, &a),
        b: DVector::from_column_slice(&[-0.536, -0.137, 0.164, -0.171, -0.082, -0.074]),
        lo: vec![0.0, -mu, -mu, 0.0, -mu, -mu],
        hi: vec![f64::INFINITY, mu, mu, f64::INFINITY, mu, mu],
        findex: vec![None, Some(0), Some(0), None, Some(3), Some(3)],
        kind: Kind::IllConditioned,
    }
}

fn dantzig_only(rt: RatioTest) -> Options {
    Options {
        ratio_test: rt,
        stages: [false, true, false, false],
        ..Default::default()
    }
}

#[test]
fn ill_conditioned_six_by_six() {
    let o = six_by_six();
    let p = o.problem();
    let sv = o.a.clone().svd(false, false).singular_values;
    let cond = sv.max() / sv.min();
    assert!((4e12..6e12).contains(&cond), "cond {cond:e}");
    let mut ws = Workspace::new(6);
    let fixed = solve(&p, &dantzig_only(RatioTest::Moving), None, &mut ws).expect("moving");
    assert_eq!(fixed.stage, Stage::Dantzig);
    assert!(residual(&p, &ws.x) <= TOL);
    let frozen = solve(&p, &dantzig_only(RatioTest::Frozen), None, &mut ws);
    assert!(
        matches!(
            frozen,
            Err(LcpError::Unsolved {
                stage: Stage::Dantzig,
                ..
            })
        ),
        "{frozen:?}"
    );
    // The whole pipeline with the old test still gets there (exhaustive).
    let old = Options {
        ratio_test: RatioTest::Frozen,
        ..Default::default()
    };
    let st = solve(&p, &old, None, &mut ws).expect("fallback");
    assert_ne!(st.stage, Stage::Dantzig);
    assert!(residual(&p, &ws.x) <= TOL);
    // Brute force agrees.
    let all = brute_force(&p);
    assert!(all.iter().any(|(_, w)| close(w, &ws.w, 1.0)));
}

#[derive(Default, Debug)]
struct Counts {
    total: usize,
    by_stage: [usize; 4],
    failed: usize,
    failed_by_kind: [usize; 4],
    failed_small: usize,
    frozen_dantzig_fail: usize,
    moving_dantzig_fail: usize,
    frozen_fail_moving_ok: usize,
    moving_fail_frozen_ok: usize,
    frozen_pipeline_fail: usize,
    brute_checked: usize,
    brute_unique_x: usize,
    brute_none: usize,
    stabilized: usize,
}

#[test]
fn ten_thousand_random_boxed_lcps() {
    let t0 = std::time::Instant::now();
    let mut r = rng(15);
    let mut c = Counts::default();
    let kinds = [
        Kind::Spd,
        Kind::RankDeficient,
        Kind::IllConditioned,
        Kind::Redundant,
    ];
    let mut ws = Workspace::new(60);
    let mut problems: Vec<Owned> = vec![six_by_six()];
    for i in 0..9_999 {
        let friction = r.random::<f64>() < 0.85;
        let m = if friction {
            r.random_range(1..=20)
        } else {
            r.random_range(3..=20)
        };
        problems.push(contact_lcp(&mut r, m, friction, kinds[i % 4]));
    }
    for o in &problems {
        let p = o.problem();
        let n = p.n();
        assert!((3..=60).contains(&n));
        c.total += 1;
        let res = solve(&p, &Options::default(), None, &mut ws);
        match res {
            Ok(st) => {
                // Independent check of the returned point.
                let rr = residual(&p, &ws.x);
                assert!(rr <= TOL, "accepted residual {rr:e} ({st:?})");
                c.by_stage[st.stage as usize] += 1;
                c.stabilized += st.stabilized as usize;
            }
            Err(LcpError::Unsolved { .. }) => {
                c.failed += 1;
                c.failed_by_kind[o.kind as usize] += 1;
                if n <= 9 {
                    c.failed_small += 1;
                }
            }
            Err(e) => panic!("{e}"),
        }
        let ok = res.is_ok();
        let (x, w) = (ws.x.clone(), ws.w.clone());
        // Dantzig alone, the two ratio tests.
        let m_ok = solve(&p, &dantzig_only(RatioTest::Moving), None, &mut ws).is_ok();
        let f_ok = solve(&p, &dantzig_only(RatioTest::Frozen), None, &mut ws).is_ok();
        c.moving_dantzig_fail += !m_ok as usize;
        c.frozen_dantzig_fail += !f_ok as usize;
        c.frozen_fail_moving_ok += (m_ok && !f_ok) as usize;
        c.moving_fail_frozen_ok += (!m_ok && f_ok) as usize;
        let old = Options {
            ratio_test: RatioTest::Frozen,
            ..Default::default()
        };
        c.frozen_pipeline_fail += solve(&p, &old, None, &mut ws).is_err() as usize;
        // Brute force on the small ones.
        if n <= 9 {
            c.brute_checked += 1;
            let all = brute_force(&p);
            if all.is_empty() {
                c.brute_none += 1;
                assert!(!ok, "solved a problem the enumeration finds no solution of");
                continue;
            }
            assert!(
                ok,
                "enumeration finds {} solutions, solver failed",
                all.len()
            );
            let ws_scale = all.iter().map(|(_, w)| w.amax()).fold(p.b.amax(), f64::max);
            assert!(
                all.iter().any(|(_, wb)| close(wb, &w, ws_scale)),
                "w not among the enumerated solutions"
            );
            let x0 = &all[0].0;
            let xs = all.iter().map(|(x, _)| x.amax()).fold(0.0, f64::max);
            if all.iter().all(|(xb, _)| close(xb, x0, xs)) {
                c.brute_unique_x += 1;
                assert!(close(&x, x0, xs), "x differs from the unique solution");
            }
        }
    }
    eprintln!("{c:#?}\nelapsed {:.1} s", t0.elapsed().as_secs_f64());
    assert_eq!(c.total, 10_000);
    // Typed failures only where the random problem may have no solution
    // (rank-deficient A with b outside its range: the enumeration finds
    // none on the small ones) or none representable to 1e-9
    // (cond(A) up to 1e12.6).
    assert_eq!(c.failed_by_kind[Kind::Spd as usize], 0);
    assert_eq!(c.failed_by_kind[Kind::Redundant as usize], 0);
    assert!(c.failed * 20 <= c.total, "too many failures: {}", c.failed);
    assert!(c.frozen_fail_moving_ok > 0);
}

#[test]
fn warm_start_from_the_previous_active_set() {
    let mut r = rng(3);
    let mut ws = Workspace::new(30);
    let mut hits = 0;
    for _ in 0..100 {
        let o = contact_lcp(&mut r, 10, true, Kind::Spd);
        let p = o.problem();
        if solve(&p, &Options::default(), None, &mut ws).is_err() {
            continue;
        }
        let guess = ws.status.clone();
        let x = ws.x.clone();
        // A small change of b keeps the active set (most of the time).
        let mut o2 = o.clone();
        o2.b += DVector::from_fn(o.b.len(), |_, _| 1e-9 * r.random::<f64>());
        let st = solve(&o2.problem(), &Options::default(), Some(&guess), &mut ws).unwrap();
        if st.stage == Stage::Guess {
            hits += 1;
            assert!((&ws.x - &x).amax() <= 1e-6 * x.amax().max(1.0));
        }
    }
    assert!(hits >= 90, "{hits}");
}

#[test]
fn redundant_contacts_get_the_minimum_norm_split() {
    // Nimble App. B: two identical frictionless contacts, rank-one A.
    let a = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0]);
    let b = DVector::from_column_slice(&[-2.0, -2.0]);
    let (lo, hi, fi) = (vec![0.0; 2], vec![f64::INFINITY; 2], vec![None; 2]);
    let p = Problem {
        a: &a,
        b: &b,
        lo: &lo,
        hi: &hi,
        findex: &fi,
    };
    let mut ws = Workspace::new(2);
    let st = solve(&p, &Options::default(), None, &mut ws).unwrap();
    assert!(st.stabilized);
    assert!(
        (ws.x[0] - 1.0).abs() < 1e-12 && (ws.x[1] - 1.0).abs() < 1e-12,
        "{}",
        ws.x
    );
    // And its derivative is the pseudo-inverse's.
    let st = ws.status.clone();
    let jb = jacobian_b(&p, &st, &mut ws).unwrap();
    for v in jb.iter() {
        assert!((v + 0.25).abs() < 1e-12, "{jb}");
    }
}

#[test]
fn derivatives_match_finite_differences() {
    let mut r = rng(11);
    let mut ws = Workspace::new(30);
    let mut checked = 0;
    for _ in 0..200 {
        let o = contact_lcp(&mut r, 6, true, Kind::Spd);
        let p = o.problem();
        if solve(&p, &Options::default(), None, &mut ws).is_err() {
            continue;
        }
        let (x, status) = (ws.x.clone(), ws.status.clone());
        let jb = jacobian_b(&p, &status, &mut ws).unwrap();
        let n = p.n();
        // x is linear in b on a fixed active set (rational in A): a
        // large step keeps round-off out.
        let h = 1e-5;
        let mut good = true;
        let mut err: f64 = 0.0;
        for k in 0..n {
            let mut o2 = o.clone();
            o2.b[k] += h;
            let ok = solve(&o2.problem(), &Options::default(), Some(&status), &mut ws);
            if !matches!(ok, Ok(s) if s.stage == Stage::Guess) {
                good = false; // the active set changes: a kink
                break;
            }
            let xp = ws.x.clone();
            let mut o2 = o.clone();
            o2.b[k] -= h;
            solve(&o2.problem(), &Options::default(), Some(&status), &mut ws).unwrap();
            let fd = (&xp - &ws.x) / (2.0 * h);
            err = err.max((fd - jb.column(k)).amax() / jb.amax().max(1.0));
            // ∂x/∂A_kl for one l.
            let l = (k + 1) % n;
            let mut o3 = o.clone();
            o3.a[(k, l)] += h;
            solve(&o3.problem(), &Options::default(), Some(&status), &mut ws).unwrap();
            let xp = ws.x.clone();
            o3.a[(k, l)] -= 2.0 * h;
            solve(&o3.problem(), &Options::default(), Some(&status), &mut ws).unwrap();
            let fd = (&xp - &ws.x) / (2.0 * h);
            err = err.max((fd - jacobian_a_column(&jb, &x, k, l)).amax() / jb.amax().max(1.0));
        }
        if good {
            checked += 1;
            assert!(err < 1e-6, "derivative error {err:e}");
        }
    }
    assert!(checked >= 50, "{checked}");
}

#[test]
fn malformed_problems_are_refused() {
    let a = DMatrix::identity(3, 3);
    let b = DVector::from_column_slice(&[-1.0, 0.0, 0.0]);
    let lo = vec![0.0, -0.5, -0.5];
    let hi = vec![f64::INFINITY, 0.5, 0.5];
    let fi = vec![None, Some(2), Some(0)];
    let p = Problem {
        a: &a,
        b: &b,
        lo: &lo,
        hi: &hi,
        findex: &fi,
    };
    let mut ws = Workspace::new(3);
    assert!(matches!(
        solve(&p, &Options::default(), None, &mut ws),
        Err(LcpError::Invalid(_))
    ));
}

/// The sticking set of the stabilization (`solver` docs) on the first
/// LCP of `tests/data/lcp_grasp_box_fingers.toml`, assembled here in
/// closed form: a plate (0.1 kg, inertia diag(8.3333e-4, 7.5083e-4,
/// 8.4167e-5)) between two fingers on prismatic joints along x (0.05 kg
/// each), four contact points per face at x = ∓0.005, y, z = ±0.02; the
/// free-flight velocity puts the fingers at 1 m/s inward (F h / m_f) and
/// the plate at −g h = −0.0981 m/s, `b = W v_free`, `A = W M⁻¹ Wᵀ`
/// (tangents: +z, +y on the left face, −z, +y on the right).
/// Every point sticking with f_n = F h / 4 = 0.0125 (1e-12 relative) and
/// f_z = m g h / 8 = 1.22625e-3 (1e-7) solves it, and the contact-space
/// velocity `W (v_free + M⁻¹ Wᵀ f)` is then 0 to the solver's tolerance
/// (1e-9 times ‖b‖∞ = 1 m/s). Without the stabilization the pivoting
/// stage's vertex is returned: it solves the same LCP (residual ≤ 1e-9)
/// with nearly all of each face's load on one corner, and the plate
/// pivots about it (measured v_y = +3.7e-3, v_z = −3.7e-3 m/s,
/// ω_x = −0.187 rad/s; asserted beyond 1e-3 m/s and 0.1 rad/s).
#[test]
fn sticking_set_holds_a_plate_between_prismatic_fingers() {
    let (mp, mf, h, g, f) = (0.1, 0.05, 0.01, 9.81, 5.0);
    let inertia = [0.00083333, 0.00075083, 0.000084167];
    // Unknowns: plate (v, ω), finger_l, finger_r.
    let minv = DVector::from_column_slice(&[
        1.0 / mp,
        1.0 / mp,
        1.0 / mp,
        1.0 / inertia[0],
        1.0 / inertia[1],
        1.0 / inertia[2],
        1.0 / mf,
        1.0 / mf,
    ]);
    let v_free =
        DVector::from_column_slice(&[0.0, 0.0, -g * h, 0.0, 0.0, 0.0, f * h / mf, f * h / mf]);
    let mut rows: Vec<[f64; 8]> = Vec::new();
    for (side, sx) in [(0usize, -1.0f64), (1, 1.0)] {
        // Normal from the plate to the finger (b → a, a the finger):
        // the finger's gap rate is n·(v_finger − v_plate(point)).
        let n = [sx, 0.0, 0.0];
        let tangents = [[0.0, 0.0, -sx], [0.0, 1.0, 0.0]];
        for (y, z) in [(-0.02, -0.02), (0.02, -0.02), (0.02, 0.02), (-0.02, 0.02)] {
            let p = [0.005 * sx, y, z];
            for d in std::iter::once(n).chain(tangents) {
                let mut w = [0.0; 8];
                // Plate side, negated: −(d, p × d).
                let pxd = [
                    p[1] * d[2] - p[2] * d[1],
                    p[2] * d[0] - p[0] * d[2],
                    p[0] * d[1] - p[1] * d[0],
                ];
                for k in 0..3 {
                    w[k] = -d[k];
                    w[3 + k] = -pxd[k];
                }
                // Finger: its joint moves it along −sx (towards the plate).
                w[6 + side] = -sx * d[0];
                rows.push(w);
            }
        }
    }
    let m = rows.len();
    let w = DMatrix::from_fn(m, 8, |r, c| rows[r][c]);
    let a = &w * DMatrix::from_diagonal(&minv) * w.transpose();
    let b = &w * &v_free;
    let mu = [0.5; 8];
    let (mut lo, mut hi, mut fi) = (vec![0.0; m], vec![f64::INFINITY; m], vec![None; m]);
    for k in 0..8 {
        for d in 1..3 {
            lo[3 * k + d] = -mu[k];
            hi[3 * k + d] = mu[k];
            fi[3 * k + d] = Some(3 * k);
        }
    }
    let p = Problem {
        a: &a,
        b: &b,
        lo: &lo,
        hi: &hi,
        findex: &fi,
    };
    let velocity = |x: &DVector<f64>| &v_free + minv.component_mul(&(w.transpose() * x));
    let mut ws = Workspace::new(m);
    let st = solve(&p, &Options::default(), None, &mut ws).unwrap();
    let v = velocity(&ws.x);
    let (mut share, mut vert): (f64, f64) = (0.0, 0.0);
    for k in 0..8 {
        share = share.max((ws.x[3 * k] / (f * h / 4.0) - 1.0).abs());
        // Vertical friction on the plate: −(t1 · z) f_t1.
        vert = vert.max((ws.x[3 * k + 1].abs() / (mp * g * h / 8.0) - 1.0).abs());
    }
    println!(
        "sticking set: stage {:?}, stabilized {}, velocity ≤ {:.1e}, per-point normal error {share:.1e}, \
         vertical friction error {vert:.1e}",
        st.stage,
        st.stabilized,
        v.amax()
    );
    let slip = (&w * &v).amax();
    println!("contact-space velocity ≤ {slip:.1e}");
    assert!(st.stabilized);
    assert!(slip < 1e-9, "{v}");
    assert!(share < 1e-12, "{}", ws.x);
    assert!(vert < 1e-7, "{}", ws.x);

    let bare = Options {
        stabilize: false,
        ..Options::default()
    };
    let st = solve(&p, &bare, None, &mut ws).unwrap();
    let v = velocity(&ws.x);
    let loads: Vec<f64> = (0..8).map(|k| ws.x[3 * k]).collect();
    println!(
        "without stabilization: stage {:?}, plate velocity {:?}, normal impulses {loads:?}",
        st.stage,
        v.rows(0, 6).as_slice()
    );
    assert!(residual(&p, &ws.x) <= 1e-9, "a solution of the same LCP");
    assert!(v[1] > 1e-3 && v[2] < -1e-3 && v[3] < -0.1, "{v}");
}
