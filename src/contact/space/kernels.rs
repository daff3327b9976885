//! The `ipm` step residual as `#[kernel]`s: per-contact local rows of each
//! [`Law`](crate::contact::law::Law), the free-body dynamics rows, and the
//! contact kinematics `y = (φ, v_t1, v_t2)` with the contact impulses
//! `W_aᵀ f`, `W_bᵀ f` as functions of the two bodies' configurations,
//! tangent perturbations `δ` (`q ⊕ δ`), velocities, the step `h` and the
//! shape sizes. Their generated Jacobians give the `ift` right-hand sides
//! `∂r/∂θ` (see `diff::kernel_partials`) without dual numbers.
//!
//! The functions are the same maths as `residual.rs` (`local_residual`
//! with `nt = false` and no corrector), `dynamics::free::body_residual`
//! and `kinematics.rs` (`contact_kinematics` at `q⁺ = (q ⊕ δ) ⊕ h v⁺`);
//! `tests/all/diff/kernels.rs` checks values and Jacobians against them.
//!
//! Layouts: a configuration is `[p (3), r (4)]` (quaternion `[w, x, y, z]`),
//! a velocity `[ṗ (3), ω (3)]` (world frame), `δ = [δp (3), δθ (3)]`
//! (world-frame translation and rotation). The contact kernels
//! `contact_<pair>` all take
//! `(qa, δa, va, qb, δb, vb, h, sa, sb, sel, e, f)` with `sa` / `sb` the
//! shape sizes of `a` / `b` (sphere `[r]`, capsule `[r, l]`, box half
//! extents; a plane `b`: its frame normal and offset `[n, d]`), `sel` the
//! branch selectors of `collision::kernels`, `e` the world axis of the
//! tangent frame and `f = E x` the contact impulse, and return
//! `[y (3), W_aᵀ f (6), W_bᵀ f (6)]`. Static geometry is `b` with
//! `δb = vb = 0` and `qb` its pose (its rows `W_bᵀ f` are then unused).

use crate::collision::kernels::*;
use crate::{Scalar, kernel};

/// Quaternion product `a ⊗ b`.
#[kernel]
pub fn quat_mul<T: Scalar>(a: [T; 4], b: [T; 4]) -> [T; 4] {
    [
        a[0] * b[0] - (a[1] * b[1] + a[2] * b[2] + a[3] * b[3]),
        a[0] * b[1] + b[0] * a[1] + (a[2] * b[3] - a[3] * b[2]),
        a[0] * b[2] + b[0] * a[2] + (a[3] * b[1] - a[1] * b[3]),
        a[0] * b[3] + b[0] * a[3] + (a[1] * b[2] - a[2] * b[1]),
    ]
}

/// The retraction's half-step quaternion `φ(x) = [√(1 − ‖x‖²/4), x/2]`.
#[kernel(inline)]
pub fn phi<T: Scalar>(x: [T; 3]) -> [T; 4] {
    let a = [x[0] * 0.5, x[1] * 0.5, x[2] * 0.5];
    [sqrt(1 - dot3(a, a)), a[0], a[1], a[2]]
}

/// `(q ⊕ δ) ⊕ h v`: `p + δp + h ṗ`, `φ(h ω) ⊗ φ(δθ) ⊗ r`.
#[kernel(jacobian, inline)]
pub fn pose_after<T: Scalar>(q: [T; 7], d: [T; 6], v: [T; 6], h: T) -> [T; 7] {
    let p0: [T; 4] = phi([d[3], d[4], d[5]]);
    let r0: [T; 4] = quat_mul(p0, [q[3], q[4], q[5], q[6]]);
    let p1: [T; 4] = phi([h * v[3], h * v[4], h * v[5]]);
    let r1: [T; 4] = quat_mul(p1, r0);
    [
        q[0] + d[0] + h * v[0],
        q[1] + d[1] + h * v[1],
        q[2] + d[2] + h * v[2],
        r1[0],
        r1[1],
        r1[2],
        r1[3],
    ]
}

/// `L(x)ᵀ m` with `L(x) = c 𝟙 + u uᵀ / c + [u]×`, `u = x/2`,
/// `c = √(1 − ‖u‖²)` (`kinematics::phi_rotation_jacobian`).
#[kernel(jacobian, inline)]
pub fn phi_rotation_t<T: Scalar>(x: [T; 3], m: [T; 3]) -> [T; 3] {
    let u = [x[0] * 0.5, x[1] * 0.5, x[2] * 0.5];
    let c = sqrt(1 - dot3(u, u));
    let um = dot3(u, m) / c;
    let w: [T; 3] = cross3(u, m);
    [
        c * m[0] + u[0] * um - w[0],
        c * m[1] + u[1] * um - w[1],
        c * m[2] + u[2] * um - w[2],
    ]
}

/// `Wᵀ f` of one side of a contact (without the side's sign): lever arm
/// `r`, frame `(n, t1, t2)`, `L(hω)ᵀ` on the normal row's moment.
#[kernel(jacobian, inline)]
pub fn side_impulse<T: Scalar>(
    r: [T; 3],
    w: [T; 3],
    h: T,
    n: [T; 3],
    t1: [T; 3],
    t2: [T; 3],
    f: [T; 3],
) -> [T; 6] {
    let rn: [T; 3] = cross3(r, n);
    let mn: [T; 3] = phi_rotation_t([h * w[0], h * w[1], h * w[2]], rn);
    let m1: [T; 3] = cross3(r, t1);
    let m2: [T; 3] = cross3(r, t2);
    [
        n[0] * f[0] + t1[0] * f[1] + t2[0] * f[2],
        n[1] * f[0] + t1[1] * f[1] + t2[1] * f[2],
        n[2] * f[0] + t1[2] * f[1] + t2[2] * f[2],
        mn[0] * f[0] + m1[0] * f[1] + m2[0] * f[2],
        mn[1] * f[0] + m1[1] * f[1] + m2[1] * f[2],
        mn[2] * f[0] + m1[2] * f[1] + m2[2] * f[2],
    ]
}

/// `[y (3), W_aᵀ f (6), W_bᵀ f (6)]` of a contact `c = [gap, point_a,
/// point_b, normal]` between poses `pa`, `pb` (at `q⁺`) moving with `va`,
/// `vb` (`kinematics::contact_kinematics`).
#[kernel(jacobian, inline)]
#[allow(clippy::too_many_arguments)]
pub fn contact_rows<T: Scalar>(
    pa: [T; 7],
    va: [T; 6],
    pb: [T; 7],
    vb: [T; 6],
    h: T,
    c: [T; 10],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let n = [c[7], c[8], c[9]];
    let w: [T; 3] = cross3(e, n);
    let wl = sqrt(dot3(w, w));
    let t1 = [w[0] / wl, w[1] / wl, w[2] / wl];
    let t2: [T; 3] = cross3(n, t1);
    let ra = [c[1] - pa[0], c[2] - pa[1], c[3] - pa[2]];
    let rb = [c[4] - pb[0], c[5] - pb[1], c[6] - pb[2]];
    let oa = [va[3], va[4], va[5]];
    let ob = [vb[3], vb[4], vb[5]];
    let xa: [T; 3] = cross3(oa, ra);
    let xb: [T; 3] = cross3(ob, rb);
    let vt = [
        va[0] + xa[0] - (vb[0] + xb[0]),
        va[1] + xa[1] - (vb[1] + xb[1]),
        va[2] + xa[2] - (vb[2] + xb[2]),
    ];
    let wa: [T; 6] = side_impulse(ra, oa, h, n, t1, t2, f);
    let wb: [T; 6] = side_impulse(rb, ob, h, n, t1, t2, f);
    [
        c[0],
        dot3(t1, vt),
        dot3(t2, vt),
        wa[0],
        wa[1],
        wa[2],
        wa[3],
        wa[4],
        wa[5],
        -wb[0],
        -wb[1],
        -wb[2],
        -wb[3],
        -wb[4],
        -wb[5],
    ]
}

/// Sphere `a` against a plane `b`.
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_sphere_plane<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = sphere_plane(pa, sa[0], pb, [sb[0], sb[1], sb[2]], sb[3]);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Capsule end `sel[0]` (±1) against a plane.
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_capsule_plane<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = capsule_plane(pa, sa[0], sa[1], sel[0], pb, [sb[0], sb[1], sb[2]], sb[3]);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Box vertex `sel[0..3]` (signs) against a plane.
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_box_plane<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = box_plane(
        pa,
        sa,
        [sel[0], sel[1], sel[2]],
        pb,
        [sb[0], sb[1], sb[2]],
        sb[3],
    );
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Sphere against sphere.
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_sphere_sphere<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = sphere_sphere(pa, sa[0], pb, sb[0]);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Capsule `a` against sphere `b` (`sel[0..2] = (wt, t0)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_capsule_sphere<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = capsule_sphere(pa, sa[0], sa[1], sel[0], sel[1], pb, sb[0]);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Sphere `a` against capsule `b` (`sel[0..2] = (wt, t0)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_sphere_capsule<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let cf: [T; 10] = capsule_sphere(pb, sb[0], sb[1], sel[0], sel[1], pa, sa[0]);
    let c: [T; 10] = flip(cf);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Capsule against capsule (six selectors).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_capsule_capsule<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = capsule_capsule(pa, sa[0], sa[1], pb, sb[0], sb[1], sel);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Sphere `a` against box `b`, centre outside (`sel = (m, w)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_sphere_box_outside<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = sphere_box_outside(
        pa,
        sa[0],
        pb,
        [sb[0], sb[1], sb[2]],
        [sel[0], sel[1], sel[2]],
        [sel[3], sel[4], sel[5]],
    );
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Sphere `a` against box `b`, centre inside (`sel = (m, w)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_sphere_box_inside<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let c: [T; 10] = sphere_box_inside(
        pa,
        sa[0],
        pb,
        [sb[0], sb[1], sb[2]],
        [sel[0], sel[1], sel[2]],
        [sel[3], sel[4], sel[5]],
    );
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Box `a` against sphere `b`, centre outside (`sel = (m, w)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_box_sphere_outside<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let cf: [T; 10] = sphere_box_outside(
        pb,
        sb[0],
        pa,
        sa,
        [sel[0], sel[1], sel[2]],
        [sel[3], sel[4], sel[5]],
    );
    let c: [T; 10] = flip(cf);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Box `a` against sphere `b`, centre inside (`sel = (m, w)`).
#[kernel(jacobian, inline, partial(da, db, h, sa, sb))]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn contact_box_sphere_inside<T: Scalar>(
    qa: [T; 7],
    da: [T; 6],
    va: [T; 6],
    qb: [T; 7],
    db: [T; 6],
    vb: [T; 6],
    h: T,
    sa: [T; 3],
    sb: [T; 4],
    sel: [T; 6],
    e: [T; 3],
    f: [T; 3],
) -> [T; 15] {
    let pa: [T; 7] = pose_after(qa, da, va, h);
    let pb: [T; 7] = pose_after(qb, db, vb, h);
    let cf: [T; 10] = sphere_box_inside(
        pb,
        sb[0],
        pa,
        sa,
        [sel[0], sel[1], sel[2]],
        [sel[3], sel[4], sel[5]],
    );
    let c: [T; 10] = flip(cf);
    contact_rows(pa, va, pb, vb, h, c, e, f)
}

/// Free-body dynamics rows (`dynamics::free::body_residual`) of a body
/// with orientation `r`, perturbed by `δθ` (`φ(δθ) ⊗ r`), velocities
/// `v`, `v⁺`, applied force and torque `u`, mass `m`, body-frame inertia
/// `ib` (row major), gravity `g`, step `h`:
/// `m(ṗ⁺ − ṗ) − h(m g + f)`, `P⁺(ω⁺) − P⁻(ω) − h τ` with
/// `P±(ω) = c(ω) I ω ± (h/2) ω × I ω`, `I = R I_b Rᵀ`,
/// `c(ω) = √(1 − h²‖ω‖²/4)`.
#[kernel(jacobian, inline)]
#[allow(clippy::too_many_arguments, unused_variables)]
pub fn free_body_rows<T: Scalar>(
    r: [T; 4],
    dth: [T; 3],
    v: [T; 6],
    v1: [T; 6],
    u: [T; 6],
    m: T,
    ib: [T; 9],
    g: [T; 3],
    h: T,
) -> [T; 6] {
    let pd: [T; 4] = phi(dth);
    let q: [T; 4] = quat_mul(pd, r);
    let qi = [q[0], -q[1], -q[2], -q[3]];
    let w0 = [v[3], v[4], v[5]];
    let w1 = [v1[3], v1[4], v1[5]];
    let b0: [T; 3] = rotate(qi, w0);
    let b1: [T; 3] = rotate(qi, w1);
    let i0: [T; 3] = rotate(
        q,
        [
            ib[0] * b0[0] + ib[1] * b0[1] + ib[2] * b0[2],
            ib[3] * b0[0] + ib[4] * b0[1] + ib[5] * b0[2],
            ib[6] * b0[0] + ib[7] * b0[1] + ib[8] * b0[2],
        ],
    );
    let i1: [T; 3] = rotate(
        q,
        [
            ib[0] * b1[0] + ib[1] * b1[1] + ib[2] * b1[2],
            ib[3] * b1[0] + ib[4] * b1[1] + ib[5] * b1[2],
            ib[6] * b1[0] + ib[7] * b1[1] + ib[8] * b1[2],
        ],
    );
    let c0 = sqrt(1 - dot3(w0, w0) * h * h * 0.25);
    let c1 = sqrt(1 - dot3(w1, w1) * h * h * 0.25);
    let x0: [T; 3] = cross3(w0, i0);
    let x1: [T; 3] = cross3(w1, i1);
    let hh = h * 0.5;
    [
        (v1[0] - v[0]) * m - (g[0] * m + u[0]) * h,
        (v1[1] - v[1]) * m - (g[1] * m + u[1]) * h,
        (v1[2] - v[2]) * m - (g[2] * m + u[2]) * h,
        i1[0] * c1 + x1[0] * hh - (i0[0] * c0 - x0[0] * hh) - u[3] * h,
        i1[1] * c1 + x1[1] * hh - (i0[1] * c0 - x0[1] * hh) - u[4] * h,
        i1[2] * c1 + x1[2] * hh - (i0[2] * c0 - x0[2] * hh) - u[5] * h,
    ]
}

/// Local rows of a [`Law::Frictionless`](crate::contact::law::Law) contact:
/// `s − φ`, `γ s − κ`.
#[kernel]
pub fn local_frictionless<T: Scalar>(x: [T; 2], y: [T; 3], _mu: T, kappa: T) -> [T; 2] {
    [x[1] - y[0], x[0] * x[1] - kappa]
}

/// Local rows of a [`Law::Exact`](crate::contact::law::Law) contact: the four
/// equalities and the complementarity rows, `γ s − κ` and the Jordan
/// product `β ∘ η − κ e` of the second-order cone pair.
#[kernel]
pub fn local_exact<T: Scalar>(x: [T; 8], y: [T; 3], mu: T, kappa: T) -> [T; 8] {
    [
        x[1] - y[0],
        x[2] - mu * x[0],
        x[6] - y[1],
        x[7] - y[2],
        x[0] * x[1] - kappa,
        x[2] * x[5] + x[3] * x[6] + x[4] * x[7] - kappa,
        x[2] * x[6] + x[5] * x[3],
        x[2] * x[7] + x[5] * x[4],
    ]
}

/// Local rows of a [`Law::Pyramid`](crate::contact::law::Law) contact.
#[kernel]
pub fn local_pyramid<T: Scalar>(x: [T; 12], y: [T; 3], mu: T, kappa: T) -> [T; 12] {
    [
        x[1] - y[0],
        x[6] - x[10] - y[1],
        x[7] - x[10] + y[1],
        x[8] - x[10] - y[2],
        x[9] - x[10] + y[2],
        x[11] - mu * x[0] + x[2] + x[3] + x[4] + x[5],
        x[0] * x[1] - kappa,
        x[2] * x[6] - kappa,
        x[3] * x[7] - kappa,
        x[4] * x[8] - kappa,
        x[5] * x[9] - kappa,
        x[10] * x[11] - kappa,
    ]
}
