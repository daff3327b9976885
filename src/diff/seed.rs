//! Naming the inputs of a derivative and seeding them into a world.

use crate::Scalar;
use crate::geometry::Shape;
use crate::math::DVec;
use crate::sim::{SimError, State, World};

use super::DiffError;

pub use crate::contact::Param;

/// How far parameter `p` may move below and above its value in `world`
/// and stay inside its domain: friction coefficients and restitutions are
/// at least 0, restitutions at most 1; masses, inertias, shape sizes and
/// the time step are positive. Unbounded sides (state, control, gravity)
/// are infinite. Finite differences take a one-sided difference on a side
/// with less room than their largest step (`fd` at μ = 0 must not solve a
/// problem with a negative friction coefficient).
pub fn domain_room(world: &World<f64>, p: &Param) -> (f64, f64) {
    let inf = f64::INFINITY;
    let nb = world.model.bodies.len();
    match *p {
        Param::Mass(b) if b < nb => (world.model.bodies[b].inertia.mass, inf),
        Param::Inertia(b, k) if b < nb && k < 3 => {
            (world.model.bodies[b].inertia.inertia[(k, k)], inf)
        }
        Param::Friction(b) if b < nb => (world.materials[b].friction, inf),
        Param::Restitution(b) if b < nb => {
            let e = world.materials[b].restitution;
            (e, 1.0 - e)
        }
        Param::Shape(b, k) if b < nb => match &world.shapes[b] {
            // a cone's half angle lies in (0, π/2)
            Some(s @ Shape::Cone { .. }) if k == 1 => {
                let v = s.params()[1].1;
                (v, std::f64::consts::FRAC_PI_2 - v)
            }
            Some(s) => (s.params().get(k).map_or(inf, |p| p.1), inf),
            None => (inf, inf),
        },
        Param::Dt => (world.dt, inf),
        _ => (inf, inf),
    }
}

/// The world, state and control cast to `T` with `deltas[j]` added to
/// parameter `params[j]` (configuration directions on the manifold).
///
/// With dual `deltas` (zero primal, unit derivative parts) this seeds the
/// derivative directions; with real `deltas` it perturbs (finite
/// differences).
pub fn seeded<T: Scalar>(
    world: &World<f64>,
    state: &State<f64>,
    u: &DVec<f64>,
    params: &[Param],
    deltas: &[T],
) -> Result<(World<T>, State<T>, DVec<T>), DiffError> {
    assert_eq!(params.len(), deltas.len(), "one delta per parameter");
    let mut w = world.cast::<T>();
    let mut x = state.cast::<T>();
    let mut ut = u.map(T::from_re);
    let nv = world.model.nv;
    let nb = world.model.bodies.len();
    let mut dq = DVec::<T>::zeros(nv);
    let mut any_q = false;
    let bad = |p: &Param| DiffError::BadParam(format!("{p:?} does not exist in this world"));
    for (p, d) in params.iter().zip(deltas) {
        let d = *d;
        // a perturbation must stay inside the parameter's domain: a
        // negative mass or friction coefficient is not a world to simulate
        let (below, above) = domain_room(world, p);
        let strict = matches!(
            p,
            Param::Mass(_) | Param::Inertia(..) | Param::Shape(..) | Param::Dt
        );
        let r = d.re();
        let outside = if strict { r <= -below } else { r < -below } || r > above;
        if outside && below.is_finite() | above.is_finite() {
            return Err(DiffError::BadParam(format!(
                "{p:?} moved by {r:e} leaves its domain (room {below:e} below, {above:e} above: \
                 masses, inertias, sizes and dt > 0, friction >= 0, restitution in [0, 1])"
            )));
        }
        match *p {
            Param::Q(i) if i < nv => {
                dq[i] += d;
                any_q = true;
            }
            Param::V(i) if i < nv => x.v[i] += d,
            Param::U(i) if i < nv => ut[i] += d,
            Param::Mass(b) if b < nb => w.model.bodies[b].inertia.mass += d,
            Param::Inertia(b, k) if b < nb && k < 3 => {
                w.model.bodies[b].inertia.inertia[(k, k)] += d
            }
            Param::Friction(b) if b < nb => w.materials[b].friction += d,
            Param::Restitution(b) if b < nb => w.materials[b].restitution += d,
            Param::Shape(b, k) if b < nb => {
                let s = w.shapes[b]
                    .as_mut()
                    .and_then(|s| s.param_mut(k))
                    .ok_or_else(|| bad(p))?;
                *s += d;
            }
            Param::Gravity(k) if k < 3 => {
                w.gravity[k] += d;
                w.model.gravity[k] += d;
            }
            Param::Dt => w.dt += d,
            _ => return Err(bad(p)),
        }
    }
    if any_q {
        x.q = crate::dynamics::free::integrate_model(&w.model, &x.q, &dq, T::one())
            .map_err(SimError::from)?;
    }
    Ok((w, x, ut))
}
