//! Mehrotra predictor–corrector on one island (see the [module docs](super)).

use super::cone::{orthant_step, soc_step};
use super::kinematics::contact_jacobian;
use super::residual::{
    evaluate, local_jacobian_with, local_residual, local_residual_fixed, Eval, Island, Law,
    UnitKind,
};
use super::robot::robot_contact_jacobian;
use super::Params;
use crate::contact::{SolveError, StepProblem};
use crate::linalg::SmallLu;
use crate::math::{DMat, DVec, Vec3};
use crate::scalar::safe_norm;
use crate::Scalar;
use nalgebra::{Matrix3, Matrix3x6, Matrix3xX, Matrix6, SMatrix, SVector};

/// The result of one island's solve.
#[derive(Clone, Debug)]
pub struct IslandSolution<T: Scalar> {
    /// Velocity of the island bodies (6 each, island order).
    pub v: DVec<T>,
    /// Contact unknowns.
    pub xs: Vec<DVec<T>>,
    /// Final evaluation (contact geometry at q⁺).
    pub eval: Eval<T>,
    /// Iterations (Newton directions computed).
    pub iterations: usize,
    /// Final equality residual (∞-norm).
    pub residual: f64,
    /// Final complementarity `max zᵢ sᵢ`.
    pub complementarity: f64,
    /// Stopped at the iteration cap ([`crate::contact::SolverParams::accept_at_cap`]).
    pub capped: bool,
}

/// Measures of a point: equality residual ‖·‖∞, deviation of the
/// complementarity rows from `κ e` (‖·‖∞), largest `z s`, and the merit
/// `‖r_κ‖²`.
struct Measures {
    eq: f64,
    comp_dev: f64,
    comp_max: f64,
    merit: f64,
}

fn measures<T: Scalar>(island: &Island<T>, ev: &Eval<T>, xs: &[DVec<T>], kappa: f64) -> Measures {
    let mut eq: f64 = 0.0;
    let mut merit = 0.0;
    for r in ev.r_dyn.iter() {
        eq = eq.max(r.re().abs());
        merit += r.re() * r.re();
    }
    let mut comp_dev: f64 = 0.0;
    let mut comp_max: f64 = 0.0;
    let k = T::from_re(kappa);
    for ((cand, x), ce) in island.contacts.iter().zip(xs).zip(&ev.contacts) {
        let r = local_residual_fixed(cand.law, x.as_slice(), &ce.y, cand.mu, k, None, false);
        let ne = cand.law.equalities();
        for (i, ri) in r.iter().take(cand.law.size()).enumerate() {
            let a = ri.re().abs();
            merit += a * a;
            if i < ne {
                eq = eq.max(a);
            } else {
                comp_dev = comp_dev.max(a);
            }
        }
        for &(z, s) in cand.law.orthant_pairs() {
            comp_max = comp_max.max(x[z].re() * x[s].re());
        }
        for &(z, s) in cand.law.soc_pairs() {
            let d: f64 = (0..3).map(|i| x[z + i].re() * x[s + i].re()).sum();
            comp_max = comp_max.max(d);
        }
    }
    Measures {
        eq,
        comp_dev,
        comp_max,
        merit,
    }
}

/// Mean complementarity `ν = (Σ zᵢsᵢ + Σ zᵀs) / degree` of `x + α dx`.
fn mean_comp<T: Scalar>(island: &Island<T>, xs: &[DVec<T>], dxs: Option<(&[DVec<T>], f64)>) -> f64 {
    let mut sum = 0.0;
    let mut deg = 0;
    for (c, cand) in island.contacts.iter().enumerate() {
        let val = |i: usize| {
            let mut v = xs[c][i].re();
            if let Some((d, a)) = dxs {
                v += a * d[c][i].re();
            }
            v
        };
        for &(z, s) in cand.law.orthant_pairs() {
            sum += val(z) * val(s);
        }
        for &(z, s) in cand.law.soc_pairs() {
            sum += (0..3).map(|i| val(z + i) * val(s + i)).sum::<f64>();
        }
        deg += cand.law.degree();
    }
    sum / deg.max(1) as f64
}

/// Largest step keeping every cone variable in its cone (may be ∞).
fn boundary_step<T: Scalar>(island: &Island<T>, xs: &[DVec<T>], dxs: &[DVec<T>]) -> f64 {
    let mut alpha = f64::INFINITY;
    for ((cand, x), d) in island.contacts.iter().zip(xs).zip(dxs) {
        for &(z, s) in cand.law.orthant_pairs() {
            alpha = alpha.min(orthant_step(x[z].re(), d[z].re()));
            alpha = alpha.min(orthant_step(x[s].re(), d[s].re()));
        }
        for &(z, s) in cand.law.soc_pairs() {
            for base in [z, s] {
                let xv = [x[base].re(), x[base + 1].re(), x[base + 2].re()];
                let dv = [d[base].re(), d[base + 1].re(), d[base + 2].re()];
                alpha = alpha.min(soc_step(xv, dv));
            }
        }
    }
    alpha
}

/// Islands whose reduced system has at least this many rows (16 bodies)
/// are factored by faer's blocked LU when the scalar is `f64`; smaller
/// ones, and every dual scalar, by nalgebra's LU (generic over `Scalar`).
pub const FAER_MIN_ROWS: usize = 96;

/// LU of the reduced system: nalgebra's (any scalar) or faer's (`f64`,
/// large islands).
enum ReducedLu<T: Scalar> {
    Generic(nalgebra::LU<T, nalgebra::Dyn, nalgebra::Dyn>),
    Faer(faer::linalg::solvers::PartialPivLu<f64>),
}

impl<T: Scalar> ReducedLu<T> {
    fn new(r: DMat<T>) -> Self {
        use std::any::Any;
        if r.nrows() >= FAER_MIN_ROWS {
            if let Some(r64) = (&r as &dyn Any).downcast_ref::<DMat<f64>>() {
                let m = faer::Mat::<f64>::from_fn(r64.nrows(), r64.ncols(), |i, j| r64[(i, j)]);
                return ReducedLu::Faer(m.partial_piv_lu());
            }
        }
        ReducedLu::Generic(r.lu())
    }

    /// Solves for every column of `rhs` (a vector or a matrix).
    fn solve<C: nalgebra::Dim>(
        &self,
        rhs: &nalgebra::OMatrix<T, nalgebra::Dyn, C>,
    ) -> Option<nalgebra::OMatrix<T, nalgebra::Dyn, C>>
    where
        nalgebra::DefaultAllocator: nalgebra::allocator::Allocator<nalgebra::Dyn, C>,
    {
        match self {
            ReducedLu::Generic(lu) => lu.solve(rhs),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::Solve;
                // T is f64 here (only f64 systems are factored by faer).
                let b =
                    faer::Mat::<f64>::from_fn(rhs.nrows(), rhs.ncols(), |i, j| rhs[(i, j)].re());
                let x = lu.solve(&b);
                if !x.col_iter().all(|c| c.iter().all(|e| e.is_finite())) {
                    return None;
                }
                Some(nalgebra::OMatrix::<T, nalgebra::Dyn, C>::from_fn_generic(
                    nalgebra::Dyn(rhs.nrows()),
                    C::from_usize(rhs.ncols()),
                    |i, j| T::from_re(x[(i, j)]),
                ))
            }
        }
    }

    /// The inverse of the reduced matrix.
    fn try_inverse(&self) -> Option<DMat<T>> {
        match self {
            ReducedLu::Generic(lu) => lu.try_inverse(),
            ReducedLu::Faer(lu) => {
                use faer::linalg::solvers::ShapeCore;
                let n = lu.nrows();
                self.solve(&DMat::<T>::identity(n, n))
            }
        }
    }
}

/// LU of `A_c` and `A_c⁻¹ C_c` of one contact (the local block of the KKT
/// reduction), fixed-size per friction law: no heap.
enum LocalLu<T: Scalar> {
    N2(SmallLu<T, 2>, SMatrix<T, 2, 3>),
    N8(SmallLu<T, 8>, SMatrix<T, 8, 3>),
    N12(SmallLu<T, 12>, SMatrix<T, 12, 3>),
}

fn local_lu<T: Scalar, const N: usize>(
    law: Law,
    x: &[T],
    mu: T,
    nt: bool,
) -> Option<(SmallLu<T, N>, SMatrix<T, N, 3>)> {
    let mut a = SMatrix::<T, N, N>::zeros();
    let mut c = SMatrix::<T, N, 3>::zeros();
    local_jacobian_with(law, x, mu, nt, |is_a, i, j, v| {
        if is_a {
            a[(i, j)] = v
        } else {
            c[(i, j)] = v
        }
    });
    let lu = SmallLu::new(&a)?;
    let ainv_c = lu.solve(&c);
    Some((lu, ainv_c))
}

macro_rules! with_local {
    ($self:expr, |$lu:ident, $ac:ident| $body:expr) => {
        match $self {
            LocalLu::N2($lu, $ac) => $body,
            LocalLu::N8($lu, $ac) => $body,
            LocalLu::N12($lu, $ac) => $body,
        }
    };
}

impl<T: Scalar> LocalLu<T> {
    fn new(law: Law, x: &[T], mu: T, nt: bool) -> Option<Self> {
        Some(match law.size() {
            2 => {
                let (l, c) = local_lu::<T, 2>(law, x, mu, nt)?;
                LocalLu::N2(l, c)
            }
            8 => {
                let (l, c) = local_lu::<T, 8>(law, x, mu, nt)?;
                LocalLu::N8(l, c)
            }
            12 => {
                let (l, c) = local_lu::<T, 12>(law, x, mu, nt)?;
                LocalLu::N12(l, c)
            }
            n => unreachable!("no friction law has {n} unknowns"),
        })
    }

    /// `A_c⁻¹ r`.
    fn solve_vec(&self, r: &DVec<T>) -> Option<DVec<T>> {
        with_local!(self, |lu, _ac| {
            let b = SVector::from_fn(|i, _| r[i]);
            let x = lu.solve(&b);
            if !x.iter().all(|e| e.re().is_finite()) {
                return None;
            }
            Some(DVec::from_column_slice(x.as_slice()))
        })
    }

    /// `A_c⁻¹ B` for every column of `B`.
    fn solve_mat(&self, b: &DMat<T>) -> Option<DMat<T>> {
        let mut out = DMat::zeros(b.nrows(), b.ncols());
        for j in 0..b.ncols() {
            let col = self.solve_vec(&b.column(j).into_owned())?;
            out.set_column(j, &col);
        }
        Some(out)
    }

    /// `A_c⁻¹ C_c dy`.
    fn ainv_c_times(&self, dy: &Vec3<T>) -> DVec<T> {
        with_local!(self, |_lu, ac| DVec::from_column_slice(
            (ac * dy).as_slice()
        ))
    }

    /// `A_c⁻¹ C_c` as a dynamic matrix.
    fn ainv_c(&self) -> DMat<T> {
        with_local!(self, |_lu, ac| DMat::from_column_slice(
            ac.nrows(),
            3,
            ac.as_slice()
        ))
    }

    /// `E A_c⁻¹ C_c` (3 × 3): the impulse response to `dy`.
    fn n3(&self, law: Law) -> Matrix3<T> {
        with_local!(self, |_lu, ac| {
            let mut m = Matrix3::zeros();
            for j in 0..3 {
                let col = DVec::from_column_slice(ac.column(j).as_slice());
                m.set_column(j, &law.impulse(&col));
            }
            m
        })
    }
}

/// Factorized Newton system of one iterate: the reduced matrix in `v⁺`
/// and the per-contact blocks needed to recover `dx_c`.
struct Factored<T: Scalar> {
    reduced: ReducedLu<T>,
    /// LU of each `A_c`, with `A_c⁻¹ C_c`.
    local: Vec<LocalLu<T>>,
    /// `(island unit, K block)` of each contact, `K = ∂y/∂v⁺`.
    k_blocks: Vec<Vec<(usize, Matrix3xX<T>)>>,
}

/// How the contact blocks `K = ∂y/∂v⁺` and `G = ∂(Wᵀf)/∂v⁺` of the
/// Newton matrix are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Linearization {
    /// Closed form from the impulse map at the iterate: `K = diag(h, 1, 1) W`
    /// (the normal row is exact, `W`'s normal row being `∂φ/∂v⁺ / h`; the
    /// tangent rows leave out the motion of the contact frame and lever
    /// arms with `q⁺`, which is O(h)) and `G = 0`. No dual numbers: the
    /// Newton iterations converge to the same root, at a linear rate of
    /// order `h ‖f‖ ‖r‖ / ‖M‖` once close.
    ClosedForm,
    /// Exact `K` and `G` by one forward-mode dual evaluation of the contact
    /// kinematics: the Jacobian the implicit-function derivatives and the
    /// polishing steps of a dual scalar need.
    Exact,
}

fn factor<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ev: &Eval<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    nt: bool,
    lin: Linearization,
) -> Result<Factored<T>, SolveError> {
    let mut r = DMat::zeros(island.dim(), island.dim());
    for (u, j) in island.units.iter().zip(&ev.jac) {
        r.view_mut((u.offset, u.offset), (u.size(), u.size()))
            .copy_from(j);
    }
    let mut local = Vec::with_capacity(xs.len());
    let mut k_blocks = Vec::with_capacity(xs.len());
    let lift = |m: &DMat<f64>| m.map(T::from_re);
    for ((cand, x), ce) in island.contacts.iter().zip(xs).zip(&ev.contacts) {
        let lu = LocalLu::new(cand.law, x.as_slice(), cand.mu, nt)
            .ok_or(SolveError::Singular("contact block"))?;
        let n3 = lu.n3(cand.law);
        // Exact primal K and geometric stiffness G of the contact.
        let f = cand.law.impulse(x).map(|e| e.re());
        let unit_v = |li: usize| -> Vec<f64> {
            let u = &island.units[li];
            (0..u.size()).map(|k| v[u.offset + k].re()).collect()
        };
        let la = ce.blocks[0].0;
        // A conic-program contact (`bilevel`) has a gap whose gradient is
        // not the rigid motion of its witness points: always exact.
        if lin == Linearization::ClosedForm && cand.parts.is_none() {
            let h = p.h;
            let ks: Vec<(usize, Matrix3xX<T>)> = ce
                .blocks
                .iter()
                .map(|(u, w)| {
                    let mut k = Matrix3xX::from_fn(w.ncols(), |i, j| T::from_re(w[(i, j)].re()));
                    let hr = T::from_re(h.re());
                    for j in 0..k.ncols() {
                        k[(0, j)] *= hr;
                    }
                    (*u, k)
                })
                .collect();
            for (lw, w) in ce.blocks.iter() {
                let wn = w.map(|e| T::from_re(e.re())).transpose() * n3;
                let uw = &island.units[*lw];
                for (lk, k) in ks.iter() {
                    let uk = &island.units[*lk];
                    let add: DMat<T> = &wn * k;
                    let mut blk = r.view_mut((uw.offset, uk.offset), (uw.size(), uk.size()));
                    blk += add;
                }
            }
            local.push(lu);
            k_blocks.push(ks);
            continue;
        }
        // (unit, K) per moving side and G[i][j] = ∂(W_iᵀ f)/∂v_j.
        let (ks, g): (Vec<(usize, Matrix3xX<T>)>, Vec<Vec<DMat<f64>>>) = match &island.units[la]
            .kind
        {
            UnitKind::Robot(ru) => {
                let lb = ce.blocks.get(1).map(|b| b.0);
                let vb: [f64; 6] = match lb {
                    Some(lb) => {
                        let o = island.units[lb].offset;
                        core::array::from_fn(|k| v[o + k].re())
                    }
                    None => [0.0; 6],
                };
                let (k, g) = robot_contact_jacobian(p, ru, cand, &unit_v(la), &vb, &f)?;
                let units = std::iter::once(la).chain(lb);
                (
                    units
                        .zip(k.iter())
                        .map(|(u, k)| (u, k.map(T::from_re)))
                        .collect(),
                    g,
                )
            }
            UnitKind::Body(_) => {
                let lb = ce.blocks.get(1).map(|b| b.0);
                let re6 = |li: usize| -> [f64; 6] {
                    let o = island.units[li].offset;
                    core::array::from_fn(|k| v[o + k].re())
                };
                let va = re6(la);
                let vb = lb.map(re6).unwrap_or([0.0; 6]);
                let (ka, kb, g) = contact_jacobian(p, cand, &va, &vb, &f)?;
                let dynk = |m: &Matrix3x6<f64>| Matrix3xX::from_fn(6, |i, j| T::from_re(m[(i, j)]));
                let dyng = |m: &Matrix6<f64>| DMat::from_fn(6, 6, |i, j| m[(i, j)]);
                let mut ks = vec![(la, dynk(&ka))];
                if let Some(lb) = lb {
                    ks.push((lb, dynk(&kb)));
                }
                let g = g.iter().map(|row| row.iter().map(dyng).collect()).collect();
                (ks, g)
            }
        };
        for (i, (lw, w)) in ce.blocks.iter().enumerate() {
            let wn = w.transpose() * n3;
            let uw = &island.units[*lw];
            for (j, (lk, k)) in ks.iter().enumerate() {
                let uk = &island.units[*lk];
                let add: DMat<T> = &wn * k - lift(&g[i][j]);
                let mut blk = r.view_mut((uw.offset, uk.offset), (uw.size(), uk.size()));
                blk += add;
            }
        }
        local.push(lu);
        k_blocks.push(ks);
    }
    Ok(Factored {
        reduced: ReducedLu::new(r),
        local,
        k_blocks,
    })
}

/// Newton direction for the local residuals `rc` (dynamics residual from
/// `ev`): `(H + Σ Wᵀ E A⁻¹ C K) dv = −r_d − Σ Wᵀ E A⁻¹ r_c`,
/// `dx_c = −A_c⁻¹ (r_c + C_c K_c dv)`.
fn direction<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    f: &Factored<T>,
    rc: &[DVec<T>],
) -> Result<(DVec<T>, Vec<DVec<T>>), SolveError> {
    let mut rhs = -ev.r_dyn.clone();
    let mut ainv_r = Vec::with_capacity(rc.len());
    for (c, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
        let u = f.local[c]
            .solve_vec(&rc[c])
            .ok_or(SolveError::Singular("contact block"))?;
        let eu = cand.law.impulse(&u);
        for (lw, w) in &ce.blocks {
            let un = &island.units[*lw];
            let mut seg = rhs.rows_mut(un.offset, un.size());
            seg -= w.transpose() * eu;
        }
        ainv_r.push(u);
    }
    let dv = f
        .reduced
        .solve(&rhs)
        .ok_or(SolveError::Singular("reduced system"))?;
    let mut dxs = Vec::with_capacity(rc.len());
    for c in 0..ev.contacts.len() {
        let mut dy = Vec3::zeros();
        for (lk, k) in &f.k_blocks[c] {
            let un = &island.units[*lk];
            dy += k * dv.rows(un.offset, un.size());
        }
        let corr = f.local[c].ainv_c_times(&dy);
        dxs.push(-(&ainv_r[c] + corr));
    }
    Ok((dv, dxs))
}

fn local_residuals<T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    xs: &[DVec<T>],
    kappa: T,
    corrector: Option<&[DVec<T>]>,
    nt: bool,
) -> Vec<DVec<T>> {
    island
        .contacts
        .iter()
        .zip(xs)
        .zip(&ev.contacts)
        .enumerate()
        .map(|(c, ((cand, x), ce))| {
            local_residual(
                cand.law,
                x,
                &ce.y,
                cand.mu,
                kappa,
                corrector.map(|d| &d[c]),
                nt,
            )
        })
        .collect()
}

/// Solves one island from the initial velocity `v0` (island layout)
/// and, where given, initial contact unknowns `x0` (e.g. the solution of
/// a previous candidate round; they must be interior).
pub fn solve_island<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v0: DVec<T>,
    x0: Vec<Option<DVec<T>>>,
    params: &Params,
) -> Result<IslandSolution<T>, SolveError> {
    let sp = p.params;
    let rho = sp.rho;
    let mut v = v0;
    let warm: Vec<bool> = x0.iter().map(|x| x.is_some()).collect();
    let mut xs: Vec<DVec<T>> = island
        .contacts
        .iter()
        .zip(x0)
        .map(|(c, x)| x.unwrap_or_else(|| c.law.initial(params.initial_scale)))
        .collect();
    // Start on the linear equalities where the cones allow it: the gap
    // slack at the gap of the initial velocity (when larger than the
    // scale), β₀ = μγ, η_t = v_t with ψ = ‖v_t‖ + scale (exact cone),
    // ηₖ = ψ + dₖᵀv_t with ψ = ‖v_t‖₁ + scale and s_ψ = μγ − Σβₖ > 0
    // (pyramid).
    let mut ev = evaluate(p, island, &v, &xs)?;
    let scale = T::from_re(params.initial_scale);
    for (((x, ce), cand), _) in xs
        .iter_mut()
        .zip(&ev.contacts)
        .zip(&island.contacts)
        .zip(&warm)
        .filter(|w| !*w.1)
    {
        let y = ce.y;
        if y[0].re() > x[1].re() {
            x[1] = y[0];
        }
        match cand.law {
            Law::Frictionless => {}
            Law::Exact => {
                x[2] = cand.mu * x[0];
                x[6] = y[1];
                x[7] = y[2];
                x[5] = safe_norm(&Vec3::new(y[1], y[2], T::zero())) + scale;
            }
            Law::Pyramid => {
                let psi = y[1].abs() + y[2].abs() + scale;
                let beta = cand.mu * x[0] * T::from_re(0.125);
                for k in 0..4 {
                    x[2 + k] = beta;
                }
                x[6] = psi + y[1];
                x[7] = psi - y[1];
                x[8] = psi + y[2];
                x[9] = psi - y[2];
                x[10] = psi;
                x[11] = cand.mu * x[0] * T::from_re(0.5);
            }
        }
    }
    ev = evaluate(p, island, &v, &xs)?;
    let mut iter = 0;
    // The contact blocks of the Newton matrix: closed form while the
    // iteration makes progress, exact once a step is short (see
    // `Params::exact_jacobian_below`). Decided on primal values, so a dual
    // scalar follows the f64 iterates exactly.
    let mut short_steps = 0;
    let mut lin = if params.exact_jacobian_below > 1.0 {
        Linearization::Exact
    } else {
        Linearization::ClosedForm
    };
    loop {
        let m = measures(island, &ev, &xs, rho);
        if m.eq <= sp.tolerance && m.comp_dev <= params.complementarity_tolerance * rho {
            // Polish: full Newton steps on r_ρ (unscaled cone rows), the
            // same in every scalar: at least `polish_steps`, with the loop's
            // linearization, until the residual is at round-off
            // (`1e-6 · tolerance`; finite differences of a step divide the
            // solution's error by their step), at most four more, the last
            // two exact (a closed-form matrix contracts linearly).
            let tight = sp.tolerance * 1e-6;
            let max_steps = params.polish_steps + 4;
            let mut k = 0;
            while k < max_steps {
                if k >= params.polish_steps {
                    let mm = measures(island, &ev, &xs, rho);
                    if mm.eq <= tight && mm.comp_dev <= tight {
                        break;
                    }
                }
                let l = if k + 2 >= max_steps {
                    Linearization::Exact
                } else {
                    lin
                };
                k += 1;
                let fac = factor(p, island, &ev, &v, &xs, false, l)?;
                let r = local_residuals(island, &ev, &xs, T::from_re(rho), None, false);
                let (dv, dxs) = direction(island, &ev, &fac, &r)?;
                if boundary_step(island, &xs, &dxs) <= 1.0 {
                    break;
                }
                let v_t = &v + &dv;
                let xs_t: Vec<DVec<T>> = xs.iter().zip(&dxs).map(|(x, d)| x + d).collect();
                let Ok(ev_t) = evaluate(p, island, &v_t, &xs_t) else {
                    break;
                };
                v = v_t;
                xs = xs_t;
                ev = ev_t;
            }
            // Then, in a dual scalar, one Newton step per derivative order
            // with the exact Jacobian that moves only the derivative parts
            // (the primal stays where the f64 solve puts it): at the root,
            // each makes one more derivative order exact.
            for _ in 0..T::DERIVATIVE_ORDER {
                let fac = factor(p, island, &ev, &v, &xs, false, Linearization::Exact)?;
                let r = local_residuals(island, &ev, &xs, T::from_re(rho), None, false);
                let (dv, dxs) = direction(island, &ev, &fac, &r)?;
                let tangent = |d: T| d - T::from_re(d.re());
                let v_t = &v + dv.map(tangent);
                let xs_t: Vec<DVec<T>> = xs
                    .iter()
                    .zip(&dxs)
                    .map(|(x, d)| x + d.map(tangent))
                    .collect();
                let Ok(ev_t) = evaluate(p, island, &v_t, &xs_t) else {
                    break;
                };
                v = v_t;
                xs = xs_t;
                ev = ev_t;
            }
            let m = measures(island, &ev, &xs, rho);
            return Ok(IslandSolution {
                v,
                xs,
                eval: ev,
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: false,
            });
        }
        if iter >= sp.max_iterations && sp.accept_at_cap {
            return Ok(IslandSolution {
                v,
                xs,
                eval: ev,
                iterations: iter,
                residual: m.eq,
                complementarity: m.comp_max,
                capped: true,
            });
        }
        if iter >= sp.max_iterations {
            return Err(SolveError::MaxIterations {
                iters: iter,
                residual: m.eq,
                complementarity: m.comp_max,
            });
        }
        iter += 1;
        let nt = params.nesterov_todd;
        let fac = factor(p, island, &ev, &v, &xs, nt, lin)?;
        // Predictor (affine scaling, κ = 0).
        let r_aff = local_residuals(island, &ev, &xs, T::zero(), None, nt);
        let (_, dx_aff) = direction(island, &ev, &fac, &r_aff)?;
        let alpha_aff = boundary_step(island, &xs, &dx_aff).min(1.0);
        let nu = mean_comp(island, &xs, None);
        let nu_aff = mean_comp(island, &xs, Some((&dx_aff, alpha_aff)));
        let sigma = if nu > 0.0 {
            (nu_aff / nu).clamp(0.0, 1.0).powi(3)
        } else {
            0.0
        };
        let kappa = (sigma * nu).max(rho);
        // Corrector (centering + second-order term). Once the target has
        // reached ρ the affine term `dz ∘ ds` is of the order of ρ itself
        // and would keep the iterate off the central point, so the final
        // phase takes pure Newton steps on r_ρ.
        let second_order = if sigma * nu > rho {
            Some(dx_aff.as_slice())
        } else {
            None
        };
        let merit0 = measures(island, &ev, &xs, kappa).merit;
        // Backtracking line search on ‖r_κ‖² along the corrector; when it
        // finds no sufficient decrease (the second-order term can make the
        // corrector an ascent direction far from the solution), along the
        // pure Newton direction of r_κ; failing that, the shortest trial
        // of the Newton direction is taken.
        // (second-order term, Nesterov–Todd scaled): the corrector, then the
        // Newton direction, then (when NT scaling is on) the unscaled
        // Newton direction, which is a descent direction of ‖r_κ‖².
        let mut candidates_dirs = vec![(second_order, nt)];
        if second_order.is_some() {
            candidates_dirs.push((None, nt));
        }
        if nt {
            candidates_dirs.push((None, false));
        }
        let mut step_taken = None;
        let mut fallback = None;
        let mut accepted_alpha = 0.0;
        let mut plain_fac = None;
        for (so, scaled) in candidates_dirs.into_iter() {
            let r_dir = local_residuals(island, &ev, &xs, T::from_re(kappa), so, scaled);
            let f = if scaled == nt {
                &fac
            } else {
                plain_fac.get_or_insert(factor(p, island, &ev, &v, &xs, scaled, lin)?)
            };
            let (dv, dxs) = direction(island, &ev, f, &r_dir)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &xs, &dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                let a = T::from_re(alpha);
                let v_t = &v + &dv * a;
                let xs_t: Vec<DVec<T>> = xs.iter().zip(&dxs).map(|(x, d)| x + d * a).collect();
                if let Ok(ev_t) = evaluate(p, island, &v_t, &xs_t) {
                    let merit = measures(island, &ev_t, &xs_t, kappa).merit;
                    if merit <= (1.0 - params.armijo * alpha) * merit0 {
                        accepted_alpha = alpha;
                        step_taken = Some((v_t, xs_t, ev_t));
                        break;
                    }
                    if fallback.as_ref().is_none_or(|(m, _)| merit < *m) {
                        fallback = Some((merit, (v_t, xs_t, ev_t)));
                    }
                }
                alpha *= params.backtrack_factor;
            }
            if step_taken.is_some() {
                break;
            }
        }
        // One short step is ordinary interior-point progress (the first
        // iterations of a resting contact take one); two in a row mean the
        // closed-form blocks may be stalling the iterate.
        if accepted_alpha < params.exact_jacobian_below {
            short_steps += 1;
            if short_steps >= 2 {
                lin = Linearization::Exact;
            }
        } else {
            short_steps = 0;
        }
        if accepted_alpha < params.recenter_below {
            // Blocked against a cone boundary (a badly centred pair): take
            // a pure centering step towards κ = ν instead, accepted without
            // the merit test, so the next iterations can make progress.
            let kc = T::from_re(nu.max(rho));
            let r_c = local_residuals(island, &ev, &xs, kc, None, nt);
            let (dv, dxs) = direction(island, &ev, &fac, &r_c)?;
            let mut alpha =
                (params.fraction_to_boundary * boundary_step(island, &xs, &dxs)).min(1.0);
            for _ in 0..=params.max_backtracks {
                let a = T::from_re(alpha);
                let v_t = &v + &dv * a;
                let xs_t: Vec<DVec<T>> = xs.iter().zip(&dxs).map(|(x, d)| x + d * a).collect();
                if let Ok(ev_t) = evaluate(p, island, &v_t, &xs_t) {
                    step_taken = Some((v_t, xs_t, ev_t));
                    break;
                }
                alpha *= params.backtrack_factor;
            }
        }
        let Some((v_n, xs_n, ev_n)) = step_taken.or(fallback.map(|f| f.1)) else {
            // Every trial point failed to evaluate.
            return Err(SolveError::Singular(
                "line search: no trial point could be evaluated",
            ));
        };
        v = v_n;
        xs = xs_n;
        ev = ev_n;
    }
}

/// The exact Jacobian `∂r_ρ/∂(v⁺, x)` of one island's residual at a point,
/// factorized by the KKT reduction of the [module docs](super) (the same
/// reduced system the solver's final Newton steps use, with unscaled
/// cone rows), for solves with many right-hand sides: the
/// implicit-function derivatives of a step.
///
/// With `J = [H − G, −Σ WᵀE; C K, A]`, a solve `J [X_v; X_c] = [B_d; B_c]`
/// is
///
/// ```text
/// (H − G + Σ_c W_cᵀ E A_c⁻¹ C_c K_c) X_v = B_d + Σ_c W_cᵀ E A_c⁻¹ B_c,
/// X_c = A_c⁻¹ (B_c − C_c K_c X_v),
/// ```
///
/// one LU of the reduced `6 n_b × 6 n_b` matrix and one of each contact's
/// `A_c`, shared by every column.
pub struct IslandJacobian {
    ev: Eval<f64>,
    fac: Factored<f64>,
}

impl IslandJacobian {
    /// Evaluates and factors the island's Jacobian at velocity `v` (island
    /// layout) and contact unknowns `xs`.
    pub fn new(
        p: &StepProblem<'_, f64>,
        island: &Island<f64>,
        v: &DVec<f64>,
        xs: &[DVec<f64>],
    ) -> Result<Self, SolveError> {
        let ev = evaluate(p, island, v, xs)?;
        let fac = factor(p, island, &ev, v, xs, false, Linearization::Exact)?;
        Ok(IslandJacobian { ev, fac })
    }

    /// Solves `J [X_v; X_c] = [B_d; B_c]` for every column at once: `bd`
    /// holds the dynamics rows (island layout, [`Island::dim`] rows), `bc[c]`
    /// contact `c`'s rows (`law.size()` each). Returns `X_v` and, when
    /// `contacts` is set, `X_c` in the same layout (`X_c` costs one more
    /// pass over the contacts; the implicit-function derivative of a step
    /// needs only `X_v`).
    ///
    /// Columns where `B_c` is zero (e.g. derivatives with respect to
    /// velocities and controls, or to the configuration of bodies not in
    /// the contact) skip the contact's `A_c⁻¹ B_c`. With more columns than
    /// the reduced system has rows, `X_v` is `R⁻¹` (from the LU factors)
    /// times the reduced right-hand side, one matrix product, instead of a
    /// pair of triangular solves per column.
    pub fn solve(
        &self,
        island: &Island<f64>,
        bd: &DMat<f64>,
        bc: &[DMat<f64>],
        contacts: bool,
    ) -> Result<(DMat<f64>, Option<Vec<DMat<f64>>>), SolveError> {
        let m = bd.ncols();
        let singular = || SolveError::Singular("contact block");
        let mut rhs = bd.clone();
        // A_c⁻¹ B_c on the non-zero columns of B_c: (columns, values).
        let mut ainv_b = Vec::with_capacity(bc.len());
        for (c, (cand, ce)) in island.contacts.iter().zip(&self.ev.contacts).enumerate() {
            let cols: Vec<usize> = (0..m)
                .filter(|&j| bc[c].column(j).iter().any(|x| *x != 0.0))
                .collect();
            let b = DMat::from_fn(bc[c].nrows(), cols.len(), |i, j| bc[c][(i, cols[j])]);
            let u = self.fac.local[c].solve_mat(&b).ok_or_else(singular)?;
            let eu: DMat<f64> = cand.law.impulse_map::<f64>() * &u;
            for (lw, w) in &ce.blocks {
                let un = &island.units[*lw];
                let add: DMat<f64> = DMat::from_fn(un.size(), 3, |i, j| w[(j, i)]) * &eu;
                for (jj, &j) in cols.iter().enumerate() {
                    let mut seg = rhs.view_mut((un.offset, j), (un.size(), 1));
                    seg += add.column(jj);
                }
            }
            ainv_b.push((cols, u));
        }
        let xv = if m > rhs.nrows() {
            let inv = self
                .fac
                .reduced
                .try_inverse()
                .ok_or(SolveError::Singular("reduced system"))?;
            inv * rhs
        } else {
            self.fac
                .reduced
                .solve(&rhs)
                .ok_or(SolveError::Singular("reduced system"))?
        };
        if !contacts {
            return Ok((xv, None));
        }
        let mut xc = Vec::with_capacity(bc.len());
        for (c, (cols, u)) in ainv_b.into_iter().enumerate() {
            let mut dy = DMat::zeros(3, m);
            for (lk, k) in &self.fac.k_blocks[c] {
                let un = &island.units[*lk];
                let kd = DMat::from_fn(3, un.size(), |i, j| k[(i, j)]);
                dy += kd * xv.rows(un.offset, un.size());
            }
            let mut x = -(self.fac.local[c].ainv_c() * dy);
            for (jj, &j) in cols.iter().enumerate() {
                let mut col = x.column_mut(j);
                col += u.column(jj);
            }
            xc.push(x);
        }
        Ok((xv, Some(xc)))
    }
}
