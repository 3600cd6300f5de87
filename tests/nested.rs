//! Retryable calls made inside another retryable call's attempt: the inner call inherits the
//! outer deadline (three layers deep, sync and async), and `nested = "once"` leaves retrying to
//! the outer layer, so the bottom service sees exactly the documented product of attempts.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, Failure, Next, StopReason, retryable, testing};
use std::cell::{Cell, RefCell};
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum Down {
    #[classify(transient)]
    Unavailable,
    #[classify(permanent)]
    Rejected,
}

const S: fn(u64) -> Duration = Duration::from_secs;

thread_local! {
    static BOTTOM_NEXT: RefCell<Vec<Next>> = const { RefCell::new(Vec::new()) };
}

fn bottom_failed(f: &Failure<'_, Down>) {
    BOTTOM_NEXT.with(|n| n.borrow_mut().push(f.next));
}

fn bottom_nexts() -> Vec<Next> {
    BOTTOM_NEXT.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

// --- deadline inheritance, sync --------------------------------------------------------------

#[retryable(
    attempts = 5,
    backoff = "exponential",
    base = "1s",
    jitter = "none",
    deadline = "10s"
)]
fn top(calls: &mut u32) -> Result<(), Down> {
    middle(calls)
}

#[retryable(attempts = 5, backoff = "fixed", base = "4s", jitter = "none")]
fn middle(calls: &mut u32) -> Result<(), Down> {
    bottom(calls)
}

#[retryable(attempts = 10, backoff = "fixed", base = "3s", jitter = "none", on_failure = bottom_failed)]
fn bottom(calls: &mut u32) -> Result<(), Down> {
    *calls += 1;
    Err(Down::Unavailable)
}

#[test]
fn three_layers_sync_never_sleep_past_the_outer_deadline() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| top(&mut calls));
    assert_eq!(result, Err(Down::Unavailable));
    // Bottom: attempts at 0, 3, 6 and 9 s; a fourth 3 s wait would end at 12 s > 10 s. Middle's
    // 4 s wait would end at 13 s. Top's 1 s wait ends exactly at 10 s, which is allowed; after
    // its second attempt (bottom once more, at 10 s) nothing fits.
    assert_eq!(slept, [S(3), S(3), S(3), S(1)]);
    assert!(slept.iter().sum::<Duration>() <= S(10));
    assert_eq!(calls, 5);
    let nexts = bottom_nexts();
    assert_eq!(nexts.len(), 5);
    assert_eq!(nexts[3], Next::Stop(StopReason::DeadlineExceeded));
    assert_eq!(nexts[4], Next::Stop(StopReason::DeadlineExceeded));
}

#[test]
fn an_inner_call_without_an_outer_one_keeps_its_own_schedule() {
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| bottom(&mut calls));
    bottom_nexts();
    assert_eq!(calls, 10);
    assert_eq!(slept, vec![S(3); 9]);
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "1s",
    jitter = "none",
    deadline = "30s"
)]
fn loose_outer(calls: &mut u32) -> Result<(), Down> {
    tight_inner(calls)
}

#[retryable(
    attempts = 10,
    backoff = "fixed",
    base = "2s",
    jitter = "none",
    deadline = "5s"
)]
fn tight_inner(calls: &mut u32) -> Result<(), Down> {
    *calls += 1;
    Err(Down::Unavailable)
}

#[test]
fn the_earlier_deadline_wins_when_the_inner_one_is_tighter() {
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| loose_outer(&mut calls));
    // Each inner call: attempts at 0, 2 and 4 s of its own 5 s (a third 2 s wait would end at
    // 6 s), then the outer waits 1 s; three outer attempts.
    assert_eq!(slept, [S(2), S(2), S(1), S(2), S(2), S(1), S(2), S(2)]);
    assert_eq!(calls, 9);
}

// --- deadline inheritance, async -------------------------------------------------------------

thread_local! {
    static ASYNC_START: Cell<Option<tokio::time::Instant>> = const { Cell::new(None) };
    static ASYNC_TIMES: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
}

#[retryable(
    attempts = 5,
    backoff = "exponential",
    base = "1s",
    jitter = "none",
    deadline = "10s"
)]
async fn top_async() -> Result<(), Down> {
    middle_async().await
}

#[retryable(attempts = 5, backoff = "fixed", base = "4s", jitter = "none")]
async fn middle_async() -> Result<(), Down> {
    tokio::task::yield_now().await;
    bottom_async().await
}

#[retryable(attempts = 10, backoff = "fixed", base = "3s", jitter = "none")]
async fn bottom_async() -> Result<(), Down> {
    tokio::task::yield_now().await;
    let start = ASYNC_START.with(Cell::get).expect("start recorded");
    ASYNC_TIMES.with(|t| t.borrow_mut().push(start.elapsed()));
    Err(Down::Unavailable)
}

#[tokio::test(start_paused = true)]
async fn three_layers_async_never_sleep_past_the_outer_deadline() {
    let start = tokio::time::Instant::now();
    ASYNC_START.with(|s| s.set(Some(start)));
    assert_eq!(top_async().await, Err(Down::Unavailable));
    assert_eq!(start.elapsed(), S(10));
    let times = ASYNC_TIMES.with(|t| t.take());
    assert_eq!(times, [S(0), S(3), S(6), S(9), S(10)]);
}

// --- nested = "once": the amplification arithmetic ------------------------------------------

// The values reach `#[retryable]` through `$nested:literal`, wrapped in an invisible group: this
// is also the regression test for the attribute parser once rejecting such values.
macro_rules! layers {
    ($nested:literal: $l1:ident $l2:ident $l3:ident $l4:ident $l5:ident) => {
        #[retryable(attempts = 3, base = "0ms")]
        fn $l1(calls: &mut u32) -> Result<(), Down> {
            $l2(calls)
        }
        #[retryable(attempts = 3, base = "0ms", nested = $nested)]
        fn $l2(calls: &mut u32) -> Result<(), Down> {
            $l3(calls)
        }
        #[retryable(attempts = 3, base = "0ms", nested = $nested)]
        fn $l3(calls: &mut u32) -> Result<(), Down> {
            $l4(calls)
        }
        #[retryable(attempts = 3, base = "0ms", nested = $nested)]
        fn $l4(calls: &mut u32) -> Result<(), Down> {
            $l5(calls)
        }
        #[retryable(attempts = 3, base = "0ms", nested = $nested, on_failure = bottom_failed)]
        fn $l5(calls: &mut u32) -> Result<(), Down> {
            *calls += 1;
            Err(Down::Unavailable)
        }
    };
}

layers!("retry": r1 r2 r3 r4 r5);
layers!("once": o1 o2 o3 o4 o5);

#[test]
fn five_layers_of_three_attempts_call_the_bottom_243_times() {
    let mut calls = 0;
    assert_eq!(r1(&mut calls), Err(Down::Unavailable));
    assert_eq!(calls, 243);
    bottom_nexts();
}

#[test]
fn five_layers_with_once_below_the_top_call_the_bottom_3_times() {
    let mut calls = 0;
    assert_eq!(o1(&mut calls), Err(Down::Unavailable));
    assert_eq!(calls, 3);
    // Every bottom failure is deferred to the outer layer, not an exhausted policy.
    assert_eq!(
        bottom_nexts(),
        vec![Next::Stop(StopReason::DeferredToOuter); 3]
    );
}

#[test]
fn once_outside_any_attempt_retries_as_declared() {
    let mut calls = 0;
    assert_eq!(o5(&mut calls), Err(Down::Unavailable));
    assert_eq!(calls, 3);
    assert_eq!(
        bottom_nexts(),
        [
            Next::Retry(Duration::ZERO),
            Next::Retry(Duration::ZERO),
            Next::Stop(StopReason::AttemptsExhausted)
        ]
    );
}

#[test]
fn once_at_only_the_bottom_layer_divides_by_its_attempts() {
    let mut calls = 0;
    // l3 and l4 retry (3 x 3), and o5 makes one attempt per call instead of 3: 9, not 27.
    #[retryable(attempts = 3, base = "0ms")]
    fn l4(calls: &mut u32) -> Result<(), Down> {
        o5(calls)
    }
    #[retryable(attempts = 3, base = "0ms")]
    fn l3(calls: &mut u32) -> Result<(), Down> {
        l4(calls)
    }
    assert_eq!(l3(&mut calls), Err(Down::Unavailable));
    assert_eq!(calls, 9);
    bottom_nexts();
}

#[retryable(attempts = 4, base = "0ms", nested = "once", on_failure = bottom_failed)]
fn once_rejected() -> Result<(), Down> {
    Err(Down::Rejected)
}

#[retryable(attempts = 2, base = "0ms")]
fn outer_of_rejected() -> Result<(), Down> {
    once_rejected()
}

#[test]
fn a_permanent_error_inside_once_still_stops_as_permanent() {
    assert_eq!(outer_of_rejected(), Err(Down::Rejected));
    assert_eq!(bottom_nexts(), [Next::Stop(StopReason::Permanent)]);
}

#[retryable(attempts = 1, base = "0ms", nested = "once", on_failure = bottom_failed)]
fn once_with_one_attempt() -> Result<(), Down> {
    Err(Down::Unavailable)
}

#[retryable(attempts = 2, base = "0ms")]
fn outer_of_single() -> Result<(), Down> {
    once_with_one_attempt()
}

#[test]
fn once_on_a_single_attempt_policy_reports_attempts_exhausted() {
    assert_eq!(outer_of_single(), Err(Down::Unavailable));
    // Nothing was deferred: one attempt is all it ever makes.
    assert_eq!(
        bottom_nexts(),
        vec![Next::Stop(StopReason::AttemptsExhausted); 2]
    );
}

#[retryable(attempts = 3, base = "0ms")]
async fn async_outer(calls: &Cell<u32>) -> Result<(), Down> {
    async_inner(calls).await
}

#[retryable(attempts = 3, base = "0ms", nested = "once")]
async fn async_inner(calls: &Cell<u32>) -> Result<(), Down> {
    tokio::task::yield_now().await;
    calls.set(calls.get() + 1);
    Err(Down::Unavailable)
}

#[tokio::test(start_paused = true)]
async fn once_holds_across_await_points() {
    let calls = Cell::new(0);
    assert_eq!(async_outer(&calls).await, Err(Down::Unavailable));
    assert_eq!(calls.get(), 3);
    calls.set(0);
    assert_eq!(async_inner(&calls).await, Err(Down::Unavailable));
    assert_eq!(
        calls.get(),
        3,
        "outside an attempt, once retries as declared"
    );
}

// --- keys of nested calls ----------------------------------------------------------------------

/// What the payment processor saw: each charge's idempotency key, and whether it was new.
#[derive(Default)]
struct Processor {
    keys: Vec<String>,
    charged: Vec<String>,
}

impl Processor {
    fn charge(&mut self, key: String) {
        if !self.charged.contains(&key) {
            self.charged.push(key.clone());
        }
        self.keys.push(key);
    }
}

fn key() -> String {
    retry_kit::current_attempt()
        .unwrap()
        .idempotency_key()
        .to_string()
}

#[retryable(attempts = 3, base = "0ms", nested = "once")]
fn charge(processor: &mut Processor) -> Result<(), Down> {
    processor.charge(key());
    Ok(())
}

#[retryable(attempts = 3, base = "0ms", nested = "once")]
fn audit(log: &mut Vec<String>) -> Result<(), Down> {
    log.push(key());
    Ok(())
}

/// The documented "retry at one layer" pattern: the outer `checkout` retries, its inner
/// `charge` makes one attempt per outer attempt. The first outer attempt charges, then fails
/// shipping; the second charges again. An audit call happens only on the first attempt.
#[retryable(attempts = 3, base = "0ms")]
fn checkout(processor: &mut Processor, audit_log: &mut Vec<String>) -> Result<(), Down> {
    let attempt = retry_kit::current_attempt().unwrap().number();
    if attempt == 1 {
        audit(audit_log)?;
    }
    charge(processor)?;
    if attempt == 1 {
        return Err(Down::Unavailable); // shipping failed after the charge went through
    }
    Ok(())
}

#[test]
fn an_outer_retry_sends_the_inner_calls_keys_again() {
    // Before the fix each inner call drew a fresh key: two keys, two charges.
    let mut processor = Processor::default();
    let mut audit_log = Vec::new();
    checkout(&mut processor, &mut audit_log).unwrap();
    assert_eq!(processor.keys.len(), 2);
    assert_eq!(processor.keys[0], processor.keys[1]);
    assert_eq!(processor.charged.len(), 1, "charged once");
    // The audit call made on the first attempt only did not move charge's key, and the two
    // operations did not share one.
    assert_ne!(audit_log[0], processor.keys[0]);
    // A second checkout is another call: new keys.
    let first = processor.keys[0].clone();
    checkout(&mut processor, &mut Vec::new()).unwrap();
    assert_ne!(processor.keys[2], first);
}

#[retryable(attempts = 2, base = "0ms")]
fn pay_twice(processor: &mut Processor, fail_first: &mut bool) -> Result<(), Down> {
    charge(processor)?;
    charge(processor)?;
    if std::mem::take(fail_first) {
        return Err(Down::Unavailable);
    }
    Ok(())
}

#[test]
fn two_calls_of_one_operation_in_an_attempt_get_two_keys_the_same_on_every_attempt() {
    let mut processor = Processor::default();
    pay_twice(&mut processor, &mut true).unwrap();
    let keys = &processor.keys;
    assert_eq!(keys.len(), 4);
    assert_ne!(keys[0], keys[1]);
    assert_eq!(keys[0..2], keys[2..4]);
}

#[test]
fn nested_builder_calls_derive_their_keys_too() {
    let policy = retry_kit::RetryPolicy::fixed(Duration::ZERO).attempts(2);
    let mut seen = Vec::new();
    let mut outer = 0;
    let result: Result<(), Down> = policy.call(|| {
        outer += 1;
        let inner: Result<(), Down> = retry_kit::RetryPolicy::new().attempts(1).call(|| {
            seen.push(key());
            Ok(())
        });
        inner?;
        if outer == 1 {
            Err(Down::Unavailable)
        } else {
            Ok(())
        }
    });
    result.unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn key_for_names_an_operation_the_same_on_every_attempt() {
    let mut keys = Vec::new();
    let policy = retry_kit::RetryPolicy::fixed(Duration::ZERO).attempts(2);
    let _: Result<(), Down> = policy.call(|| {
        let attempt = retry_kit::current_attempt().unwrap();
        keys.push((
            attempt.key_for("charge:17").to_string(),
            attempt.key_for("charge:18").to_string(),
            attempt.idempotency_key().to_string(),
        ));
        if attempt.number() == 1 {
            Err(Down::Unavailable)
        } else {
            Ok(())
        }
    });
    assert_eq!(keys[0], keys[1]);
    let (a, b, own) = &keys[0];
    assert!(a != b && a != own && b != own);
}
