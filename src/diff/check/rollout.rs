//! The rollout comparison of `check`: the Jacobian of the final state that
//! `grad` returns (`rollout_jacobian`, method `ift`) against central
//! differences of the whole rollout.
//!
//! The one-step comparisons of [`check`](super::check) cannot see an error
//! that only the chaining of steps makes (a time of impact on a step
//! boundary, a contact that closes between two sampled steps): this one
//! compares what users compute.
//!
//! # Columns
//!
//! The candidate inputs are the initial position, orientation, velocity
//! and angular velocity of every free body, each robot's `q` and `v`, the
//! bodies' masses, friction coefficients and shape sizes, gravity and the
//! time step, and the controls of the first step and of every event step
//! (below). Every column is compared when there are at most
//! [`RolloutCheckOptions::max_columns`]; otherwise a seeded random sample
//! of that many, which takes the initial-state columns of the bodies that
//! take part in an impact (a contact that closes during the rollout)
//! first: all of them when they fit, else a sample of them, and fills the
//! rest with a sample of the other candidates. The report lists the columns and says whether they were
//! sampled.
//!
//! # Events
//!
//! A step is an event when the set of touching pairs (primal normal
//! impulse > 0), or the friction mode of one of them (sticking or
//! sliding), differs from the previous step's: a contact closes (an
//! impact, a ccd split at its time of impact), opens, starts or stops
//! sliding. The one-step comparisons always sample them (up to
//! [`super::CheckOptions::max_event_samples`], spread over the events).
//!
//! # Finite differences and skips
//!
//! Each column is `(x_N(θ + ε) − x_N(θ − ε)) / 2ε` in the tangent space of
//! the nominal final state, Richardson-extrapolated with the differences
//! at `2ε` where the second differences grow as a smooth map's. A model
//! parameter at the edge of its domain (μ = 0) takes one-sided
//! differences ([`domain_room`](crate::diff::domain_room)). A column is
//! left out of the comparison, and listed with its reason, when the
//! rollout is not smooth within `±2ε` of the nominal input (its second
//! differences jump: a contact event moves from one step to the next) or
//! a perturbed rollout fails. At most
//! [`RolloutCheckOptions::max_skipped_share`] of the columns may be left
//! out, and at least one must be compared.
//!
//! # Tolerance, per entry
//!
//! Entry `(i, j)` passes when
//! `|J_ij − F_ij| ≤ tol · max(|J_ij|, √(r_i c_j)) + η_i`, with `r_i` and
//! `c_j` the largest magnitudes of row `i` and column `j` of `J` (an entry
//! small against both its row and its column is held to their geometric
//! mean, not to the block's largest entry), and `η_i = 64 u (1 + |x_i|) /
//! ε` the round-off of a central difference of a quantity of size `|x_i|`
//! (`u` the unit round-off) plus the column's own error estimate: the
//! difference between its central quotients at ε and 2ε (truncation), and
//! the noise of the perturbed rollouts' values, `|Δ⁴_i| / ε` with `Δ⁴` the
//! fourth difference of the five samples (nil on a smooth map, about 8
//! times the noise of the values otherwise: what the solves' tolerances
//! leave in a long rollout through iterative contact solves, which fd
//! does not differentiate to round-off). A wrong derivative on a smooth column stands far above
//! both: a sign flip or an entry 1 % off is rejected (tests/all/diff/
//! check_rollout.rs).

use rayon::prelude::*;
use serde::Serialize;

use super::super::rollout::seeded_rollout;
use super::super::step::{one_sided, one_sided_column, quadratic_ratio, tangent};
use super::super::{
    DiffError, DiffOptions, Input, KINK_SLOPE_JUMP, Method, Param, rollout_jacobian,
    second_difference_grows,
};
use crate::contact::ContactImpulse;
use crate::math::{DMat, DVec};
use crate::sim::{Controls, State, World, rollout as run, rollout_inspect};

/// Options of the rollout comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RolloutCheckOptions {
    /// Largest number of columns compared; more candidates are sampled
    /// (seeded), always keeping the bodies that take part in impacts.
    /// Default 96.
    pub max_columns: usize,
    /// Seed of the column sample. Default 1.
    pub seed: u64,
    /// Per-entry tolerance (module docs). Default 1e-5.
    pub tol: f64,
    /// Largest share of the compared columns that may be left out as not
    /// smooth. Default 0.1.
    pub max_skipped_share: f64,
}

impl Default for RolloutCheckOptions {
    fn default() -> Self {
        RolloutCheckOptions {
            max_columns: 96,
            seed: 1,
            tol: 1e-5,
            max_skipped_share: 0.1,
        }
    }
}

/// A column left out of the rollout comparison, and why.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedColumn {
    /// The input (`ball.velocity.x`, `sim.dt`, …).
    pub input: String,
    /// Why it was left out.
    pub reason: String,
}

/// The rollout comparison's report.
#[derive(Clone, Debug, Serialize)]
pub struct RolloutReport {
    /// Method whose Jacobian is checked (what `grad` returns by default).
    pub method: String,
    /// Steps of the rollout.
    pub steps: usize,
    /// Candidate input columns.
    pub candidate_columns: usize,
    /// Whether the columns are a random sample of the candidates.
    pub sampled: bool,
    /// The columns compared or skipped.
    pub columns: Vec<String>,
    /// Columns left out, with their reasons.
    pub skipped: Vec<SkippedColumn>,
    /// Bodies that take part in an impact (their state columns are always
    /// included).
    pub impact_bodies: Vec<String>,
    /// Steps where the set of touching pairs changes.
    pub event_steps: Vec<usize>,
    /// Largest `|J_ij − F_ij| / (tol · scale_ij + η_i)`: at most 1 passes.
    pub worst_ratio: f64,
    /// The entry of `worst_ratio`: `(output row, input)`, with `J_ij` and
    /// `F_ij`.
    pub worst_entry: Option<(String, String, f64, f64)>,
    /// Per-entry tolerance.
    pub tol: f64,
    /// Largest share of skipped columns.
    pub max_skipped_share: f64,
    /// Whether every compared entry is within tolerance, at least one
    /// column is compared and at most `max_skipped_share` are skipped.
    pub passed: bool,
}

/// Whether a pressing contact slides: its tangential impulse is on the
/// friction cone's (or the pyramid's box's) boundary, `‖f_t‖ ≥ (1 − 1e-6)
/// μ f_n` or one tangential component at `μ f_n`, with `μ` the pair's
/// coefficient (against static geometry, the largest coefficient the body
/// makes with any static: an impulse does not name its static).
fn sliding(world: &World<f64>, c: &ContactImpulse<f64>) -> bool {
    let mine = world.materials.get(c.body_a).map_or(0.0, |m| m.friction);
    let mu = match c.body_b {
        Some(b) => world
            .friction_combine
            .apply(mine, world.materials.get(b).map_or(0.0, |m| m.friction)),
        None => world
            .statics
            .iter()
            .map(|s| world.friction_combine.apply(mine, s.material.friction))
            .fold(0.0, f64::max),
    };
    let bound = (1.0 - 1e-6) * mu * c.normal_impulse;
    mu > 0.0 && (c.tangent_impulse.norm() >= bound || c.tangent_impulse.amax() >= bound)
}

/// The event steps of a rollout and the bodies in impacts (module docs):
/// the steps where the set of pressing contacts (primal normal impulse
/// `> 0`), or the friction mode (sticking or sliding) of one of them,
/// differs from the previous step's. A ccd split with an impact is such a
/// step, as the contact it meets presses there.
pub fn events(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
) -> Result<(Vec<usize>, Vec<usize>), DiffError> {
    let mut sets: Vec<Vec<(usize, Option<usize>, bool)>> = Vec::with_capacity(steps);
    let key = |c: &ContactImpulse<f64>| (c.body_a, c.body_b, sliding(world, c));
    rollout_inspect(world, x0, controls, steps, |_, out| {
        let mut s: Vec<_> = out
            .contacts
            .iter()
            .filter(|c| c.normal_impulse > 0.0)
            .map(key)
            .collect();
        s.sort();
        s.dedup();
        sets.push(s);
    })?;
    let mut event_steps = Vec::new();
    let mut bodies = Vec::new();
    let empty = Vec::new();
    for (k, s) in sets.iter().enumerate() {
        let prev = if k == 0 { &empty } else { &sets[k - 1] };
        if s != prev {
            event_steps.push(k);
            // a pair that starts to press (not one that changes its
            // friction mode): its bodies take part in an impact
            for c in s
                .iter()
                .filter(|c| !prev.iter().any(|p| (p.0, p.1) == (c.0, c.1)))
            {
                bodies.push(c.0);
                bodies.extend(c.1);
            }
        }
    }
    bodies.sort();
    bodies.dedup();
    Ok((event_steps, bodies))
}

/// The candidate inputs of the rollout comparison with their labels and
/// the body each belongs to (module docs).
fn candidates(
    world: &World<f64>,
    steps: usize,
    event_steps: &[usize],
) -> Vec<(Input, String, Option<usize>)> {
    let mut out = Vec::new();
    let lone = world.model.lone_free_bodies();
    let xyz = ["x", "y", "z"];
    let control_steps: Vec<usize> = std::iter::once(0)
        .chain(event_steps.iter().copied())
        .filter(|&k| k < steps)
        .collect();
    for (b, body) in world.model.bodies.iter().enumerate() {
        if !lone[b] {
            continue;
        }
        let (n, k) = (&body.name, body.idx_v);
        for (field, off) in [("position", 0), ("orientation", 3)] {
            for d in 0..3 {
                out.push((
                    Input::Config(k + off + d),
                    format!("{n}.{field}.{}", xyz[d]),
                    Some(b),
                ));
            }
        }
        for (field, off) in [("velocity", 0), ("angular_velocity", 3)] {
            for d in 0..3 {
                out.push((
                    Input::Velocity(k + off + d),
                    format!("{n}.{field}.{}", xyz[d]),
                    Some(b),
                ));
            }
        }
        out.push((Input::Model(Param::Mass(b)), format!("{n}.mass"), None));
        if let Some(shape) = &world.shapes[b] {
            out.push((
                Input::Model(Param::Friction(b)),
                format!("{n}.friction"),
                None,
            ));
            let sizes = shape.params().len();
            for s in 0..sizes {
                out.push((
                    Input::Model(Param::Shape(b, s)),
                    format!("{n}.shape[{s}]"),
                    None,
                ));
            }
        }
        for &ks in &control_steps {
            for d in 0..6 {
                out.push((
                    Input::Control {
                        step: ks,
                        index: k + d,
                    },
                    format!("{n}.control[step {ks}][{d}]"),
                    None,
                ));
            }
        }
    }
    for r in &world.robots {
        for i in 0..r.nv {
            out.push((
                Input::Config(r.idx_v + i),
                format!("{}.q_tangent[{i}]", r.name),
                None,
            ));
            out.push((
                Input::Velocity(r.idx_v + i),
                format!("{}.v[{i}]", r.name),
                None,
            ));
        }
    }
    for d in 0..3 {
        out.push((
            Input::Model(Param::Gravity(d)),
            format!("sim.gravity.{}", xyz[d]),
            None,
        ));
    }
    out.push((Input::Model(Param::Dt), "sim.dt".into(), None));
    out
}

/// splitmix64: the column sample's generator (no dependency for one
/// shuffle).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Labels of the `2 nv` rows of a rollout Jacobian (tangent coordinates).
fn row_labels(world: &World<f64>) -> Vec<String> {
    let nv = world.model.nv;
    let name = |i: usize| {
        if let Some(r) = world
            .robots
            .iter()
            .find(|r| (r.idx_v..r.idx_v + r.nv).contains(&i))
        {
            (r.name.clone(), i - r.idx_v)
        } else {
            let b = &world.model.bodies[world.model.dof_body[i]];
            (b.name.clone(), i - b.idx_v)
        }
    };
    (0..2 * nv)
        .map(|r| {
            let (n, k) = name(r % nv);
            if r < nv {
                format!("{n}.q_tangent[{k}]")
            } else {
                format!("{n}.v[{k}]")
            }
        })
        .collect()
}

/// One column of the whole rollout by finite differences and its error
/// estimate, the difference between the quotients at ε and 2ε (module
/// docs): `Err(reason)` when it is left out.
fn fd_column(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    input: Input,
    last: &State<f64>,
    eps: f64,
) -> Result<(DVec<f64>, DVec<f64>), String> {
    let go = |d: f64| -> Result<DVec<f64>, String> {
        let (w, x, us) = seeded_rollout(world, x0, controls, steps, &[input], &[d])
            .map_err(|e| e.to_string())?;
        let end = run(&w, &x, &us, steps)
            .map_err(|e| format!("the rollout perturbed by {d:+e} fails: {}", e.error))?;
        Ok(tangent(&world.model, &last.q, end.last()))
    };
    let zero = tangent(&world.model, &last.q, last);
    if let Input::Model(p) = input {
        if let Some(side) = one_sided(world, &p, 2.0 * eps) {
            let (f1, f2) = (go(side * eps)?, go(2.0 * side * eps)?);
            let (col, kink) = one_sided_column(&zero, &f1, &f2, eps, side);
            if kink {
                return Err(
                    "not smooth on the one side its domain allows (a slope jump within 2ε)".into(),
                );
            }
            let d1 = (&f1 - &zero) / (side * eps);
            let d2 = (&f2 - &zero) / (2.0 * side * eps);
            return Ok((col, (d1 - d2).abs()));
        }
    }
    let (p1, m1) = (go(eps)?, go(-eps)?);
    let (p2, m2) = (go(2.0 * eps)?, go(-2.0 * eps)?);
    let central = (&p1 - &m1) / (2.0 * eps);
    let central2 = (&p2 - &m2) / (4.0 * eps);
    let s1 = &p1 + &m1 - &zero * 2.0;
    let s2 = &p2 + &m2 - &zero * 2.0;
    let candidate = s1.amax() / eps > KINK_SLOPE_JUMP * central.amax().max(1.0);
    if candidate && second_difference_grows(&s1, &s2) && !quadratic_ratio(&s1, &s2) {
        return Err(format!(
            "not smooth within ±2ε: the second differences jump ({:.1e} at ε, {:.1e} at 2ε), a contact event moves with this input",
            s1.amax(),
            s2.amax()
        ));
    }
    // The difference's own error: the quotients at ε and 2ε apart, plus
    // the noise of the rollouts' values (iterative solves over hundreds
    // of steps), estimated per entry from the fourth difference
    // `f(2ε) − 4 f(ε) + 6 f(0) − 4 f(−ε) + f(−2ε)`: about `ε⁴ f⁗` (nil)
    // where the map is smooth, about `8 n` for values of noise `n`, whose
    // central quotient is off by about `0.7 n / ε`; `|Δ⁴| / ε` bounds that
    // with a margin of 10.
    let fourth = &p2 + &m2 - (&p1 + &m1) * 4.0 + &zero * 6.0;
    let err = (&central - &central2).abs() + fourth.abs() / eps;
    if quadratic_ratio(&s1, &s2) {
        return Ok(((&central * 4.0 - central2) / 3.0, err));
    }
    Ok((central, err))
}

/// Compares a rollout Jacobian `claimed` (`2 nv` rows in the tangent space
/// of the final state, one column per input) with finite differences of
/// the whole rollout, per entry (module docs). `labels` names the inputs.
pub fn compare_rollout_jacobian(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    labels: &[String],
    claimed: &DMat<f64>,
    eps: f64,
    opts: &RolloutCheckOptions,
) -> Result<RolloutReport, DiffError> {
    let nv = world.model.nv;
    if claimed.nrows() != 2 * nv || claimed.ncols() != inputs.len() || labels.len() != inputs.len()
    {
        return Err(DiffError::BadParam(format!(
            "a rollout Jacobian of {} × {} for {} inputs ({} labels): expected {} rows",
            claimed.nrows(),
            claimed.ncols(),
            inputs.len(),
            labels.len(),
            2 * nv
        )));
    }
    let last = run(world, x0, controls, steps)?.last().clone();
    let columns: Vec<Result<(DVec<f64>, DVec<f64>), String>> = inputs
        .par_iter()
        .map(|&inp| fd_column(world, x0, controls, steps, inp, &last, eps))
        .collect();
    let rows = row_labels(world);
    let rowmax: Vec<f64> = (0..2 * nv).map(|i| claimed.row(i).amax()).collect();
    let colmax: Vec<f64> = (0..inputs.len())
        .map(|j| claimed.column(j).amax())
        .collect();
    let x_last = tangent(&world.model, &last.q, &last);
    let mut skipped = Vec::new();
    let mut worst_ratio: f64 = 0.0;
    let mut worst_entry = None;
    for (j, col) in columns.iter().enumerate() {
        let (f, est) = match col {
            Ok(f) => (&f.0, &f.1),
            Err(reason) => {
                skipped.push(SkippedColumn {
                    input: labels[j].clone(),
                    reason: reason.clone(),
                });
                continue;
            }
        };
        for i in 0..2 * nv {
            let jij = claimed[(i, j)];
            let scale = jij.abs().max((rowmax[i] * colmax[j]).sqrt());
            let noise = 64.0 * f64::EPSILON * (1.0 + x_last[i].abs()) / eps + est[i];
            let ratio = (jij - f[i]).abs() / (opts.tol * scale + noise);
            // NaN on either side is the worst entry there is
            let ratio = if ratio.is_nan() { f64::INFINITY } else { ratio };
            if ratio > worst_ratio {
                worst_ratio = ratio;
                worst_entry = Some((rows[i].clone(), labels[j].clone(), jij, f[i]));
            }
        }
    }
    let compared = inputs.len() - skipped.len();
    let passed = compared > 0
        && worst_ratio <= 1.0
        && skipped.len() as f64 <= opts.max_skipped_share * inputs.len() as f64;
    Ok(RolloutReport {
        method: String::new(),
        steps,
        candidate_columns: inputs.len(),
        sampled: false,
        columns: labels.to_vec(),
        skipped,
        impact_bodies: Vec::new(),
        event_steps: Vec::new(),
        worst_ratio,
        worst_entry,
        tol: opts.tol,
        max_skipped_share: opts.max_skipped_share,
        passed,
    })
}

/// The rollout comparison of [`check`](super::check): the columns
/// (module docs), `grad`'s Jacobian of them by `ift` with `diff`, and
/// [`compare_rollout_jacobian`].
pub fn check_rollout(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    diff: &DiffOptions,
    opts: &RolloutCheckOptions,
) -> Result<RolloutReport, DiffError> {
    // fd rolls out at the ρ the derivatives are taken at (`--rho`), as
    // `ift` differentiates it
    let relaxed;
    let world = match diff.rho {
        Some(rho) if rho != world.params.rho => {
            let mut w = world.clone();
            w.params.rho = rho;
            relaxed = w;
            &relaxed
        }
        _ => world,
    };
    let (event_steps, impact) = events(world, x0, controls, steps)?;
    let all = candidates(world, steps, &event_steps);
    let candidate_columns = all.len();
    let mut chosen: Vec<usize> = (0..all.len()).collect();
    let sampled = all.len() > opts.max_columns;
    if sampled {
        let (keep, rest): (Vec<usize>, Vec<usize>) = (0..all.len()).partition(|&c| {
            matches!(all[c].0, Input::Config(_) | Input::Velocity(_))
                && all[c].2.is_some_and(|b| impact.contains(&b))
        });
        let mut state = opts.seed;
        let mut shuffle = |v: &mut Vec<usize>| {
            for i in (1..v.len()).rev() {
                let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
        };
        // the impact bodies' columns first (a sample of them when they
        // alone are more than the cap), then a sample of the rest
        let (mut keep, mut rest) = (keep, rest);
        shuffle(&mut keep);
        shuffle(&mut rest);
        chosen = keep.into_iter().take(opts.max_columns).collect();
        let room = opts.max_columns.saturating_sub(chosen.len());
        chosen.extend(rest.into_iter().take(room));
        chosen.sort();
    }
    let inputs: Vec<Input> = chosen.iter().map(|&c| all[c].0).collect();
    let labels: Vec<String> = chosen.iter().map(|&c| all[c].1.clone()).collect();
    let claimed = rollout_jacobian(world, x0, controls, steps, &inputs, Method::Ift, diff)?;
    let mut report = compare_rollout_jacobian(
        world,
        x0,
        controls,
        steps,
        &inputs,
        &labels,
        &claimed.jacobian,
        diff.fd_eps,
        opts,
    )?;
    report.method = Method::Ift.name().into();
    report.candidate_columns = candidate_columns;
    report.sampled = sampled;
    report.impact_bodies = impact
        .iter()
        .map(|&b| world.model.bodies[b].name.clone())
        .collect();
    report.event_steps = event_steps;
    Ok(report)
}
