//! Steps the resting polytope of `benches/silico.rs` repeatedly for
//! profiling (`valgrind --tool=callgrind`): the chamfered box of the
//! Silico drop (h = 0.01 s, ρ = 1e-6) settled on a face for 20 steps,
//! then `STEPS` independent steps from that state.
//!
//! `cargo run --release --features examples --example silico_profile -- [single_level|bilevel] STEPS`
//!
//! Instructions per step = (instructions with `STEPS` − with 0) / `STEPS`.
use dualsim::contact::SolverKind;
use dualsim::experiments::silico::drop_world;
use dualsim::sim::{State, step};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let solver = match args.first().map(String::as_str) {
        Some("bilevel") => SolverKind::Bilevel,
        _ => SolverKind::SingleLevel,
    };
    let steps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let w = drop_world(solver, 0.01, 1e-6, 30);
    let u = w.zero_control();
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 0.2]]);
    for _ in 0..20 {
        x = step(&w, &x, &u).expect("settling step").state;
    }
    let mut iters = 0;
    for _ in 0..steps {
        iters += std::hint::black_box(step(&w, std::hint::black_box(&x), &u))
            .expect("step")
            .stats
            .iterations;
    }
    println!(
        "{} steps, {:.2} iterations per step",
        steps,
        iters as f64 / steps.max(1) as f64
    );
}
