//! What the shared protection costs per call: the circuit breaker's admission and outcome
//! record, and the retry budget's check, charge and refund, on one thread and with a second
//! thread doing the same to the same `static` at the same time (and with N threads, where the
//! machine has more than 2 cores). Beside them the same piece in the peer crates (failsafe's and
//! tower-resilience's circuit breakers, closed, admitting a call that succeeds), and, with the
//! `metrics` feature, a `#[retryable]` success measured into an installed recorder against the
//! floor: the `metrics` crate's own kept `Counter` handle incremented in the same recorder.
//!
//! Run: `cargo bench -p retry-kit-benches --bench protection` (add `--features metrics` for the
//! metrics rows; every other row is then measured with the feature on too). The tables in
//! benches/README.md come from this bench; `bash benches/peers.sh protection` prints them with
//! the ratios of the contended times to the lone ones.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retry_kit::{CircuitBreaker, PerKey, RetryBudget};
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod breaker_peers;
#[cfg(feature = "metrics")]
mod map_recorder;

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

/// With the `metrics` feature: a `#[retryable]` success measured into the recorder of
/// `map_recorder.rs`, installed as the global one (retry-kit keeps its handles for the global
/// recorder only), and the floor: the same recorder's counter kept as a `metrics::Counter` and
/// incremented, as a hand-instrumented call would.
#[cfg(feature = "metrics")]
mod metered {
    use retry_kit::retryable;
    use std::hint::black_box;
    use std::sync::Once;

    /// Installs the recorder once, before any case runs.
    pub fn install_recorder() {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            metrics::set_global_recorder(crate::map_recorder::MapRecorder::default())
                .expect("the only global recorder");
        });
    }

    #[derive(Debug, retry_kit::Classify)]
    pub enum Error {
        #[classify(transient)]
        Reset,
    }

    /// A success: one attempt, one measurement (the same series from every thread).
    #[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
    #[inline(never)]
    fn success(x: u64) -> Result<u64, Error> {
        if x == u64::MAX {
            return Err(Error::Reset);
        }
        Ok(x + 1)
    }

    pub fn retryable_success() {
        black_box(success(black_box(1)).is_ok());
    }

    /// Each thread registers the series once and keeps the handle: the same counter (one
    /// `Arc<AtomicU64>` in the recorder) from every thread, as retry-kit's success series is.
    pub fn floor_handle() -> metrics::Counter {
        metrics::counter!("retry_kit_bench_floor")
    }

    pub fn floor_increment(counter: &mut metrics::Counter) {
        black_box(&*counter).increment(1);
    }
}

/// Fill `HOSTS` with 64 keys, so that a lookup scans a full table.
fn fill_hosts() {
    for i in 0..64 {
        let _ = HOSTS.get(&format!("api-{i}.example"));
    }
}

/// What every group sets up first: the open breaker opened, `HOSTS` filled, and with the
/// `metrics` feature the recorder installed.
fn set_up() {
    OPEN.try_acquire().map(|p| p.failed()).ok();
    fill_hosts();
    #[cfg(feature = "metrics")]
    metered::install_recorder();
}

// ---------------------------------------------------------------------------------------------
// Cases that keep something per thread: a peer's breaker is a value (a tower service is called
// through `&mut self`), so each thread calls through a handle of its own onto the same shared
// state, as the threads of a server would.

/// The cases with a per-thread handle, each given to `visit` with what makes a handle and what
/// one call through it does.
fn for_each_handle_case(visit: &mut impl Visit) {
    visit.case(
        "failsafe_closed_call",
        &breaker_peers::failsafe_handle,
        breaker_peers::failsafe_closed_call,
    );
    visit.case(
        "tower_resilience_closed_call",
        &breaker_peers::tower_resilience_handle,
        breaker_peers::tower_resilience_closed_call,
    );
    #[cfg(feature = "metrics")]
    {
        visit.case(
            "metrics_counter_floor",
            &metered::floor_handle,
            metered::floor_increment,
        );
        visit.case("metrics_retryable_success", &|| (), |_| {
            metered::retryable_success()
        });
    }
}

/// Where `for_each_handle_case` sends each case: a criterion group of one kind.
trait Visit {
    fn case<H>(
        &mut self,
        name: &str,
        handle: &(dyn Fn() -> H + Sync),
        call: impl Fn(&mut H) + Sync,
    );
}

/// Each case alone on the bench thread.
struct Alone<'a, 'c>(&'a mut criterion::BenchmarkGroup<'c, criterion::measurement::WallTime>);

impl Visit for Alone<'_, '_> {
    fn case<H>(
        &mut self,
        name: &str,
        handle: &(dyn Fn() -> H + Sync),
        call: impl Fn(&mut H) + Sync,
    ) {
        let mut handle = handle();
        self.0
            .bench_function(name, |b| b.iter(|| call(&mut handle)));
    }
}

/// Each case on the bench thread while `threads - 1` more make the same calls.
struct Beside<'a, 'c> {
    group: &'a mut criterion::BenchmarkGroup<'c, criterion::measurement::WallTime>,
    threads: usize,
}

impl Visit for Beside<'_, '_> {
    fn case<H>(
        &mut self,
        name: &str,
        handle: &(dyn Fn() -> H + Sync),
        call: impl Fn(&mut H) + Sync,
    ) {
        let threads = self.threads;
        self.group
            .bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| contended(iters, threads, handle, &call))
            });
    }
}

/// Time `iters` calls on this thread while `threads - 1` more threads make `iters` calls each
/// through handles of their own, all released by one barrier.
fn contended<H>(
    iters: u64,
    threads: usize,
    handle: &(dyn Fn() -> H + Sync),
    call: &(impl Fn(&mut H) + Sync),
) -> Duration {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| {
                let mut handle = handle();
                barrier.wait();
                for _ in 0..iters {
                    call(&mut handle);
                }
            });
        }
        let mut handle = handle();
        barrier.wait();
        let start = Instant::now();
        for _ in 0..iters {
            call(&mut handle);
        }
        start.elapsed()
    })
}

/// The cases on `static`s need no handle: `()` stands for one.
fn static_cases(visit: &mut impl Visit) {
    for &(name, op) in CASES {
        visit.case(name, &|| (), move |_| op());
    }
}

fn uncontended(c: &mut Criterion) {
    set_up();
    let mut group = c.benchmark_group("uncontended");
    static_cases(&mut Alone(&mut group));
    for_each_handle_case(&mut Alone(&mut group));
    group.finish();
}

fn two_threads(c: &mut Criterion) {
    set_up();
    let mut group = c.benchmark_group("two_threads");
    let mut beside = Beside {
        group: &mut group,
        threads: 2,
    };
    static_cases(&mut beside);
    for_each_handle_case(&mut beside);
    group.finish();
}

/// With every core busy, where the machine has more than 2 (nothing on a 2-core machine).
fn all_cores(c: &mut Criterion) {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads <= 2 {
        return;
    }
    set_up();
    let mut group = c.benchmark_group(format!("{threads}_threads"));
    let mut beside = Beside {
        group: &mut group,
        threads,
    };
    static_cases(&mut beside);
    for_each_handle_case(&mut beside);
    group.finish();
}

criterion_group!(benches, uncontended, two_threads, all_cores);
criterion_main!(benches);
