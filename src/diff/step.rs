//! One step's Jacobian by each method, and the generic `lift` step.

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

/// Maps a singular-system failure of the linear algebra to
/// [`DiffError::Singular`].
fn singular(e: crate::contact::SolveError) -> DiffError {
    match e {
        crate::contact::SolveError::Singular(what) => DiffError::Singular(what),
        e => e.into(),
    }
}

/// `∂r/∂θ` at `y` for `params` (f64, one column per parameter), by
/// dual-number evaluation of the residual in column blocks of 8: the
/// structure `st` and `y` are fixed, only the problem data is seeded.
/// With `split`, the `Param::V` and `Param::U` columns are blocked
/// together and evaluate only the backend's
/// [`velocity_control_residual`](ImplicitStep::velocity_control_residual)
/// where it has one.
#[allow(clippy::too_many_arguments)]
fn residual_param_jacobian<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    st: &B::Structure,
    y: &DVec<f64>,
    params: &[Param],
    split: bool,
) -> Result<DMat<f64>, DiffError> {
    let n = y.len();
    let yd = y.map(D::from_re);
    let mut jth = DMat::zeros(n, params.len());
    // Column order: the other parameters first, then `V` and `U` (so that
    // as many blocks as possible hold only those).
    let vu = |p: &Param| split && matches!(p, Param::V(_) | Param::U(_));
    let order: Vec<usize> = (0..params.len())
        .filter(|&j| !vu(&params[j]))
        .chain((0..params.len()).filter(|&j| vu(&params[j])))
        .collect();
    for block in order.chunks(BLOCK) {
        let chunk: Vec<Param> = block.iter().map(|&j| params[j]).collect();
        let seeds: Vec<D> = (0..chunk.len())
            .map(|j| D::from_re(0.0).derivative(j))
            .collect();
        let (wd, sd, ud) = seeded(world, state, u, &chunk, &seeds)?;
        let prob = wd.problem(&sd, &ud);
        let partial = if block.iter().all(|&j| vu(&params[j])) {
            b.velocity_control_residual(&prob, st, &yd)
        } else {
            None
        };
        let r = match partial {
            Some(r) => r?,
            None => b.residual(&prob, st, &yd)?,
        };
        for (i, ri) in r.iter().enumerate() {
            let g = eps_column(ri);
            for (k, &j) in block.iter().enumerate() {
                jth[(i, j)] = g[k];
            }
        }
    }
    Ok(jth)
}

/// `∂r/∂θ` for `params`: with [`Partials::Kernel`] from the backend's
/// generated kernels ([`ImplicitStep::kernel_partials`]) where it has
/// them, otherwise (and with [`Partials::Dual`]) by
/// [`residual_param_jacobian`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn param_partials<B: ImplicitStep>(
    b: &B,
    p: &crate::contact::StepProblem<'_, f64>,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    st: &B::Structure,
    y: &DVec<f64>,
    params: &[Param],
    partials: Partials,
) -> Result<DMat<f64>, DiffError> {
    if partials == Partials::Kernel {
        // The same typed errors as the dual path for parameters that do
        // not exist.
        check_params(world, state, u, params)?;
        if let Some(j) = b.kernel_partials(p, st, y, params)? {
            return Ok(j);
        }
    }
    residual_param_jacobian(
        b,
        world,
        state,
        u,
        st,
        y,
        params,
        partials == Partials::Kernel,
    )
}

/// `DiffError::BadParam` for a parameter that does not exist in `world`
/// (as [`seeded`] reports it).
fn check_params(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
) -> Result<(), DiffError> {
    let nv = world.model.nv;
    let nb = world.model.bodies.len();
    for prm in params {
        let ok = match *prm {
            Param::Q(i) | Param::V(i) | Param::U(i) => i < nv,
            Param::Mass(b) | Param::Friction(b) | Param::Restitution(b) => b < nb,
            Param::Inertia(b, k) => b < nb && k < 3,
            Param::Gravity(k) => k < 3,
            Param::Dt => true,
            Param::Shape(..) => false,
        };
        if !ok {
            // `seeded` knows the shapes' parameters; one f64 evaluation.
            seeded::<f64>(world, state, u, &[*prm], &[0.0]).map(|_| ())?;
        }
    }
    Ok(())
}

/// Per free body, the Jacobian of its output tangent `q⁺ ⊖ q⁺₀` (6 rows),
/// `q⁺ = (q ⊕ δ) ⊕ h v⁺`, with respect to `(δ, v⁺, h)` (13 columns) at
/// `δ = 0` (one forward-mode evaluation per body); `None` for bodies that
/// are not free roots (their tangent rows are zero).
fn output_blocks(
    model: &Model<f64>,
    q: &DVec<f64>,
    v_next: &DVec<f64>,
    h: f64,
    q_next: &DVec<f64>,
) -> Result<Vec<Option<nalgebra::SMatrix<f64, 6, 13>>>, DiffError> {
    type E = DualSVec64<13>;
    let mut out = Vec::with_capacity(model.bodies.len());
    let lone = model.lone_free_bodies();
    for (i, b) in model.bodies.iter().enumerate() {
        if !lone[i] {
            out.push(None);
            continue;
        }
        let (kq, kv) = (b.idx_q, b.idx_v);
        let err = |source| {
            SimError::from(crate::dynamics::free::DynamicsError::Retraction { body: i, source })
        };
        let qb: [E; 7] = core::array::from_fn(|j| E::from_re(q[kq + j]));
        let dq: [E; 6] = core::array::from_fn(|j| E::from_re(0.0).derivative(j));
        let q0 = crate::math::integrate(&qb, &dq, E::from_re(1.0)).map_err(err)?;
        let vb: [E; 6] = core::array::from_fn(|j| E::from_re(v_next[kv + j]).derivative(6 + j));
        let q1 = crate::math::integrate(&q0, &vb, E::from_re(h).derivative(12)).map_err(err)?;
        let qn: [E; 7] = core::array::from_fn(|j| E::from_re(q_next[kq + j]));
        let t = crate::math::difference(&qn, &q1);
        let mut m = nalgebra::SMatrix::<f64, 6, 13>::zeros();
        for (r, tr) in t.iter().enumerate() {
            m.set_row(r, &tr.eps.unwrap_generic(Const::<13>, U1).transpose());
        }
        out.push(Some(m));
    }
    Ok(out)
}

/// The implicit-function Jacobian of one step:
///
/// 1. `y*` and the structure from the f64 solve;
/// 2. `∂r/∂θ` for every parameter ([`residual_param_jacobian`]);
/// 3. `dy/dθ = −(∂r/∂y)⁻¹ ∂r/∂θ` by [`ImplicitStep::solve_jacobian`]
///    (the backend's block-structured factorization at the solution,
///    factored once for all columns);
/// 4. the output map: `v⁺` rows are `dv⁺/dθ`; the tangent rows of body `b`
///    are `T_δ dδ_b/dθ + T_v dv⁺_b/dθ + T_h dh/dθ` with the per-body
///    blocks of [`output_blocks`] (`δ` moves only with `Param::Q`, `h` only
///    with `Param::Dt`).
pub(crate) fn ift<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    partials: Partials,
    ws: Option<&mut B::Workspace<f64>>,
) -> Result<StepJacobian, DiffError> {
    let p = world.problem(state, u);
    let (y, st) = match ws {
        Some(ws) => b.solve_root_with(&p, ws)?,
        None => b.solve_root(&p)?,
    };
    let jth = param_partials(b, &p, world, state, u, &st, &y, params, partials)?;
    let dy = -b
        .solve_jacobian_velocity(&p, &st, &y, &jth)
        .map_err(|e| match e {
            crate::contact::SolveError::OutOfRange { column, miss } => DiffError::NoDerivative {
                input: params
                    .get(column)
                    .map_or_else(|| format!("column {column}"), |p| format!("{p:?}")),
                miss,
            },
            e => singular(e),
        })?;
    ift_output(world, state, params, &y, &dy)
}

/// The output map of [`ift`] (its step 4): the step Jacobian from the
/// root `y` and `dy/dθ` (rows: `y`'s unknowns, `v⁺` first; one column per
/// parameter of `params`).
pub(crate) fn ift_output(
    world: &World<f64>,
    state: &State<f64>,
    params: &[Param],
    y: &DVec<f64>,
    dy: &DMat<f64>,
) -> Result<StepJacobian, DiffError> {
    let nv = world.model.nv;
    let v_next = y.rows(0, nv).into_owned();
    let q_next =
        integrate_model(&world.model, &state.q, &v_next, world.dt).map_err(SimError::from)?;
    let blocks = output_blocks(&world.model, &state.q, &v_next, world.dt, &q_next)?;
    let mut jac = DMat::zeros(2 * nv, params.len());
    jac.rows_mut(nv, nv).copy_from(&dy.rows(0, nv));
    for (bi, blk) in blocks.iter().enumerate() {
        let Some(t) = blk else { continue };
        let kv = world.model.bodies[bi].idx_v;
        let tv = t.fixed_view::<6, 6>(0, 6);
        let rows = tv * dy.rows(kv, 6);
        jac.rows_mut(kv, 6).copy_from(&rows);
        for (j, prm) in params.iter().enumerate() {
            match *prm {
                Param::Q(i) if (kv..kv + 6).contains(&i) => {
                    let mut col = jac.view_mut((kv, j), (6, 1));
                    col += t.column(i - kv);
                }
                Param::Dt => {
                    let mut col = jac.view_mut((kv, j), (6, 1));
                    col += t.column(12);
                }
                _ => {}
            }
        }
    }
    if crate::dynamics::articulated::has_articulated(&world.model) {
        // Robot joints: the output map of the whole configuration, by
        // forward-mode columns (tangent rows of the articulated dofs).
        let t = articulated_output(&world.model, &state.q, &v_next, world.dt, &q_next)?;
        let dofs = crate::dynamics::articulated::articulated_dofs(&world.model);
        let tv = t.columns(nv, nv).into_owned();
        let moved = &tv * dy.rows(0, nv);
        for &r in &dofs {
            for (j, prm) in params.iter().enumerate() {
                let mut val = moved[(r, j)];
                match *prm {
                    Param::Q(i) => val += t[(r, i)],
                    Param::Dt => val += t[(r, 2 * nv)],
                    _ => {}
                }
                jac[(r, j)] = val;
            }
        }
    }
    Ok(StepJacobian {
        next: State {
            q: q_next,
            v: v_next,
        },
        jacobian: jac,
        nonsmooth: Vec::new(),
        nonsmooth_why: Vec::new(),
        one_sided: Vec::new(),
    })
}

/// `∂(q⁺ ⊖ q⁺₀)/∂(δ, v⁺, h)` of `q⁺ = (q ⊕ δ) ⊕ h v⁺` for the whole
/// configuration (`nv × (2 nv + 1)`), by forward-mode column blocks.
fn articulated_output(
    model: &Model<f64>,
    q: &DVec<f64>,
    v_next: &DVec<f64>,
    h: f64,
    q_next: &DVec<f64>,
) -> Result<DMat<f64>, DiffError> {
    let nv = model.nv;
    let n = 2 * nv + 1;
    let md = model.cast::<D>();
    let qn = q_next.map(D::from_re);
    let mut out = DMat::zeros(nv, n);
    for start in (0..n).step_by(BLOCK) {
        let seed = |k: usize, x: f64| {
            if (start..start + BLOCK).contains(&k) {
                D::from_re(x).derivative(k - start)
            } else {
                D::from_re(x)
            }
        };
        let delta = DVec::from_fn(nv, |i, _| seed(i, 0.0));
        let vd = DVec::from_fn(nv, |i, _| seed(nv + i, v_next[i]));
        let hd = seed(2 * nv, h);
        let q0 = integrate_model(&md, &q.map(D::from_re), &delta, D::from_re(1.0))
            .map_err(SimError::from)?;
        let q1 = integrate_model(&md, &q0, &vd, hd).map_err(SimError::from)?;
        let t = crate::dynamics::free::difference_model(&md, &qn, &q1);
        for (r, tr) in t.iter().enumerate() {
            let g = eps_column(tr);
            for j in 0..BLOCK.min(n - start) {
                out[(r, start + j)] = g[j];
            }
        }
    }
    Ok(out)
}

/// `P J = L U` of the f64 matrix `∂r/∂y` at the root (faer's blocked LU,
/// factored once per step), applied to vectors of any scalar with f64
/// coefficients: the dual parts of `J⁻¹ r` are exact because they enter
/// linearly. No copy of the factors in `T` (an `n × n` matrix of duals was
/// 72 n² bytes per solve, 450 MB for the 2 500 unknowns of the sphere
/// pile), and the zeros of the factors (one block per contact island) are
/// skipped.
pub(crate) struct LiftedLu {
    /// The pseudo-inverse instead of the factors, for a backend whose
    /// `∂r/∂y` is singular by design
    /// ([`ContactBackend::REDUNDANT`](crate::contact::ContactBackend::REDUNDANT)).
    pinv: Option<DMat<f64>>,
    /// `(P r)_i = r[perm[i]]`.
    perm: Vec<usize>,
    /// `L` (unit diagonal) strictly below the diagonal, `U` on and above.
    lu: DMat<f64>,
}

impl LiftedLu {
    /// `None` when `J` is singular (a zero or non-finite pivot).
    pub(crate) fn new(j: &DMat<f64>) -> Option<Self> {
        let n = j.nrows();
        let f = faer::Mat::<f64>::from_fn(n, n, |r, c| j[(r, c)]).partial_piv_lu();
        let (l, u) = (f.L(), f.U());
        let lu = DMat::from_fn(n, n, |r, c| if r > c { l[(r, c)] } else { u[(r, c)] });
        if (0..n).any(|i| !(lu[(i, i)] != 0.0 && lu[(i, i)].is_finite())) {
            return None;
        }
        let perm = f.P().arrays().0.to_vec();
        Some(LiftedLu {
            pinv: None,
            perm,
            lu,
        })
    }

    /// The pseudo-inverse of `J` (redundant backends).
    pub(crate) fn pseudo(j: &DMat<f64>, nv: usize) -> Result<Self, DiffError> {
        let p = crate::contact::delassus::pinv_unique(j, nv).map_err(singular)?;
        Ok(LiftedLu {
            pinv: Some(p),
            perm: Vec::new(),
            lu: DMat::zeros(0, 0),
        })
    }

    /// `J⁻¹ r`, by column-oriented forward and back substitution.
    pub(crate) fn solve<T: Scalar>(&self, r: &DVec<T>) -> DVec<T> {
        if let Some(p) = &self.pinv {
            return DVec::from_fn(p.nrows(), |i, _| {
                let mut acc = T::zero();
                for (j, &a) in p.row(i).iter().enumerate() {
                    if a != 0.0 {
                        acc += T::from_re(a) * r[j];
                    }
                }
                acc
            });
        }
        let n = self.perm.len();
        let mut x = DVec::from_fn(n, |i, _| r[self.perm[i]]);
        for c in 0..n {
            let xc = x[c];
            for (i, &a) in self.lu.column(c).iter().enumerate().skip(c + 1) {
                if a != 0.0 {
                    x[i] -= xc * T::from_re(a);
                }
            }
        }
        for c in (0..n).rev() {
            x[c] /= T::from_re(self.lu[(c, c)]);
            let xc = x[c];
            for (i, &a) in self.lu.column(c).iter().enumerate().take(c) {
                if a != 0.0 {
                    x[i] -= xc * T::from_re(a);
                }
            }
        }
        x
    }

    /// `J⁻ᵀ b` (f64): with `P J = L U`, `Jᵀ = Uᵀ Lᵀ P`, so forward
    /// substitution with `Uᵀ`, back substitution with `Lᵀ`, then `Pᵀ`.
    /// The pseudo-inverse's transpose for a redundant backend (exact when
    /// `b` is in the range of `Jᵀ`, as an adjoint on `v⁺` is).
    pub(crate) fn solve_t(&self, b: &DVec<f64>) -> DVec<f64> {
        if let Some(p) = &self.pinv {
            return p.transpose() * b;
        }
        let n = self.perm.len();
        let mut w = b.clone();
        // Uᵀ w₁ = b (Uᵀ lower triangular)
        for i in 0..n {
            let mut acc = w[i];
            for k in 0..i {
                acc -= self.lu[(k, i)] * w[k];
            }
            w[i] = acc / self.lu[(i, i)];
        }
        // Lᵀ w₂ = w₁ (unit upper triangular)
        for i in (0..n).rev() {
            let mut acc = w[i];
            for k in i + 1..n {
                acc -= self.lu[(k, i)] * w[k];
            }
            w[i] = acc;
        }
        let mut out = DVec::zeros(n);
        for i in 0..n {
            out[self.perm[i]] = w[i];
        }
        out
    }
}

/// The f64 part of a `lift` step, shared by every scalar and every column
/// block: the root `y`, the backend's structure there and the LU of
/// `∂r/∂y` at it.
struct Lifted<S> {
    y: DVec<f64>,
    st: S,
    lu: LiftedLu,
}

fn lift_prepare<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
) -> Result<Lifted<B::Structure>, DiffError> {
    let p0 = world.problem(state, u);
    let (y, st) = b.solve_root(&p0)?;
    let jy = dense_jacobian(b, &p0, &st, &y)?;
    let lu = if B::REDUNDANT {
        LiftedLu::pseudo(&jy, p0.model.nv)?
    } else {
        LiftedLu::new(&jy).ok_or(DiffError::Singular("residual Jacobian"))?
    };
    Ok(Lifted { y, st, lu })
}

/// `order` Newton steps of the residual in `T` from the f64 root.
fn lift_from<B: ImplicitStep, T: Scalar>(
    b: &B,
    f: &Lifted<B::Structure>,
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    let p = world.problem(state, u);
    let mut yt = f.y.map(T::from_re);
    for _ in 0..order {
        let r = b.residual(&p, &f.st, &yt)?;
        yt -= f.lu.solve(&r);
    }
    if order > 0 {
        // Refinement of the derivative parts only
        // ([`ContactBackend::REFINE`](crate::contact::ContactBackend::REFINE)).
        for _ in 0..B::REFINE {
            let r = b.residual(&p, &f.st, &yt)?.map(|x| x - T::from_re(x.re()));
            yt -= f.lu.solve(&r);
        }
    }
    let nv = world.model.nv;
    let v = yt.rows(0, nv).into_owned();
    let q = integrate_model(&world.model, &state.q, &v, world.dt).map_err(SimError::from)?;
    Ok(State { q, v })
}

/// One step in any scalar `T` by the `lift` method: the primal problem is
/// solved in f64, then `order` Newton steps of the residual are taken in
/// `T` with the f64 factorization of `∂r/∂y`. For a dual scalar of
/// derivative order `k`, `order = k` makes every derivative part exact (the
/// chord iteration's error is multiplied by the nilpotent ε at each step).
/// The primal part is the f64 solution.
pub fn lift_step<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    with_world_backend!(world, |b| lift_step_with(&b, world, state, u, order))
}

fn lift_step_with<B: ImplicitStep, T: Scalar>(
    b: &B,
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    order: usize,
) -> Result<State<T>, DiffError> {
    let u0 = u.map(|x| x.re());
    let (w0, s0) = (world.cast::<f64>(), state.cast::<f64>());
    if b.splits(&w0.problem(&s0, &u0))? {
        // A split step (continuous collision) has no single residual: the
        // step itself in `T` (its contact solves are lifted, its time of
        // impact refined in `T`).
        return Ok(step(world, state, u)?.state);
    }
    let f = lift_prepare(b, &w0, &s0, &u0)?;
    lift_from(b, &f, world, state, u, order)
}

fn unrolled(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    lift: bool,
) -> Result<StepJacobian, DiffError> {
    let nominal = step(world, state, u)?.state;
    let jacobian = if lift {
        // the f64 solve and the factorization once, for every column block
        with_world_backend!(world, |b| {
            let f = lift_prepare(&b, world, state, u)?;
            by_column_blocks(world, state, u, params, &nominal, |wd, sd, ud| {
                lift_from(&b, &f, wd, sd, ud, 1)
            })
        })?
    } else {
        by_column_blocks(world, state, u, params, &nominal, |wd, sd, ud| {
            Ok(step(wd, sd, ud)?.state)
        })?
    };
    Ok(StepJacobian {
        next: nominal,
        jacobian,
        nonsmooth: Vec::new(),
        nonsmooth_why: Vec::new(),
        one_sided: Vec::new(),
    })
}

/// The one-step Jacobian with respect to `params` (in the tangent space
/// of `nominal`), `step` taken in dual numbers on column blocks of 8.
fn by_column_blocks(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    nominal: &State<f64>,
    mut step: impl FnMut(&World<D>, &State<D>, &DVec<D>) -> Result<State<D>, DiffError>,
) -> Result<DMat<f64>, DiffError> {
    let nv = world.model.nv;
    let mut jac = DMat::zeros(2 * nv, params.len());
    for start in (0..params.len()).step_by(BLOCK) {
        let chunk = &params[start..params.len().min(start + BLOCK)];
        let seeds: Vec<D> = (0..chunk.len())
            .map(|j| D::from_re(0.0).derivative(j))
            .collect();
        let (wd, sd, ud) = seeded(world, state, u, chunk, &seeds)?;
        let next = step(&wd, &sd, &ud)?;
        let t = tangent(&wd.model, &nominal.q.map(D::from_re), &next);
        for (i, ti) in t.iter().enumerate() {
            let g = eps_column(ti);
            for j in 0..chunk.len() {
                jac[(i, start + j)] = g[j];
            }
        }
    }
    Ok(jac)
}

/// A column of `fd` is a kink candidate when its one-sided slopes differ by
/// more than this, relative to `max(1, ‖central difference‖∞)`.
pub const KINK_SLOPE_JUMP: f64 = 1e-3;

/// The kink test of `fd`: whether the second difference
/// `s(h) = f(h) + f(−h) − 2 f(0)` grows with the step, given `s(ε)` and
/// `s(2ε)`.
///
/// The one-sided slopes of a column differ by `s(ε)/ε`. Where the map is
/// smooth, `s(h) ≈ h² f''` (truncation: `s(2ε) = 4 s(ε)`); at a kink with
/// slope jump `J` at `|a| < ε`, `s(h) = J (h − |a|)`, so `s(2ε) ≥ 2 s(ε)`
/// (a curvature scale below ε, such as resting contact at small ρ, looks
/// the same). Error of the solves — round-off `δ` divided by a small ε, an
/// inaccurate solver, a jump of the solve's iterate — does not grow with
/// the step: `s(2ε) ≈ s(ε) ≈ δ`. Only a growth of at least 1.5× (the
/// midpoint between 1 and 2) is a kink; anything else is error, and the
/// column is compared (so an accuracy regression fails instead of being
/// left out).
///
/// ```
/// use dualsim::diff::second_difference_grows;
/// use dualsim::math::DVec;
/// let s = |h: f64| DVec::from_vec(vec![(h - 0.3e-7f64).max(0.0) * 2.0]); // |x| kink at 0.3 ε
/// assert!(second_difference_grows(&s(1e-7), &s(2e-7)));
/// let noise = DVec::from_vec(vec![3e-12]);
/// assert!(!second_difference_grows(&noise, &(-&noise)));
/// ```
pub fn second_difference_grows(s_eps: &DVec<f64>, s_2eps: &DVec<f64>) -> bool {
    s_2eps.amax() >= 1.5 * s_eps.amax()
}

/// Whether `s(2h) ≈ 4 s(h)` (within ±25 %, on the ∞-norms): the growth
/// of a smooth map's second difference, `s(h) ≈ h² f''`.
pub(crate) fn quadratic_ratio(s_h: &DVec<f64>, s_2h: &DVec<f64>) -> bool {
    let r = s_2h.amax() / s_h.amax();
    (3.0..=5.0).contains(&r)
}

/// The second half of `fd`'s kink test: given the second differences at
/// ε/2, ε and 2ε, whether they grow as a smooth map's (`1 : 4 : 16`,
/// each ratio within ±25 %, and the two ratios' vectors aligned:
/// `‖s(2ε) − 4 s(ε)‖∞ ≤ ‖s(2ε)‖∞ / 4`, the same for `s(ε)` against
/// `s(ε/2)`).
///
/// A slope jump `J` at `|a| < 2ε` gives `s(h) = J (h − |a|)⁺`: the ratios
/// `s(ε)/s(ε/2)` and `s(2ε)/s(ε)` cannot both be 4 (the first is 4 at
/// `|a| = ε/3`, where the second is 2.5), so a kink is never taken for
/// curvature; the column of a map this test accepts is the Richardson
/// extrapolation `(4 D(ε/2) − D(ε)) / 3` of the central differences
/// `D(h)`, whose truncation error is `O(ε⁴)` instead of `ε² f'''/6`.
///
/// ```
/// use dualsim::diff::second_difference_is_quadratic;
/// use dualsim::math::DVec;
/// let at = |f: &dyn Fn(f64) -> f64, h: f64| DVec::from_vec(vec![f(h) + f(-h) - 2.0 * f(0.0)]);
/// let smooth = |x: f64| (1.0 + x / 1e-6).exp(); // curvature scale 1e-6
/// let e = 1e-7;
/// assert!(second_difference_is_quadratic(&at(&smooth, e / 2.0), &at(&smooth, e), &at(&smooth, 2.0 * e)));
/// let kink = |x: f64| (x - e / 3.0).abs();
/// assert!(!second_difference_is_quadratic(&at(&kink, e / 2.0), &at(&kink, e), &at(&kink, 2.0 * e)));
/// ```
pub fn second_difference_is_quadratic(
    s_half: &DVec<f64>,
    s_eps: &DVec<f64>,
    s_2eps: &DVec<f64>,
) -> bool {
    let aligned = |a: &DVec<f64>, b: &DVec<f64>| (b - a * 4.0).amax() <= 0.25 * b.amax();
    quadratic_ratio(s_half, s_eps)
        && quadratic_ratio(s_eps, s_2eps)
        && aligned(s_half, s_eps)
        && aligned(s_eps, s_2eps)
}

/// The direction of a one-sided finite difference of `p` at `world` with
/// largest step `reach` (`+1` forward, `−1` backward), or `None` when the
/// central difference stays inside the parameter's domain
/// ([`domain_room`](super::domain_room)): at μ = 0 the difference is
/// forward, at a restitution of 1 backward.
pub(crate) fn one_sided(world: &World<f64>, p: &Param, reach: f64) -> Option<f64> {
    let (below, above) = super::domain_room(world, p);
    if below >= reach && above >= reach {
        None
    } else if below < above {
        Some(1.0)
    } else {
        Some(-1.0)
    }
}

/// The one-sided second-order difference `(−3 f(0) + 4 f(sε) − f(2sε)) /
/// (2sε)` from `zero = f(0)`, `f1 = f(sε)`, `f2 = f(2sε)`, and whether the
/// map has a kink within `2ε` on that side (its second difference is a
/// slope jump, not curvature: the same test as the central differences').
pub(crate) fn one_sided_column(
    zero: &DVec<f64>,
    f1: &DVec<f64>,
    f2: &DVec<f64>,
    eps: f64,
    s: f64,
) -> (DVec<f64>, bool) {
    let column = (f1 * 4.0 - f2 - zero * 3.0) / (2.0 * s * eps);
    let second = f2 - f1 * 2.0 + zero;
    let kink = second.amax() / eps > KINK_SLOPE_JUMP * column.amax().max(1.0);
    (column, kink)
}

fn fd<B: ImplicitStep>(
    b: &B,
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    eps: f64,
    extrapolate: bool,
) -> Result<StepJacobian, DiffError> {
    let nv = world.model.nv;
    let solve = |w: &World<f64>,
                 s: &State<f64>,
                 uu: &DVec<f64>|
     -> Result<(State<f64>, B::Structure), DiffError> {
        let (y, st) = b.solve_root(&w.problem(s, uu))?;
        let v = y.rows(0, nv).into_owned();
        let q = integrate_model(&w.model, &s.q, &v, w.dt).map_err(SimError::from)?;
        Ok((State { q, v }, st))
    };
    let (nominal, st0) = solve(world, state, u)?;
    let zero = tangent(&world.model, &nominal.q, &nominal);
    let mut jac = DMat::zeros(2 * nv, params.len());
    let mut changed = Vec::new();
    let mut jumped = Vec::new();
    for (c, p) in params.iter().enumerate() {
        let run = |d: f64| -> Result<(DVec<f64>, B::Structure), DiffError> {
            let (w, s, uu) = seeded(world, state, u, &[*p], &[d])?;
            let (next, st) = solve(&w, &s, &uu)?;
            Ok((tangent(&w.model, &nominal.q, &next), st))
        };
        // Outside the domain on one side (μ = 0): one-sided differences
        // (the central ones' refinements reach 2ε).
        if let Some(side) = one_sided(world, p, 2.0 * eps) {
            let (f1, s1) = run(side * eps)?;
            let (f2, s2) = run(2.0 * side * eps)?;
            let (column, kink) = one_sided_column(&zero, &f1, &f2, eps, side);
            if kink {
                changed.push((c, NonSmooth::Kink));
            } else if !B::same_structure(&s1, &st0) || !B::same_structure(&s2, &st0) {
                changed.push((c, NonSmooth::Structure));
            }
            jac.set_column(c, &column);
            continue;
        }
        let (plus, sp) = run(eps)?;
        let (minus, sm) = run(-eps)?;
        let central = (&plus - &minus) / (2.0 * eps);
        // forward − backward one-sided slopes = s(ε)/ε, s the second difference
        let s1 = &plus + &minus - &zero * 2.0;
        // The second difference at 2ε, for the kink test and for
        // Richardson's extrapolation `(4 D(ε) − D(2ε)) / 3` where the
        // second difference grows as a smooth map's (truncation
        // `O(ε⁴)`: a barrier's curvature at the scale of ε leaves the
        // central difference a truncation error `ε² f‴/6` above `fd`'s
        // tolerance). A failed solve there counts as not smooth.
        let pair =
            |h: f64| -> Result<(DVec<f64>, DVec<f64>), DiffError> { Ok((run(h)?.0, run(-h)?.0)) };
        let mut column = central.clone();
        let candidate = s1.amax() / eps > KINK_SLOPE_JUMP * central.amax().max(1.0);
        // the solves at ±2ε: for the kink and jump tests of a candidate,
        // and for the extrapolation
        // (`None`: not needed, or a solve failed there)
        let far = if candidate || extrapolate {
            pair(2.0 * eps).ok()
        } else {
            None
        };
        let kink = if !extrapolate {
            // Plain central differences: the solve at 2ε only for a kink
            // candidate (is the jump in the map's slope, or error of the
            // solves? see `second_difference_grows`).
            candidate
                && match &far {
                    Some((p2, m2)) => second_difference_grows(&s1, &(p2 + m2 - &zero * 2.0)),
                    None => true,
                }
        } else {
            match far.clone() {
                // (only a kink candidate needs the solve at 2ε)
                None => candidate,
                Some((p2, m2)) => {
                    let s2 = &p2 + &m2 - &zero * 2.0;
                    let grows = second_difference_grows(&s1, &s2);
                    if quadratic_ratio(&s1, &s2) {
                        // curvature, not round-off, dominates within ±2ε
                        // (`s(2ε) ≈ 4 s(ε)`): extrapolate (where round-off
                        // dominates, extrapolating would amplify it by 4/3)
                        let central2 = (&p2 - &m2) / (4.0 * eps);
                        column = (&central * 4.0 - central2) / 3.0;
                    }
                    if !candidate || !grows {
                        false
                    } else {
                        // Grows: a kink within ±2ε, or a smooth map's
                        // curvature at the scale of ε (a barrier's)? The
                        // second differences at (ε/2, ε, 2ε), else one
                        // scale finer at (ε/4, ε/2, ε), must grow as a
                        // smooth map's (`second_difference_is_quadratic`:
                        // a kink's do at no scale); the column is then
                        // extrapolated from the central differences at that
                        // scale.
                        match pair(0.5 * eps) {
                            Err(_) => true,
                            Ok((ph, mh)) => {
                                let sh = &ph + &mh - &zero * 2.0;
                                let half = (&ph - &mh) / eps;
                                if second_difference_is_quadratic(&sh, &s1, &s2) {
                                    column = (&half * 4.0 - &central) / 3.0;
                                    false
                                } else {
                                    match pair(0.25 * eps) {
                                        Ok((pq, mq))
                                            if second_difference_is_quadratic(
                                                &(&pq + &mq - &zero * 2.0),
                                                &sh,
                                                &s1,
                                            ) =>
                                        {
                                            // Two Richardson levels: where
                                            // the scale of ε is not fine
                                            // enough, the `ε⁴` term of the
                                            // central differences is not
                                            // negligible either.
                                            let quarter = (&pq - &mq) / (0.5 * eps);
                                            let r_half = (&quarter * 4.0 - &half) / 3.0;
                                            let r_eps = (&half * 4.0 - &central) / 3.0;
                                            column = (r_half * 16.0 - r_eps) / 15.0;
                                            false
                                        }
                                        _ => true,
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
        // A jump of the map itself (not of its slope: the second
        // differences do not grow, one difference holds it all): the
        // column is the one-sided difference on the nominal's side.
        let jump = match &far {
            Some((p2, m2)) if candidate && !kink => {
                let samples = [
                    m2.clone(),
                    minus.clone(),
                    zero.clone(),
                    plus.clone(),
                    p2.clone(),
                ];
                smooth_side(&samples).map(|side| {
                    let (near, far) = if side > 0.0 {
                        (&plus, p2)
                    } else {
                        (&minus, m2)
                    };
                    one_sided_column(&zero, near, far, eps, side)
                })
            }
            _ => None,
        };
        match jump {
            Some((one_sided, kinked)) => {
                column = one_sided;
                if kinked {
                    changed.push((c, NonSmooth::Kink));
                } else {
                    jumped.push(c);
                }
            }
            None if kink => changed.push((c, NonSmooth::Kink)),
            None if !B::same_structure(&sp, &st0) || !B::same_structure(&sm, &st0) => {
                changed.push((c, NonSmooth::Structure))
            }
            None => {}
        }
        jac.set_column(c, &column);
    }
    Ok(StepJacobian {
        next: nominal,
        jacobian: jac,
        nonsmooth: changed.iter().map(|c| c.0).collect(),
        nonsmooth_why: changed.iter().map(|c| c.1).collect(),
        one_sided: jumped,
    })
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
