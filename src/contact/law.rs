//! Friction laws of a contact: the layout of its local unknowns `x_c`,
//! their initial point, the impulse `f_c = E x_c = (γ, b₁, b₂)` in the
//! contact frame, and the local residual (equality rows, then the relaxed
//! complementarity rows `z ∘ s − κ e`) with its Jacobian, for every
//! interior-point backend. The contact sees its unknowns' partner — the
//! velocity — only through `y_c = (φ, v_t1, v_t2)`
//! ([`space`](crate::contact::space)).
//!
//! * [`Law::Frictionless`]: `γ ⟂ s` (orthant);
//! * [`Law::Exact`]: the Coulomb cone as a second-order cone
//!   complementarity (maximum dissipation, Dojo/Silico);
//! * [`Law::Pyramid`]: the four-sided pyramid.
//!
//! (The boxed LCP rows of a pivoting backend are a different formulation
//! and will live with it.)

use crate::Scalar;
use crate::math::cone::{arrow, jordan, nt_scaling};
use crate::math::{DMat, DVec, Vec3};

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
    pub fn impulse<T: Scalar, X: std::ops::Index<usize, Output = T> + ?Sized>(
        &self,
        x: &X,
    ) -> Vec3<T> {
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
        self.initial_into(scale, &mut x);
        x
    }
    /// [`Law::initial`] written into `x` (resized only when its length
    /// differs).
    pub fn initial_into<T: Scalar>(&self, scale: f64, x: &mut DVec<T>) {
        if x.len() != self.size() {
            *x = DVec::zeros(self.size());
        } else {
            x.fill(T::zero());
        }
        for &(z, s) in self.orthant_pairs() {
            x[z] = T::from_re(scale);
            x[s] = T::from_re(scale);
        }
        for &(z, s) in self.soc_pairs() {
            x[z] = T::from_re(scale);
            x[s] = T::from_re(scale);
        }
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
        if is_a { a[(i, j)] = v } else { c[(i, j)] = v }
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
