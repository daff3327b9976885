//! Output: the `run --json` report and trajectory export (JSON), written
//! atomically (temporary file in the same directory + rename), so a reader
//! never sees a half-written file.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::dynamics::free::{orientation, position};
use crate::scene::Scene;
use crate::sim::{SimError, State, Trajectory};

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
    /// Largest penetration depth over the run.
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
    pub error: Option<String>,
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

/// Builds the report of a finished (or failed) run.
pub fn run_report(
    scene: &Scene,
    result: &Result<Trajectory<f64>, SimError>,
    wall_seconds: f64,
) -> RunReport {
    let (last, stats, failed, error) = match result {
        Ok(t) => (t.last().clone(), &t.stats[..], 0, None),
        Err(e) => (scene.initial.clone(), &[][..], 1, Some(e.to_string())),
    };
    let n = stats.len().max(1) as f64;
    RunReport {
        steps: stats.len(),
        dt: scene.world.dt,
        solver: scene.world.solver.name().to_string(),
        r#final: FinalReport { bodies: body_reports(scene, &last), robots: robot_reports(scene, &last) },
        stats: StatsReport {
            mean_iterations: stats.iter().map(|s| s.iterations as f64).sum::<f64>() / n,
            max_iterations: stats.iter().map(|s| s.iterations).max().unwrap_or(0),
            failed_steps: failed,
            max_penetration: stats.iter().map(|s| s.max_penetration).fold(0.0, f64::max),
            wall_seconds,
        },
        error,
    }
}

/// The whole trajectory as JSON: `{"dt", "bodies": [names], "frames": [{"t", "bodies": [...]}]}`.
pub fn trajectory_json(scene: &Scene, traj: &Trajectory<f64>) -> serde_json::Value {
    let frames: Vec<serde_json::Value> = traj
        .states
        .iter()
        .enumerate()
        .map(|(k, s)| {
            serde_json::json!({
                "t": k as f64 * scene.world.dt,
                "bodies": body_reports(scene, s),
                "robots": robot_reports(scene, s),
            })
        })
        .collect();
    serde_json::json!({
        "dt": scene.world.dt,
        "solver": scene.world.solver.name(),
        "bodies": scene.world.model.bodies.iter().filter(|b| b.is_free_root()).map(|b| b.name.clone()).collect::<Vec<_>>(),
        "robots": scene.world.robots.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        "frames": frames,
    })
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory is written, flushed to disk and renamed over `path`.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
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
