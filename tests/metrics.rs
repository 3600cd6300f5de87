//! The `metrics` feature: every attempt counted by outcome and class, each retry's delay, each
//! stop by reason, and every breaker change as a gauge, read back with metrics-util's debugging
//! recorder.
#![deny(warnings, unused_qualifications)]

use metrics_util::CompositeKey;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_kit::{CircuitBreaker, Classify, Retry, RetryPolicy, retryable, testing};
use std::future::Future;
use std::time::Duration;

#[derive(Debug, Classify)]
enum StoreError {
    #[classify(transient)]
    Busy,
    #[classify(permanent)]
    Missing,
}

#[retryable(attempts = 4, backoff = "fixed", base = "100ms", jitter = "none")]
fn load(busy_for: &mut u32) -> Result<u32, StoreError> {
    if *busy_for > 0 {
        *busy_for -= 1;
        return Err(StoreError::Busy);
    }
    Ok(1)
}

#[retryable(attempts = 4, base = "0ms")]
fn lookup() -> Result<u32, StoreError> {
    Err(StoreError::Missing)
}

/// Every measurement `f` makes: (name, labels sorted, value).
fn measure(f: impl FnOnce()) -> Vec<(String, Vec<String>, DebugValue)> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, f);
    let mut out: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value): (CompositeKey, _, _, DebugValue)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            (key.name().to_owned(), labels, value)
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

fn labels(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn attempts_delays_and_stops_are_counted_by_outcome_class_and_reason() {
    let seen = measure(|| {
        let mut busy = 2;
        testing::record_sleeps(|| load(&mut busy)).0.unwrap();
        let _ = lookup();
    });
    let load_fn = "fn=metrics::load";
    let lookup_fn = "fn=metrics::lookup";
    assert_eq!(
        seen,
        [
            (
                "retry_kit_attempts_total".to_owned(),
                labels(&["class=none", load_fn, "outcome=success"]),
                DebugValue::Counter(1)
            ),
            (
                "retry_kit_attempts_total".to_owned(),
                labels(&["class=permanent", lookup_fn, "outcome=stop"]),
                DebugValue::Counter(1)
            ),
            (
                "retry_kit_attempts_total".to_owned(),
                labels(&["class=transient", load_fn, "outcome=retry"]),
                DebugValue::Counter(2)
            ),
            (
                "retry_kit_retry_delay_seconds".to_owned(),
                labels(&[load_fn]),
                DebugValue::Histogram(vec![0.1.into(), 0.1.into()])
            ),
            (
                "retry_kit_stops_total".to_owned(),
                labels(&[lookup_fn, "reason=permanent"]),
                DebugValue::Counter(1)
            ),
        ]
    );
}

#[test]
fn the_builder_is_measured_under_its_name() {
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(2);
    let seen = measure(|| {
        let _ = Retry::new(&policy)
            .named("billing::charge")
            .call(|| Err::<(), _>(StoreError::Busy));
    });
    let stops: Vec<_> = seen
        .iter()
        .filter(|(name, ..)| name == "retry_kit_stops_total")
        .collect();
    assert_eq!(stops.len(), 1);
    assert_eq!(
        stops[0].1,
        labels(&["fn=billing::charge", "reason=attempts_exhausted"])
    );
}

static ORDERS: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60)).name("orders");

#[test]
fn a_breaker_change_sets_its_state_gauge() {
    let seen = measure(|| ORDERS.try_acquire().unwrap().failed());
    assert_eq!(
        seen,
        [(
            "retry_kit_circuit_state".to_owned(),
            labels(&["breaker=orders"]),
            DebugValue::Gauge(2.0.into())
        )]
    );
}

static SHUT: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60));

#[derive(Debug, Classify)]
enum Guarded {
    #[classify(transient)]
    Busy,
    #[classify(transient)]
    Open,
}

impl From<retry_kit::CircuitOpen> for Guarded {
    fn from(_: retry_kit::CircuitOpen) -> Self {
        Guarded::Open
    }
}

#[retryable(attempts = 2, base = "0ms", circuit = SHUT)]
fn guarded() -> Result<(), Guarded> {
    Err(Guarded::Busy)
}

#[test]
fn a_call_the_open_breaker_refuses_counts_as_a_circuit_open_stop() {
    SHUT.try_acquire().unwrap().failed(); // open
    let seen = measure(|| assert!(matches!(guarded(), Err(Guarded::Open))));
    let stops: Vec<_> = seen
        .iter()
        .filter(|(name, ..)| name == "retry_kit_stops_total")
        .map(|(_, labels, value)| (labels.clone(), format!("{value:?}")))
        .collect();
    assert_eq!(
        stops,
        [(
            labels(&["fn=metrics::guarded", "reason=circuit_open"]),
            format!("{:?}", DebugValue::Counter(1))
        )]
    );
    assert!(
        seen.iter()
            .all(|(name, ..)| name != "retry_kit_attempts_total"),
        "no attempt was made"
    );
}

/// Run `future` to completion on a current-thread runtime with tokio's clock paused.
fn on_paused_clock<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}

/// Answers slowly on the first attempt, at once on the others.
#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn read_replica() -> Result<u32, StoreError> {
    let attempt = retry_kit::current_attempt().unwrap().number();
    if attempt == 1 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(attempt)
}

/// The slow first attempt was sent and then dropped when the hedge answered: it is an attempt
/// of its own (`outcome="cancelled"`), so that the attempts counted are the load sent.
#[test]
fn a_hedge_is_counted_and_the_attempt_it_beat_is_counted_as_cancelled() {
    let seen = measure(|| {
        assert_eq!(on_paused_clock(read_replica()).unwrap(), 2);
    });
    let read_fn = "fn=metrics::read_replica";
    assert_eq!(
        seen,
        [
            (
                "retry_kit_attempts_total".to_owned(),
                labels(&["class=none", read_fn, "outcome=cancelled"]),
                DebugValue::Counter(1)
            ),
            (
                "retry_kit_attempts_total".to_owned(),
                labels(&["class=none", read_fn, "outcome=success"]),
                DebugValue::Counter(1)
            ),
            (
                "retry_kit_hedges_total".to_owned(),
                labels(&[read_fn]),
                DebugValue::Counter(1)
            ),
        ]
    );
}

#[derive(Debug, Classify)]
enum Throttled {
    #[classify(transient)]
    SlowDown {
        #[classify(retry_after)]
        wait: Duration,
    },
}

/// Refuses the first attempt with a 100 ms retry-after; answers the second.
#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn throttled_read() -> Result<u32, Throttled> {
    let attempt = retry_kit::current_attempt().unwrap().number();
    if attempt == 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        return Err(Throttled::SlowDown {
            wait: Duration::from_millis(100),
        });
    }
    Ok(attempt)
}

#[test]
fn an_attempt_that_waited_out_a_retry_after_is_a_retry_not_a_hedge() {
    let seen = measure(|| {
        assert_eq!(on_paused_clock(throttled_read()).unwrap(), 2);
    });
    let names: Vec<&str> = seen.iter().map(|(name, ..)| name.as_str()).collect();
    assert!(
        !names.contains(&"retry_kit_hedges_total"),
        "the second attempt started after the hint, not as a hedge: {names:?}"
    );
    let retried = seen
        .iter()
        .find(|(name, labels, _)| {
            name == "retry_kit_attempts_total" && labels.iter().any(|l| l == "outcome=retry")
        })
        .map(|(.., value)| format!("{value:?}"));
    assert_eq!(retried, Some(format!("{:?}", DebugValue::Counter(1))));
}

#[derive(Debug, Classify)]
enum HostError {
    #[classify(transient)]
    Down,
    #[classify(transient)]
    Open,
}

impl From<retry_kit::CircuitOpen> for HostError {
    fn from(_: retry_kit::CircuitOpen) -> Self {
        HostError::Open
    }
}

static HOSTS: retry_kit::PerKey<CircuitBreaker> =
    retry_kit::PerKey::new(CircuitBreaker::new(1, Duration::from_secs(60)).name("hosts"));

#[retryable(attempts = 1, circuit = HOSTS, key = host)]
fn fetch_host(host: &str, up: bool) -> Result<(), HostError> {
    if up { Ok(()) } else { Err(HostError::Down) }
}

#[test]
fn each_per_key_breaker_is_its_own_series_labelled_with_its_key() {
    // Before, every entry of a PerKey set the one `breaker="hosts"` series: the last writer won,
    // and the gauge said closed while another host was open.
    let seen = measure(|| {
        let _ = fetch_host("down.example", false);
        let _ = fetch_host("up.example", true);
        HOSTS.get("down.example");
    });
    let gauges: Vec<_> = seen
        .iter()
        .filter(|(name, _, _)| name == "retry_kit_circuit_state")
        .map(|(_, labels, value)| (labels.clone(), format!("{value:?}")))
        .collect();
    // Each entry of the named template has its series from its first use: the host that
    // never failed is listed closed, beside the open one.
    assert_eq!(
        gauges,
        [
            (
                labels(&["breaker=hosts", "key=down.example"]),
                format!("{:?}", DebugValue::Gauge(2.0.into()))
            ),
            (
                labels(&["breaker=hosts", "key=up.example"]),
                format!("{:?}", DebugValue::Gauge(0.0.into()))
            ),
        ]
    );
    assert_eq!(
        HOSTS.get("down.example").key().as_deref(),
        Some("down.example")
    );
}

#[retryable(attempts = 2, base = "0ms")]
fn ping() -> Result<u32, StoreError> {
    Ok(1)
}

/// Nothing is cached across recorders: a function called before any recorder is installed is
/// counted by the one installed afterwards, and by each later one in turn (a `static` handle
/// taken under the no-op recorder would count nothing, ever).
#[test]
fn a_recorder_installed_after_the_first_call_counts_every_later_call() {
    let _ = ping();
    let success = |n| {
        (
            "retry_kit_attempts_total".to_owned(),
            labels(&["class=none", "fn=metrics::ping", "outcome=success"]),
            DebugValue::Counter(n),
        )
    };
    assert_eq!(measure(|| drop(ping())), [success(1)]);
    assert_eq!(
        measure(|| {
            let _ = ping();
            let _ = ping();
        }),
        [success(2)]
    );
}

static LEDGER: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(60)).name("ledger");

#[retryable(attempts = 2, base = "0ms", circuit = LEDGER)]
fn post_entry() -> Result<u32, Guarded> {
    Ok(7)
}

/// Before, a breaker that never changed state had no series: a dashboard could not list it.
#[test]
fn a_named_breaker_has_its_closed_series_from_its_first_use() {
    let seen = measure(|| assert_eq!(post_entry().unwrap(), 7));
    let gauges: Vec<_> = seen
        .iter()
        .filter(|(name, ..)| name == "retry_kit_circuit_state")
        .map(|(_, labels, value)| (labels.clone(), format!("{value:?}")))
        .collect();
    assert_eq!(
        gauges,
        [(
            labels(&["breaker=ledger"]),
            format!("{:?}", DebugValue::Gauge(0.0.into()))
        )]
    );
}

static AUDIT: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60)).name("audit");

/// Every metric the crate records reaches the recorder with its description and unit (the
/// exposition's `# HELP`), whichever recorder it is, without a call from the application.
#[test]
fn every_metric_recorded_is_described_with_its_unit() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let mut busy = 1;
        testing::record_sleeps(|| load(&mut busy)).0.unwrap();
        let _ = lookup();
        let _ = on_paused_clock(read_replica());
        AUDIT.try_acquire().unwrap().failed();
    });
    let mut described: Vec<(String, String, String)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, description, _)| {
            (
                key.key().name().to_owned(),
                format!("{unit:?}"),
                description.map(|d| d.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    described.sort();
    described.dedup();
    let names: Vec<&str> = described.iter().map(|(name, ..)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "retry_kit_attempts_total",
            "retry_kit_circuit_state",
            "retry_kit_hedges_total",
            "retry_kit_retry_delay_seconds",
            "retry_kit_stops_total",
        ]
    );
    for (name, unit, description) in &described {
        assert!(!description.is_empty(), "{name} has no description");
        let expected = match name.as_str() {
            "retry_kit_retry_delay_seconds" => "Some(Seconds)",
            "retry_kit_circuit_state" => "None",
            _ => "Some(Count)",
        };
        assert_eq!(unit, expected, "{name}");
    }
}
