//! URDF import (through the `urdf-rs` crate) into a [`Model`] plus the
//! collision shapes of each link.
//!
//! * Each link becomes a body named after it, in depth-first order from the
//!   root link with children in the order their joints appear in the file —
//!   the order of Pinocchio's URDF parser, hence of `q` and `v`.
//! * The root link is attached to the world by a `Fixed` joint
//!   ([`BaseJoint::Fixed`]) or a `Free` joint ([`BaseJoint::Floating`]).
//!   Fixed joints are kept as zero-coordinate bodies (Pinocchio merges their
//!   inertia into the parent; the dynamics are identical).
//! * `revolute` and `continuous` → `Revolute`, `prismatic` → `Prismatic`,
//!   `fixed` → `Fixed`, `floating` → `Free`, `spherical` → `Spherical`;
//!   `planar` → [`UrdfError::UnsupportedJoint`].
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
//! Bad input is a typed [`UrdfError`], never a panic.

use super::urdf_mesh::{describe, mesh_hull, MeshFailure, MeshOptions};
use super::{Joint, JointLimits, Model, ModelError};
use crate::geometry::Shape;
use crate::math::{spatial::RigidInertia, Mat3, Pose, Quat, Vec3};

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
    /// The XML could not be read or parsed.
    #[error("cannot read URDF: {0}")]
    Parse(#[from] urdf_rs::UrdfError),
    /// Collision meshes that cannot be used (missing or unreadable file,
    /// unsupported format, unresolved package, degenerate hull): all of
    /// them, the message naming the count and the first few.
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
    /// The links do not form a single tree (no root, several roots, a link
    /// with two parents, or a cycle).
    #[error("links do not form a tree: {0}")]
    NotATree(String),
    /// The model rejected a body.
    #[error(transparent)]
    Model(#[from] ModelError),
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
    let robot = urdf_rs::read_file(path)?;
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
    let robot = urdf_rs::read_from_string(xml)?;
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
) -> Result<std::collections::HashMap<(usize, usize), (Shape<f64>, Pose<f64>)>, UrdfError> {
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
                        out.insert((li, ci), (h.shape(), at));
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

/// Converts a parsed `urdf_rs::Robot`, its meshes resolved by `opts`.
pub fn from_robot_with(
    robot: &urdf_rs::Robot,
    base: BaseJoint,
    opts: &MeshOptions,
) -> Result<UrdfRobot, UrdfError> {
    let link_index = |name: &str| robot.links.iter().position(|l| l.name == name);
    let mut parent_joint: Vec<Option<usize>> = vec![None; robot.links.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); robot.links.len()];
    for (ji, j) in robot.joints.iter().enumerate() {
        let p = link_index(&j.parent.link).ok_or_else(|| UrdfError::MissingLink {
            joint: j.name.clone(),
            link: j.parent.link.clone(),
        })?;
        let c = link_index(&j.child.link).ok_or_else(|| UrdfError::MissingLink {
            joint: j.name.clone(),
            link: j.child.link.clone(),
        })?;
        if parent_joint[c].is_some() {
            return Err(UrdfError::NotATree(format!(
                "link `{}` has two parents",
                j.child.link
            )));
        }
        parent_joint[c] = Some(ji);
        children[p].push(ji);
    }
    for l in &robot.links {
        let m = l.inertial.mass.value;
        if !m.is_finite() || m < 0.0 {
            return Err(UrdfError::NegativeMass {
                link: l.name.clone(),
                mass: m,
            });
        }
    }
    let roots: Vec<usize> = (0..robot.links.len())
        .filter(|&i| parent_joint[i].is_none())
        .collect();
    if roots.len() != 1 {
        return Err(UrdfError::NotATree(format!("{} root links", roots.len())));
    }
    let meshes = mesh_shapes(robot, opts)?;
    let mut out = UrdfRobot {
        name: robot.name.clone(),
        model: Model::new(),
        collisions: Vec::new(),
        joint_order: Vec::new(),
    };
    // Depth-first, children in file order: an explicit stack of
    // (link, parent body, joint).
    let mut stack: Vec<(usize, Option<usize>, Option<usize>)> = vec![(roots[0], None, None)];
    while let Some((li, parent_body, ji)) = stack.pop() {
        let link = &robot.links[li];
        let (joint, placement, limits, jname) = match ji {
            None => (
                match base {
                    BaseJoint::Fixed => Joint::Fixed,
                    BaseJoint::Floating => Joint::Free,
                },
                Pose::identity(),
                JointLimits::default(),
                format!("{}_base", link.name),
            ),
            Some(ji) => {
                let j = &robot.joints[ji];
                let axis = j.axis.xyz.0;
                let joint = match j.joint_type {
                    urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => {
                        Joint::Revolute { axis }
                    }
                    urdf_rs::JointType::Prismatic => Joint::Prismatic { axis },
                    urdf_rs::JointType::Fixed => Joint::Fixed,
                    urdf_rs::JointType::Floating => Joint::Free,
                    urdf_rs::JointType::Spherical => Joint::Spherical,
                    ref other => {
                        return Err(UrdfError::UnsupportedJoint {
                            joint: j.name.clone(),
                            kind: format!("{other:?}").to_lowercase(),
                        })
                    }
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
                (joint, pose(&j.origin), limits, j.name.clone())
            }
        };
        let inertial = &link.inertial;
        let r = crate::math::so3::to_matrix(&rpy_to_quat(inertial.origin.rpy.0));
        let i = &inertial.inertia;
        let ib = Mat3::new(
            i.ixx, i.ixy, i.ixz, i.ixy, i.iyy, i.iyz, i.ixz, i.iyz, i.izz,
        );
        let inertia = RigidInertia {
            mass: inertial.mass.value,
            com: Vec3::from(inertial.origin.xyz.0),
            inertia: r * ib * r.transpose(),
        };
        let body = out
            .model
            .add_body(&link.name, parent_body, joint, placement, inertia)?;
        out.model.bodies[body].limits = limits;
        if joint.nv() > 0 {
            out.joint_order.push(jname);
        }
        for (ci, c) in link.collision.iter().enumerate() {
            let mut at = pose(&c.origin);
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
                    let (shape, centre) = meshes[&(li, ci)].clone();
                    at = at * centre;
                    shape
                }
            };
            out.collisions.push(UrdfCollision {
                body,
                pose: at,
                shape,
            });
        }
        // Push children in reverse so that the first one in the file is
        // visited first.
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
