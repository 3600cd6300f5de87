//! The function-level test double: [`Script::inject`] and [`Script::inject_async`] put a
//! script's faults around a function body or a closure.

use super::{Fault, Script};
use crate::clock;
use std::future::Future;

impl Script {
    /// Run `work` under the script's next fault, for a function body or a closure:
    ///
    /// | fault | what happens |
    /// | --- | --- |
    /// | `Status`, `RetryAfter`, `Reset`, `Timeout` | `work` is not run; `Err(error(fault))` |
    /// | `Lost` | `work` runs, its result is dropped; `Err(error(Fault::Lost))` |
    /// | `Delay(d)` | sleep `d` ([`testing::record_sleeps`](crate::testing::record_sleeps) makes it virtual and records it), then `work()` |
    /// | `Pass` | `work()` |
    ///
    /// `error` turns the fault into the function's own error, so the test decides how each
    /// fault is classified (a `Lost` is usually a timeout: idempotent-only).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::faults::{Fault, Script};
    /// use retry_kit::{Classify, RetryPolicy};
    /// use std::cell::Cell;
    /// use std::time::Duration;
    ///
    /// #[derive(Debug, Classify)]
    /// enum SaveError {
    ///     #[classify(transient)]
    ///     Unavailable,
    ///     #[classify(idempotent_only)]
    ///     Timeout,
    /// }
    ///
    /// let script = Script::new([Fault::Status(503), Fault::Lost]);
    /// let saved = Cell::new(0);
    /// let save = || {
    ///     script.inject(
    ///         |fault| match fault {
    ///             Fault::Lost | Fault::Timeout => SaveError::Timeout,
    ///             _ => SaveError::Unavailable,
    ///         },
    ///         || {
    ///             saved.set(saved.get() + 1);
    ///             Ok::<_, SaveError>(saved.get())
    ///         },
    ///     )
    /// };
    ///
    /// // Not idempotent: the 503 is retried, the lost answer is not.
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(5);
    /// assert!(matches!(policy.call(save), Err(SaveError::Timeout)));
    /// assert_eq!(saved.get(), 1); // the lost attempt did save
    /// assert_eq!(script.seen(), 2);
    /// ```
    pub fn inject<T, E>(
        &self,
        error: impl FnOnce(Fault) -> E,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        match self.next() {
            Fault::Pass => work(),
            Fault::Delay(wait) => {
                clock::sleep_sync(wait);
                work()
            }
            Fault::Lost => {
                drop(work());
                Err(error(Fault::Lost))
            }
            fault => Err(error(fault)),
        }
    }

    /// [`inject`](Script::inject) for async work: `work` is a future, awaited under `Lost`,
    /// `Delay` and `Pass` and dropped unpolled otherwise. `Delay` sleeps on the crate's clock
    /// (tokio's inside a tokio runtime, so virtual when it is paused; virtual and recorded inside
    /// [`testing::record_sleeps_async`](crate::testing::record_sleeps_async)).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::faults::{Fault, Script};
    /// use retry_kit::{Classify, RetryPolicy, testing};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug, Classify)]
    /// #[classify(transient)]
    /// struct Unavailable;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let script = Script::new([Fault::Delay(Duration::from_secs(3)), Fault::Reset]);
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(3);
    /// let fetch = || script.inject_async(|_| Unavailable, async { Err::<u32, _>(Unavailable) });
    /// let first = policy.call_async(fetch);
    /// let (result, slept) = testing::record_sleeps_async(first).await;
    /// assert!(result.is_err());
    /// // The delay, then the loop's two waits; nothing was slept.
    /// assert_eq!(slept, [3, 1, 1].map(Duration::from_secs));
    /// # }
    /// ```
    pub async fn inject_async<T, E>(
        &self,
        error: impl FnOnce(Fault) -> E,
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        match self.next() {
            Fault::Pass => work.await,
            Fault::Delay(wait) => {
                delay(wait).await;
                work.await
            }
            Fault::Lost => {
                drop(work.await);
                Err(error(Fault::Lost))
            }
            fault => Err(error(fault)),
        }
    }
}

/// Wait `wait` on the crate's clock: recorded inside a recording, else tokio's sleep (or the
/// portable timer outside a runtime).
pub(super) async fn delay(wait: std::time::Duration) {
    if !clock::virtual_sleep(wait) {
        clock::tokio_sleep(wait).await;
    }
}
