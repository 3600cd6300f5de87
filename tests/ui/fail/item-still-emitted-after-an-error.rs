use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(atempts = 3)]
fn f() -> Result<u32, E> { Ok(1) }

fn uses_f() -> u32 {
    // Only the key above is reported: `f` still exists with its signature.
    f().unwrap_or(0)
}

fn main() {}
