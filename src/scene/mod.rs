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

use toml::de::DeTable;

use crate::contact::SolverKind;
use crate::dynamics::urdf;
use crate::math::DVec;
use crate::sim::{Controls, State, World};

mod bodies;
mod checks;
mod controls;
mod fields;
pub mod info;
mod keys;
mod objective;
mod robots;
mod settings;
mod shape;
pub use keys::{accepted_keys, accepted_values};
pub use objective::{BoundSpec, EffortSpec, ObjectiveSpec, RunningSpec, bound_width};
pub use shape::normalize_scaled;

use fields::{Cx, R, Tab};
use keys::ROOT_KEYS;

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

/// What the `[[body]]`, `[[static]]` and `[[robot]]` tables add up to:
/// the initial state's coordinates, where each named item is written and
/// where each positive restitution is.
#[derive(Default)]
struct Placed {
    q: Vec<f64>,
    v: Vec<f64>,
    located: Vec<Located>,
    restitutions: Vec<Located>,
}

/// The scene of a parsed file: its tables read in order, then the checks
/// that need the whole scene, then the `[objective]`.
fn build<'a>(cx: &'a Cx<'a>, mut root: Tab<'a, '_>, opts: &LoadOptions) -> R<Scene> {
    let (mut world, steps, allow_initial_penetration) = settings::read_sim(cx, &mut root, opts)?;
    settings::read_solver_params(cx, &mut root, &mut world)?;
    // where each body, static and robot is written, and each positive restitution
    let mut placed = Placed::default();
    bodies::read_bodies(cx, &mut root, &mut world, &mut placed)?;
    bodies::read_statics(cx, &mut root, &mut world, &mut placed)?;
    let robots = robots::read_robots(cx, &mut root, &mut world, &mut placed)?;
    let controls = controls::read_controls(cx, &mut root, &world, steps)?;

    let objective_table = root.table("objective", objective::OBJECTIVE_KEYS)?;
    root.finish()?;
    let initial = State {
        q: DVec::from_vec(placed.q),
        v: DVec::from_vec(placed.v),
    };
    checks::check_initial(
        cx,
        &world,
        &initial,
        &placed.located,
        &placed.restitutions,
        allow_initial_penetration,
    )?;

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
