//! Adaptive policies on tokio's paused clock: the policy tightens during an injected outage and
//! relaxes after recovery (as successes fill the window, and as the outage ages out of it);
//! slow answers lengthen the delays; hard bounds hold; recording is safe from many threads.
#![deny(warnings, unused_qualifications)]

use retry_kit::adaptive::{AdaptivePolicy, Stats, Tuning};
use retry_kit::{Classify, retryable};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, PartialEq, Classify)]
enum Upstream {
    #[classify(transient)]
    Unavailable,
    #[classify(permanent)]
    NotFound,
}

const MS: fn(u64) -> Duration = Duration::from_millis;

/// More than half failing: an outage. At most 2 attempts, three times the delay.
fn outage(stats: &Stats, t: Tuning) -> Tuning {
    if stats.failure_rate > 0.5 {
        Tuning {
            attempts: t.attempts.min(2),
            base: t.base * 3,
            ..t
        }
    } else {
        t
    }
}

/// Slow answers: twice the delay, growing faster.
fn slow(stats: &Stats, t: Tuning) -> Tuning {
    if stats.p99_latency > Duration::from_secs(5) {
        Tuning {
            base: t.base * 2,
            multiplier: 3.0,
            ..t
        }
    } else {
        t
    }
}

static OUTAGE_POLICY: AdaptivePolicy<20> = AdaptivePolicy::new(&[outage, slow])
    .max_age(Duration::from_secs(60))
    .min_samples(5);
static DOWN: AtomicBool = AtomicBool::new(false);

#[retryable(attempts = 5, backoff = "fixed", base = "100ms", jitter = "none", adaptive = OUTAGE_POLICY)]
async fn fetch(attempts: &Cell<u32>) -> Result<&'static str, Upstream> {
    attempts.set(attempts.get() + 1);
    tokio::time::sleep(MS(10)).await;
    if DOWN.load(Ordering::Relaxed) {
        Err(Upstream::Unavailable)
    } else {
        Ok("page")
    }
}

/// One call: how many attempts it made and how long it took (attempts of 10 ms included).
async fn one_fetch() -> (u32, Duration) {
    let attempts = Cell::new(0);
    let start = Instant::now();
    let _ = fetch(&attempts).await;
    (attempts.get(), start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn tightens_during_an_outage_and_relaxes_after_recovery() {
    // Healthy: ten calls, one attempt each.
    for _ in 0..10 {
        assert_eq!(one_fetch().await.0, 1);
    }
    let healthy = OUTAGE_POLICY.stats();
    assert_eq!((healthy.count, healthy.failures), (10, 0));
    assert_eq!(healthy.p99_latency, MS(10));

    // The outage starts. While the window still shows at most half failing, calls retry as
    // declared: 5 attempts, 4 waits of 100 ms.
    DOWN.store(true, Ordering::Relaxed);
    let mut during = Vec::new();
    for _ in 0..5 {
        during.push(one_fetch().await);
    }
    let declared = (5, MS(5 * 10 + 4 * 100));
    let tightened = (2, MS(2 * 10 + 300));
    // Window of 20 after each call: 5/15, 10/20, 15/20 failing; from the fourth call on it shows
    // more than half failing, and each call makes 2 attempts with one 300 ms wait.
    assert_eq!(during, [declared, declared, declared, tightened, tightened]);
    let outage_stats = OUTAGE_POLICY.stats();
    assert_eq!((outage_stats.count, outage_stats.failures), (20, 19));

    // Recovery: calls succeed at once and their successes fill the window.
    DOWN.store(false, Ordering::Relaxed);
    for _ in 0..11 {
        assert_eq!(one_fetch().await.0, 1);
    }
    // 11 successes and 9 failures in the last 20: at most half failing.
    let recovered = OUTAGE_POLICY.stats();
    assert_eq!((recovered.count, recovered.failures), (20, 9));
    assert!(recovered.failure_rate <= 0.5);

    // A failure now gets the declared policy again.
    DOWN.store(true, Ordering::Relaxed);
    assert_eq!(one_fetch().await, declared);
    DOWN.store(false, Ordering::Relaxed);
}

static AGING_POLICY: AdaptivePolicy = AdaptivePolicy::new(&[outage])
    .max_age(Duration::from_secs(30))
    .min_samples(3);

#[retryable(attempts = 4, backoff = "fixed", base = "1s", jitter = "none", adaptive = AGING_POLICY)]
async fn always_down(attempts: &Cell<u32>) -> Result<(), Upstream> {
    attempts.set(attempts.get() + 1);
    Err(Upstream::Unavailable)
}

#[tokio::test(start_paused = true)]
async fn an_outage_ages_out_of_the_window() {
    let attempts = Cell::new(0);
    let _ = always_down(&attempts).await;
    assert_eq!(
        attempts.get(),
        4,
        "an empty window: the declared 4 attempts"
    );
    attempts.set(0);
    let _ = always_down(&attempts).await;
    assert_eq!(attempts.get(), 2, "4 of 4 failing: tightened to 2");

    // The six attempts ended between 0 s and 6 s; the window keeps them for 30 s. At 26 s all
    // are still in it...
    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(AGING_POLICY.stats().count, 6);
    // ...at 37 s none are: the policy relaxes to the declaration.
    tokio::time::advance(Duration::from_secs(11)).await;
    assert_eq!(AGING_POLICY.stats(), Stats::EMPTY);
    attempts.set(0);
    let _ = always_down(&attempts).await;
    assert_eq!(attempts.get(), 4);
}

static SLOW_POLICY: AdaptivePolicy = AdaptivePolicy::new(&[outage, slow]).min_samples(2);

#[retryable(attempts = 3, backoff = "exponential", base = "100ms", jitter = "none", adaptive = SLOW_POLICY)]
async fn slow_then_failing(latency: Duration, fail: bool) -> Result<(), Upstream> {
    tokio::time::sleep(latency).await;
    if fail {
        Err(Upstream::Unavailable)
    } else {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn slow_answers_lengthen_the_delays() {
    // Fast failures: delays 100 ms then 200 ms (exponential, multiplier 2).
    let start = Instant::now();
    let _ = slow_then_failing(Duration::ZERO, true).await;
    assert_eq!(start.elapsed(), MS(300));
    // Three slow successes (6 s each) push p99 above 5 s; 3 failures of 6 leave the rate at 0.5.
    for _ in 0..3 {
        slow_then_failing(Duration::from_secs(6), false)
            .await
            .unwrap();
    }
    assert_eq!(SLOW_POLICY.stats().p99_latency, Duration::from_secs(6));
    // Now: base 200 ms, multiplier 3: delays 200 ms then 600 ms.
    let start = Instant::now();
    let _ = slow_then_failing(Duration::ZERO, true).await;
    assert_eq!(start.elapsed(), MS(800));
}

static PERMANENT_POLICY: AdaptivePolicy<8> = AdaptivePolicy::new(&[outage]).min_samples(1);

#[retryable(attempts = 3, base = "0ms", adaptive = PERMANENT_POLICY)]
fn lookup(found: bool) -> Result<(), Upstream> {
    if found {
        Ok(())
    } else {
        Err(Upstream::NotFound)
    }
}

#[test]
fn permanent_errors_are_answers_not_failures() {
    for _ in 0..4 {
        assert_eq!(lookup(false), Err(Upstream::NotFound));
    }
    lookup(true).unwrap();
    let stats = PERMANENT_POLICY.stats();
    assert_eq!((stats.count, stats.failures), (5, 0));
    assert_eq!(stats.failure_rate, 0.0);
}

fn everything_at_once(_: &Stats, _: Tuning) -> Tuning {
    Tuning {
        attempts: u32::MAX,
        base: Duration::ZERO,
        multiplier: 1e9,
    }
}

static BOUNDED: AdaptivePolicy<8> = AdaptivePolicy::new(&[everything_at_once])
    .min_samples(1)
    .attempts_between(1, 4)
    .base_between(Duration::from_millis(50), Duration::from_secs(1))
    .multiplier_between(1.0, 2.0);

#[retryable(attempts = 2, backoff = "exponential", base = "100ms", jitter = "none", adaptive = BOUNDED)]
fn bounded(attempts: &mut u32) -> Result<(), Upstream> {
    *attempts += 1;
    Err(Upstream::Unavailable)
}

#[test]
fn hard_bounds_clamp_a_rule_that_asks_for_everything() {
    let mut attempts = 0;
    let (_, slept) = retry_kit::testing::record_sleeps(|| bounded(&mut attempts));
    assert_eq!(attempts, 2, "an empty window: the declaration");
    assert_eq!(slept, [MS(100)]);
    attempts = 0;
    let (_, slept) = retry_kit::testing::record_sleeps(|| bounded(&mut attempts));
    // The rule asked for u32::MAX attempts, no delay and a 1e9 multiplier; the bounds give 4
    // attempts from 50 ms doubling.
    assert_eq!(attempts, 4);
    assert_eq!(slept, [MS(50), MS(100), MS(200)]);
}

#[test]
fn concurrent_recording_keeps_the_window_consistent() {
    static SHARED: AdaptivePolicy<64> = AdaptivePolicy::new(&[]);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                for i in 0..10_000u64 {
                    SHARED.record(true, MS(t * 10 + i % 7));
                }
            });
        }
    });
    let stats = SHARED.stats();
    assert_eq!(stats.count, 64);
    assert_eq!(stats.failures, 64);
    assert!(stats.p99_latency <= MS(36));
}

fn generous(_: &Stats, t: Tuning) -> Tuning {
    Tuning {
        attempts: 6,
        base: Duration::from_secs(2),
        ..t
    }
}

static GENEROUS: AdaptivePolicy<8> = AdaptivePolicy::new(&[generous]).min_samples(1);

#[retryable(attempts = 2, backoff = "fixed", base = "100ms", jitter = "none", deadline = "5s",
            adaptive = GENEROUS)]
fn under_deadline(attempts: &mut u32) -> Result<(), Upstream> {
    *attempts += 1;
    Err(Upstream::Unavailable)
}

#[retryable(attempts = 3, base = "0ms")]
fn outer_of_once(attempts: &mut u32) -> Result<(), Upstream> {
    once_adaptive(attempts)
}

#[retryable(attempts = 2, base = "0ms", nested = "once", adaptive = GENEROUS)]
fn once_adaptive(attempts: &mut u32) -> Result<(), Upstream> {
    *attempts += 1;
    Err(Upstream::Unavailable)
}

#[test]
fn adjustments_keep_the_deadline_and_the_nested_once_rule() {
    GENEROUS.record(true, Duration::ZERO);
    // Tuned to 6 attempts 2 s apart, but the 5 s deadline admits only two waits.
    let mut attempts = 0;
    let (_, slept) = retry_kit::testing::record_sleeps(|| under_deadline(&mut attempts));
    assert_eq!(slept, [Duration::from_secs(2), Duration::from_secs(2)]);
    assert_eq!(attempts, 3);
    // Inside an outer attempt, `once` makes one attempt whatever the tuning says.
    attempts = 0;
    let (_, slept) = retry_kit::testing::record_sleeps(|| outer_of_once(&mut attempts));
    assert_eq!(attempts, 3);
    assert_eq!(slept, [Duration::ZERO, Duration::ZERO]);
}

fn stingy(_: &Stats, t: Tuning) -> Tuning {
    Tuning { attempts: 1, ..t }
}

static STINGY: AdaptivePolicy<8> = AdaptivePolicy::new(&[stingy]).min_samples(1);

thread_local! {
    static NEXTS: std::cell::RefCell<Vec<retry_kit::Next>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn note_next(failure: &retry_kit::Failure<'_, Upstream>) {
    NEXTS.with(|n| n.borrow_mut().push(failure.next));
}

#[retryable(attempts = 1, backoff = "fixed", base = "0ms", jitter = "none", nested = "once",
            adaptive = GENEROUS, on_failure = note_next)]
fn once_tuned_up() -> Result<(), Upstream> {
    Err(Upstream::Unavailable)
}

#[retryable(attempts = 3, base = "0ms", nested = "once", adaptive = STINGY,
            on_failure = note_next)]
fn once_tuned_down() -> Result<(), Upstream> {
    Err(Upstream::Unavailable)
}

#[retryable(attempts = 1)]
fn outer_of(inner: fn() -> Result<(), Upstream>) -> Result<(), Upstream> {
    inner()
}

#[test]
fn nested_once_defers_to_the_outer_call_by_the_tuned_attempts() {
    use retry_kit::{Next, StopReason};
    GENEROUS.record(true, Duration::ZERO);
    STINGY.record(true, Duration::ZERO);
    let nexts = || NEXTS.with(|n| std::mem::take(&mut *n.borrow_mut()));
    // Declared 1 attempt, tuned to 6: this call would have retried, so it defers.
    assert_eq!(outer_of(once_tuned_up), Err(Upstream::Unavailable));
    assert_eq!(nexts(), [Next::Stop(StopReason::DeferredToOuter)]);
    // Declared 3, tuned to 1: it would not have retried; its attempts are used up.
    assert_eq!(outer_of(once_tuned_down), Err(Upstream::Unavailable));
    assert_eq!(nexts(), [Next::Stop(StopReason::AttemptsExhausted)]);
    // Outside any attempt, the tuned-up call makes its 6 attempts, 2 s apart (virtual).
    let (result, slept) = retry_kit::testing::record_sleeps(once_tuned_up);
    assert_eq!(result, Err(Upstream::Unavailable));
    assert_eq!(slept, [Duration::from_secs(2); 5]);
    assert_eq!(nexts().len(), 6);
}

static SPAWNED_POLICY: AdaptivePolicy = AdaptivePolicy::new(&[outage]);
static SPAWNED_BREAKER: retry_kit::CircuitBreaker =
    retry_kit::CircuitBreaker::new(5, Duration::from_secs(10));
static SPAWNED_RETRY: retry_kit::RetryPolicy = retry_kit::RetryPolicy::new();

/// A builder's call with an adaptive policy, awaited inside an `async` block that is spawned
/// (regression: "implementation of `AdaptiveKind` is not general enough", from an impl for
/// `&'a (dyn Adapt + 'a)` only).
#[tokio::test(start_paused = true)]
async fn a_builder_call_with_an_adaptive_policy_can_be_spawned_from_an_async_block() {
    let task = tokio::spawn(async {
        retry_kit::Retry::new(&SPAWNED_RETRY)
            .adaptive(&SPAWNED_POLICY)
            .circuit(&SPAWNED_BREAKER)
            .call_async(|| async { Ok::<_, std::io::Error>(7) })
            .await
    });
    assert_eq!(task.await.unwrap().unwrap(), 7);
    assert_eq!(
        SPAWNED_POLICY.stats().count,
        1,
        "the attempt is in the window"
    );
}
