//! Cost per contact of an f64 `ipm` step from ~10 to ~1000 contacts, in two
//! families of scenes (spheres of radius 0.1 m and 1 kg on a plane, μ = 0.5,
//! h = 0.01, exact cone, ρ = 1e-6):
//!
//! * `apart`: `n` spheres resting apart on the plane (grid spacing 0.25 m):
//!   `n` contacts in `n` one-contact islands;
//! * `layer`: a `k × k` square layer of spheres resting on the plane, each
//!   touching its four neighbours (spacing 2r): one island of `k²` bodies
//!   and `k² + 2k(k − 1)` contacts (ground and neighbour pairs);
//! * `pyramid`: a square pyramid of spheres on a `k × k` base (base
//!   spheres 0.2 mm apart, every upper sphere in the pocket of four): one
//!   island of `Σ m²` bodies whose contacts all carry load.
//!
//! Each scene is settled for `--settle` steps, then `--steps` further steps
//! are timed one by one (chained as a rollout by `sim::step_into`, the
//! allocation-free rollout step, with the default contact warm start, or
//! with every contact started cold under `--cold`); the figure is the median step time
//! divided by the number of contact candidates. Step time is the CPU time
//! of the stepping thread (`CLOCK_THREAD_CPUTIME_ID`, Linux; wall clock
//! elsewhere): on a shared machine it leaves out the time spent waiting
//! for a core, which made wall-clock medians jump 20× between runs.
//! Failed steps (solver errors), steps stopped at the iteration cap and the
//! largest penetration reported by the solver are printed with each row.
//!
//! ```text
//! cargo run --release --features examples --example scaling -- [--min-contacts 0] [--max-contacts 1100]
//!     [--settle 30] [--steps 10]
//!     [--only apart|layer|pyramid] [--cold] [--trace] [--warm-attempt N]
//!     [--mu 0.5] [--rho 1e-6] [--max-iterations 50] [--ipm 'KEY = VALUE, ...']
//!     [--svg docs/images/scaling.svg]
//! ```
//!
//! `--trace` prints every step (iterations, contacts, CPU time) to stderr.
//! `--ipm` sets keys of `ipm`'s `[solver_params]` (TOML, as in a scene
//! file, separated by commas), the others at their defaults.
//!
//! Prints a Markdown table and the ratio of the largest to the smallest
//! cost per contact, and writes the plot (SVG, by `plotters`; default
//! `dualsim-out/scaling.svg`, written atomically).

use std::path::PathBuf;
use std::time::Instant;

use dualsim::math::{Pose, Vec3};
use dualsim::prelude::*;
use plotters::prelude::*;

const RADIUS: f64 = 0.1;

/// `--mu` (default 0.5) and `--rho` (default 1e-6), set once in `main`.
static FRICTION: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
static RHO: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
/// `--max-iterations`: the step's iteration cap (`[sim] max_iterations`; default 50).
static MAX_ITERATIONS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
static IPM: std::sync::OnceLock<dualsim::contact::mehrotra::Params> = std::sync::OnceLock::new();

/// CPU time of the calling thread, in seconds (Linux), or wall-clock
/// seconds since the first call elsewhere.
fn thread_time() -> f64 {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        unsafe extern "C" {
            fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec (64-bit Linux layout).
        if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.sec as f64 + ts.nsec as f64 * 1e-9;
        }
    }
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_secs_f64()
}

fn world_with(positions: &[[f64; 3]]) -> (World<f64>, State<f64>) {
    let mut w = World::<f64>::new(0.01);
    w.params.rho = *RHO.get().unwrap_or(&1e-6);
    if let Some(&m) = MAX_ITERATIONS.get() {
        w.params.max_iterations = m;
    }
    let material = Material {
        friction: *FRICTION.get().unwrap_or(&0.5),
        restitution: 0.0,
    };
    for i in 0..positions.len() {
        w.add_body(
            &format!("s{i}"),
            1.0,
            Mat3::identity() * (0.4 * RADIUS * RADIUS),
            Some(Shape::Sphere { radius: RADIUS }),
            material,
        )
        .expect("sphere");
    }
    w.statics.push(StaticGeometry {
        name: "ground".into(),
        shape: Shape::Plane {
            normal: Vec3::z(),
            offset: 0.0,
        },
        pose: Pose::identity(),
        material,
    });
    let x0 = State::at_rest(&w.model, positions);
    (w, x0)
}

/// `n` spheres apart on a grid of spacing 0.25 m.
fn apart(n: usize) -> Vec<[f64; 3]> {
    let side = (n as f64).sqrt().ceil() as usize;
    (0..n)
        .map(|i| [(i % side) as f64 * 0.25, (i / side) as f64 * 0.25, RADIUS])
        .collect()
}

/// A `k × k` layer of touching spheres.
fn layer(k: usize) -> Vec<[f64; 3]> {
    let d = 2.0 * RADIUS;
    (0..k * k)
        .map(|i| [(i % k) as f64 * d, (i / k) as f64 * d, RADIUS])
        .collect()
}

/// A square pyramid of spheres (a cannonball stack) on a `k × k` base of
/// spacing 2r(1 + 10⁻³) (base spheres 0.2 mm apart, held by friction),
/// each upper sphere resting in the pocket of four below it: one island
/// whose contacts all carry load.
fn pyramid(k: usize) -> Vec<[f64; 3]> {
    let d = 2.0 * RADIUS * (1.0 + 1e-3);
    let h = (4.0 * RADIUS * RADIUS - 0.5 * d * d).sqrt();
    let mut out = Vec::new();
    for level in 0..k {
        let m = k - level;
        let shift = 0.5 * d * level as f64;
        for i in 0..m * m {
            out.push([
                shift + (i % m) as f64 * d,
                shift + (i / m) as f64 * d,
                RADIUS + level as f64 * h,
            ]);
        }
    }
    out
}

struct Row {
    scene: &'static str,
    bodies: usize,
    contacts: usize,
    step_s: f64,
    iterations: usize,
    failed: usize,
    capped: usize,
    max_penetration: f64,
}

impl Row {
    fn per_contact_us(&self) -> f64 {
        self.step_s / self.contacts.max(1) as f64 * 1e6
    }
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

fn measure(
    scene: &'static str,
    pos: &[[f64; 3]],
    settle: usize,
    steps: usize,
    cold: bool,
    trace: bool,
    warm_attempt: Option<usize>,
) -> Row {
    let (mut w, mut x) = world_with(pos);
    if let Some(p) = IPM.get() {
        w.backends.ipm = *p;
    }
    w.backends.ipm.warm_start_contacts = !cold;
    if let Some(n) = warm_attempt {
        w.backends.ipm.warm_attempt_iterations = n;
    }
    let mut out = StepOutput::empty();
    let u = w.zero_control();
    let mut ws = dualsim::contact::Workspace::default();
    let mut row = Row {
        scene,
        bodies: pos.len(),
        contacts: 0,
        step_s: f64::NAN,
        iterations: 0,
        failed: 0,
        capped: 0,
        max_penetration: 0.0,
    };
    let mut times = Vec::with_capacity(steps);
    let mut iters = Vec::with_capacity(steps);
    for k in 0..settle + steps {
        let t0 = thread_time();
        let res = dualsim::sim::step_into(&w, &x, &u, &mut ws, &mut out);
        let dt = thread_time() - t0;
        match res {
            Ok(()) => {
                if trace {
                    eprintln!(
                        "  {scene} {} step {k}: {} iterations, {} contacts, {:.3} ms",
                        pos.len(),
                        out.stats.iterations,
                        out.stats.contacts,
                        dt * 1e3
                    );
                }
                row.capped += out.stats.capped as usize;
                row.max_penetration = row.max_penetration.max(out.stats.max_penetration);
                if k >= settle {
                    times.push(dt);
                    iters.push(out.stats.iterations as f64);
                    row.contacts = row.contacts.max(out.stats.contacts);
                }
                std::mem::swap(&mut x, &mut out.state);
            }
            Err(e) => {
                eprintln!("scaling: {scene} with {} bodies, step {k}: {e}", pos.len());
                row.failed += 1;
                break;
            }
        }
    }
    if !times.is_empty() {
        row.step_s = median(&mut times);
        row.iterations = median(&mut iters) as usize;
    }
    row
}

fn plot(rows: &[Row], path: &PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let ok: Vec<&Row> = rows.iter().filter(|r| r.step_s.is_finite()).collect();
    let xmax = ok.iter().map(|r| r.contacts).max().unwrap_or(10) as f64 * 1.3;
    let ymax = ok.iter().map(|r| r.per_contact_us()).fold(1.0, f64::max) * 3.0;
    let ymin = ok.iter().map(|r| r.per_contact_us()).fold(ymax, f64::min) / 3.0;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("svg.tmp");
    {
        let root = SVGBackend::new(&tmp, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "ipm step (f64): time per contact vs contacts",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((5.0..xmax).log_scale(), (ymin..ymax).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("contact candidates")
            .y_desc("median step CPU time / contacts (µs)")
            .draw()?;
        for (scene, label, color) in [
            ("apart", "spheres apart (one island per contact)", BLUE),
            (
                "layer",
                "square layer of touching spheres (one island)",
                RED,
            ),
            ("pyramid", "square pyramid of spheres (one island)", GREEN),
        ] {
            let pts: Vec<(f64, f64)> = ok
                .iter()
                .filter(|r| r.scene == scene)
                .map(|r| (r.contacts as f64, r.per_contact_us()))
                .collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let num = |name: &str, default: usize| -> usize {
        opt(name).map_or(default, |s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{name}: expected a count, got `{s}`"))
        })
    };
    let max_contacts = num("--max-contacts", 1100);
    let min_contacts = num("--min-contacts", 0);
    let settle = num("--settle", 30);
    let steps = num("--steps", 10);
    let only = opt("--only");
    let svg = PathBuf::from(opt("--svg").unwrap_or_else(|| "dualsim-out/scaling.svg".into()));
    let want = |s: &str| only.as_deref().is_none_or(|o| o == s);
    let cold = args.iter().any(|a| a == "--cold");
    let trace = args.iter().any(|a| a == "--trace");
    let real = |name: &str, default: f64| -> f64 {
        opt(name).map_or(default, |s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{name}: expected a number, got `{s}`"))
        })
    };
    FRICTION.set(real("--mu", 0.5)).expect("set once");
    RHO.set(real("--rho", 1e-6)).expect("set once");
    if let Some(m) = opt("--max-iterations") {
        let m = m
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("--max-iterations: expected a count, got `{m}`"));
        MAX_ITERATIONS.set(m).expect("set once");
    }
    if let Some(keys) = opt("--ipm") {
        let toml_text = keys.replace(',', "\n");
        let p = toml::from_str(&toml_text).unwrap_or_else(|e| {
            panic!("--ipm: not `KEY = VALUE, ...` of ipm's solver_params: {e}")
        });
        IPM.set(p).expect("set once");
    }
    let warm_attempt = opt("--warm-attempt").map(|s| {
        s.parse::<usize>()
            .unwrap_or_else(|_| panic!("--warm-attempt: expected a count, got `{s}`"))
    });

    let mut rows = Vec::new();
    if want("apart") {
        for n in [10, 20, 50, 100, 200, 500, 1000, 2000] {
            if n > max_contacts {
                break;
            }
            if n < min_contacts {
                continue;
            }
            let r = measure("apart", &apart(n), settle, steps, cold, trace, warm_attempt);
            eprintln!("apart {n}: {:.1} µs per contact", r.per_contact_us());
            rows.push(r);
        }
    }
    if want("layer") {
        for k in [2, 3, 4, 6, 8, 10, 12, 14, 16, 19, 22] {
            let contacts = k * k + 2 * k * (k - 1);
            if contacts > max_contacts {
                break;
            }
            if contacts < min_contacts {
                continue;
            }
            let r = measure("layer", &layer(k), settle, steps, cold, trace, warm_attempt);
            eprintln!("layer {k}x{k}: {:.1} µs per contact", r.per_contact_us());
            rows.push(r);
        }
    }
    if want("pyramid") {
        for k in [2, 3, 4, 5, 6, 7, 8, 9] {
            // Ground contacts plus four under every upper sphere.
            let contacts: usize = k * k + (1..k).map(|m| 4 * m * m).sum::<usize>();
            if contacts > max_contacts {
                break;
            }
            if contacts < min_contacts {
                continue;
            }
            let r = measure(
                "pyramid",
                &pyramid(k),
                settle,
                steps,
                cold,
                trace,
                warm_attempt,
            );
            eprintln!("pyramid {k}: {:.1} µs per contact", r.per_contact_us());
            rows.push(r);
        }
    }
    println!(
        "| scene | bodies | contacts | step CPU time (ms) | per contact (µs) | iterations | failed steps | capped steps | max penetration (m) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.1} | {} | {} | {} | {:.1e} |",
            r.scene,
            r.bodies,
            r.contacts,
            r.step_s * 1e3,
            r.per_contact_us(),
            r.iterations,
            r.failed,
            r.capped,
            r.max_penetration
        );
    }
    let per: Vec<f64> = rows
        .iter()
        .filter(|r| r.step_s.is_finite())
        .map(Row::per_contact_us)
        .collect();
    if !per.is_empty() {
        let lo = per.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per.iter().copied().fold(0.0, f64::max);
        println!(
            "\ncost per contact: {lo:.1} to {hi:.1} µs, largest / smallest = {:.2}",
            hi / lo
        );
    }
    plot(&rows, &svg)?;
    println!("wrote {}", svg.display());
    Ok(())
}
