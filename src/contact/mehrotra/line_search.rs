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
