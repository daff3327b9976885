//! Conic proximity (`collision::conic`): one solve (lower + assemble +
//! interior point, f64) for sphere–sphere, box–box, polytope–polytope
//! (two 12-face polytopes) and capsule–cylinder, on 64 seeded random pose
//! pairs cycled through; plus the full derivative routine
//! (`proximity_gradient`: envelope + IFT for all parameters) for box–box.
//!
//! `cargo bench --bench conic -- --warm-up-time 1 --measurement-time 2`

use criterion::{Criterion, criterion_group, criterion_main};
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

/// A polytope with 12 faces: the normals of an icosahedron's vertices.
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

fn poses(n: usize) -> Vec<(Pose<f64>, Pose<f64>)> {
    let mut rng = Rng(7);
    (0..n)
        .map(|_| {
            let a = Pose::new(so3::exp(&rng.vec(2.0)), rng.vec(1.0));
            let b = Pose::new(so3::exp(&rng.vec(2.0)), rng.vec(1.0));
            (a, b)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let params = ConicParams::default();
    let pairs = poses(64);
    let cases: Vec<(&str, Shape<f64>, Shape<f64>)> = vec![
        (
            "sphere_sphere",
            Shape::Sphere { radius: 0.5 },
            Shape::Sphere { radius: 0.3 },
        ),
        (
            "box_box",
            Shape::Box {
                half_extents: Vec3::new(0.5, 0.3, 0.4),
            },
            Shape::Box {
                half_extents: Vec3::new(0.2, 0.6, 0.3),
            },
        ),
        ("polytope_polytope", polytope(), polytope()),
        (
            "capsule_cylinder",
            Shape::Capsule {
                radius: 0.2,
                half_length: 0.5,
            },
            Shape::Cylinder {
                radius: 0.3,
                half_length: 0.4,
            },
        ),
    ];
    let mut group = c.benchmark_group("conic_proximity");
    for (name, a, b) in &cases {
        let mut k = 0;
        group.bench_function(*name, |bench| {
            bench.iter(|| {
                let (pa, pb) = &pairs[k % pairs.len()];
                k += 1;
                black_box(proximity(black_box(a), pa, black_box(b), pb, &params).ok())
            })
        });
    }
    let (_, a, b) = &cases[1];
    let mut k = 0;
    group.bench_function("box_box_gradient", |bench| {
        bench.iter(|| {
            let (pa, pb) = &pairs[k % pairs.len()];
            k += 1;
            black_box(proximity_gradient(a, pa, b, pb, &params).ok())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
