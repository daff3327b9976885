//! [`Model`] (immutable description) and [`Data`] (workspace).
//!
//! A model is a kinematic forest: every body hangs from a parent body (or
//! from the world) by one [`Joint`]. Bodies are stored in topological order
//! (parents before children); for a tree imported from URDF this is the
//! depth-first order with children in file order, which is also the order
//! of the coordinates in `q` and `v` (Pinocchio's convention). Free bodies
//! added with [`Model::add_free_body`] and articulated robots (see
//! [`Model::add_body`], [`Model::append`] and `dynamics::urdf`) live side by
//! side in the same model.
//!
//! # Frames
//!
//! Body `i`'s frame is its joint's child frame. `placement` is the pose of
//! the joint's parent-side frame in the parent body frame (in the world for
//! a root), so with the joint transform `X_J(q)`
//!
//! ```text
//! oMi = oM_parent · placement · X_J(q_i)
//! ```
//!
//! # Joint coordinates
//!
//! | joint | `q` | `v` | `X_J(q)` |
//! |---|---|---|---|
//! | `Revolute { axis }` | angle θ (1) | θ̇ (1) | rotation θ about `axis` |
//! | `Prismatic { axis }` | offset d (1) | ḋ (1) | translation d · `axis` |
//! | `Spherical` | unit quaternion `[w, x, y, z]` (4) | angular velocity in the **child** frame (3) | rotation `q`; `q ⊕ δ = q ⊗ exp(δ)` (Pinocchio) |
//! | `Free` | position `p` (3) + quaternion `[w, x, y, z]` (4) | `ṗ` (3) and angular velocity `ω` (3), both in the **parent joint frame** (the world for a root) | `(q_rot, p)`; `q ⊕ δ = (p + δ_p, φ(δ_ω) ⊗ q_rot)` |
//! | `Fixed` | — | — | identity |
//!
//! The free joint keeps the convention of the free-body time stepper
//! (`dynamics::free`, `SCENE.md`): world-frame linear velocity of the body
//! origin and world-frame angular velocity. This differs from Pinocchio's
//! free flyer (body-frame twist, quaternion `[x, y, z, w]`).

use crate::Scalar;
use crate::math::{DMat, DVec, Mat3, Mat6, Pose, Vec3, Vec6, so3, spatial::RigidInertia};

/// A joint connecting a body to its parent (or to the world for roots).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Joint {
    /// Six degrees of freedom: position + unit quaternion in `q` (7), linear
    /// and angular velocity in the parent joint frame (the world for a root)
    /// in `v` (6).
    Free,
    /// Rotation about a unit axis of the joint frame.
    Revolute {
        /// Unit axis in the joint frame.
        axis: [f64; 3],
    },
    /// Translation along a unit axis of the joint frame.
    Prismatic {
        /// Unit axis in the joint frame.
        axis: [f64; 3],
    },
    /// Ball joint: unit quaternion in `q` (4), child-frame angular velocity
    /// in `v` (3).
    Spherical,
    /// No relative motion.
    Fixed,
}

impl Joint {
    /// Number of configuration coordinates.
    pub fn nq(&self) -> usize {
        match self {
            Joint::Free => 7,
            Joint::Revolute { .. } | Joint::Prismatic { .. } => 1,
            Joint::Spherical => 4,
            Joint::Fixed => 0,
        }
    }
    /// Number of velocity coordinates.
    pub fn nv(&self) -> usize {
        match self {
            Joint::Free => 6,
            Joint::Revolute { .. } | Joint::Prismatic { .. } => 1,
            Joint::Spherical => 3,
            Joint::Fixed => 0,
        }
    }

    /// The joint transform `X_J(q)` for this joint's coordinates `q`
    /// (`nq()` values).
    ///
    /// ```
    /// use dualsim::dynamics::Joint;
    /// let x = Joint::Prismatic { axis: [0.0, 0.0, 1.0] }.transform(&[0.5_f64]);
    /// assert_eq!(x.translation.z, 0.5);
    /// ```
    pub fn transform<T: Scalar>(&self, q: &[T]) -> Pose<T> {
        match *self {
            Joint::Free => Pose::new(
                crate::math::Quat::new(q[3], q[4], q[5], q[6]),
                Vec3::new(q[0], q[1], q[2]),
            ),
            Joint::Revolute { axis } => {
                let half = q[0] * T::from_re(0.5);
                let (s, c) = (half.sin(), half.cos());
                Pose::new(
                    crate::math::Quat::new(
                        c,
                        s * T::from_re(axis[0]),
                        s * T::from_re(axis[1]),
                        s * T::from_re(axis[2]),
                    ),
                    Vec3::zeros(),
                )
            }
            Joint::Prismatic { axis } => {
                Pose::new(so3::identity(), crate::math::vec3::<T>(axis) * q[0])
            }
            Joint::Spherical => Pose::new(
                crate::math::Quat::new(q[0], q[1], q[2], q[3]),
                Vec3::zeros(),
            ),
            Joint::Fixed => Pose::identity(),
        }
    }

    /// The neutral configuration (zero angles, identity rotations).
    pub fn neutral<T: Scalar>(&self) -> Vec<T> {
        let (z, o) = (T::zero(), T::one());
        match self {
            Joint::Free => vec![z, z, z, o, z, z, z],
            Joint::Revolute { .. } | Joint::Prismatic { .. } => vec![z],
            Joint::Spherical => vec![o, z, z, z],
            Joint::Fixed => vec![],
        }
    }
}

/// Position and velocity limits of a joint (from URDF; infinite when absent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointLimits {
    /// Lower position limit.
    pub lower: f64,
    /// Upper position limit.
    pub upper: f64,
    /// Maximum effort (force or torque).
    pub effort: f64,
    /// Maximum speed.
    pub velocity: f64,
}

impl Default for JointLimits {
    fn default() -> Self {
        JointLimits {
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
            effort: f64::INFINITY,
            velocity: f64::INFINITY,
        }
    }
}

/// A rigid body of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Body<T: Scalar> {
    /// Unique name (scene files refer to bodies by name).
    pub name: String,
    /// Inertial parameters in the body frame (centre of mass offset included).
    pub inertia: RigidInertia<T>,
    /// Parent body, `None` for a root attached to the world.
    pub parent: Option<usize>,
    /// The joint to the parent (or world).
    pub joint: Joint,
    /// Pose of the joint's parent-side frame in the parent body frame (in
    /// the world frame for a root).
    pub placement: Pose<T>,
    /// Joint limits.
    pub limits: JointLimits,
    /// Index of the body's first coordinate in `q`.
    pub idx_q: usize,
    /// Index of the body's first coordinate in `v`.
    pub idx_v: usize,
}

impl<T: Scalar> Body<T> {
    /// True for a free-floating root body: a lone free body (see
    /// [`Model::is_lone_free_body`]) or the base of a floating-base robot.
    pub fn is_free_root(&self) -> bool {
        self.parent.is_none() && self.joint == Joint::Free
    }
}

/// Per body: a free root without children.
fn lone_of<T: Scalar>(bodies: &[Body<T>]) -> Vec<bool> {
    let mut out: Vec<bool> = bodies.iter().map(|b| b.is_free_root()).collect();
    for b in bodies {
        if let Some(p) = b.parent {
            out[p] = false;
        }
    }
    out
}

/// Invalid model parameters.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// Mass not strictly positive or not finite.
    #[error("body `{body}`: mass must be finite and > 0, got {mass}")]
    NonPositiveMass {
        /// Body name.
        body: String,
        /// The offending mass.
        mass: f64,
    },
    /// Inertia not symmetric positive definite or not finite.
    #[error("body `{body}`: inertia must be finite, symmetric and positive definite")]
    BadInertia {
        /// Body name.
        body: String,
    },
    /// Two bodies share a name.
    #[error("duplicate body name `{0}`")]
    DuplicateName(String),
    /// The parent index does not name an existing body.
    #[error("body `{body}`: parent index {parent} out of range")]
    BadParent {
        /// Body name.
        body: String,
        /// The offending index.
        parent: usize,
    },
    /// A revolute or prismatic axis is zero or not finite.
    #[error("body `{body}`: joint axis must be finite and non-zero")]
    BadAxis {
        /// Body name.
        body: String,
    },
    /// A feature the model does not support in this combination.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// The immutable description of a multibody system.
///
/// ```
/// use dualsim::dynamics::Model;
/// use dualsim::math::{Mat3, Vec3};
/// let mut model = Model::<f64>::new();
/// model.add_free_body("ball", 1.0, Mat3::from_diagonal(&Vec3::repeat(0.1))).unwrap();
/// assert_eq!((model.nq, model.nv), (7, 6));
/// let dual = model.cast::<num_dual::Dual64>();
/// assert_eq!(dual.bodies[0].inertia.mass.re, 1.0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Model<T: Scalar> {
    /// Bodies in topological order (parents before children).
    pub bodies: Vec<Body<T>>,
    /// Total number of configuration coordinates.
    pub nq: usize,
    /// Total number of velocity coordinates.
    pub nv: usize,
    /// Gravity acceleration in the world frame used by the articulated
    /// algorithms (`rnea`, `aba`, ...). Default `(0, 0, −9.81)`.
    pub gravity: Vec3<T>,
    /// For each velocity coordinate, the previous coordinate on the path to
    /// the root (the "expanded tree" parent used by the sparse
    /// factorization of `M`): the preceding coordinate of the same joint,
    /// else the last coordinate of the nearest ancestor joint with any.
    pub dof_parent: Vec<Option<usize>>,
    /// Body owning each velocity coordinate.
    pub dof_body: Vec<usize>,
    /// [`Model::lone_free_bodies`], kept by [`Model::add_body`] (the one
    /// place bodies are added) so that a step reads it without allocating.
    lone: Vec<bool>,
}

impl<T: Scalar> Default for Model<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> Model<T> {
    /// Per body: true for a lone free body, a free root without children
    /// (the bodies `dynamics::free` steps with the variational free-body
    /// step). The free root of a floating-base robot (a free root with
    /// children) is not: its six coordinates are stepped with the rest of
    /// the robot by the articulated dynamics (`dynamics::articulated`).
    ///
    /// Kept up to date by [`Model::add_body`] (no allocation); a model
    /// whose `bodies` were pushed by hand gets it recomputed (and
    /// allocated) at every call.
    pub fn lone_free_bodies(&self) -> std::borrow::Cow<'_, [bool]> {
        if self.lone.len() == self.bodies.len() {
            return std::borrow::Cow::Borrowed(&self.lone);
        }
        std::borrow::Cow::Owned(lone_of(&self.bodies))
    }

    /// True when body `i` is a lone free body (see [`Model::lone_free_bodies`]).
    pub fn is_lone_free_body(&self, i: usize) -> bool {
        self.bodies[i].is_free_root() && !self.bodies.iter().any(|b| b.parent == Some(i))
    }

    /// An empty model.
    pub fn new() -> Self {
        Model {
            bodies: Vec::new(),
            nq: 0,
            nv: 0,
            gravity: Vec3::new(T::zero(), T::zero(), T::from_re(-9.81)),
            dof_parent: Vec::new(),
            dof_body: Vec::new(),
            lone: Vec::new(),
        }
    }

    /// Adds a free-floating rigid body with its centre of mass at the body
    /// origin; returns its index.
    pub fn add_free_body(
        &mut self,
        name: &str,
        mass: T,
        inertia: Mat3<T>,
    ) -> Result<usize, ModelError> {
        if !(mass.re() > 0.0) || !mass.re().is_finite() {
            return Err(ModelError::NonPositiveMass {
                body: name.into(),
                mass: mass.re(),
            });
        }
        if !is_spd(&inertia.map(|x| x.re())) {
            return Err(ModelError::BadInertia { body: name.into() });
        }
        self.add_body(
            name,
            None,
            Joint::Free,
            Pose::identity(),
            RigidInertia::new(mass, inertia),
        )
    }

    /// Adds a body attached to `parent` (or the world) by `joint`, with the
    /// joint's parent-side frame at `placement` in the parent frame; returns
    /// its index. The axis of a revolute or prismatic joint is normalized.
    ///
    /// Masses must be finite and ≥ 0 and rotational inertias symmetric
    /// positive semi-definite (massless links are allowed, as in URDF, as
    /// long as the joint-space mass matrix stays positive definite).
    ///
    /// ```
    /// use dualsim::dynamics::{Joint, Model};
    /// use dualsim::math::{spatial::RigidInertia, Mat3, Pose};
    /// let mut m = Model::<f64>::new();
    /// let link = RigidInertia::new(1.0, Mat3::identity() * 0.01);
    /// let a = m.add_body("a", None, Joint::Revolute { axis: [0.0, 0.0, 2.0] },
    ///                    Pose::identity(), link).unwrap();
    /// m.add_body("b", Some(a), Joint::Spherical, Pose::identity(), link).unwrap();
    /// assert_eq!((m.nq, m.nv), (5, 4));
    /// assert_eq!(m.dof_parent, vec![None, Some(0), Some(1), Some(2)]);
    /// ```
    pub fn add_body(
        &mut self,
        name: &str,
        parent: Option<usize>,
        joint: Joint,
        placement: Pose<T>,
        inertia: RigidInertia<T>,
    ) -> Result<usize, ModelError> {
        let m = inertia.mass.re();
        if !m.is_finite() || m < 0.0 {
            return Err(ModelError::NonPositiveMass {
                body: name.into(),
                mass: m,
            });
        }
        let ic = inertia.inertia.map(|x| x.re());
        if !is_psd(&ic) || !inertia.com.iter().all(|x| x.re().is_finite()) {
            return Err(ModelError::BadInertia { body: name.into() });
        }
        if self.bodies.iter().any(|b| b.name == name) {
            return Err(ModelError::DuplicateName(name.into()));
        }
        if let Some(p) = parent {
            if p >= self.bodies.len() {
                return Err(ModelError::BadParent {
                    body: name.into(),
                    parent: p,
                });
            }
        }
        let joint = match joint {
            Joint::Revolute { axis } => Joint::Revolute {
                axis: unit(name, axis)?,
            },
            Joint::Prismatic { axis } => Joint::Prismatic {
                axis: unit(name, axis)?,
            },
            j => j,
        };
        // Expanded-tree parent of this joint's first coordinate.
        let mut up = None;
        let mut a = parent;
        while let Some(p) = a {
            let b = &self.bodies[p];
            if b.joint.nv() > 0 {
                up = Some(b.idx_v + b.joint.nv() - 1);
                break;
            }
            a = b.parent;
        }
        let index = self.bodies.len();
        for k in 0..joint.nv() {
            self.dof_parent
                .push(if k == 0 { up } else { Some(self.nv + k - 1) });
            self.dof_body.push(index);
        }
        if let Some(p) = parent {
            if let Some(l) = self.lone.get_mut(p) {
                *l = false;
            }
        }
        self.bodies.push(Body {
            name: name.into(),
            inertia,
            parent,
            joint,
            placement,
            limits: JointLimits::default(),
            idx_q: self.nq,
            idx_v: self.nv,
        });
        self.nq += joint.nq();
        self.nv += joint.nv();
        if self.lone.len() + 1 == self.bodies.len() {
            self.lone.push(self.bodies[index].is_free_root());
        } else {
            self.lone = lone_of(&self.bodies);
        }
        Ok(index)
    }

    /// Appends every body of `other` (e.g. a robot imported from URDF),
    /// attaching its roots to `parent` (or the world) with their placement
    /// premultiplied by `placement`; returns the index of `other`'s first
    /// body in `self`. Names must stay unique.
    pub fn append(
        &mut self,
        other: &Model<T>,
        parent: Option<usize>,
        placement: &Pose<T>,
    ) -> Result<usize, ModelError> {
        let offset = self.bodies.len();
        for b in &other.bodies {
            let (p, pl) = match b.parent {
                Some(p) => (Some(p + offset), b.placement),
                None => (parent, *placement * b.placement),
            };
            let i = self.add_body(&b.name, p, b.joint, pl, b.inertia)?;
            self.bodies[i].limits = b.limits;
        }
        Ok(offset)
    }

    /// Index of the body named `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }

    /// The neutral configuration (zero joint angles, identity rotations,
    /// free bodies at the origin).
    pub fn neutral(&self) -> DVec<T> {
        let mut q = DVec::zeros(self.nq);
        for b in &self.bodies {
            for (k, x) in b.joint.neutral::<T>().into_iter().enumerate() {
                q[b.idx_q + k] = x;
            }
        }
        q
    }

    /// The same model with parameters converted to another scalar type
    /// (derivative parts of `U` start at zero).
    pub fn cast<U: Scalar>(&self) -> Model<U> {
        let c = |x: T| U::from_re(x.re());
        Model {
            bodies: self
                .bodies
                .iter()
                .map(|b| Body {
                    name: b.name.clone(),
                    inertia: b.inertia.cast(),
                    parent: b.parent,
                    joint: b.joint,
                    placement: b.placement.cast(),
                    limits: b.limits,
                    idx_q: b.idx_q,
                    idx_v: b.idx_v,
                })
                .collect(),
            nq: self.nq,
            nv: self.nv,
            gravity: self.gravity.map(c),
            dof_parent: self.dof_parent.clone(),
            dof_body: self.dof_body.clone(),
            lone: self.lone.clone(),
        }
    }

    /// A fresh workspace sized for this model.
    pub fn data(&self) -> Data<T> {
        Data::new(self)
    }
}

fn unit(name: &str, a: [f64; 3]) -> Result<[f64; 3], ModelError> {
    let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    if !n.is_finite() || n <= 0.0 {
        return Err(ModelError::BadAxis { body: name.into() });
    }
    Ok([a[0] / n, a[1] / n, a[2] / n])
}

/// Symmetric positive definite test (Cholesky on the primal values).
pub(crate) fn is_spd(m: &nalgebra::Matrix3<f64>) -> bool {
    m.iter().all(|x| x.is_finite())
        && (m - m.transpose()).abs().max() <= 1e-12 * (1.0 + m.abs().max())
        && m.cholesky().is_some()
}

/// Symmetric positive semi-definite test (eigenvalues of the primal values).
pub(crate) fn is_psd(m: &nalgebra::Matrix3<f64>) -> bool {
    if !m.iter().all(|x| x.is_finite())
        || (m - m.transpose()).abs().max() > 1e-12 * (1.0 + m.abs().max())
    {
        return false;
    }
    let e = m.symmetric_eigenvalues();
    e.iter().all(|&x| x >= -1e-12 * (1.0 + m.abs().max()))
}

/// Workspace of the dynamics algorithms (Pinocchio's `Data`).
///
/// Every buffer is sized once by [`Data::new`]; the algorithms write into
/// it and allocate nothing. World-frame quantities carry the prefix `o`
/// (Pinocchio's naming): spatial vectors are at the world origin, linear
/// part first.
#[derive(Clone, Debug)]
pub struct Data<T: Scalar> {
    /// Joint-space mass matrix `M(q)` (nv × nv), filled by `crba` and
    /// `rnea_derivatives` (as `∂τ/∂a`).
    pub mass_matrix: DMat<T>,
    /// Nonlinear effects `c(q, v)`: Coriolis, centrifugal and gravity (nv).
    pub bias: DVec<T>,
    /// Joint forces from `rnea` (nv).
    pub tau: DVec<T>,
    /// Joint accelerations from `aba` (nv).
    pub ddq: DVec<T>,
    /// `∂τ/∂q` from `rnea_derivatives` (nv × nv).
    pub dtau_dq: DMat<T>,
    /// `∂τ/∂v` from `rnea_derivatives` (nv × nv).
    pub dtau_dv: DMat<T>,
    /// `∂q̈/∂q` from `aba_derivatives` (nv × nv).
    pub ddq_dq: DMat<T>,
    /// `∂q̈/∂v` from `aba_derivatives` (nv × nv).
    pub ddq_dv: DMat<T>,
    /// `∂q̈/∂τ = M⁻¹` from `aba_derivatives` (nv × nv).
    pub minv: DMat<T>,
    /// Sparse `Lᵀ D L` factor of `M` (see `dynamics::cholesky`).
    pub mass_factor: DMat<T>,
    /// World pose of each body.
    pub omi: Vec<Pose<T>>,
    /// World pose of each joint's parent-side frame.
    pub omp: Vec<Pose<T>>,
    /// World-frame inertia of each body.
    pub oinertia: Vec<RigidInertia<T>>,
    /// Spatial velocity of each body (world frame).
    pub ov: Vec<Vec6<T>>,
    /// Spatial acceleration of each body minus gravity (world frame).
    pub oa: Vec<Vec6<T>>,
    /// Force on each body, then summed over its subtree (world frame).
    pub of: Vec<Vec6<T>>,
    /// Joint velocity-product acceleration `c_i = Ṡ_i q̇_i` (world frame).
    pub oc: Vec<Vec6<T>>,
    /// Composite (subtree) spatial inertia (world frame).
    pub oycrb: Vec<Mat6<T>>,
    /// Composite inertia time variation plus momentum cross term
    /// (Pinocchio's `doYcrb`).
    pub doycrb: Vec<Mat6<T>>,
    /// Articulated-body inertia (ABA workspace).
    pub oia: Vec<Mat6<T>>,
    /// Articulated bias force (ABA workspace).
    pub opa: Vec<Vec6<T>>,
    /// Motion subspace column of each velocity coordinate (world frame).
    pub os: Vec<Vec6<T>>,
    /// `U = I^A S` per coordinate (ABA).
    pub u_cols: Vec<Vec6<T>>,
    /// `D = Sᵀ I^A S` per coordinate (ABA).
    pub d_diag: Vec<T>,
    /// `u = τ − Sᵀ p^A` per coordinate (ABA).
    pub u_bias: Vec<T>,
    /// `∂v/∂q` column per coordinate (derivatives).
    pub dvdq: Vec<Vec6<T>>,
    /// `∂a/∂q` column per coordinate (derivatives).
    pub dadq: Vec<Vec6<T>>,
    /// `∂a/∂v` column per coordinate (derivatives).
    pub dadv: Vec<Vec6<T>>,
    /// `F_i ×*`-transported force column per coordinate (derivatives).
    pub dfdq: Vec<Vec6<T>>,
    /// `∂F/∂v` column per coordinate (derivatives).
    pub dfdv: Vec<Vec6<T>>,
    /// `Ycrb S` per coordinate (derivatives).
    pub ycrb_s: Vec<Vec6<T>>,
    /// `doYcrbᵀ S` per coordinate (derivatives).
    pub doycrb_t_s: Vec<Vec6<T>>,
    /// Scratch vector (nv).
    pub tmp: DVec<T>,
}

impl<T: Scalar> Data<T> {
    /// A workspace for `model`.
    pub fn new(model: &Model<T>) -> Self {
        let (n, nb) = (model.nv, model.bodies.len());
        let v6 = |k| vec![Vec6::zeros(); k];
        Data {
            mass_matrix: DMat::zeros(n, n),
            bias: DVec::zeros(n),
            tau: DVec::zeros(n),
            ddq: DVec::zeros(n),
            dtau_dq: DMat::zeros(n, n),
            dtau_dv: DMat::zeros(n, n),
            ddq_dq: DMat::zeros(n, n),
            ddq_dv: DMat::zeros(n, n),
            minv: DMat::zeros(n, n),
            mass_factor: DMat::zeros(n, n),
            omi: vec![Pose::identity(); nb],
            omp: vec![Pose::identity(); nb],
            oinertia: vec![RigidInertia::new(T::zero(), Mat3::zeros()); nb],
            ov: v6(nb),
            oa: v6(nb),
            of: v6(nb),
            oc: v6(nb),
            oycrb: vec![Mat6::zeros(); nb],
            doycrb: vec![Mat6::zeros(); nb],
            oia: vec![Mat6::zeros(); nb],
            opa: v6(nb),
            os: v6(n),
            u_cols: v6(n),
            d_diag: vec![T::zero(); n],
            u_bias: vec![T::zero(); n],
            dvdq: v6(n),
            dadq: v6(n),
            dadv: v6(n),
            dfdq: v6(n),
            dfdv: v6(n),
            ycrb_s: v6(n),
            doycrb_t_s: v6(n),
            tmp: DVec::zeros(n),
        }
    }
}
