use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

static LIMIT: u32 = 5;

#[retryable(adaptive = LIMIT)]
fn not_a_policy() -> Result<(), Busy> {
    Ok(())
}

#[retryable(adaptive = "ADAPT")]
fn quoted() -> Result<(), Busy> {
    Ok(())
}

fn main() {
    let _ = not_a_policy();
    let _ = quoted();
}
