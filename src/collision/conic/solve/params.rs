//! The tuning of the interior-point solver ([`ConicParams`]).

/// Tuning of the interior-point solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConicParams {
    /// Iteration limit (DCOL: 50).
    pub max_iters: usize,
    /// Stop when the mean complementarity `μ = sᵀz/ν` is below this value …
    pub tol_gap: f64,
    /// … and both residuals `‖c + Gᵀz‖∞`, `‖s + Gx − h‖∞` are below this.
    pub tol_residual: f64,
    /// Fraction to the boundary (DCOL: 0.99; Dojo/Silico use 0.95). A
    /// value in (0.9, 0.99999) is raised to 0.99999 near the solution (see
    /// the module docs); 0.9 (the retry after a breakdown) is kept
    /// throughout.
    pub tau: f64,
    /// At most this many Newton steps on `s ∘ z = tol_gap · e` once the
    /// tolerances are met (stopping early when `‖s ∘ z − μe‖∞ ≤ 1e-6 μ` or
    /// a step changes x by less than 1e-14; typically 1–6 are taken). The
    /// returned point is then the central-path point of the fixed parameter
    /// μ = tol_gap, a smooth function of the data (Silico's relaxed
    /// solution), which the IFT of `proximity_gradient` differentiates
    /// exactly and finite differences reproduce. On the central path the
    /// duals of an active second-order cone are aligned with its slack
    /// (`z ∝ Js`); without these steps the misalignment is
    /// `O(√(distance to the boundary))`, derivatives are only good to ~1e-6
    /// and the witness point jitters by ~1e-6 between solves. Default 25.
    pub centering: usize,
    /// The centering steps stop once `‖s ∘ z − μe‖∞ ≤ centering_tolerance · μ`
    /// (or a step changes x by less than 1e-14). Default 1e-6; the `ipm`
    /// backend's conic contacts use 1e-10, so that the witness point and
    /// normal (from the duals) are smooth to round-off in the poses and its
    /// step converges to its 1e-8 tolerance when several parts rest on one
    /// face.
    pub centering_tolerance: f64,
    /// Rounds of iterative refinement of each corrector / centering
    /// direction (CVXOPT refines too). 2 keeps the residuals at round-off
    /// near the solution; with 1, about 1 solve in 5000 of the random test
    /// stalls (padded polygons). Corrector directions are refined once
    /// `μ ≤ 1e-6` (earlier the system is well conditioned and a round
    /// changes the direction by round-off only); centering directions
    /// always. Default 2.
    pub refinement: usize,
}

impl Default for ConicParams {
    /// Tight defaults (μ 1e-12, residual 1e-10): the derivative routines
    /// and finite-difference checks need α to about 1e-12.
    fn default() -> Self {
        ConicParams {
            max_iters: 60,
            tol_gap: 1e-12,
            tol_residual: 1e-10,
            tau: 0.99,
            refinement: 2,
            centering: 25,
            centering_tolerance: 1e-6,
        }
    }
}
