//! "Already done": an error that says an earlier attempt succeeded (a duplicate transaction, an
//! idempotency key the receiver has seen) is never retried; the loop stops with
//! `StopReason::AlreadyDone`, and `already_done = path` turns the error into the result. For
//! the breaker it is an answer (a success), and it costs no budget token.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    CircuitBreaker, CircuitState, Classify, ErrorClass, Failure, Next, RetryBudget, StopReason,
    retryable,
};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum PayError {
    #[classify(transient)]
    Timeout,
    #[classify(already_done)]
    Duplicate { receipt: u64 },
    #[classify(permanent)]
    Declined,
}

#[derive(Debug, PartialEq, Classify)]
#[classify(already_done)]
struct Seen;

#[test]
fn the_tag_classifies_variants_and_structs_as_already_done() {
    assert_eq!(
        PayError::Duplicate { receipt: 1 }.class(),
        ErrorClass::AlreadyDone
    );
    assert_eq!(Seen.class(), ErrorClass::AlreadyDone);
    assert!(!ErrorClass::AlreadyDone.is_retryable(true));
    assert!(!ErrorClass::AlreadyDone.is_failure());
    assert_eq!(ErrorClass::AlreadyDone.to_string(), "already_done");
    assert_eq!(StopReason::AlreadyDone.to_string(), "already_done");
}

static STOPS: Mutex<Vec<(u32, ErrorClass, Next)>> = Mutex::new(Vec::new());

fn record(f: &Failure<'_, PayError>) {
    STOPS.lock().unwrap().push((f.attempt, f.class, f.next));
}

#[retryable(attempts = 5, base = "0ms", on_failure = record)]
fn pay(answers: &mut Vec<Result<u64, PayError>>) -> Result<u64, PayError> {
    answers.pop().unwrap_or(Err(PayError::Declined))
}

#[test]
fn a_duplicate_after_a_lost_answer_stops_the_loop_with_its_reason() {
    // Attempt 1 times out (its answer lost), attempt 2 is told the payment exists.
    let mut answers = vec![
        Ok(9),
        Err(PayError::Duplicate { receipt: 42 }),
        Err(PayError::Timeout),
    ];
    assert_eq!(pay(&mut answers), Err(PayError::Duplicate { receipt: 42 }));
    assert_eq!(answers, [Ok(9)], "not retried after the duplicate");
    let stops = STOPS.lock().unwrap();
    assert_eq!(
        *stops,
        [
            (1, ErrorClass::Transient, Next::Retry(Duration::ZERO)),
            (
                2,
                ErrorClass::AlreadyDone,
                Next::Stop(StopReason::AlreadyDone)
            ),
        ]
    );
}

fn receipt_of(e: PayError) -> Result<u64, PayError> {
    match e {
        PayError::Duplicate { receipt } => Ok(receipt),
        other => Err(other),
    }
}

#[retryable(attempts = 5, base = "0ms", already_done = receipt_of)]
fn pay_idempotently(answers: &mut Vec<Result<u64, PayError>>) -> Result<u64, PayError> {
    answers.pop().unwrap_or(Err(PayError::Declined))
}

#[retryable(attempts = 5, base = "0ms", already_done = receipt_of)]
async fn pay_async(answers: &mut Vec<Result<u64, PayError>>) -> Result<u64, PayError> {
    tokio::task::yield_now().await;
    answers.pop().unwrap_or(Err(PayError::Declined))
}

#[tokio::test]
async fn already_done_turns_the_duplicate_into_the_result_and_leaves_other_errors() {
    let mut answers = vec![
        Err(PayError::Duplicate { receipt: 7 }),
        Err(PayError::Timeout),
    ];
    assert_eq!(pay_idempotently(&mut answers), Ok(7));
    let mut answers = vec![Err(PayError::Duplicate { receipt: 8 })];
    assert_eq!(pay_async(&mut answers).await, Ok(8));
    // A permanent error is still returned as it is.
    let mut answers = vec![Err(PayError::Declined)];
    assert_eq!(pay_idempotently(&mut answers), Err(PayError::Declined));
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60));
static BUDGET: RetryBudget = RetryBudget::new(10, 0.5);

#[retryable(attempts = 3, base = "0ms", circuit = BREAKER, budget = BUDGET)]
fn duplicate_each_time() -> Result<(), Dup> {
    Err(Dup::Seen)
}

#[derive(Debug, Classify)]
enum Dup {
    #[classify(already_done)]
    Seen,
    #[classify(transient)]
    Open,
}

impl From<retry_kit::CircuitOpen> for Dup {
    fn from(_: retry_kit::CircuitOpen) -> Self {
        Dup::Open
    }
}

#[test]
fn for_the_breaker_and_the_budget_it_is_an_answer_not_a_failure() {
    for _ in 0..5 {
        assert!(matches!(duplicate_each_time(), Err(Dup::Seen)));
    }
    // A threshold of one failure: an "already done" never opened it.
    assert_eq!(BREAKER.state(), CircuitState::Closed);
    // No token charged; the successes' refunds are capped at the top.
    assert_eq!(BUDGET.tokens(), 10.0);
}

#[tokio::test]
async fn the_builder_resolves_already_done_sync_and_async() {
    use retry_kit::{Retry, RetryPolicy};
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    let mut answers = vec![
        Err(PayError::Duplicate { receipt: 5 }),
        Err(PayError::Timeout),
    ];
    let out = Retry::new(&policy)
        .already_done(receipt_of)
        .call(|| answers.pop().unwrap());
    assert_eq!(out, Ok(5));
    let out = Retry::new(&policy)
        .already_done(receipt_of)
        .call_async(|| async { Err::<u64, _>(PayError::Declined) })
        .await;
    assert_eq!(
        out,
        Err(PayError::Declined),
        "other errors are returned as they are"
    );
}
