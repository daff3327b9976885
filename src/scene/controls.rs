//! The `[[control]]` tables: constant (`values`) or per-step (`per_step`)
//! forces on a free body or a robot, summed into the scene's controls.

use crate::math::DVec;
use crate::sim::{Controls, World};

use super::CONTROL_MAX;
use super::fields::{Cx, R, Tab, array, in_abs, num_list};
use super::keys::CONTROL_KEYS;

/// Every `[[control]]` of a scene of `steps` steps.
pub(super) fn read_controls<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    world: &World<f64>,
    steps: usize,
) -> R<Controls<f64>> {
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
                ));
            }
            (None, None) => return Err(c.missing("values")),
        }
        c.finish()?;
    }
    Ok(match per_step {
        Some(ps) => Controls::PerStep(ps),
        None => Controls::Constant(constant),
    })
}
