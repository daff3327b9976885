//! URDF collision meshes: convex hulls of the committed fixtures
//! (tests/data/meshes: a binary STL cube, an ASCII STL cube, an OBJ
//! tetrahedron), `package://` and relative paths, `<mesh scale>`, and the
//! located errors of meshes that cannot be used.

use dualsim::dynamics::urdf::{self, BaseJoint, UrdfError};
use dualsim::geometry::Shape;
use dualsim::geometry::mesh::{MeshError, hull_of_file};
use dualsim::math::Vec3;
use std::path::{Path, PathBuf};

fn meshes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/meshes")
}

/// (normal, offset) pairs sorted by normal, for comparison with a box.
fn faces(shape: &Shape<f64>) -> Vec<(Vec3<f64>, f64)> {
    let Shape::Polytope {
        normals, offsets, ..
    } = shape
    else {
        panic!("not a polytope: {shape:?}")
    };
    let mut f: Vec<(Vec3<f64>, f64)> = normals
        .iter()
        .copied()
        .zip(offsets.iter().copied())
        .collect();
    f.sort_by(|a, b| {
        let k = |v: &Vec3<f64>| (v.x * 4.0 + v.y * 2.0 + v.z).round() as i64;
        k(&a.0).cmp(&k(&b.0))
    });
    f
}

/// A box of half extents `h` about its centre: six axis faces.
fn assert_box(shape: &Shape<f64>, h: [f64; 3], label: &str) {
    let f = faces(shape);
    assert_eq!(
        f.len(),
        6,
        "{label}: {} faces (coplanar triangles merged?) {f:?}",
        f.len()
    );
    for (n, b) in &f {
        let axis = (0..3).find(|&i| n[i].abs() > 0.5).unwrap();
        let mut e = Vec3::zeros();
        e[axis] = n[axis].signum();
        assert!((n - e).norm() < 1e-9, "{label}: normal {n:?}");
        assert!(
            (b - h[axis]).abs() < 1e-7,
            "{label}: offset {b} along axis {axis}, expected {}",
            h[axis]
        );
    }
}

#[test]
fn mesh_hulls_of_stl_and_obj_fixtures_have_the_known_faces() {
    // binary STL: the cube [0, 0.2]^3 -> 6 faces at 0.1 about its centre
    let cube = hull_of_file(&meshes().join("packages/meshbot/meshes/cube.stl"), [1.0; 3]).unwrap();
    assert_box(&cube.shape(), [0.1; 3], "binary STL");
    assert!(
        (cube.centre - Vec3::new(0.1, 0.1, 0.1)).norm() < 1e-7,
        "{:?}",
        cube.centre
    );
    assert_eq!(cube.vertices.len(), 8);
    // ASCII STL: the unit cube about its centre, scaled anisotropically
    let ascii = hull_of_file(&meshes().join("cube_ascii.stl"), [0.2, 0.2, 0.1]).unwrap();
    assert_box(
        &ascii.shape(),
        [0.1, 0.1, 0.05],
        "ASCII STL, scale 0.2 0.2 0.1",
    );
    assert!(ascii.centre.norm() < 1e-9);
    // a negative scale mirrors the mesh; its hull is the same box
    let mirrored = hull_of_file(&meshes().join("cube_ascii.stl"), [-0.2, 0.2, 0.1]).unwrap();
    assert_box(&mirrored.shape(), [0.1, 0.1, 0.05], "mirrored");
    // OBJ: the tetrahedron (0,0,0), (0.1,0,0), (0,0.1,0), (0,0,0.1): 4 faces,
    // every vertex on 3 of them, the centre at the vertices' mean
    let tet = hull_of_file(&meshes().join("tetra.obj"), [1.0; 3]).unwrap();
    let Shape::Polytope {
        normals, offsets, ..
    } = tet.shape()
    else {
        unreachable!()
    };
    assert_eq!(normals.len(), 4);
    assert!((tet.centre - Vec3::new(0.025, 0.025, 0.025)).norm() < 1e-9);
    let s3 = 1.0 / 3f64.sqrt();
    assert!(
        normals
            .iter()
            .any(|n| (n - Vec3::new(s3, s3, s3)).norm() < 1e-9)
    );
    for v in &tet.vertices {
        let on = normals
            .iter()
            .zip(&offsets)
            .filter(|(n, b)| (n.dot(v) - **b).abs() < 1e-9)
            .count();
        assert_eq!(on, 3, "vertex {v:?} on {on} faces");
    }
    assert!(
        offsets.iter().all(|b| *b > 0.0),
        "the centre is interior: {offsets:?}"
    );
}

#[test]
fn urdf_meshes_resolve_package_and_relative_paths_with_scale() {
    let robot = urdf::load_file_with(
        meshes().join("meshbot.urdf"),
        BaseJoint::Floating,
        &[meshes().join("packages")],
    )
    .unwrap();
    assert_eq!(robot.collisions.len(), 3);
    let names: Vec<&str> = robot
        .collisions
        .iter()
        .map(|c| robot.model.bodies[c.body].name.as_str())
        .collect();
    assert_eq!(names, ["base", "top", "tip"]);
    let [base, top, tip] = [0, 1, 2].map(|i| &robot.collisions[i]);
    // relative path + scale: the box of half extents (0.1, 0.1, 0.05) at the origin
    assert_box(
        &base.shape,
        [0.1, 0.1, 0.05],
        "base (cube_ascii.stl, scaled)",
    );
    assert!((base.pose.translation - Vec3::new(0.0, 0.0, -0.02)).norm() < 1e-12);
    // package://: the hull's centre (0.1, 0.1, 0.1) composed with the origin
    assert_box(
        &top.shape,
        [0.1; 3],
        "top (package://meshbot/meshes/cube.stl)",
    );
    assert!(
        (top.pose.translation - Vec3::new(0.0, 0.0, 0.15)).norm() < 1e-7,
        "hull placed at the collision origin composed with its centre: {:?}",
        top.pose.translation
    );
    // the tetrahedron's centre rotated by the origin's yaw of 90°
    assert!(matches!(tip.shape, Shape::Polytope { ref normals, .. } if normals.len() == 4));
    assert!(
        (tip.pose.translation - Vec3::new(-0.025, 0.025, 0.025)).norm() < 1e-9,
        "{:?}",
        tip.pose.translation
    );
    // without the package directory, the package is unresolved
    let e = urdf::load_file(meshes().join("meshbot.urdf"), BaseJoint::Floating).unwrap_err();
    match &e {
        UrdfError::Meshes(f) => {
            assert_eq!(f.len(), 1, "{e}");
            assert_eq!(f[0].link, "top");
            assert!(
                matches!(&f[0].error, MeshError::UnresolvedPackage { package, .. } if package == "meshbot")
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn urdf_mesh_errors_name_every_failing_mesh() {
    let e = urdf::load_file_with(
        meshes().join("broken.urdf"),
        BaseJoint::Fixed,
        &[meshes().join("packages")],
    )
    .unwrap_err();
    let UrdfError::Meshes(f) = &e else {
        panic!("{e}")
    };
    let links: Vec<&str> = f.iter().map(|x| x.link.as_str()).collect();
    assert_eq!(links, ["l0", "l1", "l2", "l3", "l4", "l5", "l6"], "{e}");
    assert!(matches!(f[0].error, MeshError::NotFound { .. }), "{}", f[0]);
    assert!(matches!(f[1].error, MeshError::Read { .. }), "{}", f[1]);
    assert!(
        matches!(&f[2].error, MeshError::UnsupportedFormat { extension, .. } if extension == "ply"),
        "{}",
        f[2]
    );
    assert!(
        matches!(&f[3].error, MeshError::Degenerate { reason, .. } if reason.contains("flat")),
        "{}",
        f[3]
    );
    assert!(
        matches!(&f[4].error, MeshError::UnresolvedPackage { package, .. } if package == "nopkg"),
        "{}",
        f[4]
    );
    assert!(
        matches!(f[5].error, MeshError::UnsupportedUri { .. }),
        "{}",
        f[5]
    );
    assert!(matches!(f[6].error, MeshError::BadScale { .. }), "{}", f[6]);
    // the message: the count, then every one by link and file
    let msg = e.to_string();
    assert!(
        msg.starts_with("7 collision meshes cannot be used"),
        "{msg}"
    );
    for (l, file) in [
        ("l0", "missing.stl"),
        ("l1", "garbage.stl"),
        ("l2", "cube.ply"),
        ("l3", "flat.obj"),
        ("l4", "nopkg"),
        ("l5", ""),
        ("l6", ""),
    ] {
        assert!(
            msg.contains(&format!("link `{l}`")) && msg.contains(file),
            "{l} {file}: {msg}"
        );
    }
    assert!(!msg.contains("more"), "{msg}");
}

#[test]
fn urdf_mesh_errors_in_a_scene_are_located() {
    let file = meshes().join("scene.toml");
    let src = "[sim]\ndt = 0.01\nsteps = 1\n\n[[robot]]\nname = \"b\"\nurdf = \"broken.urdf\"\npackage_dirs = [\"packages\"]\n";
    let e = dualsim::scene::parse(src, &file.display().to_string()).unwrap_err();
    assert_eq!((e.line, e.column), (7, 8), "{e}");
    assert_eq!(e.path, "robot[0].urdf", "{e}");
    assert!(
        e.message.starts_with("broken.urdf: 7 collision meshes"),
        "{e}"
    );
    // a package directory that does not exist, at its element
    let src = "[[robot]]\nname = \"b\"\nurdf = \"meshbot.urdf\"\nbase = \"floating\"\npackage_dirs = [\"packages\", \"nowhere\"]\n";
    let e = dualsim::scene::parse(src, &file.display().to_string()).unwrap_err();
    assert_eq!(
        (e.line, e.column, e.path.as_str()),
        (5, 29, "robot[0].package_dirs[1]"),
        "{e}"
    );
    assert!(e.message.contains("does not exist"), "{e}");
    // not a string
    let src = "[[robot]]\nname = \"b\"\nurdf = \"meshbot.urdf\"\npackage_dirs = [1]\n";
    let e = dualsim::scene::parse(src, &file.display().to_string()).unwrap_err();
    assert_eq!(
        (e.line, e.path.as_str()),
        (4, "robot[0].package_dirs[0]"),
        "{e}"
    );
    // the committed scene loads: three hulls on one floating robot
    let s = dualsim::scene::load(&meshes().join("meshbot.toml")).unwrap();
    assert_eq!(s.world.link_shapes.len(), 3);
}
