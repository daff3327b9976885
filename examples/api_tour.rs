//! The API in thirty lines: the README's "API" section is this file's
//! `main` (tests/all/cli/docs.rs checks that they are the same text).
//!
//! ```text
//! cargo run --release --features examples --example api_tour
//! ```

// README begin
use dualsim::diff::{DiffOptions, Input, Method, Param, rollout_jacobian, seeded};
use dualsim::prelude::*;
use num_dual::HyperDual64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A scene file (or a World built in code: World::new, add_body, statics).
    let scene = dualsim::scene::load("examples/scenes/box_toss.toml".as_ref())?;
    let (world, x0, u, n) = (&scene.world, &scene.initial, &scene.controls, scene.steps);

    // Simulate: the box's q is [x, y, z, qw, qx, qy, qz].
    let last = rollout(world, x0, u, n)?.last().clone();
    println!("after {n} steps the box rests at z = {:.4}", last.q[2]);

    // d(final state)/d(initial vx, friction), through every contact of the
    // run: by the implicit function theorem, and by dual numbers (the same).
    let wrt = [Input::Velocity(0), Input::Model(Param::Friction(0))];
    let o = DiffOptions::default();
    let ift = rollout_jacobian(world, x0, u, n, &wrt, Method::Ift, &o)?.jacobian;
    let dual = rollout_jacobian(world, x0, u, n, &wrt, Method::Unrolled, &o)?.jacobian;
    let (dx_dvx, dx_dmu, err) = (ift[(0, 0)], ift[(0, 1)], (&ift - &dual).amax());
    println!("dx/dvx = {dx_dvx:.6}, dx/dmu = {dx_dmu:.6} (methods {err:.0e} apart)");

    // Second derivatives: the same simulation in hyper-dual numbers.
    let e1 = HyperDual64::new(0.0, 1.0, 0.0, 0.0); // direction 1: vx
    let e2 = HyperDual64::new(0.0, 0.0, 1.0, 0.0); // direction 2: friction
    let params = [Param::V(0), Param::Friction(0)];
    let (w2, x2, u2) = seeded(world, x0, u.at(0), &params, &[e1, e2])?;
    let x = rollout(&w2, &x2, &Controls::Constant(u2), n)?.last().q[0];
    println!("d2x/(dvx dmu) = {:.6}", x.eps1eps2);
    Ok(())
}
// README end
