//! The non-macro forms: `RetryPolicy::call`, `RetryPolicy::call_async`, the `Retry` builder, and
//! `policy = expr` with a policy built at run time.

use retry_kit::{ErrorClass, Failure, Jitter, Next, Retry, RetryPolicy, retryable, testing};
use std::io;
use std::time::Duration;

fn reset() -> io::Error {
    io::Error::from(io::ErrorKind::ConnectionReset)
}

#[test]
fn policy_call_retries_a_closure_with_captured_state() {
    let policy = RetryPolicy::fixed(Duration::from_secs(1))
        .jitter(Jitter::None)
        .attempts(4);
    let mut failures_left = 2;
    let (result, slept) = testing::record_sleeps(|| {
        policy.call(|| {
            if failures_left > 0 {
                failures_left -= 1;
                return Err(reset());
            }
            Ok("ok")
        })
    });
    assert_eq!(result.unwrap(), "ok");
    assert_eq!(slept, [Duration::from_secs(1); 2]);
}

#[test]
fn builder_classifies_with_a_function_and_reports_every_failure() {
    let policy = RetryPolicy::new().base(Duration::ZERO).attempts(3);
    let mut records = Vec::new();
    let result: Result<(), u16> = Retry::new(&policy)
        .classify(|status: &u16| match status {
            503 => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        })
        .on_failure(|f: &Failure<'_, u16>| records.push((f.attempt, *f.error, f.next)))
        .call(|| Err(503));
    assert_eq!(result, Err(503));
    assert_eq!(records.len(), 3);
    assert_eq!(
        records[2].2,
        Next::Stop(retry_kit::StopReason::AttemptsExhausted)
    );
}

#[tokio::test(start_paused = true)]
async fn call_async_sleeps_on_the_paused_clock() {
    let policy = RetryPolicy::exponential(Duration::from_secs(1))
        .jitter(Jitter::None)
        .attempts(4);
    let start = tokio::time::Instant::now();
    let mut calls = 0;
    let result: Result<(), io::Error> = policy
        .call_async(|| {
            calls += 1;
            async { Err(reset()) }
        })
        .await;
    assert!(result.is_err());
    assert_eq!(calls, 4);
    assert_eq!(start.elapsed(), Duration::from_secs(1 + 2 + 4));
}

#[tokio::test]
async fn call_async_with_uses_the_given_sleep() {
    let policy = RetryPolicy::fixed(Duration::from_millis(7))
        .jitter(Jitter::None)
        .attempts(3);
    let slept = std::sync::Mutex::new(Vec::new());
    let result: Result<(), io::Error> = Retry::new(&policy)
        .call_async_with(
            || async { Err(reset()) },
            |d| {
                slept.lock().unwrap().push(d);
                async {}
            },
        )
        .await;
    assert!(result.is_err());
    assert_eq!(*slept.lock().unwrap(), [Duration::from_millis(7); 2]);
}

struct Client {
    policy: RetryPolicy,
    calls: u32,
}

impl Client {
    #[retryable(policy = self.policy)]
    fn get(&mut self) -> io::Result<u32> {
        self.calls += 1;
        Err(reset())
    }

    #[retryable(policy = &self.policy, idempotent)]
    fn put(&mut self) -> io::Result<u32> {
        self.calls += 1;
        Err(io::Error::from(io::ErrorKind::TimedOut))
    }
}

#[test]
fn a_policy_built_at_run_time_drives_the_attribute() {
    let attempts = std::env::args().count() as u32 + 4; // not a compile-time constant
    let mut client = Client {
        policy: RetryPolicy::new().base(Duration::ZERO).attempts(attempts),
        calls: 0,
    };
    assert!(client.get().is_err());
    assert_eq!(client.calls, attempts);
    // `idempotent` on the attribute overrides the shared policy for this function only.
    client.calls = 0;
    assert!(client.put().is_err());
    assert_eq!(client.calls, attempts);
    assert!(!client.policy.settings().idempotent);
}

static SHARED: RetryPolicy = RetryPolicy::fixed(Duration::from_secs(2))
    .jitter(Jitter::None)
    .attempts(2);

#[retryable(policy = &SHARED)]
fn uses_static() -> io::Result<()> {
    Err(reset())
}

#[test]
fn a_static_policy_is_shared_by_reference() {
    let (_, slept) = testing::record_sleeps(uses_static);
    assert_eq!(slept, [Duration::from_secs(2)]);
}
