//! Spatial algebra (Featherstone): motion vectors (twists) and force vectors
//! (wrenches), both stored linear part first, and rigid-body inertia.
//!
//! For a motion `m = (v, ω)` and a force `f = (n, τ)` (force, torque):
//!
//! ```text
//! m₁ ×  m₂ = (ω₁ × v₂ + v₁ × ω₂,  ω₁ × ω₂)        (motion cross)
//! m  ×* f  = (ω × n,  ω × τ + v × n)              (force cross)
//! ```

use super::{Mat3, Mat6, Vec3, Vec6, skew};
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
        Motion {
            linear: Vec3::zeros(),
            angular: Vec3::zeros(),
        }
    }
    /// As a 6-vector (linear first).
    pub fn to_vec(&self) -> Vec6<T> {
        Vec6::new(
            self.linear.x,
            self.linear.y,
            self.linear.z,
            self.angular.x,
            self.angular.y,
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
        Force {
            linear: Vec3::zeros(),
            angular: Vec3::zeros(),
        }
    }
    /// As a 6-vector (force first).
    pub fn to_vec(&self) -> Vec6<T> {
        Vec6::new(
            self.linear.x,
            self.linear.y,
            self.linear.z,
            self.angular.x,
            self.angular.y,
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
        RigidInertia {
            mass,
            com: Vec3::zeros(),
            inertia,
        }
    }

    /// Momentum `I m` of the body moving with twist `m` (both at the frame origin).
    pub fn mul_motion(&self, m: &Motion<T>) -> Force<T> {
        let c = self.com;
        // h = m (v + ω × c),   L = I_c ω + c × h
        let h = (m.linear + m.angular.cross(&c)) * self.mass;
        Force {
            linear: h,
            angular: self.inertia * m.angular + c.cross(&h),
        }
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
        out.fixed_view_mut::<3, 3>(0, 0)
            .copy_from(&(Mat3::identity() * m));
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-cx * m));
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(cx * m));
        out.fixed_view_mut::<3, 3>(3, 3)
            .copy_from(&(self.inertia - cx * cx * m));
        out
    }

    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> RigidInertia<U> {
        let c = |x: T| U::from_re(x.re());
        RigidInertia {
            mass: c(self.mass),
            com: self.com.map(c),
            inertia: self.inertia.map(c),
        }
    }
}

/// Motion cross product on 6-vectors (linear first):
/// `a × b = (ω_a × v_b + v_a × ω_b, ω_a × ω_b)`.
///
/// ```
/// use dualsim::math::{spatial::{motion_cross, Motion}, Vec3, Vec6};
/// let a = Vec6::new(1.0, 2.0, 3.0, 0.1, -0.2, 0.3);
/// let b = Vec6::new(-1.0, 0.5, 2.0, 0.4, 0.5, -0.6);
/// let m = |x: &Vec6<f64>| Motion { linear: x.fixed_rows::<3>(0).into(), angular: x.fixed_rows::<3>(3).into() };
/// assert!((motion_cross(&a, &b) - m(&a).cross(&m(&b)).to_vec()).norm() < 1e-15);
/// ```
#[inline]
pub fn motion_cross<T: Scalar>(a: &Vec6<T>, b: &Vec6<T>) -> Vec6<T> {
    let (va, wa) = split(a);
    let (vb, wb) = split(b);
    join(&(wa.cross(&vb) + va.cross(&wb)), &wa.cross(&wb))
}

/// Force cross product on 6-vectors: `m ×* f = (ω × n, ω × τ + v × n)` for
/// a motion `m = (v, ω)` and a force `f = (n, τ)`.
///
/// ```
/// use dualsim::math::{spatial::{force_cross, motion_cross}, Vec6};
/// let (a, b) = (Vec6::new(1.0_f64, 2.0, 3.0, 0.1, -0.2, 0.3), Vec6::new(-1.0, 0.5, 2.0, 0.4, 0.5, -0.6));
/// let f = Vec6::new(0.3, -0.1, 0.7, 1.0, 2.0, -1.0);
/// // (a × b) · f = −b · (a ×* f)
/// assert!((motion_cross(&a, &b).dot(&f) + b.dot(&force_cross(&a, &f))).abs() < 1e-14);
/// ```
#[inline]
pub fn force_cross<T: Scalar>(m: &Vec6<T>, f: &Vec6<T>) -> Vec6<T> {
    let (v, w) = split(m);
    let (n, t) = split(f);
    join(&w.cross(&n), &(w.cross(&t) + v.cross(&n)))
}

/// The 6×6 matrix of `m ×` (motion cross product).
pub fn motion_cross_matrix<T: Scalar>(m: &Vec6<T>) -> Mat6<T> {
    let (v, w) = split(m);
    let mut out = Mat6::zeros();
    let sw = skew(&w);
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&sw);
    out.fixed_view_mut::<3, 3>(0, 3).copy_from(&skew(&v));
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&sw);
    out
}

/// The 6×6 matrix of `m ×*` (force cross product), `−(m ×)ᵀ`.
pub fn force_cross_matrix<T: Scalar>(m: &Vec6<T>) -> Mat6<T> {
    let (v, w) = split(m);
    let mut out = Mat6::zeros();
    let sw = skew(&w);
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&sw);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&skew(&v));
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&sw);
    out
}

/// The 6×6 matrix of `δv ↦ δv ×* h` for a fixed force `h = (n, τ)`:
/// `[[0, −[n]×], [−[n]×, −[τ]×]]`.
pub fn cross_force_operator<T: Scalar>(h: &Vec6<T>) -> Mat6<T> {
    let (n, t) = split(h);
    let mut out = Mat6::zeros();
    let sn = -skew(&n);
    out.fixed_view_mut::<3, 3>(0, 3).copy_from(&sn);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&sn);
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&(-skew(&t)));
    out
}

/// Linear and angular parts of a spatial 6-vector.
#[inline]
pub fn split<T: Scalar>(x: &Vec6<T>) -> (Vec3<T>, Vec3<T>) {
    (Vec3::new(x[0], x[1], x[2]), Vec3::new(x[3], x[4], x[5]))
}

/// A spatial 6-vector from its linear and angular parts.
#[inline]
pub fn join<T: Scalar>(a: &Vec3<T>, b: &Vec3<T>) -> Vec6<T> {
    Vec6::new(a.x, a.y, a.z, b.x, b.y, b.z)
}

impl<T: Scalar> RigidInertia<T> {
    /// The same body inertia expressed in another frame: `pose` maps this
    /// inertia's frame to the new one (`com' = pose · com`,
    /// `I' = R I Rᵀ`).
    pub fn transformed(&self, pose: &crate::math::Pose<T>) -> RigidInertia<T> {
        let r = super::so3::to_matrix(&pose.rotation);
        RigidInertia {
            mass: self.mass,
            com: pose.act(&self.com),
            inertia: r * self.inertia * r.transpose(),
        }
    }

    /// `I m` on a 6-vector motion (linear first), giving a 6-vector force.
    #[inline]
    pub fn mul_vec(&self, m: &Vec6<T>) -> Vec6<T> {
        let (v, w) = split(m);
        let c = self.com;
        let h = (v + w.cross(&c)) * self.mass;
        join(&h, &(self.inertia * w + c.cross(&h)))
    }
}

impl<T: Scalar> crate::math::Pose<T> {
    /// Transforms a motion 6-vector from this pose's child frame to its
    /// parent frame: `(R v + t × R ω, R ω)`.
    #[inline]
    pub fn act_motion(&self, m: &Vec6<T>) -> Vec6<T> {
        let (v, w) = split(m);
        let rw = super::so3::rotate(&self.rotation, &w);
        let rv = super::so3::rotate(&self.rotation, &v);
        join(&(rv + self.translation.cross(&rw)), &rw)
    }
}
