//! Experiment harnesses that drive whole simulations (a layer above `sim`):
//! the Silico drop studies ([`silico`]), run by `examples/silico_robustness.rs`,
//! `benches/silico.rs` and `tests/all/contact/silico.rs`.

pub mod silico;
