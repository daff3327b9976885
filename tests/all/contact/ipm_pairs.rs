//! Issue 20, "Must show" 1: `ipm` collides every pair of shape types.
//!
//! Every body shape type of `geometry::Shape` (sphere, capsule, box,
//! cylinder, cone, ellipsoid, polytope, padded polygon, union bundle,
//! Minkowski bundle) is dropped on the ground plane, and every pair of them
//! is dropped one onto the other (the lower one a free body resting on the
//! ground), plus box–box at face, edge, corner and edge–edge contacts, all
//! under `ipm`. Penetration is measured geometrically at every step
//! (several pairs: every fifth step and the last), independently of the
//! solver and of the collision code: from support functions written here,
//! the depth of convex `A` and `B` is `min_{‖u‖=1} h_A(u) + h_B(−u)`, and
//! every direction tried gives an upper bound of it (a direction search
//! can only over-estimate the depth). A plane's depth is exact.
//!
//! Then the example scenes `box_tower`, `polytope_drop`, `peg_in_hole`
//! and `bundles` under `ipm` end at their known resting heights.
//!
//! Run: `cargo test --release --test all contact::ipm_pairs:: -- --nocapture` (prints the
//! measured penetrations).

use dualsim::geometry::BundleOp;
use dualsim::math::{Pose, Quat, Vec3, so3};
use dualsim::prelude::*;
use std::path::Path;

/// Largest penetration depth allowed (m). Shapes are ~0.1 m; a resting
/// contact of `ipm` sits at a gap of `ρ/γ` (scaled), and a contact caught
/// late by the candidate search penetrates by up to a step's motion.
const TOL: f64 = 1e-4;

// ------------------------------------------------------------ geometry

fn h_local(s: &Shape<f64>, u: &Vec3<f64>) -> f64 {
    match s {
        Shape::Sphere { radius } => radius * u.norm(),
        Shape::Box { half_extents } => (0..3).map(|i| u[i].abs() * half_extents[i]).sum(),
        Shape::Capsule {
            radius,
            half_length,
        } => half_length * u.z.abs() + radius * u.norm(),
        Shape::Cylinder {
            radius,
            half_length,
        } => half_length * u.z.abs() + radius * (u.x * u.x + u.y * u.y).sqrt(),
        Shape::Cone { height, half_angle } => {
            let r = height * half_angle.tan();
            (0.75 * height * u.z).max(-0.25 * height * u.z + r * (u.x * u.x + u.y * u.y).sqrt())
        }
        Shape::Ellipsoid { radii } => radii.component_mul(u).norm(),
        Shape::Polytope {
            normals, offsets, ..
        } => polytope_vertices(normals, offsets)
            .iter()
            .map(|v| v.dot(u))
            .fold(f64::NEG_INFINITY, f64::max),
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => {
            polygon_vertices(normals, offsets)
                .iter()
                .map(|v| v.dot(u))
                .fold(f64::NEG_INFINITY, f64::max)
                + radius * u.norm()
        }
        Shape::Bundle {
            parts,
            op: BundleOp::Minkowski,
        } => parts.iter().map(|(p, pose)| h_world(p, pose, u)).sum(),
        other => panic!("no support function for {}", other.type_name()),
    }
}

/// Support function of `s` placed at `pose`.
fn h_world(s: &Shape<f64>, pose: &Pose<f64>, u: &Vec3<f64>) -> f64 {
    u.dot(&pose.translation) + h_local(s, &so3::rotate_inv(&pose.rotation, u))
}

fn polytope_vertices(n: &[Vec3<f64>], b: &[f64]) -> Vec<Vec3<f64>> {
    let k = n.len();
    let mut out = Vec::new();
    for i in 0..k {
        for j in i + 1..k {
            for l in j + 1..k {
                let m = nalgebra::Matrix3::from_rows(&[
                    n[i].transpose(),
                    n[j].transpose(),
                    n[l].transpose(),
                ]);
                if m.determinant().abs() < 1e-9 {
                    continue;
                }
                let x = m.try_inverse().unwrap() * Vec3::new(b[i], b[j], b[l]);
                if n.iter().zip(b).all(|(nn, bb)| nn.dot(&x) <= bb + 1e-9) {
                    out.push(x);
                }
            }
        }
    }
    out
}

fn polygon_vertices(n: &[Vec3<f64>], b: &[f64]) -> Vec<Vec3<f64>> {
    let mut out = Vec::new();
    for i in 0..n.len() {
        for j in i + 1..n.len() {
            let m = nalgebra::Matrix2::new(n[i].x, n[i].y, n[j].x, n[j].y);
            if let Some(mi) = m.try_inverse() {
                let x = mi * nalgebra::Vector2::new(b[i], b[j]);
                let x = Vec3::new(x.x, x.y, 0.0);
                if n.iter()
                    .zip(b)
                    .all(|(nn, bb)| nn.x * x.x + nn.y * x.y <= bb + 1e-9)
                {
                    out.push(x);
                }
            }
        }
    }
    out
}

/// Convex pieces of a shape at a pose (a union bundle: its parts).
fn pieces(s: &Shape<f64>, pose: &Pose<f64>) -> Vec<(Shape<f64>, Pose<f64>)> {
    match s {
        Shape::Bundle {
            parts,
            op: BundleOp::Union,
        } => parts
            .iter()
            .flat_map(|(p, lp)| pieces(p, &(*pose * *lp)))
            .collect(),
        _ => vec![(s.clone(), *pose)],
    }
}

/// Upper bound of the penetration depth of two convex pieces (0 when
/// apart): `min_u h_A(u) + h_B(−u)` by a direction search.
fn convex_depth(a: &(Shape<f64>, Pose<f64>), b: &(Shape<f64>, Pose<f64>)) -> f64 {
    let f = |u: &Vec3<f64>| h_world(&a.0, &a.1, u) + h_world(&b.0, &b.1, &(-u));
    // Quick rejection: separated along the centre line.
    let d = b.1.translation - a.1.translation;
    if d.norm() > 0.0 && f(&(d / d.norm())) < 0.0 {
        return 0.0;
    }
    let n = 600;
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    let mut starts: Vec<(f64, Vec3<f64>)> = (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - z * z).sqrt();
            let t = golden * i as f64;
            let u = Vec3::new(r * t.cos(), r * t.sin(), z);
            (f(&u), u)
        })
        .collect();
    for axis in [Vec3::x(), Vec3::y(), Vec3::z()] {
        for s in [1.0, -1.0] {
            starts.push((f(&(axis * s)), axis * s));
        }
    }
    starts.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut best = starts[0].0;
    for &(mut fu, mut u) in starts.iter().take(6) {
        let mut step = 0.05;
        while step > 1e-10 && best > 0.0 {
            let a1 = if u.x.abs() < 0.9 {
                Vec3::x()
            } else {
                Vec3::y()
            };
            let e1 = u.cross(&a1).normalize();
            let e2 = u.cross(&e1);
            let mut improved = false;
            for k in 0..16 {
                let t = k as f64 * std::f64::consts::PI / 8.0;
                let w = (u + (e1 * t.cos() + e2 * t.sin()) * step).normalize();
                let fw = f(&w);
                if fw < fu {
                    (u, fu, improved) = (w, fw, true);
                    break;
                }
            }
            if !improved {
                step *= 0.5;
            }
        }
        best = best.min(fu);
    }
    best.max(0.0)
}

/// Penetration depth of two placed shapes (largest over their convex pieces).
fn depth(a: &Shape<f64>, pa: &Pose<f64>, b: &Shape<f64>, pb: &Pose<f64>) -> f64 {
    if let Shape::Plane { normal, offset } = b {
        let n = so3::rotate(&pb.rotation, normal);
        let d = offset + n.dot(&pb.translation);
        return pieces(a, pa)
            .iter()
            .map(|(s, p)| (d + h_world(s, p, &(-n))).max(0.0))
            .fold(0.0, f64::max);
    }
    let mut worst: f64 = 0.0;
    for x in pieces(a, pa) {
        for y in pieces(b, pb) {
            worst = worst.max(convex_depth(&x, &y));
        }
    }
    worst
}

fn pose_of(world: &World<f64>, x: &State<f64>, i: usize) -> Pose<f64> {
    let k = world.model.bodies[i].idx_q;
    let q = &x.q;
    Pose::new(
        Quat::new(q[k + 3], q[k + 4], q[k + 5], q[k + 6]),
        Vec3::new(q[k], q[k + 1], q[k + 2]),
    )
}

/// Largest penetration over the trajectory of every pair of body shapes
/// and of body shapes against static geometry: `(depth, pair, step)`.
fn max_depth(world: &World<f64>, traj: &Trajectory<f64>) -> (f64, String, usize) {
    let mut worst = (0.0, String::new(), 0);
    let nb = world.model.bodies.len();
    let last = traj.states.len() - 1;
    for (k, x) in traj.states.iter().enumerate() {
        let poses: Vec<Pose<f64>> = (0..nb).map(|i| pose_of(world, x, i)).collect();
        let mut see = |d: f64, what: String| {
            if d > worst.0 {
                worst = (d, what, k);
            }
        };
        for i in 0..nb {
            let Some(si) = &world.shapes[i] else { continue };
            for st in &world.statics {
                // Planes every step (exact and cheap); other statics as body pairs.
                if matches!(st.shape, Shape::Plane { .. }) || k % 5 == 0 || k == last {
                    see(
                        depth(si, &poses[i], &st.shape, &st.pose),
                        format!("{}–{}", world.model.bodies[i].name, st.name),
                    );
                }
            }
            if k % 5 == 0 || k == last {
                for j in i + 1..nb {
                    let Some(sj) = &world.shapes[j] else { continue };
                    see(
                        depth(si, &poses[i], sj, &poses[j]),
                        format!(
                            "{}–{}",
                            world.model.bodies[i].name, world.model.bodies[j].name
                        ),
                    );
                }
            }
        }
    }
    worst
}

// ------------------------------------------------------------ the matrix

fn at(x: f64, y: f64, z: f64) -> Pose<f64> {
    Pose::new(so3::identity(), Vec3::new(x, y, z))
}

/// Every body shape type, with an orientation to drop it in (a rotation
/// vector) and half extents for a box-like inertia.
fn shapes() -> Vec<(&'static str, Shape<f64>, Vec3<f64>, Vec3<f64>)> {
    let chamfer_n = |x: f64, y: f64| Vec3::new(x, y, 0.0).normalize();
    let poly = Shape::Polytope {
        normals: vec![
            Vec3::x(),
            -Vec3::x(),
            Vec3::y(),
            -Vec3::y(),
            Vec3::z(),
            -Vec3::z(),
            chamfer_n(1.0, 1.0),
            chamfer_n(1.0, -1.0),
            chamfer_n(-1.0, 1.0),
            chamfer_n(-1.0, -1.0),
        ],
        offsets: vec![
            0.09, 0.09, 0.075, 0.075, 0.06, 0.06, 0.0955, 0.0955, 0.0955, 0.0955,
        ],
        hull: None,
    };
    let ball = Shape::Sphere { radius: 0.05 };
    let union = Shape::Bundle {
        parts: vec![
            (
                Shape::Box {
                    half_extents: Vec3::new(0.08, 0.05, 0.05),
                },
                Pose::identity(),
            ),
            (ball.clone(), at(0.1, 0.0, 0.0)),
            (ball.clone(), at(-0.1, 0.0, 0.0)),
        ],
        op: BundleOp::Union,
    };
    let minkowski = Shape::Bundle {
        parts: vec![
            (
                Shape::Box {
                    half_extents: Vec3::new(0.07, 0.05, 0.04),
                },
                Pose::identity(),
            ),
            (Shape::Sphere { radius: 0.02 }, Pose::identity()),
        ],
        op: BundleOp::Minkowski,
    };
    let hexagon: Vec<Vec3<f64>> = (0..6)
        .map(|k| {
            Vec3::new(
                (k as f64 * std::f64::consts::FRAC_PI_3).cos(),
                (k as f64 * std::f64::consts::FRAC_PI_3).sin(),
                0.0,
            )
        })
        .collect();
    let half_pi = std::f64::consts::FRAC_PI_2;
    vec![
        (
            "sphere",
            Shape::Sphere { radius: 0.08 },
            Vec3::zeros(),
            Vec3::repeat(0.08),
        ),
        (
            "capsule",
            Shape::Capsule {
                radius: 0.05,
                half_length: 0.08,
            },
            Vec3::new(half_pi, 0.0, 0.0),
            Vec3::new(0.05, 0.05, 0.13),
        ),
        (
            "box",
            Shape::Box {
                half_extents: Vec3::new(0.1, 0.08, 0.06),
            },
            Vec3::zeros(),
            Vec3::new(0.1, 0.08, 0.06),
        ),
        (
            "cylinder",
            Shape::Cylinder {
                radius: 0.07,
                half_length: 0.07,
            },
            Vec3::zeros(),
            Vec3::new(0.07, 0.07, 0.07),
        ),
        (
            "cone",
            Shape::Cone {
                height: 0.16,
                half_angle: 0.5,
            },
            Vec3::zeros(),
            Vec3::new(0.08, 0.08, 0.08),
        ),
        (
            "ellipsoid",
            Shape::Ellipsoid {
                radii: Vec3::new(0.1, 0.08, 0.06),
            },
            Vec3::zeros(),
            Vec3::new(0.1, 0.08, 0.06),
        ),
        (
            "polytope",
            poly,
            Vec3::zeros(),
            Vec3::new(0.09, 0.075, 0.06),
        ),
        (
            "padded_polygon",
            Shape::PaddedPolygon {
                normals: hexagon,
                offsets: vec![0.06; 6],
                radius: 0.03,
            },
            Vec3::zeros(),
            Vec3::new(0.09, 0.09, 0.03),
        ),
        (
            "union_bundle",
            union,
            Vec3::zeros(),
            Vec3::new(0.15, 0.05, 0.05),
        ),
        (
            "minkowski_bundle",
            minkowski,
            Vec3::zeros(),
            Vec3::new(0.09, 0.07, 0.06),
        ),
    ]
}

fn box_inertia(m: f64, e: &Vec3<f64>) -> Mat3<f64> {
    Mat3::from_diagonal(&Vec3::new(
        e.y * e.y + e.z * e.z,
        e.x * e.x + e.z * e.z,
        e.x * e.x + e.y * e.y,
    )) * (m / 3.0)
}

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

/// A body to drop: name, shape, rotation vector, inertia half extents,
/// horizontal offset, gap above what it lands on.
struct Drop<'a> {
    name: &'a str,
    shape: &'a Shape<f64>,
    rot: Vec3<f64>,
    ext: Vec3<f64>,
}

/// The lowest and highest z of a shape at the origin with rotation `q`.
fn z_extent(s: &Shape<f64>, q: &Quat<f64>) -> (f64, f64) {
    let p = Pose::new(*q, Vec3::zeros());
    let zs: Vec<(f64, f64)> = pieces(s, &p)
        .iter()
        .map(|(s, p)| (-h_world(s, p, &-Vec3::z()), h_world(s, p, &Vec3::z())))
        .collect();
    (
        zs.iter().map(|z| z.0).fold(f64::INFINITY, f64::min),
        zs.iter().map(|z| z.1).fold(f64::NEG_INFINITY, f64::max),
    )
}

/// Simulates a stack (bottom first) dropped on the ground, each body
/// `gap` above the one below at `xy` offsets; returns the world, the
/// trajectory and each body's resting z if the stack stands.
fn stack(
    bodies: &[Drop<'_>],
    xy: &[[f64; 2]],
    gap: f64,
    steps: usize,
    statics: Vec<StaticGeometry<f64>>,
) -> (World<f64>, Trajectory<f64>, Vec<f64>) {
    try_stack(bodies, xy, gap, steps, statics).unwrap_or_else(|e| panic!("{e}"))
}

fn try_stack(
    bodies: &[Drop<'_>],
    xy: &[[f64; 2]],
    gap: f64,
    steps: usize,
    statics: Vec<StaticGeometry<f64>>,
) -> Result<(World<f64>, Trajectory<f64>, Vec<f64>), String> {
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::Ipm;
    w.statics.push(ground());
    w.statics.extend(statics);
    let mut positions = Vec::new();
    let mut quats = Vec::new();
    let mut rest = Vec::new();
    let mut top = 0.0;
    let mut rest_top = 0.0;
    for (k, b) in bodies.iter().enumerate() {
        w.add_body(
            b.name,
            1.0,
            box_inertia(1.0, &b.ext),
            Some(b.shape.clone()),
            Material {
                friction: 0.5,
                restitution: 0.0,
            },
        )
        .unwrap();
        let q = so3::exp(&b.rot);
        let (lo, hi) = z_extent(b.shape, &q);
        let z = top + gap - lo;
        positions.push([xy[k][0], xy[k][1], z]);
        quats.push(q);
        rest.push(rest_top - lo);
        top = z + hi;
        rest_top = rest_top - lo + hi;
    }
    let mut x0 = State::at_rest(&w.model, &positions);
    for (i, q) in quats.iter().enumerate() {
        let k = w.model.bodies[i].idx_q;
        x0.q[k + 3] = q.w;
        x0.q[k + 4] = q.i;
        x0.q[k + 5] = q.j;
        x0.q[k + 6] = q.k;
    }
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), steps).map_err(|e| {
        format!(
            "{}: {e}",
            bodies
                .iter()
                .rev()
                .map(|b| b.name)
                .collect::<Vec<_>>()
                .join(" on ")
        )
    })?;
    Ok((w, traj, rest))
}

#[test]
fn every_shape_type_rests_on_the_ground() {
    let shapes = shapes();
    let mut worst: f64 = 0.0;
    for (name, s, rot, ext) in &shapes {
        let (w, traj, rest) = stack(
            &[Drop {
                name,
                shape: s,
                rot: *rot,
                ext: *ext,
            }],
            &[[0.0, 0.0]],
            0.02,
            40,
            Vec::new(),
        );
        let (d, pair, k) = max_depth(&w, &traj);
        let z = traj.last().q[2];
        println!(
            "{name:<18} on ground: max depth {d:.2e} ({pair} at step {k}), final z {z:.6} (rest {:.6})",
            rest[0]
        );
        assert!(d < TOL, "{name}: penetration {d:e} ({pair}, step {k})");
        assert!(
            (z - rest[0]).abs() < TOL,
            "{name}: rests at z {z}, expected {}",
            rest[0]
        );
        worst = worst.max(d);
    }
    println!("worst depth on the ground {worst:.2e}");
}

#[test]
fn every_pair_of_shape_types_collides() {
    let shapes = shapes();
    let mut worst = (0.0, String::new());
    let mut failures = Vec::new();
    let mut count = 0;
    let mut iters = (0usize, 0usize, String::new());
    for (i, (na, sa, ra, ea)) in shapes.iter().enumerate() {
        for (nb, sb, rb, eb) in shapes.iter().skip(i) {
            let (a, b) = (format!("{na}_lower"), format!("{nb}_upper"));
            count += 1;
            let (w, traj, _) = match try_stack(
                &[
                    Drop {
                        name: &a,
                        shape: sa,
                        rot: *ra,
                        ext: *ea,
                    },
                    Drop {
                        name: &b,
                        shape: sb,
                        rot: *rb,
                        ext: *eb,
                    },
                ],
                &[[0.0, 0.0], [0.01, 0.005]],
                0.01,
                30,
                Vec::new(),
            ) {
                Ok(x) => x,
                Err(e) => {
                    println!("{nb:>16} on {na:<16}: FAILED {e}");
                    failures.push(e);
                    continue;
                }
            };
            let (d, pair, k) = max_depth(&w, &traj);
            let it = traj.stats.iter().map(|s| s.iterations).max().unwrap_or(0);
            let contacts = traj.stats.iter().map(|s| s.contacts).max().unwrap_or(0);
            if it > iters.0 {
                iters = (it, k, format!("{nb} on {na}"));
            }
            println!(
                "{nb:>16} on {na:<16}: max depth {d:.2e} ({pair} at step {k}), max iterations {it}, max contacts {contacts}"
            );
            // The upper body met the lower one (it did not miss it).
            let zb = traj.last().q[7 + 2];
            if contacts < 2 || zb < 0.05 {
                failures.push(format!("{nb} on {na}: no contact between the bodies? (contacts {contacts}, upper z {zb})"));
            }
            if d >= TOL {
                failures.push(format!(
                    "{nb} on {na}: penetration {d:e} ({pair}, step {k})"
                ));
            }
            if d > worst.0 {
                worst = (d, format!("{nb} on {na}"));
            }
        }
    }
    println!(
        "{count} pairs, worst depth {:.2e} ({}), most iterations {} ({})",
        worst.0, worst.1, iters.0, iters.2
    );
    assert!(
        failures.is_empty(),
        "{} of {count} pairs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The penetration measure of this file against known depths.
#[test]
fn depth_measure_known_answers() {
    let bx = Shape::Box {
        half_extents: Vec3::new(0.1, 0.1, 0.05),
    };
    let ball = Shape::Sphere { radius: 0.1 };
    let rot = |v: Vec3<f64>, t: Vec3<f64>| Pose::new(so3::exp(&v), t);
    // Boxes face to face, overlapping by 0.01 along z.
    let d = depth(&bx, &at(0.0, 0.0, 0.0), &bx, &at(0.02, 0.01, 0.09));
    assert!((d - 0.01).abs() < 1e-6, "face {d}");
    // Apart by 0.01: 0.
    assert_eq!(
        depth(&bx, &at(0.0, 0.0, 0.0), &bx, &at(0.0, 0.0, 0.11)),
        0.0
    );
    // A box edge down (45° about x) into a face by 0.003.
    let s = 2f64.sqrt();
    let d = depth(
        &bx,
        &at(0.0, 0.0, 0.0),
        &bx,
        &rot(
            Vec3::new(std::f64::consts::FRAC_PI_4, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 0.05 + 0.075 * s - 0.003),
        ),
    );
    assert!((d - 0.003).abs() < 1e-6, "edge {d}");
    // Spheres overlapping by 0.02.
    let d = depth(&ball, &at(0.0, 0.0, 0.0), &ball, &at(0.0, 0.18, 0.0));
    assert!((d - 0.02).abs() < 1e-6, "spheres {d}");
    // Sphere 0.004 into a box face; into the plane.
    let d = depth(&ball, &at(0.0, 0.0, 0.146), &bx, &at(0.0, 0.0, 0.0));
    assert!((d - 0.004).abs() < 1e-6, "sphere–box {d}");
    let plane = Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    };
    let d = depth(
        &bx,
        &rot(Vec3::new(0.3, 0.2, 0.0), Vec3::new(0.0, 0.0, 0.05)),
        &plane,
        &Pose::identity(),
    );
    assert!(d > 0.01, "tilted box in the plane {d}");
}

#[test]
fn box_on_box_face_edge_and_corner() {
    let bx = Shape::Box {
        half_extents: Vec3::new(0.1, 0.1, 0.05),
    };
    let e = Vec3::new(0.1, 0.1, 0.05);
    let corner = Vec3::new(1.0, -1.0, 0.0).normalize() * (1.0 / 2f64.sqrt()).atan2(0.5);
    let cases: [(&str, Vec3<f64>); 3] = [
        ("face", Vec3::zeros()),
        ("edge", Vec3::new(std::f64::consts::FRAC_PI_4, 0.0, 0.0)),
        ("corner", corner + Vec3::new(0.0, 0.0, 0.0)),
    ];
    for (case, rot) in cases {
        let (w, traj, rest) = stack(
            &[
                Drop {
                    name: "lower",
                    shape: &bx,
                    rot: Vec3::zeros(),
                    ext: e,
                },
                Drop {
                    name: "upper",
                    shape: &bx,
                    rot,
                    ext: e,
                },
            ],
            &[[0.0, 0.0], [0.0, 0.0]],
            0.01,
            40,
            Vec::new(),
        );
        let (d, pair, k) = max_depth(&w, &traj);
        let z = traj.last().q[7 + 2];
        println!("box on box ({case:<6}): max depth {d:.2e} ({pair} at step {k}), upper z {z:.6}");
        assert!(
            d < TOL,
            "box on box ({case}): penetration {d:e} ({pair}, step {k})"
        );
        assert!(
            z > 0.1 - TOL,
            "box on box ({case}): the upper box fell through (z {z})"
        );
        if case == "face" {
            assert!(
                (z - rest[1]).abs() < TOL,
                "face: rests at {z}, expected {}",
                rest[1]
            );
            assert!((traj.last().q[2] - rest[0]).abs() < TOL);
        }
    }
    // Edge on edge: a static box with an edge up (45° about x), a box
    // dropped with an edge down (45° about y) across it.
    let s = 2f64.sqrt();
    let fixed = StaticGeometry {
        name: "ridge".into(),
        shape: Shape::Box {
            half_extents: Vec3::new(0.3, 0.1, 0.1),
        },
        pose: Pose::new(
            so3::exp(&Vec3::new(std::f64::consts::FRAC_PI_4, 0.0, 0.0)),
            Vec3::new(0.0, 0.0, 0.1 * s),
        ),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    };
    let cube = Shape::Box {
        half_extents: Vec3::repeat(0.05),
    };
    let mut w = World::<f64>::new(0.01);
    w.solver = SolverKind::Ipm;
    w.statics.push(ground());
    w.statics.push(fixed);
    w.add_body(
        "cube",
        1.0,
        box_inertia(1.0, &Vec3::repeat(0.05)),
        Some(cube),
        Material {
            friction: 0.5,
            restitution: 0.0,
        },
    )
    .unwrap();
    let q = so3::exp(&Vec3::new(0.0, std::f64::consts::FRAC_PI_4, 0.0));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.2 * s + 0.05 * s + 0.01]]);
    x0.q[3] = q.w;
    x0.q[4] = q.i;
    x0.q[5] = q.j;
    x0.q[6] = q.k;
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 40).expect("edge on edge");
    let (d, pair, k) = max_depth(&w, &traj);
    println!(
        "box on box (edge–edge): max depth {d:.2e} ({pair} at step {k}), cube z {:.6}",
        traj.last().q[2]
    );
    assert!(d < TOL, "edge–edge: penetration {d:e} ({pair}, step {k})");
}

#[test]
fn example_scenes_rest_under_ipm() {
    // (scene, [(body index, resting z)])
    let cases: [(&str, &[(usize, f64)]); 4] = [
        ("box_tower", &[(0, 0.1), (1, 0.3), (2, 0.5), (3, 0.7)]),
        ("polytope_drop", &[(0, 0.2)]),
        ("peg_in_hole", &[(0, 0.15)]),
        ("bundles", &[(0, 0.1), (1, 0.13)]),
    ];
    for (name, heights) in cases {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenes")
            .join(format!("{name}.toml"));
        let mut scene = dualsim::scene::load(&path).expect("scene loads");
        scene.world.solver = SolverKind::Ipm;
        let traj = rollout(&scene.world, &scene.initial, &scene.controls, scene.steps)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (d, pair, k) = max_depth(&scene.world, &traj);
        let x = traj.last();
        for &(i, z0) in heights {
            let kq = scene.world.model.bodies[i].idx_q;
            let z = x.q[kq + 2];
            println!(
                "{name:<14} {:<14} z {z:.6} (rest {z0})",
                scene.world.model.bodies[i].name
            );
            assert!(
                (z - z0).abs() < TOL,
                "{name}: body {i} ends at z {z}, rests at {z0}"
            );
        }
        println!("{name:<14} max depth {d:.2e} ({pair} at step {k})");
        assert!(d < TOL, "{name}: penetration {d:e} ({pair}, step {k})");
    }
}

/// Derivatives through conic contacts under `ipm`: `ift`, `lift`,
/// `unrolled` and central differences agree at a resting polytope (face on
/// the ground) and in the box tower (faces on faces), at the scenes' ρ.
/// The tower's two lowest boxes have flush y faces, where the corners of
/// their contact polygon switch between one box's edge and the other's
/// (a kink of the contact geometry, `collision::box_box`): there `fd`
/// must leave those columns out (and compare the others); with the upper
/// box moved 1 mm along y the faces are not flush and no column is left
/// out.
#[test]
fn derivatives_through_conic_contacts_agree() {
    use dualsim::diff::{CheckOptions, DiffOptions, check};
    for (name, k, shift) in [
        ("polytope_drop", 20, 0.0),
        ("box_tower", 3, 1e-3),
        ("box_tower", 3, 0.0),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/scenes")
            .join(format!("{name}.toml"));
        let mut scene = dualsim::scene::load(&path).expect("scene loads");
        scene.world.solver = SolverKind::Ipm;
        let flush = name == "box_tower" && shift == 0.0;
        if name == "box_tower" {
            // box2 (the second body): position y
            scene.initial.q[7 + 1] += shift;
        }
        let x = rollout(&scene.world, &scene.initial, &scene.controls, k)
            .unwrap()
            .last()
            .clone();
        // the one-step comparison at this state (no event steps, no
        // rollout comparison)
        let opts = CheckOptions {
            samples: 1,
            diff: DiffOptions {
                fd_eps: 1e-7,
                ..CheckOptions::default().diff
            },
            max_event_samples: 0,
            rollout: None,
            ..Default::default()
        };
        let report = check(
            &scene.world,
            &x,
            &Controls::Constant(scene.world.zero_control()),
            1,
            &opts,
        )
        .unwrap();
        let worst = |key: &str| {
            report
                .blocks
                .iter()
                .map(|b| b.max_rel_diff[key])
                .fold(0.0, f64::max)
        };
        let (l, un, f) = (
            worst("ift_vs_lift"),
            worst("ift_vs_unrolled"),
            worst("ift_vs_fd"),
        );
        println!(
            "{name:<14} (y shift {shift:e}) step {k}: lift {l:.1e}  unrolled {un:.1e}  fd {f:.1e}  (fd skipped {})",
            report.fd_skipped_columns
        );
        assert!(
            report.blocks.iter().all(|b| b.norm.is_finite()),
            "{name}: non-finite Jacobian"
        );
        assert!(
            l <= 1e-9 && un <= 1e-7 && f <= 1e-5,
            "{name}: {l:e} {un:e} {f:e}"
        );
        if flush {
            assert!(
                report.fd_skipped_columns > 0,
                "{name}: flush faces, no fd column left out"
            );
        } else {
            assert_eq!(
                report.fd_skipped_columns, 0,
                "{name} (y shift {shift:e}): fd columns skipped"
            );
        }
        assert!(report.passed);
    }
}
