//! Heap allocations of a steady-state f64 `ipm` step, counted by a global
//! allocator (issue #14, point 5).
//!
//! A rollout step (`sim::step_into` with the workspace and the output of
//! the previous step) allocates nothing: every buffer of the step —
//! candidates and their broad phase, islands, each island's solve
//! (iterates, directions, factorizations), the free flight, the next state
//! and the contact impulses — is kept in the workspace or the output and
//! reused. That is asserted for a resting box and a 20-sphere pile, with
//! the rollout's contact warm start on (the default) and off. A single
//! `sim::step` (no workspace) sets its buffers up afresh each time; its
//! count is printed and bounded as a regression guard.
//!
//! The counting allocator is the global allocator of the whole test
//! binary; it counts per thread, so the other tests running beside these
//! do not disturb their counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;

struct Counting;

thread_local! {
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    COUNT.with(|c| c.get())
}

fn ground() -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    }
}

fn resting_box() -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    let a = 0.1;
    w.add_body(
        "box",
        1.0,
        Mat3::identity() * ((2.0 * a) * (2.0 * a) / 6.0),
        Some(Shape::Box {
            half_extents: Vec3::repeat(a),
        }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(ground());
    let x = State::at_rest(&w.model, &[[0.0, 0.0, a]]);
    (w, x)
}

fn pile(n: usize) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    let r = 0.1;
    let mut pos = Vec::new();
    for i in 0..n {
        pos.push([(i % 10) as f64 * 0.25, (i / 10) as f64 * 0.25, r]);
        w.add_body(
            &format!("s{i}"),
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            Material::default(),
        )
        .unwrap();
    }
    w.statics.push(ground());
    let x = State::at_rest(&w.model, &pos);
    (w, x)
}

/// (allocations per step, iterations per step) over `steps` steady-state
/// steps after 30 settling steps.
fn count(w: &World<f64>, x0: &State<f64>, steps: usize) -> (f64, f64) {
    let u = w.zero_control();
    let mut x = x0.clone();
    for _ in 0..30 {
        x = step(w, &x, &u).expect("settling step").state;
    }
    let before = allocations();
    let mut iters = 0;
    for _ in 0..steps {
        let out = step(w, &x, &u).expect("steady step");
        iters += out.stats.iterations;
        x = out.state;
    }
    let n = allocations() - before;
    (n as f64 / steps as f64, iters as f64 / steps as f64)
}

#[test]
fn resting_box_allocations_per_step() {
    let (w, x) = resting_box();
    let (per_step, iters) = count(&w, &x, 20);
    println!("resting box: {per_step:.1} allocations per step, {iters:.2} iterations per step");
    // Bound: today's count (see the module docs); the target is 0.
    assert!(per_step <= 300.0, "{per_step} allocations per step");
    // A tighter ρ takes more iterations for the same setup: what it adds
    // per extra iteration is what the iterations allocate (today the
    // collision query of each contact's kinematics, 3 per contact).
    let mut tight = w.clone();
    tight.params.rho = 1e-9;
    let (per_step_tight, iters_tight) = count(&tight, &x, 20);
    println!(
        "resting box, rho = 1e-9: {per_step_tight:.1} allocations per step, {iters_tight:.2} iterations per step"
    );
    assert!(iters_tight > iters, "rho 1e-9 takes more iterations");
    let per_iteration = (per_step_tight - per_step) / (iters_tight - iters);
    println!("resting box: {per_iteration:.1} allocations per extra iteration (4 contacts)");
    assert!(
        per_iteration <= 16.0,
        "allocations per iteration grew: {per_step} -> {per_step_tight} for {iters} -> {iters_tight} iterations"
    );
}

#[test]
fn pile_allocations_per_step() {
    let (w, x) = pile(20);
    let (per_step, iters) = count(&w, &x, 10);
    println!("20-sphere pile: {per_step:.1} allocations per step, {iters:.2} iterations per step");
    // 20 islands (one sphere on the ground each), each allocating its
    // buffers once per solve, plus the collision queries of its iterations.
    assert!(per_step <= 20.0 * 125.0, "{per_step} allocations per step");
}

/// (allocations per step, iterations per step) of `steps` chained
/// `step_into` steps after 30 settling steps of the same rollout.
fn count_rollout(w: &World<f64>, x0: &State<f64>, steps: usize) -> (usize, f64) {
    let u = w.zero_control();
    let mut x = x0.clone();
    let mut ws = dualsim::contact::Workspace::default();
    let mut out = StepOutput::empty();
    for _ in 0..30 {
        dualsim::sim::step_into(w, &x, &u, &mut ws, &mut out).expect("settling step");
        std::mem::swap(&mut x, &mut out.state);
    }
    let before = allocations();
    let mut iters = 0;
    for _ in 0..steps {
        dualsim::sim::step_into(w, &x, &u, &mut ws, &mut out).expect("steady step");
        iters += out.stats.iterations;
        std::mem::swap(&mut x, &mut out.state);
    }
    let n = allocations() - before;
    (n, iters as f64 / steps as f64)
}

#[test]
fn rollout_steps_allocate_nothing() {
    for (name, (w, x)) in [("resting box", resting_box()), ("20-sphere pile", pile(20))] {
        for warm in [true, false] {
            let mut w = w.clone();
            w.backends.ipm.warm_start_contacts = warm;
            let (n, iters) = count_rollout(&w, &x, 20);
            println!(
                "{name}, contact warm start {warm}: {n} allocations in 20 rollout steps, {iters:.2} iterations per step"
            );
            assert!(iters > 0.0 || warm, "{name}: a cold step iterates");
            assert_eq!(
                n, 0,
                "{name} (warm start {warm}): {n} allocations in 20 steps"
            );
        }
    }
}

/// The rollout steps agree with independent `sim::step`s of the same
/// states (to the solver's tolerance): reusing the buffers changes no
/// result.
#[test]
fn rollout_steps_match_single_steps() {
    let (w, x0) = pile(20);
    let u = w.zero_control();
    let mut x = x0.clone();
    let mut ws = dualsim::contact::Workspace::default();
    let mut out = StepOutput::empty();
    let mut worst: f64 = 0.0;
    for _ in 0..40 {
        let single = step(&w, &x, &u).expect("single step");
        dualsim::sim::step_into(&w, &x, &u, &mut ws, &mut out).expect("rollout step");
        let dv = (&single.state.v - &out.state.v).amax();
        worst = worst.max(dv);
        std::mem::swap(&mut x, &mut out.state);
    }
    println!("largest velocity difference, rollout vs single steps: {worst:e}");
    assert!(worst < 1e-7, "rollout and single steps differ by {worst}");
}
