//! Time stepping of the articulated joints of a model (every joint that is
//! not a lone free body: robots' revolute, prismatic, spherical joints and
//! the free joint of a floating-base robot's base, whose six coordinates
//! — world-frame `ṗ` and `ω`, `dynamics::model` — are stepped with the rest
//! of the robot, coupled to its links through ABA).
//!
//! Lone free bodies ([`super::Model::lone_free_bodies`]) take the variational step of [`super::free`] inside the
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
//! one of its links (fixed- or floating-base robots, links against static
//! geometry and free bodies) is
//! solved by the contact-space backends (`ipm`, `lcp`, `implicit_ncp`,
//! `convex`) as one unit of an island, with the rows
//! `M(q)(v⁺ − v − h ABA(q, v, u)) − Σ W_cᵀ f_c` (`contact::space::robot`),
//! which reduce to these without contact; `soft` adds its generalized
//! contact forces to the controls (`v⁺ = v + h ABA(q, v, u + Λ)`).

use super::{Model, aba::aba};
use crate::Scalar;
use crate::math::DVec;

/// The velocity indices of the articulated joints.
pub fn articulated_dofs<T: Scalar>(model: &Model<T>) -> Vec<usize> {
    let lone = model.lone_free_bodies();
    model
        .bodies
        .iter()
        .zip(lone.iter())
        .filter(|(_, l)| !**l)
        .flat_map(|(b, _)| b.idx_v..b.idx_v + b.joint.nv())
        .collect()
}

/// True when the model has articulated joints with coordinates.
pub fn has_articulated<T: Scalar>(model: &Model<T>) -> bool {
    let lone = model.lone_free_bodies();
    model
        .bodies
        .iter()
        .zip(lone.iter())
        .any(|(b, l)| !*l && b.joint.nv() > 0)
}

/// Writes `v⁺ = v + h ABA(q, v, u)` into the articulated entries of
/// `v_next` (the lone free bodies' entries are left untouched).
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
