//! Articulated-body algorithms in f64: RNEA, CRBA, ABA and the analytical
//! RNEA / ABA derivatives for the 7-dof arm (`tests/data/arm7.urdf`) and a
//! 32-dof humanoid-like tree (floating base + 2 × 6-dof legs + 2 × 7-dof
//! arms), at a seeded random state; plus `∂τ/∂q` and `∂q̈/∂q` by running
//! RNEA / ABA in `DualSVec64<nv>` for comparison with the analytical routines.
//!
//! `cargo bench --bench dynamics -- --warm-up-time 1 --measurement-time 2`

use criterion::{Criterion, criterion_group, criterion_main};
use dualsim::dynamics::{
    Joint, Model, aba::aba, aba_derivatives::aba_derivatives, configuration, crba::crba,
    rnea::rnea, rnea_derivatives::rnea_derivatives, urdf,
};
use dualsim::math::{DVec, Mat3, Pose, Vec3, so3, spatial::RigidInertia};
use std::hint::black_box;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// Floating base, two 6-dof legs and two 7-dof arms: nv = 6 + 12 + 14 = 32.
fn humanoid() -> Model<f64> {
    let mut m = Model::new();
    let mut rng = Rng(42);
    let link = |mass: f64, rng: &mut Rng| RigidInertia {
        mass,
        com: Vec3::new(rng.next(), rng.next(), rng.next()) * 0.05 + Vec3::new(0.0, 0.0, -0.1),
        inertia: Mat3::from_diagonal(&Vec3::new(0.02, 0.02, 0.01)),
    };
    let base = m
        .add_body(
            "pelvis",
            None,
            Joint::Free,
            Pose::identity(),
            link(8.0, &mut rng),
        )
        .unwrap();
    let axes = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let chain = |m: &mut Model<f64>, name: &str, n: usize, offset: Vec3<f64>, rng: &mut Rng| {
        let mut parent = base;
        for k in 0..n {
            let pl = Pose::new(
                so3::exp(&(Vec3::new(rng.next(), rng.next(), rng.next()) * 0.1)),
                if k == 0 {
                    offset
                } else {
                    Vec3::new(0.0, 0.0, -0.25)
                },
            );
            parent = m
                .add_body(
                    &format!("{name}{k}"),
                    Some(parent),
                    Joint::Revolute { axis: axes[k % 3] },
                    pl,
                    link(1.5, rng),
                )
                .unwrap();
        }
    };
    chain(&mut m, "left_leg", 6, Vec3::new(0.0, 0.1, -0.1), &mut rng);
    chain(&mut m, "right_leg", 6, Vec3::new(0.0, -0.1, -0.1), &mut rng);
    chain(&mut m, "left_arm", 7, Vec3::new(0.0, 0.2, 0.4), &mut rng);
    chain(&mut m, "right_arm", 7, Vec3::new(0.0, -0.2, 0.4), &mut rng);
    assert_eq!(m.nv, 32);
    m
}

fn bench_model(c: &mut Criterion, name: &str, m: &Model<f64>) {
    let mut rng = Rng(1);
    let mut r = |n: usize| DVec::from_fn(n, |_, _| rng.next());
    let q = configuration::integrate(m, &m.neutral(), &r(m.nv), 1.0).unwrap();
    let (v, a) = (r(m.nv), r(m.nv));
    let mut d = m.data();
    let mut g = c.benchmark_group(format!("dynamics/{name}_nv{}", m.nv));
    g.bench_function("rnea", |b| {
        b.iter(|| black_box(rnea(m, &mut d, black_box(&q), &v, &a)[0]))
    });
    g.bench_function("crba", |b| {
        b.iter(|| black_box(crba(m, &mut d, black_box(&q))[(0, 0)]))
    });
    g.bench_function("aba", |b| {
        b.iter(|| black_box(aba(m, &mut d, black_box(&q), &v, &a)[0]))
    });
    g.bench_function("rnea_derivatives", |b| {
        b.iter(|| {
            rnea_derivatives(m, &mut d, black_box(&q), &v, &a);
            black_box(d.dtau_dq[(0, 0)])
        })
    });
    g.bench_function("aba_derivatives", |b| {
        b.iter(|| {
            aba_derivatives(m, &mut d, black_box(&q), &v, &a);
            black_box(d.ddq_dq[(0, 0)])
        })
    });
    g.finish();
}

/// The same Jacobians `∂τ/∂q` and `∂q̈/∂q` by forward-mode dual numbers
/// (`DualSVec64<N>`, q seeded along the tangent space), for comparison.
fn bench_dual<const N: usize>(c: &mut Criterion, name: &str, m: &Model<f64>) {
    type D<const N: usize> = num_dual::DualSVec64<N>;
    let mut rng = Rng(1);
    let mut r = |n: usize| DVec::from_fn(n, |_, _| rng.next());
    let q = configuration::integrate(m, &m.neutral(), &r(m.nv), 1.0).unwrap();
    let (v, a) = (r(m.nv), r(m.nv));
    let md = m.cast::<D<N>>();
    let cst = |x: &DVec<f64>| x.map(D::<N>::from_re);
    let seeds = DVec::from_fn(N, |k, _| D::<N>::from_re(0.0).derivative(k));
    let (qc, vd, ad) = (cst(&q), cst(&v), cst(&a));
    let mut d = md.data();
    let mut g = c.benchmark_group(format!("dynamics/{name}_nv{}", m.nv));
    g.bench_function("rnea_dq_by_DualSVec64", |b| {
        b.iter(|| {
            let qd = configuration::integrate(&md, black_box(&qc), &seeds, D::<N>::from_re(1.0))
                .unwrap();
            black_box(rnea(&md, &mut d, &qd, &vd, &ad)[0].re)
        })
    });
    g.bench_function("aba_dq_by_DualSVec64", |b| {
        b.iter(|| {
            let qd = configuration::integrate(&md, black_box(&qc), &seeds, D::<N>::from_re(1.0))
                .unwrap();
            black_box(aba(&md, &mut d, &qd, &vd, &ad)[0].re)
        })
    });
    g.finish();
}

fn dynamics(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/arm7.urdf");
    let arm = urdf::load_file(path, urdf::BaseJoint::Fixed).unwrap().model;
    bench_model(c, "arm7", &arm);
    bench_dual::<7>(c, "arm7", &arm);
    let humanoid = humanoid();
    bench_model(c, "humanoid", &humanoid);
    bench_dual::<32>(c, "humanoid", &humanoid);
}

criterion_group!(benches, dynamics);
criterion_main!(benches);
