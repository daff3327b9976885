//! Scene files (TOML) → World. The contract is SCENE.md.
