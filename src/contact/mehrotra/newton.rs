use super::*;
use crate::contact::candidates::Candidate;
use crate::contact::space::evaluate::ContactEval;

/// Factorized Newton system of one iterate: the reduced matrix in `v⁺`
/// and the per-contact blocks needed to recover `dx_c`. Its storage is
/// reused by [`factor_into`].
pub(super) struct Factored<T: Scalar> {
    /// The reduced matrix, assembled (dense path).
    pub(super) r: DMat<T>,
    /// The reduced matrix, assembled (sparse path, a scalar with the
    /// `f64` view: its primal values are its values), with the pattern of
    /// the island being solved.
    pub(super) sparse: Option<BlockCsc<f64>>,
    pub(super) reduced: ReducedLu<T>,
    /// LU of each `A_c`, with `A_c⁻¹ C_c`.
    pub(super) local: Vec<LocalLu<T>>,
    /// `(island unit, K block)` of each contact, `K = ∂y/∂v⁺`.
    pub(super) k_blocks: Vec<Vec<(usize, Matrix3xX<T>)>>,
    /// Nesterov–Todd scaling `(W, W⁻¹)` of each contact's friction cone
    /// pair at the factored point, when its rows were scaled and the
    /// island has at least [`SPARSE_MIN_ROWS`] rows (chord steps'
    /// right-hand sides, [`chord_residuals`], which run only there).
    pub(super) nt_w: Vec<Option<(Matrix3<T>, Matrix3<T>)>>,
}

impl<T: Scalar> Factored<T> {
    pub(super) fn empty() -> Self {
        Factored {
            r: DMat::zeros(0, 0),
            sparse: None,
            reduced: ReducedLu::Dense(DenseLu::default()),
            local: Vec::new(),
            k_blocks: Vec::new(),
            nt_w: Vec::new(),
        }
    }
}

/// How the contact blocks `K = ∂y/∂v⁺` and `G = ∂(Wᵀf)/∂v⁺` of the
/// Newton matrix are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Linearization {
    /// Closed form from the impulse map at the iterate: `K = diag(h, 1, 1) W`
    /// (the normal row is exact, `W`'s normal row being `∂φ/∂v⁺ / h`; the
    /// tangent rows leave out the motion of the contact frame and lever
    /// arms with `q⁺`, which is O(h)) and `G = 0`. No dual numbers: the
    /// Newton iterations converge to the same root, at a linear rate of
    /// order `h ‖f‖ ‖r‖ / ‖M‖` once close.
    ClosedForm,
    /// Exact `K` and `G` by one forward-mode dual evaluation of the contact
    /// kinematics: the Jacobian the implicit-function derivatives and the
    /// polishing steps of a dual scalar need.
    Exact,
}

pub(super) fn factor<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ev: &Eval<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    nt: bool,
    lin: Linearization,
) -> Result<Factored<T>, SolveError> {
    let mut fac = Factored::empty();
    factor_into(p, island, ev, v, xs, nt, lin, &mut fac)?;
    Ok(fac)
}

/// Where the reduced matrix is assembled: dense, or block-sparse (blocks
/// indexed by island unit).
pub(super) enum Target<'a, T: Scalar> {
    Dense(&'a mut DMat<T>),
    Sparse(&'a mut BlockCsc<f64>),
}

/// `r[rows of unit lw, cols of unit lk] += Wᵀ N K − G` for one pair of
/// sides of a contact (`N = E A_c⁻¹ C_c`, 3 × 3), without temporaries.
/// `(lw, ow, W)`: unit, its offset in the island velocity, its `W` block.
pub(super) fn add_block<T: Scalar, G: std::ops::Index<(usize, usize), Output = f64>>(
    target: &mut Target<'_, T>,
    (lw, ow, w): (usize, usize, &Matrix3xX<T>),
    n3: &Matrix3<T>,
    (lk, ok, k): (usize, usize, &Matrix3xX<T>),
    g: Option<&G>,
) -> Result<(), SolveError> {
    match target {
        Target::Dense(r) => block_product(w, n3, k, g, |i, j, v| r[(ow + i, ok + j)] += v),
        Target::Sparse(s) => {
            let b = s.block(lw, lk).ok_or(SolveError::Singular(
                "reduced system (block outside the pattern)",
            ))?;
            block_product(w, n3, k, g, |i, j, v| s.add(b, i, j, v.re()));
        }
    }
    Ok(())
}

/// `put(i, j, (Wᵀ N K − G)[(i, j)])` for every entry of one block.
#[inline]
pub(super) fn block_product<T: Scalar, G: std::ops::Index<(usize, usize), Output = f64>>(
    w: &Matrix3xX<T>,
    n3: &Matrix3<T>,
    k: &Matrix3xX<T>,
    g: Option<&G>,
    mut put: impl FnMut(usize, usize, T),
) {
    // The closed form (no G) uses W's primal values (see `Linearization`).
    let wv = |a: usize, i: usize| match g {
        Some(_) => w[(a, i)],
        None => T::from_re(w[(a, i)].re()),
    };
    for i in 0..w.ncols() {
        // Row i of Wᵀ N.
        let wn: [T; 3] = core::array::from_fn(|a| {
            wv(0, i) * n3[(0, a)] + wv(1, i) * n3[(1, a)] + wv(2, i) * n3[(2, a)]
        });
        for j in 0..k.ncols() {
            let mut add = wn[0] * k[(0, j)] + wn[1] * k[(1, j)] + wn[2] * k[(2, j)];
            if let Some(g) = g {
                add -= T::from_re(g[(i, j)]);
            }
            put(i, j, add);
        }
    }
}

/// The block pattern of an island's reduced system: the diagonal blocks
/// and a block for every ordered pair of units sharing a contact.
pub(super) fn reduced_pattern<T: Scalar>(island: &Island<T>, ev: &Eval<T>) -> BlockCsc<f64> {
    let sizes: Vec<usize> = island.units.iter().map(|u| u.size()).collect();
    let coupled = ev.contacts.iter().flat_map(|ce| {
        ce.blocks
            .iter()
            .flat_map(move |(a, _)| ce.blocks.iter().map(move |(b, _)| (*b, *a)))
    });
    BlockCsc::new(&sizes, coupled)
}

/// `s` has the island's unit layout and every block its contacts need.
pub(super) fn pattern_covers<T: Scalar>(
    s: &BlockCsc<f64>,
    island: &Island<T>,
    ev: &Eval<T>,
) -> bool {
    s.sizes().len() == island.units.len()
        && s.sizes()
            .iter()
            .zip(&island.units)
            .all(|(&n, u)| n == u.size())
        && ev.contacts.iter().all(|ce| {
            ce.blocks
                .iter()
                .all(|(a, _)| ce.blocks.iter().all(|(b, _)| s.block(*b, *a).is_some()))
        })
}

/// The island's unit offsets are consecutive in unit order (the layout
/// [`BlockCsc`] assumes).
pub(super) fn consecutive_units<T: Scalar>(island: &Island<T>) -> bool {
    let mut o = 0;
    island.units.iter().all(|u| {
        let ok = u.offset == o;
        o += u.size();
        ok
    })
}

/// Sets slot `s` of `ks` to `(u, K)` with `K[(i, j)] = val(i, j)`
/// (`ncols` columns), reusing its storage when the shape agrees.
pub(super) fn set_k<T: Scalar>(
    ks: &mut Vec<(usize, Matrix3xX<T>)>,
    s: usize,
    u: usize,
    ncols: usize,
    val: impl Fn(usize, usize) -> T,
) {
    if ks.len() == s {
        ks.push((u, Matrix3xX::zeros(ncols)));
    } else if ks[s].1.ncols() != ncols {
        ks[s].1 = Matrix3xX::zeros(ncols);
    }
    let (ku, k) = &mut ks[s];
    *ku = u;
    for j in 0..ncols {
        for i in 0..3 {
            k[(i, j)] = val(i, j);
        }
    }
}

/// The geometric stiffness blocks `G[i][j] = ∂(W_iᵀ f)/∂v_j` of a contact.
// A free body's blocks stay on the stack (one value per contact and
// factorization, never stored): boxing them would put the heap back.
#[allow(clippy::large_enum_variant)]
pub(super) enum Stiffness {
    Body([[Matrix6<f64>; 2]; 2]),
    Robot(Vec<Vec<DMat<f64>>>),
}

#[allow(clippy::too_many_arguments)]
pub(super) fn factor_into<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ev: &Eval<T>,
    v: &DVec<T>,
    xs: &[DVec<T>],
    nt: bool,
    lin: Linearization,
    fac: &mut Factored<T>,
) -> Result<(), SolveError> {
    let dim = island.dim();
    let sparse = has_f64_view::<T>() && dim >= SPARSE_MIN_ROWS && consecutive_units(island);
    let (mut target, fresh) = reduced_target(island, ev, sparse, &mut fac.sparse, &mut fac.r)?;
    fac.local.clear();
    fac.nt_w.clear();
    fac.k_blocks.truncate(xs.len());
    while fac.k_blocks.len() < xs.len() {
        fac.k_blocks.push(Vec::with_capacity(2));
    }
    for (c, ((cand, x), ce)) in island.contacts.iter().zip(xs).zip(&ev.contacts).enumerate() {
        // Only where chord steps may run (`Params::reuse_factorization`
        // needs `SPARSE_MIN_ROWS` rows): elsewhere no step reads it.
        fac.nt_w.push(match cand.law.soc_pairs() {
            [(z, s)] if nt && dim >= SPARSE_MIN_ROWS => {
                let zz = Vec3::new(x[*z], x[z + 1], x[z + 2]);
                let ss = Vec3::new(x[*s], x[s + 1], x[s + 2]);
                let (w, winv, _) = nt_scaling(&zz, &ss);
                Some((w, winv))
            }
            _ => None,
        });
        let lu = LocalLu::new(cand.law, x.as_slice(), cand.mu, nt)
            .ok_or(SolveError::Singular("contact block"))?;
        let n3 = lu.n3(cand.law);
        let ks = &mut fac.k_blocks[c];
        // A conic-program contact (`bilevel`) has a gap whose gradient is
        // not the rigid motion of its witness points: always exact.
        if lin == Linearization::ClosedForm && cand.parts.is_none() {
            closed_form_blocks(p, island, ce, &n3, ks, &mut target)?;
        } else {
            exact_blocks(p, island, cand, ce, v, x, &n3, ks, &mut target)?;
        }
        fac.local.push(lu);
    }
    let ok = match target {
        Target::Dense(r) => fac.reduced.factor(r),
        Target::Sparse(s) => fac.reduced.factor_sparse(s, fresh),
    };
    if !ok {
        return Err(SolveError::Singular("reduced system"));
    }
    Ok(())
}

/// The reduced matrix to assemble, holding the units' dynamics Jacobians
/// on its diagonal: block-sparse in `sparse` (its pattern rebuilt, and
/// `fresh` returned, when it does not cover the island's contacts) with
/// `sparse`, else dense in `dense`.
fn reduced_target<'a, T: Scalar>(
    island: &Island<T>,
    ev: &Eval<T>,
    sparse: bool,
    slot: &'a mut Option<BlockCsc<f64>>,
    dense: &'a mut DMat<T>,
) -> Result<(Target<'a, T>, bool), SolveError> {
    let dim = island.dim();
    let covers = sparse && matches!(slot, Some(s) if pattern_covers(s, island, ev));
    let fresh = sparse && !covers;
    let mut target = if sparse {
        if fresh {
            *slot = Some(reduced_pattern(island, ev));
        }
        Target::Sparse(slot.as_mut().expect("the pattern is set above"))
    } else {
        if dense.shape() != (dim, dim) {
            *dense = DMat::zeros(dim, dim);
        } else {
            dense.fill(T::zero());
        }
        Target::Dense(dense)
    };
    match &mut target {
        Target::Dense(r) => {
            for (u, j) in island.units.iter().zip(&ev.jac) {
                r.view_mut((u.offset, u.offset), (u.size(), u.size()))
                    .copy_from(j);
            }
        }
        Target::Sparse(s) => {
            s.clear();
            for (ui, (u, j)) in island.units.iter().zip(&ev.jac).enumerate() {
                let b = s.block(ui, ui).ok_or(SolveError::Singular(
                    "reduced system (block outside the pattern)",
                ))?;
                for c in 0..u.size() {
                    for r in 0..u.size() {
                        s.add(b, r, c, j[(r, c)].re());
                    }
                }
            }
        }
    }
    Ok((target, fresh))
}

/// A contact's blocks of the reduced matrix in closed form
/// ([`Linearization::ClosedForm`]): `K = diag(h, 1, 1) W` on the primal
/// values into `ks` (in place), `Wᵀ N K` added to `target`.
fn closed_form_blocks<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    ce: &ContactEval<T>,
    n3: &Matrix3<T>,
    ks: &mut Vec<(usize, Matrix3xX<T>)>,
    target: &mut Target<'_, T>,
) -> Result<(), SolveError> {
    let h = p.h.re();
    ks.truncate(ce.blocks.len());
    for (s, (u, w)) in ce.blocks.iter().enumerate() {
        let row_scale = |i: usize| if i == 0 { h } else { 1.0 };
        set_k(ks, s, *u, w.ncols(), |i, j| {
            T::from_re(w[(i, j)].re() * row_scale(i))
        });
    }
    for (lw, w) in ce.blocks.iter() {
        let ow = island.units[*lw].offset;
        for (lk, k) in ks.iter() {
            let ok = island.units[*lk].offset;
            let no_g = None::<&Matrix6<f64>>;
            add_block(target, (*lw, ow, w), n3, (*lk, ok, k), no_g)?;
        }
    }
    Ok(())
}

/// A contact's blocks of the reduced matrix, exact
/// ([`Linearization::Exact`]): the primal `K` of each moving side into
/// `ks` and the geometric stiffness `G[i][j] = ∂(W_iᵀ f)/∂v_j`, from the
/// closed-form contact Jacobian of a free body or a robot's, and
/// `Wᵀ N K − G` added to `target`.
#[allow(clippy::too_many_arguments)]
fn exact_blocks<T: Scalar>(
    p: &StepProblem<'_, T>,
    island: &Island<T>,
    cand: &Candidate<T>,
    ce: &ContactEval<T>,
    v: &DVec<T>,
    x: &DVec<T>,
    n3: &Matrix3<T>,
    ks: &mut Vec<(usize, Matrix3xX<T>)>,
    target: &mut Target<'_, T>,
) -> Result<(), SolveError> {
    let la = ce.blocks[0].0;
    let f = cand.law.impulse(x).map(|e| e.re());
    let unit_v = |li: usize| -> Vec<f64> {
        let u = &island.units[li];
        (0..u.size()).map(|k| v[u.offset + k].re()).collect()
    };
    // (unit, K) per moving side and G[i][j] = ∂(W_iᵀ f)/∂v_j.
    let g = match &island.units[la].kind {
        UnitKind::Robot(ru) => {
            let lb = ce.blocks.get(1).map(|b| b.0);
            let vb: [f64; 6] = match lb {
                Some(lb) => {
                    let o = island.units[lb].offset;
                    core::array::from_fn(|k| v[o + k].re())
                }
                None => [0.0; 6],
            };
            let (k, g) = robot_contact_jacobian(p, ru, cand, &unit_v(la), &vb, &f)?;
            let units = std::iter::once(la).chain(lb);
            *ks = units
                .zip(k.iter())
                .map(|(u, k)| (u, k.map(T::from_re)))
                .collect();
            Stiffness::Robot(g)
        }
        UnitKind::Body(_) => {
            let lb = ce.blocks.get(1).map(|b| b.0);
            let re6 = |li: usize| -> [f64; 6] {
                let o = island.units[li].offset;
                core::array::from_fn(|k| v[o + k].re())
            };
            let va = re6(la);
            let vb = lb.map(re6).unwrap_or([0.0; 6]);
            let (ka, kb, g) = contact_jacobian(p, cand, &va, &vb, &f)?;
            ks.truncate(1 + usize::from(lb.is_some()));
            set_k(ks, 0, la, 6, |i, j| T::from_re(ka[(i, j)]));
            if let Some(lb) = lb {
                set_k(ks, 1, lb, 6, |i, j| T::from_re(kb[(i, j)]));
            }
            Stiffness::Body(g)
        }
    };
    for (i, (lw, w)) in ce.blocks.iter().enumerate() {
        let ow = island.units[*lw].offset;
        for (j, (lk, k)) in ks.iter().enumerate() {
            let ok = island.units[*lk].offset;
            let (wb, kb) = ((*lw, ow, w), (*lk, ok, k));
            match &g {
                Stiffness::Body(g) => add_block(target, wb, n3, kb, Some(&g[i][j]))?,
                Stiffness::Robot(g) => add_block(target, wb, n3, kb, Some(&g[i][j]))?,
            }
        }
    }
    Ok(())
}
