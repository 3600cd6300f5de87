//! The first program to read: a flaky call recovering, a permanent error stopping at once, and
//! the per-attempt records an operator needs (attempt, error class, next action).
//!
//! Run it with `cargo run --example quickstart`. It sleeps for real, about a second in all.

use retry_kit::{Classify, Failure, Next, current_attempt, retryable};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// What can go wrong when we talk to the inventory service.
#[derive(Debug, Classify)]
enum InventoryError {
    /// The connection dropped: a second attempt may well succeed.
    #[classify(transient)]
    ConnectionReset,
    /// The service is shedding load and says when to come back.
    #[classify(transient)]
    Throttled {
        #[classify(retry_after)]
        wait: Duration,
    },
    /// The request itself is wrong: repeating it cannot help.
    #[classify(permanent)]
    UnknownSku(String),
}

impl std::fmt::Display for InventoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InventoryError::ConnectionReset => write!(f, "connection reset"),
            InventoryError::Throttled { wait } => write!(f, "throttled for {wait:?}"),
            InventoryError::UnknownSku(sku) => write!(f, "unknown SKU {sku:?}"),
        }
    }
}

/// Print every failed attempt with what happens next.
fn log_failure(f: &Failure<'_, InventoryError>) {
    let next = match f.next {
        Next::Retry(delay) => format!("retrying in {} ms", delay.as_millis()),
        Next::Stop(reason) => format!("giving up ({reason})"),
        _ => "unknown".to_string(),
    };
    println!(
        "  attempt {} failed after {:>4} ms: {} [{}], {next}",
        f.attempt,
        f.elapsed.as_millis(),
        f.error,
        f.class,
    );
}

static CALLS: AtomicU32 = AtomicU32::new(0);

/// A flaky service: resets, then throttles, then answers.
#[retryable(attempts = 5, base = "50ms", max_delay = "1s", jitter = "equal", deadline = "5s",
            on_failure = log_failure)]
async fn stock_level(sku: &str) -> Result<u32, InventoryError> {
    let attempt = current_attempt().expect("inside a retryable call");
    println!(
        "  -> attempt {} for {sku} (idempotency key {})",
        attempt.number(),
        attempt.idempotency_key()
    );
    if sku.starts_with("X-") {
        return Err(InventoryError::UnknownSku(sku.to_string()));
    }
    match CALLS.fetch_add(1, Ordering::Relaxed) {
        0 | 1 => Err(InventoryError::ConnectionReset),
        2 => Err(InventoryError::Throttled {
            wait: Duration::from_millis(300),
        }),
        _ => Ok(42),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("A transient outage recovers:");
    match stock_level("SKU-1").await {
        Ok(n) => println!("  => {n} in stock\n"),
        Err(e) => println!("  => failed: {e}\n"),
    }

    println!("A permanent error stops at once:");
    match stock_level("X-404").await {
        Ok(n) => println!("  => {n} in stock"),
        Err(e) => println!("  => failed: {e}"),
    }
}
