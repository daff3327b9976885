//! Scene files (TOML) → [`Scene`]. The user's reference of the format is
//! `docs/scene-format.md`; `tests/docs.rs` checks that it documents every
//! key and value this parser accepts.
//!
//! The file is parsed into toml's spanned document tree and walked by hand,
//! so that every error — malformed TOML, an unknown key, a value of the wrong
//! type, a non-finite number, mass ≤ 0, an inertia that is not positive
//! definite, dt ≤ 0, a quaternion whose norm differs from 1 by more than
//! 1e-6, … — is reported as a [`SceneError`] carrying the file, line and
//! column (1-based) and the field's path (`body[1].mass`).
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
use crate::sim::{Controls, State, World};

/// A loaded scene: the world, its initial state, controls and step count.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The world (model, geometry, gravity, dt, backend).
    pub world: World<f64>,
    /// Initial state.
    pub initial: State<f64>,
    /// Applied forces over the run.
    pub controls: Controls<f64>,
    /// Number of steps to simulate.
    pub steps: usize,
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

/// Reads and parses a scene file.
pub fn load(path: &Path) -> Result<Scene, SceneError> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| SceneError {
        file: file.clone(),
        line: 1,
        column: 1,
        path: String::new(),
        message: format!("cannot read the file: {e}"),
    })?;
    parse(&src, &file)
}

/// Parses a scene from its source text; `file` names it in errors.
pub fn parse(src: &str, file: &str) -> Result<Scene, SceneError> {
    let cx = Cx { src, file };
    let doc = DeTable::parse(src).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        cx.error(span, "", e.message().trim().to_string())
    })?;
    let root = Tab::new(&cx, doc.get_ref(), doc.span(), String::new(), ROOT_KEYS);
    build(&cx, root)
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
        Tab { cx, map, span, path, keys, used: Vec::new() }
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
        self.cx.error(self.span.clone(), &self.child_path(key), "missing required field")
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

    fn f64_opt(&mut self, key: &'a str) -> R<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => num(self.cx, v, &p).map(Some),
        }
    }

    fn f64_or(&mut self, key: &'a str, default: f64) -> R<f64> {
        Ok(self.f64_opt(key)?.unwrap_or(default))
    }

    fn f64_req(&mut self, key: &'a str) -> R<(f64, Range<usize>, String)> {
        let Some((v, p)) = self.get(key) else { return Err(self.missing(key)) };
        Ok((num(self.cx, v, &p)?, v.span(), p))
    }

    fn vec_opt<const N: usize>(&mut self, key: &'a str) -> R<Option<([f64; N], Range<usize>, String)>> {
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

    fn array_of_tables(&mut self, key: &'a str, keys: &'static [&'static str]) -> R<Vec<Tab<'a, 'i>>> {
        let Some((v, p)) = self.get(key) else { return Ok(Vec::new()) };
        let arr = array(self.cx, v, &p)?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| match e.get_ref() {
                DeValue::Table(t) => Ok(Tab::new(self.cx, t, e.span(), format!("{p}[{i}]"), keys)),
                other => Err(type_error(self.cx, e, &format!("{p}[{i}]"), "a table", other)),
            })
            .collect()
    }
}

fn type_error(cx: &Cx, v: &Val, path: &str, want: &str, got: &DeValue) -> SceneError {
    cx.error(v.span(), path, format!("expected {want}, found {}", got.type_str()))
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
            s.parse::<f64>().map_err(|_| cx.error(v.span(), path, "not a number"))?
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
        return Err(cx.error(v.span(), path, format!("expected {N} numbers, found {}", a.len())));
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

fn choose<T: Copy>(
    cx: &Cx,
    found: Option<(&str, Range<usize>, String)>,
    options: &[(&str, T)],
    default: T,
) -> R<T> {
    let Some((s, span, path)) = found else { return Ok(default) };
    options.iter().find(|(n, _)| *n == s).map(|(_, t)| *t).ok_or_else(|| {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        cx.error(span, &path, format!("unknown value `{s}` (expected one of: {})", names.join(", ")))
    })
}

// The scene-file schema: the keys of every table and the names of every
// enumerated value. The parser reads only these keys (`Tab::get`) and
// accepts only these names (`choose`), and `docs/scene-format.md` must
// document each of them (`tests/docs.rs`, through `accepted_keys` and
// `accepted_values`). A new key goes into its list here, then the docs.

const ROOT_KEYS: &[&str] = &["sim", "solver_params", "body", "static", "robot", "control"];
const SIM_KEYS: &[&str] = &[
    "dt",
    "steps",
    "gravity",
    "solver",
    "friction_cone",
    "ccd",
    "friction_combine",
    "restitution_combine",
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
const STATIC_KEYS: &[&str] = &["name", "position", "orientation", "friction", "restitution", "shape"];
const ROBOT_KEYS: &[&str] = &["name", "urdf", "base", "base_position", "base_orientation", "q", "v"];
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

const FRICTION_CONES: &[(&str, FrictionCone)] = &[("exact", FrictionCone::Exact), ("pyramid", FrictionCone::Pyramid)];
const BASES: &[(&str, BaseJoint)] = &[("fixed", BaseJoint::Fixed), ("floating", BaseJoint::Floating)];
const BUNDLE_OPS: &[(&str, BundleOp)] = &[("union", BundleOp::Union), ("minkowski", BundleOp::Minkowski)];

/// The keys each table of a scene file accepts, from the lists the parser
/// reads (for `tests/docs.rs`): `(table, keys)` with table `""` (the top
/// level), `sim`, `solver_params`, `body`, `static`, `robot`, `control`,
/// `shape.<type>` (one per shape type) and `part` (an entry of a bundle's
/// `parts`).
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
    ];
    out.extend(SHAPE_KEYS.iter().map(|(ty, keys)| (format!("shape.{ty}"), *keys)));
    out.push(("part".into(), PART_KEYS));
    out
}

/// The names each enumerated key accepts, from the lists the parser
/// matches against (for `tests/docs.rs`): `sim.solver` (every backend
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

const COMBINE: &[(&str, Combine)] = &[
    ("average", Combine::Average),
    ("min", Combine::Min),
    ("max", Combine::Max),
    ("multiply", Combine::Multiply),
];

fn build<'a>(cx: &'a Cx<'a>, mut root: Tab<'a, '_>) -> R<Scene> {
    // [sim]
    let mut world = World::<f64>::new(0.01);
    let mut steps = 100usize;
    if let Some(mut sim) = root.table("sim", SIM_KEYS)? {
        if let Some((v, p)) = sim.get("dt") {
            let dt = num(cx, v, &p)?;
            if dt <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {dt}")));
            }
            world.dt = dt;
        }
        if let Some((v, p)) = sim.get("steps") {
            let x = num(cx, v, &p)?;
            if x < 0.0 || x.fract() != 0.0 || x > 1e9 {
                return Err(cx.error(v.span(), &p, format!("must be a whole number >= 0, got {x}")));
            }
            steps = x as usize;
        }
        if let Some((g, _, _)) = sim.vec_opt::<3>("gravity")? {
            world.set_gravity(Vec3::from(g));
        }
        let solver = sim.str_opt("solver")?;
        if let Some((name, span, path)) = solver {
            match SolverKind::NAMES.iter().find(|(n, _)| *n == name) {
                Some((_, Some(kind))) => world.solver = *kind,
                Some((_, None)) => {
                    return Err(cx.error(
                        span,
                        &path,
                        format!("solver `{name}` is not available in this build (available: ipm, single_level, bilevel)"),
                    ))
                }
                None => {
                    let names: Vec<&str> = SolverKind::NAMES.iter().map(|(n, _)| *n).collect();
                    return Err(cx.error(
                        span,
                        &path,
                        format!("unknown solver `{name}` (expected one of: {})", names.join(", ")),
                    ));
                }
            }
        }
        let fc = sim.str_opt("friction_cone")?;
        world.friction_cone = choose(
            cx,
            fc,
            FRICTION_CONES,
            FrictionCone::Exact,
        )?;
        if let Some((v, p)) = sim.get("ccd") {
            match v.get_ref() {
                DeValue::Boolean(false) => {}
                DeValue::Boolean(true) => {
                    return Err(cx.error(
                        v.span(),
                        &p,
                        "continuous collision is not available in this build",
                    ))
                }
                other => return Err(type_error(cx, v, &p, "a boolean", other)),
            }
        }
        let f = sim.str_opt("friction_combine")?;
        world.friction_combine = choose(cx, f, COMBINE, Combine::Average)?;
        let r = sim.str_opt("restitution_combine")?;
        world.restitution_combine = choose(cx, r, COMBINE, Combine::Average)?;
        sim.finish()?;
    }

    // [solver_params]
    if let Some(mut sp) = root.table("solver_params", SOLVER_PARAMS_KEYS)? {
        if let Some((v, p)) = sp.get("rho") {
            let x = num(cx, v, &p)?;
            if x <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {x}")));
            }
            world.params.rho = x;
        }
        if let Some((v, p)) = sp.get("tolerance") {
            let x = num(cx, v, &p)?;
            if x <= 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be > 0, got {x}")));
            }
            world.params.tolerance = x;
        }
        if let Some((v, p)) = sp.get("max_iterations") {
            let x = num(cx, v, &p)?;
            if x < 1.0 || x.fract() != 0.0 {
                return Err(cx.error(v.span(), &p, format!("must be a whole number >= 1, got {x}")));
            }
            world.params.max_iterations = x as usize;
        }
        sp.finish()?;
    }

    // [[body]]
    let mut q = Vec::new();
    let mut v = Vec::new();
    for mut body in root.array_of_tables("body", BODY_KEYS)? {
        let name = match body.str_opt("name")? {
            Some((n, _, _)) => n.to_string(),
            None => return Err(body.missing("name")),
        };
        let (mass, mspan, mpath) = body.f64_req("mass")?;
        if mass <= 0.0 {
            return Err(cx.error(mspan, &mpath, format!("mass must be > 0, got {mass}")));
        }
        let inertia = match body.get("inertia") {
            None => return Err(body.missing("inertia")),
            Some((val, p)) => inertia_matrix(cx, val, &p)?,
        };
        let (pos, rot) = pose_fields(cx, &mut body)?;
        let vel = body.vec_opt::<3>("velocity")?.map(|x| x.0).unwrap_or([0.0; 3]);
        let ang = body.vec_opt::<3>("angular_velocity")?.map(|x| x.0).unwrap_or([0.0; 3]);
        let material = material(cx, &mut body)?;
        let shape = match body.table("shape", SHAPE_TYPE_KEY)? {
            None => None,
            Some(t) => Some(shape(cx, t, false)?),
        };
        let span = body.span.clone();
        let path = body.path.clone();
        body.finish()?;
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
        let name = st.str_opt("name")?.map(|x| x.0.to_string()).unwrap_or_default();
        let material = material(cx, &mut st)?;
        let (pos, rot) = pose_fields(cx, &mut st)?;
        let shape = match st.table("shape", SHAPE_TYPE_KEY)? {
            None => return Err(st.missing("shape")),
            Some(t) => shape(cx, t, true)?,
        };
        st.finish()?;
        world.statics.push(StaticGeometry {
            name,
            shape,
            pose: Pose::new(rot, Vec3::from(pos)),
            material,
        });
    }

    // [[robot]]
    for mut r in root.array_of_tables("robot", ROBOT_KEYS)? {
        let Some((name, _, _)) = r.str_opt("name")? else { return Err(r.missing("name")) };
        let name = name.to_string();
        let Some((file, fspan, fpath)) = r.str_opt("urdf")? else { return Err(r.missing("urdf")) };
        let base_dir = Path::new(cx.file).parent().unwrap_or(Path::new("."));
        let base = choose(
            cx,
            r.str_opt("base")?,
            BASES,
            BaseJoint::Fixed,
        )?;
        let urdf = urdf::load_file(base_dir.join(file), base)
            .map_err(|e| cx.error(fspan.clone(), &fpath, format!("{file}: {e}")))?;
        let pos = r.vec_opt::<3>("base_position")?.map(|x| x.0).unwrap_or([0.0; 3]);
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
        if let Some((val, p)) = r.get("q") {
            let given = num_list(cx, val, &p)?;
            if given.len() != rq {
                return Err(cx.error(val.span(), &p, format!("expected {rq} joint positions, found {}", given.len())));
            }
            if base == BaseJoint::Floating {
                let n = given[3..7].iter().map(|x| x * x).sum::<f64>().sqrt();
                if (n - 1.0).abs() > 1e-6 {
                    return Err(cx.error(val.span(), &p, format!("the base quaternion q[3..7] must have unit norm, its norm is {n}")));
                }
            }
            q0 = given;
        }
        let v0 = match r.get("v") {
            None => vec![0.0; rv],
            Some((val, p)) => {
                let given = num_list(cx, val, &p)?;
                if given.len() != rv {
                    return Err(cx.error(val.span(), &p, format!("expected {rv} joint velocities, found {}", given.len())));
                }
                given
            }
        };
        let span = r.span.clone();
        let path = r.path.clone();
        r.finish()?;
        world
            .add_robot_with_collisions(&name, &urdf, &placement)
            .map_err(|e| cx.error(span, &path, e.to_string()))?;
        q.extend_from_slice(&q0);
        v.extend_from_slice(&v0);
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
        } else if let Some(bi) = world.model.body_index(target).filter(|&b| world.model.bodies[b].is_free_root()) {
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
                    return Err(cx.error(val.span(), &p, format!("expected {width} numbers, found {}", u.len())));
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
                    for d in 0..width {
                        ps[i][k + d] += u[d];
                    }
                }
            }
            (Some(_), Some((val, p))) => {
                return Err(cx.error(val.span(), &p, "give either `values` or `per_step`, not both"))
            }
            (None, None) => return Err(c.missing("values")),
        }
        c.finish()?;
    }
    let controls = match per_step {
        Some(ps) => Controls::PerStep(ps),
        None => Controls::Constant(constant),
    };

    root.finish()?;

    Ok(Scene {
        world,
        initial: State { q: DVec::from_vec(q), v: DVec::from_vec(v) },
        controls,
        steps,
    })
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
    let Some((v, p)) = t.get(key) else { return Err(t.missing(key)) };
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
        return Err(cx.error(v.span(), path, "inertia must be symmetric positive definite"));
    }
    Ok(m)
}

fn material(cx: &Cx, t: &mut Tab) -> R<Material<f64>> {
    let mut m = Material::<f64>::default();
    if let Some((v, p)) = t.get("friction") {
        let x = num(cx, v, &p)?;
        if x < 0.0 {
            return Err(cx.error(v.span(), &p, format!("friction must be >= 0, got {x}")));
        }
        m.friction = x;
    }
    if let Some((v, p)) = t.get("restitution") {
        let x = num(cx, v, &p)?;
        if !(0.0..=1.0).contains(&x) {
            return Err(cx.error(v.span(), &p, format!("restitution must be in [0, 1], got {x}")));
        }
        m.restitution = x;
    }
    Ok(m)
}

fn positive(cx: &Cx, t: &mut Tab, key: &'static str) -> R<f64> {
    let (x, span, p) = t.f64_req(key)?;
    if x <= 0.0 {
        return Err(cx.error(span, &p, format!("must be > 0, got {x}")));
    }
    Ok(x)
}

fn shape(cx: &Cx, mut t: Tab, is_static: bool) -> R<Shape<f64>> {
    let Some((ty, tspan, tpath)) = t.str_opt("type")? else { return Err(t.missing("type")) };
    let Some(&(_, keys)) = SHAPE_KEYS.iter().find(|(n, _)| *n == ty) else {
        let names: Vec<&str> = SHAPE_KEYS.iter().map(|(n, _)| *n).collect();
        return Err(cx.error(
            tspan,
            &tpath,
            format!("unknown shape type `{ty}` (expected one of: {})", names.join(", ")),
        ));
    };
    t.keys = keys;
    let s = match ty {
        "sphere" => Shape::Sphere { radius: positive(cx, &mut t, "radius")? },
        "box" => {
            let Some((h, span, p)) = t.vec_opt::<3>("half_extents")? else {
                return Err(t.missing("half_extents"));
            };
            if h.iter().any(|x| *x <= 0.0) {
                return Err(cx.error(span, &p, "half extents must be > 0"));
            }
            Shape::Box { half_extents: Vec3::from(h) }
        }
        "capsule" => Shape::Capsule {
            radius: positive(cx, &mut t, "radius")?,
            half_length: positive(cx, &mut t, "half_length")?,
        },
        "cylinder" => Shape::Cylinder {
            radius: positive(cx, &mut t, "radius")?,
            half_length: positive(cx, &mut t, "half_length")?,
        },
        "cone" => Shape::Cone {
            height: positive(cx, &mut t, "height")?,
            half_angle: positive(cx, &mut t, "half_angle")?,
        },
        "ellipsoid" => {
            let Some((r, span, p)) = t.vec_opt::<3>("radii")? else { return Err(t.missing("radii")) };
            if r.iter().any(|x| *x <= 0.0) {
                return Err(cx.error(span, &p, "radii must be > 0"));
            }
            Shape::Ellipsoid { radii: Vec3::from(r) }
        }
        "polytope" | "padded_polygon" => {
            let (normals, _, _) = vec3_list(cx, &mut t, "normals")?;
            let Some((ov, op)) = t.get("offsets") else { return Err(t.missing("offsets")) };
            let offsets = num_list(cx, ov, &op)?;
            if offsets.len() != normals.len() {
                return Err(cx.error(ov.span(), &op, "one offset per normal"));
            }
            if ty == "polytope" {
                Shape::Polytope { normals, offsets }
            } else {
                Shape::PaddedPolygon { normals, offsets, radius: positive(cx, &mut t, "radius")? }
            }
        }
        "plane" => {
            if !is_static {
                return Err(cx.error(tspan, &tpath, "a plane can only be static geometry"));
            }
            let Some((n, span, p)) = t.vec_opt::<3>("normal")? else { return Err(t.missing("normal")) };
            let n = Vec3::from(n);
            let len = n.norm();
            if len == 0.0 {
                return Err(cx.error(span, &p, "normal must be non-zero"));
            }
            Shape::Plane { normal: n / len, offset: t.f64_or("offset", 0.0)? }
        }
        "bundle" => {
            let op = t.str_opt("op")?;
            let op = choose(
                cx,
                op,
                BUNDLE_OPS,
                BundleOp::Union,
            )?;
            let mut parts = Vec::new();
            for mut part in t.array_of_tables("parts", PART_KEYS)? {
                let (pos, rot) = pose_fields(cx, &mut part)?;
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
