//! The URDF import on arbitrary bytes: a robot that imports is added to a
//! world (fixed and floating base), validated with its joint limits
//! ignored, and stepped once. Never a panic; a successful step never
//! yields a non-finite state.
#![no_main]

use dualsim::dynamics::urdf::{from_str, BaseJoint};
use dualsim::math::{DVec, Pose};
use dualsim::sim::{step, State, World};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(xml) = std::str::from_utf8(data) else { return };
    for base in [BaseJoint::Fixed, BaseJoint::Floating] {
        let Ok(robot) = from_str(xml, base) else { continue };
        let mut w = World::<f64>::new(0.005);
        let Ok(r) = w.add_robot_with_collisions("r", &robot, &Pose::identity()) else { continue };
        w.robots[r].ignore_joint_limits = true;
        let x = State { q: w.model.neutral(), v: DVec::zeros(w.model.nv) };
        if w.validate(&x).is_err() {
            continue;
        }
        if let Ok(out) = step(&w, &x, &w.zero_control()) {
            assert!(out.state.is_finite(), "a successful step with a non-finite state");
        }
    }
});
