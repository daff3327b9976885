//! Analytical partial derivatives of the forward dynamics (Carpentier &
//! Mansard, RSS 2018): with `q̈ = ABA(q, v, τ)` and `τ = RNEA(q, v, q̈)`
//! an identity in `(q, v)`,
//!
//! ```text
//! ∂q̈/∂q = −M⁻¹ ∂RNEA/∂q |_(q, v, q̈),   ∂q̈/∂v = −M⁻¹ ∂RNEA/∂v |_(q, v, q̈),   ∂q̈/∂τ = M⁻¹
//! ```
//!
//! `M` comes from the composite inertias of the RNEA derivative pass (as in
//! the CRBA) and is factorized with the branch-sparse `LᵀDL`
//! of `dynamics::cholesky` (no fill-in) and `M⁻¹` formed by solving
//! against the identity; the two products with `M⁻¹` are dense. The RNEA partials from
//! `dynamics::rnea_derivatives`. `q` derivatives are along the tangent space
//! (`q ⊕ δ`).

use super::{Data, Model, aba::aba, cholesky, rnea_derivatives::rnea_derivatives};
use crate::Scalar;
use crate::math::DVec;

/// Computes `data.ddq` (= ABA), `data.ddq_dq`, `data.ddq_dv` and
/// `data.minv` (= ∂q̈/∂τ); also leaves `data.mass_matrix`,
/// `data.dtau_dq` and `data.dtau_dv` filled.
///
/// ```
/// use dualsim::dynamics::{aba_derivatives::aba_derivatives, Joint, Model};
/// use dualsim::math::{spatial::RigidInertia, DVec, Mat3, Pose, Vec3};
/// let mut m = Model::<f64>::new();
/// let mut link = RigidInertia::new(1.0, Mat3::zeros());
/// link.com = Vec3::new(2.0, 0.0, 0.0);
/// m.add_body("l", None, Joint::Revolute { axis: [0.0, 1.0, 0.0] }, Pose::identity(), link).unwrap();
/// let mut d = m.data();
/// let z = DVec::zeros(1);
/// aba_derivatives(&m, &mut d, &DVec::from_element(1, 0.3), &z, &z);
/// // θ̈ = (g / r) cos θ
/// assert!((d.ddq_dq[(0, 0)] + 9.81 / 2.0 * 0.3_f64.sin()).abs() < 1e-14);
/// assert!((d.minv[(0, 0)] - 0.25).abs() < 1e-15);
/// ```
#[track_caller]
pub fn aba_derivatives<T: Scalar>(
    model: &Model<T>,
    data: &mut Data<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    tau: &DVec<T>,
) {
    aba(model, data, q, v, tau);
    let ddq = core::mem::replace(&mut data.ddq, DVec::zeros(0));
    rnea_derivatives(model, data, q, v, &ddq);
    data.ddq = ddq;
    data.mass_factor.copy_from(&data.mass_matrix);
    cholesky::factorize(model, &mut data.mass_factor);
    cholesky::inverse(model, &data.mass_factor, &mut data.minv);
    // ∂q̈/∂q = −M⁻¹ ∂τ/∂q, ∂q̈/∂v = −M⁻¹ ∂τ/∂v (dense products, no allocation).
    let m_one = -T::one();
    data.ddq_dq
        .gemm(m_one, &data.minv, &data.dtau_dq, T::zero());
    data.ddq_dv
        .gemm(m_one, &data.minv, &data.dtau_dv, T::zero());
}
