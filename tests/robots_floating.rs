//! Floating-base robots: one articulated system (base included) in the
//! scene stepper, free flight against known answers, a quadruped-like
//! robot standing on its feet.

use std::path::{Path, PathBuf};

use dualsim::collision::pair_contacts;
use dualsim::dynamics::crba::spatial_momentum;
use dualsim::dynamics::kinematics::forward_kinematics;
use dualsim::dynamics::urdf;
use dualsim::prelude::*;

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes")
}

fn min_link_gap(w: &World<f64>, x: &State<f64>) -> f64 {
    let mut d = w.model.data();
    forward_kinematics(&w.model, &mut d, &x.q, None);
    let mut gap = f64::INFINITY;
    for ls in &w.link_shapes {
        let pose = d.omi[ls.body] * ls.pose;
        for st in &w.statics {
            for c in pair_contacts(&ls.shape, &pose, &st.shape, &st.pose).unwrap() {
                gap = gap.min(c.gap);
            }
        }
    }
    gap
}

#[test]
fn quadruped_debug() {
    let s = dualsim::scene::load(&scenes().join("quadruped_stand.toml")).unwrap();
    let w = &s.world;
    println!("nq {} nv {} link shapes {}", w.model.nq, w.model.nv, w.link_shapes.len());
    let mut x = s.initial.clone();
    for k in 0..400 {
        let out = step(w, &x, s.controls.at(k)).unwrap();
        x = out.state;
        if k % 20 == 0 { println!("{:?}", &x.q.as_slice()); }
        if k % 20 == 0 { println!("{k} z {:.5} gap {:.3e} contacts {} pen {:.1e}", x.q[2], min_link_gap(w, &x), out.stats.contacts, out.stats.max_penetration); }
    }
}
