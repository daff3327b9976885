//! A gentle face-to-face landing (debugging aid): the chamfered drop box
//! (`experiments::silico::drop_polytope`, 0.4 m tall) released flat and at
//! rest with its bottom face `GAP` m above the ground, simulated 1 s;
//! prints each step's iterations, height and error.
//!
//! `cargo run --release --features examples --example bilevel_face -- [HZ] [RHO] [GAP] [TILT] [single_level|bilevel] [CAP] [BACKTRACKS]`
//! (defaults 100, 1e-6, 0.03, 0, bilevel, 30, the library's line-search
//! halvings; `TILT` rad about the x axis, the box then lands on an edge
//! before its face).
use dualsim::contact::SolverKind;
use dualsim::experiments::silico::Drop;
use dualsim::sim::State;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: usize, d: f64| args.get(k).map_or(d, |s| s.parse().expect("a number"));
    let (hz, rho, gap, tilt) = (arg(1, 100.0), arg(2, 1e-6), arg(3, 0.03), arg(4, 0.0));
    let solver = if args.get(5).map(|s| s.as_str()) == Some("single_level") {
        SolverKind::SingleLevel
    } else {
        SolverKind::Bilevel
    };
    let cap = arg(6, 30.0) as usize;
    let mut w = Drop::Chamfered.world(solver, 1.0 / hz, rho, cap);
    if let Some(b) = args.get(7) {
        let b: usize = b.parse().expect("BACKTRACKS");
        w.backends.bilevel.max_backtracks = b;
        w.backends.single_level.max_backtracks = b;
    }
    // Lowest point of the tilted box: 0.25 |sin| + 0.2 cos.
    let z0 = 0.25 * tilt.sin().abs() + 0.2 * tilt.cos() + gap;
    let mut x = State::at_rest(&w.model, &[[0.0, 0.0, z0]]);
    let q = dualsim::math::so3::exp(&dualsim::math::Vec3::new(tilt, 0.0, 0.0));
    x.q[3] = q.w;
    x.q[4] = q.i;
    x.q[5] = q.j;
    x.q[6] = q.k;
    let u = w.zero_control();
    for k in 0..hz as usize {
        match dualsim::sim::step(&w, &x, &u) {
            Ok(o) => {
                println!(
                    "{k}: it {} z {:.9} vz {:.3e} contacts {}",
                    o.stats.iterations, o.state.q[2], o.state.v[2], o.stats.contacts
                );
                x = o.state;
            }
            Err(e) => {
                println!("{k}: ERR {e}");
                std::process::exit(1);
            }
        }
    }
}
