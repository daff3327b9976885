//! Diagnostics of a `single_level` solve, printed to stderr when the
//! environment variable `DUALSIM_SL_TRACE` is set (debugging aid; no
//! effect on the solve).

use super::{ConeBlock, Isl};
use crate::math::{DMat, DVec};
use crate::Scalar;

/// Whether tracing is on (read once per solve).
pub(super) fn enabled() -> bool {
    std::env::var_os("DUALSIM_SL_TRACE").is_some()
}

fn kind<T: Scalar>(isl: &Isl<T>, c: &ConeBlock) -> String {
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        let (n, m) = (lp.n, lp.m());
        if c.z >= off + n + m && c.z < off + n + 2 * m {
            return format!("col{}d{}", c.z - off - n - m, c.dim);
        }
        let c0 = off + n + 2 * m;
        if c.z >= c0 && c.z < c0 + lp.pair.law.size() {
            return if c.dim == 1 { "gap".into() } else { "fric".into() };
        }
    }
    "?".into()
}

/// The cone block (and side) limiting the step along `du` and its step.
pub(super) fn blocking<T: Scalar>(isl: &Isl<T>, u: &DVec<T>, du: &DVec<f64>) -> String {
    let mut best = (f64::INFINITY, String::new());
    for c in &isl.cones {
        for (side, base) in [("z", c.z), ("s", c.s)] {
            let x: Vec<f64> = (0..c.dim).map(|i| u[base + i].re()).collect();
            let d: Vec<f64> = (0..c.dim).map(|i| du[base + i]).collect();
            let a = if c.dim == 1 {
                crate::math::cone::orthant_step(x[0], d[0])
            } else {
                let lay = crate::collision::conic::ConeLayout {
                    n_orthant: 0,
                    soc: vec![c.dim],
                };
                lay.max_step_of(&x, &d)
            };
            if a < best.0 {
                best = (
                    a,
                    format!(
                        "{}.{side} a={a:.2e} x={:?} dx={:?}",
                        kind(isl, c),
                        x.iter().map(|v| format!("{v:.2e}")).collect::<Vec<_>>(),
                        d.iter().map(|v| format!("{v:.2e}")).collect::<Vec<_>>()
                    ),
                );
            }
        }
    }
    best.1
}

/// Contact unknowns of every pair and the velocity.
pub(super) fn state<T: Scalar>(isl: &Isl<T>, u: &DVec<T>) -> String {
    let mut out = format!(
        "v=[{}]",
        (0..6 * isl.bodies.len())
            .map(|i| format!("{:.3}", u[i].re()))
            .collect::<Vec<_>>()
            .join(",")
    );
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        let (n, m) = (lp.n, lp.m());
        let c0 = off + n + 2 * m;
        let x: Vec<String> = (0..lp.pair.law.size())
            .map(|i| format!("{:.2e}", u[c0 + i].re()))
            .collect();
        let smin = (0..m).map(|i| u[off + n + i].re()).fold(f64::INFINITY, f64::min);
        let zmax = (0..m).map(|i| u[off + n + m + i].re()).fold(0.0, f64::max);
        out += &format!(
            " | p=({:.3},{:.3},{:.3}) alpha={:.4} smin={smin:.1e} zmax={zmax:.1e} x=[{}]",
            u[off].re(),
            u[off + 1].re(),
            u[off + 2].re(),
            u[off + 3].re(),
            x.join(",")
        );
    }
    out
}

/// 2-norm condition number of `j`.
pub(super) fn condition(j: &DMat<f64>) -> f64 {
    let sv = j.clone().svd(false, false).singular_values;
    let max = sv.iter().copied().fold(0.0, f64::max);
    let min = sv.iter().copied().fold(f64::INFINITY, f64::min);
    max / min
}

fn label<T: Scalar>(isl: &Isl<T>, i: usize) -> String {
    if i < 6 * isl.bodies.len() {
        return format!("v{}", i);
    }
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        let (n, m) = (lp.n, lp.m());
        if i < off || i >= off + lp.size() {
            continue;
        }
        let k = i - off;
        return if k < n {
            format!("w{k}")
        } else if k < n + m {
            format!("s{}", k - n)
        } else if k < n + 2 * m {
            format!("z{}", k - n - m)
        } else {
            format!("x{}", k - n - 2 * m)
        };
    }
    "?".into()
}

/// The right singular vector of the smallest singular value of `j`
/// (largest components, labelled) and the largest rows of `r`.
pub(super) fn null_and_rows<T: Scalar>(isl: &Isl<T>, j: &DMat<f64>, r: &DVec<T>) -> String {
    let svd = j.clone().svd(false, true);
    let Some(vt) = svd.v_t else {
        return String::new();
    };
    let (k, smin) = svd
        .singular_values
        .iter()
        .copied()
        .enumerate()
        .fold((0, f64::INFINITY), |a, (i, x)| if x < a.1 { (i, x) } else { a });
    let mut comps: Vec<(usize, f64)> = (0..j.ncols()).map(|c| (c, vt[(k, c)])).collect();
    comps.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let mut rows: Vec<(usize, f64)> = r.iter().enumerate().map(|(i, x)| (i, x.re())).collect();
    rows.retain(|(i, _)| isl.equality[*i]);
    rows.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    format!(
        "smin {smin:.2e} null [{}] eqrows [{}]",
        comps
            .iter()
            .take(8)
            .map(|(c, x)| format!("{}:{x:.2}", label(isl, *c)))
            .collect::<Vec<_>>()
            .join(" "),
        rows.iter()
            .take(6)
            .map(|(c, x)| format!("{}:{x:.2e}", label(isl, *c)))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Per pair of a one-body island, the Delassus matrix `A = Gᵀ M⁻¹ G` of
/// the impulse `(γ, f₁, f₂)` (`G` its dynamics columns, `M` the dynamics
/// block of `j`) and the normal entry under the current friction
/// direction, `A_nn + (A_n1 f₁ + A_n2 f₂)/γ` (negative: a normal impulse
/// with its sliding friction pushes the contact point into the ground,
/// Painlevé).
pub(super) fn delassus<T: Scalar>(isl: &Isl<T>, j: &DMat<f64>, u: &DVec<T>) -> String {
    if isl.bodies.len() != 1 {
        return String::new();
    }
    let m = j.fixed_view::<6, 6>(0, 0).into_owned();
    let Some(minv) = m.try_inverse() else {
        return "M singular".into();
    };
    let mut out = String::new();
    for (lp, &off) in isl.pairs.iter().zip(&isl.offsets) {
        if lp.pair.law != crate::contact::law::Law::Exact {
            continue;
        }
        let c0 = off + lp.n + 2 * lp.m();
        let g = nalgebra::Matrix6x3::from_fn(|r, c| -j[(r, c0 + [0, 3, 4][c])]);
        let a = g.transpose() * minv * g;
        let gam = u[c0].re();
        let (f1, f2) = (u[c0 + 3].re(), u[c0 + 4].re());
        let eff = a[(0, 0)] + (a[(0, 1)] * f1 + a[(0, 2)] * f2) / gam;
        out += &format!(
            "A_nn {:.3e} A_nt ({:.3e},{:.3e}) |f_t|/γ {:.3} eff {eff:.3e}",
            a[(0, 0)],
            a[(0, 1)],
            a[(0, 2)],
            (f1 * f1 + f2 * f2).sqrt() / gam
        );
    }
    out
}
