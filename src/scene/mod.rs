//! Scene files (TOML) → [`Scene`]. The user's reference of the format is
//! `docs/scene-format.md`; `tests/all/cli/docs.rs` checks that it documents every
//! key and value this parser accepts.
//!
//! The file is parsed into toml's spanned document tree and walked by hand,
//! so that every error — malformed TOML, an unknown key, a value of the wrong
//! type, a non-finite number, mass ≤ 0, an inertia that is not positive
//! definite, dt ≤ 0, a quaternion whose norm differs from 1 by more than
//! 1e-6, … — is reported as a [`SceneError`] carrying the file, line and
//! column (1-based) and the field's path (`body[1].mass`).
//!
//! Beyond well-formedness, a scene is refused (located the same way) when
//! it cannot be simulated as written:
//!
//! * a value outside its physical range ([`crate::sim::validate`]: mass,
//!   principal moments and their triangle inequality, sizes, dt, gravity,
//!   positions, velocities, friction, controls, solver parameters);
//! * an option the backend does not implement: a positive restitution
//!   after combining (on the field of the body that has it), `ccd = true`,
//!   finite URDF joint limits on a robot without `ignore_joint_limits =
//!   true`;
//! * bodies interpenetrating at the initial state by more than
//!   [`INITIAL_PENETRATION_TOLERANCE`] (measured with the closed-form
//!   pairs, [`crate::sim::penetration`]), unless `[sim]
//!   allow_initial_penetration = true`.
//!
//! ```
//! let src = "[sim]\ndt = 0.01\nsteps = 5\n[[body]]\nname = \"b\"\nmass = 1.0\n\
//!            inertia = [0.1, 0.1, 0.1]\nshape = { type = \"sphere\", radius = 0.1 }\n";
//! let scene = dualsim::scene::parse(src, "inline.toml").unwrap();
//! assert_eq!(scene.steps, 5);
//! let err = dualsim::scene::parse(&src.replace("1.0", "-1.0"), "inline.toml").unwrap_err();
//! assert_eq!((err.line, err.path.as_str()), (6, "body[0].mass"));
//! ```

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use crate::contact::{FrictionCone, SolverKind};
use crate::dynamics::urdf::{self, BaseJoint};
use crate::geometry::{Combine, Material, StaticGeometry};
use crate::math::{DVec, Mat3, Pose, Quat, Vec3};
use crate::sim::validate as limits;
use crate::sim::{Controls, State, World};

mod fields;
pub mod info;
mod keys;
mod objective;
mod shape;
pub use keys::{accepted_keys, accepted_values};
pub use objective::{bound_width, BoundSpec, EffortSpec, ObjectiveSpec, RunningSpec};
pub use shape::normalize_scaled;

use fields::{
    array, boolean, choose, in_abs, in_range, norm_in_range, num, num_list, nums, package_dirs,
    pose_fields, to_toml, unit_quat, Cx, Tab, Val, R,
};
use keys::{
    solver_param_keys, BASES, BODY_KEYS, COMBINE, CONTROL_KEYS, FRICTION_CONES, ROBOT_KEYS,
    ROOT_KEYS, SHAPE_TYPE_KEY, SIM_KEYS, STATIC_KEYS,
};
use shape::shape;

/// A loaded scene: the world, its initial state, controls and step count.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Each `[[robot]]` as imported from its URDF (links, joints, collision
    /// shapes and their meshes), in file order (`dualsim info`).
    pub robots: Vec<urdf::UrdfRobot>,
    /// The world (model, geometry, gravity, dt, backend).
    pub world: World<f64>,
    /// Initial state.
    pub initial: State<f64>,
    /// Applied forces over the run.
    pub controls: Controls<f64>,
    /// Number of steps to simulate.
    pub steps: usize,
    /// The optional `[objective]` (for `dualsim optimize` / `hessian`).
    pub objective: Option<ObjectiveSpec>,
}

/// An error in a scene file, located in the source.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct SceneError {
    /// File name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// Field path, e.g. `body[0].mass` (empty for syntax errors).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Deepest initial interpenetration (m) a scene may have without
/// `allow_initial_penetration = true`.
pub const INITIAL_PENETRATION_TOLERANCE: f64 = 1e-4;

/// Largest absolute value of a control entry (N or N·m).
pub const CONTROL_MAX: f64 = 1e7;

/// Largest `[solver_params] max_iterations`.
pub const MAX_ITERATIONS_MAX: usize = 10_000;

/// Range of `[solver_params] rho` and `tolerance`.
pub const SOLVER_PARAM_RANGE: (f64, f64) = (1e-14, 1.0);

/// Options of [`load_with`] / [`parse_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadOptions {
    /// Simulate with this backend instead of the scene's `sim.solver`
    /// (the command line's `--solver`): options are checked against it.
    pub solver: Option<SolverKind>,
}

/// Reads and parses a scene file.
pub fn load(path: &Path) -> Result<Scene, SceneError> {
    load_with(path, &LoadOptions::default())
}

/// Reads and parses a scene file with options.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Scene, SceneError> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| SceneError {
        file: file.clone(),
        line: 1,
        column: 1,
        path: String::new(),
        message: format!("cannot read the file: {e}"),
    })?;
    parse_with(&src, &file, opts)
}

/// Parses a scene from its source text; `file` names it in errors.
pub fn parse(src: &str, file: &str) -> Result<Scene, SceneError> {
    parse_with(src, file, &LoadOptions::default())
}

/// Parses a scene from its source text with options.
pub fn parse_with(src: &str, file: &str, opts: &LoadOptions) -> Result<Scene, SceneError> {
    let cx = Cx { src, file };
    let doc = DeTable::parse(src).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        cx.error(span, "", e.message().trim().to_string())
    })?;
    let root = Tab::new(&cx, doc.get_ref(), doc.span(), String::new(), ROOT_KEYS);
    build(&cx, root, opts)
}

/// Where a named body, static or robot is written (for errors found after
/// the whole scene is read): its `position` (or `q`) field, else its table.
struct Located {
    name: String,
    span: Range<usize>,
    path: String,
}

fn locate<'l>(list: &'l [Located], name: &str) -> Option<&'l Located> {
    list.iter().find(|l| l.name == name)
}

fn build<'a>(cx: &'a Cx<'a>, mut root: Tab<'a, '_>, opts: &LoadOptions) -> R<Scene> {
    // [sim]
    let mut world = World::<f64>::new(0.01);
    let mut steps = 100usize;
    let mut allow_initial_penetration = false;
    if let Some(s) = opts.solver {
        world.solver = s;
    }
    if let Some(mut sim) = root.table("sim", SIM_KEYS)? {
        if let Some((v, p)) = sim.get("dt") {
            let dt = num(cx, v, &p)?;
            if dt <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {dt}")));
            }
            in_range(cx, v.span(), &p, dt, limits::DT, " s")?;
            world.dt = dt;
        }
        if let Some((v, p)) = sim.get("steps") {
            let x = num(cx, v, &p)?;
            if x < 0.0 || x.fract() != 0.0 || x > 1e9 {
                return Err(cx.error(
                    v.span(),
                    &p,
                    format!("must be a whole number >= 0, got {x}"),
                ));
            }
            steps = x as usize;
        }
        if let Some((g, span, p)) = sim.vec_opt::<3>("gravity")? {
            let g = Vec3::from(g);
            norm_in_range(
                cx,
                span,
                &p,
                limits::scaled_norm(g.as_slice()),
                (0.0, limits::GRAVITY_MAX),
                " m/s^2",
            )?;
            world.set_gravity(g);
        }
        let solver = sim.str_opt("solver")?;
        if let Some((name, span, path)) = solver {
            match SolverKind::NAMES.iter().find(|(n, _)| *n == name) {
                Some((_, Some(kind))) => world.solver = opts.solver.unwrap_or(*kind),
                Some((_, None)) => {
                    return Err(cx.error(
                        span,
                        &path,
                        format!(
                            "solver `{name}` is not available in this build (available: {})",
                            SolverKind::ALL
                                .iter()
                                .map(|k| k.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
                None => {
                    let names: Vec<&str> = SolverKind::NAMES.iter().map(|(n, _)| *n).collect();
                    return Err(cx.error(
                        span,
                        &path,
                        format!(
                            "unknown solver `{name}` (expected one of: {})",
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        let fc = sim.str_opt("friction_cone")?;
        let fc_at = fc
            .as_ref()
            .map(|(_, span, p)| (span.clone(), p.clone()))
            .unwrap_or((sim.span.clone(), sim.path.clone()));
        world.friction_cone = choose(cx, fc, FRICTION_CONES, FrictionCone::Exact)?;
        // a cone the backend does not solve: refused here, not at the first step
        if let Err(e) = world.check_friction_cone() {
            return Err(cx.error(fc_at.0, &fc_at.1, e.to_string()));
        }
        if let Some((v, p)) = sim.get("ccd") {
            world.ccd = boolean(cx, v, &p)?;
            if let Err(e) = world.check_supported() {
                return Err(cx.error(
                    v.span(),
                    &p,
                    format!("{e} (no backend of this build implements it)"),
                ));
            }
        }
        if let Some((v, p)) = sim.get("allow_initial_penetration") {
            allow_initial_penetration = boolean(cx, v, &p)?;
        }
        let f = sim.str_opt("friction_combine")?;
        world.friction_combine = choose(cx, f, COMBINE, Combine::Average)?;
        let r = sim.str_opt("restitution_combine")?;
        world.restitution_combine = choose(cx, r, COMBINE, Combine::Average)?;
        sim.finish()?;
    }

    // [solver_params]
    if let Some(mut sp) = root.table("solver_params", solver_param_keys(world.solver))? {
        if let Some((v, p)) = sp.get("rho") {
            let x = num(cx, v, &p)?;
            if x <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {x}")));
            }
            in_range(cx, v.span(), &p, x, SOLVER_PARAM_RANGE, "")?;
            world.params.rho = x;
        }
        if let Some((v, p)) = sp.get("tolerance") {
            let x = num(cx, v, &p)?;
            if x <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {x}")));
            }
            in_range(cx, v.span(), &p, x, SOLVER_PARAM_RANGE, "")?;
            world.params.tolerance = x;
        }
        if let Some((v, p)) = sp.get("max_iterations") {
            let x = num(cx, v, &p)?;
            if x < 1.0 || x.fract() != 0.0 || x > MAX_ITERATIONS_MAX as f64 {
                return Err(cx.error(
                    v.span(),
                    &p,
                    format!("must be a whole number in [1, {MAX_ITERATIONS_MAX}], got {x}"),
                ));
            }
            world.params.max_iterations = x as usize;
        }
        // The backend's own keys, read by its `Params` (serde), each key
        // alone first so that an error points at its key.
        let mut table = toml::Table::new();
        let mut first: Option<(Range<usize>, String)> = None;
        for key in world.solver.param_keys() {
            let Some((v, p)) = sp.get(key) else { continue };
            let value = to_toml(cx, v, &p)?;
            let mut one = toml::Table::new();
            one.insert(key.to_string(), value.clone());
            if let Err(e) = world.backends.clone().set_from_toml(world.solver, one) {
                return Err(cx.error(
                    v.span(),
                    &p,
                    format!("{e} (backend `{}`)", world.solver.name()),
                ));
            }
            first.get_or_insert((v.span(), p.clone()));
            table.insert(key.to_string(), value);
        }
        if let Some((span, p)) = first {
            if let Err(e) = world.backends.set_from_toml(world.solver, table) {
                return Err(cx.error(span, &p, format!("{e} (backend `{}`)", world.solver.name())));
            }
        }
        sp.finish()?;
    }

    // [[body]]
    let mut q = Vec::new();
    let mut v = Vec::new();
    // where each body, static and robot is written, and each positive restitution
    let mut located: Vec<Located> = Vec::new();
    let mut restitutions: Vec<Located> = Vec::new();
    for mut body in root.array_of_tables("body", BODY_KEYS)? {
        let name = match body.str_opt("name")? {
            Some((n, _, _)) => n.to_string(),
            None => return Err(body.missing("name")),
        };
        let (mass, mspan, mpath) = body.f64_req("mass")?;
        if mass <= 0.0 {
            return Err(cx.error(mspan, &mpath, format!("mass must be > 0, got {mass}")));
        }
        in_range(cx, mspan.clone(), &mpath, mass, limits::MASS, " kg")?;
        let inertia = match body.get("inertia") {
            None => return Err(body.missing("inertia")),
            Some((val, p)) => inertia_matrix(cx, val, &p)?,
        };
        let position_at = body.get("position").map(|(v, p)| (v.span(), p));
        let (pos, rot) = pose_fields(cx, &mut body)?;
        if let Some((span, p)) = &position_at {
            for (d, x) in pos.iter().enumerate() {
                in_abs(
                    cx,
                    span.clone(),
                    &format!("{p}[{d}]"),
                    *x,
                    limits::POSITION_MAX,
                    " m",
                )?;
            }
        }
        let vel = match body.vec_opt::<3>("velocity")? {
            None => [0.0; 3],
            Some((x, span, p)) => {
                let n = limits::scaled_norm(&x);
                norm_in_range(cx, span, &p, n, (0.0, limits::SPEED_MAX), " m/s")?;
                x
            }
        };
        let ang = match body.vec_opt::<3>("angular_velocity")? {
            None => [0.0; 3],
            Some((x, span, p)) => {
                let n = limits::scaled_norm(&x);
                norm_in_range(
                    cx,
                    span.clone(),
                    &p,
                    n,
                    (0.0, limits::ANGULAR_SPEED_MAX),
                    " rad/s",
                )?;
                if !(n * world.dt < 2.0) {
                    return Err(cx.error(
                        span,
                        &p,
                        format!(
                            "rotates by |angular_velocity| * dt = {:e} rad in one step; the free-body \
                             step needs < 2 rad (lower it or sim.dt)",
                            n * world.dt
                        ),
                    ));
                }
                x
            }
        };
        let material = material(cx, &mut body, &name, &mut restitutions)?;
        let shape = match body.table("shape", SHAPE_TYPE_KEY)? {
            None => None,
            Some(t) => Some(shape(cx, t, false)?),
        };
        if let Some(r) = shape.as_ref().and_then(crate::collision::bounding_radius) {
            let g = limits::scaled_norm(world.gravity.as_slice());
            limits::check_relaxation_gap(world.solver, world.params.rho, mass, r, g, world.dt)
                .map_err(|msg| cx.error(mspan.clone(), &mpath, msg))?;
        }
        let span = body.span.clone();
        let path = body.path.clone();
        body.finish()?;
        let (lspan, lpath) = position_at.unwrap_or((span.clone(), path.clone()));
        located.push(Located {
            name: name.clone(),
            span: lspan,
            path: lpath,
        });
        world
            .add_body(&name, mass, inertia, shape, material)
            .map_err(|e| cx.error(span, &path, e.to_string()))?;
        q.extend_from_slice(&pos);
        q.extend_from_slice(&[rot.w, rot.i, rot.j, rot.k]);
        v.extend_from_slice(&vel);
        v.extend_from_slice(&ang);
    }

    // [[static]]
    for mut st in root.array_of_tables("static", STATIC_KEYS)? {
        let name = st
            .str_opt("name")?
            .map(|x| x.0.to_string())
            .unwrap_or_default();
        let material = material(cx, &mut st, &name, &mut restitutions)?;
        let position_at = st.get("position").map(|(v, p)| (v.span(), p));
        let (pos, rot) = pose_fields(cx, &mut st)?;
        if let Some((span, p)) = &position_at {
            for (d, x) in pos.iter().enumerate() {
                in_abs(
                    cx,
                    span.clone(),
                    &format!("{p}[{d}]"),
                    *x,
                    limits::POSITION_MAX,
                    " m",
                )?;
            }
        }
        let shape = match st.table("shape", SHAPE_TYPE_KEY)? {
            None => return Err(st.missing("shape")),
            Some(t) => shape(cx, t, true)?,
        };
        located.push(Located {
            name: name.clone(),
            span: st.span.clone(),
            path: st.path.clone(),
        });
        st.finish()?;
        world.statics.push(StaticGeometry {
            name,
            shape,
            pose: Pose::new(rot, Vec3::from(pos)),
            material,
        });
    }

    // [[robot]]
    let mut robots = Vec::new();
    for mut r in root.array_of_tables("robot", ROBOT_KEYS)? {
        let Some((name, _, _)) = r.str_opt("name")? else {
            return Err(r.missing("name"));
        };
        let name = name.to_string();
        let Some((file, fspan, fpath)) = r.str_opt("urdf")? else {
            return Err(r.missing("urdf"));
        };
        let base_dir = Path::new(cx.file).parent().unwrap_or(Path::new("."));
        let base = choose(cx, r.str_opt("base")?, BASES, BaseJoint::Fixed)?;
        let package_dirs = match r.get("package_dirs") {
            None => Vec::new(),
            Some((val, p)) => package_dirs(cx, val, &p, base_dir)?,
        };
        let urdf = urdf::load_file_with(base_dir.join(file), base, &package_dirs)
            .map_err(|e| cx.error(fspan.clone(), &fpath, format!("{file}: {e}")))?;
        let ignore_mimic = match r.get("ignore_mimic") {
            None => false,
            Some((val, p)) => boolean(cx, val, &p)?,
        };
        if !ignore_mimic {
            urdf.refuse_mimic().map_err(|e| {
                cx.error(
                    fspan.clone(),
                    &fpath,
                    format!(
                        "{file}: {e}; set `ignore_mimic = true` on the robot to simulate them \
                         as independent joints"
                    ),
                )
            })?;
        }
        if base == BaseJoint::Floating {
            // a massless root leaves the base's coordinates without inertia
            // (NaN at the first step): refused here
            if let Some(root) = urdf.model.bodies.iter().find(|b| b.parent.is_none()) {
                let i = &root.inertia;
                let d = i.inertia.diagonal();
                if !(i.mass > 0.0 && d.x > 0.0 && d.y > 0.0 && d.z > 0.0) {
                    return Err(cx.error(
                        fspan.clone(),
                        &fpath,
                        format!(
                            "{file}: the root link `{}` of a floating base has no mass or \
                             rotational inertia (mass {}, inertia diagonal [{}, {}, {}], the \
                             links welded to it by fixed joints included): the \
                             base's six coordinates would have no inertia; give it an \
                             <inertial> or use base = \"fixed\"",
                            root.name, i.mass, d.x, d.y, d.z
                        ),
                    ));
                }
            }
        }
        let pos = match r.vec_opt::<3>("base_position")? {
            None => [0.0; 3],
            Some((x, span, p)) => {
                for (d, c) in x.iter().enumerate() {
                    in_abs(
                        cx,
                        span.clone(),
                        &format!("{p}[{d}]"),
                        *c,
                        limits::POSITION_MAX,
                        " m",
                    )?;
                }
                x
            }
        };
        let rot = match r.vec_opt::<4>("base_orientation")? {
            None => Quat::new(1.0, 0.0, 0.0, 0.0),
            Some((o, span, p)) => unit_quat(cx, o, span, &p)?,
        };
        let (rq, rv) = (urdf.model.nq, urdf.model.nv);
        let mut q0: Vec<f64> = urdf.model.neutral().iter().copied().collect();
        let placement = match base {
            BaseJoint::Fixed => Pose::new(rot, Vec3::from(pos)),
            BaseJoint::Floating => {
                q0[..3].copy_from_slice(&pos);
                q0[3..7].copy_from_slice(&[rot.w, rot.i, rot.j, rot.k]);
                Pose::identity()
            }
        };
        let mut robot_at = (r.span.clone(), r.path.clone());
        if let Some((val, p)) = r.get("q") {
            let given = num_list(cx, val, &p)?;
            if given.len() != rq {
                return Err(cx.error(
                    val.span(),
                    &p,
                    format!("expected {rq} joint positions, found {}", given.len()),
                ));
            }
            for (i, x) in given.iter().enumerate() {
                in_abs(
                    cx,
                    val.span(),
                    &format!("{p}[{i}]"),
                    *x,
                    limits::POSITION_MAX,
                    "",
                )?;
            }
            robot_at = (val.span(), p.clone());
            if base == BaseJoint::Floating {
                let n = given[3..7].iter().map(|x| x * x).sum::<f64>().sqrt();
                if (n - 1.0).abs() > 1e-6 {
                    return Err(cx.error(
                        val.span(),
                        &p,
                        format!("the base quaternion q[3..7] must have unit norm, its norm is {n}"),
                    ));
                }
            }
            // a spherical joint's quaternion, as the base's
            for b in &urdf.model.bodies {
                if b.joint == crate::dynamics::Joint::Spherical {
                    let k = b.idx_q;
                    let n = given[k..k + 4].iter().map(|x| x * x).sum::<f64>().sqrt();
                    if (n - 1.0).abs() > 1e-6 {
                        return Err(cx.error(
                            val.span(),
                            &p,
                            format!(
                                "the quaternion q[{k}..{}] of the spherical joint of link `{}` \
                                 must have unit norm, its norm is {n}",
                                k + 4,
                                b.name
                            ),
                        ));
                    }
                }
            }
            q0 = given;
        }
        let v0 = match r.get("v") {
            None => vec![0.0; rv],
            Some((val, p)) => {
                let given = num_list(cx, val, &p)?;
                if given.len() != rv {
                    return Err(cx.error(
                        val.span(),
                        &p,
                        format!("expected {rv} joint velocities, found {}", given.len()),
                    ));
                }
                for (i, x) in given.iter().enumerate() {
                    in_abs(
                        cx,
                        val.span(),
                        &format!("{p}[{i}]"),
                        *x,
                        limits::SPEED_MAX,
                        "",
                    )?;
                }
                given
            }
        };
        let ignore_limits = match r.get("ignore_joint_limits") {
            None => false,
            Some((val, p)) => boolean(cx, val, &p)?,
        };
        let span = r.span.clone();
        let path = r.path.clone();
        r.finish()?;
        let ri = world
            .add_robot_with_collisions(&name, &urdf, &placement)
            .map_err(|e| cx.error(span.clone(), &path, e.to_string()))?;
        world.robots[ri].ignore_joint_limits = ignore_limits;
        if let Err(e) = world.check_joint_limits() {
            return Err(cx.error(fspan, &fpath, format!("{file}: {e}")));
        }
        if let Err(e) = world.check_supported() {
            return Err(cx.error(span, &path, e.to_string()));
        }
        located.push(Located {
            name: name.clone(),
            span: robot_at.0,
            path: robot_at.1,
        });
        q.extend_from_slice(&q0);
        v.extend_from_slice(&v0);
        robots.push(urdf);
    }

    // [[control]]
    let nv = world.model.nv;
    let mut constant = DVec::zeros(nv);
    let mut per_step: Option<Vec<DVec<f64>>> = None;
    for mut c in root.array_of_tables("control", CONTROL_KEYS)? {
        let Some((target, tspan, tpath)) = c.str_opt("target")? else {
            return Err(c.missing("target"));
        };
        let (k, width) = if let Some(ri) = world.robot_index(target) {
            (world.robots[ri].idx_v, world.robots[ri].nv)
        } else if let Some(bi) = world
            .model
            .body_index(target)
            .filter(|&b| world.model.bodies[b].is_free_root())
        {
            (world.model.bodies[bi].idx_v, 6)
        } else {
            return Err(cx.error(tspan, &tpath, format!("no body or robot named `{target}`")));
        };
        let values = c.get("values");
        let rows = c.get("per_step");
        match (values, rows) {
            (Some((val, p)), None) => {
                let u = num_list(cx, val, &p)?;
                if u.len() != width {
                    return Err(cx.error(
                        val.span(),
                        &p,
                        format!("expected {width} numbers, found {}", u.len()),
                    ));
                }
                for (i, x) in u.iter().enumerate() {
                    in_abs(cx, val.span(), &format!("{p}[{i}]"), *x, CONTROL_MAX, "")?;
                }
                for d in 0..width {
                    constant[k + d] += u[d];
                }
                if let Some(ps) = per_step.as_mut() {
                    for row in ps.iter_mut() {
                        for d in 0..width {
                            row[k + d] += u[d];
                        }
                    }
                }
            }
            (None, Some((val, p))) => {
                let list = array(cx, val, &p)?;
                let ps = per_step.get_or_insert_with(|| vec![constant.clone(); steps.max(1)]);
                if list.len() != steps {
                    return Err(cx.error(
                        val.span(),
                        &p,
                        format!("expected one row per step ({steps}), found {}", list.len()),
                    ));
                }
                for (i, row) in list.iter().enumerate() {
                    let u = num_list(cx, row, &format!("{p}[{i}]"))?;
                    if u.len() != width {
                        return Err(cx.error(
                            row.span(),
                            &format!("{p}[{i}]"),
                            format!("expected {width} numbers, found {}", u.len()),
                        ));
                    }
                    for (j, x) in u.iter().enumerate() {
                        in_abs(
                            cx,
                            row.span(),
                            &format!("{p}[{i}][{j}]"),
                            *x,
                            CONTROL_MAX,
                            "",
                        )?;
                    }
                    for d in 0..width {
                        ps[i][k + d] += u[d];
                    }
                }
            }
            (Some(_), Some((val, p))) => {
                return Err(cx.error(
                    val.span(),
                    &p,
                    "give either `values` or `per_step`, not both",
                ))
            }
            (None, None) => return Err(c.missing("values")),
        }
        c.finish()?;
    }
    let controls = match per_step {
        Some(ps) => Controls::PerStep(ps),
        None => Controls::Constant(constant),
    };

    let objective_table = root.table("objective", objective::OBJECTIVE_KEYS)?;
    root.finish()?;
    let initial = State {
        q: DVec::from_vec(q),
        v: DVec::from_vec(v),
    };

    // Options the backend does not implement, found only once every body is known.
    let elastic = world.solver.supports(crate::contact::Feature::Restitution);
    if let Some((a, b, _)) = world.restitution_pair().filter(|_| !elastic) {
        let e = world
            .check_supported()
            .expect_err("a restitution pair is unsupported");
        let at = locate(&restitutions, &a).or_else(|| locate(&restitutions, &b));
        let (span, path) = at
            .map(|l| (l.span.clone(), l.path.clone()))
            .unwrap_or((0..0, String::new()));
        return Err(cx.error(span, &path, e.to_string()));
    }
    // Bodies that start inside each other.
    if !allow_initial_penetration {
        let g = crate::sim::penetration::gaps(&world, &initial, -INITIAL_PENETRATION_TOLERANCE);
        if let Some(d) = g.deepest() {
            let robot = d.a.split('/').next().unwrap_or(&d.a);
            let at = locate(&located, &d.a).or_else(|| locate(&located, robot));
            let (span, path) = at
                .map(|l| (l.span.clone(), l.path.clone()))
                .unwrap_or((0..0, String::new()));
            return Err(cx.error(
                span,
                &path,
                format!(
                    "`{}` and `{}` interpenetrate by {:e} m at the initial state (tolerance {:e} m): \
                     move them apart, or set `[sim] allow_initial_penetration = true` to start \
                     from this state (the solver then pushes them apart)",
                    d.a, d.b, -d.gap, INITIAL_PENETRATION_TOLERANCE
                ),
            ));
        }
    }
    // Every remaining check of the library (a backstop: the checks above
    // already locate what they find).
    world.validate(&initial).map_err(|e| {
        let msg = e.to_string();
        // locate at the first body, static or robot the message names
        let named = msg.split('`').nth(1).unwrap_or("");
        let robot = named.split('/').next().unwrap_or(named);
        match locate(&located, named).or_else(|| locate(&located, robot)) {
            Some(l) => cx.error(l.span.clone(), &l.path, msg),
            None => cx.error(0..0, "", msg),
        }
    })?;

    // [objective], once every name it may use is known.
    let objective = match objective_table {
        Some(t) => Some(objective::read(cx, t, &world, &initial, &controls, steps)?),
        None => None,
    };
    Ok(Scene {
        robots,
        world,
        initial,
        controls,
        steps,
        objective,
    })
}

fn inertia_matrix(cx: &Cx, v: &Val, path: &str) -> R<Mat3<f64>> {
    let a = array(cx, v, path)?;
    let m = if a.len() == 3 && a.iter().all(|e| !matches!(e.get_ref(), DeValue::Array(_))) {
        let d = nums::<3>(cx, v, path)?;
        Mat3::from_diagonal(&Vec3::from(d))
    } else if a.len() == 3 {
        let mut m = Mat3::zeros();
        for (i, row) in a.iter().enumerate() {
            let r = nums::<3>(cx, row, &format!("{path}[{i}]"))?;
            for j in 0..3 {
                m[(i, j)] = r[j];
            }
        }
        m
    } else {
        return Err(cx.error(
            v.span(),
            path,
            "expected principal moments [Ixx, Iyy, Izz] or a 3x3 array",
        ));
    };
    if !crate::dynamics::model::is_spd(&m) {
        return Err(cx.error(
            v.span(),
            path,
            "inertia must be symmetric positive definite",
        ));
    }
    limits::check_inertia(&m).map_err(|msg| cx.error(v.span(), path, msg))?;
    Ok(m)
}

/// `friction` and `restitution`; a positive restitution is recorded in
/// `restitutions` (refused later if it combines to a positive value).
fn material(
    cx: &Cx,
    t: &mut Tab,
    owner: &str,
    restitutions: &mut Vec<Located>,
) -> R<Material<f64>> {
    let mut m = Material::<f64>::default();
    if let Some((v, p)) = t.get("friction") {
        let x = num(cx, v, &p)?;
        if x < 0.0 {
            return Err(cx.error(v.span(), &p, format!("friction must be >= 0, got {x}")));
        }
        in_range(cx, v.span(), &p, x, (0.0, limits::FRICTION_MAX), "")?;
        m.friction = x;
    }
    if let Some((v, p)) = t.get("restitution") {
        let x = num(cx, v, &p)?;
        if !(0.0..=1.0).contains(&x) {
            return Err(cx.error(
                v.span(),
                &p,
                format!("restitution must be in [0, 1], got {x}"),
            ));
        }
        if x > 0.0 {
            restitutions.push(Located {
                name: owner.to_string(),
                span: v.span(),
                path: p,
            });
        }
        m.restitution = x;
    }
    Ok(m)
}
