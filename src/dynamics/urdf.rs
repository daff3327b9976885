//! URDF import (through the `urdf-rs` crate) into a [`Model`] plus the
//! collision shapes of each link.
//!
//! * The text first goes through [`sanitize`] (roxmltree): malformed XML
//!   is a located error, and `<texture>` elements without a `filename`
//!   (visual only; urdf-rs requires the attribute) are dropped.
//! * Each link becomes a body named after it, in depth-first order from the
//!   root link with the children of a link sorted by their joint's name
//!   (byte-wise) — the order of Pinocchio's URDF parser (urdfdom keeps the
//!   joints in a map by name), hence of `q` and `v`.
//! * The root link is attached to the world by a `Fixed` joint
//!   ([`BaseJoint::Fixed`]) or a `Free` joint ([`BaseJoint::Floating`]).
//! * Links welded by `fixed` joints are merged into the inertia of their
//!   nearest moving ancestor (or the root), as Pinocchio does
//!   ([`UrdfRobot::merge_fixed_links`]); they stay as massless
//!   zero-coordinate bodies, so their names, frames and collision shapes
//!   are kept ([`from_robot_unmerged`] skips the merge; the dynamics are
//!   identical).
//! * `revolute` and `continuous` → `Revolute`, `prismatic` → `Prismatic`,
//!   `fixed` → `Fixed`, `floating` → `Free`, `spherical` → `Spherical`;
//!   `planar` → [`UrdfError::UnsupportedJoint`].
//! * `<mimic>` joints are recorded in [`UrdfRobot::mimic`], not coupled
//!   ([`UrdfRobot::refuse_mimic`]: the scene refuses them by name);
//!   `<dynamics damping friction>` are recorded in [`UrdfRobot::joints`],
//!   not simulated.
//! * Joint `origin` (xyz, rpy with `R = R_z(yaw) R_y(pitch) R_x(roll)`) is the
//!   body's `placement`; the inertial `origin` gives the centre of mass and
//!   rotates the inertia tensor, `I_c = R I Rᵀ`.
//! * Collision `box`, `sphere`, `cylinder` and `capsule` become
//!   [`Shape`]s (half extents and half lengths); a `mesh` becomes the
//!   convex hull of its file, scaled, as a [`Shape::Polytope`]
//!   ([`urdf_mesh`](super::urdf_mesh): STL, OBJ, Collada/DAE;
//!   `package://` URIs through [`MeshOptions::package_dirs`]). Every mesh
//!   that cannot be used is listed in one [`UrdfError::Meshes`].
//!
//! Bad input is a typed [`UrdfError`], never a panic; when several
//! elements are at fault (missing links, negative masses, unsupported
//! joints) every one is listed ([`UrdfError::Several`]).

use super::urdf_mesh::{MeshFailure, MeshOptions, describe, mesh_hull};
use super::{Joint, JointLimits, Model, ModelError};
use crate::geometry::Shape;
use crate::math::{Mat3, Pose, Quat, Vec3, spatial::RigidInertia};

/// How the root link is attached to the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseJoint {
    /// Welded to the world.
    Fixed,
    /// A free joint (floating base).
    Floating,
}

/// Failures of the URDF import.
#[derive(Debug, thiserror::Error)]
pub enum UrdfError {
    /// The XML is not well-formed (located: line and column).
    #[error("cannot read URDF: {0}")]
    Xml(#[from] roxmltree::Error),
    /// The XML could not be read as URDF by `urdf-rs`.
    #[error("cannot read URDF: {0}")]
    Parse(#[from] urdf_rs::UrdfError),
    /// The file could not be read.
    #[error("cannot read URDF file `{path}`: {error}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Collision meshes that cannot be used (missing or unreadable file,
    /// unsupported format, unresolved package, degenerate hull): all of
    /// them, the message naming the count and each one.
    #[error("{}", describe(.0))]
    Meshes(Vec<MeshFailure>),
    /// A joint names a parent or child link that does not exist.
    #[error("joint `{joint}`: link `{link}` does not exist")]
    MissingLink {
        /// Joint name.
        joint: String,
        /// The missing link.
        link: String,
    },
    /// A link has a negative (or non-finite) mass.
    #[error("link `{link}`: mass must be finite and ≥ 0, got {mass}")]
    NegativeMass {
        /// Link name.
        link: String,
        /// The offending mass.
        mass: f64,
    },
    /// A joint type dualsim does not model.
    #[error("joint `{joint}`: type `{kind}` is not supported")]
    UnsupportedJoint {
        /// Joint name.
        joint: String,
        /// The URDF type.
        kind: String,
    },
    /// Joints that mimic another joint (`<mimic>`): dualsim does not
    /// couple joints, so they are refused, all of them named (a scene may
    /// set `ignore_mimic = true` to simulate them as independent joints).
    #[error("{}", describe_mimic(.0))]
    Mimic(Vec<MimicJoint>),
    /// The links do not form a single tree (no root, several roots, a link
    /// with two parents, or a cycle).
    #[error("links do not form a tree: {0}")]
    NotATree(String),
    /// The model rejected a body.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Several of the errors above, every offending element listed.
    #[error("{} problems: {}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Several(Vec<UrdfError>),
}

impl UrdfError {
    /// One error for a non-empty list: the error itself, or
    /// [`UrdfError::Several`].
    fn all(mut errors: Vec<UrdfError>) -> Result<(), UrdfError> {
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(UrdfError::Several(errors)),
        }
    }
}

/// A joint with a `<mimic>` element.
#[derive(Clone, Debug, PartialEq)]
pub struct MimicJoint {
    /// The mimicking joint.
    pub joint: String,
    /// The joint it follows.
    pub mimicked: String,
    /// `q_joint = multiplier · q_mimicked + offset` (URDF defaults 1 and 0).
    pub multiplier: f64,
    /// See `multiplier`.
    pub offset: f64,
}

fn describe_mimic(m: &[MimicJoint]) -> String {
    let names: Vec<String> = m
        .iter()
        .map(|m| format!("`{}` (mimics `{}`)", m.joint, m.mimicked))
        .collect();
    format!(
        "{} mimic joint{} not supported (dualsim does not couple joints): {}",
        m.len(),
        if m.len() == 1 { " is" } else { "s are" },
        names.join(", ")
    )
}

/// One collision shape of a link.
#[derive(Clone, Debug, PartialEq)]
pub struct UrdfCollision {
    /// Body index in [`UrdfRobot::model`].
    pub body: usize,
    /// Pose of the shape in the body frame.
    pub pose: Pose<f64>,
    /// The shape.
    pub shape: Shape<f64>,
    /// For a `<mesh>`: the file and its hull's size.
    pub mesh: Option<MeshSource>,
}

/// Where a collision hull comes from, and its size.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshSource {
    /// The `filename` as written in the URDF.
    pub filename: String,
    /// Vertices of the convex hull.
    pub vertices: usize,
    /// Faces of the convex hull (coplanar triangles merged).
    pub faces: usize,
}

/// The URDF joint above a body (one per body of [`UrdfRobot::model`]).
#[derive(Clone, Debug, PartialEq)]
pub struct UrdfJoint {
    /// The joint's name (`LINK_base` for the root's attachment to the world).
    pub name: String,
    /// The URDF type (`revolute`, `continuous`, `prismatic`, `fixed`,
    /// `floating`, `spherical`), or `base_fixed` / `base_floating` for the
    /// root's attachment to the world.
    pub kind: String,
    /// `<dynamics damping>` (N·m·s/rad or N·s/m; 0 when absent). Not
    /// simulated.
    pub damping: f64,
    /// `<dynamics friction>` (N·m or N; 0 when absent). Not simulated.
    pub friction: f64,
}

/// An imported robot.
#[derive(Clone, Debug)]
pub struct UrdfRobot {
    /// Robot name.
    pub name: String,
    /// The kinematic tree (one body per link).
    pub model: Model<f64>,
    /// Collision shapes.
    pub collisions: Vec<UrdfCollision>,
    /// Names of the joints that have coordinates, in `v` order.
    pub joint_order: Vec<String>,
    /// The joint above each body, by body index.
    pub joints: Vec<UrdfJoint>,
    /// For each body welded by fixed joints to a moving ancestor (or to
    /// the root), the body whose inertia holds its own after
    /// [`UrdfRobot::merge_fixed_links`]; `None` for the others.
    pub welded_to: Vec<Option<usize>>,
    /// The joints with a `<mimic>` element, in file order (not coupled:
    /// see [`UrdfError::Mimic`]).
    pub mimic: Vec<MimicJoint>,
}

impl UrdfRobot {
    /// [`UrdfError::Mimic`] naming every mimic joint, if there are any.
    pub fn refuse_mimic(&self) -> Result<(), UrdfError> {
        match self.mimic.is_empty() {
            true => Ok(()),
            false => Err(UrdfError::Mimic(self.mimic.clone())),
        }
    }

    /// Total mass of the links.
    pub fn total_mass(&self) -> f64 {
        self.model.bodies.iter().map(|b| b.inertia.mass).sum()
    }

    /// Moves the inertia of every link welded by fixed joints into the
    /// nearest ancestor that moves (or the root): Pinocchio's merge of
    /// fixed-joint links. The welded links stay as massless bodies with
    /// no coordinates, so their names, frames and collision shapes are
    /// unchanged and the dynamics are the same (a massless root whose
    /// mass sits on welded children becomes a valid floating base).
    /// Records the target in [`UrdfRobot::welded_to`]; returns how many
    /// links were merged.
    pub fn merge_fixed_links(&mut self) -> usize {
        let bodies = &mut self.model.bodies;
        let mut merged = 0;
        for b in 0..bodies.len() {
            if bodies[b].joint != Joint::Fixed || bodies[b].parent.is_none() {
                continue;
            }
            // pose of b in the target's frame, through fixed joints only
            let mut pose = bodies[b].placement;
            let mut t = bodies[b].parent.expect("checked");
            while bodies[t].joint == Joint::Fixed {
                let Some(up) = bodies[t].parent else { break };
                pose = bodies[t].placement * pose;
                t = up;
            }
            self.welded_to[b] = Some(t);
            let moved = bodies[b].inertia.transformed(&pose);
            bodies[t].inertia = add_inertia(&bodies[t].inertia, &moved);
            bodies[b].inertia = RigidInertia {
                mass: 0.0,
                com: Vec3::zeros(),
                inertia: Mat3::zeros(),
            };
            merged += 1;
        }
        merged
    }
}

/// The inertia of two bodies rigidly joined, both in the same frame: mass
/// sum, centre of mass the weighted mean, rotational inertias moved to it
/// (parallel axis theorem).
pub fn add_inertia(a: &RigidInertia<f64>, b: &RigidInertia<f64>) -> RigidInertia<f64> {
    let m = a.mass + b.mass;
    let com = if m > 0.0 {
        (a.com * a.mass + b.com * b.mass) / m
    } else {
        a.com
    };
    let shift = |i: &RigidInertia<f64>| {
        let d = i.com - com;
        i.inertia + (Mat3::identity() * d.norm_squared() - d * d.transpose()) * i.mass
    };
    RigidInertia {
        mass: m,
        com,
        inertia: shift(a) + shift(b),
    }
}

/// The URDF text with what `urdf-rs` would reject but does not matter to
/// simulation removed: `<texture>` elements without a `filename` (a
/// visual's empty texture, as in iCub's and Romeo's files; urdf-rs
/// requires the attribute). Malformed XML is a located
/// [`UrdfError::Xml`].
pub fn sanitize(xml: &str) -> Result<std::borrow::Cow<'_, str>, UrdfError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, opts)?;
    let mut cut: Vec<std::ops::Range<usize>> = doc
        .descendants()
        .filter(|n| n.has_tag_name("texture") && n.attribute("filename").is_none())
        .map(|n| n.range())
        .collect();
    if cut.is_empty() {
        return Ok(std::borrow::Cow::Borrowed(xml));
    }
    cut.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(xml.len());
    let mut at = 0;
    for r in cut {
        if r.start < at {
            continue; // nested in a removed element
        }
        out.push_str(&xml[at..r.start]);
        at = r.end;
    }
    out.push_str(&xml[at..]);
    Ok(std::borrow::Cow::Owned(out))
}

/// Reads a URDF file; relative mesh paths start at its folder, no package
/// directories ([`load_file_with`]).
pub fn load_file(
    path: impl AsRef<std::path::Path>,
    base: BaseJoint,
) -> Result<UrdfRobot, UrdfError> {
    load_file_with(path, base, &[])
}

/// Reads a URDF file whose `package://PKG/...` meshes are looked up in
/// `package_dirs` (each holding a folder `PKG`); relative mesh paths start
/// at the file's folder.
pub fn load_file_with(
    path: impl AsRef<std::path::Path>,
    base: BaseJoint,
    package_dirs: &[std::path::PathBuf],
) -> Result<UrdfRobot, UrdfError> {
    let path = path.as_ref();
    let xml = std::fs::read_to_string(path).map_err(|error| UrdfError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let robot = parse(&xml)?;
    let opts = MeshOptions {
        urdf_dir: path.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
        package_dirs: package_dirs.to_vec(),
    };
    from_robot_with(&robot, base, &opts)
}

/// Parses URDF text.
///
/// ```
/// use dualsim::dynamics::urdf::{from_str, BaseJoint, UrdfError};
/// let xml = r#"<robot name="r"><link name="a"/><link name="b">
///   <collision><geometry><mesh filename="b.stl"/></geometry></collision></link>
///   <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
///   <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"#;
/// // meshes resolve relative to the current directory: `b.stl` is not there
/// assert!(matches!(from_str(xml, BaseJoint::Fixed), Err(UrdfError::Meshes(f)) if f[0].link == "b"));
/// ```
pub fn from_str(xml: &str, base: BaseJoint) -> Result<UrdfRobot, UrdfError> {
    from_str_with(xml, base, &MeshOptions::default())
}

/// Parses URDF text, its meshes resolved by `opts`.
pub fn from_str_with(
    xml: &str,
    base: BaseJoint,
    opts: &MeshOptions,
) -> Result<UrdfRobot, UrdfError> {
    let robot = parse(xml)?;
    from_robot_with(&robot, base, opts)
}

/// Rotation `R_z(y) R_y(p) R_x(r)` as a quaternion.
pub fn rpy_to_quat(rpy: [f64; 3]) -> Quat<f64> {
    let h = |a: f64| ((a * 0.5).cos(), (a * 0.5).sin());
    let (cr, sr) = h(rpy[0]);
    let (cp, sp) = h(rpy[1]);
    let (cy, sy) = h(rpy[2]);
    let qx = Quat::new(cr, sr, 0.0, 0.0);
    let qy = Quat::new(cp, 0.0, sp, 0.0);
    let qz = Quat::new(cy, 0.0, 0.0, sy);
    qz * qy * qx
}

fn pose(p: &urdf_rs::Pose) -> Pose<f64> {
    Pose::new(rpy_to_quat(p.rpy.0), Vec3::from(p.xyz.0))
}

/// Converts a parsed `urdf_rs::Robot` (meshes relative to the current
/// directory, no package directories).
pub fn from_robot(robot: &urdf_rs::Robot, base: BaseJoint) -> Result<UrdfRobot, UrdfError> {
    from_robot_with(robot, base, &MeshOptions::default())
}

/// The convex hull (shape, pose of the hull's origin in the collision
/// frame) of every mesh collision element, by (link, element) index; every
/// failure collected.
fn mesh_shapes(
    robot: &urdf_rs::Robot,
    opts: &MeshOptions,
) -> Result<std::collections::HashMap<(usize, usize), (Shape<f64>, Pose<f64>, MeshSource)>, UrdfError>
{
    let mut out = std::collections::HashMap::new();
    let mut failures = Vec::new();
    for (li, l) in robot.links.iter().enumerate() {
        for (ci, c) in l.collision.iter().enumerate() {
            if let urdf_rs::Geometry::Mesh {
                ref filename,
                scale,
            } = c.geometry
            {
                match mesh_hull(filename, scale.map(|s| s.0), opts) {
                    Ok(h) => {
                        let at = Pose::new(crate::math::so3::identity(), h.centre);
                        let source = MeshSource {
                            filename: filename.clone(),
                            vertices: h.vertices.len(),
                            faces: h.normals.len(),
                        };
                        out.insert((li, ci), (h.shape(), at, source));
                    }
                    Err(error) => failures.push(MeshFailure {
                        link: l.name.clone(),
                        filename: filename.clone(),
                        error,
                    }),
                }
            }
        }
    }
    match failures.is_empty() {
        true => Ok(out),
        false => Err(UrdfError::Meshes(failures)),
    }
}

/// Reads URDF text into `urdf-rs`'s tree, after [`sanitize`]. Text that
/// roxmltree rejects (an undeclared namespace prefix, say) is given to
/// urdf-rs as it is; if urdf-rs rejects it too, the error is roxmltree's,
/// which has the line and column.
pub fn parse(xml: &str) -> Result<urdf_rs::Robot, UrdfError> {
    match sanitize(xml) {
        Ok(text) => Ok(urdf_rs::read_from_string(&text)?),
        Err(located) => urdf_rs::read_from_string(xml).map_err(|_| located),
    }
}

/// Converts a parsed `urdf_rs::Robot`, its meshes resolved by `opts`, with
/// the links welded by fixed joints merged into their parent's inertia
/// ([`UrdfRobot::merge_fixed_links`]).
pub fn from_robot_with(
    robot: &urdf_rs::Robot,
    base: BaseJoint,
    opts: &MeshOptions,
) -> Result<UrdfRobot, UrdfError> {
    let mut out = from_robot_unmerged(robot, base, opts)?;
    out.merge_fixed_links();
    Ok(out)
}

fn joint_kind(t: &urdf_rs::JointType) -> &'static str {
    match t {
        urdf_rs::JointType::Revolute => "revolute",
        urdf_rs::JointType::Continuous => "continuous",
        urdf_rs::JointType::Prismatic => "prismatic",
        urdf_rs::JointType::Fixed => "fixed",
        urdf_rs::JointType::Floating => "floating",
        urdf_rs::JointType::Planar => "planar",
        urdf_rs::JointType::Spherical => "spherical",
    }
}

/// As [`from_robot_with`] without the merge of fixed-joint links: every
/// link keeps the inertia it has in the file (the same dynamics; for
/// comparisons).
pub fn from_robot_unmerged(
    robot: &urdf_rs::Robot,
    base: BaseJoint,
    opts: &MeshOptions,
) -> Result<UrdfRobot, UrdfError> {
    let link_index = |name: &str| robot.links.iter().position(|l| l.name == name);
    let (root, children) = link_tree(robot)?;
    let meshes = mesh_shapes(robot, opts)?;
    let mut out = UrdfRobot {
        name: robot.name.clone(),
        model: Model::new(),
        collisions: Vec::new(),
        joint_order: Vec::new(),
        joints: Vec::new(),
        welded_to: Vec::new(),
        mimic: mimic_joints(robot),
    };
    // Depth-first: an explicit stack of (link, parent body, joint).
    let mut stack: Vec<(usize, Option<usize>, Option<usize>)> = vec![(root, None, None)];
    while let Some((li, parent_body, ji)) = stack.pop() {
        let link = &robot.links[li];
        let (joint, placement, limits, info) = match ji {
            None => base_joint(base, link),
            Some(ji) => file_joint(&robot.joints[ji]),
        };
        let inertia = link_inertia(&link.inertial);
        let body = out
            .model
            .add_body(&link.name, parent_body, joint, placement, inertia)?;
        out.model.bodies[body].limits = limits;
        if joint.nv() > 0 {
            out.joint_order.push(info.name.clone());
        }
        out.joints.push(info);
        out.welded_to.push(None);
        for (ci, c) in link.collision.iter().enumerate() {
            out.collisions.push(collision(c, body, &meshes, (li, ci)));
        }
        // Push children in reverse so that the first one is visited first.
        for &cj in children[li].iter().rev() {
            let child = link_index(&robot.joints[cj].child.link).expect("checked above");
            stack.push((child, Some(body), Some(cj)));
        }
    }
    if out.model.bodies.len() != robot.links.len() {
        return Err(UrdfError::NotATree(
            "some links are not reachable from the root".into(),
        ));
    }
    Ok(out)
}

/// The link tree of `robot`, checked: its root link and each link's child
/// joints in Pinocchio's order (by joint name); every error found
/// (missing links, negative masses, planar joints, links with two
/// parents, then not exactly one root).
fn link_tree(robot: &urdf_rs::Robot) -> Result<(usize, Vec<Vec<usize>>), UrdfError> {
    let link_index = |name: &str| robot.links.iter().position(|l| l.name == name);
    let mut parent_joint: Vec<Option<usize>> = vec![None; robot.links.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); robot.links.len()];
    let mut errors = Vec::new();
    let mut two_parents = Vec::new();
    for (ji, j) in robot.joints.iter().enumerate() {
        let p = link_index(&j.parent.link);
        let c = link_index(&j.child.link);
        for (found, link) in [(p, &j.parent.link), (c, &j.child.link)] {
            if found.is_none() {
                errors.push(UrdfError::MissingLink {
                    joint: j.name.clone(),
                    link: link.clone(),
                });
            }
        }
        let (Some(p), Some(c)) = (p, c) else { continue };
        if parent_joint[c].is_some() {
            two_parents.push(format!("link `{}` has two parents", j.child.link));
            continue;
        }
        parent_joint[c] = Some(ji);
        children[p].push(ji);
    }
    for l in &robot.links {
        let m = l.inertial.mass.value;
        if !m.is_finite() || m < 0.0 {
            errors.push(UrdfError::NegativeMass {
                link: l.name.clone(),
                mass: m,
            });
        }
    }
    for j in &robot.joints {
        if j.joint_type == urdf_rs::JointType::Planar {
            errors.push(UrdfError::UnsupportedJoint {
                joint: j.name.clone(),
                kind: joint_kind(&j.joint_type).into(),
            });
        }
    }
    if !two_parents.is_empty() {
        errors.push(UrdfError::NotATree(two_parents.join(", ")));
    }
    UrdfError::all(errors)?;
    let roots: Vec<usize> = (0..robot.links.len())
        .filter(|&i| parent_joint[i].is_none())
        .collect();
    if roots.len() != 1 {
        let names: Vec<String> = roots
            .iter()
            .map(|&i| format!("`{}`", robot.links[i].name))
            .collect();
        return Err(UrdfError::NotATree(match roots.len() {
            0 => "0 root links (every link is the child of a joint: a cycle)".into(),
            n => format!("{n} root links: {}", names.join(", ")),
        }));
    }
    // Pinocchio's order (urdfdom keeps a link's child joints sorted by
    // joint name, byte-wise): depth-first, children by joint name.
    for c in children.iter_mut() {
        c.sort_by(|&a, &b| robot.joints[a].name.cmp(&robot.joints[b].name));
    }
    Ok((roots[0], children))
}

/// The mimic joints of `robot`, in file order.
fn mimic_joints(robot: &urdf_rs::Robot) -> Vec<MimicJoint> {
    robot
        .joints
        .iter()
        .filter_map(|j| {
            j.mimic.as_ref().map(|m| MimicJoint {
                joint: j.name.clone(),
                mimicked: m.joint.clone(),
                multiplier: m.multiplier.unwrap_or(1.0),
                offset: m.offset.unwrap_or(0.0),
            })
        })
        .collect()
}

/// The joint of the root link `link`: the base joint `base`, at the
/// identity, without limits.
fn base_joint(base: BaseJoint, link: &urdf_rs::Link) -> (Joint, Pose<f64>, JointLimits, UrdfJoint) {
    (
        match base {
            BaseJoint::Fixed => Joint::Fixed,
            BaseJoint::Floating => Joint::Free,
        },
        Pose::identity(),
        JointLimits::default(),
        UrdfJoint {
            name: format!("{}_base", link.name),
            kind: match base {
                BaseJoint::Fixed => "base_fixed",
                BaseJoint::Floating => "base_floating",
            }
            .into(),
            damping: 0.0,
            friction: 0.0,
        },
    )
}

/// The joint `j` of the file: the model's joint, its placement, its
/// limits and what the report says of it.
fn file_joint(j: &urdf_rs::Joint) -> (Joint, Pose<f64>, JointLimits, UrdfJoint) {
    let axis = j.axis.xyz.0;
    let joint = match j.joint_type {
        urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => Joint::Revolute { axis },
        urdf_rs::JointType::Prismatic => Joint::Prismatic { axis },
        urdf_rs::JointType::Fixed => Joint::Fixed,
        urdf_rs::JointType::Floating => Joint::Free,
        urdf_rs::JointType::Spherical => Joint::Spherical,
        urdf_rs::JointType::Planar => unreachable!("refused above"),
    };
    let limits = match j.joint_type {
        urdf_rs::JointType::Revolute | urdf_rs::JointType::Prismatic => JointLimits {
            lower: j.limit.lower,
            upper: j.limit.upper,
            effort: j.limit.effort,
            velocity: j.limit.velocity,
        },
        _ => JointLimits::default(),
    };
    let (damping, friction) = j
        .dynamics
        .as_ref()
        .map_or((0.0, 0.0), |d| (d.damping, d.friction));
    let info = UrdfJoint {
        name: j.name.clone(),
        kind: joint_kind(&j.joint_type).into(),
        damping,
        friction,
    };
    (joint, pose(&j.origin), limits, info)
}

/// The inertia of a link from its `<inertial>` (the inertia tensor
/// rotated into the link frame).
fn link_inertia(inertial: &urdf_rs::Inertial) -> RigidInertia<f64> {
    let r = crate::math::so3::to_matrix(&rpy_to_quat(inertial.origin.rpy.0));
    let i = &inertial.inertia;
    let ib = Mat3::new(
        i.ixx, i.ixy, i.ixz, i.ixy, i.iyy, i.iyz, i.ixz, i.iyz, i.izz,
    );
    RigidInertia {
        mass: inertial.mass.value,
        com: Vec3::from(inertial.origin.xyz.0),
        inertia: r * ib * r.transpose(),
    }
}

/// The collision shape `c` of body `body` (collision `at_link.1` of link
/// `at_link.0`; a mesh is its hull from `meshes`).
fn collision(
    c: &urdf_rs::Collision,
    body: usize,
    meshes: &std::collections::HashMap<(usize, usize), (Shape<f64>, Pose<f64>, MeshSource)>,
    at_link: (usize, usize),
) -> UrdfCollision {
    let mut at = pose(&c.origin);
    let mut mesh = None;
    let shape = match c.geometry {
        urdf_rs::Geometry::Box { ref size } => Shape::Box {
            half_extents: Vec3::from(size.0) * 0.5,
        },
        urdf_rs::Geometry::Sphere { radius } => Shape::Sphere { radius },
        urdf_rs::Geometry::Cylinder { radius, length } => Shape::Cylinder {
            radius,
            half_length: length * 0.5,
        },
        urdf_rs::Geometry::Capsule { radius, length } => Shape::Capsule {
            radius,
            half_length: length * 0.5,
        },
        urdf_rs::Geometry::Mesh { .. } => {
            let (shape, centre, source) = meshes[&at_link].clone();
            at = at * centre;
            mesh = Some(source);
            shape
        }
    };
    UrdfCollision {
        body,
        pose: at,
        shape,
        mesh,
    }
}
