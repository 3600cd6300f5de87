//! What the shared protection costs per call: the circuit breaker's admission and outcome
//! record, and the retry budget's check, charge and refund, on one thread and with a second
//! thread doing the same to the same `static` at the same time.
//!
//! Run: `cargo bench -p retry-kit-benches --bench protection`. The table in benches/README.md comes
//! from this bench.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_kit::{CircuitBreaker, PerKey, RetryBudget};
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static CLOSED: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30));
static OPEN: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(3600));
static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
static CHURN: RetryBudget = RetryBudget::new(100, 1.0);

static WORD: AtomicU64 = AtomicU64::new(0);

static HOSTS: PerKey<CircuitBreaker> = PerKey::new(CircuitBreaker::new(5, Duration::from_secs(30)));

/// A `PerKey` lookup of a key it holds (one of 64, found by a scan under its lock), then a call
/// through that key's closed breaker: what `circuit = HOSTS, key = host` adds per call.
fn per_key_lookup_and_call() {
    let breaker = black_box(&HOSTS).get(black_box("api-17.example"));
    if let Ok(permit) = breaker.try_acquire() {
        permit.succeeded();
    }
}

/// For scale: one relaxed load of a shared atomic, the least any shared check can cost.
fn baseline_atomic_load() {
    black_box(black_box(&WORD).load(Ordering::Relaxed));
}

/// One call through a closed breaker: admission, then a success recorded.
fn breaker_closed_call() {
    if let Ok(permit) = black_box(&CLOSED).try_acquire() {
        permit.succeeded();
    }
}

/// One call refused by an open breaker (reads the clock for the time left).
fn breaker_open_refusal() {
    black_box(black_box(&OPEN).try_acquire().is_err());
}

/// The check before a retry.
fn budget_check() {
    black_box(black_box(&BUDGET).allows_retry());
}

/// A success refunded to a full bucket (the steady state of a healthy dependency).
fn budget_success_full() {
    black_box(&BUDGET).record_success();
}

/// A failure charged and a success refunded: two compare-and-swaps on the same word.
fn budget_churn() {
    let b = black_box(&CHURN);
    b.record_failure();
    b.record_success();
}

const CASES: &[(&str, fn())] = &[
    ("baseline_atomic_load", baseline_atomic_load),
    ("breaker_closed_call", breaker_closed_call),
    ("breaker_open_refusal", breaker_open_refusal),
    ("budget_check", budget_check),
    ("budget_success_full", budget_success_full),
    ("budget_failure_then_success", budget_churn),
    ("per_key_lookup_and_closed_call", per_key_lookup_and_call),
];

/// Fill `HOSTS` with 64 keys, so that a lookup scans a full table.
fn fill_hosts() {
    for i in 0..64 {
        let _ = HOSTS.get(&format!("api-{i}.example"));
    }
}

fn uncontended(c: &mut Criterion) {
    OPEN.try_acquire().map(|p| p.failed()).ok();
    fill_hosts();
    let mut group = c.benchmark_group("uncontended");
    for (name, op) in CASES {
        group.bench_function(*name, |b| b.iter(op));
    }
    group.finish();
}

/// Time `iters` calls on this thread while a second thread makes `iters` calls of its own to
/// the same static, both released by one barrier.
fn two_threads(c: &mut Criterion) {
    OPEN.try_acquire().map(|p| p.failed()).ok();
    fill_hosts();
    let mut group = c.benchmark_group("two_threads");
    for (name, op) in CASES {
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| {
                let barrier = Barrier::new(2);
                std::thread::scope(|s| {
                    s.spawn(|| {
                        barrier.wait();
                        for _ in 0..iters {
                            op();
                        }
                    });
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        op();
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, uncontended, two_threads);
criterion_main!(benches);
