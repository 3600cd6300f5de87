//! Properties of the delay arithmetic and the loop, over the whole input space: every backoff
//! shape and jitter mode, attempt numbers up to `u32::MAX`, bases and caps from zero to near
//! `Duration::MAX`, multipliers from 1 to 1000. Case counts are bounded so the suite stays fast.

use proptest::prelude::*;
use retry_kit::{Backoff, Jitter, RetryPolicy, testing};
use std::io;
use std::time::Duration;

fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        Just(Duration::new(u64::MAX, 0)),
        (0u64..=1_000_000_000).prop_map(Duration::from_nanos),
        (0u64..=100_000).prop_map(Duration::from_millis),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

fn any_shape() -> impl Strategy<Value = Backoff> {
    prop_oneof![
        Just(Backoff::Exponential),
        Just(Backoff::Fixed),
        Just(Backoff::Linear)
    ]
}

fn any_jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated),
        Just(Jitter::Spread)
    ]
}

fn any_attempt() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..100, Just(u32::MAX), Just(u32::MAX - 1), any::<u32>()]
}

fn any_multiplier() -> impl Strategy<Value = f64> {
    prop_oneof![Just(1.0), Just(1000.0), 1.0f64..=1000.0]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn nominal_delay_never_exceeds_the_cap_and_never_panics(
        shape in any_shape(), base in any_duration(), cap in any_duration(),
        m in any_multiplier(), k in any_attempt(),
    ) {
        let p = RetryPolicy::new().backoff(shape).base(base).max_delay(cap).multiplier(m);
        prop_assert!(p.nominal_delay(k) <= cap);
    }

    #[test]
    fn exponential_delays_never_shrink_as_attempts_grow(
        base in any_duration(), cap in any_duration(), m in any_multiplier(), k in 1u32..10_000,
    ) {
        let p = RetryPolicy::exponential(base).max_delay(cap).multiplier(m);
        prop_assert!(p.nominal_delay(k) <= p.nominal_delay(k + 1));
    }

    #[test]
    fn jittered_delays_stay_in_their_window(
        jitter in any_jitter(), d in any_duration(), base in any_duration(),
        cap in any_duration(), previous in any_duration(), draw in any::<u64>(),
    ) {
        let s = jitter.apply(d, base, cap, previous, draw);
        prop_assert!(s <= cap, "{s:?} over the cap {cap:?}");
        let d = d.min(cap);
        match jitter {
            Jitter::None => prop_assert_eq!(s, d),
            Jitter::Full => prop_assert!(s <= d),
            Jitter::Equal => prop_assert!(s >= d / 2 && s <= d, "{s:?} for {d:?}"),
            Jitter::Spread => {
                let d = d.as_nanos().min(cap.as_nanos() * 5 / 6);
                let s = s.as_nanos();
                prop_assert!(s * 5 + 5 >= d * 4 && s * 5 <= d * 6 + 5, "{s} ns for {d} ns");
            }
            Jitter::Decorrelated => {
                let hi = previous.saturating_mul(3).max(base);
                prop_assert!(s >= base.min(cap) && s <= hi.min(cap), "{s:?} outside [{base:?}, {hi:?}]");
            }
        }
    }

    #[test]
    fn policy_jitter_keeps_the_cap_for_any_attempt(
        shape in any_shape(), jitter in any_jitter(), base in any_duration(),
        cap in any_duration(), m in any_multiplier(), k in any_attempt(),
        previous in any_duration(), draw in any::<u64>(),
    ) {
        let p = RetryPolicy::new().backoff(shape).jitter(jitter).base(base).max_delay(cap).multiplier(m);
        prop_assert!(p.jittered_delay(k, previous, draw) <= cap);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_loop_never_sleeps_past_its_deadline_nor_over_its_cap(
        shape in any_shape(), jitter in any_jitter(), attempts in 1u32..40,
        base_ms in 0u64..5_000, cap_ms in 0u64..20_000, deadline_ms in 0u64..60_000,
        m in any_multiplier(), seed in any::<u64>(),
    ) {
        let policy = RetryPolicy::new()
            .backoff(shape)
            .jitter(jitter)
            .attempts(attempts)
            .base(Duration::from_millis(base_ms))
            .max_delay(Duration::from_millis(cap_ms))
            .multiplier(m)
            .deadline(Duration::from_millis(deadline_ms));
        testing::seed_jitter(seed);
        let mut calls = 0u32;
        let (result, slept) = testing::record_sleeps(|| {
            policy.call(|| {
                calls += 1;
                Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
            })
        });
        prop_assert!(result.is_err());
        prop_assert!(calls <= attempts);
        prop_assert_eq!(slept.len() as u32, calls - 1);
        prop_assert!(slept.iter().all(|d| *d <= Duration::from_millis(cap_ms)));
        prop_assert!(slept.iter().sum::<Duration>() <= Duration::from_millis(deadline_ms));
    }
}

#[test]
fn duration_max_sleeps_neither_panic_nor_fit_in_a_deadline() {
    // Sleeps of Duration::MAX overflow any Instant: the virtual clock saturates instead.
    let policy = RetryPolicy::fixed(Duration::MAX)
        .max_delay(Duration::MAX)
        .jitter(Jitter::None)
        .attempts(3);
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| {
        policy.call(|| {
            calls += 1;
            Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
        })
    });
    assert_eq!(calls, 3);
    assert_eq!(slept, [Duration::MAX; 2]);

    let with_deadline = policy.deadline(Duration::from_secs(10));
    let mut calls = 0;
    let (_, slept) = testing::record_sleeps(|| {
        with_deadline.call(|| {
            calls += 1;
            Err::<(), _>(io::Error::from(io::ErrorKind::ConnectionReset))
        })
    });
    assert_eq!(
        calls, 1,
        "a Duration::MAX sleep cannot fit in a 10 s deadline"
    );
    assert!(slept.is_empty());
}
