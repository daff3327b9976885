//! The closed-form capsule–box pair (`collision::pairs::capsule_box`):
//! its distance against parry3d's, the table's exchange of the two
//! orders, the gap's derivative against central differences, and a capsule
//! resting flat on a box.

use dualsim::collision::pairs::capsule_box::{capsule_box, capsule_box_feature};
use dualsim::collision::{Contact, capsule_segment, pair_contact, pair_features};
use dualsim::geometry::Shape;
use dualsim::math::{Mat3, Pose, Vec3, so3};
use dualsim::prelude::*;
use num_dual::Dual64;
use parry3d_f64::math::{Pose as PPose, Rot3 as PRot, Vector as PVec};
use parry3d_f64::shape::{Capsule as PCapsule, Cuboid as PCuboid};

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

fn ppose(p: &Pose<f64>) -> PPose {
    let (r, t) = (p.rotation, p.translation);
    PPose::from_parts(
        PVec::new(t.x, t.y, t.z),
        PRot::from_xyzw(r.i, r.j, r.k, r.w),
    )
}

fn capsule(r: f64, l: f64) -> Shape<f64> {
    Shape::Capsule {
        radius: r,
        half_length: l,
    }
}

fn cuboid(h: Vec3<f64>) -> Shape<f64> {
    Shape::Box { half_extents: h }
}

/// 600 seeded random capsules (radius 0.03–0.2 m, half length 0.05–0.5 m)
/// and boxes (half extents 0.05–0.4 m) at random poses within 0.4 m:
/// separated, [`capsule_box`]'s gap and the least gap of the pair's
/// contacts equal parry3d's distance of the same capsule and cuboid to
/// 1e-9 m (both exact up to rounding: parry's GJK on a capsule and a
/// cuboid converges to 1e-10 m or better at these sizes); penetrating,
/// [`capsule_box`]'s gap equals minus parry's EPA depth to 1e-8 m. Every
/// contact satisfies `gap = n · (p_a − p_b)` with a unit normal, and each
/// feature alone is the listed contact.
#[test]
fn capsule_box_matches_parry_distance() {
    let mut rng = Lcg(17);
    let (mut separated, mut penetrating, mut inside, mut middle) = (0, 0, 0, 0);
    for trial in 0..600 {
        let (r, l) = (rng.range(0.03, 0.2), rng.range(0.05, 0.5));
        let h = Vec3::new(
            rng.range(0.05, 0.4),
            rng.range(0.05, 0.4),
            rng.range(0.05, 0.4),
        );
        let (pa, pb) = (rng.pose(0.4), rng.pose(0.4));
        let (sa, sb) = (capsule(r, l), cuboid(h));
        let (e0, e1) = capsule_segment(l, &pa);
        let c = capsule_box(&e0, &e1, r, &pb, &h);
        let cs = pair_features(&sa, &pa, &sb, &pb).expect("capsule–box has a closed form");
        assert!(cs.len() == 2 || cs.len() == 3);
        middle += (cs.len() == 3) as usize;
        for (f, x) in &cs {
            assert!((x.gap - x.normal.dot(&(x.point_a - x.point_b))).abs() < 1e-12);
            assert!((x.normal.norm() - 1.0).abs() < 1e-12);
            assert_eq!(pair_contact(&sa, &pa, &sb, &pb, *f), Some(*x));
            assert_eq!(capsule_box_feature(&e0, &e1, r, &pb, &h, *f), Some(*x));
        }
        assert!((c.gap - c.normal.dot(&(c.point_a - c.point_b))).abs() < 1e-12);
        let least = cs.iter().map(|(_, x)| x.gap).fold(f64::INFINITY, f64::min);
        let (qa, qb) = (
            PCapsule::new_z(l, r),
            PCuboid::new(PVec::new(h.x, h.y, h.z)),
        );
        let (ppa, ppb) = (ppose(&pa), ppose(&pb));
        let d = parry3d_f64::query::distance(&ppa, &qa, &ppb, &qb)
            .unwrap()
            .distance;
        if d > 0.0 {
            separated += 1;
            assert!(
                (c.gap - d).abs() < 1e-9,
                "trial {trial}: gap {}, parry {d}",
                c.gap
            );
            assert!(
                (least - d).abs() < 1e-9,
                "trial {trial}: least {least}, parry {d}"
            );
        } else {
            penetrating += 1;
            inside += (c.gap < -r) as usize;
            let p = parry3d_f64::query::contact(&ppa, &qa, &ppb, &qb, 1.0)
                .unwrap()
                .unwrap();
            assert!(
                (c.gap - p.dist).abs() < 1e-8,
                "trial {trial}: gap {}, parry depth {}",
                c.gap,
                p.dist
            );
            assert!(least <= c.gap + 1e-12);
        }
    }
    println!(
        "{separated} separated, {penetrating} penetrating ({inside} segment inside), {middle} with the middle contact"
    );
    assert!(
        separated > 100 && penetrating > 100 && inside > 20 && middle > 50,
        "{separated} / {penetrating} / {inside} / {middle}"
    );
}

/// The table serves box–capsule by exchanging capsule–box: the same
/// features, each contact flipped (`normal → −normal`, points exchanged),
/// listed and alone, on 300 seeded poses.
#[test]
fn box_capsule_is_flipped_capsule_box() {
    let mut rng = Lcg(23);
    let (sa, sb) = (capsule(0.1, 0.3), cuboid(Vec3::new(0.3, 0.2, 0.25)));
    for _ in 0..300 {
        let (pa, pb) = (rng.pose(0.4), rng.pose(0.4));
        let ab = pair_features(&sa, &pa, &sb, &pb).unwrap();
        let ba = pair_features(&sb, &pb, &sa, &pa).unwrap();
        assert_eq!(ab.len(), ba.len());
        for ((fx, x), (fy, y)) in ab.iter().zip(&ba) {
            assert_eq!((fx, x.flip()), (fy, *y));
            assert_eq!(pair_contact(&sb, &pb, &sa, &pa, *fy), Some(*y));
        }
    }
}

fn pose_dual(p: &Pose<f64>, dir: &[f64; 12], side: usize) -> Pose<Dual64> {
    let o = 6 * side;
    let d = |k: usize| Dual64::new(0.0, dir[o + k]);
    let pc: Pose<Dual64> = p.cast();
    Pose::new(
        so3::exp(&Vec3::new(d(3), d(4), d(5))) * pc.rotation,
        pc.translation + Vec3::new(d(0), d(1), d(2)),
    )
}

fn pose_shift(p: &Pose<f64>, dir: &[f64; 12], side: usize, e: f64) -> Pose<f64> {
    let o = 6 * side;
    let dp = Vec3::new(dir[o], dir[o + 1], dir[o + 2]) * e;
    let dw = Vec3::new(dir[o + 3], dir[o + 4], dir[o + 5]) * e;
    Pose::new(so3::exp(&dw) * p.rotation, p.translation + dp)
}

/// The derivative of every capsule–box feature's gap along a random twist
/// of both poses (world frame), in `Dual64` through the pair table, equals
/// the central difference of the `f64` gap (h = 1e-6; tolerance 1e-6:
/// the difference's error is O(h²) times the third derivative plus
/// O(1e-16 / h) rounding, on gaps of size ~1), and the dual primal is the
/// `f64` gap; 300 seeded configurations, separated and penetrating, with
/// the middle feature among them. Configurations within 1e-4 of a branch
/// of the pair (where the feature list changes across ±h) are skipped.
#[test]
fn capsule_box_gap_derivative_matches_differences() {
    let mut rng = Lcg(29);
    let (sa, sb) = (capsule(0.12, 0.35), cuboid(Vec3::new(0.3, 0.2, 0.25)));
    let (da_shape, db_shape) = (sa.cast::<Dual64>(), sb.cast::<Dual64>());
    let h = 1e-6;
    let (mut checked, mut middle, mut deep) = (0, 0, 0);
    for _ in 0..300 {
        let (pa, pb) = (rng.pose(0.35), rng.pose(0.35));
        let dir: [f64; 12] = core::array::from_fn(|_| rng.range(-1.0, 1.0));
        let feats = pair_features(&sa, &pa, &sb, &pb).unwrap();
        let gap_at = |f: usize, e: f64| {
            pair_contact(
                &sa,
                &pose_shift(&pa, &dir, 0, e),
                &sb,
                &pose_shift(&pb, &dir, 1, e),
                f,
            )
            .unwrap()
            .gap
        };
        for &(f, c0) in &feats {
            let cd: Contact<Dual64> = pair_contact(
                &da_shape,
                &pose_dual(&pa, &dir, 0),
                &db_shape,
                &pose_dual(&pb, &dir, 1),
                f,
            )
            .unwrap();
            assert!((cd.gap.re - c0.gap).abs() < 1e-12);
            let fd = (gap_at(f, h) - gap_at(f, -h)) / (2.0 * h);
            // a branch within reach of the differences: skip
            let fd2 = (gap_at(f, 1e-4) - gap_at(f, -1e-4)) / 2e-4;
            if (fd - fd2).abs() > 1e-5 {
                continue;
            }
            assert!(
                (fd - cd.gap.eps).abs() < 1e-6,
                "feature {f}: dual {} fd {fd} (gap {})",
                cd.gap.eps,
                c0.gap
            );
            checked += 1;
            middle += (f == 2) as usize;
            deep += (c0.gap < -0.12) as usize;
        }
    }
    println!("{checked} gaps checked, {middle} middle, {deep} with the segment inside");
    assert!(
        checked > 500 && middle > 30 && deep > 10,
        "{checked} / {middle} / {deep}"
    );
}

/// A capsule (radius 0.05 m, half length 0.2 m, 0.5 kg) dropped flat from
/// 1 cm onto a 1 kg box (half extents 0.3, 0.3, 0.1 m) resting on the
/// ground settles at rest at the closed-form height: box centre at 0.1 m,
/// capsule centre at 2 · 0.1 + 0.05 = 0.25 m, level (both ends on the
/// face), to 1e-4 m (the resting gap of the relaxed contact is
/// O(ρ / (m g h)) ≈ 1e-5 m here) and with speed below 1e-3 m/s after 1.5 s.
#[test]
fn capsule_rests_flat_on_a_box() {
    let mut w = World::<f64>::new(0.01);
    w.statics.push(crate::common::fixtures::ground(0.5));
    let mat = crate::common::fixtures::mat(0.5);
    let hb = Vec3::new(0.3, 0.3, 0.1);
    let ib = Mat3::from_diagonal(&Vec3::new(
        hb.y * hb.y + hb.z * hb.z,
        hb.x * hb.x + hb.z * hb.z,
        hb.x * hb.x + hb.y * hb.y,
    )) / 3.0;
    w.add_body("box", 1.0, ib, Some(cuboid(hb)), mat).unwrap();
    let (r, l, m) = (0.05, 0.2, 0.5);
    let ic = Mat3::from_diagonal(&Vec3::new(
        m * (l * l / 3.0 + r * r / 4.0),
        m * (l * l / 3.0 + r * r / 4.0),
        m * r * r / 2.0,
    ));
    w.add_body("capsule", m, ic, Some(capsule(r, l)), mat)
        .unwrap();
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.1], [0.02, -0.03, 0.26]]);
    // the capsule's axis along world x
    let q = so3::exp(&Vec3::new(0.0, std::f64::consts::FRAC_PI_2, 0.0));
    let k = w.model.bodies[1].idx_q;
    x0.q[k + 3] = q.w;
    x0.q[k + 4] = q.i;
    x0.q[k + 5] = q.j;
    x0.q[k + 6] = q.k;
    let traj = rollout(&w, &x0, &Controls::Constant(w.zero_control()), 150).unwrap();
    let last = traj.last();
    let (zb, zc) = (last.q[2], last.q[k + 2]);
    let axis = so3::rotate(
        &dualsim::math::Quat::new(last.q[k + 3], last.q[k + 4], last.q[k + 5], last.q[k + 6]),
        &Vec3::z(),
    );
    println!(
        "box z {zb}, capsule z {zc}, axis {axis:?}, speed {}",
        last.v.norm()
    );
    assert!((zb - 0.1).abs() < 1e-4, "box at {zb}");
    assert!((zc - 0.25).abs() < 1e-4, "capsule at {zc}");
    assert!(axis.z.abs() < 1e-3, "capsule axis {axis:?} not level");
    assert!(last.v.norm() < 1e-3, "still moving: {}", last.v.norm());
}
