//! The scene parser on arbitrary bytes: a scene that loads is simulated
//! for at most two steps. Bad input must be a typed error (a `SceneError`
//! or a failed step), never a panic, and a successful step never yields a
//! non-finite state.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    // A file name in the examples directory, so that `urdf = "arm7.urdf"`
    // and the other example robots resolve.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/scenes/fuzz-input.toml");
    let Ok(mut scene) = dualsim::scene::parse(src, file) else { return };
    scene.steps = scene.steps.min(2);
    if let Ok(traj) = dualsim::sim::rollout(&scene.world, &scene.initial, &scene.controls, scene.steps) {
        assert!(traj.states.iter().all(|x| x.is_finite()), "a successful rollout with a non-finite state");
    }
});
