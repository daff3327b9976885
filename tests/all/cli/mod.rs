//! The command line, the docs and the repository.

mod commands;
mod docs;
mod repo;
mod viewer_browser;
