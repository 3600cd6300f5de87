use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

// Two copies of a write running at once could both take effect.
#[retryable(attempts = 3, hedge = "50ms")]
async fn charge(account: &str) -> Result<usize, Unavailable> {
    Ok(account.len())
}

#[retryable(attempts = 3, idempotent = false, hedge = "50ms")]
async fn refund(account: &str) -> Result<usize, Unavailable> {
    Ok(account.len())
}

fn main() {
    let _ = charge("a");
    let _ = refund("a");
}
