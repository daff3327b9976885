//! Continuous collision for `lcp` (`[sim] ccd = true`): the step split at
//! each time of impact (Jade, Yang et al. 2023, IV-B), with Newton's
//! impact law at the impact and a differentiable time of impact.
//!
//! # The split step
//!
//! A step of duration `h` from `(q, v)` is a sequence of sub-steps. Each
//! sub-step of duration `t` is the ordinary `lcp` step of that duration
//! (`M(v⁺ − v) = t(u − c) + Jᵀf`, `q⁺ = q ⊕ t v⁺`, the same contact law),
//! so that, away from any contact, a body's centre after a sub-step of
//! duration `t` is
//!
//! `c(t) = c + t v⁺(t) = c + t v + t² a`, with `a = g + f/m`
//!
//! (the semi-implicit Euler trajectory of the sub-step, not the continuous
//! parabola `c + t v + t² a / 2`). Starting with the remaining time
//! `τ = h`:
//!
//! 1. The time of impact `t_c`: the first root of the gap `φ(c(t))` of
//!    any pair in the sub-step, from `t = 0` up to its end `τ`, both ends
//!    included ("Classification" below).
//! 2. No root: the sub-step of duration `τ` ends the step.
//! 3. A root: the sub-step of duration `t_c` brings the pair to `φ = 0`;
//!    then the impact at `q_c = q(t_c)`: the velocity-level
//!    boxed LCP of the contacts touching there (gap ≤ [`TOUCH`]),
//!    `M(v' − v⁻) = Wᵀf` with the contact frames and impulse maps `W`
//!    at `q_c`, the normal rows `v_n' + e min(v_n⁻, 0) ≥ 0 ⊥ f_n ≥ 0`
//!    (`v_n = W_n v`; Newton's law, `e` the pair's combined restitution)
//!    and the friction box; then `τ ← τ − t_c` from `(q_c, v')` and back
//!    to 1 (at most [`MAX_IMPACTS`] impacts per step, then a typed
//!    error).
//!
//! # Classification
//!
//! Every pair with a time of impact is in exactly one of three classes at
//! the start of a sub-step, on primal values (`φ₀`, `φ̇₀` its gap and gap
//! rate there, `h` the whole step's duration):
//!
//! * **apart** (`φ₀ > TOUCH`): its time of impact is the first root of
//!   `φ(c(t))` in `(0, τ + EDGE h]`;
//! * **touching and approaching** (`|φ₀| ≤ TOUCH` and `φ̇₀ h < −TOUCH`,
//!   i.e. on its start velocity it would leave the touching band within
//!   one step): an impact *now*, at the root of `φ(c(t))` next to `t = 0`
//!   (Newton from 0; it lies within `TOUCH/|φ̇₀|` of 0, a little negative
//!   when the pair closed within round-off before the start), kept in
//!   `[−EDGE h, τ + EDGE h]`;
//! * **resting** (touching and not approaching, separating or slower than
//!   `TOUCH/h`) or penetrating deeper than `TOUCH`: no time of impact;
//!   the sub-step's contact solve holds it (position-level and inelastic,
//!   with `lcp`'s restitution bias for an approaching one, see the
//!   backend docs).
//!
//! So a gap that closes exactly at a step boundary is the same impact on
//! either side of round-off: a root at `τ` (or within `EDGE h` past it)
//! is taken in this step, with a remaining sub-step of (almost) zero
//! duration; a root just past that window leaves the pair apart by more
//! than round-off at the end of the step and touching and approaching at
//! the start of the next, whose impact is then at `t_c ≈ 0`. After an
//! impact every touching contact separates or rests
//! (`v_n' ≥ −e min(v_n⁻, 0) ≥ 0`), so the same pair is not met again.
//!
//! In both cases `t_c` is the root of its implicit equation
//! `φ(q(t_c)) = 0` and keeps its derivative parts (from `refine`) even
//! where its primal value is 0 or `τ`: the derivatives are those of the
//! continuous-time impact, the one-sided limit from the open side (the
//! side where the impact is inside the step), which is the
//! continuous-time derivative whenever the continuous trajectory is
//! differentiable there (a head-on or oblique impact at `φ̇ ≠ 0`; a
//! grazing one is not).
//!
//! # Simultaneous impacts
//!
//! The impact LCP at pair `k`'s `t_c` takes every touching contact
//! except those of other pairs that are touching and approaching there
//! with a time of impact of their own (a tie with `k`): those are met
//! in the next sub-step at their own `t_c ≈ 0`, so each pair's
//! derivative is that of its own implicit equation (two balls reaching
//! a plane at the same instant are independent, and stay so). For pairs
//! that share a body, simultaneous impacts have no unique
//! continuous-time derivative; this is the one-sided limit in which the
//! pair found first meets first (after its impact the other one is
//! met only if it still approaches). Resting contacts (touching, not
//! approaching: a Newton's cradle's chain) stay in the impact LCP.
//!
//! # The sub-step up to an impact
//!
//! The ordinary sub-step of duration `t_c` up to an impact leaves out of
//! its contact problem the pair of that impact and every pair tied with
//! it (a time of impact within `EDGE h` of `t_c`): their gaps close at
//! its end by construction (the time of impact is the root along the
//! sub-step's own trajectory), and the impact solve takes them. With
//! their position-level rows `φ(q⁺)/t_c ≥ 0` kept, the round-off of an
//! exactly closing gap became an impulse of about `ulp/t_c` (1e-11 m/s
//! for `t_c` = 1e-6 s), which central differences saw whenever their
//! perturbation put an impact just past a step boundary (`fd` off by up
//! to 7e-4 there, and a few linearization loops that did not converge).
//! The other contacts of the sub-step (resting ones) keep their rows.
//!
//! # Zero-duration sub-steps
//!
//! A sub-step whose duration is at most `EDGE h` in magnitude on primal
//! values (the sub-step up to an impact at `t_c ≈ 0`, the remainder after
//! one at `t_c ≈ τ`) is free flight, `M(v⁺ − v) = t (u − c)`,
//! `q⁺ = q ⊕ t v⁺`, with no contact impulse: the ordinary step divides
//! its normal rows by the duration (`φ(q⁺)/t`), which has no primal part
//! here, and over a duration of primal size ≤ `EDGE h` an impulse of a
//! loaded contact is ≤ `EDGE h |a|`. Free flight is computed in the
//! scalar type and never divides by `t`, so a duration with zero primal
//! part and non-zero derivative parts is exact to every order (hyper-dual
//! Hessians included) for the bodies that move freely over it: this is
//! the one-sided limit `t → 0⁺` of the split step, and for the pair at
//! its impact the time-of-impact model itself (`c(t)` above is free
//! motion). A body held by a resting, loaded contact (under gravity or
//! a control) during a zero-duration sub-step gets `t a` of velocity and
//! `t² a` of position from it, which the next sub-step's position-level
//! rows take back: exact to first order, off by `O(δ² |a| / h)` in second
//! derivatives (`δ` the duration's derivative part).
//!
//! The impact has no time scale: its rows are `W(q_c) v'`, exact for any
//! geometry (two equal frictionless balls with `e = 1` exchange the
//! normal components of their velocities along the line of centres at
//! `t_c`, whatever the obliquity). Its active set is solved for on primal
//! values; the active set's rows are linear in `(v', f)` and are solved
//! in the scalar type (`impact`), so the derivative parts of `v'` carry
//! those of `W(q_c)` — the impact normal's dependence on `q_c`, hence on
//! `t_c` and the start of the step.
//!
//! # Times of impact
//!
//! Pairs with a time of impact: a free body's sphere against a static
//! plane, a static sphere, a static box, and another free body's sphere.
//! The first root of the gap along `c(t)` is found on primal values:
//! sphere–plane and sphere–static-sphere in closed form (the quadratic
//! `α t² + β t + γ = 0`), sphere–sphere in closed form when the relative
//! acceleration is zero (the quadratic in `|d + t Δv|² = R²`), otherwise
//! (sphere–box, accelerated sphere pairs) by conservative advancement
//! (`t += φ(t) / S`, `S` a bound on the approach speed over the sub-step)
//! then Newton. The root is then refined by `DERIVATIVE_ORDER + 1` Newton
//! steps `t ← t − φ(t)/φ̇(t)` in the scalar type, so its derivative parts
//! are those of the implicit function `φ(c(t_c); θ) = 0`:
//! `∂t_c/∂θ = −(∂φ/∂θ) / φ̇`, e.g. `∂t_c/∂q = −J_n / (J_n q̇)` and
//! `∂t_c/∂q̇ = −t_c J_n / (J_n q̇)` without acceleration. Every derivative
//! method (`ift`, `lift`, `unrolled`, `fd`) then differentiates through
//! the split.
//!
//! # Refused
//!
//! Any other pair (a box, capsule, cylinder, … on a free body, or a
//! sphere against another static shape) has no time of impact here: it
//! is refused with [`SolveError::UnsupportedPair`] naming the two shapes'
//! owners, unless a conservative test shows that the ordinary step cannot
//! miss it in this sub-step (their bounding balls stay apart, or their
//! relative motion is below both the candidate margin and half the
//! smaller shape's inradius). Articulated robots are refused under
//! continuous collision.

use super::Lcp;
use crate::collision::sphere_box::sphere_box;
use crate::contact::candidates::silico::conic_inradius;
use super::solver::{self, LcpError, Status};
use crate::contact::candidates::{candidates_into, DetectScratch, Partner};
use crate::contact::delassus;
use crate::contact::island::{islands, Island, UnitKind};
use crate::contact::space::evaluate::{evaluate, Eval};
use crate::contact::{ContactBackend, ContactImpulse, SolveError, StepProblem, StepSolution};
use crate::dynamics::free::world_inertia;
use crate::geometry::Shape;
use crate::math::{DMat, DVec, Pose, Vec3};
use crate::Scalar;

/// Gap (m) at or below which a pair is touching: it has no time of impact
/// and takes part in the impact solves.
pub const TOUCH: f64 = delassus::TOUCH;

/// Relative width (of the step's duration `h`) of the time window around
/// a sub-step's ends: a root up to `EDGE h` past the end of a sub-step is
/// still its impact, and a sub-step whose duration is at most `EDGE h` in
/// magnitude is a zero-duration sub-step (module docs).
pub const EDGE: f64 = 1e-9;

/// Largest number of impacts in one step.
pub const MAX_IMPACTS: usize = 64;

/// The error of [`crate::contact::ContactBackend::solve_root`] for a split
/// step (it has no single residual).
pub const SPLIT: &str = "the implicit function of a step split at a time of impact \
     (continuous collision): the derivative methods differentiate the split step itself";

/// What a free body's sphere can hit.
#[derive(Clone, Debug)]
enum Other<T: Scalar> {
    /// Static half-space `n · x ≤ d`.
    Plane { n: Vec3<T>, d: T },
    /// Static sphere of centre `c`, radius `r`.
    Ball { c: Vec3<T>, r: T },
    /// Static box.
    Cuboid { pose: Pose<T>, half: Vec3<T> },
    /// Free body `j`'s sphere of radius `r`.
    Body { j: usize, r: T },
}

/// A pair with a time of impact: free body `i`'s sphere of radius `r`
/// against `other`.
#[derive(Clone, Debug)]
struct Pair<T: Scalar> {
    i: usize,
    r: T,
    other: Other<T>,
    /// The other side as the contact candidates name it.
    partner: Partner,
}

/// Whether the contact candidate `(a, b)` is the pair of body `i` and
/// `partner` (either order for two bodies).
fn same_pair((i, partner): (usize, Partner), a: usize, b: Partner) -> bool {
    match (partner, b) {
        (Partner::Body(j), Partner::Body(jb)) => (a == i && jb == j) || (a == j && jb == i),
        (Partner::Static(s), Partner::Static(sb)) => a == i && s == sb,
        _ => false,
    }
}

/// Centre, velocity and acceleration of free body `i` at the start of a
/// sub-step (`c(t) = c + t v + t² a`).
struct Motion<T: Scalar> {
    c: Vec3<T>,
    v: Vec3<T>,
    a: Vec3<T>,
}

fn motion<T: Scalar>(p: &StepProblem<'_, T>, i: usize) -> Motion<T> {
    let b = &p.model.bodies[i];
    let (kq, kv) = (b.idx_q, b.idx_v);
    let m = b.inertia.mass;
    let v3 = |x: &DVec<T>, k: usize| Vec3::new(x[k], x[k + 1], x[k + 2]);
    Motion {
        c: v3(p.q, kq),
        v: v3(p.v, kv),
        a: p.gravity + v3(p.u, kv) / m,
    }
}

impl<T: Scalar> Motion<T> {
    fn at(&self, t: T) -> Vec3<T> {
        self.c + self.v * t + self.a * (t * t)
    }
    fn rate(&self, t: T) -> Vec3<T> {
        self.v + self.a * (t + t)
    }
}

/// The gap of a pair at sub-step time `t` and its rate `φ̇(t)`.
fn gap_at<T: Scalar>(p: &StepProblem<'_, T>, pair: &Pair<T>, t: T) -> (T, T) {
    let mi = motion(p, pair.i);
    let ci = mi.at(t);
    let vi = mi.rate(t);
    match &pair.other {
        Other::Plane { n, d, .. } => (n.dot(&ci) - *d - pair.r, n.dot(&vi)),
        Other::Ball { c, r, .. } => {
            let dlt = ci - c;
            let dist = crate::scalar::safe_norm(&dlt);
            let n = if dist.re() > 0.0 {
                dlt / dist
            } else {
                Vec3::z()
            };
            (dist - *r - pair.r, n.dot(&vi))
        }
        Other::Cuboid { pose, half, .. } => {
            let c = sphere_box(&ci, pair.r, pose, half);
            (c.gap, c.normal.dot(&vi))
        }
        Other::Body { j, r } => {
            let mj = motion(p, *j);
            let dlt = ci - mj.at(t);
            let dist = crate::scalar::safe_norm(&dlt);
            let n = if dist.re() > 0.0 {
                dlt / dist
            } else {
                Vec3::z()
            };
            (dist - *r - pair.r, n.dot(&(vi - mj.rate(t))))
        }
    }
}

/// The smallest root in `(0, tau]` of `α t² + β t + γ` with `γ > 0`.
fn quadratic_root(alpha: f64, beta: f64, gamma: f64, tau: f64) -> Option<f64> {
    let mut roots = [f64::NAN; 2];
    if alpha.abs() <= 1e-300 {
        if beta < 0.0 {
            roots[0] = -gamma / beta;
        }
    } else {
        let disc = beta * beta - 4.0 * alpha * gamma;
        if disc < 0.0 {
            return None;
        }
        let qq = -0.5 * (beta + beta.signum() * disc.sqrt());
        if qq != 0.0 {
            roots = [qq / alpha, gamma / qq];
        }
    }
    roots
        .into_iter()
        .filter(|t| t.is_finite() && *t > 0.0 && *t <= tau)
        .fold(None, |acc: Option<f64>, t| Some(acc.map_or(t, |a| a.min(t))))
}

/// The time of impact of a pair in a sub-step of duration `tau` of a step
/// of duration `h`, on primal values (module docs, "Classification"):
///
/// * touching (`|φ₀| ≤ TOUCH`) and approaching (`φ̇₀ h < −TOUCH`): the
///   root of `φ(c(t)) = 0` next to `t = 0` by Newton from `0` (it may be a
///   little negative: a pair that closed within round-off before the
///   start), kept if it lies in `[−EDGE h, tau + EDGE h]`;
/// * apart (`φ₀ > TOUCH`): the first root in `(0, tau + EDGE h]`;
/// * otherwise (touching and not approaching, or penetrating deeper than
///   `TOUCH`): `None`.
fn first_root(p: &StepProblem<'_, f64>, pair: &Pair<f64>, tau: f64, h: f64) -> Option<f64> {
    let (phi0, rate0) = gap_at(p, pair, 0.0);
    let end = tau + EDGE * h;
    if phi0 < -TOUCH {
        return None;
    }
    if phi0 <= TOUCH {
        if !(rate0 * h < -TOUCH) {
            return None;
        }
        let scale = 1e-12 * (1.0 + pair.r);
        let mut t = 0.0;
        for _ in 0..50 {
            let (f, df) = gap_at(p, pair, t);
            if !(df < 0.0) {
                return None;
            }
            let dt = f / df;
            t -= dt;
            if dt.abs() <= 1e-15 * (h + t.abs()) || f.abs() <= scale * 1e-3 {
                break;
            }
        }
        return (t >= -EDGE * h && t <= end && gap_at(p, pair, t).0.abs() <= 1e3 * scale)
            .then_some(t);
    }
    let tau = end;
    let mi = motion(p, pair.i);
    // Relative motion against the other side.
    let (dv, da) = match &pair.other {
        Other::Body { j, .. } => {
            let mj = motion(p, *j);
            (mi.v - mj.v, mi.a - mj.a)
        }
        _ => (mi.v, mi.a),
    };
    let speed = dv.norm() + 2.0 * tau * da.norm();
    if !(phi0 < speed * tau) {
        return None; // cannot close the gap within the sub-step
    }
    let closed = match &pair.other {
        Other::Plane { n, .. } => Some(quadratic_root(n.dot(&mi.a), n.dot(&mi.v), phi0, tau)),
        Other::Ball { c, r, .. } if da.norm() == 0.0 => {
            let d = mi.c - c;
            let rr = *r + pair.r;
            Some(quadratic_root(
                dv.dot(&dv),
                2.0 * d.dot(&dv),
                d.dot(&d) - rr * rr,
                tau,
            ))
        }
        Other::Body { j, r } if da.norm() == 0.0 => {
            let d = mi.c - motion(p, *j).c;
            let rr = *r + pair.r;
            Some(quadratic_root(
                dv.dot(&dv),
                2.0 * d.dot(&dv),
                d.dot(&d) - rr * rr,
                tau,
            ))
        }
        _ => None,
    };
    if let Some(t) = closed {
        return t;
    }
    // Conservative advancement, then Newton.
    let scale = 1e-12 * (1.0 + pair.r);
    let mut t = 0.0;
    let mut phi = phi0;
    for _ in 0..100_000 {
        if phi <= 1e-3 * phi0 || phi <= scale {
            break;
        }
        t += phi / speed;
        if t > tau {
            return None;
        }
        phi = gap_at(p, pair, t).0;
    }
    for _ in 0..50 {
        let (f, df) = gap_at(p, pair, t);
        if f.abs() <= scale {
            break;
        }
        if !(df < 0.0) {
            return None;
        }
        t -= f / df;
    }
    let f = gap_at(p, pair, t).0;
    (f.abs() <= 1e3 * scale && t > 0.0 && t <= tau).then_some(t)
}

/// The refinement of a primal root `t0` in `T` (module docs).
fn refine<T: Scalar>(p: &StepProblem<'_, T>, pair: &Pair<T>, t0: f64) -> T {
    let mut t = T::from_re(t0);
    for _ in 0..=T::DERIVATIVE_ORDER {
        let (f, df) = gap_at(p, pair, t);
        if df.re() == 0.0 {
            break;
        }
        t -= f / df;
    }
    t
}

/// Every pair with a time of impact, after refusing those without one
/// that the sub-step of duration `tau` could miss (module docs).
fn pairs<T: Scalar>(lcp: &Lcp, p: &StepProblem<'_, T>, tau: f64) -> Result<Vec<Pair<T>>, SolveError> {
    if crate::dynamics::articulated::has_articulated(p.model) || !p.link_shapes.is_empty() {
        return Err(SolveError::Unsupported {
            backend: Lcp::NAME,
            what: "continuous collision with articulated robots (ccd = true steps free bodies only)",
        });
    }
    let lone = p.model.lone_free_bodies();
    let bodies: Vec<usize> = (0..p.model.bodies.len())
        .filter(|&i| lone[i] && p.shapes.get(i).is_some_and(|s| s.is_some()))
        .collect();
    let sphere = |i: usize| match &p.shapes[i] {
        Some(Shape::Sphere { radius }) => Some(*radius),
        _ => None,
    };
    let mut out = Vec::new();
    let name = |i: usize| p.model.bodies[i].name.clone();
    let refuse = |a: String, b: String| SolveError::UnsupportedPair {
        backend: Lcp::NAME,
        what: "continuous collision (no time of impact for this pair of shapes)",
        pair: Box::new([a, b]),
    };
    let bound = |i: usize| -> (f64, f64, f64) {
        // (bounding radius, inradius, reach over tau)
        let s = p.shapes[i].as_ref().expect("a body with a shape");
        let big = crate::collision::bounding_radius(s).unwrap_or(f64::INFINITY);
        let m = motion(p, i);
        let kv = p.model.bodies[i].idx_v;
        let w = (3..6).map(|d| p.v[kv + d].re().powi(2)).sum::<f64>().sqrt();
        let lin = m.v.map(|x| x.re()).norm() + tau * m.a.map(|x| x.re()).norm();
        (big, conic_inradius(s), tau * (lin + w * big))
    };
    let margin = lcp.params.margin;
    for (ii, &i) in bodies.iter().enumerate() {
        let (ri, ini, di) = bound(i);
        let ci = motion(p, i).c.map(|x| x.re());
        for (si, st) in p.statics.iter().enumerate() {
            let other = match (sphere(i), &st.shape) {
                (Some(_), Shape::Plane { normal, offset }) => {
                    let n = st.pose.act(normal) - st.pose.translation;
                    Some(Other::Plane {
                        n,
                        d: *offset + n.dot(&st.pose.translation),
                    })
                }
                (Some(_), Shape::Sphere { radius }) => Some(Other::Ball {
                    c: st.pose.translation,
                    r: *radius,
                }),
                (Some(_), Shape::Box { half_extents }) => Some(Other::Cuboid {
                    pose: st.pose,
                    half: *half_extents,
                }),
                _ => None,
            };
            if let (Some(r), Some(other)) = (sphere(i), other) {
                out.push(Pair {
                    i,
                    r,
                    other,
                    partner: Partner::Static(si),
                });
                continue;
            }
            // No time of impact: safe only if the step cannot miss it.
            let lower = match &st.shape {
                Shape::Plane { normal, offset } => {
                    let t = st.pose.translation.map(|x| x.re());
                    let n = (st.pose.act(normal) - st.pose.translation).map(|x| x.re());
                    n.dot(&ci) - offset.re() - n.dot(&t) - ri
                }
                sh => match crate::collision::bounding_radius(sh) {
                    Some(rs) => (ci - st.pose.translation.map(|x| x.re())).norm() - ri - rs,
                    None => f64::NEG_INFINITY,
                },
            };
            let thin = 0.5 * ini.min(conic_inradius(&st.shape).max(0.0));
            if !(lower > di || (di <= margin && di <= thin)) {
                return Err(refuse(name(i), st.name.clone()));
            }
        }
        for &j in &bodies[ii + 1..] {
            if let (Some(r), Some(rj)) = (sphere(i), sphere(j)) {
                out.push(Pair {
                    i,
                    r,
                    other: Other::Body { j, r: rj },
                    partner: Partner::Body(j),
                });
                continue;
            }
            let (rj, inj, dj) = bound(j);
            let cj = motion(p, j).c.map(|x| x.re());
            let lower = (ci - cj).norm() - ri - rj;
            let d = di + dj;
            if !(lower > d || (d <= margin && d <= 0.5 * ini.min(inj))) {
                return Err(refuse(name(i), name(j)));
            }
        }
    }
    Ok(out)
}

/// The first impact of a sub-step of duration `tau` of a step of duration
/// `h` on primal values: `(pair index, t_c)`.
fn first_impact(
    lcp: &Lcp,
    p: &StepProblem<'_, f64>,
    tau: f64,
    h: f64,
) -> Result<Option<(usize, f64)>, SolveError> {
    let ps = pairs(lcp, p, tau.max(0.0))?;
    let mut best: Option<(usize, f64)> = None;
    for (k, pair) in ps.iter().enumerate() {
        if let Some(t) = first_root(p, pair, tau, h) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((k, t));
            }
        }
    }
    Ok(best)
}

/// The pairs of a sub-step of duration `tau` (primal values) whose time
/// of impact is at most `t0 + EDGE h` (`t0` the first one): the pair of
/// the first impact and those tied with it, whose gaps close at the end
/// of the sub-step up to `t0`.
fn closing_at(
    lcp: &Lcp,
    p: &StepProblem<'_, f64>,
    tau: f64,
    h: f64,
    t0: f64,
) -> Result<Vec<(usize, Partner)>, SolveError> {
    let ps = pairs(lcp, p, tau.max(0.0))?;
    Ok(ps
        .iter()
        .filter(|pair| first_root(p, pair, tau, h).is_some_and(|t| t <= t0 + EDGE * h))
        .map(|pair| (pair.i, pair.partner))
        .collect())
}

/// Whether the step of `p` is split at a time of impact.
pub fn splits(lcp: &Lcp, p: &StepProblem<'_, f64>) -> Result<bool, SolveError> {
    Ok(p.ccd && first_impact(lcp, p, p.h, p.h)?.is_some())
}

/// One sub-step of duration `p.h` of a step of duration `h` (module docs):
/// the ordinary `lcp` step, or, when `|p.h|` is at most `EDGE h` on primal
/// values, the zero-duration sub-step: free flight
/// (`M(v⁺ − v) = p.h (u − c)`, `q⁺ = q ⊕ p.h v⁺`, no contact impulse),
/// which never divides by the duration, so a duration with zero primal
/// part and non-zero derivative parts is exact in any scalar.
///
/// The ordinary step leaves out the candidates of the pairs in
/// `leave_out` (the sub-step up to a time of impact: the pairs closing
/// there, module docs, "The sub-step up to an impact").
fn sub_step<T: Scalar>(
    lcp: &Lcp,
    p: &StepProblem<'_, T>,
    h: f64,
    leave_out: &[(usize, Partner)],
) -> Result<StepSolution<T>, SolveError> {
    if p.h.re().abs() > EDGE * h {
        let out = |c: &crate::contact::candidates::Candidate<f64>| {
            c.link.is_none() && leave_out.iter().any(|&pair| same_pair(pair, c.a, c.b))
        };
        return Ok(delassus::solve_without(lcp, p, &out)?.0);
    }
    let dynamics = SolveError::Dynamics;
    let (v_next, _) = crate::dynamics::free::free_flight_velocity(
        p.model,
        p.q,
        p.v,
        p.u,
        &p.gravity,
        p.h,
        &Default::default(),
    )
    .map_err(dynamics)?;
    let q_next = crate::dynamics::free::integrate_model(p.model, p.q, &v_next, p.h).map_err(dynamics)?;
    Ok(StepSolution {
        q_next,
        v_next,
        contacts: Vec::new(),
        stats: Default::default(),
    })
}

fn add_stats<T: Scalar>(acc: &mut StepSolution<T>, s: StepSolution<T>) {
    acc.stats.iterations += s.stats.iterations;
    acc.stats.residual = acc.stats.residual.max(s.stats.residual);
    acc.stats.max_penetration = acc.stats.max_penetration.max(s.stats.max_penetration);
    acc.stats.contacts += s.stats.contacts;
    acc.contacts.extend(s.contacts);
    acc.q_next = s.q_next;
    acc.v_next = s.v_next;
}

/// The impact at `(q_c, v⁻)` (`p.q`, `p.v`): the velocity-level boxed LCP
/// of the touching contacts (gap ≤ [`TOUCH`]) with the contact frames
/// and the impulse maps `W` at `q_c` (module docs),
///
/// `M(v' − v⁻) = Wᵀf`, `w = W v' + (e min(W_n v⁻, 0), 0, 0)`,
///
/// normal rows `w_n ≥ 0 ⊥ f_n ≥ 0`, friction rows the box. Per island, the
/// active set is solved for on primal values; the rows of that active set
/// are linear in `y = (v', f)`, `K(θ) y = b(θ)`, and `y` is the f64 solution
/// refined by `DERIVATIVE_ORDER + 1` steps `y ← y − K₀⁺ (K y − b)` (`K₀` the
/// primal `K`, pseudo-inverse for redundant contacts), so that its
/// derivative parts are those of the active set's solution (the impact
/// normal's dependence on `q_c` included). Returns `(v', contacts)`.
fn impact<T: Scalar>(
    lcp: &Lcp,
    p: &StepProblem<'_, T>,
    later: &[(usize, Partner)],
) -> Result<(DVec<T>, Vec<ContactImpulse<T>>, usize), SolveError> {
    let cands = touching(p, later)?;
    let mut v_next = p.v.clone();
    let mut out = Vec::new();
    let mut iters = 0;
    for island in islands(p.model, delassus::candidates_in(p, &cands)) {
        let (n, m) = (island.dim(), island.contacts.len());
        if m == 0 {
            continue;
        }
        let ev = evaluate(p, &island, &DVec::zeros(n), &delassus::zero_xs(&island))?;
        // Mass matrix (block diagonal per unit) and W (3m × n) at q_c.
        let mass = island_mass(p, &island)?;
        let w = impulse_map(&island, &ev, n);
        let vm = island.gather(p.v);
        let wv = &w * &vm;
        let bias = impact_bias(p, &island, &wv);
        let mus: Vec<T> = island.contacts.iter().map(|c| c.mu).collect();
        // The boxed LCP on primal values: A = W M⁻¹ Wᵀ, b = W v⁻ + bias.
        let re = |x: &DMat<T>| x.map(|x| x.re());
        let (wf, mf) = (re(&w), re(&mass));
        let minv = mf
            .clone()
            .try_inverse()
            .ok_or(SolveError::Singular("mass matrix of an impact"))?;
        let minv_wt = &minv * wf.transpose();
        let a = &wf * &minv_wt;
        let mut c = wv.map(|x| x.re());
        for k in 0..m {
            c[3 * k] += bias[k].re();
        }
        let muf: Vec<f64> = mus.iter().map(|x| x.re()).collect();
        let (f0, it) = primal_impulses(lcp, &a, &c, &muf)?;
        iters += it;
        // The active set's rows, K y = b, in T; the primal slip after the
        // impact, for the friction rows of a frictionless contact.
        let slip = &wf * (vm.map(|x| x.re()) + &minv_wt * &f0);
        let (kk, rhs) = active_set_rows((&mass, &w, &vm), (&bias, &mus, &muf), &f0, &slip);
        let k0inv = delassus::pinv(&re(&kk))?;
        let v0 = vm.map(|x| x.re()) + &minv_wt * &f0;
        let y = refined((&kk, &rhs, &k0inv), &v0, &f0);
        island.scatter(&y.rows(0, n).into_owned(), &mut v_next);
        for (k, (cand, ce)) in island.contacts.iter().zip(&ev.contacts).enumerate() {
            let f = [y[n + 3 * k], y[n + 3 * k + 1], y[n + 3 * k + 2]];
            let (t1, t2) = ce.tangents;
            out.push(ContactImpulse {
                body_a: cand.a,
                body_b: match cand.b {
                    Partner::Body(j) => Some(j),
                    Partner::Static(_) => None,
                },
                point: ce.contact.point_a,
                normal: ce.contact.normal,
                normal_impulse: f[0],
                tangent_impulse: t1 * f[1] + t2 * f[2],
                gap: ce.contact.gap,
            });
        }
    }
    Ok((v_next, out, iters))
}

/// The touching contacts at `(q_c, v⁻)` on primal values (gap ≤
/// [`TOUCH`]), without those of the pairs in `later`.
fn touching<T: Scalar>(
    p: &StepProblem<'_, T>,
    later: &[(usize, Partner)],
) -> Result<Vec<crate::contact::candidates::Candidate<f64>>, SolveError> {
    delassus::with_primal(p, |pf| -> Result<_, SolveError> {
        let mut detect = DetectScratch::default();
        let mut cands = Vec::new();
        candidates_into(pf, TOUCH, &mut detect, &mut cands);
        delassus::metric_conic(&mut cands);
        let mut keep = Vec::new();
        for island in islands(pf.model, cands) {
            let ev = evaluate(pf, &island, &DVec::zeros(island.dim()), &delassus::zero_xs(&island))?;
            for (c, ce) in island.contacts.iter().zip(&ev.contacts) {
                let own = c.link.is_none()
                    && later.iter().any(|&pair| same_pair(pair, c.a, c.b));
                if ce.contact.gap <= TOUCH && !own {
                    keep.push(c.clone());
                }
            }
        }
        Ok(keep)
    })
}

/// The mass matrix of an island of free bodies at `q_c` (block diagonal
/// per unit: the mass, the world inertia); articulated robots are
/// unsupported.
fn island_mass<T: Scalar>(p: &StepProblem<'_, T>, island: &Island<T>) -> Result<DMat<T>, SolveError> {
    let n = island.dim();
    let mut mass = DMat::<T>::zeros(n, n);
    for u in &island.units {
        let UnitKind::Body(g) = u.kind else {
            return Err(SolveError::Unsupported {
                backend: Lcp::NAME,
                what: "continuous collision with articulated robots (ccd = true steps free bodies only)",
            });
        };
        let o = u.offset;
        for d in 0..3 {
            mass[(o + d, o + d)] = p.model.bodies[g].inertia.mass;
        }
        let iw = world_inertia(p.model, g, p.q);
        mass.view_mut((o + 3, o + 3), (3, 3)).copy_from(&iw);
    }
    Ok(mass)
}

/// The impulse map `W` (3m × n) of the island's contacts at `q_c`.
fn impulse_map<T: Scalar>(island: &Island<T>, ev: &Eval<T>, n: usize) -> DMat<T> {
    let m = island.contacts.len();
    let mut w = DMat::<T>::zeros(3 * m, n);
    for (c, ce) in ev.contacts.iter().enumerate() {
        for (u, blk) in &ce.blocks {
            let o = island.units[*u].offset;
            for r in 0..3 {
                for k in 0..blk.ncols() {
                    w[(3 * c + r, o + k)] += blk[(r, k)];
                }
            }
        }
    }
    w
}

/// Newton's restitution term of each contact, `e min(W_n v⁻, 0)` (`wv`
/// is `W v⁻`).
fn impact_bias<T: Scalar>(p: &StepProblem<'_, T>, island: &Island<T>, wv: &DVec<T>) -> Vec<T> {
    island
        .contacts
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let vn = wv[3 * k];
            let e = delassus::pair_restitution(p, c.a, c.b);
            if vn.re() < 0.0 {
                e * vn
            } else {
                T::zero()
            }
        })
        .collect()
}

/// The boxed LCP `A f + b` (friction coefficients `muf`) on primal values,
/// solved: the impulses and the solver's work (pivots, exhaustive
/// tries, PGS sweeps).
fn primal_impulses(
    lcp: &Lcp,
    a: &DMat<f64>,
    c: &DVec<f64>,
    muf: &[f64],
) -> Result<(DVec<f64>, usize), SolveError> {
    let m = muf.len();
    let (lo, hi, fi) = super::bounds(muf);
    let prob = solver::Problem {
        a,
        b: c,
        lo: &lo,
        hi: &hi,
        findex: &fi,
    };
    let mut ws = solver::Workspace::new(3 * m);
    let st = match solver::solve(&prob, &lcp.options(), None, &mut ws) {
        Ok(st) => st,
        // a malformed impact LCP (a non-finite or negative friction
        // bound, a non-finite entry) is invalid input, not singular
        Err(LcpError::Invalid(what)) => {
            return Err(SolveError::InvalidInput {
                backend: Lcp::NAME,
                what,
            })
        }
        Err(LcpError::Unsolved {
            residual,
            iterations,
            ..
        }) => {
            return Err(SolveError::MaxIterations {
                iters: iterations,
                residual,
                complementarity: residual,
            })
        }
    };
    Ok((ws.x.clone(), st.pivots + st.exhaustive_tried + st.pgs_sweeps))
}

/// The rows of the impulses' active set, `K y = b` in `y = (v', f)`: the
/// impact law's `M v' − Wᵀ f = M v⁻` (`mass`, `w`, `vm`) and per contact
/// row the row its status at the primal impulses `f0` gives (`bias`, the
/// friction coefficients `mus` and their primal values `muf`; `slip` the
/// primal slip after the impact): `(K, b)`.
fn active_set_rows<T: Scalar>(
    (mass, w, vm): (&DMat<T>, &DMat<T>, &DVec<T>),
    (bias, mus, muf): (&[T], &[T], &[f64]),
    f0: &DVec<f64>,
    slip: &DVec<f64>,
) -> (DMat<T>, DVec<T>) {
    let (n, m) = (mass.nrows(), muf.len());
    let dim = n + 3 * m;
    let mut kk = DMat::<T>::zeros(dim, dim);
    let mut rhs = DVec::<T>::zeros(dim);
    kk.view_mut((0, 0), (n, n)).copy_from(mass);
    kk.view_mut((0, n), (n, 3 * m))
        .copy_from(&(-w.transpose()));
    rhs.rows_mut(0, n).copy_from(&(mass * vm));
    for k in 0..m {
        let fk = nalgebra::Vector3::new(f0[3 * k], f0[3 * k + 1], f0[3 * k + 2]);
        let sts = super::statuses(muf[k], &fk);
        // μ = 0 with a pressing normal impulse puts f_t = 0 on both
        // bounds at once. Where the contact does not slip (a head-on
        // impact), f_t is 0 on a whole neighbourhood: for μ > 0 it
        // sticks with f_t = 0, and at μ = 0 any other input leaves
        // f_t = 0. Its row is then `f_t = 0` (both partials zero):
        // the bound's row `f_t = ±μ f_n` would give `∂f_t/∂μ = ±f_n`,
        // the sticking row `W_t v' = 0` a spin from a lateral offset
        // that a frictionless contact cannot make.
        let pinned = |d: usize| {
            muf[k] == 0.0
                && sts[0] == Status::Free
                && slip[3 * k + d].abs() <= 1e-12 * (1.0 + slip.rows(3 * k, 3).amax())
        };
        for d in 0..3 {
            let row = n + 3 * k + d;
            match (d, sts[d]) {
                (1 | 2, _) if pinned(d) => kk[(row, n + 3 * k + d)] = T::one(),
                // w_d = 0: W_d v' = −bias
                (_, Status::Free) => {
                    for j in 0..n {
                        kk[(row, j)] = w[(3 * k + d, j)];
                    }
                    if d == 0 {
                        rhs[row] = -bias[k];
                    }
                }
                (0, _) => kk[(row, n + 3 * k)] = T::one(),
                (_, Status::Hi) => {
                    kk[(row, n + 3 * k + d)] = T::one();
                    kk[(row, n + 3 * k)] = -mus[k];
                }
                (_, _) => {
                    kk[(row, n + 3 * k + d)] = T::one();
                    kk[(row, n + 3 * k)] = mus[k];
                }
            }
        }
    }
    (kk, rhs)
}

/// `y = (v', f)` from the primal solution `(v0, f0)`, refined by
/// `DERIVATIVE_ORDER + 1` steps `y ← y − K₀⁺ (K y − b)` (`k0inv` the
/// pseudo-inverse of the primal `K`).
fn refined<T: Scalar>(
    (kk, rhs, k0inv): (&DMat<T>, &DVec<T>, &DMat<f64>),
    v0: &DVec<f64>,
    f0: &DVec<f64>,
) -> DVec<T> {
    let (n, dim) = (v0.len(), rhs.len());
    let mut y = DVec::<T>::zeros(dim);
    for i in 0..n {
        y[i] = T::from_re(v0[i]);
    }
    for i in 0..dim - n {
        y[n + i] = T::from_re(f0[i]);
    }
    for _ in 0..=T::DERIVATIVE_ORDER {
        let r = kk * &y - rhs;
        for i in 0..dim {
            let mut acc = T::zero();
            for j in 0..dim {
                acc += T::from_re(k0inv[(i, j)]) * r[j];
            }
            y[i] -= acc;
        }
    }
    y
}

/// The split step (module docs) in any scalar.
pub fn step<T: Scalar>(lcp: &Lcp, p: &StepProblem<'_, T>) -> Result<StepSolution<T>, SolveError> {
    let mut acc = StepSolution {
        q_next: p.q.clone(),
        v_next: p.v.clone(),
        contacts: Vec::new(),
        stats: Default::default(),
    };
    let h = p.h.re();
    let mut tau = p.h;
    for _ in 0..=MAX_IMPACTS {
        let (q, v) = (acc.q_next.clone(), acc.v_next.clone());
        let sub = StepProblem {
            q: &q,
            v: &v,
            h: tau,
            ..*p
        };
        let hit = delassus::with_primal(&sub, |pf| first_impact(lcp, pf, pf.h, h))?;
        let Some((k, t0)) = hit else {
            let s = sub_step(lcp, &sub, h, &[])?;
            add_stats(&mut acc, s);
            return Ok(acc);
        };
        let ps = pairs(lcp, &sub, tau.re().max(0.0))?;
        let tc = refine(&sub, &ps[k], t0);
        // The step up to the impact (zero-duration when t_c is on the
        // sub-step's start), without the pairs whose gap closes at its end
        // (module docs, "The sub-step up to an impact").
        let closing = delassus::with_primal(&sub, |pf| closing_at(lcp, pf, pf.h, h, t0))?;
        let pre = StepProblem { h: tc, ..sub };
        let s = sub_step(lcp, &pre, h, &closing)?;
        add_stats(&mut acc, s);
        // The impact at q(t_c): touching contacts only, velocity level.
        let (qc, vc) = (acc.q_next.clone(), acc.v_next.clone());
        let imp = StepProblem {
            q: &qc,
            v: &vc,
            ..*p
        };
        // The other pairs touching here with a time of impact of their
        // own (touching and approaching, "Classification"; a tie with
        // pair k) are left to it: the next sub-step meets each at its own
        // `t_c ≈ 0`, so that its derivative is that of its own implicit
        // equation, not of pair k's (module docs, "Simultaneous impacts").
        let rest = (tau - tc).re();
        let own = delassus::with_primal(&imp, |pf| -> Result<Vec<(usize, Partner)>, SolveError> {
            let psf = pairs(lcp, pf, rest.max(0.0))?;
            Ok(psf
                .iter()
                .enumerate()
                .filter(|(j, pair)| {
                    *j != k
                        && gap_at(pf, pair, 0.0).0.abs() <= TOUCH
                        && first_root(pf, pair, rest, h).is_some()
                })
                .map(|(_, pair)| (pair.i, pair.partner))
                .collect())
        })?;
        let (v_imp, cs, its) = impact(lcp, &imp, &own)?;
        acc.stats.iterations += its;
        acc.contacts.extend(cs);
        acc.v_next = v_imp;
        tau -= tc;
    }
    Err(SolveError::Unsupported {
        backend: Lcp::NAME,
        what: "more than 64 impacts in one step under continuous collision (lower dt)",
    })
}
