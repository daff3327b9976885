//! [`Model`] (immutable description) and [`Data`] (workspace).

use crate::math::{spatial::RigidInertia, DMat, DVec, Mat3};
use crate::Scalar;

/// A joint connecting a body to its parent (or to the world for roots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joint {
    /// Six degrees of freedom: position + unit quaternion in `q` (7), linear
    /// and angular velocity in the world frame in `v` (6).
    Free,
}

impl Joint {
    /// Number of configuration coordinates.
    pub fn nq(&self) -> usize {
        match self {
            Joint::Free => 7,
        }
    }
    /// Number of velocity coordinates.
    pub fn nv(&self) -> usize {
        match self {
            Joint::Free => 6,
        }
    }
}

/// A rigid body of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Body<T: Scalar> {
    /// Unique name (scene files refer to bodies by name).
    pub name: String,
    /// Inertial parameters in the body frame.
    pub inertia: RigidInertia<T>,
    /// Parent body, `None` for a root attached to the world.
    pub parent: Option<usize>,
    /// The joint to the parent (or world).
    pub joint: Joint,
    /// Index of the body's first coordinate in `q`.
    pub idx_q: usize,
    /// Index of the body's first coordinate in `v`.
    pub idx_v: usize,
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
}

impl<T: Scalar> Default for Model<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> Model<T> {
    /// An empty model.
    pub fn new() -> Self {
        Model { bodies: Vec::new(), nq: 0, nv: 0 }
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
            return Err(ModelError::NonPositiveMass { body: name.into(), mass: mass.re() });
        }
        if !is_spd(&inertia.map(|x| x.re())) {
            return Err(ModelError::BadInertia { body: name.into() });
        }
        if self.bodies.iter().any(|b| b.name == name) {
            return Err(ModelError::DuplicateName(name.into()));
        }
        let joint = Joint::Free;
        self.bodies.push(Body {
            name: name.into(),
            inertia: RigidInertia::new(mass, inertia),
            parent: None,
            joint,
            idx_q: self.nq,
            idx_v: self.nv,
        });
        self.nq += joint.nq();
        self.nv += joint.nv();
        Ok(self.bodies.len() - 1)
    }

    /// Index of the body named `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }

    /// The same model with parameters converted to another scalar type
    /// (derivative parts of `U` start at zero).
    pub fn cast<U: Scalar>(&self) -> Model<U> {
        Model {
            bodies: self
                .bodies
                .iter()
                .map(|b| Body {
                    name: b.name.clone(),
                    inertia: b.inertia.cast(),
                    parent: b.parent,
                    joint: b.joint,
                    idx_q: b.idx_q,
                    idx_v: b.idx_v,
                })
                .collect(),
            nq: self.nq,
            nv: self.nv,
        }
    }

    /// A fresh workspace sized for this model.
    pub fn data(&self) -> Data<T> {
        Data::new(self)
    }
}

/// Symmetric positive definite test (Cholesky on the primal values).
pub(crate) fn is_spd(m: &nalgebra::Matrix3<f64>) -> bool {
    m.iter().all(|x| x.is_finite())
        && (m - m.transpose()).abs().max() <= 1e-12 * (1.0 + m.abs().max())
        && m.cholesky().is_some()
}

/// Workspace of the dynamics algorithms.
#[derive(Clone, Debug)]
pub struct Data<T: Scalar> {
    /// Joint-space mass matrix `M(q)` (nv × nv).
    pub mass_matrix: DMat<T>,
    /// Nonlinear effects `c(q, v)`: gyroscopic terms and gravity (nv).
    pub bias: DVec<T>,
}

impl<T: Scalar> Data<T> {
    /// A workspace for `model`.
    pub fn new(model: &Model<T>) -> Self {
        Data { mass_matrix: DMat::zeros(model.nv, model.nv), bias: DVec::zeros(model.nv) }
    }
}
