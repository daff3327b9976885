//! What a loaded scene holds, for `dualsim info` (reference:
//! `docs/scene-format.md`, "`dualsim info`"): its free bodies and statics,
//! and for each robot its links, its joints in state order with their
//! entries of `q` and `v`, limits and damping, the collision shapes of each
//! link with their hull sizes, and which pairs of bodies are checked for
//! contact and which are not.
//!
//! ```
//! let src = "[sim]\ndt = 0.01\nsteps = 1\n[[body]]\nname = \"b\"\nmass = 1.0\n\
//!            inertia = [0.1, 0.1, 0.1]\nposition = [0.0, 0.0, 1.0]\nshape = { type = \"sphere\", radius = 0.1 }\n\
//!            [[static]]\nname = \"ground\"\nshape = { type = \"plane\", normal = [0.0, 0.0, 1.0] }\n";
//! let scene = dualsim::scene::parse(src, "inline.toml").unwrap();
//! let info = dualsim::scene::info::info(&scene);
//! assert_eq!(info["contact_pairs"]["considered"][0], serde_json::json!(["b", "ground"]));
//! ```

use serde_json::{Value, json};

use super::Scene;
use crate::dynamics::Joint;
use crate::dynamics::Model;
use crate::dynamics::urdf::UrdfRobot;
use crate::geometry::Shape;
use crate::sim::Robot;

/// Why a pair of bodies is never checked for contact.
pub const LINK_LINK: &str = "link–link contact (within a robot or between robots) is not modelled";

fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

fn range(start: usize, len: usize) -> Value {
    json!([start, start + len])
}

/// The scene's description as one JSON document (the `dualsim info --json`
/// output).
pub fn info(scene: &Scene) -> Value {
    let w = &scene.world;
    let m = &w.model;
    let robot_of = |i: usize| {
        w.robots
            .iter()
            .position(|r| (r.first_body..r.first_body + r.bodies).contains(&i))
    };
    let bodies: Vec<Value> = m
        .bodies
        .iter()
        .enumerate()
        .filter(|(i, b)| b.is_free_root() && robot_of(*i).is_none())
        .map(|(i, b)| {
            json!({
                "name": b.name,
                "mass": b.inertia.mass,
                "shape": w.shapes[i].as_ref().map(|s| s.type_name()),
                "q": range(b.idx_q, 7),
                "v": range(b.idx_v, 6),
            })
        })
        .collect();
    let statics: Vec<Value> = w
        .statics
        .iter()
        .map(|s| json!({"name": s.name, "shape": s.shape.type_name()}))
        .collect();
    let mut robots = Vec::new();
    for (ri, r) in w.robots.iter().enumerate() {
        let Some(u) = scene.robots.get(ri) else {
            continue;
        };
        robots.push(robot_json(m, r, u));
    }
    // contact pairs, by body: every body with a shape against every static
    // and every other such body, except link–link pairs
    let mut shaped: Vec<usize> = (0..m.bodies.len())
        .filter(|&i| w.shapes[i].is_some() || w.link_shapes.iter().any(|s| s.body == i))
        .collect();
    shaped.sort_unstable();
    let mut considered = Vec::new();
    let mut excluded = Vec::new();
    for (a, &i) in shaped.iter().enumerate() {
        for &j in &shaped[a + 1..] {
            let (ni, nj) = (&m.bodies[i].name, &m.bodies[j].name);
            if robot_of(i).is_some() && robot_of(j).is_some() {
                excluded.push(json!({"a": ni, "b": nj, "reason": LINK_LINK}));
            } else {
                considered.push(json!([ni, nj]));
            }
        }
        for s in &w.statics {
            considered.push(json!([m.bodies[i].name, s.name]));
        }
    }
    json!({
        "solver": w.solver.name(),
        "dt": w.dt,
        "steps": scene.steps,
        "nq": m.nq,
        "nv": m.nv,
        "bodies": bodies,
        "statics": statics,
        "robots": robots,
        "contact_pairs": {"considered": considered, "excluded": excluded},
    })
}

/// One robot of the [`info`] document: its joints in state order, fixed
/// joints, links with their collision shapes, and mimic joints (`u`: the
/// robot as imported, `r`: its place in the world's model `m`).
fn robot_json(m: &Model<f64>, r: &Robot, u: &UrdfRobot) -> Value {
    let link = |k: usize| u.model.bodies[k].name.clone();
    let mut joints = Vec::new();
    let mut fixed = Vec::new();
    for (k, b) in m.bodies[r.first_body..r.first_body + r.bodies]
        .iter()
        .enumerate()
    {
        let j = &u.joints[k];
        let parent = u.model.bodies[k].parent.map(link);
        if b.joint == Joint::Fixed {
            fixed.push(json!({
                "name": j.name,
                "type": j.kind,
                "link": link(k),
                "parent_link": parent,
                "inertia_merged_into": u.welded_to[k].map(link),
            }));
            continue;
        }
        let axis = match b.joint {
            Joint::Revolute { axis } | Joint::Prismatic { axis } => json!(axis),
            _ => Value::Null,
        };
        let l = &b.limits;
        joints.push(json!({
            "name": j.name,
            "type": j.kind,
            "link": link(k),
            "parent_link": parent,
            "axis": axis,
            "lower": finite(l.lower),
            "upper": finite(l.upper),
            "effort": finite(l.effort),
            "velocity": finite(l.velocity),
            "damping": j.damping,
            "friction": j.friction,
            "q": range(b.idx_q, b.joint.nq()),
            "v": range(b.idx_v, b.joint.nv()),
        }));
    }
    let links: Vec<Value> = u
        .model
        .bodies
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let shapes: Vec<Value> = u
                .collisions
                .iter()
                .filter(|c| c.body == k)
                .map(|c| {
                    let simulated = match c.shape {
                        Shape::Cylinder { .. } => "capsule",
                        ref s => s.type_name(),
                    };
                    let mut s = json!({"type": simulated, "urdf": match c.mesh {
                        Some(_) => "mesh",
                        None => c.shape.type_name(),
                    }});
                    if let Some(mesh) = &c.mesh {
                        s["mesh"] = json!(mesh.filename);
                        s["hull_vertices"] = json!(mesh.vertices);
                        s["hull_faces"] = json!(mesh.faces);
                    }
                    s
                })
                .collect();
            json!({
                "name": b.name,
                "parent": b.parent.map(link),
                "mass": b.inertia.mass,
                "inertia_merged_into": u.welded_to[k].map(link),
                "shapes": shapes,
            })
        })
        .collect();
    let mimic: Vec<Value> = u
        .mimic
        .iter()
        .map(|x| {
            json!({"joint": x.joint, "mimicked": x.mimicked,
                   "multiplier": x.multiplier, "offset": x.offset})
        })
        .collect();
    json!({
        "name": r.name,
        "urdf_name": u.name,
        "base": if m.bodies[r.first_body].joint == Joint::Free { "floating" } else { "fixed" },
        "nq": r.nq,
        "nv": r.nv,
        "q": range(r.idx_q, r.nq),
        "v": range(r.idx_v, r.nv),
        "mass": u.total_mass(),
        "ignore_joint_limits": r.ignore_joint_limits,
        "joints": joints,
        "fixed_joints": fixed,
        "links": links,
        "mimic": mimic,
    })
}

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{x}"),
        None => "inf".into(),
    }
}

fn lo(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{x}"),
        None => "-inf".into(),
    }
}

fn span(v: &Value) -> String {
    let (a, b) = (v[0].as_u64().unwrap_or(0), v[1].as_u64().unwrap_or(0));
    match b.saturating_sub(a) {
        0 => "-".into(),
        1 => format!("{a}"),
        _ => format!("{a}..{b}"),
    }
}

/// The [`info`] document as text (the `dualsim info` output).
pub fn text(info: &Value) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "backend `{}`, dt = {} s, {} steps; state: nq = {}, nv = {}",
        info["solver"].as_str().unwrap_or(""),
        info["dt"],
        info["steps"],
        info["nq"],
        info["nv"]
    );
    for b in info["bodies"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "body `{}`: mass {} kg, shape {}, q[{}], v[{}]",
            b["name"].as_str().unwrap_or(""),
            b["mass"],
            b["shape"].as_str().unwrap_or("none"),
            span(&b["q"]),
            span(&b["v"])
        );
    }
    for st in info["statics"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "static `{}`: {}",
            st["name"].as_str().unwrap_or(""),
            st["shape"].as_str().unwrap_or("")
        );
    }
    for r in info["robots"].as_array().into_iter().flatten() {
        robot_text(&mut s, r);
    }
    let pairs = &info["contact_pairs"];
    let considered = pairs["considered"].as_array().cloned().unwrap_or_default();
    let excluded = pairs["excluded"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(
        s,
        "\ncontact pairs: {} considered, {} excluded",
        considered.len(),
        excluded.len()
    );
    for p in &considered {
        let _ = writeln!(
            s,
            "  {} – {}",
            p[0].as_str().unwrap_or(""),
            p[1].as_str().unwrap_or("")
        );
    }
    if !excluded.is_empty() {
        let _ = writeln!(s, "  excluded ({LINK_LINK}):");
        for p in &excluded {
            let _ = writeln!(
                s,
                "  {} – {}",
                p["a"].as_str().unwrap_or(""),
                p["b"].as_str().unwrap_or("")
            );
        }
    }
    s
}

/// One robot of the [`info`] document as text (appended to `s`).
fn robot_text(s: &mut String, r: &Value) {
    use std::fmt::Write;
    let joints = r["joints"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(
        s,
        "\nrobot `{}` (URDF robot `{}`): {} base, {} joints with coordinates, nq = {}, nv = {} \
         (q[{}], v[{}]), mass {:.6} kg{}",
        r["name"].as_str().unwrap_or(""),
        r["urdf_name"].as_str().unwrap_or(""),
        r["base"].as_str().unwrap_or(""),
        joints.len(),
        r["nq"],
        r["nv"],
        span(&r["q"]),
        span(&r["v"]),
        r["mass"].as_f64().unwrap_or(0.0),
        if r["ignore_joint_limits"].as_bool() == Some(true) {
            ", joint limits ignored"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "  joints, in state order:");
    let _ = writeln!(
        s,
        "  {:>7} {:>7}  {:<28} {:<11} {:<18} {:<28} {:>9} {:>9} {:>8} {:>8}  link",
        "q",
        "v",
        "joint",
        "type",
        "axis",
        "limits [lower, upper]",
        "effort",
        "velocity",
        "damping",
        "friction"
    );
    for j in &joints {
        let axis = match j["axis"].as_array() {
            Some(a) => format!("[{}]", a.iter().map(num).collect::<Vec<_>>().join(", ")),
            None => "-".into(),
        };
        let limits = format!("[{}, {}]", lo(&j["lower"]), num(&j["upper"]));
        let _ = writeln!(
            s,
            "  {:>7} {:>7}  {:<28} {:<11} {:<18} {:<28} {:>9} {:>9} {:>8} {:>8}  {}",
            span(&j["q"]),
            span(&j["v"]),
            j["name"].as_str().unwrap_or(""),
            j["type"].as_str().unwrap_or(""),
            axis,
            limits,
            num(&j["effort"]),
            num(&j["velocity"]),
            num(&j["damping"]),
            num(&j["friction"]),
            j["link"].as_str().unwrap_or("")
        );
    }
    let fixed = r["fixed_joints"].as_array().cloned().unwrap_or_default();
    if !fixed.is_empty() {
        let _ = writeln!(s, "  fixed joints (no coordinates):");
        for f in &fixed {
            let merged = match f["inertia_merged_into"].as_str() {
                Some(t) => format!(", inertia merged into `{t}`"),
                None => String::new(),
            };
            let to = match f["parent_link"].as_str() {
                Some(p) => format!("`{p}`"),
                None => "the world".into(),
            };
            let _ = writeln!(
                s,
                "    {} ({}): `{}` welded to {to}{merged}",
                f["name"].as_str().unwrap_or(""),
                f["type"].as_str().unwrap_or(""),
                f["link"].as_str().unwrap_or(""),
            );
        }
    }
    for x in r["mimic"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  mimic joint `{}` follows `{}` (× {} + {}), simulated as an independent joint",
            x["joint"].as_str().unwrap_or(""),
            x["mimicked"].as_str().unwrap_or(""),
            x["multiplier"],
            x["offset"]
        );
    }
    let _ = writeln!(s, "  links and their collision shapes:");
    for l in r["links"].as_array().into_iter().flatten() {
        let shapes: Vec<String> = l["shapes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| match c["mesh"].as_str() {
                Some(f) => format!(
                    "hull of `{f}` ({} vertices, {} faces)",
                    c["hull_vertices"], c["hull_faces"]
                ),
                None if c["urdf"] != c["type"] => format!(
                    "{} (URDF {})",
                    c["type"].as_str().unwrap_or(""),
                    c["urdf"].as_str().unwrap_or("")
                ),
                None => c["type"].as_str().unwrap_or("").to_string(),
            })
            .collect();
        let mass = format!("{:.6}", l["mass"].as_f64().unwrap_or(0.0));
        let _ = writeln!(
            s,
            "    {:<28} mass {:<10} {}",
            l["name"].as_str().unwrap_or(""),
            mass,
            if shapes.is_empty() {
                "no collision shape".to_string()
            } else {
                shapes.join("; ")
            }
        );
    }
}
