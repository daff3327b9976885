//! Prints the per-step iterations, height, speed, spin and energy (kinetic
//! plus potential, J) of one polytope-drop run (debugging aid):
//! `cargo run --release --features examples --example silico_debug -- HZ RHO SEED [single_level|bilevel] [chamfered|planar] [KEY=VALUE …]`.
//!
//! `KEY=VALUE` overrides: `cap` (iteration cap, default 30), `mu` (the
//! friction coefficient of the box and the ground, default the scene's) and the
//! interior-point tuning `restart_after`, `restart_step`, `restart_scale`,
//! `continuation_iterations`, `continuation_from`,
//! `friction_continuation_iterations`, `friction_continuation_from`,
//! `friction_continuation_rho`,
//! `initial_scale`, `warm_start`, `nesterov_todd`, `fraction_to_boundary`,
//! `recenter_below` (defaults: the library's). Set `DUALSIM_SL_TRACE=1`
//! for `single_level`'s per-iteration trace on stderr.
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
    let mut cap = 30;
    let mut mu: Option<f64> = None;
    let mut params = dualsim::contact::mehrotra::Params::default();
    for kv in args.iter().skip(6) {
        let (k, v) = kv.split_once('=').expect("KEY=VALUE");
        let f = || v.parse::<f64>().expect("a number");
        let b = || v.parse::<bool>().expect("true or false");
        match k {
            "cap" => cap = v.parse().expect("an integer"),
            "mu" => mu = Some(f()),
            "restart_after" => params.restart_after = v.parse().expect("an integer"),
            "restart_step" => params.restart_step = f(),
            "restart_scale" => params.restart_scale = f(),
            "continuation_iterations" => {
                params.continuation_iterations = v.parse().expect("an integer")
            }
            "continuation_from" => params.continuation_from = f(),
            "friction_continuation_iterations" => {
                params.friction_continuation_iterations = v.parse().expect("an integer")
            }
            "friction_continuation_from" => params.friction_continuation_from = f(),
            "friction_continuation_rho" => params.friction_continuation_rho = f(),
            "initial_scale" => params.initial_scale = f(),
            "warm_start" => params.warm_start = b(),
            "nesterov_todd" => params.nesterov_todd = b(),
            "fraction_to_boundary" => params.fraction_to_boundary = f(),
            "recenter_below" => params.recenter_below = f(),
            other => panic!("unknown key {other}"),
        }
    }
    let mut w = kind.world(solver, 1.0 / hz, rho, cap);
    w.backends.single_level = params;
    if let Some(mu) = mu {
        for m in &mut w.materials {
            m.friction = mu;
        }
        for st in &mut w.statics {
            st.material.friction = mu;
        }
    }
    let mut x = kind.initial(&w, seed);
    let u = w.zero_control();
    for k in 0..(1.5 * hz) as usize {
        match dualsim::sim::step(&w, &x, &u) {
            Ok(o) => {
                let n3 = |i: usize| (0..3).map(|d| o.state.v[i + d].powi(2)).sum::<f64>().sqrt();
                println!(
                    "{k}: it {} z {:.4} contacts {} speed {:.3} spin {:.3} energy {:.4}",
                    o.stats.iterations,
                    o.state.q[2],
                    o.stats.contacts,
                    n3(0),
                    n3(3),
                    dualsim::dynamics::free::kinetic_energy(&w.model, &o.state.q, &o.state.v)
                        + 9.81 * o.state.q[2]
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
