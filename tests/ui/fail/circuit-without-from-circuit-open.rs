use retry_kit::{retryable, CircuitBreaker, Classify};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));

// `Busy` cannot hold the refusal of a first attempt.
#[retryable(circuit = BREAKER)]
fn fetch() -> Result<(), Busy> {
    Err(Busy)
}

// Generic error types need the bound spelled out.
#[retryable(circuit = BREAKER)]
fn generic<E: Classify>(e: fn() -> E) -> Result<(), E> {
    Err(e())
}

fn main() {
    let _ = fetch();
    let _ = generic(|| Busy);
}
