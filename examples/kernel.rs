//! Your own function as a `#[kernel]`: exact Jacobian and Hessian generated at
//! compile time, checked here against num-dual.
//!
//! ```text
//! cargo run --release --features examples --example kernel
//! ```
//!
//! Exits with status 1 if the generated Jacobian or Hessian disagrees with
//! num-dual by more than 1e-12 (relative).

use dualsim::{Scalar, kernel};
use nalgebra::{Const, U1};
use num_dual::{Dual2SVec64, DualSVec64};

/// Energy of a soft contact between a sphere (centre `p`, radius `r`) and the
/// ground `z = 0`, with a smooth (hyperbolic) penalty of stiffness `k` that
/// fades out away from the origin.
#[kernel]
fn soft_contact_energy<T: Scalar>(p: [T; 3], r: T, k: T) -> T {
    let gap = p[2] - r;
    let smooth = sqrt(gap * gap + 1e-4);
    let fade = exp(-(p[0].powi(2) + p[1].powi(2)) / 10);
    0.5 * k * (smooth - gap).powi(2) * fade
}

fn main() {
    // p = (0.3, −0.2, 0.05), r = 0.1, k = 1000.
    let x = [0.3, -0.2, 0.05, 0.1, 1000.0];
    let (e, jac, hess) = soft_contact_energy_hessian([x[0], x[1], x[2]], x[3], x[4]);

    // The same function, differentiated by num-dual at run time.
    let d = |i: usize| DualSVec64::<5>::from_re(x[i]).derivative(i);
    let ed = soft_contact_energy([d(0), d(1), d(2)], d(3), d(4));
    let grad = ed.eps.unwrap_generic(Const::<5>, U1);
    let h = |i: usize| Dual2SVec64::<5>::from_re(x[i]).derivative(i);
    let e2 = soft_contact_energy([h(0), h(1), h(2)], h(3), h(4));
    let hd = e2.v2.unwrap_generic(Const::<5>, Const::<5>);

    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1.0);
    let names = ["p.x", "p.y", "p.z", "r", "k"];
    println!("energy: generated {e:.15e}, num-dual {:.15e}", ed.re());
    println!(
        "{:>4} {:>24} {:>24} {:>10}",
        "d/d", "generated", "num-dual", "rel. err"
    );
    let mut worst: f64 = rel(e, ed.re());
    for i in 0..5 {
        let err = rel(jac[0][i], grad[i]);
        worst = worst.max(err);
        println!(
            "{:>4} {:>24.15e} {:>24.15e} {:>10.1e}",
            names[i], jac[0][i], grad[i], err
        );
    }
    for i in 0..5 {
        for j in 0..5 {
            worst = worst.max(rel(hess[0][i][j], hd[(i, j)]));
        }
    }
    println!("largest relative disagreement (value, Jacobian, Hessian): {worst:.1e}");
    if worst > 1e-12 {
        eprintln!("generated derivatives disagree with num-dual");
        std::process::exit(1);
    }
}
