//! One generic test body instantiated for every scalar type (nalgebra's
//! `gen_tests!` pattern), and the zero-safe operations at exactly zero.

use crate::common::counted::{self, Counted};
use dualsim::contact::mehrotra::{FactorCounts, factorizations};
use dualsim::math::{Mat3, Vec3, so3};
use dualsim::prelude::*;
use dualsim::scalar::{safe_norm, safe_normalize};
use nalgebra::{Const, U1};
use num_dual::{Dual2_64, Dual64, DualSVec64, HyperDual64};

/// A world with a tumbling asymmetric body and a projectile under an
/// applied force, built in f64.
fn world() -> (World<f64>, State<f64>, DVec<f64>) {
    let mut w = World::<f64>::new(0.01);
    let i = Mat3::from_diagonal(&Vec3::new(0.4, 0.9, 1.2));
    w.add_body("tumbler", 1.0, i, None, Material::default())
        .unwrap();
    w.add_body(
        "ball",
        0.5,
        Mat3::identity() * 0.008,
        None,
        Material::default(),
    )
    .unwrap();
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]);
    x.v.copy_from_slice(&[
        0.3, 0.0, 2.0, 0.05, 3.0, 0.02, 1.0, -1.0, 4.0, 0.0, 0.0, 0.5,
    ]);
    let mut u = w.zero_control();
    u[6] = 0.2; // force on the ball along x
    u[11] = 0.01; // torque on the ball about z
    (w, x, u)
}

/// Steps the same world in `T` and returns the primal final state.
fn run_in<T: Scalar>(steps: usize) -> (Vec<f64>, Vec<f64>) {
    let (w, x, u) = world();
    let wt = w.cast::<T>();
    let xt = x.cast::<T>();
    let ut = u.map(T::from_re);
    let traj = rollout(&wt, &xt, &Controls::Constant(ut), steps).expect("free flight steps");
    let last = traj.last();
    (
        last.q.iter().map(|e| e.re()).collect(),
        last.v.iter().map(|e| e.re()).collect(),
    )
}

fn reference(steps: usize) -> (Vec<f64>, Vec<f64>) {
    run_in::<f64>(steps)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

macro_rules! gen_tests {
    ($($name:ident: $t:ty, $tol:expr;)*) => {$(
        #[test]
        fn $name() {
            let steps = 200;
            let (q, v) = run_in::<$t>(steps);
            let (qr, vr) = reference(steps);
            let dq = max_diff(&q, &qr);
            let dv = max_diff(&v, &vr);
            assert!(dq <= $tol && dv <= $tol, "{}: |Δq| = {dq:e}, |Δv| = {dv:e}", stringify!($t));
            // and the run did something: the ball moved
            assert!((q[7] - 1.0).abs() > 1.0);
        }
    )*};
}

/// The f64 reference against the discrete closed form of the scheme
/// (`dynamics::free`, `math::integrate`), so that every other scalar is
/// compared with a checked answer, not with itself:
///
/// * linear part (symplectic Euler, both bodies): `v_n = v₀ + n h a`,
///   `p_n = p₀ + n h v₀ + h² a n(n + 1)/2` with `a = g + f/m`;
/// * the ball's rotation (isotropic inertia `j`, torque `τ` about z, so
///   the gyroscopic term vanishes and ω stays along z): the discrete
///   momentum `s = c(ω) ω` with `c(ω) = √(1 − h²ω²/4)` grows by `h τ / j`
///   per step, so `s_n = c(ω₀) ω₀ + n h τ / j` and
///   `ω_n² = 2 (1 − √(1 − h² s_n²)) / h²`; each step rotates about z by
///   `θ_k = 2 asin(h ω_k / 2)` (the map φ), so the attitude is
///   `[cos(Θ/2), 0, 0, sin(Θ/2)]` with `Θ = Σ_{k=1..n} θ_k`.
///
/// Tolerance 1e-12: round-off of 200 steps on values of order 10
/// (measured 2.8e-14), far below any term of the
/// scheme (`h² a ≈ 1e-3`).
#[test]
fn steps_f64_match_the_closed_form() {
    let (w, x, u) = world();
    let n = 200;
    let (q, v) = run_in::<f64>(n);
    let h = w.dt;
    let nf = n as f64;
    let g = Vec3::new(0.0, 0.0, -9.81);
    let mut err: f64 = 0.0;
    for (body, m) in [(0, 1.0), (1, 0.5)] {
        let (iq, iv) = (7 * body, 6 * body);
        let f = Vec3::new(u[iv], u[iv + 1], u[iv + 2]);
        let a = g + f / m;
        for d in 0..3 {
            let (p0, v0) = (x.q[iq + d], x.v[iv + d]);
            let vn = v0 + nf * h * a[d];
            let pn = p0 + nf * h * v0 + h * h * a[d] * nf * (nf + 1.0) / 2.0;
            err = err.max((v[iv + d] - vn).abs()).max((q[iq + d] - pn).abs());
        }
    }
    // the ball's spin about z
    let (j, tau, w0) = (0.008, u[11], x.v[11]);
    let c = |w: f64| (1.0 - h * h * w * w / 4.0).sqrt();
    let omega = |k: f64| {
        let s = c(w0) * w0 + k * h * tau / j;
        (2.0 * (1.0 - (1.0 - h * h * s * s).sqrt()) / (h * h)).sqrt()
    };
    let theta: f64 = (1..=n)
        .map(|k| 2.0 * (h * omega(k as f64) / 2.0).asin())
        .sum();
    let wn = omega(nf);
    err = err.max((v[9] - 0.0).abs()).max((v[10] - 0.0).abs());
    err = err.max((v[11] - wn).abs());
    let quat = [(theta / 2.0).cos(), 0.0, 0.0, (theta / 2.0).sin()];
    for (i, e) in quat.iter().enumerate() {
        err = err.max((q[10 + i] - e).abs());
    }
    println!("f64 vs the closed form after {n} steps: {err:e} (ω_n = {wn}, Θ = {theta})");
    assert!(err <= 1e-12, "f64 vs the closed form: {err:e}");
    // and the run did something: the ball moved and spun up
    assert!((q[7] - 1.0).abs() > 1.0 && wn > 2.0 * w0);
}

gen_tests! {
    steps_f32: f32, 2e-3;
    steps_dual64: Dual64, 1e-13;
    steps_dualsvec8: DualSVec64<8>, 1e-13;
    steps_hyperdual64: HyperDual64, 1e-13;
    steps_dual2_64: Dual2_64, 1e-13;
    steps_custom_counted: Counted, 1e-13;
}

#[test]
fn custom_scalar_counts_its_operations() {
    let before = counted::ops();
    let _ = run_in::<Counted>(10);
    let n = counted::ops() - before;
    // Two bodies, ten steps, a few Newton iterations each: thousands of flops.
    assert!(n > 1_000, "counted {n} operations");
}

// ---- zero-safe operations at exactly zero ----

#[test]
fn safe_norm_gradient_at_zero_is_finite_and_zero() {
    // d‖x‖ at 0 is the subdifferential (unit ball); safe_norm returns its
    // minimum-norm element, 0.
    for i in 0..3 {
        let mut x = Vec3::<Dual64>::zeros();
        x[i] = Dual64::new(0.0, 1.0);
        let n = safe_norm(&x);
        assert_eq!((n.re, n.eps), (0.0, 0.0));
        let mut xh = Vec3::<HyperDual64>::zeros();
        xh[i] = HyperDual64::new(0.0, 1.0, 1.0, 0.0);
        let nh = safe_norm(&xh);
        assert!(nh.is_all_finite());
        assert_eq!((nh.eps1, nh.eps2, nh.eps1eps2), (0.0, 0.0, 0.0));
    }
    assert!(safe_normalize(&Vec3::<Dual64>::zeros()).is_none());
    // Away from zero it is the norm with the usual gradient x/‖x‖.
    let x = Vec3::new(Dual64::new(3.0, 1.0), Dual64::from(4.0), Dual64::from(0.0));
    let n = safe_norm(&x);
    assert_eq!(n.re, 5.0);
    assert!((n.eps - 0.6).abs() < 1e-15);
}

/// Quaternion exp: d exp(ω)/dω at 0 = [0; ½ I]; second derivative of the
/// scalar part: ∂² cos(‖ω‖/2)/∂ωᵢ∂ωⱼ = −δᵢⱼ/4.
#[test]
fn exp_derivatives_at_zero_are_the_analytic_limits() {
    for i in 0..3 {
        let mut w = Vec3::<Dual64>::zeros();
        w[i] = Dual64::new(0.0, 1.0);
        let q = so3::exp(&w);
        assert_eq!(q.w.eps, 0.0);
        let v = q.imag();
        for j in 0..3 {
            let expect = if i == j { 0.5 } else { 0.0 };
            assert!(v[j].is_all_finite());
            assert!(
                (v[j].eps - expect).abs() < 1e-15,
                "d q_{j} / d w_{i} = {}",
                v[j].eps
            );
        }
        for j in 0..3 {
            // mixed second derivatives with HyperDual: eps1 along i, eps2 along j
            let mut wh = Vec3::<HyperDual64>::zeros();
            wh[i] += HyperDual64::new(0.0, 1.0, 0.0, 0.0);
            wh[j] += HyperDual64::new(0.0, 0.0, 1.0, 0.0);
            let qh = so3::exp(&wh);
            assert!(qh.w.is_all_finite() && qh.imag().iter().all(|x| x.is_all_finite()));
            let expect = if i == j { -0.25 } else { 0.0 };
            assert!(
                (qh.w.eps1eps2 - expect).abs() < 1e-15,
                "d2 w/dw{i}dw{j} = {}",
                qh.w.eps1eps2
            );
            // the vector part is odd in ω: its second derivatives vanish at 0
            for k in 0..3 {
                assert!(qh.imag()[k].eps1eps2.abs() < 1e-15);
            }
        }
    }
}

/// Rotation log at the identity: d log(q)/d u = 2 I (u = vector part) and
/// the Rodrigues matrix exp has d R/d ωᵢ = [eᵢ]× at 0.
#[test]
fn log_derivatives_at_identity_are_the_analytic_limits() {
    for i in 0..3 {
        let mut q = so3::identity::<Dual64>();
        q.coords[i] = Dual64::new(0.0, 1.0); // coords = [x, y, z, w]
        let w = so3::log(&q);
        for j in 0..3 {
            let expect = if i == j { 2.0 } else { 0.0 };
            assert!(w[j].is_all_finite());
            assert!((w[j].eps - expect).abs() < 1e-15);
        }
        let mut qh = so3::identity::<HyperDual64>();
        qh.coords[i] = HyperDual64::new(0.0, 1.0, 1.0, 0.0);
        let wh = so3::log(&qh);
        // log along u_i at w = 1: ω = 2 atan(s)/s · u with s = |u|; ∂²/∂uᵢ² at 0 = 0
        assert!(wh.iter().all(|x| x.is_all_finite()));
        assert!(wh[i].eps1eps2.abs() < 1e-15);

        let mut w = Vec3::<Dual64>::zeros();
        w[i] = Dual64::new(0.0, 1.0);
        let r = so3::exp_matrix(&w);
        let mut e = Vec3::zeros();
        e[i] = 1.0;
        let expect = dualsim::math::skew(&e);
        let got = r.map(|x| x.eps);
        assert!((got - expect).abs().max() < 1e-15);
    }
}

/// DualSVec seeds: the gradient of the rotation of a vector at ω = 0.
#[test]
fn rotate_gradient_at_zero_with_dualsvec() {
    let w = Vec3::new(
        DualSVec64::<3>::from_re(0.0).derivative(0),
        DualSVec64::<3>::from_re(0.0).derivative(1),
        DualSVec64::<3>::from_re(0.0).derivative(2),
    );
    let q = so3::exp(&w);
    let v = Vec3::new(1.0, 2.0, 3.0).map(DualSVec64::<3>::from_re);
    let r = so3::rotate(&q, &v);
    // d(R v)/dω at 0 = −[v]×
    let expect = -dualsim::math::skew(&Vec3::new(1.0, 2.0, 3.0));
    for row in 0..3 {
        let g = r[row].eps.unwrap_generic(Const::<3>, U1);
        for col in 0..3 {
            assert!((g[col] - expect[(row, col)]).abs() < 1e-14);
        }
    }
}

/// The contact solver runs in a user's own scalar type too: the sphere
/// drop onto a fixed sphere, in `Counted` and in `HyperDual64`, gives the
/// f64 trajectory.
#[test]
fn contact_steps_in_custom_and_dual_scalars() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/sphere_drop.toml");
    let s = dualsim::scene::load(&path).unwrap();
    let reference = rollout(&s.world, &s.initial, &s.controls, s.steps).unwrap();
    fn run<T: Scalar>(s: &dualsim::scene::Scene) -> Vec<f64> {
        let w = s.world.cast::<T>();
        let x = s.initial.cast::<T>();
        let c = Controls::Constant(w.zero_control());
        rollout(&w, &x, &c, s.steps)
            .unwrap()
            .last()
            .q
            .iter()
            .map(|e| e.re())
            .collect()
    }
    let r: Vec<f64> = reference.last().q.iter().copied().collect();
    assert!(max_diff(&run::<Counted>(&s), &r) < 1e-12);
    assert!(max_diff(&run::<HyperDual64>(&s), &r) < 1e-12);
    assert!(
        (r[2] - 1.0).abs() < 1e-4,
        "the ball rests on the fixed sphere"
    );
}

/// A `k × k` layer of touching spheres (r = 0.1 m, 1 kg, μ = 0.5) on the
/// ground, settled for 10 steps and the corner sphere pushed sideways: one
/// island of `k²` bodies (`6 k²` rows of the reduced system).
fn pushed_layer(k: usize) -> (World<f64>, State<f64>, DVec<f64>) {
    use crate::common::fixtures::{ground, mat, sphere_inertia};
    let r = 0.1;
    let mut w = World::<f64>::new(0.01);
    let mut pos = Vec::new();
    for i in 0..k * k {
        pos.push([(i % k) as f64 * 2.0 * r, (i / k) as f64 * 2.0 * r, r]);
        let shape = Some(Shape::Sphere { radius: r });
        w.add_body(
            &format!("s{i}"),
            1.0,
            sphere_inertia(1.0, r),
            shape,
            mat(0.5),
        )
        .unwrap();
    }
    w.statics.push(ground(0.5));
    let u = w.zero_control();
    let x0 = State::at_rest(&w.model, &pos);
    let traj = rollout(&w, &x0, &Controls::Constant(u.clone()), 10).unwrap();
    let mut x = traj.last().clone();
    x.v[0] = 0.3;
    (w, x, u)
}

/// The reduced systems this thread factored by each path while `f` ran.
fn paths_of<R>(f: impl FnOnce() -> R) -> (R, FactorCounts) {
    let before = factorizations();
    let r = f();
    let after = factorizations();
    let counts = FactorCounts {
        generic: after.generic - before.generic,
        faer_dense: after.faer_dense - before.faer_dense,
        faer_sparse: after.faer_sparse - before.faer_sparse,
    };
    (r, counts)
}

/// The f64 factorization path is chosen by a `Scalar` capability
/// (`Scalar::f64_view`), not by the type being `f64`: a user's
/// `#[repr(transparent)]` f64 wrapper that opts in (`Counted`) has its
/// large island (16 spheres, 96 rows) factored by faer's sparse LU like
/// `f64`, never by the generic LU, and gives f64's next state; a dual
/// scalar (no view) takes the generic path for the same step.
#[test]
fn an_f64_wrapper_takes_the_f64_factorization_path() {
    use dualsim::contact::mehrotra::SPARSE_MIN_ROWS;
    let k = 4;
    assert!(6 * k * k >= SPARSE_MIN_ROWS, "the island must be large");
    let (w, x, u) = pushed_layer(k);
    let (f, in_f64) = paths_of(|| step(&w, &x, &u).unwrap());
    let wc = w.cast::<Counted>();
    let (c, in_counted) = paths_of(|| step(&wc, &x.cast::<Counted>(), &u.map(Counted)).unwrap());
    let wd = w.cast::<Dual64>();
    let (_, in_dual) = paths_of(|| step(&wd, &x.cast::<Dual64>(), &u.map(Dual64::from)).unwrap());
    println!("paths: f64 {in_f64:?}, Counted {in_counted:?}, Dual64 {in_dual:?}");
    assert!(in_f64.faer_sparse > 0 && in_f64.generic == 0, "{in_f64:?}");
    assert!(
        in_counted.faer_sparse > 0 && in_counted.generic == 0,
        "the wrapper did not take the f64 path: {in_counted:?}"
    );
    assert!(
        in_dual.generic > 0 && in_dual.faer_sparse + in_dual.faer_dense == 0,
        "{in_dual:?}"
    );
    let dq = max_diff(
        f.state.q.as_slice(),
        &c.state.q.iter().map(|e| e.re()).collect::<Vec<_>>(),
    );
    let dv = max_diff(
        f.state.v.as_slice(),
        &c.state.v.iter().map(|e| e.re()).collect::<Vec<_>>(),
    );
    // Same arithmetic; `Counted` (derivative order 2 by default) takes the
    // polish steps a derivative type needs, which move the root within the
    // polish's round-off (1e-6 × the solver tolerance).
    assert!(
        dq <= 1e-12 && dv <= 1e-10,
        "next state differs: {dq:e} {dv:e}"
    );
}
