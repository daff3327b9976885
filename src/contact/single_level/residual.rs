use super::*;

/// A cone block of the island unknowns: `z` and `s` starts, dimension
/// (1: orthant), first residual row, Nesterov–Todd scaled (friction).
#[derive(Clone, Copy, Debug)]
pub(super) struct ConeBlock {
    pub(super) z: usize,
    pub(super) s: usize,
    pub(super) dim: usize,
    pub(super) row: usize,
    pub(super) nt: bool,
}

/// An island of the single-level problem.
pub(super) struct Isl<T: Scalar> {
    /// Global body indices.
    pub(super) bodies: Vec<usize>,
    /// Global → local body index.
    pub(super) local: Vec<usize>,
    /// Pairs (lowered in T).
    pub(super) pairs: Vec<Lowered<T>>,
    /// The same on primal values (the Newton matrix).
    pub(super) pairs_f: Vec<Lowered<f64>>,
    /// Offset of each pair's unknowns in the island vector.
    pub(super) offsets: Vec<usize>,
    /// Total unknowns.
    pub(super) size: usize,
    /// Cone blocks.
    pub(super) cones: Vec<ConeBlock>,
    /// Whether each row is an equality row.
    pub(super) equality: Vec<bool>,
}

impl<T: Scalar> Isl<T> {
    pub(super) fn new(bodies: Vec<usize>, local: Vec<usize>, pairs: Vec<Lowered<T>>) -> Self {
        let mut offsets = Vec::with_capacity(pairs.len());
        let mut off = 6 * bodies.len();
        let mut cones = Vec::new();
        let mut equality = vec![true; off];
        for lp in &pairs {
            offsets.push(off);
            let (n, m) = (lp.n, lp.m());
            let law = lp.pair.law;
            equality.extend(std::iter::repeat_n(true, n + m));
            equality.extend(std::iter::repeat_n(false, m));
            equality.extend(std::iter::repeat_n(true, law.equalities()));
            equality.extend(std::iter::repeat_n(false, law.size() - law.equalities()));
            let (s0, z0) = (off + n, off + n + m);
            for i in 0..lp.layout.n_orthant {
                cones.push(ConeBlock {
                    z: z0 + i,
                    s: s0 + i,
                    dim: 1,
                    row: z0 + i,
                    nt: false,
                });
            }
            for (st, d) in lp.layout.soc_blocks() {
                cones.push(ConeBlock {
                    z: z0 + st,
                    s: s0 + st,
                    dim: d,
                    row: z0 + st,
                    nt: false,
                });
            }
            let c0 = off + n + 2 * m;
            let mut row = c0 + law.equalities();
            for &(z, s) in law.orthant_pairs() {
                cones.push(ConeBlock {
                    z: c0 + z,
                    s: c0 + s,
                    dim: 1,
                    row,
                    nt: false,
                });
                row += 1;
            }
            for &(z, s) in law.soc_pairs() {
                cones.push(ConeBlock {
                    z: c0 + z,
                    s: c0 + s,
                    dim: 3,
                    row,
                    nt: true,
                });
                row += 3;
            }
            off += lp.size();
        }
        let pairs_f = pairs.iter().map(|lp| lp.cast()).collect();
        Isl {
            bodies,
            local,
            pairs,
            pairs_f,
            offsets,
            size: off,
            cones,
            equality,
        }
    }

    pub(super) fn degree(&self) -> usize {
        self.cones.len()
    }
}

pub(super) fn body_arrays<S: Scalar>(
    p: &StepProblem<'_, S>,
    g: usize,
    v: &[S],
) -> ([S; 7], [S; 6]) {
    let b = &p.model.bodies[g];
    (
        core::array::from_fn(|k| p.q[b.idx_q + k]),
        core::array::from_fn(|k| v[k]),
    )
}

/// Island residual `r_κ(u)` and the pair evaluations.
pub(super) fn island_residual<S: Scalar>(
    p: &StepProblem<'_, S>,
    isl_bodies: &[usize],
    local: &[usize],
    pairs: &[Lowered<S>],
    offsets: &[usize],
    u: &DVec<S>,
    kappa: S,
) -> Result<(DVec<S>, Vec<PairEval<S>>), SolveError> {
    let mut r = DVec::zeros(u.len());
    let mut poses = Vec::with_capacity(isl_bodies.len());
    let mut vels = Vec::with_capacity(isl_bodies.len());
    for (li, &g) in isl_bodies.iter().enumerate() {
        let vb: Vector6<S> = u.fixed_rows::<6>(6 * li).into_owned();
        let rb = body_residual(p.model, g, p.q, p.v, &vb, p.u, &p.gravity, p.h)?;
        r.fixed_rows_mut::<6>(6 * li).copy_from(&rb);
        let (q, v) = body_arrays(p, g, vb.as_slice());
        let pose = pose_after(&q, &v, p.h)
            .map_err(|source| DynamicsError::Retraction { body: g, source })?;
        poses.push(pose);
        vels.push(v);
    }
    let mut evals = Vec::with_capacity(pairs.len());
    for (lp, &off) in pairs.iter().zip(offsets) {
        let la = local[lp.pair.a];
        let other = match lp.pair.b {
            Partner::Body(j) => Some((&poses[local[j]], &vels[local[j]])),
            Partner::Static(_) => None,
        };
        let ev = pair_eval(
            lp,
            &poses[la],
            &vels[la],
            other,
            p.h,
            &u.as_slice()[off..off + lp.size()],
            kappa,
        )?;
        r.rows_mut(off, lp.size()).copy_from(&ev.rows);
        {
            let mut seg = r.fixed_rows_mut::<6>(6 * la);
            seg -= ev.gen_a;
        }
        if let (Partner::Body(j), Some(gb)) = (lp.pair.b, ev.gen_b) {
            let mut seg = r.fixed_rows_mut::<6>(6 * local[j]);
            seg -= gb;
        }
        evals.push(ev);
    }
    Ok((r, evals))
}

/// The problem cast to scalar `S` on primal values: `f64` for the Newton
/// matrix, the dual scalar [`D`] for the dual-number reference
/// ([`SingleLevel::newton_matrix_discrepancy`]).
pub(super) struct CastProblem<S: Scalar> {
    pub(super) model: crate::dynamics::Model<S>,
    pub(super) shapes: Vec<Option<Shape<S>>>,
    pub(super) materials: Vec<crate::geometry::Material<S>>,
    pub(super) statics: Vec<crate::geometry::StaticGeometry<S>>,
    pub(super) q: DVec<S>,
    pub(super) v: DVec<S>,
    pub(super) u: DVec<S>,
}

impl<S: Scalar> CastProblem<S> {
    pub(super) fn new<T: Scalar>(p: &StepProblem<'_, T>) -> Self {
        let c = |x: &DVec<T>| x.map(|e| S::from_re(e.re()));
        CastProblem {
            model: p.model.cast(),
            shapes: p
                .shapes
                .iter()
                .map(|s| s.as_ref().map(|s| s.cast()))
                .collect(),
            materials: p.materials.iter().map(|m| m.cast()).collect(),
            statics: p.statics.iter().map(|s| s.cast()).collect(),
            q: c(p.q),
            v: c(p.v),
            u: c(p.u),
        }
    }
    pub(super) fn problem<'a, T: Scalar>(&'a self, p: &StepProblem<'a, T>) -> StepProblem<'a, S> {
        StepProblem {
            model: &self.model,
            shapes: &self.shapes,
            materials: &self.materials,
            statics: &self.statics,
            link_shapes: &[],
            friction_combine: p.friction_combine,
            restitution_combine: p.restitution_combine,
            q: &self.q,
            v: &self.v,
            u: &self.u,
            gravity: p.gravity.map(|x| S::from_re(x.re())),
            h: S::from_re(p.h.re()),
            friction_cone: p.friction_cone,
            params: p.params,
            ccd: p.ccd,
        }
    }
}
