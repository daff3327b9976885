//! Worlds, states and the time step.
//!
//! ```text
//! M(q) (v⁺ − v) = h (B u − c(q, v)) + J(q⁺)ᵀ λ      (variational form, see dynamics::free)
//! q⁺ = q ⊕ h v⁺
//! λ, v⁺ satisfy the backend's contact law
//! ```
//!
//! [`step`] checks its inputs (finite state and controls) and refuses
//! options the backend does not implement ([`World::check_supported`]),
//! builds a [`StepProblem`] and hands it to
//! the world's contact backend. [`rollout`] chains steps and keeps them
//! when one fails ([`RolloutError`]); [`batch`] runs many independent
//! rollouts in parallel, bitwise identical to serial runs. [`validate`] holds the physical
//! ranges a world is checked against, [`penetration`] measures
//! interpenetration geometrically.
//!
//! ```
//! use dualsim::prelude::*;
//! let mut world = World::<f64>::new(0.01);
//! world.add_body("ball", 1.0, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! let state = State::at_rest(&world.model, &[[0.0, 0.0, 1.0]]);
//! let out = step(&world, &state, &world.zero_control()).unwrap();
//! assert!((out.state.v[2] + 0.0981).abs() < 1e-12);
//! ```

pub mod batch;
mod failure;
pub mod penetration;
#[doc(hidden)]
pub mod validate;

pub use failure::RolloutError;

use crate::Scalar;
use crate::contact::{
    BackendParams, ContactBackend, ContactImpulse, FrictionCone, SolveError, SolveStats,
    SolverKind, SolverParams, StepProblem, with_backend,
};
use crate::dynamics::free::DynamicsError;
use crate::dynamics::{Model, ModelError};
use crate::geometry::{AttachedShape, Combine, Material, Shape, StaticGeometry};
use crate::math::{DVec, Mat3, Vec3};

/// A simulated world: bodies, their geometry, static geometry, gravity,
/// time step and contact backend.
#[derive(Clone, Debug)]
pub struct World<T: Scalar> {
    /// The multibody model.
    pub model: Model<T>,
    /// Collision shape of each body of the model.
    pub shapes: Vec<Option<Shape<T>>>,
    /// Material of each body.
    pub materials: Vec<Material<T>>,
    /// Fixed geometry.
    pub statics: Vec<StaticGeometry<T>>,
    /// Collision shapes of robot links, several per link allowed (see
    /// [`World::add_robot_with_collisions`]); a link's material is
    /// `materials[body]`.
    pub link_shapes: Vec<AttachedShape<T>>,
    /// Gravity (default (0, 0, −9.81)). Change it with
    /// [`World::set_gravity`], which keeps `model.gravity` (used by the
    /// articulated algorithms) equal to it.
    pub gravity: Vec3<T>,
    /// Time step h > 0.
    pub dt: T,
    /// Contact backend.
    pub solver: SolverKind,
    /// Friction cone model.
    pub friction_cone: FrictionCone,
    /// Backend tuning.
    pub params: SolverParams,
    /// Each backend's own tuning (`[solver_params]` beyond the shared
    /// keys); the step uses the field of [`World::solver`].
    pub backends: BackendParams,
    /// Friction combination rule.
    pub friction_combine: Combine,
    /// Restitution combination rule.
    pub restitution_combine: Combine,
    /// Articulated robots (their links are bodies of `model`).
    pub robots: Vec<Robot>,
    /// Continuous collision (time of impact). Implemented by no backend of
    /// this build: [`World::check_supported`] refuses `true`. Default false.
    pub ccd: bool,
}

/// An articulated robot of a world: a range of bodies and coordinates of
/// the world's model.
#[derive(Clone, Debug, PartialEq)]
pub struct Robot {
    /// Name (scene files and `grad` refer to it).
    pub name: String,
    /// Index of its first body (the root link) in the model.
    pub first_body: usize,
    /// Number of bodies (links).
    pub bodies: usize,
    /// First configuration index.
    pub idx_q: usize,
    /// Number of configuration coordinates.
    pub nq: usize,
    /// First velocity index.
    pub idx_v: usize,
    /// Number of velocity coordinates.
    pub nv: usize,
    /// Simulate without the URDF joint limits (enforced by no backend):
    /// [`World::validate`] refuses a robot with finite limits unless this
    /// is set (scene key `ignore_joint_limits`). Default false.
    pub ignore_joint_limits: bool,
    /// The name of the joint above each of its bodies, by body offset
    /// (the URDF joint names; empty for a robot added without them).
    pub joint_names: Vec<String>,
}

impl Robot {
    /// The name of the joint above the robot's `k`-th body: its URDF name,
    /// or "joint of link `LINK`" when unknown.
    pub fn joint_name(&self, k: usize, link: &str) -> String {
        match self.joint_names.get(k) {
            Some(n) => format!("`{n}`"),
            None => format!("of link `{link}`"),
        }
    }
}

impl<T: Scalar> World<T> {
    /// An empty world with time step `dt` and standard gravity.
    pub fn new(dt: f64) -> Self {
        World {
            model: Model::new(),
            shapes: Vec::new(),
            materials: Vec::new(),
            statics: Vec::new(),
            link_shapes: Vec::new(),
            gravity: crate::math::vec3([0.0, 0.0, -9.81]),
            dt: T::from_re(dt),
            solver: SolverKind::default(),
            friction_cone: FrictionCone::default(),
            params: SolverParams::default(),
            backends: BackendParams::default(),
            friction_combine: Combine::Average,
            restitution_combine: Combine::Average,
            robots: Vec::new(),
            ccd: false,
        }
    }

    /// Sets gravity (in the world and in the model).
    pub fn set_gravity(&mut self, g: Vec3<T>) {
        self.gravity = g;
        self.model.gravity = g;
    }

    /// Adds an articulated robot: its links become bodies named
    /// `NAME/LINK`, its root is attached to the world at `base` (for a
    /// fixed base) or gets a free joint (floating base, as imported).
    /// The links get no collision shapes (see
    /// [`World::add_robot_with_collisions`]). Returns the robot's index.
    pub fn add_robot(
        &mut self,
        name: &str,
        robot: &Model<f64>,
        base: &crate::math::Pose<f64>,
    ) -> Result<usize, ModelError> {
        if self.robots.iter().any(|r| r.name == name) || self.model.body_index(name).is_some() {
            return Err(ModelError::DuplicateName(name.into()));
        }
        let mut renamed = robot.clone();
        for b in renamed.bodies.iter_mut() {
            b.name = format!("{name}/{}", b.name);
        }
        let (idx_q, idx_v) = (self.model.nq, self.model.nv);
        let first_body = self
            .model
            .append(&renamed.cast::<T>(), None, &base.cast::<T>())?;
        for _ in 0..robot.bodies.len() {
            self.shapes.push(None);
            self.materials.push(Material::default());
        }
        self.robots.push(Robot {
            name: name.into(),
            first_body,
            bodies: robot.bodies.len(),
            idx_q,
            nq: self.model.nq - idx_q,
            idx_v,
            nv: self.model.nv - idx_v,
            ignore_joint_limits: false,
            joint_names: Vec::new(),
        });
        Ok(self.robots.len() - 1)
    }

    /// Adds an imported robot (see [`World::add_robot`]) with the collision
    /// shapes of its links: each `<collision>` element becomes an
    /// [`AttachedShape`] of its link (a link may have several). A
    /// cylinder becomes a capsule of the same radius and the same overall
    /// length (segment half length `half_length − radius`, at least 0):
    /// the closed-form pairs have no cylinder, and a capsule whose caps
    /// reached past the cylinder's ends would put the end points of
    /// neighbouring links' capsules on the joint between them (duplicate
    /// contacts). Contact of robot links with static geometry and free
    /// bodies is modelled by the `ipm` backend for fixed- and floating-base
    /// robots alike (a floating-base robot is one articulated unit, base
    /// included).
    pub fn add_robot_with_collisions(
        &mut self,
        name: &str,
        robot: &crate::dynamics::urdf::UrdfRobot,
        base: &crate::math::Pose<f64>,
    ) -> Result<usize, ModelError> {
        let r = self.add_robot(name, &robot.model, base)?;
        self.robots[r].joint_names = robot.joints.iter().map(|j| j.name.clone()).collect();
        let first = self.robots[r].first_body;
        for c in &robot.collisions {
            let shape = match c.shape {
                Shape::Cylinder {
                    radius,
                    half_length,
                } => Shape::Capsule {
                    radius,
                    half_length: (half_length - radius).max(0.0),
                },
                ref s => s.clone(),
            };
            self.link_shapes.push(AttachedShape {
                body: first + c.body,
                pose: c.pose.cast(),
                shape: shape.cast(),
            });
        }
        Ok(r)
    }

    /// Index of the robot named `name`.
    pub fn robot_index(&self, name: &str) -> Option<usize> {
        self.robots.iter().position(|r| r.name == name)
    }

    /// Adds a free rigid body (centre of mass at its origin); returns its index.
    pub fn add_body(
        &mut self,
        name: &str,
        mass: T,
        inertia: Mat3<T>,
        shape: Option<Shape<T>>,
        material: Material<T>,
    ) -> Result<usize, ModelError> {
        let i = self.model.add_free_body(name, mass, inertia)?;
        self.shapes.push(shape);
        self.materials.push(material);
        Ok(i)
    }

    /// The step problem of this world at `state` under the control `u`.
    pub fn problem<'a>(&'a self, state: &'a State<T>, u: &'a DVec<T>) -> StepProblem<'a, T> {
        StepProblem {
            model: &self.model,
            shapes: &self.shapes,
            materials: &self.materials,
            statics: &self.statics,
            link_shapes: &self.link_shapes,
            friction_combine: self.friction_combine,
            restitution_combine: self.restitution_combine,
            q: &state.q,
            v: &state.v,
            u,
            gravity: self.gravity,
            h: self.dt,
            friction_cone: self.friction_cone,
            params: &self.params,
            ccd: self.ccd,
        }
    }

    /// A control vector of zeros (no applied force).
    pub fn zero_control(&self) -> DVec<T> {
        DVec::zeros(self.model.nv)
    }

    /// The same world in another scalar type (derivative parts start at zero).
    pub fn cast<U: Scalar>(&self) -> World<U> {
        let c = |x: T| U::from_re(x.re());
        World {
            model: self.model.cast(),
            shapes: self
                .shapes
                .iter()
                .map(|s| s.as_ref().map(|s| s.cast()))
                .collect(),
            materials: self.materials.iter().map(|m| m.cast()).collect(),
            statics: self.statics.iter().map(|s| s.cast()).collect(),
            link_shapes: self.link_shapes.iter().map(|s| s.cast()).collect(),
            gravity: self.gravity.map(c),
            dt: c(self.dt),
            solver: self.solver,
            friction_cone: self.friction_cone,
            params: self.params,
            backends: self.backends.clone(),
            friction_combine: self.friction_combine,
            restitution_combine: self.restitution_combine,
            robots: self.robots.clone(),
            ccd: self.ccd,
        }
    }
}

/// The state `(q, v)`: configuration and the velocity of the last step.
#[derive(Clone, Debug, PartialEq)]
pub struct State<T: Scalar> {
    /// Generalized configuration (nq).
    pub q: DVec<T>,
    /// Generalized velocity (nv).
    pub v: DVec<T>,
}

impl<T: Scalar> State<T> {
    /// Free bodies at the given positions, identity orientation, at rest
    /// (articulated joints at their neutral configuration).
    #[track_caller]
    pub fn at_rest(model: &Model<T>, positions: &[[f64; 3]]) -> Self {
        let free: Vec<_> = model.bodies.iter().filter(|b| b.is_free_root()).collect();
        assert_eq!(positions.len(), free.len(), "one position per free body");
        let mut q = model.neutral();
        for (b, p) in free.into_iter().zip(positions) {
            for d in 0..3 {
                q[b.idx_q + d] = T::from_re(p[d]);
            }
            q[b.idx_q + 3] = T::one();
        }
        State {
            q,
            v: DVec::zeros(model.nv),
        }
    }

    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> State<U> {
        State {
            q: self.q.map(|x| U::from_re(x.re())),
            v: self.v.map(|x| U::from_re(x.re())),
        }
    }

    /// True when every entry (all derivative parts included) is finite.
    pub fn is_finite(&self) -> bool {
        self.q
            .iter()
            .chain(self.v.iter())
            .all(|x| x.is_all_finite())
    }
}

/// Applied generalized forces over a rollout: one vector for all steps, or
/// one per step.
#[derive(Clone, Debug, PartialEq)]
pub enum Controls<T: Scalar> {
    /// The same control at every step.
    Constant(DVec<T>),
    /// One control per step (the last one repeats past the end).
    PerStep(Vec<DVec<T>>),
}

impl<T: Scalar> Controls<T> {
    /// The control of step `k`.
    pub fn at(&self, k: usize) -> &DVec<T> {
        match self {
            Controls::Constant(u) => u,
            Controls::PerStep(us) => &us[k.min(us.len().saturating_sub(1))],
        }
    }
}

/// Statistics of one step.
pub type StepStats = SolveStats;

/// The result of one step.
#[derive(Clone, Debug)]
pub struct StepOutput<T: Scalar> {
    /// The next state.
    pub state: State<T>,
    /// Contact impulses.
    pub contacts: Vec<ContactImpulse<T>>,
    /// Solver statistics.
    pub stats: StepStats,
}

impl<T: Scalar> StepOutput<T> {
    /// An empty output for [`step_into`] to write.
    pub fn empty() -> Self {
        StepOutput {
            state: State {
                q: DVec::zeros(0),
                v: DVec::zeros(0),
            },
            contacts: Vec::new(),
            stats: StepStats::default(),
        }
    }
}

/// A failed step.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The contact solver failed.
    #[error("contact solver: {0}")]
    Solve(#[from] SolveError),
    /// The dynamics failed.
    #[error(transparent)]
    Dynamics(#[from] DynamicsError),
    /// A non-finite number in the input state or controls, or produced by the step.
    #[error("non-finite value in {what}")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
    },
    /// Sizes do not match the model.
    #[error("{what} has length {got}, expected {expected}")]
    Size {
        /// Which quantity.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The model's size.
        expected: usize,
    },
    /// The world uses an option its backend does not implement
    /// ([`World::check_supported`], [`World::check_joint_limits`]).
    #[error("the `{backend}` backend does not implement {feature}")]
    Unsupported {
        /// Backend name.
        backend: &'static str,
        /// The option, with the bodies or robot that use it.
        feature: String,
    },
    /// A value outside its documented range ([`validate`]).
    #[error("{what} = {value:e} is outside the simulable range {range} (see sim::validate)")]
    OutOfRange {
        /// Which quantity, with its body.
        what: String,
        /// The value (NaN when the problem is not one number).
        value: f64,
        /// The range.
        range: String,
    },
}

/// The checks [`step`] makes before solving, for other entry points to a
/// step (the derivatives of `diff`): sizes of `state` and `u` against the
/// model, finite state and control, options the backend implements
/// ([`World::check_supported`]).
pub fn check_inputs<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
) -> Result<(), SimError> {
    let m = &world.model;
    for (what, got, expected) in [
        ("q", state.q.len(), m.nq),
        ("v", state.v.len(), m.nv),
        ("control", u.len(), m.nv),
    ] {
        if got != expected {
            return Err(SimError::Size {
                what,
                got,
                expected,
            });
        }
    }
    if !state.is_finite() {
        return Err(SimError::NonFinite { what: "state" });
    }
    if !u.iter().all(|x| x.is_all_finite()) {
        return Err(SimError::NonFinite { what: "control" });
    }
    world.check_supported()?;
    Ok(())
}

/// Inverse dynamics of one step: the control `u` under which the step
/// from `state` reaches the velocity `v_next` (and so the configuration
/// `q ⊕ h v_next`), by the world's backend
/// ([`ContactBackend::inverse`](crate::contact::ContactBackend::inverse);
/// backends without an inverse refuse with a typed error naming them).
pub fn inverse_step<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    v_next: &DVec<T>,
) -> Result<DVec<T>, SimError> {
    let zero = world.zero_control();
    check_inputs(world, state, &zero)?;
    if v_next.len() != world.model.nv {
        return Err(SimError::Size {
            what: "next velocity",
            got: v_next.len(),
            expected: world.model.nv,
        });
    }
    if !v_next.iter().all(|x| x.is_all_finite()) {
        return Err(SimError::NonFinite {
            what: "next velocity",
        });
    }
    let problem = world.problem(state, &zero);
    let u = with_backend!(world.solver, world.backends, |b| b
        .inverse(&problem, v_next)?);
    if !u.iter().all(|x| x.is_all_finite()) {
        return Err(SimError::NonFinite { what: "control" });
    }
    Ok(u)
}

/// Advances `state` by one step of `world.dt` under the control `u`.
pub fn step<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
) -> Result<StepOutput<T>, SimError> {
    check_inputs(world, state, u)?;
    let problem = world.problem(state, u);
    let sol = with_backend!(world.solver, world.backends, |b| b.solve(&problem)?);
    finish(sol)
}

/// [`step`] as one step of a rollout: `workspace` carries what the
/// backend keeps from the previous step (`ipm`: its contact solution, the
/// start of this step's interior point unless `warm_start_contacts` is
/// off; see
/// [`ContactBackend::Workspace`](crate::contact::ContactBackend::Workspace)).
/// Start a rollout with `Workspace::default()`. The result agrees with
/// [`step`] to the solver's tolerance (both converge to the same root;
/// only the starting point differs).
pub fn step_with<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    workspace: &mut crate::contact::Workspace<T>,
) -> Result<StepOutput<T>, SimError> {
    check_inputs(world, state, u)?;
    let problem = world.problem(state, u);
    let sol =
        crate::contact::with_backend_workspace!(world.solver, world.backends, workspace, |b, w| b
            .solve_with(&problem, w)?);
    finish(sol)
}

/// [`step_with`] into `out`, reusing its storage: with the workspace and
/// the output of the previous step, a steady-state `f64` step allocates
/// nothing (the `ipm` backend on free bodies with closed-form pairs; see
/// `tests/all/sim/alloc_step.rs`). On an error `out` holds no valid state.
///
/// ```
/// use dualsim::prelude::*;
/// use dualsim::math::Vec3;
/// let mut w = World::<f64>::new(0.01);
/// w.add_body("ball", 1.0, Mat3::identity() * 0.004,
///     Some(Shape::Sphere { radius: 0.1 }), Material::default()).unwrap();
/// let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 1.0]]);
/// let u = w.zero_control();
/// let mut ws = dualsim::contact::Workspace::default();
/// let mut out = StepOutput::empty();
/// for _ in 0..10 {
///     dualsim::sim::step_into(&w, &x, &u, &mut ws, &mut out).unwrap();
///     std::mem::swap(&mut x, &mut out.state);
/// }
/// assert!((x.v[2] + 0.981).abs() < 1e-9); // free fall: v = −g t, t = 0.1 s
/// ```
pub fn step_into<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    u: &DVec<T>,
    workspace: &mut crate::contact::Workspace<T>,
    out: &mut StepOutput<T>,
) -> Result<(), SimError> {
    check_inputs(world, state, u)?;
    let problem = world.problem(state, u);
    // The output's buffers lent to the backend's solution and back.
    let mut sol = crate::contact::StepSolution {
        q_next: std::mem::replace(&mut out.state.q, DVec::zeros(0)),
        v_next: std::mem::replace(&mut out.state.v, DVec::zeros(0)),
        contacts: std::mem::take(&mut out.contacts),
        stats: out.stats,
    };
    crate::contact::with_backend_workspace!(world.solver, world.backends, workspace, |b, w| b
        .solve_into(&problem, w, &mut sol)?);
    out.state.q = sol.q_next;
    out.state.v = sol.v_next;
    out.contacts = sol.contacts;
    out.stats = sol.stats;
    if !out.state.is_finite() {
        return Err(SimError::NonFinite { what: "next state" });
    }
    Ok(())
}

fn finish<T: Scalar>(sol: crate::contact::StepSolution<T>) -> Result<StepOutput<T>, SimError> {
    let next = State {
        q: sol.q_next,
        v: sol.v_next,
    };
    if !next.is_finite() {
        return Err(SimError::NonFinite { what: "next state" });
    }
    Ok(StepOutput {
        state: next,
        contacts: sol.contacts,
        stats: sol.stats,
    })
}

/// A simulated trajectory.
#[derive(Clone, Debug)]
pub struct Trajectory<T: Scalar> {
    /// States `x₀, …, x_N` (N + 1 entries).
    pub states: Vec<State<T>>,
    /// Statistics of each step (N entries).
    pub stats: Vec<StepStats>,
}

impl<T: Scalar> Trajectory<T> {
    /// The last state.
    pub fn last(&self) -> &State<T> {
        self.states
            .last()
            .expect("a trajectory holds at least the initial state")
    }
}

/// Runs `steps` steps from `state`, calling `progress(k)` after step k.
/// A failing step stops the rollout; the error keeps the trajectory of
/// the steps completed before it ([`RolloutError`]).
pub fn rollout_with<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    controls: &Controls<T>,
    steps: usize,
    mut progress: impl FnMut(usize),
) -> Result<Trajectory<T>, RolloutError<T>> {
    rollout_inspect(world, state, controls, steps, |k, _| progress(k))
}

/// Runs `steps` steps from `state` as [`rollout_with`], calling
/// `inspect(k, &output)` after step k with its whole [`StepOutput`] (its
/// contacts, for instance, which the trajectory does not keep).
pub fn rollout_inspect<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    controls: &Controls<T>,
    steps: usize,
    mut inspect: impl FnMut(usize, &StepOutput<T>),
) -> Result<Trajectory<T>, RolloutError<T>> {
    let mut states = Vec::with_capacity(steps + 1);
    let mut stats = Vec::with_capacity(steps);
    states.push(state.clone());
    let mut workspace = crate::contact::Workspace::default();
    for k in 0..steps {
        match step_with(
            world,
            states.last().unwrap(),
            controls.at(k),
            &mut workspace,
        ) {
            Ok(out) => {
                inspect(k, &out);
                states.push(out.state);
                stats.push(out.stats);
            }
            Err(error) => {
                return Err(RolloutError {
                    step: k,
                    error,
                    completed: Trajectory { states, stats },
                });
            }
        }
    }
    Ok(Trajectory { states, stats })
}

/// Runs `steps` steps from `state` (see [`rollout_with`]).
pub fn rollout<T: Scalar>(
    world: &World<T>,
    state: &State<T>,
    controls: &Controls<T>,
    steps: usize,
) -> Result<Trajectory<T>, RolloutError<T>> {
    rollout_with(world, state, controls, steps, |_| {})
}
