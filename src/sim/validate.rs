//! What a world must satisfy before it is simulated: options its backend
//! implements, and values inside the ranges where the step is known to
//! work.
//!
//! Two checks, both returning a typed [`SimError`]:
//!
//! * [`World::check_supported`] refuses an option that the world's
//!   backend does not implement, instead of silently simulating without
//!   it: a combined restitution `e > 0` on any pair of shapes that can
//!   touch (contacts are inelastic in every backend of this build),
//!   continuous collision ([`World::ccd`]), and articulated robots in the
//!   backends that step free bodies only ([`implements`]). It is cheap (O(bodies) unless
//!   some material has `e > 0`) and [`step`](super::step) calls it, so an
//!   API user cannot get the inelastic answer to an elastic question
//!   either.
//! * [`World::validate`] adds URDF joint limits (enforced by no backend:
//!   a robot with finite limits is refused unless
//!   [`Robot::ignore_joint_limits`](super::Robot::ignore_joint_limits))
//!   and the physical ranges below, for the world and an initial state.
//!   The scene loader calls it (after its own located checks of the same
//!   ranges); API users call it once before simulating.
//!
//! # Ranges
//!
//! Values outside these ranges are not physical for the engine's units
//! (SI) and make the step fail inside the solver (mass 1e300, dt 1e10,
//! gravity 1e300 overflow the reduced system) or lose all precision. The
//! bounds are generous: the edges are simulated in `tests/all/sim/validation.rs`.
//!
//! | quantity | range |
//! |---|---|
//! | mass | [`MASS`] = [1e-6, 1e6] kg |
//! | principal moments of inertia | [`MOMENT`] = [1e-12, 1e12] kg·m², positive definite, triangle inequality `I₁ + I₂ ≥ I₃` (within [`TRIANGLE_TOLERANCE`], relative) |
//! | time step `dt` | [`DT`] = [1e-6, 0.1] s |
//! | gravity | `‖g‖ ≤` [`GRAVITY_MAX`] = 1e3 m/s² |
//! | shape sizes (radius, half extents, half length, height, radii, polytope offsets as distances) | [`SIZE`] = [1e-4, 1e4] m (offsets: `|b| ≤ 1e4`) |
//! | cone half angle | (0, π/2) rad |
//! | positions (bodies, static geometry, robot bases) | `|x| ≤` [`POSITION_MAX`] = 1e6 m |
//! | linear velocity of a body | `‖v‖ ≤` [`SPEED_MAX`] = 1e3 m/s |
//! | angular velocity of a body | `‖ω‖ ≤` [`ANGULAR_SPEED_MAX`] = 1e3 rad/s and `‖ω‖ dt < 2` (the free-body retraction) |
//! | robot joint velocities | `|v_i| ≤` [`SPEED_MAX`] |
//! | friction | [0, [`FRICTION_MAX`]] = [0, 10] |
//! | restitution | [0, 1] (and refused when > 0, see above) |
//! | relaxation gap of a resting free body, `ρ / (m ‖g‖ dt)` | `≤` [`RELAXATION_GAP_FRACTION`] = 1 % of the body's bounding radius ([`relaxation_gap`]) |
//!
//! The last row is about accuracy rather than failure: the interior-point
//! backends solve the complementarity relaxed to `λ s = ρ`, so a body
//! resting under gravity (impulse `λ = m ‖g‖ dt` per step) floats at the
//! gap `s = ρ / (m ‖g‖ dt)` (`ipm`; `single_level` and `bilevel` about ten
//! times less). With the default `ρ = 1e-6` a 1 kg body floats 10 µm
//! above the ground, but a 1 mg body 10 m: the answer would be silently
//! wrong, so the combination is refused (lower `ρ`, or raise the mass).
//!
//! ```
//! use dualsim::prelude::*;
//! let mut world = World::<f64>::new(0.01);
//! world.add_body("ball", 1e300, Mat3::identity() * 0.1, None, Material::default()).unwrap();
//! let x0 = State::at_rest(&world.model, &[[0.0, 0.0, 1.0]]);
//! let err = world.validate(&x0).unwrap_err();
//! assert_eq!(err.kind(), "out_of_range");
//! assert!(err.to_string().contains("body `ball`: mass"));
//! ```

use super::{SimError, State, World};
use crate::Scalar;
use crate::contact::{FrictionCone, SolverKind};
use crate::dynamics::Joint;
use crate::geometry::{Combine, Material, Shape};
use crate::math::Mat3;

/// Range of a body's mass (kg).
pub const MASS: (f64, f64) = (1e-6, 1e6);
/// Range of a body's principal moments of inertia (kg·m²).
pub const MOMENT: (f64, f64) = (1e-12, 1e12);
/// Relative tolerance of the triangle inequality `I₁ + I₂ ≥ I₃ (1 − tol)`
/// of the principal moments (a thin disc or rod is exactly on the edge).
pub const TRIANGLE_TOLERANCE: f64 = 1e-6;
/// Range of the time step (s).
pub const DT: (f64, f64) = (1e-6, 0.1);
/// Largest norm of gravity (m/s²).
pub const GRAVITY_MAX: f64 = 1e3;
/// Range of a shape's sizes (m).
pub const SIZE: (f64, f64) = (1e-4, 1e4);
/// Largest absolute coordinate of a position (m).
pub const POSITION_MAX: f64 = 1e6;
/// Largest linear speed of a body, and largest joint velocity of a robot (m/s, rad/s).
pub const SPEED_MAX: f64 = 1e3;
/// Largest angular speed of a body (rad/s); also `‖ω‖ dt < 2`.
pub const ANGULAR_SPEED_MAX: f64 = 1e3;
/// Relative floor of a robot joint's diagonal entry in the joint-space
/// mass matrix ([`World::check_joint_inertia`]).
pub const JOINT_INERTIA_FLOOR: f64 = 1e-12;
/// Largest friction coefficient.
pub const FRICTION_MAX: f64 = 10.0;
/// Largest relaxation gap of a resting free body, as a fraction of its
/// bounding radius ([`relaxation_gap`]).
pub const RELAXATION_GAP_FRACTION: f64 = 0.01;

/// The gap `ρ / (m ‖g‖ dt)` at which the interior-point backends hold a
/// free body of mass `m` resting under gravity (`λ s = ρ` with the
/// impulse `λ = m ‖g‖ dt`); `None` without gravity.
pub fn relaxation_gap(rho: f64, mass: f64, gravity: f64, dt: f64) -> Option<f64> {
    (gravity > 0.0 && mass > 0.0 && dt > 0.0).then(|| rho / (mass * gravity * dt))
}

/// `Err(message)` when a free body of this mass and bounding radius would
/// float visibly above its support at rest ([`RELAXATION_GAP_FRACTION`]).
pub fn check_relaxation_gap(
    kind: SolverKind,
    rho: f64,
    mass: f64,
    radius: f64,
    gravity: f64,
    dt: f64,
) -> Result<(), String> {
    let interior_point = kind.relaxed();
    let Some(s) = relaxation_gap(rho, mass, gravity, dt).filter(|_| interior_point) else {
        return Ok(());
    };
    if s <= RELAXATION_GAP_FRACTION * radius {
        return Ok(());
    }
    let rho_max = RELAXATION_GAP_FRACTION * radius * mass * gravity * dt;
    Err(format!(
        "with rho = {rho:e} the `{}` backend's relaxed contact holds a resting body of mass {mass:e} kg \
         at a gap rho / (m |g| dt) = {s:.3e} m, more than {}% of its size ({radius:e} m): \
         lower `[solver_params] rho` to at most {rho_max:.1e} or raise the mass (see docs/validation.md)",
        kind.name(),
        RELAXATION_GAP_FRACTION * 100.0
    ))
}

pub use crate::contact::Feature;

/// Whether the backend `kind` implements `feature` (its
/// [`ContactBackend::supports`](crate::contact::ContactBackend::supports)).
pub fn implements(kind: SolverKind, feature: Feature) -> bool {
    kind.supports(feature)
}

/// Whether the backend `kind` solves the friction cone `cone` (the
/// refusals of the backends' steps, known before any step:
/// [`World::check_friction_cone`]).
pub fn cone_supported(kind: SolverKind, cone: FrictionCone) -> bool {
    match cone {
        FrictionCone::Exact => kind.name() != "lcp",
        FrictionCone::Pyramid => !matches!(kind.name(), "implicit_ncp" | "convex" | "soft"),
    }
}

/// `"[lo, hi]"` for messages.
pub fn range_text(r: (f64, f64)) -> String {
    let f = |x: f64| {
        if x == 0.0 {
            "0".to_string()
        } else {
            format!("{x:e}")
        }
    };
    format!("[{}, {}]", f(r.0), f(r.1))
}

/// Euclidean norm without overflow or underflow of the squares
/// (`‖(1e300, 1e300, 0)‖ = 1.41e300`, not infinity).
pub fn scaled_norm(x: &[f64]) -> f64 {
    let m = x.iter().fold(0.0_f64, |a, v| a.max(v.abs()));
    if !(m > 0.0) || !m.is_finite() {
        return m;
    }
    m * x.iter().map(|v| (v / m).powi(2)).sum::<f64>().sqrt()
}

fn out_of_range(what: String, value: f64, range: String) -> SimError {
    SimError::OutOfRange { what, value, range }
}

fn check_in(what: impl FnOnce() -> String, x: f64, r: (f64, f64)) -> Result<(), SimError> {
    if x.is_finite() && x >= r.0 && x <= r.1 {
        Ok(())
    } else {
        Err(out_of_range(what(), x, range_text(r)))
    }
}

fn check_abs(what: impl FnOnce() -> String, x: f64, max: f64) -> Result<(), SimError> {
    if x.is_finite() && x.abs() <= max {
        Ok(())
    } else {
        Err(out_of_range(what(), x, format!("|x| <= {max:e}")))
    }
}

/// Checks an inertia matrix (primal values): symmetric positive definite,
/// principal moments in [`MOMENT`] and satisfying the triangle
/// inequality. `Err` holds the message (without the body's name).
pub fn check_inertia(m: &Mat3<f64>) -> Result<(), String> {
    if !m.iter().all(|x| x.is_finite()) {
        return Err("inertia must be finite".into());
    }
    if (m - m.transpose()).abs().max() > 1e-12 * (1.0 + m.abs().max()) {
        return Err("inertia must be symmetric".into());
    }
    let mut e: Vec<f64> = m.symmetric_eigenvalues().iter().copied().collect();
    e.sort_by(f64::total_cmp);
    if e[0] <= 0.0 {
        return Err(format!(
            "inertia must be positive definite (principal moments {e:?})"
        ));
    }
    if e[0] < MOMENT.0 || e[2] > MOMENT.1 {
        return Err(format!(
            "principal moments of inertia {e:?} must be in {} kg m^2",
            range_text(MOMENT)
        ));
    }
    if e[0] + e[1] < e[2] * (1.0 - TRIANGLE_TOLERANCE) {
        return Err(format!(
            "principal moments of inertia {e:?} violate the triangle inequality I1 + I2 >= I3 \
             (no rigid body has them)"
        ));
    }
    Ok(())
}

/// The size parameters of a shape (name, value), bundles included, for
/// the [`SIZE`] range. Polytope and padded-polygon offsets are returned
/// as `offset` (checked as `|b| ≤ SIZE.1`); plane offsets as `plane offset`
/// (checked against [`POSITION_MAX`]).
pub fn shape_sizes<T: Scalar>(shape: &Shape<T>) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    fn walk<T: Scalar>(s: &Shape<T>, out: &mut Vec<(&'static str, f64)>) {
        match s {
            Shape::Sphere { radius } => out.push(("radius", radius.re())),
            Shape::Box { half_extents } => {
                out.extend(half_extents.iter().map(|x| ("half_extents", x.re())))
            }
            Shape::Capsule {
                radius,
                half_length,
            }
            | Shape::Cylinder {
                radius,
                half_length,
            } => {
                out.push(("radius", radius.re()));
                out.push(("half_length", half_length.re()));
            }
            Shape::Cone { height, .. } => out.push(("height", height.re())),
            Shape::Ellipsoid { radii } => out.extend(radii.iter().map(|x| ("radii", x.re()))),
            Shape::Polytope { offsets, .. } => {
                out.extend(offsets.iter().map(|x| ("offset", x.re())))
            }
            Shape::PaddedPolygon {
                offsets, radius, ..
            } => {
                out.extend(offsets.iter().map(|x| ("offset", x.re())));
                out.push(("radius", radius.re()));
            }
            Shape::Plane { offset, .. } => out.push(("plane offset", offset.re())),
            Shape::Bundle { parts, .. } => parts.iter().for_each(|(p, _)| walk(p, out)),
            Shape::Points { .. } => {}
        }
    }
    walk(shape, &mut out);
    out
}

fn check_shape<T: Scalar>(owner: &str, shape: &Shape<T>) -> Result<(), SimError> {
    for (key, x) in shape_sizes(shape) {
        let what = || format!("{owner}: shape {key}");
        match key {
            "offset" => check_abs(what, x, SIZE.1)?,
            // a capsule of zero half length is a sphere (URDF cylinders become such capsules)
            "half_length" if x == 0.0 => {}
            "plane offset" => check_abs(what, x, POSITION_MAX)?,
            _ => check_in(what, x, SIZE)?,
        }
    }
    fn normals<T: Scalar>(s: &Shape<T>) -> Vec<f64> {
        match s {
            Shape::Plane { normal, .. } => vec![(normal.map(|x| x.re()).norm() - 1.0).abs()],
            Shape::Bundle { parts, .. } => parts.iter().flat_map(|(p, _)| normals(p)).collect(),
            _ => Vec::new(),
        }
    }
    if normals(shape).iter().any(|d| !(*d <= 1e-9)) {
        return Err(out_of_range(
            format!("{owner}: plane normal"),
            f64::NAN,
            "a finite unit vector".into(),
        ));
    }
    if let Shape::Cone { half_angle, .. } = shape {
        let a = half_angle.re();
        if !(a > 0.0 && a < std::f64::consts::FRAC_PI_2) {
            return Err(out_of_range(
                format!("{owner}: cone half_angle"),
                a,
                "(0, pi/2)".into(),
            ));
        }
    }
    Ok(())
}

fn check_material<T: Scalar>(owner: &str, m: &Material<T>) -> Result<(), SimError> {
    check_in(
        || format!("{owner}: friction"),
        m.friction.re(),
        (0.0, FRICTION_MAX),
    )?;
    check_in(
        || format!("{owner}: restitution"),
        m.restitution.re(),
        (0.0, 1.0),
    )
}

impl<T: Scalar> World<T> {
    /// The first pair of shapes that can touch whose combined restitution
    /// is positive: `(name a, name b, e)`. Pairs: a free body's shape or a
    /// link shape against static geometry and against another body's
    /// shape (links of the same robot excepted).
    pub fn restitution_pair(&self) -> Option<(String, String, f64)> {
        let e = |m: &Material<T>| m.restitution.re();
        if !self
            .materials
            .iter()
            .chain(self.statics.iter().map(|s| &s.material))
            .any(|m| e(m) > 0.0)
        {
            return None;
        }
        // Bodies that carry collision geometry (free bodies' shapes and link shapes).
        let mut colliding: Vec<usize> = (0..self.shapes.len())
            .filter(|&i| self.shapes[i].is_some())
            .collect();
        colliding.extend(self.link_shapes.iter().map(|s| s.body));
        colliding.sort_unstable();
        colliding.dedup();
        let robot_of = |i: usize| {
            self.robots
                .iter()
                .position(|r| (r.first_body..r.first_body + r.bodies).contains(&i))
        };
        let name = |i: usize| self.model.bodies[i].name.clone();
        let combine = |a: f64, b: f64| self.restitution_combine.apply(a, b);
        let zero_absorbs = matches!(self.restitution_combine, Combine::Min | Combine::Multiply);
        for &i in &colliding {
            let ei = e(&self.materials[i]);
            for st in &self.statics {
                let c = combine(ei, e(&st.material));
                if c > 0.0 {
                    return Some((name(i), st.name.clone(), c));
                }
            }
            if ei <= 0.0 && zero_absorbs {
                continue; // min and multiply of 0 with anything are 0
            }
            for &j in &colliding {
                // link–link contact is modelled by no backend
                if j <= i || (robot_of(i).is_some() && robot_of(j).is_some()) {
                    continue;
                }
                let c = combine(ei, e(&self.materials[j]));
                if c > 0.0 {
                    return Some((name(i), name(j), c));
                }
            }
        }
        None
    }

    /// Refuses options the world's backend does not implement (see the
    /// module docs): continuous collision, and a positive combined
    /// restitution on a pair of shapes that can touch. Called by
    /// [`step`](super::step).
    pub fn check_supported(&self) -> Result<(), SimError> {
        let backend = self.solver.name();
        if let (Some(r), false) = (
            self.robots.first(),
            implements(self.solver, Feature::Robots),
        ) {
            return Err(SimError::Unsupported {
                backend,
                feature: format!("articulated robots (robot `{}`; use `ipm`)", r.name),
            });
        }
        self.check_friction_cone()?;
        if self.ccd && !implements(self.solver, Feature::Ccd) {
            return Err(SimError::Unsupported {
                backend,
                feature: "continuous collision (`ccd = true`)".into(),
            });
        }
        if let (true, Some(r)) = (self.ccd, self.robots.first()) {
            // the continuous-collision step moves free bodies only
            return Err(SimError::Unsupported {
                backend,
                feature: format!(
                    "continuous collision with articulated robots (robot `{}`; ccd = true steps \
                     free bodies only)",
                    r.name
                ),
            });
        }
        if !implements(self.solver, Feature::Restitution) {
            if let Some((a, b, e)) = self.restitution_pair() {
                return Err(SimError::Unsupported {
                    backend,
                    feature: format!(
                        "restitution (e = {e} between `{a}` and `{b}` after {:?} combining; \
                         its contacts are inelastic, set restitution = 0)",
                        self.restitution_combine
                    ),
                });
            }
        }
        Ok(())
    }

    /// Refuses a friction cone the backend does not solve
    /// ([`cone_supported`]): `lcp` solves the pyramid (box) only;
    /// `implicit_ncp`, `convex` and `soft` the exact cone only. Their step
    /// refuses the other one too; this finds it when the scene is loaded.
    pub fn check_friction_cone(&self) -> Result<(), SimError> {
        if cone_supported(self.solver, self.friction_cone) {
            return Ok(());
        }
        let (cone, other) = match self.friction_cone {
            FrictionCone::Exact => ("exact", "pyramid"),
            FrictionCone::Pyramid => ("pyramid", "exact"),
        };
        Err(SimError::Unsupported {
            backend: self.solver.name(),
            feature: format!(
                "the {cone} friction cone (it solves the {other} one only: set \
                 friction_cone = \"{other}\" in [sim], or choose another backend)"
            ),
        })
    }

    /// Refuses finite URDF joint limits (no backend enforces them) unless
    /// the robot says [`ignore_joint_limits`](super::Robot::ignore_joint_limits).
    pub fn check_joint_limits(&self) -> Result<(), SimError> {
        if implements(self.solver, Feature::JointLimits) {
            return Ok(());
        }
        for r in self.robots.iter().filter(|r| !r.ignore_joint_limits) {
            let bodies = &self.model.bodies[r.first_body..r.first_body + r.bodies];
            let limited: Vec<String> = bodies
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    matches!(b.joint, Joint::Revolute { .. } | Joint::Prismatic { .. })
                        && (b.limits.lower.is_finite() || b.limits.upper.is_finite())
                })
                .map(|(k, b)| {
                    let link = b.name.rsplit('/').next().unwrap_or(&b.name);
                    format!(
                        "joint {} [{}, {}]",
                        r.joint_name(k, link),
                        b.limits.lower,
                        b.limits.upper
                    )
                })
                .collect();
            if !limited.is_empty() {
                return Err(SimError::Unsupported {
                    backend: self.solver.name(),
                    feature: format!(
                        "joint limits (robot `{}`, {} limited joint{}: {}); no backend enforces \
                         them: set `ignore_joint_limits = true` on the robot to simulate without \
                         them",
                        r.name,
                        limited.len(),
                        if limited.len() == 1 { "" } else { "s" },
                        limited.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Refuses robot joints that move no inertia: a joint whose child link
    /// and every link below it are massless (as Romeo's fingers) has a zero
    /// diagonal entry in the joint-space mass matrix, so its acceleration
    /// is undefined (the articulated-body algorithm divides by it: NaN at
    /// the first step). Every such joint is named. Measured at `state`
    /// by [`crba`](crate::dynamics::crba::crba): an entry at most
    /// [`JOINT_INERTIA_FLOOR`] times the largest is zero.
    pub fn check_joint_inertia(&self, state: &State<T>) -> Result<(), SimError> {
        if self.robots.is_empty() || state.q.len() != self.model.nq {
            return Ok(());
        }
        let model = self.model.cast::<f64>();
        let mut data = model.data();
        let q = state.q.map(|x| x.re());
        let mm = crate::dynamics::crba::crba(&model, &mut data, &q);
        let scale = (0..model.nv).map(|i| mm[(i, i)].abs()).fold(0.0, f64::max);
        for r in &self.robots {
            let mut names = Vec::new();
            let mut worst = f64::INFINITY;
            for k in r.idx_v..r.idx_v + r.nv {
                let d = mm[(k, k)];
                if !(d > JOINT_INERTIA_FLOOR * scale) {
                    let b = model.dof_body[k];
                    let body = &model.bodies[b];
                    let link = body.name.rsplit('/').next().unwrap_or(&body.name);
                    let name = r.joint_name(b - r.first_body, link);
                    if names.last() != Some(&name) {
                        names.push(name);
                    }
                    worst = worst.min(d);
                }
            }
            if !names.is_empty() {
                return Err(out_of_range(
                    format!(
                        "robot `{}`: the inertia moved by joint{} {} (no link at or below {} has \
                         mass or rotational inertia, so the joint-space mass matrix is singular; \
                         give those links an <inertial> or make the joints fixed)",
                        r.name,
                        if names.len() == 1 { "" } else { "s" },
                        names.join(", "),
                        if names.len() == 1 { "it" } else { "them" },
                    ),
                    worst,
                    format!("> {JOINT_INERTIA_FLOOR:e} x the largest diagonal entry"),
                ));
            }
        }
        Ok(())
    }

    /// Everything a world and an initial state must satisfy before they
    /// are simulated (see the module docs): [`World::check_supported`],
    /// [`World::check_joint_limits`] and the physical ranges.
    pub fn validate(&self, state: &State<T>) -> Result<(), SimError> {
        self.check_joint_limits()?;
        self.check_supported()?;
        check_in(|| "sim.dt".into(), self.dt.re(), DT)?;
        let g = self.gravity.map(|x| x.re());
        check_in(
            || "sim.gravity (norm)".into(),
            scaled_norm(g.as_slice()),
            (0.0, GRAVITY_MAX),
        )?;
        let m = &self.model;
        if state.q.len() != m.nq || state.v.len() != m.nv {
            return Err(SimError::Size {
                what: "state",
                got: state.q.len() + state.v.len(),
                expected: m.nq + m.nv,
            });
        }
        if !state.is_finite() {
            return Err(SimError::NonFinite { what: "state" });
        }
        let lone = m.lone_free_bodies();
        for (i, b) in m.bodies.iter().enumerate() {
            let owner = format!("body `{}`", b.name);
            if lone[i] {
                check_in(|| format!("{owner}: mass"), b.inertia.mass.re(), MASS)?;
                let inertia = b.inertia.inertia.map(|x| x.re());
                check_inertia(&inertia).map_err(|msg| {
                    out_of_range(
                        format!("{owner}: {msg}"),
                        f64::NAN,
                        "see sim::validate".into(),
                    )
                })?;
                let (kq, kv) = (b.idx_q, b.idx_v);
                for d in 0..3 {
                    check_abs(
                        || format!("{owner}: position[{d}]"),
                        state.q[kq + d].re(),
                        POSITION_MAX,
                    )?;
                }
                let vel = (0..3)
                    .map(|d| state.v[kv + d].re().powi(2))
                    .sum::<f64>()
                    .sqrt();
                check_in(
                    || format!("{owner}: speed |velocity|"),
                    vel,
                    (0.0, SPEED_MAX),
                )?;
                let w = (3..6)
                    .map(|d| state.v[kv + d].re().powi(2))
                    .sum::<f64>()
                    .sqrt();
                check_in(
                    || format!("{owner}: |angular_velocity|"),
                    w,
                    (0.0, ANGULAR_SPEED_MAX),
                )?;
                if !(w * self.dt.re() < 2.0) {
                    return Err(out_of_range(
                        format!("{owner}: |angular_velocity| * dt (rotation per step)"),
                        w * self.dt.re(),
                        "< 2 rad".into(),
                    ));
                }
            }
            if let Some(s) = &self.shapes[i] {
                check_shape(&owner, s)?;
                if let (true, Some(r)) = (lone[i], crate::collision::bounding_radius(s)) {
                    let g = scaled_norm(self.gravity.map(|x| x.re()).as_slice());
                    check_relaxation_gap(
                        self.solver,
                        self.params.rho,
                        b.inertia.mass.re(),
                        r,
                        g,
                        self.dt.re(),
                    )
                    .map_err(|msg| {
                        out_of_range(
                            format!("{owner}: {msg}"),
                            b.inertia.mass.re(),
                            format!("{:e}", MASS.0),
                        )
                    })?;
                }
            }
            check_material(&owner, &self.materials[i])?;
        }
        for ls in &self.link_shapes {
            check_shape(&format!("link `{}`", m.bodies[ls.body].name), &ls.shape)?;
        }
        for st in &self.statics {
            let owner = format!("static `{}`", st.name);
            check_shape(&owner, &st.shape)?;
            check_material(&owner, &st.material)?;
            for d in 0..3 {
                check_abs(
                    || format!("{owner}: position[{d}]"),
                    st.pose.translation[d].re(),
                    POSITION_MAX,
                )?;
            }
        }
        self.check_joint_inertia(state)?;
        for r in &self.robots {
            for k in r.idx_v..r.idx_v + r.nv {
                check_abs(
                    || format!("robot `{}`: v[{}]", r.name, k - r.idx_v),
                    state.v[k].re(),
                    SPEED_MAX,
                )?;
            }
            for k in r.idx_q..r.idx_q + r.nq {
                check_abs(
                    || format!("robot `{}`: q[{}]", r.name, k - r.idx_q),
                    state.q[k].re(),
                    POSITION_MAX,
                )?;
            }
        }
        Ok(())
    }
}
