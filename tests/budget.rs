//! The retry budget: gRPC's throttling rule through `#[retryable(budget = ...)]` and
//! `Retry::budget`, exact fractional refunds, and the outage bound under many threads.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    Classify, Failure, Next, Retry, RetryBudget, RetryPolicy, StopReason, retryable, testing,
};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum DbError {
    #[classify(transient)]
    Unavailable,
    #[classify(idempotent_only)]
    Unknown,
    #[classify(permanent)]
    Constraint,
}

static OUTAGE: RetryBudget = RetryBudget::new(20, 1.0);

// More attempts than the budget allows, so the budget alone stops the first call: at 10 attempts
// the attempt limit would stop it at the same point and hide the budget's boundary.
#[retryable(attempts = 30, base = "10ms", budget = OUTAGE, on_failure = record_outage)]
fn outage_call(attempts: &mut u32) -> Result<(), DbError> {
    *attempts += 1;
    Err(DbError::Unavailable)
}

#[test]
fn during_an_outage_retries_stop_below_half_the_tokens() {
    let mut attempts = 0;
    let calls = 50;
    testing::record_sleeps(|| {
        for _ in 0..calls {
            let _ = outage_call(&mut attempts);
        }
    });
    // Every call makes its first attempt; retries stop once the bucket is at half (a retry may
    // start only while tokens exceed 10, so the 10th failure leaves exactly 10 and stops):
    // ⌈20 / 2⌉ − 1 = 9 of them in total, all in the first call.
    assert_eq!(attempts - calls, 9);
    assert!(!OUTAGE.allows_retry());
    let stops = OUTAGE_STOPS.lock().unwrap();
    assert_eq!(stops.len(), calls as usize);
    assert!(stops.iter().all(|s| *s == StopReason::BudgetExhausted));
}

static OUTAGE_STOPS: Mutex<Vec<StopReason>> = Mutex::new(Vec::new());

fn record_outage(f: &Failure<'_, DbError>) {
    if let Next::Stop(reason) = f.next {
        OUTAGE_STOPS.lock().unwrap().push(reason);
    }
}

static RECOVERY: RetryBudget = RetryBudget::new(10, 0.5);

#[retryable(attempts = 3, base = "0ms", budget = RECOVERY)]
fn flaky(fail: &mut Vec<bool>, attempts: &mut u32) -> Result<(), DbError> {
    *attempts += 1;
    if fail.pop().unwrap_or(false) {
        Err(DbError::Unavailable)
    } else {
        Ok(())
    }
}

#[test]
fn after_recovery_successes_refill_the_bucket_and_retries_resume() {
    let mut attempts = 0;
    // Outage: 10 calls, every attempt fails.
    for _ in 0..10 {
        let mut fail = vec![true; 3];
        let _ = flaky(&mut fail, &mut attempts);
    }
    assert!(!RECOVERY.allows_retry());
    let drained = RECOVERY.tokens();

    // Recovery: successes refund 0.5 each until the bucket is above half again.
    let mut successes = 0;
    while !RECOVERY.allows_retry() {
        // Bounded, so that a budget that never refills fails here rather than hanging.
        assert!(
            successes < 100,
            "100 successes did not refill the bucket above half"
        );
        flaky(&mut Vec::new(), &mut attempts).unwrap();
        successes += 1;
    }
    // From `drained` to just above 5, in steps of exactly 0.5.
    assert_eq!(f64::from(successes), ((5.0 - drained) / 0.5 + 1.0).floor());

    // A few more, so that the failure below leaves it above half, and a transient failure is
    // retried again.
    for _ in 0..4 {
        flaky(&mut Vec::new(), &mut attempts).unwrap();
    }
    let before = attempts;
    let mut fail = vec![false, true];
    flaky(&mut fail, &mut attempts).unwrap();
    assert_eq!(attempts - before, 2);
}

static REFUSAL: RetryBudget = RetryBudget::new(4, 0.0);
static REFUSAL_LOG: Mutex<Vec<(u32, Next)>> = Mutex::new(Vec::new());

fn log(f: &Failure<'_, DbError>) {
    REFUSAL_LOG.lock().unwrap().push((f.attempt, f.next));
}

#[retryable(attempts = 5, base = "0ms", idempotent, budget = REFUSAL, on_failure = log)]
fn refused(errors: &mut Vec<DbError>) -> Result<(), DbError> {
    Err(errors.pop().unwrap_or(DbError::Unavailable))
}

#[test]
fn a_refused_retry_stops_with_budget_exhausted_and_the_last_error() {
    let mut errors = vec![DbError::Unknown, DbError::Unavailable];
    assert_eq!(refused(&mut errors), Err(DbError::Unknown));
    assert_eq!(
        *REFUSAL_LOG.lock().unwrap(),
        [
            (1, Next::Retry(Duration::ZERO)),
            (2, Next::Stop(StopReason::BudgetExhausted)),
        ]
    );
    // Idempotent-only failures cost a token like transient ones: 4 − 2.
    assert_eq!(REFUSAL.tokens(), 2.0);
}

#[test]
fn permanent_errors_neither_cost_nor_refund() {
    let budget = RetryBudget::new(10, 1.0);
    budget.record_failure();
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    for _ in 0..20 {
        let result: Result<(), DbError> = Retry::new(&policy)
            .budget(&budget)
            .call(|| Err(DbError::Constraint));
        assert_eq!(result, Err(DbError::Constraint));
    }
    assert_eq!(budget.tokens(), 9.0);
}

#[test]
fn fractional_ratios_refund_exactly_not_a_rounded_reciprocal() {
    // Regression for the tower#857 class of bug: 1 / 0.6 truncated to 1 would let every
    // success buy a whole retry.
    let budget = RetryBudget::new(100, 0.6);
    for _ in 0..100 {
        budget.record_failure();
    }
    for _ in 0..10 {
        budget.record_success();
    }
    assert_eq!(budget.tokens(), 6.0);
    let third = RetryBudget::new(100, 1.0 / 3.0);
    for _ in 0..100 {
        third.record_failure();
    }
    for _ in 0..3 {
        third.record_success();
    }
    assert_eq!(third.tokens(), 0.999999);
    assert_eq!(third.token_ratio(), 0.333333);
}

#[test]
fn refunds_stop_at_max_tokens() {
    let budget = RetryBudget::new(3, 2.5);
    budget.record_failure();
    budget.record_success();
    assert_eq!(budget.tokens(), 3.0);
    assert_eq!(budget.max_tokens(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_async_builder_charges_and_checks_the_budget() {
    let budget = RetryBudget::new(6, 0.1);
    let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(10);
    let mut attempts = 0;
    let result: Result<(), DbError> = Retry::new(&policy)
        .budget(&budget)
        .call_async(|| {
            attempts += 1;
            async { Err(DbError::Unavailable) }
        })
        .await;
    assert_eq!(result, Err(DbError::Unavailable));
    // 6 → 5 → 4 → 3: two retries while above 3.
    assert_eq!(attempts, 3);
}

/// 8 threads × 10 000 calls of a function whose every attempt fails: however the threads
/// interleave, the retries made in total stay within ⌈max_tokens / 2⌉ − 1 = 499.
///
/// And at least 499 − 8: the failures that take the bucket from 1000 to 501 are each followed
/// by their thread's retry check, which can see the bucket at half only once per thread (that
/// thread's later failures all come after it).
#[test]
fn eight_threads_in_an_outage_never_exceed_the_retry_bound() {
    static STRESS: RetryBudget = RetryBudget::new(1000, 0.1);
    static ATTEMPTS: AtomicU64 = AtomicU64::new(0);

    #[retryable(attempts = 1000, base = "0ms", budget = STRESS)]
    fn always_down() -> Result<(), DbError> {
        let before = ATTEMPTS.fetch_add(1, Ordering::Relaxed);
        // Bounded, so that a budget that lets every retry through fails here at once rather
        // than after 80 million attempts.
        assert!(
            before < 100_000,
            "far more than 499 retries were let through"
        );
        Err(DbError::Unavailable)
    }

    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..10_000 {
                    let _ = always_down();
                }
            });
        }
    });
    let retries = ATTEMPTS.load(Ordering::Relaxed) - 80_000;
    assert!((491..=499).contains(&retries), "{retries} retries");
    assert_eq!(STRESS.tokens(), 0.0);
}

/// The same under a mix of successes and failures: the token count never leaves
/// `0..=max_tokens`, and retries keep happening as successes refill it.
#[test]
fn eight_threads_with_mixed_outcomes_keep_tokens_in_bounds() {
    static MIXED: RetryBudget = RetryBudget::new(50, 0.7);
    static RETRIES: AtomicU32 = AtomicU32::new(0);

    std::thread::scope(|s| {
        for thread in 0..8u32 {
            s.spawn(move || {
                let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
                for i in 0..10_000u32 {
                    let mut attempt = 0;
                    let _: Result<(), DbError> = Retry::new(&policy).budget(&MIXED).call(|| {
                        attempt += 1;
                        let tokens = MIXED.tokens();
                        assert!((0.0..=50.0).contains(&tokens), "{tokens} tokens");
                        if attempt > 1 {
                            RETRIES.fetch_add(1, Ordering::Relaxed);
                        }
                        // A quarter of the calls fail their first attempt.
                        if attempt > 1 || (i ^ thread) % 4 != 0 {
                            Ok(())
                        } else {
                            Err(DbError::Unavailable)
                        }
                    });
                }
            });
        }
    });
    let tokens = MIXED.tokens();
    assert!((0.0..=50.0).contains(&tokens));
    // Far more than the 24 a drained bucket would allow: refunds keep retries going.
    assert!(RETRIES.load(Ordering::Relaxed) > 1000);
}

#[test]
fn debug_shows_the_name_and_the_tokens() {
    let budget = RetryBudget::new(10, 0.5).name("payments");
    budget.record_failure();
    assert_eq!(
        format!("{budget:?}"),
        "RetryBudget { name: Some(\"payments\"), tokens: 9.0, max_tokens: 10, token_ratio: 0.5 }"
    );
}

#[test]
fn a_builder_debugs_with_its_budget() {
    let policy = RetryPolicy::new();
    let budget = RetryBudget::new(3, 1.0).name("search");
    let debug = format!("{:?}", Retry::new(&policy).budget(&budget));
    assert!(
        debug.contains(
            "protection: Protections { circuit: NoCircuit, budget: Some(RetryBudget { name: Some(\"search\")"
        ),
        "{debug}"
    );
}
