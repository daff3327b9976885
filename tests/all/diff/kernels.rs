//! `ift` with `∂r/∂θ` from generated `#[kernel]` Jacobians
//! (`Partials::Kernel`) against the dual-number right-hand sides
//! (`Partials::Dual`) on every example scene, in flight and in contact;
//! the law kernels against `local_residual` / `local_jacobian`.

use std::path::Path;

use dualsim::contact::SolverKind;
use dualsim::contact::ipm::Ipm;
use dualsim::contact::law::{Law, local_jacobian, local_residual};
use dualsim::contact::space::kernels::{
    local_exact_jacobian, local_frictionless_jacobian, local_pyramid_jacobian,
};
use dualsim::diff::{DiffOptions, ImplicitStep, Method, Param, Partials, step_jacobian};
use dualsim::geometry::Shape;
use dualsim::math::{DMat, DVec, Vec3};
use dualsim::prelude::*;
use dualsim::scene;

/// Every parameter of the world: state, control, and per body mass,
/// inertia, friction, restitution, shape sizes; gravity; dt.
fn all_params(w: &World<f64>) -> Vec<Param> {
    let nv = w.model.nv;
    let mut ps: Vec<Param> = (0..nv)
        .flat_map(|i| [Param::Q(i), Param::V(i), Param::U(i)])
        .collect();
    for b in 0..w.model.bodies.len() {
        ps.extend([Param::Mass(b), Param::Friction(b), Param::Restitution(b)]);
        ps.extend((0..3).map(|k| Param::Inertia(b, k)));
        let n = match &w.shapes[b] {
            Some(Shape::Sphere { .. }) => 1,
            Some(Shape::Capsule { .. }) => 2,
            Some(Shape::Box { .. }) => 3,
            _ => 0,
        };
        ps.extend((0..n).map(|k| Param::Shape(b, k)));
    }
    ps.extend((0..3).map(Param::Gravity));
    ps.push(Param::Dt);
    ps
}

/// `max |J_kernel − J_dual| / max(1, ‖J_dual‖∞)`.
fn rel(a: &DMat<f64>, b: &DMat<f64>) -> f64 {
    (a - b).amax() / b.amax().max(1.0)
}

#[test]
fn kernel_partials_agree_with_dual_on_every_scene() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut worst: f64 = 0.0;
    let mut contact_states = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let s = match scene::load(path) {
            Ok(s) => s,
            Err(e) => panic!("{name}: {e}"),
        };
        let w = &s.world;
        if w.model.bodies.iter().any(|b| !b.is_free_root()) {
            println!(
                "{name:<22} skipped: articulated bodies (robots) use the dual-number partials (no kernels)"
            );
            continue;
        }
        if !matches!(w.solver, SolverKind::Ipm) {
            println!(
                "{name:<22} skipped: solver {:?} has no kernel partials",
                w.solver
            );
            continue;
        }
        let params = all_params(w);
        let b = Ipm {
            params: w.backends.ipm,
        };
        // The initial state and the states of up to 40 steps, the first
        // three with an active contact and the last one.
        let horizon = s.steps.min(40);
        let traj = rollout(w, &s.initial, &s.controls, horizon).unwrap();
        let mut picked: Vec<(usize, usize)> = Vec::new(); // (step, candidates)
        let mut in_contact = 0;
        for k in 0..=horizon {
            let x = &traj.states[k];
            let u = s.controls.at(k.min(horizon.saturating_sub(1))).clone();
            let p = w.problem(x, &u);
            let (y, st) = b.solve_root(&p).unwrap();
            let n = st.len();
            let take = k == 0 || k == horizon || (n > 0 && in_contact < 3);
            if !take {
                continue;
            }
            if n > 0 {
                in_contact += 1;
                let covered = b.kernel_partials(&p, &st, &y, &params).unwrap().is_some();
                assert!(
                    covered,
                    "{name} step {k}: {n} contact candidates not covered by the kernels"
                );
            }
            picked.push((k, n));
        }
        let mut scene_worst: f64 = 0.0;
        for &(k, n) in &picked {
            let x = &traj.states[k];
            let u = s.controls.at(k.min(horizon.saturating_sub(1))).clone();
            let o = |partials| DiffOptions {
                partials,
                ..Default::default()
            };
            let jk = step_jacobian(w, x, &u, &params, Method::Ift, &o(Partials::Kernel))
                .unwrap()
                .jacobian;
            let jd = step_jacobian(w, x, &u, &params, Method::Ift, &o(Partials::Dual))
                .unwrap()
                .jacobian;
            assert!(
                jk.iter().all(|v| v.is_finite()),
                "{name} step {k}: non-finite"
            );
            let r = rel(&jk, &jd);
            assert!(
                r <= 1e-12,
                "{name} step {k} ({n} candidates): kernel vs dual {r:e}"
            );
            scene_worst = scene_worst.max(r);
            if n > 0 {
                contact_states += 1;
            }
        }
        println!(
            "{name:<22} {} states (steps {:?}, candidates {:?}), {} params: max rel diff {scene_worst:.1e}",
            picked.len(),
            picked.iter().map(|p| p.0).collect::<Vec<_>>(),
            picked.iter().map(|p| p.1).collect::<Vec<_>>(),
            params.len()
        );
        worst = worst.max(scene_worst);
    }
    println!("worst over scenes: {worst:.1e} ({contact_states} states in contact)");
    assert!(
        contact_states >= 5,
        "too few contact states compared: {contact_states}"
    );
}

#[test]
fn law_kernels_match_local_residual_and_jacobian() {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 + 0.1
    };
    for law in [Law::Frictionless, Law::Exact, Law::Pyramid] {
        for _ in 0..20 {
            let n = law.size();
            let x = DVec::from_fn(n, |_, _| rnd());
            let y = Vec3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5);
            let (mu, kappa) = (rnd(), 1e-3 * rnd());
            let (v, j): (Vec<f64>, Vec<Vec<f64>>) = match law {
                Law::Frictionless => {
                    let (v, j) =
                        local_frictionless_jacobian([x[0], x[1]], [y.x, y.y, y.z], mu, kappa);
                    (v.to_vec(), j.iter().map(|r| r.to_vec()).collect())
                }
                Law::Exact => {
                    let (v, j) = local_exact_jacobian(
                        core::array::from_fn(|k| x[k]),
                        [y.x, y.y, y.z],
                        mu,
                        kappa,
                    );
                    (v.to_vec(), j.iter().map(|r| r.to_vec()).collect())
                }
                Law::Pyramid => {
                    let (v, j) = local_pyramid_jacobian(
                        core::array::from_fn(|k| x[k]),
                        [y.x, y.y, y.z],
                        mu,
                        kappa,
                    );
                    (v.to_vec(), j.iter().map(|r| r.to_vec()).collect())
                }
            };
            let r = local_residual(law, &x, &y, mu, kappa, None, false);
            let (a, c) = local_jacobian(law, &x, mu, false);
            for i in 0..n {
                assert!(
                    (v[i] - r[i]).abs() <= 1e-15 * r[i].abs().max(1.0),
                    "{law:?} row {i}"
                );
                for k in 0..n {
                    assert!((j[i][k] - a[(i, k)]).abs() <= 1e-15, "{law:?} A[{i}][{k}]");
                }
                for d in 0..3 {
                    assert!(
                        (j[i][n + d] - c[(i, d)]).abs() <= 1e-15,
                        "{law:?} C[{i}][{d}]"
                    );
                }
                // ∂r/∂μ: only the friction-cone equality row (−γ).
                let dmu = match (law, i) {
                    (Law::Exact, 1) | (Law::Pyramid, 5) => -x[0],
                    _ => 0.0,
                };
                assert_eq!(j[i][n + 3], dmu, "{law:?} dr/dmu row {i}");
            }
        }
    }
}
