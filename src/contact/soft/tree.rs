//! A kd-tree over a cloud's primal point positions: the candidates of a
//! softmin ball query (module docs of `soft`, "Cut-off and cost").
//!
//! Built by median splits along the box's longest axis down to leaves of
//! at most [`LEAF`] points; every node keeps the bounding box of its
//! points. [`Tree::nearest`] is the exact smallest squared distance (a
//! branch and bound on the boxes' distances); [`Tree::within`] lists every
//! point at squared distance `≤ r2` (a node is skipped only when its box
//! is farther than `r2`, so no such point is missed), appending to a
//! caller's buffer (no allocation once the buffer has grown).

use crate::math::Vec3;

/// Most points of a leaf.
pub const LEAF: usize = 8;

#[derive(Clone, Debug)]
struct Node {
    lo: [f64; 3],
    hi: [f64; 3],
    /// Range of `Tree::order` (leaves) or children (`left`, `right`).
    start: usize,
    end: usize,
    /// Children (`usize::MAX`: a leaf).
    left: usize,
    right: usize,
}

/// A kd-tree over points (f64).
#[derive(Clone, Debug, Default)]
pub struct Tree {
    nodes: Vec<Node>,
    /// Point indices, leaves' ranges contiguous.
    order: Vec<usize>,
    pts: Vec<[f64; 3]>,
}

/// Squared distance of `p` to the box `[lo, hi]` (0 inside).
fn box_dist2(p: &[f64; 3], lo: &[f64; 3], hi: &[f64; 3]) -> f64 {
    let mut s = 0.0;
    for d in 0..3 {
        let e = if p[d] < lo[d] {
            lo[d] - p[d]
        } else if p[d] > hi[d] {
            p[d] - hi[d]
        } else {
            0.0
        };
        s += e * e;
    }
    s
}

fn dist2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    let (x, y, z) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
    x * x + y * y + z * z
}

impl Tree {
    /// The tree of `points` (their f64 values).
    pub fn new(points: &[Vec3<f64>]) -> Self {
        let mut t = Tree {
            nodes: Vec::with_capacity(2 * points.len().div_ceil(LEAF) + 1),
            order: (0..points.len()).collect(),
            pts: points.iter().map(|p| [p[0], p[1], p[2]]).collect(),
        };
        if !points.is_empty() {
            t.build(0, points.len());
        }
        t
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.pts.len()
    }

    /// Whether the tree has no point.
    pub fn is_empty(&self) -> bool {
        self.pts.is_empty()
    }

    fn build(&mut self, start: usize, end: usize) -> usize {
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for &i in &self.order[start..end] {
            for d in 0..3 {
                lo[d] = lo[d].min(self.pts[i][d]);
                hi[d] = hi[d].max(self.pts[i][d]);
            }
        }
        let id = self.nodes.len();
        self.nodes.push(Node {
            lo,
            hi,
            start,
            end,
            left: usize::MAX,
            right: usize::MAX,
        });
        if end - start > LEAF {
            let axis = (0..3)
                .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
                .unwrap_or(0);
            let mid = start + (end - start) / 2;
            let pts = &self.pts;
            self.order[start..end].select_nth_unstable_by(mid - start, |&a, &b| {
                pts[a][axis].total_cmp(&pts[b][axis])
            });
            let l = self.build(start, mid);
            let r = self.build(mid, end);
            self.nodes[id].left = l;
            self.nodes[id].right = r;
        }
        id
    }

    /// The smallest squared distance from `p` to a point (`∞` when empty).
    pub fn nearest(&self, p: &[f64; 3]) -> f64 {
        let mut best = f64::INFINITY;
        if !self.nodes.is_empty() {
            self.nearest_in(0, p, &mut best);
        }
        best
    }

    fn nearest_in(&self, id: usize, p: &[f64; 3], best: &mut f64) {
        let n = &self.nodes[id];
        if n.left == usize::MAX {
            for &i in &self.order[n.start..n.end] {
                *best = best.min(dist2(p, &self.pts[i]));
            }
            return;
        }
        let (l, r) = (&self.nodes[n.left], &self.nodes[n.right]);
        let (dl, dr) = (box_dist2(p, &l.lo, &l.hi), box_dist2(p, &r.lo, &r.hi));
        let (first, df, second, ds) = if dl <= dr {
            (n.left, dl, n.right, dr)
        } else {
            (n.right, dr, n.left, dl)
        };
        if df <= *best {
            self.nearest_in(first, p, best);
        }
        if ds <= *best {
            self.nearest_in(second, p, best);
        }
    }

    /// Appends to `out` the index of every point at squared distance
    /// `≤ r2` from `p` (in no particular order).
    pub fn within(&self, p: &[f64; 3], r2: f64, out: &mut Vec<usize>) {
        if !self.nodes.is_empty() {
            self.within_in(0, p, r2, out);
        }
    }

    fn within_in(&self, id: usize, p: &[f64; 3], r2: f64, out: &mut Vec<usize>) {
        let n = &self.nodes[id];
        if box_dist2(p, &n.lo, &n.hi) > r2 {
            return;
        }
        if n.left == usize::MAX {
            for &i in &self.order[n.start..n.end] {
                if dist2(p, &self.pts[i]) <= r2 {
                    out.push(i);
                }
            }
            return;
        }
        self.within_in(n.left, p, r2, out);
        self.within_in(n.right, p, r2, out);
    }
}
