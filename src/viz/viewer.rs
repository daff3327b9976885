//! What the 3-D viewer draws besides the states: the geometry of a world
//! (shapes in their frames, as JSON), the world poses of robot links, the
//! energy of a state, and the contacts of each step.
//!
//! Shapes are described by their parameters (the page builds the meshes)
//! except polytopes and padded polygons, whose faces are computed here
//! (convex polygons in the shape frame).

use serde_json::{Value, json};

use crate::contact::ContactImpulse;
use crate::dynamics::{Data, crba, kinematics};
use crate::geometry::{BundleOp, Shape};
use crate::math::{Pose, Vec3};
use crate::sim::{State, World};

fn v3(v: &Vec3<f64>) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// A pose as `[x, y, z, w, qx, qy, qz]` (translation, unit quaternion).
pub fn pose_json(p: &Pose<f64>) -> [f64; 7] {
    let r = p.rotation;
    let n = r.norm();
    let n = if n > 0.0 { n } else { 1.0 };
    [
        p.translation.x,
        p.translation.y,
        p.translation.z,
        r.w / n,
        r.i / n,
        r.j / n,
        r.k / n,
    ]
}

/// The faces of the convex polytope `{x : nᵢ·x ≤ bᵢ}`, each a polygon
/// (vertices in counter-clockwise order seen from outside). Vertices are
/// the feasible intersections of three planes; faces with fewer than three
/// distinct vertices are dropped. Unbounded or empty polytopes give no
/// face.
pub fn polytope_faces(normals: &[Vec3<f64>], offsets: &[f64]) -> Vec<Vec<[f64; 3]>> {
    let m = normals.len().min(offsets.len());
    let scale = offsets[..m]
        .iter()
        .fold(1e-3_f64, |a, b| a.max(b.abs()))
        .max(1e-3);
    let tol = 1e-9 * scale;
    let mut verts: Vec<Vec3<f64>> = Vec::new();
    for i in 0..m {
        for j in i + 1..m {
            for k in j + 1..m {
                let a = nalgebra::Matrix3::from_rows(&[
                    normals[i].transpose(),
                    normals[j].transpose(),
                    normals[k].transpose(),
                ]);
                let Some(inv) = a.try_inverse() else { continue };
                let x = inv * Vec3::new(offsets[i], offsets[j], offsets[k]);
                if !x.iter().all(|c| c.is_finite()) {
                    continue;
                }
                if (0..m).all(|l| normals[l].dot(&x) <= offsets[l] + tol)
                    && !verts.iter().any(|v| (v - x).norm() <= tol * 10.0)
                {
                    verts.push(x);
                }
            }
        }
    }
    let mut faces = Vec::new();
    for l in 0..m {
        let n = normals[l];
        let nn = n.norm();
        if !(nn > 0.0) {
            continue;
        }
        let on: Vec<Vec3<f64>> = verts
            .iter()
            .filter(|v| (n.dot(v) - offsets[l]).abs() <= tol * 10.0 * nn.max(1.0))
            .copied()
            .collect();
        if on.len() < 3 {
            continue;
        }
        let c = on.iter().fold(Vec3::zeros(), |a, b| a + b) / on.len() as f64;
        let nu = n / nn;
        let seed = if nu.x.abs() < 0.9 {
            Vec3::x()
        } else {
            Vec3::y()
        };
        let e1 = nu.cross(&seed).normalize();
        let e2 = nu.cross(&e1);
        let mut ring: Vec<(f64, Vec3<f64>)> = on
            .iter()
            .map(|v| ((v - c).dot(&e2).atan2((v - c).dot(&e1)), *v))
            .collect();
        ring.sort_by(|a, b| a.0.total_cmp(&b.0));
        faces.push(ring.iter().map(|(_, v)| v3(v)).collect());
    }
    faces
}

/// The vertices of the convex polygon `{p in the xy plane : nᵢ·p ≤ bᵢ}`
/// (in-plane normals) in counter-clockwise order.
fn polygon_vertices(normals: &[Vec3<f64>], offsets: &[f64]) -> Vec<[f64; 2]> {
    let m = normals.len().min(offsets.len());
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for i in 0..m {
        for j in i + 1..m {
            let (a, b, c, d) = (normals[i].x, normals[i].y, normals[j].x, normals[j].y);
            let det = a * d - b * c;
            if det.abs() < 1e-12 {
                continue;
            }
            let x = (offsets[i] * d - b * offsets[j]) / det;
            let y = (a * offsets[j] - c * offsets[i]) / det;
            let ok = (0..m).all(|l| normals[l].x * x + normals[l].y * y <= offsets[l] + 1e-9);
            if ok && !pts.iter().any(|p| (p.0 - x).hypot(p.1 - y) < 1e-9) {
                pts.push((x, y));
            }
        }
    }
    let n = pts.len().max(1) as f64;
    let (cx, cy) = pts
        .iter()
        .fold((0.0, 0.0), |a, p| (a.0 + p.0 / n, a.1 + p.1 / n));
    pts.sort_by(|p, q| {
        (p.1 - cy)
            .atan2(p.0 - cx)
            .total_cmp(&(q.1 - cy).atan2(q.0 - cx))
    });
    pts.iter().map(|p| [p.0, p.1]).collect()
}

/// A shape as the viewer's JSON: `{"type", …parameters}`; a bundle lists
/// its parts with their poses; polytopes carry their `faces`; a padded
/// polygon carries its polygon's `vertices` (xy) and `radius`.
pub fn shape_json(s: &Shape<f64>) -> Value {
    match s {
        Shape::Sphere { radius } => json!({"type": "sphere", "radius": radius}),
        Shape::Box { half_extents } => {
            json!({"type": "box", "half_extents": v3(half_extents)})
        }
        Shape::Capsule {
            radius,
            half_length,
        } => json!({"type": "capsule", "radius": radius, "half_length": half_length}),
        Shape::Cylinder {
            radius,
            half_length,
        } => json!({"type": "cylinder", "radius": radius, "half_length": half_length}),
        Shape::Cone { height, half_angle } => {
            json!({"type": "cone", "height": height, "half_angle": half_angle})
        }
        Shape::Ellipsoid { radii } => json!({"type": "ellipsoid", "radii": v3(radii)}),
        Shape::Polytope {
            normals, offsets, ..
        } => {
            json!({"type": "polytope", "faces": polytope_faces(normals, offsets)})
        }
        Shape::PaddedPolygon {
            normals,
            offsets,
            radius,
        } => json!({
            "type": "padded_polygon",
            "vertices": polygon_vertices(normals, offsets),
            "radius": radius,
        }),
        Shape::Plane { normal, offset } => {
            json!({"type": "plane", "normal": v3(normal), "offset": offset})
        }
        Shape::Bundle { parts, op } => json!({
            "type": "bundle",
            "op": match op { BundleOp::Union => "union", BundleOp::Minkowski => "minkowski" },
            "parts": parts.iter().map(|(s, p)| json!({"pose": pose_json(p), "shape": shape_json(s)})).collect::<Vec<_>>(),
        }),
        Shape::Points { points, .. } => json!({
            "type": "points",
            "points": points.iter().map(v3).collect::<Vec<_>>(),
        }),
    }
}

/// The bodies (model indices) of every robot link, robot by robot, in
/// the order of [`link_poses`].
pub fn drawn_links(world: &World<f64>) -> Vec<usize> {
    world
        .robots
        .iter()
        .flat_map(|r| r.first_body..r.first_body + r.bodies)
        .collect()
}

/// The geometry of `world` for the viewer: `{"bodies": [{name, robot,
/// shape}], "statics": [{name, pose, shape}], "links": [{robot, name,
/// parent, shapes: [{pose, shape}]}]}`: free bodies in the order of the
/// trajectory's `bodies` (`robot`: the robot whose floating base it is, or
/// null; `shape` null when it has none), every robot link in the order of
/// each frame's `links` (`parent`: index in `links`, or null for a root;
/// `com`: its centre of mass in the link frame; `shapes`: its collision
/// shapes in the link frame, possibly none).
pub fn geometry_json(world: &World<f64>) -> Value {
    let m = &world.model;
    let robot_of = |i: usize| {
        world
            .robots
            .iter()
            .find(|r| i >= r.first_body && i < r.first_body + r.bodies)
            .map(|r| r.name.clone())
    };
    let bodies: Vec<Value> = m
        .bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| b.is_free_root())
        .map(|(i, b)| {
            let shape = world
                .shapes
                .get(i)
                .and_then(|s| s.as_ref())
                .map(shape_json)
                .unwrap_or(Value::Null);
            json!({"name": b.name, "robot": robot_of(i), "shape": shape})
        })
        .collect();
    let statics: Vec<Value> = world
        .statics
        .iter()
        .map(|s| json!({"name": s.name, "pose": pose_json(&s.pose), "shape": shape_json(&s.shape)}))
        .collect();
    let drawn = drawn_links(world);
    let links: Vec<Value> = drawn
        .iter()
        .map(|&body| {
            let shapes: Vec<Value> = world
                .link_shapes
                .iter()
                .filter(|a| a.body == body)
                .map(|a| json!({"pose": pose_json(&a.pose), "shape": shape_json(&a.shape)}))
                .collect();
            let parent = m.bodies[body]
                .parent
                .and_then(|p| drawn.iter().position(|&d| d == p));
            json!({
                "robot": robot_of(body),
                "name": m.bodies[body].name,
                "parent": parent,
                "com": v3(&m.bodies[body].inertia.com),
                "shapes": shapes,
            })
        })
        .collect();
    json!({"bodies": bodies, "statics": statics, "links": links})
}

/// World poses of the `links` (model body indices) at `state`, by forward
/// kinematics.
pub fn link_poses(
    world: &World<f64>,
    data: &mut Data<f64>,
    links: &[usize],
    state: &State<f64>,
) -> Vec<[f64; 7]> {
    if links.is_empty() {
        return Vec::new();
    }
    kinematics::forward_kinematics(&world.model, data, &state.q, None);
    links.iter().map(|&i| pose_json(&data.omi[i])).collect()
}

/// Total mechanical energy `½ vᵀ M v − Σ mᵢ g·cᵢ` (J) of `state`.
pub fn energy(world: &World<f64>, data: &mut Data<f64>, state: &State<f64>) -> f64 {
    let m = &world.model;
    crba::kinetic_energy(m, data, &state.q, &state.v) + crba::potential_energy(m, data, &state.q)
}

/// The contacts of a step as the viewer's JSON: `[{"point", "force"}]`,
/// the contact point (world, at q⁺) and the contact force on body `a`
/// (impulse / dt: normal and tangential parts, N).
pub fn contacts_json(contacts: &[ContactImpulse<f64>], dt: f64) -> Value {
    Value::Array(
        contacts
            .iter()
            .filter(|c| c.normal_impulse > 0.0 || c.tangent_impulse.norm() > 0.0)
            .map(|c| {
                let f = (c.normal * c.normal_impulse + c.tangent_impulse) / dt;
                json!({"point": v3(&c.point), "force": v3(&f)})
            })
            .collect(),
    )
}
