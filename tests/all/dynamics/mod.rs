//! Articulated and free-body dynamics, URDF robots.

mod articulated;
mod robots;
mod real_robots;
mod robots_floating;
mod urdf_meshes;
