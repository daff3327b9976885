use super::*;

pub(super) fn at(k: usize, e: DiffError) -> DiffError {
    DiffError::AtStep {
        step: k,
        source: Box::new(e),
    }
}

/// Where each decision variable enters: the initial tangent, a model
/// parameter slot, or a step's control.
#[derive(Clone, Debug)]
pub(super) struct InputMap {
    pub(super) nv: usize,
    pub(super) model: Vec<Param>,
    /// Per input: `Init(row of ξ_0)`, `Model(slot)`, `Control(step, i)`.
    pub(super) kinds: Vec<Kind>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Init(usize),
    Model(usize),
    Control(usize, usize),
}

impl InputMap {
    pub(super) fn new(nv: usize, steps: usize, inputs: &[Input]) -> Result<Self, DiffError> {
        let mut model: Vec<Param> = Vec::new();
        let mut kinds = Vec::with_capacity(inputs.len());
        for inp in inputs {
            kinds.push(match *inp {
                Input::Config(i) if i < nv => Kind::Init(i),
                Input::Velocity(i) if i < nv => Kind::Init(nv + i),
                Input::Model(p @ (Param::Q(_) | Param::V(_) | Param::U(_))) => {
                    return Err(DiffError::BadParam(format!(
                        "{p:?} is not a model parameter"
                    )));
                }
                Input::Model(p) => {
                    let slot = model.iter().position(|q| *q == p).unwrap_or_else(|| {
                        model.push(p);
                        model.len() - 1
                    });
                    Kind::Model(slot)
                }
                Input::Control { step, index } if step < steps && index < nv => {
                    Kind::Control(step, index)
                }
                _ => {
                    return Err(DiffError::BadParam(format!(
                        "{inp:?} is outside the rollout"
                    )));
                }
            });
        }
        Ok(InputMap { nv, model, kinds })
    }

    /// `T_k = ∂z_k/∂θ` restricted to `cols` (`m × cols.len()`), from the
    /// state sensitivity `s` (`2 nv × n`).
    pub(super) fn local_tangent(&self, k: usize, s: &DMat<f64>, cols: &[usize]) -> DMat<f64> {
        let nv = self.nv;
        let np = self.model.len();
        let mut t = DMat::zeros(3 * nv + np, cols.len());
        for (j, &c) in cols.iter().enumerate() {
            t.view_mut((0, j), (2 * nv, 1)).copy_from(&s.column(c));
            match self.kinds[c] {
                Kind::Model(slot) => t[(2 * nv + slot, j)] = 1.0,
                Kind::Control(step, i) if step == k => t[(2 * nv + np + i, j)] = 1.0,
                _ => {}
            }
        }
        t
    }

    /// The columns that can be nonzero in `T_k`: every input but the
    /// controls of later steps.
    pub(super) fn live(&self, k: usize) -> Vec<usize> {
        (0..self.kinds.len())
            .filter(|&c| !matches!(self.kinds[c], Kind::Control(step, _) if step > k))
            .collect()
    }

    /// The local direction `ż_k` of the input direction `v`, given `ṡ_k`.
    pub(super) fn local_dir(&self, k: usize, sdot: &DVec<f64>, v: &DVec<f64>) -> DVec<f64> {
        let nv = self.nv;
        let np = self.model.len();
        let mut z = DVec::zeros(3 * nv + np);
        z.rows_mut(0, 2 * nv).copy_from(sdot);
        for (c, kind) in self.kinds.iter().enumerate() {
            match *kind {
                Kind::Model(slot) => z[2 * nv + slot] += v[c],
                Kind::Control(step, i) if step == k => z[2 * nv + np + i] += v[c],
                _ => {}
            }
        }
        z
    }

    /// Scatters a step's local gradient `w_k` (controls and model parts)
    /// into `g`.
    pub(super) fn scatter(&self, k: usize, w: &DVec<f64>, g: &mut DVec<f64>) {
        let nv = self.nv;
        let np = self.model.len();
        for (c, kind) in self.kinds.iter().enumerate() {
            match *kind {
                Kind::Model(slot) => g[c] += w[2 * nv + slot],
                Kind::Control(step, i) if step == k => g[c] += w[2 * nv + np + i],
                _ => {}
            }
        }
    }

    pub(super) fn scatter_init(&self, lambda0: &DVec<f64>, g: &mut DVec<f64>) {
        for (c, kind) in self.kinds.iter().enumerate() {
            if let Kind::Init(r) = *kind {
                g[c] += lambda0[r];
            }
        }
    }
}
