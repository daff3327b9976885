//! Nimble's complementarity-aware gradients (Werling et al. 2021, IV-D)
//! for the `lcp` backend.
//!
//! # Why
//!
//! A contact resting under gravity is *clamping* (its normal row of the
//! boxed LCP is `ŷ_n = 0`, [`crate::contact::lcp`]): any small change of
//! an actuator pushing the body along the normal is met by an equal
//! change of the contact impulse, so `∂v⁺/∂u = 0` and the exact gradient
//! of any loss with respect to that control is exactly zero — a saddle
//! for a gradient-based optimizer (Nimble's Fig. 3: a ball on the ground
//! with a vertical actuator and a target height above it; VII-C: a
//! drone resting on the ground). Nimble's remedy: during
//! backpropagation, also differentiate the step with the contact
//! classified *separating* (its impulse held fixed, as if the contact
//! did not exist for the derivative) and keep the classification whose
//! backpropagated gradient is larger.
//!
//! # What is computed
//!
//! [`Gradient::ComplementarityAware`] (CLI `--gradient
//! complementarity_aware`), with the `lcp` backend and the `ift` method
//! only (any other combination is refused with
//! [`DiffError::Unsupported`], never ignored). Per step of the rollout:
//!
//! 1. the f64 root `y` and the exact residual's Jacobians `∂r/∂y` (dense,
//!    by dual numbers) and `∂r/∂θ` (as `ift`);
//! 2. the exact step Jacobian `S` (the `lcp` pieces the solver settled
//!    on; the pseudo-inverse solve, as `ift`);
//! 3. the *reclassified* step Jacobian `S'`: the same system with the
//!    three rows of every contact in the set `F` replaced by
//!    `δf_c = 0` (the contact's impulse — normal and friction — does not
//!    respond: Nimble's "separating"); the override lives only in these
//!    matrices, the residual and the solver are untouched;
//! 4. with the adjoint `G = ∂ℓ/∂x_{t+1}` (rows: outputs), the step whose
//!    `‖G ∂x_{t+1}/∂v_t‖²_F + ‖G ∂x_{t+1}/∂u_t‖²_F / Δt` is larger is
//!    kept (Nimble's criterion `‖∂ℓ/∂q̇_t‖² + ‖∂ℓ/∂τ_t‖²/Δt`), and the
//!    adjoint is propagated through it.
//!
//! The set `F`: the clamping contacts (normal row on the piece `ŷ_n` at
//! the root, read off `∂r/∂y`) at which the loss "wants" separation. For a scalar loss (one output
//! row, the optimizer's case) this is Nimble's sign rule: contact `c` is
//! in `F` when `∂ℓ/∂v_c < 0`, evaluated as the loss's change along the
//! motion a unit normal impulse at `c` would cause alone,
//! `G ∂x_{t+1}/∂v⁺ · K⁻¹ W_cᵀ n` (`K = ∂r_dyn/∂v⁺`), which has the sign
//! of `∂ℓ/∂v_c`. For a vector output (the CLI's `grad`, whose outputs
//! have no sign to want) `F` is every clamping contact and the criterion
//! uses the Frobenius norm of the backpropagated Jacobian of the
//! requested output; for one output row both reduce to Nimble's
//! criterion. The choice is per step, between two classifications (the
//! solver's and `F`), as in Nimble (not the `2ⁿ` combinations).
//!
//! Not implemented: the converse relabelling (a separating contact
//! relabelled clamping, Nimble's Fig. 4), and steps split at a time of
//! impact (continuous collision), which are refused. Where the
//! reclassified system is inconsistent (a singular `∂r/∂y` whose
//! right-hand side is outside its range) the step keeps its exact
//! Jacobian.
//!
//! The result is not the derivative of the rollout: it is a search
//! direction. It equals the exact gradient at every step where no contact
//! clamps or the exact classification wins.

use super::step::{ift_output, param_partials};
use super::{DiffError, DiffOptions, Input, Method, Param, StepJacobian};
use crate::contact::backend::dense_jacobian;
use crate::contact::delassus::{Structure, Z, pinv};
use crate::contact::{ContactBackend, Lcp, SolverKind};
use crate::dynamics::free::integrate_model;
use crate::math::{DMat, DVec};
use crate::sim::{Controls, SimError, State, World};

/// Which gradient the derivative methods return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Gradient {
    /// The exact derivative of the step map (default).
    #[default]
    Exact,
    /// Nimble's complementarity-aware gradient (module docs): `ift` with
    /// the `lcp` backend only.
    ComplementarityAware,
}

impl Gradient {
    /// Both modes, in report order.
    pub const ALL: [Gradient; 2] = [Gradient::Exact, Gradient::ComplementarityAware];

    /// The name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Gradient::Exact => "exact",
            Gradient::ComplementarityAware => "complementarity_aware",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Gradient> {
        Gradient::ALL.into_iter().find(|g| g.name() == s)
    }
}

const OPTION: &str = "--gradient complementarity_aware";

/// Refuses a gradient mode that `world`'s backend or `method` does not
/// implement ([`DiffError::Unsupported`], naming the option, the backend
/// and the method). `Exact` is always accepted.
pub fn check(world: &World<f64>, method: Method, opts: &DiffOptions) -> Result<(), DiffError> {
    if opts.gradient == Gradient::Exact {
        return Ok(());
    }
    if world.solver != SolverKind::Lcp {
        return Err(DiffError::Unsupported {
            option: OPTION,
            backend: world.solver.name(),
            method: method.name(),
            why: "it reclassifies clamping contacts of the boxed LCP, which only the `lcp` backend solves",
        });
    }
    if method != Method::Ift {
        return Err(DiffError::Unsupported {
            option: OPTION,
            backend: world.solver.name(),
            method: method.name(),
            why: "it is built from each step's implicit-function Jacobian: use `--method ift`",
        });
    }
    Ok(())
}

/// A complementarity-aware gradient of a rollout.
#[derive(Clone, Debug)]
pub struct AwareGradient {
    /// The final state (f64).
    pub last: State<f64>,
    /// `weights · ∂x_N/∂θ` with each step's classification chosen by the
    /// criterion (rows: the rows of `weights`; one column per input).
    pub gradient: DMat<f64>,
    /// Steps at which the reclassified (separating) Jacobian was kept.
    pub reclassified_steps: usize,
}

/// One step's exact-residual Jacobians at the root.
struct StepData {
    state: State<f64>,
    y: DVec<f64>,
    jy: DMat<f64>,
    jth: DMat<f64>,
    /// Contacts (candidate index) whose normal row is clamping.
    clamping: Vec<usize>,
}

fn unsupported(why: &'static str) -> DiffError {
    DiffError::Unsupported {
        option: OPTION,
        backend: Lcp::NAME,
        method: Method::Ift.name(),
        why,
    }
}

fn prepare(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    opts: &DiffOptions,
) -> Result<StepData, DiffError> {
    crate::sim::check_inputs(world, state, u)?;
    let lcp = Lcp::new(&world.backends.lcp);
    let p = world.problem(state, u);
    if lcp.splits(&p)? {
        return Err(unsupported(
            "a step split at a time of impact (continuous collision) has no single \
             residual to reclassify",
        ));
    }
    let (y, st): (DVec<f64>, Structure) = lcp.solve_root(&p)?;
    let jy = dense_jacobian(&lcp, &p, &st, &y)?;
    let jth = param_partials(&lcp, &p, world, state, u, &st, &y, params, opts.partials)?;
    let nv = world.model.nv;
    // A contact clamps when its normal row is the piece `ŷ_n` (it depends
    // on `v⁺`), as opposed to `f_n` (separating): read off `∂r/∂y`, the
    // pieces `ift` itself solves with (with redundant contacts the
    // solver may leave a clamping contact with a zero impulse).
    let clamping = (0..st.candidates.len())
        .filter(|&c| jy.view((nv + Z * c, 0), (1, nv)).amax() > 0.0)
        .collect();
    Ok(StepData {
        state: state.clone(),
        y,
        jy,
        jth,
        clamping,
    })
}

/// The step Jacobian with the contacts of `freed` reclassified separating
/// (module docs); `None` when that system is inconsistent.
fn solve_freed(
    world: &World<f64>,
    params: &[Param],
    d: &StepData,
    freed: &[usize],
) -> Result<Option<StepJacobian>, DiffError> {
    let nv = world.model.nv;
    let mut j = d.jy.clone();
    let mut rhs = d.jth.clone();
    for &c in freed {
        for k in 0..Z {
            let r = nv + Z * c + k;
            j.row_mut(r).fill(0.0);
            j[(r, r)] = 1.0;
            rhs.row_mut(r).fill(0.0);
        }
    }
    let x = pinv(&j)? * &rhs;
    let miss = (&j * &x - &rhs).amax();
    if !(miss <= 1e-6 * rhs.amax().max(1.0)) {
        return Ok(None);
    }
    Ok(Some(ift_output(world, &d.state, params, &d.y, &(-x))?))
}

/// Nimble's criterion for a step Jacobian `s` under the adjoint `g`.
fn criterion(g: &DMat<f64>, s: &DMat<f64>, params: &[Param], dt: f64) -> f64 {
    params
        .iter()
        .enumerate()
        .map(|(c, p)| match p {
            Param::V(_) => (g * s.column(c)).norm_squared(),
            Param::U(_) => (g * s.column(c)).norm_squared() / dt,
            _ => 0.0,
        })
        .sum()
}

/// The clamping contacts at which the loss wants separation (module
/// docs): all of them for a vector output, Nimble's sign rule for one row.
fn wants_separation(
    world: &World<f64>,
    d: &StepData,
    g: &DMat<f64>,
) -> Result<Vec<usize>, DiffError> {
    if g.nrows() != 1 {
        return Ok(d.clamping.clone());
    }
    let nv = world.model.nv;
    let k = d.jy.view((0, 0), (nv, nv)).into_owned();
    let lu = k.lu();
    let mut out = Vec::new();
    for &c in &d.clamping {
        // δv⁺ of a unit normal impulse at c alone: K δv = W_cᵀ n = −∂r_dyn/∂f_n.
        let col = -d.jy.view((0, nv + Z * c), (nv, 1)).into_owned();
        let Some(dv) = lu.solve(&col) else {
            return Err(DiffError::Singular(
                "dynamics block of the residual Jacobian",
            ));
        };
        let sj = ift_output(world, &d.state, &[Param::U(0)], &d.y, &dv)?;
        if (g * sj.jacobian.column(0))[0] < 0.0 {
            out.push(c);
        }
    }
    Ok(out)
}

/// The step Jacobian kept under the adjoint `g` and whether it is the
/// reclassified one.
fn choose(
    world: &World<f64>,
    params: &[Param],
    d: &StepData,
    g: &DMat<f64>,
) -> Result<(StepJacobian, bool), DiffError> {
    let exact = solve_freed(world, params, d, &[])?.ok_or(DiffError::Singular(
        "residual Jacobian (the right-hand side is not in its range)",
    ))?;
    if d.clamping.is_empty() {
        return Ok((exact, false));
    }
    let freed = wants_separation(world, d, g)?;
    if freed.is_empty() {
        return Ok((exact, false));
    }
    let Some(alt) = solve_freed(world, params, d, &freed)? else {
        return Ok((exact, false));
    };
    let dt = world.dt;
    if criterion(g, &alt.jacobian, params, dt) > criterion(g, &exact.jacobian, params, dt) {
        Ok((alt, true))
    } else {
        Ok((exact, false))
    }
}

fn with_rho(world: &World<f64>, opts: &DiffOptions) -> World<f64> {
    let mut w = world.clone();
    if let Some(rho) = opts.rho {
        w.params.rho = rho;
    }
    w
}

/// The complementarity-aware Jacobian of one step (the adjoint is the
/// identity: every output row of the step; module docs). Called by
/// [`super::step_jacobian`] for [`Gradient::ComplementarityAware`].
pub(crate) fn aware_step_jacobian(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    opts: &DiffOptions,
) -> Result<StepJacobian, DiffError> {
    let d = prepare(world, state, u, params, opts)?;
    let n = 2 * world.model.nv;
    Ok(choose(world, params, &d, &DMat::identity(n, n))?.0)
}

/// The complementarity-aware gradient of `weights · x_N` with respect to
/// `inputs` through a `steps`-step rollout (module docs): a forward pass
/// storing each step's Jacobians at the root, then a reverse pass that
/// chooses each step's classification under the backpropagated adjoint.
/// `weights` has `2 nv` columns (the final state's tangent, as the rows of
/// [`super::rollout_jacobian`]); for a scalar loss `ℓ(x_N)` pass its
/// gradient as one row. Refused unless the world's backend is `lcp`.
pub fn aware_rollout_gradient(
    world: &World<f64>,
    x0: &State<f64>,
    controls: &Controls<f64>,
    steps: usize,
    inputs: &[Input],
    weights: &DMat<f64>,
    opts: &DiffOptions,
) -> Result<AwareGradient, DiffError> {
    let aware = DiffOptions {
        gradient: Gradient::ComplementarityAware,
        ..*opts
    };
    check(world, Method::Ift, &aware)?;
    let world = &with_rho(world, opts);
    let nv = world.model.nv;
    if weights.ncols() != 2 * nv {
        return Err(DiffError::BadParam(format!(
            "the weights have {} columns, the state's tangent {}",
            weights.ncols(),
            2 * nv
        )));
    }
    let mut model_params = Vec::new();
    for (c, inp) in inputs.iter().enumerate() {
        match *inp {
            Input::Config(i) | Input::Velocity(i) if i >= nv => {
                return Err(DiffError::BadParam(format!("{inp:?} is outside the state")));
            }
            Input::Config(_) | Input::Velocity(_) => {}
            Input::Model(p @ (Param::Q(_) | Param::V(_) | Param::U(_))) => {
                return Err(DiffError::BadParam(format!(
                    "{p:?} is not a model parameter"
                )));
            }
            Input::Model(p) => model_params.push((c, p)),
            Input::Control { step: k, index } => {
                if k >= steps || index >= nv {
                    return Err(DiffError::BadParam(format!(
                        "{inp:?} is outside the rollout"
                    )));
                }
            }
        }
    }
    let mut params: Vec<Param> = (0..nv).map(Param::Q).chain((0..nv).map(Param::V)).collect();
    params.extend(model_params.iter().map(|(_, p)| *p));
    params.extend((0..nv).map(Param::U));
    let ucol0 = 2 * nv + model_params.len();
    // Forward: the rollout and each step's Jacobians at its root.
    let mut data = Vec::with_capacity(steps);
    let mut x = x0.clone();
    for k in 0..steps {
        let d = prepare(world, &x, controls.at(k), &params, opts)?;
        let v = d.y.rows(0, nv).into_owned();
        let q = integrate_model(&world.model, &x.q, &v, world.dt).map_err(SimError::from)?;
        x = State { q, v };
        data.push(d);
    }
    // Reverse: the adjoint through each step's chosen Jacobian.
    let mut g = weights.clone();
    let mut grad = DMat::zeros(weights.nrows(), inputs.len());
    let mut reclassified = 0;
    for (k, d) in data.iter().enumerate().rev() {
        let (sj, re) = choose(world, &params, d, &g)?;
        reclassified += usize::from(re);
        let s = &sj.jacobian;
        for (idx, (c, _)) in model_params.iter().enumerate() {
            let add = &g * s.column(2 * nv + idx);
            let mut col = grad.column_mut(*c);
            col += add;
        }
        for (c, inp) in inputs.iter().enumerate() {
            if let Input::Control { step, index } = *inp {
                if step == k {
                    let add = &g * s.column(ucol0 + index);
                    let mut col = grad.column_mut(c);
                    col += add;
                }
            }
        }
        g = &g * s.columns(0, 2 * nv);
    }
    for (c, inp) in inputs.iter().enumerate() {
        let col = match *inp {
            Input::Config(i) => g.column(i).into_owned(),
            Input::Velocity(i) => g.column(nv + i).into_owned(),
            _ => continue,
        };
        let mut target = grad.column_mut(c);
        target += col;
    }
    Ok(AwareGradient {
        last: x,
        gradient: grad,
        reclassified_steps: reclassified,
    })
}
