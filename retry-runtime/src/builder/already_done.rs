//! "Already done" answers as results, for the builders: [`Retry::already_done`] and
//! [`Hedge::already_done`] wrap a front end so that when the loop stops on an error its
//! classifier calls [`ErrorClass::AlreadyDone`](crate::ErrorClass::AlreadyDone), `resolve`
//! turns it into the call's result (a receipt rebuilt from the duplicate's data), as
//! `#[retryable(already_done = ...)]` does.

use super::hedge::Hedge;
use super::retry::{Retry, rebuild};
use crate::run::classifier::{Borrowed, Classifier, resolve_already_done};
use crate::run::equip::Equip;
use crate::run::hook::Hook;
use crate::run::timeout::{TimeoutSlot, Untimed};
use std::future::Future;
use std::time::Duration;

impl<'p, C, H, S, T> Retry<'p, C, H, S, T> {
    /// Turn an error the classifier calls [`ErrorClass::AlreadyDone`](crate::ErrorClass::AlreadyDone)
    /// into the result, as `#[retryable(already_done = ...)]` does.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Classify, ErrorClass, Retry, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug, Classify)]
    /// enum PayError {
    ///     #[classify(transient)]
    ///     Timeout,
    ///     #[classify(already_done)]
    ///     Duplicate(u64),
    /// }
    ///
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    /// let mut answers = vec![Err(PayError::Duplicate(42)), Err(PayError::Timeout)];
    /// let receipt = Retry::new(&policy)
    ///     .already_done(|e| match e {
    ///         PayError::Duplicate(receipt) => Ok(receipt),
    ///         other => Err(other),
    ///     })
    ///     .call(|| answers.pop().unwrap());
    /// assert_eq!(receipt.unwrap(), 42);
    /// ```
    pub fn already_done<R>(self, resolve: R) -> AlreadyDone<'p, R, C, H, S, T> {
        AlreadyDone {
            retry: self,
            resolve,
        }
    }
}

/// A [`Retry`] that turns an "already done" error into the result: what
/// [`Retry::already_done`] makes.
#[derive(Debug)]
#[must_use = "a Retry does nothing until `call` or `call_async`"]
pub struct AlreadyDone<'p, R, C, H, S, T> {
    retry: Retry<'p, C, H, S, T>,
    resolve: R,
}

impl<'p, R, C, H, S, T> AlreadyDone<'p, R, C, H, S, T> {
    /// Run `op` as [`Retry::call`] does; an "already done" last error becomes `resolve(error)`.
    pub fn call<V, E>(self, op: impl FnMut() -> Result<V, E>) -> Result<V, E>
    where
        R: FnOnce(E) -> Result<V, E>,
        C: Classifier<E>,
        H: Hook<E>,
        S: Equip<'p, E>,
        T: Untimed,
    {
        let AlreadyDone { retry, resolve } = self;
        let classifier = retry.classifier;
        let outcome = rebuild!(retry, classifier: Borrowed(&classifier)).call(op);
        resolve_already_done(outcome, &classifier, resolve)
    }

    /// Run the futures `op` makes as [`Retry::call_async`] does; an "already done" last error
    /// becomes `resolve(error)`.
    #[cfg(feature = "tokio")]
    pub async fn call_async<V, E, F, Fut>(self, op: F) -> Result<V, E>
    where
        R: FnOnce(E) -> Result<V, E>,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        C: Classifier<E>,
        H: Hook<E>,
        S: Equip<'p, E>,
        T: TimeoutSlot<E>,
    {
        let AlreadyDone { retry, resolve } = self;
        let classifier = retry.classifier;
        let outcome = rebuild!(retry, classifier: Borrowed(&classifier))
            .call_async(op)
            .await;
        resolve_already_done(outcome, &classifier, resolve)
    }
}

impl<'p, C, H, S, T> Hedge<'p, C, H, S, T> {
    /// Turn an "already done" last error into the result with `resolve`, as
    /// [`Retry::already_done`] does and `#[retryable(hedge = .., already_done = ..)]` does: a
    /// hedge told that the work was already done (by the attempt it was hedging, whose answer
    /// is still on its way) returns the receipt at once.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Classify, Retry, RetryPolicy, current_attempt};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug, Classify)]
    /// enum PayError {
    ///     #[classify(idempotent_only)]
    ///     Timeout,
    ///     #[classify(already_done)]
    ///     Duplicate(u64),
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = RetryPolicy::new().attempts(3).idempotent(true);
    /// let receipt = Retry::new(&policy)
    ///     .hedge(Duration::from_millis(50))
    ///     .expect("the policy is idempotent")
    ///     .already_done(|e| match e {
    ///         PayError::Duplicate(receipt) => Ok(receipt),
    ///         other => Err(other),
    ///     })
    ///     .call_async(|| async {
    ///         if current_attempt().unwrap().number() == 1 {
    ///             // Payment 42 goes through, but its answer is slow.
    ///             tokio::time::sleep(Duration::from_secs(10)).await;
    ///             return Err(PayError::Timeout);
    ///         }
    ///         Err(PayError::Duplicate(42))
    ///     })
    ///     .await;
    /// assert_eq!(receipt.unwrap(), 42);
    /// # }
    /// ```
    pub fn already_done<R>(self, resolve: R) -> HedgeAlreadyDone<'p, R, C, H, S, T> {
        HedgeAlreadyDone {
            hedge: self,
            resolve,
        }
    }
}

/// A [`Hedge`] that turns an "already done" error into the result: what
/// [`Hedge::already_done`] makes.
#[derive(Debug)]
#[must_use = "a Retry does nothing until `call_async`"]
pub struct HedgeAlreadyDone<'p, R, C, H, S, T> {
    hedge: Hedge<'p, C, H, S, T>,
    resolve: R,
}

impl<'p, R, C, H, S, T> HedgeAlreadyDone<'p, R, C, H, S, T> {
    /// Run the futures `op` makes as [`Hedge::call_async_with`] does; an "already done" last
    /// error becomes `resolve(error)`.
    pub async fn call_async_with<V, E, F, Fut, Sl, SlFut>(self, op: F, sleep: Sl) -> Result<V, E>
    where
        R: FnOnce(E) -> Result<V, E>,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        Sl: Fn(Duration) -> SlFut,
        SlFut: Future<Output = ()>,
        C: Classifier<E>,
        H: Hook<E>,
        S: Equip<'p, E>,
        T: TimeoutSlot<E>,
    {
        let HedgeAlreadyDone { hedge, resolve } = self;
        let Hedge { retry, after } = hedge;
        let classifier = retry.classifier;
        let retry = rebuild!(retry, classifier: Borrowed(&classifier));
        let outcome = Hedge { retry, after }.call_async_with(op, sleep).await;
        resolve_already_done(outcome, &classifier, resolve)
    }

    /// Run the futures `op` makes, hedged, sleeping with tokio; an "already done" last error
    /// becomes `resolve(error)`. See [`Hedge::already_done`].
    #[cfg(feature = "tokio")]
    pub fn call_async<V, E, F, Fut>(self, op: F) -> impl Future<Output = Result<V, E>>
    where
        R: FnOnce(E) -> Result<V, E>,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        C: Classifier<E>,
        H: Hook<E>,
        S: Equip<'p, E>,
        T: TimeoutSlot<E>,
    {
        self.call_async_with(op, crate::clock::tokio_sleep)
    }
}
