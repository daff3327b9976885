use super::*;

/// A static geometry in world coordinates.
pub(super) enum StaticSide<T: Scalar> {
    Plane(Vec3<T>, T),
    /// The cloud, its pose's translation, its kd-tree (`prune`).
    Cloud(Cloud<T>, Vec3<T>, Option<Tree>),
}

/// The step's geometry in world coordinates.
pub(super) struct Scene<T: Scalar> {
    /// Per body: the world cloud (None: no shape; a lone free body's
    /// shape and a robot link's attached shapes, merged).
    pub(super) bodies: Vec<Option<Cloud<T>>>,
    /// Per body: the kd-tree of its world cloud's primal points (`prune`).
    pub(super) trees: Vec<Option<Tree>>,
    /// Per body: bounding radius about `centre` (f64).
    pub(super) radius: Vec<f64>,
    /// Per body: the point its wrench is taken about (world): a lone
    /// free body's centre of mass, a link's frame origin.
    pub(super) centre: Vec<Vec3<T>>,
    /// Kinematics of the robot links (None: no link has a cloud).
    pub(super) links: Option<Links<T>>,
    pub(super) statics: Vec<Option<StaticSide<T>>>,
}

/// Kinematics of the robot links at the scene's `q`.
pub(super) struct Links<T: Scalar> {
    /// World motion subspace column of every velocity coordinate (at the
    /// world origin, linear part first; `dynamics::kinematics`).
    pub(super) os: Vec<Vec6<T>>,
    /// Per body: the velocity coordinates of the joints from its root to
    /// it (empty for lone free bodies).
    pub(super) path: Vec<Vec<usize>>,
    /// Per body: whether it is a robot link (not a lone free body).
    pub(super) link: Vec<bool>,
}

impl<T: Scalar> Scene<T> {
    /// Whether body `i` is a robot link (its wrench maps to joint
    /// coordinates through `Jᵀ`).
    pub(super) fn is_link(&self, i: usize) -> bool {
        self.links.as_ref().is_some_and(|l| l.link[i])
    }

    /// The rigid motion of body `i` at `v`: (linear velocity of `centre`,
    /// angular velocity), world frame.
    pub(super) fn motion(&self, p: &StepProblem<'_, T>, v: &DVec<T>, i: usize) -> (Vec3<T>, Vec3<T>) {
        match self.links.as_ref().filter(|l| l.link[i]) {
            Some(l) => {
                // spatial velocity at the world origin: Σ S_k v_k
                let mut sv = Vec6::<T>::zeros();
                for &k in &l.path[i] {
                    sv += l.os[k] * v[k];
                }
                let lin = Vec3::new(sv[0], sv[1], sv[2]);
                let ang = Vec3::new(sv[3], sv[4], sv[5]);
                (lin + ang.cross(&self.centre[i]), ang)
            }
            None => {
                let k = p.model.bodies[i].idx_v;
                (
                    Vec3::new(v[k], v[k + 1], v[k + 2]),
                    Vec3::new(v[k + 3], v[k + 4], v[k + 5]),
                )
            }
        }
    }

    /// Adds the wrench `(f, tau)` (world; `tau` about `centre[i]`) on body
    /// `i` to the generalized forces `out`: a lone free body's force and
    /// torque, or a link's `Jᵀ` map, `τ_k += S_kᵀ (f, tau + c × f)` for
    /// every joint coordinate `k` from the root to the link (eqs. 21–23:
    /// the point Jacobian's columns are `lin(S_k) + ang(S_k) × p`, so
    /// `Σ_p J_pᵀ f_p` is `S_k` applied to the wrench about the origin).
    pub(super) fn add_wrench(
        &self,
        p: &StepProblem<'_, T>,
        i: usize,
        f: &Vec3<T>,
        tau: &Vec3<T>,
        out: &mut DVec<T>,
    ) {
        match self.links.as_ref().filter(|l| l.link[i]) {
            Some(l) => {
                let m0 = tau + self.centre[i].cross(f);
                for &k in &l.path[i] {
                    let s = &l.os[k];
                    out[k] += Vec3::new(s[0], s[1], s[2]).dot(f)
                        + Vec3::new(s[3], s[4], s[5]).dot(&m0);
                }
            }
            None => {
                let k = p.model.bodies[i].idx_v;
                for d in 0..3 {
                    out[k + d] += f[d];
                    out[k + 3 + d] += tau[d];
                }
            }
        }
    }
}

pub(super) fn unsupported(what: &'static str) -> SolveError {
    SolveError::Unsupported {
        backend: "soft",
        what,
    }
}

pub(super) fn sample_error(e: cloud::SampleError) -> SolveError {
    unsupported(match e.shape {
        "cone" => "cone shapes (no point-cloud sampling; use a polytope or a points shape)",
        "padded_polygon" => "padded-polygon shapes (no point-cloud sampling)",
        "plane" => "planes as body shapes",
        "oversized" => "a shape that would sample more than 1e6 points (lower `points_per_meter`)",
        _ => "Minkowski bundles (no point-cloud sampling)",
    })
}

impl Soft {
    pub(super) fn scene<T: Scalar>(&self, p: &StepProblem<'_, T>, q: &DVec<T>) -> Result<Scene<T>, SolveError> {
        let ppm = self.params.points_per_meter;
        let model = p.model;
        let nb = model.bodies.len();
        let lone = model.lone_free_bodies();
        // body-frame clouds: a lone free body's shape, a link's attached
        // shapes at their poses (merged)
        let mut local: Vec<Option<Cloud<T>>> = (0..nb)
            .map(|i| match p.shapes.get(i) {
                Some(Some(s)) if lone[i] => sample(s, ppm).map(Some).map_err(sample_error),
                _ => Ok(None),
            })
            .collect::<Result<_, _>>()?;
        for ls in p.link_shapes {
            if ls.body >= nb {
                continue;
            }
            let c = sample(&ls.shape, ppm).map_err(sample_error)?;
            let dst = local[ls.body].get_or_insert_with(|| Cloud {
                points: Vec::new(),
                normals: Vec::new(),
            });
            for (pt, n) in c.points.iter().zip(&c.normals) {
                dst.points
                    .push(so3::rotate(&ls.pose.rotation, pt) + ls.pose.translation);
                dst.normals.push(so3::rotate(&ls.pose.rotation, n));
            }
        }
        // forward kinematics of the links that carry a cloud's robot
        // (parents come before children)
        let any_link = (0..nb).any(|i| !lone[i] && local[i].is_some());
        let mut omi = vec![Pose::<T>::identity(); if any_link { nb } else { 0 }];
        let links = if any_link {
            let mut os = vec![Vec6::<T>::zeros(); model.nv];
            let mut path = vec![Vec::new(); nb];
            for (i, body) in model.bodies.iter().enumerate() {
                if lone[i] {
                    continue;
                }
                let omp = match body.parent {
                    Some(pa) => omi[pa],
                    None => Pose::identity(),
                } * body.placement;
                let qj = &q.as_slice()[body.idx_q..body.idx_q + body.joint.nq()];
                omi[i] = omp * joint_transform(&body.joint, qj);
                motion_subspace(
                    &body.joint,
                    &omp,
                    &omi[i],
                    qj,
                    &mut os[body.idx_v..body.idx_v + body.joint.nv()],
                );
                let mut pth: Vec<usize> = match body.parent {
                    Some(pa) => path[pa].clone(),
                    None => Vec::new(),
                };
                pth.extend(body.idx_v..body.idx_v + body.joint.nv());
                path[i] = pth;
            }
            let link = (0..nb).map(|i| !lone[i]).collect();
            Some(Links { os, path, link })
        } else {
            None
        };
        let mut bodies = Vec::with_capacity(nb);
        let mut radius = Vec::with_capacity(nb);
        let mut centre = Vec::with_capacity(nb);
        for (i, c) in local.into_iter().enumerate() {
            let b = &model.bodies[i];
            let (rot, x) = if lone[i] {
                (orientation(q, b.idx_q), position(q, b.idx_q))
            } else if any_link {
                (omi[i].rotation, omi[i].translation)
            } else {
                (so3::identity(), Vec3::zeros())
            };
            centre.push(x);
            let Some(mut c) = c else {
                bodies.push(None);
                radius.push(0.0);
                continue;
            };
            radius.push(c.radius());
            for (pt, n) in c.points.iter_mut().zip(c.normals.iter_mut()) {
                *pt = so3::rotate(&rot, pt) + x;
                *n = so3::rotate(&rot, n);
            }
            bodies.push(Some(c));
        }
        let mut statics = Vec::with_capacity(p.statics.len());
        for s in p.statics {
            statics.push(Some(match &s.shape {
                Shape::Plane { normal, offset } => {
                    let (n, d) = world_plane(normal, *offset, &s.pose);
                    let nn = n.norm();
                    StaticSide::Plane(n / nn, d / nn)
                }
                shape => {
                    let mut c = sample(shape, ppm).map_err(sample_error)?;
                    for (pt, n) in c.points.iter_mut().zip(c.normals.iter_mut()) {
                        *pt = so3::rotate(&s.pose.rotation, pt) + s.pose.translation;
                        *n = so3::rotate(&s.pose.rotation, n);
                    }
                    let tree = self.params.prune.then(|| primal_tree(&c));
                    StaticSide::Cloud(c, s.pose.translation, tree)
                }
            }));
        }
        let trees = bodies
            .iter()
            .map(|c| match c {
                Some(c) if self.params.prune => Some(primal_tree(c)),
                _ => None,
            })
            .collect();
        Ok(Scene {
            bodies,
            trees,
            radius,
            centre,
            links,
            statics,
        })
    }

    /// The pairs within the cut-off (primal values).
    pub(super) fn pairs<T: Scalar>(&self, sc: &Scene<T>) -> Vec<Pair> {
        let m = self.params.margin;
        let centre = |i: usize| sc.centre[i].map(|x| x.re());
        let mut out = Vec::new();
        for a in 0..sc.bodies.len() {
            if sc.bodies[a].is_none() {
                continue;
            }
            let ca = centre(a);
            for b in a + 1..sc.bodies.len() {
                // link–link contact (self-collision, robot–robot) is not
                // modelled (as in every backend)
                if sc.bodies[b].is_none() || (sc.is_link(a) && sc.is_link(b)) {
                    continue;
                }
                if (ca - centre(b)).norm() - sc.radius[a] - sc.radius[b] <= m {
                    out.push(Pair { a, b: Other::Body(b) });
                }
            }
            for (j, s) in sc.statics.iter().enumerate() {
                let near = match s {
                    Some(StaticSide::Plane(n, d)) => {
                        n.map(|x| x.re()).dot(&ca) - d.re() - sc.radius[a] <= m
                    }
                    Some(StaticSide::Cloud(c, x, _)) => {
                        let r = c
                            .points
                            .iter()
                            .map(|pt| (pt - x).map(|v| v.re()).norm())
                            .fold(0.0, f64::max);
                        (ca - x.map(|v| v.re())).norm() - sc.radius[a] - r <= m
                    }
                    None => false,
                };
                if near {
                    out.push(Pair {
                        a,
                        b: Other::Static(j),
                    });
                }
            }
        }
        out
    }
}
