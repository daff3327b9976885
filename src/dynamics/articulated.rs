//! Time stepping of the articulated joints of a model (every joint that is
//! not a free root: robots' revolute, prismatic, spherical and floating-base
//! joints).
//!
//! Free bodies take the variational step of [`super::free`] inside the
//! contact backends; the articulated coordinates take a semi-implicit
//! (symplectic) Euler step on the articulated-body algorithm:
//!
//! ```text
//! v⁺ = v + h · ABA(q, v, u),      q⁺ = q ⊕ h v⁺
//! ```
//!
//! written as the residual rows `r = v⁺ − v − h ABA(q, v, u)` so that the
//! implicit-function derivatives treat both kinds of joint alike. This is
//! the step of a robot without contact; a robot with a contact candidate on
//! one of its links (fixed-base robots, links against static geometry and
//! free bodies) is
//! solved by the `ipm` backend as one unit of an island, with the rows
//! `M(q)(v⁺ − v − h ABA(q, v, u)) − Σ W_cᵀ f_c` (`contact::ipm::robot`),
//! which reduce to these without contact.

use super::{aba::aba, Model};
use crate::math::DVec;
use crate::Scalar;

/// The velocity indices of the articulated joints.
pub fn articulated_dofs<T: Scalar>(model: &Model<T>) -> Vec<usize> {
    model
        .bodies
        .iter()
        .filter(|b| !b.is_free_root())
        .flat_map(|b| b.idx_v..b.idx_v + b.joint.nv())
        .collect()
}

/// True when the model has articulated joints with coordinates.
pub fn has_articulated<T: Scalar>(model: &Model<T>) -> bool {
    model.bodies.iter().any(|b| !b.is_free_root() && b.joint.nv() > 0)
}

/// Writes `v⁺ = v + h ABA(q, v, u)` into the articulated entries of
/// `v_next` (the free-root entries are left untouched).
pub fn articulated_velocity<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    u: &DVec<T>,
    h: T,
    v_next: &mut DVec<T>,
) {
    if !has_articulated(model) {
        return;
    }
    let mut data = model.data();
    let a = aba(model, &mut data, q, v, u);
    for i in articulated_dofs(model) {
        v_next[i] = v[i] + a[i] * h;
    }
}

/// Writes the residual rows `v⁺ − v − h ABA(q, v, u)` of the articulated
/// joints into `out`.
pub fn articulated_residual<T: Scalar>(
    model: &Model<T>,
    q: &DVec<T>,
    v: &DVec<T>,
    v_next: &DVec<T>,
    u: &DVec<T>,
    h: T,
    out: &mut DVec<T>,
) {
    if !has_articulated(model) {
        return;
    }
    let mut data = model.data();
    let a = aba(model, &mut data, q, v, u);
    for i in articulated_dofs(model) {
        out[i] = v_next[i] - v[i] - a[i] * h;
    }
}
