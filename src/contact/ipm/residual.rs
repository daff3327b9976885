//! The step residual of one island: dynamics rows, per-contact equality
//! rows and relaxed complementarity rows, with the blocks of its Jacobian.
//!
//! See the [module docs](super) for the maths. Contact `c` has local
//! unknowns `x_c` (layout per [`Law`]) and sees the island velocity only
//! through its contact-space quantities `y_c = (φ_c(q⁺), v_t1, v_t2)`
//! (see [`super::kinematics`]); the impulse it
//! applies is `f_c = E x_c = (γ, b₁, b₂)` in the contact frame, mapped to
//! generalized impulses by `W_cᵀ`.

use super::cone::{arrow, jordan, nt_scaling};
use super::kinematics::{contact_kinematics, Other};
use super::robot::{candidate_kinematics, robot_dynamics, RobotUnit};
use crate::collision::Contact;
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::{
    body_residual, orientation, position, rotational_jacobian, world_inertia, DynamicsError,
};
use crate::math::{DMat, DVec, Pose, Vec3};
use crate::Scalar;
use nalgebra::{Matrix3x6, Matrix3xX, Matrix6, Vector6};

/// A contact's friction law and with it the layout of its local unknowns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Law {
    /// `x = (γ, s)`: normal impulse and gap slack only (μ = 0).
    Frictionless,
    /// `x = (γ, s, β₀, b₁, b₂, ψ, η₁, η₂)`: exact Coulomb cone,
    /// `β = (β₀, b) ∈ Q³`, `η = (ψ, η_t) ∈ Q³`.
    Exact,
    /// `x = (γ, s, β₁..β₄, η₁..η₄, ψ, s_ψ)`: four-sided pyramid.
    Pyramid,
}

impl Law {
    /// Number of local unknowns (= local residual rows).
    pub fn size(&self) -> usize {
        match self {
            Law::Frictionless => 2,
            Law::Exact => 8,
            Law::Pyramid => 12,
        }
    }
    /// Number of equality rows (the rest are complementarity rows).
    pub fn equalities(&self) -> usize {
        match self {
            Law::Frictionless => 1,
            Law::Exact => 4,
            Law::Pyramid => 6,
        }
    }
    /// Orthant pairs `(z, s)` as indices into `x`.
    pub fn orthant_pairs(&self) -> &'static [(usize, usize)] {
        match self {
            Law::Frictionless | Law::Exact => &[(0, 1)],
            Law::Pyramid => &[(0, 1), (2, 6), (3, 7), (4, 8), (5, 9), (10, 11)],
        }
    }
    /// Second-order cone pairs `(z, s)`: first index of each 3-block.
    pub fn soc_pairs(&self) -> &'static [(usize, usize)] {
        match self {
            Law::Exact => &[(2, 5)],
            _ => &[],
        }
    }
    /// Number of complementarity blocks (the barrier degree).
    pub fn degree(&self) -> usize {
        self.orthant_pairs().len() + self.soc_pairs().len()
    }
    /// The impulse in the contact frame, `E x = (γ, b₁, b₂)`.
    pub fn impulse<T: Scalar>(&self, x: &DVec<T>) -> Vec3<T> {
        match self {
            Law::Frictionless => Vec3::new(x[0], T::zero(), T::zero()),
            Law::Exact => Vec3::new(x[0], x[3], x[4]),
            Law::Pyramid => Vec3::new(x[0], x[2] - x[3], x[4] - x[5]),
        }
    }
    /// `E` as a `3 × n` matrix.
    pub fn impulse_map<T: Scalar>(&self) -> DMat<T> {
        let mut e = DMat::zeros(3, self.size());
        e[(0, 0)] = T::one();
        match self {
            Law::Frictionless => {}
            Law::Exact => {
                e[(1, 3)] = T::one();
                e[(2, 4)] = T::one();
            }
            Law::Pyramid => {
                e[(1, 2)] = T::one();
                e[(1, 3)] = -T::one();
                e[(2, 4)] = T::one();
                e[(2, 5)] = -T::one();
            }
        }
        e
    }
    /// Initial point: every cone variable at `scale · e` (`e = 1` for the
    /// orthant, `(1, 0, 0)` for `Q³`).
    pub fn initial<T: Scalar>(&self, scale: f64) -> DVec<T> {
        let mut x = DVec::zeros(self.size());
        for &(z, s) in self.orthant_pairs() {
            x[z] = T::from_re(scale);
            x[s] = T::from_re(scale);
        }
        for &(z, s) in self.soc_pairs() {
            x[z] = T::from_re(scale);
            x[s] = T::from_re(scale);
        }
        x
    }
}

/// Local residual of one contact: equality rows, then complementarity rows
/// `z ∘ s − κ e` (plus the Mehrotra second-order term `dz ∘ ds` of the
/// affine direction when `corrector` is given).
///
/// With `nt = true` the second-order-cone rows are written in
/// Nesterov–Todd scaled form, `λ ∘ λ − κ e (+ (W ds) ∘ (W⁻¹ dz))` with
/// `λ = W s = W⁻¹ z`: the right-hand side of the scaled Newton system used
/// for search directions (the merit and the convergence test use the
/// unscaled rows, which vanish at the same points).
pub fn local_residual<T: Scalar>(
    law: Law,
    x: &DVec<T>,
    y: &Vec3<T>,
    mu: T,
    kappa: T,
    corrector: Option<&DVec<T>>,
    nt: bool,
) -> DVec<T> {
    let r = local_residual_fixed(
        law,
        x.as_slice(),
        y,
        mu,
        kappa,
        corrector.map(|d| d.as_slice()),
        nt,
    );
    DVec::from_column_slice(&r.as_slice()[..law.size()])
}

/// Largest number of local unknowns of a contact (the pyramid's 12).
pub const MAX_LOCAL: usize = 12;

/// [`local_residual`] on the stack: rows `0..law.size()` of the result
/// (the rest are zero).
pub(crate) fn local_residual_fixed<T: Scalar>(
    law: Law,
    x: &[T],
    y: &Vec3<T>,
    mu: T,
    kappa: T,
    corrector: Option<&[T]>,
    nt: bool,
) -> nalgebra::SVector<T, MAX_LOCAL> {
    let mut r = nalgebra::SVector::<T, MAX_LOCAL>::zeros();
    r[0] = x[1] - y[0];
    match law {
        Law::Frictionless => {}
        Law::Exact => {
            r[1] = x[2] - mu * x[0];
            r[2] = x[6] - y[1];
            r[3] = x[7] - y[2];
        }
        Law::Pyramid => {
            let psi = x[10];
            r[1] = x[6] - psi - y[1];
            r[2] = x[7] - psi + y[1];
            r[3] = x[8] - psi - y[2];
            r[4] = x[9] - psi + y[2];
            r[5] = x[11] - mu * x[0] + x[2] + x[3] + x[4] + x[5];
        }
    }
    let mut row = law.equalities();
    for &(z, s) in law.orthant_pairs() {
        let mut c = x[z] * x[s] - kappa;
        if let Some(d) = corrector {
            c += d[z] * d[s];
        }
        r[row] = c;
        row += 1;
    }
    for &(z, s) in law.soc_pairs() {
        let zz = Vec3::new(x[z], x[z + 1], x[z + 2]);
        let ss = Vec3::new(x[s], x[s + 1], x[s + 2]);
        let scaling = if nt { Some(nt_scaling(&zz, &ss)) } else { None };
        let mut c = match &scaling {
            Some((_, _, lambda)) => jordan(lambda, lambda),
            None => jordan(&zz, &ss),
        };
        c[0] -= kappa;
        if let Some(d) = corrector {
            let dz = Vec3::new(d[z], d[z + 1], d[z + 2]);
            let ds = Vec3::new(d[s], d[s + 1], d[s + 2]);
            c += match &scaling {
                Some((w, winv, _)) => jordan(&(winv * dz), &(w * ds)),
                None => jordan(&dz, &ds),
            };
        }
        r.fixed_rows_mut::<3>(row).copy_from(&c);
        row += 3;
    }
    r
}

/// Jacobians of [`local_residual`]: `A = ∂r/∂x` (`n × n`) and
/// `C = ∂r/∂y` (`n × 3`). With `nt = true` the cone rows are the
/// Nesterov–Todd scaled linearization `Arw(λ) (W⁻¹ dz + W ds)`.
pub fn local_jacobian<T: Scalar>(law: Law, x: &DVec<T>, mu: T, nt: bool) -> (DMat<T>, DMat<T>) {
    let n = law.size();
    let mut a = DMat::zeros(n, n);
    let mut c = DMat::zeros(n, 3);
    local_jacobian_with(law, x.as_slice(), mu, nt, |is_a, i, j, v| {
        if is_a {
            a[(i, j)] = v
        } else {
            c[(i, j)] = v
        }
    });
    (a, c)
}

/// [`local_jacobian`] into any storage: `set(true, i, j, v)` writes
/// `A[(i, j)] = v`, `set(false, i, j, v)` writes `C[(i, j)] = v`; entries
/// not written are zero.
pub(crate) fn local_jacobian_with<T: Scalar>(
    law: Law,
    x: &[T],
    mu: T,
    nt: bool,
    mut set: impl FnMut(bool, usize, usize, T),
) {
    let one = T::one();
    set(true, 0, 1, one);
    set(false, 0, 0, -one);
    match law {
        Law::Frictionless => {}
        Law::Exact => {
            set(true, 1, 2, one);
            set(true, 1, 0, -mu);
            set(true, 2, 6, one);
            set(false, 2, 1, -one);
            set(true, 3, 7, one);
            set(false, 3, 2, -one);
        }
        Law::Pyramid => {
            for k in 0..4 {
                set(true, 1 + k, 6 + k, one);
                set(true, 1 + k, 10, -one);
            }
            set(false, 1, 1, -one);
            set(false, 2, 1, one);
            set(false, 3, 2, -one);
            set(false, 4, 2, one);
            set(true, 5, 11, one);
            set(true, 5, 0, -mu);
            for k in 2..6 {
                set(true, 5, k, one);
            }
        }
    }
    let mut row = law.equalities();
    for &(z, s) in law.orthant_pairs() {
        set(true, row, z, x[s]);
        set(true, row, s, x[z]);
        row += 1;
    }
    for &(z, s) in law.soc_pairs() {
        let zz = Vec3::new(x[z], x[z + 1], x[z + 2]);
        let ss = Vec3::new(x[s], x[s + 1], x[s + 2]);
        let (bz, bs) = if nt {
            let (w, winv, lambda) = nt_scaling(&zz, &ss);
            let al = arrow(&lambda);
            (al * winv, al * w)
        } else {
            (arrow(&ss), arrow(&zz))
        };
        for i in 0..3 {
            for j in 0..3 {
                set(true, row + i, z + j, bz[(i, j)]);
                set(true, row + i, s + j, bs[(i, j)]);
            }
        }
        row += 3;
    }
}

/// The other side of a contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partner {
    /// Another body (global index).
    Body(usize),
    /// A static geometry (index into `statics`).
    Static(usize),
}

/// A contact candidate: a feature of a pair of shapes that may touch
/// during the step.
#[derive(Clone, Debug)]
pub struct Candidate<T: Scalar> {
    /// First body (global index): a free body, or the robot link that
    /// carries link shape `link`.
    pub a: usize,
    /// `None`: the shape of free body `a` (`StepProblem::shapes`);
    /// `Some(k)`: link shape `k` (`StepProblem::link_shapes`, on body `a`).
    pub link: Option<usize>,
    /// The other side.
    pub b: Partner,
    /// Index of the contact in `collision::pair_contacts`' list for this pair.
    pub feature: usize,
    /// Combined friction coefficient.
    pub mu: T,
    /// Friction law.
    pub law: Law,
    /// World axis the tangent frame is built from, fixed for the step
    /// (`collision::frame::tangent_basis_from`).
    pub axis: usize,
    /// `None`: the closed-form pair `feature`; `Some(parts)`: the conic
    /// proximity of two convex parts (`bilevel`, and `ipm` for the pairs
    /// without a closed form, [`super::conic_pairs`]).
    pub parts: Option<ConicParts>,
}

/// The convex parts of a conic candidate and how its conic program is
/// solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConicParts {
    /// Part of shape a (flattened union order, `collision::conic::convex_parts`).
    pub part_a: usize,
    /// Part of shape b.
    pub part_b: usize,
    /// The conic program's barrier parameter μ: the gap and witness point
    /// are those of its central-path point `s ∘ z = μ e`
    /// (`ConicParams::tol_gap`), a smooth function of the poses. `bilevel`
    /// solves to 1e-10 (Silico's converged baseline, α derivatives by the
    /// envelope theorem); `ipm` relaxes it with the step's ρ
    /// (`10 ρ`, [`super::conic_pairs::smoothing`]; `single_level` relaxes
    /// both programs with the same ρ), with α derivatives by the
    /// implicit-function theorem of that central point. A tight μ makes the
    /// gap of a face-to-face contact a kink in the orientation, at which
    /// the step's Newton iteration stalls.
    pub smoothing: f64,
}

/// The identity of a candidate across solves and candidate rounds.
pub type CandidateKey = (usize, Option<usize>, Partner, usize);

impl<T: Scalar> Candidate<T> {
    /// `(a, link, b, feature)`.
    pub fn key(&self) -> CandidateKey {
        (self.a, self.link, self.b, self.feature)
    }
}

/// Pose of body `i` from a configuration vector.
pub fn body_pose<T: Scalar>(p: &StepProblem<'_, T>, q: &DVec<T>, i: usize) -> Pose<T> {
    let k = p.model.bodies[i].idx_q;
    Pose::new(orientation(q, k), position(q, k))
}

/// Dynamics residual (6) and its Jacobian (6 × 6) of one body at `v⁺`,
/// without contact impulses (see `dynamics::free`):
/// `r = (m(ṗ⁺ − ṗ) − h(m g + f), P⁺(ω⁺) − P⁻(ω) − h τ)`.
pub fn body_dynamics<T: Scalar>(
    p: &StepProblem<'_, T>,
    i: usize,
    v_next: &Vector6<T>,
) -> Result<(Vector6<T>, Matrix6<T>), DynamicsError> {
    let r = body_residual(p.model, i, p.q, p.v, v_next, p.u, &p.gravity, p.h)?;
    let m = p.model.bodies[i].inertia.mass;
    let iw = world_inertia(p.model, i, p.q);
    let w1 = Vec3::new(v_next[3], v_next[4], v_next[5]);
    let mut jac = Matrix6::zeros();
    for d in 0..3 {
        jac[(d, d)] = m;
    }
    let err = |source| DynamicsError::Retraction { body: i, source };
    jac.fixed_view_mut::<3, 3>(3, 3)
        .copy_from(&rotational_jacobian(&iw, &w1, p.h).map_err(err)?);
    Ok((r, jac))
}

/// One contact evaluated at `q⁺(v⁺)`.
#[derive(Clone, Debug)]
pub struct ContactEval<T: Scalar> {
    /// The contact at `q⁺`.
    pub contact: Contact<T>,
    /// Tangent basis.
    pub tangents: (Vec3<T>, Vec3<T>),
    /// Contact-space quantities `y = (φ, v_t1, v_t2)`.
    pub y: Vec3<T>,
    /// `(island unit, W block)` for each side of the pair that moves:
    /// impulse `f` → generalized impulse `Wᵀ f` on the unit's velocities
    /// (3 × 6 for a free body, 3 × n for a robot).
    pub blocks: Vec<(usize, Matrix3xX<T>)>,
}

/// Island evaluation: the dynamics residual including contact impulses,
/// the per-unit dynamics Jacobians and the contact geometry at `q⁺`.
#[derive(Clone, Debug)]
pub struct Eval<T: Scalar> {
    /// `r_dyn(v⁺) − Σ W_cᵀ E x_c` (island layout, [`Island::dim`] rows).
    pub r_dyn: DVec<T>,
    /// `∂r_dyn/∂v⁺` per island unit (without contact terms).
    pub jac: Vec<DMat<T>>,
    /// Contacts in island order.
    pub contacts: Vec<ContactEval<T>>,
}

/// What an island unit is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// A free body (global index): 6 velocities, `dynamics::free`.
    Body(usize),
    /// A robot: all its joint velocities ([`super::robot`]).
    Robot(RobotUnit),
}

/// A unit of an island's unknowns: a free body or a whole robot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Free body or robot.
    pub kind: UnitKind,
    /// Global velocity indices of its unknowns.
    pub dofs: Vec<usize>,
    /// Offset of its unknowns in the island's velocity vector.
    pub offset: usize,
}

impl Unit {
    /// Number of unknowns.
    pub fn size(&self) -> usize {
        self.dofs.len()
    }
}

/// An island: its units (free bodies and robots connected by contact
/// candidates) and contact candidates.
#[derive(Clone, Debug)]
pub struct Island<T: Scalar> {
    /// Units in island order; unit `u`'s velocities are rows
    /// `offset..offset + size` of the island velocity.
    pub units: Vec<Unit>,
    /// Candidates touching these units.
    pub contacts: Vec<Candidate<T>>,
    /// Global body → island unit index (`usize::MAX` for bodies of other
    /// islands); every link of a robot maps to the robot's unit.
    pub local: Vec<usize>,
}

impl<T: Scalar> Island<T> {
    /// Number of velocity unknowns.
    pub fn dim(&self) -> usize {
        self.units.iter().map(|u| u.size()).sum()
    }
    /// The island velocity gathered from a global velocity vector.
    pub fn gather<S: Scalar>(&self, v: &DVec<S>) -> DVec<S> {
        let mut out = DVec::zeros(self.dim());
        for u in &self.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out[u.offset + l] = v[d];
            }
        }
        out
    }
    /// Writes island rows `x` into the global rows of `out`.
    pub fn scatter<S: Scalar>(&self, x: &DVec<S>, out: &mut DVec<S>) {
        for u in &self.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out[d] = x[u.offset + l];
            }
        }
    }
}

/// Island-local velocity of one free-body unit as an array.
pub fn local_v<T: Scalar>(v: &DVec<T>, offset: usize) -> [T; 6] {
    core::array::from_fn(|k| v[offset + k])
}

/// Evaluates the island at velocity `v` (island layout) and contact
/// unknowns `xs`.
pub fn evaluate<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
) -> Result<Eval<T>, SolveError> {
    let mut ev = Eval {
        r_dyn: DVec::zeros(0),
        jac: Vec::new(),
        contacts: Vec::new(),
    };
    evaluate_into(p, island, v, xs, &mut ev)?;
    Ok(ev)
}

/// Copies the impulse-map blocks `src` into `dst`, reusing `dst`'s
/// storage where the shapes agree (the solver's steady state: no heap).
fn set_blocks<T: Scalar>(
    dst: &mut Vec<(usize, Matrix3xX<T>)>,
    src: &[(
        usize,
        nalgebra::MatrixView<'_, T, nalgebra::U3, nalgebra::Dyn>,
    )],
) {
    dst.truncate(src.len());
    for (k, (u, w)) in src.iter().enumerate() {
        match dst.get_mut(k) {
            Some((du, dw)) if dw.ncols() == w.ncols() => {
                *du = *u;
                dw.copy_from(w);
            }
            Some(slot) => *slot = (*u, w.into_owned()),
            None => dst.push((*u, w.into_owned())),
        }
    }
}

/// [`evaluate`] into `ev`, reusing its storage: after the first call with
/// the same island, free-body islands evaluate without heap allocation.
/// On error `ev` is left partially written.
pub fn evaluate_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    ev: &mut Eval<T>,
) -> Result<(), SolveError> {
    let dim = island.dim();
    if ev.r_dyn.len() != dim {
        ev.r_dyn = DVec::zeros(dim);
    }
    ev.jac.truncate(island.units.len());
    for (k, u) in island.units.iter().enumerate() {
        let n = u.size();
        if ev.jac.len() == k {
            ev.jac.push(DMat::zeros(n, n));
        } else if ev.jac[k].shape() != (n, n) {
            ev.jac[k] = DMat::zeros(n, n);
        }
        match &u.kind {
            UnitKind::Body(g) => {
                let vb: Vector6<T> = v.fixed_rows::<6>(u.offset).into_owned();
                let (r, j) = body_dynamics(p, *g, &vb)?;
                ev.r_dyn.fixed_rows_mut::<6>(u.offset).copy_from(&r);
                ev.jac[k].copy_from(&j);
            }
            UnitKind::Robot(ru) => {
                let (r, j) = robot_dynamics(p, ru, &v.as_slice()[u.offset..u.offset + n]);
                ev.r_dyn.rows_mut(u.offset, n).copy_from(&r);
                ev.jac[k].copy_from(&j);
            }
        }
    }
    ev.contacts.truncate(island.contacts.len());
    for (c, (cand, x)) in island.contacts.iter().zip(xs).enumerate() {
        let la = island.local[cand.a];
        let ua = &island.units[la];
        match &ua.kind {
            UnitKind::Robot(ru) => {
                let lb = match cand.b {
                    Partner::Body(j) => Some(island.local[j]),
                    Partner::Static(_) => None,
                };
                let vb = lb
                    .map(|lb| local_v(v, island.units[lb].offset))
                    .unwrap_or([T::zero(); 6]);
                let kin = candidate_kinematics(
                    p,
                    ru,
                    cand,
                    &v.as_slice()[ua.offset..ua.offset + ua.size()],
                    vb,
                )?;
                let wb = kin.w_b.map(|wb| Matrix3xX::from_fn(6, |i, j| wb[(i, j)]));
                let mut src = vec![(la, kin.w.as_view())];
                if let (Some(lb), Some(wb)) = (lb, &wb) {
                    src.push((lb, wb.as_view()));
                }
                let dst = slot(&mut ev.contacts, c, &kin.contact, kin.tangents, kin.y);
                set_blocks(dst, &src);
            }
            UnitKind::Body(_) => {
                let ba = &p.model.bodies[cand.a];
                let qa: [T; 7] = core::array::from_fn(|k| p.q[ba.idx_q + k]);
                let shape_a = p.shapes[cand.a]
                    .as_ref()
                    .expect("candidate bodies have shapes");
                let (other, lb, jb) = match cand.b {
                    Partner::Body(j) => {
                        let bb = &p.model.bodies[j];
                        let lb = island.local[j];
                        (
                            Other::Body {
                                shape: p.shapes[j].as_ref().expect("candidate bodies have shapes"),
                                q: core::array::from_fn(|k| p.q[bb.idx_q + k]),
                                v: local_v(v, island.units[lb].offset),
                            },
                            Some(lb),
                            j,
                        )
                    }
                    Partner::Static(j) => (
                        Other::Static {
                            shape: &p.statics[j].shape,
                            pose: p.statics[j].pose,
                        },
                        None,
                        cand.a,
                    ),
                };
                let kin = contact_kinematics(
                    shape_a,
                    &qa,
                    &local_v(v, ua.offset),
                    &other,
                    p.h,
                    cand.feature,
                    cand.parts,
                    cand.axis,
                    cand.a,
                    jb,
                )?;
                let view =
                    |w: &Matrix3x6<T>| -> Matrix3xX<T> { Matrix3xX::from_fn(6, |i, j| w[(i, j)]) };
                let dst = slot(&mut ev.contacts, c, &kin.contact, kin.tangents, kin.y);
                // Free-body blocks are 3 × 6: copied in place once sized.
                let sides = 1 + usize::from(lb.is_some() && kin.w_b.is_some());
                dst.truncate(sides);
                let sources = [Some((la, kin.w_a)), lb.zip(kin.w_b)];
                for (k, (u, w)) in sources.into_iter().flatten().enumerate() {
                    match dst.get_mut(k) {
                        Some((du, dw)) if dw.ncols() == 6 => {
                            *du = u;
                            dw.copy_from(&w);
                        }
                        Some(s) => *s = (u, view(&w)),
                        None => dst.push((u, view(&w))),
                    }
                }
            }
        }
        let f = cand.law.impulse(x);
        for (li, w) in &ev.contacts[c].blocks {
            let u = &island.units[*li];
            for k in 0..u.size() {
                let gen = w[(0, k)] * f[0] + w[(1, k)] * f[1] + w[(2, k)] * f[2];
                ev.r_dyn[u.offset + k] -= gen;
            }
        }
    }
    Ok(())
}

/// Contact `c`'s evaluation slot with its geometry set, returning its
/// impulse-map blocks for the caller to fill.
fn slot<'a, T: Scalar>(
    contacts: &'a mut Vec<ContactEval<T>>,
    c: usize,
    contact: &Contact<T>,
    tangents: (Vec3<T>, Vec3<T>),
    y: Vec3<T>,
) -> &'a mut Vec<(usize, Matrix3xX<T>)> {
    if c == contacts.len() {
        contacts.push(ContactEval {
            contact: *contact,
            tangents,
            y,
            blocks: Vec::with_capacity(2),
        });
    } else {
        let ce = &mut contacts[c];
        ce.contact = *contact;
        ce.tangents = tangents;
        ce.y = y;
    }
    &mut contacts[c].blocks
}
