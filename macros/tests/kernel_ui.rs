//! `#[kernel]` rejects syntax outside the kernel language with an error that
//! points at the offending span (trybuild snapshots in `tests/ui/`). The
//! cases name `dualsim::Scalar` and `dualsim::kernel`: here `dualsim` is
//! the stub crate `ui-stub/` (a dev-dependency), so the UI tests do not
//! build the engine a second time.
//!
//! Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --release -p dualsim-macros --test kernel_ui`.

#[test]
fn kernel_ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
