//! The `[sim]` and `[solver_params]` tables: the world's step, gravity,
//! backend, cone and combination rules, the step count, and the backend's
//! tuning.

use std::ops::Range;

use crate::contact::FrictionCone;
use crate::contact::SolverKind;
use crate::geometry::Combine;
use crate::math::Vec3;
use crate::sim::World;
use crate::sim::validate as limits;

use super::fields::{Cx, R, Tab, boolean, choose, in_range, norm_in_range, num, to_toml};
use super::keys::{COMBINE, FRICTION_CONES, SIM_KEYS, solver_param_keys};
use super::{LoadOptions, MAX_ITERATIONS_MAX, SOLVER_PARAM_RANGE};

/// `[sim]`: the world (backend `opts.solver` if given, else the file's),
/// the step count and whether the bodies may start interpenetrating
/// (`allow_initial_penetration`).
pub(super) fn read_sim<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    opts: &LoadOptions,
) -> R<(World<f64>, usize, bool)> {
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
                    ));
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
    Ok((world, steps, allow_initial_penetration))
}

/// `[solver_params]`: the shared keys (`rho`, `tolerance`,
/// `max_iterations`) and the backend's own.
pub(super) fn read_solver_params<'a>(
    cx: &'a Cx<'a>,
    root: &mut Tab<'a, '_>,
    world: &mut World<f64>,
) -> R<()> {
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
    Ok(())
}
