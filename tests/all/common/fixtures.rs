//! Scene pieces shared by the contact tests: materials, the ground plane,
//! inertias of uniform shapes.

use dualsim::math::{Mat3, Pose, Vec3};
use dualsim::prelude::*;

/// A material of friction `mu` and no restitution.
pub fn mat(mu: f64) -> Material<f64> {
    Material {
        friction: mu,
        restitution: 0.0,
    }
}

/// The plane z = 0 with friction `mu`.
pub fn ground(mu: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat(mu),
    }
}

/// Inertia of a uniform cube of mass `m` and edge `edge`.
pub fn cube_inertia(m: f64, edge: f64) -> Mat3<f64> {
    Mat3::identity() * (m * edge * edge / 6.0)
}

/// Inertia of a uniform ball of mass `m` and radius `r`.
pub fn sphere_inertia(m: f64, r: f64) -> Mat3<f64> {
    Mat3::identity() * (0.4 * m * r * r)
}
