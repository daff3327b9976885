//! Profiling driver for the conic proximity (`collision::conic`): runs one
//! case of `benches/conic.rs` (same seeded poses) a fixed number of times,
//! for instruction counts under callgrind.
//!
//! `cargo build --release --features examples --example conic_profile`
//! `valgrind --tool=callgrind target/release/examples/conic_profile box_box 1000`
//! (instructions per solve = (total − total with 0 solves) / 1000).

use dualsim::collision::conic::{ConicParams, proximity, proximity_gradient};
use dualsim::geometry::Shape;
use dualsim::math::{Pose, Vec3, so3};
use std::hint::black_box;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vec(&mut self, s: f64) -> Vec3<f64> {
        Vec3::new(self.next(), self.next(), self.next()) * s
    }
}

fn polytope() -> Shape<f64> {
    let g = (1.0 + 5.0_f64.sqrt()) / 2.0;
    let mut normals = Vec::new();
    for &(a, b) in &[(1.0, g), (-1.0, g), (1.0, -g), (-1.0, -g)] {
        normals.push(Vec3::new(0.0, a, b).normalize());
        normals.push(Vec3::new(a, b, 0.0).normalize());
        normals.push(Vec3::new(b, 0.0, a).normalize());
    }
    let offsets = vec![0.5; normals.len()];
    Shape::Polytope {
        normals,
        offsets,
        hull: None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map(String::as_str).unwrap_or("box_box");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mut rng = Rng(7);
    let pairs: Vec<(Pose<f64>, Pose<f64>)> = (0..64)
        .map(|_| {
            let a = Pose::new(so3::exp(&rng.vec(2.0)), rng.vec(1.0));
            let b = Pose::new(so3::exp(&rng.vec(2.0)), rng.vec(1.0));
            (a, b)
        })
        .collect();
    let (a, b, grad) = match case {
        "sphere_sphere" => (
            Shape::Sphere { radius: 0.5 },
            Shape::Sphere { radius: 0.3 },
            false,
        ),
        "box_box" | "box_box_gradient" => (
            Shape::Box {
                half_extents: Vec3::new(0.5, 0.3, 0.4),
            },
            Shape::Box {
                half_extents: Vec3::new(0.2, 0.6, 0.3),
            },
            case == "box_box_gradient",
        ),
        "polytope_polytope" => (polytope(), polytope(), false),
        "capsule_cylinder" => (
            Shape::Capsule {
                radius: 0.2,
                half_length: 0.5,
            },
            Shape::Cylinder {
                radius: 0.3,
                half_length: 0.4,
            },
            false,
        ),
        _ => panic!("unknown case {case}"),
    };
    let params = ConicParams::default();
    let mut iters = 0usize;
    let mut fails = 0usize;
    for k in 0..n {
        let (pa, pb) = &pairs[k % pairs.len()];
        if grad {
            match proximity_gradient(&a, pa, &b, pb, &params) {
                Ok((p, j)) => {
                    iters += p.solution.iters;
                    black_box(j);
                }
                Err(_) => fails += 1,
            }
        } else {
            match proximity(black_box(&a), pa, black_box(&b), pb, &params) {
                Ok(p) => {
                    iters += p.solution.iters;
                    black_box(p);
                }
                Err(_) => fails += 1,
            }
        }
    }
    println!(
        "{case}: {n} solves, {fails} failed, mean iterations {:.2}",
        iters as f64 / n.max(1) as f64
    );
}
