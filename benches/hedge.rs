//! What hedging costs: a hedged call whose first attempt answers at once (the hedge never
//! fires) against the same call without `hedge`, and a call whose hedge fires and wins, on
//! tokio's paused clock. Prints the allocations per call first (a counting allocator), then
//! criterion's timings.
//!
//! `cargo bench -p retry-kit-benches --bench hedge`

// The shared cases module, for its error type and its runtime helpers only.
#[allow(unused_macros)]
mod cases;

use cases::{BenchError, paused_runtime, poll_ready};
use criterion::{Criterion, criterion_group, criterion_main};
use retry_kit::{current_attempt, retryable};
use std::hint::black_box;
use std::pin::pin;
use std::time::Duration;

mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

#[retryable(attempts = 3, base = "0ms", jitter = "none", idempotent)]
async fn plain(x: u64) -> Result<u64, BenchError> {
    Ok(black_box(x))
}

#[retryable(
    attempts = 3,
    base = "0ms",
    jitter = "none",
    idempotent,
    hedge = "50ms"
)]
async fn hedged(x: u64) -> Result<u64, BenchError> {
    Ok(black_box(x))
}

/// The first attempt stalls for a second; the hedge, 50 ms later, answers at once.
#[retryable(
    attempts = 3,
    base = "0ms",
    jitter = "none",
    idempotent,
    hedge = "50ms"
)]
async fn hedge_wins(x: u64) -> Result<u64, BenchError> {
    if current_attempt().map(|a| a.number()) == Some(1) {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(black_box(x))
}

fn allocations(f: impl Fn()) -> f64 {
    f();
    let before = counting::allocations();
    for _ in 0..1000 {
        f();
    }
    (counting::allocations() - before) as f64 / 1000.0
}

fn hedge(c: &mut Criterion) {
    let rt = paused_runtime();
    let _in_runtime = rt.enter();
    println!("allocations per call:");
    println!(
        "  success, no hedge: {}",
        allocations(|| drop(poll_ready(pin!(plain(1)))))
    );
    println!(
        "  success, hedged (not fired): {}",
        allocations(|| drop(poll_ready(pin!(hedged(1)))))
    );
    println!(
        "  hedge fires and wins: {}",
        allocations(|| drop(rt.block_on(hedge_wins(1))))
    );
    let mut group = c.benchmark_group("hedge");
    group.bench_function("success/plain", |b| {
        b.iter(|| black_box(poll_ready(pin!(plain(black_box(1))))))
    });
    group.bench_function("success/hedged", |b| {
        b.iter(|| black_box(poll_ready(pin!(hedged(black_box(1))))))
    });
    group.bench_function("hedge_wins", |b| {
        b.iter(|| black_box(rt.block_on(hedge_wins(black_box(1)))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots();
    targets = hedge
}
criterion_main!(benches);
