use retry_kit::{retryable, CircuitBreaker, CircuitOpen, Classify, PerKey};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

impl From<CircuitOpen> for Busy {
    fn from(_: CircuitOpen) -> Self {
        Busy
    }
}

static HOSTS: PerKey<CircuitBreaker> = PerKey::new(CircuitBreaker::new(3, Duration::from_secs(10)));

// A `PerKey` without `key = ...` has nothing to choose by.
#[retryable(circuit = HOSTS)]
fn fetch(host: &str) -> Result<(), Busy> {
    let _ = host;
    Ok(())
}

fn main() {}
