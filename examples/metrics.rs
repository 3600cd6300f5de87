//! Feeding `Failure` records to in-process metrics, without a metrics crate: the three numbers
//! worth watching about retries — attempts per call, success rate per attempt number, and time
//! spent retrying.
//!
//! A simulated dependency fails 35% of attempts with a transient error and 3% with a permanent
//! one. 2,000 calls run on tokio's paused clock (no real waiting) with a seeded jitter, so the
//! output is the same on every run:
//!
//! ```sh
//! cargo run --example metrics
//! ```
//!
//! The hook sees only failed attempts; the rest follows from counting calls. An attempt k+1 is
//! started exactly when the record of attempt k says `Next::Retry`, so
//! `started[1] = calls`, `started[k + 1] = retried[k]`, and
//! `succeeded[k] = started[k] - failed[k]`. Forward the same counters to Prometheus, StatsD or
//! OpenTelemetry from the hook in a real service.

use retry_kit::{Classify, Failure, Next, StopReason, retryable, testing};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Classify)]
enum QuoteError {
    #[classify(transient)]
    Unavailable,
    #[classify(permanent)]
    UnknownSymbol,
}

const MAX_ATTEMPTS: usize = 4;

/// The counters the hook fills: per attempt number (index 0 is attempt 1).
struct Metrics {
    failed: [AtomicU64; MAX_ATTEMPTS],
    retried: [AtomicU64; MAX_ATTEMPTS],
    waited_nanos: AtomicU64,
    stopped: Mutex<Vec<(StopReason, u64)>>,
}

static METRICS: Metrics = Metrics {
    failed: [const { AtomicU64::new(0) }; MAX_ATTEMPTS],
    retried: [const { AtomicU64::new(0) }; MAX_ATTEMPTS],
    waited_nanos: AtomicU64::new(0),
    stopped: Mutex::new(Vec::new()),
};

/// The `on_failure` hook: a few atomic increments per failed attempt.
fn observe(f: &Failure<'_, QuoteError>) {
    let k = (f.attempt as usize).clamp(1, MAX_ATTEMPTS) - 1;
    METRICS.failed[k].fetch_add(1, Ordering::Relaxed);
    match f.next {
        Next::Retry(delay) => {
            METRICS.retried[k].fetch_add(1, Ordering::Relaxed);
            let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
            METRICS.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
        Next::Stop(reason) => {
            let mut stopped = METRICS.stopped.lock().unwrap();
            match stopped.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => stopped.push((reason, 1)),
            }
        }
        _ => {}
    }
}

/// A dependency with a fixed, pseudo-random failure pattern (a 64-bit LCG).
static DRAWS: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);

fn draw() -> u64 {
    let next = DRAWS
        .load(Ordering::Relaxed)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    DRAWS.store(next, Ordering::Relaxed);
    (next >> 33) % 100
}

#[retryable(attempts = 4, backoff = "exponential", base = "100ms", jitter = "full", on_failure = observe)]
async fn quote(symbol: &str) -> Result<u64, QuoteError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    match draw() {
        0..=2 => Err(QuoteError::UnknownSymbol),
        3..=37 => Err(QuoteError::Unavailable),
        _ => Ok(symbol.len() as u64 * 100),
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    testing::seed_jitter(7);
    const CALLS: u64 = 2_000;
    let start = tokio::time::Instant::now();
    let mut ok = 0u64;
    for _ in 0..CALLS {
        if quote("ACME").await.is_ok() {
            ok += 1;
        }
    }
    let virtual_time = start.elapsed();

    let failed: Vec<u64> = METRICS
        .failed
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    let retried: Vec<u64> = METRICS
        .retried
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    let mut started = vec![CALLS];
    started.extend_from_slice(&retried[..MAX_ATTEMPTS - 1]);
    let attempts: u64 = started.iter().sum();

    println!("{CALLS} calls, {ok} succeeded, {} failed", CALLS - ok);
    println!();
    println!(
        "attempts per call: {:.3} on average ({attempts} attempts)",
        attempts as f64 / CALLS as f64
    );
    println!();
    println!("attempt  started  succeeded  failed  success rate");
    for k in 0..MAX_ATTEMPTS {
        let succeeded = started[k] - failed[k];
        let rate = if started[k] == 0 {
            0.0
        } else {
            100.0 * succeeded as f64 / started[k] as f64
        };
        println!(
            "{:>7}  {:>7}  {:>9}  {:>6}  {:>11.1}%",
            k + 1,
            started[k],
            succeeded,
            failed[k],
            rate
        );
    }
    println!();
    let waited = Duration::from_nanos(METRICS.waited_nanos.load(Ordering::Relaxed));
    println!(
        "time spent waiting to retry: {:.1} s in total, {:.1} ms per call ({:.1} s of virtual time overall)",
        waited.as_secs_f64(),
        waited.as_secs_f64() * 1000.0 / CALLS as f64,
        virtual_time.as_secs_f64()
    );
    println!();
    println!("why calls gave up:");
    let mut stopped = METRICS.stopped.lock().unwrap().clone();
    stopped.sort_by_key(|(r, _)| r.as_str());
    for (reason, n) in stopped {
        println!("  {reason:<20} {n}");
    }
}
