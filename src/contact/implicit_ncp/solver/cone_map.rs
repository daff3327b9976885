use super::*;

/// Friction coefficient as used: negative (and NaN) coefficients act as 0.
pub(super) fn friction(mu: f64) -> f64 {
    if mu > 0.0 {
        mu
    } else {
        0.0
    }
}

/// Impulse `f(x)` of one contact.
#[doc(hidden)]
pub fn impulse(mu: f64, x: &Vector3<f64>) -> Vector3<f64> {
    // `−x_N` rather than `max` so that a NaN propagates
    let f_n = if x[0] > 0.0 { 0.0 } else { -x[0] };
    let norm_f = x[1].hypot(x[2]);
    let bound = friction(mu) * f_n;
    let s = if norm_f > bound { bound / norm_f } else { 1.0 };
    Vector3::new(f_n, -s * x[1], -s * x[2])
}

/// Impulse `f` and velocity `v = x + f` of one contact with friction
/// coefficient `mu` (`μ ≥ 0`; negative values act as 0) at `x`.
///
/// `f_N = max(0, −x_N)`, `f_F = −s x_F` with `s = min(1, μ f_N/‖x_F‖)`
/// (`s = 1` when `x_F = 0`), so `f_N ≥ 0`, `v_N ≥ 0`, `f_N v_N = 0`,
/// `‖f_F‖ ≤ μ f_N` and `v_F = (1 − s) x_F` opposes `f_F`.
pub fn impulse_velocity(mu: f64, x: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let f = impulse(mu, x);
    (f, x + f)
}

/// Smooth piece containing `x` for friction coefficient `mu`: separated if
/// `x_N > 0`, else sticking if `‖x_F‖ < μ f_N`, else sliding (kinks belong
/// to the contact side of the plane and to the sliding side of the cone).
pub fn piece(mu: f64, x: &Vector3<f64>) -> Piece {
    if x[0] > 0.0 {
        Piece::Separated
    } else if x[1].hypot(x[2]) < friction(mu) * -x[0] {
        Piece::Sticking
    } else {
        Piece::Sliding
    }
}

/// Derivative `Df = ∂f/∂x` (`3 × 3`) of one contact's impulse at `x`, on the
/// piece returned by [`piece`] (the one-sided derivative on a kink; at
/// `x_N = 0, x_F = 0` it is `diag(−1, 0, 0)`).
pub fn local_derivative(mu: f64, x: &Vector3<f64>) -> Matrix3<f64> {
    let mu = friction(mu);
    match piece(mu, x) {
        Piece::Separated => Matrix3::zeros(),
        Piece::Sticking => -Matrix3::identity(),
        Piece::Sliding => {
            let mut d = Matrix3::zeros();
            d[(0, 0)] = -1.0;
            let norm_f = x[1].hypot(x[2]);
            if mu > 0.0 && norm_f > 0.0 {
                let (u1, u2) = (x[1] / norm_f, x[2] / norm_f);
                // f_F = μ x_N u
                d[(1, 0)] = mu * u1;
                d[(2, 0)] = mu * u2;
                let w = mu * x[0] / norm_f; // −μ f_N / ‖x_F‖
                d[(1, 1)] = w * (1.0 - u1 * u1);
                d[(1, 2)] = -w * u1 * u2;
                d[(2, 1)] = -w * u1 * u2;
                d[(2, 2)] = w * (1.0 - u2 * u2);
            }
            d
        }
    }
}

/// Euclidean distance from `x` to the nearest kink surface of one contact:
/// the plane `x_N = 0` and, for `μ > 0`, the cone `‖x_F‖ = −μ x_N`
/// (`x_N ≤ 0`). Every point closer to `x` than this is on the same
/// [`Piece`] as `x` (up to the kinks themselves), so a finite difference
/// of step `h` well below it differentiates one smooth piece.
pub fn kink_distance(mu: f64, x: &Vector3<f64>) -> f64 {
    let mu = friction(mu);
    let (a, rho) = (x[0], x[1].hypot(x[2]));
    let plane = a.abs();
    if mu == 0.0 {
        return plane;
    }
    // the cone is a surface of revolution: distance, in the half-plane
    // (x_N, ‖x_F‖), from (a, ρ) to the ray t (−1, μ), t ≥ 0
    let norm = (1.0 + mu * mu).sqrt();
    let along = (-a + mu * rho) / norm;
    let cone = if along <= 0.0 {
        a.hypot(rho)
    } else {
        (mu * a + rho).abs() / norm
    };
    plane.min(cone)
}

/// Smoothed impulse `f_ε(x)` of one contact and its derivative (`ε > 0`):
/// `f_N = ½(√(x_N² + 4ε²) − x_N)`, `f_F = −s x_F` with `s = b / smax(b,
/// ‖x_F‖)`, `b = μ f_N`, `smax(p, q) = ½(p + q + √((p − q)² + 4ε²))`; both
/// tend to the exact maps as `ε → 0`.
pub(super) fn smoothed_impulse(mu: f64, x: &Vector3<f64>, eps: f64) -> (Vector3<f64>, Matrix3<f64>) {
    let mu = friction(mu);
    let a = x[0];
    let q = (a * a + 4.0 * eps * eps).sqrt();
    let f_n = 0.5 * (q - a);
    let df_n = 0.5 * (a / q - 1.0);
    let (y1, y2) = (x[1], x[2]);
    let rho = y1.hypot(y2);
    let b = mu * f_n;
    let w = ((rho - b) * (rho - b) + 4.0 * eps * eps).sqrt();
    let smax = 0.5 * (b + rho + w);
    let s = b / smax;
    let dsmax_db = 0.5 * (1.0 + (b - rho) / w);
    let dsmax_drho = 0.5 * (1.0 + (rho - b) / w);
    let ds_db = (smax - b * dsmax_db) / (smax * smax);
    let ds_drho = -b * dsmax_drho / (smax * smax);
    let mut d = Matrix3::zeros();
    d[(0, 0)] = df_n;
    // ∂f_F/∂x_N = −x_F (∂s/∂b) μ f_N'
    d[(1, 0)] = -y1 * ds_db * mu * df_n;
    d[(2, 0)] = -y2 * ds_db * mu * df_n;
    // ∂f_F/∂x_F = −(s I + (∂s/∂ρ) x_F x_Fᵀ / ρ)
    let k = if rho > 0.0 { ds_drho / rho } else { 0.0 };
    d[(1, 1)] = -(s + k * y1 * y1);
    d[(1, 2)] = -k * y1 * y2;
    d[(2, 1)] = -k * y1 * y2;
    d[(2, 2)] = -(s + k * y2 * y2);
    (Vector3::new(f_n, -s * y1, -s * y2), d)
}
