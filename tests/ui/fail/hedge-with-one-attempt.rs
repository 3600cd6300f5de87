use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

// One attempt in all: the hedge could never start.
#[retryable(attempts = 1, idempotent, hedge = "50ms")]
async fn read(key: &str) -> Result<usize, Unavailable> {
    Ok(key.len())
}

fn main() {
    let _ = read("a");
}
