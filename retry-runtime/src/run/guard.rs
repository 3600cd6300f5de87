//! Shared protection inside the engine: the circuit breaker and retry budget a [`Call`] consults,
//! and per-attempt timeouts.
//!
//! Where the engine asks:
//!
//! - before the first attempt, [`Call::admit`] takes a breaker permit (or is refused);
//! - after an attempt, the permit is given the outcome (a success, or a failure by class) and
//!   the budget is charged or refunded;
//! - when a retry is scheduled, the budget is asked, then the breaker gives the next attempt's
//!   permit, which is held through the backoff sleep.
//!
//! The permit lives in the [`Call`], which lives in the retrying function's frame: if that
//! frame is dropped mid-attempt (a cancelled future) the permit is released as neither success
//! nor failure, and if it unwinds (a panicking body) as a failure.

use super::{Call, Next, StopReason};
use crate::adaptive::Adapt;
use crate::breaker::{CircuitBreaker, CircuitPermit};
use crate::budget::RetryBudget;
use crate::class::ErrorClass;
use crate::clock;
use crate::error::{CircuitOpen, TimedOut};
use crate::policy::RetryPolicy;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What a [`Call`] carries besides its policy: [`Lean`] (nothing) or [`Full`] (the adaptive
/// policy and the shared protection). Every hook is called at the same point of the loop for
/// both; [`Lean`]'s do nothing and inline to nothing.
pub trait Extras<'p>: Sized {
    /// The same state as [`Full`].
    fn into_full(self) -> Full<'p>;
    /// The adaptive adjustment of the policy, if any.
    fn tuned(&self) -> Option<&RetryPolicy>;
    /// An attempt starts.
    fn begin_attempt(&mut self);
    /// The attempt succeeded.
    fn succeeded(&mut self);
    /// The attempt failed with an error of `class`.
    fn failed(&mut self, class: ErrorClass);
    /// Let the budget and then the breaker veto a retry the policy scheduled.
    fn admit_retry(&mut self, next: Next) -> Next;
    /// Ask the breaker (if any) for the first attempt.
    fn admit(&mut self) -> Result<(), CircuitOpen>;
}

/// No adaptive policy, breaker or budget: the state of a call made by [`Call::new`]. Zero-sized.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lean;

impl<'p> Extras<'p> for Lean {
    #[inline(always)]
    fn into_full(self) -> Full<'p> {
        Full {
            adaptive: Adaptive::NONE,
            guard: Guard::NONE,
        }
    }
    #[inline(always)]
    fn tuned(&self) -> Option<&RetryPolicy> {
        None
    }
    #[inline(always)]
    fn begin_attempt(&mut self) {}
    #[inline(always)]
    fn succeeded(&mut self) {}
    #[inline(always)]
    fn failed(&mut self, _: ErrorClass) {}
    #[inline(always)]
    fn admit_retry(&mut self, next: Next) -> Next {
        next
    }
    #[inline(always)]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        Ok(())
    }
}

/// The adaptive policy and the shared protection of a call, any of them possibly unset.
#[derive(Debug)]
pub struct Full<'p> {
    pub(super) adaptive: Adaptive<'p>,
    guard: Guard<'p>,
}

impl<'p> Extras<'p> for Full<'p> {
    #[inline]
    fn into_full(self) -> Full<'p> {
        self
    }
    #[inline]
    fn tuned(&self) -> Option<&RetryPolicy> {
        self.adaptive.tuned.as_ref()
    }
    #[inline]
    fn begin_attempt(&mut self) {
        if self.adaptive.source.is_some() {
            self.adaptive.attempt_started = Some(clock::now());
        }
    }
    #[inline]
    fn succeeded(&mut self) {
        self.adaptive.end(false);
        self.guard.succeeded();
    }
    #[inline]
    fn failed(&mut self, class: ErrorClass) {
        self.guard.failed(class);
        self.adaptive.end(class != ErrorClass::Permanent);
    }
    #[inline]
    fn admit_retry(&mut self, next: Next) -> Next {
        self.guard.admit_retry(next)
    }
    #[inline]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        if let Some(breaker) = self.guard.circuit {
            self.guard.permit = Some(breaker.try_acquire()?);
        }
        Ok(())
    }
}

/// [`Full`] state or none, decided when the call starts: what the async loop of
/// [`Retry`](super::Retry) runs on, so that its future holds one engine, not one of each kind.
impl<'p> Extras<'p> for Option<Full<'p>> {
    #[inline]
    fn into_full(self) -> Full<'p> {
        self.unwrap_or_else(|| Lean.into_full())
    }
    #[inline]
    fn tuned(&self) -> Option<&RetryPolicy> {
        self.as_ref().and_then(Full::tuned)
    }
    #[inline]
    fn begin_attempt(&mut self) {
        if let Some(full) = self {
            full.begin_attempt();
        }
    }
    #[inline]
    fn succeeded(&mut self) {
        if let Some(full) = self {
            full.succeeded();
        }
    }
    #[inline]
    fn failed(&mut self, class: ErrorClass) {
        if let Some(full) = self {
            full.failed(class);
        }
    }
    #[inline]
    fn admit_retry(&mut self, next: Next) -> Next {
        match self {
            Some(full) => full.admit_retry(next),
            None => next,
        }
    }
    #[inline]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        match self {
            Some(full) => full.admit(),
            None => Ok(()),
        }
    }
}

/// The adaptive policy of a call, if any: the policy adjusted at the call's start, and the start
/// of the running attempt, for its latency.
pub(super) struct Adaptive<'p> {
    pub(super) source: Option<&'p dyn Adapt>,
    pub(super) tuned: Option<RetryPolicy>,
    pub(super) attempt_started: Option<Instant>,
}

impl Adaptive<'_> {
    const NONE: Self = Adaptive {
        source: None,
        tuned: None,
        attempt_started: None,
    };

    /// Record the attempt that started in `begin_attempt`.
    #[inline]
    fn end(&mut self, failed: bool) {
        if let (Some(source), Some(started)) = (self.source, self.attempt_started.take()) {
            let ended = clock::now();
            source.record(failed, ended.saturating_duration_since(started), ended);
        }
    }
}

impl std::fmt::Debug for Adaptive<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adaptive")
            .field("active", &self.source.is_some())
            .field("tuned", &self.tuned)
            .finish()
    }
}

/// The breaker, budget and permit of one call. Empty (and untouched on success) unless
/// `circuit` or `budget` is configured.
#[derive(Debug)]
pub(super) struct Guard<'p> {
    circuit: Option<&'p CircuitBreaker>,
    budget: Option<&'p RetryBudget>,
    permit: Option<CircuitPermit<'p>>,
}

impl<'p> Guard<'p> {
    pub(super) const NONE: Guard<'p> = Guard {
        circuit: None,
        budget: None,
        permit: None,
    };

    /// The attempt succeeded.
    #[inline]
    pub(super) fn succeeded(&mut self) {
        if self.permit.is_some() || self.budget.is_some() {
            self.record_success();
        }
    }

    #[cold]
    fn record_success(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.succeeded();
        }
        if let Some(budget) = self.budget {
            budget.record_success();
        }
    }

    /// The attempt failed with an error of `class`.
    #[inline]
    pub(super) fn failed(&mut self, class: ErrorClass) {
        if let Some(permit) = self.permit.take() {
            permit.record(class);
        }
        if let Some(budget) = self.budget {
            if class != ErrorClass::Permanent {
                budget.record_failure();
            }
        }
    }

    /// Let the budget and then the breaker veto a retry the policy scheduled.
    #[inline]
    pub(super) fn admit_retry(&mut self, next: Next) -> Next {
        if !matches!(next, Next::Retry(_)) {
            return next;
        }
        if let Some(budget) = self.budget {
            if !budget.allows_retry() {
                return Next::Stop(StopReason::BudgetExhausted);
            }
        }
        if let Some(breaker) = self.circuit {
            match breaker.try_acquire() {
                Ok(permit) => self.permit = Some(permit),
                Err(_) => return Next::Stop(StopReason::CircuitOpen),
            }
        }
        next
    }
}

impl<'p, X: Extras<'p>> Call<'p, X> {
    /// Consult `breaker` before every attempt of this call. Call [`admit`](Self::admit) before
    /// the first one.
    #[inline]
    pub fn circuit(self, breaker: &'p CircuitBreaker) -> Call<'p, Full<'p>> {
        let mut call = self.into_full();
        call.extra.guard.circuit = Some(breaker);
        call
    }

    /// Charge this call's failures to `budget` and ask it before every retry.
    #[inline]
    pub fn budget(self, budget: &'p RetryBudget) -> Call<'p, Full<'p>> {
        let mut call = self.into_full();
        call.extra.guard.budget = Some(budget);
        call
    }

    /// Ask the breaker (if any) for the first attempt. On `Err`, make no attempt: return the
    /// refusal, converted into the call's error type.
    #[inline]
    pub fn admit(&mut self) -> Result<(), CircuitOpen> {
        self.extra.admit()
    }

    /// Turn the result of a [`timed`] attempt into the attempt's outcome, converting a timeout
    /// with `on_timeout` and remembering that it timed out (its class is idempotent-only).
    #[inline]
    pub fn settle_timed<R>(
        &mut self,
        result: Result<R, TimedOut>,
        on_timeout: impl FnOnce(TimedOut) -> R,
    ) -> R {
        match result {
            Ok(outcome) => outcome,
            Err(timed_out) => {
                self.timed_out = true;
                on_timeout(timed_out)
            }
        }
    }
}

/// The protection a [`Retry`](super::Retry) builder passes to each call: the breaker slot `K`
/// ([`NoCircuit`] or `&CircuitBreaker`), the budget, and the timeout slot `T` ([`NoTimeout`] or
/// [`AttemptTimeout`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Protect<'p, K, T> {
    pub(super) circuit: K,
    pub(super) budget: Option<&'p RetryBudget>,
    pub(super) timeout: T,
}

impl<'p> Protect<'p, NoCircuit, NoTimeout> {
    pub(super) const NONE: Self = Protect {
        circuit: NoCircuit,
        budget: None,
        timeout: NoTimeout,
    };
}

impl<'p, K, T> Protect<'p, K, T> {
    pub(super) fn circuit(self, breaker: &'p CircuitBreaker) -> Protect<'p, &'p CircuitBreaker, T> {
        Protect {
            circuit: breaker,
            budget: self.budget,
            timeout: self.timeout,
        }
    }

    pub(super) fn attempt_timeout(self, limit: Duration) -> Protect<'p, K, AttemptTimeout> {
        Protect {
            circuit: self.circuit,
            budget: self.budget,
            timeout: AttemptTimeout(limit),
        }
    }

    /// Equip `call` and ask the breaker for its first attempt; a refusal becomes `E`.
    pub(super) fn begin<E>(&self, mut call: Call<'p, Full<'p>>) -> Result<Call<'p, Full<'p>>, E>
    where
        K: CircuitSlot<'p, E>,
    {
        if let Some(budget) = self.budget {
            call = call.budget(budget);
        }
        if let Some((breaker, refused)) = self.circuit.slot() {
            call = call.circuit(breaker);
            call.admit().map_err(refused)?;
        }
        Ok(call)
    }
}

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

/// What `#[retryable(circuit = ...)]` accepts: a [`CircuitBreaker`], or a reference or `Arc` of
/// one.
#[diagnostic::on_unimplemented(
    message = "`circuit = ...` takes a path to a `static CircuitBreaker`, not `{Self}`",
    label = "expected a `CircuitBreaker`"
)]
pub trait AsBreaker {
    /// The breaker.
    fn as_breaker(&self) -> &CircuitBreaker;
}

impl AsBreaker for CircuitBreaker {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        self
    }
}

impl<B: AsBreaker + ?Sized> AsBreaker for &B {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        (**self).as_breaker()
    }
}

impl<B: AsBreaker + ?Sized> AsBreaker for Arc<B> {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        (**self).as_breaker()
    }
}

/// The breaker behind `circuit = PATH`.
#[inline]
pub fn breaker_of<B: AsBreaker + ?Sized>(breaker: &B) -> &CircuitBreaker {
    breaker.as_breaker()
}

/// What `#[retryable(budget = ...)]` accepts: a [`RetryBudget`], or a reference or `Arc` of
/// one.
#[diagnostic::on_unimplemented(
    message = "`budget = ...` takes a path to a `static RetryBudget`, not `{Self}`",
    label = "expected a `RetryBudget`"
)]
pub trait AsBudget {
    /// The budget.
    fn as_budget(&self) -> &RetryBudget;
}

impl AsBudget for RetryBudget {
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        self
    }
}

impl<B: AsBudget + ?Sized> AsBudget for &B {
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        (**self).as_budget()
    }
}

impl<B: AsBudget + ?Sized> AsBudget for Arc<B> {
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        (**self).as_budget()
    }
}

/// The budget behind `budget = PATH`.
#[inline]
pub fn budget_of<B: AsBudget + ?Sized>(budget: &B) -> &RetryBudget {
    budget.as_budget()
}

/// Finds, for an outcome type `R`, the function that turns [`CircuitOpen`] or [`TimedOut`]
/// into an `R`: `Err(E::from(..))` when `R` is `Result<T, E>` and `E` has the `From` impl.
///
/// Generated code calls `(&Convert::<R>::NEW).circuit_open()` with both `*ViaFrom` and
/// `*Missing` traits in scope. Method lookup tries the `ViaFrom` impl (on `Convert<R>`) first
/// and takes it when the `From` impl exists; otherwise it falls back to the `Missing` impl (on
/// `&Convert<R>`), whose method requires a trait nothing implements, so the compiler reports
/// that trait's message, which names the missing impl in words.
pub struct Convert<R>(PhantomData<fn() -> R>);

impl<R> Convert<R> {
    /// The probe value.
    pub const NEW: Self = Convert(PhantomData);
}

/// The conversion of a refusal when `E: From<CircuitOpen>`.
pub trait CircuitOpenViaFrom<R> {
    /// `|open| Err(E::from(open))`.
    fn circuit_open(&self) -> fn(CircuitOpen) -> R;
}

impl<T, E: From<CircuitOpen>> CircuitOpenViaFrom<Result<T, E>> for Convert<Result<T, E>> {
    #[inline]
    fn circuit_open(&self) -> fn(CircuitOpen) -> Result<T, E> {
        |open| Err(E::from(open))
    }
}

/// The fallback that turns a missing `From<CircuitOpen>` into a readable error.
pub trait CircuitOpenMissing<R> {
    /// Never usable: requires [`NeedsFromCircuitOpen`].
    fn circuit_open(&self) -> fn(CircuitOpen) -> R
    where
        R: NeedsFromCircuitOpen,
    {
        R::from_circuit_open
    }
}

impl<R> CircuitOpenMissing<R> for &Convert<R> {}

/// Implemented by nothing: its message is the compile error for a missing `From<CircuitOpen>`.
#[diagnostic::on_unimplemented(
    message = "`circuit = ...` needs `impl From<CircuitOpen>` for the error type of `{Self}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "when the breaker refuses the first attempt, the function returns `Err(E::from(CircuitOpen))` without running its body",
    note = "add `impl From<retry_kit::CircuitOpen> for E`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
pub trait NeedsFromCircuitOpen: Sized {
    /// Unreachable.
    fn from_circuit_open(open: CircuitOpen) -> Self;
}

/// The conversion of a timeout when `E: From<TimedOut>`.
pub trait TimedOutViaFrom<R> {
    /// `|timed_out| Err(E::from(timed_out))`.
    fn timed_out(&self) -> fn(TimedOut) -> R;
}

impl<T, E: From<TimedOut>> TimedOutViaFrom<Result<T, E>> for Convert<Result<T, E>> {
    #[inline]
    fn timed_out(&self) -> fn(TimedOut) -> Result<T, E> {
        |timed_out| Err(E::from(timed_out))
    }
}

/// The fallback that turns a missing `From<TimedOut>` into a readable error.
pub trait TimedOutMissing<R> {
    /// Never usable: requires [`NeedsFromTimedOut`].
    fn timed_out(&self) -> fn(TimedOut) -> R
    where
        R: NeedsFromTimedOut,
    {
        R::from_timed_out
    }
}

impl<R> TimedOutMissing<R> for &Convert<R> {}

/// Implemented by nothing: its message is the compile error for a missing `From<TimedOut>`.
#[diagnostic::on_unimplemented(
    message = "`attempt_timeout = ...` needs `impl From<TimedOut>` for the error type of `{Self}`",
    label = "the error type cannot hold a `TimedOut`",
    note = "an attempt that runs past the timeout is cancelled and ends in `Err(E::from(TimedOut))`",
    note = "add `impl From<retry_kit::TimedOut> for E`, for example a variant `Timeout(TimedOut)` tagged `#[classify(delegate)]`"
)]
pub trait NeedsFromTimedOut: Sized {
    /// Unreachable.
    fn from_timed_out(timed_out: TimedOut) -> Self;
}

/// A conversion of one of the crate's errors into the caller's error type, such as `E::from`.
pub type Conversion<X, E> = fn(X) -> E;

/// The circuit slot of a [`Retry`](super::Retry) builder without a breaker.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCircuit;

/// How a [`Retry`](super::Retry) builder finds its breaker, and turns a refused first attempt
/// into the error type `E` (which needs `From<CircuitOpen>` once a breaker is set).
pub trait CircuitSlot<'p, E> {
    /// The breaker and the conversion, if there is a breaker.
    fn slot(&self) -> Option<(&'p CircuitBreaker, Conversion<CircuitOpen, E>)>;
}

impl<E> CircuitSlot<'_, E> for NoCircuit {
    #[inline]
    fn slot(&self) -> Option<(&'static CircuitBreaker, Conversion<CircuitOpen, E>)> {
        None
    }
}

impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for &'p CircuitBreaker {
    #[inline]
    fn slot(&self) -> Option<(&'p CircuitBreaker, Conversion<CircuitOpen, E>)> {
        Some((*self, E::from))
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
/// error type `E` (which needs `From<TimedOut>` once a timeout is set).
pub trait TimeoutSlot<E> {
    /// The limit and the conversion, if there is a timeout.
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)>;
}

impl<E> TimeoutSlot<E> for NoTimeout {
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        None
    }
}

impl<E: From<TimedOut>> TimeoutSlot<E> for AttemptTimeout {
    #[inline]
    fn slot(&self) -> Option<(Duration, Conversion<TimedOut, E>)> {
        Some((self.0, E::from))
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
