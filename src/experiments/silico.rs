//! The experiments of Silico §VI-B (Le Cleac'h et al. 2023), shared by
//! `examples/silico_robustness.rs` and `benches/silico.rs`.
//!
//! * **Polytope drop** ([`drop_world`], [`drop_initial`], [`run_drop`]):
//!   a 10-face convex polytope (a 0.6 × 0.5 × 0.4 m box with its four
//!   vertical edges chamfered), 1 kg, dropped onto the ground plane
//!   (μ = 0.5) from a seeded random pose and velocity, simulated 1.5 s. A
//!   run *fails* when a step does not converge within the iteration cap
//!   (30, Silico). Penetration is measured geometrically: the depth of
//!   the lowest polytope vertex below the plane.
//! * **Planar drop** ([`Drop::Planar`]): Silico's own experiment, which
//!   is two-dimensional. The 5-sided polygon of Silico.jl's
//!   `examples/benchmark/polytope_drop.jl` (`A x ≤ 0.4`, rows
//!   (1, 0.2), (0, 1), (−1, −0.3), (0, −1), (0.8, −0.8)) in the x–z
//!   plane, extruded ±0.2 m along y; 1 kg, inertia 0.2 kg m² (the 2-D
//!   value, on every axis); μ = 0.2; initial height in [√2/2, 1.5] m, angle
//!   in [0, 2π) about y, velocity `(v_x, v_z)` in [−1, 1] × [−2, 0] m/s,
//!   angular velocity in [−1, 1] rad/s about y. The motion stays in the
//!   x–z plane (the witness point of a contact along the extrusion is the
//!   middle of the segment or face, by symmetry).
//! * **Stacking** ([`stack_world`], [`momentum_error`]): two boxes stacked
//!   in a stable tower (10 ways: sizes, offsets, yaw), simulated 1 s from
//!   rest. Every body should stay at rest, so the momentum error of a
//!   run is the mean over steps and bodies of
//!   `‖m ṗ‖ + ‖I_world ω‖` (linear plus angular momentum, SI units).
//!   [`Stack::Planar`] is Silico's own (two-dimensional) stack, as the
//!   planar drop is.

use crate::contact::{SolverKind, StepProblem};
use crate::geometry::{Material, Shape, StaticGeometry};
use crate::math::{DVec, Mat3, Pose, Quat, Vec3, so3};
use crate::sim::{Controls, State, World, rollout};

/// Deterministic generator (splitmix64) for seeded initial conditions.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[a, b)`.
    pub fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.uniform()
    }
}

/// The dropped polytope: half extents (0.3, 0.25, 0.2) with the vertical
/// edges chamfered (10 faces).
pub fn drop_polytope() -> Shape<f64> {
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let mut normals = vec![
        Vec3::x(),
        -Vec3::x(),
        Vec3::y(),
        -Vec3::y(),
        Vec3::z(),
        -Vec3::z(),
    ];
    let mut offsets = vec![0.3, 0.3, 0.25, 0.25, 0.2, 0.2];
    for (sx, sy) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
        normals.push(Vec3::new(sx * s, sy * s, 0.0));
        offsets.push(0.45 * s);
    }
    Shape::Polytope {
        normals,
        offsets,
        hull: None,
    }
}

/// Which drop experiment (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// The chamfered box, dropped in 3-D with μ = 0.5.
    Chamfered,
    /// Silico's planar polygon drop (extruded along y), μ = 0.2.
    Planar,
}

impl Drop {
    /// Name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Drop::Chamfered => "chamfered",
            Drop::Planar => "planar",
        }
    }

    /// The dropped shape.
    pub fn shape(self) -> Shape<f64> {
        match self {
            Drop::Chamfered => drop_polytope(),
            Drop::Planar => planar_polytope(),
        }
    }

    /// The drop world: time step `h`, relaxation `rho`, iteration cap
    /// `max_iterations`, backend `solver`.
    pub fn world(self, solver: SolverKind, h: f64, rho: f64, max_iterations: usize) -> World<f64> {
        let (inertia, mu) = match self {
            Drop::Chamfered => (box_inertia(1.0, Vec3::new(0.3, 0.25, 0.2)), 0.5),
            Drop::Planar => (Mat3::identity() * 0.2, 0.2),
        };
        let mut w = empty_world(solver, h, rho, max_iterations);
        let mat = Material {
            friction: mu,
            restitution: 0.0,
        };
        w.add_body("polytope", 1.0, inertia, Some(self.shape()), mat)
            .expect("valid body");
        w.statics.push(StaticGeometry {
            material: mat,
            ..ground()
        });
        w
    }

    /// Seeded initial condition (module docs).
    pub fn initial(self, world: &World<f64>, seed: u64) -> State<f64> {
        match self {
            Drop::Chamfered => drop_initial(world, seed),
            Drop::Planar => {
                let mut rng = Rng::new(seed);
                let z = rng.range(std::f64::consts::FRAC_1_SQRT_2, 1.5);
                let theta = rng.range(0.0, std::f64::consts::TAU);
                let (vx, vz, w) = (
                    rng.range(-1.0, 1.0),
                    rng.range(-2.0, 0.0),
                    rng.range(-1.0, 1.0),
                );
                let mut x = State::at_rest(&world.model, &[[0.0, 0.0, z]]);
                let q = so3::exp(&Vec3::new(0.0, theta, 0.0));
                x.q[3] = q.w;
                x.q[4] = q.i;
                x.q[5] = q.j;
                x.q[6] = q.k;
                x.v[0] = vx;
                x.v[2] = vz;
                x.v[4] = w;
                x
            }
        }
    }
}

/// Silico's planar drop polygon extruded ±0.2 m along y (module docs).
pub fn planar_polytope() -> Shape<f64> {
    let rows = [
        (1.0, 0.2),
        (0.0, 1.0),
        (-1.0, -0.3),
        (0.0, -1.0),
        (0.8, -0.8),
    ];
    let mut normals = Vec::new();
    let mut offsets = Vec::new();
    for (ax, az) in rows {
        let n: f64 = f64::hypot(ax, az);
        normals.push(Vec3::new(ax / n, 0.0, az / n));
        offsets.push(0.4 / n);
    }
    normals.push(Vec3::y());
    normals.push(-Vec3::y());
    offsets.push(0.2);
    offsets.push(0.2);
    Shape::Polytope {
        normals,
        offsets,
        hull: None,
    }
}

/// Vertices of a polytope `{x : nₖ·x ≤ bₖ}` (triple intersections of face
/// planes that satisfy every constraint).
pub fn polytope_vertices(normals: &[Vec3<f64>], offsets: &[f64]) -> Vec<Vec3<f64>> {
    let k = normals.len();
    let mut out: Vec<Vec3<f64>> = Vec::new();
    for i in 0..k {
        for j in i + 1..k {
            for l in j + 1..k {
                let m = Mat3::from_rows(&[
                    normals[i].transpose(),
                    normals[j].transpose(),
                    normals[l].transpose(),
                ]);
                if m.determinant().abs() < 1e-12 {
                    continue;
                }
                let Some(mi) = m.try_inverse() else { continue };
                let x = mi * Vec3::new(offsets[i], offsets[j], offsets[l]);
                let inside = normals
                    .iter()
                    .zip(offsets)
                    .all(|(n, b)| n.dot(&x) <= b + 1e-9);
                if inside && !out.iter().any(|y| (y - x).norm() < 1e-9) {
                    out.push(x);
                }
            }
        }
    }
    out
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

/// A world without bodies: backend `solver`, time step `h`, relaxation
/// `rho`, iteration cap `max_iterations`.
fn empty_world(solver: SolverKind, h: f64, rho: f64, max_iterations: usize) -> World<f64> {
    let mut w = World::<f64>::new(h);
    w.solver = solver;
    w.params.rho = rho;
    w.params.max_iterations = max_iterations;
    w
}

fn box_inertia(m: f64, h: Vec3<f64>) -> Mat3<f64> {
    Mat3::from_diagonal(&Vec3::new(
        h.y * h.y + h.z * h.z,
        h.x * h.x + h.z * h.z,
        h.x * h.x + h.y * h.y,
    )) * (m / 3.0)
}

/// The chamfered-box drop world ([`Drop::Chamfered`]).
pub fn drop_world(solver: SolverKind, h: f64, rho: f64, max_iterations: usize) -> World<f64> {
    Drop::Chamfered.world(solver, h, rho, max_iterations)
}

/// Seeded initial condition of the drop: position `(±0.1, ±0.1, 0.5…1)`,
/// uniformly random orientation, linear velocity in `[−1, 1]³` m/s,
/// angular velocity in `[−2, 2]³` rad/s.
pub fn drop_initial(world: &World<f64>, seed: u64) -> State<f64> {
    let mut rng = Rng::new(seed);
    let mut x = State::at_rest(
        &world.model,
        &[[
            rng.range(-0.1, 0.1),
            rng.range(-0.1, 0.1),
            rng.range(0.5, 1.0),
        ]],
    );
    // Uniform random unit quaternion (Shoemake).
    let (u1, u2, u3) = (rng.uniform(), rng.uniform(), rng.uniform());
    let tau = std::f64::consts::TAU;
    let q = [
        (1.0 - u1).sqrt() * (tau * u2).sin(),
        (1.0 - u1).sqrt() * (tau * u2).cos(),
        u1.sqrt() * (tau * u3).sin(),
        u1.sqrt() * (tau * u3).cos(),
    ];
    for k in 0..4 {
        x.q[3 + k] = q[k];
    }
    for k in 0..3 {
        x.v[k] = rng.range(-1.0, 1.0);
        x.v[3 + k] = rng.range(-2.0, 2.0);
    }
    x
}

/// Result of one drop run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DropRun {
    /// A step failed (iteration cap or another solver error).
    pub failed: bool,
    /// Steps completed.
    pub steps: usize,
    /// Sum of the solver iterations of the completed steps.
    pub iterations: usize,
    /// Largest penetration of a vertex below the ground over the run (m).
    pub max_penetration: f64,
    /// Mean over completed steps of the step's penetration (m).
    pub mean_penetration: f64,
    /// Completed steps that took more iterations than the cap: steps whose
    /// attempts failed and that `single_level`'s continuation in ρ
    /// ([`crate::contact::mehrotra::Params::continuation_iterations`]) or
    /// in friction
    /// ([`crate::contact::mehrotra::Params::friction_continuation_iterations`])
    /// solved.
    pub continued: usize,
    /// Sum of the iterations of the [`DropRun::continued`] steps (their
    /// failed attempts and the continuations together).
    pub continued_iterations: usize,
}

/// Penetration depth of the lowest vertex below `z = 0` (≥ 0).
pub fn penetration(vertices: &[Vec3<f64>], q: &DVec<f64>) -> f64 {
    let rot = Quat::new(q[3], q[4], q[5], q[6]);
    let t = Vec3::new(q[0], q[1], q[2]);
    let low = vertices
        .iter()
        .map(|v| (so3::rotate(&rot, v) + t).z)
        .fold(f64::INFINITY, f64::min);
    (-low).max(0.0)
}

/// Runs drop `kind` in `world` for `duration` seconds from seed `seed`.
pub fn run_drop(kind: Drop, world: &World<f64>, seed: u64, duration: f64) -> DropRun {
    let Shape::Polytope {
        normals, offsets, ..
    } = kind.shape()
    else {
        unreachable!("drop shapes are polytopes")
    };
    let verts = polytope_vertices(&normals, &offsets);
    let steps = (duration / world.dt).round() as usize;
    let mut x = kind.initial(world, seed);
    let u = world.zero_control();
    let mut out = DropRun::default();
    let mut pen_sum = 0.0;
    for _ in 0..steps {
        match crate::sim::step(world, &x, &u) {
            Ok(o) => {
                x = o.state;
                out.steps += 1;
                out.iterations += o.stats.iterations;
                if o.stats.iterations > world.params.max_iterations {
                    out.continued += 1;
                    out.continued_iterations += o.stats.iterations;
                }
                let p = penetration(&verts, &x.q);
                pen_sum += p;
                out.max_penetration = out.max_penetration.max(p);
            }
            Err(_) => {
                out.failed = true;
                break;
            }
        }
    }
    out.mean_penetration = pen_sum / out.steps.max(1) as f64;
    out
}

/// The ten stable two-box towers: `(bottom half extents, top half
/// extents, top xy offset, top yaw)`.
pub fn stack_ways() -> Vec<(Vec3<f64>, Vec3<f64>, [f64; 2], f64)> {
    (0..10)
        .map(|k| {
            let t = k as f64;
            let bottom = Vec3::new(0.25 + 0.02 * t, 0.25 - 0.01 * t, 0.1 + 0.01 * t);
            let top = Vec3::new(0.15 + 0.01 * t, 0.12 + 0.005 * t, 0.08 + 0.005 * (9.0 - t));
            let off = [0.04 * (t / 9.0 - 0.5), 0.03 * ((t * 1.7).sin())];
            let yaw = 0.15 * t;
            (bottom, top, off, yaw)
        })
        .collect()
}

/// Which stacking experiment (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// Ten 3-D towers of two boxes ([`stack_ways`]).
    Towers,
    /// Silico's planar stack: two 0.5 m cubes, the bottom one shifted by
    /// 0.02 k m (k = 1 … 10) under the top one, μ = 0.5.
    Planar,
}

impl Stack {
    /// Name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Towers => "towers",
            Stack::Planar => "planar",
        }
    }

    /// The tower `way` (0..10) at rest: world and initial state.
    pub fn world(
        self,
        way: usize,
        solver: SolverKind,
        h: f64,
        rho: f64,
        max_iterations: usize,
    ) -> (World<f64>, State<f64>) {
        match self {
            Stack::Towers => stack_world(way, solver, h, rho, max_iterations),
            Stack::Planar => {
                let half = Vec3::new(0.25, 0.25, 0.25);
                let mut w = empty_world(solver, h, rho, max_iterations);
                let mat = Material {
                    friction: 0.5,
                    restitution: 0.0,
                };
                let inertia = Mat3::identity() * 0.2;
                w.add_body(
                    "bottom",
                    1.0,
                    inertia,
                    Some(Shape::Box { half_extents: half }),
                    mat,
                )
                .expect("valid body");
                w.add_body(
                    "top",
                    1.0,
                    inertia,
                    Some(Shape::Box { half_extents: half }),
                    mat,
                )
                .expect("valid body");
                w.statics.push(ground());
                let x = State::at_rest(
                    &w.model,
                    &[[0.02 * (way + 1) as f64, 0.0, 0.25], [0.0, 0.0, 0.75]],
                );
                (w, x)
            }
        }
    }
}

/// The tower `way` (0..10) at rest: world and initial state.
pub fn stack_world(
    way: usize,
    solver: SolverKind,
    h: f64,
    rho: f64,
    max_iterations: usize,
) -> (World<f64>, State<f64>) {
    let (hb, ht, off, yaw) = stack_ways()[way];
    let mut w = empty_world(solver, h, rho, max_iterations);
    let mat = Material {
        friction: 0.5,
        restitution: 0.0,
    };
    w.add_body(
        "bottom",
        1.0,
        box_inertia(1.0, hb),
        Some(Shape::Box { half_extents: hb }),
        mat,
    )
    .expect("valid body");
    w.add_body(
        "top",
        0.5,
        box_inertia(0.5, ht),
        Some(Shape::Box { half_extents: ht }),
        mat,
    )
    .expect("valid body");
    w.statics.push(ground());
    let mut x = State::at_rest(
        &w.model,
        &[[0.0, 0.0, hb.z], [off[0], off[1], 2.0 * hb.z + ht.z]],
    );
    let q = so3::exp(&Vec3::new(0.0, 0.0, yaw));
    let k = w.model.bodies[1].idx_q;
    x.q[k + 3] = q.w;
    x.q[k + 4] = q.i;
    x.q[k + 5] = q.j;
    x.q[k + 6] = q.k;
    (w, x)
}

/// Result of one stacking run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StackRun {
    /// Mean over steps and bodies of `‖m ṗ‖ + ‖I_world ω‖` (kg m/s).
    pub error: f64,
    /// Steps that reached the iteration cap and went on with their last
    /// iterate (only with `SolverParams::accept_at_cap`).
    pub capped_steps: usize,
}

/// Mean over steps and bodies of `‖m ṗ‖ + ‖I_world ω‖` along a run of
/// `duration` seconds (module docs); `None` when a step fails.
pub fn momentum_error(world: &World<f64>, x0: &State<f64>, duration: f64) -> Option<StackRun> {
    let steps = (duration / world.dt).round() as usize;
    let traj = rollout(world, x0, &Controls::Constant(world.zero_control()), steps).ok()?;
    let capped_steps = traj.stats.iter().filter(|s| s.capped).count();
    let mut sum = 0.0;
    let mut count = 0;
    for x in &traj.states[1..] {
        for (i, b) in world.model.bodies.iter().enumerate() {
            let k = b.idx_v;
            let lin = Vec3::new(x.v[k], x.v[k + 1], x.v[k + 2]) * b.inertia.mass;
            let u = world.zero_control();
            let p: StepProblem<'_, f64> = world.problem(x, &u);
            let iw = crate::dynamics::free::world_inertia(p.model, i, p.q);
            let ang = iw * Vec3::new(x.v[k + 3], x.v[k + 4], x.v[k + 5]);
            sum += lin.norm() + ang.norm();
            count += 1;
        }
    }
    Some(StackRun {
        error: sum / count.max(1) as f64,
        capped_steps,
    })
}

/// The tower `x0` settled into `world`'s own rest configuration: `steps`
/// quasi-static steps (each from zero velocity, the velocity then
/// discarded). Bodies placed exactly touching are not at rest under a
/// relaxed contact model (the relaxed gap at rest is `φ ≈ ρ/γ`), and
/// every backend relaxes a little differently; settling lets each backend
/// start from its own rest state. `None` when a step fails.
pub fn settle(world: &World<f64>, x0: &State<f64>, steps: usize) -> Option<State<f64>> {
    let u = world.zero_control();
    let mut x = x0.clone();
    for _ in 0..steps {
        x.v.fill(0.0);
        x = crate::sim::step(world, &x, &u).ok()?.state;
    }
    x.v.fill(0.0);
    Some(x)
}
