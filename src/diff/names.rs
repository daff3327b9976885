//! Names of derivative inputs and outputs as written on the command line
//! (`NAME.FIELD`, SCENE.md): `box.position`, `ball.mass`,
//! `box.shape.half_extents`, `box.control`, `sim.gravity`, `sim.dt`.

use super::{DiffError, Input, Param};
use crate::geometry::Shape;
use crate::math::{skew, DMat, Mat3};
use crate::sim::{State, World};

/// A named group of output rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// `NAME.FIELD`.
    pub label: String,
    /// Body index (robot index for robot fields).
    pub body: usize,
    /// Which field.
    pub field: OutputField,
}

/// An output field of a body at the final step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputField {
    /// Position (3).
    Position,
    /// Orientation quaternion `[w, x, y, z]` (4).
    Orientation,
    /// Linear velocity (3).
    Velocity,
    /// Angular velocity (3).
    AngularVelocity,
    /// A robot's joint coordinates (rows in its tangent space: one per
    /// velocity coordinate).
    RobotQ,
    /// A robot's joint velocities.
    RobotV,
}

fn body(world: &World<f64>, name: &str, full: &str) -> Result<usize, DiffError> {
    world
        .model
        .body_index(name)
        .ok_or_else(|| DiffError::BadParam(format!("`{full}`: no body named `{name}`")))
}

/// Parses a comma-separated list of outputs.
pub fn parse_outputs(world: &World<f64>, list: &str) -> Result<Vec<Output>, DiffError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, field) = item.split_once('.').ok_or_else(|| {
                DiffError::BadParam(format!("`{item}`: expected NAME.FIELD"))
            })?;
            if let Some(r) = world.robot_index(name) {
                let field = match field {
                    "q" => OutputField::RobotQ,
                    "v" => OutputField::RobotV,
                    other => {
                        return Err(DiffError::BadParam(format!(
                            "`{item}`: unknown robot output `{other}` (expected q or v)"
                        )))
                    }
                };
                return Ok(Output { label: item.to_string(), body: r, field });
            }
            let b = body(world, name, item)?;
            let field = match field {
                "position" => OutputField::Position,
                "orientation" => OutputField::Orientation,
                "velocity" => OutputField::Velocity,
                "angular_velocity" => OutputField::AngularVelocity,
                other => {
                    return Err(DiffError::BadParam(format!(
                        "`{item}`: unknown output field `{other}` (expected position, \
                         orientation, velocity or angular_velocity)"
                    )))
                }
            };
            Ok(Output { label: item.to_string(), body: b, field })
        })
        .collect()
}

/// Parses a comma-separated list of inputs into labelled groups of
/// [`Input`]s (`control` expands to every step's 6 entries, step-major).
pub fn parse_inputs(
    world: &World<f64>,
    list: &str,
    steps: usize,
) -> Result<Vec<(String, Vec<Input>)>, DiffError> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let inputs = match item {
            "sim.gravity" => (0..3).map(|k| Input::Model(Param::Gravity(k))).collect(),
            "sim.dt" => vec![Input::Model(Param::Dt)],
            _ => {
                let (name, field) = item.split_once('.').ok_or_else(|| {
                    DiffError::BadParam(format!("`{item}`: expected NAME.FIELD"))
                })?;
                if let Some(ri) = world.robot_index(name) {
                    let r = &world.robots[ri];
                    let dofs = r.idx_v..r.idx_v + r.nv;
                    let inputs: Vec<Input> = match field {
                        "q" => dofs.map(Input::Config).collect(),
                        "v" => dofs.map(Input::Velocity).collect(),
                        "control" => (0..steps)
                            .flat_map(|s| dofs.clone().map(move |i| Input::Control { step: s, index: i }))
                            .collect(),
                        other => {
                            return Err(DiffError::BadParam(format!(
                                "`{item}`: unknown robot input `{other}` (expected q, v or control)"
                            )))
                        }
                    };
                    out.push((item.to_string(), inputs));
                    continue;
                }
                let b = body(world, name, item)?;
                let k = world.model.bodies[b].idx_v;
                let shape_params = |keys: &[(&str, usize)], key: &str| -> Result<Vec<Input>, DiffError> {
                    let shape = world.shapes[b].as_ref();
                    let ok = match (shape, key) {
                        (Some(Shape::Sphere { .. }), "radius") => true,
                        (Some(Shape::Box { .. }), "half_extents") => true,
                        (Some(Shape::Capsule { .. } | Shape::Cylinder { .. }), "radius" | "half_length") => true,
                        (Some(Shape::Ellipsoid { .. }), "radii") => true,
                        _ => false,
                    };
                    if !ok {
                        return Err(DiffError::BadParam(format!(
                            "`{item}`: the shape of `{name}` has no parameter `{key}`"
                        )));
                    }
                    Ok(keys
                        .iter()
                        .filter(|(n, _)| *n == key)
                        .map(|(_, i)| Input::Model(Param::Shape(b, *i)))
                        .collect())
                };
                let shape_keys: &[(&str, usize)] = match world.shapes[b].as_ref() {
                    Some(Shape::Box { .. }) => &[("half_extents", 0), ("half_extents", 1), ("half_extents", 2)],
                    Some(Shape::Ellipsoid { .. }) => &[("radii", 0), ("radii", 1), ("radii", 2)],
                    _ => &[("radius", 0), ("half_length", 1)],
                };
                match field {
                    "position" => (0..3).map(|i| Input::Config(k + i)).collect(),
                    "orientation" => (3..6).map(|i| Input::Config(k + i)).collect(),
                    "velocity" => (0..3).map(|i| Input::Velocity(k + i)).collect(),
                    "angular_velocity" => (3..6).map(|i| Input::Velocity(k + i)).collect(),
                    "mass" => vec![Input::Model(Param::Mass(b))],
                    "friction" => vec![Input::Model(Param::Friction(b))],
                    "restitution" => vec![Input::Model(Param::Restitution(b))],
                    "inertia" => (0..3).map(|i| Input::Model(Param::Inertia(b, i))).collect(),
                    "control" => (0..steps)
                        .flat_map(|s| (0..6).map(move |i| Input::Control { step: s, index: k + i }))
                        .collect(),
                    f if f.starts_with("shape.") => shape_params(shape_keys, &f["shape.".len()..])?,
                    other => {
                        return Err(DiffError::BadParam(format!(
                            "`{item}`: unknown input field `{other}`"
                        )))
                    }
                }
            }
        };
        out.push((item.to_string(), inputs));
    }
    Ok(out)
}

/// `∂r/∂δ` for `r = φ(δ) ⊗ r₀` at δ = 0: the 4×3 map from a world-frame
/// rotation tangent to quaternion components, `½ [−uᵀ; w I − [u]×]`.
pub fn quaternion_tangent_map(w: f64, u: [f64; 3]) -> DMat<f64> {
    let uu = crate::math::Vec3::from(u);
    let lower: Mat3<f64> = Mat3::identity() * w - skew(&uu);
    let mut m = DMat::zeros(4, 3);
    for j in 0..3 {
        m[(0, j)] = -0.5 * u[j];
        for i in 0..3 {
            m[(1 + i, j)] = 0.5 * lower[(i, j)];
        }
    }
    m
}

/// The rows and values of `outputs` from a final state and its tangent
/// Jacobian (`2 nv` rows).
pub fn output_rows(
    world: &World<f64>,
    last: &State<f64>,
    jacobian: &DMat<f64>,
    outputs: &[Output],
) -> (Vec<f64>, DMat<f64>) {
    let nv = world.model.nv;
    let mut values = Vec::new();
    let mut rows: Vec<nalgebra::RowDVector<f64>> = Vec::new();
    for o in outputs {
        if let OutputField::RobotQ | OutputField::RobotV = o.field {
            let r = &world.robots[o.body];
            let (row0, src) = if o.field == OutputField::RobotQ { (r.idx_v, &last.q) } else { (nv + r.idx_v, &last.v) };
            let (vi, n) = if o.field == OutputField::RobotQ { (r.idx_q, r.nq) } else { (r.idx_v, r.nv) };
            values.extend(src.rows(vi, n).iter().copied());
            for i in 0..r.nv {
                rows.push(jacobian.row(row0 + i).into_owned());
            }
            continue;
        }
        let b = &world.model.bodies[o.body];
        let (kq, kv) = (b.idx_q, b.idx_v);
        match o.field {
            OutputField::Position => {
                for i in 0..3 {
                    values.push(last.q[kq + i]);
                    rows.push(jacobian.row(kv + i).into_owned());
                }
            }
            OutputField::Orientation => {
                let w = last.q[kq + 3];
                let u = [last.q[kq + 4], last.q[kq + 5], last.q[kq + 6]];
                let e = quaternion_tangent_map(w, u);
                let jr = e * jacobian.rows(kv + 3, 3);
                for i in 0..4 {
                    values.push(last.q[kq + 3 + i]);
                    rows.push(jr.row(i).into_owned());
                }
            }
            OutputField::RobotQ | OutputField::RobotV => unreachable!("handled above"),
            OutputField::Velocity | OutputField::AngularVelocity => {
                let off = if o.field == OutputField::Velocity { 0 } else { 3 };
                for i in 0..3 {
                    values.push(last.v[kv + off + i]);
                    rows.push(jacobian.row(nv + kv + off + i).into_owned());
                }
            }
        }
    }
    let m = if rows.is_empty() { DMat::zeros(0, jacobian.ncols()) } else { DMat::from_rows(&rows) };
    (values, m)
}
