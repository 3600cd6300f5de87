//! Shared protection inside the engine: the adaptive policy, circuit breaker and retry budget a
//! [`Call`] consults, and how a [`Retry`](super::Retry) builder equips each call with them.
//!
//! Where the engine asks:
//!
//! - before the first attempt, [`Call::admit`] takes a breaker permit (or is refused);
//! - after an attempt, the permit is given the outcome (a success, or a failure by class), the
//!   budget is charged or refunded, and the adaptive window records the attempt;
//! - when a retry is scheduled, the budget is asked, then the breaker gives the next attempt's
//!   permit, which is held through the backoff sleep.
//!
//! The permit lives in the [`Call`], which lives in the retrying function's frame: if that
//! frame is dropped mid-attempt (a cancelled future) the permit is released as neither success
//! nor failure, and if it unwinds (a panicking body) as a failure.

use super::call::Call;
use super::outcome::{Conversion, Outcome};
use super::stop::{StopReason, Verdict};
use crate::adaptive::Adapt;
use crate::breaker::{CircuitBreaker, CircuitPermit};
use crate::budget::RetryBudget;
use crate::class::ErrorClass;
use crate::clock;
use crate::error::CircuitOpen;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shared protection a [`Call`] carries: [`Unprotected`] (none) or [`Protected`]. Every
/// method is called at the same point of the loop for both; [`Unprotected`]'s do nothing and
/// inline to nothing.
pub trait Protection<'p>: PanicSink + Sized {
    /// The same protection as [`Protected`] state.
    fn into_protected(self) -> Protected<'p>;
    /// The first delay and multiplier as an adaptive policy tuned them, if any.
    fn tuned(&self) -> Option<(Duration, f64)>;
    /// An attempt starts.
    fn begin_attempt(&mut self);
    /// The attempt succeeded.
    fn succeeded(&mut self);
    /// The attempt failed with an error of `class`.
    fn failed(&mut self, class: ErrorClass);
    /// Let the budget and then the breaker veto a retry the policy scheduled.
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict;
    /// Ask the breaker (if any) for the first attempt.
    fn admit(&mut self) -> Result<(), CircuitOpen>;
    /// What belongs to one attempt rather than to the call: its breaker permit and when it
    /// started. Hedged attempts run side by side, so each keeps its own (see
    /// [`hedge`](super::hedge)); a sequential call keeps the one running attempt's here.
    type Hold;
    /// Take the attempt that just began (its permit and start time) out of the call.
    fn take_hold(&mut self) -> Self::Hold;
    /// Give a finished attempt's hold back, so that its outcome is recorded with it.
    fn put_hold(&mut self, hold: Self::Hold);
}

/// No adaptive policy, breaker or budget. Zero-sized: as a call's state it costs nothing, and as
/// a [`Retry`](super::Retry) builder's protection it equips calls with nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unprotected;

impl<'p> Protection<'p> for Unprotected {
    #[inline(always)]
    fn into_protected(self) -> Protected<'p> {
        Protected::NONE
    }
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
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict {
        verdict
    }
    #[inline(always)]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        Ok(())
    }
    type Hold = ();
    #[inline(always)]
    fn take_hold(&mut self) {}
    #[inline(always)]
    fn put_hold(&mut self, (): ()) {}
}

/// The adaptive policy, breaker, budget and breaker permit of one call, any of them possibly
/// unset; untouched on success unless one is set.
pub struct Protected<'p> {
    adaptive: Option<Adapted<'p>>,
    pub(super) breaker: Option<&'p CircuitBreaker>,
    pub(super) budget: Option<&'p RetryBudget>,
    permit: Option<CircuitPermit<'p>>,
}

/// A call under an adaptive policy: where its attempts are recorded, and the delay shape the
/// policy tuned at the call's start (its attempts are the call's limit). Only what tuning
/// changes, not a whole tuned [`RetryPolicy`](crate::RetryPolicy): this lives in every protected async future.
struct Adapted<'p> {
    source: &'p dyn Adapt,
    base: Duration,
    multiplier: f64,
    /// When the running attempt started, for the window's latency.
    started: Option<Instant>,
}

impl<'p> Protected<'p> {
    const NONE: Self = Protected {
        adaptive: None,
        breaker: None,
        budget: None,
        permit: None,
    };

    /// Record attempts into `source`, which tuned this call's first delay and multiplier.
    pub(super) fn adapt(&mut self, source: &'p dyn Adapt, base: Duration, multiplier: f64) {
        self.adaptive = Some(Adapted {
            source,
            base,
            multiplier,
            started: None,
        });
    }

    /// Record the attempt that started in `begin_attempt` into the adaptive window.
    #[inline]
    fn end_attempt(&mut self, failed: bool) {
        if let Some(adapted) = &mut self.adaptive {
            if let Some(started) = adapted.started.take() {
                let ended = clock::now();
                let latency = ended.saturating_duration_since(started);
                adapted.source.record(failed, latency, ended);
            }
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
}

impl<'p> Protection<'p> for Protected<'p> {
    #[inline]
    fn into_protected(self) -> Protected<'p> {
        self
    }
    #[inline]
    fn tuned(&self) -> Option<(Duration, f64)> {
        self.adaptive.as_ref().map(|a| (a.base, a.multiplier))
    }
    #[inline]
    fn begin_attempt(&mut self) {
        if let Some(adapted) = &mut self.adaptive {
            adapted.started = Some(clock::now());
        }
    }
    #[inline(always)]
    fn succeeded(&mut self) {
        self.end_attempt(false);
        if self.permit.is_some() || self.budget.is_some() {
            self.record_success();
        }
    }
    #[inline]
    fn failed(&mut self, class: ErrorClass) {
        if let Some(permit) = self.permit.take() {
            permit.record(class);
        }
        if let Some(budget) = self.budget {
            if class.is_failure() {
                budget.record_failure();
            }
        }
        self.end_attempt(class.is_failure());
    }
    #[inline]
    // Not `verdict?`: through `From` it cost the breaker rows 2 instructions a call (callgrind,
    // sync_retry3_breaker 747 against 745).
    #[allow(clippy::question_mark)]
    fn admit_retry(&mut self, verdict: Verdict) -> Verdict {
        if verdict.is_err() {
            return verdict;
        }
        if let Some(budget) = self.budget {
            if !budget.allows_retry() {
                return Err(StopReason::BudgetExhausted);
            }
        }
        if let Some(breaker) = self.breaker {
            match breaker.try_acquire() {
                Ok(permit) => self.permit = Some(permit),
                Err(_) => return Err(StopReason::CircuitOpen),
            }
        }
        verdict
    }
    #[inline]
    fn admit(&mut self) -> Result<(), CircuitOpen> {
        if let Some(breaker) = self.breaker {
            self.permit = Some(breaker.try_acquire()?);
        }
        Ok(())
    }
    type Hold = AttemptHold<'p>;
    #[inline]
    fn take_hold(&mut self) -> AttemptHold<'p> {
        AttemptHold {
            permit: self.permit.take(),
            started: self.adaptive.as_mut().and_then(|a| a.started.take()),
        }
    }
    #[inline]
    fn put_hold(&mut self, hold: AttemptHold<'p>) {
        self.permit = hold.permit;
        if let Some(adapted) = &mut self.adaptive {
            adapted.started = hold.started;
        }
    }
}

/// One attempt's share of [`Protected`] state: its breaker permit and, with an adaptive policy,
/// when it started. Dropped with a cancelled hedged attempt, which releases the permit as
/// neither success nor failure.
#[derive(Debug)]
pub struct AttemptHold<'p> {
    permit: Option<CircuitPermit<'p>>,
    started: Option<Instant>,
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

impl PanicSink for Protected<'_> {
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

impl std::fmt::Debug for Protected<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protected")
            .field("adaptive", &self.adaptive.is_some())
            .field("tuned", &self.tuned())
            .field("breaker", &self.breaker)
            .field("budget", &self.budget)
            .field("permit", &self.permit)
            .finish()
    }
}

/// The shared protection of a [`Retry`](super::Retry) builder once one of
/// [`circuit`](super::Retry::circuit), [`budget`](super::Retry::budget) or
/// [`adaptive`](super::Retry::adaptive) is set: the breaker slot `K` ([`NoCircuit`], or a breaker
/// with the conversion of its refusal), the budget slot `B` ([`NoBudget`] or a budget) and the
/// adaptive slot `A` ([`NoAdaptive`] or a policy).
///
/// Each piece is chosen by type, not held as a run-time `Option`: a builder with a breaker
/// alone carries one reference, and equipping its calls folds the absent budget and adaptive
/// policy away (the async fn form with a breaker: 323 instructions a call with `Option`s,
/// 269 with the budget and adaptive policy known absent, by `benches/instructions.sh`).
#[derive(Clone, Copy)]
pub struct Shared<K, B = NoBudget, A = NoAdaptive> {
    pub(super) circuit: K,
    pub(super) budget: B,
    pub(super) adaptive: A,
}

impl<'p, K: std::fmt::Debug, B: BudgetSlot<'p>, A: AdaptiveSlot<'p>> std::fmt::Debug
    for Shared<K, B, A>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("circuit", &self.circuit)
            .field("budget", &self.budget.budget())
            .field("adaptive", &self.adaptive.adaptive().is_some())
            .finish()
    }
}

/// The protection `S` with its breaker slot set to `K` (what `circuit` makes of a builder).
pub type WithCircuit<S, K> = Shared<K, <S as IntoShared>::Budget, <S as IntoShared>::Adaptive>;
/// The protection `S` with its budget slot set to `B`.
pub type WithBudget<S, B> = Shared<<S as IntoShared>::Circuit, B, <S as IntoShared>::Adaptive>;
/// The protection `S` with its adaptive slot set to `A`.
pub type WithAdaptive<S, A> = Shared<<S as IntoShared>::Circuit, <S as IntoShared>::Budget, A>;

/// The budget slot of a [`Shared`] protection without a budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBudget;

/// The adaptive slot of a [`Shared`] protection without an adaptive policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAdaptive;

/// How a [`Shared`] protection finds its budget: [`NoBudget`], a budget, or a budget chosen
/// per call (`Option`, what the HTTP front ends resolve for each request).
pub trait BudgetSlot<'p>: Copy {
    /// The budget, if there is one.
    fn budget(&self) -> Option<&'p RetryBudget>;
}

impl BudgetSlot<'_> for NoBudget {
    #[inline(always)]
    fn budget(&self) -> Option<&'static RetryBudget> {
        None
    }
}

impl<'p> BudgetSlot<'p> for &'p RetryBudget {
    #[inline(always)]
    fn budget(&self) -> Option<&'p RetryBudget> {
        Some(*self)
    }
}

impl<'p> BudgetSlot<'p> for Option<&'p RetryBudget> {
    #[inline(always)]
    fn budget(&self) -> Option<&'p RetryBudget> {
        *self
    }
}

/// How a [`Shared`] protection finds its adaptive policy: [`NoAdaptive`], or a policy.
pub trait AdaptiveSlot<'p>: Copy {
    /// The adaptive policy, if there is one.
    fn adaptive(&self) -> Option<&'p dyn Adapt>;
}

impl AdaptiveSlot<'_> for NoAdaptive {
    #[inline(always)]
    fn adaptive(&self) -> Option<&'static dyn Adapt> {
        None
    }
}

impl<'p> AdaptiveSlot<'p> for &'p dyn Adapt {
    #[inline(always)]
    fn adaptive(&self) -> Option<&'p dyn Adapt> {
        Some(*self)
    }
}

/// A [`Retry`](super::Retry) builder's protection, [`Unprotected`] or [`Shared`], on its way to
/// [`Shared`] when one more piece is set.
pub trait IntoShared {
    /// The breaker slot it keeps.
    type Circuit;
    /// The budget slot it keeps.
    type Budget;
    /// The adaptive slot it keeps.
    type Adaptive;
    /// The same protection as [`Shared`].
    fn into_shared(self) -> Shared<Self::Circuit, Self::Budget, Self::Adaptive>;
}

impl IntoShared for Unprotected {
    type Circuit = NoCircuit;
    type Budget = NoBudget;
    type Adaptive = NoAdaptive;
    #[inline]
    fn into_shared(self) -> Shared<NoCircuit> {
        Shared {
            circuit: NoCircuit,
            budget: NoBudget,
            adaptive: NoAdaptive,
        }
    }
}

impl<K, B, A> IntoShared for Shared<K, B, A> {
    type Circuit = K;
    type Budget = B;
    type Adaptive = A;
    #[inline]
    fn into_shared(self) -> Shared<K, B, A> {
        self
    }
}

/// How a [`Retry`](super::Retry) builder's protection equips each call, for errors of type `E`:
/// [`Unprotected`] leaves it unprotected; [`Shared`] makes it [`Protected`] and asks the breaker
/// for the first attempt, turning a refusal into an `E`.
///
/// Two steps, so that the call is built in place: returning it inside a `Result` made the
/// builder copy the whole protected call once per call (a `memcpy` of 58 instructions,
/// sync_success_breaker/fn by callgrind).
pub trait Equip<'p, E> {
    /// The call's protection state.
    type State: Protection<'p>;
    /// Equip `call` with the breaker, budget and adaptive policy.
    fn equip(&self, call: Call<'p>) -> Call<'p, Self::State>;
    /// Ask the breaker for the first attempt; `Err` when it refuses.
    fn admit(&self, call: &mut Call<'p, Self::State>) -> Result<(), E>;
}

impl<'p, E> Equip<'p, E> for Unprotected {
    type State = Unprotected;
    #[inline(always)]
    fn equip(&self, call: Call<'p>) -> Call<'p> {
        call
    }
    #[inline(always)]
    fn admit(&self, _: &mut Call<'p>) -> Result<(), E> {
        Ok(())
    }
}

// `'a: 'p`: a builder whose breaker and budget are `'static` (a tower layer's) equips calls that
// borrow a shorter-lived policy.
impl<'p, 'a: 'p, E, K, B, A> Equip<'p, E> for Shared<K, B, A>
where
    K: CircuitSlot<'a, E>,
    B: BudgetSlot<'a>,
    A: AdaptiveSlot<'a>,
{
    type State = Protected<'p>;
    // Always inlined: left to the optimiser it stayed out of line, 47 more instructions a call
    // (sync_success_breaker/fn: 317 against 270, by callgrind).
    #[inline(always)]
    fn equip(&self, call: Call<'p>) -> Call<'p, Protected<'p>> {
        let mut call = match self.adaptive.adaptive() {
            Some(source) => call.adaptive(source),
            None => call.protected(),
        };
        // Set in place: every reassignment of the call would be a copy of it.
        call.protection.budget = self.budget.budget();
        call.protection.breaker = self.circuit.slot().map(|(breaker, _)| breaker);
        call
    }
    #[inline(always)]
    fn admit(&self, call: &mut Call<'p, Protected<'p>>) -> Result<(), E> {
        match self.circuit.slot() {
            Some((_, refused)) => call.admit().map_err(refused),
            None => Ok(()),
        }
    }
}

/// The breaker slot of a [`Retry`](super::Retry) builder without a breaker.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCircuit;

/// How a [`Retry`](super::Retry) builder finds its breaker, and turns a refused first attempt
/// into the error type `E`.
#[diagnostic::on_unimplemented(
    message = "a circuit breaker needs `impl From<CircuitOpen>` for the error type `{E}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "when the breaker refuses the first attempt, the call returns `Err(E::from(CircuitOpen))` without running the operation",
    note = "add `impl From<retry_kit::CircuitOpen> for E`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
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

/// A breaker chosen per call, or none (what the HTTP middleware resolves for each request).
impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for Option<&'p CircuitBreaker> {
    #[inline]
    fn slot(&self) -> Option<(&'p CircuitBreaker, Conversion<CircuitOpen, E>)> {
        self.map(|breaker| (breaker, E::from as Conversion<CircuitOpen, E>))
    }
}

#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
impl<'p> Shared<Option<&'p CircuitBreaker>, Option<&'p RetryBudget>> {
    /// Protection chosen per call: a breaker or none, a budget or none.
    pub(crate) fn chosen(
        circuit: Option<&'p CircuitBreaker>,
        budget: Option<&'p RetryBudget>,
    ) -> Self {
        Shared {
            circuit,
            budget,
            adaptive: NoAdaptive,
        }
    }
}

/// A breaker with its own conversion of a refusal (what [`Retry::circuit_with`](super::Retry::circuit_with) sets).
impl<'p, E> CircuitSlot<'p, E> for (&'p CircuitBreaker, Conversion<CircuitOpen, E>) {
    #[inline]
    fn slot(&self) -> Option<(&'p CircuitBreaker, Conversion<CircuitOpen, E>)> {
        Some(*self)
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

/// An error type that can hold a [`CircuitOpen`]: what `#[retryable(circuit = ...)]` requires.
#[diagnostic::on_unimplemented(
    message = "`circuit = ...` needs `impl From<CircuitOpen>` for the error type `{Self}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "when the breaker refuses the first attempt, the function returns `Err(E::from(CircuitOpen))` without running its body",
    note = "add `impl From<retry_kit::CircuitOpen> for E`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
pub trait HoldsCircuitOpen: From<CircuitOpen> {}

impl<E: From<CircuitOpen>> HoldsCircuitOpen for E {}

/// The conversion of a breaker's refusal for the outcome type `R`. Generated code takes it at
/// the `circuit` key, so that a missing `From<CircuitOpen>` is reported there.
#[inline]
pub fn circuit_open<R: Outcome>() -> fn(CircuitOpen) -> R::Error
where
    R::Error: HoldsCircuitOpen,
{
    <R::Error as From<CircuitOpen>>::from
}
