//! The `shape` table of a body, a static or a bundle part: each shape
//! type's keys read and checked into a [`Shape`].

use crate::geometry::{BundleOp, Shape};
use crate::math::{Pose, Vec3};
use crate::sim::validate as limits;

use super::fields::{
    Cx, R, Tab, choose, in_abs, num, num_list, pose_fields, positive, sizes3, vec3_list,
};
use super::keys::{BUNDLE_OPS, PART_KEYS, SHAPE_KEYS, SHAPE_TYPE_KEY};

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

pub(super) fn shape(cx: &Cx, mut t: Tab, is_static: bool) -> R<Shape<f64>> {
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
        "polytope" | "padded_polygon" => half_spaces(cx, &mut t, ty)?,
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
        "bundle" => bundle(cx, &mut t)?,
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

/// A `polytope` or `padded_polygon` (`ty`): its `normals` and `offsets`
/// scaled to unit normals; a polytope must be bounded.
fn half_spaces(cx: &Cx, t: &mut Tab, ty: &str) -> R<Shape<f64>> {
    let (normals, nval, np) = vec3_list(cx, t, "normals")?;
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
        Ok(Shape::Polytope {
            normals,
            offsets,
            hull: None,
        })
    } else {
        Ok(Shape::PaddedPolygon {
            normals,
            offsets,
            radius: positive(cx, t, "radius")?,
        })
    }
}

/// A `bundle`: its `parts` (each a shape at a pose) and their `op`.
fn bundle(cx: &Cx, t: &mut Tab) -> R<Shape<f64>> {
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
    Ok(Shape::Bundle { parts, op })
}
