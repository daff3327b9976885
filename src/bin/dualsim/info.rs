//! `dualsim info SCENE [--json]` (reference: docs/scene-format.md).

use std::path::Path;
use std::process::ExitCode;

/// Loads the scene and prints its description ([`dualsim::scene::info`]).
pub fn info(path: &Path, json: bool) -> ExitCode {
    let scene = match super::load_scene(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let doc = dualsim::scene::info::info(&scene);
    if json {
        println!("{}", serde_json::to_string(&doc).expect("info serializes"));
    } else {
        print!("{}", dualsim::scene::info::text(&doc));
    }
    ExitCode::SUCCESS
}
