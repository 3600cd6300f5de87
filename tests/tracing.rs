//! With the `tracing` feature, every failed attempt is one event: DEBUG when the loop retries,
//! WARN when it gives up, with the fields `fn`, `attempt`, `class`, `next` (`retry`, `wait` or
//! `stop`), `delay_ms` or `reason`,
//! `elapsed_ms` and (where the error has a `Display`) `error`, inside the caller's span.
//!
//! The events are captured by a small subscriber written here on the `tracing` API.
#![deny(warnings, unused_qualifications)]

use retry_kit::{CircuitBreaker, CircuitState, Classify, Retry, RetryPolicy, retryable, testing};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Instrument, Level, Metadata, Subscriber};

/// One captured event.
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    target: String,
    span: Option<String>,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Default)]
struct Capture {
    events: Mutex<Vec<Captured>>,
    spans: Mutex<BTreeMap<u64, String>>,
    next_id: AtomicU64,
}

thread_local! {
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

#[derive(Clone, Default)]
struct Handle(Arc<Capture>);

impl Handle {
    fn take(&self) -> Vec<Captured> {
        std::mem::take(&mut *self.0.events.lock().unwrap())
    }

    /// How many spans named `name` were created.
    fn spans_named(&self, name: &str) -> usize {
        let spans = self.0.spans.lock().unwrap();
        spans.values().filter(|n| *n == name).count()
    }
}

impl Subscriber for Handle {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let name = span.metadata().name().to_owned();
        self.0.spans.lock().unwrap().insert(id, name);
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ENTERED
            .with(|e| e.borrow().last().copied())
            .and_then(|id| self.0.spans.lock().unwrap().get(&id).cloned());
        self.0.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            span,
            fields,
        });
    }
    fn enter(&self, span: &Id) {
        ENTERED.with(|e| e.borrow_mut().push(span.into_u64()));
    }
    fn exit(&self, span: &Id) {
        ENTERED.with(|e| {
            let mut e = e.borrow_mut();
            if let Some(pos) = e.iter().rposition(|id| *id == span.into_u64()) {
                e.remove(pos);
            }
        });
    }
}

/// An error with a `Display`.
#[derive(Debug, Classify)]
enum DbError {
    #[classify(transient)]
    Deadlock { table: &'static str },
    #[classify(permanent)]
    Constraint,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Deadlock { table } => write!(f, "deadlock on {table}"),
            DbError::Constraint => f.write_str("unique constraint violated"),
        }
    }
}

/// An error without one.
#[derive(Debug, Classify)]
#[classify(transient)]
struct Opaque;

#[retryable(attempts = 3, backoff = "fixed", base = "1s", jitter = "none")]
fn insert_row() -> Result<(), DbError> {
    Err(DbError::Deadlock { table: "orders" })
}

#[test]
fn each_failed_attempt_is_one_event_inside_the_callers_span() {
    let capture = Handle::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let span = tracing::info_span!("checkout");
        let _entered = span.enter();
        let (result, _) = testing::record_sleeps(insert_row);
        assert!(result.is_err());
    });
    let events = capture.take();
    assert_eq!(events.len(), 3, "{events:#?}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.target, "retry_kit");
        assert_eq!(e.span.as_deref(), Some("checkout"));
        assert_eq!(e.field("fn"), Some("tracing::insert_row"));
        assert_eq!(e.field("attempt"), Some((i + 1).to_string().as_str()));
        assert_eq!(e.field("class"), Some("transient"));
        assert_eq!(e.field("error"), Some("deadlock on orders"));
        // Virtual time: attempts at 0, 1 and 2 s.
        assert_eq!(e.field("elapsed_ms"), Some((i * 1000).to_string().as_str()));
    }
    assert_eq!(events[0].level, Level::DEBUG);
    assert_eq!(events[0].field("next"), Some("retry"));
    assert_eq!(events[0].field("delay_ms"), Some("1000"));
    assert_eq!(events[0].field("reason"), None);
    assert_eq!(events[0].field("message"), Some("attempt failed; retrying"));
    assert_eq!(events[2].level, Level::WARN);
    assert_eq!(events[2].field("next"), Some("stop"));
    assert_eq!(events[2].field("reason"), Some("attempts_exhausted"));
    assert_eq!(events[2].field("delay_ms"), None);
    assert_eq!(
        events[2].field("message"),
        Some("attempt failed; giving up")
    );
}

#[retryable(attempts = 3, base = "0ms")]
fn reject() -> Result<(), DbError> {
    Err(DbError::Constraint)
}

#[test]
fn a_permanent_error_is_one_warning_with_its_reason() {
    let capture = Handle::default();
    tracing::subscriber::with_default(capture.clone(), || assert!(reject().is_err()));
    let events = capture.take();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].level, Level::WARN);
    assert_eq!(events[0].field("class"), Some("permanent"));
    assert_eq!(events[0].field("reason"), Some("permanent"));
    assert_eq!(events[0].field("error"), Some("unique constraint violated"));
    assert_eq!(events[0].span, None, "no span around the call");
}

#[retryable(attempts = 2, base = "0ms")]
fn opaque() -> Result<(), Opaque> {
    Err(Opaque)
}

#[retryable(attempts = 2, base = "0ms")]
fn generic_shown<E: Classify + fmt::Display>(e: impl Fn() -> E) -> Result<(), E> {
    Err(e())
}

#[retryable(attempts = 2, base = "0ms")]
fn generic_unbounded<E: Classify>(e: impl Fn() -> E) -> Result<(), E> {
    Err(e())
}

#[test]
fn the_error_field_is_present_exactly_when_the_error_has_a_display() {
    let capture = Handle::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let _ = opaque();
        let _ = generic_shown(|| DbError::Deadlock { table: "t" });
        let _ = generic_unbounded(|| DbError::Deadlock { table: "t" });
    });
    let events = capture.take();
    let shown: Vec<(Option<&str>, Option<&str>)> = events
        .iter()
        .map(|e| (e.field("fn"), e.field("error")))
        .collect();
    assert_eq!(
        shown,
        [
            (Some("tracing::opaque"), None),
            (Some("tracing::opaque"), None),
            (Some("tracing::generic_shown"), Some("deadlock on t")),
            (Some("tracing::generic_shown"), Some("deadlock on t")),
            // Without a `Display` bound the generic body cannot show `E`.
            (Some("tracing::generic_unbounded"), None),
            (Some("tracing::generic_unbounded"), None),
        ]
    );
}

#[retryable(attempts = 3, backoff = "fixed", base = "250ms", jitter = "none")]
async fn fetch_async(calls: &mut u32) -> Result<u32, DbError> {
    *calls += 1;
    tokio::task::yield_now().await;
    if *calls < 3 {
        Err(DbError::Deadlock { table: "pages" })
    } else {
        Ok(*calls)
    }
}

#[tokio::test(start_paused = true)]
async fn async_events_stay_inside_the_instrumented_span_across_awaits() {
    let capture = Handle::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let mut calls = 0;
    let out = fetch_async(&mut calls)
        .instrument(tracing::info_span!("handler"))
        .await;
    assert_eq!(out.unwrap(), 3);
    let events = capture.take();
    assert_eq!(events.len(), 2);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.span.as_deref(), Some("handler"));
        assert_eq!(e.level, Level::DEBUG);
        assert_eq!(e.field("delay_ms"), Some("250"));
        assert_eq!(e.field("elapsed_ms"), Some((i * 250).to_string().as_str()));
    }
}

#[test]
fn the_builder_names_its_events_and_opts_in_to_display() {
    let capture = Handle::default();
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(2);
    tracing::subscriber::with_default(capture.clone(), || {
        let _ = Retry::new(&policy)
            .named("billing::charge")
            .display_errors()
            .call(|| Err::<(), _>(DbError::Deadlock { table: "ledger" }));
        let _ = Retry::new(&policy).call(|| Err::<(), _>(Opaque));
    });
    let events = capture.take();
    let seen: Vec<(Option<&str>, Option<&str>)> = events
        .iter()
        .map(|e| (e.field("fn"), e.field("error")))
        .collect();
    assert_eq!(
        seen,
        [
            (Some("billing::charge"), Some("deadlock on ledger")),
            (Some("billing::charge"), Some("deadlock on ledger")),
            (Some("closure"), None),
            (Some("closure"), None),
        ]
    );
}

/// `#[tracing::instrument]` above `#[retryable]`: it expands first, and the retry loop goes
/// inside its span. An owned argument (moved into tracing's future) still works.
#[tracing::instrument(skip_all)]
#[retryable(attempts = 3, backoff = "fixed", base = "100ms", jitter = "none")]
async fn instrument_above(name: String, calls: &mut u32) -> Result<usize, DbError> {
    *calls += 1;
    tokio::task::yield_now().await;
    if *calls < 3 {
        return Err(DbError::Deadlock { table: "users" });
    }
    Ok(name.len())
}

/// The other order: the retry loop expands first and tracing wraps all of it.
#[retryable(attempts = 3, backoff = "fixed", base = "100ms", jitter = "none")]
#[tracing::instrument(skip_all)]
async fn instrument_below(name: String, calls: &mut u32) -> Result<usize, DbError> {
    *calls += 1;
    tokio::task::yield_now().await;
    if *calls < 3 {
        return Err(DbError::Deadlock { table: "users" });
    }
    Ok(name.len())
}

#[tokio::test(start_paused = true)]
async fn instrument_in_either_order_makes_one_span_per_call_with_the_retry_events_inside() {
    let capture = Handle::default();
    let _default = tracing::subscriber::set_default(capture.clone());

    let mut calls = 0;
    assert_eq!(
        instrument_above("ada".to_owned(), &mut calls)
            .await
            .unwrap(),
        3
    );
    assert_eq!(calls, 3);
    let mut calls = 0;
    assert_eq!(
        instrument_below("bob".to_owned(), &mut calls)
            .await
            .unwrap(),
        3
    );
    assert_eq!(calls, 3);

    assert_eq!(capture.spans_named("instrument_above"), 1);
    assert_eq!(capture.spans_named("instrument_below"), 1);
    let spans: Vec<Option<String>> = capture.take().into_iter().map(|e| e.span).collect();
    assert_eq!(
        spans,
        [
            Some("instrument_above".to_owned()),
            Some("instrument_above".to_owned()),
            Some("instrument_below".to_owned()),
            Some("instrument_below".to_owned()),
        ]
    );
}

#[tracing::instrument(skip(calls), err)]
#[retryable(attempts = 2, base = "0ms")]
fn sync_instrument_above(table: &'static str, calls: &mut u32) -> Result<(), DbError> {
    *calls += 1;
    Err(DbError::Deadlock { table })
}

#[retryable(attempts = 2, base = "0ms")]
#[tracing::instrument(skip(calls), err)]
fn sync_instrument_below(table: &'static str, calls: &mut u32) -> Result<(), DbError> {
    *calls += 1;
    Err(DbError::Deadlock { table })
}

#[test]
fn sync_instrument_with_err_in_either_order_makes_one_span_and_one_error_event_per_call() {
    let capture = Handle::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut calls = 0;
        assert!(sync_instrument_above("a", &mut calls).is_err());
        assert_eq!(calls, 2);
        let mut calls = 0;
        assert!(sync_instrument_below("b", &mut calls).is_err());
        assert_eq!(calls, 2);
    });
    assert_eq!(capture.spans_named("sync_instrument_above"), 1);
    assert_eq!(capture.spans_named("sync_instrument_below"), 1);
    let events = capture.take();
    let seen: Vec<(&str, Option<&str>, Level)> = events
        .iter()
        .map(|e| (e.target.as_str(), e.span.as_deref(), e.level))
        .collect();
    // Two retry events inside the span, then tracing's own `err` event once for the call.
    assert_eq!(
        seen,
        [
            ("retry_kit", Some("sync_instrument_above"), Level::DEBUG),
            ("retry_kit", Some("sync_instrument_above"), Level::WARN),
            ("tracing", Some("sync_instrument_above"), Level::ERROR),
            ("retry_kit", Some("sync_instrument_below"), Level::DEBUG),
            ("retry_kit", Some("sync_instrument_below"), Level::WARN),
            ("tracing", Some("sync_instrument_below"), Level::ERROR),
        ]
    );
}

static NAMED: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(5)).name("inventory");

#[tokio::test(start_paused = true)]
async fn every_breaker_state_change_is_one_event_with_its_name() {
    let capture = Handle::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    NAMED.try_acquire().unwrap().failed();
    NAMED.try_acquire().unwrap().failed(); // opens
    tokio::time::advance(Duration::from_secs(5)).await;
    let probe = NAMED.try_acquire().unwrap(); // half-open: the probe is admitted
    assert!(probe.is_probe());
    probe.succeeded(); // closes
    assert_eq!(NAMED.state(), CircuitState::Closed);
    let events = capture.take();
    let changes: Vec<_> = events
        .iter()
        .map(|e| (e.level, e.field("breaker"), e.field("from"), e.field("to")))
        .collect();
    assert_eq!(
        changes,
        [
            (Level::WARN, Some("inventory"), Some("closed"), Some("open")),
            (
                Level::INFO,
                Some("inventory"),
                Some("open"),
                Some("half_open")
            ),
            (
                Level::INFO,
                Some("inventory"),
                Some("half_open"),
                Some("closed")
            ),
        ]
    );
}

#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn read_replica(slow: u64) -> Result<u32, DbError> {
    let attempt = retry_kit::current_attempt().unwrap().number();
    if attempt == 1 {
        tokio::time::sleep(Duration::from_millis(slow)).await;
        return Err(DbError::Deadlock { table: "replica" });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(attempt)
}

#[tokio::test(start_paused = true)]
async fn a_hedge_and_a_failure_that_waits_for_it_are_debug_events() {
    let capture = Handle::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    // Attempt 1 stalls past the 50 ms hedge delay and fails at 100 ms while attempt 2 runs;
    // with all three allowed attempts not yet started, the failure starts attempt 3 at once.
    let out = read_replica(100)
        .instrument(tracing::info_span!("handler"))
        .await;
    assert_eq!(out.unwrap(), 2);
    let events = capture.take();
    let summary: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.level,
                e.field("message").unwrap_or_default().to_owned(),
                e.field("attempt").unwrap_or_default().to_owned(),
                e.field("running").map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                Level::DEBUG,
                "attempt slow; hedging".to_owned(),
                "2".to_owned(),
                Some("1".to_owned())
            ),
            (
                Level::DEBUG,
                "attempt failed; retrying".to_owned(),
                "1".to_owned(),
                None
            ),
            // Attempt 2 answered while attempt 3 was still running: 3 is dropped with the
            // call, and said so.
            (
                Level::DEBUG,
                "call answered; attempts still running cancelled".to_owned(),
                String::new(),
                None
            ),
        ]
    );
    assert_eq!(events[2].field("cancelled"), Some("1"));
    assert!(events.iter().all(|e| e.span.as_deref() == Some("handler")));
}
