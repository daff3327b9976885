//! The vertex, face and edge structure of a convex polytope, kept beside
//! its half-spaces `{x : nᵢ · x ≤ bᵢ}` so that pairs with a hull can be
//! collided by support mapping instead of the conic program
//! ([`collision::hull_plane`](crate::collision::hull_plane),
//! [`collision::hull_hull`](crate::collision::hull_hull)).
//!
//! A [`HullMesh`] is built once, when a mesh becomes its convex hull
//! ([`mesh::convex_hull`](super::mesh::convex_hull)), from the hull's
//! vertices and the triangles of each face; it is `f64` data shared by
//! every scalar (a [`Shape::cast`](super::Shape::cast) keeps the same
//! `Arc`). Face `f` of the mesh is row `f` of the polytope's `normals` and
//! `offsets`. Each face's vertices are ordered counter-clockwise about its
//! outward normal; its edges are the pairs of consecutive vertices, each
//! edge listed once with its two faces.

use crate::math::Vec3;

/// Vertices, faces and edges of a convex polytope ([module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct HullMesh {
    /// Vertices, in the polytope's frame.
    pub vertices: Vec<Vec3<f64>>,
    /// Unit outward face normals (the polytope's `normals`, in `f64`).
    pub normals: Vec<Vec3<f64>>,
    /// Face offsets (the polytope's `offsets`).
    pub offsets: Vec<f64>,
    /// Start of each face's vertex list in `face_vertices` (one more entry
    /// than faces).
    pub face_start: Vec<u32>,
    /// Vertex indices of the faces, counter-clockwise about each normal.
    pub face_vertices: Vec<u32>,
    /// Edges as vertex pairs (smaller index first).
    pub edges: Vec<[u32; 2]>,
    /// The two faces of each edge.
    pub edge_faces: Vec<[u32; 2]>,
    /// Start of each vertex's face list in `vertex_faces`.
    pub vertex_face_start: Vec<u32>,
    /// Faces incident to each vertex.
    pub vertex_faces: Vec<u32>,
    /// Start of each vertex's neighbour list in `vertex_neighbours`.
    pub vertex_neighbour_start: Vec<u32>,
    /// Vertices joined to each vertex by an edge.
    pub vertex_neighbours: Vec<u32>,
    /// Largest vertex norm (a ball about the origin containing the hull).
    pub radius: f64,
}

impl HullMesh {
    /// The structure of the hull with `vertices` whose face `f` (unit
    /// outward normal `normals[f]`, offset `offsets[f]`) is the union of
    /// the triangles `triangles[k]` with `face_of[k] == f` (triangles with
    /// no face, `face_of[k] == u32::MAX`, e.g. of zero area, are ignored).
    ///
    /// ```
    /// use dualsim::geometry::mesh::convex_hull;
    /// use dualsim::math::Vec3;
    /// let cube: Vec<Vec3<f64>> = (0..8)
    ///     .map(|i| Vec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
    ///     .collect();
    /// let mesh = convex_hull(&cube).unwrap().mesh;
    /// assert_eq!((mesh.vertices.len(), mesh.edges.len()), (8, 12));
    /// assert!((0..6).all(|f| mesh.face(f).len() == 4));
    /// ```
    pub fn new(
        vertices: Vec<Vec3<f64>>,
        normals: Vec<Vec3<f64>>,
        offsets: Vec<f64>,
        triangles: &[[u32; 3]],
        face_of: &[u32],
    ) -> Self {
        let nf = normals.len();
        let mut per_face: Vec<Vec<u32>> = vec![Vec::new(); nf];
        for (t, &f) in triangles.iter().zip(face_of) {
            if (f as usize) < nf {
                per_face[f as usize].extend_from_slice(t);
            }
        }
        let mut face_start = vec![0u32];
        let mut face_vertices = Vec::new();
        for (f, vs) in per_face.iter_mut().enumerate() {
            vs.sort_unstable();
            vs.dedup();
            let n = normals[f];
            let u = perpendicular(&n);
            let w = n.cross(&u);
            let pts: Vec<(f64, f64, u32)> = vs
                .iter()
                .map(|&v| {
                    let x = vertices[v as usize];
                    (x.dot(&u), x.dot(&w), v)
                })
                .collect();
            *vs = convex_polygon(pts);
            face_vertices.extend_from_slice(vs);
            face_start.push(face_vertices.len() as u32);
        }
        let mut edge_list: Vec<([u32; 2], u32)> = Vec::new();
        for f in 0..nf {
            let vs = &face_vertices[face_start[f] as usize..face_start[f + 1] as usize];
            for k in 0..vs.len() {
                let (a, b) = (vs[k], vs[(k + 1) % vs.len()]);
                edge_list.push(([a.min(b), a.max(b)], f as u32));
            }
        }
        edge_list.sort_unstable();
        let mut edges = Vec::new();
        let mut edge_faces = Vec::new();
        let mut k = 0;
        while k < edge_list.len() {
            let (e, f0) = edge_list[k];
            let f1 = match edge_list.get(k + 1) {
                Some(&(e1, f1)) if e1 == e => {
                    k += 1;
                    f1
                }
                _ => f0,
            };
            edges.push(e);
            edge_faces.push([f0, f1]);
            k += 1;
        }
        let mut vf: Vec<Vec<u32>> = vec![Vec::new(); vertices.len()];
        for f in 0..nf {
            for &v in &face_vertices[face_start[f] as usize..face_start[f + 1] as usize] {
                vf[v as usize].push(f as u32);
            }
        }
        let mut vertex_face_start = vec![0u32];
        let mut vertex_faces = Vec::new();
        for l in &vf {
            vertex_faces.extend_from_slice(l);
            vertex_face_start.push(vertex_faces.len() as u32);
        }
        let mut nb: Vec<Vec<u32>> = vec![Vec::new(); vertices.len()];
        for &[i, j] in &edges {
            nb[i as usize].push(j);
            nb[j as usize].push(i);
        }
        let mut vertex_neighbour_start = vec![0u32];
        let mut vertex_neighbours = Vec::new();
        for l in &nb {
            vertex_neighbours.extend_from_slice(l);
            vertex_neighbour_start.push(vertex_neighbours.len() as u32);
        }
        let radius = vertices.iter().map(|v| v.norm()).fold(0.0, f64::max);
        HullMesh {
            vertices,
            normals,
            offsets,
            face_start,
            face_vertices,
            edges,
            edge_faces,
            vertex_face_start,
            vertex_faces,
            vertex_neighbour_start,
            vertex_neighbours,
            radius,
        }
    }

    /// Vertex indices of face `f`, counter-clockwise about its normal.
    pub fn face(&self, f: usize) -> &[u32] {
        &self.face_vertices[self.face_start[f] as usize..self.face_start[f + 1] as usize]
    }

    /// Faces incident to vertex `v`.
    pub fn faces_of_vertex(&self, v: usize) -> &[u32] {
        &self.vertex_faces
            [self.vertex_face_start[v] as usize..self.vertex_face_start[v + 1] as usize]
    }

    /// The vertex farthest along `dir` by hill climbing over the edges
    /// from vertex `start` (on a convex polytope a vertex with no better
    /// neighbour is a farthest one), and its support value `dir · v`.
    pub fn support_from(&self, dir: &Vec3<f64>, start: usize) -> (usize, f64) {
        let mut k = start.min(self.vertices.len().saturating_sub(1));
        let mut s = self.vertices[k].dot(dir);
        loop {
            let mut moved = false;
            let a = self.vertex_neighbour_start[k] as usize;
            let b = self.vertex_neighbour_start[k + 1] as usize;
            for &j in &self.vertex_neighbours[a..b] {
                let t = self.vertices[j as usize].dot(dir);
                if t > s {
                    (k, s, moved) = (j as usize, t, true);
                }
            }
            if !moved {
                return (k, s);
            }
        }
    }

    /// The vertex farthest along `dir` (the first of equals) and its
    /// support value `dir · v`.
    pub fn support(&self, dir: &Vec3<f64>) -> (usize, f64) {
        let mut best = (0, f64::NEG_INFINITY);
        for (k, v) in self.vertices.iter().enumerate() {
            let s = v.dot(dir);
            if s > best.1 {
                best = (k, s);
            }
        }
        best
    }
}

/// A unit vector perpendicular to the unit vector `n`.
fn perpendicular(n: &Vec3<f64>) -> Vec3<f64> {
    let a = n.map(f64::abs);
    let axis = if a.x <= a.y && a.x <= a.z {
        Vec3::x()
    } else if a.y <= a.z {
        Vec3::y()
    } else {
        Vec3::z()
    };
    n.cross(&axis).normalize()
}

/// The corners of the convex hull of planar points `(x, y, id)`,
/// counter-clockwise (Andrew's monotone chain; points on the boundary
/// between corners and interior points dropped).
fn convex_polygon(mut pts: Vec<(f64, f64, u32)>) -> Vec<u32> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    if pts.len() < 3 {
        return pts.iter().map(|p| p.2).collect();
    }
    let cross = |o: &(f64, f64, u32), a: &(f64, f64, u32), b: &(f64, f64, u32)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut out: Vec<(f64, f64, u32)> = Vec::with_capacity(2 * pts.len());
    for pass in 0..2 {
        let start = out.len();
        let iter: Box<dyn Iterator<Item = &(f64, f64, u32)>> = if pass == 0 {
            Box::new(pts.iter())
        } else {
            Box::new(pts.iter().rev())
        };
        for p in iter {
            while out.len() >= start + 2
                && cross(&out[out.len() - 2], &out[out.len() - 1], p) <= 0.0
            {
                out.pop();
            }
            out.push(*p);
        }
        out.pop();
    }
    out.iter().map(|p| p.2).collect()
}
