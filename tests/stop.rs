//! When the loop stops: every `StopReason`, each observed through the `on_failure` records.

use retry_kit::{Classify, ErrorClass, Failure, Next, StopReason, retryable, testing};
use std::cell::RefCell;
use std::time::Duration;

#[derive(Debug, PartialEq, Clone, Classify)]
enum Error {
    #[classify(transient)]
    Reset,
    #[classify(permanent)]
    Invalid,
    #[classify(idempotent_only)]
    Timeout,
    #[classify(transient)]
    Throttled {
        #[classify(retry_after)]
        wait: Duration,
    },
}

thread_local! {
    static RECORDS: RefCell<Vec<(u32, ErrorClass, Next)>> = const { RefCell::new(Vec::new()) };
}

fn record(f: &Failure<'_, Error>) {
    RECORDS.with(|r| r.borrow_mut().push((f.attempt, f.class, f.next)));
}

fn records() -> Vec<(u32, ErrorClass, Next)> {
    RECORDS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

fn last_stop() -> Option<StopReason> {
    match records().last()?.2 {
        Next::Stop(reason) => Some(reason),
        _ => None,
    }
}

#[retryable(attempts = 5, base = "0ms", on_failure = record)]
fn fails_with(error: &Error, calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    Err(error.clone())
}

#[retryable(attempts = 5, base = "0ms", idempotent, on_failure = record)]
fn idempotent_fails_with(error: &Error, calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    Err(error.clone())
}

#[test]
fn a_permanent_error_makes_one_call() {
    let mut calls = 0;
    assert_eq!(fails_with(&Error::Invalid, &mut calls), Err(Error::Invalid));
    assert_eq!(calls, 1);
    assert_eq!(last_stop(), Some(StopReason::Permanent));
}

#[test]
fn an_idempotent_only_error_makes_one_call_unless_the_fn_is_idempotent() {
    let mut calls = 0;
    assert_eq!(fails_with(&Error::Timeout, &mut calls), Err(Error::Timeout));
    assert_eq!(calls, 1);
    assert_eq!(last_stop(), Some(StopReason::NotIdempotent));

    let mut calls = 0;
    assert_eq!(
        idempotent_fails_with(&Error::Timeout, &mut calls),
        Err(Error::Timeout)
    );
    assert_eq!(calls, 5);
    assert_eq!(last_stop(), Some(StopReason::AttemptsExhausted));
}

#[test]
fn transient_errors_use_every_attempt_and_records_count_them() {
    let mut calls = 0;
    assert_eq!(fails_with(&Error::Reset, &mut calls), Err(Error::Reset));
    assert_eq!(calls, 5);
    let records = records();
    let attempts: Vec<u32> = records.iter().map(|r| r.0).collect();
    assert_eq!(attempts, [1, 2, 3, 4, 5]);
    assert!(records.iter().all(|r| r.1 == ErrorClass::Transient));
    assert!(records[..4].iter().all(|r| matches!(r.2, Next::Retry(_))));
    assert_eq!(records[4].2, Next::Stop(StopReason::AttemptsExhausted));
}

#[retryable(attempts = 10, backoff = "fixed", base = "4s", jitter = "none", deadline = "10s", on_failure = record)]
fn fixed_4s_within_10s(calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    Err(Error::Reset)
}

#[test]
fn no_sleep_that_would_end_past_the_deadline_is_started() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| fixed_4s_within_10s(&mut calls));
    assert_eq!(result, Err(Error::Reset));
    // Fails at 0 s and 4 s and 8 s; a sleep to 12 s would pass the 10 s deadline.
    assert_eq!(slept, [Duration::from_secs(4); 2]);
    assert_eq!(calls, 3);
    assert_eq!(last_stop(), Some(StopReason::DeadlineExceeded));
}

#[retryable(
    attempts = 10,
    backoff = "fixed",
    base = "5s",
    jitter = "none",
    deadline = "10s"
)]
fn fixed_5s_within_10s(calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    Err(Error::Reset)
}

#[test]
fn a_sleep_ending_exactly_at_the_deadline_is_allowed() {
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| fixed_5s_within_10s(&mut calls));
    assert_eq!(slept, [Duration::from_secs(5); 2]);
    assert_eq!(calls, 3);
}

#[retryable(attempts = 5, base = "100ms", max_delay = "2s", jitter = "none", on_failure = record)]
fn throttled(wait: Duration, calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    if *calls < 3 {
        Err(Error::Throttled { wait })
    } else {
        Ok(())
    }
}

#[test]
fn a_retry_after_hint_lengthens_the_wait_but_never_shortens_it() {
    let mut calls = 0;
    let (result, slept) =
        testing::record_sleeps(|| throttled(Duration::from_millis(1500), &mut calls));
    assert_eq!(result, Ok(()));
    assert_eq!(slept, [Duration::from_millis(1500); 2]);
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| throttled(Duration::from_millis(50), &mut calls));
    assert_eq!(
        slept,
        [Duration::from_millis(100), Duration::from_millis(200)]
    );
    records();
}

#[test]
fn a_retry_after_beyond_max_delay_stops_instead_of_retrying_early() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| throttled(Duration::from_secs(3), &mut calls));
    assert_eq!(
        result,
        Err(Error::Throttled {
            wait: Duration::from_secs(3)
        })
    );
    assert!(slept.is_empty());
    assert_eq!(calls, 1);
    assert_eq!(last_stop(), Some(StopReason::RetryAfterTooLong));
}

#[test]
fn a_retry_after_of_exactly_max_delay_is_waited() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| throttled(Duration::from_secs(2), &mut calls));
    assert_eq!(result, Ok(()));
    assert_eq!(slept, [Duration::from_secs(2); 2]);
    records();
}

#[retryable(attempts = 5, base = "100ms", max_delay = "10s", jitter = "none", deadline = "2s", on_failure = record)]
fn throttled_with_deadline(calls: &mut u32) -> Result<(), Error> {
    *calls += 1;
    Err(Error::Throttled {
        wait: Duration::from_secs(3),
    })
}

#[test]
fn a_retry_after_that_would_pass_the_deadline_stops() {
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| throttled_with_deadline(&mut calls));
    assert!(slept.is_empty());
    assert_eq!(last_stop(), Some(StopReason::DeadlineExceeded));
}

#[tokio::test(start_paused = true)]
async fn time_spent_inside_attempts_counts_against_the_deadline() {
    #[retryable(
        attempts = 10,
        backoff = "fixed",
        base = "1s",
        jitter = "none",
        deadline = "10s"
    )]
    async fn slow(calls: &mut u32) -> Result<(), Error> {
        *calls += 1;
        tokio::time::sleep(Duration::from_secs(3)).await;
        Err(Error::Reset)
    }
    let start = tokio::time::Instant::now();
    let mut calls = 0;
    assert_eq!(slow(&mut calls).await, Err(Error::Reset));
    // Attempts end at 3, 7 and 11 s (each followed by a 1 s sleep): the third ends past the
    // deadline, so no sleep follows it.
    assert_eq!(calls, 3);
    assert_eq!(start.elapsed(), Duration::from_secs(11));
}

#[tokio::test(start_paused = true)]
async fn elapsed_in_records_follows_the_paused_clock() {
    thread_local! {
        static ELAPSED: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
    }
    fn keep(f: &Failure<'_, Error>) {
        ELAPSED.with(|e| e.borrow_mut().push(f.elapsed));
    }
    #[retryable(attempts = 3, backoff = "fixed", base = "2s", jitter = "none", on_failure = keep)]
    async fn op() -> Result<(), Error> {
        tokio::time::sleep(Duration::from_millis(500)).await;
        Err(Error::Reset)
    }
    let _ = op().await;
    let elapsed = ELAPSED.with(|e| e.borrow().clone());
    assert_eq!(elapsed, [500, 3000, 5500].map(Duration::from_millis));
}
