//! Prints the per-step iterations of one polytope-drop run (debugging aid):
//! `cargo run --release --example silico_debug -- HZ RHO SEED [single_level|bilevel] [chamfered|planar]`.
use dualsim::contact::SolverKind;
use dualsim::experiments::silico::Drop;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hz: f64 = args[1].parse().expect("HZ");
    let rho: f64 = args[2].parse().expect("RHO");
    let seed: u64 = args[3].parse().expect("SEED");
    let solver = if args.get(4).map(|s| s.as_str()) == Some("bilevel") {
        SolverKind::Bilevel
    } else {
        SolverKind::SingleLevel
    };
    let kind = if args.get(5).map(|s| s.as_str()) == Some("planar") {
        Drop::Planar
    } else {
        Drop::Chamfered
    };
    let w = kind.world(solver, 1.0 / hz, rho, 30);
    let mut x = kind.initial(&w, seed);
    let u = w.zero_control();
    for k in 0..(1.5 * hz) as usize {
        match dualsim::sim::step(&w, &x, &u) {
            Ok(o) => {
                println!(
                    "{k}: it {} z {:.4} contacts {}",
                    o.stats.iterations, o.state.q[2], o.stats.contacts
                );
                x = o.state;
            }
            Err(e) => {
                println!("{k}: ERR {e}");
                break;
            }
        }
    }
}
