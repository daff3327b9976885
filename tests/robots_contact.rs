//! Contact on robot links (`ipm`): an arm falling onto the ground, known
//! answers for a pendulum and a prismatic body resting on a plane, and
//! derivative methods agreeing on a robot in contact.

use std::path::{Path, PathBuf};

use dualsim::contact::ipm::residual::Partner;
use dualsim::contact::ipm::robot::{candidate_kinematics, robot_contact_jacobian, robot_units};
use dualsim::contact::ipm::{candidates, Params};
use dualsim::prelude::*;
use nalgebra::Vector3;

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes")
}

#[test]
fn debug_first_step() {
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let w = &s.world;
    let u = w.zero_control();
    let p = w.problem(&s.initial, &u);
    let cands = candidates(&p, &Params::default());
    println!("{} candidates", cands.len());
    for c in &cands {
        println!("{:?} {:?} {:?} {}", c.a, c.link, c.b, c.feature);
    }
    let units = robot_units(&w.model);
    println!("{units:?}");
}

#[test]
fn debug_steps() {
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let w = &s.world;
    let u = w.zero_control();
    let mut x = s.initial.clone();
    for k in 0..600 {
        let p = w.problem(&x, &u);
        let cands = candidates(&p, &Params::default());
        match step(w, &x, &u) {
            Ok(out) => {
                if !cands.is_empty() || !out.contacts.is_empty() {
                    println!("step {k}: {} cands, {} contacts, iters {}, pen {:e}", cands.len(), out.contacts.len(), out.stats.iterations, out.stats.max_penetration);
                }
                x = out.state;
            }
            Err(e) => {
                println!("step {k} failed: {e}; cands {:?}", cands.iter().map(|c| (c.a, c.link, c.feature)).collect::<Vec<_>>());
                break;
            }
        }
    }
}

#[test]
fn debug_jacobians() {
    let s = dualsim::scene::load(&scenes().join("arm7_fall.toml")).unwrap();
    let w = &s.world;
    let u = w.zero_control();
    let mut x = s.initial.clone();
    for _ in 0..140 {
        x = step(w, &x, &u).unwrap().state;
    }
    let p = w.problem(&x, &u);
    let cands = candidates(&p, &Params::default());
    let unit = &robot_units(&w.model)[0];
    let v: Vec<f64> = (0..7).map(|k| x.v[k] + 0.1 * (k as f64).sin()).collect();
    let f = Vector3::new(0.3, -0.2, 0.1);
    let h = w.dt;
    for c in &cands {
        let (k, g) = robot_contact_jacobian(&p, unit, c, &v, &f).unwrap();
        let kin = candidate_kinematics(&p, unit, c, &v).unwrap();
        let mut ek: f64 = 0.0;
        let mut eg: f64 = 0.0;
        let mut ew: f64 = 0.0;
        let eps = 1e-6;
        for j in 0..7 {
            let mut vp = v.clone();
            vp[j] += eps;
            let mut vm = v.clone();
            vm[j] -= eps;
            let kp = candidate_kinematics(&p, unit, c, &vp).unwrap();
            let km = candidate_kinematics(&p, unit, c, &vm).unwrap();
            for r in 0..3 {
                let fd = (kp.y[r] - km.y[r]) / (2.0 * eps);
                ek = ek.max((fd - k[(r, j)]).abs());
            }
            let gp = kp.w.transpose() * f;
            let gm = km.w.transpose() * f;
            for r in 0..7 {
                let fd = (gp[r] - gm[r]) / (2.0 * eps);
                eg = eg.max((fd - g[(r, j)]).abs());
            }
            let fdphi = (kp.y[0] - km.y[0]) / (2.0 * eps) / h;
            ew = ew.max((fdphi - kin.w[(0, j)]).abs());
        }
        println!("{:?} {:?} {}: K err {ek:e}, G err {eg:e}, W_n vs dphi/dv/h {ew:e}, gap {:e}", c.a, c.link, c.feature, kin.y[0]);
        let _ = Partner::Static(0);
    }
}
