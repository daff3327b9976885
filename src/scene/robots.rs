//! The `[[robot]]` tables: each robot's URDF loaded and checked, its base
//! placement and initial joint positions and velocities.

use std::ops::Range;
use std::path::Path;

use crate::dynamics::urdf::{self, BaseJoint, UrdfRobot};
use crate::math::{Pose, Quat, Vec3};
use crate::sim::World;
use crate::sim::validate as limits;

use super::fields::{Cx, R, Tab, boolean, choose, in_abs, num_list, package_dirs, unit_quat};
use super::keys::{BASES, ROBOT_KEYS};
use super::{Located, Placed};

/// Each `[[robot]]`, added to `world`, its initial coordinates to
/// `placed`; the robots as imported, in file order.
pub(super) fn read_robots<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    world: &mut World<f64>,
    placed: &mut Placed,
) -> R<Vec<UrdfRobot>> {
    let mut robots = Vec::new();
    for r in root.array_of_tables("robot", ROBOT_KEYS)? {
        robots.push(read_robot(cx, r, world, placed)?);
    }
    Ok(robots)
}

/// One `[[robot]]`.
fn read_robot(cx: &Cx, mut r: Tab, world: &mut World<f64>, placed: &mut Placed) -> R<UrdfRobot> {
    let Some((name, _, _)) = r.str_opt("name")? else {
        return Err(r.missing("name"));
    };
    let name = name.to_string();
    let Some((file, fspan, fpath)) = r.str_opt("urdf")? else {
        return Err(r.missing("urdf"));
    };
    let (urdf, base) = load_urdf(cx, &mut r, file, &fspan, &fpath)?;
    let (q0, placement, robot_at) = initial_q(cx, &mut r, &urdf, base)?;
    let v0 = initial_v(cx, &mut r, urdf.model.nv)?;
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
    placed.located.push(Located {
        name: name.clone(),
        span: robot_at.0,
        path: robot_at.1,
    });
    placed.q.extend_from_slice(&q0);
    placed.v.extend_from_slice(&v0);
    Ok(urdf)
}

/// The robot's URDF `file` (`urdf`, at `fspan`/`fpath`), read with its
/// `base` and `package_dirs`; mimic joints refused unless `ignore_mimic`,
/// and a floating base without mass or rotational inertia refused.
fn load_urdf(
    cx: &Cx,
    r: &mut Tab,
    file: &str,
    fspan: &Range<usize>,
    fpath: &str,
) -> R<(UrdfRobot, BaseJoint)> {
    let base_dir = Path::new(cx.file).parent().unwrap_or(Path::new("."));
    let base = choose(cx, r.str_opt("base")?, BASES, BaseJoint::Fixed)?;
    let package_dirs = match r.get("package_dirs") {
        None => Vec::new(),
        Some((val, p)) => package_dirs(cx, val, &p, base_dir)?,
    };
    let urdf = urdf::load_file_with(base_dir.join(file), base, &package_dirs)
        .map_err(|e| cx.error(fspan.clone(), fpath, format!("{file}: {e}")))?;
    let ignore_mimic = match r.get("ignore_mimic") {
        None => false,
        Some((val, p)) => boolean(cx, val, &p)?,
    };
    if !ignore_mimic {
        urdf.refuse_mimic().map_err(|e| {
            cx.error(
                fspan.clone(),
                fpath,
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
                    fpath,
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
    Ok((urdf, base))
}

/// The robot's initial configuration (`base_position`, `base_orientation`,
/// `q`, checked), the placement of a fixed base, and where the robot is
/// written (its `q`, else its table).
fn initial_q(
    cx: &Cx,
    r: &mut Tab,
    urdf: &UrdfRobot,
    base: BaseJoint,
) -> R<(Vec<f64>, Pose<f64>, (Range<usize>, String))> {
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
    let rq = urdf.model.nq;
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
    Ok((q0, placement, robot_at))
}

/// The robot's initial joint velocities `v` (default 0), `rv` of them.
fn initial_v(cx: &Cx, r: &mut Tab, rv: usize) -> R<Vec<f64>> {
    Ok(match r.get("v") {
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
    })
}
