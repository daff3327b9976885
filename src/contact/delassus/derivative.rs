use super::*;

/// Pseudo-inverse of a square matrix (SVD of the whole matrix, singular
/// values below `1e-12 σ_max` dropped).
pub fn pinv(j: &DMat<f64>) -> Result<DMat<f64>, SolveError> {
    if j.nrows() == 0 {
        return Ok(DMat::zeros(0, 0));
    }
    let svd = crate::linalg::Svd::new(j);
    let smax = svd.max_singular_value();
    if !(smax > 0.0 && smax.is_finite()) {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    svd.pseudo_inverse(1e-12 * smax)
        .ok_or(SolveError::Singular("residual Jacobian"))
}

/// The pseudo-inverse of `∂r/∂y` (as [`pinv`]) when it determines the
/// velocity rows: every null vector of `J` (right singular vector of a
/// dropped singular value) must have no part in the first `nv` unknowns
/// (`v⁺`). Redundant contacts of a resting or uniformly sliding body only
/// leave the impulses undetermined; where the distribution of the
/// impulses moves `v⁺` (Coulomb friction on redundant contacts whose slip
/// directions differ, as a box that slides and spins flat on its four
/// corners), the step map is set-valued, the solve's `v⁺` is one point of
/// a family and no derivative exists: [`SolveError::NotUnique`], with the
/// size of the null space's velocity part.
pub fn pinv_unique(j: &DMat<f64>, nv: usize) -> Result<DMat<f64>, SolveError> {
    if j.nrows() == 0 {
        return Ok(DMat::zeros(0, 0));
    }
    let svd = BlockSvd::new(j);
    let smax = svd.max_singular_value();
    if !(smax > 0.0 && smax.is_finite()) {
        return Err(SolveError::Singular("residual Jacobian"));
    }
    let cut = 1e-12 * smax;
    let (dim, part) = svd.null_part(cut, nv.min(j.ncols()));
    if part > NOT_UNIQUE {
        return Err(SolveError::NotUnique {
            null_dims: dim,
            velocity_part: part,
        });
    }
    svd.pseudo_inverse(cut)
        .ok_or(SolveError::Singular("residual Jacobian"))
}

/// Largest velocity part ([`pinv_unique`]) of the unit null space of
/// `∂r/∂y` taken as round-off of a rank-deficient but velocity-determined
/// system.
pub const NOT_UNIQUE: f64 = 1e-8;

/// `(∂r/∂y) X = rhs` by the pseudo-inverse (module docs).
pub fn pinv_solve<F: Formulation>(
    form: &F,
    p: &StepProblem<'_, f64>,
    s: &Structure,
    y: &DVec<f64>,
    rhs: &DMat<f64>,
) -> Result<DMat<f64>, SolveError> {
    crate::contact::backend::check_rows(y, rhs)?;
    let j = dense_jacobian(form, p, s, y)?;
    let x = pinv_unique(&j, p.model.nv)? * rhs;
    // The minimum-norm solution is the derivative only when the system is
    // consistent (redundant rows, not a true singularity).
    let scale = rhs.amax().max(1.0);
    let r = &j * &x - rhs;
    let (mut column, mut miss) = (0, 0.0f64);
    for (c, col) in r.column_iter().enumerate() {
        let m = col.amax() / scale;
        if !(m <= miss) {
            (column, miss) = (c, m);
        }
    }
    if !(miss <= 1e-6) {
        return Err(SolveError::OutOfRange { column, miss });
    }
    Ok(x)
}

/// The unknowns of a unit test's island as fixed-size vectors (used by
/// the backends' tests).
#[doc(hidden)]
pub fn rows3(z: &DVec<f64>) -> Vec<Vector3<f64>> {
    (0..z.len() / Z)
        .map(|k| z.fixed_rows::<Z>(Z * k).into_owned())
        .collect()
}
