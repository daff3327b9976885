//! Jade's two-ball targeting (`examples/jade_two_ball.rs`, Jade Table I):
//! gradient descent through `lcp` with continuous collision puts the
//! target ball within 1e-4 of the target (Jade: 1.56e-3, Nimble:
//! 2.49e-2), and the optimized launch is the closed form's: the yellow
//! ball leaves along the line of centres at the time of impact, so
//! `p_final = (v · n) n (T − t_c)` with `n` the unit vector of the target.

#[allow(dead_code)]
#[path = "../../../examples/jade_two_ball.rs"]
mod jade;

#[test]
fn gradient_descent_reaches_the_target_within_1e_4() {
    let out = jade::optimize(1e-5, 400).expect("optimizes");
    println!(
        "{} iterations, {} rollouts: v = {:?}, final position {:?}, error {:.2e}",
        out.iterations, out.rollouts, out.v, out.p, out.error
    );
    assert!(out.error < 1e-4, "{:e}", out.error);
    // The closed form of the optimum: the yellow ball moves along
    // n = p_target/|p_target| from the origin; the blue ball's centre at
    // the impact is −2r n, reached at t_c = (−2r n − start)_x / v_x with
    // the y of the launch velocity then v_y = (−2r n − start)_y / t_c; the
    // yellow ball's speed (v · n) covers |p_target| in T − t_c.
    let (tx, ty) = (jade::TARGET[0], jade::TARGET[1]);
    let dist = (tx * tx + ty * ty).sqrt();
    let n = [tx / dist, ty / dist];
    let hit = [
        -2.0 * jade::RADIUS * n[0] - jade::BLUE[0],
        -2.0 * jade::RADIUS * n[1] - jade::BLUE[1],
    ];
    let t_end = jade::DT * jade::STEPS as f64;
    // v = hit / t_c, (v · n)(T − t_c) = dist: (hit · n)(T − t_c) = dist t_c
    let hn = hit[0] * n[0] + hit[1] * n[1];
    let tc = hn * t_end / (dist + hn);
    let v = [hit[0] / tc, hit[1] / tc];
    let err = (out.v[0] - v[0]).abs().max((out.v[1] - v[1]).abs());
    println!("closed-form launch {v:?}: |v − closed form| = {err:.1e}");
    // The target error 1e-5 bounds the launch error by about
    // 1e-5 / σ_min(∂p/∂v) (σ_min ≈ 0.1 s).
    assert!(err < 1e-3, "{err:e}");
}
