use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

// A closure that counts its calls holds state, so it is not `Copy` unless its bounds say so:
// each attempt would need a clone of it. The error names only what the user can write (rustc
// suggested `impl FnMut() -> u32 + FreshPerAttempt<count::{closure#0}::next>`).
#[retryable(attempts = 3)]
fn count(mut next: impl FnMut() -> u32) -> Result<u32, Busy> {
    Ok(next())
}

// The same with a named type parameter (rustc suggested `F: FnMut() -> u32 + FreshPerAttempt<..>`).
#[retryable(attempts = 3)]
fn count_generic<F: FnMut() -> u32>(mut tick: F) -> Result<u32, Busy> {
    Ok(tick())
}

fn main() {
    let mut n = 0;
    let _ = count(move || {
        n += 1;
        n
    });
    let _ = count_generic(move || {
        n += 1;
        n
    });
}
