//! Elastic impacts and continuous collision in the `lcp` backend
//! (issue 15): Newton's impact law, the step split at each time of
//! impact, and the derivatives through it, checked against closed-form
//! trajectories. Each test states its tolerance.

use dualsim::contact::{FrictionCone, SolveError, SolverKind};
use dualsim::diff::{DiffOptions, Input, Method, Param, rollout_jacobian, step_jacobian};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::{Controls, SimError, step};

fn mat(e: f64) -> Material<f64> {
    Material {
        friction: 0.0,
        restitution: e,
    }
}

fn world(h: f64, g: f64, ccd: bool) -> World<f64> {
    let mut w = World::<f64>::new(h);
    w.solver = SolverKind::Lcp;
    w.friction_cone = FrictionCone::Pyramid;
    w.gravity = Vec3::new(0.0, 0.0, -g);
    w.ccd = ccd;
    w
}

fn ball(w: &mut World<f64>, name: &str, r: f64, e: f64) -> usize {
    w.add_body(
        name,
        1.0,
        Mat3::identity() * (0.4 * r * r),
        Some(Shape::Sphere { radius: r }),
        mat(e),
    )
    .unwrap()
}

fn ground(e: f64) -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: mat(e),
    }
}

fn steps(w: &World<f64>, x: &State<f64>, n: usize) -> State<f64> {
    let mut x = x.clone();
    for _ in 0..n {
        x = step(w, &x, &w.zero_control()).expect("step").state;
    }
    x
}

/// (a) Two equal balls, e = 1, head-on, no gravity, the impact inside a
/// step: they swap velocities, momentum and energy are conserved and the
/// positions are the continuous-time ones (to 1e-12, not O(h)).
#[test]
fn equal_balls_swap_velocities_at_the_exact_time_of_impact() {
    let (h, r) = (0.01, 0.1);
    let mut w = world(h, 0.0, true);
    ball(&mut w, "a", r, 1.0);
    ball(&mut w, "b", r, 1.0);
    let (xa, xb, va, vb) = (-0.5003, 0.5, 2.0, -1.0);
    let mut x0 = State::at_rest(&w.model, &[[xa, 0.0, 0.0], [xb, 0.0, 0.0]]);
    x0.v[0] = va;
    x0.v[6] = vb;
    let n = 50;
    let x = steps(&w, &x0, n);
    let t_hit = (xb - xa - 2.0 * r) / (va - vb); // 0.26677 s: inside step 27
    let t = n as f64 * h;
    let (ea, eb) = (
        xa + va * t_hit + vb * (t - t_hit),
        xb + vb * t_hit + va * (t - t_hit),
    );
    let pos = (x.q[0] - ea).abs().max((x.q[7] - eb).abs());
    let vel = (x.v[0] - vb).abs().max((x.v[6] - va).abs());
    let mom = (x.v[0] + x.v[6] - (va + vb)).abs();
    let energy = (x.v[0].powi(2) + x.v[6].powi(2) - va * va - vb * vb).abs() / 2.0;
    let other =
        x.v.iter()
            .enumerate()
            .filter(|(i, _)| *i != 0 && *i != 6)
            .fold(0.0f64, |a, (_, v)| a.max(v.abs()));
    println!(
        "two balls, e = 1, ccd: |x − x_continuous| = {pos:.1e}, |v − swapped| = {vel:.1e}, \
         momentum error {mom:.1e}, energy error {energy:.1e}, other velocity components {other:.1e}"
    );
    assert!(pos < 1e-12, "{pos:e}");
    assert!(vel < 1e-12, "{vel:e}");
    assert!(mom < 1e-12 && energy < 1e-12, "{mom:e} {energy:e}");
    assert!(other < 1e-12, "{other:e}");
    // Without continuous collision the impact is found at the end of a
    // step: the positions are off by O(h |v|).
    let mut w2 = w.clone();
    w2.ccd = false;
    let x2 = steps(&w2, &x0, n);
    let off = (x2.q[0] - ea).abs().max((x2.q[7] - eb).abs());
    println!("the same without ccd: |x − x_continuous| = {off:.1e}");
    assert!(off > 1e-4, "{off:e}");
}

/// The expected step of a ball of radius `r` at height `z` (centre)
/// with vertical velocity `zd` dropped onto the ground, with the bounce
/// inside the step (`lcp`'s split step, module docs of `contact::lcp::ccd`):
/// the sub-step of duration `t` moves the centre to `z + t zd − t² g`;
/// `t` is its root at `r`; the impact reverses `v₁ = zd − t g` to
/// `−e v₁`; the remaining `τ = h − t` is a free step:
/// `ż⁺ = −e v₁ − τ g`, `z⁺ = r + τ ż⁺`. Returns `(z⁺, ż⁺, ∂z⁺/∂z,
/// ∂z⁺/∂ż, ∂ż⁺/∂z, ∂ż⁺/∂ż)`, the derivatives through
/// `∂t/∂z = −1/φ̇`, `∂t/∂ż = −t/φ̇`, `φ̇ = zd − 2 t g`.
fn bounce_closed_form(z: f64, zd: f64, r: f64, e: f64, g: f64, h: f64) -> [f64; 6] {
    // g t² − zd t − (z − r) = 0, smallest positive root
    let t = if g == 0.0 {
        (r - z) / zd
    } else {
        (zd + (zd * zd + 4.0 * g * (z - r)).sqrt()) / (2.0 * g)
    };
    let phid = zd - 2.0 * t * g;
    let (dt_dz, dt_dzd) = (-1.0 / phid, -t / phid);
    let v1 = zd - t * g;
    let tau = h - t;
    let vp = -e * v1 - tau * g;
    let zp = r + tau * vp;
    let dv1 = [-g * dt_dz, 1.0 - g * dt_dzd];
    let dvp = [-e * dv1[0] + g * dt_dz, -e * dv1[1] + g * dt_dzd];
    let dzp = [-dt_dz * vp + tau * dvp[0], -dt_dzd * vp + tau * dvp[1]];
    [zp, vp, dzp[0], dzp[1], dvp[0], dvp[1]]
}

/// (b) A ball dropped onto the ground with e = 0.8 under ccd, over the
/// step containing the bounce: the state and its Jacobian by every
/// method against the closed form. Without gravity the Jacobian is
/// `∂z⁺/∂z = −e`, `∂z⁺/∂ż = −e h`, `∂ż⁺/∂ż = −e`, `∂ż⁺/∂z = 0`; with
/// gravity the extra terms of [`bounce_closed_form`].
#[test]
fn bounce_step_jacobian_matches_the_closed_form_for_every_method() {
    let (h, r, e) = (0.01, 0.1, 0.8);
    for g in [0.0, 9.81] {
        let mut w = world(h, g, true);
        ball(&mut w, "ball", r, e);
        w.statics.push(ground(e));
        let (z, zd) = (r + 0.005, -1.0);
        let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, z]]);
        x0.v[2] = zd;
        let want = bounce_closed_form(z, zd, r, e, g, h);
        if g == 0.0 {
            let exp = [-e, -e * h, 0.0, -e];
            for k in 0..4 {
                assert!((want[2 + k] - exp[k]).abs() < 1e-15, "closed form {k}");
            }
        }
        let next = step(&w, &x0, &w.zero_control()).unwrap().state;
        let st = (next.q[2] - want[0]).abs().max((next.v[2] - want[1]).abs());
        println!("bounce g = {g}: |state − closed form| = {st:.1e}");
        assert!(st < 1e-13, "{st:e}");
        let params = [Param::Q(2), Param::V(2)];
        for (method, tol) in [
            (Method::Ift, 1e-10),
            (Method::Lift, 1e-10),
            (Method::Unrolled, 1e-10),
            (Method::Fd, 1e-6),
        ] {
            let j = step_jacobian(
                &w,
                &x0,
                &w.zero_control(),
                &params,
                method,
                &DiffOptions::default(),
            )
            .unwrap();
            let got = [
                j.jacobian[(2, 0)],
                j.jacobian[(2, 1)],
                j.jacobian[(8, 0)],
                j.jacobian[(8, 1)],
            ];
            let err = (0..4)
                .map(|k| (got[k] - want[2 + k]).abs())
                .fold(0.0, f64::max);
            println!(
                "bounce g = {g}, {method:?}: [dz+/dz, dz+/dzd, dzd+/dz, dzd+/dzd] = {got:?}, \
                 closed form {:?}, max error {err:.1e} (tolerance {tol:e})",
                &want[2..]
            );
            assert!(err < tol, "{method:?}: {err:e}");
            assert!(j.nonsmooth.is_empty(), "{method:?}: {:?}", j.nonsmooth);
        }
    }
}

/// Restitution without ccd: a ball touching the ground (gap 0) moving
/// down at 1 m/s leaves at e · 1 m/s (gravity's impulse over the step is
/// absorbed by the contact, the law is `φ(q⁺)/h + e v_n⁻ ≥ 0`), and
/// `∂ż⁺/∂ż = −e` by every method.
#[test]
fn restitution_without_ccd_reverses_the_normal_velocity() {
    let (h, r, e) = (0.01, 0.1, 0.8);
    let mut w = world(h, 9.81, false);
    ball(&mut w, "ball", r, e);
    w.statics.push(ground(e));
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, r]]);
    x0.v[2] = -1.0;
    let next = step(&w, &x0, &w.zero_control()).unwrap().state;
    println!("restitution without ccd: ż⁺ = {:.15}", next.v[2]);
    assert!((next.v[2] - e).abs() < 1e-12, "{}", next.v[2]);
    for (method, tol) in [
        (Method::Ift, 1e-9),
        (Method::Lift, 1e-9),
        (Method::Unrolled, 1e-9),
        (Method::Fd, 1e-6),
    ] {
        let j = step_jacobian(
            &w,
            &x0,
            &w.zero_control(),
            &[Param::V(2)],
            method,
            &DiffOptions::default(),
        )
        .unwrap();
        let d = j.jacobian[(8, 0)];
        println!("restitution without ccd, {method:?}: dż⁺/dż = {d}");
        assert!((d + e).abs() < tol, "{method:?}: {d}");
    }
    // Combined restitution: min(0.8, 0) = 0 is an inelastic contact.
    let mut w0 = w.clone();
    w0.statics[0].material.restitution = 0.0;
    w0.restitution_combine = dualsim::geometry::Combine::Min;
    let n0 = step(&w0, &x0, &w0.zero_control()).unwrap().state;
    assert!(n0.v[2].abs() < 1e-12, "{}", n0.v[2]);
}

/// (c) A sphere (r = 0.05) at 100 m/s against a static wall, a box of
/// half-thickness 0.005, h = 0.01 (1 m per step): with ccd it stops at
/// the wall (e = 0) or comes back (e = 1); without ccd it passes through.
#[test]
fn fast_sphere_does_not_tunnel_through_a_thin_wall_with_ccd() {
    let (h, r) = (0.01, 0.05);
    let run = |ccd: bool, e: f64| {
        let mut w = world(h, 0.0, ccd);
        ball(&mut w, "bullet", r, e);
        w.statics.push(StaticGeometry {
            name: "wall".into(),
            shape: Shape::Box {
                half_extents: Vec3::new(0.005, 1.0, 1.0),
            },
            pose: Pose {
                translation: Vec3::new(0.5, 0.0, 0.0),
                ..Pose::identity()
            },
            material: mat(e),
        });
        let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
        x0.v[0] = 100.0;
        steps(&w, &x0, 3)
    };
    let face = 0.5 - 0.005 - r;
    let stop = run(true, 0.0);
    println!("ccd, e = 0: x = {:.15}, v = {:.3e}", stop.q[0], stop.v[0]);
    // The impact rows are velocity-level at the impact configuration: the
    // normal velocity is zeroed exactly (round-off, measured 4e-15).
    assert!((stop.q[0] - face).abs() < 1e-12 && stop.v[0].abs() < 1e-12);
    let back = run(true, 1.0);
    // hits at t = 0.00445 s, then 0.02555 s at −100 m/s
    let expect = face - 100.0 * (0.03 - face / 100.0);
    println!(
        "ccd, e = 1: x = {:.15} (closed form {expect:.15}), v = {}",
        back.q[0], back.v[0]
    );
    assert!((back.q[0] - expect).abs() < 1e-9 && (back.v[0] + 100.0).abs() < 1e-9);
    let through = run(false, 0.0);
    println!("no ccd: x = {} (behind the wall: tunnelled)", through.q[0]);
    assert!(through.q[0] > 0.5 + 0.005 + r);
}

/// Under ccd a pair without a time of impact that the step could miss is
/// refused with a typed error naming both shapes (a fast box against a
/// thin wall); a slow one is simulated.
#[test]
fn ccd_refuses_a_fast_pair_it_has_no_time_of_impact_for() {
    let mut w = world(0.01, 0.0, true);
    w.add_body(
        "brick",
        1.0,
        Mat3::identity() * 0.01,
        Some(Shape::Box {
            half_extents: Vec3::repeat(0.05),
        }),
        mat(0.0),
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "wall".into(),
        shape: Shape::Box {
            half_extents: Vec3::new(0.005, 1.0, 1.0),
        },
        pose: Pose {
            translation: Vec3::new(0.5, 0.0, 0.0),
            ..Pose::identity()
        },
        material: mat(0.0),
    });
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.0]]);
    x0.v[0] = 100.0;
    let err = step(&w, &x0, &w.zero_control()).unwrap_err();
    println!("{err}");
    assert!(matches!(
        &err,
        SimError::Solve(SolveError::UnsupportedPair { backend: "lcp", pair, .. }) if pair[0] == "brick" && pair[1] == "wall"
    ));
    assert_eq!(err.kind(), "unsupported");
    x0.v[0] = 0.1;
    assert!(step(&w, &x0, &w.zero_control()).is_ok());
}

/// (d) Newton's cradle, 5 equal balls, e = 1, no gravity. With small
/// gaps (1 mm) between the resting balls, ccd resolves the impacts one
/// after the other: the first ball stops and the last leaves with its
/// speed. With the balls touching, the impact is simultaneous and the
/// LCP of Newton's law gives the other known answer: the first ball
/// rebounds at −3v/5 and the four others leave together at 2v/5
/// (momentum v and energy v²/2 both conserved).
#[test]
fn newtons_cradle() {
    let (h, r, v) = (0.01, 0.1, 1.0);
    for gap in [1e-3, 0.0] {
        let mut w = world(h, 0.0, true);
        let mut pos = Vec::new();
        for k in 0..5 {
            ball(&mut w, &format!("ball{k}"), r, 1.0);
            let x = if k == 0 {
                -0.0503 - 2.0 * r
            } else {
                (k - 1) as f64 * (2.0 * r + gap)
            };
            pos.push([x, 0.0, 0.0]);
        }
        let mut x0 = State::at_rest(&w.model, &pos);
        x0.v[0] = v;
        let x = steps(&w, &x0, 20);
        let vs: Vec<f64> = (0..5).map(|k| x.v[6 * k]).collect();
        let want: Vec<f64> = if gap > 0.0 {
            vec![0.0, 0.0, 0.0, 0.0, v]
        } else {
            vec![-0.6 * v, 0.4 * v, 0.4 * v, 0.4 * v, 0.4 * v]
        };
        let err = vs
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let mom: f64 = vs.iter().sum::<f64>() - v;
        let en: f64 = vs.iter().map(|x| x * x).sum::<f64>() / 2.0 - v * v / 2.0;
        println!(
            "cradle gap {gap}: velocities {vs:?}, max error {err:.1e}, momentum error {mom:.1e}, energy error {en:.1e}"
        );
        assert!(err < 1e-12, "{err:e}");
        assert!(mom.abs() < 1e-12 && en.abs() < 1e-12);
    }
}

/// The closed form of two equal frictionless balls (radius `r`), e = 1,
/// no gravity, over time `t_end` from positions `pa`, `pb` and
/// velocities `va`, `vb`, meeting once at `t_c` (`|d(t_c)| = 2r`,
/// `d(t) = Δp + t Δv`): the normal `n = d(t_c)/2r` (line of centres at the
/// time of impact), `w = Δv · n`, `va' = va − w n`, `vb' = vb + w n`, and
/// straight lines before and after. Returns the final state
/// `s = (pa, pb, va, vb)` (12 entries) and its Jacobian with respect to
/// the initial one, derived by hand:
/// `δt_c = −(d·δΔp + t_c d·δΔv)/(d·Δv)` (from `d·d = 4r²`),
/// `δd = δΔp + δt_c Δv + t_c δΔv`, `δn = δd/2r`,
/// `δw = δΔv·n + Δv·δn`, `δva' = δva − δw n − w δn`,
/// `δpa(t_end) = δpa + δt_c va + t_c δva − δt_c va' + (t_end − t_c) δva'`
/// (and `b` with the opposite sign of `w n`).
fn two_ball_closed_form(s0: &[f64; 12], r: f64, t_end: f64) -> ([f64; 12], [[f64; 12]; 12]) {
    let v3 = |k: usize| Vec3::new(s0[k], s0[k + 1], s0[k + 2]);
    let (pa, pb, va, vb) = (v3(0), v3(3), v3(6), v3(9));
    let (dp, dv) = (pa - pb, va - vb);
    let rr = 2.0 * r;
    // smallest root of |dp + t dv|² = rr²
    let (a2, b2, c2) = (dv.dot(&dv), 2.0 * dp.dot(&dv), dp.dot(&dp) - rr * rr);
    let tc = (-b2 - (b2 * b2 - 4.0 * a2 * c2).sqrt()) / (2.0 * a2);
    let d = dp + dv * tc;
    let n = d / rr;
    let w = dv.dot(&n);
    let (va1, vb1) = (va - n * w, vb + n * w);
    let (pa1, pb1) = (
        pa + va * tc + va1 * (t_end - tc),
        pb + vb * tc + vb1 * (t_end - tc),
    );
    let mut out = [0.0; 12];
    for (k, x) in [pa1, pb1, va1, vb1].iter().enumerate() {
        for i in 0..3 {
            out[3 * k + i] = x[i];
        }
    }
    let mut jac = [[0.0; 12]; 12];
    for col in 0..12 {
        let e = |k: usize| {
            let mut x = Vec3::zeros();
            if col / 3 == k {
                x[col % 3] = 1.0;
            }
            x
        };
        let (dpa, dpb, dva, dvb) = (e(0), e(1), e(2), e(3));
        let (ddp, ddv) = (dpa - dpb, dva - dvb);
        let dtc = -(d.dot(&ddp) + tc * d.dot(&ddv)) / d.dot(&dv);
        let dd = ddp + dv * dtc + ddv * tc;
        let dn = dd / rr;
        let dw = ddv.dot(&n) + dv.dot(&dn);
        let dva1 = dva - n * dw - dn * w;
        let dvb1 = dvb + n * dw + dn * w;
        let dpa1 = dpa + va * dtc + dva * tc - va1 * dtc + dva1 * (t_end - tc);
        let dpb1 = dpb + vb * dtc + dvb * tc - vb1 * dtc + dvb1 * (t_end - tc);
        for (k, x) in [dpa1, dpb1, dva1, dvb1].iter().enumerate() {
            for i in 0..3 {
                jac[3 * k + i][col] = x[i];
            }
        }
    }
    (out, jac)
}

/// The oblique two-ball scene of the next tests: equal balls r = 0.1,
/// m = 1, e = 1, frictionless, no gravity, h = 0.01, 12 steps; `a` at
/// (−0.25, 0.06, 0.02) moving (1, 0.1, −0.05), `b` at the origin moving
/// (−0.2, 0, 0): they meet at t_c ≈ 0.05 s (inside step 6) with the line
/// of centres about 20° off the relative velocity.
fn oblique() -> (World<f64>, State<f64>, [f64; 12], f64, usize) {
    let (h, r, n) = (0.01, 0.1, 12);
    let mut w = world(h, 0.0, true);
    ball(&mut w, "a", r, 1.0);
    ball(&mut w, "b", r, 1.0);
    let s0 = [
        -0.25, 0.06, 0.02, 0.0, 0.0, 0.0, 1.0, 0.1, -0.05, -0.2, 0.0, 0.0,
    ];
    let mut x0 = State::at_rest(&w.model, &[[s0[0], s0[1], s0[2]], [s0[3], s0[4], s0[5]]]);
    for i in 0..3 {
        x0.v[i] = s0[6 + i];
        x0.v[6 + i] = s0[9 + i];
    }
    (w, x0, s0, r, n)
}

/// (e) Two equal balls, e = 1, oblique impact inside a step under ccd:
/// the final positions and velocities are the closed form (the normal
/// components along the line of centres at the time of impact are
/// exchanged) to 1e-12; momentum and energy are conserved to 1e-12; the
/// angular velocities stay zero (frictionless).
#[test]
fn oblique_equal_balls_match_the_closed_form() {
    let (w, x0, s0, r, n) = oblique();
    let (want, _) = two_ball_closed_form(&s0, r, n as f64 * w.dt);
    let x = steps(&w, &x0, n);
    let got = [
        x.q[0], x.q[1], x.q[2], x.q[7], x.q[8], x.q[9], x.v[0], x.v[1], x.v[2], x.v[6], x.v[7],
        x.v[8],
    ];
    let err = (0..12)
        .map(|k| (got[k] - want[k]).abs())
        .fold(0.0, f64::max);
    let mut mom = 0.0f64;
    for i in 0..3 {
        mom = mom.max((x.v[i] + x.v[6 + i] - s0[6 + i] - s0[9 + i]).abs());
    }
    let e0: f64 = s0[6..].iter().map(|v| v * v).sum::<f64>() / 2.0;
    let e1: f64 = (0..3)
        .map(|i| x.v[i].powi(2) + x.v[6 + i].powi(2))
        .sum::<f64>()
        / 2.0;
    let spin = (3..6)
        .chain(9..12)
        .map(|k| x.v[k].abs())
        .fold(0.0, f64::max);
    println!(
        "oblique balls: final state {got:?}\n  closed form {want:?}\n  max error {err:.1e}, \
         momentum error {mom:.1e}, energy error {:.1e}, spin {spin:.1e}",
        (e1 - e0).abs()
    );
    assert!(err < 1e-12, "{err:e}");
    assert!(
        mom < 1e-12 && (e1 - e0).abs() < 1e-12,
        "{mom:e} {}",
        e1 - e0
    );
    assert!(spin < 1e-12, "{spin:e}");
}

/// (f) The Jacobian of the final state of the oblique two-ball rollout
/// with respect to the initial positions and velocities, by every method,
/// against the hand-derived closed form of [`two_ball_closed_form`]
/// (itself checked against central differences of the closed form,
/// 1e-7). Tolerances: 1e-9 for `ift`, `lift`, `unrolled` (dual numbers
/// through the time of impact, the impact normal at q(t_c) and the split
/// step), 1e-6 for `fd` (central differences, ε = 1e-6).
#[test]
fn oblique_two_ball_jacobian_matches_the_closed_form_for_every_method() {
    let (w, x0, s0, r, n) = oblique();
    let t_end = n as f64 * w.dt;
    let (_, want) = two_ball_closed_form(&s0, r, t_end);
    // The hand derivation against central differences of the closed form.
    let mut fd_err = 0.0f64;
    for col in 0..12 {
        let eps = 1e-6;
        let (mut sp, mut sm) = (s0, s0);
        sp[col] += eps;
        sm[col] -= eps;
        let (fp, fm) = (
            two_ball_closed_form(&sp, r, t_end).0,
            two_ball_closed_form(&sm, r, t_end).0,
        );
        for row in 0..12 {
            fd_err = fd_err.max(((fp[row] - fm[row]) / (2.0 * eps) - want[row][col]).abs());
        }
    }
    println!("closed-form Jacobian against its own central differences: {fd_err:.1e}");
    assert!(fd_err < 1e-7, "{fd_err:e}");
    // A few entries are far from the no-impact Jacobian (identity blocks):
    // the test would fail if the impact normal's dependence were dropped.
    assert!(want[3][1].abs() > 0.1, "{}", want[3][1]);
    // Inputs: linear configuration and velocity of both balls; rows of the
    // rollout Jacobian: tangent of q (6 per body, linear first), then v.
    let dofs = [0, 1, 2, 6, 7, 8];
    let mut inputs: Vec<Input> = dofs.iter().map(|&i| Input::Config(i)).collect();
    inputs.extend(dofs.iter().map(|&i| Input::Velocity(i)));
    let rows: Vec<usize> = dofs
        .iter()
        .chain(dofs.iter().map(|i| i + 12).collect::<Vec<_>>().iter())
        .copied()
        .collect();
    let controls = Controls::Constant(w.zero_control());
    for (method, tol) in [
        (Method::Ift, 1e-9),
        (Method::Lift, 1e-9),
        (Method::Unrolled, 1e-9),
        (Method::Fd, 1e-6),
    ] {
        let j = rollout_jacobian(
            &w,
            &x0,
            &controls,
            n,
            &inputs,
            method,
            &DiffOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{method:?}: {e}"))
        .jacobian;
        let mut err = 0.0f64;
        for (a, &row) in rows.iter().enumerate() {
            for c in 0..12 {
                err = err.max((j[(row, c)] - want[a][c]).abs());
            }
        }
        println!(
            "oblique balls, {method:?}: d(pb_x final)/d(pa_y) = {:.12} (closed form {:.12}), \
             max error over the 12 × 12 Jacobian {err:.1e} (tolerance {tol:e})",
            j[(6, 1)],
            want[3][1]
        );
        assert!(err < tol, "{method:?}: {err:e}");
    }
}

/// (g) Two equal solid balls (m = 1, r = 0.1, I = 2/5 m r², e = 1,
/// friction μ = 0.1), exactly head-on under ccd: `a` at (−0.2503, y, z)
/// moving at v = 1 m/s along x into `b` at rest at the origin, no
/// gravity, 12 steps of 0.01 s (the impact at t_c = 0.0503 s, inside
/// step 6). The derivative of the final state with respect to `a`'s
/// lateral position `(y, z)` at `y = z = 0`, derived by hand: the impact
/// normal is `n = (√(4r² − y² − z²), −y, −z)/2r`, the normal impulse
/// `P_n = (1 + e)(m/2) v n_x`, and the slip at the contact point
/// `u_t = v (x̂ − n_x n)` (`≈ v (0, y, z)/2r`). The tangential effective
/// mass of the pair is `1/(2/m + 2r²/I) = m/7`; the impact sticks (the
/// impulse `m u_t/7` that stops the slip is inside the box) while
/// `|u_t|/7 ≤ μ v n_x`, i.e. up to 35° off head-on, so the map is smooth
/// at `y = z = 0` (no kink: `f_t = 0` is inside the box). With
/// `k = v/2r` and `c = m v/(14 I)`: `∂v_a,y/∂y = (6/7) k = −∂v_b,y/∂y`
/// (normal part `k`, friction part `−k/7`), `∂ω_a,z/∂y = ∂ω_b,z/∂y = −c`
/// (both balls spin the same way), `∂t_c/∂y = 0`, and the positions and
/// orientations carry these over `t_end − t_c`; the same for `z` with
/// `∂ω_{a,b},y/∂z = +c`. Tolerances: 1e-9 for `ift`, `lift`, `unrolled`,
/// 1e-6 for `fd` (ε = 1e-7 central differences). Before the separating
/// contact's friction rows were fixed (`f_t = ±μ f_n` at `f_n = 0`, even
/// at exactly zero slip) the exact methods gave `∂ω_b,z/∂y = −16.78`
/// after 6 steps instead of `−125/7 = −17.857`.
#[test]
fn head_on_frictional_impact_jacobian_matches_the_closed_form_for_every_method() {
    let (h, r, v, mu, n) = (0.01, 0.1, 1.0, 0.1, 12);
    let mut w = world(h, 0.0, true);
    for name in ["a", "b"] {
        w.add_body(
            name,
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            Material {
                friction: mu,
                restitution: 1.0,
            },
        )
        .unwrap();
    }
    let xa = -0.0503 - 2.0 * r;
    let mut x0 = State::at_rest(&w.model, &[[xa, 0.0, 0.0], [0.0, 0.0, 0.0]]);
    x0.v[0] = v;
    let (m, inertia) = (1.0, 0.4 * r * r);
    let tc = (-xa - 2.0 * r) / v;
    let rest = n as f64 * h - tc;
    let (k, c) = (v / (2.0 * r), m * v / (14.0 * inertia));
    // Rows of the rollout Jacobian: tangent of q (a: 0..6, b: 6..12;
    // linear then angular), then v (12..24). Columns: a's y, then z.
    let mut want = [[0.0; 2]; 24];
    for (col, (lat, spin, sign)) in [(1, 5, -1.0), (2, 4, 1.0)].into_iter().enumerate() {
        let dv = 6.0 / 7.0 * k;
        want[lat][col] = 1.0 + dv * rest; // a's position
        want[6 + lat][col] = -dv * rest; // b's position
        want[spin][col] = sign * c * rest; // a's orientation
        want[6 + spin][col] = sign * c * rest; // b's orientation
        want[12 + lat][col] = dv;
        want[18 + lat][col] = -dv;
        want[12 + spin][col] = sign * c;
        want[18 + spin][col] = sign * c;
    }
    assert!((c - 125.0 / 7.0).abs() < 1e-12);
    let inputs = [Input::Config(1), Input::Config(2)];
    let controls = Controls::Constant(w.zero_control());
    for (method, tol) in [
        (Method::Ift, 1e-9),
        (Method::Lift, 1e-9),
        (Method::Unrolled, 1e-9),
        (Method::Fd, 1e-6),
    ] {
        let j = rollout_jacobian(
            &w,
            &x0,
            &controls,
            n,
            &inputs,
            method,
            &DiffOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{method:?}: {e}"))
        .jacobian;
        let mut err = 0.0f64;
        for (row, want_row) in want.iter().enumerate() {
            for (col, x) in want_row.iter().enumerate() {
                err = err.max((j[(row, col)] - x).abs());
            }
        }
        println!(
            "head-on balls, mu = {mu}, {method:?}: d(omega_b,z)/d(y_a) = {:.12} (closed form \
             {:.12}), d(v_b,y)/d(y_a) = {:.12} (closed form {:.12}), max error over 24 × 2 {err:.1e} \
             (tolerance {tol:e})",
            j[(23, 0)],
            want[23][0],
            j[(19, 0)],
            want[19][0]
        );
        assert!(err < tol, "{method:?}: {err:e}");
    }
}

use crate::common::check_report::check_report;

/// (h) `dualsim check` on the `lcp` scenes outside `examples/scenes`
/// (those are run by tests/all/diff/check_examples.rs, which asks only for
/// `passed`). Newton's cradle (`examples/scenes/lcp_cradle.toml`, five
/// balls 1 mm apart, friction 0.1, four head-on frictional impacts in
/// the first step) and the drone on the ground
/// (`tests/data/nimble_drone.toml`, a box resting on its four corners,
/// all of them clamping) pass with no `fd` column skipped: the drone's
/// active set is the same on either side of every perturbation. (With
/// nalgebra's SVD in the LCP solver's pseudo-inverse, whose factors can
/// miss their matrix, `linalg::Svd`, the drone's active set flickered
/// along the rollout and more than half of some blocks' `fd` columns
/// changed it within ±ε.)
#[test]
fn check_on_the_lcp_test_scenes() {
    let cradle = check_report("examples/scenes/lcp_cradle.toml");
    assert_eq!(cradle["status"], "passed", "{cradle:#}");
    assert_eq!(cradle["fd_skipped_columns"], 0, "{cradle:#}");
    let drone = check_report("tests/data/nimble_drone.toml");
    assert_eq!(drone["status"], "passed", "{drone:#}");
    assert_eq!(drone["fd_skipped_columns"], 0, "{drone:#}");
    assert_eq!(drone["rollout"]["passed"], true, "{drone:#}");
}
