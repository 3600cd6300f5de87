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

struct Endpoint {
    port: u16,
}

#[retryable(circuit = HOSTS, key = endpoint)]
fn fetch(endpoint: &Endpoint) -> Result<u16, Busy> {
    Ok(endpoint.port)
}

fn main() {}
