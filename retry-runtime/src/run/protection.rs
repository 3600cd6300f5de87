//! Protection inside the engine: the adaptive policy, circuit breaker and retry budget (or
//! adaptive throttle) a [`Call`](super::Call) consults, and its breaker permit. How a front end
//! equips each call with them is [`equip`](super::equip).
//!
//! Where the engine asks:
//!
//! - before the first attempt, [`Call::admit`](super::Call::admit) takes a breaker permit (or
//!   is refused);
//! - after an attempt, the permit is given the outcome (a success, or a failure by class), the
//!   budget is charged or refunded, and the adaptive window records the attempt;
//! - when a retry is scheduled, the budget is asked, then the breaker gives the next attempt's
//!   permit, which is held through the backoff sleep.
//!
//! The permit lives in the [`Call`](super::Call), which lives in the retrying function's
//! frame: if that frame is dropped mid-attempt (a cancelled future) the permit is released as
//! neither success nor failure, and if its attempt unwinds (a panicking body) as a failure,
//! recorded by the guard around the attempt ([`PanicSink`]); a permit dropped by an unwind that
//! began elsewhere (a sibling hedge, another future in the same `join!`) is neither.

use crate::adaptive::Adapt;
use crate::breaker::{CircuitBreaker, CircuitPermit};
use crate::budget::RetryBudget;
use crate::class::ErrorClass;
use crate::clock;
use crate::error::CircuitOpen;
use crate::per_key::Lease;
use crate::stop::{StopCode, Verdict};
use crate::throttle::AdaptiveThrottle;
use std::time::{Duration, Instant};

/// The shared protection a [`Call`](super::Call) carries: [`Unprotected`] (none) or
/// [`Protected`]. Every method is called at the same point of the loop for both;
/// [`Unprotected`]'s do nothing and inline to nothing.
pub trait Protection<'p>: PanicSink + Holding + Sized {
    /// The first delay and multiplier as an adaptive policy tuned them, if any.
    fn tuned(&self) -> Option<(Duration, f64)>;
    /// An attempt starts.
    fn begin_attempt(&mut self);
    /// The attempt succeeded.
    fn succeeded(&mut self);
    /// The attempt failed with an error of `class`.
    fn failed(&mut self, class: ErrorClass);
    /// The attempt got an answer the loop polls past (a `retry_if` value): not a failure.
    fn answered(&mut self);
    /// Let the budget and then the breaker veto a retry the policy scheduled.
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict;
    /// Let the breaker veto the next poll after an answer (the budget meters retries of
    /// failures, not polls).
    fn admit_poll(&mut self, verdict: Verdict) -> Verdict;
    /// Ask the breaker (if any) for the first attempt.
    fn admit(&mut self) -> Result<(), CircuitOpen>;
    /// How long until the breaker (if any) admits a probe: what a call that defers rather
    /// than stopping on an open breaker waits for. A slow path.
    fn reopens_in(&self) -> Option<Duration> {
        None
    }
    /// Admit a hedge: an attempt started beside running ones when the hedge delay passes
    /// without an answer (see [`Hedge`](crate::builder::Hedge)). The rule, gRPC's: the budget and the
    /// breaker admit it as they would a retry with no wait (a hedge spends the retry tokens,
    /// and a breaker's permit covers it); the call's own limits (attempts, deadline) are
    /// checked before this is asked. To count hedges differently (say, not against the
    /// budget), change this method: every hedged loop asks it, and only it.
    #[inline]
    fn admit_hedge(&mut self) -> bool {
        self.admit_retry(Ok(Duration::ZERO)).is_ok()
    }
    /// Ask the throttle (if any) for the first attempt.
    fn admit_throttle(&mut self) -> Result<(), CircuitOpen>;
    /// Take the attempt that just began (its permit and start time) out of the call.
    fn take_hold(&mut self) -> Self::Hold;
    /// Give a finished attempt's hold back, so that its outcome is recorded with it.
    fn put_hold(&mut self, hold: Self::Hold);
}

/// What of a call's protection belongs to one attempt rather than to the call: its breaker
/// permit and when it started. Hedged attempts run side by side, so each keeps its own (see
/// [`Hedge`](crate::builder::Hedge)); a sequential call keeps the one running attempt's in the call.
///
/// A trait of its own, without [`Protection`]'s lifetime: a hedged builder's future keeps
/// holds across its awaits, and the compiler proves such a future `Send` for every lifetime
/// at once, which `<Protected<'a> as Protection<'a>>::Hold` (the same lifetime twice) defeated:
/// a builder's hedged call with a breaker could not be spawned.
pub trait Holding {
    /// One attempt's share.
    type Hold;
}

impl Holding for Unprotected {
    type Hold = ();
}

impl<'p, W: Window> Holding for Protected<'p, W> {
    type Hold = AttemptHold<'p, W::Started>;
}

/// No adaptive policy, breaker or budget. Zero-sized: as a call's state it costs nothing, and as
/// a [`Retry`](crate::Retry) builder's protection it equips calls with nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unprotected;

impl Unprotected {
    /// [`Protected`] state with no breaker or budget yet, and `window` as its adaptive part.
    #[inline(always)]
    pub(super) fn protected<'p, W: Window>(self, window: W) -> Protected<'p, W> {
        // Field by field, not a copy of a `const`: copied from a constant, the fields were
        // stored and read back, so the absent permit was checked on every call.
        Protected {
            adaptive: window,
            breaker: None,
            budget: None,
            throttle: None,
            permit: None,
        }
    }
}

impl<'p> Protection<'p> for Unprotected {
    #[inline(always)]
    fn tuned(&self) -> Option<(Duration, f64)> {
        None
    }
    #[inline(always)]
    fn begin_attempt(&mut self) {}
    #[inline(always)]
    fn succeeded(&mut self) {}
    #[inline(always)]
    fn failed(&mut self, _: ErrorClass) {}
    #[inline(always)]
    fn answered(&mut self) {}
    #[inline(always)]
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict {
        verdict
    }
    #[inline(always)]
    fn admit_poll(&mut self, verdict: Verdict) -> Verdict {
        verdict
    }
    #[inline(always)]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        Ok(())
    }
    #[inline(always)]
    fn admit_throttle(&mut self) -> Result<(), CircuitOpen> {
        Ok(())
    }
    #[inline(always)]
    fn take_hold(&mut self) {}
    #[inline(always)]
    fn put_hold(&mut self, (): ()) {}
}

/// The breaker, budget and breaker permit of one call, either possibly unset, and its adaptive
/// part `W`, chosen by type: [`NoWindow`] (nothing, zero-sized) or an [`Adapted`] call;
/// untouched on success unless one is set.
pub struct Protected<'p, W = NoWindow> {
    adaptive: W,
    pub(super) breaker: Option<Lease<'p, CircuitBreaker>>,
    pub(super) budget: Option<Lease<'p, RetryBudget>>,
    /// An adaptive throttle in the budget's place.
    pub(super) throttle: Option<&'p AdaptiveThrottle>,
    permit: Option<CircuitPermit<'p>>,
}

/// The adaptive part of a call's [`Protected`] state: [`NoWindow`] for a call without an
/// adaptive policy, which then carries nothing for one across its awaits (the state of an
/// adaptive call is several words), or [`Adapted`].
pub trait Window {
    /// What an attempt's [`AttemptHold`] keeps of it: when the attempt started, or nothing.
    type Started;
    /// The first delay and multiplier the adaptive policy tuned, if any.
    fn tuned(&self) -> Option<(Duration, f64)>;
    /// An attempt starts.
    fn begin(&mut self);
    /// The running attempt ended (`failed`: with a failure): record it.
    fn end(&mut self, failed: bool);
    /// Take the running attempt's start out (a hedged attempt keeps its own).
    fn take_started(&mut self) -> Self::Started;
    /// Give a finished attempt's start back, so that it is recorded.
    fn put_started(&mut self, started: Self::Started);
}

/// No adaptive policy: nothing to tune or record.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWindow;

impl Window for NoWindow {
    type Started = ();
    #[inline(always)]
    fn tuned(&self) -> Option<(Duration, f64)> {
        None
    }
    #[inline(always)]
    fn begin(&mut self) {}
    #[inline(always)]
    fn end(&mut self, _: bool) {}
    #[inline(always)]
    fn take_started(&mut self) {}
    #[inline(always)]
    fn put_started(&mut self, (): ()) {}
}

/// A call under an adaptive policy: where its attempts are recorded, and the delay shape the
/// policy tuned at the call's start (its attempts are the call's limit). Only what tuning
/// changes, not a whole tuned [`RetryPolicy`](crate::RetryPolicy): this lives in the call's
/// future across its awaits.
pub struct Adapted<'p> {
    source: &'p dyn Adapt,
    base: Duration,
    multiplier: f64,
    /// When the running attempt started, for the window's latency.
    started: Option<Instant>,
}

impl<'p> Adapted<'p> {
    /// Record attempts into `source`, which tuned this call's first delay and multiplier.
    pub(super) fn new(source: &'p dyn Adapt, base: Duration, multiplier: f64) -> Self {
        Adapted {
            source,
            base,
            multiplier,
            started: None,
        }
    }
}

impl Window for Adapted<'_> {
    type Started = Option<Instant>;
    #[inline]
    fn tuned(&self) -> Option<(Duration, f64)> {
        Some((self.base, self.multiplier))
    }
    #[inline]
    fn begin(&mut self) {
        self.started = Some(clock::now());
    }
    #[inline]
    fn end(&mut self, failed: bool) {
        if let Some(started) = self.started.take() {
            let ended = clock::now();
            let latency = ended.saturating_duration_since(started);
            self.source.record(failed, latency, ended);
        }
    }
    #[inline]
    fn take_started(&mut self) -> Option<Instant> {
        self.started.take()
    }
    #[inline]
    fn put_started(&mut self, started: Option<Instant>) {
        self.started = started;
    }
}

impl std::fmt::Debug for Adapted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapted")
            .field("base", &self.base)
            .field("multiplier", &self.multiplier)
            .field("started", &self.started)
            .finish_non_exhaustive()
    }
}

impl<W: Window> Protected<'_, W> {
    /// Record the attempt that started in `begin_attempt` into the adaptive window.
    #[inline(always)]
    fn end_attempt(&mut self, failed: bool) {
        self.adaptive.end(failed);
    }

    // In line: with a breaker or a budget a success is the hot path, and out of line the
    // call's protection had to be reloaded from memory after it.
    #[inline]
    fn record_success(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.succeeded();
        }
        if let Some(budget) = self.budget {
            budget.record_success();
        }
    }
}

/// An attempt the backend accepted, told to the throttle: out of line, so that a call without a
/// throttle carries none of its code on the success path.
#[cold]
#[inline(never)]
fn throttle_accepted(throttle: &AdaptiveThrottle) {
    throttle.accepted();
}

impl<'p, W: Window> Protection<'p> for Protected<'p, W> {
    fn reopens_in(&self) -> Option<Duration> {
        self.breaker
            .as_ref()
            .and_then(|b| b.value().status().retry_after)
    }

    #[inline]
    fn tuned(&self) -> Option<(Duration, f64)> {
        self.adaptive.tuned()
    }
    #[inline]
    fn begin_attempt(&mut self) {
        self.adaptive.begin();
    }
    #[inline(always)]
    fn succeeded(&mut self) {
        self.end_attempt(false);
        if self.permit.is_some() || self.budget.is_some() {
            self.record_success();
        }
        if let Some(throttle) = self.throttle {
            throttle_accepted(throttle);
        }
    }
    #[inline(always)]
    fn failed(&mut self, class: ErrorClass) {
        if let Some(permit) = self.permit.take() {
            permit.record(class);
        }
        if let Some(budget) = self.budget {
            if class.is_failure() {
                budget.record_failure();
            }
        }
        if let Some(throttle) = self.throttle {
            // A permanent error is an answer: the backend accepted the request.
            if !class.is_failure() {
                throttle.accepted();
            }
        }
        self.end_attempt(class.is_failure());
    }
    #[inline(always)]
    // Not `verdict?`: the conversion through `From` is not free on the breaker's path.
    #[allow(clippy::question_mark)]
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict {
        if verdict.is_err() {
            return verdict;
        }
        if let Some(budget) = self.budget {
            if !budget.allows_retry() {
                return Err(StopCode::BudgetExhausted);
            }
        }
        if let Some(throttle) = self.throttle {
            if throttle.try_admit().is_err() {
                return Err(StopCode::BudgetExhausted);
            }
        }
        self.admit_poll(verdict)
    }
    #[inline]
    fn answered(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.succeeded();
        }
        if let Some(throttle) = self.throttle {
            throttle.accepted();
        }
        self.end_attempt(false);
    }
    #[inline(always)]
    // Not `verdict?`, as in `admit_retry`.
    #[allow(clippy::question_mark)]
    fn admit_poll(&mut self, verdict: Verdict) -> Verdict {
        if verdict.is_err() {
            return verdict;
        }
        if let Some(breaker) = self.breaker {
            match breaker.try_acquire() {
                Ok(permit) => self.permit = Some(permit.managed()),
                Err(_) => return Err(StopCode::CircuitOpen),
            }
        }
        verdict
    }
    // Always in line: out of line (the compiler's choice) the protection was reloaded from
    // memory after it, so the absent adaptive policy was checked again on every attempt.
    #[inline(always)]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        if let Some(breaker) = self.breaker {
            let permit = breaker.try_acquire()?.managed();
            // The first attempt's permit: there is none before it. Not an assignment, whose
            // drop of the old value re-read it from memory after the breaker's atomic loads.
            let none = self.permit.replace(permit);
            debug_assert!(
                none.is_none(),
                "admit is asked once, before the first attempt"
            );
            std::mem::forget(none);
        }
        Ok(())
    }
    #[inline]
    fn admit_throttle(&mut self) -> Result<(), CircuitOpen> {
        match self.throttle {
            Some(throttle) => throttle.try_admit(),
            None => Ok(()),
        }
    }
    #[inline]
    fn take_hold(&mut self) -> AttemptHold<'p, W::Started> {
        AttemptHold {
            permit: self.permit.take(),
            started: self.adaptive.take_started(),
        }
    }
    #[inline]
    fn put_hold(&mut self, hold: AttemptHold<'p, W::Started>) {
        self.permit = hold.permit;
        self.adaptive.put_started(hold.started);
    }
}

/// One attempt's share of [`Protected`] state: its breaker permit and, with an adaptive policy,
/// when it started (`S`, the window's [`Started`](Window::Started)). Dropped with a cancelled
/// hedged attempt, which releases the permit as neither success nor failure.
#[derive(Debug)]
pub struct AttemptHold<'p, S = ()> {
    permit: Option<CircuitPermit<'p>>,
    started: S,
}

/// What a call's protection does with an attempt that panics. One rule: a panicking attempt is a
/// failure everywhere — the breaker permit records a failure (as the spec asks of probes), the
/// budget is charged a token and the adaptive window records a failed attempt. The attempt
/// produced no answer; were the three to disagree, a dependency whose replies make the caller
/// panic would open the breaker while the budget and the window still saw a healthy service.
/// The engine arms a guard around the body of every attempt of a protected call (sync bodies
/// and each poll of async ones, so a panic inside a task that its runtime catches counts too);
/// a call dropped mid-attempt without a panic (a cancelled future) records nothing anywhere.
pub trait PanicSink {
    /// Whether attempts need the guard at all (false for [`Unprotected`]: no guard is made).
    const GUARDED: bool;
    /// The running attempt panicked.
    fn panicked(&mut self);
}

impl PanicSink for Unprotected {
    const GUARDED: bool = false;
    #[inline(always)]
    fn panicked(&mut self) {}
}

impl<'p, W: Window> PanicSink for Protected<'p, W> {
    const GUARDED: bool = true;
    #[cold]
    fn panicked(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.failed();
        }
        if let Some(budget) = self.budget {
            budget.record_failure();
        }
        self.end_attempt(true);
    }
}

/// Armed around an attempt's body: tells the protection if the body unwinds. Forgotten when
/// the body returns, so the normal path runs no drop code.
pub(super) struct PanicGuard<'g, S: PanicSink>(pub(super) &'g mut S);

impl<S: PanicSink> Drop for PanicGuard<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.panicked();
        }
    }
}

impl<'p, W: Window> std::fmt::Debug for Protected<'p, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protected")
            .field("tuned", &self.adaptive.tuned())
            .field("breaker", &self.breaker.map(|b| b.value()))
            .field("budget", &self.budget.map(|b| b.value()))
            .field("throttle", &self.throttle)
            .field("permit", &self.permit)
            .finish()
    }
}
