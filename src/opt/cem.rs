//! The cross-entropy method (Rubinstein 1999; as used for trajectory
//! optimization by e.g. MPPI/CEM planners): a zeroth-order baseline.
//!
//! Each iteration samples `population` points `δ ~ N(μ, diag σ²)`,
//! evaluates the cost of each, and refits μ and σ to the `elite` best
//! (with smoothing `α`: `μ ← α μ_elite + (1 − α) μ`, the same for σ). Only
//! f64 rollouts are used. The generator is a seeded xorshift64* with
//! Box–Muller normals, so runs are reproducible.

/// Parameters of [`minimize`].
#[derive(Clone, Debug, PartialEq)]
pub struct CemParams {
    /// Samples per iteration. Default 64.
    pub population: usize,
    /// Number of best samples the distribution is refitted to. Default 8.
    pub elite: usize,
    /// Initial standard deviation of every coordinate. Default 1.
    pub sigma0: f64,
    /// Smoothing of the refit (1 = no memory). Default 0.8.
    pub alpha: f64,
    /// Seed of the generator. Default 1.
    pub seed: u64,
}

impl Default for CemParams {
    fn default() -> Self {
        CemParams {
            population: 64,
            elite: 8,
            sigma0: 1.0,
            alpha: 0.8,
            seed: 1,
        }
    }
}

/// xorshift64* (Vigna 2016).
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next_f64(), self.next_f64());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// A seeded standard normal generator (xorshift64* + Box–Muller).
pub struct Normal(Rng);

impl Normal {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Normal(Rng(seed.max(1)))
    }

    /// One sample of N(0, 1).
    pub fn sample(&mut self) -> f64 {
        self.0.normal()
    }
}

/// Minimizes `cost` from `x0`; `stop(iteration, best_cost)` is called
/// after each iteration with the best cost so far and ends the run when it
/// returns true. A cost that fails (`None`) counts as `+∞`. Each sample
/// is passed through `project` (the objective's bounds: samples outside
/// the box are clamped onto it) before it is evaluated. Returns the best
/// point and its cost.
pub fn minimize(
    cost: &mut dyn FnMut(&[f64]) -> Option<f64>,
    x0: &[f64],
    params: &CemParams,
    stop: &mut dyn FnMut(usize, f64) -> bool,
    project: &dyn Fn(&mut [f64]),
) -> (Vec<f64>, f64) {
    let n = x0.len();
    let mut rng = Rng(params.seed.max(1));
    let mut mu = x0.to_vec();
    let mut sigma = vec![params.sigma0; n];
    let mut best = (x0.to_vec(), cost(x0).unwrap_or(f64::INFINITY));
    let elite = params.elite.clamp(1, params.population.max(1));
    for it in 1.. {
        let mut samples: Vec<(f64, Vec<f64>)> = (0..params.population.max(1))
            .map(|_| {
                let mut x: Vec<f64> = (0..n).map(|i| mu[i] + sigma[i] * rng.normal()).collect();
                project(&mut x);
                let c = cost(&x).filter(|c| c.is_finite()).unwrap_or(f64::INFINITY);
                (c, x)
            })
            .collect();
        samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        if samples[0].0 < best.1 {
            best = (samples[0].1.clone(), samples[0].0);
        }
        let top = &samples[..elite];
        for i in 0..n {
            let m = top.iter().map(|(_, x)| x[i]).sum::<f64>() / elite as f64;
            let v = top.iter().map(|(_, x)| (x[i] - m).powi(2)).sum::<f64>() / elite as f64;
            mu[i] = params.alpha * m + (1.0 - params.alpha) * mu[i];
            sigma[i] = params.alpha * v.sqrt() + (1.0 - params.alpha) * sigma[i];
        }
        if stop(it, best.1) {
            break;
        }
    }
    best
}
