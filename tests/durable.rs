//! Work that outlives the process: `RetryState`, `AttemptRecord` and `RetryPolicy::plan`, the
//! engine's decisions as data for a scheduler that persists the state between runs.
#![deny(warnings, unused_qualifications)]

use retry_kit::durable::{Plan, RetryState};
use retry_kit::{Classify, ErrorClass, Jitter, RetryPolicy, StopReason, testing};
use std::io;
use std::time::Duration;

const S: fn(u64) -> Duration = Duration::from_secs;

fn reset() -> io::Error {
    io::Error::from(io::ErrorKind::ConnectionReset)
}

/// A plan gives the waits the retry loop sleeps, jitter included: one engine, two ways to
/// wait. Same seed, same policy: the scheduler's waits are the loop's sleeps.
#[test]
fn plans_wait_what_the_retry_loop_sleeps_for_every_jitter() {
    for jitter in [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
    ] {
        let policy = RetryPolicy::exponential(Duration::from_millis(100))
            .jitter(jitter)
            .max_delay(S(5))
            .attempts(8);
        testing::seed_jitter(11);
        let (_, slept) = testing::record_sleeps(|| policy.call(|| Err::<(), _>(reset())));
        testing::seed_jitter(11);
        let mut state = RetryState::default();
        let mut planned = Vec::new();
        while let Plan::Retry { after } = policy.plan(&mut state, &reset()) {
            planned.push(after);
        }
        assert_eq!(planned, slept, "{jitter:?}");
        assert_eq!(state.attempts(), 8);
    }
}

#[derive(Debug, Classify)]
enum Upstream {
    #[classify(transient)]
    RateLimited(#[classify(retry_after)] Duration),
    #[classify(idempotent_only)]
    Timeout,
    #[classify(already_done)]
    Duplicate,
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

#[test]
fn the_class_and_the_hints_decide_as_in_the_loop() {
    let policy = RetryPolicy::fixed(S(1)).max_delay(S(60)).attempts(5);
    let mut state = RetryState::default();
    assert_eq!(
        policy.plan(&mut state, &Upstream::RateLimited(S(20))),
        Plan::Retry { after: S(20) },
        "at least the retry-after"
    );
    assert_eq!(
        policy.plan(&mut state, &Upstream::RateLimited(S(3600))),
        Plan::Stop(StopReason::RetryAfterTooLong)
    );
    assert_eq!(
        policy.plan(&mut RetryState::default(), &Upstream::Timeout),
        Plan::Stop(StopReason::NotIdempotent)
    );
    assert_eq!(
        policy
            .idempotent(true)
            .plan(&mut RetryState::default(), &Upstream::Timeout),
        Plan::Retry { after: S(1) }
    );
    assert_eq!(
        policy.plan(&mut RetryState::default(), &Upstream::Duplicate),
        Plan::Done
    );
    let record = state.run_log().last().unwrap();
    assert_eq!(record.class(), Some(ErrorClass::Transient));
    assert_eq!(record.error(), Some("RateLimited(3600s)"));
}

/// The deadline is measured on the wall clock from the first attempt's start, which the state
/// carries: a task re-run in another process (here: the state written out and read back, an
/// hour later on the virtual clock) stops when its deadline has passed.
#[cfg(feature = "serde")]
#[tokio::test(start_paused = true)]
async fn a_deadline_spans_processes_through_the_persisted_state() {
    let policy = RetryPolicy::fixed(S(60))
        .max_delay(S(60))
        .deadline(S(90 * 60))
        .attempts(100);
    let mut state = RetryState::default();
    state.start_attempt();
    assert_eq!(
        policy.plan(&mut state, &reset()),
        Plan::Retry { after: S(60) }
    );
    let persisted = serde_json::to_string(&state).unwrap();

    tokio::time::advance(S(3600)).await;
    let mut state: RetryState = serde_json::from_str(&persisted).unwrap();
    state.start_attempt();
    assert_eq!(
        policy.plan(&mut state, &reset()),
        Plan::Retry { after: S(60) }
    );

    // 89 minutes in, a 60 s wait ends exactly at the deadline: allowed, as in the loop.
    tokio::time::advance(S(29 * 60)).await;
    let mut at_the_edge = state.clone();
    at_the_edge.start_attempt();
    assert_eq!(
        policy.plan(&mut at_the_edge, &reset()),
        Plan::Retry { after: S(60) }
    );
    tokio::time::advance(S(1)).await;
    state.start_attempt();
    assert_eq!(
        policy.plan(&mut state, &reset()),
        Plan::Stop(StopReason::DeadlineExceeded),
        "89 min 1 s in, a 60 s wait would end past the 90-minute deadline"
    );
    assert_eq!(state.attempts(), 3);
}

/// The persisted form: stable names, RFC 3339 times, the attribute's durations, the key in
/// hex; read back equal, whatever the run log's length.
#[cfg(feature = "serde")]
#[test]
fn a_state_round_trips_through_json_with_stable_names() {
    let policy = RetryPolicy::exponential(S(6))
        .max_delay(S(48))
        .jitter(Jitter::Decorrelated)
        .attempts(30);
    let mut state = RetryState::default();
    for n in 0..25 {
        state.start_attempt();
        let plan = policy.plan(&mut state, &reset());
        assert!(matches!(plan, Plan::Retry { .. }), "attempt {n}: {plan:?}");
        let text = serde_json::to_string(&state).unwrap();
        let back: RetryState = serde_json::from_str(&text).unwrap();
        assert_eq!(back, state, "{text}");
    }
    let value = serde_json::to_value(&state).unwrap();
    let fields: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "attempts",
            "dropped",
            "previous_delay",
            "resume_at",
            "run_log",
            "started"
        ]
    );
    assert_eq!(value["attempts"], 25);
    assert_eq!(value["dropped"], 15);
    let first = &value["run_log"][0];
    assert_eq!(first["attempt"], 1);
    assert_eq!(first["class"], "transient");
    assert_eq!(first["error"], "connection reset");
    assert_eq!(first["next"]["action"], "retry");
    assert!(first["started"].as_str().unwrap().ends_with('Z'));
}

#[cfg(feature = "serde")]
#[test]
fn a_damaged_state_is_refused_with_what_is_wrong() {
    let error = |text: &str| {
        serde_json::from_str::<RetryState>(text)
            .unwrap_err()
            .to_string()
    };
    assert!(error(r#"{"attempts": 1, "started": "yesterday"}"#).contains("`started`"));
    assert!(error(r#"{"attempts": 1, "idempotency_key": "42"}"#).contains("idempotency key"));
    assert!(error(r#"{"attempts": 1, "atempts": 2}"#).contains("atempts"));
    let bad_class = r#"{"attempts": 1, "run_log": [{"attempt": 1, "started": "2026-12-04T00:00:00Z",
        "ended": "2026-12-04T00:00:01Z", "class": "flaky", "next": {"action": "done"}}]}"#;
    assert!(error(bad_class).contains("unknown class \"flaky\""));
    assert_eq!(
        serde_json::from_str::<RetryState>(r#"{"attempts": 0}"#).unwrap(),
        RetryState::default()
    );
}

mod keyed {
    //! `#[retryable(idempotency_key = ..)]` and the builder's `Durable`: keys from the work's
    //! identity, calls resumed from a persisted state, waits handed back.
    use retry_kit::durable::{Plan, RetryState};
    use retry_kit::run::operation_id;
    use retry_kit::{
        Classify, IdempotencyKey, Jitter, Retry, RetryPolicy, StopReason, current_attempt,
        retryable, testing,
    };
    use std::time::Duration;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[derive(Debug, Classify)]
    #[classify(transient)]
    struct Unavailable;

    impl std::fmt::Display for Unavailable {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("unavailable")
        }
    }

    #[retryable(attempts = 3, base = "0ms", idempotency_key = (date, "billing-export"))]
    fn export(date: &str, keys: &mut Vec<IdempotencyKey>) -> Result<(), Unavailable> {
        keys.push(current_attempt().unwrap().idempotency_key());
        nested(keys)?;
        if keys.len() < 4 {
            Err(Unavailable)
        } else {
            Ok(())
        }
    }

    #[retryable(attempts = 1)]
    fn nested(keys: &mut Vec<IdempotencyKey>) -> Result<(), Unavailable> {
        keys.push(current_attempt().unwrap().idempotency_key());
        Ok(())
    }

    /// The key is a fixed function of the value and the function's path: the same on every
    /// attempt and on every call with the same value (a re-run after a crash), another for
    /// another value, and the nested call's key is derived from it the same way each time.
    #[test]
    fn a_key_from_the_work_is_the_same_on_every_run_and_nested_keys_follow_it() {
        let (mut first, mut again, mut other) = (Vec::new(), Vec::new(), Vec::new());
        export("2026-12-03", &mut first).unwrap();
        export("2026-12-03", &mut again).unwrap();
        export("2026-12-04", &mut other).unwrap();
        let expected = IdempotencyKey::of(
            &("2026-12-03", "billing-export"),
            operation_id(concat!(module_path!(), "::export")),
        );
        // attempt 1: outer, nested; attempt 2: outer, nested.
        assert_eq!([first[0], first[2]], [expected; 2]);
        assert_eq!(
            first[1], first[3],
            "the nested call sends its key again on the retry"
        );
        assert_ne!(first[1], first[0]);
        assert_eq!(first, again, "a re-run sends the same keys");
        assert_ne!(other[0], first[0]);
        assert_ne!(other[1], first[1]);
    }

    fn policy() -> RetryPolicy {
        RetryPolicy::exponential(S(1))
            .jitter(Jitter::None)
            .max_delay(S(3600))
            .attempts(6)
    }

    /// A call resumed from a persisted state (written out and read back, as a scheduler
    /// would) continues its attempt count, its key and its run log.
    #[cfg(feature = "serde")]
    #[test]
    fn a_resumed_call_continues_count_key_and_log_across_a_persisted_state() {
        let mut state = RetryState::default();
        let mut numbers = Vec::new();
        let (out, slept) = testing::record_sleeps(|| {
            Retry::new(&policy())
                .resume(&mut state)
                .defer_after(S(3))
                .call(|| {
                    numbers.push(current_attempt().unwrap().number());
                    Err::<(), _>(Unavailable)
                })
        });
        assert!(out.is_err());
        assert_eq!(slept, [S(1), S(2)]);
        assert_eq!(numbers, [1, 2, 3]);
        let key = state.idempotency_key().expect("the first run fixed a key");
        let record = state.run_log().last().unwrap();
        assert_eq!(record.next(), Plan::Retry { after: S(4) });
        assert_eq!(record.error(), Some("unavailable"));

        let persisted = serde_json::to_string(&state).unwrap();
        let mut state: RetryState = serde_json::from_str(&persisted).unwrap();
        let mut seen = Vec::new();
        let (out, slept) = testing::record_sleeps(|| {
            Retry::new(&policy())
                .resume(&mut state)
                .defer_after(S(60))
                .call(|| {
                    let attempt = current_attempt().unwrap();
                    seen.push((attempt.number(), attempt.idempotency_key()));
                    if attempt.number() < 5 {
                        Err(Unavailable)
                    } else {
                        Ok(attempt.number())
                    }
                })
        });
        assert_eq!(out.unwrap(), 5);
        assert_eq!(
            slept,
            [S(8)],
            "attempt 4 failed: the backoff goes on from where it was"
        );
        assert_eq!(seen, [(4, key), (5, key)]);
        let numbers: Vec<u32> = state.run_log().map(|r| r.number()).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5]);
        assert_eq!(state.run_log().last().unwrap().next(), Plan::Done);
        assert_eq!((state.attempts(), state.resume_at()), (5, None));
    }

    /// A deferral is a stop the hook sees as `Deferred { until }`, with `until` the end of the
    /// wait it hands back; without `defer_after` the same wait is slept.
    #[test]
    fn a_wait_over_the_limit_is_handed_back_as_deferred() {
        let mut reasons = Vec::new();
        let mut state = RetryState::default();
        let (_, slept) = testing::record_sleeps(|| {
            Retry::new(&policy())
                .on_failure(|f: &retry_kit::Failure<'_, Unavailable>| reasons.push(f.next))
                .resume(&mut state)
                .defer_after(S(1))
                .call(|| Err::<(), _>(Unavailable))
        });
        assert_eq!(slept, [S(1)]);
        let Some(retry_kit::Next::Stop(StopReason::Deferred { until })) = reasons.last().copied()
        else {
            panic!("{reasons:?}");
        };
        assert_eq!(state.resume_at(), Some(until));
        assert_eq!(state.attempts(), 2);
    }

    /// An open breaker is handed back too, until it admits a probe; its refusal of the first
    /// attempt sends nothing and records nothing.
    #[test]
    fn an_open_breaker_is_handed_back_until_it_admits_a_probe() {
        static BREAKER: retry_kit::CircuitBreaker =
            retry_kit::CircuitBreaker::new(1, Duration::from_secs(30));
        #[derive(Debug, Classify)]
        enum Down {
            #[classify(transient)]
            Unavailable,
            #[classify(delegate)]
            Open(retry_kit::CircuitOpen),
        }
        impl From<retry_kit::CircuitOpen> for Down {
            fn from(open: retry_kit::CircuitOpen) -> Self {
                Down::Open(open)
            }
        }
        impl std::fmt::Display for Down {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{self:?}")
            }
        }
        testing::record_sleeps(|| {
            let mut state = RetryState::default();
            let out = Retry::new(&policy())
                .circuit(&BREAKER)
                .resume(&mut state)
                .defer_after(S(60))
                .call(|| Err::<(), _>(Down::Unavailable));
            assert!(matches!(out, Err(Down::Unavailable)));
            assert_eq!(
                state.attempts(),
                1,
                "the failure opened the breaker: handed back"
            );
            assert_eq!(
                state.run_log().last().unwrap().next(),
                Plan::Retry { after: S(30) }
            );

            let mut calls = 0;
            let out = Retry::new(&policy())
                .circuit(&BREAKER)
                .resume(&mut state)
                .defer_after(S(60))
                .call(|| {
                    calls += 1;
                    Ok::<_, Down>(())
                });
            assert!(matches!(out, Err(Down::Open(_))));
            assert_eq!(calls, 0);
            assert_eq!((state.attempts(), state.run_log().count()), (1, 1));
            let due = state.resume_at().unwrap();
            let wait = due.duration_since(std::time::SystemTime::now()).unwrap();
            assert!(wait <= S(30) && wait > S(29), "{wait:?}");
        });
    }
}
