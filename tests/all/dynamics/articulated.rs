//! Articulated-body dynamics: Pinocchio reference values, analytical
//! derivatives against dual numbers and finite differences, conservation
//! laws, URDF errors.

use dualsim::dynamics::{
    Joint, Model,
    aba::aba,
    aba_derivatives::aba_derivatives,
    configuration, crba,
    crba::crba,
    rnea::{nonlinear_effects, rnea},
    rnea_derivatives::rnea_derivatives,
    urdf::{self, BaseJoint, UrdfError},
};
use dualsim::math::{DMat, DVec, Mat3, Pose, Vec3, so3, spatial::RigidInertia};
use nalgebra::{Const, U1};
use num_dual::{DualSVec64, HyperDual64};

fn data_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn arm7() -> Model<f64> {
    urdf::load_file(data_path("arm7.urdf"), BaseJoint::Fixed)
        .unwrap()
        .model
}

/// max |a − b| / max(1e-300, max |b|).
fn rel_err(a: &DMat<f64>, b: &DMat<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    (a - b).amax() / b.amax().max(1e-300)
}

fn mat(rows: &serde_json::Value) -> DMat<f64> {
    let r: Vec<Vec<f64>> = serde_json::from_value(rows.clone()).unwrap();
    DMat::from_fn(r.len(), r[0].len(), |i, j| r[i][j])
}

fn vecj(x: &serde_json::Value) -> DMat<f64> {
    let r: Vec<f64> = serde_json::from_value(x.clone()).unwrap();
    DMat::from_column_slice(r.len(), 1, &r)
}

fn dv(m: &DMat<f64>) -> DVec<f64> {
    DVec::from_column_slice(m.as_slice())
}

fn col(v: &DVec<f64>) -> DMat<f64> {
    DMat::from_column_slice(v.len(), 1, v.as_slice())
}

/// A small deterministic generator (xorshift) for seeded states.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> DVec<f64> {
        DVec::from_fn(n, |_, _| self.next())
    }
}

#[test]
fn arm7_matches_pinocchio() {
    let model = arm7();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data_path("arm7_pinocchio.json")).unwrap())
            .unwrap();
    let order: Vec<String> = serde_json::from_value(json["joint_order"].clone()).unwrap();
    assert_eq!(
        urdf::load_file(data_path("arm7.urdf"), BaseJoint::Fixed)
            .unwrap()
            .joint_order,
        order
    );
    let g: Vec<f64> = serde_json::from_value(json["gravity"].clone()).unwrap();
    assert_eq!(model.gravity, Vec3::new(g[0], g[1], g[2]));
    let mut data = model.data();
    let mut worst = [0.0f64; 8];
    for s in json["samples"].as_array().unwrap() {
        let q = dv(&vecj(&s["q"]));
        let v = dv(&vecj(&s["v"]));
        let tau = dv(&vecj(&s["tau"]));
        let errs = [
            rel_err(crba(&model, &mut data, &q), &mat(&s["M"])),
            rel_err(
                &col(nonlinear_effects(&model, &mut data, &q, &v)),
                &vecj(&s["bias"]),
            ),
            rel_err(&col(aba(&model, &mut data, &q, &v, &tau)), &vecj(&s["aba"])),
            {
                aba_derivatives(&model, &mut data, &q, &v, &tau);
                rel_err(&data.ddq_dq, &mat(&s["daba_dq"]))
            },
            rel_err(&data.ddq_dv, &mat(&s["daba_dv"])),
            rel_err(&data.minv, &mat(&s["daba_dtau"])),
            {
                let a = dv(&vecj(&s["aba"]));
                rnea_derivatives(&model, &mut data, &q, &v, &a);
                rel_err(&data.dtau_dq, &mat(&s["drnea_dq"]))
            },
            rel_err(&data.dtau_dv, &mat(&s["drnea_dv"])),
        ];
        for (w, e) in worst.iter_mut().zip(errs) {
            *w = w.max(e);
        }
    }
    println!(
        "max relative errors vs Pinocchio [M, nle, aba, daba_dq, daba_dv, daba_dtau, drnea_dq, drnea_dv] = {worst:?}"
    );
    for e in worst {
        assert!(e < 1e-9, "{worst:?}");
    }
}

/// A floating base with a spherical shoulder, a revolute elbow, a prismatic
/// slider, a fixed tool and a second revolute branch (nv = 12).
fn branchy() -> Model<f64> {
    let mut m = Model::new();
    let mut rng = Rng(7);
    let inertia = |mass: f64, rng: &mut Rng| RigidInertia {
        mass,
        com: Vec3::new(rng.next(), rng.next(), rng.next()) * 0.2,
        inertia: {
            let a = Mat3::from_fn(|_, _| rng.next()) * 0.3;
            a * a.transpose() + Mat3::identity() * 0.05
        },
    };
    let pl = |rng: &mut Rng| {
        Pose::new(
            so3::exp(&Vec3::new(rng.next(), rng.next(), rng.next())),
            Vec3::new(rng.next(), rng.next(), rng.next()) * 0.5,
        )
    };
    let base = m
        .add_body(
            "base",
            None,
            Joint::Free,
            pl(&mut rng),
            inertia(3.0, &mut rng),
        )
        .unwrap();
    let sh = m
        .add_body(
            "shoulder",
            Some(base),
            Joint::Spherical,
            pl(&mut rng),
            inertia(2.0, &mut rng),
        )
        .unwrap();
    let el = m
        .add_body(
            "elbow",
            Some(sh),
            Joint::Revolute {
                axis: [0.3, -0.5, 0.8],
            },
            pl(&mut rng),
            inertia(1.5, &mut rng),
        )
        .unwrap();
    let sl = m
        .add_body(
            "slider",
            Some(el),
            Joint::Prismatic {
                axis: [1.0, 0.2, -0.1],
            },
            pl(&mut rng),
            inertia(1.0, &mut rng),
        )
        .unwrap();
    m.add_body(
        "tool",
        Some(sl),
        Joint::Fixed,
        pl(&mut rng),
        inertia(0.5, &mut rng),
    )
    .unwrap();
    m.add_body(
        "leg",
        Some(base),
        Joint::Revolute {
            axis: [0.0, 1.0, 0.0],
        },
        pl(&mut rng),
        inertia(1.2, &mut rng),
    )
    .unwrap();
    m
}

/// A random configuration on the manifold and random v, a / τ.
fn random_state(m: &Model<f64>, seed: u64) -> (DVec<f64>, DVec<f64>, DVec<f64>) {
    let mut rng = Rng(seed);
    let q = configuration::integrate(m, &m.neutral(), &rng.vec(m.nv), 1.0).unwrap();
    (q, rng.vec(m.nv), rng.vec(m.nv))
}

/// Central-difference step on the manifold (roundoff ~ ε‖f‖/h, truncation ~ h²).
const FD_STEP: f64 = 1e-5;

type Jacobians = [DMat<f64>; 5]; // dtau_dq, dtau_dv, ddq_dq, ddq_dv, minv

fn analytical(m: &Model<f64>, q: &DVec<f64>, v: &DVec<f64>, u: &DVec<f64>) -> Jacobians {
    let mut d = m.data();
    rnea_derivatives(m, &mut d, q, v, u);
    let (a, b) = (d.dtau_dq.clone(), d.dtau_dv.clone());
    aba_derivatives(m, &mut d, q, v, u);
    [a, b, d.ddq_dq.clone(), d.ddq_dv.clone(), d.minv.clone()]
}

/// Jacobians by forward-mode dual numbers; `q` is perturbed along the
/// tangent space, `q ⊕ δ`.
fn dual<const N: usize>(m: &Model<f64>, q: &DVec<f64>, v: &DVec<f64>, u: &DVec<f64>) -> Jacobians {
    type D<const N: usize> = DualSVec64<N>;
    assert_eq!(m.nv, N);
    let md = m.cast::<D<N>>();
    let c = |x: &DVec<f64>| x.map(D::<N>::from_re);
    let seeds = DVec::from_fn(N, |k, _| D::<N>::from_re(0.0).derivative(k));
    let vs = DVec::from_fn(N, |k, _| D::<N>::from_re(v[k]).derivative(k));
    let us = DVec::from_fn(N, |k, _| D::<N>::from_re(u[k]).derivative(k));
    let qd = configuration::integrate(&md, &c(q), &seeds, D::<N>::from_re(1.0)).unwrap();
    let jac =
        |x: &DVec<D<N>>| DMat::from_fn(N, N, |i, j| x[i].eps.unwrap_generic(Const::<N>, U1)[j]);
    let mut d = md.data();
    let dtau_dq = jac(rnea(&md, &mut d, &qd, &c(v), &c(u)));
    let dtau_dv = jac(rnea(&md, &mut d, &c(q), &vs, &c(u)));
    let ddq_dq = jac(aba(&md, &mut d, &qd, &c(v), &c(u)));
    let ddq_dv = jac(aba(&md, &mut d, &c(q), &vs, &c(u)));
    let minv = jac(aba(&md, &mut d, &c(q), &c(v), &us));
    [dtau_dq, dtau_dv, ddq_dq, ddq_dv, minv]
}

/// Jacobians by central differences on the manifold, step `h`.
fn central(m: &Model<f64>, q: &DVec<f64>, v: &DVec<f64>, u: &DVec<f64>, h: f64) -> Jacobians {
    let n = m.nv;
    let mut d = m.data();
    let mut out: Jacobians = core::array::from_fn(|_| DMat::zeros(n, n));
    for k in 0..n {
        let mut e = DVec::zeros(n);
        e[k] = h;
        let qp = configuration::integrate(m, q, &e, 1.0).unwrap();
        let qm = configuration::integrate(m, q, &e, -1.0).unwrap();
        let cols = [
            rnea(m, &mut d, &qp, v, u).clone() - rnea(m, &mut d, &qm, v, u),
            rnea(m, &mut d, q, &(v + &e), u).clone() - rnea(m, &mut d, q, &(v - &e), u),
            aba(m, &mut d, &qp, v, u).clone() - aba(m, &mut d, &qm, v, u),
            aba(m, &mut d, q, &(v + &e), u).clone() - aba(m, &mut d, q, &(v - &e), u),
            aba(m, &mut d, q, v, &(u + &e)).clone() - aba(m, &mut d, q, v, &(u - &e)),
        ];
        for (o, c) in out.iter_mut().zip(cols) {
            o.set_column(k, &(c / (2.0 * h)));
        }
    }
    out
}

fn compare_methods<const N: usize>(m: &Model<f64>, seeds: std::ops::Range<u64>) -> (f64, f64) {
    let (mut worst_dual, mut worst_fd) = (0.0f64, 0.0f64);
    for seed in seeds {
        let (q, v, u) = random_state(m, seed);
        let an = analytical(m, &q, &v, &u);
        let du = dual::<N>(m, &q, &v, &u);
        let fd = central(m, &q, &v, &u, FD_STEP);
        for k in 0..5 {
            worst_dual = worst_dual.max(rel_err(&an[k], &du[k]));
            worst_fd = worst_fd.max(rel_err(&an[k], &fd[k]));
        }
    }
    (worst_dual, worst_fd)
}

#[test]
fn arm7_derivatives_match_dual_numbers_and_finite_differences() {
    let (e_dual, e_fd) = compare_methods::<7>(&arm7(), 1..21);
    println!(
        "arm7: analytical vs DualSVec64 {e_dual:.2e}, vs central FD (h = {FD_STEP:e}) {e_fd:.2e}"
    );
    assert!(e_dual < 1e-9 && e_fd < 1e-6, "{e_dual:e} {e_fd:e}");
}

#[test]
fn floating_tree_derivatives_match_dual_numbers_and_finite_differences() {
    let (e_dual, e_fd) = compare_methods::<12>(&branchy(), 1..21);
    println!(
        "floating tree (free, spherical, revolute, prismatic, fixed): analytical vs DualSVec64 {e_dual:.2e}, vs central FD {e_fd:.2e}"
    );
    assert!(e_dual < 1e-9 && e_fd < 1e-6, "{e_dual:e} {e_fd:e}");
}

#[test]
fn derivative_routines_primal_outputs_equal_plain_routines() {
    let m = branchy();
    let (q, v, u) = random_state(&m, 3);
    let mut d = m.data();
    let tau = rnea(&m, &mut d, &q, &v, &u).clone();
    let ddq = aba(&m, &mut d, &q, &v, &u).clone();
    rnea_derivatives(&m, &mut d, &q, &v, &u);
    assert_eq!(d.tau, tau);
    aba_derivatives(&m, &mut d, &q, &v, &u);
    assert_eq!(d.ddq, ddq);
}

#[test]
fn crba_rnea_aba_are_consistent_on_a_floating_tree() {
    let m = branchy();
    let mut d = m.data();
    for seed in 1..6 {
        let (q, v, a) = random_state(&m, seed);
        let mm = crba(&m, &mut d, &q).clone();
        assert!((&mm - mm.transpose()).amax() < 1e-14);
        let c = nonlinear_effects(&m, &mut d, &q, &v).clone();
        let tau = rnea(&m, &mut d, &q, &v, &a).clone();
        assert!((&mm * &a + &c - &tau).amax() < 1e-12 * tau.amax().max(1.0));
        let back = aba(&m, &mut d, &q, &v, &tau).clone();
        assert!((back - &a).amax() < 1e-11, "ABA ∘ RNEA = id");
    }
}

#[test]
fn single_free_body_matches_free_body_dynamics() {
    let mut m = Model::<f64>::new();
    m.add_free_body("b", 2.0, Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.3)))
        .unwrap();
    let (q, v, _) = random_state(&m, 9);
    let mut d = m.data();
    let mm = crba(&m, &mut d, &q).clone();
    let c = nonlinear_effects(&m, &mut d, &q, &v).clone();
    dualsim::dynamics::free::mass_matrix(&m, &mut d, &q);
    let g = m.gravity;
    dualsim::dynamics::free::bias_forces(&m, &mut d, &q, &v, &g);
    assert!((mm - &d.mass_matrix).amax() < 1e-14);
    assert!((c - &d.bias).amax() < 1e-13);
}

#[test]
fn aba_second_derivatives_by_hyperdual_match_fd_of_analytical_first_derivatives() {
    let m = arm7();
    let mh = m.cast::<HyperDual64>();
    let mut dh = mh.data();
    let mut d = m.data();
    let h = 1e-4;
    let mut worst = 0.0f64;
    for seed in 1..4 {
        let (q, v, tau) = random_state(&m, seed);
        let c = |x: &DVec<f64>| x.map(HyperDual64::from_re);
        for j in 0..m.nv {
            let mut e = DVec::zeros(m.nv);
            e[j] = h;
            aba_derivatives(&m, &mut d, &(&q + &e), &v, &tau);
            let plus = [d.ddq_dq.clone(), d.ddq_dv.clone()];
            aba_derivatives(&m, &mut d, &(&q - &e), &v, &tau);
            let minus = [d.ddq_dq.clone(), d.ddq_dv.clone()];
            let fd: Vec<DMat<f64>> = (0..2).map(|k| (&plus[k] - &minus[k]) / (2.0 * h)).collect();
            for i in 0..m.nv {
                // ∂²q̈/∂q_i∂q_j and ∂²q̈/∂v_i∂q_j
                let mut qh = c(&q);
                qh[j].eps2 = 1.0;
                let mut vh = c(&v);
                let mut qh1 = qh.clone();
                qh1[i].eps1 = 1.0;
                let dd_qq = aba(&mh, &mut dh, &qh1, &vh, &c(&tau)).map(|x| x.eps1eps2);
                vh[i].eps1 = 1.0;
                let dd_vq = aba(&mh, &mut dh, &qh, &vh, &c(&tau)).map(|x| x.eps1eps2);
                let scale = fd[0].amax().max(fd[1].amax()).max(1.0);
                worst = worst.max((dd_qq - fd[0].column(i)).amax() / scale);
                worst = worst.max((dd_vq - fd[1].column(i)).amax() / scale);
            }
        }
    }
    println!(
        "arm7: ABA second derivatives (HyperDual64) vs central FD of analytical first derivatives (h = 1e-4): {worst:.2e}"
    );
    assert!(worst < 1e-6, "{worst:e}");
}

/// One classical RK4 step of `(q̇, v̇) = (q̇(q, v), ABA(q, v, 0))` on the
/// embedded coordinates, quaternions renormalized after the step.
fn rk4_step(
    m: &Model<f64>,
    d: &mut dualsim::dynamics::Data<f64>,
    q: &DVec<f64>,
    v: &DVec<f64>,
    h: f64,
) -> (DVec<f64>, DVec<f64>) {
    let tau = DVec::zeros(m.nv);
    let mut f = |q: &DVec<f64>, v: &DVec<f64>| {
        (configuration::qdot(m, q, v), aba(m, d, q, v, &tau).clone())
    };
    let (k1q, k1v) = f(q, v);
    let (k2q, k2v) = f(&(q + &k1q * (h / 2.0)), &(v + &k1v * (h / 2.0)));
    let (k3q, k3v) = f(&(q + &k2q * (h / 2.0)), &(v + &k2v * (h / 2.0)));
    let (k4q, k4v) = f(&(q + &k3q * h), &(v + &k3v * h));
    let mut q1 = q + (k1q + k2q * 2.0 + k3q * 2.0 + k4q) * (h / 6.0);
    let v1 = v + (k1v + k2v * 2.0 + k3v * 2.0 + k4v) * (h / 6.0);
    configuration::normalize(m, &mut q1);
    (q1, v1)
}

#[test]
fn double_pendulum_conserves_energy_with_rk4() {
    let mut m = Model::<f64>::new();
    let link = |l: f64| RigidInertia {
        mass: 1.0,
        com: Vec3::new(0.0, 0.0, -l / 2.0),
        inertia: Mat3::from_diagonal(&Vec3::new(l * l / 12.0, l * l / 12.0, 1e-3)),
    };
    let y = Joint::Revolute {
        axis: [0.0, 1.0, 0.0],
    };
    let a = m
        .add_body("upper", None, y, Pose::identity(), link(1.0))
        .unwrap();
    let below = Pose::new(so3::identity(), Vec3::new(0.0, 0.0, -1.0));
    m.add_body("lower", Some(a), y, below, link(0.8)).unwrap();
    let mut d = m.data();
    let energy = |d: &mut dualsim::dynamics::Data<f64>, q: &DVec<f64>, v: &DVec<f64>| {
        crba::kinetic_energy(&m, d, q, v) + crba::potential_energy(&m, d, q)
    };
    let (mut q, mut v) = (
        DVec::from_vec(vec![1.2, -0.7]),
        DVec::from_vec(vec![0.5, 2.0]),
    );
    let e0 = energy(&mut d, &q, &v);
    // Energy scale: |E| plus the kinetic energy swing (E may be near zero).
    let scale = e0.abs() + crba::kinetic_energy(&m, &mut d, &q, &v);
    let h = 1e-3;
    let mut drift = 0.0f64;
    for _ in 0..10_000 {
        (q, v) = rk4_step(&m, &mut d, &q, &v, h);
        drift = drift.max((energy(&mut d, &q, &v) - e0).abs() / scale);
    }
    println!("double pendulum, RK4 on ABA, h = 1e-3, 10 s: max relative energy drift {drift:.2e}");
    assert!(drift < 1e-4, "{drift:e}");
}

#[test]
fn free_floating_chain_conserves_momentum_with_rk4() {
    let mut m = Model::<f64>::new();
    m.gravity = Vec3::zeros();
    let link = |mass: f64, c: [f64; 3]| RigidInertia {
        mass,
        com: Vec3::from(c),
        inertia: Mat3::from_diagonal(&Vec3::new(0.02, 0.03, 0.04)),
    };
    let base = m
        .add_body(
            "base",
            None,
            Joint::Free,
            Pose::identity(),
            link(2.0, [0.05, 0.0, 0.0]),
        )
        .unwrap();
    let pl = Pose::new(
        so3::exp(&Vec3::new(0.0, 0.3, 0.0)),
        Vec3::new(0.3, 0.0, 0.0),
    );
    let a = m
        .add_body(
            "a",
            Some(base),
            Joint::Revolute {
                axis: [0.0, 0.0, 1.0],
            },
            pl,
            link(1.0, [0.2, 0.0, 0.0]),
        )
        .unwrap();
    let pl = Pose::new(so3::identity(), Vec3::new(0.4, 0.0, 0.0));
    m.add_body(
        "b",
        Some(a),
        Joint::Revolute {
            axis: [0.0, 1.0, 0.0],
        },
        pl,
        link(0.7, [0.15, 0.05, 0.0]),
    )
    .unwrap();
    let mut d = m.data();
    let (mut q, mut v, _) = random_state(&m, 11);
    let h0 = crba::spatial_momentum(&m, &mut d, &q, &v);
    let e0 = crba::kinetic_energy(&m, &mut d, &q, &v);
    let h = 1e-3;
    let (mut drift, mut drift_e) = (0.0f64, 0.0f64);
    for _ in 0..5_000 {
        (q, v) = rk4_step(&m, &mut d, &q, &v, h);
        let hm = crba::spatial_momentum(&m, &mut d, &q, &v);
        drift = drift.max((hm - h0).amax() / h0.amax());
        drift_e = drift_e.max((crba::kinetic_energy(&m, &mut d, &q, &v) - e0).abs() / e0);
    }
    println!(
        "free-floating base + 2 revolute, no gravity, RK4, h = 1e-3, 5 s: max relative momentum drift {drift:.2e}, energy drift {drift_e:.2e}"
    );
    assert!(drift < 1e-8 && drift_e < 1e-8, "{drift:e} {drift_e:e}");
}

const URDF_TAIL: &str = r#"<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
  <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"#;

#[test]
fn urdf_mesh_collision_missing_file_is_a_typed_error() {
    let xml = format!(
        r#"<robot name="r"><link name="a"/><link name="b"><collision><geometry>
        <mesh filename="package://b.stl"/></geometry></collision></link>{URDF_TAIL}"#
    );
    let e = urdf::from_str(&xml, BaseJoint::Fixed).unwrap_err();
    assert!(
        matches!(&e, UrdfError::Meshes(f) if f.len() == 1 && f[0].link == "b"),
        "{e}"
    );
}

#[test]
fn urdf_missing_parent_link_is_a_typed_error() {
    let xml = format!(r#"<robot name="r"><link name="b"/>{URDF_TAIL}"#);
    let e = urdf::from_str(&xml, BaseJoint::Fixed).unwrap_err();
    assert!(
        matches!(&e, UrdfError::MissingLink { joint, link } if joint == "j" && link == "a"),
        "{e}"
    );
}

#[test]
fn urdf_negative_mass_is_a_typed_error() {
    let xml = format!(
        r#"<robot name="r"><link name="a"/><link name="b"><inertial><mass value="-1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>{URDF_TAIL}"#
    );
    let e = urdf::from_str(&xml, BaseJoint::Fixed).unwrap_err();
    assert!(
        matches!(&e, UrdfError::NegativeMass { link, mass } if link == "b" && *mass == -1.0),
        "{e}"
    );
}

#[test]
fn urdf_arm7_structure_shapes_and_floating_base() {
    let r = urdf::load_file(data_path("arm7.urdf"), BaseJoint::Fixed).unwrap();
    assert_eq!((r.model.nq, r.model.nv), (7, 7));
    assert_eq!(r.model.bodies[0].joint, Joint::Fixed);
    assert!(
        r.collisions
            .iter()
            .all(|c| matches!(c.shape, dualsim::geometry::Shape::Cylinder { .. }))
    );
    assert_eq!(r.model.bodies[1].limits.upper, 3.0);
    let f = urdf::load_file(data_path("arm7.urdf"), BaseJoint::Floating).unwrap();
    assert_eq!((f.model.nq, f.model.nv), (14, 13));
    // A robot next to a free body in one model.
    let mut m = Model::<f64>::new();
    m.add_free_body("ball", 1.0, Mat3::identity() * 0.1)
        .unwrap();
    let first = m.append(&r.model, None, &Pose::identity()).unwrap();
    assert_eq!((first, m.nq, m.nv), (1, 14, 13));
    assert_eq!(m.bodies[first + 1].parent, Some(first));
}

#[test]
fn rnea_derivatives_mass_matrix_equals_crba() {
    for m in [arm7(), branchy()] {
        let (q, v, a) = random_state(&m, 5);
        let mut d = m.data();
        let mm = crba(&m, &mut d, &q).clone();
        rnea_derivatives(&m, &mut d, &q, &v, &a);
        assert!((mm - &d.mass_matrix).amax() < 1e-14);
    }
}

#[test]
fn urdf_planar_joint_and_disconnected_links_are_typed_errors() {
    let planar = r#"<robot name="r"><link name="a"/><link name="b"/>
      <joint name="p" type="planar"><parent link="a"/><child link="b"/></joint></robot>"#;
    assert!(matches!(
        urdf::from_str(planar, BaseJoint::Fixed),
        Err(UrdfError::UnsupportedJoint { joint, .. }) if joint == "p"
    ));
    let two_roots = r#"<robot name="r"><link name="a"/><link name="b"/></robot>"#;
    assert!(matches!(
        urdf::from_str(two_roots, BaseJoint::Fixed),
        Err(UrdfError::NotATree(_))
    ));
    assert!(matches!(
        urdf::from_str("<robot", BaseJoint::Fixed),
        Err(UrdfError::Xml(_))
    ));
}

#[test]
fn urdf_inertial_rpy_rotates_the_inertia_and_depth_first_order_follows_the_file() {
    // Root with two children: `b` (file order first) has a grandchild `c`;
    // `d` comes last although its joint appears before `c`'s.
    let xml = r#"<robot name="r">
      <link name="a"/>
      <link name="b"><inertial><origin xyz="0 0 0.1" rpy="0 0 1.5707963267948966"/><mass value="2"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial>
        <collision><origin xyz="0 0 0" rpy="0 0 0"/><geometry><box size="0.2 0.4 0.6"/></geometry></collision></link>
      <link name="c"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <link name="d"/>
      <joint name="jb" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>
      <joint name="jd" type="prismatic"><parent link="a"/><child link="d"/><axis xyz="1 0 0"/>
        <limit lower="-0.5" upper="0.5" effort="1" velocity="1"/></joint>
      <joint name="jc" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"#;
    let r = urdf::from_str(xml, BaseJoint::Fixed).unwrap();
    assert_eq!(r.joint_order, ["jb", "jc", "jd"]);
    let names: Vec<&str> = r.model.bodies.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    let b = &r.model.bodies[1];
    assert!((b.inertia.inertia - Mat3::from_diagonal(&Vec3::new(2.0, 1.0, 3.0))).amax() < 1e-12);
    assert_eq!(b.inertia.com, Vec3::new(0.0, 0.0, 0.1));
    assert_eq!(
        r.model.bodies[3].joint,
        Joint::Prismatic {
            axis: [1.0, 0.0, 0.0]
        }
    );
    assert_eq!(r.model.bodies[3].limits.lower, -0.5);
    assert_eq!(r.collisions.len(), 2);
    assert_eq!(
        r.collisions[0].shape,
        dualsim::geometry::Shape::Box {
            half_extents: Vec3::new(0.1, 0.2, 0.3)
        }
    );
    assert_eq!(r.collisions[1].body, 2);
}
