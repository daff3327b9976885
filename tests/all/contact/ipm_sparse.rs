//! The block-sparse reduced system of large islands (`linalg::BlockCsc`,
//! `linalg::BlockLu`, `linalg::SparseLu`, used by `ipm` for `f64` islands of at least
//! `SPARSE_MIN_ROWS` rows) against the dense factorizations.

use dualsim::contact::mehrotra::SPARSE_MIN_ROWS;
use dualsim::diff::{DiffOptions, Method, Param, step_jacobian};
use dualsim::linalg::{BlockCsc, BlockLu, DenseLu, SparseLu};
use dualsim::math::{DMat, DVec, Pose, Vec3};
use dualsim::prelude::*;
use num_dual::Dual64;

/// A small seeded generator (xorshift64*), uniform in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    fn below(&mut self, n: usize) -> usize {
        (((self.next() + 1.0) * 0.5) * n as f64) as usize % n
    }
}

/// Fills every stored block of `a` with seeded values (diagonal blocks
/// shifted by `shift` on their diagonal) and returns the same matrix dense.
fn fill(a: &mut BlockCsc<f64>, rng: &mut Rng, shift: f64) -> DMat<f64> {
    let sizes = a.sizes().to_vec();
    let off: Vec<usize> = sizes
        .iter()
        .scan(0, |o, s| {
            let r = *o;
            *o += s;
            Some(r)
        })
        .collect();
    let n = a.dim();
    let mut d = DMat::zeros(n, n);
    a.clear();
    for j in 0..sizes.len() {
        for i in 0..sizes.len() {
            let Some(b) = a.block(i, j) else { continue };
            for c in 0..sizes[j] {
                for r in 0..sizes[i] {
                    let mut v = rng.next();
                    if i == j && r == c {
                        v += shift;
                    }
                    a.add(b, r, c, v);
                    d[(off[i] + r, off[j] + c)] = v;
                }
            }
        }
    }
    d
}

#[test]
fn sparse_lu_matches_dense_lu_on_a_random_block_pattern() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // 40 blocks of 6 or 3 rows, ~3 random symmetric couplings per block
    // (a pile's contact graph), 210 rows.
    let sizes: Vec<usize> = (0..40).map(|i| if i % 3 == 0 { 3 } else { 6 }).collect();
    let mut pairs = Vec::new();
    for _ in 0..60 {
        let (i, j) = (rng.below(40), rng.below(40));
        pairs.push((i, j));
        pairs.push((j, i));
    }
    let mut a = BlockCsc::<f64>::new(&sizes, pairs.iter().copied());
    let n = a.dim();
    assert_eq!(n, sizes.iter().sum::<usize>());
    let mut lu = SparseLu::new(&a).expect("symbolic analysis");
    // Two sets of values on the same pattern (the second with small
    // diagonals, so that rows must be pivoted): one symbolic analysis.
    for shift in [8.0, 0.0] {
        let d = fill(&mut a, &mut rng, shift);
        for j in 0..n {
            for i in 0..n {
                assert_eq!(a.get(i, j), d[(i, j)]);
            }
        }
        assert!(lu.factor(&a));
        let b = DVec::from_fn(n, |_, _| rng.next());
        let mut x = b.clone();
        assert!(lu.solve_in_place(x.as_mut_slice()));
        let mut dense = DenseLu::default();
        assert!(dense.factor(&d));
        let mut xd = b.clone();
        assert!(dense.solve_in_place(&mut xd));
        let res = (&d * &x - &b).amax();
        let diff = (&x - &xd).amax() / xd.amax().max(1.0);
        println!("shift {shift}: residual {res:.1e}, sparse vs dense {diff:.1e}");
        assert!(res <= 1e-10 * b.amax(), "residual {res:e}");
        assert!(diff <= 1e-9, "sparse vs dense {diff:e}");
        // Several right-hand sides at once.
        let bm = DMat::from_fn(n, 3, |_, _| rng.next());
        let mut xm = bm.clone();
        assert!(lu.solve_columns_in_place(xm.as_mut_slice(), 3));
        assert!((&d * &xm - &bm).amax() <= 1e-10 * bm.amax());
    }
}

/// A `k × k` grid of 6-row blocks, each coupled to its four neighbours
/// (the contact graph of a layer of spheres).
fn grid(k: usize) -> BlockCsc<f64> {
    let mut pairs = Vec::new();
    for i in 0..k * k {
        let (x, y) = (i % k, i / k);
        if x + 1 < k {
            pairs.extend([(i, i + 1), (i + 1, i)]);
        }
        if y + 1 < k {
            pairs.extend([(i, i + k), (i + k, i)]);
        }
    }
    BlockCsc::new(&vec![6; k * k], pairs)
}

#[test]
fn block_lu_matches_dense_lu_with_a_sparse_fill() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // The random pattern above (mixed 3- and 6-row blocks), the same
    // stored on one side only, and a 12 × 12 grid, each factored three times
    // by one `BlockLu` (a factorization must not see the previous one's
    // fill-in), with diagonally dominant blocks (shift 8, twice) and with blocks
    // that need pivoting inside them (shift 2 on a random pattern is
    // allowed to fail the static pivoting: then the check must say so).
    let sizes: Vec<usize> = (0..40).map(|i| if i % 3 == 0 { 3 } else { 6 }).collect();
    let mut pairs = Vec::new();
    for _ in 0..60 {
        let (i, j) = (rng.below(40), rng.below(40));
        pairs.push((i, j));
        pairs.push((j, i));
    }
    // One-sided: block (i, j) stored without (j, i), which the block LU
    // reads as a symmetric pattern with a zero block (its factor storage
    // has no source and must be zeroed at every factorization).
    let one_sided: Vec<(usize, usize)> = pairs.iter().step_by(2).copied().collect();
    for (name, mut a) in [
        (
            "random",
            BlockCsc::<f64>::new(&sizes, pairs.iter().copied()),
        ),
        ("grid", grid(12)),
        ("one-sided", BlockCsc::<f64>::new(&sizes, one_sided)),
    ] {
        let n = a.dim();
        let mut lu = BlockLu::new(&a).expect("symbolic analysis");
        for shift in [8.0, 8.0, 2.0] {
            let d = fill(&mut a, &mut rng, shift);
            if !lu.factor(&a) {
                // Refused: a static pivot was too small or the backward
                // error too large; the pivoting LU must then succeed.
                println!("{name}, shift {shift}: static pivoting refused");
                let mut p = SparseLu::new(&a).unwrap();
                assert!(p.factor(&a));
                assert!(shift < 8.0, "a diagonally dominant matrix was refused");
                continue;
            }
            let b = DVec::from_fn(n, |_, _| rng.next());
            let mut x = b.clone();
            assert!(lu.solve_in_place(x.as_mut_slice()));
            let mut dense = DenseLu::default();
            assert!(dense.factor(&d));
            let mut xd = b.clone();
            assert!(dense.solve_in_place(&mut xd));
            let res = (&d * &x - &b).amax();
            let diff = (&x - &xd).amax() / xd.amax().max(1.0);
            println!("{name}, shift {shift}: residual {res:.1e}, block vs dense {diff:.1e}");
            assert!(res <= 1e-10 * b.amax(), "residual {res:e}");
            assert!(diff <= 1e-9, "block vs dense {diff:e}");
        }
    }
    // Fill of the grid's factors: a symmetric order keeps it near
    // n log n blocks; a dense factorization would store 144² blocks.
    let a = grid(12);
    let lu = BlockLu::new(&a).unwrap();
    let blocks = lu.factor_len() / 36;
    println!(
        "12 × 12 grid: {blocks} blocks in the factors (dense: {})",
        144 * 144
    );
    assert!(blocks < 144 * 144 / 4, "{blocks} blocks");
}

#[test]
fn block_lu_refuses_a_zero_diagonal_block_that_the_pivoting_lu_factors() {
    // [[0, I], [I, 0]]: nonsingular, but block 0's pivot is zero.
    let mut a = BlockCsc::<f64>::new(&[2, 2], [(0, 1), (1, 0)]);
    for (i, j) in [(0, 1), (1, 0)] {
        let b = a.block(i, j).unwrap();
        a.add(b, 0, 0, 1.0);
        a.add(b, 1, 1, 1.0);
    }
    let mut lu = BlockLu::new(&a).unwrap();
    assert!(!lu.factor(&a), "static pivoting accepted a zero pivot");
    let mut x = [1.0, 2.0, 3.0, 4.0];
    assert!(
        !lu.solve_in_place(&mut x),
        "solved with a refused factorization"
    );
    let mut p = SparseLu::new(&a).unwrap();
    assert!(p.factor(&a));
    assert!(p.solve_in_place(&mut x));
    assert_eq!(x, [3.0, 4.0, 1.0, 2.0]);
}

#[test]
fn a_singular_block_sparse_matrix_is_refused() {
    // Two 2 × 2 blocks, coupled; block row 1 all zero: singular.
    let mut a = BlockCsc::<f64>::new(&[2, 2], [(0, 1), (1, 0)]);
    let b00 = a.block(0, 0).unwrap();
    a.add(b00, 0, 0, 1.0);
    a.add(b00, 1, 1, 1.0);
    let mut lu = SparseLu::new(&a).unwrap();
    let ok = lu.factor(&a) && {
        let mut x = [1.0, 1.0, 1.0, 1.0];
        lu.solve_in_place(&mut x)
    };
    assert!(!ok, "a singular matrix was factored and solved");
}

fn ground() -> StaticGeometry<f64> {
    StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material {
            friction: 0.5,
            restitution: 0.0,
        },
    }
}

/// A `k × k` layer of touching spheres (r = 0.1 m, 1 kg) on a plane: one
/// island of `k²` bodies, `6 k²` rows.
fn layer(k: usize) -> (World<f64>, State<f64>) {
    let r = 0.1;
    let mut w = World::<f64>::new(0.01);
    let mut pos = Vec::new();
    for i in 0..k * k {
        pos.push([(i % k) as f64 * 2.0 * r, (i / k) as f64 * 2.0 * r, r]);
        w.add_body(
            &format!("s{i}"),
            1.0,
            Mat3::identity() * (0.4 * r * r),
            Some(Shape::Sphere { radius: r }),
            Material {
                friction: 0.5,
                restitution: 0.0,
            },
        )
        .unwrap();
    }
    w.statics.push(ground());
    let x0 = State::at_rest(&w.model, &pos);
    (w, x0)
}

/// The f64 step of a layer large enough for the sparse path against the
/// same step in a dual scalar (always the dense generic path): same next
/// state to 1e-8; and the `ift` Jacobian (factored in f64, sparse) against
/// `unrolled` (dual, dense): same columns to 1e-6 relative to
/// max(1, ‖J‖∞).
#[test]
fn sparse_island_step_matches_the_dense_dual_step() {
    let k = 4;
    assert!(
        6 * k * k >= SPARSE_MIN_ROWS,
        "the layer must take the sparse path"
    );
    let (w, x0) = layer(k);
    let u = w.zero_control();
    // Settle, then push the corner sphere sideways so that friction and
    // the neighbour contacts carry load.
    let traj = rollout(&w, &x0, &Controls::Constant(u.clone()), 10).unwrap();
    let mut x = traj.last().clone();
    x.v[0] = 0.3;
    let out = step(&w, &x, &u).unwrap();
    assert!(out.stats.contacts >= k * k + 2 * k * (k - 1));
    // Columns: the pushed sphere's velocity, a middle sphere's control.
    let mid = 6 * (k + 1);
    let params: Vec<Param> = (0..3)
        .map(Param::V)
        .chain((mid..mid + 3).map(Param::U))
        .collect();
    let o = DiffOptions {
        rho: Some(1e-4),
        ..Default::default()
    };
    let ift = step_jacobian(&w, &x, &u, &params, Method::Ift, &o).unwrap();
    let unr = step_jacobian(&w, &x, &u, &params, Method::Unrolled, &o).unwrap();
    // The step itself: f64 (sparse) against Dual64 (dense generic).
    let wd = w.cast::<Dual64>();
    let outd = step(&wd, &x.cast::<Dual64>(), &u.map(Dual64::from)).unwrap();
    let dq = (&out.state.q - outd.state.q.map(|e| e.re)).amax();
    let dv = (&out.state.v - outd.state.v.map(|e| e.re)).amax();
    let scale = ift.jacobian.amax().max(1.0);
    let dj = (&ift.jacobian - &unr.jacobian).amax() / scale;
    println!("next state: |dq| {dq:.1e} |dv| {dv:.1e}; Jacobian {dj:.1e} (‖J‖∞ {scale:.2})");
    assert!(
        dq <= 1e-8 && dv <= 1e-8,
        "next state differs: {dq:e} {dv:e}"
    );
    assert!(dj <= 1e-6, "Jacobians differ by {dj:e}");
    // Contact carried the push: the pushed sphere's neighbour moves.
    assert!(ift.jacobian.amax() > 0.0);
}

/// Chord steps (`reuse_factorization`, on by default for islands of the
/// sparse path's size) reach the same root as refactoring every
/// iteration: a 6 × 6 layer settled for 15 steps and then pushed, rolled
/// out with the key on and off, ends in the same state to 1e-12; and the
/// rollout with chord steps does take them (its iteration count, chord
/// steps included, differs from the one without).
#[test]
fn chord_steps_reach_the_same_root_as_refactoring() {
    let k = 6;
    let (mut w, x0) = layer(k);
    assert!(w.backends.ipm.reuse_factorization, "on by default");
    let u = w.zero_control();
    let settle = rollout(&w, &x0, &Controls::Constant(u.clone()), 15).unwrap();
    let mut x = settle.last().clone();
    // Push two corner spheres so friction and neighbour contacts carry load.
    x.v[0] = 0.3;
    x.v[6 * (k * k - 1) + 1] = -0.2;
    let run = |w: &World<f64>| {
        let mut iters = 0;
        let mut s = x.clone();
        for _ in 0..8 {
            let out = step(w, &s, &u).unwrap();
            iters += out.stats.iterations;
            s = out.state;
        }
        (s, iters)
    };
    let (with, it_with) = run(&w);
    w.backends.ipm.reuse_factorization = false;
    let (without, it_without) = run(&w);
    let dq = (&with.q - &without.q).amax();
    let dv = (&with.v - &without.v).amax();
    println!(
        "|dq| {dq:.1e} |dv| {dv:.1e}; iterations {it_with} with chord steps, {it_without} without"
    );
    assert!(dq <= 1e-12 && dv <= 1e-12, "states differ: {dq:e} {dv:e}");
    assert_ne!(it_with, it_without, "no chord step was taken");
}
