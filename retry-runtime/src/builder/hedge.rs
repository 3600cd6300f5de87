//! Hedged attempts: when an attempt is slow, start another beside it; the first success wins.
//! The builder ([`Retry::hedge`], [`Hedge`]); the loop is [`retry_hedged!`](crate::retry_hedged)
//! and the attempts in flight are [`Hedging`](crate::run::plumbing::Hedging)'s, in the engine.

use super::retry::{Retry, begin};
use crate::run::classifier::Classifier;
use crate::run::equip::Equip;
use crate::run::hook::Hook;
use crate::run::outcome::Outcome;
use crate::run::timeout::TimeoutSlot;

use std::future::Future;
use std::time::Duration;

impl<'p, C, H, S, T> Retry<'p, C, H, S, T> {
    /// Hedge slow attempts of [`call_async`](Hedge::call_async), as
    /// `#[retryable(hedge = ...)]` does: when an attempt has not answered after `after`,
    /// start the next one beside it (up to the policy's `attempts` started in all); the first
    /// success wins and the others are dropped. See [`Hedge`] for every rule.
    ///
    /// Hedging runs the operation more than once at the same time, so it needs a policy
    /// declared [`idempotent`](crate::RetryPolicy::idempotent): with any other policy this is
    /// [`HedgeNotIdempotent`], not a builder that quietly retries one attempt at a time.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Retry, RetryPolicy, current_attempt};
    /// use std::{io, time::Duration};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = RetryPolicy::new().attempts(3).idempotent(true);
    /// let start = tokio::time::Instant::now();
    /// // The first attempt hangs; the hedge started after 50 ms answers in 10 ms.
    /// let answer: Result<u32, io::Error> = Retry::new(&policy)
    ///     .hedge(Duration::from_millis(50))
    ///     .expect("the policy is idempotent")
    ///     .call_async(|| async {
    ///         let attempt = current_attempt().unwrap().number();
    ///         if attempt == 1 {
    ///             std::future::pending::<()>().await;
    ///         }
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///         Ok(attempt)
    ///     })
    ///     .await;
    /// assert_eq!(answer.unwrap(), 2);
    /// assert_eq!(start.elapsed(), Duration::from_millis(60));
    ///
    /// // A policy not declared idempotent is refused.
    /// let not_idempotent = RetryPolicy::new();
    /// assert!(Retry::new(&not_idempotent).hedge(Duration::from_millis(50)).is_err());
    /// # }
    /// ```
    pub fn hedge(self, after: Duration) -> Result<Hedge<'p, C, H, S, T>, HedgeNotIdempotent> {
        if !self.policy.idempotent {
            return Err(HedgeNotIdempotent);
        }
        Ok(Hedge { retry: self, after })
    }
}

/// [`Retry::hedge`] on a policy not declared [`idempotent`](crate::RetryPolicy::idempotent):
/// hedging runs the operation more than once at the same time, which only an idempotent
/// operation allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HedgeNotIdempotent;

impl std::fmt::Display for HedgeNotIdempotent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "hedging runs the operation more than once at the same time: declare the policy \
             idempotent (`RetryPolicy::idempotent(true)`) if it is",
        )
    }
}

impl std::error::Error for HedgeNotIdempotent {}

/// A [`Retry`] that hedges slow attempts: what [`Retry::hedge`] makes. Async only.
///
/// A hedged call runs over the same engine ([`Call`](crate::run::Call)) as every other: the engine counts the
/// attempts, classifies each failure, asks the breaker and the budget before every attempt
/// after the first, and builds the [`Failure`](crate::Failure) records. What differs is the
/// loop, [`retry_hedged!`](crate::retry_hedged), and the set of attempts in flight it keeps,
/// [`Hedging`](crate::run::plumbing::Hedging):
///
/// - the first attempt starts at once; while fewer than `attempts` have started, each start arms
///   a timer of the hedge delay, and when it fires before any answer, the next attempt starts
///   beside the running ones (if the deadline has not passed and the budget and breaker admit
///   it, as they would a retry: gRPC throttles hedges with the same tokens; the rule is
///   [`Protection::admit_hedge`](crate::run::plumbing::Protection::admit_hedge), one method to change);
/// - the first success is the call's result, and the attempts still running are dropped
///   (cancelled): their breaker permits are released as neither success nor failure;
/// - a retryable failure starts the next attempt at once, not after a backoff, as gRPC's
///   hedging sends the next hedge on a non-fatal status: a hedged call's pace is the hedge
///   delay. A retry-after is waited out (and while one is, no attempt starts sooner, whatever
///   another attempt's failure says); a value `retry_if` flags is an answer, not a failure,
///   and the next poll waits the policy's backoff as in a sequential call;
/// - a failure that stops the call (permanent, "already done") ends it at once, as in gRPC,
///   where a fatal status commits the call; a stop for any other reason (attempts used up, the
///   budget, the breaker, the deadline) only means no new attempt: the call waits for the
///   attempts still running ([`Next::Wait`](crate::Next::Wait)).
///
/// The hedge delay is a real timer of the async runtime, as `attempt_timeout` is: inside
/// [`testing::record_sleeps_async`](crate::testing::record_sleeps_async) a hedged call still
/// waits for it (it cannot know when a pending attempt would answer), so test hedging on tokio's
/// paused clock, where the wait is virtual. A retry-after wait between attempts is recorded
/// like any other sleep.
///
/// Every attempt sees its own number through [`current_attempt`](crate::current_attempt) and
/// the call's one idempotency key (drawn when the call starts, since several attempts may ask
/// at once). An attempt that starts while none is running lives in the call's own future, so a
/// hedged call whose attempts answer before the hedge delay allocates nothing, and no timer
/// is made for an attempt that answers on its first poll; an attempt started beside a running
/// one is boxed (attempts run side by side and end out of order, which a fixed slot cannot
/// express): one box per hedge that fires.
#[derive(Clone, Debug)]
#[must_use = "a Retry does nothing until `call_async`"]
pub struct Hedge<'p, C, H, S, T> {
    pub(super) retry: Retry<'p, C, H, S, T>,
    pub(super) after: Duration,
}

impl<'p, C, H, S, T> Hedge<'p, C, H, S, T> {
    /// Run the futures `op` makes, hedged, until one succeeds or the policy stops, sleeping
    /// (and timing attempts out, and waiting for hedges) with `sleep`.
    pub async fn call_async_with<O, F, Fut, Sl, SlFut>(self, mut op: F, sleep: Sl) -> O
    where
        O: Outcome,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        Sl: Fn(Duration) -> SlFut,
        SlFut: Future<Output = ()>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        let Hedge { retry, after } = self;
        let timeout = &retry.timeout;
        begin!(retry, O => call, classifier, hook else return);
        crate::retry_hedged!(call.after_hedged(&classifier, &mut hook) <- op(),
            outcome: O, timeout: timeout, then: |out| out, sleep: &sleep, hedge: after)
    }

    /// Run the futures `op` makes, hedged, sleeping with tokio. See [`Retry::hedge`].
    #[cfg(feature = "tokio")]
    pub fn call_async<O, F, Fut>(self, op: F) -> impl Future<Output = O>
    where
        O: Outcome,
        F: FnMut() -> Fut,
        Fut: Future<Output = O>,
        C: Classifier<O::Error>,
        H: Hook<O::Error>,
        S: Equip<'p, O::Error>,
        T: TimeoutSlot<O::Error>,
    {
        self.call_async_with(op, crate::clock::tokio_sleep)
    }
}
