//! Shared state under cancellation, panics and many threads, all three kinds at once: the
//! circuit breaker, the retry budget and the adaptive window of one function.
//!
//! - A call dropped mid-attempt leaves no trace in any of them; one dropped mid-sleep keeps
//!   exactly what its finished attempts recorded, and its held retry permit counts as nothing.
//! - A panicking body propagates its own payload, is not retried, and counts once as a failure
//!   everywhere: the breaker, the budget (one token) and the window (one failed attempt); see
//!   the rule on `Protected`'s `Drop`.
//! - Under 8 threads no update is lost: the budget and the breaker's count end exactly where
//!   the arithmetic says.
#![deny(warnings, unused_qualifications)]

use retry_kit::adaptive::AdaptivePolicy;
use retry_kit::{
    CircuitBreaker, CircuitOpen, CircuitState, Classify, Retry, RetryBudget, RetryPolicy,
    current_attempt, retryable, testing,
};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Waker};
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum Upstream {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for Upstream {
    fn from(open: CircuitOpen) -> Self {
        Upstream::Open(open)
    }
}

static CANCEL_BREAKER: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(60));
static CANCEL_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);
static CANCEL_WINDOW: AdaptivePolicy<16> = AdaptivePolicy::new(&[]);

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "1s",
    jitter = "none",
    circuit = CANCEL_BREAKER,
    budget = CANCEL_BUDGET,
    adaptive = CANCEL_WINDOW
)]
async fn guarded(hang: bool, bodies: &AtomicU32) -> Result<(), Upstream> {
    bodies.fetch_add(1, Ordering::Relaxed);
    if hang {
        std::future::pending::<()>().await;
    }
    Err(Upstream::Unavailable)
}

/// Poll `future` once, then drop it.
fn poll_once_and_drop<F: Future>(future: F) {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(future.as_mut().poll(&mut cx).is_pending());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_call_releases_breaker_budget_and_window_state() {
    let bodies = AtomicU32::new(0);

    // Mid-attempt: the first attempt never finishes. Nothing was observed, nothing recorded.
    poll_once_and_drop(guarded(true, &bodies));
    assert_eq!(bodies.load(Ordering::Relaxed), 1);
    assert_eq!(CANCEL_BUDGET.tokens(), 10.0);
    assert_eq!(CANCEL_WINDOW.stats().count, 0);
    assert_eq!(CANCEL_BREAKER.state(), CircuitState::Closed);
    assert!(current_attempt().is_none());

    // Mid-sleep: attempt 1 failed (one token, one failed window slot, breaker count 1), then
    // the retry's permit was taken and the 1 s sleep began; the drop cuts it short.
    poll_once_and_drop(guarded(false, &bodies));
    assert_eq!(bodies.load(Ordering::Relaxed), 2);
    assert_eq!(CANCEL_BUDGET.tokens(), 9.0);
    let stats = CANCEL_WINDOW.stats();
    assert_eq!((stats.count, stats.failures), (1, 1));
    // The dropped retry permit counted as neither success nor failure: a failure would have
    // been the second of a threshold of 2.
    assert_eq!(CANCEL_BREAKER.state(), CircuitState::Closed);
    assert!(current_attempt().is_none());

    // A full call: its first failure is the second in a row (the dropped call's one was kept),
    // so the breaker opens and refuses the retry.
    let result = guarded(false, &bodies).await;
    assert!(matches!(result, Err(Upstream::Unavailable)), "{result:?}");
    assert_eq!(bodies.load(Ordering::Relaxed), 3);
    assert_eq!(CANCEL_BREAKER.state(), CircuitState::Open);
    assert_eq!(CANCEL_BUDGET.tokens(), 8.0);
    let stats = CANCEL_WINDOW.stats();
    assert_eq!((stats.count, stats.failures), (2, 2));
}

static PANIC_BREAKER: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(60));
static PANIC_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);
static PANIC_WINDOW: AdaptivePolicy<16> = AdaptivePolicy::new(&[]);

#[derive(Debug, PartialEq)]
struct Bug(u32);

#[retryable(
    attempts = 5,
    base = "10ms",
    circuit = PANIC_BREAKER,
    budget = PANIC_BUDGET,
    adaptive = PANIC_WINDOW
)]
fn fails_then_panics(bodies: &mut u32) -> Result<(), Upstream> {
    *bodies += 1;
    if *bodies == 2 {
        std::panic::panic_any(Bug(7));
    }
    Err(Upstream::Unavailable)
}

#[test]
fn a_panic_propagates_unretried_and_counts_once_as_a_failure_everywhere() {
    let mut bodies = 0;
    let (panicked, slept) = testing::record_sleeps(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fails_then_panics(&mut bodies)
        }))
    });
    // The payload is the body's own, unchanged; the panicking attempt was the last one.
    let payload = panicked.unwrap_err();
    assert_eq!(payload.downcast_ref::<Bug>(), Some(&Bug(7)));
    assert_eq!(bodies, 2);
    assert_eq!(slept.len(), 1);
    assert!(current_attempt().is_none());

    // Budget: the transient failure and the panic cost one token each.
    assert_eq!(PANIC_BUDGET.tokens(), 8.0);
    // Window: both attempts are recorded as failures.
    let stats = PANIC_WINDOW.stats();
    assert_eq!((stats.count, stats.failures), (2, 2));
    // Breaker: the failure and the panic are two of a threshold of 3 (a panic counted twice
    // would have opened it); one more failure opens it.
    assert_eq!(PANIC_BREAKER.state(), CircuitState::Closed);
    PANIC_BREAKER.try_acquire().unwrap().failed();
    assert_eq!(PANIC_BREAKER.state(), CircuitState::Open);
}

/// 8 threads × 10 000 calls whose first attempt fails and whose retry succeeds. Each call
/// costs 1 token and refunds 0.5; the bucket never gets near 0, half or the top, so nothing is
/// clamped and the end is exact: 100 000 − 80 000 × 0.5 = 60 000 tokens, 80 000 retries.
#[test]
fn eight_threads_lose_no_budget_update() {
    static EXACT: RetryBudget = RetryBudget::new(100_000, 0.5);
    static RETRIES: AtomicU32 = AtomicU32::new(0);

    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let policy = RetryPolicy::fixed(Duration::ZERO).attempts(2);
                for _ in 0..10_000 {
                    let mut attempt = 0;
                    let result = Retry::new(&policy).budget(&EXACT).call(|| {
                        attempt += 1;
                        if attempt == 1 {
                            Err(Upstream::Unavailable)
                        } else {
                            RETRIES.fetch_add(1, Ordering::Relaxed);
                            Ok(())
                        }
                    });
                    assert_eq!(result, Ok(()));
                }
            });
        }
    });
    assert_eq!(RETRIES.load(Ordering::Relaxed), 80_000);
    assert_eq!(EXACT.tokens(), 60_000.0);
}

/// 8 threads × 1 000 failed calls against a threshold of 8 001 consecutive failures: every
/// failure is counted exactly once, so the breaker is still closed after 8 000 and the
/// 8 001st opens it.
#[test]
fn eight_threads_lose_no_breaker_failure() {
    static COUNTED: CircuitBreaker = CircuitBreaker::new(8_001, Duration::from_secs(60));

    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..1_000 {
                    COUNTED.try_acquire().unwrap().failed();
                }
            });
        }
    });
    assert_eq!(COUNTED.state(), CircuitState::Closed);
    COUNTED.try_acquire().unwrap().failed();
    assert_eq!(COUNTED.state(), CircuitState::Open);
}

static ASYNC_PANIC_BREAKER: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(60));
static ASYNC_PANIC_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);

#[retryable(attempts = 3, base = "0ms", circuit = ASYNC_PANIC_BREAKER, budget = ASYNC_PANIC_BUDGET)]
async fn panics_in_a_task() -> Result<(), Upstream> {
    tokio::task::yield_now().await;
    std::panic::panic_any(Bug(9));
}

#[tokio::test]
async fn a_panic_inside_a_spawned_task_counts_as_a_failure_too() {
    // tokio catches the panic and drops the future afterwards, not while unwinding: the guard
    // around each poll is what sees it.
    let joined = tokio::spawn(panics_in_a_task()).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(ASYNC_PANIC_BUDGET.tokens(), 9.0);
    assert_eq!(ASYNC_PANIC_BREAKER.state(), CircuitState::Closed);
    ASYNC_PANIC_BREAKER.try_acquire().unwrap().failed();
    assert_eq!(
        ASYNC_PANIC_BREAKER.state(),
        CircuitState::Open,
        "the panic was the first of two failures"
    );
}
