//! System identification from a sampled trajectory (the example
//! `opt_sysid` and its reduced-size test).
//!
//! The scene's values are the truth. Its rollout is sampled every
//! `every` steps (the `[objective]`'s `of` outputs), optionally with
//! independent Gaussian noise of standard deviation σ on every sampled
//! value; the decision variables (`wrt`) are then set to wrong values and
//! recovered by Gauss–Newton (argmin's trust region with `Jᵀ J`, `J` by
//! `ift`) on the cost ½ Σ ‖y_k(θ) − ỹ_k‖² summed over the samples.
//!
//! With noise, the estimate's spread is given by the Cramér–Rao bound of
//! this Gaussian model, `Cov(θ̂) ≈ σ² (Jᵀ J)⁻¹` at the estimate; the report
//! gives each parameter's error in units of that standard deviation.

use super::{Objective, OptError, OptMethod, OptimizeOptions, OptimizeReport, optimize};
use crate::scene::Scene;

/// The outcome of [`identify`].
#[derive(Clone, Debug)]
pub struct Identification {
    /// One label per identified parameter (`box.mass`, `box.inertia.x`, …).
    pub labels: Vec<String>,
    /// The true values.
    pub truth: Vec<f64>,
    /// The starting guess.
    pub guess: Vec<f64>,
    /// The estimate.
    pub estimate: Vec<f64>,
    /// |estimate − truth| / |truth|.
    pub relative_error: Vec<f64>,
    /// Cramér–Rao standard deviation of each parameter (σ √((JᵀJ)⁻¹)ᵢᵢ);
    /// zero without noise.
    pub crb_sigma: Vec<f64>,
    /// (estimate − truth) / crb_sigma (NaN without noise).
    pub z_score: Vec<f64>,
    /// The Gauss–Newton run.
    pub report: OptimizeReport,
}

/// Identifies the `wrt` parameters of `truth`'s `[objective]` (scalar
/// parameters only: mass, friction, inertia, shape sizes, …) from samples
/// every `every` steps with noise σ = `noise` (seeded), starting from the
/// true values multiplied by `guess_factor` (one factor per parameter).
pub fn identify(
    truth: &Scene,
    every: usize,
    noise: f64,
    seed: u64,
    guess_factor: &[f64],
    opts: &OptimizeOptions,
) -> Result<Identification, OptError> {
    let obj = Objective::from_scene(truth)?;
    let n = obj.dim();
    assert_eq!(guess_factor.len(), n, "one factor per parameter");
    let zero = vec![0.0; n];
    let truth_values: Vec<f64> = obj
        .solution(&zero)?
        .into_iter()
        .flat_map(|(_, v)| v)
        .collect();
    assert_eq!(truth_values.len(), n, "scalar parameters only");
    // samples
    let ks: Vec<usize> = (1..=obj.steps())
        .filter(|k| k % every.max(1) == 0)
        .collect();
    let mut rng = super::cem::Normal::new(seed);
    let data: Vec<(usize, Vec<f64>)> = obj
        .outputs_at(&zero, &ks)?
        .into_iter()
        .zip(&ks)
        .map(|(y, k)| {
            (
                *k,
                y.into_iter().map(|v| v + noise * rng.sample()).collect(),
            )
        })
        .collect();
    // the wrong starting point
    let delta_guess: Vec<f64> = truth_values
        .iter()
        .zip(guess_factor)
        .map(|(t, f)| t * (f - 1.0))
        .collect();
    let (w, x0, us) = obj.at(&delta_guess)?;
    let spec = truth.objective.clone().ok_or(OptError::NoObjective)?;
    let fit = Objective::new(&w, &x0, &us, obj.steps(), &spec)?.with_samples(data)?;
    let guess: Vec<f64> = fit
        .solution(&zero)?
        .into_iter()
        .flat_map(|(_, v)| v)
        .collect();
    let report = optimize(
        &fit,
        &OptimizeOptions {
            method: OptMethod::GaussNewton,
            ..opts.clone()
        },
    )?;
    let estimate: Vec<f64> = fit
        .solution(&report.delta)?
        .into_iter()
        .flat_map(|(_, v)| v)
        .collect();
    let relative_error = estimate
        .iter()
        .zip(&truth_values)
        .map(|(e, t)| ((e - t) / t).abs())
        .collect();
    // Cramér–Rao at the estimate
    let (_, _, j) = fit.residuals(&report.delta)?;
    let info = j.transpose() * &j;
    let cov = info
        .try_inverse()
        .unwrap_or_else(|| crate::math::DMat::from_element(n, n, f64::INFINITY))
        * (noise * noise);
    let crb_sigma: Vec<f64> = (0..n).map(|i| cov[(i, i)].max(0.0).sqrt()).collect();
    let z_score = estimate
        .iter()
        .zip(&truth_values)
        .zip(&crb_sigma)
        .map(|((e, t), s)| if *s > 0.0 { (e - t) / s } else { f64::NAN })
        .collect();
    Ok(Identification {
        labels: obj.labels(),
        truth: truth_values,
        guess,
        estimate,
        relative_error,
        crb_sigma,
        z_score,
        report,
    })
}
