//! Helpers for testing code that retries, without ever sleeping.
//!
//! - Sync code: wrap the call in [`record_sleeps`]. Nothing is slept; virtual time advances by
//!   each delay, so deadlines see it, and the delays come back for assertions.
//! - Async code: wrap the future in [`record_sleeps_async`]. The same, for every retryable call
//!   made while that future is polled (sync ones included), on any runtime and whether or not
//!   tokio's clock is paused. It needs nothing beyond the runtime that runs the test: with tokio,
//!   `tokio = { version = "1", features = ["macros", "rt"] }` in `[dev-dependencies]`.
//! - Or run an async test under `#[tokio::test(start_paused = true)]`: delays, deadlines,
//!   attempt timeouts and breaker cool-downs all follow tokio's paused clock, which jumps forward
//!   whenever the runtime is idle. Pausing needs tokio's `test-util` feature:
//!   `tokio = { version = "1", features = ["macros", "rt", "test-util"] }`.
//! - Jitter: [`seed_jitter`] makes this thread's random delays reproducible.
//!
//! `attempt_timeout` cuts attempts off with a real timer of the runtime, which a recording does
//! not make virtual (it cannot know when a pending attempt would have finished): test timeouts
//! on tokio's paused clock when the attempts are futures of the test's own (a mock service, a
//! channel). Not when they wait on real sockets (a server on loopback): while the I/O is
//! pending the runtime is idle, so the paused clock jumps to the next timer and every attempt
//! times out at once. There, keep the real clock (and short limits), and record the waits
//! between attempts with [`record_sleeps_async`].

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

/// Run `f` on this thread with sleeps made virtual, and return what it returned together with
/// the delays that would have been slept, in order.
///
/// Inside `f`, sync retry loops do not block: each delay advances this thread's virtual clock
/// instead, so a deadline or a breaker cool-down sees the time pass. Nested calls each get their
/// own list and share the clock.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, testing, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Busy;
///
/// #[retryable(attempts = 4, base = "1s", jitter = "none")]
/// fn always_busy() -> Result<(), Busy> {
///     Err(Busy)
/// }
///
/// let (result, slept) = testing::record_sleeps(always_busy);
/// assert!(result.is_err());
/// assert_eq!(slept, [1, 2, 4].map(Duration::from_secs));
/// ```
pub fn record_sleeps<R>(f: impl FnOnce() -> R) -> (R, Vec<Duration>) {
    crate::clock::with_virtual_time(f)
}

/// Run `future` with sleeps made virtual while it is polled, and return its output together with
/// the delays that would have been slept, in order.
///
/// Task-scoped: around every poll of `future`, this thread's clock is a virtual one that every
/// retry loop inside follows — async sleeps are recorded and skipped, sync sleeps too, and
/// deadlines and breaker cool-downs see the virtual time pass. Work spawned onto other tasks is
/// not covered. It works on any runtime (no timer is needed for the recorded sleeps) and on a
/// real or paused tokio clock alike.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, testing, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Busy;
///
/// #[retryable(attempts = 4, base = "1s", jitter = "none", deadline = "5s")]
/// async fn always_busy() -> Result<(), Busy> {
///     Err(Busy)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (result, slept) = testing::record_sleeps_async(always_busy()).await;
/// assert!(result.is_err());
/// // 1 s and 2 s; a 4 s wait would end at 7 s, past the 5 s deadline. Nothing was slept.
/// assert_eq!(slept, [1, 2].map(Duration::from_secs));
/// # }
/// ```
pub async fn record_sleeps_async<F: Future>(future: F) -> (F::Output, Vec<Duration>) {
    let mut time = crate::clock::VirtualTime::starting_now();
    let mut future = pin!(future);
    let out = std::future::poll_fn(|cx| {
        let _entered = time.enter();
        future.as_mut().poll(cx)
    })
    .await;
    (out, time.into_recorded())
}

/// Seed this thread's jitter generator, so that the same calls draw the same delays.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{testing, Jitter, RetryPolicy};
/// use std::time::Duration;
///
/// let policy = RetryPolicy::exponential(Duration::from_millis(100))
///     .jitter(Jitter::Full)
///     .attempts(6);
/// let schedule = || {
///     testing::record_sleeps(|| policy.call(|| Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset))))
///         .1
/// };
/// testing::seed_jitter(7);
/// let first = schedule();
/// testing::seed_jitter(7);
/// assert_eq!(schedule(), first);
/// ```
pub fn seed_jitter(seed: u64) {
    crate::rng::seed(seed)
}
