//! Helpers for testing code that retries, without ever sleeping.
//!
//! - Async code: run the test under `#[tokio::test(start_paused = true)]`. Delays, deadlines and
//!   breaker cool-downs all follow tokio's virtual clock, which jumps forward whenever the
//!   runtime is idle.
//! - Sync code: wrap the call in [`record_sleeps`]. Nothing is slept; virtual time advances by
//!   each delay, so deadlines see it, and the delays come back for assertions.
//! - Jitter: [`seed_jitter`] makes this thread's random delays reproducible.

use std::time::Duration;

/// Run `f` on this thread with sleeps made virtual, and return what it returned together with
/// the delays that would have been slept, in order.
///
/// Inside `f`, sync retry loops do not block: each delay advances this thread's virtual clock
/// instead, so a deadline or a breaker cool-down sees the time pass. Nested calls each get their
/// own list and share the clock.
///
/// ```
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

/// Seed this thread's jitter generator, so that the same calls draw the same delays.
///
/// ```
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
