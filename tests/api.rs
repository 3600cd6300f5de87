//! The public names the SPEC promises, reachable from the crate root with the promised traits
//! and `const` constructors. A rename or a lost derive fails to compile here.

use retry_kit::testing::{record_sleeps, record_sleeps_async, seed_jitter};
use retry_kit::{
    Attempt, CircuitBreaker, CircuitOpen, CircuitState, Classify, ErrorClass, Failure,
    IdempotencyKey, Jitter, Next, RetryBudget, RetryPolicy, StopReason, TimedOut, current_attempt,
    retryable,
};
use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::time::Duration;

fn copy_eq_debug<T: Copy + Eq + Debug>() {}
fn hashable<T: Hash>() {}
fn error_like<T: Clone + Debug + Display + std::error::Error>() {}

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10))
    .success_threshold(2)
    .half_open_max(1);
static BUDGET: RetryBudget = RetryBudget::new(10, 0.1).name("payments");
static HOSTS: retry_kit::PerKey<CircuitBreaker> =
    retry_kit::PerKey::new(CircuitBreaker::new(5, Duration::from_secs(10)).name("hosts"));
static TENANTS: retry_kit::PerKey<RetryBudget> = retry_kit::PerKey::new(RetryBudget::new(10, 0.1));
const POLICY: RetryPolicy = RetryPolicy::new().attempts(2).jitter(Jitter::Equal);

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[retryable(attempts = 2, base = "0ms", circuit = BREAKER, budget = BUDGET)]
fn guarded() -> Result<Option<Attempt>, Busy> {
    Ok(current_attempt())
}

#[retryable(attempts = 2, base = "0ms")]
fn keys_of_each_attempt(keys: &mut Vec<IdempotencyKey>) -> Result<(), Busy> {
    let attempt = current_attempt().expect("inside an attempt");
    keys.push(attempt.idempotency_key());
    if attempt.number() == 1 {
        Err(Busy)
    } else {
        Ok(())
    }
}

impl From<CircuitOpen> for Busy {
    fn from(_: CircuitOpen) -> Self {
        Busy
    }
}

#[test]
fn public_names_have_the_promised_traits_and_const_constructors() {
    copy_eq_debug::<ErrorClass>();
    copy_eq_debug::<CircuitState>();
    copy_eq_debug::<StopReason>();
    copy_eq_debug::<Next>();
    hashable::<ErrorClass>();
    hashable::<StopReason>();
    error_like::<TimedOut>();
    error_like::<CircuitOpen>();
    let _: fn(&Failure<'_, Busy>) -> u32 = |f| f.attempt;

    let attempt = guarded().unwrap().expect("inside an attempt");
    assert_eq!(attempt.number(), 1);
    let key = attempt.idempotency_key();
    assert_eq!(key.to_string().len(), 32);
    assert!(key.to_string().chars().all(|c| c.is_ascii_hexdigit()));
    // `Eq`: two calls have different keys; the attempts of one call share theirs.
    let other = guarded()
        .unwrap()
        .expect("inside an attempt")
        .idempotency_key();
    assert_ne!(key, other);
    let mut keys = Vec::new();
    assert!(keys_of_each_attempt(&mut keys).is_ok());
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[0], key);
    assert_eq!(BREAKER.state(), CircuitState::Closed);
    assert_eq!(POLICY.settings().attempts, 2);

    seed_jitter(1);
    let ((), slept) = record_sleeps(|| ());
    assert!(slept.is_empty());
    drop(record_sleeps_async(async {}));

    // The classes and stop reasons the SPEC names, and the per-key protection.
    let _ = [
        ErrorClass::Transient,
        ErrorClass::Permanent,
        ErrorClass::IdempotentOnly,
        ErrorClass::AlreadyDone,
    ];
    let _ = StopReason::AlreadyDone;
    assert_eq!(HOSTS.get("a.example").label(), Some("hosts"));
    assert_eq!(TENANTS.get(&7u32).tokens(), 10.0);
    assert_eq!(BUDGET.label(), Some("payments"));
}

// A configured builder kept in a struct field, its type written with `retry_kit`'s names only
// (issue: the types in `Retry`'s signature could not be named without `retry_runtime`).
type Protection = retry_kit::run::plumbing::WithBudget<
    retry_kit::run::plumbing::WithCircuit<
        retry_kit::run::plumbing::Unprotected,
        &'static CircuitBreaker,
    >,
    &'static RetryBudget,
>;

struct Client {
    retry: retry_kit::Retry<
        'static,
        fn(&Busy) -> ErrorClass,
        retry_kit::run::NoHook,
        Protection,
        retry_kit::run::AttemptTimeout,
    >,
}

static CLIENT_BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
static CLIENT_BUDGET: RetryBudget = RetryBudget::new(10, 0.1);
static CLIENT_POLICY: RetryPolicy = RetryPolicy::new().attempts(3).base(Duration::ZERO);

impl From<TimedOut> for Busy {
    fn from(_: TimedOut) -> Self {
        Busy
    }
}

#[tokio::test(start_paused = true)]
async fn a_configured_retry_is_stored_in_a_field_named_through_retry_kit() {
    let client = Client {
        retry: retry_kit::Retry::new(&CLIENT_POLICY)
            .classify((|_: &Busy| ErrorClass::Transient) as fn(&Busy) -> ErrorClass)
            .circuit(&CLIENT_BREAKER)
            .budget(&CLIENT_BUDGET)
            .attempt_timeout(Duration::from_secs(1)),
    };
    let mut attempts = 0;
    let out: Result<u32, Busy> = client
        .retry
        .clone()
        .call_async(|| {
            attempts += 1;
            let n = attempts;
            async move { if n < 3 { Err(Busy) } else { Ok(n) } }
        })
        .await;
    assert_eq!(out.ok(), Some(3));
    assert_eq!(CLIENT_BREAKER.state(), CircuitState::Closed);
}
