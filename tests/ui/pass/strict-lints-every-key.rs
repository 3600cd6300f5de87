//! Every key of the foundation, expanded in a crate with the strictest common lints.
#![deny(warnings, unused_qualifications, missing_docs)]

use retry_kit::{retryable, Classify, ErrorClass, Failure};
use std::time::Duration;

/// The error.
#[derive(Debug, Classify)]
pub enum E {
    /// Retry it.
    #[classify(transient)]
    Busy,
}

fn class(_: &E) -> ErrorClass {
    ErrorClass::Transient
}

fn wait(_: &E) -> Option<Duration> {
    None
}

fn hook(_: &Failure<'_, E>) {}

async fn nap(_: Duration) {}

/// Every shape key.
#[retryable(attempts = 4, backoff = "exponential", base = "250ms", multiplier = 1.5,
            max_delay = "2s", jitter = "equal", deadline = "10s", idempotent,
            nested = "once", on_failure = hook, classify = class, retry_after = wait,
            crate = ::retry_kit)]
pub fn sync_all() -> Result<(), E> {
    Ok(())
}

/// Async with a custom sleep.
#[retryable(attempts = 2, backoff = "linear", base = "1s", jitter = "decorrelated", sleep = nap)]
pub async fn async_all(x: &mut u32) -> Result<u32, E> {
    *x += 1;
    Ok(*x)
}

const SHARED: retry_kit::RetryPolicy = retry_kit::RetryPolicy::fixed(Duration::from_millis(5));

/// A shared policy.
#[retryable(policy = SHARED, idempotent = true)]
pub fn with_policy() -> Result<(), E> {
    Err(E::Busy)
}

fn main() {
    let _ = sync_all();
    let _ = with_policy();
    let mut x = 0;
    let _ = async_all(&mut x);
}
