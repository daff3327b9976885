//! The `[[body]]` and `[[static]]` tables: free bodies (mass, inertia,
//! initial pose and velocity, material, shape) and static geometry.

use toml::de::DeValue;

use crate::geometry::{Material, StaticGeometry};
use crate::math::{Mat3, Pose, Vec3};
use crate::sim::World;
use crate::sim::validate as limits;

use super::fields::{
    Cx, R, Tab, Val, array, in_abs, in_range, norm_in_range, num, nums, pose_fields,
};
use super::keys::{BODY_KEYS, SHAPE_TYPE_KEY, STATIC_KEYS};
use super::shape::shape;
use super::{Located, Placed};

/// Each `[[body]]`, added to `world`, its initial coordinates to `placed`.
pub(super) fn read_bodies<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    world: &mut World<f64>,
    placed: &mut Placed,
) -> R<()> {
    for body in root.array_of_tables("body", BODY_KEYS)? {
        read_body(cx, body, world, placed)?;
    }
    Ok(())
}

/// One `[[body]]`.
fn read_body(cx: &Cx, mut body: Tab, world: &mut World<f64>, placed: &mut Placed) -> R<()> {
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
    let (vel, ang) = velocities(cx, &mut body, world.dt)?;
    let material = material(cx, &mut body, &name, &mut placed.restitutions)?;
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
    placed.located.push(Located {
        name: name.clone(),
        span: lspan,
        path: lpath,
    });
    world
        .add_body(&name, mass, inertia, shape, material)
        .map_err(|e| cx.error(span, &path, e.to_string()))?;
    placed.q.extend_from_slice(&pos);
    placed.q.extend_from_slice(&[rot.w, rot.i, rot.j, rot.k]);
    placed.v.extend_from_slice(&vel);
    placed.v.extend_from_slice(&ang);
    Ok(())
}

/// A body's optional `velocity` and `angular_velocity` (default 0), in
/// range; a rotation of 2 rad or more in one step of `dt` is refused.
fn velocities(cx: &Cx, body: &mut Tab, dt: f64) -> R<([f64; 3], [f64; 3])> {
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
            if !(n * dt < 2.0) {
                return Err(cx.error(
                    span,
                    &p,
                    format!(
                        "rotates by |angular_velocity| * dt = {:e} rad in one step; the free-body \
                     step needs < 2 rad (lower it or sim.dt)",
                        n * dt
                    ),
                ));
            }
            x
        }
    };
    Ok((vel, ang))
}

/// Each `[[static]]`, added to `world.statics`.
pub(super) fn read_statics<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    world: &mut World<f64>,
    placed: &mut Placed,
) -> R<()> {
    for mut st in root.array_of_tables("static", STATIC_KEYS)? {
        let name = st
            .str_opt("name")?
            .map(|x| x.0.to_string())
            .unwrap_or_default();
        let material = material(cx, &mut st, &name, &mut placed.restitutions)?;
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
        placed.located.push(Located {
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
    Ok(())
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
