//! Property test on stable Rust: mutated example scenes never panic,
//! never hang and never give a NaN in a successful output.
//!
//! Every scene of `examples/scenes/` is mutated with a seeded generator
//! (numbers replaced by extremes, NaN and infinities; lines dropped,
//! duplicated or swapped; bytes flipped; string values and keys swapped
//! for other valid ones; options inserted; truncation), one to three
//! mutations per case. Each case is parsed; a scene that loads is
//! simulated for at most [`STEPS`] steps (`run`), and one in
//! [`CHECK_EVERY`] small ones goes through `diff::check` on one step
//! (`check`). Asserted:
//!
//! * no panic anywhere (the parser, the validation, the step, the
//!   derivative check), caught with `catch_unwind` and reported with the
//!   reproducing scene, written under the system temp directory;
//! * no hang: each case runs on a worker thread with a deadline
//!   ([`DEADLINE`]);
//! * no NaN: a successful rollout has finite states and a finite report;
//!   a passed check has finite differences.
//!
//! `DUALSIM_FUZZ_CASES` (default 10 000) and `DUALSIM_FUZZ_SEED` override
//! the count and the seed; `DUALSIM_FUZZ_DUMP=DIR` also writes every
//! mutated scene to `DIR/case-N.toml` (next to the originals' URDF files
//! is not needed: robot scenes are written with absolute URDF paths), to
//! replay them through the command line.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dualsim::diff::CheckOptions;
use dualsim::scene;
use dualsim::sim::rollout;

/// Steps simulated per loaded scene (one for scenes of more than
/// [`MANY_BODIES`] bodies).
const STEPS: usize = 3;
/// See [`STEPS`].
const MANY_BODIES: usize = 20;
/// One in this many cases, if its scene loads and has at most
/// [`CHECK_BODIES`] bodies, is also checked (a check costs ~0.5 s).
const CHECK_EVERY: usize = 40;
/// Largest number of model bodies of a scene that goes through `check`.
const CHECK_BODIES: usize = 3;
/// A case that takes longer is a hang.
const DEADLINE: Duration = Duration::from_secs(60);

/// Panics in code this test cannot fix (another module's rewrite is in
/// progress there): `(file, message substring, TODO)`. A panic matching
/// one is reported, not failed. Empty: none found.
const KNOWN_PANICS: &[(&str, &str, &str)] = &[];

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const EXTREMES: &[&str] = &[
    "0",
    "-0.0",
    "1e300",
    "-1e300",
    "1e-300",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e10",
    "-1e10",
    "-1",
    "2",
    "0.5",
    "1e-12",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e6",
    "3.0e-7",
    "0x7f",
    "1_000",
    "1.0e308",
    "4.9e-324",
    "[]",
    "\"x\"",
    "true",
];

const STRINGS: &[&str] = &[
    "ipm",
    "single_level",
    "bilevel",
    "lcp",
    "soft",
    "exact",
    "pyramid",
    "average",
    "min",
    "max",
    "multiply",
    "sphere",
    "box",
    "capsule",
    "cylinder",
    "cone",
    "ellipsoid",
    "polytope",
    "padded_polygon",
    "plane",
    "bundle",
    "points",
    "union",
    "minkowski",
    "fixed",
    "floating",
    "ball",
    "box",
    "ground",
    "",
    "quadruped.urdf",
    "arm7.urdf",
    "double_pendulum.urdf",
    "missing.urdf",
];

const LINES: &[&str] = &[
    "ccd = true",
    "ccd = false",
    "restitution = 0.5",
    "allow_initial_penetration = true",
    "ignore_joint_limits = false",
    "max_iterations = 1",
    "steps = 0",
    "dt = 1e-300",
    "[sim]",
    "[solver_params]",
    "[[body]]",
    "[[static]]",
    "[[robot]]",
    "[[control]]",
    "name = \"ball\"",
    "velocity = [1e3, 0.0, 0.0]",
    "angular_velocity = [0.0, 0.0, 1e3]",
    "shape = { type = \"plane\", normal = [0.0, -1e300, 1.0], offset = 0.0 }",
    "shape = { type = \"sphere\", radius = 1e-300 }",
    "inertia = [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]",
    "values = [1e300, 0.0, 0.0, 0.0, 0.0, 0.0]",
    "target = \"ground\"",
    "q = []",
    "orientation = [0.0, 0.0, 0.0, 0.0]",
];

/// Byte ranges of number tokens (not inside strings or comments).
fn number_tokens(s: &str) -> Vec<(usize, usize)> {
    number_tokens_in(s, true)
}

/// Byte ranges of number tokens; `toml`: skip strings and comments (in
/// XML every number is inside a quoted attribute).
fn number_tokens_in(s: &str, toml: bool) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut in_str, mut in_comment) = (0, false, false);
    while i < b.len() {
        let c = b[i];
        if in_comment {
            in_comment = c != b'\n';
        } else if in_str {
            in_str = c != b'"';
        } else if toml && c == b'#' {
            in_comment = true;
        } else if toml && c == b'"' {
            in_str = true;
        } else if (c.is_ascii_digit()
            || ((c == b'-' || c == b'+') && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"._+-".contains(&b[i])) {
                i += 1;
            }
            out.push((start, i));
            continue;
        }
        i += 1;
    }
    out
}

/// Byte ranges of the insides of string values.
fn string_tokens(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut in_comment = false;
    for (i, c) in s.bytes().enumerate() {
        match (c, start) {
            (b'\n', _) => in_comment = false,
            (b'#', None) => in_comment = true,
            (b'"', None) if !in_comment => start = Some(i + 1),
            (b'"', Some(s0)) => {
                out.push((s0, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut s = src.to_string();
    for _ in 0..1 + rng.below(3) {
        let lines: Vec<&str> = s.lines().collect();
        s = match rng.below(12) {
            0..=2 => {
                let t = number_tokens(&s);
                if t.is_empty() {
                    continue;
                }
                let (a, b) = *rng.pick(&t);
                format!("{}{}{}", &s[..a], rng.pick(EXTREMES), &s[b..])
            }
            10 | 11 => {
                // a moderate value (the scene often still loads and simulates)
                let t = number_tokens(&s);
                if t.is_empty() {
                    continue;
                }
                let (a, b) = *rng.pick(&t);
                let x =
                    (rng.below(2001) as f64 / 1000.0 - 1.0) * 10f64.powi(rng.below(6) as i32 - 3);
                format!("{}{x:?}{}", &s[..a], &s[b..])
            }
            3 => {
                let t = string_tokens(&s);
                if t.is_empty() {
                    continue;
                }
                let (a, b) = *rng.pick(&t);
                format!("{}{}{}", &s[..a], rng.pick(STRINGS), &s[b..])
            }
            4 if !lines.is_empty() => {
                let k = rng.below(lines.len());
                lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != k)
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            5 if !lines.is_empty() => {
                let k = rng.below(lines.len());
                let mut v = lines.clone();
                v.insert(k, lines[k]);
                v.join("\n")
            }
            6 if lines.len() > 1 => {
                let mut v = lines.clone();
                let (i, j) = (rng.below(v.len()), rng.below(v.len()));
                v.swap(i, j);
                v.join("\n")
            }
            7 => {
                let mut v = lines.clone();
                let line = *rng.pick(LINES);
                v.insert(rng.below(v.len() + 1), line);
                v.join("\n")
            }
            8 if !s.is_empty() => {
                let mut bytes = s.as_bytes().to_vec();
                let k = rng.below(bytes.len());
                bytes[k] ^= 1 << rng.below(8);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            _ => {
                let mut k = rng.below(s.len() + 1);
                while !s.is_char_boundary(k) {
                    k -= 1;
                }
                s[..k].to_string()
            }
        };
    }
    s
}

/// What a case did.
#[derive(Debug, Default)]
struct Outcome {
    loaded: bool,
    simulated: bool,
    checked: bool,
    /// A NaN in a successful output (description).
    nan: Option<String>,
    /// Seconds spent parsing, simulating, checking.
    times: [f64; 3],
}

fn run_case(src: &str, file: &str, check_it: bool) -> Outcome {
    let mut out = Outcome::default();
    let t = Instant::now();
    let parsed = scene::parse(src, file);
    out.times[0] = t.elapsed().as_secs_f64();
    let Ok(mut s) = parsed else { return out };
    out.loaded = true;
    names(&s.world, src.len() as u64);
    let t = Instant::now();
    s.steps = s.steps.min(if s.world.model.bodies.len() > MANY_BODIES {
        1
    } else {
        STEPS
    });
    let result = rollout(&s.world, &s.initial, &s.controls, s.steps);
    let report = dualsim::viz::run_report(&s, &result, 0.0);
    out.simulated = result.is_ok();
    if let Ok(traj) = &result {
        if !traj.states.iter().all(|x| x.is_finite()) {
            out.nan = Some("a non-finite state in a successful rollout".into());
        }
    }
    let r = &report.stats;
    if !(r.max_penetration.is_finite() && r.mean_iterations.is_finite()) {
        out.nan = Some(format!("non-finite run report stats {r:?}"));
    }
    if report
        .r#final
        .bodies
        .iter()
        .any(|b| b.position.iter().chain(&b.velocity).any(|x| !x.is_finite()))
    {
        out.nan = Some("non-finite final state in the run report".into());
    }
    out.times[1] = t.elapsed().as_secs_f64();
    let t = Instant::now();
    if check_it && s.world.model.bodies.len() <= CHECK_BODIES {
        let opts = CheckOptions {
            samples: 1,
            max_bodies: 1,
            ..Default::default()
        };
        if let Ok(rep) =
            dualsim::diff::check(&s.world, &s.initial, &s.controls, s.steps.min(1), &opts)
        {
            out.checked = true;
            let finite = rep
                .blocks
                .iter()
                .all(|b| b.norm.is_finite() && b.max_abs_diff.values().all(|x| x.is_finite()));
            if rep.passed && !finite {
                out.nan = Some("a passed check with non-finite differences".into());
            }
        }
    }
    out.times[2] = t.elapsed().as_secs_f64();
    out
}

/// `grad`'s name parsing on every name of the world with every field,
/// misspelled, empty and doubled: errors are fine, panics are not.
fn names(world: &dualsim::sim::World<f64>, seed: u64) {
    use dualsim::diff::names::{parse_inputs, parse_outputs};
    let mut rng = Rng(seed);
    let mut all: Vec<String> = world.model.bodies.iter().map(|b| b.name.clone()).collect();
    all.extend(world.robots.iter().map(|r| r.name.clone()));
    all.extend(world.statics.iter().map(|s| s.name.clone()));
    all.extend([
        "sim".to_string(),
        String::new(),
        "x".to_string(),
        ".".to_string(),
    ]);
    let fields = [
        "position",
        "orientation",
        "velocity",
        "angular_velocity",
        "mass",
        "friction",
        "restitution",
        "inertia",
        "control",
        "shape.radius",
        "shape.half_extents",
        "shape.",
        "q",
        "v",
        "gravity",
        "dt",
        "",
        "posit",
        "é",
    ];
    for _ in 0..8 {
        let mut item = format!("{}.{}", rng.pick(&all), rng.pick(&fields));
        if rng.below(3) == 0 && !item.is_empty() {
            let mut k = rng.below(item.len());
            while !item.is_char_boundary(k) {
                k -= 1;
            }
            item.remove(k);
        }
        let list = if rng.below(2) == 0 {
            item.clone()
        } else {
            format!("{item}, ,{item},")
        };
        let _ = parse_outputs(world, &list);
        let _ = parse_inputs(world, &list, rng.below(4));
    }
}

thread_local! {
    /// Where the last panic of this thread happened and its message (set by the hook).
    static LAST_PANIC: std::cell::RefCell<Option<(String, String)>> = const { std::cell::RefCell::new(None) };
}

thread_local! {
    /// Whether this thread runs a fuzz case under [`guarded`]: its panics
    /// are recorded, not printed.
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that, on a thread inside [`guarded`],
/// records the location and message in [`LAST_PANIC`] instead of printing
/// them, and hands every other panic (the other tests of this binary) to
/// the hook it replaced.
fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(|g| g.get()) {
                return previous(info);
            }
            let loc = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some((loc, msg)));
        }));
    });
}

/// Runs `f`, catching a panic as `Err((location, message))`.
fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, (String, String)> {
    install_hook();
    let was = GUARDED.with(|g| g.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    r.map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default()
    })
}

fn save_reproducer(name: &str, src: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("dualsim-fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(name);
    let _ = std::fs::write(&p, src);
    p
}

#[test]
fn mutated_example_scenes_never_panic_hang_or_give_nan() {
    let cases: usize = std::env::var("DUALSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let seed: u64 = std::env::var("DUALSIM_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let mut scenes: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    scenes.sort();
    assert!(scenes.len() >= 10, "the example scenes");

    let dump = std::env::var("DUALSIM_FUZZ_DUMP").ok().map(PathBuf::from);
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let (mut loaded, mut simulated, mut checked, mut known) = (0, 0, 0, 0);
    let mut times = [0.0; 3];
    let mut failures: Vec<String> = Vec::new();
    for case in 0..cases {
        let (file, base) = &scenes[rng.below(scenes.len())];
        let src = mutate(base, &mut rng);
        if let Some(d) = &dump {
            let abs = src.replace("urdf = \"", &format!("urdf = \"{}/", dir.display()));
            let _ = std::fs::write(d.join(format!("case-{case}.toml")), abs);
        }
        let check_it = case % CHECK_EVERY == 0;
        let (tx, rx) = mpsc::channel();
        let (src2, file2) = (src.clone(), file.clone());
        let started = Instant::now();
        std::thread::spawn(move || {
            let r = guarded(|| run_case(&src2, &file2, check_it));
            let _ = tx.send(r);
        });
        let result = match rx.recv_timeout(DEADLINE) {
            Ok(r) => r,
            Err(_) => {
                let p = save_reproducer(&format!("hang-{case}.toml"), &src);
                panic!(
                    "case {case} (from {file}) did not finish in {DEADLINE:?}: reproducer {}",
                    p.display()
                );
            }
        };
        let elapsed = started.elapsed();
        match result {
            Ok(o) => {
                loaded += o.loaded as usize;
                (0..3).for_each(|k| times[k] += o.times[k]);
                simulated += o.simulated as usize;
                checked += o.checked as usize;
                if let Some(nan) = o.nan {
                    let p = save_reproducer(&format!("nan-{case}.toml"), &src);
                    failures.push(format!(
                        "case {case} (from {file}): {nan}; reproducer {}",
                        p.display()
                    ));
                }
            }
            Err((loc, msg)) => {
                if let Some((_, _, todo)) = KNOWN_PANICS
                    .iter()
                    .find(|(f, m, _)| loc.contains(f) && msg.contains(m))
                {
                    known += 1;
                    eprintln!("case {case}: known panic at {loc} ({msg}): {todo}");
                } else {
                    let p = save_reproducer(&format!("panic-{case}.toml"), &src);
                    failures.push(format!(
                        "case {case} (from {file}): panic at {loc}: {msg}; reproducer {}",
                        p.display()
                    ));
                }
            }
        }
        if elapsed > Duration::from_secs(5) {
            eprintln!("case {case} (from {file}) took {elapsed:?}");
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "{cases} mutated scenes in {secs:.1} s ({:.0}/s): {loaded} loaded, {simulated} simulated without error, \
         {checked} checked ({:.1} s parsing, {:.1} s simulating, {:.1} s checking); {} failures, {known} known panics",
        cases as f64 / secs,
        times[0],
        times[1],
        times[2],
        failures.len()
    );
    assert!(
        loaded > cases / 20,
        "the mutations leave too few loadable scenes ({loaded})"
    );
    // (printed as well: the panic hook that silences the cases' expected
    // panics also silences this assertion's message)
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Mutations of a URDF file: numbers (inside attributes) replaced by
/// extremes or moderate values, lines dropped, duplicated or swapped,
/// bytes flipped, truncation.
fn mutate_urdf(src: &str, rng: &mut Rng) -> String {
    const XML_EXTREMES: &[&str] = &[
        "0", "-0", "1e300", "-1e300", "1e-300", "nan", "inf", "-inf", "-1", "", "1 2", "0 0 0", "x",
    ];
    let mut s = src.to_string();
    for _ in 0..1 + rng.below(3) {
        let lines: Vec<&str> = s.lines().collect();
        s = match rng.below(8) {
            0..=3 => {
                let t = number_tokens_in(&s, false);
                if t.is_empty() {
                    continue;
                }
                let (a, b) = *rng.pick(&t);
                let moderate = format!(
                    "{:?}",
                    (rng.below(2001) as f64 / 1000.0 - 1.0) * 10f64.powi(rng.below(5) as i32 - 2)
                );
                let v = if rng.below(2) == 0 {
                    moderate.as_str()
                } else {
                    *rng.pick(XML_EXTREMES)
                };
                format!("{}{v}{}", &s[..a], &s[b..])
            }
            4 if !lines.is_empty() => {
                let k = rng.below(lines.len());
                lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != k)
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            5 if !lines.is_empty() => {
                let k = rng.below(lines.len());
                let mut v = lines.clone();
                v.insert(k, lines[k]);
                v.join("\n")
            }
            6 if lines.len() > 1 => {
                let mut v = lines.clone();
                let (i, j) = (rng.below(v.len()), rng.below(v.len()));
                v.swap(i, j);
                v.join("\n")
            }
            _ if !s.is_empty() => {
                let mut bytes = s.as_bytes().to_vec();
                let k = rng.below(bytes.len());
                bytes[k] ^= 1 << rng.below(8);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            _ => continue,
        };
    }
    s
}

/// The URDF import on mutated example robots: a robot that imports is
/// added to a world, validated (joint limits ignored) and stepped. No
/// panic, no hang, no NaN in a successful step.
#[test]
fn mutated_urdf_files_never_panic() {
    use dualsim::dynamics::urdf::{BaseJoint, from_str};
    use dualsim::math::{DVec, Pose};
    use dualsim::sim::{State, World, step};
    let cases: usize = std::env::var("DUALSIM_FUZZ_URDF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes");
    let robots: Vec<String> = ["arm7.urdf", "double_pendulum.urdf", "quadruped.urdf"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    let mut rng = Rng(2020);
    let (mut imported, mut stepped) = (0, 0);
    let mut failures = Vec::new();
    let t0 = Instant::now();
    for case in 0..cases {
        let k = rng.below(robots.len());
        let src = mutate_urdf(&robots[k], &mut rng);
        let base = if rng.below(2) == 0 {
            BaseJoint::Fixed
        } else {
            BaseJoint::Floating
        };
        let r = guarded(|| {
            let Ok(robot) = from_str(&src, base) else {
                return (false, false, None);
            };
            let mut w = World::<f64>::new(0.005);
            let Ok(ri) = w.add_robot_with_collisions("r", &robot, &Pose::identity()) else {
                return (true, false, None);
            };
            w.robots[ri].ignore_joint_limits = true;
            let x = State {
                q: w.model.neutral(),
                v: DVec::zeros(w.model.nv),
            };
            if w.validate(&x).is_err() {
                return (true, false, None);
            }
            match step(&w, &x, &w.zero_control()) {
                Ok(o) if !o.state.is_finite() => {
                    (true, true, Some("non-finite state from a successful step"))
                }
                Ok(_) => (true, true, None),
                Err(_) => (true, false, None),
            }
        });
        match r {
            Ok((i, s, nan)) => {
                imported += i as usize;
                stepped += s as usize;
                if let Some(n) = nan {
                    let p = save_reproducer(&format!("urdf-nan-{case}.urdf"), &src);
                    failures.push(format!("case {case}: {n}; reproducer {}", p.display()));
                }
            }
            Err((loc, msg)) => {
                let p = save_reproducer(&format!("urdf-panic-{case}.urdf"), &src);
                failures.push(format!(
                    "case {case}: panic at {loc}: {msg}; reproducer {}",
                    p.display()
                ));
            }
        }
    }
    eprintln!(
        "{cases} mutated URDF files in {:.1} s: {imported} imported, {stepped} stepped; {} failures",
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(imported > cases / 10, "too few imports ({imported})");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
