//! Broad phase: sweep and prune on axis-aligned bounding boxes.
//!
//! Boxes are sorted by their lower `x` bound; a sweep keeps the boxes whose
//! `x` interval is still open and tests `y` and `z` overlap only for those.
//! Cost `O(n log n + k)` for `n` boxes and `k` overlapping `x` intervals,
//! instead of `O(n²)`. Works on primal values (`f64`): it only decides
//! which pairs the narrow phase looks at.

/// An axis-aligned bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub min: [f64; 3],
    /// Upper corner.
    pub max: [f64; 3],
}

impl Aabb {
    /// The box of a ball of radius `r` about `c`.
    pub fn ball(c: [f64; 3], r: f64) -> Self {
        Aabb {
            min: [c[0] - r, c[1] - r, c[2] - r],
            max: [c[0] + r, c[1] + r, c[2] + r],
        }
    }

    /// True when the two boxes overlap (closed intervals).
    pub fn overlaps(&self, other: &Aabb) -> bool {
        (0..3).all(|k| self.min[k] <= other.max[k] && other.min[k] <= self.max[k])
    }
}

/// All pairs `(i, j)`, `i < j`, of overlapping boxes, sorted.
///
/// ```
/// use dualsim::collision::broad_phase::{sweep_and_prune, Aabb};
/// let boxes = [Aabb::ball([0.0, 0.0, 0.0], 1.0), Aabb::ball([1.5, 0.0, 0.0], 1.0),
///              Aabb::ball([5.0, 0.0, 0.0], 1.0)];
/// assert_eq!(sweep_and_prune(&boxes), vec![(0, 1)]);
/// ```
pub fn sweep_and_prune(boxes: &[Aabb]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[a].min[0].total_cmp(&boxes[b].min[0]));
    let mut active: Vec<usize> = Vec::new();
    let mut pairs = Vec::new();
    for &i in &order {
        let bi = &boxes[i];
        active.retain(|&j| boxes[j].max[0] >= bi.min[0]);
        for &j in &active {
            if bi.overlaps(&boxes[j]) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
        active.push(i);
    }
    pairs.sort_unstable();
    pairs
}
