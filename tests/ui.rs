//! Compile-time diagnostics and warning-free expansions, checked with trybuild.
//!
//! `tests/ui/fail/*.rs` must fail to compile with exactly the committed `.stderr`;
//! `tests/ui/pass/*.rs` must compile (most under `#![deny(warnings, unused_qualifications)]`).
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test --test ui` and read every diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
