//! Conic proximity (collision::conic): closed-form cases, symmetry and
//! derivatives against central finite differences on seeded random poses.
//!
//! Finite differences: step h = 1e-5 on every parameter θ_k (poses on the
//! manifold: `(exp(δω) ⊗ q, r + δr)`), central difference
//! `(f(θ+h) − f(θ−h))/2h`. Near a kink (a change of active feature: edge
//! to face, rim to cap, …) the derivative jumps; such configurations are
//! detected by comparing the one-sided differences `D₊ = (f(θ+h) − f(θ))/h`
//! and `D₋ = (f(θ) − f(θ−h))/h` of α and of each component of p:
//!
//! * `|D₊ − D₋| ≤ NEAR` (= 1e-5, a smooth function with |f''| ≤ 1):
//!   away from kinks, the analytical Jacobian must match within
//!   `TOL · max(1, |FD|)`, TOL = 1e-5;
//! * `NEAR < |D₊ − D₋| ≤ KINK` (= 1e-4): near an edge or corner (or a
//!   strongly curved stretch), the tolerance is `TOL · max(1, |FD|) +
//!   |D₊ − D₋|` (a slope jump J inside the stencil biases the central
//!   difference by at most J/2 and shows up in `|D₊ − D₋|`); counted as
//!   "near";
//! * `|D₊ − D₋| > KINK` (|f''| > 10 or a slope jump inside the stencil):
//!   skipped and counted. (The solver returns the central-path point of
//!   μ = 1e-12, so a kink is smoothed over a width ~√μ = 1e-6 < h, where
//!   the analytical derivative can be anything between the two slopes.)
//!
//! Skips are capped: per pair, at most `MAX_SKIP_SHARE` (= 10%) of the
//! FD checks may be skipped as kinks, and at least `MIN_CHECKED` (= 1000)
//! must be compared; over all pairs, at least `MIN_CHECKED_TOTAL`
//! (= 100000). Measured: at most 6.7% skipped (polytope–plane), at least
//! 1400 compared (sphere–sphere), 141451 compared in all. A regression
//! that made the one-sided slopes noisy would then fail here instead of
//! turning every check into a skip.
//!
//! Envelope-theorem and IFT values of ∂α/∂θ must agree within
//! `ENV_IFT · max(1, |∂α/∂θ|)`.

use dualsim::collision::conic::proximity_gradient::{n_params, perturbed};
use dualsim::collision::conic::{
    ConicParams, ProximityError, proximity, proximity_gradient, proximity_parts,
};
use dualsim::geometry::{BundleOp, Shape};
use dualsim::math::{Pose, Vec3, so3};

const H: f64 = 1e-5;
const KINK: f64 = 1e-4;
const TOL: f64 = 1e-5;
const NEAR: f64 = 1e-5;
const ENV_IFT: f64 = 1e-5;
/// Largest share of a pair's FD checks that may be skipped as kinks.
const MAX_SKIP_SHARE: f64 = 0.1;
/// Fewest FD checks compared per pair, and over all pairs.
const MIN_CHECKED: usize = 1000;
const MIN_CHECKED_TOTAL: usize = 100_000;

fn at(x: f64, y: f64, z: f64) -> Pose<f64> {
    Pose::new(so3::identity(), Vec3::new(x, y, z))
}

#[test]
fn sphere_sphere_closed_form() {
    let a = Shape::Sphere { radius: 1.0 };
    let b = Shape::Sphere { radius: 0.5 };
    let p = ConicParams::default();
    let (prox, jac) =
        proximity_gradient(&a, &Pose::identity(), &b, &at(3.0, 0.0, 0.0), &p).unwrap();
    assert!((prox.alpha - 2.0).abs() < 1e-9, "alpha {}", prox.alpha);
    assert!((prox.phi - 1.0).abs() < 1e-9);
    assert!(
        (prox.point - Vec3::new(2.0, 0.0, 0.0)).norm() < 1e-6,
        "p {}",
        prox.point
    );
    let g = Vec3::new(2.0 / 3.0, 0.0, 0.0);
    assert!((prox.dalpha_dr_b - g).norm() < 1e-8, "{}", prox.dalpha_dr_b);
    assert!((prox.dalpha_dr_a + g).norm() < 1e-8, "{}", prox.dalpha_dr_a);
    assert!((prox.normal.unwrap() - Vec3::x()).norm() < 1e-8);
    for i in 0..3 {
        assert!((jac.dalpha_dpose_b()[i] - g[i]).abs() < 1e-8);
        assert!((jac.dalpha_dpose_a()[i] + g[i]).abs() < 1e-8);
        assert!((jac.dalpha_ift[6 + i] - g[i]).abs() < 1e-8);
    }
}

#[test]
fn cube_cube_closed_form() {
    let cube = Shape::Box {
        half_extents: Vec3::new(1.0, 1.0, 1.0),
    };
    let p = ConicParams::default();
    let (prox, jac) =
        proximity_gradient(&cube, &Pose::identity(), &cube, &at(3.0, 0.0, 0.0), &p).unwrap();
    assert!((prox.alpha - 1.5).abs() < 1e-9, "alpha {}", prox.alpha);
    assert!(
        (prox.dalpha_dr_b.x - 0.5).abs() < 1e-8,
        "{}",
        prox.dalpha_dr_b
    );
    assert!((jac.dalpha_dpose_b()[0] - 0.5).abs() < 1e-8);
    assert!(
        (jac.dalpha_ift[6] - 0.5).abs() < 1e-6,
        "ift {}",
        jac.dalpha_ift[6]
    );
    // second cube rotated 45° about z: a vertex meets a face
    let rot = Pose::new(
        so3::exp(&Vec3::new(0.0, 0.0, std::f64::consts::FRAC_PI_4)),
        Vec3::new(3.0, 0.0, 0.0),
    );
    let prox = proximity(&cube, &Pose::identity(), &cube, &rot, &p).unwrap();
    let expect = 3.0 / (1.0 + 2.0_f64.sqrt());
    assert!(
        (prox.alpha - expect).abs() < 1e-9,
        "alpha {} vs {expect}",
        prox.alpha
    );
    assert!((prox.normal.unwrap() - Vec3::x()).norm() < 1e-6);
}

#[test]
fn bad_input_is_a_typed_error() {
    let s = Shape::Sphere { radius: f64::NAN };
    let r = proximity(
        &s,
        &Pose::identity(),
        &s,
        &at(1.0, 0.0, 0.0),
        &ConicParams::default(),
    );
    assert_eq!(r.unwrap_err(), ProximityError::NonFinite);
    let u = Shape::Bundle {
        parts: vec![],
        op: BundleOp::Union,
    };
    let ball = Shape::Sphere { radius: 1.0 };
    let r = proximity(
        &u,
        &Pose::identity(),
        &ball,
        &at(1.0, 0.0, 0.0),
        &ConicParams::default(),
    );
    assert_eq!(r.unwrap_err(), ProximityError::NotConvex);
    // an iteration limit of 1 cannot converge
    let b = Shape::Sphere { radius: 1.0 };
    let tight = ConicParams {
        max_iters: 1,
        tau: 0.9,
        ..ConicParams::default()
    };
    let r = proximity(&b, &Pose::identity(), &b, &at(3.0, 0.0, 0.0), &tight);
    assert!(
        matches!(r, Err(ProximityError::NoConvergence { iters: 1, .. })),
        "{r:?}"
    );
    // degenerate shapes and poses: an error or a finite answer, never a panic or NaN
    let zero = Shape::Sphere { radius: 0.0 };
    let negative = Shape::Sphere { radius: -1.0 };
    let open = Shape::Polytope {
        normals: vec![Vec3::x()],
        offsets: vec![1.0],
        hull: None,
    };
    let points = Shape::Points {
        points: vec![],
        normals: vec![],
    };
    for (sa, sb) in [
        (&zero, &zero),
        (&b, &zero),
        (&negative, &b),
        (&negative, &negative),
        (&open, &open),
        (&open, &b),
        (&points, &b),
    ] {
        for pb in [Pose::identity(), at(2.0, 0.0, 0.0)] {
            if let Ok(p) = proximity(sa, &Pose::identity(), sb, &pb, &ConicParams::default()) {
                assert!(
                    p.alpha.is_finite() && p.point.iter().all(|v| v.is_finite()),
                    "{sa:?} {sb:?} {p:?}"
                );
            }
        }
    }
    let r = proximity(
        &b,
        &Pose::identity(),
        &b,
        &at(f64::INFINITY, 0.0, 0.0),
        &ConicParams::default(),
    );
    assert_eq!(r.unwrap_err(), ProximityError::NonFinite);
}

#[test]
fn union_bundle_each_part_its_own_proximity() {
    let ball = Shape::Sphere { radius: 0.5 };
    let cube = Shape::Box {
        half_extents: Vec3::new(0.5, 0.5, 0.5),
    };
    let u = Shape::Bundle {
        parts: vec![
            (ball.clone(), at(-1.0, 0.0, 0.0)),
            (cube.clone(), at(1.0, 0.0, 0.0)),
        ],
        op: BundleOp::Union,
    };
    let all = proximity_parts(
        &u,
        &at(0.0, 0.0, 1.0),
        &ball,
        &at(3.0, 0.0, 1.0),
        &ConicParams::default(),
    )
    .unwrap();
    assert_eq!(all.len(), 2);
    // ball at x = −1 vs ball at 3: 4 / 1
    assert!((all[0].proximity.alpha - 4.0).abs() < 1e-9);
    // cube at x = 1 vs ball: 2 / 1
    assert!((all[1].proximity.alpha - 2.0).abs() < 1e-9);
}

#[test]
fn minkowski_sphere_plus_box_is_a_rounded_box() {
    // box (half 1) ⊕ ball (0.5) vs ball (0.5) at x = 4: α(1.5) + 0.5α = 4
    let mk = Shape::Bundle {
        parts: vec![
            (
                Shape::Box {
                    half_extents: Vec3::new(1.0, 1.0, 1.0),
                },
                Pose::identity(),
            ),
            (Shape::Sphere { radius: 0.5 }, Pose::identity()),
        ],
        op: BundleOp::Minkowski,
    };
    let ball = Shape::Sphere { radius: 0.5 };
    let prox = proximity(
        &mk,
        &Pose::identity(),
        &ball,
        &at(4.0, 0.0, 0.0),
        &ConicParams::default(),
    )
    .unwrap();
    assert!((prox.alpha - 2.0).abs() < 1e-9, "{}", prox.alpha);
    // sphere ⊕ sphere = sphere of the summed radius, offsets add up
    let mk2 = Shape::Bundle {
        parts: vec![
            (Shape::Sphere { radius: 0.3 }, at(0.5, 0.0, 0.0)),
            (Shape::Sphere { radius: 0.2 }, at(-0.5, 0.0, 0.0)),
        ],
        op: BundleOp::Minkowski,
    };
    let prox = proximity(
        &mk2,
        &Pose::identity(),
        &ball,
        &at(3.0, 0.0, 0.0),
        &ConicParams::default(),
    )
    .unwrap();
    assert!((prox.alpha - 3.0).abs() < 1e-9, "{}", prox.alpha);
}

/// splitmix64
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    fn pose(&mut self, spread: f64) -> Pose<f64> {
        let w = Vec3::new(
            self.uniform(-2.0, 2.0),
            self.uniform(-2.0, 2.0),
            self.uniform(-2.0, 2.0),
        );
        let t = Vec3::new(
            self.uniform(-spread, spread),
            self.uniform(-spread, spread),
            self.uniform(-spread, spread),
        );
        Pose::new(so3::exp(&w), t)
    }
}

fn shapes() -> Vec<(&'static str, Shape<f64>)> {
    let oct: Vec<Vec3<f64>> = [
        [1.0, 1.0, 1.0],
        [1.0, 1.0, -1.0],
        [1.0, -1.0, 1.0],
        [1.0, -1.0, -1.0],
        [-1.0, 1.0, 1.0],
        [-1.0, 1.0, -1.0],
        [-1.0, -1.0, 1.0],
        [-1.0, -1.0, -1.0],
    ]
    .iter()
    .map(|v| Vec3::new(v[0], v[1], v[2]).normalize())
    .collect();
    let tri: Vec<Vec3<f64>> = [0.0_f64, 2.1, 4.2]
        .iter()
        .map(|a| Vec3::new(a.cos(), a.sin(), 0.0))
        .collect();
    vec![
        ("sphere", Shape::Sphere { radius: 0.7 }),
        (
            "box",
            Shape::Box {
                half_extents: Vec3::new(0.6, 0.4, 0.8),
            },
        ),
        (
            "polytope",
            Shape::Polytope {
                normals: oct,
                offsets: vec![0.6, 0.7, 0.5, 0.6, 0.65, 0.6, 0.55, 0.6],
                hull: None,
            },
        ),
        (
            "capsule",
            Shape::Capsule {
                radius: 0.3,
                half_length: 0.6,
            },
        ),
        (
            "cylinder",
            Shape::Cylinder {
                radius: 0.5,
                half_length: 0.4,
            },
        ),
        (
            "cone",
            Shape::Cone {
                height: 1.2,
                half_angle: 0.5,
            },
        ),
        (
            "ellipsoid",
            Shape::Ellipsoid {
                radii: Vec3::new(0.8, 0.5, 0.3),
            },
        ),
        (
            "padded_polygon",
            Shape::PaddedPolygon {
                normals: tri,
                offsets: vec![0.5, 0.4, 0.6],
                radius: 0.15,
            },
        ),
        (
            "plane",
            Shape::Plane {
                normal: Vec3::z(),
                offset: 0.5,
            },
        ),
        (
            "minkowski",
            Shape::Bundle {
                parts: vec![
                    (
                        Shape::Box {
                            half_extents: Vec3::new(0.4, 0.3, 0.2),
                        },
                        Pose::new(
                            so3::exp(&Vec3::new(0.3, 0.1, 0.0)),
                            Vec3::new(0.1, 0.0, 0.0),
                        ),
                    ),
                    (
                        Shape::Sphere { radius: 0.2 },
                        Pose::new(so3::identity(), Vec3::new(0.0, 0.1, -0.05)),
                    ),
                ],
                op: BundleOp::Minkowski,
            },
        ),
    ]
}

#[derive(Default, Debug)]
struct Stats {
    checked: usize,
    skipped_kink: usize,
    near_kink: usize,
    max_err_alpha: f64,
    max_err_point: f64,
    max_env_ift: f64,
    max_sym: f64,
    failures: Vec<String>,
}

fn check_pair(na: &str, a: &Shape<f64>, nb: &str, b: &Shape<f64>, rng: &mut Rng, st: &mut Stats) {
    let params = ConicParams::default();
    let nt = n_params(a, b);
    for trial in 0..100 {
        let pa = rng.pose(0.8);
        let pb = rng.pose(0.8);
        let ab = proximity(a, &pa, b, &pb, &params);
        let ba = proximity(b, &pb, a, &pa, &params);
        let (ab, ba) = match (ab, ba) {
            (Ok(x), Ok(y)) => (x, y),
            (x, y) => {
                st.failures.push(format!(
                    "{na}-{nb} #{trial}: solve failed {:?} {:?}",
                    x.err(),
                    y.err()
                ));
                continue;
            }
        };
        let sym = (ab.alpha - ba.alpha).abs();
        st.max_sym = st.max_sym.max(sym);
        if sym > 1e-6 {
            st.failures.push(format!(
                "{na}-{nb} #{trial}: asymmetric {} vs {}",
                ab.alpha, ba.alpha
            ));
        }
        let (prox, jac) = match proximity_gradient(a, &pa, b, &pb, &params) {
            Ok(r) => r,
            Err(e) => {
                st.failures
                    .push(format!("{na}-{nb} #{trial}: gradient failed {e:?}"));
                continue;
            }
        };
        assert_eq!(
            prox.alpha, ab.alpha,
            "the derivative routine's primal output equals the plain routine's"
        );
        for k in 0..nt {
            let env_ift = (jac.dalpha_envelope[k] - jac.dalpha_ift[k]).abs()
                / jac.dalpha_envelope[k].abs().max(1.0);
            st.max_env_ift = st.max_env_ift.max(env_ift);
            if env_ift > ENV_IFT {
                st.failures.push(format!(
                    "{na}-{nb} #{trial} θ{k}: envelope {} vs IFT {}",
                    jac.dalpha_envelope[k], jac.dalpha_ift[k]
                ));
            }
            let eval = |d: f64| {
                let (sa, qa, sb, qb) = perturbed::<f64>(a, &pa, b, &pb, k, d);
                proximity(&sa, &qa, &sb, &qb, &params)
            };
            let (fp, fm) = match (eval(H), eval(-H)) {
                (Ok(p), Ok(m)) => (p, m),
                (p, m) => {
                    st.failures.push(format!(
                        "{na}-{nb} #{trial} θ{k}: FD solve failed {:?} {:?}",
                        p.err(),
                        m.err()
                    ));
                    continue;
                }
            };
            // kink detection on α and on every component of p: the jump
            // between the one-sided slopes
            let jump = |f0: f64, fp: f64, fm: f64| ((fp - f0) / H - (f0 - fm) / H).abs();
            let mut jumps = [jump(prox.alpha, fp.alpha, fm.alpha), 0.0, 0.0, 0.0];
            for j in 0..3 {
                jumps[j + 1] = jump(prox.point[j], fp.point[j], fm.point[j]);
            }
            if jumps.iter().any(|&d| d > KINK) {
                st.skipped_kink += 1;
                continue;
            }
            st.checked += 1;
            if jumps.iter().any(|&d| d > NEAR) {
                st.near_kink += 1;
            }
            let fd = (fp.alpha - fm.alpha) / (2.0 * H);
            let e = (fd - jac.dalpha_envelope[k]).abs() / fd.abs().max(1.0);
            st.max_err_alpha = st.max_err_alpha.max(e);
            if e > TOL + jumps[0] {
                st.failures.push(format!(
                    "{na}-{nb} #{trial} θ{k}: dα FD {fd} vs {} (jump {:.1e})",
                    jac.dalpha_envelope[k], jumps[0]
                ));
            }
            for j in 0..3 {
                let fd = (fp.point[j] - fm.point[j]) / (2.0 * H);
                let e = (fd - jac.dpoint[(j, k)]).abs() / fd.abs().max(1.0);
                st.max_err_point = st.max_err_point.max(e);
                if e > TOL + jumps[j + 1] {
                    st.failures.push(format!(
                        "{na}-{nb} #{trial} θ{k}: dp{j} FD {fd} vs {} (jump {:.1e})",
                        jac.dpoint[(j, k)],
                        jumps[j + 1]
                    ));
                }
            }
        }
    }
}

#[test]
fn every_pair_symmetric_and_matches_finite_differences() {
    let shapes = shapes();
    let mut total = Stats::default();
    let mut rng = Rng(2024);
    for i in 0..shapes.len() {
        for j in i..shapes.len() {
            let (na, a) = &shapes[i];
            let (nb, b) = &shapes[j];
            if na == &"plane" && nb == &"plane" {
                continue; // half-space against half-space: unbounded witness set
            }
            // CONIC_PAIRS=sphere,box restricts the run (debugging aid)
            if let Ok(only) = std::env::var("CONIC_PAIRS") {
                if !only.split(',').any(|n| n == *na || n == *nb) {
                    continue;
                }
            }
            let mut st = Stats::default();
            check_pair(na, a, nb, b, &mut rng, &mut st);
            println!(
                "{na:>15}-{nb:<15} checked {:5} near {:4} kinks {:4} |dα| {:.1e} |dp| {:.1e} env/IFT {:.1e} sym {:.1e} failures {}",
                st.checked,
                st.near_kink,
                st.skipped_kink,
                st.max_err_alpha,
                st.max_err_point,
                st.max_env_ift,
                st.max_sym,
                st.failures.len()
            );
            for f in st.failures.iter().take(3) {
                println!("    {f}");
            }
            let attempted = st.checked + st.skipped_kink;
            if st.skipped_kink as f64 > MAX_SKIP_SHARE * attempted as f64 {
                total.failures.push(format!(
                    "{na}-{nb}: {} of {attempted} FD checks skipped as kinks (cap {MAX_SKIP_SHARE})",
                    st.skipped_kink
                ));
            }
            if st.checked < MIN_CHECKED {
                total.failures.push(format!(
                    "{na}-{nb}: only {} FD checks compared (minimum {MIN_CHECKED})",
                    st.checked
                ));
            }
            total.checked += st.checked;
            total.skipped_kink += st.skipped_kink;
            total.near_kink += st.near_kink;
            total.max_err_alpha = total.max_err_alpha.max(st.max_err_alpha);
            total.max_err_point = total.max_err_point.max(st.max_err_point);
            total.max_env_ift = total.max_env_ift.max(st.max_env_ift);
            total.max_sym = total.max_sym.max(st.max_sym);
            total.failures.extend(st.failures);
        }
    }
    println!(
        "TOTAL checked {} (near a kink {}) skipped (kink) {} max dα err {:.2e} max dp err {:.2e} max env-IFT {:.2e} max sym {:.2e} failures {}",
        total.checked,
        total.near_kink,
        total.skipped_kink,
        total.max_err_alpha,
        total.max_err_point,
        total.max_env_ift,
        total.max_sym,
        total.failures.len()
    );
    // (CONIC_PAIRS restricts the run: the total minimum is for the full matrix)
    assert!(
        std::env::var("CONIC_PAIRS").is_ok() || total.checked >= MIN_CHECKED_TOTAL,
        "only {} FD checks compared (minimum {MIN_CHECKED_TOTAL})",
        total.checked
    );
    assert!(
        total.failures.is_empty(),
        "{} failures, first: {:?}",
        total.failures.len(),
        &total.failures[..total.failures.len().min(10)]
    );
}

#[test]
fn alpha_lifted_to_dual_numbers_matches_the_envelope_jacobian() {
    use dualsim::collision::conic::proximity_gradient::alpha_lifted;
    use num_dual::DualSVec64;
    type D = DualSVec64<8>;
    let a = Shape::Capsule {
        radius: 0.3,
        half_length: 0.6,
    };
    let b = Shape::Box {
        half_extents: Vec3::new(0.6, 0.4, 0.8),
    };
    let pa = Pose::new(
        so3::exp(&Vec3::new(0.3, -0.2, 0.5)),
        Vec3::new(0.1, 0.2, -0.1),
    );
    let pb = Pose::new(
        so3::exp(&Vec3::new(-0.4, 0.7, 0.1)),
        Vec3::new(1.5, -0.4, 0.6),
    );
    let params = ConicParams::default();
    let (prox, jac) = proximity_gradient(&a, &pa, &b, &pb, &params).unwrap();
    // seed the translation of b (3 directions) and the capsule radius
    let mut pbd = pb.cast::<D>();
    for i in 0..3 {
        pbd.translation[i] = D::from_re(pb.translation[i]).derivative(i);
    }
    let ad = Shape::Capsule {
        radius: D::from_re(0.3).derivative(3),
        half_length: D::from_re(0.6),
    };
    let alpha = alpha_lifted(&ad, &pa.cast::<D>(), &b.cast::<D>(), &pbd, &prox).unwrap();
    let eps = alpha.eps.unwrap_generic(nalgebra::Const::<8>, nalgebra::U1);
    assert!((alpha.re - prox.alpha).abs() < 1e-15);
    for i in 0..3 {
        assert!(
            (eps[i] - jac.dalpha_dpose_b()[i]).abs() < 1e-9,
            "{i}: {} vs {}",
            eps[i],
            jac.dalpha_dpose_b()[i]
        );
    }
    assert!((eps[3] - jac.dalpha_dshape_a()[0]).abs() < 1e-9);
}

/// Nesterov–Todd scaling of the conic solver: `W z = W⁻¹ s` (both map to
/// the scaled point λ), `W W⁻¹ = I`, and the matrix form agrees.
#[test]
fn nt_scaling_maps_s_and_z_to_the_same_point() {
    use dualsim::collision::conic::{ConeLayout, Scaling};
    use nalgebra::{DMatrix, DVector};
    let layout = ConeLayout {
        n_orthant: 2,
        soc: vec![4],
    };
    let s = DVector::from_vec(vec![1.0, 2.0, 3.0, 0.5, -1.0, 2.0]);
    let z = DVector::from_vec(vec![0.3, 4.0, 2.0, 1.0, 0.2, -0.7]);
    let w = Scaling::new(&layout, &s, &z).expect("s and z are interior");
    let a = w.apply(&layout, &z, false);
    let b = w.apply(&layout, &s, true);
    assert!((&a - &b).norm() < 1e-12, "{a} {b}");
    let back = w.apply(&layout, &w.apply(&layout, &s, true), false);
    assert!((back - &s).norm() < 1e-12);
    let m = DMatrix::from_columns(&[s.clone(), z.clone()]);
    let wm = w.apply_inv_mat(&layout, &m);
    assert!((wm.column(0) - w.apply(&layout, &s, true)).norm() < 1e-14);
    // A point on the cone boundary has no scaling.
    let edge = DVector::from_vec(vec![1.0, 2.0, 1.0, 1.0, 0.0, 0.0]);
    assert!(Scaling::new(&layout, &edge, &z).is_none());
}

/// `ConeLayout::jordan_div` inverts the Jordan product.
#[test]
fn jordan_div_inverts_jordan() {
    use dualsim::collision::conic::ConeLayout;
    use nalgebra::DVector;
    let layout = ConeLayout {
        n_orthant: 1,
        soc: vec![3],
    };
    let u = DVector::from_vec(vec![2.0, 3.0, 1.0, 0.5]);
    let v = DVector::from_vec(vec![1.0, -1.0, 2.0, 0.3]);
    let r = layout.jordan(&u, &v);
    assert!((layout.jordan_div(&u, &r) - v).norm() < 1e-12);
}
