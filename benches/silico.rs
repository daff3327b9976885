//! Step time of `single_level` against `bilevel` on the polytope drop
//! (Silico §VI-B reports the single-level step 30× faster). The state is
//! the polytope resting on a face (h = 0.01 s, ρ = 1e-6), where both
//! backends converge; the ratio is printed at the end from the same run.
//!
//! `cargo bench --bench silico`

use criterion::{Criterion, criterion_group, criterion_main};
use dualsim::contact::SolverKind;
use dualsim::experiments::silico::drop_world;
use dualsim::sim::{State, step};
use std::hint::black_box;
use std::time::Instant;

fn resting(solver: SolverKind) -> (dualsim::sim::World<f64>, State<f64>) {
    let w = drop_world(solver, 0.01, 1e-6, 30);
    let x = State::at_rest(&w.model, &[[0.0, 0.0, 0.2]]);
    // Settle for 0.2 s so the contact is established.
    let u = w.zero_control();
    let mut x = x;
    for _ in 0..20 {
        x = step(&w, &x, &u).expect("settling step").state;
    }
    (w, x)
}

fn mean_time(solver: SolverKind, reps: usize) -> f64 {
    let (w, x) = resting(solver);
    let u = w.zero_control();
    let t0 = Instant::now();
    for _ in 0..reps {
        black_box(step(&w, black_box(&x), &u).expect("step"));
    }
    t0.elapsed().as_secs_f64() / reps as f64
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("silico_polytope_drop_step");
    for solver in [SolverKind::SingleLevel, SolverKind::Bilevel] {
        let (w, x) = resting(solver);
        let u = w.zero_control();
        g.bench_function(solver.name(), |b| {
            b.iter(|| step(&w, black_box(&x), &u).expect("step"))
        });
    }
    g.finish();
    let (s, b) = (
        mean_time(SolverKind::SingleLevel, 200),
        mean_time(SolverKind::Bilevel, 200),
    );
    println!(
        "polytope drop step: single_level {:.1} µs, bilevel {:.1} µs, bilevel / single_level = {:.2}",
        s * 1e6,
        b * 1e6,
        b / s
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
