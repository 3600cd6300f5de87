use retry_kit::{retryable, Classify, RetryPolicy};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

// The policy is idempotent, but the attribute cannot read that when it expands: it asks for
// `idempotent` beside `policy`.
const READS: RetryPolicy = RetryPolicy::new().attempts(3).idempotent(true);

#[retryable(policy = READS, hedge = "50ms")]
async fn read(key: &str) -> Result<usize, Unavailable> {
    Ok(key.len())
}

fn main() {
    let _ = read("a");
}
