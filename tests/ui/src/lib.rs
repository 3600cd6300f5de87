//! Nothing here: this crate exists to run `tests/ui.rs`, retry-kit's trybuild cases, with only
//! the dependencies the cases use (trybuild copies them all into its scratch project).
//!
//! `cargo test -p retry-kit-ui` checks `pass/` and `fail/`; with `--all-features` (as the
//! README's `cargo test --workspace --all-features` runs it) also `fail-all-features/`, and with
//! `--features tower` also `fail-tower/`.
