//! The `soft` backend's damping profile and the Hessian (issue #19, point
//! 3): a point mass resting on a plane at its closed-form depth, started
//! with the normal velocity v₀; the second derivative of its height after
//! 5 steps (h = 1 ms) with respect to v₀, by hyper-dual numbers through the
//! whole rollout (`unrolled`), for the published profile (eqs. 16–17, C¹:
//! the curvature jumps from 0 to ½ at v_n = 0 and back at 2 v_d) and the
//! smoothed one (C²).
//!
//! `cargo run --release --features examples --example soft_damping_hessian [-- --svg PATH]`
//! prints the curves and the jumps at v₀ = 0 and writes the plot
//! (default `dualsim-out/soft_damping_hessian.svg`; the one in
//! `docs/images/` is written by this example).

use std::path::PathBuf;

use dualsim::contact::SolverKind;
use dualsim::contact::soft::Params;
use dualsim::contact::soft::model::DampingProfile;
use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use dualsim::sim::step;
use num_dual::HyperDual64;
use plotters::prelude::*;

const STEPS: usize = 5;

fn world(profile: DampingProfile) -> World<f64> {
    let mut w = World::<f64>::new(1e-3);
    w.solver = SolverKind::Soft;
    w.backends.soft = Params {
        damping_profile: profile,
        ..Params::default()
    };
    w.add_body(
        "point",
        1.0,
        Mat3::identity() * 1e-3,
        Some(Shape::Points {
            points: vec![Vec3::zeros()],
            normals: vec![Vec3::z()],
        }),
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

/// d²z/dv₀² after STEPS steps from the resting depth with v_z = v₀.
fn curvature(w: &World<HyperDual64>, z0: f64, v0: f64) -> f64 {
    let mut x = State::<HyperDual64>::at_rest(&w.model, &[[0.0, 0.0, z0]]);
    x.v[2] = HyperDual64::new(v0, 1.0, 1.0, 0.0);
    let u = w.zero_control();
    for _ in 0..STEPS {
        x = step(w, &x, &u).unwrap().state;
    }
    x.q[2].eps1eps2
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let svg = args
        .iter()
        .position(|a| a == "--svg")
        .map(|i| PathBuf::from(&args[i + 1]))
        .unwrap_or_else(|| PathBuf::from("dualsim-out/soft_damping_hessian.svg"));
    let p = Params::default();
    let (m, g) = (1.0, 9.81);
    let z0 = -p.softness * ((m * g / (p.stiffness * p.softness)).exp() - 1.0).ln();
    let vs: Vec<f64> = (0..=400).map(|i| -0.1 + 0.25 * i as f64 / 400.0).collect();
    let mut curves = Vec::new();
    for profile in [DampingProfile::Published, DampingProfile::Smoothed] {
        let w = world(profile).cast::<HyperDual64>();
        let c: Vec<(f64, f64)> = vs.iter().map(|&v| (v, curvature(&w, z0, v))).collect();
        let left = curvature(&w, z0, -1e-9);
        let right = curvature(&w, z0, 1e-9);
        println!(
            "{profile:?}: d2z/dv0^2 at v0 = -1e-9: {left:.6e}, at +1e-9: {right:.6e}, jump {:.3e}",
            right - left
        );
        curves.push((format!("{profile:?}").to_lowercase(), c));
    }
    println!("{:>8} {:>14} {:>14}", "v0", "published", "smoothed");
    for i in (0..vs.len()).step_by(25) {
        println!(
            "{:>8.4} {:>14.6e} {:>14.6e}",
            vs[i], curves[0].1[i].1, curves[1].1[i].1
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
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
                (a.min(y), b.max(y))
            });
        let pad = 0.05 * (hi - lo).max(1e-12);
        let root = SVGBackend::new(&tmp, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "soft: d2 z(5 steps) / d v0^2 of a resting point mass",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.1..0.15, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .x_desc("initial normal velocity v0 (m/s); v_d = 0.05")
            .y_desc("d2z/dv0^2 (s^2/m)")
            .draw()?;
        for ((name, c), color) in curves.iter().zip([RED, BLUE]) {
            chart
                .draw_series(LineSeries::new(c.iter().copied(), color.stroke_width(2)))?
                .label(format!("{name} profile"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
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
