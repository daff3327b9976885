//! `∂r/∂θ` of a step residual from generated kernels (`#[kernel]`, see
//! `contact::space::kernels` and `collision::kernels`): the `ift`
//! right-hand sides without dual numbers ([`Partials::Kernel`](crate::diff::Partials)).
//!
//! Per free body `i` (dynamics rows `k = idx_v .. k + 6`) the Jacobian of
//! `free_body_rows` gives the columns of `Param::Q` (rotation directions
//! `φ(δθ) ⊗ r`), `V`, `U`, `Mass`, `Inertia`, `Gravity` and `Dt`. Per
//! contact candidate, the Jacobian of its `contact_<pair>` kernel (contact
//! kinematics `y = (φ, v_t1, v_t2)` and impulses `W_aᵀ f`, `W_bᵀ f` at
//! `q⁺ = (q ⊕ δ) ⊕ h v⁺`) in the directions `δ_a`, `δ_b`, `h` and the shape
//! sizes gives, with `C = ∂r_c/∂y` from the law's `local_<law>` kernel,
//! the contact rows `C ∂y/∂θ` and the dynamics rows `−∂(Wᵀ f)/∂θ` of
//! `Param::Q`, `Dt` and `Shape`; the law kernel's `∂r_c/∂μ` times
//! `∂μ/∂friction` (the combine rule, differentiated by one `Dual64`
//! evaluation of `Combine::apply`) gives `Param::Friction`.
//! `Param::Restitution` does not enter the `ipm` residual (zero column).
//!
//! Not covered (the caller falls back to dual numbers for every column):
//! models with articulated bodies (robots), and contacts the kernels do not
//! represent ([`selectors`] returns `None`: coincident sphere centres,
//! degenerate or exactly parallel capsule segments, pairs without a closed
//! form).

use num_dual::Dual64;

use crate::collision::kernels::{PairKernel, selectors};
use crate::contact::Param;
use crate::contact::candidates::{Candidate, Partner};
use crate::contact::law::Law;
use crate::contact::space::kernels::*;
use crate::contact::{SolveError, StepProblem};
use crate::geometry::Shape;
use crate::math::{DMat, DVec, Pose, Quat, Vec3};

/// Columns of a `contact_<pair>_partial` (the kernel's inputs `da`, `db`,
/// `h`, `sa`, `sb`; the other 38 of its 58 inputs are not generated).
const NK: usize = 20;
type ContactKernel = fn(
    [f64; 7],
    [f64; 6],
    [f64; 6],
    [f64; 7],
    [f64; 6],
    [f64; 6],
    f64,
    [f64; 3],
    [f64; 4],
    [f64; 6],
    [f64; 3],
    [f64; 3],
) -> ([f64; 15], [[f64; NK]; 15]);

// Column offsets of a contact kernel's `_partial`.
const DA: usize = 0;
const DB: usize = 6;
const H: usize = 12;
const SA: usize = 13;
const SB: usize = 16;

fn pose_array(p: &Pose<f64>) -> [f64; 7] {
    let t = p.translation;
    let r = p.rotation;
    [t.x, t.y, t.z, r.w, r.i, r.j, r.k]
}

fn array_pose(q: &[f64; 7]) -> Pose<f64> {
    Pose::new(
        Quat::new(q[3], q[4], q[5], q[6]),
        Vec3::new(q[0], q[1], q[2]),
    )
}

/// Shape sizes in the kernels' layout (`None`: not a kernel shape).
fn sizes(s: &Shape<f64>) -> Option<[f64; 4]> {
    Some(match s {
        Shape::Sphere { radius } => [*radius, 0.0, 0.0, 0.0],
        Shape::Capsule {
            radius,
            half_length,
        } => [*radius, *half_length, 0.0, 0.0],
        Shape::Box { half_extents } => [half_extents.x, half_extents.y, half_extents.z, 0.0],
        Shape::Plane { normal, offset } => [normal.x, normal.y, normal.z, *offset],
        _ => return None,
    })
}

fn kernel_of(k: &PairKernel) -> (ContactKernel, [f64; 6]) {
    match *k {
        PairKernel::SpherePlane => (contact_sphere_plane_partial, [0.0; 6]),
        PairKernel::CapsulePlane(s) => {
            (contact_capsule_plane_partial, [s, 0.0, 0.0, 0.0, 0.0, 0.0])
        }
        PairKernel::BoxPlane(s) => (contact_box_plane_partial, [s[0], s[1], s[2], 0.0, 0.0, 0.0]),
        PairKernel::SphereSphere => (contact_sphere_sphere_partial, [0.0; 6]),
        PairKernel::CapsuleSphere { sel, flip } => (
            if flip {
                contact_sphere_capsule_partial
            } else {
                contact_capsule_sphere_partial
            },
            [sel[0], sel[1], 0.0, 0.0, 0.0, 0.0],
        ),
        PairKernel::CapsuleCapsule(sel) => (contact_capsule_capsule_partial, sel),
        PairKernel::SphereBox { inside, m, w, flip } => (
            match (inside, flip) {
                (false, false) => contact_sphere_box_outside_partial,
                (true, false) => contact_sphere_box_inside_partial,
                (false, true) => contact_box_sphere_outside_partial,
                (true, true) => contact_box_sphere_inside_partial,
            },
            [m[0], m[1], m[2], w[0], w[1], w[2]],
        ),
    }
}

/// Value and Jacobian (`n × (n + 5)`: `x`, `y`, `μ`, `κ`) of the law's
/// local rows.
fn local_rows(
    law: Law,
    x: &DVec<f64>,
    y: &Vec3<f64>,
    mu: f64,
    kappa: f64,
) -> (DVec<f64>, DMat<f64>) {
    fn pack<const N: usize, const M: usize>(
        v: [f64; N],
        j: [[f64; M]; N],
    ) -> (DVec<f64>, DMat<f64>) {
        (
            DVec::from_column_slice(&v),
            DMat::from_fn(N, M, |r, c| j[r][c]),
        )
    }
    let yy = [y.x, y.y, y.z];
    match law {
        Law::Frictionless => {
            let (v, j) = local_frictionless_jacobian([x[0], x[1]], yy, mu, kappa);
            pack(v, j)
        }
        Law::Exact => {
            let (v, j) = local_exact_jacobian(core::array::from_fn(|k| x[k]), yy, mu, kappa);
            pack(v, j)
        }
        Law::Pyramid => {
            let (v, j) = local_pyramid_jacobian(core::array::from_fn(|k| x[k]), yy, mu, kappa);
            pack(v, j)
        }
    }
}

/// `∂r/∂θ` columns of `params` at `y` from the kernels, or `None` where
/// the kernels do not cover the problem (see the module docs). `cands`
/// are the contact candidates with the offsets of their unknowns in `y`
/// (empty for a contact-free backend).
pub fn kernel_partials(
    p: &StepProblem<'_, f64>,
    cands: &[Candidate<f64>],
    offsets: &[usize],
    y: &DVec<f64>,
    params: &[Param],
) -> Result<Option<DMat<f64>>, SolveError> {
    let model = p.model;
    if model.bodies.iter().any(|b| !b.is_free_root()) {
        return Ok(None);
    }
    let h = p.h;
    let mut out = DMat::zeros(y.len(), params.len());

    dynamics_rows(p, y, params, &mut out)?;

    // Contacts.
    let kappa = p.params.rho;
    for (cand, &off) in cands.iter().zip(offsets) {
        if cand.parts.is_some() || cand.link.is_some() {
            // Conic (bilevel) and robot-link contacts: dual partials.
            return Ok(None);
        }
        let ba = &model.bodies[cand.a];
        let shape_a = p.shapes[cand.a].as_ref().ok_or(SolveError::Mismatch {
            what: "a candidate body without a shape",
        })?;
        let qa: [f64; 7] = core::array::from_fn(|k| p.q[ba.idx_q + k]);
        let va: [f64; 6] = core::array::from_fn(|k| y[ba.idx_v + k]);
        let Other {
            shape: shape_b,
            q: qb,
            v: vb,
            kv: kb,
            friction: fb,
            body: jb,
        } = partner(p, cand, y)?;
        let pa1 = pose_after(qa, [0.0; 6], va, h);
        let pb1 = pose_after(qb, [0.0; 6], vb, h);
        let Some(pk) = selectors(
            shape_a,
            &array_pose(&pa1),
            shape_b,
            &array_pose(&pb1),
            cand.feature,
        ) else {
            return Ok(None);
        };
        let (Some(sa), Some(sb)) = (sizes(shape_a), sizes(shape_b)) else {
            return Ok(None);
        };
        let (kern, sel) = kernel_of(&pk);
        let n = cand.law.size();
        let x = y.rows(off, n).into_owned();
        let f = cand.law.impulse(&x);
        let mut e = [0.0; 3];
        e[cand.axis] = 1.0;
        let (kv_out, jk) = kern(
            qa,
            [0.0; 6],
            va,
            qb,
            [0.0; 6],
            vb,
            h,
            [sa[0], sa[1], sa[2]],
            sb,
            sel,
            e,
            [f.x, f.y, f.z],
        );
        if kv_out
            .iter()
            .chain(jk.iter().flatten())
            .any(|v| !v.is_finite())
        {
            return Ok(None);
        }
        let fa = p.materials[cand.a].friction;
        let mu = p.friction_combine.apply(fa, fb);
        let yk = Vec3::new(kv_out[0], kv_out[1], kv_out[2]);
        let (_, jl) = local_rows(cand.law, &x, &yk, mu, kappa);
        let (dmu_a, dmu_b) = friction_partials(p, fa, fb);
        let (ka, na) = (ba.idx_v, shape_a.params().len());
        let nbz = shape_b.params().len();
        for (col, prm) in params.iter().enumerate() {
            // Kernel input direction (one input) and friction derivative.
            let input = match *prm {
                Param::Q(i) if (ka..ka + 6).contains(&i) => Some(DA + i - ka),
                Param::Q(i) if kb.is_some_and(|k| (k..k + 6).contains(&i)) => {
                    Some(DB + i - kb.unwrap_or(0))
                }
                Param::Dt => Some(H),
                Param::Shape(b, k) if b == cand.a && k < na => Some(SA + k),
                Param::Shape(b, k) if Some(b) == jb && k < nbz => Some(SB + k),
                _ => None,
            };
            if let Some(ii) = input {
                let dy = Vec3::new(jk[0][ii], jk[1][ii], jk[2][ii]);
                for row in 0..n {
                    let mut s = 0.0;
                    for d in 0..3 {
                        s += jl[(row, n + d)] * dy[d];
                    }
                    out[(off + row, col)] += s;
                }
                for row in 0..6 {
                    out[(ka + row, col)] -= jk[3 + row][ii];
                }
                if let Some(kb) = kb {
                    for row in 0..6 {
                        out[(kb + row, col)] -= jk[9 + row][ii];
                    }
                }
            }
            let dmu = match *prm {
                Param::Friction(b) if b == cand.a => dmu_a,
                Param::Friction(b) if Some(b) == jb => dmu_b,
                _ => 0.0,
            };
            if dmu != 0.0 {
                for row in 0..n {
                    out[(off + row, col)] += jl[(row, n + 3)] * dmu;
                }
            }
        }
    }
    Ok(Some(out))
}

/// The dynamics rows of `out` (rows `idx_v .. idx_v + 6` of each free
/// body), from the Jacobian of `free_body_rows` in the directions of
/// `params`, added.
fn dynamics_rows(
    p: &StepProblem<'_, f64>,
    y: &DVec<f64>,
    params: &[Param],
    out: &mut DMat<f64>,
) -> Result<(), SolveError> {
    let model = p.model;
    let h = p.h;
    for (bi, b) in model.bodies.iter().enumerate() {
        let (kq, kv) = (b.idx_q, b.idx_v);
        let r = [p.q[kq + 3], p.q[kq + 4], p.q[kq + 5], p.q[kq + 6]];
        let v: [f64; 6] = core::array::from_fn(|d| p.v[kv + d]);
        let v1: [f64; 6] = core::array::from_fn(|d| y[kv + d]);
        let u: [f64; 6] = core::array::from_fn(|d| p.u[kv + d]);
        let ib = b.inertia.inertia;
        let ibs: [f64; 9] = core::array::from_fn(|k| ib[(k / 3, k % 3)]);
        let g = [p.gravity.x, p.gravity.y, p.gravity.z];
        phi_scalar_check(&v, &v1, h, bi)?;
        let (_, j) = free_body_rows_jacobian(r, [0.0; 3], v, v1, u, b.inertia.mass, ibs, g, h);
        for (col, prm) in params.iter().enumerate() {
            let input = match *prm {
                Param::Q(i) if (kv + 3..kv + 6).contains(&i) => Some(4 + i - kv - 3),
                Param::V(i) if (kv..kv + 6).contains(&i) => Some(7 + i - kv),
                Param::U(i) if (kv..kv + 6).contains(&i) => Some(19 + i - kv),
                Param::Mass(m) if m == bi => Some(25),
                Param::Inertia(m, k) if m == bi && k < 3 => Some(26 + 4 * k),
                Param::Gravity(k) if k < 3 => Some(35 + k),
                Param::Dt => Some(38),
                _ => None,
            };
            if let Some(ii) = input {
                for row in 0..6 {
                    out[(kv + row, col)] += j[row][ii];
                }
            }
        }
    }
    Ok(())
}

/// The other side `b` of a contact candidate, as the kernels take it.
struct Other<'a> {
    shape: &'a Shape<f64>,
    /// Pose (position, quaternion) at the start of the step.
    q: [f64; 7],
    /// Velocity after the step (zero for static geometry).
    v: [f64; 6],
    /// Offset of its velocity (`None` for static geometry).
    kv: Option<usize>,
    friction: f64,
    /// Its body (`None` for static geometry).
    body: Option<usize>,
}

/// The other side of candidate `cand` ([`Other`]), its velocity from `y`.
fn partner<'a>(
    p: &StepProblem<'a, f64>,
    cand: &Candidate<f64>,
    y: &DVec<f64>,
) -> Result<Other<'a>, SolveError> {
    let model = p.model;
    Ok(match cand.b {
        Partner::Body(j) => {
            let bb = &model.bodies[j];
            let s = p.shapes[j].as_ref().ok_or(SolveError::Mismatch {
                what: "a candidate body without a shape",
            })?;
            let q: [f64; 7] = core::array::from_fn(|k| p.q[bb.idx_q + k]);
            let v: [f64; 6] = core::array::from_fn(|k| y[bb.idx_v + k]);
            Other {
                shape: s,
                q,
                v,
                kv: Some(bb.idx_v),
                friction: p.materials[j].friction,
                body: Some(j),
            }
        }
        Partner::Static(j) => {
            let st = &p.statics[j];
            Other {
                shape: &st.shape,
                q: pose_array(&st.pose),
                v: [0.0; 6],
                kv: None,
                friction: st.material.friction,
                body: None,
            }
        }
    })
}

/// `∂μ/∂(friction of a, of b)`: the combine rule differentiated by one
/// `Dual64` evaluation each.
fn friction_partials(p: &StepProblem<'_, f64>, fa: f64, fb: f64) -> (f64, f64) {
    let dmu_a = p
        .friction_combine
        .apply(Dual64::from_re(fa).derivative(), Dual64::from_re(fb))
        .eps;
    let dmu_b = p
        .friction_combine
        .apply(Dual64::from_re(fa), Dual64::from_re(fb).derivative())
        .eps;
    (dmu_a, dmu_b)
}

/// The retraction's domain check of `dynamics::free` (`‖h ω‖ < 2`) for
/// both velocities, as its typed error.
fn phi_scalar_check(v: &[f64; 6], v1: &[f64; 6], h: f64, body: usize) -> Result<(), SolveError> {
    for w in [v, v1] {
        crate::math::integrate::phi_scalar(&Vec3::new(w[3], w[4], w[5]), h).map_err(|source| {
            SolveError::from(crate::dynamics::free::DynamicsError::Retraction { body, source })
        })?;
    }
    Ok(())
}
