//! Robots whose collision shapes are mesh hulls, in contact
//! (tests/data/meshes/meshbot.toml: a floating robot of three hulls, from
//! an ASCII STL, a binary STL and an OBJ).

use dualsim::prelude::*;
use std::path::Path;

fn meshbot() -> dualsim::scene::Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/meshes/meshbot.toml");
    dualsim::scene::load(&path).unwrap()
}

/// The base link's hull is the ASCII cube scaled to 0.2 × 0.2 × 0.1 at
/// z = −0.02 in the base frame: its lowest vertices are at −0.07, so the
/// robot, dropped level from 0.1 m, rests with its base at z = 0.07 (plus
/// the relaxed contact's gap, O(ρ)).
#[test]
fn mesh_robot_settles_at_the_height_of_its_lowest_hull_vertex() {
    let s = meshbot();
    let w = &s.world;
    assert!(
        w.link_shapes
            .iter()
            .all(|l| matches!(l.shape, dualsim::geometry::Shape::Polytope { .. }))
    );
    let t0 = std::time::Instant::now();
    let traj = rollout(w, &s.initial, &s.controls, s.steps).unwrap();
    let ms = t0.elapsed().as_secs_f64() * 1e3 / s.steps as f64;
    let x = traj.last();
    let z = x.q[2];
    let tilt = (x.q[4].powi(2) + x.q[5].powi(2)).sqrt();
    let vmax = x.v.amax();
    let touched = traj.stats.iter().filter(|st| st.contacts > 0).count();
    println!(
        "meshbot (ipm): base z {z:.6} m (lowest hull vertex predicts 0.07), tilt {tilt:.1e}, \
         |v| {vmax:.1e}, contact on {touched} of {} steps, {ms:.2} ms/step",
        s.steps
    );
    assert!(touched > 50, "lands on its hull");
    assert!((z - 0.07).abs() < 1e-3, "rests at z = {z}, expected 0.07");
    assert!(z > 0.07 - 1e-4, "penetrates: z = {z}");
    assert!(
        tilt < 1e-3 && vmax < 1e-2,
        "at rest: tilt {tilt:e}, |v| {vmax:e}"
    );
}

/// The candidates' bounding radius of a hull of many faces (the polar
/// hull's facets, not the O(F⁴) triple intersections) is the distance of
/// its farthest vertex, and is quick.
#[test]
fn mesh_hull_bounding_radius_is_its_farthest_vertex() {
    use dualsim::contact::candidates::silico::conic_bounding_radius;
    use dualsim::geometry::mesh::convex_hull;
    use dualsim::math::Vec3;
    // 200 points of a squashed, shifted sphere (Fibonacci lattice)
    let n = 200;
    let pts: Vec<Vec3<f64>> = (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - z * z).sqrt();
            let t = i as f64 * 2.399963229728653;
            Vec3::new(0.3 + 0.2 * r * t.cos(), -0.1 + 0.1 * r * t.sin(), 0.05 * z)
        })
        .collect();
    let hull = convex_hull(&pts).unwrap();
    let faces = hull.offsets.len();
    let far = hull.vertices.iter().map(|v| v.norm()).fold(0.0, f64::max);
    let t0 = std::time::Instant::now();
    let r = conic_bounding_radius(&hull.shape()).unwrap();
    let us = t0.elapsed().as_secs_f64() * 1e6;
    println!(
        "hull of {faces} faces: bounding radius {r:.12} (farthest vertex {far:.12}), {us:.0} µs"
    );
    assert!(faces > 100, "{faces} faces");
    assert!(
        (r - far).abs() < 1e-9 * far,
        "radius {r} vs farthest vertex {far}"
    );
    assert!(us < 50_000.0, "{us} µs");
}
