//! The `metrics` feature with the application's global recorder, installed after the first
//! call (as a program does once its exporter is up): each function's handles are registered
//! once and kept, so that a success is one atomic add and allocates nothing; a test's local
//! recorder is never given a kept handle (the next one may live at the same address).
//!
//! A binary of its own: a global recorder is installed once per process.
#![deny(warnings, unused_qualifications)]

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use retry_kit::{Classify, Retry, RetryPolicy, retryable, testing};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn allocations_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    counting::start();
    let out = f();
    (out, counting::stop())
}

#[derive(Debug, Classify)]
enum StoreError {
    #[classify(transient)]
    Busy,
}

#[retryable(attempts = 3, backoff = "fixed", base = "100ms", jitter = "none")]
fn ping(busy_for: &mut u32) -> Result<u32, StoreError> {
    if *busy_for > 0 {
        *busy_for -= 1;
        return Err(StoreError::Busy);
    }
    Ok(1)
}

/// The debugging recorder, counting how often a series is registered with it (a handle looked
/// up in its registry).
struct Registrations {
    inner: DebuggingRecorder,
}

static REGISTERED: AtomicUsize = AtomicUsize::new(0);

impl Recorder for Registrations {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, text: SharedString) {
        self.inner.describe_counter(key, unit, text)
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, text: SharedString) {
        self.inner.describe_gauge(key, unit, text)
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, text: SharedString) {
        self.inner.describe_histogram(key, unit, text)
    }
    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        REGISTERED.fetch_add(1, Ordering::Relaxed);
        self.inner.register_counter(key, metadata)
    }
    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        REGISTERED.fetch_add(1, Ordering::Relaxed);
        self.inner.register_gauge(key, metadata)
    }
    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        REGISTERED.fetch_add(1, Ordering::Relaxed);
        self.inner.register_histogram(key, metadata)
    }
}

/// The global recorder's snapshotter, installed by the first test that asks (after a call of
/// `ping` made with no recorder at all).
fn global() -> &'static Snapshotter {
    static GLOBAL: OnceLock<Snapshotter> = OnceLock::new();
    GLOBAL.get_or_init(|| {
        let _ = ping(&mut 0);
        let inner = DebuggingRecorder::new();
        let snapshotter = inner.snapshotter();
        metrics::set_global_recorder(Registrations { inner })
            .expect("the only global recorder of this binary");
        snapshotter
    })
}

/// What `snapshotter`'s recorder measured since the last drain: (name, labels, value). The
/// debugging recorder hands counters and histograms over and starts them again from zero.
fn drain(snapshotter: &Snapshotter) -> Vec<(String, Vec<String>, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            (key.name().to_owned(), labels, value)
        })
        .collect()
}

/// The value of the series `name` whose labels include every one of `labels`.
fn value<'m>(
    measured: &'m [(String, Vec<String>, DebugValue)],
    name: &str,
    labels: &[&str],
) -> Option<&'m DebugValue> {
    measured
        .iter()
        .find(|(n, have, _)| n == name && labels.iter().all(|l| have.iter().any(|h| h == l)))
        .map(|(.., value)| value)
}

/// `ping`'s successes that `snapshotter`'s recorder counted since the last drain.
fn successes(snapshotter: &Snapshotter) -> u64 {
    match value(
        &drain(snapshotter),
        "retry_kit_attempts_total",
        &["fn=metrics_global::ping", "outcome=success"],
    ) {
        Some(DebugValue::Counter(n)) => *n,
        None => 0,
        Some(other) => panic!("not a counter: {other:?}"),
    }
}

/// One test, in steps: the global recorder is process-wide, so the steps must not interleave
/// with another test's calls.
#[test]
fn handles_kept_for_the_global_recorder_count_exactly_and_local_recorders_get_their_own() {
    let global = global();
    // The call before the recorder was installed went nowhere; each one after is counted,
    // the first of them registering the handle.
    assert_eq!(successes(global), 0);
    for _ in 0..3 {
        ping(&mut 0).unwrap();
    }
    assert_eq!(successes(global), 3);

    // Once kept, a success neither looks its handle up nor allocates.
    let registered = REGISTERED.load(Ordering::Relaxed);
    let (_, allocations) = allocations_of(|| ping(&mut 0));
    assert_eq!(allocations, 0);
    for _ in 0..99 {
        ping(&mut 0).unwrap();
    }
    assert_eq!(REGISTERED.load(Ordering::Relaxed), registered);
    assert_eq!(successes(global), 100);

    // Failures: a retry by class, its delay, the stop by reason, all in the global recorder.
    let (_, delays) = testing::record_sleeps(|| ping(&mut 5));
    assert_eq!(delays.len(), 2);
    let measured = drain(global);
    assert_eq!(
        value(
            &measured,
            "retry_kit_attempts_total",
            &[
                "fn=metrics_global::ping",
                "outcome=retry",
                "class=transient"
            ]
        ),
        Some(&DebugValue::Counter(2))
    );
    assert_eq!(
        value(
            &measured,
            "retry_kit_stops_total",
            &["fn=metrics_global::ping", "reason=attempts_exhausted"]
        ),
        Some(&DebugValue::Counter(1))
    );
    match value(
        &measured,
        "retry_kit_retry_delay_seconds",
        &["fn=metrics_global::ping"],
    ) {
        Some(DebugValue::Histogram(values)) => {
            assert_eq!(values.len(), 2);
            assert!(values.iter().all(|v| v.into_inner() == 0.1));
        }
        other => panic!("no delay histogram: {other:?}"),
    }
    // Kept failure handles: no second registration, and no key built (each key would be one
    // more allocation).
    let registered = REGISTERED.load(Ordering::Relaxed);
    let _ = testing::record_sleeps(|| ping(&mut 5));
    assert_eq!(REGISTERED.load(Ordering::Relaxed), registered);
    drain(global);
    // What a failing call allocates is record_sleeps' `Vec` of delays and the debugging recorder's own block for the
    // histogram's value (its bucket was emptied by the drain above).
    let (_, allocations) = allocations_of(|| testing::record_sleeps(|| ping(&mut 1)));
    assert_eq!(allocations, 2);
    drain(global);

    // Local recorders, one after another on this thread's stack (most likely at the same
    // address): each counts its own calls, and the global recorder none of them.
    for calls in [2, 1] {
        let local = DebuggingRecorder::new();
        let snapshotter = local.snapshotter();
        metrics::with_local_recorder(&local, || {
            for _ in 0..calls {
                ping(&mut 0).unwrap();
            }
        });
        assert_eq!(successes(&snapshotter), calls);
    }
    assert_eq!(successes(global), 0);

    // And a call on another thread, with no local recorder there, is the global's.
    std::thread::spawn(|| ping(&mut 0).unwrap()).join().unwrap();
    assert_eq!(successes(global), 1);

    // The builder, named at run time, keeps its handles too: one registration, then none.
    const POLICY: RetryPolicy = RetryPolicy::new().attempts(2);
    let fetch = || {
        Retry::new(&POLICY)
            .named("metrics_global::fetch")
            .call(|| Ok::<_, StoreError>(1))
    };
    fetch().unwrap();
    let registered = REGISTERED.load(Ordering::Relaxed);
    let (_, allocations) = allocations_of(fetch);
    assert_eq!(allocations, 0);
    for _ in 0..99 {
        fetch().unwrap();
    }
    assert_eq!(REGISTERED.load(Ordering::Relaxed), registered);
    let builder = match value(
        &drain(global),
        "retry_kit_attempts_total",
        &["fn=metrics_global::fetch", "outcome=success"],
    ) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("no builder series: {other:?}"),
    };
    assert_eq!(builder, 101);
}
