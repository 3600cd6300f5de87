//! `attempt_timeout`: each attempt of an async fn is cancelled after the limit, on tokio's paused
//! clock; the error is `E::from(TimedOut)`, retried only when the function is idempotent.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    CircuitBreaker, CircuitOpen, CircuitState, Classify, ErrorClass, Failure, Next, Retry,
    RetryPolicy, StopReason, TimedOut, retryable,
};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::{Instant, sleep};

#[derive(Debug, Classify)]
enum RpcError {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Timeout(TimedOut),
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<TimedOut> for RpcError {
    fn from(t: TimedOut) -> Self {
        RpcError::Timeout(t)
    }
}

impl From<CircuitOpen> for RpcError {
    fn from(open: CircuitOpen) -> Self {
        RpcError::Open(open)
    }
}

const SECOND: Duration = Duration::from_secs(1);

#[retryable(attempts = 3, base = "1s", jitter = "none", attempt_timeout = "2s")]
async fn write(work: Duration, attempts: &AtomicU32) -> Result<u32, RpcError> {
    attempts.fetch_add(1, Ordering::Relaxed);
    sleep(work).await;
    Ok(7)
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_cancelled_at_the_limit_with_timed_out() {
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let Err(RpcError::Timeout(t)) = write(10 * SECOND, &attempts).await else {
        panic!("expected a timeout");
    };
    assert_eq!(t.limit(), 2 * SECOND);
    // Not idempotent: the timed-out write is not repeated, since it may have happened.
    assert_eq!(attempts.load(Ordering::Relaxed), 1);
    assert_eq!(start.elapsed(), 2 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_within_the_limit_is_untouched() {
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let work = Duration::from_millis(1999);
    assert_eq!(write(work, &attempts).await.unwrap(), 7);
    assert_eq!(attempts.load(Ordering::Relaxed), 1);
    assert_eq!(start.elapsed(), work);
}

#[retryable(
    attempts = 3,
    base = "1s",
    jitter = "none",
    attempt_timeout = "2s",
    idempotent
)]
async fn read(slow_attempts: u32, attempts: &AtomicU32) -> Result<u32, RpcError> {
    let n = attempts.fetch_add(1, Ordering::Relaxed) + 1;
    if n <= slow_attempts {
        sleep(60 * SECOND).await;
    }
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_fn_repeats_a_timed_out_attempt() {
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(read(2, &attempts).await.unwrap(), 3);
    // Two timeouts of 2 s, and the exponential sleeps of 1 s and 2 s between the attempts.
    assert_eq!(start.elapsed(), 7 * SECOND);

    let attempts = AtomicU32::new(0);
    assert!(matches!(
        read(3, &attempts).await,
        Err(RpcError::Timeout(_))
    ));
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
}

static CLASSES: Mutex<Vec<(ErrorClass, Next)>> = Mutex::new(Vec::new());

fn log_class(f: &Failure<'_, RpcError>) {
    CLASSES.lock().unwrap().push((f.class, f.next));
}

fn everything_transient(_: &RpcError) -> ErrorClass {
    ErrorClass::Transient
}

#[retryable(attempts = 3, base = "0ms", attempt_timeout = "1s",
            classify = everything_transient, on_failure = log_class)]
async fn classified_transient() -> Result<(), RpcError> {
    sleep(5 * SECOND).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_idempotent_only_whatever_the_classifier_says() {
    assert!(matches!(
        classified_transient().await,
        Err(RpcError::Timeout(_))
    ));
    assert_eq!(
        *CLASSES.lock().unwrap(),
        [(
            ErrorClass::IdempotentOnly,
            Next::Stop(StopReason::NotIdempotent)
        )]
    );
}

static TIMEOUT_BREAKER: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));

#[retryable(attempts = 1, attempt_timeout = "500ms", circuit = TIMEOUT_BREAKER)]
async fn hangs() -> Result<(), RpcError> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn timeouts_count_against_the_breaker() {
    for _ in 0..2 {
        assert!(matches!(hangs().await, Err(RpcError::Timeout(_))));
    }
    assert_eq!(TIMEOUT_BREAKER.state(), CircuitState::Open);
    assert!(matches!(hangs().await, Err(RpcError::Open(_))));
}

static CUSTOM_SLEEPS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

async fn counted_sleep(d: Duration) {
    CUSTOM_SLEEPS.lock().unwrap().push(d);
    sleep(d).await;
}

#[retryable(attempts = 2, base = "3s", jitter = "none", idempotent,
            attempt_timeout = "250ms", sleep = counted_sleep)]
async fn custom_runtime() -> Result<(), RpcError> {
    sleep(SECOND).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_custom_sleep_also_times_the_attempts() {
    assert!(custom_runtime().await.is_err());
    let ms = Duration::from_millis;
    assert_eq!(
        *CUSTOM_SLEEPS.lock().unwrap(),
        [ms(250), Duration::from_secs(3), ms(250)]
    );
}

#[retryable(attempts = 2, base = "0ms", attempt_timeout = "1s", idempotent)]
async fn io_call(calls: &mut u32) -> io::Result<u32> {
    *calls += 1;
    if *calls == 1 {
        sleep(5 * SECOND).await;
    }
    Ok(*calls)
}

#[tokio::test(start_paused = true)]
async fn io_result_fns_time_out_with_an_io_timed_out_error() {
    let mut calls = 0;
    assert_eq!(io_call(&mut calls).await.unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_builder_times_out_attempts_of_call_async() {
    let policy = RetryPolicy::fixed(SECOND)
        .attempts(4)
        .idempotent(true)
        .jitter(retry_kit::Jitter::None);
    let mut attempts = 0;
    let start = Instant::now();
    let result: Result<(), RpcError> = Retry::new(&policy)
        .attempt_timeout(3 * SECOND)
        .call_async(|| {
            attempts += 1;
            let n = attempts;
            async move {
                if n < 3 {
                    sleep(10 * SECOND).await;
                    Err(RpcError::Unavailable)
                } else {
                    Ok(())
                }
            }
        })
        .await;
    result.unwrap();
    assert_eq!(attempts, 3);
    assert_eq!(start.elapsed(), 3 * SECOND + SECOND + 3 * SECOND + SECOND);
}

#[tokio::test(start_paused = true)]
async fn a_body_ready_at_once_wins_even_at_the_limit() {
    #[retryable(attempts = 1, attempt_timeout = "1ns")]
    async fn instant() -> Result<u8, RpcError> {
        Ok(1)
    }
    assert_eq!(instant().await.unwrap(), 1);
}

static SEND_BUDGET: retry_kit::RetryBudget = retry_kit::RetryBudget::new(10, 0.1);

#[retryable(attempts = 2, idempotent, attempt_timeout = "1s", circuit = TIMEOUT_BREAKER,
            budget = SEND_BUDGET)]
async fn everything(x: &mut u32) -> Result<u32, RpcError> {
    sleep(SECOND).await;
    *x += 1;
    Ok(*x)
}

#[test]
fn a_protected_async_fn_is_still_send() {
    fn assert_send<T: Send>(_: T) {}
    let mut x = 0;
    assert_send(everything(&mut x));
    assert_send(hangs());
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "100ms",
    idempotent,
    attempt_timeout = "1s",
    deadline = "2.5s"
)]
async fn hangs_under_a_deadline(attempts: &AtomicU32) -> Result<u32, RpcError> {
    attempts.fetch_add(1, Ordering::Relaxed);
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_the_last_attempt_under_attempt_timeout() {
    // Attempts of 1 s at 0 s and 1.1 s; the third starts at 2.2 s with 0.3 s left. Before the
    // fix it ran its full second and the call returned at 3.2 s, past its 2.5 s deadline.
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let Err(RpcError::Timeout(t)) = hangs_under_a_deadline(&attempts).await else {
        panic!("expected a timeout");
    };
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    assert_eq!(t.limit(), Duration::from_millis(300));
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn the_builder_bounds_an_attempt_by_the_deadline_too() {
    let policy = RetryPolicy::fixed(Duration::from_millis(100))
        .attempts(3)
        .idempotent(true)
        .deadline(Duration::from_millis(2500));
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    let result: Result<u32, RpcError> = Retry::new(&policy)
        .attempt_timeout(SECOND)
        .call_async(|| async {
            attempts.fetch_add(1, Ordering::Relaxed);
            std::future::pending().await
        })
        .await;
    assert!(matches!(result, Err(RpcError::Timeout(_))));
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    assert_eq!(attempts.load(Ordering::Relaxed), 3);

    // Hedged: a failure starts the next attempt at once (at 1 s and 2 s); the third has 0.5 s.
    let start = Instant::now();
    let result: Result<u32, RpcError> = Retry::new(&policy)
        .attempt_timeout(SECOND)
        .hedge(Duration::from_millis(1200))
        .unwrap()
        .call_async(std::future::pending)
        .await;
    assert!(matches!(result, Err(RpcError::Timeout(_))));
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
}

#[retryable(
    attempts = 3,
    idempotent,
    hedge = "1200ms",
    attempt_timeout = "1s",
    deadline = "2.5s"
)]
async fn hedged_under_a_deadline() -> Result<u32, RpcError> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn a_hedged_attempt_is_bounded_by_the_deadline() {
    let start = Instant::now();
    assert!(matches!(
        hedged_under_a_deadline().await,
        Err(RpcError::Timeout(_))
    ));
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
}
