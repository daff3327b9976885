//! Closed-form collision pairs and the broad phase.

use dualsim::Scalar;
use dualsim::collision::broad_phase::{Aabb, sweep_and_prune};
use dualsim::collision::{Contact, pair_contact, pair_contacts, pair_features};
use dualsim::geometry::Shape;
use dualsim::math::{Pose, Vec3, so3};
use num_dual::Dual64;

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
    fn pose(&mut self, r: f64) -> Pose<f64> {
        let w = Vec3::new(
            self.range(-2.0, 2.0),
            self.range(-2.0, 2.0),
            self.range(-2.0, 2.0),
        );
        let t = Vec3::new(self.range(-r, r), self.range(-r, r), self.range(-r, r));
        Pose::new(so3::exp(&w), t)
    }
}

fn shapes() -> Vec<Shape<f64>> {
    vec![
        Shape::Sphere { radius: 0.3 },
        Shape::Box {
            half_extents: Vec3::new(0.3, 0.2, 0.4),
        },
        Shape::Capsule {
            radius: 0.15,
            half_length: 0.4,
        },
    ]
}

/// `pair(a, b) == flip(pair(b, a))` for the pairs whose two orders are
/// computed independently: sphere–sphere, capsule–capsule and box–box,
/// each with two different sizes so that the exchange is not an identity.
/// (Sphere–box, sphere–capsule and their reverses are one kernel and its
/// `flip`, and box–capsule has no closed form: exchanging them tests
/// nothing.) 300 seeded configurations per pair; both orders give the same
/// number of contacts, and every contact of one is a contact of the other
/// (box–box may list them in another order) to 1e-12. Each pair must
/// produce contacts (touching ones included), or the test tests nothing.
#[test]
fn pairs_are_symmetric_under_exchange() {
    let mut rng = Lcg(7);
    let pairs = [
        (
            Shape::Sphere { radius: 0.3 },
            Shape::Sphere { radius: 0.45 },
        ),
        (
            Shape::Capsule {
                radius: 0.15,
                half_length: 0.4,
            },
            Shape::Capsule {
                radius: 0.25,
                half_length: 0.2,
            },
        ),
        (
            Shape::Box {
                half_extents: Vec3::new(0.3, 0.2, 0.4),
            },
            Shape::Box {
                half_extents: Vec3::new(0.5, 0.25, 0.15),
            },
        ),
    ];
    let close = |x: &Contact<f64>, y: &Contact<f64>| {
        (x.gap - y.gap).abs() < 1e-12
            && (x.normal - y.normal).norm() < 1e-12
            && (x.point_a - y.point_a).norm() < 1e-12
            && (x.point_b - y.point_b).norm() < 1e-12
    };
    for (a, b) in &pairs {
        let (mut compared, mut touching) = (0, 0);
        for _ in 0..300 {
            let (pa, pb) = (rng.pose(0.6), rng.pose(0.6));
            let ab = pair_contacts(a, &pa, b, &pb).expect("a closed-form pair");
            let ba = pair_contacts(b, &pb, a, &pa).expect("a closed-form pair");
            assert_eq!(
                ab.len(),
                ba.len(),
                "{}–{}: {} contacts one way, {} the other",
                a.type_name(),
                b.type_name(),
                ab.len(),
                ba.len()
            );
            for x in &ab {
                assert!(
                    ba.iter().any(|y| close(x, &y.flip())),
                    "{}–{}: {x:?} has no match in the exchanged pair {ba:?}",
                    a.type_name(),
                    b.type_name()
                );
                compared += 1;
                touching += (x.gap < 0.0) as usize;
            }
        }
        println!(
            "{}–{}: {compared} contacts compared, {touching} penetrating",
            a.type_name(),
            b.type_name()
        );
        assert!(compared >= 100 && touching >= 20, "{compared} / {touching}");
    }
}

#[test]
fn gap_is_consistent_with_points_and_normal() {
    // gap = n · (point_a − point_b) and ‖n‖ = 1, plus plane pairs
    // (tolerance 1e-12, 100 seeded configurations per pair); each contact
    // is its feature evaluated alone.
    let mut rng = Lcg(11);
    let plane = Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    };
    let mut list: Vec<(Shape<f64>, Shape<f64>)> = Vec::new();
    for a in shapes() {
        list.push((a.clone(), plane.clone()));
        for b in shapes() {
            list.push((a.clone(), b));
        }
    }
    for (a, b) in &list {
        for _ in 0..100 {
            let (pa, pb) = (rng.pose(1.0), rng.pose(1.0));
            let Some(cs) = pair_features(a, &pa, b, &pb) else {
                continue;
            };
            for &(k, ref c) in &cs {
                assert!((c.normal.norm() - 1.0).abs() < 1e-12);
                assert!(
                    (c.gap - c.normal.dot(&(c.point_a - c.point_b))).abs() < 1e-12,
                    "{} {}",
                    a.type_name(),
                    b.type_name()
                );
                assert_eq!(Some(*c), pair_contact(a, &pa, b, &pb, k));
            }
        }
    }
}

#[test]
fn gap_gradient_is_the_normal() {
    // d gap / d (translation of a) = n (envelope theorem), by Dual64, for
    // every pair (tolerance 1e-9), away from the branch surfaces.
    let mut rng = Lcg(3);
    let plane = Shape::Plane {
        normal: Vec3::new(0.0, 0.0, 1.0),
        offset: 0.0,
    };
    for a in shapes() {
        for b in shapes().into_iter().chain([plane.clone()]) {
            for _ in 0..50 {
                let (pa, pb) = (rng.pose(1.0), rng.pose(1.0));
                for d in 0..3 {
                    let mut pad: Pose<Dual64> = pa.cast();
                    pad.translation[d] = Dual64::new(pa.translation[d], 1.0);
                    let Some(cs) = pair_contacts(&a.cast::<Dual64>(), &pad, &b.cast(), &pb.cast())
                    else {
                        continue;
                    };
                    for c in cs {
                        let c: Contact<Dual64> = c;
                        assert!(
                            (c.gap.eps - c.normal[d].re()).abs() < 1e-9,
                            "{}-{}",
                            a.type_name(),
                            b.type_name()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn coincident_centres_have_finite_derivatives() {
    // Zero-safety: spheres with the same centre (dual parts seeded).
    let c = Vec3::new(Dual64::new(1.0, 1.0), Dual64::from(0.0), Dual64::from(0.0));
    let k = dualsim::collision::sphere_sphere::sphere_sphere(
        &c,
        Dual64::from(0.5),
        &c,
        Dual64::from(0.5),
    );
    assert!(k.gap.is_all_finite() && k.normal.iter().all(|x| x.is_all_finite()));
    assert_eq!(k.normal.map(|x| x.re()), Vec3::z());
}

#[test]
fn sweep_and_prune_matches_brute_force() {
    // 300 random boxes, 20 seeds: the same pairs as the O(n²) test.
    for seed in 0..20 {
        let mut rng = Lcg(seed);
        let boxes: Vec<Aabb> = (0..300)
            .map(|_| {
                Aabb::ball(
                    [
                        rng.range(0.0, 10.0),
                        rng.range(0.0, 10.0),
                        rng.range(0.0, 2.0),
                    ],
                    rng.range(0.05, 0.4),
                )
            })
            .collect();
        let mut brute = Vec::new();
        for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if boxes[i].overlaps(&boxes[j]) {
                    brute.push((i, j));
                }
            }
        }
        assert_eq!(sweep_and_prune(&boxes), brute);
    }
}
