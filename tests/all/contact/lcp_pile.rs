//! `lcp` on the 20-sphere pile (issue 15; `benches/backends.rs`): 16
//! spheres r = 0.1 in a 4×4 grid on the ground and 4 in the pockets on
//! top, settled for 10 steps under `lcp` (pyramid). Its single island
//! has redundant sphere–sphere and sphere–ground rows: each top sphere
//! and its four supports, all sticking, form a closed loop whose
//! velocity constraints are dependent (one internal impulse mode per top
//! sphere), and the rows' dependence on the bottom spheres' positions
//! is not in the range of `∂r/∂y`: on the solver's active set the step
//! has no derivative in those directions, and `ift` refuses them with
//! the typed `DiffError::NoDerivative` naming the input.

use dualsim::contact::{ContactBackend, Lcp};
use dualsim::contact::{FrictionCone, SolverKind};
use dualsim::diff::{DiffError, DiffOptions, Method, Param, step_jacobian};
use dualsim::math::DMat;
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn material() -> Material<f64> {
    Material {
        friction: 0.5,
        restitution: 0.0,
    }
}

/// The pile of `benches/backends.rs`, under `lcp` with the pyramid.
fn pile() -> (World<f64>, Vec<[f64; 3]>) {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::Lcp;
    w.friction_cone = FrictionCone::Pyramid;
    let r = 0.1;
    let d = 0.21;
    let mut pos = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            pos.push([i as f64 * d, j as f64 * d, r]);
        }
    }
    let z = r + ((2.0 * r).powi(2) - d * d / 2.0).sqrt();
    for (i, j) in [(0, 0), (0, 2), (2, 0), (2, 2)] {
        pos.push([(i as f64 + 0.5) * d, (j as f64 + 0.5) * d, z]);
    }
    for k in 0..pos.len() {
        w.add_body(
            &format!("s{k}"),
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            material(),
        )
        .unwrap();
    }
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: material(),
    });
    (w, pos)
}

fn settled() -> (World<f64>, State<f64>) {
    let (w, pos) = pile();
    let x0 = State::at_rest(&w.model, &pos);
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 10).unwrap();
    let x = traj.last().clone();
    (w, x)
}

/// `∂r/∂y` of the settled pile by central differences of the exact
/// residual (h = 1e-7) has exactly four null directions (singular values
/// below 1e-12 of the largest; the fifth is above 5e-4 of it: 1.2e-3): one
/// internal impulse mode per top sphere. The `∂r/∂q` columns of the
/// bottom spheres' positions are not in its range (the minimum-norm
/// solution misses them by more than 1 against a right-hand side of
/// 100 = 1/h; `delassus::pinv_solve` accepts 1e-6 relative), so `ift`
/// with respect to `q` is refused with the typed error, not a number.
#[test]
fn pile_ift_on_q_is_refused_with_the_reason() {
    let (w, x) = settled();
    let u = w.zero_control();
    let b = Lcp::default();
    let p = w.problem(&x, &u);
    let (y, s) = b.solve_root(&p).unwrap();
    let n = y.len();
    assert!(b.residual(&p, &s, &y).unwrap().amax() < 1e-10);
    let eps = 1e-7;
    let mut j = DMat::zeros(n, n);
    for i in 0..n {
        let mut yp = y.clone();
        yp[i] += eps;
        let mut ym = y.clone();
        ym[i] -= eps;
        let c = (b.residual(&p, &s, &yp).unwrap() - b.residual(&p, &s, &ym).unwrap()) / (2.0 * eps);
        j.set_column(i, &c);
    }
    let svd = dualsim::linalg::Svd::new(&j);
    let mut sv: Vec<f64> = svd.singular_values.iter().cloned().collect();
    sv.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let smax = sv[n - 1];
    assert!(sv[3] < 1e-12 * smax, "4 null directions: {:?}", &sv[..6]);
    assert!(
        sv[4] > 5e-4 * smax,
        "only 4 null directions: {:?}",
        &sv[..6]
    );

    let nq = x.q.len();
    let mut rq = DMat::zeros(n, nq);
    for i in 0..nq {
        let mut xp = x.clone();
        let mut xm = x.clone();
        xp.q[i] += eps;
        xm.q[i] -= eps;
        let rp = b.residual(&w.problem(&xp, &u), &s, &y).unwrap();
        let rm = b.residual(&w.problem(&xm, &u), &s, &y).unwrap();
        rq.set_column(i, &((rp - rm) / (2.0 * eps)));
    }
    let pinv = svd.pseudo_inverse(1e-12 * smax).unwrap();
    let miss = (&j * (&pinv * &rq) - &rq).amax();
    assert!(
        miss > 1.0,
        "inconsistent: miss {miss:e}, rhs {:e}",
        rq.amax()
    );

    let nv = w.model.nv;
    let ps: Vec<Param> = (0..nv).map(Param::Q).collect();
    let ift = step_jacobian(&w, &x, &u, &ps, Method::Ift, &DiffOptions::default());
    // refused, naming a configuration input whose right-hand side is off
    // the range of ∂r/∂y
    assert!(
        matches!(&ift, Err(DiffError::NoDerivative { input, .. }) if input.starts_with("Q(")),
        "{:?}",
        ift.err()
    );
}

/// The settled pile's step is solved by Dantzig pivoting and then the
/// previous outer iteration's active set: with the exhaustive search and
/// PGS turned off (`exhaustive_max = 0`, `pgs_sweeps = 0`) it is solved
/// in 2 outer iterations, one of them settled by the verified guess, and
/// its `v⁺` equals the default solver's to 1e-12 (the same stages run).
#[test]
fn pile_step_is_solved_by_pivoting_without_fallbacks() {
    let (w, x) = settled();
    let u = w.zero_control();
    let p = w.problem(&x, &u);
    let (full, _) = Lcp::default().solve_with_stats(&p).unwrap();
    let mut b = Lcp::default();
    b.params.exhaustive_max = 0;
    b.params.pgs_sweeps = 0;
    let (sol, st) = b.solve_with_stats(&p).unwrap();
    assert_eq!(
        (st.outer, st.solves, st.newton_accepted),
        (2, 2, 1),
        "{st:?}"
    );
    assert!((&sol.v_next - &full.v_next).amax() < 1e-12);
}
