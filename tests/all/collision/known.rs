//! Known answers for every closed-form collision pair
//! (`collision::pair_features`): gap, normal and witness points against
//! values computed by hand in the comments, at face, edge and vertex
//! contacts where the pair has them. Tolerance 1e-12 (the values are
//! exact up to round-off of a few operations on numbers of order 1).

use dualsim::collision::box_box::{EDGE_POINT, FEATURES, box_box, box_box_feature};
use dualsim::collision::{Contact, pair_contact, pair_features};
use dualsim::geometry::Shape;
use dualsim::math::{Pose, Vec3, so3};

const TOL: f64 = 1e-12;

fn at(x: f64, y: f64, z: f64) -> Pose<f64> {
    Pose::new(so3::identity(), Vec3::new(x, y, z))
}

fn rot(w: [f64; 3], t: [f64; 3]) -> Pose<f64> {
    Pose::new(so3::exp(&Vec3::from(w)), Vec3::from(t))
}

fn v(x: f64, y: f64, z: f64) -> Vec3<f64> {
    Vec3::new(x, y, z)
}

fn cube(h: f64) -> Shape<f64> {
    Shape::Box {
        half_extents: v(h, h, h),
    }
}

fn ground() -> Shape<f64> {
    Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    }
}

/// Asserts one contact against (gap, normal, point_a, point_b).
fn expect(c: &Contact<f64>, gap: f64, n: Vec3<f64>, pa: Vec3<f64>, pb: Vec3<f64>, what: &str) {
    assert!((c.gap - gap).abs() < TOL, "{what}: gap {} vs {gap}", c.gap);
    assert!((c.normal - n).norm() < TOL, "{what}: normal {:?}", c.normal);
    assert!(
        (c.point_a - pa).norm() < TOL,
        "{what}: point_a {:?}",
        c.point_a
    );
    assert!(
        (c.point_b - pb).norm() < TOL,
        "{what}: point_b {:?}",
        c.point_b
    );
}

/// The single contact of a pair (and that its feature alone gives it).
fn one(a: &Shape<f64>, pa: &Pose<f64>, b: &Shape<f64>, pb: &Pose<f64>) -> Contact<f64> {
    let cs = pair_features(a, pa, b, pb).expect("closed form");
    assert_eq!(cs.len(), 1, "{} {}", a.type_name(), b.type_name());
    assert_eq!(pair_contact(a, pa, b, pb, cs[0].0), Some(cs[0].1));
    cs[0].1
}

/// Every contact of a pair, checked against its feature evaluated alone.
fn all(a: &Shape<f64>, pa: &Pose<f64>, b: &Shape<f64>, pb: &Pose<f64>) -> Vec<Contact<f64>> {
    let cs = pair_features(a, pa, b, pb).expect("closed form");
    for (k, c) in &cs {
        assert_eq!(pair_contact(a, pa, b, pb, *k), Some(*c));
    }
    cs.into_iter().map(|(_, c)| c).collect()
}

#[test]
fn sphere_plane() {
    // Sphere r = 0.5 at (1, 2, 0.3) on z ≤ 0: gap 0.3 − 0.5.
    let c = one(
        &Shape::Sphere { radius: 0.5 },
        &at(1.0, 2.0, 0.3),
        &ground(),
        &Pose::identity(),
    );
    expect(
        &c,
        -0.2,
        Vec3::z(),
        v(1.0, 2.0, -0.2),
        v(1.0, 2.0, 0.0),
        "sphere–plane",
    );
    // The plane z ≤ 0 placed at height 1 and tilted 90° about x: its
    // normal is −y, offset 1·0 + n·t = −1 (points with y ≥ 1 are inside).
    let tilted = rot([std::f64::consts::FRAC_PI_2, 0.0, 0.0], [0.0, 1.0, 0.0]);
    let c = one(
        &Shape::Sphere { radius: 0.5 },
        &at(0.0, 1.3, 0.0),
        &ground(),
        &tilted,
    );
    expect(
        &c,
        -0.8,
        -Vec3::y(),
        v(0.0, 1.8, 0.0),
        v(0.0, 1.0, 0.0),
        "tilted plane",
    );
}

#[test]
fn box_plane_face_edge_vertex() {
    let h = v(0.5, 0.4, 0.3);
    let bx = Shape::Box { half_extents: h };
    // Face down at z = 0.2: the 4 bottom vertices (bit 2 clear) at gap −0.1.
    let cs = all(&bx, &at(0.0, 0.0, 0.2), &ground(), &Pose::identity());
    assert_eq!(cs.len(), 8);
    for (k, c) in cs.iter().enumerate() {
        let x = v(
            if k & 1 == 0 { -0.5 } else { 0.5 },
            if k & 2 == 0 { -0.4 } else { 0.4 },
            if k & 4 == 0 { -0.1 } else { 0.5 },
        );
        expect(c, x.z, Vec3::z(), x, v(x.x, x.y, 0.0), "box–plane face");
    }
    // Edge down: a 1 m cube turned 45° about x; vertices (±0.5, −0.5, −0.5)
    // go to (±0.5, 0, −√2/2); at height 0.7 they are 0.7 − √2/2 deep.
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let pose = rot([std::f64::consts::FRAC_PI_4, 0.0, 0.0], [0.0, 0.0, 0.7]);
    let cs = all(&cube(0.5), &pose, &ground(), &Pose::identity());
    for k in [0, 1] {
        let x = if k == 0 { -0.5 } else { 0.5 };
        expect(
            &cs[k],
            0.7 - s,
            Vec3::z(),
            v(x, 0.0, 0.7 - s),
            v(x, 0.0, 0.0),
            "box–plane edge",
        );
    }
    let lowest = cs.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
    assert!((lowest - (0.7 - s)).abs() < TOL);
    // Corner down: the cube's diagonal (1, 1, 1) turned onto −z; vertex 7
    // (+, +, +) lowest, √3/2 below the centre.
    let u = v(1.0, 1.0, 1.0).normalize();
    let axis = u.cross(&-Vec3::z()).normalize() * (-u.z).acos();
    let pose = Pose::new(so3::exp(&axis), v(0.0, 0.0, 0.8));
    let cs = all(&cube(0.5), &pose, &ground(), &Pose::identity());
    let d = 0.8 - 3f64.sqrt() / 2.0;
    expect(
        &cs[7],
        d,
        Vec3::z(),
        v(0.0, 0.0, d),
        v(0.0, 0.0, 0.0),
        "box–plane corner",
    );
    assert!(
        cs.iter()
            .enumerate()
            .all(|(k, c)| k == 7 || c.gap > d + 0.5)
    );
}

#[test]
fn capsule_plane() {
    // Capsule r 0.1, half length 0.5, axis turned onto x (90° about y), at
    // z = 0.05: end spheres at (∓0.5, 0, 0.05), each 0.05 deep.
    let cap = Shape::Capsule {
        radius: 0.1,
        half_length: 0.5,
    };
    let pose = rot([0.0, std::f64::consts::FRAC_PI_2, 0.0], [0.0, 0.0, 0.05]);
    let cs = all(&cap, &pose, &ground(), &Pose::identity());
    assert_eq!(cs.len(), 2);
    expect(
        &cs[0],
        -0.05,
        Vec3::z(),
        v(-0.5, 0.0, -0.05),
        v(-0.5, 0.0, 0.0),
        "end 0",
    );
    expect(
        &cs[1],
        -0.05,
        Vec3::z(),
        v(0.5, 0.0, -0.05),
        v(0.5, 0.0, 0.0),
        "end 1",
    );
}

#[test]
fn sphere_sphere() {
    // Centres (3, 4, 0) and 0 (distance 5), radii 1 and 2: gap 2, normal
    // (0.6, 0.8, 0).
    let c = one(
        &Shape::Sphere { radius: 1.0 },
        &at(3.0, 4.0, 0.0),
        &Shape::Sphere { radius: 2.0 },
        &Pose::identity(),
    );
    expect(
        &c,
        2.0,
        v(0.6, 0.8, 0.0),
        v(2.4, 3.2, 0.0),
        v(1.2, 1.6, 0.0),
        "spheres",
    );
}

#[test]
fn capsule_sphere_side_and_end() {
    let cap = Shape::Capsule {
        radius: 0.1,
        half_length: 0.5,
    };
    let ball = Shape::Sphere { radius: 0.1 };
    // Side: the segment point (0, 0, 0.2), sphere centre 0.3 away along x.
    let c = one(&cap, &Pose::identity(), &ball, &at(0.3, 0.0, 0.2));
    expect(
        &c,
        0.1,
        -Vec3::x(),
        v(0.1, 0.0, 0.2),
        v(0.2, 0.0, 0.2),
        "capsule side",
    );
    // End: the end (0, 0, 0.5), sphere centre 0.4 above it.
    let c = one(&cap, &Pose::identity(), &ball, &at(0.0, 0.0, 0.9));
    expect(
        &c,
        0.2,
        -Vec3::z(),
        v(0.0, 0.0, 0.6),
        v(0.0, 0.0, 0.8),
        "capsule end",
    );
    // Exchanged: sphere (a) against capsule (b), the flip.
    let c = one(&ball, &at(0.0, 0.0, 0.9), &cap, &Pose::identity());
    expect(
        &c,
        0.2,
        Vec3::z(),
        v(0.0, 0.0, 0.8),
        v(0.0, 0.0, 0.6),
        "sphere–capsule",
    );
}

#[test]
fn capsule_capsule_crossed() {
    // a along x at height 0.5, b along y at the origin, radii 0.1: closest
    // points (0, 0, 0.5) and 0, gap 0.5 − 0.2.
    let cap = Shape::Capsule {
        radius: 0.1,
        half_length: 0.5,
    };
    let pa = rot([0.0, std::f64::consts::FRAC_PI_2, 0.0], [0.0, 0.0, 0.5]);
    let pb = rot([std::f64::consts::FRAC_PI_2, 0.0, 0.0], [0.0, 0.0, 0.0]);
    let c = one(&cap, &pa, &cap, &pb);
    expect(
        &c,
        0.3,
        Vec3::z(),
        v(0.0, 0.0, 0.4),
        v(0.0, 0.0, 0.1),
        "crossed capsules",
    );
    // End to end along z: a's lower end (0, 0, 0.7) over b's upper (0, 0, 0.5).
    let c = one(&cap, &at(0.0, 0.0, 1.2), &cap, &Pose::identity());
    expect(
        &c,
        0.0,
        Vec3::z(),
        v(0.0, 0.0, 0.6),
        v(0.0, 0.0, 0.6),
        "capsule ends",
    );
}

#[test]
fn sphere_box_face_edge_vertex_inside() {
    let ball = Shape::Sphere { radius: 0.1 };
    let bx = cube(0.5);
    let o = Pose::identity();
    // Face: 0.2 above the top face.
    let c = one(&ball, &at(0.0, 0.0, 0.7), &bx, &o);
    expect(
        &c,
        0.1,
        Vec3::z(),
        v(0.0, 0.0, 0.6),
        v(0.0, 0.0, 0.5),
        "face",
    );
    // Edge: closest box point (0.5, 0, 0.5), offset (0.3, 0, 0.4).
    let c = one(&ball, &at(0.8, 0.0, 0.9), &bx, &o);
    expect(
        &c,
        0.4,
        v(0.6, 0.0, 0.8),
        v(0.74, 0.0, 0.82),
        v(0.5, 0.0, 0.5),
        "edge",
    );
    // Vertex: closest (0.5, 0.5, 0.5), offset (0.2, 0.2, 0.2).
    let c = one(&ball, &at(0.7, 0.7, 0.7), &bx, &o);
    let n = v(1.0, 1.0, 1.0) / 3f64.sqrt();
    let d = 0.2 * 3f64.sqrt();
    expect(
        &c,
        d - 0.1,
        n,
        v(0.7, 0.7, 0.7) - n * 0.1,
        v(0.5, 0.5, 0.5),
        "vertex",
    );
    // Centre inside, 0.05 below the top face: gap −0.05 − 0.1.
    let c = one(&ball, &at(0.0, 0.0, 0.45), &bx, &o);
    expect(
        &c,
        -0.15,
        Vec3::z(),
        v(0.0, 0.0, 0.35),
        v(0.0, 0.0, 0.5),
        "inside",
    );
    // Box (a) against sphere (b): the flip.
    let c = one(&bx, &o, &ball, &at(0.0, 0.0, 0.7));
    expect(
        &c,
        0.1,
        -Vec3::z(),
        v(0.0, 0.0, 0.5),
        v(0.0, 0.0, 0.6),
        "box–sphere",
    );
}

/// Contacts sorted by point_a (x, then y, rounded to 1e-9 so that
/// round-off does not reorder equal coordinates) for comparison with a list.
fn sorted(mut cs: Vec<Contact<f64>>) -> Vec<Contact<f64>> {
    let key = |c: &Contact<f64>| {
        (
            (c.point_a.x * 1e9).round() as i64,
            (c.point_a.y * 1e9).round() as i64,
        )
    };
    cs.sort_by_key(key);
    cs
}

#[test]
fn box_box_face_small_on_large() {
    // A 0.2 m cube at (0.05, 0.02, 0.59) on a 1 m cube at the origin: its
    // 4 bottom corners (0.05 ± 0.1, 0.02 ± 0.1, 0.49), 0.01 into the top
    // face z = 0.5.
    let cs = sorted(all(
        &cube(0.1),
        &at(0.05, 0.02, 0.59),
        &cube(0.5),
        &Pose::identity(),
    ));
    assert_eq!(cs.len(), 4);
    let mut k = 0;
    for x in [-0.05, 0.15] {
        for y in [-0.08, 0.12] {
            expect(
                &cs[k],
                -0.01,
                Vec3::z(),
                v(x, y, 0.49),
                v(x, y, 0.5),
                "small on large",
            );
            k += 1;
        }
    }
    // The large box (a) at (0.05, 0.02, 0.59) above the small one (b) at
    // the origin: the small box's 4 top corners, 0.01 into the large
    // box's bottom face z = 0.09.
    let cs = sorted(all(
        &cube(0.5),
        &at(0.05, 0.02, 0.59),
        &cube(0.1),
        &Pose::identity(),
    ));
    assert_eq!(cs.len(), 4);
    let mut k = 0;
    for x in [-0.1, 0.1] {
        for y in [-0.1, 0.1] {
            expect(
                &cs[k],
                -0.01,
                Vec3::z(),
                v(x, y, 0.09),
                v(x, y, 0.1),
                "large on small",
            );
            k += 1;
        }
    }
}

#[test]
fn box_box_face_offset_equal_boxes() {
    // Two 0.4 × 0.4 × 0.2 boxes, the upper one shifted 0.02 along x and
    // 0.001 into the lower: the overlap rectangle x ∈ [−0.18, 0.2],
    // y ∈ [−0.2, 0.2]; its corners are 2 vertices of each box.
    let bx = Shape::Box {
        half_extents: v(0.2, 0.2, 0.1),
    };
    let cs = sorted(all(&bx, &at(0.02, 0.0, 0.199), &bx, &Pose::identity()));
    assert_eq!(cs.len(), 4, "{cs:?}");
    let mut k = 0;
    for x in [-0.18, 0.2] {
        for y in [-0.2, 0.2] {
            expect(
                &cs[k],
                -0.001,
                Vec3::z(),
                v(x, y, 0.099),
                v(x, y, 0.1),
                "offset boxes",
            );
            k += 1;
        }
    }
}

/// Faces flush within the clip tolerance (`box_tower`'s boxes: the upper
/// box offset 0.02 along x, its y faces flush with the lower box's up to
/// `d`): as `d` sweeps across ±4 times the tolerance (1e-6 × 0.2 m) in
/// steps of 1/8 of it, the contact points move continuously, each at most
/// `|Δd|` (plus round-off) from one of the previous sweep point's and back.
/// Keeping the first of two coincident clip points made a point jump by
/// the tolerance (2e-7 m) where `d` passed it: an incident vertex up to
/// `tol` outside the rectangle was kept, one further out gave way to the
/// crossing of its edge with the side.
#[test]
fn box_box_flush_faces_move_the_contact_points_continuously() {
    let bx = Shape::Box {
        half_extents: v(0.2, 0.2, 0.1),
    };
    let tol = 1e-6 * 0.2;
    let step = tol / 8.0;
    let points = |d: f64| -> Vec<Vec3<f64>> {
        all(&bx, &at(0.02, d, 0.1999), &bx, &Pose::identity())
            .into_iter()
            .map(|c| c.point_b)
            .collect()
    };
    // largest distance from a point of `p` to the nearest point of `q`
    let far = |p: &[Vec3<f64>], q: &[Vec3<f64>]| {
        p.iter()
            .map(|x| {
                q.iter()
                    .map(|y| (x - y).norm())
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max)
    };
    let mut prev = points(-4.0 * tol);
    let mut worst: f64 = 0.0;
    for k in 1..=64 {
        let d = -4.0 * tol + k as f64 * step;
        let now = points(d);
        assert_eq!(now.len(), 4, "d = {d:e}: {now:?}");
        worst = worst.max(far(&now, &prev)).max(far(&prev, &now));
        prev = now;
    }
    assert!(
        worst <= step + 1e-15,
        "a contact point jumped by {worst:.3e} (sweep step {step:.3e})"
    );
}

#[test]
fn box_box_face_rotated_incident_gives_eight_points() {
    // A 0.2 m cube turned 45° about z on a 0.2 m
    // cube, 0.01 into it: the octagon of the square and the turned square.
    // Its 8 corners: crossings of the turned square's edges with the lower
    // square's sides, at x = ±0.1, y = ±(√2·0.1 − 0.1) and swapped.
    let pa = rot([0.0, 0.0, std::f64::consts::FRAC_PI_4], [0.0, 0.0, 0.19]);
    let cs = sorted(all(&cube(0.1), &pa, &cube(0.1), &Pose::identity()));
    assert_eq!(cs.len(), 8, "{cs:?}");
    let w = 0.1 * 2f64.sqrt() - 0.1;
    let expected = sorted(
        [
            (-0.1, -w),
            (-0.1, w),
            (0.1, -w),
            (0.1, w),
            (-w, -0.1),
            (w, -0.1),
            (-w, 0.1),
            (w, 0.1),
        ]
        .iter()
        .map(|&(x, y)| Contact {
            gap: -0.01,
            point_a: v(x, y, 0.09),
            point_b: v(x, y, 0.1),
            normal: Vec3::z(),
        })
        .collect(),
    );
    for (c, e) in cs.iter().zip(&expected) {
        expect(c, e.gap, e.normal, e.point_a, e.point_b, "octagon");
    }
}

#[test]
fn box_box_edge_edge() {
    // a: a 0.2 m cube turned 45° about x (lowest edge along x at
    // z_a − 0.1√2); b: the same turned 45° about y (top edge along y at
    // z_b + 0.1√2). Centres 0.2√2 − 0.005 apart: the edges cross 0.005 deep
    // at the origin's vertical.
    let r = 0.1 * 2f64.sqrt();
    let za = 2.0 * r - 0.005;
    let pa = rot([std::f64::consts::FRAC_PI_4, 0.0, 0.0], [0.0, 0.0, za]);
    let pb = rot([0.0, std::f64::consts::FRAC_PI_4, 0.0], [0.0, 0.0, 0.0]);
    let c = one(&cube(0.1), &pa, &cube(0.1), &pb);
    expect(
        &c,
        -0.005,
        Vec3::z(),
        v(0.0, 0.0, za - r),
        v(0.0, 0.0, r),
        "edge–edge",
    );
    // Exchanged: the flipped contact.
    let c = one(&cube(0.1), &pb, &cube(0.1), &pa);
    expect(
        &c,
        -0.005,
        -Vec3::z(),
        v(0.0, 0.0, r),
        v(0.0, 0.0, za - r),
        "edge–edge flipped",
    );
}

#[test]
fn box_box_vertex_on_face() {
    // A 0.2 m cube corner down (its diagonal (1, 1, 1) turned onto −z) on a
    // 1 m cube: vertex 7 is 0.1√3 below its centre, 0.003 into z = 0.5.
    let u = v(1.0, 1.0, 1.0).normalize();
    let axis = u.cross(&-Vec3::z()).normalize() * (-u.z).acos();
    let d = 0.1 * 3f64.sqrt();
    let pa = Pose::new(so3::exp(&axis), v(0.1, -0.2, 0.5 + d - 0.003));
    let cs = all(&cube(0.1), &pa, &cube(0.5), &Pose::identity());
    let deep: Vec<_> = cs.iter().filter(|c| c.gap < 0.0).collect();
    assert_eq!(deep.len(), 1, "{cs:?}");
    expect(
        deep[0],
        -0.003,
        Vec3::z(),
        v(0.1, -0.2, 0.497),
        v(0.1, -0.2, 0.5),
        "corner",
    );
    // The other points of the clipped face are at least 0.1 higher.
    assert!(cs.iter().all(|c| c.gap < 0.0 || c.gap > 0.09));
}

#[test]
fn box_box_separated_and_features_at_any_pose() {
    // Side by side 0.01 apart along x: the facing faces, 4 points at gap 0.01.
    let cs = all(
        &cube(0.1),
        &at(0.21, 0.0, 0.0),
        &cube(0.1),
        &Pose::identity(),
    );
    assert_eq!(cs.len(), 4);
    assert!(
        cs.iter()
            .all(|c| (c.gap - 0.01).abs() < TOL && (c.normal - Vec3::x()).norm() < TOL)
    );
    // Every vertex–face and edge–edge feature, and edge points along every
    // (point, edge, face) triple, evaluate (finite) at any poses; none
    // beyond.
    let (pa, pb) = (
        rot([0.3, -0.2, 0.5], [0.1, 0.2, 0.3]),
        rot([-0.4, 0.1, 0.2], [0.0; 3]),
    );
    let h = v(0.1, 0.2, 0.3);
    let levels = (FEATURES - EDGE_POINT) / 144;
    let edge_points =
        (0..144).flat_map(|k| [0, levels / 3, levels - 1].map(|t| EDGE_POINT + k * levels + t));
    for k in (0..EDGE_POINT).chain(edge_points) {
        let c = box_box_feature(&pa, &h, &pb, &h, k).unwrap();
        assert!(c.gap.is_finite() && (c.normal.norm() - 1.0).abs() < TOL);
        assert!((c.gap - c.normal.dot(&(c.point_a - c.point_b))).abs() < TOL);
    }
    assert!(box_box_feature(&pa, &h, &pb, &h, FEATURES).is_none());
    assert_eq!(
        box_box(&pa, &h, &pb, &h).len(),
        pair_features(
            &Shape::Box { half_extents: h },
            &pa,
            &Shape::Box { half_extents: h },
            &pb
        )
        .unwrap()
        .len()
    );
}
