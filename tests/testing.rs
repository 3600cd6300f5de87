//! `testing::record_sleeps_async`: every retryable call made while the recorded future is polled
//! sleeps virtually — async and sync ones, on any runtime, on a real or a paused clock — and the
//! delays come back in order; work on other tasks is not covered.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, RetryPolicy, retryable, testing};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
#[classify(transient)]
struct Busy;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[retryable(attempts = 4, base = "10s", jitter = "none")]
async fn always_busy() -> Result<(), Busy> {
    tokio::task::yield_now().await;
    Err(Busy)
}

#[tokio::test(start_paused = true)]
async fn async_sleeps_are_recorded_not_slept_on_the_paused_clock() {
    let start = tokio::time::Instant::now();
    let (result, slept) = testing::record_sleeps_async(always_busy()).await;
    assert_eq!(result, Err(Busy));
    assert_eq!(slept, [secs(10), secs(20), secs(30)]);
    // tokio's clock did not move: nothing was slept, not even virtually by tokio.
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn async_sleeps_are_recorded_on_a_real_clock_without_test_util() {
    // 60 s of delays; the test returns at once because nothing is slept.
    let (result, slept) = testing::record_sleeps_async(always_busy()).await;
    assert_eq!(result, Err(Busy));
    assert_eq!(slept, [secs(10), secs(20), secs(30)]);
}

#[retryable(attempts = 5, base = "10s", jitter = "none", deadline = "25s")]
async fn bounded() -> Result<(), Busy> {
    Err(Busy)
}

#[tokio::test]
async fn the_deadline_follows_the_virtual_clock() {
    let (result, slept) = testing::record_sleeps_async(bounded()).await;
    assert_eq!(result, Err(Busy));
    // 10 s, then a 20 s wait would end at 30 s, past the 25 s deadline.
    assert_eq!(slept, [secs(10)]);
}

#[retryable(attempts = 3, base = "1s", backoff = "fixed", jitter = "none")]
fn sync_busy() -> Result<(), Busy> {
    Err(Busy)
}

#[tokio::test]
async fn sync_calls_and_builder_calls_inside_the_future_are_recorded_too() {
    let policy = RetryPolicy::fixed(secs(3))
        .attempts(2)
        .jitter(retry_kit::Jitter::None);
    let (_, slept) = testing::record_sleeps_async(async {
        let _ = sync_busy();
        let _ = policy.call_async(|| async { Err::<(), _>(Busy) }).await;
    })
    .await;
    assert_eq!(slept, [secs(1), secs(1), secs(3)]);
}

#[tokio::test(start_paused = true)]
async fn work_spawned_onto_another_task_is_not_recorded() {
    let start = tokio::time::Instant::now();
    let (result, slept) =
        testing::record_sleeps_async(async { tokio::spawn(always_busy()).await.unwrap() }).await;
    assert_eq!(result, Err(Busy));
    assert!(slept.is_empty(), "{slept:?}");
    // The spawned task slept for real, on tokio's paused clock.
    assert_eq!(start.elapsed(), secs(60));
}

/// The smallest executor: poll on this thread, park until woken. No tokio runtime, no timer.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[test]
fn it_needs_no_tokio_runtime() {
    // Outside a runtime tokio's sleep would panic ("no reactor running"): every wait here is
    // virtual.
    let (result, slept) = block_on(testing::record_sleeps_async(always_busy()));
    assert_eq!(result, Err(Busy));
    assert_eq!(slept, [secs(10), secs(20), secs(30)]);
}

#[tokio::test(start_paused = true)]
async fn nested_recordings_keep_their_own_logs_on_one_virtual_clock() {
    let (inner, outer) = testing::record_sleeps_async(async {
        let _ = sync_busy();
        let (_, inner) = testing::record_sleeps_async(bounded()).await;
        inner
    })
    .await;
    assert_eq!(outer, [secs(1), secs(1)]);
    // The inner recording starts at 2 s of virtual time; its deadline is its own 25 s.
    assert_eq!(inner, [secs(10)]);
}
