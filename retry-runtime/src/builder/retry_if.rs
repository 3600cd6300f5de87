//! [`RetryIf`]: the builder's `retry_if`, polling past `Ok` values a predicate flags.

use super::retry::Retry;
use crate::run::classifier::Classifier;
use crate::run::equip::Equip;
use crate::run::hook::Hook;
use crate::run::retry_if::{IfRejected, Rejected, accept_rejected, reject_if};
#[cfg(feature = "tokio")]
use crate::run::timeout::TimeoutSlot;
use crate::run::timeout::Untimed;
#[cfg(feature = "tokio")]
use std::future::Future;

/// A [`Retry`] that also retries `Ok` values `flag` flags: what [`Retry::retry_if`] makes. Its
/// hook receives `Failure<'_, Rejected<V, E>>` records.
#[derive(Debug)]
#[must_use = "a Retry does nothing until `call` or `call_async`"]
pub struct RetryIf<'p, F, C, H, S, T> {
    retry: Retry<'p, IfRejected<C>, H, S, T>,
    flag: F,
}

impl<'p, C, H, S, T> Retry<'p, C, H, S, T> {
    /// Also retry an `Ok` value `flag` flags, as `#[retryable(retry_if = ...)]` does: it
    /// follows the schedule (attempts, delays, deadline) but is an answer, not a failure (the
    /// breaker and budget do not count it), and when the loop stops on one, that value is
    /// returned.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Retry, RetryPolicy, testing};
    /// use std::{io, time::Duration};
    ///
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(5);
    /// let mut polls = 0;
    /// let (ready, slept) = testing::record_sleeps(|| {
    ///     Retry::new(&policy)
    ///         .retry_if(|done: &bool| !done)
    ///         .call(|| {
    ///             polls += 1;
    ///             Ok::<_, io::Error>(polls == 3)
    ///         })
    /// });
    /// assert!(ready.unwrap());
    /// assert_eq!(slept.len(), 2);
    /// ```
    pub fn retry_if<F>(self, flag: F) -> RetryIf<'p, F, C, H, S, T> {
        let classifier = IfRejected(self.classifier);
        RetryIf {
            retry: Retry {
                policy: self.policy,
                classifier,
                hook: self.hook,
                protection: self.protection,
                timeout: self.timeout,
                #[cfg(any(feature = "tracing", feature = "metrics"))]
                name: self.name,
            },
            flag,
        }
    }
}

impl<'p, F, C, H, S, T> RetryIf<'p, F, C, H, S, T> {
    /// Run `op` until it returns an unflagged value or the policy stops.
    #[inline]
    pub fn call<V, E>(self, mut op: impl FnMut() -> Result<V, E>) -> Result<V, E>
    where
        F: Fn(&V) -> bool,
        C: Classifier<E>,
        H: Hook<Rejected<V, E>>,
        S: Equip<'p, Rejected<V, E>>,
        T: Untimed,
    {
        let flag = self.flag;
        accept_rejected(self.retry.call(|| reject_if(op(), &flag)))
    }

    /// Run the futures `op` makes until one returns an unflagged value or the policy stops,
    /// sleeping with tokio.
    #[cfg(feature = "tokio")]
    pub async fn call_async<V, E, Op, Fut>(self, mut op: Op) -> Result<V, E>
    where
        F: Fn(&V) -> bool,
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        C: Classifier<E>,
        H: Hook<Rejected<V, E>>,
        S: Equip<'p, Rejected<V, E>>,
        T: TimeoutSlot<Rejected<V, E>>,
    {
        let flag = &self.flag;
        let outcome = self
            .retry
            .call_async(|| {
                let attempt = op();
                async move { reject_if(attempt.await, flag) }
            })
            .await;
        accept_rejected(outcome)
    }
}
