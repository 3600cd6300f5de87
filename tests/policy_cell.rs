//! `PolicyCell`: a policy replaced at run time, read by `#[retryable(policy = CELL)]` and the
//! builder; a call keeps the policy it started with; readers never see half of a replacement.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, Jitter, PolicyCell, Retry, RetryPolicy, retryable, testing};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// One attempt after 1 ms: sleeps `[1ms]`.
const SHORT: RetryPolicy = RetryPolicy::fixed(Duration::from_millis(1)).attempts(2);
/// Four attempts growing by 7 ms, no jitter: sleeps `[7ms, 14ms, 21ms]`.
const LONG: RetryPolicy = RetryPolicy::linear(Duration::from_millis(7))
    .jitter(Jitter::None)
    .attempts(4)
    .idempotent(true);

#[test]
fn the_next_call_uses_the_policy_set_and_a_call_under_way_keeps_its_own() {
    static CELL: PolicyCell = PolicyCell::new(SHORT);
    static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

    #[retryable(policy = CELL)]
    fn reload_inside() -> Result<(), Busy> {
        // Replaced during the first attempt: this call goes on under the policy it started with.
        if ATTEMPTS.fetch_add(1, Ordering::Relaxed) == 0 {
            CELL.set(LONG);
        }
        Err(Busy)
    }

    let (_, slept) = testing::record_sleeps(reload_inside);
    assert_eq!(slept, [MS(1)]);
    assert_eq!(CELL.get(), LONG);
    let (_, slept) = testing::record_sleeps(reload_inside);
    assert_eq!(slept, [MS(7), MS(14), MS(21)]);
}

#[test]
fn keys_beside_a_cell_override_what_it_holds() {
    static CELL: PolicyCell = PolicyCell::new(SHORT);

    #[retryable(policy = CELL, idempotent)]
    fn timed_out() -> Result<(), retry_kit::TimedOut> {
        Err(retry_kit::TimedOut::after(MS(5)))
    }

    // `TimedOut` is idempotent-only: retried only because the attribute adds `idempotent`.
    let (_, slept) = testing::record_sleeps(timed_out);
    assert_eq!(slept, [MS(1)]);
    assert!(!CELL.get().settings().idempotent);
}

#[test]
fn the_builder_and_call_read_the_cell_now() {
    static CELL: PolicyCell = PolicyCell::new(SHORT);
    let fail = || Err::<(), _>(Busy);

    let (_, slept) = testing::record_sleeps(|| Retry::new(&CELL.get()).call(fail));
    assert_eq!(slept, [MS(1)]);
    CELL.set(LONG);
    let (_, slept) = testing::record_sleeps(|| CELL.call(fail));
    assert_eq!(slept, [MS(7), MS(14), MS(21)]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_async_call_keeps_its_policy_across_awaits() {
    static CELL: PolicyCell = PolicyCell::new(LONG);

    #[retryable(policy = CELL)]
    async fn fetch(calls: &AtomicU32) -> Result<(), Busy> {
        calls.fetch_add(1, Ordering::Relaxed);
        CELL.set(SHORT);
        Err(Busy)
    }

    let calls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    assert!(fetch(&calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 4);
    assert_eq!(start.elapsed(), MS(7 + 14 + 21));
}

/// Two threads call through the cell while the test thread replaces its policy for as long as
/// they run: every call runs one whole policy, and every read is one of the two.
#[test]
fn two_threads_calling_while_the_policy_is_replaced_never_see_a_torn_policy() {
    static CELL: PolicyCell = PolicyCell::new(SHORT);
    static RUNNING: AtomicU32 = AtomicU32::new(2);

    #[retryable(policy = CELL)]
    fn always_busy() -> Result<(), Busy> {
        Err(Busy)
    }

    let schedules = [vec![MS(1)], vec![MS(7), MS(14), MS(21)]];
    let seen = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut seen = [0u32; 2];
                    for _ in 0..5000 {
                        let (_, slept) = testing::record_sleeps(always_busy);
                        let which = schedules.iter().position(|s| *s == slept);
                        let Some(which) = which else {
                            RUNNING.fetch_sub(1, Ordering::Relaxed);
                            panic!("a torn policy: slept {slept:?}");
                        };
                        seen[which] += 1;
                        let read = CELL.get();
                        assert!(read == SHORT || read == LONG, "a torn read: {read:?}");
                    }
                    RUNNING.fetch_sub(1, Ordering::Relaxed);
                    seen
                })
            })
            .collect();
        let mut sets = 0u64;
        while RUNNING.load(Ordering::Relaxed) > 0 {
            CELL.set(if sets % 2 == 0 { LONG } else { SHORT });
            sets += 1;
        }
        CELL.set(SHORT);
        callers
            .into_iter()
            .map(|c| c.join().expect("no torn policy"))
            .fold([0, 0], |[s, l], [a, b]| [s + a, l + b])
    });
    assert_eq!(seen[0] + seen[1], 10_000);
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "the calls ran beside the replacements: {seen:?}"
    );
}
