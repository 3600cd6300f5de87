use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

// Words other retry libraries use: each error names the key that means the same here.
#[retryable(
    max_retries = 4,
    retries = n,
    max_attempts = 5,
    initial_delay = "100ms",
    max_backoff = "10s",
    cap = "10s",
    timeout = "2s",
    factor = 3.0,
    on_retry = log
)]
fn call() -> Result<(), Busy> {
    Ok(())
}

fn main() {}
