//! Articulated and free-body dynamics, URDF robots.

mod articulated;
mod real_robots;
mod robots;
mod robots_floating;
mod urdf_meshes;
