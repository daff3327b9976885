//! Shapes and materials.
//!
//! Every size is a `T`, so derivatives with respect to shape parameters come
//! from the same code. Shapes are expressed in their body's frame; a plane
//! `{normal, offset}` is the half-space `normal · x ≤ offset` (its surface
//! is `normal · x = offset`, the outward normal is `normal`).

pub mod hull;
pub mod mesh;

use std::sync::Arc;

use crate::Scalar;
use crate::math::{Pose, Vec3};

/// How a bundle combines its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundleOp {
    /// Each part is its own convex shape (each gets its own contacts).
    Union,
    /// The Minkowski sum of the parts.
    Minkowski,
}

/// A convex primitive or a bundle of them.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape<T: Scalar> {
    /// Ball of the given radius.
    Sphere {
        /// Radius.
        radius: T,
    },
    /// Axis-aligned box.
    Box {
        /// Half extents along x, y, z.
        half_extents: Vec3<T>,
    },
    /// Segment along the body z axis, inflated by `radius`.
    Capsule {
        /// Radius.
        radius: T,
        /// Half length of the segment.
        half_length: T,
    },
    /// Cylinder along the body z axis.
    Cylinder {
        /// Radius.
        radius: T,
        /// Half length.
        half_length: T,
    },
    /// Cone along the body z axis, apex up.
    Cone {
        /// Height.
        height: T,
        /// Half opening angle (rad).
        half_angle: T,
    },
    /// Ellipsoid with the given semi-axes.
    Ellipsoid {
        /// Semi-axes.
        radii: Vec3<T>,
    },
    /// Polytope `A x ≤ b` (rows of `A` are `normals`).
    Polytope {
        /// Face normals.
        normals: Vec<Vec3<T>>,
        /// Offsets `b`.
        offsets: Vec<T>,
        /// The vertices, faces and edges of the polytope when known (the
        /// convex hull of a mesh): pairs with a hull are collided by support
        /// mapping and face clipping ([`hull::HullMesh`]); `None` (a
        /// polytope given by its half-spaces alone) takes the conic program.
        hull: Option<Arc<hull::HullMesh>>,
    },
    /// A polygon in the body xy plane inflated by `radius`.
    PaddedPolygon {
        /// In-plane normals (z = 0).
        normals: Vec<Vec3<T>>,
        /// Offsets.
        offsets: Vec<T>,
        /// Padding radius.
        radius: T,
    },
    /// Half-space `normal · x ≤ offset` (static geometry only).
    Plane {
        /// Unit outward normal.
        normal: Vec3<T>,
        /// Offset along the normal.
        offset: T,
    },
    /// Several shapes at fixed poses.
    Bundle {
        /// The parts and their poses in the body frame.
        parts: Vec<(Shape<T>, Pose<T>)>,
        /// How the parts combine.
        op: BundleOp,
    },
    /// Oriented point cloud (for the `soft` backend).
    Points {
        /// Points in the body frame.
        points: Vec<Vec3<T>>,
        /// Outward unit normals.
        normals: Vec<Vec3<T>>,
    },
}

/// The kind of a [`Shape`] (its variant without data): the key of the
/// table of closed-form pairs ([`collision::pairs`](crate::collision::pairs)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ShapeKind {
    Sphere,
    Box,
    Capsule,
    Cylinder,
    Cone,
    Ellipsoid,
    Polytope,
    PaddedPolygon,
    Plane,
    Bundle,
    Points,
}

impl<T: Scalar> Shape<T> {
    /// The shape's type name as written in scene files.
    pub fn type_name(&self) -> &'static str {
        match self {
            Shape::Sphere { .. } => "sphere",
            Shape::Box { .. } => "box",
            Shape::Capsule { .. } => "capsule",
            Shape::Cylinder { .. } => "cylinder",
            Shape::Cone { .. } => "cone",
            Shape::Ellipsoid { .. } => "ellipsoid",
            Shape::Polytope { .. } => "polytope",
            Shape::PaddedPolygon { .. } => "padded_polygon",
            Shape::Plane { .. } => "plane",
            Shape::Bundle { .. } => "bundle",
            Shape::Points { .. } => "points",
        }
    }

    /// The shape's kind.
    pub fn kind(&self) -> ShapeKind {
        match self {
            Shape::Sphere { .. } => ShapeKind::Sphere,
            Shape::Box { .. } => ShapeKind::Box,
            Shape::Capsule { .. } => ShapeKind::Capsule,
            Shape::Cylinder { .. } => ShapeKind::Cylinder,
            Shape::Cone { .. } => ShapeKind::Cone,
            Shape::Ellipsoid { .. } => ShapeKind::Ellipsoid,
            Shape::Polytope { .. } => ShapeKind::Polytope,
            Shape::PaddedPolygon { .. } => ShapeKind::PaddedPolygon,
            Shape::Plane { .. } => ShapeKind::Plane,
            Shape::Bundle { .. } => ShapeKind::Bundle,
            Shape::Points { .. } => ShapeKind::Points,
        }
    }

    /// The shape's size parameters, in the order of
    /// `Param::Shape(body, k)`: each with its name as written in scene
    /// files (a vector's name once per component) and its value. Planes,
    /// polytopes, bundles and point clouds have none.
    ///
    /// ```
    /// use dualsim::geometry::Shape;
    /// use dualsim::math::Vec3;
    /// let b = Shape::Box { half_extents: Vec3::new(0.1, 0.2, 0.3) };
    /// assert_eq!(b.params()[1], ("half_extents", 0.2));
    /// let c = Shape::Capsule { radius: 0.1, half_length: 0.5 };
    /// assert_eq!(c.params(), vec![("radius", 0.1), ("half_length", 0.5)]);
    /// ```
    pub fn params(&self) -> Vec<(&'static str, T)> {
        match self {
            Shape::Sphere { radius } => vec![("radius", *radius)],
            Shape::Box { half_extents: h } => h.iter().map(|x| ("half_extents", *x)).collect(),
            Shape::Capsule {
                radius,
                half_length,
            }
            | Shape::Cylinder {
                radius,
                half_length,
            } => vec![("radius", *radius), ("half_length", *half_length)],
            Shape::Cone { height, half_angle } => {
                vec![("height", *height), ("half_angle", *half_angle)]
            }
            Shape::Ellipsoid { radii } => radii.iter().map(|x| ("radii", *x)).collect(),
            Shape::PaddedPolygon { radius, .. } => vec![("radius", *radius)],
            Shape::Polytope { .. } | Shape::Plane { .. } | Shape::Bundle { .. } => vec![],
            Shape::Points { .. } => vec![],
        }
    }

    /// Size parameter `k` of [`params`](Shape::params) by mutable
    /// reference (`None` past the last).
    ///
    /// ```
    /// use dualsim::geometry::Shape;
    /// let mut c = Shape::Cone { height: 1.0, half_angle: 0.3 };
    /// *c.param_mut(1).unwrap() = 0.4;
    /// assert_eq!(c.params()[1], ("half_angle", 0.4));
    /// assert!(c.param_mut(2).is_none());
    /// ```
    pub fn param_mut(&mut self, k: usize) -> Option<&mut T> {
        match self {
            Shape::Sphere { radius } | Shape::PaddedPolygon { radius, .. } if k == 0 => {
                Some(radius)
            }
            Shape::Box { half_extents: v } | Shape::Ellipsoid { radii: v } if k < 3 => {
                Some(&mut v[k])
            }
            Shape::Capsule {
                radius,
                half_length,
            }
            | Shape::Cylinder {
                radius,
                half_length,
            } => match k {
                0 => Some(radius),
                1 => Some(half_length),
                _ => None,
            },
            Shape::Cone { height, half_angle } => match k {
                0 => Some(height),
                1 => Some(half_angle),
                _ => None,
            },
            _ => None,
        }
    }

    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> Shape<U> {
        let c = |x: T| U::from_re(x.re());
        let cv = |v: &Vec3<T>| v.map(c);
        match self {
            Shape::Sphere { radius } => Shape::Sphere { radius: c(*radius) },
            Shape::Box { half_extents } => Shape::Box {
                half_extents: cv(half_extents),
            },
            Shape::Capsule {
                radius,
                half_length,
            } => Shape::Capsule {
                radius: c(*radius),
                half_length: c(*half_length),
            },
            Shape::Cylinder {
                radius,
                half_length,
            } => Shape::Cylinder {
                radius: c(*radius),
                half_length: c(*half_length),
            },
            Shape::Cone { height, half_angle } => Shape::Cone {
                height: c(*height),
                half_angle: c(*half_angle),
            },
            Shape::Ellipsoid { radii } => Shape::Ellipsoid { radii: cv(radii) },
            Shape::Polytope {
                normals,
                offsets,
                hull,
            } => Shape::Polytope {
                normals: normals.iter().map(cv).collect(),
                offsets: offsets.iter().map(|x| c(*x)).collect(),
                hull: hull.clone(),
            },
            Shape::PaddedPolygon {
                normals,
                offsets,
                radius,
            } => Shape::PaddedPolygon {
                normals: normals.iter().map(cv).collect(),
                offsets: offsets.iter().map(|x| c(*x)).collect(),
                radius: c(*radius),
            },
            Shape::Plane { normal, offset } => Shape::Plane {
                normal: cv(normal),
                offset: c(*offset),
            },
            Shape::Bundle { parts, op } => Shape::Bundle {
                parts: parts.iter().map(|(s, p)| (s.cast(), p.cast())).collect(),
                op: *op,
            },
            Shape::Points { points, normals } => Shape::Points {
                points: points.iter().map(cv).collect(),
                normals: normals.iter().map(cv).collect(),
            },
        }
    }
}

/// Surface properties of a body or static geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material<T: Scalar> {
    /// Coulomb friction coefficient μ ≥ 0.
    pub friction: T,
    /// Coefficient of restitution in [0, 1].
    pub restitution: T,
}

impl<T: Scalar> Default for Material<T> {
    fn default() -> Self {
        Material {
            friction: T::from_re(0.5),
            restitution: T::zero(),
        }
    }
}

impl<T: Scalar> Material<T> {
    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> Material<U> {
        Material {
            friction: U::from_re(self.friction.re()),
            restitution: U::from_re(self.restitution.re()),
        }
    }
}

/// How a contact's coefficient is made from its two shapes' coefficients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Combine {
    /// (a + b) / 2.
    #[default]
    Average,
    /// min(a, b).
    Min,
    /// max(a, b).
    Max,
    /// a · b.
    Multiply,
}

impl Combine {
    /// Combines two coefficients (branches on primal values).
    pub fn apply<T: Scalar>(&self, a: T, b: T) -> T {
        match self {
            Combine::Average => (a + b) * T::from_re(0.5),
            Combine::Min => {
                if a.re() <= b.re() {
                    a
                } else {
                    b
                }
            }
            Combine::Max => {
                if a.re() >= b.re() {
                    a
                } else {
                    b
                }
            }
            Combine::Multiply => a * b,
        }
    }
}

/// Fixed geometry of the world.
#[derive(Clone, Debug, PartialEq)]
pub struct StaticGeometry<T: Scalar> {
    /// Name.
    pub name: String,
    /// Shape, in the frame given by `pose`.
    pub shape: Shape<T>,
    /// Pose of the shape in the world.
    pub pose: Pose<T>,
    /// Surface properties.
    pub material: Material<T>,
}

impl<T: Scalar> StaticGeometry<T> {
    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> StaticGeometry<U> {
        StaticGeometry {
            name: self.name.clone(),
            shape: self.shape.cast(),
            pose: self.pose.cast(),
            material: self.material.cast(),
        }
    }
}

/// A collision shape attached to a body at a fixed pose in the body frame:
/// the shapes of robot links (a link may have several), from the URDF
/// `<collision>` elements. Free bodies keep their single shape in
/// `World::shapes`.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachedShape<T: Scalar> {
    /// Body (link) index in the model.
    pub body: usize,
    /// Pose of the shape in the body frame.
    pub pose: Pose<T>,
    /// The shape.
    pub shape: Shape<T>,
}

impl<T: Scalar> AttachedShape<T> {
    /// Converts to another scalar through primal values.
    pub fn cast<U: Scalar>(&self) -> AttachedShape<U> {
        AttachedShape {
            body: self.body,
            pose: self.pose.cast(),
            shape: self.shape.cast(),
        }
    }
}
