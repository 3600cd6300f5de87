use retry_kit::{retryable, CircuitBreaker, Classify, RetryBudget};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

#[retryable(circuit = "BREAKER", budget = 3)]
fn quoted() -> Result<(), Busy> {
    Err(Busy)
}

#[retryable(circut = BREAKER, budgt = BUDGET)]
fn misspelled() -> Result<(), Busy> {
    Err(Busy)
}

#[retryable(attempt_timeout = "0s")]
async fn zero() -> Result<(), Busy> {
    Err(Busy)
}

#[retryable(attempt_timeout = 5)]
async fn unquoted() -> Result<(), Busy> {
    Err(Busy)
}

#[retryable(circuit = BREAKER, circuit = BREAKER)]
fn twice() -> Result<(), Busy> {
    Err(Busy)
}

fn main() {
    let _ = (quoted(), misspelled(), zero(), unquoted(), twice());
}
