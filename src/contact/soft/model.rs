//! The soft-minimum contact model's formulas (Beker et al., eqs. 8–23),
//! generic over the scalar and safe in every one of them (see the module
//! docs of `soft`).

use super::cloud::Cloud;
use super::tree::Tree;
use crate::math::Vec3;
use crate::Scalar;

/// The damping profile `d(x)`, `x = v_n / v_d` (eqs. 16–17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DampingProfile {
    /// C² everywhere: `1 − x` for `x ≤ 0`, `(1 − x/2)³(1 + x/2)` on
    /// `[0, 2]`, 0 beyond (the quintic with the published profile's value
    /// and slope at 0 and 2 and zero curvature at both ends).
    #[default]
    Smoothed,
    /// As published: `1 − x` for `x ≤ 0`, `(x − 2)²/4` on `(0, 2]`, 0
    /// beyond; once differentiable (its curvature jumps from 0 to ½ at
    /// `x = 0` and from ½ to 0 at `x = 2`).
    Published,
}

/// The model's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constants {
    /// `k` (N/m).
    pub stiffness: f64,
    /// `ε₃` (m).
    pub softness: f64,
    /// `v_d` (m/s).
    pub damping_velocity: f64,
    /// `v_s` (m/s).
    pub stiction_velocity: f64,
    /// `ε₁` (m²).
    pub distance_smoothing: f64,
    /// `ε₂` (m).
    pub separation_smoothing: f64,
    /// The damping profile.
    pub profile: DampingProfile,
}

/// `s⁺_ε(x) = ε ln(1 + exp(x/ε))`, stable for every `x` (the large
/// argument's exponent is never formed: `max(x, 0) + ε ln(1 + e^{−|x|/ε})`,
/// the branch on the primal sign; both branches are the same analytic
/// function, so derivatives are exact).
pub fn softplus<T: Scalar>(x: T, eps: T) -> T {
    if x.re() > 0.0 {
        x + eps * (-x / eps).exp().ln_1p()
    } else {
        eps * (x / eps).exp().ln_1p()
    }
}

/// The damping profile `d(x)` (eqs. 16–17 or the smoothed variant).
pub fn damping<T: Scalar>(x: T, profile: DampingProfile) -> T {
    let xr = x.re();
    if xr <= 0.0 {
        return T::one() - x;
    }
    if xr > 2.0 {
        return T::zero();
    }
    match profile {
        DampingProfile::Published => {
            let y = x - T::from_re(2.0);
            y * y * T::from_re(0.25)
        }
        DampingProfile::Smoothed => {
            let s = x * T::from_re(0.5);
            let a = T::one() - s;
            a * a * a * (T::one() + s)
        }
    }
}

/// Softmin weights `σ_ε(−a)` of `a` into `w`: `exp(−(aᵢ − m)/ε) / Σ`, with
/// the shift `m` the primal minimum (a constant, so derivatives are exact).
/// A weight below `e^{−60}` of the largest is set to zero without forming
/// the exponential (decided on primal values; its contribution,
/// derivatives included, is below f64 resolution).
pub fn softmin_weights<T: Scalar>(a: &[T], eps: T, w: &mut Vec<T>) {
    w.clear();
    let m = a.iter().map(|x| x.re()).fold(f64::INFINITY, f64::min);
    let cut = 60.0 * eps.re();
    let m = T::from_re(m);
    let mut sum = T::zero();
    for x in a {
        if x.re() - m.re() > cut {
            w.push(T::zero());
            continue;
        }
        let e = (-(*x - m) / eps).exp();
        sum += e;
        w.push(e);
    }
    for x in w.iter_mut() {
        *x /= sum;
    }
}

/// The soft signed distance `φ̂_S(p)` (eqs. 8–9) of the cloud given in
/// world coordinates (`points`, `normals`).
pub fn ssdf<T: Scalar>(points: &[Vec3<T>], normals: &[Vec3<T>], p: &Vec3<T>, eps1: T) -> T {
    let mut d = Vec::with_capacity(points.len());
    for q in points {
        d.push((p - q).norm_squared());
    }
    let mut w = Vec::with_capacity(points.len());
    softmin_weights(&d, eps1, &mut w);
    let mut phi = T::zero();
    for i in 0..points.len() {
        phi += w[i] * normals[i].dot(&(p - points[i]));
    }
    phi
}

/// [`ssdf`] of a [`Cloud`].
pub fn cloud_ssdf<T: Scalar>(c: &Cloud<T>, p: &Vec3<T>, eps1: T) -> T {
    ssdf(&c.points, &c.normals, p, eps1)
}

/// The pair's soft distance `σ_ε₂(−Φ)ᵀ Φ` (eq. 11's relaxation) of a
/// separation field.
pub fn soft_distance<T: Scalar>(field: &[T], eps2: T) -> T {
    let mut w = Vec::with_capacity(field.len());
    softmin_weights(field, eps2, &mut w);
    field.iter().zip(&w).fold(T::zero(), |s, (f, w)| s + *f * *w)
}

/// A smooth norm `√(v_s² + ‖v‖²)`: never zero, so the friction's
/// derivatives are finite at zero tangential velocity.
fn smooth_norm<T: Scalar>(v: &Vec3<T>, vs: T) -> T {
    (vs * vs + v.norm_squared()).sqrt()
}

/// The point–plane force `λ(p, v, pᵢ, nᵢ)` (eqs. 14–20) on the point, at
/// signed distance `phi` with relative velocity `v` (the point's minus the
/// plane's) and friction coefficient `mu`.
pub fn point_plane<T: Scalar>(k: &Constants, phi: T, n: &Vec3<T>, v: &Vec3<T>, mu: T) -> Vec3<T> {
    let c = T::from_re(k.stiffness) * softplus(-phi, T::from_re(k.softness));
    let vn = n.dot(v);
    let ln = c * damping(vn / T::from_re(k.damping_velocity), k.profile);
    let vt = v - n * vn;
    let lt = vt * (-mu * ln / smooth_norm(&vt, T::from_re(k.stiction_velocity)));
    n * ln + lt
}

/// One side of a pair: a cloud in world coordinates and the rigid motion
/// that carries it (centre of mass, linear and angular velocity).
pub struct Side<'a, T: Scalar> {
    /// Points (world).
    pub points: &'a [Vec3<T>],
    /// Normals (world).
    pub normals: &'a [Vec3<T>],
    /// Centre of mass (world); irrelevant for static geometry.
    pub centre: Vec3<T>,
    /// Linear velocity of the centre.
    pub linear: Vec3<T>,
    /// Angular velocity (world).
    pub angular: Vec3<T>,
    /// A kd-tree of the points' primal values (world): an SSDF against
    /// this side visits only the points whose softmin weight can be
    /// nonzero (module docs of `soft`); `None`: every point.
    pub tree: Option<&'a Tree>,
}

impl<T: Scalar> Side<'_, T> {
    /// Velocity of the material point at `p`.
    pub fn velocity_at(&self, p: &Vec3<T>) -> Vec3<T> {
        self.linear + self.angular.cross(&(p - self.centre))
    }
}

/// Reused buffers of [`point_entry`] (no allocation once grown).
#[derive(Clone, Debug)]
pub struct Scratch<T: Scalar> {
    d: Vec<T>,
    w: Vec<T>,
    idx: Vec<usize>,
}

impl<T: Scalar> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            d: Vec::new(),
            w: Vec::new(),
            idx: Vec::new(),
        }
    }
}

/// Relative widening of the kd-tree's query radius: the tree's squared
/// distances (f64) and the scalar's primal ones may differ in the last
/// bits (another summation order), so the candidates are a superset of
/// the points that pass the softmin's own test.
const WIDEN: f64 = 1e-9;

/// The field entry of one point `p` of side `x` against side `y`'s SSDF:
/// `(φ̂_y(p), Λ_y(p))`, the soft distance and the force on `x`'s material
/// point at `p` (eqs. 21–22 with the sign that pushes `p` out of `y`: the
/// force on `x` is `+Σ σᵢ λᵢ`, the reaction `−Σ σᵢ λᵢ` acts on `y` at the
/// same point). The force is evaluated as `force` says (else zero); the
/// flag returned says whether it was.
///
/// With `y.tree`, only `y`'s points at squared distance
/// `≤ (d_min + 60 ε₁)(1 + 1e-9)` are visited (`d_min` the nearest, from
/// the tree), in index order: every point whose softmin weight is not
/// zeroed by [`softmin_weights`] (`dᵢ − d_min ≤ 60 ε₁`) is among them, so
/// the result is the full evaluation's, term by term and in the same
/// order.
pub fn point_entry<T: Scalar>(
    k: &Constants,
    p: &Vec3<T>,
    x: &Side<'_, T>,
    y: &Side<'_, T>,
    mu: T,
    force: Force,
    s: &mut Scratch<T>,
) -> (T, Vec3<T>, bool) {
    let eps1 = T::from_re(k.distance_smoothing);
    let Scratch { d, w, idx } = s;
    idx.clear();
    match y.tree {
        Some(tree) => {
            let pr = [p[0].re(), p[1].re(), p[2].re()];
            let dmin = tree.nearest(&pr);
            let r2 = (dmin + 60.0 * k.distance_smoothing) * (1.0 + WIDEN);
            tree.within(&pr, r2, idx);
            idx.sort_unstable();
        }
        None => idx.extend(0..y.points.len()),
    }
    d.clear();
    for &i in idx.iter() {
        d.push((p - y.points[i]).norm_squared());
    }
    softmin_weights(d, eps1, w);
    let mut phi = T::zero();
    for (&i, wi) in idx.iter().zip(w.iter()) {
        // zero weights (below e^-60 of the largest, see softmin_weights)
        if wi.re() == 0.0 {
            continue;
        }
        phi += *wi * y.normals[i].dot(&(p - y.points[i]));
    }
    let want = match force {
        Force::Always => true,
        Force::Never => false,
        Force::Within { bound, cut } => phi.re() - bound <= cut,
    };
    let mut f = Vec3::zeros();
    if want {
        let v = x.velocity_at(p) - y.velocity_at(p);
        for (&i, wi) in idx.iter().zip(w.iter()) {
            if wi.re() == 0.0 {
                continue;
            }
            let n = &y.normals[i];
            let phi_i = n.dot(&(p - y.points[i]));
            f += point_plane(k, phi_i, n, &v, mu) * *wi;
        }
    }
    (phi, f, want)
}

/// Whether [`point_entry`] evaluates the force.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Force {
    /// Always.
    Always,
    /// Never (the SSDF only).
    Never,
    /// When `φ̂ − bound ≤ cut` (primal values): with `bound` at least the
    /// separation field's minimum and `cut = 60 ε₂`, every entry whose
    /// field weight is not zeroed.
    Within {
        /// An upper bound of the field's minimum.
        bound: f64,
        /// The softmin's cut.
        cut: f64,
    },
}

/// The point entry against a half-space `n·x ≤ d` (a one-point cloud: the
/// plane distance exactly), static.
pub fn plane_entry<T: Scalar>(
    k: &Constants,
    p: &Vec3<T>,
    x: &Side<'_, T>,
    n: &Vec3<T>,
    d: T,
    mu: T,
) -> (T, Vec3<T>) {
    let phi = n.dot(p) - d;
    let v = x.velocity_at(p);
    (phi, point_plane(k, phi, n, &v, mu))
}
