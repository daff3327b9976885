//! The scene-file schema: the keys of every table and the names of every
//! enumerated value, and the lists of them the documentation test reads
//! ([`accepted_keys`], [`accepted_values`]).

use crate::contact::{FrictionCone, SolverKind};
use crate::dynamics::urdf::BaseJoint;
use crate::geometry::{BundleOp, Combine};

use super::objective;

// The scene-file schema: the keys of every table and the names of every
// enumerated value. The parser reads only these keys (`Tab::get`) and
// accepts only these names (`choose`), and `docs/scene-format.md` must
// document each of them (`tests/all/cli/docs.rs`, through `accepted_keys` and
// `accepted_values`). A new key goes into its list here, then the docs.

pub(super) const ROOT_KEYS: &[&str] = &[
    "sim",
    "solver_params",
    "body",
    "static",
    "robot",
    "control",
    "objective",
];
pub(super) const SIM_KEYS: &[&str] = &[
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
pub(super) const SOLVER_PARAMS_KEYS: &[&str] = &["rho", "tolerance", "max_iterations"];
pub(super) const BODY_KEYS: &[&str] = &[
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
pub(super) const STATIC_KEYS: &[&str] = &[
    "name",
    "position",
    "orientation",
    "friction",
    "restitution",
    "shape",
];
pub(super) const ROBOT_KEYS: &[&str] = &[
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
pub(super) const CONTROL_KEYS: &[&str] = &["target", "values", "per_step"];
/// A shape table before its `type` is known.
pub(super) const SHAPE_TYPE_KEY: &[&str] = &["type"];
/// Each shape type and the keys of its table.
pub(super) const SHAPE_KEYS: &[(&str, &[&str])] = &[
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
pub(super) const PART_KEYS: &[&str] = &["position", "orientation", "shape"];

pub(super) const FRICTION_CONES: &[(&str, FrictionCone)] = &[
    ("exact", FrictionCone::Exact),
    ("pyramid", FrictionCone::Pyramid),
];
pub(super) const BASES: &[(&str, BaseJoint)] = &[
    ("fixed", BaseJoint::Fixed),
    ("floating", BaseJoint::Floating),
];
pub(super) const BUNDLE_OPS: &[(&str, BundleOp)] = &[
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

pub(super) const COMBINE: &[(&str, Combine)] = &[
    ("average", Combine::Average),
    ("min", Combine::Min),
    ("max", Combine::Max),
    ("multiply", Combine::Multiply),
];

/// The keys `[solver_params]` accepts under the backend `kind`: the shared
/// ones and the backend's own ([`SolverKind::param_keys`]).
pub(super) fn solver_param_keys(kind: SolverKind) -> &'static [&'static str] {
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
