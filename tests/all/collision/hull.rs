//! Mesh hulls by support mapping: hull–hull and hull–plane contacts
//! against parry3d's distance, the box–box closed form, and their
//! derivatives against central differences.

use dualsim::Scalar;
use dualsim::collision::hull_hull::hull_hull_feature;
use dualsim::collision::hull_plane::hull_plane_vertex;
use dualsim::collision::{Contact, pair_contact, pair_features};
use dualsim::geometry::Shape;
use dualsim::geometry::hull::HullMesh;
use dualsim::geometry::mesh::convex_hull;
use dualsim::math::{Pose, Vec3, so3};
use num_dual::Dual64;
use parry3d_f64::math::{Pose as PPose, Rot3 as PRot, Vector as PVec};
use parry3d_f64::shape::ConvexPolyhedron;

/// Small deterministic generator (no external crate).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
    }
    fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.next()
    }
    fn vec(&mut self, r: f64) -> Vec3<f64> {
        Vec3::new(self.range(-r, r), self.range(-r, r), self.range(-r, r))
    }
    fn pose(&mut self, r: f64) -> Pose<f64> {
        let w = self.vec(2.0);
        Pose::new(so3::exp(&w), self.vec(r))
    }
}

/// `n` random points on an ellipsoid with semi-axes `radii` (a hull of
/// about `2 n` triangular faces).
fn random_points(rng: &mut Lcg, n: usize, radii: Vec3<f64>) -> Vec<Vec3<f64>> {
    (0..n)
        .map(|_| {
            loop {
                let p = rng.vec(1.0);
                if p.norm() > 0.1 && p.norm() <= 1.0 {
                    break p.normalize().component_mul(&radii);
                }
            }
        })
        .collect()
}

fn cube(h: Vec3<f64>) -> Vec<Vec3<f64>> {
    (0..8)
        .map(|i| {
            Vec3::new(
                if i & 1 == 0 { -h.x } else { h.x },
                if i & 2 == 0 { -h.y } else { h.y },
                if i & 4 == 0 { -h.z } else { h.z },
            )
        })
        .collect()
}

/// The hull of `points` as a shape, its mesh, and parry's hull of the
/// same vertices (about the same origin).
fn hull(points: &[Vec3<f64>]) -> (Shape<f64>, std::sync::Arc<HullMesh>, ConvexPolyhedron) {
    let h = convex_hull(points).unwrap();
    let pts: Vec<PVec> = h
        .vertices
        .iter()
        .map(|v| PVec::new(v.x, v.y, v.z))
        .collect();
    let parry = ConvexPolyhedron::from_convex_hull(&pts).unwrap();
    (h.shape(), h.mesh.clone(), parry)
}

fn ppose(p: &Pose<f64>) -> PPose {
    let (r, t) = (p.rotation, p.translation);
    PPose::from_parts(
        PVec::new(t.x, t.y, t.z),
        PRot::from_xyzw(r.i, r.j, r.k, r.w),
    )
}

fn min_gap(cs: &[(usize, Contact<f64>)]) -> f64 {
    cs.iter().map(|(_, c)| c.gap).fold(f64::INFINITY, f64::min)
}

/// Separated random hulls (60 and 40 random points on ellipsoids, 300
/// seeded pose pairs): the least gap of the hull–hull contacts equals
/// parry3d's GJK distance of the same hulls (its `ConvexPolyhedron`) to
/// 1e-9 m (hulls of size ~0.1–0.3 m); penetrating pairs: some contact's
/// gap equals minus parry's EPA depth to 1e-9 m. Every contact satisfies
/// the module conventions (`gap = n · (p_a − p_b)`, unit normal), and each
/// feature evaluated alone by `pair_contact` is the listed contact.
#[test]
fn hull_hull_matches_parry_distance() {
    let mut rng = Lcg(11);
    let (mut separated, mut penetrating) = (0, 0);
    for trial in 0..300 {
        if trial % 30 == 0 {
            rng.next();
        }
        let pa_pts = random_points(&mut rng, 60, Vec3::new(0.3, 0.2, 0.15));
        let pb_pts = random_points(&mut rng, 40, Vec3::new(0.1, 0.25, 0.2));
        let (sa, _, qa) = hull(&pa_pts);
        let (sb, _, qb) = hull(&pb_pts);
        let pose_a = rng.pose(0.3);
        let pose_b = rng.pose(0.3);
        let cs = pair_features(&sa, &pose_a, &sb, &pose_b).expect("hull–hull has a closed form");
        assert!(!cs.is_empty());
        for (f, c) in &cs {
            assert!((c.gap - c.normal.dot(&(c.point_a - c.point_b))).abs() < 1e-12);
            assert!((c.normal.norm() - 1.0).abs() < 1e-12);
            let alone = pair_contact(&sa, &pose_a, &sb, &pose_b, *f).unwrap();
            assert!((alone.gap - c.gap).abs() < 1e-15 && alone.normal == c.normal);
        }
        let (pa, pb) = (ppose(&pose_a), ppose(&pose_b));
        let d = parry3d_f64::query::distance(&pa, &qa, &pb, &qb)
            .unwrap()
            .distance;
        if d > 0.0 {
            separated += 1;
            let g = min_gap(&cs);
            assert!((g - d).abs() < 1e-9, "trial {trial}: gap {g}, parry {d}");
        } else {
            penetrating += 1;
            let c = parry3d_f64::query::contact(&pa, &qa, &pb, &qb, 1.0)
                .unwrap()
                .unwrap();
            let best = cs
                .iter()
                .map(|(_, x)| (x.gap - c.dist).abs())
                .fold(f64::INFINITY, f64::min);
            assert!(best < 1e-9, "trial {trial}: depth {} off by {best}", c.dist);
        }
    }
    assert!(
        separated > 50 && penetrating > 50,
        "{separated} / {penetrating}"
    );
}

/// A 0.2 m cube hull 0.01 m into the top face of a 1 m cube hull, turned
/// about z: its 4 bottom corners, each 0.01 m deep with the normal `+z`,
/// as the box–box closed form gives; also in the other order (normal
/// `−z`). A hull resting on the ground plane gets its 4 supporting
/// corners at gap 0 (and the other 4 at its height).
#[test]
fn resting_hulls_get_their_supporting_corners() {
    let (big, _, _) = hull(&cube(Vec3::new(0.5, 0.5, 0.5)));
    let (small, _, _) = hull(&cube(Vec3::new(0.1, 0.1, 0.1)));
    let top = Pose::new(
        so3::exp(&Vec3::new(0.0, 0.0, 0.3)),
        Vec3::new(0.05, -0.1, 0.59),
    );
    let cs = pair_features(&small, &top, &big, &Pose::identity()).unwrap();
    let deep: Vec<_> = cs.iter().filter(|(_, c)| c.gap < 0.0).collect();
    assert_eq!(deep.len(), 4, "{cs:?}");
    for (_, c) in &deep {
        assert!((c.gap + 0.01).abs() < 1e-12 && (c.normal - Vec3::z()).norm() < 1e-12);
    }
    let box_box = dualsim::collision::pair_contacts(
        &Shape::Box {
            half_extents: Vec3::new(0.1, 0.1, 0.1),
        },
        &top,
        &Shape::Box {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        },
        &Pose::identity(),
    )
    .unwrap();
    assert_eq!(box_box.len(), 4);
    let rev = pair_features(&big, &Pose::identity(), &small, &top).unwrap();
    let deep: Vec<_> = rev.iter().filter(|(_, c)| c.gap < 0.0).collect();
    assert_eq!(deep.len(), 4, "{rev:?}");
    for (_, c) in &deep {
        assert!((c.gap + 0.01).abs() < 1e-12 && (c.normal + Vec3::z()).norm() < 1e-12);
    }
    let ground = Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    };
    let on = Pose::new(
        so3::exp(&Vec3::new(0.0, 0.0, 0.7)),
        Vec3::new(0.3, 0.2, 0.1),
    );
    let cs = pair_features(&small, &on, &ground, &Pose::identity()).unwrap();
    let touching = cs.iter().filter(|(_, c)| c.gap.abs() < 1e-12).count();
    assert_eq!((cs.len(), touching), (8, 4));
}

fn pose_dual(p: &Pose<f64>, dir: &[f64; 12], side: usize) -> Pose<Dual64> {
    let o = 6 * side;
    let dp = Vec3::new(
        Dual64::new(0.0, dir[o]),
        Dual64::new(0.0, dir[o + 1]),
        Dual64::new(0.0, dir[o + 2]),
    );
    let dw = Vec3::new(
        Dual64::new(0.0, dir[o + 3]),
        Dual64::new(0.0, dir[o + 4]),
        Dual64::new(0.0, dir[o + 5]),
    );
    let pc: Pose<Dual64> = p.cast();
    Pose::new(so3::exp(&dw) * pc.rotation, pc.translation + dp)
}

fn pose_shift(p: &Pose<f64>, dir: &[f64; 12], side: usize, e: f64) -> Pose<f64> {
    let o = 6 * side;
    let dp = Vec3::new(dir[o], dir[o + 1], dir[o + 2]) * e;
    let dw = Vec3::new(dir[o + 3], dir[o + 4], dir[o + 5]) * e;
    Pose::new(so3::exp(&dw) * p.rotation, p.translation + dp)
}

fn flat(c: &Contact<f64>) -> [f64; 10] {
    let mut out = [c.gap; 10];
    for k in 0..3 {
        out[1 + k] = c.point_a[k];
        out[4 + k] = c.point_b[k];
        out[7 + k] = c.normal[k];
    }
    out
}

fn flat_eps(c: &Contact<Dual64>) -> [f64; 10] {
    let mut out = [c.gap.eps; 10];
    for k in 0..3 {
        out[1 + k] = c.point_a[k].eps;
        out[4 + k] = c.point_b[k].eps;
        out[7 + k] = c.normal[k].eps;
    }
    out
}

/// Derivatives of every hull–hull feature (vertex–face both ways,
/// edge–edge, vertex–edge, vertex–vertex as they occur) and of the
/// hull–plane vertices with respect to both poses (a random twist of
/// each, world frame) in `Dual64` against central differences of the f64
/// feature (h = 1e-6, tolerance 1e-6 relative to the largest entry: the
/// differences' error is O(h²) times the third derivative, and rounding
/// O(1e-16 / h)); the dual primal equals the f64 value.
#[test]
fn hull_contact_derivatives_match_differences() {
    let mut rng = Lcg(5);
    let mut kinds = [0usize; 4];
    let ground = (Vec3::new(0.1, -0.2, 1.0).normalize(), 0.05);
    for _ in 0..80 {
        let (_, ma, _) = hull(&random_points(&mut rng, 30, Vec3::new(0.3, 0.2, 0.15)));
        let (_, mb, _) = hull(&cube(Vec3::new(0.2, 0.1, 0.15)));
        let pose_a = rng.pose(0.25);
        let pose_b = rng.pose(0.25);
        let dir: [f64; 12] = core::array::from_fn(|_| rng.range(-1.0, 1.0));
        let mut feats = Vec::new();
        let mut scratch = Default::default();
        assert!(dualsim::collision::hull_hull::hull_hull_into(
            &pose_a,
            &ma,
            &pose_b,
            &mb,
            &mut scratch,
            &mut feats
        ));
        let h = 1e-6;
        let check = |f64_at: &dyn Fn(f64) -> [f64; 10], dual: [f64; 10], what: &str| {
            let (p, m) = (f64_at(h), f64_at(-h));
            let scale = p.iter().map(|x| x.abs()).fold(1.0, f64::max);
            for k in 0..10 {
                let fd = (p[k] - m[k]) / (2.0 * h);
                assert!(
                    (fd - dual[k]).abs() < 1e-6 * scale,
                    "{what}: entry {k}: dual {} fd {fd}",
                    dual[k]
                );
            }
        };
        for &(f, c0) in &feats {
            kinds[f >> 60] += 1;
            let (da, db) = (pose_dual(&pose_a, &dir, 0), pose_dual(&pose_b, &dir, 1));
            let cd = hull_hull_feature(&da, &ma, &db, &mb, f).unwrap();
            assert!((flat(&c0)[0] - cd.gap.re()).abs() < 1e-12);
            let at = |e: f64| {
                flat(
                    &hull_hull_feature(
                        &pose_shift(&pose_a, &dir, 0, e),
                        &ma,
                        &pose_shift(&pose_b, &dir, 1, e),
                        &mb,
                        f,
                    )
                    .unwrap(),
                )
            };
            check(&at, flat_eps(&cd), &format!("feature {f:#x}"));
        }
        for v in 0..ma.vertices.len().min(5) {
            let n = ground.0.map(Dual64::from);
            let cd = hull_plane_vertex(
                &pose_dual(&pose_a, &dir, 0),
                &ma,
                &n,
                Dual64::from(ground.1),
                v,
            )
            .unwrap();
            let at = |e: f64| {
                flat(
                    &hull_plane_vertex(
                        &pose_shift(&pose_a, &dir, 0, e),
                        &ma,
                        &ground.0,
                        ground.1,
                        v,
                    )
                    .unwrap(),
                )
            };
            check(&at, flat_eps(&cd), "hull–plane vertex");
        }
    }
    // vertex–face and edge–edge must both have been exercised
    assert!(kinds[0] > 20 && kinds[1] > 5, "{kinds:?}");
}
