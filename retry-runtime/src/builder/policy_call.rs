//! A [`RetryPolicy`] used directly: [`RetryPolicy::call`] and [`RetryPolicy::call_async`], the
//! shortest front end (a [`Retry`] with nothing but the policy).

use super::retry::Retry;
use crate::class::Classify;
use crate::policy::RetryPolicy;
#[cfg(feature = "tokio")]
use std::future::Future;

impl RetryPolicy {
    /// Run `op` under this policy, classifying errors with [`Classify`].
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{testing, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// let policy = RetryPolicy::exponential(Duration::from_millis(10)).attempts(5);
    /// let mut resets = 2;
    /// let (result, slept) = testing::record_sleeps(|| {
    ///     policy.call(|| {
    ///         if resets > 0 {
    ///             resets -= 1;
    ///             return Err(io::Error::from(io::ErrorKind::ConnectionReset));
    ///         }
    ///         Ok(42)
    ///     })
    /// });
    /// assert_eq!(result.unwrap(), 42);
    /// assert_eq!(slept.len(), 2);
    /// ```
    #[inline]
    pub fn call<T, E: Classify>(&self, op: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        Retry::new(self).call(op)
    }

    /// Run the futures `op` makes under this policy, sleeping with tokio.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    /// use std::{io, time::Duration};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(3);
    /// let start = tokio::time::Instant::now();
    /// let result: Result<(), io::Error> = policy
    ///     .call_async(|| async { Err(io::Error::from(io::ErrorKind::ConnectionRefused)) })
    ///     .await;
    /// assert!(result.is_err());
    /// // Two sleeps of at most 1 s each, on tokio's paused clock.
    /// assert!(start.elapsed() <= Duration::from_secs(2));
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn call_async<T, E, F, Fut>(&self, op: F) -> impl Future<Output = Result<T, E>>
    where
        E: Classify,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // Not an `async fn`, for the reason given on `Retry::call_async`.
        Retry::new(self).call_async(op)
    }
}
