//! Redundant contacts whose free normal velocities are slightly
//! inconsistent with rigid motion: a box on four coplanar corners.

use dualsim::contact::implicit_ncp::solver::*;
use nalgebra::{DMatrix, DVector, Vector3};

/// Box of half-size 0.1 m resting on its four bottom corners (normal +z,
/// tangents x, y), mass 1 kg, inertia of a 0.2 m cube; `A = W M⁻¹ Wᵀ`
/// scaled to a unit mean diagonal.
fn box_problem() -> DMatrix<f64> {
    let corners = [(0.1, 0.1), (-0.1, 0.1), (-0.1, -0.1), (0.1, -0.1)];
    let inertia = 1.0 * (0.2f64 * 0.2 + 0.2 * 0.2) / 12.0;
    let mut w = DMatrix::zeros(12, 6);
    for (k, &(px, py)) in corners.iter().enumerate() {
        let p = Vector3::new(px, py, -0.1);
        for (i, d) in [Vector3::z(), Vector3::x(), Vector3::y()]
            .iter()
            .enumerate()
        {
            let arm = p.cross(d);
            for j in 0..3 {
                w[(3 * k + i, j)] = d[j];
                w[(3 * k + i, 3 + j)] = arm[j];
            }
        }
    }
    let minv = DMatrix::from_diagonal(&DVector::from_vec(vec![
        1.0,
        1.0,
        1.0,
        1.0 / inertia,
        1.0 / inertia,
        1.0 / inertia,
    ]));
    let a = &w * minv * w.transpose();
    let mean = a.diagonal().mean();
    a / mean
}

#[test]
fn inconsistent_normal_gaps() {
    let a = box_problem();
    for method in [Method::Dogleg, Method::LevenbergMarquardt] {
        for &delta in &[1e-9, 1e-7, 1e-5] {
            for &mu in &[0.0, 0.5, 1.0] {
                // gravity-like approach plus a non-rigid pattern on the
                // normals: the box must rest on one diagonal
                let mut c = DVector::zeros(12);
                for (k, s) in [1.0, -1.0, 1.0, -1.0].iter().enumerate() {
                    c[3 * k] = -0.1 + s * delta;
                }
                let opts = Options {
                    method,
                    tolerance: 1e-12,
                    max_iterations: 100,
                };
                let result = solve(&a, &c, &[mu; 4], None, &opts);
                let r = match &result {
                    Ok((x, _)) => norm_inf(&residual(&a, &c, &[mu; 4], x)),
                    Err(Failure::MaxIterations { residual, .. }) => *residual,
                    Err(e) => panic!("{e}"),
                };
                println!(
                    "{method:?} δ {delta:e} μ {mu}: {:?}",
                    result.as_ref().map(|(_, s)| s.iterations).map_err(|_| r)
                );
                assert!(r <= 1e-12, "{method:?} δ {delta:e} μ {mu}: residual {r:e}");
            }
        }
    }
}
