//! Helpers shared by the robot contact tests.
#![allow(dead_code)]

use dualsim::collision::pair_contacts;
use dualsim::dynamics::kinematics::forward_kinematics;
use dualsim::prelude::*;
use std::path::{Path, PathBuf};

/// The example scenes directory.
pub fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes")
}

/// Smallest gap between any link shape and any static geometry at `x`,
/// from the closed-form pairs (independent of the solver's statistics).
pub fn min_link_gap(w: &World<f64>, x: &State<f64>) -> f64 {
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
