//! Mesh hulls (`collision::hull_hull`, `collision::hull_plane`): all
//! contacts of a pair (GJK/EPA, witness features, face clipping, every
//! contact evaluated), f64, for two hulls of 100 random points on
//! ellipsoids (about 200 faces each, the size of a robot link's hull) at
//! 64 seeded pose pairs 0–5 cm apart or overlapping, cycled through; a
//! hull on the ground plane; and, for comparison, one conic proximity
//! solve of the same two polytopes without their hull structure (the path
//! these pairs took before).
//!
//! `cargo bench --bench hull -- --warm-up-time 1 --measurement-time 3`

use criterion::{Criterion, criterion_group, criterion_main};
use dualsim::collision::conic::{ConicParams, proximity};
use dualsim::collision::{Contact, pair_features_into};
use dualsim::geometry::Shape;
use dualsim::geometry::mesh::convex_hull;
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

fn hull(rng: &mut Rng, n: usize, radii: Vec3<f64>) -> Shape<f64> {
    let pts: Vec<Vec3<f64>> = (0..n)
        .map(|_| {
            loop {
                let p = rng.vec(1.0);
                if p.norm() > 0.1 && p.norm() <= 1.0 {
                    break p.normalize().component_mul(&radii);
                }
            }
        })
        .collect();
    convex_hull(&pts).unwrap().shape()
}

fn bench(c: &mut Criterion) {
    let mut rng = Rng(7);
    let a = hull(&mut rng, 100, Vec3::new(0.1, 0.06, 0.05));
    let b = hull(&mut rng, 100, Vec3::new(0.05, 0.08, 0.06));
    let (Shape::Polytope { hull: Some(ha), .. }, Shape::Polytope { hull: Some(hb), .. }) = (&a, &b)
    else {
        unreachable!()
    };
    eprintln!(
        "hull a: {} vertices, {} faces; hull b: {} vertices, {} faces",
        ha.vertices.len(),
        ha.normals.len(),
        hb.vertices.len(),
        hb.normals.len()
    );
    // b placed at a random direction from a, its centre 0.1–0.16 m away
    let pairs: Vec<(Pose<f64>, Pose<f64>)> = (0..64)
        .map(|_| {
            let pa = Pose::new(so3::exp(&rng.vec(2.0)), Vec3::zeros());
            let d = rng.vec(1.0).normalize() * (0.13 + 0.03 * rng.next());
            (pa, Pose::new(so3::exp(&rng.vec(2.0)), d))
        })
        .collect();
    let mut out: Vec<(usize, Contact<f64>)> = Vec::new();
    let mut group = c.benchmark_group("hull");
    let mut k = 0;
    group.bench_function("hull_hull", |bench| {
        bench.iter(|| {
            let (pa, pb) = &pairs[k % pairs.len()];
            k += 1;
            black_box(pair_features_into(
                black_box(&a),
                pa,
                black_box(&b),
                pb,
                &mut out,
            ));
            black_box(out.len())
        })
    });
    let ground = Shape::Plane {
        normal: Vec3::z(),
        offset: 0.0,
    };
    let mut k = 0;
    group.bench_function("hull_plane", |bench| {
        bench.iter(|| {
            let (pa, _) = &pairs[k % pairs.len()];
            k += 1;
            let pa = Pose::new(pa.rotation, Vec3::new(0.0, 0.0, 0.05));
            black_box(pair_features_into(
                black_box(&a),
                &pa,
                &ground,
                &Pose::identity(),
                &mut out,
            ));
            black_box(out.len())
        })
    });
    let strip = |s: &Shape<f64>| match s {
        Shape::Polytope {
            normals, offsets, ..
        } => Shape::Polytope {
            normals: normals.clone(),
            offsets: offsets.clone(),
            hull: None,
        },
        _ => unreachable!(),
    };
    let (ca, cb) = (strip(&a), strip(&b));
    let params = ConicParams::default();
    group.sample_size(10);
    let mut k = 0;
    group.bench_function("conic_same_polytopes", |bench| {
        bench.iter(|| {
            let (pa, pb) = &pairs[k % pairs.len()];
            k += 1;
            black_box(proximity(&ca, pa, &cb, pb, &params).ok())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
