//! `Counted`: an f64 wrapper that counts arithmetic operations, defined only
//! in the tests, to show that a user's own numeric type runs the engine.
//! Implementing `dualsim::Scalar` takes three lines once `RealField` is
//! implemented (most of this file: nalgebra's trait bundle, delegated to f64),
//! and two more functions to opt into the f64 fast paths.
#![allow(dead_code)]

use std::fmt;
use std::ops::*;
use std::sync::atomic::{AtomicU64, Ordering};

use num_traits::{FromPrimitive, Num, One, Signed, Zero};
use simba::scalar::{SubsetOf, SupersetOf};

static OPS: AtomicU64 = AtomicU64::new(0);

/// Operations counted so far (all threads).
pub fn ops() -> u64 {
    OPS.load(Ordering::Relaxed)
}

#[inline]
fn tick() {
    OPS.fetch_add(1, Ordering::Relaxed);
}

/// An f64 that counts the operations done on it.
///
/// `#[repr(transparent)]` over `f64` with f64's arithmetic, so it opts
/// into the f64 factorization path (`Scalar::f64_view`; the operations
/// faer does on the view are not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
#[repr(transparent)]
pub struct Counted(pub f64);

impl dualsim::Scalar for Counted {
    fn re(&self) -> f64 {
        self.0
    }
    fn from_re(x: f64) -> Self {
        Counted(x)
    }
    fn f64_view(x: &[Self]) -> Option<&[f64]> {
        // SAFETY: `Counted` is `#[repr(transparent)]` over `f64`: same
        // size, alignment and validity; the lifetime is `x`'s.
        Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f64>(), x.len()) })
    }
    fn f64_view_mut(x: &mut [Self]) -> Option<&mut [f64]> {
        // SAFETY: as in `f64_view`; `x` is borrowed mutably for the
        // view's lifetime.
        Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f64>(), x.len()) })
    }
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

macro_rules! binop {
    ($tr:ident, $m:ident, $tra:ident, $ma:ident, $op:tt) => {
        impl $tr for Counted {
            type Output = Counted;
            #[inline]
            fn $m(self, o: Counted) -> Counted { tick(); Counted(self.0 $op o.0) }
        }
        impl $tra for Counted {
            #[inline]
            fn $ma(&mut self, o: Counted) { tick(); self.0 = self.0 $op o.0; }
        }
    };
}
binop!(Add, add, AddAssign, add_assign, +);
binop!(Sub, sub, SubAssign, sub_assign, -);
binop!(Mul, mul, MulAssign, mul_assign, *);
binop!(Div, div, DivAssign, div_assign, /);
binop!(Rem, rem, RemAssign, rem_assign, %);

impl Neg for Counted {
    type Output = Counted;
    fn neg(self) -> Counted {
        tick();
        Counted(-self.0)
    }
}

impl Zero for Counted {
    fn zero() -> Self {
        Counted(0.0)
    }
    fn is_zero(&self) -> bool {
        self.0 == 0.0
    }
}
impl One for Counted {
    fn one() -> Self {
        Counted(1.0)
    }
}
impl Num for Counted {
    type FromStrRadixErr = <f64 as Num>::FromStrRadixErr;
    fn from_str_radix(s: &str, r: u32) -> Result<Self, Self::FromStrRadixErr> {
        f64::from_str_radix(s, r).map(Counted)
    }
}
impl Signed for Counted {
    fn abs(&self) -> Self {
        Counted(self.0.abs())
    }
    fn abs_sub(&self, o: &Self) -> Self {
        Counted((self.0 - o.0).max(0.0))
    }
    fn signum(&self) -> Self {
        Counted(self.0.signum())
    }
    fn is_positive(&self) -> bool {
        self.0 > 0.0
    }
    fn is_negative(&self) -> bool {
        self.0 < 0.0
    }
}
impl FromPrimitive for Counted {
    fn from_i64(n: i64) -> Option<Self> {
        Some(Counted(n as f64))
    }
    fn from_u64(n: u64) -> Option<Self> {
        Some(Counted(n as f64))
    }
    fn from_f64(n: f64) -> Option<Self> {
        Some(Counted(n))
    }
}

impl approx::AbsDiffEq for Counted {
    type Epsilon = Counted;
    fn default_epsilon() -> Self {
        Counted(f64::EPSILON)
    }
    fn abs_diff_eq(&self, o: &Self, e: Self) -> bool {
        self.0.abs_diff_eq(&o.0, e.0)
    }
}
impl approx::RelativeEq for Counted {
    fn default_max_relative() -> Self {
        Counted(f64::EPSILON)
    }
    fn relative_eq(&self, o: &Self, e: Self, m: Self) -> bool {
        self.0.relative_eq(&o.0, e.0, m.0)
    }
}
impl approx::UlpsEq for Counted {
    fn default_max_ulps() -> u32 {
        4
    }
    fn ulps_eq(&self, o: &Self, e: Self, m: u32) -> bool {
        self.0.ulps_eq(&o.0, e.0, m)
    }
}

impl nalgebra::SimdValue for Counted {
    const LANES: usize = 1;
    type Element = Counted;
    type SimdBool = bool;
    fn splat(v: Counted) -> Self {
        v
    }
    fn extract(&self, _: usize) -> Counted {
        *self
    }
    unsafe fn extract_unchecked(&self, _: usize) -> Counted {
        *self
    }
    fn replace(&mut self, _: usize, v: Counted) {
        *self = v
    }
    unsafe fn replace_unchecked(&mut self, _: usize, v: Counted) {
        *self = v
    }
    fn select(self, cond: bool, other: Self) -> Self {
        if cond { self } else { other }
    }
}

impl SubsetOf<Counted> for Counted {
    fn to_superset(&self) -> Counted {
        *self
    }
    fn from_superset_unchecked(e: &Counted) -> Self {
        *e
    }
    fn is_in_subset(_: &Counted) -> bool {
        true
    }
}
impl SupersetOf<f64> for Counted {
    fn is_in_subset(&self) -> bool {
        true
    }
    fn to_subset_unchecked(&self) -> f64 {
        self.0
    }
    fn from_subset(e: &f64) -> Self {
        Counted(*e)
    }
}
impl SupersetOf<f32> for Counted {
    fn is_in_subset(&self) -> bool {
        true
    }
    fn to_subset_unchecked(&self) -> f32 {
        self.0 as f32
    }
    fn from_subset(e: &f32) -> Self {
        Counted(*e as f64)
    }
}

impl nalgebra::Field for Counted {}

macro_rules! unary {
    ($($m:ident),*) => { $( #[inline] fn $m(self) -> Self { tick(); Counted(self.0.$m()) } )* };
}
macro_rules! konst {
    ($($m:ident = $v:expr),*) => { $( fn $m() -> Self { Counted($v) } )* };
}

impl nalgebra::ComplexField for Counted {
    type RealField = Counted;
    fn from_real(re: Self) -> Self {
        re
    }
    fn real(self) -> Self {
        self
    }
    fn imaginary(self) -> Self {
        Counted(0.0)
    }
    fn modulus(self) -> Self {
        Counted(self.0.abs())
    }
    fn modulus_squared(self) -> Self {
        tick();
        Counted(self.0 * self.0)
    }
    fn argument(self) -> Self {
        Counted(if self.0 >= 0.0 {
            0.0
        } else {
            std::f64::consts::PI
        })
    }
    fn norm1(self) -> Self {
        Counted(self.0.abs())
    }
    fn scale(self, f: Self) -> Self {
        self * f
    }
    fn unscale(self, f: Self) -> Self {
        self / f
    }
    fn mul_add(self, a: Self, b: Self) -> Self {
        tick();
        Counted(self.0.mul_add(a.0, b.0))
    }
    fn abs(self) -> Self {
        Counted(self.0.abs())
    }
    fn hypot(self, o: Self) -> Self {
        tick();
        Counted(self.0.hypot(o.0))
    }
    fn conjugate(self) -> Self {
        self
    }
    fn sin_cos(self) -> (Self, Self) {
        tick();
        let (s, c) = self.0.sin_cos();
        (Counted(s), Counted(c))
    }
    fn log(self, b: Self) -> Self {
        tick();
        Counted(self.0.log(b.0))
    }
    fn powi(self, n: i32) -> Self {
        tick();
        Counted(self.0.powi(n))
    }
    fn powf(self, n: Self) -> Self {
        tick();
        Counted(self.0.powf(n.0))
    }
    fn powc(self, n: Self) -> Self {
        self.powf(n)
    }
    fn is_finite(&self) -> bool {
        self.0.is_finite()
    }
    fn try_sqrt(self) -> Option<Self> {
        (self.0 >= 0.0).then(|| Counted(self.0.sqrt()))
    }
    unary!(
        floor, ceil, round, trunc, fract, recip, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh,
        asinh, acosh, atanh, log2, log10, ln, ln_1p, sqrt, exp, exp2, exp_m1, cbrt
    );
}

impl nalgebra::RealField for Counted {
    fn is_sign_positive(&self) -> bool {
        self.0.is_sign_positive()
    }
    fn is_sign_negative(&self) -> bool {
        self.0.is_sign_negative()
    }
    fn copysign(self, s: Self) -> Self {
        Counted(self.0.copysign(s.0))
    }
    fn max(self, o: Self) -> Self {
        Counted(self.0.max(o.0))
    }
    fn min(self, o: Self) -> Self {
        Counted(self.0.min(o.0))
    }
    fn clamp(self, a: Self, b: Self) -> Self {
        Counted(self.0.clamp(a.0, b.0))
    }
    fn atan2(self, o: Self) -> Self {
        tick();
        Counted(self.0.atan2(o.0))
    }
    fn min_value() -> Option<Self> {
        Some(Counted(f64::MIN))
    }
    fn max_value() -> Option<Self> {
        Some(Counted(f64::MAX))
    }
    konst!(
        pi = std::f64::consts::PI,
        two_pi = std::f64::consts::TAU,
        frac_pi_2 = std::f64::consts::FRAC_PI_2,
        frac_pi_3 = std::f64::consts::FRAC_PI_3,
        frac_pi_4 = std::f64::consts::FRAC_PI_4,
        frac_pi_6 = std::f64::consts::FRAC_PI_6,
        frac_pi_8 = std::f64::consts::FRAC_PI_8,
        frac_1_pi = std::f64::consts::FRAC_1_PI,
        frac_2_pi = std::f64::consts::FRAC_2_PI,
        frac_2_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI,
        e = std::f64::consts::E,
        log2_e = std::f64::consts::LOG2_E,
        log10_e = std::f64::consts::LOG10_E,
        ln_2 = std::f64::consts::LN_2,
        ln_10 = std::f64::consts::LN_10
    );
}
