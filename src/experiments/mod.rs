//! Experiment harnesses that drive whole simulations (a layer above `sim`):
//! the Silico drop studies ([`silico`]), run by `examples/silico_robustness.rs`,
//! `benches/silico.rs` and `tests/contact_silico.rs`.

pub mod silico;
