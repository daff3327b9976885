//! The contact layer and its backends.

mod bilevel_face;
mod ccd_boundary;
mod convex_solver;
mod implicit_ncp_flat_valley;
mod implicit_ncp_redundant;
mod implicit_ncp_solver;
mod ipm;
mod ipm_continuation;
mod ipm_pairs;
mod ipm_sparse;
mod jade_two_ball;
mod lcp;
mod lcp_bounce;
mod lcp_pile;
mod lcp_scenes;
mod lcp_solver;
mod mesh_hulls;
mod robots_contact;
mod silico;
mod soft;
mod soft_prune;
mod soft_robots;
mod todorov;
