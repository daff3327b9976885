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
    let mut pairs = Vec::new();
    sweep_and_prune_into(boxes, &mut SweepScratch::default(), &mut pairs);
    pairs
}

/// The reused buffers of [`sweep_and_prune_into`].
#[derive(Clone, Debug, Default)]
pub struct SweepScratch {
    order: Vec<usize>,
    active: Vec<usize>,
}

/// [`sweep_and_prune`] into `pairs` (cleared first), with reused buffers.
pub fn sweep_and_prune_into(
    boxes: &[Aabb],
    scratch: &mut SweepScratch,
    pairs: &mut Vec<(usize, usize)>,
) {
    let SweepScratch { order, active } = scratch;
    order.clear();
    order.extend(0..boxes.len());
    // Unstable sort (no allocation); ties in the lower bound are broken
    // by index, so the order is the stable one.
    order.sort_unstable_by(|&a, &b| boxes[a].min[0].total_cmp(&boxes[b].min[0]).then(a.cmp(&b)));
    active.clear();
    pairs.clear();
    for &i in order.iter() {
        let bi = &boxes[i];
        active.retain(|&j| boxes[j].max[0] >= bi.min[0]);
        for &j in active.iter() {
            if bi.overlaps(&boxes[j]) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
        active.push(i);
    }
    pairs.sort_unstable();
}
