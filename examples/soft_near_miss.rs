//! Derivatives before contact (issue #19, point 4): a ball (R = 0.1 m)
//! spinning backwards flies over the ground with its lowest point `g₀`
//! above it and never touches it (it rises and comes back to `g₀` after
//! 0.1 s). d(final horizontal velocity)/d(initial height) is non-zero
//! with `soft` (its softplus force acts at a distance, decaying like
//! `e^{−g₀/ε₃}`) and exactly zero with `ipm` (no contact force outside
//! contact).
//!
//! `cargo run --release --features examples --example soft_near_miss [-- --svg PATH]` prints
//! the derivative at `g₀` = 4 cm and over `g₀` ∈ [1, 8] cm for both
//! backends, and writes the plot (default
//! `dualsim-out/soft_near_miss.svg`; the one in `docs/images/` is written
//! by this example).

use std::path::PathBuf;

use dualsim::contact::SolverKind;
use dualsim::contact::soft::Params;
use dualsim::diff::{Input, unrolled};
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use plotters::prelude::*;

const STEPS: usize = 50;

fn world(kind: SolverKind) -> World<f64> {
    let mut w = World::<f64>::new(2e-3);
    w.solver = kind;
    w.backends.soft = Params {
        // a wider softplus so that a 4 cm gap is felt (ε₃ = 1 cm)
        softness: 1e-2,
        margin: 0.5,
        points_per_meter: 40.0,
        ..Params::default()
    };
    w.add_body(
        "ball",
        1.0,
        Mat3::identity() * 0.004,
        Some(Shape::Sphere { radius: 0.1 }),
        Material::default(),
    )
    .unwrap();
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material: Material::default(),
    });
    w
}

/// (lowest gap over the flight, final v_x, d v_x / d z₀) for a start with
/// the lowest point `gap0` above the ground, moving sideways at 1 m/s and
/// up at g T / 2 (back at `gap0` after T = 0.1 s), spinning at 20 rad/s.
fn flight(w: &World<f64>, gap0: f64) -> Result<(f64, f64, f64), Box<dyn std::error::Error>> {
    let mut x0 = State::at_rest(&w.model, &[[0.0, 0.0, 0.1 + gap0]]);
    x0.v[0] = 1.0;
    x0.v[2] = 0.4905;
    x0.v[4] = -20.0;
    let u = Controls::Constant(w.zero_control());
    let traj = rollout(w, &x0, &u, STEPS)?;
    let min_gap = traj
        .states
        .iter()
        .map(|s| s.q[2] - 0.1)
        .fold(f64::INFINITY, f64::min);
    let j = unrolled::<1>(w, &x0, &u, STEPS, &[Input::Config(2)])?;
    Ok((min_gap, traj.last().v[0], j[(w.model.nv, 0)]))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let svg = args
        .iter()
        .position(|a| a == "--svg")
        .map(|i| PathBuf::from(&args[i + 1]))
        .unwrap_or_else(|| PathBuf::from("dualsim-out/soft_near_miss.svg"));
    let kinds = [SolverKind::Soft, SolverKind::Ipm];
    for kind in kinds {
        let (min_gap, vx, d) = flight(&world(kind), 0.04)?;
        println!(
            "{kind}: lowest gap {min_gap:.4} m, final v_x {vx:.9} m/s, d v_x / d z0 = {d:.6e} (1/s)"
        );
    }
    let gaps: Vec<f64> = (0..=28).map(|i| 0.01 + 0.0025 * i as f64).collect();
    let mut curves = Vec::new();
    for kind in kinds {
        let w = world(kind);
        let mut c = Vec::new();
        for &g in &gaps {
            let (min_gap, _, d) = flight(&w, g)?;
            assert!(min_gap > 0.0, "{kind} touched at g0 = {g}");
            c.push((g * 100.0, d));
        }
        curves.push((kind.to_string(), c));
    }
    println!("{:>8} {:>14} {:>14}", "g0 (cm)", "soft", "ipm");
    for i in (0..gaps.len()).step_by(4) {
        println!(
            "{:>8.2} {:>14.6e} {:>14.6e}",
            curves[0].1[i].0, curves[0].1[i].1, curves[1].1[i].1
        );
    }
    if let Some(d) = svg.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = svg.with_extension("svg.tmp");
    {
        let (lo, hi) = curves
            .iter()
            .flat_map(|(_, c)| c.iter().map(|p| p.1))
            .fold((0.0f64, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
        let pad = 0.05 * (hi - lo).max(1e-12);
        let root = SVGBackend::new(&tmp, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "near miss: d v_x(0.1 s) / d z0 of a spinning ball that never touches",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(1.0..8.0, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .x_desc("initial gap g0 = lowest gap of the flight (cm); soft eps3 = 1 cm")
            .y_desc("d v_x / d z0 (1/s)")
            .draw()?;
        for ((name, c), color) in curves.iter().zip([RED, BLUE]) {
            chart
                .draw_series(LineSeries::new(c.iter().copied(), color.stroke_width(2)))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(c.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    std::fs::rename(&tmp, &svg)?;
    println!("wrote {}", svg.display());
    Ok(())
}
