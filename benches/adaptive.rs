//! The cost of the adaptive window: recording one attempt from 1 and from 2 threads at once
//! (against the same ring behind a mutex, the obvious alternative), reading the statistics, and
//! the tuning a call does at its start.
//!
//! Run with `cargo bench -p retry-kit-benches --bench adaptive`. With 2 threads, the figure is
//! the time one record takes while another thread records into the same window at the same
//! moment. The `record_at` rows take the end time from the caller, as the retry loop does (it
//! has just read the clock for the latency); `record_with_clock` reads the clock itself.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_kit::adaptive::{AdaptivePolicy, Stats, Tuning};
use std::hint::black_box;
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

fn outage(stats: &Stats, t: Tuning) -> Tuning {
    if stats.failure_rate > 0.5 {
        Tuning {
            attempts: t.attempts.min(2),
            base: t.base * 3,
            ..t
        }
    } else {
        t
    }
}

static WINDOW: AdaptivePolicy = AdaptivePolicy::new(&[outage]);

/// The alternative the atomic ring avoids: one lock around the window.
/// The same work (epoch, encoding, ring slot) under a lock.
struct Locked {
    epoch: OnceLock<Instant>,
    ring: Mutex<([u64; 100], usize)>,
}

impl Locked {
    fn record_at(&self, failed: bool, latency: Duration, ended: Instant) {
        let epoch = *self.epoch.get_or_init(|| ended);
        let ms = ended.saturating_duration_since(epoch).as_millis() as u64 + 1;
        let word = ms << 24 | (latency.as_micros() as u64 & 0x7f_ffff) | u64::from(failed) << 23;
        let mut ring = self.ring.lock().unwrap();
        let at = ring.1 % 100;
        ring.0[at] = word;
        ring.1 = ring.1.wrapping_add(1);
    }
}

static LOCKED: Locked = Locked {
    epoch: OnceLock::new(),
    ring: Mutex::new(([0; 100], 0)),
};

static NOW: OnceLock<Instant> = OnceLock::new();

/// `iters` records on each of `threads` threads started together; the time of the slowest.
fn concurrent(threads: usize, iters: u64, record: fn(u64)) -> Duration {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..iters {
                        record(i);
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .max()
            .unwrap_or_default()
    })
}

fn now() -> Instant {
    *NOW.get_or_init(Instant::now)
}

fn record_atomic(i: u64) {
    WINDOW.record_at(
        black_box(i % 3 == 0),
        black_box(Duration::from_micros(i % 5000)),
        black_box(now()),
    );
}

fn record_locked(i: u64) {
    LOCKED.record_at(
        black_box(i % 3 == 0),
        black_box(Duration::from_micros(i % 5000)),
        black_box(now()),
    );
}

fn record_with_clock(i: u64) {
    WINDOW.record(
        black_box(i % 3 == 0),
        black_box(Duration::from_micros(i % 5000)),
    );
}

fn record(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive_record");
    for threads in [1usize, 2] {
        group.bench_with_input(
            BenchmarkId::new("atomic_ring_record_at", threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| concurrent(threads, iters, record_atomic)),
        );
        group.bench_with_input(
            BenchmarkId::new("mutex_ring_record_at", threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| concurrent(threads, iters, record_locked)),
        );
        group.bench_with_input(
            BenchmarkId::new("atomic_ring_record_with_clock", threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| concurrent(threads, iters, record_with_clock)),
        );
    }
    group.finish();
}

fn read(c: &mut Criterion) {
    // A full window of 100 attempts, all young.
    for i in 0..100u64 {
        WINDOW.record(i % 2 == 0, Duration::from_micros(i * 37));
    }
    let baseline = Tuning {
        attempts: 5,
        base: Duration::from_millis(100),
        multiplier: 2.0,
    };
    let mut group = c.benchmark_group("adaptive_read");
    group.bench_function("stats_100", |b| b.iter(|| black_box(WINDOW.stats())));
    group.bench_function("tune_100", |b| {
        b.iter(|| black_box(WINDOW.tune(black_box(baseline))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = record, read
}
criterion_main!(benches);
