//! Relaxation as smoothing (Silico V-D): a block on the ground (h = 0.1,
//! g = 1, μ = 1, m = 1) pushed horizontally by F. The exact derivative
//! ∂x⁺/∂F jumps from 0 (sticking, F < μmg = 1) to h²/m = 0.01 (sliding);
//! differentiating at a larger relaxation ρ gives a smooth monotone curve.
//!
//! `cargo run --release --features examples --example smoothing` writes
//! `dualsim-out/smoothing.svg` and prints the curves.

use std::path::Path;

use plotters::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rhos = [1e-8, 1e-4, 1e-3, 1e-2];
    let forces: Vec<f64> = (0..=160).map(|i| i as f64 * 0.0125).collect();
    let mut curves = Vec::new();
    for &rho in &rhos {
        let c: Vec<(f64, f64)> = forces
            .iter()
            .map(|&f| dualsim::demo::push_gradient(f, rho).map(|g| (f, g)))
            .collect::<Result<_, _>>()?;
        curves.push((rho, c));
    }
    println!(
        "{:>6} {}",
        "F",
        rhos.iter()
            .map(|r| format!("{:>12}", format!("rho={r:.0e}")))
            .collect::<String>()
    );
    for i in (0..forces.len()).step_by(10) {
        print!("{:>6.3}", forces[i]);
        for (_, c) in &curves {
            print!(" {:>12.6}", c[i].1);
        }
        println!();
    }
    let dir = Path::new("dualsim-out");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(".smoothing.svg.tmp");
    {
        let root = SVGBackend::new(&tmp, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "block pushed by F: dx+/dF at relaxation rho",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..2.0, -0.0005..0.0105)?;
        chart.configure_mesh().x_desc("F").y_desc("dx+/dF").draw()?;
        let colors = [RED, BLUE, GREEN, MAGENTA];
        for ((rho, c), color) in curves.iter().zip(colors) {
            chart
                .draw_series(LineSeries::new(c.iter().copied(), color.stroke_width(2)))?
                .label(format!("rho = {rho:.0e}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    std::fs::rename(&tmp, dir.join("smoothing.svg"))?;
    println!("wrote {}", dir.join("smoothing.svg").display());
    Ok(())
}
