//! One step's Jacobian by each method, and the generic `lift` step.
//!
//! Files: `mod.rs` (options, the Jacobian type, the entry points),
//! `ift.rs` (the implicit-function derivative and its outputs), `lift.rs`
//! (the dual-number `lift` and `unrolled` methods) and `fd.rs` (central
//! differences with the kink, jump and domain tests).

use nalgebra::{Const, U1};
use num_dual::DualSVec64;

use super::complementarity::{self, Gradient};
use super::{DiffError, ImplicitStep, Method, Param, seeded};
use crate::Scalar;
use crate::contact::backend::dense_jacobian;
use crate::dynamics::Model;
use crate::dynamics::free::{difference_model, integrate_model};
use crate::math::{DMat, DVec};
use crate::sim::{SimError, State, World, step};

/// Width of the dual-number column blocks.
const BLOCK: usize = 8;
type D = DualSVec64<BLOCK>;

/// Options of the derivative methods.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffOptions {
    /// Relaxation ρ at which derivatives are taken (`None`: the world's).
    pub rho: Option<f64>,
    /// Central-difference step. Default 1e-6.
    pub fd_eps: f64,
    /// How `ift` assembles `∂r/∂θ`. Default [`Partials::Kernel`].
    pub partials: Partials,
    /// Which gradient: the exact one (default) or Nimble's
    /// complementarity-aware one (`ift` with the `lcp` backend only,
    /// [`super::complementarity`]).
    pub gradient: Gradient,
    /// `fd` with Richardson extrapolation where a column's second
    /// difference grows as a smooth map's (each column also solved at
    /// ±2ε, so about twice the solves; see `fd`). Default `false`: plain
    /// central differences (what the benchmarks compare against);
    /// the default [`CheckOptions`](super::CheckOptions) turn it on.
    pub fd_extrapolate: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            rho: None,
            fd_eps: 1e-6,
            partials: Partials::Kernel,
            gradient: Gradient::Exact,
            fd_extrapolate: false,
        }
    }
}

/// How the `ift` method assembles the right-hand sides `∂r/∂θ`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Partials {
    /// Generated `#[kernel]` Jacobians (see [`super::partials`]) where the
    /// backend and the problem are covered, dual numbers otherwise.
    #[default]
    Kernel,
    /// Dual-number evaluation of the whole residual in column blocks of 8
    /// for every parameter.
    Dual,
}

impl Partials {
    /// The name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Partials::Kernel => "kernel",
            Partials::Dual => "dual",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(s: &str) -> Option<Partials> {
        [Partials::Kernel, Partials::Dual]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

/// A step's next state and its Jacobian (`2 nv` rows: tangent of `q⁺`,
/// then `v⁺`; one column per parameter).
#[derive(Clone, Debug)]
pub struct StepJacobian {
    /// The next state (f64).
    pub next: State<f64>,
    /// `∂x⁺/∂θ`.
    pub jacobian: DMat<f64>,
    /// `fd` only: columns where the step map is not smooth within ±ε, so
    /// that the difference quotient is not a derivative: the ±ε
    /// perturbation changed the solver's structure (the contact candidate
    /// set), or the one-sided differences disagree by more than 0.1% of
    /// `max(1, ‖column‖∞)` and the second difference grows with the step
    /// ([`second_difference_grows`]: a kink — e.g. a contact exactly at a
    /// capsule's segment end — or a curvature scale below ε, as for resting
    /// contact at very small ρ, where the relaxed gap ρ/γ is shorter than
    /// ε; not error of the solves, which is compared).
    pub nonsmooth: Vec<usize>,
    /// `fd` only: why each column of [`nonsmooth`](Self::nonsmooth) is
    /// not smooth (the same order).
    pub nonsmooth_why: Vec<NonSmooth>,
    /// `fd` only: columns where the step map itself jumps within ±ε
    /// ([`jumps_within`]: an impact on a step boundary moves into this step
    /// or the next), taken as the one-sided difference on the nominal's
    /// side and compared (the derivative of the branch the nominal lies
    /// on).
    pub one_sided: Vec<usize>,
}

/// Why a column of `fd` is not a derivative ([`StepJacobian::nonsmooth`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NonSmooth {
    /// The ±ε perturbation changed the solver's structure (the contact
    /// candidate set, or an active set).
    Structure,
    /// The slope jumps within ±2ε (the second differences grow with the
    /// step: [`second_difference_grows`]), or, at a domain edge, on the one
    /// side the domain allows.
    Kink,
}

impl NonSmooth {
    /// A sentence for reports.
    pub fn reason(self) -> &'static str {
        match self {
            NonSmooth::Structure => {
                "the perturbation changes the solver's structure (contact candidates or active set)"
            }
            NonSmooth::Kink => "the slope jumps within ±2ε (a kink)",
        }
    }
}

/// Whether a map sampled at `−2ε, −ε, 0, ε, 2ε` jumps within `±ε`: one of
/// the two middle consecutive differences (`f(0) − f(−ε)`, `f(ε) − f(0)`)
/// is at least 10 times each of the other three (∞-norms). A smooth map's
/// four differences are all about `ε f'`, a kink's two and two (the two
/// slopes), error of the solves spreads over at least two (a wrong value
/// enters two differences); a jump `J` between two samples puts `J` into
/// exactly one. The rollout through such a step is continuous (the impact
/// happens in one step or the next), and `check`'s rollout comparison
/// verifies it there.
///
/// ```
/// use dualsim::diff::jumps_within;
/// use dualsim::math::DVec;
/// let at = |f: &dyn Fn(f64) -> f64, h: f64| DVec::from_vec(vec![f(h)]);
/// let e = 1e-7;
/// let step = |x: f64| if x > 0.0 { 1.0 + x } else { x };
/// let smooth = |x: f64| x;
/// let s = [-2.0 * e, -e, 0.0, e, 2.0 * e];
/// assert!(jumps_within(&s.map(|h| at(&step, h))));
/// assert!(!jumps_within(&s.map(|h| at(&smooth, h))));
/// let kink = |x: f64| x.abs();
/// assert!(!jumps_within(&s.map(|h| at(&kink, h))));
/// ```
pub fn jumps_within(f: &[DVec<f64>; 5]) -> bool {
    smooth_side(f).is_some()
}

/// Of a map that [`jumps_within`] `±ε`, the side without the jump (`+1`
/// when the jump is in `[−ε, 0)`, `−1` when it is in `(0, ε]`): the
/// nominal value belongs to the branch on that side.
pub(crate) fn smooth_side(f: &[DVec<f64>; 5]) -> Option<f64> {
    let d: Vec<f64> = (0..4).map(|i| (&f[i + 1] - &f[i]).amax()).collect();
    let dominates =
        |m: usize| d[m] > 0.0 && (0..4).filter(|&i| i != m).all(|i| d[m] >= 10.0 * d[i]);
    if dominates(1) {
        Some(1.0)
    } else if dominates(2) {
        Some(-1.0)
    } else {
        None
    }
}

/// `(q ⊖ q_nominal, v)` as one vector of length `2 nv`.
pub(crate) fn tangent<T: Scalar>(model: &Model<T>, nominal_q: &DVec<T>, x: &State<T>) -> DVec<T> {
    let nv = model.nv;
    let dq = difference_model(model, nominal_q, &x.q);
    let mut out = DVec::zeros(2 * nv);
    out.rows_mut(0, nv).copy_from(&dq);
    out.rows_mut(nv, nv).copy_from(&x.v);
    out
}

fn eps_column<const N: usize>(x: &DualSVec64<N>) -> nalgebra::SVector<f64, N> {
    x.eps.unwrap_generic(Const::<N>, U1)
}

/// The world with the derivative's ρ (borrowed when it is the world's own).
fn with_rho<'a>(world: &'a World<f64>, opts: &DiffOptions) -> std::borrow::Cow<'a, World<f64>> {
    match opts.rho {
        Some(rho) if rho != world.params.rho => {
            let mut w = world.clone();
            w.params.rho = rho;
            std::borrow::Cow::Owned(w)
        }
        _ => std::borrow::Cow::Borrowed(world),
    }
}

/// Calls `$body` with `$b` bound to the world's backend as an
/// [`ImplicitStep`].
macro_rules! with_world_backend {
    ($world:expr, |$b:ident| $body:expr) => {
        crate::contact::with_backend!($world.solver, $world.backends, |$b| $body)
    };
}

// (after the macro: the submodules use it)
mod fd;
mod ift;
mod lift;
pub use fd::*;
pub(crate) use ift::*;
pub use lift::*;

/// Maps a singular-system failure of the linear algebra to
/// [`DiffError::Singular`].
fn singular(e: crate::contact::SolveError) -> DiffError {
    match e {
        crate::contact::SolveError::Singular(what) => DiffError::Singular(what),
        e => e.into(),
    }
}

/// [`step_jacobian`] as one step of a rollout: with [`Method::Ift`], the
/// step is solved with the workspace the previous steps left (as
/// [`crate::sim::step_with`]: `ipm` starts its contacts from the
/// previous step's solution, safeguarded), and the workspace receives
/// this step's. The Jacobian is the same (the implicit-function
/// derivative at the root, whatever the solve started from). The other
/// methods solve from their own starting points and leave the workspace
/// as it was. Start with `contact::Workspace::default()`;
/// [`crate::diff::rollout_jacobian`] chains its steps this way.
pub fn step_jacobian_with(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    method: Method,
    opts: &DiffOptions,
    workspace: &mut crate::contact::Workspace<f64>,
) -> Result<StepJacobian, DiffError> {
    // (for one step, `adjoint` is the same implicit-function solve)
    if !matches!(method, Method::Ift | Method::Adjoint) || opts.gradient != Gradient::Exact {
        return step_jacobian(world, state, u, params, method, opts);
    }
    crate::sim::check_inputs(world, state, u)?;
    let w = with_rho(world, opts);
    if with_world_backend!(w, |b| b.splits(&w.problem(state, u)))? {
        return step_jacobian(world, state, u, params, method, opts);
    }
    crate::contact::with_backend_workspace!(w.solver, w.backends, workspace, |b, ws| ift(
        &b,
        &w,
        state,
        u,
        params,
        opts.partials,
        Some(ws)
    ))
}

/// The Jacobian of one step with respect to `params` by `method`.
///
/// ```
/// use dualsim::prelude::*;
/// use dualsim::diff::{step_jacobian, DiffOptions, Method, Param};
/// let mut w = World::<f64>::new(0.1);
/// w.add_body("b", 2.0, Mat3::identity(), None, Material::default()).unwrap();
/// let x = State::at_rest(&w.model, &[[0.0, 0.0, 1.0]]);
/// let u = w.zero_control();
/// let j = step_jacobian(&w, &x, &u, &[Param::U(0)], Method::Ift, &DiffOptions::default()).unwrap();
/// // v⁺ = v + h (g + u/m): ∂vₓ⁺/∂uₓ = h/m
/// assert!((j.jacobian[(6, 0)] - 0.05).abs() < 1e-14);
/// ```
pub fn step_jacobian(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    method: Method,
    opts: &DiffOptions,
) -> Result<StepJacobian, DiffError> {
    // the solve of `ift` and `fd` does not go through `sim::step`: the same
    // input checks (a non-finite control is an error, not a NaN Jacobian)
    crate::sim::check_inputs(world, state, u)?;
    complementarity::check(world, method, opts)?;
    // For one step, the reverse form is the same implicit-function solve.
    let method = if method == Method::Adjoint {
        Method::Ift
    } else {
        method
    };
    let w = with_rho(world, opts);
    if opts.gradient == Gradient::ComplementarityAware {
        return complementarity::aware_step_jacobian(&w, state, u, params, opts);
    }
    if with_world_backend!(w, |b| b.splits(&w.problem(state, u)))? {
        return split_jacobian(&w, state, u, params, method, opts.fd_eps);
    }
    if method == Method::Fd && w.ccd {
        // Under continuous collision a perturbed step may split where the
        // nominal one does not (an impact within ε of the step's end):
        // the differences are of the whole step, split or not, as for a
        // split step.
        return split_jacobian(&w, state, u, params, method, opts.fd_eps);
    }
    match method {
        Method::Ift => {
            with_world_backend!(w, |b| ift(&b, &w, state, u, params, opts.partials, None))
        }
        Method::Lift => unrolled(&w, state, u, params, true),
        Method::Unrolled | Method::Adjoint => unrolled(&w, state, u, params, false),
        Method::Fd => with_world_backend!(w, |b| fd(
            &b,
            &w,
            state,
            u,
            params,
            opts.fd_eps,
            opts.fd_extrapolate
        )),
    }
}

/// The Jacobian of a step that is split at a time of impact (`lcp` under
/// continuous collision, [`ContactBackend::splits`](crate::contact::ContactBackend::splits)):
/// it is not the root of one residual, so every method differentiates the
/// split step itself.
///
/// * `ift`, `lift`, `unrolled`: the step in dual numbers (column blocks of
///   8). Each piece of the split is differentiated by its implicit
///   function: the time of impact by Newton refinement of `φ(c(t_c)) = 0`
///   in the dual type (`∂t_c/∂θ = −(∂φ/∂θ)/φ̇`), each contact solve by
///   Newton steps with the f64 Jacobian at its root; `ift` and `lift`
///   therefore share `unrolled`'s path on such a step.
/// * `fd`: central differences of the f64 step, with `fd`'s kink test.
fn split_jacobian(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    method: Method,
    eps: f64,
) -> Result<StepJacobian, DiffError> {
    if method != Method::Fd {
        return unrolled(world, state, u, params, false);
    }
    let nv = world.model.nv;
    let nominal = step(world, state, u)?.state;
    let zero = tangent(&world.model, &nominal.q, &nominal);
    let mut jac = DMat::zeros(2 * nv, params.len());
    let mut changed = Vec::new();
    let mut jumped = Vec::new();
    for (c, p) in params.iter().enumerate() {
        let run = |d: f64| -> Result<DVec<f64>, DiffError> {
            let (w, s, uu) = seeded(world, state, u, &[*p], &[d])?;
            let next = step(&w, &s, &uu)?.state;
            Ok(tangent(&w.model, &nominal.q, &next))
        };
        if let Some(side) = one_sided(world, p, 2.0 * eps) {
            let (column, kink) =
                one_sided_column(&zero, &run(side * eps)?, &run(2.0 * side * eps)?, eps, side);
            if kink {
                changed.push((c, NonSmooth::Kink));
            }
            jac.set_column(c, &column);
            continue;
        }
        let plus = run(eps)?;
        let minus = run(-eps)?;
        let central = (&plus - &minus) / (2.0 * eps);
        let s1 = &plus + &minus - &zero * 2.0;
        if s1.amax() / eps > KINK_SLOPE_JUMP * central.amax().max(1.0) {
            match run(2.0 * eps).and_then(|p2| Ok((p2, run(-2.0 * eps)?))) {
                Ok((p2, m2)) => {
                    let samples = [
                        m2.clone(),
                        minus.clone(),
                        zero.clone(),
                        plus.clone(),
                        p2.clone(),
                    ];
                    if second_difference_grows(&s1, &(&p2 + &m2 - &zero * 2.0)) {
                        changed.push((c, NonSmooth::Kink));
                    } else if let Some(side) = smooth_side(&samples) {
                        // an impact on the step boundary moves into this
                        // step or the next: one-sided on the nominal's side
                        let (near, far) = if side > 0.0 {
                            (&plus, &p2)
                        } else {
                            (&minus, &m2)
                        };
                        let (column, kinked) = one_sided_column(&zero, near, far, eps, side);
                        if kinked {
                            changed.push((c, NonSmooth::Kink));
                        } else {
                            jumped.push(c);
                        }
                        jac.set_column(c, &column);
                        continue;
                    }
                }
                Err(_) => changed.push((c, NonSmooth::Kink)),
            }
        }
        jac.set_column(c, &central);
    }
    Ok(StepJacobian {
        next: nominal,
        jacobian: jac,
        nonsmooth: changed.iter().map(|c| c.0).collect(),
        nonsmooth_why: changed.iter().map(|c| c.1).collect(),
        one_sided: jumped,
    })
}
