use super::*;

/// A pair lowered to conic form, in scalar `S`.
#[derive(Clone, Debug)]
pub struct Lowered<S: Scalar> {
    /// The pair.
    pub pair: ConicPair,
    /// Friction coefficient.
    pub mu: S,
    /// Conic constraint of part a.
    pub cone_a: LocalCone<S>,
    /// Conic constraint of part b.
    pub cone_b: LocalCone<S>,
    /// Pose of part a in body a's frame.
    pub local_a: Pose<S>,
    /// Pose of part b in body b's frame, or in the world for a static.
    pub local_b: Pose<S>,
    /// Number of collision primal unknowns `n = 4 + n_aux_a + n_aux_b`.
    pub n: usize,
    /// Cone layout of the collision rows (`m = layout.dim()`).
    pub layout: ConeLayout,
}

impl<S: Scalar> Lowered<S> {
    /// Number of collision rows.
    pub fn m(&self) -> usize {
        self.layout.dim()
    }
    /// Number of unknowns `n + 2m + law.size()`.
    pub fn size(&self) -> usize {
        self.n + 2 * self.m() + self.pair.law.size()
    }
}

/// Lowers a pair of the problem.
pub fn lower_pair<S: Scalar>(
    p: &StepProblem<'_, S>,
    pair: &ConicPair,
) -> Result<Lowered<S>, SolveError> {
    let missing = SolveError::Mismatch {
            what: "a convex part the shape does not have",
        };
    let (sa, local_a) = body_parts(p, pair.a)
        .into_iter()
        .nth(pair.part_a)
        .ok_or(missing.clone())?;
    let (sb, local_b) = match pair.b {
        Partner::Body(j) => body_parts(p, j).into_iter().nth(pair.part_b),
        Partner::Static(j) => static_parts(p, j).into_iter().nth(pair.part_b),
    }
    .ok_or(missing)?;
    let cone_a = lower(&sa)?;
    let cone_b = lower(&sb)?;
    let n = 4 + cone_a.n_aux + cone_b.n_aux;
    let layout = ConeLayout {
        n_orthant: 1 + cone_a.layout.n_orthant + cone_b.layout.n_orthant,
        soc: cone_a
            .layout
            .soc
            .iter()
            .chain(cone_b.layout.soc.iter())
            .copied()
            .collect(),
    };
    Ok(Lowered {
        pair: pair.clone(),
        mu: pair_mu(p, pair.a, pair.b),
        cone_a,
        cone_b,
        local_a,
        local_b,
        n,
        layout,
    })
}

impl<S: Scalar> Lowered<S> {
    pub(super) fn cast<U: Scalar>(&self) -> Lowered<U> {
        let c = |l: &LocalCone<S>| LocalCone {
            m: l.m.map(|x| U::from_re(x.re())),
            layout: l.layout.clone(),
            n_aux: l.n_aux,
        };
        Lowered {
            pair: self.pair.clone(),
            mu: U::from_re(self.mu.re()),
            cone_a: c(&self.cone_a),
            cone_b: c(&self.cone_b),
            local_a: self.local_a.cast(),
            local_b: self.local_b.cast(),
            n: self.n,
            layout: self.layout.clone(),
        }
    }
}
