//! Running several methods on one objective and plotting their
//! convergence (the examples `opt_box_push`, `opt_arm7` and `opt_sysid` and their
//! reduced-size tests use this).

use super::{Objective, OptError, OptMethod, OptimizeOptions, OptimizeReport, optimize};

/// Runs each of `methods` on `obj` with `base`'s options. `cem` gets the
/// wall time `newton` took to reach the target cost (else that of the
/// slowest other method that reached it, else `base.max_seconds`) as its
/// time budget, and no iteration limit within it, so that it is compared
/// at equal wall time.
pub fn compare(
    obj: &Objective,
    methods: &[OptMethod],
    base: &OptimizeOptions,
) -> Result<Vec<OptimizeReport>, OptError> {
    let mut out: Vec<OptimizeReport> = Vec::new();
    for m in methods.iter().filter(|m| **m != OptMethod::Cem) {
        out.push(optimize(
            obj,
            &OptimizeOptions {
                method: *m,
                ..base.clone()
            },
        )?);
    }
    if methods.contains(&OptMethod::Cem) {
        let newton = out
            .iter()
            .find(|r| r.method == "newton" && r.converged)
            .map(|r| r.wall_seconds);
        let slowest = out
            .iter()
            .filter(|r| r.converged)
            .map(|r| r.wall_seconds)
            .fold(f64::NAN, f64::max);
        let budget = newton
            .or((!slowest.is_nan()).then_some(slowest))
            .or(base.max_seconds);
        let opts = OptimizeOptions {
            method: OptMethod::Cem,
            max_iterations: u64::MAX,
            max_seconds: budget,
            ..base.clone()
        };
        let opts = if budget.is_none() {
            OptimizeOptions {
                max_iterations: base.max_iterations,
                ..opts
            }
        } else {
            opts
        };
        out.push(optimize(obj, &opts)?);
    }
    Ok(out)
}

/// Writes `convergence.svg`, `results.md` (`markdown`) and
/// `results.json` (the reports) into `dir`, each atomically; creates `dir`.
pub fn write_results(
    dir: &std::path::Path,
    reports: &[OptimizeReport],
    title: &str,
    markdown: &str,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    crate::viz::atomic_write(
        &dir.join("convergence.svg"),
        convergence_svg(reports, title).as_bytes(),
    )?;
    crate::viz::atomic_write(&dir.join("results.md"), markdown.as_bytes())?;
    let json = serde_json::to_string_pretty(reports).map_err(std::io::Error::other)?;
    crate::viz::atomic_write(&dir.join("results.json"), json.as_bytes())
}

/// The first wall time at which a report's cost is at or below `level`.
pub fn time_to(r: &OptimizeReport, level: f64) -> Option<f64> {
    r.cost
        .iter()
        .zip(&r.times)
        .find(|(c, _)| **c <= level)
        .map(|(_, t)| *t)
}

/// The first iteration at which a report's cost is at or below `level`.
pub fn iterations_to(r: &OptimizeReport, level: f64) -> Option<usize> {
    r.cost.iter().position(|c| *c <= level)
}

/// A markdown table of the reports: iterations, final cost, wall time,
/// and when each reached `level`.
pub fn table(reports: &[OptimizeReport], level: f64) -> String {
    let mut s = format!(
        "| method | iterations | final cost | wall time (s) | iterations to {level:.0e} | time to {level:.0e} (s) |\n|---|---|---|---|---|---|\n"
    );
    for r in reports {
        let it = iterations_to(r, level)
            .map(|i| i.to_string())
            .unwrap_or_else(|| "not reached".into());
        let t = time_to(r, level)
            .map(|t| format!("{t:.3}"))
            .unwrap_or_else(|| "not reached".into());
        s += &format!(
            "| {} | {} | {:.3e} | {:.3} | {} | {} |\n",
            r.method,
            r.iterations,
            r.cost.last().copied().unwrap_or(f64::NAN),
            r.wall_seconds,
            it,
            t
        );
    }
    s
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// A self-contained SVG with two panels: cost (log scale) against
/// iteration and against wall time, one curve per report.
pub fn convergence_svg(reports: &[OptimizeReport], title: &str) -> String {
    let (w, h, pad) = (440.0, 320.0, 60.0);
    let floor = 1e-16_f64;
    let logc = |c: f64| c.max(floor).log10();
    let all: Vec<f64> = reports
        .iter()
        .flat_map(|r| r.cost.iter().copied())
        .filter(|c| c.is_finite())
        .collect();
    let ymax = all
        .iter()
        .copied()
        .map(logc)
        .fold(f64::NEG_INFINITY, f64::max)
        .ceil()
        .max(-15.0);
    let ymin = all
        .iter()
        .copied()
        .map(logc)
        .fold(f64::INFINITY, f64::min)
        .floor()
        .min(ymax - 1.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        2.0 * w,
        h + 60.0,
        w,
        escape(title)
    );
    for (panel, xlabel) in [(0, "iteration"), (1, "wall time (s)")] {
        let x0 = panel as f64 * w;
        let xs = |r: &OptimizeReport| -> Vec<f64> {
            if panel == 0 {
                (0..r.cost.len()).map(|i| i as f64).collect()
            } else {
                r.times.clone()
            }
        };
        let xmax = reports
            .iter()
            .flat_map(&xs)
            .fold(0.0_f64, f64::max)
            .max(1e-9);
        let px = |x: f64| x0 + pad + (w - 1.5 * pad) * x / xmax;
        let py = |y: f64| 40.0 + (h - pad) * (ymax - y) / (ymax - ymin);
        // axes and ticks
        svg += &format!(
            "<line x1=\"{a}\" y1=\"{t}\" x2=\"{a}\" y2=\"{b}\" stroke=\"black\"/><line x1=\"{a}\" y1=\"{b}\" x2=\"{c}\" y2=\"{b}\" stroke=\"black\"/>\n",
            a = px(0.0),
            t = py(ymax),
            b = py(ymin),
            c = px(xmax)
        );
        let step = ((ymax - ymin) / 8.0).ceil().max(1.0);
        let mut y = ymin;
        while y <= ymax + 1e-9 {
            svg += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{}</text><line x1=\"{}\" y1=\"{yy}\" x2=\"{}\" y2=\"{yy}\" stroke=\"#ddd\"/>\n",
                px(0.0) - 4.0,
                py(y) + 4.0,
                y as i64,
                px(0.0),
                px(xmax),
                yy = py(y)
            );
            y += step;
        }
        for k in 0..=4 {
            let x = xmax * k as f64 / 4.0;
            svg += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                px(x),
                py(ymin) + 16.0,
                fmt_tick(x)
            );
        }
        svg += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{xlabel}</text>\n",
            px(xmax / 2.0),
            py(ymin) + 34.0
        );
        svg += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 {} {})\">cost</text>\n",
            x0 + 14.0,
            py((ymax + ymin) / 2.0),
            x0 + 14.0,
            py((ymax + ymin) / 2.0)
        );
        for (i, r) in reports.iter().enumerate() {
            let pts: Vec<String> = xs(r)
                .iter()
                .zip(&r.cost)
                .filter(|(_, c)| c.is_finite())
                .map(|(x, c)| format!("{:.1},{:.1}", px(*x), py(logc(*c))))
                .collect();
            let color = COLORS[i % COLORS.len()];
            svg += &format!(
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
                pts.join(" ")
            );
            if panel == 1 {
                svg += &format!(
                    "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{}</text>\n",
                    x0 + w - 1.5 * pad + 40.0 - 70.0,
                    50.0 + 16.0 * i as f64,
                    escape(&r.method)
                );
            }
        }
    }
    svg += "</svg>\n";
    svg
}

fn fmt_tick(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x >= 10.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
