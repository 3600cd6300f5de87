//! Per-attempt timeouts: the future that races an attempt against a timer, and how a
//! [`Retry`](crate::Retry) builder holds its limit.

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
fn timed<F, Tm>(body: F, timer: Tm, limit: Duration) -> Timed<F, Tm>
where
    Tm: Future<Output = ()>,
{
    Timed { body, timer, limit }
}

/// An attempt raced against a timer: the future a [`TimeoutSlot`] with a limit wraps each attempt in.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Timed<F, Tm> {
    body: F,
    timer: Tm,
    limit: Duration,
}

impl<F: Future, Tm: Future<Output = ()>> Future for Timed<F, Tm> {
    type Output = Result<F::Output, TimedOut>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(cx, F::poll)
    }
}

impl<F, Tm: Future<Output = ()>> Timed<F, Tm> {
    /// Poll the body with `poll_body`, then the timer: how a body that is not a future by
    /// itself (a step of a hand-written future that needs more than its own state, such as
    /// the HTTP layer's, which calls its inner service) is timed as an attempt.
    #[inline]
    pub(crate) fn poll_with<R>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        poll_body: impl FnOnce(Pin<&mut F>, &mut Context<'_>) -> Poll<R>,
    ) -> Poll<Result<R, TimedOut>> {
        // SAFETY: `body` and `timer` are pinned structurally: they are never moved out of
        // `self`, and `Timed` has no `Drop` impl. `limit` is plain data and is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        if let Poll::Ready(out) = poll_body(unsafe { Pin::new_unchecked(&mut this.body) }, cx) {
            return Poll::Ready(Ok(out));
        }
        match unsafe { Pin::new_unchecked(&mut this.timer) }.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(TimedOut::after(this.limit))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The timeout slot of a [`Retry`](crate::Retry) builder without an attempt timeout.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTimeout;

/// The timeout slot of a [`Retry`](crate::Retry) builder with
/// [`attempt_timeout`](crate::Retry::attempt_timeout).
#[derive(Clone, Copy, Debug)]
pub struct AttemptTimeout(pub Duration);

/// An attempt's timeout, chosen by type: none ([`NoTimeout`]), a limit whose timeout becomes
/// `E::from(TimedOut)` ([`AttemptTimeout`]), or a limit with its own conversion (a
/// `(Duration, fn(TimedOut) -> E)` pair). Every front end times its attempts through this one
/// trait: [`Call::attempt_timed`](super::Call::attempt_timed) wraps the attempt, and
/// [`Call::settle`](super::Call::settle) turns what the wrapped attempt produced into its
/// outcome, remembering a timeout (whose class is idempotent-only).
#[diagnostic::on_unimplemented(
    message = "an attempt timeout needs `impl From<TimedOut>` for the error type `{E}`",
    label = "the error type cannot hold a `TimedOut`",
    note = "an attempt that runs past the timeout is cancelled and ends in `Err(E::from(TimedOut))`",
    note = "add `impl From<retry_kit::TimedOut> for E`, for example a variant `Timeout(TimedOut)` tagged `#[classify(delegate)]`"
)]
pub trait TimeoutSlot<E> {
    /// What a wrapped attempt produces for an attempt whose outcome is `R`: `R` itself without
    /// a timeout, `Result<R, TimedOut>` with one.
    type Settled<R>;

    /// One attempt's future: the body itself without a timeout, the body raced against a
    /// timer with one. A type rather than a run-time `Option`, so that an untimed call's future
    /// keeps no room for a timer it never starts.
    type Attempt<Fut: Future, SlFut: Future<Output = ()>>: Future<
        Output = Self::Settled<Fut::Output>,
    >;

    /// Wrap the body `attempt`, with a timer from `sleep` if there is a limit: the smaller
    /// of the limit and `left()`, the time left before the call's deadline (asked only when
    /// there is a limit).
    fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
        &self,
        attempt: Fut,
        sleep: impl FnOnce(Duration) -> SlFut,
        left: impl FnOnce() -> Option<Duration>,
    ) -> Self::Attempt<Fut, SlFut>;

    /// The attempt's outcome, a timeout converted into the error type; `timed_out` is set when
    /// the timer won.
    fn settle<R: Outcome<Error = E>>(&self, out: Self::Settled<R>, timed_out: &mut bool) -> R;

    /// The same timeout as a run-time value, for a front end that cannot carry it by type.
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)>;
}

impl<E> TimeoutSlot<E> for NoTimeout {
    type Settled<R> = R;
    type Attempt<Fut: Future, SlFut: Future<Output = ()>> = Fut;
    #[inline(always)]
    fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
        &self,
        attempt: Fut,
        _: impl FnOnce(Duration) -> SlFut,
        _: impl FnOnce() -> Option<Duration>,
    ) -> Fut {
        attempt
    }
    #[inline(always)]
    fn settle<R: Outcome<Error = E>>(&self, out: R, _: &mut bool) -> R {
        out
    }
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        None
    }
}

/// A slot that always has a limit: its limit and conversion.
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

/// A limit and its conversion: the timed attempt of [`AttemptTimeout`] and of a pair.
macro_rules! timed_slot {
    () => {
        type Settled<R> = Result<R, TimedOut>;
        type Attempt<Fut: Future, SlFut: Future<Output = ()>> = Timed<Fut, SlFut>;
        #[inline]
        fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
            &self,
            attempt: Fut,
            sleep: impl FnOnce(Duration) -> SlFut,
            left: impl FnOnce() -> Option<Duration>,
        ) -> Timed<Fut, SlFut> {
            let (limit, _) = Limited::<E>::parts(self);
            let limit = within(limit, left);
            timed(attempt, sleep(limit), limit)
        }
        #[inline]
        fn settle<R: Outcome<Error = E>>(
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
        #[inline]
        fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
            Some(Limited::<E>::parts(self))
        }
    };
}

impl<E: From<TimedOut>> TimeoutSlot<E> for AttemptTimeout {
    timed_slot!();
}

/// A limit with its own conversion of a timeout (what
/// [`Retry::attempt_timeout_with`](crate::Retry::attempt_timeout_with) sets, and
/// `#[retryable(attempt_timeout = ...)]` uses).
impl<E> TimeoutSlot<E> for (Duration, Conversion<TimedOut, E>) {
    timed_slot!();
}

/// A limit chosen at run time (the layers', whose futures are boxed anyway): `None` times
/// nothing. One future type for both, so that the layers' futures are `Send` whenever the
/// attempt is.
impl<E> TimeoutSlot<E> for Option<(Duration, Conversion<TimedOut, E>)> {
    type Settled<R> = Result<R, TimedOut>;
    type Attempt<Fut: Future, SlFut: Future<Output = ()>> = Timed<Fut, MaybeTimer<SlFut>>;
    #[inline]
    fn wrap<Fut: Future, SlFut: Future<Output = ()>>(
        &self,
        attempt: Fut,
        sleep: impl FnOnce(Duration) -> SlFut,
        left: impl FnOnce() -> Option<Duration>,
    ) -> Timed<Fut, MaybeTimer<SlFut>> {
        maybe_timed(self, attempt, sleep, left)
    }
    #[inline]
    fn settle<R: Outcome<Error = E>>(&self, out: Result<R, TimedOut>, timed_out: &mut bool) -> R {
        match (out, self) {
            (Ok(outcome), _) => outcome,
            (Err(t), Some(slot)) => slot.settle(Err(t), timed_out),
            // Without a limit the timer is a `MaybeTimer(None)`, which never fires.
            (Err(_), None) => unreachable!("an attempt without a limit timed out"),
        }
    }
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        *self
    }
}

/// The limit of one attempt: `limit`, or the time `left()` before the deadline if that is less.
#[inline]
fn within(limit: Duration, left: impl FnOnce() -> Option<Duration>) -> Duration {
    left().map_or(limit, |left| limit.min(left))
}

/// `body` as an attempt under a limit chosen at run time (`slot`; `None` times nothing), the
/// timer made by `sleep`: the attempt of the `Option` slot, for a body that need not be a
/// future by itself (see [`Timed::poll_with`]).
#[inline]
pub(crate) fn maybe_timed<E, F, SlFut: Future<Output = ()>>(
    slot: &Option<(Duration, Conversion<TimedOut, E>)>,
    body: F,
    sleep: impl FnOnce(Duration) -> SlFut,
    left: impl FnOnce() -> Option<Duration>,
) -> Timed<F, MaybeTimer<SlFut>> {
    match slot {
        Some((limit, _)) => {
            let limit = within(*limit, left);
            timed(body, MaybeTimer(Some(sleep(limit))), limit)
        }
        None => timed(body, MaybeTimer(None), Duration::MAX),
    }
}

/// The timer of a limit chosen at run time: without one, it never fires.
#[derive(Debug)]
pub struct MaybeTimer<Tm>(Option<Tm>);

impl<Tm: Future<Output = ()>> Future for MaybeTimer<Tm> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the timer is pinned structurally: never moved out, and `MaybeTimer` has no
        // `Drop` impl.
        match unsafe { self.map_unchecked_mut(|t| &mut t.0) }.as_pin_mut() {
            Some(timer) => timer.poll(cx),
            None => Poll::Pending,
        }
    }
}

/// A builder whose attempts can run on the caller's thread: one without an attempt timeout.
#[diagnostic::on_unimplemented(
    message = "`attempt_timeout` applies to `call_async` only",
    label = "a sync attempt cannot be cancelled from outside",
    note = "use `call_async`, or bound the whole call with the policy's `deadline`"
)]
pub trait Untimed {}

impl Untimed for NoTimeout {}

/// An error type that can hold a [`TimedOut`]: what an attempt timeout asks of the error type,
/// at `#[retryable(attempt_timeout = ...)]` and of a service behind
/// `RetryLayer::attempt_timeout`. Implemented for every `E: From<TimedOut>`.
#[diagnostic::on_unimplemented(
    message = "`attempt_timeout` needs `impl From<TimedOut>` for the error type `{Self}`",
    label = "the error type cannot hold a `TimedOut`",
    note = "an attempt that runs past the timeout is cancelled and ends in `Err(E::from(TimedOut))`",
    note = "add `impl From<retry_kit::TimedOut> for {Self}`, for example a variant `Timeout(TimedOut)` tagged `#[classify(delegate)]`"
)]
pub trait HoldsTimedOut: From<TimedOut> {}

// As for `HoldsCircuitOpen`: reported as this trait, with its message.
#[diagnostic::do_not_recommend]
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
