//! Contact candidates: the features of shape pairs that may touch during
//! a step, with their pair material and friction law, found once for
//! every backend.
//!
//! At `q`, a sweep and prune over bounding boxes (`collision::broad_phase`)
//! and the closed-form pairs select features whose gap is below
//! `margin + h (speed bound of both bodies) + h² ‖g‖` (a speculative
//! margin, so a falling body is caught before it passes through). Their
//! gaps are then re-evaluated at `q⁺(v⁺)` inside the solver. After a
//! solve, features that were no candidate but penetrate at `q⁺` are added
//! and the step is solved again (`max_candidate_rounds`).
//!
//! No shape pair is skipped. Pairs with a closed form
//! ([`collision::pair_features`](crate::collision::pair_features):
//! sphere, box and capsule against a plane; sphere–sphere, sphere–capsule,
//! capsule–capsule, sphere–box, box–box) give one candidate per feature
//! (box vertex, capsule end, box–box vertex, edge point or edge–edge
//! feature of the clipped contact face). Every other pair — any pair with a
//! cylinder, cone, ellipsoid, polytope, padded polygon or bundle, or with
//! static geometry other than a plane — is split into convex parts and
//! each nearby pair of parts is a candidate whose gap is the conic
//! proximity `φ = α* − 1` of the parts, re-solved at every iterate (as in
//! `bilevel`), its conic program relaxed to `10 ρ` so that a
//! face-to-face contact has a smooth gap ([`conic`]). The same holds
//! for robot link shapes. Point clouds have neither form: a problem with one
//! is refused with `SolveError::Unsupported` before anything is solved
//! ([`conic::refuse_point_clouds`]).
//!
//!
//! [`silico`] holds the candidates of Silico's backends (`single_level`,
//! `bilevel`: one conic candidate per pair of convex parts).

pub mod conic;
pub mod silico;

use self::conic::near_part_pairs;
use self::silico::conic_bounding_radius;
use crate::Scalar;
use crate::collision::broad_phase::{Aabb, SweepScratch, sweep_and_prune_into};
use crate::collision::frame::least_aligned_axis;
use crate::collision::{Contact, pair_features_into};
use crate::contact::law::Law;
use crate::contact::space::robot::robot_units;
use crate::contact::{FrictionCone, StepProblem};
use crate::dynamics::free::{orientation, position};
use crate::geometry::Shape;
use crate::math::{DVec, Pose};

/// The other side of a contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Partner {
    /// Another body (global index).
    Body(usize),
    /// A static geometry (index into `statics`).
    Static(usize),
}

/// A contact candidate: a feature of a pair of shapes that may touch
/// during the step.
#[derive(Clone, Debug)]
pub struct Candidate<T: Scalar> {
    /// First body (global index): a free body, or the robot link that
    /// carries link shape `link`.
    pub a: usize,
    /// `None`: the shape of free body `a` (`StepProblem::shapes`);
    /// `Some(k)`: link shape `k` (`StepProblem::link_shapes`, on body `a`).
    pub link: Option<usize>,
    /// The other side.
    pub b: Partner,
    /// Index of the contact in `collision::pair_contacts`' list for this pair.
    pub feature: usize,
    /// Combined friction coefficient.
    pub mu: T,
    /// Friction law.
    pub law: Law,
    /// World axis the tangent frame is built from, fixed for the step
    /// (`collision::frame::tangent_basis_from`).
    pub axis: usize,
    /// `None`: the closed-form pair `feature`; `Some(parts)`: the conic
    /// proximity of two convex parts (`bilevel`, and `ipm` for the pairs
    /// without a closed form, [`conic`]).
    pub parts: Option<ConicParts>,
}

impl Candidate<f64> {
    /// The same candidate in the scalar `T` with the friction coefficient
    /// `mu` (typically [`pair_mu`], recomputed from the materials so that
    /// derivatives with respect to friction flow).
    pub fn with_mu<T: Scalar>(&self, mu: T) -> Candidate<T> {
        Candidate {
            a: self.a,
            link: self.link,
            b: self.b,
            feature: self.feature,
            mu,
            law: self.law,
            axis: self.axis,
            parts: self.parts,
        }
    }
}

/// The convex parts of a conic candidate and how its conic program is
/// solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConicParts {
    /// Part of shape a (flattened union order, `collision::conic::convex_parts`).
    pub part_a: usize,
    /// Part of shape b.
    pub part_b: usize,
    /// The conic program's barrier parameter μ: the gap and witness point
    /// are those of its central-path point `s ∘ z = μ e`
    /// (`ConicParams::tol_gap`), a smooth function of the poses. `bilevel`
    /// solves to 1e-10 (Silico's converged baseline, α derivatives by the
    /// envelope theorem); `ipm` relaxes it with the step's ρ
    /// (`10 ρ`, [`conic::smoothing`]; `single_level` relaxes
    /// both programs with the same ρ), with α derivatives by the
    /// implicit-function theorem of that central point. A tight μ makes the
    /// gap of a face-to-face contact a kink in the orientation, at which
    /// the step's Newton iteration stalls.
    pub smoothing: f64,
    /// Whether the candidate's gap is converted to metres
    /// ([`metric_gap`](crate::contact::space::metric_gap)): the
    /// contact-space backends (`lcp`, `implicit_ncp`, `convex`) take the
    /// normal row of the impulse map as the gap's rate, which holds for a
    /// distance, not for the scaling `α* − 1`. `ipm`, `single_level` and
    /// `bilevel` keep the scaling (their rows are position-level).
    pub metric: bool,
}

/// The identity of a candidate across solves and candidate rounds.
pub type CandidateKey = (usize, Option<usize>, Partner, usize);

impl<T: Scalar> Candidate<T> {
    /// `(a, link, b, feature)`.
    pub fn key(&self) -> CandidateKey {
        (self.a, self.link, self.b, self.feature)
    }
}

/// Pose of body `i` from a configuration vector.
pub fn body_pose<T: Scalar>(p: &StepProblem<'_, T>, q: &DVec<T>, i: usize) -> Pose<T> {
    let k = p.model.bodies[i].idx_q;
    Pose::new(orientation(q, k), position(q, k))
}

/// Friction coefficient of a pair from the materials (with their
/// derivative parts).
pub fn pair_mu<T: Scalar>(p: &StepProblem<'_, T>, a: usize, b: Partner) -> T {
    match b {
        Partner::Body(j) => p
            .friction_combine
            .apply(p.materials[a].friction, p.materials[j].friction),
        Partner::Static(j) => p
            .friction_combine
            .apply(p.materials[a].friction, p.statics[j].material.friction),
    }
}

/// The friction law of a pair with friction coefficient `mu` (primal):
/// frictionless at `mu <= 0`, else the problem's cone.
pub fn friction_law<T: Scalar>(p: &StepProblem<'_, T>, mu: f64) -> Law {
    if mu <= 0.0 {
        Law::Frictionless
    } else {
        match p.friction_cone {
            FrictionCone::Exact => Law::Exact,
            FrictionCone::Pyramid => Law::Pyramid,
        }
    }
}

/// Speed bound of a body's surface (‖ṗ‖ + ‖ω‖ R) on primal values.
pub fn speed_bound<T: Scalar>(p: &StepProblem<'_, T>, i: usize, radius: f64) -> f64 {
    let k = p.model.bodies[i].idx_v;
    let lin = (0..3).map(|d| p.v[k + d].re().powi(2)).sum::<f64>().sqrt();
    let ang = (3..6).map(|d| p.v[k + d].re().powi(2)).sum::<f64>().sqrt();
    lin + ang * radius
}

/// Radius of the broad phase's ball about a shape's origin: its bounding
/// radius, or (a shape with no bounding ball, e.g. an open polytope) a
/// ball that meets everything.
fn shape_radius<T: Scalar>(s: &Shape<T>) -> f64 {
    conic_bounding_radius(s).unwrap_or(1e9)
}

/// Contact candidates at `q` (see the module docs): every supported
/// feature whose gap at the start of the step is below
/// `margin + reach_a + reach_b`, with `reach = h (‖ṗ‖ + ‖ω‖ R) + h² ‖g‖`
/// (for a link shape, `ṗ` and `ω` of the link at the shape's origin).
pub fn candidates<T: Scalar>(p: &StepProblem<'_, T>, margin: f64) -> Vec<Candidate<T>> {
    let mut out = Vec::new();
    candidates_into(p, margin, &mut DetectScratch::default(), &mut out);
    out
}

/// The reused buffers of candidate detection ([`candidates_into`],
/// [`detect_into`]): with them a step of free bodies with closed-form
/// pairs finds its candidates without allocating (robot link shapes,
/// pairs without a closed form and box–box pairs still allocate).
#[derive(Clone, Debug)]
pub struct DetectScratch<T: Scalar> {
    reach: Vec<f64>,
    features: Vec<(usize, Contact<T>)>,
    ids: Vec<usize>,
    boxes: Vec<Aabb>,
    pairs: Vec<(usize, usize)>,
    sweep: SweepScratch,
}

impl<T: Scalar> Default for DetectScratch<T> {
    fn default() -> Self {
        DetectScratch {
            reach: Vec::new(),
            features: Vec::new(),
            ids: Vec::new(),
            boxes: Vec::new(),
            pairs: Vec::new(),
            sweep: SweepScratch::default(),
        }
    }
}

/// [`candidates`] into `out` (cleared first), with reused buffers.
pub fn candidates_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    margin: f64,
    scratch: &mut DetectScratch<T>,
    out: &mut Vec<Candidate<T>>,
) {
    let h = p.h.re();
    let g = p.gravity.map(|x| x.re()).norm();
    let mut reach = std::mem::take(&mut scratch.reach);
    reach.clear();
    reach.extend((0..p.model.bodies.len()).map(|i| match &p.shapes[i] {
        Some(s) => h * speed_bound(p, i, conic_bounding_radius(s).unwrap_or(0.0)) + h * h * g,
        None => 0.0,
    }));
    let link_reach: Vec<f64> = if p.link_shapes.is_empty() {
        Vec::new()
    } else {
        let mut data = p.model.data();
        crate::dynamics::kinematics::forward_kinematics(p.model, &mut data, p.q, Some(p.v));
        p.link_shapes
            .iter()
            .map(|ls| {
                let r = conic_bounding_radius(&ls.shape).unwrap_or(0.0);
                let c = (data.omi[ls.body] * ls.pose).translation.map(|x| x.re());
                let ov = data.ov[ls.body].map(|x| x.re());
                let ang = crate::math::Vec3::new(ov[3], ov[4], ov[5]);
                let lin = crate::math::Vec3::new(ov[0], ov[1], ov[2]) + ang.cross(&c);
                h * (lin.norm() + ang.norm() * r) + h * h * g
            })
            .collect()
    };
    detect_into(p, p.q, &reach, &link_reach, margin, scratch, out);
    scratch.reach = reach;
}

/// Features whose gap at configuration `q` is below
/// `margin + reach_a + reach_b` (broad phase on bounding balls inflated by
/// the same amounts). `link_reach` is per link shape (empty: zero).
/// Link shapes (of links of robots that are island units,
/// [`robot_units`](crate::contact::space::robot::robot_units)) are tested against static geometry and free
/// bodies.
pub fn detect<T: Scalar>(
    p: &StepProblem<'_, T>,
    q: &DVec<T>,
    reach: &[f64],
    link_reach: &[f64],
    margin: f64,
) -> Vec<Candidate<T>> {
    let mut out = Vec::new();
    detect_into(
        p,
        q,
        reach,
        link_reach,
        margin,
        &mut DetectScratch::default(),
        &mut out,
    );
    out
}

/// Features whose gap at configuration `q` is negative (no margin, no
/// reach): those penetrating at `q⁺` after a solve. Into `out` (cleared
/// first), with reused buffers.
pub fn penetrating_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    q: &DVec<T>,
    scratch: &mut DetectScratch<T>,
    out: &mut Vec<Candidate<T>>,
) {
    let mut reach = std::mem::take(&mut scratch.reach);
    reach.clear();
    reach.resize(p.model.bodies.len(), 0.0);
    detect_into(p, q, &reach, &[], 0.0, scratch, out);
    scratch.reach = reach;
}

/// [`detect`] into `out` (cleared first), with reused buffers.
pub fn detect_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    q: &DVec<T>,
    reach: &[f64],
    link_reach: &[f64],
    margin: f64,
    scratch: &mut DetectScratch<T>,
    out: &mut Vec<Candidate<T>>,
) {
    let nb = p.model.bodies.len();
    out.clear();
    let mut pairs = PairPush {
        p,
        features: &mut scratch.features,
        out,
        smoothing: conic::smoothing(p.params.rho),
    };
    // Bodies against static geometry (few statics: every pair).
    for i in 0..nb {
        let Some(sa) = &p.shapes[i] else { continue };
        let pose = body_pose(p, q, i);
        for (j, st) in p.statics.iter().enumerate() {
            pairs.push(
                (i, None),
                Partner::Static(j),
                (sa, &pose),
                (&st.shape, &st.pose),
                margin + reach[i],
            );
        }
    }
    // Robot link shapes against static geometry and free bodies (every
    // pair: few link shapes).
    if !p.link_shapes.is_empty() {
        pairs.link_shapes(q, reach, link_reach, margin);
    }
    // Body pairs through the broad phase (a shape without a bounding
    // ball, e.g. an open polytope, meets every other).
    let (ids, boxes) = (&mut scratch.ids, &mut scratch.boxes);
    ids.clear();
    boxes.clear();
    for i in 0..nb {
        if p.shapes[i].is_some() {
            let r = shape_radius(p.shapes[i].as_ref().unwrap());
            let k = p.model.bodies[i].idx_q;
            let c = [q[k].re(), q[k + 1].re(), q[k + 2].re()];
            ids.push(i);
            boxes.push(Aabb::ball(c, r + 0.5 * margin + reach[i]));
        }
    }
    sweep_and_prune_into(boxes, &mut scratch.sweep, &mut scratch.pairs);
    for &(bi, bj) in &scratch.pairs {
        let (i, j) = (ids[bi], ids[bj]);
        let (sa, sb) = (p.shapes[i].as_ref().unwrap(), p.shapes[j].as_ref().unwrap());
        pairs.push(
            (i, None),
            Partner::Body(j),
            (sa, &body_pose(p, q, i)),
            (sb, &body_pose(p, q, j)),
            margin + reach[i] + reach[j],
        );
    }
}

/// The candidates of one pair of shapes at a time, into `out` (the
/// step of [`detect_into`] for every pair it tests).
struct PairPush<'a, 'p, T: Scalar> {
    p: &'a StepProblem<'p, T>,
    /// The closed-form features of the current pair (reused buffer).
    features: &'a mut Vec<(usize, Contact<T>)>,
    out: &'a mut Vec<Candidate<T>>,
    /// The conic smoothing of the pairs without a closed form.
    smoothing: f64,
}

impl<T: Scalar> PairPush<'_, '_, T> {
    /// One pair of shapes, body `a` (or link shape `link` on it) against
    /// `b`: its closed-form features below `limit`, or (no closed form) its
    /// pairs of convex parts that may come within `limit` (`conic`). Never
    /// skipped.
    fn push(
        &mut self,
        (a, link): (usize, Option<usize>),
        b: Partner,
        (sa, pa): (&Shape<T>, &Pose<T>),
        (sb, pb): (&Shape<T>, &Pose<T>),
        limit: f64,
    ) {
        let (p, features, out, smoothing) =
            (self.p, &mut *self.features, &mut *self.out, self.smoothing);
        let mu = pair_mu(p, a, b);
        let law = friction_law(p, mu.re());
        let closed = !conic::near_parallel_capsules(sa, pa, sb, pb)
            && pair_features_into(sa, pa, sb, pb, features);
        match closed {
            true => {
                for &(feature, ref c) in features.iter() {
                    if c.gap.re() < limit {
                        let axis = least_aligned_axis(&c.normal);
                        out.push(Candidate {
                            a,
                            link,
                            b,
                            feature,
                            mu,
                            law,
                            axis,
                            parts: None,
                        });
                    }
                }
            }
            false => {
                let (sa, pa, sb, pb) = (
                    sa.cast::<f64>(),
                    pa.cast::<f64>(),
                    sb.cast::<f64>(),
                    pb.cast::<f64>(),
                );
                for pp in near_part_pairs(&sa, &pa, &sb, &pb, limit) {
                    out.push(Candidate {
                        a,
                        link,
                        b,
                        feature: pp.feature,
                        mu,
                        law,
                        axis: pp.axis,
                        parts: Some(ConicParts {
                            part_a: pp.part_a,
                            part_b: pp.part_b,
                            smoothing,
                            metric: false,
                        }),
                    });
                }
            }
        }
    }

    /// The robot link shapes (of links of robots that are island units) at
    /// configuration `q` against static geometry and the lone free bodies
    /// (every pair: few link shapes).
    fn link_shapes(&mut self, q: &DVec<T>, reach: &[f64], link_reach: &[f64], margin: f64) {
        let p = self.p;
        let nb = p.model.bodies.len();
        let units = robot_units(p.model);
        let lone = p.model.lone_free_bodies();
        let mut in_unit = vec![false; nb];
        for u in &units {
            for &b in &u.bodies {
                in_unit[b] = true;
            }
        }
        let mut data = p.model.data();
        crate::dynamics::kinematics::forward_kinematics(p.model, &mut data, q, None);
        for (k, ls) in p.link_shapes.iter().enumerate() {
            if !in_unit[ls.body] {
                continue;
            }
            let pose = data.omi[ls.body] * ls.pose;
            let r = link_reach.get(k).copied().unwrap_or(0.0);
            for (j, st) in p.statics.iter().enumerate() {
                self.push(
                    (ls.body, Some(k)),
                    Partner::Static(j),
                    (&ls.shape, &pose),
                    (&st.shape, &st.pose),
                    margin + r,
                );
            }
            for j in 0..nb {
                let Some(sb) = &p.shapes[j] else { continue };
                if !lone[j] {
                    continue;
                }
                self.push(
                    (ls.body, Some(k)),
                    Partner::Body(j),
                    (&ls.shape, &pose),
                    (sb, &body_pose(p, q, j)),
                    margin + r + reach[j],
                );
            }
        }
    }
}
