use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

// Hedged attempts run side by side; a sync function runs one at a time on its thread.
#[retryable(attempts = 3, idempotent, hedge = "50ms")]
fn read(key: &str) -> Result<usize, Unavailable> {
    Ok(key.len())
}

fn main() {
    let _ = read("k");
}
