//! `bilevel` at a face-to-face contact (issue 20): the chamfered drop box
//! (`experiments::silico::drop_polytope`, 0.6 × 0.5 × 0.4 m) landing
//! gently on its bottom face, and the derivative of the inner collision
//! program's witness point at a face, which the outer Newton matrix uses.
use dualsim::collision::conic::contact::inner_params;
use dualsim::collision::conic::{ConicParams, proximity, proximity_gradient};
use dualsim::contact::SolverKind;
use dualsim::contact::bilevel::inner_mu;
use dualsim::experiments::silico::{Drop, drop_polytope, penetration, polytope_vertices};
use dualsim::geometry::Shape;
use dualsim::math::{Pose, Vec3, so3};
use dualsim::sim::State;

/// The box tilted by `tilt` rad about x, its lowest edge `gap` m above the
/// ground, at rest.
fn tilted(w: &dualsim::sim::World<f64>, tilt: f64, gap: f64) -> State<f64> {
    let z0 = 0.25 * tilt.sin().abs() + 0.2 * tilt.cos() + gap;
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, z0]]);
    let q = so3::exp(&Vec3::new(tilt, 0.0, 0.0));
    x.q[3] = q.w;
    x.q[4] = q.i;
    x.q[5] = q.j;
    x.q[6] = q.k;
    x
}

/// A gentle landing (3 cm, tilted 0.01–0.2 rad so that an edge touches
/// first and the face follows) at 10 and 100 Hz, ρ = 1e-6: every step
/// converges and the box comes to rest on its face. Known answer: centre
/// at z = 0.2 m (half height), level, at rest. Tolerances: the relaxed
/// contact (inner μ = 10 ρ = 1e-5) rests within O(μ) of the face
/// (measured: 2.0e-6 m below 0.2 at 100 Hz, 3.8e-6 at 10 Hz): 1e-5 m on z and on the
/// geometric penetration (lowest vertex), 1e-6 rad on the tilt, 1e-6 on
/// the velocities.
#[test]
fn gentle_tilted_landing_comes_to_rest_on_the_face() {
    let Shape::Polytope {
        normals, offsets, ..
    } = drop_polytope()
    else {
        unreachable!()
    };
    let verts = polytope_vertices(&normals, &offsets);
    for (hz, tilt) in [(100.0, 0.01), (100.0, 0.2), (10.0, 0.01), (10.0, 0.05)] {
        let w = Drop::Chamfered.world(SolverKind::Bilevel, 1.0 / hz, 1e-6, 30);
        let mut x = tilted(&w, tilt, 0.03);
        let u = w.zero_control();
        let mut max_pen: f64 = 0.0;
        let mut max_it = 0;
        for k in 0..(1.5 * hz) as usize {
            let o = dualsim::sim::step(&w, &x, &u)
                .unwrap_or_else(|e| panic!("{hz} Hz, tilt {tilt}: step {k}: {e}"));
            x = o.state;
            max_it = max_it.max(o.stats.iterations);
            max_pen = max_pen.max(penetration(&verts, &x.q));
        }
        let level = 2.0 * Vec3::new(x.q[4], x.q[5], x.q[6]).norm();
        let v = x.v.amax();
        println!(
            "{hz} Hz tilt {tilt}: z - 0.2 = {:.3e}, tilt {level:.2e}, |v| {v:.2e}, \
             max penetration {max_pen:.2e}, max iterations {max_it}",
            x.q[2] - 0.2
        );
        assert!(
            (x.q[2] - 0.2).abs() < 1e-5,
            "{hz} Hz, tilt {tilt}: z {}",
            x.q[2]
        );
        assert!(level < 1e-6, "{hz} Hz, tilt {tilt}: final tilt {level:e}");
        assert!(v < 1e-6, "{hz} Hz, tilt {tilt}: |v| {v:e}");
        assert!(
            max_pen < 1e-5,
            "{hz} Hz, tilt {tilt}: penetration {max_pen:e}"
        );
    }
}

/// The inner program at a face: the box 1e-3 m above the ground, level
/// (tilt 0) and tilted 1e-4 rad about x. At every μ from 1e-2 to 1e-10,
/// `∂p/∂ω_x` (witness point, implicit-function theorem) at tilt 0 and
/// `∂α/∂ω_x` (IFT) at tilt 1e-4 agree with central differences of the
/// solved program (relative 1e-4, steps 1e-3 μ for p and
/// 1e-3 max(μ, 1e-5) for α): the derivative the outer
/// Newton matrix uses is right. Its size is `≈ 0.0976 / μ` (measured
/// −9.758e-2/μ from μ = 1e-5 on): the witness point sweeps the 0.5 m face
/// while the tilt changes by O(μ) rad, and the exact (μ → 0) program's p
/// jumps from one edge to the other at tilt 0. Known answer for the
/// scaling: each decade of μ multiplies `∂p/∂ω_x` by 10 (to 1 %, from
/// μ = 1e-4 on).
#[test]
fn witness_point_derivative_at_a_face_matches_fd_and_grows_as_one_over_mu() {
    let a = drop_polytope();
    let ground = Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    };
    let pose = |tilt: f64| {
        Pose::new(
            so3::exp(&Vec3::new(tilt, 0.0, 0.0)),
            Vec3::new(0.0, 0.0, 0.201),
        )
    };
    let rel = |x: f64, y: f64| (x - y).abs() / y.abs().max(1e-6);
    let mut prev: Option<f64> = None;
    for mu in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10] {
        let params = ConicParams {
            tol_gap: mu,
            tol_residual: 1e-12,
            centering_tolerance: 1e-10,
            ..inner_params()
        };
        let at = |t: f64| proximity(&a, &pose(t), &ground, &Pose::identity(), &params).unwrap();
        let eps = 1e-3 * mu;
        // θ index 3: rotation of pose a about world x.
        let (_, jac) =
            proximity_gradient(&a, &pose(0.0), &ground, &Pose::identity(), &params).unwrap();
        let dp = jac.dpoint[(1, 3)];
        let dp_fd = (at(eps).point.y - at(-eps).point.y) / (2.0 * eps);
        let tilt = 1e-4;
        let (_, jac) =
            proximity_gradient(&a, &pose(tilt), &ground, &Pose::identity(), &params).unwrap();
        let (da, da_env) = (jac.dalpha_ift[3], jac.dalpha_envelope[3]);
        // α is smooth at tilt 1e-4 ≫ μ: a step ≥ 1e-8 keeps round-off out.
        let e = 1e-3 * mu.max(1e-5);
        let da_fd = (at(tilt + e).alpha - at(tilt - e).alpha) / (2.0 * e);
        println!(
            "mu {mu:.0e}: dp_y/dω_x at tilt 0: IFT {dp:.6e} FD {dp_fd:.6e} (μ·dp {:.4e}); \
             dα/dω_x at tilt 1e-4: IFT {da:.6e} FD {da_fd:.6e} envelope {da_env:.6e}",
            mu * dp
        );
        assert!(
            rel(dp, dp_fd) < 1e-4,
            "mu {mu:e}: dp {dp:e} vs FD {dp_fd:e}"
        );
        assert!(
            rel(da, da_fd) < 1e-4,
            "mu {mu:e}: dα {da:e} vs FD {da_fd:e}"
        );
        if let (Some(p), true) = (prev, mu <= 1e-4) {
            let ratio = dp.abs() / p;
            assert!((ratio - 10.0).abs() < 0.1, "mu {mu:e}: ratio {ratio}");
        }
        prev = Some(dp.abs());
    }
    // The step relaxes its inner programs with its own ρ (10 ρ).
    assert!((inner_mu(1e-6) - 1e-5).abs() < 1e-20);
}
