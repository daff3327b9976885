//! The interior-point driver of the contact layer: Mehrotra's
//! predictor–corrector on one island (the formulation and the steps are
//! in the [`ipm` module docs](crate::contact::ipm)), with its tuning
//! ([`Params`], shared by `ipm`, `single_level` and `bilevel`), its
//! safeguarded warm start ([`solve_island_warm`]) and the factorization
//! of the island's exact Jacobian for the implicit-function derivatives
//! ([`IslandJacobian`]). `ipm` and `bilevel` are this driver with two
//! contact kinematics (closed-form pairs and conic proximity).
//!
//! Departure from the target design (one driver for every interior-point
//! backend): `single_level` still runs its own predictor–corrector loop.
//! Its unknowns include every conic pair's primal–dual point, so its
//! Newton system has a block per conic program that this driver's
//! per-contact elimination does not have; it shares the cone algebra
//! ([`math::cone`](crate::math::cone)), the friction laws
//! ([`law`](crate::contact::law)), the candidates and [`Params`]. Folding
//! it in needs the driver to be generic over the KKT system (a small
//! trait: evaluate, factor, solve, boundary step), the next step of this
//! module.
//!
//! # Files
//!
//! One per operation, each step a function of its own so that a driver
//! over a KKT trait can reuse them: `params.rs` ([`Params`]),
//! `driver.rs` ([`solve_island`]: the loop, one iteration, the
//! predictor), `initial.rs` (the initial point), `newton.rs` (assembly of
//! the reduced Newton matrix), `lu.rs` (its factorizations and the `f64`
//! path), `direction.rs` (Newton directions and chord steps),
//! `line_search.rs` (trial points, the search over directions, the
//! centering step), `merit.rs` (convergence measures and the merit),
//! `polish.rs` (the polish and the derivative steps), `warm.rs`
//! ([`solve_island_warm`]), `continuation.rs` (continuation in ρ after a
//! failure), `work.rs` ([`Work`]), `jacobian.rs` ([`IslandJacobian`]) and
//! `trace.rs`.
//!
//! # The reduced system
//!
//! Each Newton direction eliminates every contact's local unknowns and
//! solves the reduced system in the island's velocities (one block row and
//! column per unit: 6 for a free body, a robot's dofs), whose off-diagonal
//! blocks couple only units that share a contact. How it is stored and
//! factored depends on its size and on the scalar:
//!
//! * a scalar with the `f64` view ([`Scalar::f64_view`]: `f64`, or a
//!   user's `f64` wrapper that opts in), at least [`SPARSE_MIN_ROWS`]
//!   rows (a pile): block-sparse
//!   ([`BlockCsc`]), its pattern built from the island's contacts and
//!   refilled in place at every iteration, factored by [`BlockLu`] (faer's
//!   AMD order of the blocks, static pivoting between blocks, checked by
//!   its backward error), or by faer's pivoting sparse LU ([`SparseLu`])
//!   when that check fails; symbolic analysis once per pattern, numeric
//!   factorization per iteration. The factorization's fill still grows
//!   with the island (as n^1.5 on a 2-D contact graph), so near
//!   convergence a factorization serves several Newton steps (chord
//!   steps, [`Params::reuse_factorization`]; a departure from
//!   CONTACT-LAYER.md's one factorization per iteration).
//! * otherwise dense: [`DenseLu`] (generic, storage reused), or faer's dense
//!   LU for islands of at least [`FAER_MIN_ROWS`] rows in a scalar with the
//!   `f64` view that the sparse path does not take.
//!
//! The path is chosen by that capability of the scalar, not by its type
//! (no `TypeId` test). Dual and other generic scalars always take the
//! dense generic path:
//! assembly is O(n²) and the LU O(n³) in the island's `n` velocity
//! unknowns, so differentiating a step through a dual scalar (`Method::Forward`)
//! on an island of hundreds of bodies is far slower than an `f64` step; the
//! implicit-function methods (`ift`, `lift`) factor in `f64` and use the
//! sparse path.

use crate::Scalar;
use crate::contact::island::{Island, UnitKind};
use crate::contact::law::{Law, local_jacobian_with, local_residual_fixed};
use crate::contact::space::contact_jacobian;
use crate::contact::space::evaluate::{Eval, evaluate, evaluate_into};
use crate::contact::space::robot::robot_contact_jacobian;
use crate::contact::{SolveError, StepProblem};
use crate::dynamics::free::NewtonParams;
use crate::linalg::{BlockCsc, BlockLu, DenseLu, SmallLu, SparseLu};
use crate::math::cone::{jordan, nt_scaling, orthant_step, soc_central_point, soc_step};
use crate::math::{DMat, DVec, Vec3};
use crate::scalar::{has_f64_view, safe_norm};
use nalgebra::{Matrix3, Matrix3xX, Matrix6, SMatrix, SVector};

mod continuation;
mod direction;
mod driver;
mod initial;
mod jacobian;
mod line_search;
mod lu;
mod merit;
mod newton;
mod params;
mod polish;
mod trace;
mod warm;
mod work;

use continuation::*;
use direction::*;
pub use driver::*;
use initial::*;
pub use jacobian::*;
use line_search::*;
use lu::*;
#[doc(hidden)]
pub use lu::{FactorCounts, factorizations};
use merit::*;
use newton::*;
pub use params::*;
use polish::*;
use trace::*;
pub use warm::*;
pub use work::*;

/// The result of one island's solve, held in its [`Work`].
#[derive(Clone, Copy, Debug)]
pub struct IslandSolution<'a, T: Scalar> {
    /// Velocity of the island bodies (6 each, island order).
    pub v: &'a DVec<T>,
    /// Contact unknowns.
    pub xs: &'a [DVec<T>],
    /// Final evaluation (contact geometry at q⁺).
    pub eval: &'a Eval<T>,
    /// Iterations (Newton directions computed).
    pub iterations: usize,
    /// Final equality residual (∞-norm).
    pub residual: f64,
    /// Final complementarity `max zᵢ sᵢ`.
    pub complementarity: f64,
    /// Stopped at the iteration cap ([`crate::contact::SolverParams::accept_at_cap`]).
    pub capped: bool,
}

/// How a solve ended (its point is the work's current point).
#[derive(Clone, Copy, Debug)]
struct Ended {
    iterations: usize,
    residual: f64,
    complementarity: f64,
    capped: bool,
}

/// Islands whose reduced system has at least this many rows (16 bodies)
/// are factored by faer's blocked LU when the scalar has the `f64` view
/// ([`Scalar::f64_view`]); smaller ones, and every dual scalar, by
/// nalgebra's LU (generic over `Scalar`).
pub const FAER_MIN_ROWS: usize = 96;

/// Islands whose reduced system has at least this many rows (16 free
/// bodies) are assembled block-sparsely and factored by faer's sparse LU
/// when the scalar has the `f64` view (see the [module docs](self)). Measured on
/// square layers of touching spheres (`examples/scaling.rs`, callgrind
/// time of one step): at 96 rows the two paths are within 8 % (dense
/// 443 ms, sparse 478 ms), at 216 rows sparse is 2.3× faster (1.78 s
/// against 4.06 s) and at 600 rows 6.7× (12.6 s against 84.8 s). The
/// crossover lies between 96 and 216 rows; not measured more finely.
pub const SPARSE_MIN_ROWS: usize = 96;

/// `dst = src`, reusing `dst`'s storage when the length agrees.
pub(crate) fn copy_vec<T: Scalar>(dst: &mut DVec<T>, src: &DVec<T>) {
    if dst.len() == src.len() {
        dst.copy_from(src);
    } else {
        *dst = src.clone();
    }
}

/// `dst = src` for a list of vectors, reusing storage where lengths agree.
fn copy_vecs<T: Scalar>(dst: &mut Vec<DVec<T>>, src: &[DVec<T>]) {
    dst.truncate(src.len());
    for (d, x) in dst.iter_mut().zip(src) {
        copy_vec(d, x);
    }
    for x in &src[dst.len()..] {
        dst.push(x.clone());
    }
}
