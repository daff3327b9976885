//! `diff::check`: every method on the same steps, largest disagreement per
//! Jacobian block (this backs `dualsim check`).
//!
//! The scene is simulated; at `samples` states spread over the trajectory
//! the one-step Jacobian with respect to the state, the control and the
//! model parameters is computed by `ift`, `lift`, `unrolled` and `fd`. The
//! Jacobian is split into blocks by output field (position, orientation
//! tangent, velocity, angular velocity of all bodies) and input kind;
//! for each block and each method the largest absolute difference from
//! `ift` is reported, and the check passes when, relative to
//! `max(1, ‖J_ift‖∞)` of the block, it is within the method's tolerance
//! (lift 1e-9, unrolled 1e-7, fd 1e-5 by default).
//!
//! Finite differences go through the whole solver, contact detection
//! included. Where the step map is not smooth within ±ε — the perturbation
//! changes the contact candidate set (every relaxed candidate carries an
//! impulse ≈ ρ/gap, so adding one is a jump), or the one-sided differences
//! disagree (a kink such as a contact exactly at a capsule's segment end,
//! or a curvature scale ρ/γ shorter than ε) — the difference quotient is
//! not a derivative: such columns are left out of the `fd` comparison and
//! counted per block ([`BlockReport::fd_skipped`]) and in total
//! ([`CheckReport::fd_skipped_columns`]); `ift`, `lift` and `unrolled` are
//! still compared there. A column whose second differences at ε/2, ε and
//! 2ε, or else at ε/4, ε/2 and ε, grow as a smooth map's (`1 : 4 : 16`: a
//! barrier's curvature at the scale of ε, not a kink) is compared, with
//! the column taken from the Richardson extrapolation of the central
//! differences at the two smaller steps
//! ([`second_difference_is_quadratic`](super::second_difference_is_quadratic)).
//! A block whose `fd` comparison has no column left,
//! or more than [`CheckOptions::max_fd_skipped_share`] of its columns
//! skipped, fails: a check cannot pass with `fd` compared on nothing. A
//! scene with nothing to compare (no moving body or robot) does not pass
//! either: its status is [`CheckStatus::NothingChecked`].
//!
//! With [`CheckOptions::max_event_samples`] set, the states sampled
//! include the rollout's event steps (a contact closes or opens,
//! [`rollout::events`]), up to that many. Beyond the one-step Jacobians,
//! with [`CheckOptions::rollout`] set `check` compares the Jacobian of the whole rollout that `grad` returns
//! with finite differences of the whole rollout ([`mod@rollout`]): an error
//! that only the chaining of steps makes (a time of impact on a step
//! boundary) fails the check there.

pub mod rollout;

pub use rollout::{
    RolloutCheckOptions, RolloutReport, SkippedColumn, check_rollout, compare_rollout_jacobian,
};

use std::collections::BTreeMap;

use serde::Serialize;

use super::{DiffError, DiffOptions, Method, Param, step_jacobian};
use crate::math::DMat;
use crate::sim::{Controls, State, World, rollout};

/// Options of [`check`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckOptions {
    /// Number of states along the trajectory at which to compare. Default 3.
    pub samples: usize,
    /// Inputs of at most this many bodies are differentiated (all outputs
    /// are compared). Default 4.
    pub max_bodies: usize,
    /// Derivative options (ρ, FD step, extrapolation). Default: those of
    /// [`DiffOptions::default`] but with
    /// [`fd_extrapolate`](DiffOptions::fd_extrapolate) on, so that a
    /// barrier's curvature at the scale of the FD step does not count as a
    /// disagreement; build yours from `CheckOptions::default().diff` to
    /// keep it (`DiffOptions { fd_eps: 1e-7, ..CheckOptions::default().diff }`).
    pub diff: DiffOptions,
    /// Tolerance of `lift` vs `ift` (relative). Default 1e-9.
    pub tol_lift: f64,
    /// Tolerance of `unrolled` vs `ift` (relative). Default 1e-7.
    pub tol_unrolled: f64,
    /// Tolerance of `fd` vs `ift` (relative). Default 1e-5.
    pub tol_fd: f64,
    /// Largest share of a block's input columns (summed over samples)
    /// that may be left out of the `fd` comparison as not smooth; a block
    /// with more skipped, or with none compared, fails. Default 0.5.
    pub max_fd_skipped_share: f64,
    /// Largest number of event steps (a contact closes or opens, or
    /// changes its friction mode: [`rollout::events`]) added to the
    /// sampled states, spread over the events. Default 8.
    pub max_event_samples: usize,
    /// Largest share of the `fd` columns at the regular samples (every
    /// block) that may be left out as not smooth; each one, at event
    /// steps too, is listed with its reason ([`CheckReport::fd_skipped`]).
    /// Default 0.1.
    pub max_fd_skipped_total_share: f64,
    /// The comparison of the whole rollout's Jacobian with finite
    /// differences ([`mod@rollout`]); `None` skips it. Default: on, with
    /// [`RolloutCheckOptions::default`].
    pub rollout: Option<RolloutCheckOptions>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            samples: 3,
            max_bodies: 4,
            diff: DiffOptions {
                fd_extrapolate: true,
                ..DiffOptions::default()
            },
            tol_lift: 1e-9,
            tol_unrolled: 1e-7,
            tol_fd: 1e-5,
            max_fd_skipped_share: 0.5,
            max_event_samples: 8,
            max_fd_skipped_total_share: 0.1,
            rollout: Some(RolloutCheckOptions::default()),
        }
    }
}

/// One Jacobian block's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct BlockReport {
    /// Output field.
    pub of: String,
    /// Input kind.
    pub wrt: String,
    /// `‖J_ift‖∞` of the block (largest over samples).
    pub norm: f64,
    /// Largest absolute difference from `ift`, per method (`ift_vs_fd`, …).
    pub max_abs_diff: BTreeMap<String, f64>,
    /// The same relative to `max(1, norm)`.
    pub max_rel_diff: BTreeMap<String, f64>,
    /// Input columns of the block (summed over samples) where `fd` was
    /// compared.
    pub fd_compared: usize,
    /// Input columns of the block (summed over samples) left out of the
    /// `fd` comparison as not smooth within ±ε.
    pub fd_skipped: usize,
    /// Whether every method is within tolerance and `fd` was compared on
    /// enough columns (at least one, and at most
    /// [`CheckOptions::max_fd_skipped_share`] skipped).
    pub passed: bool,
}

/// A column of the one-step `fd` comparison that needs a word: left out,
/// or taken one-sided.
#[derive(Clone, Debug, Serialize)]
pub struct FdColumn {
    /// The sampled step.
    pub step: usize,
    /// The input (`ball.velocity.z`, `sim.dt`, …).
    pub input: String,
    /// Why.
    pub reason: String,
}

/// `fd` converging to `ift`: each column of `fd` (not skipped, not
/// one-sided) that disagrees with `ift` by more than the tolerance
/// relative to `max(1, ‖column‖∞)` of an output field (the rows of a
/// block) is measured again at ε/10 and replaced
/// by that measurement when its disagreement there is at most a fifth of
/// the one at ε (and once more at ε/100 when it came closer but not
/// within the tolerance, by the same rule). A wrong derivative does not come closer as ε shrinks; a
/// curvature scale near ε (a relaxed contact closing at an event step:
/// `bundles` under `single_level` at an event step is off by 7e-2 at ε = 1e-6,
/// 3.6e-5 at 1e-7, 4.4e-6 at 1e-8) leaves a truncation error that does.
fn refine_fd(
    world: &World<f64>,
    x: &State<f64>,
    u: &crate::math::DVec<f64>,
    params: &[Param],
    ji: &DMat<f64>,
    fd: &mut super::StepJacobian,
    opts: &CheckOptions,
    (step, groups): (usize, &[&[usize]]),
    refined: &mut Vec<FdColumn>,
) -> Result<(), DiffError> {
    // per output field (the check's blocks), relative to max(1, that
    // part of the column)
    let rel = |d: &dyn Fn(usize) -> f64, c: usize| {
        groups
            .iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let diff = g.iter().map(|&r| d(r).abs()).fold(0.0, f64::max);
                let norm = g.iter().map(|&r| ji[(r, c)].abs()).fold(0.0, f64::max);
                diff / norm.max(1.0)
            })
            .fold(0.0, f64::max)
    };
    let off = |j: &DMat<f64>, c: usize| rel(&|r| j[(r, c)] - ji[(r, c)], c);
    let bad: Vec<usize> = (0..params.len())
        .filter(|c| !fd.nonsmooth.contains(c) && !fd.one_sided.contains(c))
        .filter(|&c| off(&fd.jacobian, c) > opts.tol_fd)
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    let first: Vec<f64> = bad.iter().map(|&c| off(&fd.jacobian, c)).collect();
    // at ε/10, and at ε/100 for a column that came closer but not within
    // tolerance
    let mut open: Vec<usize> = (0..bad.len()).collect();
    let mut last = first.clone();
    for level in 1..=2 {
        let scale = 10f64.powi(level);
        let cols: Vec<Param> = open.iter().map(|&i| params[bad[i]]).collect();
        let diff = DiffOptions {
            fd_eps: opts.diff.fd_eps / scale,
            ..opts.diff
        };
        let finer = step_jacobian(world, x, u, &cols, Method::Fd, &diff)?;
        let mut next = Vec::new();
        for (k, &i) in open.iter().enumerate() {
            let c = bad[i];
            let after = rel(&|r| finer.jacobian[(r, k)] - ji[(r, c)], c);
            if finer.nonsmooth.contains(&k) || after > 0.2 * last[i] {
                continue;
            }
            fd.jacobian.set_column(c, &finer.jacobian.column(k));
            last[i] = after;
            if after > opts.tol_fd {
                next.push(i);
            }
            let at = if level == 1 { "eps/10" } else { "eps/100" };
            let reason = format!(
                "fd at eps off by {:.1e} (relative), at {at} by {after:.1e}: a curvature scale near eps",
                first[i]
            );
            match refined.iter_mut().find(|r: &&mut FdColumn| {
                r.step == step && r.input == param_label(world, params[c])
            }) {
                Some(r) => r.reason = reason,
                None => refined.push(FdColumn {
                    step,
                    input: param_label(world, params[c]),
                    reason,
                }),
            }
        }
        open = next;
        if open.is_empty() {
            break;
        }
    }
    Ok(())
}

/// A label of a one-step input for reports: `BODY.field.x`, `BODY.mass`,
/// `ROBOT.q[i]`, `sim.gravity.z`, `sim.dt`.
fn param_label(world: &World<f64>, p: Param) -> String {
    let xyz = ["x", "y", "z"];
    let dof = |i: usize, of: &str| -> String {
        if let Some(r) = world
            .robots
            .iter()
            .find(|r| (r.idx_v..r.idx_v + r.nv).contains(&i))
        {
            return format!("{}.{of}[{}]", r.name, i - r.idx_v);
        }
        let b = &world.model.bodies[world.model.dof_body[i]];
        let k = i - b.idx_v;
        let field = match (of, k < 3) {
            ("q", true) => "position",
            ("q", false) => "orientation",
            ("v", true) => "velocity",
            ("v", false) => "angular_velocity",
            (_, true) => "control.force",
            (_, false) => "control.torque",
        };
        format!("{}.{field}.{}", b.name, xyz[k % 3])
    };
    let body = |b: usize| world.model.bodies[b].name.clone();
    match p {
        Param::Q(i) => dof(i, "q"),
        Param::V(i) => dof(i, "v"),
        Param::U(i) => dof(i, "u"),
        Param::Mass(b) => format!("{}.mass", body(b)),
        Param::Inertia(b, i) => format!("{}.inertia[{i}]", body(b)),
        Param::Friction(b) => format!("{}.friction", body(b)),
        Param::Restitution(b) => format!("{}.restitution", body(b)),
        Param::Shape(b, i) => format!("{}.shape[{i}]", body(b)),
        Param::Gravity(d) => format!("sim.gravity.{}", xyz[d]),
        Param::Dt => "sim.dt".into(),
    }
}

/// The outcome of [`check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Every block passed.
    Passed,
    /// At least one block failed.
    Failed,
    /// There was nothing to compare: the scene has no moving body or
    /// robot, so no Jacobian block has a row (this is not a pass).
    NothingChecked,
}

/// The report of [`check`] (the `check --json` document).
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Methods compared.
    pub methods: Vec<String>,
    /// Steps at which the Jacobians were compared.
    pub sample_steps: Vec<usize>,
    /// Relaxation at which derivatives were taken.
    pub rho: f64,
    /// One entry per non-empty block.
    pub blocks: Vec<BlockReport>,
    /// Input columns (summed over samples) where the step map is not
    /// smooth within ±ε (see the module docs): `fd` is not compared there.
    pub fd_skipped_columns: usize,
    /// Input columns of the `fd` comparison in all (summed over samples).
    pub fd_columns: usize,
    /// Every column left out of the `fd` comparison: the step, the input
    /// and why.
    pub fd_skipped: Vec<FdColumn>,
    /// Columns compared with a one-sided difference because the step map
    /// jumps on the other side within ±ε (an impact on a step boundary).
    pub fd_one_sided: Vec<FdColumn>,
    /// Columns where `fd` at ε disagreed with `ift` and was measured again
    /// at ε/10, where it came at least 5 times closer (a curvature scale
    /// near ε, such as a relaxed contact closing).
    pub fd_refined: Vec<FdColumn>,
    /// Event steps left out because the step has no derivative there
    /// with respect to an input (a contact opens or closes on either side
    /// of it: `DiffError::NoDerivative`), with the input and the error.
    pub events_without_derivative: Vec<FdColumn>,
    /// The largest share of a block's columns that may be skipped
    /// ([`CheckOptions::max_fd_skipped_share`]).
    pub max_fd_skipped_share: f64,
    /// The largest share of all `fd` columns that may be skipped
    /// ([`CheckOptions::max_fd_skipped_total_share`]).
    pub max_fd_skipped_total_share: f64,
    /// The rollout comparison (`None` when it was not asked for).
    pub rollout: Option<RolloutReport>,
    /// Whether all blocks and the rollout comparison pass (false when
    /// there is no block).
    pub passed: bool,
    /// `passed`, `failed` or `nothing_checked`.
    pub status: CheckStatus,
}

fn inputs(world: &World<f64>, max_bodies: usize) -> Vec<(&'static str, Param)> {
    let mut out = Vec::new();
    let bodies = world
        .model
        .bodies
        .iter()
        .enumerate()
        .filter(|&(i, _)| world.model.is_lone_free_body(i))
        .take(max_bodies);
    for (b, body) in bodies {
        let k = body.idx_v;
        out.extend((0..3).map(|i| ("position", Param::Q(k + i))));
        out.extend((3..6).map(|i| ("orientation", Param::Q(k + i))));
        out.extend((0..3).map(|i| ("velocity", Param::V(k + i))));
        out.extend((3..6).map(|i| ("angular_velocity", Param::V(k + i))));
        out.extend((0..6).map(|i| ("control", Param::U(k + i))));
        out.push(("mass", Param::Mass(b)));
        out.extend((0..3).map(|i| ("inertia", Param::Inertia(b, i))));
        if world.shapes[b].is_some() {
            out.push(("friction", Param::Friction(b)));
        }
        let nshape = world.shapes[b].as_ref().map_or(0, |s| s.params().len());
        out.extend((0..nshape).map(|i| ("shape", Param::Shape(b, i))));
    }
    for r in world.robots.iter().take(max_bodies) {
        out.extend((r.idx_v..r.idx_v + r.nv).map(|i| ("robot_q", Param::Q(i))));
        out.extend((r.idx_v..r.idx_v + r.nv).map(|i| ("robot_v", Param::V(i))));
        out.extend((r.idx_v..r.idx_v + r.nv).map(|i| ("control", Param::U(i))));
    }
    out.extend((0..3).map(|i| ("gravity", Param::Gravity(i))));
    out.push(("dt", Param::Dt));
    out
}

/// Compares all derivative methods on a scene (see the module docs).
pub fn check(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    opts: &CheckOptions,
) -> Result<CheckReport, DiffError> {
    let traj = rollout(world, x0, controls, steps)?;
    let (sample_steps, regular) = sample_steps(world, x0, controls, steps, opts)?;
    let named = inputs(world, opts.max_bodies);
    let params: Vec<Param> = named.iter().map(|(_, p)| *p).collect();
    let of_rows = output_rows(world);
    let kinds = input_kinds(&named);
    let mut skipped = 0;
    let (mut fd_skips, mut fd_one_sided, mut fd_refined) = (Vec::new(), Vec::new(), Vec::new());
    let mut events_without_derivative = Vec::new();
    let (mut skipped_regular, mut fd_columns_regular) = (0, 0);
    let mut fd_columns = 0;
    let mut acc: BlockAcc = BTreeMap::new();
    for &k in &sample_steps {
        let x = &traj.states[k];
        let u = controls.at(k);
        let at = |e: DiffError| DiffError::AtStep {
            step: k,
            source: Box::new(e),
        };
        let jac = |m| -> Result<DMat<f64>, DiffError> {
            Ok(step_jacobian(world, x, u, &params, m, &opts.diff)
                .map_err(at)?
                .jacobian)
        };
        let ji = match jac(Method::Ift) {
            // An event step where a contact opens or closes on either
            // side of an input (a kink state: redundant contacts whose
            // residual leaves its range) has no derivative to compare:
            // it is listed and left out; a regular sample is not.
            Err(DiffError::AtStep { source, .. })
                if !regular.contains(&k) && matches!(*source, DiffError::NoDerivative { .. }) =>
            {
                events_without_derivative.push(FdColumn {
                    step: k,
                    input: match &*source {
                        DiffError::NoDerivative { input, .. } => input.clone(),
                        _ => String::new(),
                    },
                    reason: source.to_string(),
                });
                continue;
            }
            r => r?,
        };
        // `fd` as the options say: the default `CheckOptions` compare
        // against the extrapolated differences (`fd`'s Richardson columns,
        // [`DiffOptions::fd_extrapolate`]).
        let mut fd = step_jacobian(world, x, u, &params, Method::Fd, &opts.diff).map_err(at)?;
        let groups: Vec<&[usize]> = of_rows.iter().map(|(_, r)| r.as_slice()).collect();
        refine_fd(
            world,
            x,
            u,
            &params,
            &ji,
            &mut fd,
            opts,
            (k, &groups),
            &mut fd_refined,
        )
        .map_err(at)?;
        fd_columns += params.len();
        list_fd_columns(world, &named, (k, &fd), &mut fd_skips, &mut fd_one_sided);
        let others = [jac(Method::Lift)?, jac(Method::Unrolled)?, fd.jacobian];
        let jumps = &fd.nonsmooth;
        skipped += jumps.len();
        if regular.contains(&k) {
            skipped_regular += jumps.len();
            fd_columns_regular += params.len();
        }
        accumulate(&mut acc, &of_rows, &kinds, &named, &ji, &others, jumps);
    }
    let blocks = block_reports(acc, &of_rows, &kinds, opts);
    let rollout_report = match &opts.rollout {
        Some(ro) if !blocks.is_empty() && steps > 0 => Some(rollout::check_rollout(
            world, x0, controls, steps, &opts.diff, ro,
        )?),
        _ => None,
    };
    // the share over the regular samples: at an event step a perturbation
    // changes the contact set or active set by construction (each skip
    // there is listed, and its blocks keep the per-block rule)
    let within_budget =
        skipped_regular as f64 <= opts.max_fd_skipped_total_share * fd_columns_regular as f64;
    let status = check_status(&blocks, within_budget, rollout_report.as_ref());
    Ok(CheckReport {
        methods: Method::STEP.iter().map(|m| m.name().to_string()).collect(),
        sample_steps,
        rho: opts.diff.rho.unwrap_or(world.params.rho),
        blocks,
        fd_skipped_columns: skipped,
        fd_columns,
        fd_skipped: fd_skips,
        fd_one_sided,
        fd_refined,
        events_without_derivative,
        max_fd_skipped_share: opts.max_fd_skipped_share,
        max_fd_skipped_total_share: opts.max_fd_skipped_total_share,
        rollout: rollout_report,
        passed: status == CheckStatus::Passed,
        status,
    })
}

/// The `fd` columns of sample step `k` left out of the comparison (with
/// the reason) and those taken one-sided, listed.
fn list_fd_columns(
    world: &World<f64>,
    named: &[(&str, Param)],
    (k, fd): (usize, &super::StepJacobian),
    fd_skips: &mut Vec<FdColumn>,
    fd_one_sided: &mut Vec<FdColumn>,
) {
    for (c, why) in fd.nonsmooth.iter().zip(&fd.nonsmooth_why) {
        fd_skips.push(FdColumn {
            step: k,
            input: param_label(world, named[*c].1),
            reason: why.reason().to_string(),
        });
    }
    for c in &fd.one_sided {
        fd_one_sided.push(FdColumn {
            step: k,
            input: param_label(world, named[*c].1),
            reason: "the step map jumps within ±ε (an impact on a step boundary moves into this step or the next): one-sided difference on the nominal's side".into(),
        });
    }
}

/// The check's status: nothing checked without blocks; passed when every
/// block passes, the regular samples' `fd` skips are `within_budget` and
/// the rollout comparison (if any) passes.
fn check_status(
    blocks: &[BlockReport],
    within_budget: bool,
    rollout_report: Option<&RolloutReport>,
) -> CheckStatus {
    if blocks.is_empty() {
        CheckStatus::NothingChecked
    } else if blocks.iter().all(|b| b.passed)
        && within_budget
        && rollout_report.is_none_or(|r| r.passed)
    {
        CheckStatus::Passed
    } else {
        CheckStatus::Failed
    }
}

/// The steps sampled: `opts.samples` spread over the trajectory and up to
/// `opts.max_event_samples` of the rollout's event steps, sorted without
/// repeats; and the regular samples (the spread ones) alone.
fn sample_steps(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    opts: &CheckOptions,
) -> Result<(Vec<usize>, Vec<usize>), DiffError> {
    let n = opts.samples.max(1);
    let mut sample_steps: Vec<usize> = (0..n)
        .map(|i| {
            if n == 1 || steps == 0 {
                0
            } else {
                i * (steps - 1) / (n - 1)
            }
        })
        .collect();
    // the event steps (up to the cap, spread over the events)
    let cap = opts.max_event_samples;
    let events = if cap > 0 {
        rollout::events(world, x0, controls, steps)?.0
    } else {
        Vec::new()
    };
    if !events.is_empty() {
        let take = events.len().min(cap);
        for i in 0..take {
            let k = events[if take == 1 {
                0
            } else {
                i * (events.len() - 1) / (take - 1)
            }];
            sample_steps.push(k.min(steps.saturating_sub(1)));
        }
    }
    let regular: Vec<usize> = sample_steps[..n].to_vec();
    sample_steps.sort_unstable();
    sample_steps.dedup();
    Ok((sample_steps, regular))
}

/// The output rows of each Jacobian block (position, orientation tangent,
/// velocity, angular velocity of the lone free bodies; robot coordinates
/// and velocities).
fn output_rows(world: &World<f64>) -> [(&'static str, Vec<usize>); 6] {
    let nv = world.model.nv;
    let lone = world.model.lone_free_bodies();
    let free = || {
        world
            .model
            .bodies
            .iter()
            .zip(lone.iter())
            .filter(|&(_, &l)| l)
            .map(|(b, _)| b)
    };
    let robot_dofs = || world.robots.iter().flat_map(|r| r.idx_v..r.idx_v + r.nv);
    [
        (
            "position",
            free().flat_map(|b| b.idx_v..b.idx_v + 3).collect(),
        ),
        (
            "orientation",
            free().flat_map(|b| b.idx_v + 3..b.idx_v + 6).collect(),
        ),
        (
            "velocity",
            free()
                .flat_map(|b| nv + b.idx_v..nv + b.idx_v + 3)
                .collect(),
        ),
        (
            "angular_velocity",
            free()
                .flat_map(|b| nv + b.idx_v + 3..nv + b.idx_v + 6)
                .collect(),
        ),
        ("robot_q", robot_dofs().collect()),
        ("robot_v", robot_dofs().map(|i| nv + i).collect()),
    ]
}

/// The input kinds of `named`, in order of first appearance.
fn input_kinds<'a>(named: &[(&'a str, Param)]) -> Vec<&'a str> {
    let mut kinds: Vec<&str> = Vec::new();
    for (k, _) in named {
        if !kinds.contains(k) {
            kinds.push(k);
        }
    }
    kinds
}

/// Per block: `(of, wrt) -> (norm, abs diffs per method, fd compared, fd
/// skipped)`, accumulated over the samples.
type BlockAcc = BTreeMap<(usize, usize), (f64, [f64; 3], usize, usize)>;

/// Per block `(of, wrt)`: the largest `|J_ift|`, the largest difference of
/// each other method from `ift` (`fd` on its compared columns), and the
/// `fd` columns compared and skipped (the `jumps`), over one sample.
fn accumulate(
    acc: &mut BlockAcc,
    of_rows: &[(&str, Vec<usize>)],
    kinds: &[&str],
    named: &[(&str, Param)],
    ji: &DMat<f64>,
    others: &[DMat<f64>; 3],
    jumps: &[usize],
) {
    for (oi, (_, rows)) in of_rows.iter().enumerate() {
        for (wi, kind) in kinds.iter().enumerate() {
            let cols: Vec<usize> = named
                .iter()
                .enumerate()
                .filter(|(_, (n, _))| n == kind)
                .map(|(c, _)| c)
                .collect();
            if rows.is_empty() || cols.is_empty() {
                continue;
            }
            let entry = acc.entry((oi, wi)).or_insert((0.0, [0.0; 3], 0, 0));
            let nskip = cols.iter().filter(|c| jumps.contains(c)).count();
            entry.2 += cols.len() - nskip;
            entry.3 += nskip;
            for &r in rows {
                for &c in &cols {
                    entry.0 = entry.0.max(ji[(r, c)].abs());
                    for (m, jm) in others.iter().enumerate() {
                        if m == 2 && jumps.contains(&c) {
                            continue;
                        }
                        entry.1[m] = entry.1[m].max((ji[(r, c)] - jm[(r, c)]).abs());
                    }
                }
            }
        }
    }
}

/// The report of each block: its differences, absolute and relative to
/// `max(1, ‖J_ift‖∞)`, against the tolerances, and its `fd` skips against
/// [`CheckOptions::max_fd_skipped_share`].
fn block_reports(
    acc: BlockAcc,
    of_rows: &[(&str, Vec<usize>)],
    kinds: &[&str],
    opts: &CheckOptions,
) -> Vec<BlockReport> {
    let names = ["ift_vs_lift", "ift_vs_unrolled", "ift_vs_fd"];
    let tols = [opts.tol_lift, opts.tol_unrolled, opts.tol_fd];
    let mut blocks = Vec::new();
    for ((oi, wi), (norm, diffs, compared, skipped)) in acc {
        let scale = norm.max(1.0);
        let mut abs = BTreeMap::new();
        let mut rel = BTreeMap::new();
        let mut passed = true;
        for m in 0..3 {
            abs.insert(names[m].to_string(), diffs[m]);
            rel.insert(names[m].to_string(), diffs[m] / scale);
            passed &= diffs[m] / scale <= tols[m];
        }
        let total = compared + skipped;
        passed &= compared > 0 && skipped as f64 <= opts.max_fd_skipped_share * total as f64;
        blocks.push(BlockReport {
            of: of_rows[oi].0.to_string(),
            wrt: kinds[wi].to_string(),
            norm,
            max_abs_diff: abs,
            max_rel_diff: rel,
            fd_compared: compared,
            fd_skipped: skipped,
            passed,
        });
    }
    blocks
}
