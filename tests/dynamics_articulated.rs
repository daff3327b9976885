//! Articulated-body dynamics: Pinocchio reference values, analytical
//! derivatives against dual numbers and finite differences, conservation
//! laws, URDF errors.

use dualsim::dynamics::{
    aba::aba, aba_derivatives::aba_derivatives, configuration, crba, crba::crba,
    rnea::{nonlinear_effects, rnea}, rnea_derivatives::rnea_derivatives,
    urdf::{self, BaseJoint, UrdfError},
    Joint, Model,
};
use dualsim::math::{so3, spatial::RigidInertia, DMat, DVec, Mat3, Pose, Vec3};
use dualsim::Scalar;
use nalgebra::{Const, U1};
use num_dual::{DualSVec64, HyperDual64};

fn data_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn arm7() -> Model<f64> {
    urdf::load_file(data_path("arm7.urdf"), BaseJoint::Fixed).unwrap().model
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
        urdf::load_file(data_path("arm7.urdf"), BaseJoint::Fixed).unwrap().joint_order,
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
            rel_err(&col(nonlinear_effects(&model, &mut data, &q, &v)), &vecj(&s["bias"])),
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
    println!("max relative errors vs Pinocchio [M, nle, aba, daba_dq, daba_dv, daba_dtau, drnea_dq, drnea_dv] = {worst:?}");
    for e in worst {
        assert!(e < 1e-9, "{worst:?}");
    }
}
