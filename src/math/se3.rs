//! Rigid motions SE(3) as (unit quaternion, translation).
//!
//! A pose `pos12` maps coordinates in frame 2 to frame 1:
//! `x₁ = R₁₂ x₂ + t₁₂`. Composition `pos13 = pos12 * pos23`.
//! The exponential of a twist ξ = (ρ, ω) (linear first) is
//! `(exp(ω), J_l(ω) ρ)` with the left Jacobian of SO(3).

use super::{Quat, Vec3, Vec6, so3};
use crate::Scalar;

/// A rigid pose: rotation (unit quaternion) and translation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose<T: Scalar> {
    /// Rotation, a unit quaternion.
    pub rotation: Quat<T>,
    /// Translation.
    pub translation: Vec3<T>,
}

impl<T: Scalar> Pose<T> {
    /// The identity pose.
    pub fn identity() -> Self {
        Pose {
            rotation: so3::identity(),
            translation: Vec3::zeros(),
        }
    }

    /// A pose from a rotation and a translation.
    pub fn new(rotation: Quat<T>, translation: Vec3<T>) -> Self {
        Pose {
            rotation,
            translation,
        }
    }

    /// Applies the pose to a point: `R x + t`.
    ///
    /// ```
    /// use dualsim::math::{Pose, so3, Vec3};
    /// let p = Pose::new(so3::identity(), Vec3::new(1.0, 0.0, 0.0));
    /// assert_eq!(p.act(&Vec3::new(0.0, 2.0, 0.0)), Vec3::new(1.0, 2.0, 0.0));
    /// ```
    pub fn act(&self, x: &Vec3<T>) -> Vec3<T> {
        so3::rotate(&self.rotation, x) + self.translation
    }

    /// Applies the inverse pose: `Rᵀ (x − t)`.
    pub fn act_inv(&self, x: &Vec3<T>) -> Vec3<T> {
        so3::rotate_inv(&self.rotation, &(x - self.translation))
    }

    /// The inverse pose.
    ///
    /// ```
    /// use dualsim::math::{Pose, so3, Vec3};
    /// let p = Pose::<f64>::new(so3::exp(&Vec3::new(0.1, 0.2, 0.3)), Vec3::new(1.0, -2.0, 0.5));
    /// let e = p * p.inverse();
    /// assert!(e.translation.norm() < 1e-15 && (e.rotation.w - 1.0).abs() < 1e-15);
    /// ```
    pub fn inverse(&self) -> Self {
        let r = self.rotation.conjugate();
        Pose {
            rotation: r,
            translation: -so3::rotate(&r, &self.translation),
        }
    }

    /// Composition `self * other`.
    pub fn compose(&self, other: &Self) -> Self {
        Pose {
            rotation: self.rotation * other.rotation,
            translation: self.act(&other.translation),
        }
    }

    /// Exponential of a twist (linear part first).
    ///
    /// ```
    /// use dualsim::math::{Pose, Vec6};
    /// let xi = Vec6::new(0.1, -0.2, 0.3, 0.4, 0.5, -0.6);
    /// let back = Pose::exp(&xi).log();
    /// assert!((back - xi).norm() < 1e-14);
    /// ```
    pub fn exp(xi: &Vec6<T>) -> Self {
        let rho = xi.fixed_rows::<3>(0).into_owned();
        let omega = xi.fixed_rows::<3>(3).into_owned();
        Pose {
            rotation: so3::exp(&omega),
            translation: so3::left_jacobian(&omega) * rho,
        }
    }

    /// Logarithm: the twist whose exponential is this pose (rotation angle ≤ π).
    pub fn log(&self) -> Vec6<T> {
        let omega = so3::log(&self.rotation);
        let jl = so3::left_jacobian(&omega);
        // J_l is invertible for θ < 2π.
        let rho = jl.lu().solve(&self.translation).unwrap_or_else(Vec3::zeros);
        Vec6::new(rho.x, rho.y, rho.z, omega.x, omega.y, omega.z)
    }

    /// Converts every component to another scalar through its primal value.
    pub fn cast<U: Scalar>(&self) -> Pose<U> {
        let c = |x: T| U::from_re(x.re());
        Pose {
            rotation: Quat::new(
                c(self.rotation.w),
                c(self.rotation.i),
                c(self.rotation.j),
                c(self.rotation.k),
            ),
            translation: self.translation.map(c),
        }
    }
}

impl<T: Scalar> core::ops::Mul for Pose<T> {
    type Output = Pose<T>;
    fn mul(self, rhs: Self) -> Self {
        self.compose(&rhs)
    }
}
