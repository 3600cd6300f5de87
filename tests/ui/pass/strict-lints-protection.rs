//! `circuit`, `budget` and `attempt_timeout` expanded in a crate with the strictest common lints.
#![deny(warnings, unused_qualifications, missing_docs)]

use retry_kit::{retryable, CircuitBreaker, CircuitOpen, Classify, RetryBudget, TimedOut};
use std::sync::Arc;
use std::time::Duration;

/// The error.
#[derive(Debug, Classify)]
pub enum E {
    /// Retry it.
    #[classify(transient)]
    Busy,
    /// Refused by the breaker.
    #[classify(delegate)]
    Open(CircuitOpen),
    /// An attempt timed out.
    #[classify(delegate)]
    Timeout(TimedOut),
}

impl From<CircuitOpen> for E {
    fn from(open: CircuitOpen) -> Self {
        E::Open(open)
    }
}

impl From<TimedOut> for E {
    fn from(t: TimedOut) -> Self {
        E::Timeout(t)
    }
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10))
    .success_threshold(2)
    .half_open_max(3)
    .failure_ratio(0.5, Duration::from_secs(60), 20);
static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

mod shared {
    pub(crate) static BREAKER: retry_kit::CircuitBreaker =
        retry_kit::CircuitBreaker::new(1, std::time::Duration::from_secs(1));
}

async fn nap(_: Duration) {}

/// Everything together, async.
#[retryable(attempts = 4, idempotent, circuit = BREAKER, budget = BUDGET,
            attempt_timeout = "1.5s", crate = ::retry_kit)]
pub async fn all(x: &mut u32) -> Result<u32, E> {
    *x += 1;
    Ok(*x)
}

/// A breaker behind a module path, and a custom sleep timing the attempts.
#[retryable(circuit = shared::BREAKER, attempt_timeout = "20ms", sleep = nap)]
pub async fn pathed() -> Result<(), E> {
    Err(E::Busy)
}

/// Sync, with a breaker and a budget.
#[retryable(circuit = BREAKER, budget = BUDGET)]
pub fn sync_call() -> Result<(), E> {
    Err(E::Busy)
}

/// A generic error type with the bound spelled out.
#[retryable(circuit = BREAKER)]
pub fn generic<Err: Classify + From<CircuitOpen>>(e: fn() -> Err) -> Result<(), Err> {
    Err(e())
}

/// A breaker shared through an `Arc`.
pub fn arc(breaker: Arc<CircuitBreaker>) -> Result<(), E> {
    #[retryable(circuit = breaker)]
    fn inner(breaker: &Arc<CircuitBreaker>) -> Result<(), E> {
        let _ = breaker;
        Ok(())
    }
    inner(&breaker)
}

fn main() {
    let mut x = 0;
    let _ = all(&mut x);
    let _ = pathed();
    let _ = sync_call();
    let _ = generic(|| E::Busy);
    let _ = arc(Arc::new(CircuitBreaker::new(1, Duration::from_secs(1))));
}
