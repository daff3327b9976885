//! Contact frames: an orthonormal tangent basis for a unit normal.

use crate::Scalar;
use crate::math::Vec3;
use crate::scalar::safe_normalize;

/// Two unit tangents `(t1, t2)` with `(t1, t2, n)` a right-handed
/// orthonormal frame. `t1 = normalize(e × n)` where `e` is the world axis
/// least aligned with `n` (chosen on primal values, so the frame is smooth
/// in `n` away from the switching surfaces).
///
/// ```
/// use dualsim::collision::tangent_basis;
/// use dualsim::math::Vec3;
/// let n = Vec3::new(0.0, 0.0, 1.0_f64);
/// let (t1, t2) = tangent_basis(&n);
/// assert!(t1.dot(&n).abs() < 1e-15 && t2.dot(&n).abs() < 1e-15);
/// assert!((t1.cross(&t2) - n).norm() < 1e-15);
/// ```
pub fn tangent_basis<T: Scalar>(n: &Vec3<T>) -> (Vec3<T>, Vec3<T>) {
    tangent_basis_from(n, least_aligned_axis(n))
}

/// Index of the world axis least aligned with `n` (primal values; ties go
/// to the lower index).
pub fn least_aligned_axis<T: Scalar>(n: &Vec3<T>) -> usize {
    let a = n.map(|x| x.re().abs());
    if a.x <= a.y && a.x <= a.z {
        0
    } else if a.y <= a.z {
        1
    } else {
        2
    }
}

/// Tangents built from a given world axis `k`: `t1 = normalize(e_k × n)`,
/// `t2 = n × t1`. Solvers fix `k` per contact for the whole step (chosen
/// with [`least_aligned_axis`] at the start), so the frame is smooth in
/// the iterates; re-choosing it at every evaluation would make the
/// tangential coordinates jump where two axes are equally aligned.
///
/// ```
/// use dualsim::collision::frame::tangent_basis_from;
/// use dualsim::math::Vec3;
/// let (t1, t2) = tangent_basis_from(&Vec3::new(0.0, 0.0, 1.0_f64), 0);
/// assert_eq!((t1, t2), (Vec3::new(0.0, -1.0, 0.0), Vec3::new(1.0, 0.0, 0.0)));
/// ```
pub fn tangent_basis_from<T: Scalar>(n: &Vec3<T>, k: usize) -> (Vec3<T>, Vec3<T>) {
    let mut e = Vec3::zeros();
    e[k] = T::one();
    let (t1, _) = safe_normalize(&e.cross(n)).unwrap_or_else(|| {
        // n parallel to e_k (not reached when k was chosen for n): use the next axis.
        let mut e2 = Vec3::zeros();
        e2[(k + 1) % 3] = T::one();
        safe_normalize(&e2.cross(n)).expect("a unit normal is not parallel to two axes")
    });
    let t2 = n.cross(&t1);
    (t1, t2)
}
