//! The optional `[objective]` table of a scene file: what `dualsim
//! optimize` and `dualsim hessian` work on (see [`crate::opt`]).
//!
//! ```toml
//! [objective]
//! of = ["box.position"]            # final-state quantities, as grad's OUT
//! target = [1.0, 0.0, 0.25]        # one value per stacked output row
//! weights = [1.0, 1.0, 1.0]        # optional, default 1
//! wrt = ["box.control"]            # decision variables, as grad's IN
//! regularization = 1e-6            # optional: ½ r ‖θ − θ₀‖²
//! ```
//!
//! cost = ½ Σᵢ wᵢ (outᵢ − targetᵢ)² + ½ r ‖θ − θ₀‖².
//!
//! Names are resolved by the same resolver as `dualsim grad`
//! ([`crate::diff::names`]); every error (unknown name, a name that is not
//! an output or not an input, a target or weights list of the wrong
//! length, a negative weight, a negative regularization) is a
//! [`SceneError`] located at the offending list entry, with its field path
//! (`objective.wrt[0]`).

use super::SceneError;
use super::fields::{Cx, R, Tab, array, num, num_list, type_error};
use crate::diff::names::{self, OutputField};
use crate::sim::World;
use toml::de::DeValue;

/// The keys of `[objective]`.
pub(super) const OBJECTIVE_KEYS: &[&str] = &[
    "of",
    "target",
    "weights",
    "wrt",
    "regularization",
    "running",
    "effort",
    "bounds",
];

/// The keys of an `[[objective.running]]` term.
pub(super) const RUNNING_KEYS: &[&str] = &["of", "target", "weights", "from", "to"];

/// The keys of an `[[objective.bounds]]` entry.
pub(super) const BOUNDS_KEYS: &[&str] = &["wrt", "lower", "upper"];

/// The keys of `[objective.effort]`.
pub(super) const EFFORT_KEYS: &[&str] = &["weights", "target"];

/// A running state cost: `½ Σᵢ wᵢ (yᵢ(x_k) − targetᵢ)²` summed over the
/// states `x_k`, `from ≤ k < to`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunningSpec {
    /// State quantities (`NAME.FIELD`, as `grad --of`).
    pub of: Vec<String>,
    /// One target per stacked output row.
    pub target: Vec<f64>,
    /// One weight ≥ 0 per output row.
    pub weights: Vec<f64>,
    /// First state (0 = the initial state).
    pub from: usize,
    /// One past the last state (at most `steps`; `None`: `steps`, the
    /// states before the final one).
    pub to: Option<usize>,
}

/// A control-effort cost: `½ Σ_k Σᵢ wᵢ (u_k,ᵢ − targetᵢ)²` over every
/// step's generalized-force control `u_k` (`nv` entries).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EffortSpec {
    /// One weight ≥ 0 per control entry.
    pub weights: Vec<f64>,
    /// One target per control entry (default 0).
    pub target: Vec<f64>,
}

/// Box bounds on one decision variable of `wrt`:
/// `lower ≤ θ ≤ upper` entry by entry (absolute values, not offsets).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundSpec {
    /// The decision variable, exactly as one entry of `wrt`.
    pub wrt: String,
    /// One lower bound per entry (per control entry for `NAME.control`,
    /// the same at every step); `-inf` for none.
    pub lower: Vec<f64>,
    /// One upper bound per entry; `inf` for none.
    pub upper: Vec<f64>,
}

/// A scene's `[objective]`, with its names checked against the scene's world.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectiveSpec {
    /// Final-state quantities (`NAME.FIELD`, as `grad --of`).
    pub of: Vec<String>,
    /// One target value per stacked output row.
    pub target: Vec<f64>,
    /// One non-negative weight per output row.
    pub weights: Vec<f64>,
    /// Decision variables (`NAME.FIELD`, as `grad --wrt`).
    pub wrt: Vec<String>,
    /// `r ≥ 0` of the regularization `½ r ‖θ − θ₀‖²`.
    pub regularization: f64,
    /// Running state costs (`[[objective.running]]`).
    pub running: Vec<RunningSpec>,
    /// The control-effort cost (`[objective.effort]`).
    pub effort: Option<EffortSpec>,
    /// Box bounds on decision variables (`[[objective.bounds]]`).
    pub bounds: Vec<BoundSpec>,
}

/// The number of bound values a decision variable takes: one per control
/// entry for per-step controls (the same bounds at every step), else one
/// per entry.
pub fn bound_width(inputs: &[crate::diff::Input]) -> usize {
    use crate::diff::Input;
    match inputs.first() {
        Some(Input::Control { step, .. }) => inputs
            .iter()
            .filter(|i| matches!(i, Input::Control { step: s, .. } if s == step))
            .count(),
        _ => inputs.len(),
    }
}

/// A list of strings (`of`, `wrt`) with each entry's span.
fn string_list(
    cx: &Cx,
    t: &mut Tab,
    key: &'static str,
) -> R<Vec<(String, std::ops::Range<usize>, String)>> {
    let Some((v, p)) = t.get(key) else {
        return Err(t.missing(key));
    };
    let a = array(cx, v, &p)?;
    if a.is_empty() {
        return Err(cx.error(v.span(), &p, "expected at least one NAME.FIELD"));
    }
    a.iter()
        .enumerate()
        .map(|(i, e)| {
            let path = format!("{p}[{i}]");
            match e.get_ref() {
                DeValue::String(s) => Ok((s.to_string(), e.span(), path)),
                other => Err(type_error(cx, e, &path, "a string (NAME.FIELD)", other)),
            }
        })
        .collect()
}

/// `of`, `target` and `weights` of a table (the final-state terms of
/// `[objective]`, or a running term), checked against the world.
fn outputs_targets_weights(
    cx: &Cx,
    t: &mut Tab,
    world: &World<f64>,
) -> R<(Vec<String>, Vec<f64>, Vec<f64>)> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    // of: each entry an output of grad
    let of = string_list(cx, t, "of")?;
    let mut rows = 0;
    for (name, span, path) in &of {
        if name.contains(',') {
            return Err(loc(
                span.clone(),
                path,
                "one NAME.FIELD per list entry (no commas)".into(),
            ));
        }
        let outs = names::parse_outputs(world, name)
            .map_err(|e| loc(span.clone(), path, strip_item(&e.to_string())))?;
        for o in &outs {
            if o.field == OutputField::RobotQ {
                let r = &world.robots[o.body];
                if r.nq != r.nv {
                    return Err(loc(
                        span.clone(),
                        path,
                        format!(
                            "`{}` has a floating base, whose orientation is not a vector quantity: \
                             target a link's position or orientation (`{}/LINK.position`) instead",
                            r.name, r.name
                        ),
                    ));
                }
            }
        }
        rows += names::output_labels(world, &outs).len();
    }
    // target: one per row
    let Some((tv, tp)) = t.get("target") else {
        return Err(t.missing("target"));
    };
    let target = num_list(cx, tv, &tp)?;
    if target.len() != rows {
        return Err(loc(
            tv.span(),
            &tp,
            format!(
                "expected one value per output row ({rows}: {}), found {}",
                of.iter()
                    .map(|(n, _, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                target.len()
            ),
        ));
    }
    // weights: optional, one per row, ≥ 0
    let weights = match t.get("weights") {
        None => vec![1.0; rows],
        Some((wv, wp)) => {
            let w = num_list(cx, wv, &wp)?;
            if w.len() != rows {
                return Err(loc(
                    wv.span(),
                    &wp,
                    format!(
                        "expected one weight per output row ({rows}), found {}",
                        w.len()
                    ),
                ));
            }
            let entries = array(cx, wv, &wp)?;
            for (i, x) in w.iter().enumerate() {
                if *x < 0.0 {
                    return Err(loc(
                        entries[i].span(),
                        &format!("{wp}[{i}]"),
                        format!("a weight must be >= 0, got {x}"),
                    ));
                }
            }
            w
        }
    };
    Ok((of.into_iter().map(|(n, _, _)| n).collect(), target, weights))
}

/// Reads and checks `[objective]` once the world is complete.
pub(super) fn read(
    cx: &Cx,
    mut t: Tab,
    world: &World<f64>,
    initial: &crate::sim::State<f64>,
    controls: &crate::sim::Controls<f64>,
    steps: usize,
) -> R<ObjectiveSpec> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    let (of, target, weights) = outputs_targets_weights(cx, &mut t, world)?;
    // wrt: each entry an input of grad
    let wrt = string_list(cx, &mut t, "wrt")?;
    for (name, span, path) in &wrt {
        if name.contains(',') {
            return Err(loc(
                span.clone(),
                path,
                "one NAME.FIELD per list entry (no commas)".into(),
            ));
        }
        names::parse_inputs(world, name, steps)
            .map_err(|e| loc(span.clone(), path, strip_item(&e.to_string())))?;
    }
    let regularization = match t.get("regularization") {
        None => 0.0,
        Some((v, p)) => {
            let r = num(cx, v, &p)?;
            if r < 0.0 {
                return Err(loc(v.span(), &p, format!("must be >= 0, got {r}")));
            }
            r
        }
    };
    let mut running = Vec::new();
    for r in t.array_of_tables("running", RUNNING_KEYS)? {
        running.push(read_running(cx, r, world, steps)?);
    }
    let effort = match t.table("effort", EFFORT_KEYS)? {
        None => None,
        Some(e) => Some(read_effort(cx, e, world.model.nv)?),
    };
    let mut bounds: Vec<BoundSpec> = Vec::new();
    for b in t.array_of_tables("bounds", BOUNDS_KEYS)? {
        let bound = read_bound(cx, b, (world, initial, controls, steps), &wrt, &bounds)?;
        bounds.push(bound);
    }
    t.finish()?;
    Ok(ObjectiveSpec {
        of,
        target,
        weights,
        wrt: wrt.into_iter().map(|(n, _, _)| n).collect(),
        regularization,
        running,
        effort,
        bounds,
    })
}

/// One `[[objective.running]]`: a running cost over the steps `from..to`.
fn read_running(cx: &Cx, mut r: Tab, world: &World<f64>, steps: usize) -> R<RunningSpec> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    let (of, target, weights) = outputs_targets_weights(cx, &mut r, world)?;
    let bound = |r: &mut Tab, key: &'static str, default: usize| -> R<usize> {
        match r.get(key) {
            None => Ok(default),
            Some((v, p)) => {
                let x = num(cx, v, &p)?;
                if x < 0.0 || x.fract() != 0.0 || x > steps as f64 {
                    return Err(loc(
                        v.span(),
                        &p,
                        format!("expected a whole number of steps in 0..={steps}, got {x}"),
                    ));
                }
                Ok(x as usize)
            }
        }
    };
    let from = bound(&mut r, "from", 0)?;
    let to = match r.get("to") {
        None => None,
        Some(_) => {
            r.used.retain(|k| *k != "to");
            Some(bound(&mut r, "to", steps)?)
        }
    };
    if from >= to.unwrap_or(steps) {
        return Err(loc(
            r.span.clone(),
            &r.path,
            format!(
                "`from` ({from}) must be below `to` ({})",
                to.unwrap_or(steps)
            ),
        ));
    }
    r.finish()?;
    Ok(RunningSpec {
        of,
        target,
        weights,
        from,
        to,
    })
}

/// `[objective.effort]`: the weights and target of the control effort, one
/// per control entry (`nv`) or one for all.
fn read_effort(cx: &Cx, mut e: Tab, nv: usize) -> R<EffortSpec> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    let list = |e: &mut Tab, key: &'static str, default: f64, non_negative: bool| -> R<Vec<f64>> {
        match e.get(key) {
            None => Ok(vec![default; nv]),
            Some((v, p)) => {
                let xs = num_list(cx, v, &p)?;
                let xs = if xs.len() == 1 { vec![xs[0]; nv] } else { xs };
                if xs.len() != nv {
                    return Err(loc(
                        v.span(),
                        &p,
                        format!(
                            "expected one value per control entry ({nv}) or one for all, found {}",
                            xs.len()
                        ),
                    ));
                }
                if non_negative && xs.iter().any(|x| *x < 0.0) {
                    return Err(loc(v.span(), &p, "a weight must be >= 0".into()));
                }
                Ok(xs)
            }
        }
    };
    if e.get("weights").is_none() {
        return Err(e.missing("weights"));
    }
    e.used.retain(|k| *k != "weights");
    let weights = list(&mut e, "weights", 0.0, true)?;
    let target = list(&mut e, "target", 0.0, false)?;
    e.finish()?;
    Ok(EffortSpec { weights, target })
}

/// One `[[objective.bounds]]`: the box of one decision variable of `wrt`
/// (not one of `earlier`), which the scene's values must lie in.
fn read_bound(
    cx: &Cx,
    mut b: Tab,
    (world, initial, controls, steps): (
        &World<f64>,
        &crate::sim::State<f64>,
        &crate::sim::Controls<f64>,
        usize,
    ),
    wrt: &[(String, std::ops::Range<usize>, String)],
    earlier: &[BoundSpec],
) -> R<BoundSpec> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    let Some((nv_, np)) = b.get("wrt") else {
        return Err(b.missing("wrt"));
    };
    let name = match nv_.get_ref() {
        DeValue::String(s) => s.to_string(),
        other => {
            return Err(type_error(
                cx,
                nv_,
                &np,
                "a string (one entry of `wrt`)",
                other,
            ));
        }
    };
    if !wrt.iter().any(|(w, _, _)| *w == name) {
        return Err(loc(
            nv_.span(),
            &np,
            format!(
                "`{name}` is not a decision variable of this objective (wrt: {})",
                wrt.iter()
                    .map(|(w, _, _)| w.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if earlier.iter().any(|o| o.wrt == name) {
        return Err(loc(
            nv_.span(),
            &np,
            format!("`{name}` has bounds already: give each decision variable one entry"),
        ));
    }
    let inputs = names::parse_inputs(world, &name, steps)
        .map_err(|e| loc(nv_.span(), &np, strip_item(&e.to_string())))?
        .remove(0)
        .1;
    let starts: Vec<Option<f64>> = inputs
        .iter()
        .map(|i| names::input_value(world, initial, controls, *i))
        .collect();
    if starts.iter().any(Option::is_none) {
        return Err(loc(
            nv_.span(),
            &np,
            format!(
                "`{name}` has no bounds: an orientation or a floating base's coordinates are \
                 not a vector quantity (bound a position, velocity, control or parameter)"
            ),
        ));
    }
    let width = bound_width(&inputs);
    let side = |b: &mut Tab,
                key: &'static str,
                default: f64|
     -> R<(Vec<f64>, Option<(std::ops::Range<usize>, String)>)> {
        match b.get(key) {
            None => Ok((vec![default; width], None)),
            Some((v, p)) => {
                let xs = num_list(cx, v, &p)?;
                let xs = if xs.len() == 1 {
                    vec![xs[0]; width]
                } else {
                    xs
                };
                if xs.len() != width {
                    return Err(loc(
                        v.span(),
                        &p,
                        format!(
                            "expected one value per entry of `{name}` ({width}) or one for all, found {}",
                            xs.len()
                        ),
                    ));
                }
                if xs.iter().any(|x| x.is_nan()) {
                    return Err(loc(
                        v.span(),
                        &p,
                        "a bound must be a number or inf, not nan".into(),
                    ));
                }
                Ok((xs, Some((v.span(), p))))
            }
        }
    };
    let (lower, lo_at) = side(&mut b, "lower", f64::NEG_INFINITY)?;
    let (upper, hi_at) = side(&mut b, "upper", f64::INFINITY)?;
    if lo_at.is_none() && hi_at.is_none() {
        return Err(loc(
            b.span.clone(),
            &b.path,
            "give `lower`, `upper` or both".into(),
        ));
    }
    let at = lo_at.clone().or(hi_at.clone()).expect("one side is given");
    if let Some(j) = (0..width).find(|&j| lower[j] > upper[j]) {
        return Err(loc(
            at.0,
            &at.1,
            format!(
                "entry {j}: lower bound {} > upper bound {}",
                lower[j], upper[j]
            ),
        ));
    }
    check_feasible_start(
        cx,
        &name,
        &inputs,
        &starts,
        (&lower, &upper),
        (&lo_at, &hi_at),
    )?;
    b.finish()?;
    Ok(BoundSpec {
        wrt: name,
        lower,
        upper,
    })
}

/// The scene's values (`starts`) of the decision variable `name` inside
/// its bounds (given at `lo_at`, `hi_at`): the optimization starts from
/// them.
fn check_feasible_start(
    cx: &Cx,
    name: &str,
    inputs: &[crate::diff::Input],
    starts: &[Option<f64>],
    (lower, upper): (&[f64], &[f64]),
    (lo_at, hi_at): (
        &Option<(std::ops::Range<usize>, String)>,
        &Option<(std::ops::Range<usize>, String)>,
    ),
) -> R<()> {
    let loc = |span: std::ops::Range<usize>, path: &str, msg: String| -> SceneError {
        cx.error(span, path, msg)
    };
    let width = lower.len();
    // the start (the scene's values) must be feasible
    for (i, (inp, x)) in inputs.iter().zip(starts).enumerate() {
        let x = x.expect("checked above");
        let j = i % width;
        let (bad, side_at) = if x < lower[j] {
            (Some(lower[j]), lo_at.clone())
        } else if x > upper[j] {
            (Some(upper[j]), hi_at.clone())
        } else {
            (None, None)
        };
        if let (Some(bnd), Some((span, path))) = (bad, side_at) {
            let which = match inp {
                crate::diff::Input::Control { step, .. } => format!("entry {j} at step {step}"),
                _ => format!("entry {j}"),
            };
            return Err(loc(
                span,
                &path,
                format!(
                    "the scene's value of `{name}` {which} is {x}, outside this bound ({bnd}): \
                     the optimization starts from the scene's values, which must be feasible"
                ),
            ));
        }
    }
    Ok(())
}

/// The resolver's message without its "item 1 (column 1)" prefix (the
/// scene error gives the line and column instead).
fn strip_item(msg: &str) -> String {
    match msg.strip_prefix("item 1 (column 1) ") {
        Some(rest) => rest.to_string(),
        None => msg.to_string(),
    }
}
