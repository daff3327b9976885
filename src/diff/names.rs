//! Names of derivative inputs and outputs as written on the command line
//! (`NAME.FIELD`, SCENE.md): `box.position`, `ball.mass`,
//! `box.shape.half_extents`, `box.control`, `arm.q`, `arm/link3.position`,
//! `sim.gravity`, `sim.dt`.
//!
//! A name is resolved to exactly one kind of thing, and each kind has its
//! own fields; anything else is refused with a [`DiffError::BadParam`]
//! that says where in the list the item is, what the valid names (or
//! fields) are, and suggests the closest one (edit distance) for a
//! misspelling. Never a panic, never another quantity under the asked
//! name:
//!
//! | kind | OUT fields (final step) | IN fields (initial state / model) |
//! |---|---|---|
//! | free body | position, orientation, velocity, angular_velocity | the same, mass, friction, inertia, shape.SIZE, control |
//! | robot | q (one row per configuration coordinate, `nq`), v (`nv`) | q, v (tangent coordinates, `nv`; the command line turns `q` into `nq` columns by [`coordinate_columns`]), control |
//! | robot link `ROBOT/LINK` | position, orientation, velocity, angular_velocity of the link frame (URDF link origin), by forward kinematics; rows chained through the rollout Jacobian | the root link of a floating base: position, orientation, velocity, angular_velocity (its free joint's coordinates, world frame, as a free body's); any other link is refused: its pose is not an independent input (use ROBOT.q / ROBOT.v) |
//! | static geometry | refused (no state) | refused |
//! | `sim` | refused | gravity, dt |
//!
//! `restitution` as an input is refused while the backend does not model
//! restitution (the derivative would be zero for a reason unrelated to
//! the physics, see [`crate::sim::validate`]).
//!
//! ```
//! use dualsim::prelude::*;
//! use dualsim::diff::names::parse_outputs;
//! let mut w = World::<f64>::new(0.01);
//! w.add_body("ball", 1.0, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! assert!(parse_outputs(&w, "ball.position").is_ok());
//! let e = parse_outputs(&w, "bal.position").unwrap_err().to_string();
//! assert!(e.contains("did you mean `ball`"), "{e}");
//! ```

use num_dual::Dual64;

use super::{DiffError, Input, Param};
use crate::Scalar;
use crate::dynamics::free::integrate_model;
use crate::dynamics::kinematics::forward_kinematics;
use crate::math::{DMat, DVec, Mat3, Vec3, skew};
use crate::sim::validate::{Feature, implements};
use crate::sim::{State, World};

/// A named group of output rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// `NAME.FIELD`.
    pub label: String,
    /// Body index (robot index for robot fields, link body index for link fields).
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
    /// A robot link's frame origin in the world (3), by forward kinematics.
    LinkPosition,
    /// A robot link's orientation `[w, x, y, z]` (4).
    LinkOrientation,
    /// The velocity of a robot link's frame origin (3, world frame).
    LinkVelocity,
    /// A robot link's angular velocity (3, world frame).
    LinkAngularVelocity,
}

/// What a name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Named {
    /// A lone free body (index in the model).
    Body(usize),
    /// A robot (index in `world.robots`).
    Robot(usize),
    /// A link of a robot (body index in the model, robot index).
    Link(usize, usize),
    /// Static geometry (index in `world.statics`).
    Static(usize),
    /// The `sim` pseudo-name (gravity, dt).
    Sim,
}

/// `" (did you mean `x`?)"` for the closest candidate within a third of
/// the length (at least 2 edits; Levenshtein distance in characters),
/// else empty. The command line uses it for every misspelled name.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let best = candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((d, c)) if d > 0 && d <= (word.chars().count() / 3).max(2) => {
            format!(" (did you mean `{c}`?)")
        }
        _ => String::new(),
    }
}

/// A list of names for a message: at most 24, then "… (n more)".
fn listing(names: &[String]) -> String {
    const MAX: usize = 24;
    let shown: Vec<&str> = names.iter().take(MAX).map(String::as_str).collect();
    if names.len() > MAX {
        format!("{} … ({} more)", shown.join(", "), names.len() - MAX)
    } else {
        shown.join(", ")
    }
}

/// Every name of the world with its kind, in a stable order: free bodies,
/// robots, robot links, static geometry, `sim`.
fn all_names(world: &World<f64>) -> Vec<(String, Named)> {
    let m = &world.model;
    let lone = m.lone_free_bodies();
    let mut out: Vec<(String, Named)> = Vec::new();
    for (i, b) in m.bodies.iter().enumerate() {
        if lone[i]
            && !world
                .robots
                .iter()
                .any(|r| (r.first_body..r.first_body + r.bodies).contains(&i))
        {
            out.push((b.name.clone(), Named::Body(i)));
        }
    }
    for (ri, r) in world.robots.iter().enumerate() {
        out.push((r.name.clone(), Named::Robot(ri)));
    }
    for (ri, r) in world.robots.iter().enumerate() {
        for i in r.first_body..r.first_body + r.bodies {
            out.push((m.bodies[i].name.clone(), Named::Link(i, ri)));
        }
    }
    for (j, s) in world.statics.iter().enumerate() {
        if !s.name.is_empty() {
            out.push((s.name.clone(), Named::Static(j)));
        }
    }
    out.push(("sim".into(), Named::Sim));
    out
}

/// One item of a comma-separated list, with its 1-based position and
/// column in the list (for messages).
struct Item<'s> {
    text: &'s str,
    index: usize,
    column: usize,
}

fn items(list: &str) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for part in list.split(',') {
        let lead = part.len() - part.trim_start().len();
        let text = part.trim();
        if !text.is_empty() {
            out.push(Item {
                text,
                index: out.len() + 1,
                column: list[..offset + lead].chars().count() + 1,
            });
        }
        offset += part.len() + 1;
    }
    out
}

impl Item<'_> {
    fn error(&self, msg: impl std::fmt::Display) -> DiffError {
        DiffError::BadParam(format!(
            "item {} (column {}) `{}`: {msg}",
            self.index, self.column, self.text
        ))
    }
}

/// Splits `NAME.FIELD` by the longest known name followed by `.`, so that
/// names may contain dots. Unknown names: a located error with the valid
/// names and a suggestion.
fn resolve<'s>(
    world: &World<f64>,
    item: &Item<'s>,
) -> Result<(Named, &'s str, &'s str), DiffError> {
    let names = all_names(world);
    let found = names
        .iter()
        .filter(|(n, _)| {
            item.text.len() > n.len() + 1
                && item.text.starts_with(n.as_str())
                && item.text.as_bytes()[n.len()] == b'.'
        })
        .max_by_key(|(n, _)| n.len());
    if let Some((n, kind)) = found {
        return Ok((*kind, &item.text[..n.len()], &item.text[n.len() + 1..]));
    }
    let (name, field) = match item.text.split_once('.') {
        Some((n, f)) if !f.is_empty() => (n, f),
        _ => return Err(item.error("expected NAME.FIELD")),
    };
    if names.iter().any(|(n, _)| n == name) {
        // a known name followed by an empty field
        return Err(item.error(format!("no field after `{name}.`")));
    }
    let valid: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    let _ = field;
    Err(item.error(format!(
        "no body named `{name}` (nor robot, robot link or static geometry){} (valid names: {})",
        suggest(name, valid.iter().map(String::as_str)),
        listing(&valid)
    )))
}

fn unknown_field(item: &Item, what: &str, field: &str, valid: &[&str]) -> DiffError {
    item.error(format!(
        "unknown {what} field `{field}`{} (expected one of: {})",
        suggest(field, valid.iter().copied()),
        valid.join(", ")
    ))
}

const BODY_OUT: [&str; 4] = ["position", "orientation", "velocity", "angular_velocity"];

/// Parses a comma-separated list of outputs (see the module docs).
pub fn parse_outputs(world: &World<f64>, list: &str) -> Result<Vec<Output>, DiffError> {
    let mut out = Vec::new();
    for item in items(list) {
        let (named, name, field) = resolve(world, &item)?;
        let label = item.text.to_string();
        let pick = |fields: [OutputField; 4]| -> Result<OutputField, DiffError> {
            BODY_OUT
                .iter()
                .position(|f| *f == field)
                .map(|k| fields[k])
                .ok_or_else(|| unknown_field(&item, "output", field, &BODY_OUT))
        };
        let o = match named {
            Named::Body(b) => Output {
                label,
                body: b,
                field: pick([
                    OutputField::Position,
                    OutputField::Orientation,
                    OutputField::Velocity,
                    OutputField::AngularVelocity,
                ])?,
            },
            Named::Robot(r) => {
                let field = match field {
                    "q" => OutputField::RobotQ,
                    "v" => OutputField::RobotV,
                    other => return Err(unknown_field(&item, "robot output", other, &["q", "v"])),
                };
                Output {
                    label,
                    body: r,
                    field,
                }
            }
            Named::Link(b, _) => Output {
                label,
                body: b,
                field: pick([
                    OutputField::LinkPosition,
                    OutputField::LinkOrientation,
                    OutputField::LinkVelocity,
                    OutputField::LinkAngularVelocity,
                ])?,
            },
            Named::Static(_) => {
                return Err(item.error(format!(
                    "`{name}` is static geometry: it does not move, so it has no output \
                     (outputs are free bodies, robots and robot links)"
                )));
            }
            Named::Sim => {
                return Err(item.error("`sim.gravity` and `sim.dt` are inputs, not outputs"));
            }
        };
        out.push(o);
    }
    if out.is_empty() {
        return Err(DiffError::BadParam(
            "no output named (expected NAME.FIELD, comma-separated)".into(),
        ));
    }
    Ok(out)
}

const BODY_IN: [&str; 9] = [
    "position",
    "orientation",
    "velocity",
    "angular_velocity",
    "mass",
    "friction",
    "inertia",
    "control",
    "shape.<size>",
];

/// Parses a comma-separated list of inputs into labelled groups of
/// [`Input`]s (`control` expands to every step's entries, step-major).
pub fn parse_inputs(
    world: &World<f64>,
    list: &str,
    steps: usize,
) -> Result<Vec<(String, Vec<Input>)>, DiffError> {
    let mut out = Vec::new();
    for item in items(list) {
        let (named, name, field) = resolve(world, &item)?;
        let inputs: Vec<Input> = match named {
            Named::Sim => match field {
                "gravity" => (0..3).map(|k| Input::Model(Param::Gravity(k))).collect(),
                "dt" => vec![Input::Model(Param::Dt)],
                other => return Err(unknown_field(&item, "sim input", other, &["gravity", "dt"])),
            },
            Named::Robot(ri) => {
                let r = &world.robots[ri];
                let dofs = r.idx_v..r.idx_v + r.nv;
                match field {
                    "q" => dofs.map(Input::Config).collect(),
                    "v" => dofs.map(Input::Velocity).collect(),
                    "control" => (0..steps)
                        .flat_map(|s| {
                            dofs.clone()
                                .map(move |i| Input::Control { step: s, index: i })
                        })
                        .collect(),
                    other => {
                        return Err(unknown_field(
                            &item,
                            "robot input",
                            other,
                            &["q", "v", "control"],
                        ));
                    }
                }
            }
            Named::Link(b, ri) if world.model.bodies[b].is_free_root() => {
                // the root link of a floating base: its free joint's tangent
                // is a free body's (world-frame δp, δθ, v, ω)
                let r = &world.robots[ri].name;
                match field {
                    "position" | "orientation" | "velocity" | "angular_velocity" => {
                        body_inputs(world, &item, b, name, field, steps)?
                    }
                    other => {
                        return Err(item.error(format!(
                            "unknown input field `{other}` of `{name}`, the floating base of robot \
                             `{r}`{} (expected one of: position, orientation, velocity, \
                             angular_velocity; its parameters are not inputs, its forces are \
                             part of `{r}.control`)",
                            suggest(other, BODY_OUT.iter().copied())
                        )));
                    }
                }
            }
            Named::Link(_, ri) => {
                let r = &world.robots[ri].name;
                return Err(item.error(format!(
                    "`{name}` is a link of robot `{r}`: its pose and velocity follow from the \
                     robot's joint coordinates and are not independent inputs (use `{r}.q`, \
                     `{r}.v` or `{r}.control`)"
                )));
            }
            Named::Static(_) => {
                return Err(item.error(format!(
                    "`{name}` is static geometry: it has no state or parameter to \
                     differentiate with respect to (inputs are free bodies, robots and `sim`)"
                )));
            }
            Named::Body(b) => body_inputs(world, &item, b, name, field, steps)?,
        };
        out.push((item.text.to_string(), inputs));
    }
    if out.is_empty() {
        return Err(DiffError::BadParam(
            "no input named (expected NAME.FIELD, comma-separated)".into(),
        ));
    }
    Ok(out)
}

fn body_inputs(
    world: &World<f64>,
    item: &Item,
    b: usize,
    name: &str,
    field: &str,
    steps: usize,
) -> Result<Vec<Input>, DiffError> {
    let k = world.model.bodies[b].idx_v;
    Ok(match field {
        "position" => (0..3).map(|i| Input::Config(k + i)).collect(),
        "orientation" => (3..6).map(|i| Input::Config(k + i)).collect(),
        "velocity" => (0..3).map(|i| Input::Velocity(k + i)).collect(),
        "angular_velocity" => (3..6).map(|i| Input::Velocity(k + i)).collect(),
        "mass" => vec![Input::Model(Param::Mass(b))],
        "friction" => vec![Input::Model(Param::Friction(b))],
        "restitution" => {
            if !implements(world.solver, Feature::Restitution) {
                return Err(item.error(format!(
                    "the `{}` backend does not model restitution (its contacts are inelastic): \
                     the derivative with respect to it would be zero whatever the physics",
                    world.solver.name()
                )));
            }
            vec![Input::Model(Param::Restitution(b))]
        }
        "inertia" => (0..3).map(|i| Input::Model(Param::Inertia(b, i))).collect(),
        "control" => (0..steps)
            .flat_map(|s| {
                (0..6).map(move |i| Input::Control {
                    step: s,
                    index: k + i,
                })
            })
            .collect(),
        f if f.starts_with("shape.") => {
            let key = &f["shape.".len()..];
            let keys: Vec<(&str, usize)> = world.shapes[b]
                .as_ref()
                .map(|s| s.params())
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, (n, _))| (n, i))
                .collect();
            let inputs: Vec<Input> = keys
                .iter()
                .filter(|(n, _)| *n == key)
                .map(|(_, i)| Input::Model(Param::Shape(b, *i)))
                .collect();
            if inputs.is_empty() {
                let mut valid: Vec<&str> = keys.iter().map(|(n, _)| *n).collect();
                valid.dedup();
                let ty = world.shapes[b]
                    .as_ref()
                    .map(|s| s.type_name())
                    .unwrap_or("no shape");
                return Err(item.error(format!(
                    "the shape of `{name}` ({ty}) has no size parameter `{key}`{} (differentiable: {})",
                    suggest(key, valid.iter().copied()),
                    if valid.is_empty() { "none".to_string() } else { valid.join(", ") }
                )));
            }
            inputs
        }
        other => return Err(unknown_field(item, "body input", other, &BODY_IN)),
    })
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

/// Labels of the rows of `outputs` (as [`output_rows`] stacks them):
/// `ball.position.x`, `ball.orientation.w`, `arm.q[2]`; a robot's `q`
/// gives one row per configuration coordinate (`nq`: a floating base's
/// position and quaternion `[w, x, y, z]`, a spherical joint's quaternion),
/// `dog.q[0]` … `dog.q[nq − 1]`.
pub fn output_labels(world: &World<f64>, outputs: &[Output]) -> Vec<String> {
    let mut out = Vec::new();
    for o in outputs {
        let l = &o.label;
        match o.field {
            OutputField::Orientation | OutputField::LinkOrientation => {
                out.extend(["w", "x", "y", "z"].iter().map(|c| format!("{l}.{c}")))
            }
            OutputField::RobotQ => {
                out.extend((0..world.robots[o.body].nq).map(|i| format!("{l}[{i}]")))
            }
            OutputField::RobotV => {
                out.extend((0..world.robots[o.body].nv).map(|i| format!("{l}[{i}]")))
            }
            _ => out.extend(["x", "y", "z"].iter().map(|c| format!("{l}.{c}"))),
        }
    }
    out
}

/// Labels of the columns of the inputs `groups` (as `parse_inputs`
/// returns them): `ball.velocity.x`, `ball.mass`, `arm.control[step 3][1]`.
pub fn input_labels(world: &World<f64>, groups: &[(String, Vec<Input>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (label, inputs) in groups {
        if inputs.len() == 1 {
            out.push(label.clone());
            continue;
        }
        let robot = world.robots.iter().find(|r| match inputs[0] {
            Input::Config(i) | Input::Velocity(i) => {
                (r.idx_v..r.idx_v + r.nv).contains(&i) && inputs.len() == r.nv
            }
            _ => false,
        });
        if let Some(r) = robot {
            // a robot's q (tangent coordinates when nq ≠ nv) or v
            let tangent = r.nq != r.nv && matches!(inputs[0], Input::Config(_));
            out.extend((0..inputs.len()).map(|k| {
                if tangent {
                    format!("{label}.tangent[{k}]")
                } else {
                    format!("{label}[{k}]")
                }
            }));
            continue;
        }
        let xyz = inputs.len() == 3 && !matches!(inputs[0], Input::Control { .. });
        for (k, inp) in inputs.iter().enumerate() {
            out.push(match inp {
                Input::Control { step, index } => {
                    let base = world.model.bodies[world.model.dof_body[*index]].idx_v;
                    let first = world
                        .robots
                        .iter()
                        .find(|r| (r.idx_v..r.idx_v + r.nv).contains(index))
                        .map(|r| r.idx_v);
                    format!("{label}[step {step}][{}]", index - first.unwrap_or(base))
                }
                _ if xyz => format!("{label}.{}", ["x", "y", "z"][k]),
                _ => format!("{label}[{k}]"),
            });
        }
    }
    out
}

/// `G = ∂(q ⊕ δ)/∂δ` at δ = 0 for robot `robot`'s coordinates: `nq × nv`
/// (the identity for revolute and prismatic joints; a floating base's
/// position rows are the identity, its quaternion rows and a spherical
/// joint's the quaternion's tangent map). Dual numbers through the model's
/// retraction, one tangent direction at a time.
pub fn coordinate_map(
    world: &World<f64>,
    q: &DVec<f64>,
    robot: usize,
) -> Result<DMat<f64>, DiffError> {
    let r = &world.robots[robot];
    let md = world.model.cast::<Dual64>();
    let q0 = q.map(Dual64::from_re);
    let mut g = DMat::zeros(r.nq, r.nv);
    for j in 0..r.nv {
        let mut d = DVec::<Dual64>::zeros(world.model.nv);
        d[r.idx_v + j] = Dual64::new(0.0, 1.0);
        let qj = integrate_model(&md, &q0, &d, Dual64::from_re(1.0))
            .map_err(crate::sim::SimError::from)?;
        for i in 0..r.nq {
            g[(i, j)] = qj[r.idx_q + i].eps;
        }
    }
    Ok(g)
}

/// The robot whose `q` group `(label, inputs)` is, if it is one
/// (`ROBOT.q`: every tangent coordinate of the robot).
fn robot_q_group(world: &World<f64>, label: &str, inputs: &[Input]) -> Option<usize> {
    world.robots.iter().position(|r| {
        label.strip_suffix(".q") == Some(r.name.as_str())
            && inputs.len() == r.nv
            && inputs
                .iter()
                .enumerate()
                .all(|(k, i)| *i == Input::Config(r.idx_v + k))
    })
}

/// The columns of a Jacobian with respect to `groups` (as
/// [`parse_inputs`] gives them, tangent coordinates) rewritten for the
/// command line: a robot's `q` with `nq ≠ nv` (floating base, spherical
/// joints) becomes one column per configuration coordinate, `dog.q[0]` …
/// `dog.q[nq − 1]`, by `∂f/∂q = ∂f/∂δ · G⁺` with `G` the
/// [`coordinate_map`] at the initial configuration `q0` and
/// `G⁺ = (GᵀG)⁻¹Gᵀ`: the derivative along the configuration manifold
/// (zero along a quaternion's own direction, to which the simulation is
/// blind since it only accepts unit quaternions); on the manifold
/// `∂f/∂q · G = ∂f/∂δ`. Every other column and label as
/// [`input_labels`] gives them.
pub fn coordinate_columns(
    world: &World<f64>,
    q0: &DVec<f64>,
    groups: &[(String, Vec<Input>)],
    jacobian: &DMat<f64>,
) -> Result<(Vec<String>, DMat<f64>), DiffError> {
    let mut labels = Vec::new();
    let mut cols: Vec<DVec<f64>> = Vec::new();
    let mut c = 0;
    for (label, inputs) in groups {
        let n = inputs.len();
        let block = jacobian.columns(c, n);
        c += n;
        match robot_q_group(world, label, inputs) {
            Some(ri) if world.robots[ri].nq != world.robots[ri].nv => {
                let g = coordinate_map(world, q0, ri)?;
                let gtg = g.transpose() * &g;
                let pinv = gtg
                    .cholesky()
                    .ok_or_else(|| {
                        DiffError::BadParam(format!(
                            "`{label}`: the coordinate map of the configuration is rank deficient"
                        ))
                    })?
                    .solve(&g.transpose());
                let jq = block * pinv;
                labels.extend((0..jq.ncols()).map(|i| format!("{label}[{i}]")));
                cols.extend(jq.column_iter().map(|c| c.into_owned()));
            }
            _ => {
                labels.extend(input_labels(
                    world,
                    std::slice::from_ref(&(label.clone(), inputs.clone())),
                ));
                cols.extend(block.column_iter().map(|c| c.into_owned()));
            }
        }
    }
    let m = if cols.is_empty() {
        DMat::zeros(jacobian.nrows(), 0)
    } else {
        DMat::from_columns(&cols)
    };
    Ok((labels, m))
}

/// A robot link's quantity at `(q, v)` in a dual scalar.
pub fn link_quantity<T: Scalar>(
    world: &crate::dynamics::Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    body: usize,
    field: OutputField,
) -> Vec<T> {
    let mut data = world.data();
    forward_kinematics(world, &mut data, q, Some(v));
    let pose = data.omi[body];
    let p = pose.translation;
    let ov = data.ov[body];
    let w = Vec3::new(ov[3], ov[4], ov[5]);
    match field {
        OutputField::LinkPosition => vec![p.x, p.y, p.z],
        OutputField::LinkOrientation => {
            let r = crate::math::so3::normalize(&pose.rotation);
            vec![r.w, r.i, r.j, r.k]
        }
        OutputField::LinkVelocity => {
            // spatial velocities are at the world origin: v_p = v_O + ω × p
            let vp = Vec3::new(ov[0], ov[1], ov[2]) + w.cross(&p);
            vec![vp.x, vp.y, vp.z]
        }
        _ => vec![w.x, w.y, w.z],
    }
}

/// The value of a link output at the final state and its derivative with
/// respect to the final state's tangent `(δq, v)` (dual numbers through
/// forward kinematics, one direction at a time).
fn link_rows(
    world: &World<f64>,
    last: &State<f64>,
    body: usize,
    field: OutputField,
) -> Result<(Vec<f64>, DMat<f64>), DiffError> {
    let nv = world.model.nv;
    let md = world.model.cast::<Dual64>();
    let q0 = last.q.map(Dual64::from_re);
    let values: Vec<f64> = link_quantity(&world.model, &last.q, &last.v, body, field);
    let mut g = DMat::zeros(values.len(), 2 * nv);
    for j in 0..2 * nv {
        let mut dq = DVec::<Dual64>::zeros(nv);
        let mut v = last.v.map(Dual64::from_re);
        if j < nv {
            dq[j] = Dual64::new(0.0, 1.0);
        } else {
            v[j - nv].eps = 1.0;
        }
        let q = integrate_model(&md, &q0, &dq, Dual64::from_re(1.0))
            .map_err(crate::sim::SimError::from)?;
        for (i, x) in link_quantity(&md, &q, &v, body, field).iter().enumerate() {
            g[(i, j)] = x.eps;
        }
    }
    Ok((values, g))
}

/// The rows and values of `outputs` from a final state and its tangent
/// Jacobian (`2 nv` rows).
pub fn output_rows(
    world: &World<f64>,
    last: &State<f64>,
    jacobian: &DMat<f64>,
    outputs: &[Output],
) -> Result<(Vec<f64>, DMat<f64>), DiffError> {
    let nv = world.model.nv;
    let mut values = Vec::new();
    let mut rows: Vec<nalgebra::RowDVector<f64>> = Vec::new();
    for o in outputs {
        if let OutputField::RobotQ | OutputField::RobotV = o.field {
            let r = &world.robots[o.body];
            let (row0, src) = if o.field == OutputField::RobotQ {
                (r.idx_v, &last.q)
            } else {
                (nv + r.idx_v, &last.v)
            };
            let (vi, n) = if o.field == OutputField::RobotQ {
                (r.idx_q, r.nq)
            } else {
                (r.idx_v, r.nv)
            };
            values.extend(src.rows(vi, n).iter().copied());
            let tangent_rows = jacobian.rows(row0, r.nv);
            if o.field == OutputField::RobotQ && r.nq != r.nv {
                // one row per coordinate: ∂q/∂δ (nq × nv) times the tangent rows
                let g = coordinate_map(world, &last.q, o.body)?;
                let jq = g * tangent_rows;
                rows.extend(jq.row_iter().map(|r| r.into_owned()));
            } else {
                rows.extend(tangent_rows.row_iter().map(|r| r.into_owned()));
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
                let off = if o.field == OutputField::Velocity {
                    0
                } else {
                    3
                };
                for i in 0..3 {
                    values.push(last.v[kv + off + i]);
                    rows.push(jacobian.row(nv + kv + off + i).into_owned());
                }
            }
            OutputField::LinkPosition
            | OutputField::LinkOrientation
            | OutputField::LinkVelocity
            | OutputField::LinkAngularVelocity => {
                let (vals, g) = link_rows(world, last, o.body, o.field)?;
                let jr = g * jacobian;
                values.extend(vals);
                rows.extend(jr.row_iter().map(|r| r.into_owned()));
            }
        }
    }
    let m = if rows.is_empty() {
        DMat::zeros(0, jacobian.ncols())
    } else {
        DMat::from_rows(&rows)
    };
    Ok((values, m))
}

/// The value of a model parameter in a world.
pub fn model_value(w: &World<f64>, p: Param) -> f64 {
    match p {
        Param::Mass(b) => w.model.bodies[b].inertia.mass,
        Param::Inertia(b, k) => w.model.bodies[b].inertia.inertia[(k, k)],
        Param::Friction(b) => w.materials[b].friction,
        Param::Restitution(b) => w.materials[b].restitution,
        Param::Shape(b, k) => w.shapes[b]
            .as_ref()
            .and_then(|s| s.params().get(k).map(|p| p.1))
            .unwrap_or(f64::NAN),
        Param::Gravity(k) => w.gravity[k],
        Param::Dt => w.dt,
        Param::Q(_) | Param::V(_) | Param::U(_) => f64::NAN,
    }
}

/// The value of one decision variable in a world, a state and controls:
/// what `θ₀ + δ` starts from. `None` for a direction with no value of its
/// own: an orientation's tangent direction, or a coordinate of a robot
/// with a floating base.
pub fn input_value(
    w: &World<f64>,
    x: &State<f64>,
    us: &crate::sim::Controls<f64>,
    input: Input,
) -> Option<f64> {
    match input {
        Input::Control { step, index } => Some(us.at(step)[index]),
        Input::Velocity(i) => Some(x.v[i]),
        Input::Model(p) => Some(model_value(w, p)).filter(|v| !v.is_nan()),
        Input::Config(i) => {
            if let Some(r) = w
                .robots
                .iter()
                .find(|r| (r.idx_v..r.idx_v + r.nv).contains(&i))
            {
                (r.nq == r.nv).then(|| x.q[r.idx_q + i - r.idx_v])
            } else {
                let b = &w.model.bodies[w.model.dof_body[i]];
                (i - b.idx_v < 3).then(|| x.q[b.idx_q + i - b.idx_v])
            }
        }
    }
}
