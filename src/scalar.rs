//! The [`Scalar`] trait and zero-safe elementary operations.
//!
//! Every piece of physics in dualsim is generic over `T: Scalar`. A scalar is
//! a real field in nalgebra's sense ([`nalgebra::RealField`]) that is `Copy`
//! and exposes its *primal* (real) part as an `f64`.
//!
//! # Branching
//!
//! Every decision — an active set, `max(0, x)`, a line search, a convergence
//! test — is taken on [`Scalar::re`], never on derivative parts, so that the
//! same control flow runs for `f64` and for every dual type.
//!
//! # Zero-safe operations
//!
//! num-dual's `sqrt(0)` has an infinite derivative, and `0 · ∞ = NaN`
//! poisons every gradient even through a branch that is not taken later. The
//! functions here never evaluate a square root or a division at a point where
//! the derivative is singular:
//!
//! * [`safe_norm`] returns exactly zero, with all derivative parts zero (the
//!   minimum-norm element of the subdifferential of ‖·‖ at 0), when the
//!   primal part of ‖x‖² is zero;
//! * [`safe_normalize`] returns `None` for a vector whose primal part is zero;
//! * functions of ‖x‖ that are analytic in ‖x‖² (sin θ/θ, (1 − cos θ)/θ², …)
//!   are evaluated as Taylor polynomials in θ² below a threshold, so their
//!   first and second derivatives at exactly zero are the analytic limits
//!   (see [`sinc`], [`cosc`] and `math::so3`).
//!
//! # Implementations
//!
//! `f64`, `f32` and the num-dual types over `f64`: [`Dual64`], [`DualSVec64`],
//! [`HyperDual64`], [`HyperDualSVec64`], [`Dual2_64`] and [`Dual2SVec64`]. `DualDVec64` cannot be a
//! `Scalar`: its derivative part lives on the heap, so it is not `Copy`
//! (use `DualSVec64<N>` with a compile-time `N`, or `diff::` for large
//! Jacobians). A user's own type implements the trait in three lines once it
//! implements `RealField`: `tests/all/common/counted.rs` is a complete
//! one, an f64 wrapper that counts its operations (`tests/all/scalar.rs`
//! runs the engine in it). A wrapper around `f64` also opts into the `f64`
//! fast paths with [`Scalar::f64_view`]; no path is chosen by testing for the
//! type `f64` itself.

use nalgebra::{Const, RealField, Vector3};
use num_dual::{
    Dual, Dual2, Dual2SVec64, Dual2Vec, DualSVec64, DualVec, HyperDual, HyperDualSVec64,
    HyperDualVec,
};

pub use num_dual::{Dual2_64, Dual64, HyperDual64};

/// A real number type that dualsim can simulate with.
///
/// ```
/// use dualsim::Scalar;
/// use num_dual::Dual64;
/// fn square<T: Scalar>(x: T) -> T { x * x + T::from_re(1.0) }
/// let y = square(Dual64::new(3.0, 1.0));
/// assert_eq!(y.re(), 10.0);
/// assert_eq!(y.eps, 6.0);
/// ```
pub trait Scalar: RealField + Copy + Send + Sync + core::fmt::Debug + 'static {
    /// The real (primal) part. Every branch is decided on this value.
    fn re(&self) -> f64;
    /// Embeds a constant (all derivative parts zero).
    ///
    /// Named `from_re` rather than `from_f64` because `RealField` already
    /// brings `num_traits::FromPrimitive::from_f64` (returning an `Option`)
    /// into scope, which would make `T::from_f64(0.5)` ambiguous.
    fn from_re(x: f64) -> Self;
    /// The highest derivative order the type carries (num-dual's `NDERIV`):
    /// 0 for plain floating point, 1 for first-order duals, 2 for
    /// `Dual2`/hyper-dual numbers. Solvers use it to take the exact
    /// (dual-evaluated) linearization only where derivative parts need it:
    /// a Newton iteration whose matrix is inexact converges to the same
    /// primal root, but each derivative order needs one step with the exact
    /// Jacobian at the root. The default, 2, is the safe choice for a
    /// user's type: it is exact for any derivative order up to two and only
    /// costs speed; a user's plain-float type sets 0.
    const DERIVATIVE_ORDER: usize = 2;
    /// A view of `x` as plain `f64`s, for the `f64` fast paths: a large
    /// island's reduced system is factored by faer's dense or sparse LU
    /// (`contact::mehrotra`) when its scalar has this view, and by the
    /// generic LU otherwise.
    ///
    /// Return `Some` only when `Self` is an `f64` in memory and in
    /// arithmetic: the same size and layout (`#[repr(transparent)]` over
    /// `f64`), [`Scalar::re`] the value itself, [`Scalar::from_re`] its
    /// inverse, no derivative parts, and every operation rounding as
    /// `f64`'s, so that computing on the view gives the numbers `Self`
    /// would. The default, `None`, keeps the generic path (always right,
    /// slower on large islands); a type that carries derivatives must keep
    /// it. `f64` returns `Some`. A user's `#[repr(transparent)]` wrapper
    /// opts in with a pointer cast (`tests/all/common/counted.rs` does,
    /// and `tests/all/scalar.rs` counts which factorization ran).
    #[inline]
    fn f64_view(x: &[Self]) -> Option<&[f64]> {
        let _ = x;
        None
    }
    /// The mutable form of [`Scalar::f64_view`]: `Some` exactly when
    /// `f64_view` is.
    #[inline]
    fn f64_view_mut(x: &mut [Self]) -> Option<&mut [f64]> {
        let _ = x;
        None
    }
    /// True when the primal part is finite. Derivative parts are checked
    /// separately by [`Scalar::is_all_finite`].
    #[inline]
    fn is_finite_re(&self) -> bool {
        self.re().is_finite()
    }
    /// True when the primal part and every derivative part are finite.
    ///
    /// The default checks the primal part only; the num-dual impls check all
    /// parts.
    #[inline]
    fn is_all_finite(&self) -> bool {
        self.re().is_finite()
    }
}

impl Scalar for f64 {
    const DERIVATIVE_ORDER: usize = 0;
    #[inline]
    fn re(&self) -> f64 {
        *self
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        x
    }
    #[inline]
    fn f64_view(x: &[Self]) -> Option<&[f64]> {
        Some(x)
    }
    #[inline]
    fn f64_view_mut(x: &mut [Self]) -> Option<&mut [f64]> {
        Some(x)
    }
}

/// `T` has the `f64` view of [`Scalar::f64_view`] (the `f64` fast paths
/// apply to it).
///
/// ```
/// use dualsim::scalar::has_f64_view;
/// assert!(has_f64_view::<f64>());
/// assert!(!has_f64_view::<num_dual::Dual64>());
/// ```
#[inline]
pub fn has_f64_view<T: Scalar>() -> bool {
    T::f64_view(&[]).is_some()
}

impl Scalar for f32 {
    const DERIVATIVE_ORDER: usize = 0;
    #[inline]
    fn re(&self) -> f64 {
        *self as f64
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        x as f32
    }
}

macro_rules! all_finite {
    ($s:expr; $($f:ident),*) => {
        $s.re.is_all_finite() $(&& $s.$f.unwrap_generic_finite())*
    };
}

/// Finite-check helper for num-dual's `Derivative` fields.
trait DerivativeFinite {
    fn unwrap_generic_finite(&self) -> bool;
}

impl<R: nalgebra::Dim, C: nalgebra::Dim> DerivativeFinite for num_dual::Derivative<f64, R, C>
where
    nalgebra::DefaultAllocator: nalgebra::allocator::Allocator<R, C>,
{
    fn unwrap_generic_finite(&self) -> bool {
        match &self.0 {
            None => true,
            Some(m) => m.iter().all(|x| x.is_finite()),
        }
    }
}

impl DerivativeFinite for f64 {
    fn unwrap_generic_finite(&self) -> bool {
        self.is_finite()
    }
}

impl Scalar for Dual<f64> {
    const DERIVATIVE_ORDER: usize = 1;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        Dual::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; eps)
    }
}

impl Scalar for HyperDual<f64> {
    const DERIVATIVE_ORDER: usize = 2;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        HyperDual::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; eps1, eps2, eps1eps2)
    }
}

impl Scalar for Dual2<f64> {
    const DERIVATIVE_ORDER: usize = 2;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        Dual2::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; v1, v2)
    }
}

impl<const N: usize> Scalar for DualVec<f64, Const<N>> {
    const DERIVATIVE_ORDER: usize = 1;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        DualVec::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; eps)
    }
}

impl<const N: usize> Scalar for Dual2Vec<f64, Const<N>> {
    const DERIVATIVE_ORDER: usize = 2;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        Dual2Vec::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; v1, v2)
    }
}

impl<const M: usize, const N: usize> Scalar for HyperDualVec<f64, Const<M>, Const<N>> {
    const DERIVATIVE_ORDER: usize = 2;
    #[inline]
    fn re(&self) -> f64 {
        self.re
    }
    #[inline]
    fn from_re(x: f64) -> Self {
        HyperDualVec::from_re(x)
    }
    fn is_all_finite(&self) -> bool {
        all_finite!(self; eps1, eps2, eps1eps2)
    }
}

// Compile-time reminder of the aliases users reach for.
#[allow(dead_code)]
fn _aliases_are_scalars() {
    fn is<T: Scalar>() {}
    is::<f64>();
    is::<f32>();
    is::<Dual64>();
    is::<DualSVec64<3>>();
    is::<HyperDual64>();
    is::<HyperDualSVec64<2, 2>>();
    is::<Dual2_64>();
    is::<Dual2SVec64<3>>();
}

/// Below this value of θ² the θ-dependent coefficients use Taylor
/// polynomials in θ². With four terms the truncation error is below 1e-17.
pub const TAYLOR_THRESHOLD_SQ: f64 = 1e-4;

/// Euclidean norm whose derivatives stay finite at the zero vector.
///
/// At a vector whose primal part is exactly zero it returns zero with all
/// derivative parts zero (the minimum-norm subgradient); elsewhere it equals
/// `x.norm()`.
///
/// ```
/// use dualsim::scalar::safe_norm;
/// use nalgebra::Vector3;
/// use num_dual::Dual64;
/// let x = Vector3::new(Dual64::new(0.0, 1.0), Dual64::from(0.0), Dual64::from(0.0));
/// let n = safe_norm(&x);
/// assert_eq!((n.re, n.eps), (0.0, 0.0));
/// assert_eq!(safe_norm(&Vector3::new(3.0, 4.0, 0.0)), 5.0);
/// ```
#[inline]
pub fn safe_norm<T: Scalar>(x: &Vector3<T>) -> T {
    let n2 = x.norm_squared();
    if n2.re() == 0.0 { T::zero() } else { n2.sqrt() }
}

/// `sqrt` that returns zero with zero derivative parts at a zero primal.
///
/// ```
/// use dualsim::scalar::safe_sqrt;
/// assert_eq!(safe_sqrt(4.0_f64), 2.0);
/// assert_eq!(safe_sqrt(0.0_f64), 0.0);
/// ```
#[inline]
pub fn safe_sqrt<T: Scalar>(x: T) -> T {
    if x.re() <= 0.0 { T::zero() } else { x.sqrt() }
}

/// Unit vector along `x` and the norm, or `None` when the primal part of `x`
/// is zero (the direction is undefined there).
///
/// ```
/// use dualsim::scalar::safe_normalize;
/// use nalgebra::Vector3;
/// let (u, n) = safe_normalize(&Vector3::new(0.0, 3.0, 4.0)).unwrap();
/// assert_eq!(n, 5.0);
/// assert!((u.y - 0.6_f64).abs() < 1e-15);
/// assert!(safe_normalize(&Vector3::<f64>::zeros()).is_none());
/// ```
#[inline]
pub fn safe_normalize<T: Scalar>(x: &Vector3<T>) -> Option<(Vector3<T>, T)> {
    let n2 = x.norm_squared();
    if n2.re() == 0.0 {
        None
    } else {
        let n = n2.sqrt();
        Some((x / n, n))
    }
}

/// sin(θ)/θ as a function of t = θ², exact derivatives at t = 0.
///
/// ```
/// use dualsim::scalar::sinc;
/// assert_eq!(sinc(0.0_f64), 1.0);
/// assert!((sinc(1.0_f64) - 1.0_f64.sin()).abs() < 1e-15);
/// ```
#[inline]
pub fn sinc<T: Scalar>(t: T) -> T {
    if t.re() < TAYLOR_THRESHOLD_SQ {
        // 1 - t/6 + t²/120 - t³/5040 + t⁴/362880
        horner(
            t,
            &[1.0, -1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0],
        )
    } else {
        let th = t.sqrt();
        th.sin() / th
    }
}

/// (1 − cos θ)/θ² as a function of t = θ², exact derivatives at t = 0.
///
/// ```
/// use dualsim::scalar::cosc;
/// assert_eq!(cosc(0.0_f64), 0.5);
/// assert!((cosc(1.0_f64) - (1.0 - 1.0_f64.cos())).abs() < 1e-15);
/// ```
#[inline]
pub fn cosc<T: Scalar>(t: T) -> T {
    if t.re() < TAYLOR_THRESHOLD_SQ {
        horner(
            t,
            &[
                0.5,
                -1.0 / 24.0,
                1.0 / 720.0,
                -1.0 / 40320.0,
                1.0 / 3628800.0,
            ],
        )
    } else {
        let th = t.sqrt();
        (T::one() - th.cos()) / t
    }
}

/// Evaluates Σ cₖ tᵏ by Horner's rule.
///
/// ```
/// use dualsim::scalar::horner;
/// assert_eq!(horner(2.0_f64, &[1.0, 2.0, 3.0]), 1.0 + 4.0 + 12.0);
/// ```
#[inline]
pub fn horner<T: Scalar>(t: T, coefficients: &[f64]) -> T {
    let mut acc = T::zero();
    for &c in coefficients.iter().rev() {
        acc = acc * t + T::from_re(c);
    }
    acc
}

/// `x` clamped to `[0, 1]`, the branch taken on the primal part (the
/// derivative parts are those of `x` inside, zero outside).
///
/// ```
/// use dualsim::scalar::clamp01;
/// assert_eq!(clamp01(1.5_f64), 1.0);
/// assert_eq!(clamp01(0.25_f64), 0.25);
/// ```
#[inline]
pub fn clamp01<T: Scalar>(x: T) -> T {
    if x.re() <= 0.0 {
        T::zero()
    } else if x.re() >= 1.0 {
        T::one()
    } else {
        x
    }
}

/// max(x, 0) with the branch taken on the primal part.
///
/// ```
/// use dualsim::scalar::relu;
/// assert_eq!(relu(-1.0_f64), 0.0);
/// assert_eq!(relu(2.0_f64), 2.0);
/// ```
#[inline]
pub fn relu<T: Scalar>(x: T) -> T {
    if x.re() > 0.0 { x } else { T::zero() }
}
