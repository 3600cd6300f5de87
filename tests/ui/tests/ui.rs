//! Compile-time diagnostics and warning-free expansions, checked with trybuild.
//!
//! `tests/ui/fail/*.rs` must fail to compile with exactly the committed `.stderr`;
//! `tests/ui/pass/*.rs` must compile (most under `#![deny(warnings, unused_qualifications)]`).
//! Paths here are relative to this crate, `tests/ui/`. Regenerate snapshots with
//! `TRYBUILD=overwrite cargo test -p retry-kit-ui --all-features` and read every diff.
//!
//! A few diagnostics list every type that implements `Classify`, a list the optional
//! integrations extend; those cases live in `tests/ui/fail-all-features/` and are checked with
//! every feature on, as the README's test command runs them. The tower layers' cases live in
//! `tests/ui/fail-tower/` and are checked with the `tower` feature on.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
    if cfg!(all(
        feature = "http",
        feature = "reqwest",
        feature = "tonic",
        feature = "tracing",
        feature = "tower"
    )) {
        t.compile_fail("fail-all-features/*.rs");
    }
    if cfg!(feature = "tower") {
        t.compile_fail("fail-tower/*.rs");
    }
}
