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

use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use crate::contact::{FrictionCone, SolverKind};
use crate::dynamics::urdf::{self, BaseJoint};
use crate::geometry::{BundleOp, Combine, Material, Shape, StaticGeometry};
use crate::math::{DVec, Mat3, Pose, Quat, Vec3};
use crate::sim::validate::{self as limits, range_text};
use crate::sim::{Controls, State, World};

pub mod info;
mod objective;
pub use objective::{bound_width, BoundSpec, EffortSpec, ObjectiveSpec, RunningSpec};

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

struct Cx<'a> {
    src: &'a str,
    file: &'a str,
}

impl Cx<'_> {
    fn error(&self, span: Range<usize>, path: &str, message: impl Into<String>) -> SceneError {
        let at = span.start.min(self.src.len());
        let before = &self.src[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = self.src[line_start..at].chars().count() + 1;
        SceneError {
            file: self.file.to_string(),
            line,
            column,
            path: path.to_string(),
            message: message.into(),
        }
    }
}

type R<T> = Result<T, SceneError>;
type Val<'i> = Spanned<DeValue<'i>>;

/// A table being read: remembers which keys were used so that unknown keys
/// are reported.
struct Tab<'a, 'i> {
    cx: &'a Cx<'a>,
    map: &'a DeTable<'i>,
    span: Range<usize>,
    path: String,
    /// The keys this table accepts (one of the `*_KEYS` lists): a key is
    /// read only if it is listed, so these lists are exactly what the
    /// parser accepts ([`accepted_keys`]).
    keys: &'static [&'static str],
    used: Vec<&'a str>,
}

impl<'a, 'i> Tab<'a, 'i> {
    fn new(
        cx: &'a Cx<'a>,
        map: &'a DeTable<'i>,
        span: Range<usize>,
        path: String,
        keys: &'static [&'static str],
    ) -> Self {
        Tab {
            cx,
            map,
            span,
            path,
            keys,
            used: Vec::new(),
        }
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn get(&mut self, key: &'a str) -> Option<(&'a Val<'i>, String)> {
        // A key missing from the table's list is never read: it is then
        // reported by `finish` as unknown, like any other.
        if !self.keys.contains(&key) {
            return None;
        }
        let (_, v) = self.map.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
        self.used.push(key);
        Some((v, self.child_path(key)))
    }

    fn missing(&self, key: &str) -> SceneError {
        self.cx.error(
            self.span.clone(),
            &self.child_path(key),
            "missing required field",
        )
    }

    fn finish(self) -> R<()> {
        for (k, _) in self.map.iter() {
            let name: &str = k.get_ref().as_ref();
            if !self.used.contains(&name) {
                return Err(self.cx.error(
                    k.span(),
                    &self.child_path(name),
                    format!("unknown key (expected one of: {})", self.keys.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn f64_req(&mut self, key: &'a str) -> R<(f64, Range<usize>, String)> {
        let Some((v, p)) = self.get(key) else {
            return Err(self.missing(key));
        };
        Ok((num(self.cx, v, &p)?, v.span(), p))
    }

    fn vec_opt<const N: usize>(
        &mut self,
        key: &'a str,
    ) -> R<Option<([f64; N], Range<usize>, String)>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => Ok(Some((nums::<N>(self.cx, v, &p)?, v.span(), p))),
        }
    }

    fn str_opt(&mut self, key: &'a str) -> R<Option<(&'a str, Range<usize>, String)>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => match v.get_ref() {
                DeValue::String(s) => Ok(Some((s.as_ref(), v.span(), p))),
                other => Err(type_error(self.cx, v, &p, "a string", other)),
            },
        }
    }

    fn table(&mut self, key: &'a str, keys: &'static [&'static str]) -> R<Option<Tab<'a, 'i>>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(Tab::new(self.cx, t, v.span(), p, keys))),
                other => Err(type_error(self.cx, v, &p, "a table", other)),
            },
        }
    }

    fn array_of_tables(
        &mut self,
        key: &'a str,
        keys: &'static [&'static str],
    ) -> R<Vec<Tab<'a, 'i>>> {
        let Some((v, p)) = self.get(key) else {
            return Ok(Vec::new());
        };
        let arr = array(self.cx, v, &p)?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| match e.get_ref() {
                DeValue::Table(t) => Ok(Tab::new(self.cx, t, e.span(), format!("{p}[{i}]"), keys)),
                other => Err(type_error(
                    self.cx,
                    e,
                    &format!("{p}[{i}]"),
                    "a table",
                    other,
                )),
            })
            .collect()
    }
}

fn type_error(cx: &Cx, v: &Val, path: &str, want: &str, got: &DeValue) -> SceneError {
    cx.error(
        v.span(),
        path,
        format!("expected {want}, found {}", got.type_str()),
    )
}

fn array<'a, 'i>(cx: &Cx, v: &'a Val<'i>, path: &str) -> R<&'a DeArray<'i>> {
    match v.get_ref() {
        DeValue::Array(a) => Ok(a),
        other => Err(type_error(cx, v, path, "an array", other)),
    }
}

/// A finite number (integer or float).
fn num(cx: &Cx, v: &Val, path: &str) -> R<f64> {
    let x = match v.get_ref() {
        DeValue::Float(f) => {
            let s: String = f.as_str().chars().filter(|c| *c != '_').collect();
            s.parse::<f64>()
                .map_err(|_| cx.error(v.span(), path, "not a number"))?
        }
        DeValue::Integer(i) => {
            let s: String = i.as_str().chars().filter(|c| *c != '_').collect();
            let digits = s.trim_start_matches(['+', '-']);
            let digits = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0o"))
                .or_else(|| digits.strip_prefix("0b"))
                .unwrap_or(digits);
            let mag = i64::from_str_radix(digits, i.radix())
                .map_err(|_| cx.error(v.span(), path, "integer out of range"))?;
            if s.starts_with('-') {
                -(mag as f64)
            } else {
                mag as f64
            }
        }
        other => return Err(type_error(cx, v, path, "a number", other)),
    };
    if !x.is_finite() {
        return Err(cx.error(v.span(), path, format!("must be a finite number, got {x}")));
    }
    Ok(x)
}

fn nums<const N: usize>(cx: &Cx, v: &Val, path: &str) -> R<[f64; N]> {
    let a = array(cx, v, path)?;
    if a.len() != N {
        return Err(cx.error(
            v.span(),
            path,
            format!("expected {N} numbers, found {}", a.len()),
        ));
    }
    let mut out = [0.0; N];
    for (i, e) in a.iter().enumerate() {
        out[i] = num(cx, e, &format!("{path}[{i}]"))?;
    }
    Ok(out)
}

fn num_list(cx: &Cx, v: &Val, path: &str) -> R<Vec<f64>> {
    array(cx, v, path)?
        .iter()
        .enumerate()
        .map(|(i, e)| num(cx, e, &format!("{path}[{i}]")))
        .collect()
}

/// `package_dirs`: existing folders, relative to the scene file's folder.
fn package_dirs(cx: &Cx, v: &Val, path: &str, base_dir: &Path) -> R<Vec<std::path::PathBuf>> {
    array(cx, v, path)?
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let p = format!("{path}[{i}]");
            match e.get_ref() {
                DeValue::String(s) => {
                    let dir = base_dir.join(s.as_ref() as &str);
                    match dir.is_dir() {
                        true => Ok(dir),
                        false => Err(cx.error(
                            e.span(),
                            &p,
                            format!("package directory `{}` does not exist", dir.display()),
                        )),
                    }
                }
                other => Err(type_error(cx, e, &p, "a string", other)),
            }
        })
        .collect()
}

fn choose<T: Copy>(
    cx: &Cx,
    found: Option<(&str, Range<usize>, String)>,
    options: &[(&str, T)],
    default: T,
) -> R<T> {
    let Some((s, span, path)) = found else {
        return Ok(default);
    };
    options
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            cx.error(
                span,
                &path,
                format!(
                    "unknown value `{s}` (expected one of: {})",
                    names.join(", ")
                ),
            )
        })
}

// The scene-file schema: the keys of every table and the names of every
// enumerated value. The parser reads only these keys (`Tab::get`) and
// accepts only these names (`choose`), and `docs/scene-format.md` must
// document each of them (`tests/all/cli/docs.rs`, through `accepted_keys` and
// `accepted_values`). A new key goes into its list here, then the docs.

const ROOT_KEYS: &[&str] = &[
    "sim",
    "solver_params",
    "body",
    "static",
    "robot",
    "control",
    "objective",
];
const SIM_KEYS: &[&str] = &[
    "dt",
    "steps",
    "gravity",
    "solver",
    "friction_cone",
    "ccd",
    "friction_combine",
    "restitution_combine",
    "allow_initial_penetration",
];
const SOLVER_PARAMS_KEYS: &[&str] = &["rho", "tolerance", "max_iterations"];
const BODY_KEYS: &[&str] = &[
    "name",
    "mass",
    "inertia",
    "position",
    "orientation",
    "velocity",
    "angular_velocity",
    "friction",
    "restitution",
    "shape",
];
const STATIC_KEYS: &[&str] = &[
    "name",
    "position",
    "orientation",
    "friction",
    "restitution",
    "shape",
];
const ROBOT_KEYS: &[&str] = &[
    "name",
    "urdf",
    "base",
    "base_position",
    "base_orientation",
    "q",
    "v",
    "package_dirs",
    "ignore_joint_limits",
    "ignore_mimic",
];
const CONTROL_KEYS: &[&str] = &["target", "values", "per_step"];
/// A shape table before its `type` is known.
const SHAPE_TYPE_KEY: &[&str] = &["type"];
/// Each shape type and the keys of its table.
const SHAPE_KEYS: &[(&str, &[&str])] = &[
    ("sphere", &["type", "radius"]),
    ("box", &["type", "half_extents"]),
    ("capsule", &["type", "radius", "half_length"]),
    ("cylinder", &["type", "radius", "half_length"]),
    ("cone", &["type", "height", "half_angle"]),
    ("ellipsoid", &["type", "radii"]),
    ("polytope", &["type", "normals", "offsets"]),
    ("padded_polygon", &["type", "normals", "offsets", "radius"]),
    ("plane", &["type", "normal", "offset"]),
    ("bundle", &["type", "op", "parts"]),
    ("points", &["type", "points", "normals"]),
];
/// One entry of a bundle's `parts`.
const PART_KEYS: &[&str] = &["position", "orientation", "shape"];

const FRICTION_CONES: &[(&str, FrictionCone)] = &[
    ("exact", FrictionCone::Exact),
    ("pyramid", FrictionCone::Pyramid),
];
const BASES: &[(&str, BaseJoint)] = &[
    ("fixed", BaseJoint::Fixed),
    ("floating", BaseJoint::Floating),
];
const BUNDLE_OPS: &[(&str, BundleOp)] = &[
    ("union", BundleOp::Union),
    ("minkowski", BundleOp::Minkowski),
];

/// The keys each table of a scene file accepts, from the lists the parser
/// reads (for `tests/all/cli/docs.rs`): `(table, keys)` with table `""` (the top
/// level), `sim`, `solver_params` (the keys every backend reads),
/// `body`, `static`, `robot`, `control`, `shape.<type>` (one per shape
/// type), `part` (an entry of a bundle's `parts`) and
/// `solver_params.<backend>` (a backend's own keys).
#[doc(hidden)]
pub fn accepted_keys() -> Vec<(String, &'static [&'static str])> {
    let mut out: Vec<(String, &'static [&'static str])> = vec![
        (String::new(), ROOT_KEYS),
        ("sim".into(), SIM_KEYS),
        ("solver_params".into(), SOLVER_PARAMS_KEYS),
        ("body".into(), BODY_KEYS),
        ("static".into(), STATIC_KEYS),
        ("robot".into(), ROBOT_KEYS),
        ("control".into(), CONTROL_KEYS),
        ("objective".into(), objective::OBJECTIVE_KEYS),
        ("objective.running".into(), objective::RUNNING_KEYS),
        ("objective.effort".into(), objective::EFFORT_KEYS),
    ];
    out.extend(
        SHAPE_KEYS
            .iter()
            .map(|(ty, keys)| (format!("shape.{ty}"), *keys)),
    );
    out.push(("part".into(), PART_KEYS));
    out.extend(
        SolverKind::ALL
            .iter()
            .map(|k| (format!("solver_params.{}", k.name()), k.param_keys())),
    );
    out
}

/// The names each enumerated key accepts, from the lists the parser
/// matches against (for `tests/all/cli/docs.rs`): `sim.solver` (every backend
/// name, including those not available in this build),
/// `sim.friction_cone`, `sim.friction_combine`, `sim.restitution_combine`,
/// `robot.base`, `shape.type` and `shape.bundle.op`.
#[doc(hidden)]
pub fn accepted_values() -> Vec<(&'static str, Vec<&'static str>)> {
    fn names<T>(list: &[(&'static str, T)]) -> Vec<&'static str> {
        list.iter().map(|(n, _)| *n).collect()
    }
    vec![
        ("sim.solver", names(SolverKind::NAMES)),
        ("sim.friction_cone", names(FRICTION_CONES)),
        ("sim.friction_combine", names(COMBINE)),
        ("sim.restitution_combine", names(COMBINE)),
        ("robot.base", names(BASES)),
        ("shape.type", names(SHAPE_KEYS)),
        ("shape.bundle.op", names(BUNDLE_OPS)),
    ]
}

/// `x` within `[lo, hi]` (the ranges of [`crate::sim::validate`]).
fn in_range(cx: &Cx, span: Range<usize>, path: &str, x: f64, r: (f64, f64), unit: &str) -> R<()> {
    if x >= r.0 && x <= r.1 {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!(
                "{x:e} is outside the simulable range {}{unit} (see docs/validation.md)",
                range_text(r)
            ),
        ))
    }
}

/// The norm `n` of a vector field within `[lo, hi]`.
fn norm_in_range(
    cx: &Cx,
    span: Range<usize>,
    path: &str,
    n: f64,
    r: (f64, f64),
    unit: &str,
) -> R<()> {
    if n >= r.0 && n <= r.1 {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!(
                "its norm {n:e} is outside the simulable range {}{unit} (see docs/validation.md)",
                range_text(r)
            ),
        ))
    }
}

/// `|x| ≤ max`.
fn in_abs(cx: &Cx, span: Range<usize>, path: &str, x: f64, max: f64, unit: &str) -> R<()> {
    if x.abs() <= max {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!("{x:e} is outside the simulable range |x| <= {max:e}{unit} (see docs/validation.md)"),
        ))
    }
}

/// A direction `d` with `n·d ≤ 0` for every unit normal `n`, if any: then
/// `{x : n·x ≤ b}` is unbounded along `d` (its recession cone is not
/// `{0}`). When the normals span 3-D the cone has no line, so if it is not
/// `{0}` it has an extreme ray on two of the planes `n·d = 0`, i.e. along
/// `±nᵢ × nⱼ`; when they do not span 3-D, a cross product (rank 2) or a
/// perpendicular of the first normal (rank 1) is orthogonal to them all.
fn recession_direction(normals: &[Vec3<f64>]) -> Option<Vec3<f64>> {
    const TOL: f64 = 1e-9;
    let outside = |d: &Vec3<f64>| normals.iter().all(|n| n.dot(d) <= TOL);
    let n0 = normals.first()?;
    let helper = if n0.x.abs() < 0.9 {
        Vec3::new(1.0, 0.0, 0.0)
    } else {
        Vec3::new(0.0, 1.0, 0.0)
    };
    let p = n0.cross(&helper).normalize();
    let q = n0.cross(&p);
    let mut candidates = vec![p, -p, q, -q];
    for (i, a) in normals.iter().enumerate() {
        for b in &normals[i + 1..] {
            let c = a.cross(b);
            let len = c.norm();
            if len > TOL {
                candidates.push(c / len);
                candidates.push(-c / len);
            }
        }
        if candidates.iter().any(&outside) {
            break;
        }
    }
    candidates.into_iter().find(outside)
}

/// Unit vector along `n` without overflow or underflow of the squares
/// (`[0, -1e300, 1]` → `[0, -1, 1e-300]`); `None` for a zero vector.
pub fn normalize_scaled(n: [f64; 3]) -> Option<Vec3<f64>> {
    let m = n.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
    if !(m > 0.0) || !m.is_finite() {
        return None;
    }
    let v = Vec3::from(n) / m;
    Some(v / v.norm())
}

const COMBINE: &[(&str, Combine)] = &[
    ("average", Combine::Average),
    ("min", Combine::Min),
    ("max", Combine::Max),
    ("multiply", Combine::Multiply),
];

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

/// The keys `[solver_params]` accepts under the backend `kind`: the shared
/// ones and the backend's own ([`SolverKind::param_keys`]).
fn solver_param_keys(kind: SolverKind) -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<(SolverKind, &'static [&'static str])>> =
        std::sync::OnceLock::new();
    let all = KEYS.get_or_init(|| {
        SolverKind::ALL
            .iter()
            .map(|k| {
                let mut v: Vec<&'static str> = SOLVER_PARAMS_KEYS.to_vec();
                v.extend(
                    k.param_keys()
                        .iter()
                        .filter(|x| !SOLVER_PARAMS_KEYS.contains(x)),
                );
                (*k, &*Vec::leak(v))
            })
            .collect()
    });
    all.iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| *v)
        .unwrap_or(SOLVER_PARAMS_KEYS)
}

/// A scene value as a `toml::Value` (for the backends' serde-read tuning).
fn to_toml(cx: &Cx, v: &Val, path: &str) -> R<toml::Value> {
    Ok(match v.get_ref() {
        DeValue::Boolean(b) => toml::Value::Boolean(*b),
        DeValue::String(s) => toml::Value::String(s.to_string()),
        DeValue::Integer(_) => {
            let x = num(cx, v, path)?;
            if x.abs() > 9.0e15 {
                return Err(cx.error(v.span(), path, "integer out of range"));
            }
            toml::Value::Integer(x as i64)
        }
        DeValue::Float(_) => toml::Value::Float(num(cx, v, path)?),
        DeValue::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, e)| to_toml(cx, e, &format!("{path}[{i}]")))
                .collect::<R<Vec<_>>>()?,
        ),
        DeValue::Table(t) => {
            let mut out = toml::Table::new();
            for (k, e) in t.iter() {
                let key: &str = k.get_ref().as_ref();
                out.insert(key.to_string(), to_toml(cx, e, &format!("{path}.{key}"))?);
            }
            toml::Value::Table(out)
        }
        other => {
            return Err(type_error(
                cx,
                v,
                path,
                "a number, boolean, string, array or table",
                other,
            ))
        }
    })
}

fn boolean(cx: &Cx, v: &Val, path: &str) -> R<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        other => Err(type_error(cx, v, path, "a boolean", other)),
    }
}

/// The optional `position` (default 0) and `orientation` (unit quaternion,
/// default identity) of a table.
fn pose_fields<'a>(cx: &Cx, t: &mut Tab<'a, '_>) -> R<([f64; 3], Quat<f64>)> {
    let pos = t.vec_opt::<3>("position")?.map(|x| x.0).unwrap_or([0.0; 3]);
    let rot = match t.vec_opt::<4>("orientation")? {
        None => Quat::new(1.0, 0.0, 0.0, 0.0),
        Some((o, span, p)) => unit_quat(cx, o, span, &p)?,
    };
    Ok((pos, rot))
}

/// A required list of 3-vectors (`normals`, `points`), with the value and
/// path of the field for later errors.
fn vec3_list<'a, 'i>(
    cx: &Cx,
    t: &mut Tab<'a, 'i>,
    key: &'a str,
) -> R<(Vec<Vec3<f64>>, &'a Val<'i>, String)> {
    let Some((v, p)) = t.get(key) else {
        return Err(t.missing(key));
    };
    let list = array(cx, v, &p)?
        .iter()
        .enumerate()
        .map(|(i, e)| nums::<3>(cx, e, &format!("{p}[{i}]")).map(Vec3::from))
        .collect::<R<Vec<_>>>()?;
    Ok((list, v, p))
}

fn unit_quat(cx: &Cx, o: [f64; 4], span: Range<usize>, path: &str) -> R<Quat<f64>> {
    let n = (o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]).sqrt();
    if (n - 1.0).abs() > 1e-6 {
        return Err(cx.error(
            span,
            path,
            format!("quaternion [w, x, y, z] must have unit norm (within 1e-6), its norm is {n}"),
        ));
    }
    Ok(Quat::new(o[0] / n, o[1] / n, o[2] / n, o[3] / n))
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

/// A required size: > 0 and within [`limits::SIZE`].
fn positive(cx: &Cx, t: &mut Tab, key: &'static str) -> R<f64> {
    let (x, span, p) = t.f64_req(key)?;
    if x <= 0.0 {
        return Err(cx.error(span, &p, format!("must be > 0, got {x}")));
    }
    in_range(cx, span, &p, x, limits::SIZE, " m")?;
    Ok(x)
}

/// Three sizes (> 0, within [`limits::SIZE`]).
fn sizes3(cx: &Cx, x: [f64; 3], span: Range<usize>, p: &str, what: &str) -> R<Vec3<f64>> {
    if x.iter().any(|x| *x <= 0.0) {
        return Err(cx.error(span, p, format!("{what} must be > 0")));
    }
    for (d, c) in x.iter().enumerate() {
        in_range(
            cx,
            span.clone(),
            &format!("{p}[{d}]"),
            *c,
            limits::SIZE,
            " m",
        )?;
    }
    Ok(Vec3::from(x))
}

fn shape(cx: &Cx, mut t: Tab, is_static: bool) -> R<Shape<f64>> {
    let Some((ty, tspan, tpath)) = t.str_opt("type")? else {
        return Err(t.missing("type"));
    };
    let Some(&(_, keys)) = SHAPE_KEYS.iter().find(|(n, _)| *n == ty) else {
        let names: Vec<&str> = SHAPE_KEYS.iter().map(|(n, _)| *n).collect();
        return Err(cx.error(
            tspan,
            &tpath,
            format!(
                "unknown shape type `{ty}` (expected one of: {})",
                names.join(", ")
            ),
        ));
    };
    t.keys = keys;
    let s = match ty {
        "sphere" => Shape::Sphere {
            radius: positive(cx, &mut t, "radius")?,
        },
        "box" => {
            let Some((h, span, p)) = t.vec_opt::<3>("half_extents")? else {
                return Err(t.missing("half_extents"));
            };
            Shape::Box {
                half_extents: sizes3(cx, h, span, &p, "half extents")?,
            }
        }
        "capsule" => Shape::Capsule {
            radius: positive(cx, &mut t, "radius")?,
            half_length: positive(cx, &mut t, "half_length")?,
        },
        "cylinder" => Shape::Cylinder {
            radius: positive(cx, &mut t, "radius")?,
            half_length: positive(cx, &mut t, "half_length")?,
        },
        "cone" => {
            let height = positive(cx, &mut t, "height")?;
            let (a, span, p) = t.f64_req("half_angle")?;
            if !(a > 0.0 && a < std::f64::consts::FRAC_PI_2) {
                return Err(cx.error(span, &p, format!("must be in (0, pi/2) rad, got {a}")));
            }
            Shape::Cone {
                height,
                half_angle: a,
            }
        }
        "ellipsoid" => {
            let Some((r, span, p)) = t.vec_opt::<3>("radii")? else {
                return Err(t.missing("radii"));
            };
            Shape::Ellipsoid {
                radii: sizes3(cx, r, span, &p, "radii")?,
            }
        }
        "polytope" | "padded_polygon" => {
            let (normals, nval, np) = vec3_list(cx, &mut t, "normals")?;
            let Some((ov, op)) = t.get("offsets") else {
                return Err(t.missing("offsets"));
            };
            let offsets = num_list(cx, ov, &op)?;
            if offsets.len() != normals.len() {
                return Err(cx.error(ov.span(), &op, "one offset per normal"));
            }
            if normals.is_empty() {
                return Err(cx.error(nval.span(), &np, "at least one face is required"));
            }
            // Rows of A x <= b scaled to unit normals (the same set).
            let mut unit = Vec::with_capacity(normals.len());
            let mut scaled = Vec::with_capacity(normals.len());
            for (i, (n, b)) in normals.iter().zip(&offsets).enumerate() {
                let len = n.amax();
                let Some(u) = normalize_scaled([n.x, n.y, n.z]) else {
                    return Err(cx.error(
                        nval.span(),
                        &format!("{np}[{i}]"),
                        "normal must be non-zero",
                    ));
                };
                // b / |n| without overflow: |n| = len * |n / len|
                let b = b / len / (n / len).norm();
                in_abs(
                    cx,
                    ov.span(),
                    &format!("{op}[{i}]"),
                    b,
                    limits::SIZE.1,
                    " m (offset / |normal|)",
                )?;
                unit.push(u);
                scaled.push(b);
            }
            let (normals, offsets) = (unit, scaled);
            if ty == "polytope" {
                if let Some(d) = recession_direction(&normals) {
                    return Err(cx.error(
                        nval.span(),
                        &np,
                        format!(
                            "the half-spaces do not bound a volume: the polytope is unbounded \
                             in direction [{:.3}, {:.3}, {:.3}] (every n·d ≤ 0; the normals must \
                             point to all sides)",
                            d.x, d.y, d.z
                        ),
                    ));
                }
                Shape::Polytope {
                    normals,
                    offsets,
                    hull: None,
                }
            } else {
                Shape::PaddedPolygon {
                    normals,
                    offsets,
                    radius: positive(cx, &mut t, "radius")?,
                }
            }
        }
        "plane" => {
            if !is_static {
                return Err(cx.error(tspan, &tpath, "a plane can only be static geometry"));
            }
            let Some((n, span, p)) = t.vec_opt::<3>("normal")? else {
                return Err(t.missing("normal"));
            };
            // Scaled normalization: the squares of [0, -1e300, 1] overflow.
            let Some(normal) = normalize_scaled(n) else {
                return Err(cx.error(span, &p, "normal must be non-zero"));
            };
            let offset = match t.get("offset") {
                None => 0.0,
                Some((v, p)) => {
                    let x = num(cx, v, &p)?;
                    in_abs(cx, v.span(), &p, x, limits::POSITION_MAX, " m")?;
                    x
                }
            };
            Shape::Plane { normal, offset }
        }
        "bundle" => {
            let op = t.str_opt("op")?;
            let op = choose(cx, op, BUNDLE_OPS, BundleOp::Union)?;
            let mut parts = Vec::new();
            for mut part in t.array_of_tables("parts", PART_KEYS)? {
                let position_at = part.get("position").map(|(v, p)| (v.span(), p));
                let (pos, rot) = pose_fields(cx, &mut part)?;
                if let Some((span, p)) = &position_at {
                    for (d, x) in pos.iter().enumerate() {
                        in_abs(
                            cx,
                            span.clone(),
                            &format!("{p}[{d}]"),
                            *x,
                            limits::SIZE.1,
                            " m",
                        )?;
                    }
                }
                let inner = match part.table("shape", SHAPE_TYPE_KEY)? {
                    None => return Err(part.missing("shape")),
                    Some(s) => shape(cx, s, false)?,
                };
                part.finish()?;
                parts.push((inner, Pose::new(rot, Vec3::from(pos))));
            }
            if parts.is_empty() {
                return Err(t.missing("parts"));
            }
            Shape::Bundle { parts, op }
        }
        "points" => {
            let (points, _, _) = vec3_list(cx, &mut t, "points")?;
            let (normals, nv, np) = vec3_list(cx, &mut t, "normals")?;
            if normals.len() != points.len() {
                return Err(cx.error(nv.span(), &np, "one normal per point"));
            }
            Shape::Points { points, normals }
        }
        other => unreachable!("shape type `{other}` is listed in SHAPE_KEYS but not built"),
    };
    t.finish()?;
    Ok(s)
}
