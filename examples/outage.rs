//! A 10-second outage seen from the dependency's side, three ways.
//!
//! 200 client tasks each make one call per second to a dependency that answers in 50 ms. From
//! t = 5 s to t = 15 s it is down: every request fails (fast, as an overloaded service's load
//! balancer would). Each call retries transient failures up to 4 attempts with exponential
//! backoff from 200 ms and full jitter. The program counts the requests the dependency
//! *received* in each second:
//!
//! - with no protection, every failed call sends up to three more requests: load multiplies
//!   exactly when the dependency can least take it;
//! - with a [`RetryBudget`] of 100 tokens refunding 0.1 per success, retries stop after about
//!   50 during the outage, so the load stays at the callers' own rate, and resume after it;
//! - with a [`CircuitBreaker`] (open after 20 consecutive failures, for 2 s, 3 probes to close),
//!   calls fail at once without a request while it is open: the dependency sees only probes.
//!
//! Everything runs on tokio's paused clock, so the 25 simulated seconds take a few milliseconds
//! and the output is the same on every run (the jitter is seeded).
//!
//! Run: `cargo run --example outage`.

use retry_kit::{CircuitBreaker, CircuitOpen, Classify, RetryBudget, retryable, testing};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

const TASKS: u64 = 200;
const SECONDS: usize = 25;
const OUTAGE: std::ops::Range<u64> = 5..15;
const LATENCY: Duration = Duration::from_millis(50);

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for ApiError {
    fn from(open: CircuitOpen) -> Self {
        ApiError::Open(open)
    }
}

/// The simulated dependency: counts the requests it receives per second.
struct Dependency {
    start: Instant,
    received: Mutex<[u64; SECONDS + 5]>,
}

impl Dependency {
    async fn request(&self) -> Result<(), ApiError> {
        let second = self.start.elapsed().as_secs();
        if let Some(count) = self.received.lock().unwrap().get_mut(second as usize) {
            *count += 1;
        }
        sleep(LATENCY).await;
        if OUTAGE.contains(&second) {
            Err(ApiError::Unavailable)
        } else {
            Ok(())
        }
    }
}

#[retryable(attempts = 4, base = "200ms", jitter = "full")]
async fn unprotected(dep: &Dependency) -> Result<(), ApiError> {
    dep.request().await
}

static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[retryable(attempts = 4, base = "200ms", jitter = "full", budget = BUDGET)]
async fn with_budget(dep: &Dependency) -> Result<(), ApiError> {
    dep.request().await
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(20, Duration::from_secs(2))
    .half_open_max(3)
    .success_threshold(3);

#[retryable(attempts = 4, base = "200ms", jitter = "full", circuit = BREAKER)]
async fn with_breaker(dep: &Dependency) -> Result<(), ApiError> {
    dep.request().await
}

#[derive(Clone, Copy)]
enum Protection {
    None,
    Budget,
    Breaker,
}

/// What one run measured.
struct Run {
    received: Vec<u64>,
    calls: u64,
    failed: u64,
}

/// Run the 200 clients for 25 simulated seconds on a fresh paused runtime.
fn simulate(protection: Protection) -> Run {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async move {
        testing::seed_jitter(2026);
        let dep = Arc::new(Dependency {
            start: Instant::now(),
            received: Mutex::new([0; SECONDS + 5]),
        });
        let outcomes = Arc::new(Mutex::new((0u64, 0u64)));
        let mut clients = Vec::new();
        for task in 0..TASKS {
            let dep = Arc::clone(&dep);
            let outcomes = Arc::clone(&outcomes);
            clients.push(tokio::spawn(async move {
                // Spread the clients over the second, then one call per second each, whether
                // or not the previous call has finished (open-loop arrivals).
                let phase = Duration::from_millis(task * 1000 / TASKS);
                let mut calls = Vec::new();
                for second in 0..SECONDS as u64 {
                    sleep_until(dep.start + Duration::from_secs(second) + phase).await;
                    let dep = Arc::clone(&dep);
                    let outcomes = Arc::clone(&outcomes);
                    calls.push(tokio::spawn(async move {
                        let result = match protection {
                            Protection::None => unprotected(&dep).await,
                            Protection::Budget => with_budget(&dep).await,
                            Protection::Breaker => with_breaker(&dep).await,
                        };
                        let mut o = outcomes.lock().unwrap();
                        o.0 += 1;
                        o.1 += u64::from(result.is_err());
                    }));
                }
                for call in calls {
                    call.await.expect("a call task");
                }
            }));
        }
        for client in clients {
            client.await.expect("a client task");
        }
        let received = dep.received.lock().unwrap()[..SECONDS].to_vec();
        let (calls, failed) = *outcomes.lock().unwrap();
        Run {
            received,
            calls,
            failed,
        }
    })
}

fn main() {
    let runs = [
        simulate(Protection::None),
        simulate(Protection::Budget),
        simulate(Protection::Breaker),
    ];
    println!(
        "Requests the dependency received per second: {TASKS} clients, 1 call/s each, \
         up to 4 attempts; down from t={}s to t={}s.",
        OUTAGE.start, OUTAGE.end
    );
    println!();
    println!("| second | no protection | retry budget | circuit breaker |");
    println!("| ---: | ---: | ---: | ---: |");
    for second in 0..SECONDS {
        let mark = if OUTAGE.contains(&(second as u64)) {
            " (down)"
        } else {
            ""
        };
        println!(
            "| {second}{mark} | {} | {} | {} |",
            runs[0].received[second], runs[1].received[second], runs[2].received[second]
        );
    }
    let during = |run: &Run| -> u64 {
        run.received[OUTAGE.start as usize..OUTAGE.end as usize]
            .iter()
            .sum()
    };
    let total = |run: &Run| -> u64 { run.received.iter().sum() };
    println!(
        "| requests during the outage | {} | {} | {} |",
        during(&runs[0]),
        during(&runs[1]),
        during(&runs[2])
    );
    println!(
        "| requests in all | {} | {} | {} |",
        total(&runs[0]),
        total(&runs[1]),
        total(&runs[2])
    );
    println!(
        "| calls that failed (of {}) | {} | {} | {} |",
        runs[0].calls, runs[0].failed, runs[1].failed, runs[2].failed
    );
}
