//! Real robots from example-robot-data (vendored under tests/data/robots:
//! Panda, UR5, Solo12) against Pinocchio's ABA, the merge of fixed-joint
//! links, Pinocchio's joint order, and the URDF files that needed fixes
//! (iCub's and Romeo's empty `<texture>`, Romeo's massless fingers).

use std::path::{Path, PathBuf};
use std::process::Command;

use dualsim::dynamics::Joint;
use dualsim::dynamics::aba::aba;
use dualsim::dynamics::urdf::{self, BaseJoint, UrdfError};
use dualsim::dynamics::urdf_mesh::MeshOptions;
use dualsim::math::DVec;

fn robots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/robots")
}

fn reference() -> serde_json::Value {
    let text = std::fs::read_to_string(robots().join("pinocchio_reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn opts(urdf: &Path) -> MeshOptions {
    MeshOptions {
        urdf_dir: urdf.parent().unwrap().to_path_buf(),
        package_dirs: vec![robots()],
    }
}

fn load(rel: &str, base: BaseJoint) -> urdf::UrdfRobot {
    urdf::load_file_with(robots().join(rel), base, &[robots()]).unwrap()
}

fn unmerged(rel: &str, base: BaseJoint) -> urdf::UrdfRobot {
    let path = robots().join(rel);
    let parsed = urdf::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    urdf::from_robot_unmerged(&parsed, base, &opts(&path)).unwrap()
}

fn vecj(v: &serde_json::Value) -> DVec<f64> {
    DVec::from_vec(
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect(),
    )
}

/// `max |a - b| / (1 + max |b|)`.
fn rel_err(a: &DVec<f64>, b: &DVec<f64>) -> f64 {
    (a - b).amax() / (1.0 + b.amax())
}

/// Panda, UR5 and Solo12 (fixed base) as dualsim loads them — fixed-joint
/// links merged, children in Pinocchio's order — have Pinocchio's joint
/// order, total mass and forward dynamics (ABA at random states, computed
/// by tests/data/robots/pinocchio_reference.py with Pinocchio 4.1). Solo12
/// branches at its base, so its order checks the sort by joint name.
#[test]
fn vendored_robots_match_pinocchio_order_mass_and_aba() {
    let r = reference();
    let g = vecj(&r["gravity"]);
    for (name, want) in r["robots"].as_object().unwrap() {
        let robot = load(want["urdf"].as_str().unwrap(), BaseJoint::Fixed);
        let order: Vec<String> = serde_json::from_value(want["joint_order"].clone()).unwrap();
        assert_eq!(robot.joint_order, order, "{name}");
        let mass = want["mass"].as_f64().unwrap();
        assert!(
            (robot.total_mass() - mass).abs() <= 1e-12 * mass,
            "{name}: {} vs {mass}",
            robot.total_mass()
        );
        let mut model = robot.model.clone();
        model.gravity = dualsim::math::Vec3::new(g[0], g[1], g[2]);
        let mut data = model.data();
        for s in want["samples"].as_array().unwrap() {
            let (q, v, tau) = (vecj(&s["q"]), vecj(&s["v"]), vecj(&s["tau"]));
            let a = aba(&model, &mut data, &q, &v, &tau).clone();
            let e = rel_err(&a, &vecj(&s["a"]));
            // both sides sum the same terms in a different order: rounding
            assert!(e < 1e-10, "{name}: ABA differs from Pinocchio's by {e:e}");
        }
    }
}

/// The merge of fixed-joint links moves inertia without changing the
/// dynamics: the merged and unmerged models have the same total mass and
/// the same ABA (floating and fixed base), and the welded links carry no
/// mass after the merge.
#[test]
fn fixed_joint_merge_keeps_total_mass_and_dynamics() {
    let cases = [
        "example-robot-data/robots/panda_description/urdf/panda.urdf",
        "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf",
        "example-robot-data/robots/solo_description/robots/solo12.urdf",
        "excerpts/welded_mass_root.urdf",
    ];
    for rel in cases {
        for base in [BaseJoint::Fixed, BaseJoint::Floating] {
            let merged = load(rel, base);
            let raw = unmerged(rel, base);
            assert!(
                (merged.total_mass() - raw.total_mass()).abs() <= 1e-12 * raw.total_mass(),
                "{rel}"
            );
            let welded: Vec<usize> = (0..merged.model.bodies.len())
                .filter(|&i| merged.welded_to[i].is_some())
                .collect();
            assert!(!welded.is_empty(), "{rel}: no fixed-joint link");
            for &i in &welded {
                assert_eq!(merged.model.bodies[i].inertia.mass, 0.0, "{rel}");
                assert_eq!(merged.model.bodies[i].joint, Joint::Fixed, "{rel}");
            }
            // the same bodies, names and collision shapes
            assert_eq!(merged.model.bodies.len(), raw.model.bodies.len());
            assert_eq!(merged.collisions, raw.collisions, "{rel}");
            let m = &merged.model;
            let (mut dm, mut dr) = (m.data(), raw.model.data());
            let mut seed = 1u64;
            let mut next = || {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            };
            for _ in 0..3 {
                let mut q = m.neutral();
                for b in &m.bodies {
                    if matches!(b.joint, Joint::Revolute { .. } | Joint::Prismatic { .. }) {
                        q[b.idx_q] = next();
                    }
                }
                let v = DVec::from_fn(m.nv, |_, _| next());
                let tau = DVec::from_fn(m.nv, |_, _| next());
                let a = aba(m, &mut dm, &q, &v, &tau).clone();
                let b = aba(&raw.model, &mut dr, &q, &v, &tau).clone();
                let e = rel_err(&a, &b);
                assert!(e < 1e-10, "{rel} {base:?}: merged ABA differs by {e:e}");
            }
        }
    }
}

/// Links are ordered depth-first with the children of a link sorted by
/// their joint's name, byte-wise (Pinocchio's order: `buildModelFromUrdf`
/// on this file gives `J_c, j_a, j_b`), not in document order.
#[test]
fn joints_follow_pinocchio_order_by_joint_name() {
    let link = |n: &str| {
        format!(
            r#"<link name="{n}"><inertial><mass value="1"/>
            <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>"#
        )
    };
    let joint = |n: &str, child: &str| {
        format!(
            r#"<joint name="{n}" type="continuous"><parent link="a"/><child link="{child}"/>
            <axis xyz="0 0 1"/></joint>"#
        )
    };
    let xml = format!(
        "<robot name=\"r\">{}{}{}{}{}{}{}</robot>",
        link("a"),
        link("z_first"),
        link("b_second"),
        link("Cap"),
        joint("j_b", "b_second"),
        joint("j_a", "z_first"),
        joint("J_c", "Cap")
    );
    let r = urdf::from_str(&xml, BaseJoint::Fixed).unwrap();
    assert_eq!(r.joint_order, ["J_c", "j_a", "j_b"]);
    let names: Vec<&str> = r.model.bodies.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["a", "Cap", "z_first", "b_second"]);
}

/// iCub's and Romeo's files have `<texture />` without a filename (urdf-rs
/// rejected them: "missing field `filename`"); they load, with their
/// inertia. Malformed XML is a located error.
#[test]
fn empty_texture_elements_do_not_stop_the_import() {
    let icub = urdf::load_file(
        robots().join("excerpts/icub_texture.urdf"),
        BaseJoint::Fixed,
    )
    .unwrap();
    assert_eq!(icub.joint_order, ["torso_yaw"]);
    assert_eq!(icub.model.bodies[1].inertia.mass, 4.81);
    let romeo = urdf::load_file(
        robots().join("excerpts/romeo_laas_small_texture.urdf"),
        BaseJoint::Floating,
    )
    .unwrap();
    assert_eq!(romeo.model.bodies.len(), 2);
    let e = urdf::from_str(
        "<robot name=\"r\">\n<link name=\"a\">\n</robot>",
        BaseJoint::Fixed,
    )
    .unwrap_err();
    assert!(matches!(e, UrdfError::Xml(_)), "{e}");
    assert!(e.to_string().contains("3:"), "a line number: {e}");
}

/// Every offending element is listed: two missing links, a negative mass
/// and a planar joint are four errors in one.
#[test]
fn urdf_refusals_list_every_offending_element() {
    let xml = r#"<robot name="r"><link name="a"/>
      <link name="b"><inertial><mass value="-1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <link name="c"/>
      <joint name="j1" type="revolute"><parent link="a"/><child link="nowhere"/><axis xyz="0 0 1"/></joint>
      <joint name="j2" type="revolute"><parent link="gone"/><child link="b"/><axis xyz="0 0 1"/></joint>
      <joint name="j3" type="planar"><parent link="a"/><child link="c"/></joint></robot>"#;
    let e = urdf::from_str(xml, BaseJoint::Fixed).unwrap_err();
    let UrdfError::Several(all) = &e else {
        panic!("{e}")
    };
    assert_eq!(all.len(), 4, "{e}");
    let msg = e.to_string();
    for needle in [
        "joint `j1`: link `nowhere`",
        "joint `j2`: link `gone`",
        "link `b`: mass",
        "joint `j3`: type `planar`",
    ] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
}

/// A scene file next to the vendored robots (paths relative to it).
fn scene(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dualsim-real-robots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let text = body.replace("ROBOTS", &robots().display().to_string());
    std::fs::write(&path, text).unwrap();
    path
}

const PANDA: &str = r#"[sim]
dt = 0.001
steps = 2

[[static]]
name = "ground"
shape = { type = "plane", normal = [0.0, 0.0, 1.0] }

[[robot]]
name = "panda"
urdf = "ROBOTS/example-robot-data/robots/panda_description/urdf/panda.urdf"
base = "fixed"
base_position = [0.0, 0.0, 0.5]
package_dirs = ["ROBOTS"]
ignore_joint_limits = true
"#;

/// The Panda's second finger mimics the first: refused at load by name
/// (exit 2) unless the scene says `ignore_mimic = true`.
#[test]
fn mimic_joints_are_refused_by_name_unless_ignored() {
    let refused = scene("panda_mimic.toml", PANDA);
    let out = bin()
        .args(["run", refused.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`panda_finger_joint2` (mimics `panda_finger_joint1`)")
            && err.contains("ignore_mimic"),
        "{err}"
    );
    let ok = scene(
        "panda_ok.toml",
        &PANDA.replace(
            "ignore_joint_limits",
            "ignore_mimic = true\nignore_joint_limits",
        ),
    );
    let out = bin().args(["run", ok.to_str().unwrap()]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `run` reports the fixed-base robot: its q and v at the end
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("panda: q ["), "{stdout}");
}

/// `dualsim info` on the Panda: its 9 joints in state order (Pinocchio's)
/// with their limits as the URDF writes them (read here independently
/// with roxmltree), the state entries of each, and a convex hull with its
/// vertex and face counts for each of its collision meshes.
#[test]
fn info_lists_the_panda_joints_in_state_order_with_limits_and_hulls() {
    let path = scene(
        "panda_info.toml",
        &PANDA.replace(
            "ignore_joint_limits",
            "ignore_mimic = true\nignore_joint_limits",
        ),
    );
    let out = bin()
        .args(["info", path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let robot = &info["robots"][0];
    let joints = robot["joints"].as_array().unwrap();
    let want: Vec<String> =
        serde_json::from_value(reference()["robots"]["panda"]["joint_order"].clone()).unwrap();
    let got: Vec<&str> = joints.iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!(
        (robot["nq"].as_u64(), robot["nv"].as_u64()),
        (Some(9), Some(9))
    );
    let text = std::fs::read_to_string(
        robots().join("example-robot-data/robots/panda_description/urdf/panda.urdf"),
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    for (k, j) in joints.iter().enumerate() {
        assert_eq!(j["q"], serde_json::json!([k, k + 1]), "{j}");
        assert_eq!(j["v"], serde_json::json!([k, k + 1]), "{j}");
        let name = j["name"].as_str().unwrap();
        let limit = doc
            .descendants()
            .find(|n| n.has_tag_name("joint") && n.attribute("name") == Some(name))
            .and_then(|n| n.children().find(|c| c.has_tag_name("limit")))
            .unwrap();
        for key in ["lower", "upper", "effort", "velocity"] {
            let x: f64 = limit.attribute(key).unwrap().parse().unwrap();
            assert_eq!(j[key].as_f64(), Some(x), "{name}.{key}");
        }
    }
    let meshes = doc
        .descendants()
        .filter(|n| n.has_tag_name("collision"))
        .filter(|n| n.descendants().any(|m| m.has_tag_name("mesh")))
        .count();
    let hulls: Vec<&serde_json::Value> = robot["links"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["shapes"].as_array().unwrap())
        .filter(|s| s["mesh"].is_string())
        .collect();
    assert_eq!(hulls.len(), meshes);
    assert!(meshes > 0);
    for h in hulls {
        assert!(h["hull_vertices"].as_u64().unwrap() >= 4, "{h}");
        assert!(h["hull_faces"].as_u64().unwrap() >= 4, "{h}");
    }
    // the welded hand carries the inertia of the links fixed to it
    let fixed = robot["fixed_joints"].as_array().unwrap();
    assert!(fixed.iter().any(|f| f["name"] == "panda_hand_joint"));
    // link–link pairs are listed as excluded, link–ground as considered
    assert!(
        info["contact_pairs"]["considered"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(["panda/panda_hand", "ground"]))
    );
    // the text form lists the same joints
    let out = bin()
        .args(["info", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in &want {
        assert!(text.contains(name.as_str()), "{name}: {text}");
    }
    assert!(text.contains("9 joints with coordinates"), "{text}");
}

/// A massless root whose mass sits on a link welded to it (anymal_c's
/// KDL pattern) is a valid floating base once merged: the scene loads
/// and steps without a NaN.
#[test]
fn massless_root_with_welded_mass_is_a_floating_base() {
    let path = scene(
        "welded.toml",
        "[sim]\ndt = 0.001\nsteps = 20\n\n[[robot]]\nname = \"w\"\n\
         urdf = \"ROBOTS/excerpts/welded_mass_root.urdf\"\nbase = \"floating\"\n\
         base_position = [0.0, 0.0, 1.0]\n",
    );
    let out = bin()
        .args(["run", path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let z = r["final"]["bodies"][0]["position"][2].as_f64().unwrap();
    // free fall of the whole robot: its base falls ½ g t² (no contact, the
    // leg starts at rest and gravity alone moves nothing relative to it)
    let t = 0.02;
    assert!((z - (1.0 - 0.5 * 9.81 * t * t)).abs() < 1e-3, "{z}");
}

/// Romeo's fingers are massless links on revolute joints: the mass matrix
/// is singular (the step produced NaN). Refused at load, exit 2, naming
/// both joints by their joint name.
#[test]
fn joints_that_move_no_inertia_are_refused_at_load() {
    let path = scene(
        "romeo_fingers.toml",
        "[sim]\ndt = 0.001\nsteps = 1\n\n[[robot]]\nname = \"romeo\"\n\
         urdf = \"ROBOTS/excerpts/romeo_massless_fingers.urdf\"\nbase = \"fixed\"\n\
         ignore_joint_limits = true\n",
    );
    let out = bin()
        .args(["run", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("joints `LHand`, `LFinger12`") && err.contains("singular"),
        "{err}"
    );
}

/// `run --solver lcp` on a robot scene with the default (exact) friction
/// cone is refused when the scene is loaded (exit 2, naming the backend
/// and the cone), not at its first step; `run` of a fixed-base robot
/// prints its final joint positions.
#[test]
fn lcp_with_the_exact_cone_is_refused_at_load_and_run_reports_robots() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/double_pendulum.toml");
    let out = bin()
        .args(["run", scene.to_str().unwrap(), "--solver", "lcp", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing simulated");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`lcp` backend does not implement the exact friction cone"),
        "{err}"
    );
    let out = bin()
        .args(["run", scene.to_str().unwrap(), "--steps", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pendulum: q ["), "{stdout}");
}
