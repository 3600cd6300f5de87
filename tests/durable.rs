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

    tokio::time::advance(S(29 * 60)).await;
    state.start_attempt();
    assert_eq!(
        policy.plan(&mut state, &reset()),
        Plan::Stop(StopReason::DeadlineExceeded),
        "89 minutes in, a 60 s wait would end past the 90-minute deadline"
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
