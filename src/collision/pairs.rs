//! The table of closed-form pairs: one row per ordered pair of shape kinds
//! `(a, b)`, giving
//!
//! * `features`: every contact of the pair with its feature index (into a
//!   reused buffer; [`pair_features_into`](super::pair_features_into));
//! * `contact`: one feature alone, at any poses
//!   ([`pair_contact`](super::pair_contact));
//! * `kernel`: the `#[kernel]` of a feature and its selectors
//!   ([`kernels::selectors`](super::kernels::selectors)), from which
//!   `contact::space::partials` takes the exact partials; `None` when the
//!   pair has no kernel (its derivatives then come from dual numbers
//!   through `contact`).
//!
//! A row marked `reversible` also serves `(b, a)`: the table evaluates
//! `(b, a)` and flips every contact ([`Contact::flip`]) and kernel
//! ([`PairKernel::flipped`]) once, here. Planes are `b` only. A pair with
//! no row has no closed form (the contact layer takes the conic program).
//!
//! Adding a closed-form pair: a file `<a>_<b>.rs` holding the function
//! `<a>_<b>` (declared below with `#[path]`) and one row in
//! [`Table::ROWS`].

use super::kernels::{self, PairKernel};
use super::{
    Contact, box_box, box_plane, capsule_capsule, capsule_plane, capsule_segment, capsule_sphere,
    hull_hull, hull_plane, sphere_box, sphere_plane, sphere_sphere, world_plane,
};
use crate::Scalar;
use crate::geometry::{Shape, ShapeKind};
use crate::math::Pose;

/// All contacts of a pair into `out` (empty on entry), each with its
/// feature index; `false` when the shapes have no closed form after all
/// (e.g. a polytope without a hull).
pub type FeaturesFn<T> =
    fn(&Shape<T>, &Pose<T>, &Shape<T>, &Pose<T>, &mut Vec<(usize, Contact<T>)>) -> bool;
/// Contact `feature` of a pair alone (`None`: no such feature).
pub type ContactFn<T> = fn(&Shape<T>, &Pose<T>, &Shape<T>, &Pose<T>, usize) -> Option<Contact<T>>;
/// The kernel and selectors of contact `feature` (primal values; `None`:
/// a configuration the kernel does not cover).
pub type KernelFn =
    fn(&Shape<f64>, &Pose<f64>, &Shape<f64>, &Pose<f64>, usize) -> Option<PairKernel>;

/// One closed-form pair (see the module docs).
pub struct Pair<T: Scalar> {
    /// Kind of shape `a`.
    pub a: ShapeKind,
    /// Kind of shape `b`.
    pub b: ShapeKind,
    /// Whether the row also serves `(b, a)` by flipping.
    pub reversible: bool,
    /// Every contact with its feature index.
    pub features: FeaturesFn<T>,
    /// One feature alone.
    pub contact: ContactFn<T>,
    /// The pair's `#[kernel]` and selectors, if it has one.
    pub kernel: Option<KernelFn>,
}

/// The table of closed-form pairs for the scalar `T`.
pub struct Table<T>(core::marker::PhantomData<T>);

/// A row of a pair with exactly one contact (feature 0), from the function
/// giving it (`None` when the shapes are not of the row's kinds).
macro_rules! single {
    ($a:ident, $b:ident, $f:expr, reversible: $rev:expr, kernel: $k:expr) => {
        Pair {
            a: ShapeKind::$a,
            b: ShapeKind::$b,
            reversible: $rev,
            features: |a, pa, b, pb, out| match $f(a, pa, b, pb) {
                Some(c) => {
                    out.push((0, c));
                    true
                }
                None => false,
            },
            contact: |a, pa, b, pb, feature| {
                if feature == 0 { $f(a, pa, b, pb) } else { None }
            },
            kernel: $k,
        }
    };
}

impl<T: Scalar> Table<T> {
    /// Every closed-form pair.
    pub const ROWS: &'static [Pair<T>] = &[
        single!(Sphere, Plane, sphere_plane_row, reversible: false, kernel: Some(kernels::sphere_plane_selectors)),
        Pair {
            a: ShapeKind::Capsule,
            b: ShapeKind::Plane,
            reversible: false,
            features: capsule_plane_features,
            contact: capsule_plane_contact,
            kernel: Some(kernels::capsule_plane_selectors),
        },
        Pair {
            a: ShapeKind::Box,
            b: ShapeKind::Plane,
            reversible: false,
            features: box_plane_features,
            contact: box_plane_contact,
            kernel: Some(kernels::box_plane_selectors),
        },
        Pair {
            a: ShapeKind::Polytope,
            b: ShapeKind::Plane,
            reversible: false,
            features: hull_plane_features,
            contact: hull_plane_contact,
            kernel: None,
        },
        single!(Sphere, Sphere, sphere_sphere_row, reversible: false, kernel: Some(kernels::sphere_sphere_selectors)),
        single!(Capsule, Sphere, capsule_sphere_row, reversible: true, kernel: Some(kernels::capsule_sphere_selectors)),
        single!(Capsule, Capsule, capsule_capsule_row, reversible: false, kernel: Some(kernels::capsule_capsule_selectors)),
        single!(Sphere, Box, sphere_box_row, reversible: true, kernel: Some(kernels::sphere_box_selectors_row)),
        Pair {
            a: ShapeKind::Box,
            b: ShapeKind::Box,
            reversible: false,
            features: box_box_features,
            contact: box_box_contact,
            kernel: None,
        },
        Pair {
            a: ShapeKind::Polytope,
            b: ShapeKind::Polytope,
            reversible: false,
            features: hull_hull_features,
            contact: hull_hull_contact,
            kernel: None,
        },
    ];

    /// The row of `(a, b)` and whether it is the row of `(b, a)` used
    /// flipped; `None` when the pair has no closed form.
    pub fn lookup(a: ShapeKind, b: ShapeKind) -> Option<(&'static Pair<T>, bool)> {
        let rows = Self::ROWS;
        if let Some(row) = rows.iter().find(|r| r.a == a && r.b == b) {
            return Some((row, false));
        }
        rows.iter()
            .find(|r| r.reversible && r.a == b && r.b == a)
            .map(|row| (row, true))
    }

    /// [`pair_features_into`](super::pair_features_into) through the table.
    pub fn features(
        a: &Shape<T>,
        pose_a: &Pose<T>,
        b: &Shape<T>,
        pose_b: &Pose<T>,
        out: &mut Vec<(usize, Contact<T>)>,
    ) -> bool {
        out.clear();
        let Some((row, flipped)) = Self::lookup(a.kind(), b.kind()) else {
            return false;
        };
        let found = if flipped {
            let found = (row.features)(b, pose_b, a, pose_a, out);
            for (_, c) in out.iter_mut() {
                *c = c.flip();
            }
            found
        } else {
            (row.features)(a, pose_a, b, pose_b, out)
        };
        if !found {
            out.clear();
        }
        found
    }

    /// [`pair_contact`](super::pair_contact) through the table.
    pub fn contact(
        a: &Shape<T>,
        pose_a: &Pose<T>,
        b: &Shape<T>,
        pose_b: &Pose<T>,
        feature: usize,
    ) -> Option<Contact<T>> {
        let (row, flipped) = Self::lookup(a.kind(), b.kind())?;
        if flipped {
            (row.contact)(b, pose_b, a, pose_a, feature).map(|c| c.flip())
        } else {
            (row.contact)(a, pose_a, b, pose_b, feature)
        }
    }
}

/// [`kernels::selectors`] through the table.
pub fn kernel(
    a: &Shape<f64>,
    pose_a: &Pose<f64>,
    b: &Shape<f64>,
    pose_b: &Pose<f64>,
    feature: usize,
) -> Option<PairKernel> {
    let (row, flipped) = Table::<f64>::lookup(a.kind(), b.kind())?;
    let kernel = row.kernel?;
    if flipped {
        kernel(b, pose_b, a, pose_a, feature)?.flipped()
    } else {
        kernel(a, pose_a, b, pose_b, feature)
    }
}

fn sphere_plane_row<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
) -> Option<Contact<T>> {
    let (Shape::Sphere { radius }, Shape::Plane { normal, offset }) = (a, b) else {
        return None;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    Some(sphere_plane::sphere_plane(&pa.translation, *radius, &n, d))
}

fn sphere_sphere_row<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
) -> Option<Contact<T>> {
    let (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) = (a, b) else {
        return None;
    };
    Some(sphere_sphere::sphere_sphere(
        &pa.translation,
        *ra,
        &pb.translation,
        *rb,
    ))
}

fn capsule_sphere_row<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
) -> Option<Contact<T>> {
    let (
        Shape::Capsule {
            radius,
            half_length,
        },
        Shape::Sphere { radius: rb },
    ) = (a, b)
    else {
        return None;
    };
    let (e0, e1) = capsule_segment(*half_length, pa);
    Some(capsule_sphere::capsule_sphere(
        &e0,
        &e1,
        *radius,
        &pb.translation,
        *rb,
    ))
}

fn capsule_capsule_row<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
) -> Option<Contact<T>> {
    let (
        Shape::Capsule {
            radius: ra,
            half_length: la,
        },
        Shape::Capsule {
            radius: rb,
            half_length: lb,
        },
    ) = (a, b)
    else {
        return None;
    };
    let (a0, a1) = capsule_segment(*la, pa);
    let (b0, b1) = capsule_segment(*lb, pb);
    Some(capsule_capsule::capsule_capsule(
        &a0, &a1, *ra, &b0, &b1, *rb,
    ))
}

fn sphere_box_row<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
) -> Option<Contact<T>> {
    let (Shape::Sphere { radius }, Shape::Box { half_extents }) = (a, b) else {
        return None;
    };
    Some(sphere_box::sphere_box(
        &pa.translation,
        *radius,
        pb,
        half_extents,
    ))
}

fn capsule_plane_features<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let (
        Shape::Capsule {
            radius,
            half_length,
        },
        Shape::Plane { normal, offset },
    ) = (a, b)
    else {
        return false;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    let (e0, e1) = capsule_segment(*half_length, pa);
    out.extend(
        capsule_plane::capsule_plane(&e0, &e1, *radius, &n, d)
            .into_iter()
            .enumerate(),
    );
    true
}

fn capsule_plane_contact<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    let (
        Shape::Capsule {
            radius,
            half_length,
        },
        Shape::Plane { normal, offset },
    ) = (a, b)
    else {
        return None;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    let (e0, e1) = capsule_segment(*half_length, pa);
    let e = if feature == 0 { e0 } else { e1 };
    Some(sphere_plane::sphere_plane(&e, *radius, &n, d))
}

fn box_plane_features<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let (Shape::Box { half_extents }, Shape::Plane { normal, offset }) = (a, b) else {
        return false;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    out.extend(
        box_plane::box_plane(pa, half_extents, &n, d)
            .into_iter()
            .enumerate(),
    );
    true
}

fn box_plane_contact<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    let (Shape::Box { half_extents }, Shape::Plane { normal, offset }) = (a, b) else {
        return None;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    Some(box_plane::box_plane_vertex(
        pa,
        half_extents,
        &n,
        d,
        feature,
    ))
}

fn hull_plane_features<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let (
        Shape::Polytope {
            hull: Some(hull), ..
        },
        Shape::Plane { normal, offset },
    ) = (a, b)
    else {
        return false;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    hull_plane::hull_plane_into(pa, hull, &n, d, out);
    true
}

fn hull_plane_contact<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    let (
        Shape::Polytope {
            hull: Some(hull), ..
        },
        Shape::Plane { normal, offset },
    ) = (a, b)
    else {
        return None;
    };
    let (n, d) = world_plane(normal, *offset, pb);
    hull_plane::hull_plane_vertex(pa, hull, &n, d, feature)
}

fn box_box_features<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let (Shape::Box { half_extents: ha }, Shape::Box { half_extents: hb }) = (a, b) else {
        return false;
    };
    out.extend(box_box::box_box(pa, ha, pb, hb));
    true
}

fn box_box_contact<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    let (Shape::Box { half_extents: ha }, Shape::Box { half_extents: hb }) = (a, b) else {
        return None;
    };
    box_box::box_box_feature(pa, ha, pb, hb, feature)
}

fn hull_hull_features<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    out: &mut Vec<(usize, Contact<T>)>,
) -> bool {
    let (Shape::Polytope { hull: Some(ha), .. }, Shape::Polytope { hull: Some(hb), .. }) = (a, b)
    else {
        return false;
    };
    thread_local! {
        static SCRATCH: std::cell::RefCell<hull_hull::HullScratch> = Default::default();
    }
    SCRATCH.with(|s| hull_hull::hull_hull_into(pa, ha, pb, hb, &mut s.borrow_mut(), out))
}

fn hull_hull_contact<T: Scalar>(
    a: &Shape<T>,
    pa: &Pose<T>,
    b: &Shape<T>,
    pb: &Pose<T>,
    feature: usize,
) -> Option<Contact<T>> {
    let (Shape::Polytope { hull: Some(ha), .. }, Shape::Polytope { hull: Some(hb), .. }) = (a, b)
    else {
        return None;
    };
    hull_hull::hull_hull_feature(pa, ha, pb, hb, feature)
}
