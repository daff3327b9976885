//! Triangle meshes as convex collision shapes: a mesh file is read
//! (`mesh-loader`: STL binary and ASCII, Wavefront OBJ, Collada/DAE with
//! its `<unit>` and node transforms; a binary STL whose header starts with
//! `solid` is recognised by its size), scaled, and replaced by its convex
//! hull (parry's quickhull), as MuJoCo does with mesh geoms.
//!
//! The hull becomes a [`Shape::Polytope`] `{x : nᵢ · x ≤ bᵢ}`: one row per
//! face of the hull, the hull's triangles grouped into faces when their
//! unit normals agree to `1 − nᵢ·nⱼ ≤ 1e-9` and their planes to
//! `1e-9 · diameter` (a cube's 12 triangles give 6 faces). A face's normal is
//! the area-weighted mean of its triangles' normals and its offset the
//! largest `n · v` over the hull's vertices, so the polytope contains every
//! vertex. The polytope is expressed about the mean `c` of the hull's
//! vertices (an interior point): `bᵢ > 0`, as the conic collision program
//! needs (it scales shapes about their origin), and the shape is placed at
//! `c` in the mesh's frame ([`Hull::centre`]).
//!
//! A hull is refused ([`MeshError::Degenerate`]) when it has fewer than 4
//! vertices or is flat: its smallest distance from `c` to a face is below
//! `1e-6 · diameter`.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::geometry::Shape;
use crate::geometry::hull::HullMesh;
use crate::math::Vec3;

/// Why a mesh cannot be a collision shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The file does not exist.
    #[error("mesh file `{}` does not exist", path.display())]
    NotFound {
        /// The path tried.
        path: PathBuf,
    },
    /// A `package://PKG/...` URI whose package is in none of the package
    /// directories.
    #[error("package `{package}` is in none of the package directories {dirs:?}{}", if dirs.is_empty() { " (give `package_dirs` on the robot)" } else { "" })]
    UnresolvedPackage {
        /// The package name.
        package: String,
        /// The directories searched.
        dirs: Vec<PathBuf>,
    },
    /// A URI scheme other than `package://` and `file://`.
    #[error("URI scheme of `{uri}` is not supported (use a path, file:// or package://)")]
    UnsupportedUri {
        /// The filename as written.
        uri: String,
    },
    /// A file format no reader handles.
    #[error("mesh file `{}`: format `{extension}` is not supported (STL, OBJ and Collada/DAE are)", path.display())]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// Its extension.
        extension: String,
    },
    /// The reader failed (I/O or parse error).
    #[error("mesh file `{}` cannot be read: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The reader's message.
        message: String,
    },
    /// A `scale` with a zero or non-finite component.
    #[error("mesh scale {scale:?} must be finite and non-zero")]
    BadScale {
        /// The scale.
        scale: [f64; 3],
    },
    /// The convex hull is empty, flat or could not be computed.
    #[error("mesh file `{}`: {reason}", path.display())]
    Degenerate {
        /// The file.
        path: PathBuf,
        /// What is wrong (vertex count, thickness).
        reason: String,
    },
}

/// The convex hull of a mesh as a polytope about an interior point.
#[derive(Clone, Debug, PartialEq)]
pub struct Hull {
    /// Unit face normals, in the frame of [`Hull::centre`].
    pub normals: Vec<Vec3<f64>>,
    /// Face offsets (all > 0), in the frame of [`Hull::centre`].
    pub offsets: Vec<f64>,
    /// Hull vertices, in the frame of [`Hull::centre`].
    pub vertices: Vec<Vec3<f64>>,
    /// Mean of the hull's vertices in the mesh's frame: the polytope's origin.
    pub centre: Vec3<f64>,
    /// Vertices, faces and edges of the hull (about [`Hull::centre`]), kept
    /// in the polytope for the support-mapping pairs.
    pub mesh: Arc<HullMesh>,
}

impl Hull {
    /// The polytope `{x : nᵢ · x ≤ bᵢ}` (about [`Hull::centre`]).
    pub fn shape(&self) -> Shape<f64> {
        Shape::Polytope {
            normals: self.normals.clone(),
            offsets: self.offsets.clone(),
            hull: Some(self.mesh.clone()),
        }
    }
}

/// The vertices of every mesh of a file, scaled component-wise by
/// `scale`, in the file's frame (Collada: after its unit and node
/// transforms).
pub fn read_vertices(path: &Path, scale: [f64; 3]) -> Result<Vec<Vec3<f64>>, MeshError> {
    if scale.iter().any(|s| !s.is_finite() || *s == 0.0) {
        return Err(MeshError::BadScale { scale });
    }
    if !path.is_file() {
        return Err(MeshError::NotFound {
            path: path.to_path_buf(),
        });
    }
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if !matches!(extension.as_str(), "stl" | "obj" | "dae") {
        return Err(MeshError::UnsupportedFormat {
            path: path.to_path_buf(),
            extension,
        });
    }
    let read_error = |message: String| MeshError::Read {
        path: path.to_path_buf(),
        message,
    };
    let mut bytes = std::fs::read(path).map_err(|e| read_error(e.to_string()))?;
    if extension == "stl" && is_binary_stl(&bytes) {
        // a binary STL whose 80-byte header starts with "solid" (as many
        // exporters write) would be taken for ASCII: the header is free text
        bytes[..80].fill(0);
    }
    let scene = mesh_loader::Loader::default()
        .load_from_slice(&bytes, path)
        .map_err(|e| read_error(e.to_string()))?;
    let mut out = Vec::new();
    for m in &scene.meshes {
        for v in &m.vertices {
            let p = Vec3::new(
                v[0] as f64 * scale[0],
                v[1] as f64 * scale[1],
                v[2] as f64 * scale[2],
            );
            if p.iter().all(|x| x.is_finite()) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Whether `bytes` have the exact size of a binary STL: an 80-byte header,
/// a triangle count `n`, and `n` records of 50 bytes.
fn is_binary_stl(bytes: &[u8]) -> bool {
    bytes.len() >= 84 && {
        let n = u32::from_le_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]) as usize;
        bytes.len() == 84 + 50 * n
    }
}

/// Reads a mesh file and returns its scaled convex hull ([module docs](self)).
///
/// ```no_run
/// use dualsim::geometry::mesh::hull_of_file;
/// let hull = hull_of_file("foot.stl".as_ref(), [1.0; 3]).unwrap();
/// println!("{} faces about {:?}", hull.offsets.len(), hull.centre);
/// ```
pub fn hull_of_file(path: &Path, scale: [f64; 3]) -> Result<Hull, MeshError> {
    let points = read_vertices(path, scale)?;
    convex_hull(&points).map_err(|reason| MeshError::Degenerate {
        path: path.to_path_buf(),
        reason,
    })
}

/// The convex hull of a point set as a polytope about the mean of its
/// vertices; `Err(reason)` when it is empty or flat ([module docs](self)).
///
/// ```
/// use dualsim::geometry::mesh::convex_hull;
/// use dualsim::math::Vec3;
/// let cube: Vec<Vec3<f64>> = (0..8)
///     .map(|i| Vec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
///     .collect();
/// let hull = convex_hull(&cube).unwrap();
/// assert_eq!(hull.offsets.len(), 6);
/// assert!(hull.offsets.iter().all(|b| (b - 0.5).abs() < 1e-12));
/// assert!((hull.centre - Vec3::new(0.5, 0.5, 0.5)).norm() < 1e-12);
/// ```
pub fn convex_hull(points: &[Vec3<f64>]) -> Result<Hull, String> {
    use parry3d_f64::math::Vector as PVec;
    if points.len() < 4 {
        return Err(format!(
            "the convex hull is empty: {} vertices (at least 4 not in one plane are needed)",
            points.len()
        ));
    }
    let input: Vec<PVec> = points.iter().map(|p| PVec::new(p.x, p.y, p.z)).collect();
    let (verts, tris) = parry3d_f64::transformation::try_convex_hull(&input)
        .map_err(|e| format!("the convex hull cannot be computed ({e:?})"))?;
    let verts: Vec<Vec3<f64>> = verts.iter().map(|v| Vec3::new(v.x, v.y, v.z)).collect();
    if verts.len() < 4 || tris.len() < 4 {
        return Err(format!(
            "the convex hull is flat: {} vertices, {} triangles",
            verts.len(),
            tris.len()
        ));
    }
    let centre = verts.iter().sum::<Vec3<f64>>() / verts.len() as f64;
    let local: Vec<Vec3<f64>> = verts.iter().map(|v| v - centre).collect();
    let diameter = local.iter().map(|v| v.norm()).fold(0.0, f64::max) * 2.0;
    let (normals, offsets, face_of) = faces(&local, &tris, diameter);
    let thickness = offsets.iter().copied().fold(f64::INFINITY, f64::min);
    if normals.len() < 4 || !(thickness > 1e-6 * diameter) {
        return Err(format!(
            "the convex hull is flat: {} vertices, {} faces, its interior point lies {thickness:e} m \
             from a face (diameter {diameter:e} m)",
            verts.len(),
            normals.len()
        ));
    }
    let mesh = Arc::new(HullMesh::new(
        local.clone(),
        normals.clone(),
        offsets.clone(),
        &tris,
        &face_of,
    ));
    Ok(Hull {
        normals,
        offsets,
        vertices: local,
        centre,
        mesh,
    })
}

/// Groups the hull's triangles into faces (coplanar triangles merged):
/// unit normals and offsets, each offset the largest `n · v`, and the face
/// of each triangle (`u32::MAX`: none, zero area).
fn faces(
    verts: &[Vec3<f64>],
    tris: &[[u32; 3]],
    diameter: f64,
) -> (Vec<Vec3<f64>>, Vec<f64>, Vec<u32>) {
    // per face: area-weighted normal sum, a unit representative, its plane offset
    let mut groups: Vec<(Vec3<f64>, Vec3<f64>, f64)> = Vec::new();
    let mut face_of = Vec::with_capacity(tris.len());
    for t in tris {
        let [a, b, c] = t.map(|i| verts[i as usize]);
        let cross = (b - a).cross(&(c - a));
        let area2 = cross.norm();
        if !(area2 > 0.0) {
            face_of.push(u32::MAX);
            continue;
        }
        let n = cross / area2;
        let off = n.dot(&a);
        match groups
            .iter()
            .position(|(_, u, o)| 1.0 - u.dot(&n) <= 1e-9 && (o - off).abs() <= 1e-9 * diameter)
        {
            Some(g) => {
                groups[g].0 += cross;
                face_of.push(g as u32);
            }
            None => {
                face_of.push(groups.len() as u32);
                groups.push((cross, n, off));
            }
        }
    }
    let normals: Vec<Vec3<f64>> = groups.iter().map(|(s, _, _)| s.normalize()).collect();
    let offsets = normals
        .iter()
        .map(|n| {
            verts
                .iter()
                .map(|v| n.dot(v))
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    (normals, offsets, face_of)
}
