use super::*;

/// Largest step keeping every cone variable in its cone (may be ∞).
pub(super) fn boundary_step<T: Scalar>(island: &Island<T>, xs: &[DVec<T>], dxs: &[DVec<T>]) -> f64 {
    let mut alpha = f64::INFINITY;
    for ((cand, x), d) in island.contacts.iter().zip(xs).zip(dxs) {
        for &(z, s) in cand.law.orthant_pairs() {
            alpha = alpha.min(orthant_step(x[z].re(), d[z].re()));
            alpha = alpha.min(orthant_step(x[s].re(), d[s].re()));
        }
        for &(z, s) in cand.law.soc_pairs() {
            for base in [z, s] {
                let xv = [x[base].re(), x[base + 1].re(), x[base + 2].re()];
                let dv = [d[base].re(), d[base + 1].re(), d[base + 2].re()];
                alpha = alpha.min(soc_step(xv, dv));
            }
        }
    }
    alpha
}

/// A point of the iteration: velocities, contact unknowns and their
/// evaluation.
pub(super) struct Point<T: Scalar> {
    pub(super) v: DVec<T>,
    pub(super) xs: Vec<DVec<T>>,
    pub(super) ev: Eval<T>,
}

impl<T: Scalar> Point<T> {
    pub(super) fn empty() -> Self {
        Point {
            v: DVec::zeros(0),
            xs: Vec::new(),
            ev: Eval {
                r_dyn: DVec::zeros(0),
                jac: Vec::new(),
                contacts: Vec::new(),
            },
        }
    }

    /// Takes the values (and shapes) of `v` and `xs`; the evaluation is
    /// left to the caller.
    pub(super) fn assign(&mut self, v: &DVec<T>, xs: &[DVec<T>]) {
        copy_vec(&mut self.v, v);
        copy_vecs(&mut self.xs, xs);
    }

    /// `self = from + α d` (α applied to the derivative parts only with
    /// `tangent`), then evaluated.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn step_from(
        &mut self,
        p: &StepProblem<'_, T>,
        island: &Island<T>,
        from: &Point<T>,
        dv: &DVec<T>,
        dxs: &[DVec<T>],
        alpha: f64,
        tangent: bool,
    ) -> Result<(), SolveError> {
        let a = T::from_re(alpha);
        let scale = |d: T| {
            if tangent {
                d - T::from_re(d.re())
            } else {
                d * a
            }
        };
        for ((t, v), d) in self.v.iter_mut().zip(from.v.iter()).zip(dv.iter()) {
            *t = *v + scale(*d);
        }
        for ((t, x), d) in self.xs.iter_mut().zip(&from.xs).zip(dxs) {
            for ((ti, xi), di) in t.iter_mut().zip(x.iter()).zip(d.iter()) {
                *ti = *xi + scale(*di);
            }
        }
        evaluate_into(p, island, &self.v, &self.xs, &mut self.ev)
    }
}

/// Where the point to move to is.
#[derive(PartialEq)]
pub(super) enum Taken {
    Trial,
    Center,
}

/// The outcome of [`search_directions`].
pub(super) struct Search {
    /// The trial point accepted (in the work's `trial`), if any.
    pub(super) taken: Option<Taken>,
    /// The merit of the best rejected trial (in the work's `best`).
    pub(super) best_merit: Option<f64>,
    /// The accepted step length (0 when none was).
    pub(super) accepted_alpha: f64,
    /// The accepted direction was the one of the iteration's own
    /// factorization `fac` (not of `plain`).
    pub(super) accepted_fac: bool,
}

/// The buffers [`search_directions`] writes.
pub(super) struct SearchWork<'a, T: Scalar> {
    pub(super) trial: &'a mut Point<T>,
    pub(super) best: &'a mut Point<T>,
    pub(super) dv: &'a mut DVec<T>,
    pub(super) dxs: &'a mut [DVec<T>],
    pub(super) dx_aff: &'a [DVec<T>],
    pub(super) rc: &'a mut [DVec<T>],
    pub(super) dir: &'a mut DirWork<T>,
    pub(super) fac: &'a Factored<T>,
    pub(super) plain: &'a mut Factored<T>,
}

/// Backtracking line search on ‖r_κ‖² from `cur` along each direction of
/// `dirs` in turn (`(second-order term, Nesterov–Todd scaled)`: the
/// corrector, then the Newton direction, then, when NT scaling is on, the
/// unscaled Newton direction, which is a descent direction of ‖r_κ‖²),
/// until one finds a sufficient decrease (Armijo, from `merit0`). The
/// second-order term can make the corrector an ascent direction far from
/// the solution; when no direction finds a decrease, the caller takes the
/// best trial. An unscaled direction is factored into `plain` (once).
#[allow(clippy::too_many_arguments)]
pub(super) fn search_directions<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    params: &Params,
    kappa: f64,
    merit0: f64,
    lin: Linearization,
    dirs: [Option<(bool, bool)>; 3],
    cur: &Point<T>,
    w: SearchWork<'_, T>,
) -> Result<Search, SolveError> {
    let nt = params.nesterov_todd;
    let SearchWork {
        trial,
        best,
        dv,
        dxs,
        dx_aff,
        rc,
        dir,
        fac,
        plain,
    } = w;
    let mut taken = None;
    let mut best_merit: Option<f64> = None;
    let mut accepted_alpha = 0.0;
    let mut plain_ready = false;
    let mut accepted_fac = false;
    for (so, scaled) in dirs.into_iter().flatten() {
        let corrector = so.then_some(dx_aff);
        local_residuals(
            island,
            &cur.ev,
            &cur.xs,
            T::from_re(kappa),
            corrector,
            scaled,
            rc,
        );
        let f = if scaled == nt {
            fac
        } else {
            if !plain_ready {
                factor_into(p, island, &cur.ev, &cur.v, &cur.xs, scaled, lin, plain)?;
                plain_ready = true;
            }
            &*plain
        };
        direction(island, &cur.ev, f, rc, dir, dv, dxs)?;
        let mut alpha =
            (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
        for _ in 0..=params.max_backtracks {
            if trial
                .step_from(p, island, cur, dv, dxs, alpha, false)
                .is_ok()
            {
                let merit = measures(island, &trial.ev, &trial.xs, kappa).merit;
                if merit <= (1.0 - params.armijo * alpha) * merit0 {
                    accepted_alpha = alpha;
                    accepted_fac = scaled == nt;
                    taken = Some(Taken::Trial);
                    break;
                }
                if best_merit.is_none_or(|m| merit < m) {
                    best_merit = Some(merit);
                    std::mem::swap(best, trial);
                }
            }
            alpha *= params.backtrack_factor;
        }
        if taken.is_some() {
            break;
        }
    }
    Ok(Search {
        taken,
        best_merit,
        accepted_alpha,
        accepted_fac,
    })
}

/// Blocked against a cone boundary (a badly centred pair): a pure
/// centering step from `cur` towards κ = max(ν, ρ) into `center`,
/// accepted without the merit test (the longest evaluable trial), so the
/// next iterations can make progress. `true` when a trial evaluated.
#[allow(clippy::too_many_arguments)]
pub(super) fn recentre<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    params: &Params,
    nu: f64,
    cur: &Point<T>,
    center: &mut Point<T>,
    fac: &Factored<T>,
    rc: &mut [DVec<T>],
    dir: &mut DirWork<T>,
    dv: &mut DVec<T>,
    dxs: &mut [DVec<T>],
) -> Result<bool, SolveError> {
    let nt = params.nesterov_todd;
    let kc = T::from_re(nu.max(p.params.rho));
    local_residuals(island, &cur.ev, &cur.xs, kc, None, nt, rc);
    direction(island, &cur.ev, fac, rc, dir, dv, dxs)?;
    let mut alpha = (params.fraction_to_boundary * boundary_step(island, &cur.xs, dxs)).min(1.0);
    for _ in 0..=params.max_backtracks {
        if center
            .step_from(p, island, cur, dv, dxs, alpha, false)
            .is_ok()
        {
            return Ok(true);
        }
        alpha *= params.backtrack_factor;
    }
    Ok(false)
}
