//! Per-attempt timeouts: the future that races an attempt against a timer, and how a
//! [`Retry`](super::Retry) builder holds its limit.

use super::outcome::{Conversion, Outcome};
use crate::error::TimedOut;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Run `body` for at most as long as `timer` takes (a sleep of `limit`): the future behind
/// `attempt_timeout`. The body is polled first, so one that is ready at once never times out;
/// when the timer fires first the body is dropped (cancelled) and the output is
/// `Err(TimedOut)`.
#[inline]
pub fn timed<R, F, S>(body: F, timer: S, limit: Duration) -> Timed<F, S>
where
    F: Future<Output = R>,
    S: Future<Output = ()>,
{
    Timed { body, timer, limit }
}

/// The future of [`timed`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Timed<F, S> {
    body: F,
    timer: S,
    limit: Duration,
}

impl<F: Future, S: Future<Output = ()>> Future for Timed<F, S> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `body` and `timer` are pinned structurally: they are never moved out of
        // `self`, and `Timed` has no `Drop` impl. `limit` is plain data and is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        if let Poll::Ready(out) = unsafe { Pin::new_unchecked(&mut this.body) }.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match unsafe { Pin::new_unchecked(&mut this.timer) }.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(TimedOut::after(this.limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The timeout slot of a [`Retry`](super::Retry) builder without an attempt timeout.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTimeout;

/// The timeout slot of a [`Retry`](super::Retry) builder with
/// [`attempt_timeout`](super::Retry::attempt_timeout).
#[derive(Clone, Copy, Debug)]
pub struct AttemptTimeout(pub Duration);

/// How a [`Retry`](super::Retry) builder finds its attempt timeout, and turns a timeout into the
/// error type `E`.
#[diagnostic::on_unimplemented(
    message = "an attempt timeout needs `impl From<TimedOut>` for the error type `{E}`",
    label = "the error type cannot hold a `TimedOut`",
    note = "an attempt that runs past the timeout is cancelled and ends in `Err(E::from(TimedOut))`",
    note = "add `impl From<retry_kit::TimedOut> for E`, for example a variant `Timeout(TimedOut)` tagged `#[classify(delegate)]`"
)]
pub trait TimeoutSlot<E> {
    /// The limit and the conversion, if there is a timeout.
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)>;

    /// Whether there is a limit (so an attempt asks for the time left before the deadline).
    const LIMITED: bool = true;

    /// One attempt's future as the builder awaits it: the body itself without a timeout, the
    /// body raced against a timer with one. A type rather than a run-time `Option`, so that an
    /// untimed builder's future keeps no room for a timer it never starts.
    type Attempt<Fut: Future, SlFut: Future<Output = ()>>: Future;
    /// Wrap the body `attempt`, with a timer from `sleep` if there is a limit: the smaller
    /// of the limit and `left`, the time left before the call's deadline.
    fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
        &self,
        attempt: Fut,
        sleep: impl FnOnce(Duration) -> SlFut,
        left: Option<Duration>,
    ) -> Self::Attempt<Fut, SlFut>;
    /// The attempt's outcome, a timeout converted into the error type; `timed_out` is set when
    /// the timer won.
    fn settle<R: Outcome<Error = E>, SlFut: Future<Output = ()>, Fut: Future<Output = R>>(
        &self,
        out: <Self::Attempt<Fut, SlFut> as Future>::Output,
        timed_out: &mut bool,
    ) -> R;
}

impl<E> TimeoutSlot<E> for NoTimeout {
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        None
    }
    const LIMITED: bool = false;
    type Attempt<Fut: Future, SlFut: Future<Output = ()>> = Fut;
    #[inline(always)]
    fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
        &self,
        attempt: Fut,
        _: impl FnOnce(Duration) -> SlFut,
        _: Option<Duration>,
    ) -> Fut {
        attempt
    }
    #[inline(always)]
    fn settle<R: Outcome<Error = E>, SlFut: Future<Output = ()>, Fut: Future<Output = R>>(
        &self,
        out: R,
        _: &mut bool,
    ) -> R {
        out
    }
}

/// A slot that always has a limit: its limit and conversion, without the `Option`.
trait Limited<E> {
    fn parts(&self) -> (Duration, Conversion<TimedOut, E>);
}

impl<E: From<TimedOut>> Limited<E> for AttemptTimeout {
    #[inline]
    fn parts(&self) -> (Duration, Conversion<TimedOut, E>) {
        (self.0, E::from)
    }
}

impl<E> Limited<E> for (Duration, Conversion<TimedOut, E>) {
    #[inline]
    fn parts(&self) -> (Duration, Conversion<TimedOut, E>) {
        *self
    }
}

/// A limit and its conversion: the timed attempt of [`AttemptTimeout`] and of a tuple.
macro_rules! timed_slot {
    () => {
        type Attempt<Fut: Future, SlFut: Future<Output = ()>> = Timed<Fut, SlFut>;
        #[inline]
        fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
            &self,
            attempt: Fut,
            sleep: impl FnOnce(Duration) -> SlFut,
            left: Option<Duration>,
        ) -> Timed<Fut, SlFut> {
            let (limit, _) = Limited::<E>::parts(self);
            let limit = left.map_or(limit, |left| limit.min(left));
            timed(attempt, sleep(limit), limit)
        }
        #[inline]
        fn settle<R: Outcome<Error = E>, SlFut: Future<Output = ()>, Fut: Future<Output = R>>(
            &self,
            out: Result<R, TimedOut>,
            timed_out: &mut bool,
        ) -> R {
            match out {
                Ok(outcome) => outcome,
                Err(t) => {
                    *timed_out = true;
                    let (_, convert) = Limited::<E>::parts(self);
                    R::failure(convert(t))
                }
            }
        }
    };
}

impl<E: From<TimedOut>> TimeoutSlot<E> for AttemptTimeout {
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        Some(Limited::<E>::parts(self))
    }
    timed_slot!();
}

/// A limit with its own conversion of a timeout (what
/// [`Retry::attempt_timeout_with`](super::Retry::attempt_timeout_with) sets).
impl<E> TimeoutSlot<E> for (Duration, Conversion<TimedOut, E>) {
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        Some(Limited::<E>::parts(self))
    }
    timed_slot!();
}

/// A builder whose attempts can run on the caller's thread: one without an attempt timeout.
#[diagnostic::on_unimplemented(
    message = "`attempt_timeout` applies to `call_async` only",
    label = "a sync attempt cannot be cancelled from outside",
    note = "use `call_async`, or bound the whole call with the policy's `deadline`"
)]
pub trait Untimed {}

impl Untimed for NoTimeout {}

/// An error type that can hold a [`TimedOut`]: what `#[retryable(attempt_timeout = ...)]`
/// requires.
#[diagnostic::on_unimplemented(
    message = "`attempt_timeout = ...` needs `impl From<TimedOut>` for the error type `{Self}`",
    label = "the error type cannot hold a `TimedOut`",
    note = "an attempt that runs past the timeout is cancelled and ends in `Err(E::from(TimedOut))`",
    note = "add `impl From<retry_kit::TimedOut> for E`, for example a variant `Timeout(TimedOut)` tagged `#[classify(delegate)]`"
)]
pub trait HoldsTimedOut: From<TimedOut> {}

impl<E: From<TimedOut>> HoldsTimedOut for E {}

/// The conversion of a timeout for the outcome type `R`. Generated code takes it at the
/// `attempt_timeout` key, so that a missing `From<TimedOut>` is reported there.
#[inline]
pub fn timed_out<R: Outcome>() -> fn(TimedOut) -> R::Error
where
    R::Error: HoldsTimedOut,
{
    <R::Error as From<TimedOut>>::from
}
