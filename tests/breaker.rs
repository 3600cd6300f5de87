//! The circuit breaker: its state machine on tokio's paused clock, what counts against it, how
//! `#[retryable(circuit = ...)]` and `Retry::circuit` use it, probe permits under cancellation and
//! panics, and the half-open probe bound under many threads.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    CircuitBreaker, CircuitOpen, CircuitState, Classify, ErrorClass, Failure, Jitter, Next, Retry,
    RetryPolicy, StopReason, retryable, testing,
};
use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::time::{advance, sleep};

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient)]
    Unavailable,
    #[classify(idempotent_only)]
    Unknown,
    #[classify(permanent)]
    BadRequest,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for ApiError {
    fn from(open: CircuitOpen) -> Self {
        ApiError::Open(open)
    }
}

/// What the fake dependency answers.
#[derive(Clone, Copy)]
enum Reply {
    Ok,
    Unavailable,
    Unknown,
    BadRequest,
}

fn answer(reply: Reply) -> Result<(), ApiError> {
    match reply {
        Reply::Ok => Ok(()),
        Reply::Unavailable => Err(ApiError::Unavailable),
        Reply::Unknown => Err(ApiError::Unknown),
        Reply::BadRequest => Err(ApiError::BadRequest),
    }
}

const SECOND: Duration = Duration::from_secs(1);

static STATE_MACHINE: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(10))
    .success_threshold(2)
    .half_open_max(1);

#[retryable(attempts = 1, circuit = STATE_MACHINE)]
async fn state_machine(reply: Reply, bodies: &AtomicU32) -> Result<(), ApiError> {
    bodies.fetch_add(1, Ordering::Relaxed);
    answer(reply)
}

#[tokio::test(start_paused = true)]
async fn closed_open_half_open_closed_on_the_paused_clock() {
    let b = &STATE_MACHINE;
    let bodies = AtomicU32::new(0);
    for _ in 0..2 {
        assert!(matches!(
            state_machine(Reply::Unavailable, &bodies).await,
            Err(ApiError::Unavailable)
        ));
    }
    assert_eq!(b.state(), CircuitState::Closed);
    // Idempotent-only failures count too (the outcome of the call is unknown).
    assert!(state_machine(Reply::Unknown, &bodies).await.is_err());
    assert_eq!(b.state(), CircuitState::Open);

    // Open: refused without running the body, carrying the time until the next probe.
    advance(4 * SECOND).await;
    let Err(ApiError::Open(open)) = state_machine(Reply::Ok, &bodies).await else {
        panic!("an open breaker refuses the first attempt");
    };
    assert_eq!(open.retry_after(), 6 * SECOND);
    assert_eq!(bodies.load(Ordering::Relaxed), 3);

    // Cool-down over: half-open; a success is not enough with success_threshold(2).
    advance(6 * SECOND).await;
    assert_eq!(b.state(), CircuitState::HalfOpen);
    state_machine(Reply::Ok, &bodies).await.unwrap();
    assert_eq!(b.state(), CircuitState::HalfOpen);
    state_machine(Reply::Ok, &bodies).await.unwrap();
    assert_eq!(b.state(), CircuitState::Closed);
    assert_eq!(bodies.load(Ordering::Relaxed), 5);

    // Closed again with a clean count: two failures do not open it.
    for _ in 0..2 {
        assert!(state_machine(Reply::Unavailable, &bodies).await.is_err());
    }
    assert_eq!(b.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_for_a_full_cool_down() {
    let b = CircuitBreaker::new(1, Duration::from_secs(30));
    b.try_acquire().unwrap().failed();
    advance(30 * SECOND).await;
    let probe = b.try_acquire().unwrap();
    assert!(probe.is_probe());
    advance(5 * SECOND).await;
    probe.failed();
    assert_eq!(b.state(), CircuitState::Open);
    assert_eq!(b.try_acquire().unwrap_err().retry_after(), 30 * SECOND);
    advance(29 * SECOND).await;
    assert_eq!(b.state(), CircuitState::Open);
    advance(SECOND).await;
    assert_eq!(b.state(), CircuitState::HalfOpen);
}

#[test]
fn permanent_errors_are_answers_and_never_trip_it() {
    let b = CircuitBreaker::new(3, Duration::from_secs(10));
    for _ in 0..1000 {
        b.try_acquire().unwrap().record(ErrorClass::Permanent);
    }
    assert_eq!(b.state(), CircuitState::Closed);
    // A permanent error between retryable failures breaks the streak, like a success.
    for class in [
        ErrorClass::Transient,
        ErrorClass::Transient,
        ErrorClass::Permanent,
        ErrorClass::Transient,
        ErrorClass::IdempotentOnly,
    ] {
        b.try_acquire().unwrap().record(class);
    }
    assert_eq!(b.state(), CircuitState::Closed);
    b.try_acquire().unwrap().record(ErrorClass::Transient);
    assert_eq!(b.state(), CircuitState::Open);
}

static PERMANENT: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(10));

#[retryable(attempts = 3, base = "0ms", circuit = PERMANENT)]
fn permanent_call(reply: Reply) -> Result<(), ApiError> {
    answer(reply)
}

#[test]
fn permanent_errors_through_the_attribute_never_trip_it() {
    for _ in 0..100 {
        assert!(matches!(
            permanent_call(Reply::BadRequest),
            Err(ApiError::BadRequest)
        ));
    }
    assert_eq!(PERMANENT.state(), CircuitState::Closed);
}

#[test]
fn a_success_resets_the_consecutive_count() {
    let b = CircuitBreaker::new(2, Duration::from_secs(10));
    for _ in 0..10 {
        b.try_acquire().unwrap().failed();
        b.try_acquire().unwrap().succeeded();
    }
    assert_eq!(b.state(), CircuitState::Closed);
}

static REFUSES_RETRY: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(60));
static REFUSAL_LOG: Mutex<Vec<(u32, Next)>> = Mutex::new(Vec::new());

fn log_refusal(f: &Failure<'_, ApiError>) {
    REFUSAL_LOG.lock().unwrap().push((f.attempt, f.next));
}

#[retryable(attempts = 5, base = "0ms", circuit = REFUSES_RETRY, on_failure = log_refusal)]
fn refused_retry(calls: &mut u32) -> Result<(), ApiError> {
    *calls += 1;
    Err(ApiError::Unavailable)
}

#[test]
fn a_refused_retry_stops_with_circuit_open_and_the_last_real_error() {
    let mut calls = 0;
    let result = refused_retry(&mut calls);
    assert!(matches!(result, Err(ApiError::Unavailable)));
    assert_eq!(calls, 2);
    assert_eq!(
        *REFUSAL_LOG.lock().unwrap(),
        [
            (1, Next::Retry(Duration::ZERO)),
            (2, Next::Stop(StopReason::CircuitOpen))
        ]
    );
    // The next call is refused before its first attempt.
    assert!(matches!(refused_retry(&mut calls), Err(ApiError::Open(_))));
    assert_eq!(calls, 2);
}

static PROBES: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(5)).half_open_max(2);

#[retryable(attempts = 1, circuit = PROBES)]
async fn slow_probe(started: &AtomicU32) -> Result<(), ApiError> {
    started.fetch_add(1, Ordering::Relaxed);
    sleep(Duration::from_secs(3)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_at_most_half_open_max_concurrent_probes() {
    PROBES.try_acquire().unwrap().failed();
    advance(5 * SECOND).await;
    let started = AtomicU32::new(0);
    let results = futures_join5(
        slow_probe(&started),
        slow_probe(&started),
        slow_probe(&started),
        slow_probe(&started),
        slow_probe(&started),
    )
    .await;
    assert_eq!(started.load(Ordering::Relaxed), 2);
    let refused: Vec<Duration> = results
        .iter()
        .filter_map(|r| match r {
            Err(ApiError::Open(open)) => Some(open.retry_after()),
            _ => None,
        })
        .collect();
    // Busy probe slots free up as soon as a probe ends: nothing to wait for.
    assert_eq!(refused, [Duration::ZERO; 3]);
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 2);
    // half_open_max is 2 but success_threshold is 1: the first success closed it.
    assert_eq!(PROBES.state(), CircuitState::Closed);
}

/// Poll five futures together on this task (no extra dependency for a join).
async fn futures_join5<F: Future>(a: F, b: F, c: F, d: F, e: F) -> Vec<F::Output> {
    let mut futures: Vec<_> = [a, b, c, d, e].into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                if let Poll::Ready(out) = future.as_mut().poll(cx) {
                    *output = Some(out);
                }
            }
        }
        if outputs.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

static CANCELLED: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(5));

#[retryable(attempts = 1, circuit = CANCELLED)]
async fn probe_that_waits(started: &AtomicU32) -> Result<(), ApiError> {
    started.fetch_add(1, Ordering::Relaxed);
    std::future::pending::<()>().await;
    Ok(())
}

#[retryable(attempts = 1, circuit = CANCELLED)]
async fn probe_that_answers(started: &AtomicU32) -> Result<(), ApiError> {
    started.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_mid_probe_releases_the_probe_without_a_verdict() {
    CANCELLED.try_acquire().unwrap().failed();
    advance(5 * SECOND).await;
    let started = AtomicU32::new(0);
    {
        let mut probe = pin!(probe_that_waits(&started));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(probe.as_mut().poll(&mut cx).is_pending());
        assert_eq!(started.load(Ordering::Relaxed), 1);
        // The slot is taken while the probe runs.
        assert!(matches!(
            probe_that_answers(&started).await,
            Err(ApiError::Open(_))
        ));
    } // dropped mid-flight
    // Neither success nor failure: still half-open, and the next probe is admitted.
    assert_eq!(CANCELLED.state(), CircuitState::HalfOpen);
    probe_that_answers(&started).await.unwrap();
    assert_eq!(started.load(Ordering::Relaxed), 2);
    assert_eq!(CANCELLED.state(), CircuitState::Closed);
}

static PANICS: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(5));

#[retryable(attempts = 1, circuit = PANICS)]
fn probe_that_panics() -> Result<(), ApiError> {
    panic!("bug in the probe");
}

#[retryable(attempts = 1, circuit = PANICS)]
fn probe_that_succeeds() -> Result<(), ApiError> {
    Ok(())
}

#[test]
fn a_panic_in_a_probe_releases_it_as_a_failure() {
    testing::record_sleeps(|| {
        PANICS.try_acquire().unwrap().failed();
        // Let the cool-down pass on this thread's virtual clock.
        let wait = RetryPolicy::fixed(Duration::from_secs(5))
            .jitter(Jitter::None)
            .attempts(2);
        let _ = wait.call(|| Err::<(), _>(ApiError::Unavailable));
        assert_eq!(PANICS.state(), CircuitState::HalfOpen);

        let panicked = std::panic::catch_unwind(probe_that_panics);
        assert!(panicked.is_err());
        // Counted as a failed probe: open again, for a full cool-down.
        assert_eq!(PANICS.state(), CircuitState::Open);
        let _ = wait.call(|| Err::<(), _>(ApiError::Unavailable));
        // And released: a new probe is admitted and closes it.
        probe_that_succeeds().unwrap();
        assert_eq!(PANICS.state(), CircuitState::Closed);
    });
}

static TRANSITIONS: Mutex<Vec<(CircuitState, CircuitState)>> = Mutex::new(Vec::new());

fn record_transition(from: CircuitState, to: CircuitState) {
    TRANSITIONS.lock().unwrap().push((from, to));
}

#[tokio::test(start_paused = true)]
async fn the_hook_sees_every_state_change_once() {
    let b = CircuitBreaker::new(2, Duration::from_secs(1)).on_state_change(record_transition);
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap_err();
    advance(SECOND).await;
    b.try_acquire().unwrap().failed(); // probe fails
    advance(SECOND).await;
    let probe = b.try_acquire().unwrap();
    probe.succeeded();
    use CircuitState::{Closed, HalfOpen, Open};
    assert_eq!(
        *TRANSITIONS.lock().unwrap(),
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn failure_ratio_opens_over_a_sliding_window_after_the_minimum_throughput() {
    let b = CircuitBreaker::new(u32::MAX, Duration::from_secs(5)).failure_ratio(
        0.5,
        Duration::from_secs(10),
        10,
    );
    // 9 failures alone are below the minimum throughput.
    for _ in 0..9 {
        b.try_acquire().unwrap().failed();
    }
    assert_eq!(b.state(), CircuitState::Closed);
    // Ten seconds later those failures have left the window.
    advance(10 * SECOND).await;
    for _ in 0..6 {
        b.try_acquire().unwrap().succeeded();
    }
    for _ in 0..3 {
        b.try_acquire().unwrap().failed();
    }
    assert_eq!(b.state(), CircuitState::Closed); // 3 of 9 calls
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed); // 4 of 10: below half
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed); // 5 of 11: below half
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Open); // 6 of 12: half
}

#[tokio::test(start_paused = true)]
async fn the_consecutive_rule_still_applies_in_ratio_mode() {
    let b = CircuitBreaker::new(3, Duration::from_secs(5)).failure_ratio(
        0.9,
        Duration::from_secs(10),
        100,
    );
    for _ in 0..3 {
        b.try_acquire().unwrap().failed();
    }
    assert_eq!(b.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn outcomes_of_calls_admitted_before_it_opened_are_ignored() {
    let b = CircuitBreaker::new(2, Duration::from_secs(5));
    let slow = b.try_acquire().unwrap();
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Open);
    advance(5 * SECOND).await;
    let probe = b.try_acquire().unwrap();
    // The slow call from the closed phase ends now: it is no probe's verdict.
    slow.succeeded();
    assert_eq!(b.state(), CircuitState::HalfOpen);
    probe.failed();
    assert_eq!(b.state(), CircuitState::Open);
}

static BUILDER: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(5));

#[tokio::test(start_paused = true)]
async fn the_builder_refuses_the_first_attempt_with_circuit_open() {
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    let mut calls = 0;
    let first: Result<(), ApiError> = Retry::new(&policy)
        .circuit(&BUILDER)
        .call_async(|| {
            calls += 1;
            async { Err(ApiError::Unavailable) }
        })
        .await;
    assert!(matches!(first, Err(ApiError::Unavailable)));
    assert_eq!(calls, 1);
    advance(2 * SECOND).await;
    let second: Result<(), ApiError> = Retry::new(&policy)
        .circuit(&BUILDER)
        .call_async(|| async { Ok(()) })
        .await;
    let Err(ApiError::Open(open)) = second else {
        panic!("refused");
    };
    assert_eq!(open.retry_after(), 3 * SECOND);
}

/// 8 threads × 10 000 calls through one breaker with a zero cool-down, so it cycles through
/// every state constantly: the number of probes running at once never exceeds `half_open_max`,
/// and when every thread is done no probe slot is left taken.
#[test]
fn eight_threads_never_run_more_than_half_open_max_probes_at_once() {
    static STRESS: CircuitBreaker = CircuitBreaker::new(3, Duration::ZERO)
        .half_open_max(3)
        .success_threshold(2);
    static RUNNING: AtomicU32 = AtomicU32::new(0);
    static MOST: AtomicU32 = AtomicU32::new(0);
    static PROBED: AtomicU32 = AtomicU32::new(0);
    std::thread::scope(|s| {
        for thread in 0..8u32 {
            s.spawn(move || {
                for i in 0..10_000u32 {
                    let Ok(permit) = STRESS.try_acquire() else {
                        continue;
                    };
                    if permit.is_probe() {
                        PROBED.fetch_add(1, Ordering::Relaxed);
                        let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
                        MOST.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        RUNNING.fetch_sub(1, Ordering::SeqCst);
                    }
                    // A deterministic mix of outcomes, different per thread.
                    match (i.wrapping_mul(2_654_435_761) ^ thread) % 5 {
                        0 | 1 => permit.failed(),
                        2 => permit.record(ErrorClass::Permanent),
                        3 => drop(permit),
                        _ => permit.succeeded(),
                    }
                }
            });
        }
    });
    assert!(
        PROBED.load(Ordering::Relaxed) > 0,
        "the breaker never half-opened"
    );
    assert!(MOST.load(Ordering::SeqCst) <= 3, "{MOST:?} probes at once");
    assert_eq!(RUNNING.load(Ordering::SeqCst), 0);
    // Every permit was released: a half-open breaker admits exactly three probes again.
    let b = &STRESS;
    let mut held = Vec::new();
    for _ in 0..10 {
        match b.try_acquire() {
            Ok(p) if p.is_probe() => held.push(p),
            Ok(p) => p.failed(),
            Err(_) => {}
        }
    }
    assert_eq!(held.len(), 3);
    assert_eq!(b.state(), CircuitState::HalfOpen);
}

/// Regression: a probe still running from an earlier half-open phase once got a fresh count in
/// the next phase, so with a short cool-down more than `half_open_max` probes ran at once.
#[tokio::test(start_paused = true)]
async fn a_probe_from_an_earlier_half_open_phase_keeps_its_slot() {
    let b = CircuitBreaker::new(1, Duration::from_secs(1)).half_open_max(2);
    b.try_acquire().unwrap().failed();
    advance(SECOND).await;
    let slow = b.try_acquire().unwrap();
    let failing = b.try_acquire().unwrap();
    assert!(slow.is_probe() && failing.is_probe());
    failing.failed();
    advance(SECOND).await;
    // Half-open again, but the slow probe still holds one of the two slots.
    let next = b.try_acquire().unwrap();
    assert!(next.is_probe());
    assert_eq!(b.try_acquire().unwrap_err().retry_after(), Duration::ZERO);
    // Its verdict no longer counts, but ending frees the slot.
    slow.succeeded();
    assert_eq!(b.state(), CircuitState::HalfOpen);
    let last = b.try_acquire().unwrap();
    assert!(last.is_probe());
    next.succeeded();
    assert_eq!(b.state(), CircuitState::Closed);
    drop(last);
}

/// The engine under the same load: 8 threads × 10 000 calls of a `#[retryable]` function
/// (retries, refused first attempts, refused retries, permanent errors) leave no permit behind.
#[test]
fn eight_threads_through_the_attribute_leave_no_probe_slot_taken() {
    static OPENED: AtomicU32 = AtomicU32::new(0);
    fn count_opens(_: CircuitState, to: CircuitState) {
        if to == CircuitState::Open {
            OPENED.fetch_add(1, Ordering::Relaxed);
        }
    }
    static ENGINE: CircuitBreaker = CircuitBreaker::new(3, Duration::ZERO)
        .half_open_max(2)
        .success_threshold(2)
        .on_state_change(count_opens);
    static BODIES: AtomicU32 = AtomicU32::new(0);

    #[retryable(attempts = 3, base = "0ms", idempotent, circuit = ENGINE)]
    fn mixed(seed: u32) -> Result<(), ApiError> {
        let n = BODIES.fetch_add(1, Ordering::Relaxed);
        match (seed ^ n).wrapping_mul(2_654_435_761) % 7 {
            0 | 1 => Err(ApiError::Unavailable),
            2 => Err(ApiError::Unknown),
            3 => Err(ApiError::BadRequest),
            _ => Ok(()),
        }
    }

    std::thread::scope(|s| {
        for thread in 0..8u32 {
            s.spawn(move || {
                for i in 0..10_000u32 {
                    let _ = mixed(thread * 10_000 + i);
                }
            });
        }
    });
    assert!(
        OPENED.load(Ordering::Relaxed) > 0,
        "the breaker never opened"
    );
    let mut held = Vec::new();
    for _ in 0..10 {
        match ENGINE.try_acquire() {
            Ok(p) if p.is_probe() => held.push(p),
            Ok(p) => p.failed(),
            Err(_) => {}
        }
    }
    assert_eq!(held.len(), 2);
    assert_eq!(ENGINE.state(), CircuitState::HalfOpen);
}

static DISK: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));

/// An `io::Result` function can name a breaker: the crate provides `From<CircuitOpen>` for
/// `io::Error`, which the orphan rule would forbid a user to write.
#[retryable(attempts = 5, base = "10ms", jitter = "none", circuit = DISK)]
fn read_block(calls: &mut u32) -> std::io::Result<u32> {
    *calls += 1;
    Err(std::io::ErrorKind::ConnectionReset.into())
}

#[test]
fn an_io_result_fn_uses_a_breaker_and_its_refusal_keeps_the_breakers_class_and_wait() {
    let mut calls = 0;
    // One virtual clock for both calls, so the breaker's cool-down is measured on it.
    let ((first, refused), slept) =
        testing::record_sleeps(|| (read_block(&mut calls), read_block(&mut calls)));
    // Two resets opened the breaker, which refused the third attempt: the last reset returns.
    assert_eq!(
        first.unwrap_err().kind(),
        std::io::ErrorKind::ConnectionReset
    );
    assert_eq!(slept, [Duration::from_millis(10)]);
    assert_eq!(calls, 2, "the refused second call made no attempt");

    let refused = refused.unwrap_err();
    let open = refused
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<CircuitOpen>())
        .expect("the io::Error carries the CircuitOpen");
    assert_eq!(open.retry_after(), Duration::from_secs(30));
    // `Classify for io::Error` sees the carried error: transient, with the breaker's wait.
    assert_eq!(refused.class(), ErrorClass::Transient);
    assert_eq!(
        Classify::retry_after(&refused),
        Some(Duration::from_secs(30))
    );
}

#[test]
fn states_print_as_the_snake_case_names_logs_use() {
    use CircuitState::{Closed, HalfOpen, Open};
    let names: Vec<String> = [Closed, Open, HalfOpen].map(|s| s.to_string()).into();
    assert_eq!(names, ["closed", "open", "half_open"]);
    assert_eq!(HalfOpen.as_str(), "half_open");
}

#[tokio::test(start_paused = true)]
async fn a_ratio_above_one_or_nan_means_every_outcome_failed() {
    // Above 1 clamps to 1: a window of failures alone still opens it.
    let above = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(2.0, 10 * SECOND, 1);
    above.try_acquire().unwrap().failed();
    assert_eq!(above.state(), CircuitState::Open);
    // NaN means 1 too, not 0: one success in the window keeps it closed.
    let nan = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(f64::NAN, 10 * SECOND, 2);
    nan.try_acquire().unwrap().succeeded();
    nan.try_acquire().unwrap().failed();
    assert_eq!(nan.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn the_ratio_is_rounded_to_the_nearest_millionth_not_down() {
    // 0.333334 is kept as 333 334 millionths: 1 failure in 3 calls (333 333.3…) is below it.
    let b = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(0.333_334, 10 * SECOND, 3);
    b.try_acquire().unwrap().succeeded();
    b.try_acquire().unwrap().succeeded();
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn outcomes_half_a_window_ago_still_count_and_leave_after_a_whole_one() {
    let b = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(0.5, 10 * SECOND, 4);
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    advance(5 * SECOND).await;
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed); // 3 calls: below the minimum
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Open); // 4 of 4, two of them 5 s old

    let b = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(0.5, 10 * SECOND, 4);
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    advance(10 * SECOND).await;
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed); // the first two have left the window
}

#[tokio::test(start_paused = true)]
async fn a_failure_admitted_in_an_earlier_closed_phase_is_ignored() {
    let b = CircuitBreaker::new(1, SECOND);
    let slow = b.try_acquire().unwrap();
    b.try_acquire().unwrap().failed();
    advance(SECOND).await;
    b.try_acquire().unwrap().succeeded();
    assert_eq!(b.state(), CircuitState::Closed);
    // Closed again, but not the phase that admitted it.
    slow.failed();
    assert_eq!(b.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_probe_ending_after_its_phase_closed_leaves_the_failure_count_alone() {
    let b = CircuitBreaker::new(3, SECOND).half_open_max(2);
    for _ in 0..3 {
        b.try_acquire().unwrap().failed();
    }
    advance(SECOND).await;
    let closing = b.try_acquire().unwrap();
    let late = b.try_acquire().unwrap();
    closing.succeeded();
    assert_eq!(b.state(), CircuitState::Closed);
    b.try_acquire().unwrap().failed();
    b.try_acquire().unwrap().failed();
    // A stale probe's success is no success of this closed phase: the streak goes on.
    late.succeeded();
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Open);
}

#[test]
fn debug_shows_the_state_and_the_settings() {
    let b = CircuitBreaker::new(2, SECOND)
        .failure_ratio(0.25, 10 * SECOND, 4)
        .name("search");
    testing::record_sleeps(|| b.try_acquire().unwrap().failed());
    let debug = format!("{b:?}");
    for field in [
        "name: Some(\"search\")",
        "phase: Closed",
        "failures: 1",
        "failure_threshold: 2",
        "failure_ratio: Some(0.25)",
    ] {
        assert!(debug.contains(field), "{field} not in {debug}");
    }
}

#[tokio::test(start_paused = true)]
async fn settings_beyond_u16_saturate_instead_of_wrapping() {
    // 65 536 wraps to 0 as a u16, which would refuse every probe.
    let b = CircuitBreaker::new(1, SECOND).half_open_max(65_536);
    b.try_acquire().unwrap().failed();
    advance(SECOND).await;
    assert!(b.try_acquire().unwrap().is_probe());
}

#[tokio::test(start_paused = true)]
async fn an_endless_cool_down_saturates_instead_of_wrapping() {
    let b = CircuitBreaker::new(1, Duration::MAX);
    b.try_acquire().unwrap().failed();
    advance(Duration::from_secs(365 * 24 * 3600)).await;
    assert_eq!(b.state(), CircuitState::Open);
    let left = b.try_acquire().unwrap_err().retry_after();
    assert!(
        left > Duration::from_secs(100 * 365 * 24 * 3600),
        "{left:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn closing_clears_the_ratio_window() {
    let b = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(0.5, 10 * SECOND, 4);
    for _ in 0..4 {
        b.try_acquire().unwrap().failed();
    }
    assert_eq!(b.state(), CircuitState::Open);
    advance(SECOND).await;
    b.try_acquire().unwrap().succeeded();
    assert_eq!(b.state(), CircuitState::Closed);
    // The four failures are still inside the 10 s window, but they were the last closed phase's.
    b.try_acquire().unwrap().failed();
    assert_eq!(b.state(), CircuitState::Closed);
}

#[test]
fn a_permit_debugs_as_probe_and_pending() {
    let b = CircuitBreaker::new(1, SECOND);
    let permit = b.try_acquire().unwrap();
    assert_eq!(
        format!("{permit:?}"),
        "CircuitPermit { probe: false, pending: true }"
    );
    permit.succeeded();
}

#[test]
fn circuit_with_uses_the_breaker_and_its_own_conversion_of_a_refusal() {
    let b = CircuitBreaker::new(1, 60 * SECOND);
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    let calls = AtomicU32::new(0);
    let call = |reply| {
        Retry::new(&policy)
            .circuit_with(&b, |_| ApiError::BadRequest)
            .call(|| {
                calls.fetch_add(1, Ordering::Relaxed);
                answer(reply)
            })
    };
    // The failure opened the breaker, which refused the retry: the real error returns.
    assert!(matches!(
        call(Reply::Unavailable),
        Err(ApiError::Unavailable)
    ));
    // Refused before any attempt, converted by the given function rather than `From`.
    assert!(matches!(call(Reply::Ok), Err(ApiError::BadRequest)));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[test]
fn a_window_shorter_than_its_ten_buckets_still_counts() {
    // Under 10 ns a bucket would be 0 ns long: it is 1 ns, not a division by zero.
    let b = CircuitBreaker::new(u32::MAX, SECOND).failure_ratio(0.5, Duration::ZERO, 1);
    testing::record_sleeps(|| b.try_acquire().unwrap().failed());
    assert_eq!(b.state(), CircuitState::Open);
}

#[test]
fn the_threshold_th_failure_opens_the_breaker_while_a_leftover_probe_ends_on_another_thread() {
    // A probe of an earlier half-open phase is still running when the breaker closes; its end
    // (a change of the state word) races the failure that reaches the threshold. Before the
    // fix the trip was one compare-and-swap that lost that race and was never tried again: the
    // breaker stayed closed after the threshold-th consecutive failure.
    use std::sync::atomic::AtomicUsize;
    const TRIALS: usize = 20_000;
    let breakers: Vec<CircuitBreaker> = (0..TRIALS)
        .map(|_| {
            CircuitBreaker::new(1, Duration::ZERO)
                .success_threshold(1)
                .half_open_max(2)
        })
        .collect();
    // Each trial's two racing permits: the leftover probe and the failing call.
    let mut leftovers = Vec::with_capacity(TRIALS);
    let mut failing = Vec::with_capacity(TRIALS);
    for breaker in &breakers {
        breaker.try_acquire().unwrap().failed();
        // A zero cool-down: two probes; the first closes the breaker, the second is left over.
        let first = breaker.try_acquire().unwrap();
        let leftover = breaker.try_acquire().unwrap();
        assert!(first.is_probe() && leftover.is_probe());
        first.succeeded();
        let call = breaker.try_acquire().unwrap();
        assert!(!call.is_probe());
        leftovers.push(Some(leftover));
        failing.push(Some(call));
    }
    // Both threads spin to the start of each trial, so the two ends overlap often.
    let arrived = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for (n, leftover) in leftovers.iter_mut().enumerate() {
                arrived.fetch_add(1, Ordering::AcqRel);
                while arrived.load(Ordering::Acquire) < 2 * (n + 1) {
                    std::hint::spin_loop();
                }
                leftover.take().unwrap().succeeded();
            }
        });
        for (n, call) in failing.iter_mut().enumerate() {
            arrived.fetch_add(1, Ordering::AcqRel);
            while arrived.load(Ordering::Acquire) < 2 * (n + 1) {
                std::hint::spin_loop();
            }
            call.take().unwrap().failed();
        }
    });
    // Opened for a zero cool-down, a tripped breaker reads as half-open at once; never closed.
    let stayed_closed = breakers
        .iter()
        .filter(|b| b.state() == CircuitState::Closed)
        .count();
    assert_eq!(stayed_closed, 0, "of {TRIALS} trials");
}

static VIRTUAL_TRIP: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(1));

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "20m",
    max_delay = "1h",
    jitter = "none"
)]
fn forty_virtual_minutes(calls: &mut u32) -> Result<(), ApiError> {
    *calls += 1;
    Err(ApiError::Unavailable)
}

#[test]
fn a_breaker_opened_under_virtual_time_stays_open_no_longer_than_open_for_on_the_real_clock() {
    // Statics are shared by every test in a binary: a breaker tripped on a virtual clock that
    // ran 40 minutes ahead must not stay open for 40 real minutes.
    let (_, slept) = testing::record_sleeps(|| {
        let mut calls = 0;
        let _ = forty_virtual_minutes(&mut calls);
        VIRTUAL_TRIP.try_acquire().unwrap().failed();
    });
    assert_eq!(
        slept,
        [Duration::from_secs(1200), Duration::from_secs(1200)]
    );
    let refused = VIRTUAL_TRIP.try_acquire().unwrap_err();
    assert!(
        refused.retry_after() <= Duration::from_secs(1),
        "{:?}",
        refused.retry_after()
    );
}

static SPAWNED: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30));
static SPAWNED_BUDGET: retry_kit::RetryBudget = retry_kit::RetryBudget::new(10, 0.1);
static SPAWNED_POLICY: RetryPolicy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(3);

#[tokio::test(start_paused = true)]
async fn the_builders_future_with_a_breaker_and_a_budget_can_be_spawned() {
    // Before: "implementation of `CircuitSlot` is not general enough" at `tokio::spawn`.
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let task = tokio::spawn(async move {
        Retry::new(&SPAWNED_POLICY)
            .circuit(&SPAWNED)
            .budget(&SPAWNED_BUDGET)
            .call_async(|| {
                let n = counted.fetch_add(1, Ordering::Relaxed) + 1;
                async move {
                    if n < 3 {
                        Err(ApiError::Unavailable)
                    } else {
                        Ok(n)
                    }
                }
            })
            .await
    });
    assert_eq!(task.await.unwrap().unwrap(), 3);
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}
