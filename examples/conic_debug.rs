use dualsim::collision::conic::{proximity, ConicParams};
use dualsim::geometry::Shape;
use dualsim::math::{so3, Pose, Vec3};
fn main() {
    let a = Shape::Sphere { radius: 0.7 };
    let b = Shape::Ellipsoid { radii: Vec3::new(0.8, 0.5, 0.3) };
    let pa = Pose::new(so3::exp(&Vec3::new(0.3, 0.2, 0.1)), Vec3::new(0.2, 0.5, -0.3));
    let pb = Pose::new(so3::exp(&Vec3::new(-0.7, 0.4, 1.1)), Vec3::new(-0.4, 0.1, 0.6));
    for c in [0, 1, 2, 3, 6, 12, 30] {
        let pr = ConicParams { centering: c, ..Default::default() };
        let r = proximity(&a, &pa, &b, &pb, &pr).unwrap();
        let lay = dualsim::collision::conic::problem(&a, &pa, &b, &pb).unwrap().layout;
        let sz = lay.jordan(&r.solution.s, &r.solution.z);
        println!("c {c} it {} alpha {:.16} p {:.12?} sz {:.3e}", r.solution.iters, r.alpha, r.point.as_slice(), sz.transpose());
    }
}
