//! Placeholder replaced in the next commit.
fn main() {}
