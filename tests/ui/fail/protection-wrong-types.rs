use retry_kit::{retryable, CircuitBreaker, CircuitOpen, Classify, RetryBudget};
use std::time::Duration;

#[derive(Debug, Classify)]
enum E {
    #[classify(transient)]
    Busy,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for E {
    fn from(open: CircuitOpen) -> Self {
        E::Open(open)
    }
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);
static LIMIT: u32 = 3;

// The two statics swapped, and a number where a breaker belongs.
#[retryable(circuit = BUDGET, budget = BREAKER)]
fn swapped() -> Result<(), E> {
    Err(E::Busy)
}

#[retryable(circuit = LIMIT)]
fn number() -> Result<(), E> {
    Err(E::Busy)
}

fn main() {
    let _ = (swapped(), number());
}
