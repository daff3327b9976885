//! Islands: the units of a step's unknowns (free bodies, whole robots)
//! connected by contact candidates, solved independently; gather and
//! scatter between the global velocity and an island's layout.

use crate::contact::candidates::{Candidate, Partner};
use crate::contact::space::robot::{robot_units, RobotUnit};
use crate::math::DVec;
use crate::Scalar;

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

/// Splits candidates into islands of units (free bodies, robots)
/// connected by contact. Unit layout: units in order of their first body,
/// a free body's 6 velocities, a robot's joint velocities in `v` order.
pub fn islands<T: Scalar>(
    model: &crate::dynamics::Model<T>,
    cands: Vec<Candidate<T>>,
) -> Vec<Island<T>> {
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let nb = model.bodies.len();
    // The unit of each body: a lone free body is its own unit; the links of a
    // robot unit share their root's.
    let mut unit_root: Vec<usize> = (0..nb).collect();
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
    let mut parent: Vec<usize> = (0..nb).collect();
    for c in &cands {
        if let Partner::Body(j) = c.b {
            let (ra, rb) = (
                find(&mut parent, unit_root[c.a]),
                find(&mut parent, unit_root[j]),
            );
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut island_of = vec![usize::MAX; nb];
    let mut out: Vec<Island<T>> = Vec::new();
    for c in cands {
        let root = find(&mut parent, unit_root[c.a]);
        if island_of[root] == usize::MAX {
            island_of[root] = out.len();
            out.push(Island {
                units: Vec::new(),
                contacts: Vec::new(),
                local: Vec::new(),
            });
        }
        out[island_of[root]].contacts.push(c);
    }
    let mut local = vec![usize::MAX; nb];
    let mut dims = vec![0; out.len()];
    for i in 0..nb {
        if unit_root[i] != i {
            continue; // a robot link other than the root: added with its root
        }
        let root = find(&mut parent, i);
        if island_of[root] == usize::MAX {
            continue;
        }
        let k = island_of[root];
        let isl = &mut out[k];
        let kind = match robots.iter().find(|r| r.root == i) {
            Some(r) => UnitKind::Robot(r.clone()),
            None => UnitKind::Body(i),
        };
        let dofs: Vec<usize> = match &kind {
            UnitKind::Robot(r) => r.dofs.clone(),
            UnitKind::Body(_) => {
                let v0 = model.bodies[i].idx_v;
                (v0..v0 + 6).collect()
            }
        };
        let u = isl.units.len();
        match &kind {
            UnitKind::Robot(r) => r.bodies.iter().for_each(|&b| local[b] = u),
            UnitKind::Body(_) => local[i] = u,
        }
        let n = dofs.len();
        isl.units.push(Unit {
            kind,
            dofs,
            offset: dims[k],
        });
        dims[k] += n;
    }
    for isl in &mut out {
        isl.local = local.clone();
    }
    out
}
