//! Output: the `run --json` report and trajectory export (JSON), written
//! atomically (temporary file in the same directory + rename), so a reader
//! never sees a half-written file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub mod viewer;

use crate::contact::ContactImpulse;
use crate::dynamics::free::{orientation, position};
use crate::scene::Scene;
use crate::sim::{RolloutError, State, StepStats, Trajectory};

/// One body's state in a report.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BodyReport {
    /// Body name.
    pub name: String,
    /// Position of the body origin (= centre of mass).
    pub position: [f64; 3],
    /// Orientation `[w, x, y, z]`.
    pub orientation: [f64; 4],
    /// Linear velocity (world).
    pub velocity: [f64; 3],
    /// Angular velocity (world).
    pub angular_velocity: [f64; 3],
}

/// One robot's state in a report.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RobotReport {
    /// Robot name.
    pub name: String,
    /// Joint positions.
    pub q: Vec<f64>,
    /// Joint velocities.
    pub v: Vec<f64>,
}

/// The state at the end of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FinalReport {
    /// Free bodies.
    pub bodies: Vec<BodyReport>,
    /// Articulated robots.
    pub robots: Vec<RobotReport>,
}

/// Aggregate solver statistics of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StatsReport {
    /// Mean solver iterations per step.
    pub mean_iterations: f64,
    /// Largest iteration count of a step.
    pub max_iterations: usize,
    /// Steps that failed (the run stops at the first failure).
    pub failed_steps: usize,
    /// Largest penetration depth over the run: the initial state measured
    /// geometrically ([`crate::sim::penetration`]) and every completed step
    /// (the solver's statistic at q⁺ and, geometrically, the last state).
    pub max_penetration: f64,
    /// Wall-clock time of the simulation.
    pub wall_seconds: f64,
}

/// The `run --json` document (SCENE.md).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunReport {
    /// Steps simulated.
    pub steps: usize,
    /// Time step.
    pub dt: f64,
    /// Contact backend.
    pub solver: String,
    /// The final state.
    pub r#final: FinalReport,
    /// Statistics.
    pub stats: StatsReport,
    /// The failure, if the run stopped early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReport>,
}

/// The failing step of a run (`"error"` in the `run --json` document).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ErrorReport {
    /// Index of the failing step (0-based; `steps` steps completed before it).
    pub step: usize,
    /// Machine-readable kind ([`crate::sim::SimError::kind`]).
    pub kind: String,
    /// The error, with the bodies in contact at the start of the step.
    pub message: String,
    /// Bodies within reach of contact at the start of the failing step
    /// (pairs measured geometrically, [`crate::sim::penetration`]).
    pub bodies: Vec<String>,
}

/// The bodies near contact at `state`: pairs whose closed-form gap is
/// below the interior-point backends' candidate margin plus the distance
/// a step can close (`dt (‖ṗ‖ + ‖ω‖ R) + dt² ‖g‖` per shape), the rule
/// by which `ipm` selects contact candidates, as `"a–b"` strings, and the
/// bodies' names. Pairs without a closed form are not measured.
pub fn bodies_near_contact(scene: &Scene, state: &State<f64>) -> (Vec<String>, Vec<String>) {
    let g = crate::sim::penetration::gaps_with_reach(
        &scene.world,
        state,
        scene.world.solver.contact_margin(&scene.world.backends),
        1.0,
    );
    let mut bodies: Vec<String> = Vec::new();
    let mut pairs = Vec::new();
    for p in &g.pairs {
        pairs.push(format!("{}–{}", p.a, p.b));
        for n in [&p.a, &p.b] {
            if !bodies.contains(n) {
                bodies.push(n.clone());
            }
        }
    }
    (pairs, bodies)
}

/// The `"error"` report of a failed rollout.
pub fn error_report(scene: &Scene, e: &RolloutError<f64>) -> ErrorReport {
    let (pairs, bodies) = bodies_near_contact(scene, e.completed.last());
    let near = if pairs.is_empty() {
        "no measured pair of shapes near contact".to_string()
    } else {
        format!("near contact: {}", pairs.join(", "))
    };
    ErrorReport {
        step: e.step,
        kind: e.error.kind().to_string(),
        message: format!(
            "failed at step {}: {} ({near} at the start of the step)",
            e.step, e.error
        ),
        bodies,
    }
}

/// The bodies of `state` as reports.
pub fn body_reports(scene: &Scene, state: &State<f64>) -> Vec<BodyReport> {
    scene
        .world
        .model
        .bodies
        .iter()
        .filter(|b| b.is_free_root())
        .map(|b| {
            let p = position(&state.q, b.idx_q);
            let r = orientation(&state.q, b.idx_q);
            let v = &state.v;
            let k = b.idx_v;
            BodyReport {
                name: b.name.clone(),
                position: [p.x, p.y, p.z],
                orientation: [r.w, r.i, r.j, r.k],
                velocity: [v[k], v[k + 1], v[k + 2]],
                angular_velocity: [v[k + 3], v[k + 4], v[k + 5]],
            }
        })
        .collect()
}

/// The robots of `state` as reports.
pub fn robot_reports(scene: &Scene, state: &State<f64>) -> Vec<RobotReport> {
    scene
        .world
        .robots
        .iter()
        .map(|r| RobotReport {
            name: r.name.clone(),
            q: state.q.rows(r.idx_q, r.nq).iter().copied().collect(),
            v: state.v.rows(r.idx_v, r.nv).iter().copied().collect(),
        })
        .collect()
}

/// Builds the report of a finished (or failed) run: a failed run reports
/// the steps completed, the state after them and the failing step.
pub fn run_report(
    scene: &Scene,
    result: &Result<Trajectory<f64>, RolloutError<f64>>,
    wall_seconds: f64,
) -> RunReport {
    let (traj, failed, error) = match result {
        Ok(t) => (t, 0, None),
        Err(e) => (&e.completed, 1, Some(error_report(scene, e))),
    };
    let (last, stats) = (traj.last().clone(), &traj.stats[..]);
    let geometric =
        |s: &State<f64>| crate::sim::penetration::gaps(&scene.world, s, 0.0).max_penetration();
    let max_penetration = stats
        .iter()
        .map(|s| s.max_penetration)
        .fold(geometric(&scene.initial).max(geometric(&last)), f64::max);
    let n = stats.len().max(1) as f64;
    RunReport {
        steps: stats.len(),
        dt: scene.world.dt,
        solver: scene.world.solver.name().to_string(),
        r#final: FinalReport {
            bodies: body_reports(scene, &last),
            robots: robot_reports(scene, &last),
        },
        stats: StatsReport {
            mean_iterations: stats.iter().map(|s| s.iterations as f64).sum::<f64>() / n + 0.0, // not -0.0 for no step
            max_iterations: stats.iter().map(|s| s.iterations).max().unwrap_or(0),
            failed_steps: failed,
            max_penetration,
            wall_seconds,
        },
        error,
    }
}

/// The contacts of each step of a run (`contacts[k]`: step k's), as
/// recorded by [`crate::sim::rollout_inspect`].
pub type StepContacts = Vec<Vec<ContactImpulse<f64>>>;

/// The trajectory of a failed run (the steps completed before the
/// failure) as JSON: [`trajectory_json`] with an `"error"` entry
/// ([`ErrorReport`]).
pub fn partial_trajectory_json(scene: &Scene, e: &RolloutError<f64>) -> serde_json::Value {
    partial_trajectory_json_with(scene, e, None)
}

/// [`partial_trajectory_json`] with the contacts of each completed step.
pub fn partial_trajectory_json_with(
    scene: &Scene,
    e: &RolloutError<f64>,
    contacts: Option<&StepContacts>,
) -> serde_json::Value {
    let mut doc = trajectory_json_with(scene, &e.completed, contacts);
    doc["error"] = serde_json::to_value(error_report(scene, e)).expect("report serializes");
    doc
}

/// The whole trajectory as JSON: `{"dt", "solver", "bodies": [names],
/// "robots": [names], "geometry", "frames": [{"t", "bodies": [...],
/// "robots": [...], "links", "energy", "iterations", "penetration"}]}`
/// (docs/scene-format.md, `run --out`).
pub fn trajectory_json(scene: &Scene, traj: &Trajectory<f64>) -> serde_json::Value {
    trajectory_json_with(scene, traj, None)
}

/// [`trajectory_json`] with each frame's `"contacts"` (after frame 0:
/// the contacts of the step that produced it) when `contacts` is given.
pub fn trajectory_json_with(
    scene: &Scene,
    traj: &Trajectory<f64>,
    contacts: Option<&StepContacts>,
) -> serde_json::Value {
    let w = &scene.world;
    let links = viewer::drawn_links(w);
    let mut data = w.model.data();
    let frames: Vec<serde_json::Value> = traj
        .states
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let stats = k.checked_sub(1).and_then(|j| traj.stats.get(j));
            let step_contacts = contacts.map(|c| {
                k.checked_sub(1)
                    .and_then(|j| c.get(j))
                    .map_or(&[][..], |c| &c[..])
            });
            frame_json(scene, &mut data, &links, k, s, stats, step_contacts)
        })
        .collect();
    let mut doc = trajectory_header(scene);
    doc.insert("frames".to_string(), serde_json::Value::Array(frames));
    serde_json::Value::Object(doc)
}

/// Every entry of a trajectory document but `"frames"` (and `"error"`).
fn trajectory_header(scene: &Scene) -> serde_json::Map<String, serde_json::Value> {
    let w = &scene.world;
    let doc = serde_json::json!({
        "dt": w.dt,
        "solver": w.solver.name(),
        "bodies": w.model.bodies.iter().filter(|b| b.is_free_root()).map(|b| b.name.clone()).collect::<Vec<_>>(),
        "robots": w.robots.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        "geometry": viewer::geometry_json(w),
    });
    match doc {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("json! of an object literal is an object"),
    }
}

/// Frame `k` of a trajectory document: the state after `k` steps, the
/// statistics and (when recorded) the contacts of the step that reached it.
fn frame_json(
    scene: &Scene,
    data: &mut crate::dynamics::Data<f64>,
    links: &[usize],
    k: usize,
    state: &State<f64>,
    stats: Option<&StepStats>,
    contacts: Option<&[ContactImpulse<f64>]>,
) -> serde_json::Value {
    let w = &scene.world;
    let mut f = serde_json::json!({
        "t": k as f64 * w.dt,
        "bodies": body_reports(scene, state),
        "robots": robot_reports(scene, state),
        "links": viewer::link_poses(w, data, links, state),
        "energy": viewer::energy(w, data, state),
        "iterations": stats.map(|x| x.iterations),
        "penetration": stats.map(|x| x.max_penetration),
    });
    if let Some(c) = contacts {
        f["contacts"] = viewer::contacts_json(c, w.dt);
    }
    f
}

/// A trajectory file written while the run goes (`dualsim run --out`):
/// the frames are appended one by one to a temporary file next to the
/// target, which [`TrajectoryWriter::finish`] completes and renames over
/// it, so memory does not grow with the number of steps and a reader
/// never sees a half-written file.
///
/// The file is the document of [`trajectory_json_with`], pretty-printed:
/// byte for byte the same for a run that succeeds; for a failed run
/// ([`TrajectoryWriter::finish`] with an [`ErrorReport`]) the `"error"`
/// entry comes last instead of in key order (the same JSON value as
/// [`partial_trajectory_json_with`]); `tests/all/cli/commands.rs` checks both.
pub struct TrajectoryWriter {
    target: PathBuf,
    tmp: PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
    tail: serde_json::Map<String, serde_json::Value>,
    data: crate::dynamics::Data<f64>,
    links: Vec<usize>,
    frames: usize,
    contacts: bool,
}

impl TrajectoryWriter {
    /// Starts the file `path` (its directory is created): writes the
    /// entries that precede `"frames"` to a temporary file in the same
    /// directory. `contacts`: the frames carry a `"contacts"` entry.
    pub fn create(scene: &Scene, path: &Path, contacts: bool) -> std::io::Result<Self> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = std::fs::File::create(&tmp)?;
        let mut w = TrajectoryWriter {
            target: path.to_path_buf(),
            tmp,
            out: Some(std::io::BufWriter::new(file)),
            tail: serde_json::Map::new(),
            data: scene.world.model.data(),
            links: viewer::drawn_links(&scene.world),
            frames: 0,
            contacts,
        };
        // serde_json's map is ordered by key: the entries before "frames"
        // are written now, the ones after it by `finish`.
        let mut head = String::from("{");
        for (key, value) in trajectory_header(scene) {
            if key.as_str() < "frames" {
                head.push_str(&entry(&key, &value));
                head.push(',');
            } else {
                w.tail.insert(key, value);
            }
        }
        head.push_str("\n  \"frames\": [");
        w.write(head.as_bytes())?;
        Ok(w)
    }

    /// Appends the next frame: the state after as many steps as frames
    /// were written before, with the statistics and the contacts of the
    /// step that reached it (`None` for the initial state).
    pub fn frame(
        &mut self,
        scene: &Scene,
        state: &State<f64>,
        stats: Option<&StepStats>,
        contacts: Option<&[ContactImpulse<f64>]>,
    ) -> std::io::Result<()> {
        let contacts = self.contacts.then(|| contacts.unwrap_or(&[]));
        let f = frame_json(
            scene,
            &mut self.data,
            &self.links,
            self.frames,
            state,
            stats,
            contacts,
        );
        let text = serde_json::to_string_pretty(&f).expect("json serializes");
        let sep = if self.frames == 0 {
            "\n    "
        } else {
            ",\n    "
        };
        self.frames += 1;
        self.write(sep.as_bytes())?;
        self.write(indent(&text, "    ").as_bytes())
    }

    /// Completes the file (the entries after `"frames"`, then `"error"`
    /// for a failed run), flushes it to disk and renames it over the
    /// target.
    pub fn finish(mut self, error: Option<&ErrorReport>) -> std::io::Result<()> {
        let mut text = String::from(if self.frames == 0 { "]" } else { "\n  ]" });
        let mut tail = std::mem::take(&mut self.tail);
        if let Some(e) = error {
            tail.insert(
                "error".to_string(),
                serde_json::to_value(e).expect("report serializes"),
            );
        }
        let error = tail.remove("error");
        let rest = tail.iter().map(|(k, v)| (k.as_str(), v));
        for (key, value) in rest.chain(error.as_ref().map(|e| ("error", e))) {
            text.push(',');
            text.push_str(&entry(key, value));
        }
        text.push_str("\n}");
        self.write(text.as_bytes())?;
        let out = self.out.take().expect("not finished twice");
        let result = (|| {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            std::fs::rename(&self.tmp, &self.target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        result
    }

    /// Writes to the temporary file; on an error the file is removed.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let Some(out) = self.out.as_mut() else {
            return Err(std::io::Error::other("the trajectory file was abandoned"));
        };
        let r = out.write_all(bytes);
        if r.is_err() {
            self.out = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
        r
    }
}

impl Drop for TrajectoryWriter {
    /// A writer dropped without [`TrajectoryWriter::finish`] removes its
    /// temporary file (the target is left as it was).
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// `"key": value` of a pretty-printed top-level object (a newline and two
/// spaces before it, the value's own lines indented by two).
fn entry(key: &str, value: &serde_json::Value) -> String {
    let key = serde_json::to_string(key).expect("json serializes");
    let value = serde_json::to_string_pretty(value).expect("json serializes");
    format!("\n  {key}: {}", indent(&value, "  "))
}

/// `text` with every line after the first prefixed by `prefix` (JSON text
/// has no raw newline inside a string).
fn indent(text: &str, prefix: &str) -> String {
    text.replace('\n', &format!("\n{prefix}"))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, flushed to disk and renamed over `path`.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A trajectory file that cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// Not JSON.
    #[error("not a JSON document: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not a dualsim trajectory (`{"dt", "frames": [{"t", "bodies": [...]}]}`).
    #[error("not a dualsim trajectory: {0}")]
    Shape(String),
}

/// A self-contained HTML page (no network access) that plays a trajectory
/// written by `dualsim run --out` back in 3-D (WebGL): every shape with
/// its orientation when the trajectory carries its `geometry` (a sphere
/// marker per body otherwise), robot links, the ground and static shapes,
/// contact points and force arrows when the frames carry `contacts`,
/// playback, speed, scrubbing, an orbiting camera, and plots of energy,
/// penetration and solver iterations per step. The page reports its own
/// state in `<div id="status">` and the document title: `ok` once the
/// first frame is drawn, `error: …` on a script error.
pub fn html_viewer(trajectory: &str) -> Result<String, ViewError> {
    let doc: serde_json::Value = serde_json::from_str(trajectory)?;
    html_viewer_doc(&doc)
}

/// [`html_viewer`] of a parsed trajectory document.
pub fn html_viewer_doc(doc: &serde_json::Value) -> Result<String, ViewError> {
    let frames = doc
        .get("frames")
        .and_then(|f| f.as_array())
        .ok_or_else(|| ViewError::Shape("missing `frames` array".into()))?;
    if frames.is_empty() {
        return Err(ViewError::Shape("no frames".into()));
    }
    for (k, f) in frames.iter().enumerate() {
        let bodies = f
            .get("bodies")
            .and_then(|b| b.as_array())
            .ok_or_else(|| ViewError::Shape(format!("frame {k}: missing `bodies`")))?;
        for b in bodies {
            let ok = b
                .get("position")
                .and_then(|p| p.as_array())
                .is_some_and(|p| {
                    p.len() == 3 && p.iter().all(|x| x.as_f64().is_some_and(f64::is_finite))
                });
            if !ok {
                return Err(ViewError::Shape(format!(
                    "frame {k}: a body without a finite 3-vector `position`"
                )));
            }
        }
    }
    // The data is embedded as JSON; `</` is escaped so it cannot close the script tag.
    let data = serde_json::to_string(doc)?.replace("</", "<\\/");
    Ok(VIEWER_TEMPLATE
        .replace("__SCRIPT__", VIEWER_JS)
        .replace("__DATA__", &data))
}

/// The renderer (plain WebGL 1, no library).
const VIEWER_JS: &str = include_str!("viewer.js");

const VIEWER_TEMPLATE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>dualsim viewer</title>
<style>
body{font-family:sans-serif;margin:8px;background:#fafafa}
#view{width:100%;height:62vh;display:block;background:#dde3ea;border:1px solid #bbb;cursor:grab}
#bar{margin:6px 0}#bar input[type=range]{vertical-align:middle}
#plots canvas{border:1px solid #ccc;background:#fff;margin-right:6px}
#status{font-size:12px;color:#666}#info{font-size:12px;white-space:pre}
</style>
</head><body>
<canvas id="view"></canvas>
<div id="bar"><button id="play">pause</button>
speed <select id="speed"><option>0.1</option><option>0.25</option><option>0.5</option><option selected>1</option><option>2</option><option>4</option></select>
<input id="slider" type="range" min="0" value="0" style="width:50%"> <span id="time"></span>
<label><input id="showc" type="checkbox" checked> contacts</label></div>
<div id="plots"><canvas id="p_energy" width="300" height="120"></canvas><canvas id="p_pen" width="300" height="120"></canvas><canvas id="p_iter" width="300" height="120"></canvas></div>
<div id="info"></div>
<div id="status">loading</div>
<script>
window.onerror = function (msg, src, line, col) {
  var s = 'error: ' + msg + ' (line ' + line + ')';
  document.getElementById('status').textContent = s; document.title = s; return false;
};
const TRAJ = __DATA__;
</script>
<script>
__SCRIPT__
</script></body></html>
"#;

/// The states of a trajectory document (`run --out`'s `trajectory.json`,
/// [`trajectory_json`]) for the world of `scene`: each frame's bodies
/// (position, orientation, velocity, angular velocity) and robots (`q`,
/// `v`), matched by name. Refused with a message naming what is missing
/// or malformed (a body of the scene absent from a frame, a robot's `q`
/// of the wrong length, a time step other than the scene's).
pub fn trajectory_states(scene: &Scene, text: &str) -> Result<Vec<State<f64>>, String> {
    use serde_json::Value;
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not a trajectory: {e}"))?;
    let w = &scene.world;
    let dt = doc
        .get("dt")
        .and_then(Value::as_f64)
        .ok_or("not a trajectory: no `dt`")?;
    if (dt - w.dt).abs() > 1e-12 * w.dt.abs() {
        return Err(format!(
            "the trajectory's time step {dt} is not the scene's {}",
            w.dt
        ));
    }
    let frames = doc
        .get("frames")
        .and_then(Value::as_array)
        .ok_or("not a trajectory: no `frames`")?;
    let nums = |v: Option<&Value>, n: usize, what: &str| -> Result<Vec<f64>, String> {
        let a = v
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{what}: missing"))?;
        let x: Vec<f64> = a.iter().filter_map(Value::as_f64).collect();
        if x.len() != n || a.len() != n {
            return Err(format!("{what}: expected {n} numbers, got {}", a.len()));
        }
        Ok(x)
    };
    let find = |list: Option<&Value>, name: &str| -> Option<Value> {
        list.and_then(Value::as_array)?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .cloned()
    };
    frames
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let mut s = scene.initial.clone();
            for b in w.model.bodies.iter().filter(|b| b.is_free_root()) {
                let e = find(f.get("bodies"), &b.name)
                    .ok_or_else(|| format!("frame {k}: body `{}` missing", b.name))?;
                let at = |key: &str, n: usize| {
                    nums(
                        e.get(key),
                        n,
                        &format!("frame {k}: body `{}`.{key}", b.name),
                    )
                };
                let (p, r) = (at("position", 3)?, at("orientation", 4)?);
                let (v, om) = (at("velocity", 3)?, at("angular_velocity", 3)?);
                for d in 0..3 {
                    s.q[b.idx_q + d] = p[d];
                    s.v[b.idx_v + d] = v[d];
                    s.v[b.idx_v + 3 + d] = om[d];
                }
                for d in 0..4 {
                    s.q[b.idx_q + 3 + d] = r[d];
                }
            }
            for r in &w.robots {
                let e = find(f.get("robots"), &r.name)
                    .ok_or_else(|| format!("frame {k}: robot `{}` missing", r.name))?;
                let q = nums(
                    e.get("q"),
                    r.nq,
                    &format!("frame {k}: robot `{}`.q", r.name),
                )?;
                let v = nums(
                    e.get("v"),
                    r.nv,
                    &format!("frame {k}: robot `{}`.v", r.name),
                )?;
                s.q.rows_mut(r.idx_q, r.nq).copy_from_slice(&q);
                s.v.rows_mut(r.idx_v, r.nv).copy_from_slice(&v);
            }
            Ok(s)
        })
        .collect()
}
