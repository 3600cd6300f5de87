//! A [`RetryPolicy`] used directly: [`RetryPolicy::call`] and [`RetryPolicy::call_async`], the
//! shortest front end (a [`Retry`] with nothing but the policy), and [`AsPolicy`], what
//! `#[retryable(policy = ...)]` accepts.

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

/// Where a [`Call`](super::Call) finds its policy: a reference to one, or a zero-sized type
/// naming a constant, which is what `#[retryable]` makes of a policy written in the attribute,
/// so that the call's state (kept across every await of an async retryable future) holds no
/// pointer to it and the constant's fields fold into the code.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::{Call, CallPolicy};
/// use retry_kit::RetryPolicy;
///
/// #[derive(Clone, Copy)]
/// struct Three;
///
/// impl CallPolicy for Three {
///     fn policy(&self) -> &RetryPolicy {
///         const POLICY: RetryPolicy = RetryPolicy::new().attempts(3);
///         &POLICY
///     }
/// }
///
/// let call = Call::new(Three, false);
/// assert_eq!(call.attempt(), 0);
/// ```
pub trait CallPolicy: Copy {
    /// The policy.
    fn policy(&self) -> &RetryPolicy;
    /// The operation a call under this policy performs, for the keys of calls nested inside
    /// another's attempt ([`operation_id`](crate::context::operation_id) of the function's path
    /// for `#[retryable]`; one shared value, 0, for the builder's closures).
    const OPERATION: u64 = 0;
}

impl CallPolicy for &RetryPolicy {
    #[inline(always)]
    fn policy(&self) -> &RetryPolicy {
        self
    }
}

/// What `#[retryable(policy = ...)]` accepts: a [`RetryPolicy`] or a reference to one.
#[diagnostic::on_unimplemented(
    message = "`policy = ...` takes a `RetryPolicy` or a `&RetryPolicy`, not `{Self}`",
    label = "expected a `RetryPolicy`"
)]
pub trait AsPolicy {
    /// The policy.
    fn as_policy(&self) -> &RetryPolicy;
}

impl AsPolicy for RetryPolicy {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        self
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for &P {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for std::sync::Arc<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for Box<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

/// The policy behind `policy = expr`.
#[inline]
pub fn policy_of<P: AsPolicy + ?Sized>(policy: &P) -> &RetryPolicy {
    policy.as_policy()
}
