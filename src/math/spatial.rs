//! Spatial algebra (Featherstone): motion vectors (twists) and force vectors
//! (wrenches), both stored linear part first, and rigid-body inertia.
//!
//! For a motion `m = (v, ω)` and a force `f = (n, τ)` (force, torque):
//!
//! ```text
//! m₁ ×  m₂ = (ω₁ × v₂ + v₁ × ω₂,  ω₁ × ω₂)        (motion cross)
//! m  ×* f  = (ω × n,  ω × τ + v × n)              (force cross)
//! ```

use super::{skew, Mat3, Mat6, Vec3, Vec6};
use crate::Scalar;

/// A spatial motion vector (twist), linear part first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motion<T: Scalar> {
    /// Linear velocity of the point at the frame origin.
    pub linear: Vec3<T>,
    /// Angular velocity.
    pub angular: Vec3<T>,
}

/// A spatial force vector (wrench), force first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Force<T: Scalar> {
    /// Force.
    pub linear: Vec3<T>,
    /// Torque about the frame origin.
    pub angular: Vec3<T>,
}

impl<T: Scalar> Motion<T> {
    /// The zero twist.
    pub fn zero() -> Self {
        Motion { linear: Vec3::zeros(), angular: Vec3::zeros() }
    }
    /// As a 6-vector (linear first).
    pub fn to_vec(&self) -> Vec6<T> {
        Vec6::new(
            self.linear.x, self.linear.y, self.linear.z, self.angular.x, self.angular.y,
            self.angular.z,
        )
    }
    /// Motion cross product `self × m`.
    ///
    /// ```
    /// use dualsim::math::{spatial::Motion, Vec3};
    /// let a = Motion { linear: Vec3::new(1.0, 0.0, 0.0), angular: Vec3::new(0.0, 0.0, 1.0) };
    /// let c = a.cross(&a);
    /// assert_eq!(c.to_vec().norm(), 0.0);
    /// ```
    pub fn cross(&self, m: &Motion<T>) -> Motion<T> {
        Motion {
            linear: self.angular.cross(&m.linear) + self.linear.cross(&m.angular),
            angular: self.angular.cross(&m.angular),
        }
    }
    /// Force cross product `self ×* f`.
    pub fn cross_force(&self, f: &Force<T>) -> Force<T> {
        Force {
            linear: self.angular.cross(&f.linear),
            angular: self.angular.cross(&f.angular) + self.linear.cross(&f.linear),
        }
    }
    /// Power `f · m`.
    pub fn dot(&self, f: &Force<T>) -> T {
        self.linear.dot(&f.linear) + self.angular.dot(&f.angular)
    }
}

impl<T: Scalar> Force<T> {
    /// The zero wrench.
    pub fn zero() -> Self {
        Force { linear: Vec3::zeros(), angular: Vec3::zeros() }
    }
    /// As a 6-vector (force first).
    pub fn to_vec(&self) -> Vec6<T> {
        Vec6::new(
            self.linear.x, self.linear.y, self.linear.z, self.angular.x, self.angular.y,
            self.angular.z,
        )
    }
}

/// Rigid-body inertia: mass, centre of mass and rotational inertia about
/// the centre of mass, all in the body frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidInertia<T: Scalar> {
    /// Mass (> 0).
    pub mass: T,
    /// Centre of mass in the body frame.
    pub com: Vec3<T>,
    /// Rotational inertia about the centre of mass (symmetric positive definite).
    pub inertia: Mat3<T>,
}

impl<T: Scalar> RigidInertia<T> {
    /// Inertia of a body with its centre of mass at the frame origin.
    pub fn new(mass: T, inertia: Mat3<T>) -> Self {
        RigidInertia { mass, com: Vec3::zeros(), inertia }
    }

    /// Momentum `I m` of the body moving with twist `m` (both at the frame origin).
    pub fn mul_motion(&self, m: &Motion<T>) -> Force<T> {
        let c = self.com;
        // h = m (v + ω × c),   L = I_c ω + c × h
        let h = (m.linear + m.angular.cross(&c)) * self.mass;
        Force { linear: h, angular: self.inertia * m.angular + c.cross(&h) }
    }

    /// The 6×6 spatial inertia matrix at the frame origin (linear first).
    ///
    /// ```
    /// use dualsim::math::{spatial::{Motion, RigidInertia}, Mat3, Vec3};
    /// let i = RigidInertia { mass: 2.0, com: Vec3::new(0.1, 0.2, 0.3),
    ///                        inertia: Mat3::from_diagonal(&Vec3::new(1.0, 2.0, 3.0)) };
    /// let m = Motion { linear: Vec3::new(1.0, -1.0, 0.5), angular: Vec3::new(0.2, 0.3, -0.4) };
    /// assert!((i.matrix() * m.to_vec() - i.mul_motion(&m).to_vec()).norm() < 1e-14);
    /// ```
    pub fn matrix(&self) -> Mat6<T> {
        let m = self.mass;
        let cx = skew(&self.com);
        let mut out = Mat6::zeros();
        out.fixed_view_mut::<3, 3>(0, 0).copy_from(&(Mat3::identity() * m));
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-cx * m));
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(cx * m));
        out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(self.inertia - cx * cx * m));
        out
    }

    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> RigidInertia<U> {
        let c = |x: T| U::from_re(x.re());
        RigidInertia { mass: c(self.mass), com: self.com.map(c), inertia: self.inertia.map(c) }
    }
}
