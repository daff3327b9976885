//! The 3-D viewer in a real browser. `dualsim view SCENE.toml` writes the
//! page of an example scene (box toss, double pendulum, quadruped);
//! headless Chromium opens it, and
//!
//! * the page must report `ok` in `<div id="status">` (set once the first
//!   frame is drawn; a script error sets `error: …` there instead);
//! * its screenshot must not be blank: the 3-D view must hold the ground
//!   (many pixels away from the clear colour), coloured shapes (saturated
//!   pixels), and, where the scene has contacts at that time, the green
//!   force arrows.
//!
//! Without `/usr/bin/chromium` each test fails (`.ci/run` installs
//! Debian's `chromium`, or fails), unless `DUALSIM_SKIP_BROWSER=1` is set:
//! then each test prints "skipped: DUALSIM_SKIP_BROWSER=1" and returns. A
//! missing browser is never a silent pass.
//! Set `DUALSIM_SCREENSHOTS=DIR` to keep the screenshots (the README's
//! images in docs/images/ are made so).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Chromium is killed (and the test fails) after this long: a hung browser
/// must not hang the suite. Not a performance bound.
const TIMEOUT: Duration = Duration::from_secs(180);
/// The window of the screenshots.
const WIDTH: u32 = 1000;
const HEIGHT: u32 = 700;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dualsim-browser-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs Chromium headless on `url` with `extra` flags and a fresh profile;
/// returns its standard output.
fn chromium(dir: &Path, url: &str, extra: &[String]) -> String {
    let profile = dir.join(format!("profile-{}", extra.len()));
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader",
            "--virtual-time-budget=5000",
            &format!("--window-size={WIDTH},{HEIGHT}"),
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status} on {url}");
            break;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {TIMEOUT:?} on {url}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap()
}

/// The text of `<div id="status">` in a DOM dump.
fn status(dom: &str) -> Option<String> {
    let start = dom.find("<div id=\"status\">")? + "<div id=\"status\">".len();
    let end = dom[start..].find("</div>")? + start;
    Some(dom[start..end].to_string())
}

/// Pixel counts of the 3-D view's region of a screenshot.
#[derive(Debug)]
struct Pixels {
    /// Pixels of the view region.
    total: usize,
    /// Pixels away from the view's clear colour (ground, shapes, arrows).
    drawn: usize,
    /// Saturated pixels (max − min channel > 60): coloured shapes.
    coloured: usize,
    /// Green pixels (the force arrows' colour).
    green: usize,
    /// Distinct colours.
    distinct: usize,
}

fn pixels(png_path: &Path) -> Pixels {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
    // The view is the top 62% of the window (CSS 62vh) inside an 8 px
    // margin: look well inside it.
    let (x0, x1) = (20, info.width as usize - 40);
    let (y0, y1) = (20, (info.height as f64 * 0.6) as usize);
    let clear = [222i32, 227, 235]; // clearColor(0.87, 0.89, 0.92)
    let mut p = Pixels {
        total: 0,
        drawn: 0,
        coloured: 0,
        green: 0,
        distinct: 0,
    };
    let mut colours = std::collections::HashSet::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let i = (y * info.width as usize + x) * channels;
            let c = [buf[i] as i32, buf[i + 1] as i32, buf[i + 2] as i32];
            p.total += 1;
            colours.insert(c);
            if (0..3).any(|k| (c[k] - clear[k]).abs() > 6) {
                p.drawn += 1;
            }
            let (mx, mn) = (c.iter().max().unwrap(), c.iter().min().unwrap());
            if mx - mn > 60 {
                p.coloured += 1;
            }
            if c[1] > c[0] + 50 && c[1] > c[2] + 50 {
                p.green += 1;
            }
        }
    }
    p.distinct = colours.len();
    p
}

/// Writes the viewer of `scene` (examples/scenes/), opens it at time `t`
/// (`#t=`), checks that it reports `ok`, and returns its pixel counts.
fn render(scene: &str, t: f64) -> Option<Pixels> {
    if std::env::var("DUALSIM_SKIP_BROWSER").is_ok_and(|v| v == "1") {
        println!("skipped: DUALSIM_SKIP_BROWSER=1");
        return None;
    }
    assert!(
        Path::new(CHROMIUM).exists(),
        "no chromium at {CHROMIUM}: install Debian's `chromium` (`.ci/run` does), \
         or set DUALSIM_SKIP_BROWSER=1 to skip the browser tests"
    );
    let dir = scratch(scene);
    let html = dir.join(format!("{scene}.html"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/scenes")
        .join(format!("{scene}.toml"));
    let out = Command::new(env!("CARGO_BIN_EXE_dualsim"))
        .arg("view")
        .arg(&src)
        .arg("--out")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dualsim view {scene}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("file://{}#t={t}", html.display());
    let dom = chromium(&dir, &url, &["--dump-dom".to_string()]);
    assert_eq!(
        status(&dom).as_deref(),
        Some("ok"),
        "{scene}: the page did not report `ok` (a script error or no WebGL)"
    );
    let shot = dir.join(format!("{scene}.png"));
    chromium(&dir, &url, &[format!("--screenshot={}", shot.display())]);
    let p = pixels(&shot);
    println!("{scene} at t = {t} s: {p:?}");
    if let Ok(keep) = std::env::var("DUALSIM_SCREENSHOTS") {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&shot, Path::new(&keep).join(format!("viewer_{scene}.png"))).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    Some(p)
}

/// Not blank: the ground grid covers a good part of the view, the picture
/// has shading (many colours), and coloured shapes are drawn.
fn assert_not_blank(scene: &str, p: &Pixels) {
    assert!(
        p.drawn * 10 > p.total,
        "{scene}: under a tenth of the view is drawn: {p:?}"
    );
    assert!(p.distinct > 50, "{scene}: too few colours: {p:?}");
    assert!(p.coloured > 100, "{scene}: no coloured shape: {p:?}");
}

#[test]
fn box_toss_draws_the_box_and_its_contact_forces() {
    // at t = 2 s the box slides on the ground: four corner contacts
    let Some(p) = render("box_toss", 2.0) else {
        return;
    };
    assert_not_blank("box_toss", &p);
    assert!(p.green > 20, "box_toss: no force arrow: {p:?}");
}

#[test]
fn double_pendulum_draws_the_fixed_base_robot() {
    let Some(p) = render("double_pendulum", 0.3) else {
        return;
    };
    assert_not_blank("double_pendulum", &p);
    assert_eq!(p.green, 0, "double_pendulum has no contact: {p:?}");
}

#[test]
fn quadruped_draws_the_floating_base_robot_and_its_contacts() {
    let Some(p) = render("quadruped_stand", 1.0) else {
        return;
    };
    assert_not_blank("quadruped_stand", &p);
    assert!(p.green > 20, "quadruped: no force arrow: {p:?}");
}
