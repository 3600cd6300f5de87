use retry_kit::{retryable, CircuitBreaker, CircuitOpen, Classify, RetryBudget};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

impl From<CircuitOpen> for Busy {
    fn from(_: CircuitOpen) -> Self {
        Busy
    }
}

static ONE: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(10));

// `key` with a single breaker: it needs a `PerKey` to pick from.
#[retryable(circuit = ONE, key = host)]
fn fetch(host: &str) -> Result<(), Busy> {
    let _ = host;
    Ok(())
}

// `key` with nothing to pick from.
#[retryable(key = host)]
fn plain(host: &str) -> Result<(), Busy> {
    let _ = host;
    Ok(())
}

static GLOBAL: RetryBudget = RetryBudget::new(10, 0.1);

// `key` beside a breaker and a budget that are both shared by every key.
#[retryable(circuit = ONE, budget = GLOBAL, key = host)]
fn both_shared(host: &str) -> Result<(), Busy> {
    let _ = host;
    Ok(())
}

fn main() {}
