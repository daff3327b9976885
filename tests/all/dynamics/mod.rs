//! Articulated and free-body dynamics, URDF robots.

mod articulated;
mod robots;
mod robots_floating;
mod urdf_meshes;
