//! URDF `<mesh filename scale>` collision elements: where the file is and
//! which convex shape it becomes.
//!
//! Resolution of `filename` (Pinocchio's convention for packages):
//! * `package://PKG/REST`: `DIR/PKG/REST` for the first directory `DIR` of
//!   [`MeshOptions::package_dirs`] that has a folder `PKG`
//!   ([`MeshError::UnresolvedPackage`] when none has); `package:///PKG/REST`
//!   (three slashes, as in some files) reads the same;
//! * `file:///ABS`: the absolute path;
//! * any other `scheme://`: [`MeshError::UnsupportedUri`];
//! * a relative path: relative to the URDF file's folder
//!   ([`MeshOptions::urdf_dir`]); an absolute path as it is.
//!
//! The file is read and scaled by `<mesh scale>` (default 1), and replaced
//! by its convex hull ([`crate::geometry::mesh`]), a
//! [`Shape::Polytope`](crate::geometry::Shape::Polytope) placed at the
//! collision `<origin>` composed with the hull's centre.

use std::path::{Path, PathBuf};

use crate::geometry::mesh::{Hull, MeshError, hull_of_file};

/// Where meshes are looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeshOptions {
    /// The URDF file's folder: relative mesh paths start there (empty: the
    /// current directory).
    pub urdf_dir: PathBuf,
    /// Folders that contain packages: `package://PKG/...` is looked up as
    /// `DIR/PKG/...` in each, in order.
    pub package_dirs: Vec<PathBuf>,
}

/// One mesh that cannot become a collision shape.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshFailure {
    /// The link of the `<collision>` element.
    pub link: String,
    /// The `filename` as written in the URDF.
    pub filename: String,
    /// Why.
    pub error: MeshError,
}

impl std::fmt::Display for MeshFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "link `{}`, mesh `{}`: {}",
            self.link, self.filename, self.error
        )
    }
}

/// The failures as one message: the count, then every one of them.
pub fn describe(failures: &[MeshFailure]) -> String {
    let n = failures.len();
    let shown: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    format!(
        "{n} collision mesh{} cannot be used: {}",
        if n == 1 { "" } else { "es" },
        shown.join("; ")
    )
}

/// The file a `<mesh filename>` names ([module docs](self)).
///
/// ```
/// use dualsim::dynamics::urdf_mesh::{resolve, MeshOptions};
/// let opts = MeshOptions { urdf_dir: "robots/arm".into(), package_dirs: vec![] };
/// assert_eq!(resolve("meshes/link.stl", &opts).unwrap(), std::path::Path::new("robots/arm/meshes/link.stl"));
/// assert!(resolve("package://arm/meshes/link.stl", &opts).is_err());
/// ```
pub fn resolve(filename: &str, opts: &MeshOptions) -> Result<PathBuf, MeshError> {
    if let Some(rest) = filename.strip_prefix("package://") {
        // `package:///PKG/...` (an empty authority) as Pinocchio reads it
        let rest = rest.trim_start_matches('/');
        let (package, tail) = rest.split_once('/').unwrap_or((rest, ""));
        return opts
            .package_dirs
            .iter()
            .find(|d| d.join(package).is_dir())
            .map(|d| d.join(package).join(tail))
            .ok_or_else(|| MeshError::UnresolvedPackage {
                package: package.to_string(),
                dirs: opts.package_dirs.clone(),
            });
    }
    if let Some(abs) = filename.strip_prefix("file://") {
        return Ok(PathBuf::from(abs));
    }
    if filename.contains("://") {
        return Err(MeshError::UnsupportedUri {
            uri: filename.to_string(),
        });
    }
    let p = Path::new(filename);
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        opts.urdf_dir.join(p)
    })
}

/// The convex hull of a `<mesh>` element's file, scaled.
pub fn mesh_hull(
    filename: &str,
    scale: Option<[f64; 3]>,
    opts: &MeshOptions,
) -> Result<Hull, MeshError> {
    let path = resolve(filename, opts)?;
    hull_of_file(&path, scale.unwrap_or([1.0; 3]))
}
