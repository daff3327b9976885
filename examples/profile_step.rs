//! Steps a scene repeatedly for profiling (`valgrind --tool=callgrind`):
//! a 0.2 m cube of 1 kg resting on a plane (default), `pile N` spheres,
//! or `scene FILE` (a scene file, from its initial state, with its own
//! backend and its first step's controls).
//!
//! With `jac` after the kind, each step is `diff::step_jacobian` (the
//! step and its full one-step Jacobian, state and control, by `ift`;
//! iterations are then not counted; `jacfd`: the same by central
//! differences, `diff::Method::Fd`). Each step is an independent
//! `sim::step`; with `warm`, the steps are chained as in a rollout
//! (`sim::step_into`, the allocation-free rollout step; `jac`:
//! `diff::step_jacobian_with`) with `ipm`'s contact warm start (the
//! default `warm_start_contacts = true`: each step's contacts start from
//! the previous step's solution); with `chained`, chained the same way
//! with every contact started cold.
//!
//! `cargo run --release --features examples --example profile_step -- [box|pile N|scene FILE] [jac|jacfd] [warm|chained] [STEPS]`

use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

fn ground() -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map(String::as_str).unwrap_or("box");
    let mut scene_u = None;
    let (w, x) = match kind {
        "scene" => {
            let path = args.get(1).expect("profile_step scene FILE");
            let s = dualsim::scene::load(std::path::Path::new(path)).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(2)
            });
            scene_u = Some(s.controls.at(0).clone());
            (s.world, s.initial)
        }
        "pile" => {
            let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20);
            let mut w = World::<f64>::new(0.01);
            let r = 0.1;
            let mut pos = Vec::new();
            for i in 0..n {
                pos.push([(i % 10) as f64 * 0.25, (i / 10) as f64 * 0.25, r]);
                w.add_body(
                    &format!("s{i}"),
                    1.0,
                    Mat3::identity() * (0.4 * r * r),
                    Some(Shape::Sphere { radius: r }),
                    Material::default(),
                )
                .unwrap();
            }
            w.statics.push(ground());
            let x0 = State::at_rest(&w.model, &pos);
            (w, x0)
        }
        _ => {
            let mut w = World::<f64>::new(0.01);
            let a = 0.1;
            w.add_body(
                "box",
                1.0,
                Mat3::identity() * (1.0 * (2.0 * a) * (2.0 * a) / 6.0),
                Some(Shape::Box {
                    half_extents: Vec3::repeat(a),
                }),
                Material::default(),
            )
            .unwrap();
            w.statics.push(ground());
            let x0 = State::at_rest(&w.model, &[[0.0, 0.0, a]]);
            (w, x0)
        }
    };
    let jac_fd = args.iter().any(|a| a == "jacfd");
    let jac = jac_fd || args.iter().any(|a| a == "jac");
    // `warm`: chained steps with the contact warm start; `chained`:
    // chained steps with every contact started cold (the workspace still
    // reuses its buffers).
    let chained = args.iter().any(|a| a == "chained");
    let cold = !args.iter().any(|a| a == "warm") && !chained;
    let steps: usize = args
        .last()
        .and_then(|s| s.parse().ok())
        .filter(|_| (kind == "box" && args.len() >= 2) || args.len() >= 3)
        .unwrap_or(200);
    let nv = w.model.nv;
    let mut params: Vec<dualsim::diff::Param> = (0..nv).map(dualsim::diff::Param::Q).collect();
    params.extend((0..nv).map(dualsim::diff::Param::V));
    params.extend((0..nv).map(dualsim::diff::Param::U));
    let opts = dualsim::diff::DiffOptions::default();
    let u = scene_u.unwrap_or_else(|| w.zero_control());
    // settle
    let traj = rollout(&w, &x, &Controls::Constant(u.clone()), 20).unwrap();
    let mut x = traj.last().clone();
    let mut iters = 0;
    let mut ws = dualsim::contact::Workspace::default();
    let mut w = w;
    w.backends.ipm.warm_start_contacts = !cold && !chained;
    let mut out = StepOutput::empty();
    let t = std::time::Instant::now();
    for _ in 0..steps {
        if jac {
            // The step and its Jacobian from one solve (chained through
            // the workspace when warm).
            let m = if jac_fd {
                dualsim::diff::Method::Fd
            } else {
                dualsim::diff::Method::Ift
            };
            let j = if cold {
                dualsim::diff::step_jacobian(&w, &x, &u, &params, m, &opts)
            } else {
                dualsim::diff::step_jacobian_with(&w, &x, &u, &params, m, &opts, &mut ws)
            }
            .unwrap();
            x = std::hint::black_box(j).next;
            continue;
        }
        if cold {
            let out = step(&w, &x, &u).unwrap();
            iters += out.stats.iterations;
            x = out.state;
        } else {
            // The allocation-free rollout step.
            dualsim::sim::step_into(&w, &x, &u, &mut ws, &mut out).unwrap();
            iters += out.stats.iterations;
            std::mem::swap(&mut x, &mut out.state);
        }
    }
    let dt = t.elapsed().as_secs_f64() / steps as f64;
    println!(
        "{kind}{}{}: {steps} steps, {:.1} µs/step, {:.2} iterations/step",
        if jac { " + ift Jacobian" } else { "" },
        if cold {
            ""
        } else if chained {
            " (chained, contacts cold)"
        } else {
            " (warm start)"
        },
        dt * 1e6,
        iters as f64 / steps as f64
    );
}
