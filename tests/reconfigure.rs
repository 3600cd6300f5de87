//! Breakers and budgets given new settings while they run: state kept (an open breaker stays
//! open, a budget keeps its share of tokens), settings read whole under concurrent calls.
#![deny(warnings, unused_qualifications)]

use retry_kit::{BreakerSettings, BudgetSettings, CircuitBreaker, CircuitState, RetryBudget};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::advance;

const S: fn(u64) -> Duration = Duration::from_secs;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_open_breaker_stays_open_and_a_shorter_open_for_shortens_its_cool_down() {
    let breaker = CircuitBreaker::new(1, S(60));
    breaker.try_acquire().unwrap().failed();
    advance(S(5)).await;

    breaker.set_settings(BreakerSettings::new(10, S(120)));
    assert_eq!(breaker.state(), CircuitState::Open);
    // A longer `open_for` applies from the next opening: 55 s are left of this one.
    assert_eq!(breaker.try_acquire().unwrap_err().retry_after(), S(55));

    breaker.set_settings(BreakerSettings::new(10, S(20)));
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(breaker.try_acquire().unwrap_err().retry_after(), S(20));
    advance(S(20)).await;
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_half_open_breaker_keeps_its_probes_and_closes_by_the_new_threshold() {
    let breaker = CircuitBreaker::new(1, S(1))
        .half_open_max(2)
        .success_threshold(3);
    breaker.try_acquire().unwrap().failed();
    advance(S(1)).await;
    let first = breaker.try_acquire().unwrap();
    let second = breaker.try_acquire().unwrap();

    // One probe at a time from now on: the two running keep their slots, no third starts.
    breaker.set_settings(
        BreakerSettings::new(1, S(1))
            .half_open_max(1)
            .success_threshold(2),
    );
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    assert!(breaker.try_acquire().is_err());
    first.succeeded();
    assert!(breaker.try_acquire().is_err(), "one probe still runs");
    second.succeeded();
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "two successes close it now"
    );
}

#[test]
fn a_lower_threshold_opens_a_closed_breaker_at_its_next_failure() {
    let breaker = CircuitBreaker::new(5, S(30));
    retry_kit::testing::record_sleeps(|| {
        for _ in 0..3 {
            breaker.try_acquire().unwrap().failed();
        }
        breaker.set_settings(BreakerSettings::new(2, S(30)));
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "changing it does not trip it"
        );
        breaker.try_acquire().unwrap().failed();
        assert_eq!(breaker.state(), CircuitState::Open);
    });
}

#[test]
fn a_failure_ratio_added_at_run_time_counts_from_then_on() {
    let breaker = CircuitBreaker::new(u32::MAX, S(30));
    retry_kit::testing::record_sleeps(|| {
        for _ in 0..10 {
            breaker.try_acquire().unwrap().failed();
        }
        breaker.set_settings(BreakerSettings::new(u32::MAX, S(30)).failure_ratio(0.5, S(60), 4));
        breaker.try_acquire().unwrap().failed();
        breaker.try_acquire().unwrap().succeeded();
        breaker.try_acquire().unwrap().failed();
        assert_eq!(
            breaker.state(),
            CircuitState::Closed,
            "3 outcomes in the window"
        );
        breaker.try_acquire().unwrap().failed();
        assert_eq!(breaker.state(), CircuitState::Open, "3 of 4 failed");
    });
}

#[test]
fn a_budget_keeps_its_share_of_tokens_at_the_new_size() {
    let budget = RetryBudget::new(10, 0.5);
    for _ in 0..4 {
        budget.record_failure();
    }
    budget.set_settings(BudgetSettings::new(20, 1.0));
    assert_eq!(budget.tokens(), 12.0);
    assert_eq!((budget.max_tokens(), budget.token_ratio()), (20, 1.0));
    budget.record_success();
    assert_eq!(budget.tokens(), 13.0, "refunds by the new ratio");

    budget.set_settings(BudgetSettings::new(4, 1.0));
    assert_eq!(budget.tokens(), 2.6);
    assert!(budget.allows_retry());

    let empty = RetryBudget::new(10, 0.5);
    for _ in 0..10 {
        empty.record_failure();
    }
    empty.set_settings(BudgetSettings::new(100, 0.5));
    assert_eq!(
        empty.tokens(),
        0.0,
        "an empty bucket grants no burst of retries"
    );
    let full = RetryBudget::new(10, 0.5);
    full.set_settings(BudgetSettings::new(3, 0.5));
    assert_eq!(full.tokens(), 3.0);
}

/// Regression: a budget drained to 0, turned off (`max_tokens = 0`, retries off during an
/// incident) and turned back on held a full bucket, granting a burst of retries to the
/// dependency that had just failed. A bucket of 0 is empty, and stays empty when given a size.
#[test]
fn a_budget_turned_off_and_on_again_comes_back_empty_not_full() {
    let budget = RetryBudget::new(10, 0.5);
    for _ in 0..10 {
        budget.record_failure();
    }
    budget.set_settings(BudgetSettings::new(0, 0.5));
    assert!(!budget.allows_retry());
    budget.set_settings(BudgetSettings::new(10, 0.5));
    assert_eq!(budget.tokens(), 0.0, "an empty one stays empty");
    assert!(!budget.allows_retry());
    // Successes refill it as before: 12 of them at 0.5 put back 6 tokens, above half.
    for _ in 0..12 {
        budget.record_success();
    }
    assert_eq!(budget.tokens(), 6.0);
    assert!(budget.allows_retry());

    // Turned off while full: the size-0 bucket held nothing either.
    let full = RetryBudget::new(10, 0.5);
    full.set_settings(BudgetSettings::new(0, 0.5));
    assert_eq!(full.tokens(), 0.0);
    full.set_settings(BudgetSettings::new(10, 0.5));
    assert_eq!(full.tokens(), 0.0);
}

/// Two threads call through a breaker and a budget while the test thread switches their
/// settings between two sets as fast as it can: every read of the settings is one set whole,
/// the closed breaker's successes never open it, and the bucket never reports more than its size.
#[test]
fn two_threads_calling_while_settings_change_see_whole_settings_and_keep_state() {
    static BREAKER: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(10));
    static BUDGET: RetryBudget = RetryBudget::new(10, 0.5);
    static RUNNING: AtomicU32 = AtomicU32::new(2);
    let breakers = [
        BreakerSettings::new(3, S(10)),
        BreakerSettings::new(7, S(90))
            .success_threshold(4)
            .half_open_max(5)
            .failure_ratio(0.75, S(60), 50),
    ];
    let budgets = [BudgetSettings::new(10, 0.5), BudgetSettings::new(40, 2.0)];

    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for i in 0..20_000 {
                    BREAKER.try_acquire().expect("closed").succeeded();
                    if i % 3 == 0 {
                        BUDGET.record_failure();
                    } else {
                        BUDGET.record_success();
                    }
                    let settings = BREAKER.settings();
                    assert!(breakers.contains(&settings), "torn: {settings:?}");
                    let settings = BUDGET.settings();
                    assert!(budgets.contains(&settings), "torn: {settings:?}");
                    assert!(
                        (0.0..=40.0).contains(&BUDGET.tokens()),
                        "never above the larger size"
                    );
                }
                RUNNING.fetch_sub(1, Ordering::Relaxed);
            });
        }
        let mut n = 0;
        while RUNNING.load(Ordering::Relaxed) > 0 {
            BREAKER.set_settings(breakers[n % 2]);
            BUDGET.set_settings(budgets[n % 2]);
            n += 1;
        }
    });
    assert_eq!(BREAKER.state(), CircuitState::Closed);
    let tokens = BUDGET.tokens();
    assert!(
        (0.0..=f64::from(BUDGET.max_tokens())).contains(&tokens),
        "{tokens}"
    );
}

/// While two threads are refused by an open breaker, new settings keep it open.
#[test]
fn an_open_breaker_stays_open_under_concurrent_calls_and_reloads() {
    static BREAKER: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(3600));
    BREAKER.try_acquire().unwrap().failed();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..10_000 {
                    assert!(BREAKER.try_acquire().is_err(), "an open breaker stays open");
                }
            });
        }
        for n in 0..2_000u32 {
            BREAKER.set_settings(BreakerSettings::new(n + 1, S(3600 + u64::from(n))));
        }
    });
    assert_eq!(BREAKER.state(), CircuitState::Open);
}
