//! The items of `dualsim` that `#[kernel]` expansions name
//! (`dualsim::Scalar`, `dualsim::kernel`, `dualsim::__kernel_inline`),
//! with the same bounds as the real trait, so that the macro's trybuild UI
//! tests (`macros/tests/kernel_ui.rs`) compile their cases against this
//! crate instead of the whole engine. Its `Scalar` must keep the real
//! trait's supertraits (`nalgebra::RealField + Copy + …`): the snapshots
//! quote rustc's errors on expanded code, which depend on them.

#[doc(hidden)]
pub use dualsim_macros::__kernel_inline;
pub use dualsim_macros::kernel;

/// `dualsim::Scalar`'s shape: a real field with a primal part.
pub trait Scalar: nalgebra::RealField + Copy + Send + Sync + core::fmt::Debug + 'static {
    /// The real (primal) part.
    fn re(&self) -> f64;
    /// A constant.
    fn from_re(x: f64) -> Self;
    /// The highest derivative order the type carries.
    const DERIVATIVE_ORDER: usize = 2;
}

impl Scalar for f64 {
    fn re(&self) -> f64 {
        *self
    }
    fn from_re(x: f64) -> Self {
        x
    }
    const DERIVATIVE_ORDER: usize = 0;
}
