//! `retry_if`: an `Ok` value the predicate flags is retried as a transient failure; the last
//! value is returned when attempts run out; errors are classified as ever.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, ErrorClass, Failure, Next, Rejected, StopReason, retryable, testing};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum JobError {
    #[classify(transient)]
    Busy,
    #[classify(permanent)]
    Gone,
}

#[derive(Clone, Debug, PartialEq)]
enum Status {
    Pending,
    Ready(u32),
}

fn pending(status: &Status) -> bool {
    *status == Status::Pending
}

static RECORDS: Mutex<Vec<(u32, ErrorClass, Next, String)>> = Mutex::new(Vec::new());

fn record(f: &Failure<'_, Rejected<Status, JobError>>) {
    RECORDS
        .lock()
        .unwrap()
        .push((f.attempt, f.class, f.next, format!("{:?}", f.error)));
}

#[retryable(attempts = 4, backoff = "fixed", base = "2s", jitter = "none", retry_if = pending, on_failure = record)]
fn poll(answers: &mut Vec<Result<Status, JobError>>) -> Result<Status, JobError> {
    answers.pop().unwrap()
}

#[test]
fn a_flagged_value_is_retried_and_recorded_as_a_transient_failure() {
    let mut answers = vec![
        Ok(Status::Ready(3)),
        Err(JobError::Busy),
        Ok(Status::Pending),
    ];
    let (out, slept) = testing::record_sleeps(|| poll(&mut answers));
    assert_eq!(out, Ok(Status::Ready(3)));
    assert_eq!(slept, [Duration::from_secs(2), Duration::from_secs(2)]);
    let records = RECORDS.lock().unwrap();
    assert_eq!(
        *records,
        [
            (
                1,
                ErrorClass::Transient,
                Next::Retry(Duration::from_secs(2)),
                "Value(Pending)".to_owned()
            ),
            (
                2,
                ErrorClass::Transient,
                Next::Retry(Duration::from_secs(2)),
                "Error(Busy)".to_owned()
            ),
        ]
    );
}

#[retryable(attempts = 3, base = "0ms", retry_if = pending)]
async fn poll_async(answers: &mut Vec<Result<Status, JobError>>) -> Result<Status, JobError> {
    tokio::task::yield_now().await;
    answers.pop().unwrap()
}

#[tokio::test]
async fn when_attempts_run_out_the_last_value_is_returned() {
    let mut answers: Vec<Result<Status, JobError>> = (0..5).map(|_| Ok(Status::Pending)).collect();
    assert_eq!(poll_async(&mut answers).await, Ok(Status::Pending));
    assert_eq!(answers.len(), 2, "three attempts");
}

#[tokio::test]
async fn errors_are_classified_as_without_retry_if() {
    let mut answers = vec![Ok(Status::Ready(1)), Err(JobError::Gone)];
    assert_eq!(poll_async(&mut answers).await, Err(JobError::Gone));
    assert_eq!(answers.len(), 1, "a permanent error is not retried");
}

fn stop_reason(f: &Failure<'_, Rejected<u32, JobError>>) {
    if let Next::Stop(reason) = f.next {
        assert_eq!(reason, StopReason::AttemptsExhausted);
    }
}

#[retryable(attempts = 2, base = "0ms", retry_if = is_odd, on_failure = stop_reason)]
fn odd_numbers(n: &mut u32) -> Result<u32, JobError> {
    *n += 2;
    Ok(*n)
}

fn is_odd(n: &u32) -> bool {
    n % 2 == 1
}

#[test]
fn values_the_predicate_does_not_flag_return_at_once() {
    let mut n = 0;
    assert_eq!(odd_numbers(&mut n), Ok(2));
    let mut n = 1;
    assert_eq!(
        odd_numbers(&mut n),
        Ok(5),
        "two odd values: the last one is returned"
    );
}

#[tokio::test(start_paused = true)]
async fn the_builder_retries_flagged_values_sync_and_async() {
    use retry_kit::{Retry, RetryPolicy};
    let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(4);
    let seen = std::cell::Cell::new(0);
    let out = Retry::new(&policy)
        .retry_if(pending)
        .call_async(|| {
            seen.set(seen.get() + 1);
            let status = if seen.get() < 3 {
                Status::Pending
            } else {
                Status::Ready(9)
            };
            async move { Ok::<_, JobError>(status) }
        })
        .await;
    assert_eq!(out, Ok(Status::Ready(9)));
    assert_eq!(seen.get(), 3);
    // Sync, with a hook that sees the rejected values.
    let mut flagged = Vec::new();
    let (out, slept) = testing::record_sleeps(|| {
        Retry::new(&policy)
            .on_failure(|f: &Failure<'_, Rejected<u32, JobError>>| flagged.push(f.attempt))
            .retry_if(|n: &u32| *n < 2)
            .call({
                let mut n = 0;
                move || {
                    n += 1;
                    Ok(n)
                }
            })
    });
    assert_eq!(out, Ok(2));
    assert_eq!(slept.len(), 1);
    assert_eq!(flagged, [1]);
}
