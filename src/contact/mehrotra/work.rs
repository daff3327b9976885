use super::*;

/// Every buffer one island's solve needs: the iterate, the line search's
/// trial, its best rejected trial and the recentring trial, the Newton
/// directions, residuals and factors. Sized by the first solve and reused
/// by the next ones where the shapes agree (a rollout's workspace keeps one
/// per island, so a steady-state step allocates none of it); the
/// iterations themselves do not allocate (free bodies; a robot's
/// kinematics still does). The solution of the last solve stays in it
/// ([`IslandSolution`] borrows it).
pub struct Work<T: Scalar> {
    pub(super) warm: Vec<bool>,
    pub(super) cur: Point<T>,
    pub(super) trial: Point<T>,
    pub(super) best: Point<T>,
    pub(super) center: Point<T>,
    pub(super) dv: DVec<T>,
    pub(super) dxs: Vec<DVec<T>>,
    pub(super) dx_aff: Vec<DVec<T>>,
    pub(super) rc: Vec<DVec<T>>,
    pub(super) dir: DirWork<T>,
    pub(super) fac: Factored<T>,
    pub(super) plain: Factored<T>,
}

impl<T: Scalar> Default for Work<T> {
    fn default() -> Self {
        Work {
            warm: Vec::new(),
            cur: Point::empty(),
            trial: Point::empty(),
            best: Point::empty(),
            center: Point::empty(),
            dv: DVec::zeros(0),
            dxs: Vec::new(),
            dx_aff: Vec::new(),
            rc: Vec::new(),
            dir: DirWork { ainv_r: Vec::new() },
            fac: Factored::empty(),
            plain: Factored::empty(),
        }
    }
}

impl<T: Scalar> std::fmt::Debug for Work<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Work")
            .field("velocities", &self.cur.v.len())
            .field("contacts", &self.cur.xs.len())
            .finish_non_exhaustive()
    }
}

impl<T: Scalar> Clone for Work<T> {
    /// A fresh work (buffers are scratch; nothing of a solve is carried).
    fn clone(&self) -> Self {
        Work::default()
    }
}

impl<T: Scalar> Work<T> {
    pub(super) fn solution(&self, e: Ended) -> IslandSolution<'_, T> {
        IslandSolution {
            v: &self.cur.v,
            xs: &self.cur.xs,
            eval: &self.cur.ev,
            iterations: e.iterations,
            residual: e.residual,
            complementarity: e.complementarity,
            capped: e.capped,
        }
    }
}
