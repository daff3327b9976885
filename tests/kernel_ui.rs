//! `#[kernel]` rejects syntax outside the kernel language with an error that
//! points at the offending span (trybuild snapshots in `tests/ui/`).
//!
//! Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --release --test kernel_ui`.

#[test]
fn kernel_ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
