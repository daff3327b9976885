use super::*;

impl Soft {
    /// `Λ(q, v)`: the generalized soft forces (world force and torque per
    /// free body, `Σ J_pᵀ f_p` on robot joint coordinates) of the given
    /// pairs at the scene's `q` and at `v`, with a report per pair.
    pub(super) fn forces<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        v: &DVec<T>,
        sc: &Scene<T>,
        pairs: &[Pair],
        mut reports: Option<&mut Vec<ContactImpulse<T>>>,
    ) -> DVec<T> {
        let k = self.params.constants();
        let prune = self.params.prune;
        let eps2 = T::from_re(k.separation_smoothing);
        let mut out = DVec::zeros(p.model.nv);
        let side = |i: usize| {
            let c = sc.bodies[i].as_ref().expect("pairs hold bodies with clouds");
            let (linear, angular) = sc.motion(p, v, i);
            Side {
                points: &c.points,
                normals: &c.normals,
                centre: sc.centre[i],
                linear,
                angular,
                tree: sc.trees[i].as_ref(),
            }
        };
        // One pair: the wrench on `a` (force, torque), on the other body
        // if it is one, and the pair's report.
        let eval = |pair: &Pair| -> Option<PairOut<T>> {
            let mu = crate::contact::candidates::pair_mu(
                p,
                pair.a,
                match pair.b {
                    Other::Body(j) => crate::contact::candidates::Partner::Body(j),
                    Other::Static(j) => crate::contact::candidates::Partner::Static(j),
                },
            );
            // (φ, force on the point's body, point, the point is on `a`)
            let mut entries: Vec<(T, Vec3<T>, Vec3<T>, bool)> = Vec::new();
            let sa = side(pair.a);
            let mut b_body = None;
            let static_side;
            let sb = match pair.b {
                Other::Body(j) => {
                    let sb = side(j);
                    b_body = Some((j, sb.centre));
                    Some(sb)
                }
                Other::Static(j) => match sc.statics[j].as_ref() {
                    Some(StaticSide::Plane(n, d)) => {
                        for pt in sa.points {
                            let (phi, f) = plane_entry(&k, pt, &sa, n, *d, mu);
                            entries.push((phi, f, *pt, true));
                        }
                        None
                    }
                    Some(StaticSide::Cloud(c, x, tree)) => {
                        static_side = Side {
                            points: &c.points,
                            normals: &c.normals,
                            centre: *x,
                            linear: Vec3::zeros(),
                            angular: Vec3::zeros(),
                            tree: tree.as_ref(),
                        };
                        Some(static_side)
                    }
                    None => return None,
                },
            };
            let field_weights = |entries: &[(T, Vec3<T>, Vec3<T>, bool)]| {
                let field: Vec<T> = entries.iter().map(|e| e.0).collect();
                let mut w = Vec::with_capacity(field.len());
                softmin_weights(&field, eps2, &mut w);
                w
            };
            let w = match &sb {
                Some(sb) if prune => {
                    // forces only where the field's weight can be nonzero
                    // (a zero weight multiplies a finite force): `bound`,
                    // the field entry of the point of each side nearest to
                    // the other's centre, is at least the field's minimum
                    let bound = field_bound(&k, &sa, sb, mu).min(field_bound(&k, sb, &sa, mu));
                    let force = Force::Within {
                        bound,
                        cut: 60.0 * k.separation_smoothing,
                    };
                    let mut done = Vec::new();
                    side_entries(&k, &sa, sb, mu, true, force, &mut entries, &mut done);
                    side_entries(&k, sb, &sa, mu, false, force, &mut entries, &mut done);
                    let w = field_weights(&entries);
                    // (never taken: `bound` covers every nonzero weight)
                    let na = sa.points.len();
                    for i in 0..entries.len() {
                        if w[i].re() != 0.0 && !done[i] {
                            let (x, y) = if i < na { (&sa, sb) } else { (sb, &sa) };
                            let pt = entries[i].2;
                            let mut scratch = Scratch::default();
                            entries[i].1 =
                                point_entry(&k, &pt, x, y, mu, Force::Always, &mut scratch).1;
                        }
                    }
                    w
                }
                Some(sb) => {
                    let mut done = Vec::new();
                    side_entries(&k, &sa, sb, mu, true, Force::Always, &mut entries, &mut done);
                    side_entries(&k, sb, &sa, mu, false, Force::Always, &mut entries, &mut done);
                    field_weights(&entries)
                }
                None => field_weights(&entries),
            };
            Some(pair_out(p, pair, &entries, &w, sa.centre, b_body))
        };
        // pairs in parallel when there are several and the work pays;
        // summed in pair order either way (the same result)
        let work: usize = pairs.iter().map(|pr| pair_work(sc, pr)).sum();
        let results: Vec<Option<PairOut<T>>> = if pairs.len() > 1 && work >= PARALLEL_WORK {
            pairs.par_iter().map(eval).collect()
        } else {
            pairs.iter().map(eval).collect()
        };
        for (pair, r) in pairs.iter().zip(results) {
            let Some(r) = r else { continue };
            sc.add_wrench(p, pair.a, &r.a.0, &r.a.1, &mut out);
            if let Some((j, fb, tb)) = r.b {
                sc.add_wrench(p, j, &fb, &tb, &mut out);
            }
            if let Some(rep) = reports.as_deref_mut() {
                rep.push(r.report);
            }
        }
        out
    }

    /// The Euler step's velocity from `u + Λ`: the free bodies' step
    /// (`dynamics::free`) and the robots' `v⁺ = v + h ABA(q, v, u + Λ)`
    /// (`dynamics::articulated`).
    pub(super) fn euler<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        lam: &DVec<T>,
    ) -> Result<(DVec<T>, usize), SolveError> {
        let u = p.u + lam;
        let (mut v_next, it) = free_flight_velocity(
            p.model,
            p.q,
            p.v,
            &u,
            &p.gravity,
            p.h,
            &self.newton,
        )?;
        articulated_velocity(p.model, p.q, p.v, &u, p.h, &mut v_next);
        Ok((v_next, it))
    }

    /// `v̇ = M⁻¹(u + Λ − c)` of the free bodies at `(q, v)`.
    pub(super) fn acceleration<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        q: &DVec<T>,
        v: &DVec<T>,
        pairs: &[Pair],
    ) -> Result<DVec<T>, SolveError> {
        let sc = self.scene(p, q)?;
        let lam = self.forces(p, v, &sc, pairs, None);
        let mut a = DVec::zeros(p.model.nv);
        if has_articulated(p.model) {
            let u = p.u + &lam;
            let mut data = p.model.data();
            let acc = aba(p.model, &mut data, q, v, &u);
            for k in articulated_dofs(p.model) {
                a[k] = acc[k];
            }
        }
        for (i, b) in p.model.bodies.iter().enumerate() {
            if !p.model.is_lone_free_body(i) {
                continue;
            }
            let k = b.idx_v;
            for d in 0..3 {
                a[k + d] = p.gravity[d] + (p.u[k + d] + lam[k + d]) / b.inertia.mass;
            }
            let iw = world_inertia(p.model, i, q);
            let w = Vec3::new(v[k + 3], v[k + 4], v[k + 5]);
            let tau = Vec3::new(
                p.u[k + 3] + lam[k + 3],
                p.u[k + 4] + lam[k + 4],
                p.u[k + 5] + lam[k + 5],
            ) - w.cross(&(iw * w));
            let wd = iw
                .lu()
                .solve(&tau)
                .ok_or(SolveError::Singular("inertia of a body"))?;
            for d in 0..3 {
                a[k + 3 + d] = wd[d];
            }
        }
        Ok(a)
    }

    /// One RK4 step (module docs): `(q⁺, v⁺)`.
    pub(super) fn rk4<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
        pairs: &[Pair],
    ) -> Result<(DVec<T>, DVec<T>), SolveError> {
        let h = p.h;
        let half = h * T::from_re(0.5);
        let v1 = p.v.clone();
        let a1 = self.acceleration(p, p.q, &v1, pairs)?;
        let q2 = integrate_model(p.model, p.q, &v1, half)?;
        let v2 = &v1 + &a1 * half;
        let a2 = self.acceleration(p, &q2, &v2, pairs)?;
        let q3 = integrate_model(p.model, p.q, &v2, half)?;
        let v3 = &v1 + &a2 * half;
        let a3 = self.acceleration(p, &q3, &v3, pairs)?;
        let q4 = integrate_model(p.model, p.q, &v3, h)?;
        let v4 = &v1 + &a3 * h;
        let a4 = self.acceleration(p, &q4, &v4, pairs)?;
        let two = T::from_re(2.0);
        let sixth = h / T::from_re(6.0);
        let vbar = (&v1 + &v2 * two + &v3 * two + &v4) / T::from_re(6.0);
        let v_next = &v1 + (&a1 + &a2 * two + &a3 * two + &a4) * sixth;
        let q_next = integrate_model(p.model, p.q, &vbar, h)?;
        Ok((q_next, v_next))
    }

    /// The step's pairs (primal decision) and geometry at `p.q`.
    pub(super) fn setup<T: Scalar>(&self, p: &StepProblem<'_, T>) -> Result<(Scene<T>, Vec<Pair>), SolveError> {
        if p.friction_cone == crate::contact::FrictionCone::Pyramid {
            return Err(unsupported(
                "the pyramid friction cone (its smooth friction \
                 mu lambda_n v_t / sqrt(v_s^2 + |v_t|^2) is isotropic, the smoothed Coulomb cone)",
            ));
        }
        let sc = self.scene(p, p.q)?;
        let pairs = self.pairs(&sc);
        // A pair costs the product of its clouds' sizes: refuse what would
        // not finish (a `points_per_meter` far above the shapes' scale)
        // rather than run for hours.
        let size = |c: Option<&cloud::Cloud<T>>| c.map_or(1, |c| c.points.len().max(1));
        for pair in &pairs {
            let na = size(sc.bodies[pair.a].as_ref());
            let nb = match pair.b {
                Other::Body(j) => size(sc.bodies[j].as_ref()),
                Other::Static(k) => match &sc.statics[k] {
                    Some(StaticSide::Cloud(c, _, _)) => size(Some(c)),
                    _ => 1,
                },
            };
            if na as f64 * nb as f64 > self.params.max_pair_points {
                return Err(unsupported(
                    "a pair of point clouds with more point pairs than `max_pair_points` \
                     (lower `points_per_meter`, or raise `max_pair_points`)",
                ));
            }
        }
        Ok((sc, pairs))
    }

    /// The generalized soft forces `Λ(q, v)` at the start of the step of
    /// `p` (world force and torque per free body, `Σ J_pᵀ f_p` on robot
    /// joint coordinates), and the pairs within the cut-off.
    pub fn generalized_forces<T: Scalar>(
        &self,
        p: &StepProblem<'_, T>,
    ) -> Result<(DVec<T>, Vec<Pair>), SolveError> {
        let (sc, pairs) = self.setup(p)?;
        let lam = self.forces(p, p.v, &sc, &pairs, None);
        Ok((lam, pairs))
    }
}

/// One pair's contribution to `Λ`.
pub(super) struct PairOut<T: Scalar> {
    /// Force and torque on `a`.
    pub(super) a: (Vec3<T>, Vec3<T>),
    /// The other body, its force and torque.
    pub(super) b: Option<(usize, Vec3<T>, Vec3<T>)>,
    pub(super) report: ContactImpulse<T>,
}

/// A pair's work (point–plane evaluations).
pub(super) fn pair_work<T: Scalar>(sc: &Scene<T>, pair: &Pair) -> usize {
    let na = sc.bodies[pair.a].as_ref().map_or(0, |c| c.len());
    match pair.b {
        Other::Body(j) => 2 * na * sc.bodies[j].as_ref().map_or(0, |c| c.len()),
        Other::Static(j) => match &sc.statics[j] {
            Some(StaticSide::Cloud(c, _, _)) => 2 * na * c.len(),
            _ => na,
        },
    }
}

/// The kd-tree of a world cloud's primal points.
pub(super) fn primal_tree<T: Scalar>(c: &Cloud<T>) -> Tree {
    let pts: Vec<Vec3<f64>> = c.points.iter().map(|p| p.map(|x| x.re())).collect();
    Tree::new(&pts)
}

/// The field entries of every point of `x` against `y`'s SSDF, with the
/// forces as `force` says (else zero forces; `done` records which).
#[allow(clippy::too_many_arguments)]
pub(super) fn side_entries<T: Scalar>(
    k: &Constants,
    x: &Side<'_, T>,
    y: &Side<'_, T>,
    mu: T,
    on_a: bool,
    force: Force,
    out: &mut Vec<(T, Vec3<T>, Vec3<T>, bool)>,
    done: &mut Vec<bool>,
) {
    if x.points.len() * y.points.len() >= PARALLEL_WORK {
        let v: Vec<_> = x
            .points
            .par_iter()
            .map_init(Scratch::default, |scratch, pt| {
                point_entry(k, pt, x, y, mu, force, scratch)
            })
            .collect();
        for ((phi, f, d), pt) in v.into_iter().zip(x.points) {
            out.push((phi, f, *pt, on_a));
            done.push(d);
        }
    } else {
        let mut scratch = Scratch::default();
        for pt in x.points {
            let (phi, f, d) = point_entry(k, pt, x, y, mu, force, &mut scratch);
            out.push((phi, f, *pt, on_a));
            done.push(d);
        }
    }
}

/// The field entry (primal) of the point of `x` nearest to `y`'s centre:
/// an upper bound of the pair's field minimum.
pub(super) fn field_bound<T: Scalar>(k: &Constants, x: &Side<'_, T>, y: &Side<'_, T>, mu: T) -> f64 {
    let c = y.centre.map(|v| v.re());
    let Some(p) = x
        .points
        .iter()
        .min_by(|a, b| {
            let da = (a.map(|v| v.re()) - c).norm_squared();
            let db = (b.map(|v| v.re()) - c).norm_squared();
            da.total_cmp(&db)
        })
    else {
        return f64::INFINITY;
    };
    let mut scratch = Scratch::default();
    point_entry(k, p, x, y, mu, Force::Never, &mut scratch).0.re()
}

/// One pair's [`PairOut`] from its field entries (φ, force on the point's
/// body, point, whether the point is on `a`) and their softmin weights
/// `w`: the weighted wrenches on `a` (centre `ca`) and on the other body
/// (`b_body`: its index and centre, if it is a body), and the report.
fn pair_out<T: Scalar>(
    p: &StepProblem<'_, T>,
    pair: &Pair,
    entries: &[(T, Vec3<T>, Vec3<T>, bool)],
    w: &[T],
    ca: Vec3<T>,
    b_body: Option<(usize, Vec3<T>)>,
) -> PairOut<T> {
    let (mut fa, mut ta) = (Vec3::<T>::zeros(), Vec3::<T>::zeros());
    let (mut fb, mut tb) = (Vec3::<T>::zeros(), Vec3::<T>::zeros());
    let (mut point, mut dist) = (Vec3::<T>::zeros(), T::zero());
    let cb = b_body.map(|(_, c)| c).unwrap_or_else(Vec3::zeros);
    for (e, wf) in entries.iter().zip(w) {
        let (phi, f, pt, on_a) = e;
        let f = if *on_a { *f * *wf } else { -*f * *wf };
        fa += f;
        ta += (pt - ca).cross(&f);
        fb -= f;
        tb -= (pt - cb).cross(&f);
        point += pt * *wf;
        dist += *phi * *wf;
    }
    let norm = fa.norm();
    let normal = if norm.re() > 0.0 {
        fa / norm
    } else {
        Vec3::new(T::zero(), T::zero(), T::one())
    };
    PairOut {
        a: (fa, ta),
        b: b_body.map(|(j, _)| (j, fb, tb)),
        report: ContactImpulse {
            body_a: pair.a,
            body_b: b_body.map(|(j, _)| j),
            point,
            normal,
            normal_impulse: norm * p.h,
            tangent_impulse: Vec3::zeros(),
            gap: dist,
        },
    }
}
