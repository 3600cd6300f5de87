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

#[derive(Debug, PartialEq, Classify)]
enum ApiError {
    #[classify(transient)]
    Open,
}

impl From<retry_kit::CircuitOpen> for ApiError {
    fn from(_: retry_kit::CircuitOpen) -> Self {
        ApiError::Open
    }
}

static JOBS_API: retry_kit::CircuitBreaker =
    retry_kit::CircuitBreaker::new(5, Duration::from_secs(30));
static JOBS_BUDGET: retry_kit::RetryBudget = retry_kit::RetryBudget::new(10, 0.1);

fn running(status: &Status) -> bool {
    *status == Status::Pending
}

#[retryable(attempts = 10, backoff = "fixed", base = "1s", retry_if = running,
            circuit = JOBS_API, budget = JOBS_BUDGET)]
fn poll_job(polls: &mut u32) -> Result<Status, ApiError> {
    *polls += 1;
    Ok(if *polls < 8 {
        Status::Pending
    } else {
        Status::Ready(*polls)
    })
}

#[test]
fn a_retry_if_poller_neither_trips_the_breaker_nor_drains_the_budget() {
    // A healthy job poller, done after 8 polls. Before the fix each "not ready yet" was a
    // breaker failure: the 5th opened the breaker, the poll stopped with a stale `Pending`, and
    // every other call to the dependency was refused for 30 s; the budget lost a token a poll.
    let mut polls = 0;
    let (status, slept) = testing::record_sleeps(|| poll_job(&mut polls));
    assert_eq!(status, Ok(Status::Ready(8)));
    assert_eq!(slept, [Duration::from_secs(1); 7]);
    assert_eq!(JOBS_API.state(), retry_kit::CircuitState::Closed);
    assert_eq!(JOBS_BUDGET.tokens(), 10.0);
    // And a failure still counts: the breaker and the budget are live.
    JOBS_API.try_acquire().unwrap().failed();
    assert!(
        format!("{JOBS_API:?}").contains("failures: 1"),
        "{JOBS_API:?}"
    );
}

static ANSWERS: Mutex<Vec<(ErrorClass, bool, &'static str)>> = Mutex::new(Vec::new());

fn log_answer(f: &Failure<'_, Rejected<Status, JobError>>) {
    ANSWERS
        .lock()
        .unwrap()
        .push((f.class, f.answered, f.class_label()));
}

#[retryable(attempts = 3, base = "0ms", retry_if = pending, on_failure = log_answer)]
fn poll_logged(answers: &mut Vec<Result<Status, JobError>>) -> Result<Status, JobError> {
    answers.pop().unwrap()
}

#[test]
fn a_flagged_value_is_recorded_as_an_answer_with_the_class_label_value() {
    let mut answers = vec![
        Ok(Status::Ready(1)),
        Err(JobError::Busy),
        Ok(Status::Pending),
    ];
    assert_eq!(poll_logged(&mut answers), Ok(Status::Ready(1)));
    assert_eq!(
        *ANSWERS.lock().unwrap(),
        [
            (ErrorClass::Transient, true, "value"),
            (ErrorClass::Transient, false, "transient"),
        ]
    );
}
