//! Penetration measured geometrically, independent of any solver.
//!
//! [`gaps`] evaluates the closed-form pairs of [`collision`](crate::collision)
//! at a state: every free body's shape and every robot link shape against
//! static geometry, and free bodies' shapes against each other and against
//! link shapes (candidates by sweep and prune on bounding balls). Link–link
//! pairs are not measured (no backend models them; neighbouring links
//! overlap at their joints by design). Pairs without a closed form
//! (any pair with a cylinder, cone, ellipsoid, polytope,
//! padded polygon or bundle) cannot be measured here and are counted in
//! [`Gaps::unmeasured`], so a caller can tell "no penetration" from "not
//! measured".
//!
//! Uses: the initial state's penetration in `run`'s `max_penetration`, the
//! scene loader's refusal of initially interpenetrating bodies, and the
//! bodies named in the message of a failed step.
//!
//! ```
//! use dualsim::prelude::*;
//! use dualsim::sim::penetration::gaps;
//! let mut w = World::<f64>::new(0.01);
//! w.add_body("ball", 1.0, Mat3::identity() * 0.004, Some(Shape::Sphere { radius: 0.1 }),
//!            Material::default()).unwrap();
//! w.statics.push(StaticGeometry { name: "ground".into(),
//!     shape: Shape::Plane { normal: Vec3::z(), offset: 0.0 }, pose: Pose::identity(),
//!     material: Material::default() });
//! let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.05]]);
//! let g = gaps(&w, &x, 0.0);
//! let deepest = g.deepest().unwrap();
//! assert_eq!((deepest.a.as_str(), deepest.b.as_str()), ("ball", "ground"));
//! assert!((deepest.gap + 0.05).abs() < 1e-15);
//! ```

use super::{State, World};
use crate::collision::broad_phase::{Aabb, sweep_and_prune};
use crate::collision::{bounding_radius, pair_contacts};
use crate::dynamics::free::{orientation, position};
use crate::geometry::Shape;
use crate::math::Pose;

/// The smallest gap of one measured pair of shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct PairGap {
    /// Name of the first body (a free body or `robot/link`).
    pub a: String,
    /// Name of the second body or static geometry.
    pub b: String,
    /// Smallest signed gap over the pair's contact features (m; negative:
    /// penetration depth).
    pub gap: f64,
}

/// The result of [`gaps`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gaps {
    /// Measured pairs whose smallest gap is below the threshold.
    pub pairs: Vec<PairGap>,
    /// Pairs considered (bounding balls overlap, or against static
    /// geometry) that have no closed form and were not measured.
    pub unmeasured: usize,
}

impl Gaps {
    /// The most penetrating measured pair, if any gap is below the threshold.
    pub fn deepest(&self) -> Option<&PairGap> {
        self.pairs.iter().min_by(|x, y| x.gap.total_cmp(&y.gap))
    }

    /// Largest penetration depth `max(0, −gap)` over the measured pairs.
    pub fn max_penetration(&self) -> f64 {
        self.pairs.iter().map(|p| -p.gap).fold(0.0, f64::max)
    }
}

/// Shapes of a world at a state: (owner body, name, shape, world pose, is a link).
fn placed<'a>(
    world: &'a World<f64>,
    state: &State<f64>,
) -> Vec<(usize, &'a str, &'a Shape<f64>, Pose<f64>, bool)> {
    let m = &world.model;
    let mut out = Vec::new();
    let lone = m.lone_free_bodies();
    for (i, s) in world.shapes.iter().enumerate() {
        if let (Some(s), true) = (s, lone[i]) {
            let k = m.bodies[i].idx_q;
            out.push((
                i,
                m.bodies[i].name.as_str(),
                s,
                Pose::new(orientation(&state.q, k), position(&state.q, k)),
                false,
            ));
        }
    }
    if !world.link_shapes.is_empty() {
        let mut data = m.data();
        crate::dynamics::kinematics::forward_kinematics(m, &mut data, &state.q, None);
        for ls in &world.link_shapes {
            out.push((
                ls.body,
                m.bodies[ls.body].name.as_str(),
                &ls.shape,
                data.omi[ls.body] * ls.pose,
                true,
            ));
        }
    }
    out
}

/// The measured pairs whose smallest gap at `state` is below `threshold`
/// (see the module docs). `state` must have the world's sizes and be finite.
pub fn gaps(world: &World<f64>, state: &State<f64>, threshold: f64) -> Gaps {
    gaps_with_reach(world, state, threshold, 0.0)
}

/// As [`gaps`], with each pair's threshold raised by `threshold + reach_a +
/// reach_b`, `reach = dt (‖ṗ‖ + ‖ω‖ R) + dt² ‖g‖` times `reach_scale` (0:
/// no reach): the pairs a step could bring into contact.
pub fn gaps_with_reach(
    world: &World<f64>,
    state: &State<f64>,
    threshold: f64,
    reach_scale: f64,
) -> Gaps {
    let mut out = Gaps::default();
    if state.q.len() != world.model.nq || state.v.len() != world.model.nv || !state.is_finite() {
        return out;
    }
    let shapes = placed(world, state);
    let h = world.dt;
    let g = world.gravity.norm();
    let reach: Vec<f64> = shapes
        .iter()
        .map(|(i, _, s, _, is_link)| {
            if reach_scale == 0.0 || *is_link {
                return reach_scale * h * h * g;
            }
            let k = world.model.bodies[*i].idx_v;
            let lin = (0..3).map(|d| state.v[k + d].powi(2)).sum::<f64>().sqrt();
            let ang = (3..6).map(|d| state.v[k + d].powi(2)).sum::<f64>().sqrt();
            reach_scale * (h * (lin + ang * bounding_radius(s).unwrap_or(0.0)) + h * h * g)
        })
        .collect();
    let mut measure = |a: usize,
                       b_name: &str,
                       list: Option<Vec<crate::collision::Contact<f64>>>,
                       limit: f64| match list {
        None => out.unmeasured += 1,
        Some(list) => {
            let gap = list.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
            if gap < limit {
                out.pairs.push(PairGap {
                    a: shapes[a].1.to_string(),
                    b: b_name.to_string(),
                    gap,
                });
            }
        }
    };
    for (k, (_, _, s, pose, _)) in shapes.iter().enumerate() {
        for st in &world.statics {
            measure(
                k,
                &st.name,
                pair_contacts(*s, pose, &st.shape, &st.pose),
                threshold + reach[k],
            );
        }
    }
    // Body–body and body–link pairs by sweep and prune on bounding balls;
    // shapes without a bounding radius are paired with everything.
    let mut ids = Vec::new();
    let mut boxes = Vec::new();
    let mut unbounded = Vec::new();
    for (k, (_, _, s, pose, _)) in shapes.iter().enumerate() {
        match bounding_radius(*s) {
            Some(r) => {
                let c = pose.translation;
                ids.push(k);
                boxes.push(Aabb::ball(
                    [c.x, c.y, c.z],
                    r + 0.5 * threshold.max(0.0) + reach[k],
                ));
            }
            None => unbounded.push(k),
        }
    }
    let mut pairs: Vec<(usize, usize)> = sweep_and_prune(&boxes)
        .into_iter()
        .map(|(x, y)| (ids[x], ids[y]))
        .collect();
    for &u in &unbounded {
        pairs.extend(
            (0..shapes.len())
                .filter(|&k| k != u && (!unbounded.contains(&k) || k > u))
                .map(|k| (u.min(k), u.max(k))),
        );
    }
    for (x, y) in pairs {
        let (sx, sy) = (&shapes[x], &shapes[y]);
        if sx.4 && sy.4 {
            continue; // link–link: modelled by no backend
        }
        if sx.0 == sy.0 {
            continue; // two shapes of one body
        }
        let b_name = sy.1.to_string();
        measure(
            x,
            &b_name,
            pair_contacts(sx.2, &sx.3, sy.2, &sy.3),
            threshold + reach[x] + reach[y],
        );
    }
    out
}
