//! Islands: the units of a step's unknowns (free bodies, whole robots)
//! connected by contact candidates, solved independently; gather and
//! scatter between the global velocity and an island's layout.

use crate::Scalar;
use crate::contact::candidates::{Candidate, Partner};
use crate::contact::space::robot::{RobotUnit, robot_units};
use crate::math::DVec;

/// What an island unit is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// A free body (global index): 6 velocities, `dynamics::free`.
    Body(usize),
    /// A robot: all its joint velocities ([`robot`](crate::contact::space::robot)).
    Robot(RobotUnit),
}

/// A unit of an island's unknowns: a free body or a whole robot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Free body or robot.
    pub kind: UnitKind,
    /// Global velocity indices of its unknowns.
    pub dofs: Vec<usize>,
    /// Offset of its unknowns in the island's velocity vector.
    pub offset: usize,
}

impl Unit {
    /// Number of unknowns.
    pub fn size(&self) -> usize {
        self.dofs.len()
    }
}

/// An island: its units (free bodies and robots connected by contact
/// candidates) and contact candidates.
#[derive(Clone, Debug)]
pub struct Island<T: Scalar> {
    /// Units in island order; unit `u`'s velocities are rows
    /// `offset..offset + size` of the island velocity.
    pub units: Vec<Unit>,
    /// Candidates touching these units.
    pub contacts: Vec<Candidate<T>>,
    /// Global body → island unit index (`usize::MAX` for bodies of other
    /// islands); every link of a robot maps to the robot's unit.
    pub local: Vec<usize>,
}

impl<T: Scalar> Island<T> {
    /// Number of velocity unknowns.
    pub fn dim(&self) -> usize {
        self.units.iter().map(|u| u.size()).sum()
    }
    /// The island velocity gathered from a global velocity vector.
    pub fn gather<S: Scalar>(&self, v: &DVec<S>) -> DVec<S> {
        let mut out = DVec::zeros(self.dim());
        for u in &self.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out[u.offset + l] = v[d];
            }
        }
        out
    }
    /// [`Island::gather`] into `out` (its storage reused when the length
    /// agrees).
    pub fn gather_into<S: Scalar>(&self, v: &DVec<S>, out: &mut DVec<S>) {
        let n = self.dim();
        if out.len() != n {
            *out = DVec::zeros(n);
        }
        for u in &self.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out[u.offset + l] = v[d];
            }
        }
    }
    /// Writes island rows `x` into the global rows of `out`.
    pub fn scatter<S: Scalar>(&self, x: &DVec<S>, out: &mut DVec<S>) {
        for u in &self.units {
            for (l, &d) in u.dofs.iter().enumerate() {
                out[d] = x[u.offset + l];
            }
        }
    }
}

/// Island-local velocity of one free-body unit as an array.
pub fn local_v<T: Scalar>(v: &DVec<T>, offset: usize) -> [T; 6] {
    core::array::from_fn(|k| v[offset + k])
}

/// The reused buffers of [`islands_into`].
#[derive(Clone, Debug, Default)]
pub struct IslandScratch {
    unit_root: Vec<usize>,
    parent: Vec<usize>,
    island_of: Vec<usize>,
    dims: Vec<usize>,
    units: Vec<usize>,
}

/// Splits candidates into islands of units (free bodies, robots)
/// connected by contact. Unit layout: units in order of their first body,
/// a free body's 6 velocities, a robot's joint velocities in `v` order.
pub fn islands<T: Scalar>(
    model: &crate::dynamics::Model<T>,
    cands: Vec<Candidate<T>>,
) -> Vec<Island<T>> {
    let mut out = Vec::new();
    islands_into(model, &cands, &mut IslandScratch::default(), &mut out);
    out
}

/// [`islands`] into `out`, reusing its islands' storage (and `scratch`):
/// a steady-state step of free bodies splits its candidates without
/// allocating. Each island's `local` maps its own bodies to their unit and
/// every other body to `usize::MAX`; only the entries of the previous
/// call's units are reset, so the cost is linear in the bodies in
/// islands, not in islands × bodies.
pub fn islands_into<T: Scalar>(
    model: &crate::dynamics::Model<T>,
    cands: &[Candidate<T>],
    scratch: &mut IslandScratch,
    out: &mut Vec<Island<T>>,
) {
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let nb = model.bodies.len();
    // Forget the previous call's unit maps.
    for isl in out.iter_mut() {
        if isl.local.len() != nb {
            isl.local.clear();
            isl.local.resize(nb, usize::MAX);
            continue;
        }
        for u in &isl.units {
            match &u.kind {
                UnitKind::Body(i) => isl.local[*i] = usize::MAX,
                UnitKind::Robot(r) => r.bodies.iter().for_each(|&b| isl.local[b] = usize::MAX),
            }
        }
    }
    let IslandScratch {
        unit_root,
        parent,
        island_of,
        dims,
        units,
    } = scratch;
    // The unit of each body: a lone free body is its own unit; the links of a
    // robot unit share their root's.
    unit_root.clear();
    unit_root.extend(0..nb);
    let robots = if cands.iter().any(|c| c.link.is_some()) {
        robot_units(model)
    } else {
        Vec::new()
    };
    for r in &robots {
        for &b in &r.bodies {
            unit_root[b] = r.root;
        }
    }
    parent.clear();
    parent.extend(0..nb);
    for c in cands {
        if let Partner::Body(j) = c.b {
            let (ra, rb) = (find(parent, unit_root[c.a]), find(parent, unit_root[j]));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    island_of.clear();
    island_of.resize(nb, usize::MAX);
    let mut count = 0;
    for c in cands {
        let root = find(parent, unit_root[c.a]);
        if island_of[root] == usize::MAX {
            island_of[root] = count;
            if out.len() == count {
                out.push(Island {
                    units: Vec::new(),
                    contacts: Vec::new(),
                    local: vec![usize::MAX; nb],
                });
            } else {
                out[count].contacts.clear();
            }
            count += 1;
        }
        out[island_of[root]].contacts.push(c.clone());
    }
    out.truncate(count);
    dims.clear();
    dims.resize(count, 0);
    units.clear();
    units.resize(count, 0);
    for i in 0..nb {
        if unit_root[i] != i {
            continue; // a robot link other than the root: added with its root
        }
        let root = find(parent, i);
        if island_of[root] == usize::MAX {
            continue;
        }
        let k = island_of[root];
        let isl = &mut out[k];
        let kind = match robots.iter().find(|r| r.root == i) {
            Some(r) => UnitKind::Robot(r.clone()),
            None => UnitKind::Body(i),
        };
        let u = units[k];
        match &kind {
            UnitKind::Robot(r) => r.bodies.iter().for_each(|&b| isl.local[b] = u),
            UnitKind::Body(_) => isl.local[i] = u,
        }
        if isl.units.len() == u {
            isl.units.push(Unit {
                kind: UnitKind::Body(i),
                dofs: Vec::new(),
                offset: 0,
            });
        }
        let unit = &mut isl.units[u];
        unit.dofs.clear();
        match &kind {
            UnitKind::Robot(r) => unit.dofs.extend_from_slice(&r.dofs),
            UnitKind::Body(_) => {
                let v0 = model.bodies[i].idx_v;
                unit.dofs.extend(v0..v0 + 6);
            }
        }
        unit.kind = kind;
        unit.offset = dims[k];
        dims[k] += unit.dofs.len();
        units[k] += 1;
    }
    for (isl, &n) in out.iter_mut().zip(units.iter()) {
        isl.units.truncate(n);
    }
}
