//! How a front end equips each call with shared protection: a [`Retry`](crate::Retry)
//! builder's [`Protections`] breaker, budget and adaptive policy (each slot chosen by type), the
//! [`Equip`] step that starts a call with them.
//!
//! What fills each slot, and what `#[retryable(circuit = .., budget = ..)]` accepts as a breaker
//! or budget, is [`slots`](super::slots); the call's own protection state, and what the engine
//! does with it, is [`protection`](super::protection).

use super::call::Call;
use super::call_policy::CallPolicy;
use super::outcome::Outcome;
use super::protection::{Protected, Protection, Unprotected};
use super::slots::{
    AdaptiveKind, AdaptiveSlot, BudgetSlot, CircuitSlot, NoAdaptive, NoBudget, NoCircuit,
    ThrottleSlot,
};
use crate::error::CircuitOpen;
#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
use {
    super::slots::HeldBudget, crate::breaker::CircuitBreaker, crate::budget::RetryBudget,
    crate::per_key::Lease, crate::throttle::AdaptiveThrottle,
};

/// The shared protection of a [`Retry`](crate::Retry) builder once one of
/// [`circuit`](crate::Retry::circuit), [`budget`](crate::Retry::budget) or
/// [`adaptive`](crate::Retry::adaptive) is set: the breaker slot `K` ([`NoCircuit`], or a breaker
/// with the conversion of its refusal), the budget slot `B` ([`NoBudget`] or a budget) and the
/// adaptive slot `A` ([`NoAdaptive`] or a policy).
///
/// Each piece is chosen by type, not held as a run-time `Option`: a builder with a breaker
/// alone carries one reference, and equipping its calls folds the absent budget and adaptive
/// policy away.
#[derive(Clone, Copy)]
pub struct Protections<K, B = NoBudget, A = NoAdaptive> {
    pub(super) circuit: K,
    pub(super) budget: B,
    pub(super) adaptive: A,
}

impl<'p, K: std::fmt::Debug, B: BudgetSlot<'p>, A: AdaptiveSlot<'p>> std::fmt::Debug
    for Protections<K, B, A>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protections")
            .field("circuit", &self.circuit)
            .field("budget", &self.budget.budget())
            .field("adaptive", &self.adaptive.adaptive().is_some())
            .finish()
    }
}

impl Protections<NoCircuit> {
    /// No breaker, budget or adaptive policy yet: set them with [`circuit`](Self::circuit),
    /// [`budget`](Self::budget) and [`adaptive`](Self::adaptive).
    ///
    /// What `#[retryable(circuit = .., budget = .., adaptive = ..)]` equips each call with, and
    /// what a [`Retry`](crate::Retry) builder keeps:
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::run::{ByTrait, Call, Equip, NoHook, Protections};
    /// use retry_kit::{CircuitBreaker, RetryBudget, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
    /// static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);
    /// let protection = Protections::new().circuit(&BREAKER).budget(&BUDGET);
    ///
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(3);
    /// let call = Call::new(&policy);
    /// let mut call = Equip::<io::Error>::equip(&protection, call);
    /// Equip::<io::Error>::admit(&protection, &mut call).expect("the breaker is closed");
    /// let out: io::Result<u32> = call.attempt_sync(|| Ok(7));
    /// assert_eq!(call.after(&out, &ByTrait, &mut NoHook), None);
    /// ```
    #[inline]
    pub const fn new() -> Self {
        Protections {
            circuit: NoCircuit,
            budget: NoBudget,
            adaptive: NoAdaptive,
        }
    }
}

impl Default for Protections<NoCircuit> {
    fn default() -> Self {
        Protections::new()
    }
}

impl<K, B, A> Protections<K, B, A> {
    /// The same protection with this breaker slot: a `&CircuitBreaker` (a refused first
    /// attempt becomes `E::from(CircuitOpen)`), or a breaker with its own conversion,
    /// `(&CircuitBreaker, fn(CircuitOpen) -> E)`.
    #[inline]
    pub fn circuit<K2>(self, circuit: K2) -> Protections<K2, B, A> {
        Protections {
            circuit,
            budget: self.budget,
            adaptive: self.adaptive,
        }
    }

    /// The same protection with its breaker slot mapped by `f`: how a tower layer gives the
    /// breaker of each call its conversion of a refusal.
    #[cfg(feature = "tower")]
    #[inline]
    pub(crate) fn map_circuit<K2>(self, f: impl FnOnce(K) -> K2) -> Protections<K2, B, A> {
        Protections {
            circuit: f(self.circuit),
            budget: self.budget,
            adaptive: self.adaptive,
        }
    }

    /// The same protection with this budget slot (a `&RetryBudget`).
    #[inline]
    pub fn budget<B2>(self, budget: B2) -> Protections<K, B2, A> {
        Protections {
            circuit: self.circuit,
            budget,
            adaptive: self.adaptive,
        }
    }

    /// The same protection with this adaptive slot (a `&dyn Adapt`).
    #[inline]
    pub fn adaptive<A2>(self, adaptive: A2) -> Protections<K, B, A2> {
        Protections {
            circuit: self.circuit,
            budget: self.budget,
            adaptive,
        }
    }
}

/// The protection `S` with its breaker slot set to `K` (what `circuit` makes of a builder).
pub type WithCircuit<S, K> =
    Protections<K, <S as IntoProtections>::Budget, <S as IntoProtections>::Adaptive>;
/// The protection `S` with its budget slot set to `B`.
pub type WithBudget<S, B> =
    Protections<<S as IntoProtections>::Circuit, B, <S as IntoProtections>::Adaptive>;
/// The protection `S` with its adaptive slot set to `A`.
pub type WithAdaptive<S, A> =
    Protections<<S as IntoProtections>::Circuit, <S as IntoProtections>::Budget, A>;

/// A [`Retry`](crate::Retry) builder's protection, [`Unprotected`] or [`Protections`], on its way
/// to [`Protections`] when one more piece is set.
pub trait IntoProtections {
    /// The breaker slot it keeps.
    type Circuit;
    /// The budget slot it keeps.
    type Budget;
    /// The adaptive slot it keeps.
    type Adaptive;
    /// The same protection as [`Protections`].
    fn into_protections(self) -> Protections<Self::Circuit, Self::Budget, Self::Adaptive>;
}

impl IntoProtections for Unprotected {
    type Circuit = NoCircuit;
    type Budget = NoBudget;
    type Adaptive = NoAdaptive;
    #[inline]
    fn into_protections(self) -> Protections<NoCircuit> {
        Protections::new()
    }
}

impl<K, B, A> IntoProtections for Protections<K, B, A> {
    type Circuit = K;
    type Budget = B;
    type Adaptive = A;
    #[inline]
    fn into_protections(self) -> Protections<K, B, A> {
        self
    }
}

/// How a [`Retry`](crate::Retry) builder's protection equips each call, for errors of type `E`:
/// [`Unprotected`] leaves it unprotected; [`Protections`] makes it [`Protected`] and asks the
/// breaker for the first attempt, turning a refusal into an `E`.
///
/// Two steps, so that the call is built in place: returning it inside a `Result` made the
/// builder copy the whole protected call once per call.
///
/// Call it with the error type named, `Equip::<E>::equip(&protection, call)`: a breaker turns
/// its refusal into any `E: From<CircuitOpen>`, so `E` cannot be inferred from the arguments.
///
/// A hand-written loop calls both, `admit` before the first attempt (as [`Protections`]' example
/// does): a call equipped and never admitted runs its first attempt without the breaker's
/// permit, so an open breaker does not refuse it, and neither its outcome nor a half-open probe
/// is counted. Nothing fails to compile or panics when `admit` is left out.
pub trait Equip<'p, E>: CallState<'p> {
    /// Equip `call` with the breaker, budget and adaptive policy.
    fn equip<P: CallPolicy>(&self, call: Call<'p, Unprotected, P>) -> Call<'p, Self::State, P>;
    /// Ask the breaker (and a throttle in the budget's place) for the first attempt; `Err` when
    /// it refuses, and the call must then make no attempt. Required before the first attempt of
    /// an equipped call: see the trait's docs.
    fn admit<P: CallPolicy>(&self, call: &mut Call<'p, Self::State, P>) -> Result<(), E>;
}

/// The protection state the calls a builder's protection equips carry: a trait of its own,
/// with impls that ask nothing of the slots, so that naming the state of a call held across an
/// await (a builder's future) never needs the slots' impls. Asked through [`Equip`], whose
/// impl bounds name lifetimes, it made the futures of a builder with a breaker impossible to
/// spawn ("implementation of `CircuitSlot` is not general enough").
pub trait CallState<'p> {
    /// The call's protection state.
    type State: Protection<'p>;
}

impl<'p> CallState<'p> for Unprotected {
    type State = Unprotected;
}

impl<'p, K, B, A: AdaptiveKind> CallState<'p> for Protections<K, B, A> {
    type State = Protected<'p, A::Window<'p>>;
}

impl<'p, E> Equip<'p, E> for Unprotected {
    #[inline(always)]
    fn equip<P: CallPolicy>(&self, call: Call<'p, Unprotected, P>) -> Call<'p, Unprotected, P> {
        call
    }
    #[inline(always)]
    fn admit<P: CallPolicy>(&self, _: &mut Call<'p, Unprotected, P>) -> Result<(), E> {
        Ok(())
    }
}

// `'a: 'p`: a builder whose breaker and budget are `'static` (a tower layer's) equips calls that
// borrow a shorter-lived policy.
impl<'p, 'a: 'p, E, K, B, A> Equip<'p, E> for Protections<K, B, A>
where
    K: CircuitSlot<'a, E>,
    B: BudgetSlot<'a> + ThrottleSlot<E>,
    A: AdaptiveSlot<'a>,
{
    // Always inlined: left to the optimiser it stayed out of line, a call on every call.
    #[inline(always)]
    fn equip<P: CallPolicy>(
        &self,
        call: Call<'p, Unprotected, P>,
    ) -> Call<'p, Protected<'p, A::Window<'p>>, P> {
        let mut call = self.adaptive.protect(call);
        // Set in place: every reassignment of the call would be a copy of it.
        call.protection.budget = self.budget.budget();
        call.protection.throttle = self.budget.throttle();
        call.protection.breaker = self.circuit.slot().map(|(breaker, _)| breaker);
        call
    }
    #[inline(always)]
    fn admit<P: CallPolicy>(
        &self,
        call: &mut Call<'p, Protected<'p, A::Window<'p>>, P>,
    ) -> Result<(), E> {
        if let Some((_, refused)) = self.circuit.slot() {
            call.admit().map_err(refused)?;
        }
        // After the breaker: a request the breaker refuses is not one the throttle counts.
        match B::refused() {
            Some(refused) => call.admit_throttle().map_err(refused),
            None => Ok(()),
        }
    }
}

#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
impl<'p> Protections<Option<Lease<'p, CircuitBreaker>>, HeldBudget<'p>> {
    /// Protection chosen per call: a breaker or none, a budget or a throttle or neither.
    pub(crate) fn chosen(
        circuit: Option<Lease<'p, CircuitBreaker>>,
        budget: Option<Lease<'p, RetryBudget>>,
        throttle: Option<&'p AdaptiveThrottle>,
    ) -> Self {
        Protections {
            circuit,
            budget: HeldBudget { budget, throttle },
            adaptive: NoAdaptive,
        }
    }
}

/// An error type that can hold a [`CircuitOpen`]: what a breaker asks of the error type, at
/// `#[retryable(circuit = ...)]` and of a service behind `RetryLayer::circuit`. Implemented for
/// every `E: From<CircuitOpen>`.
#[diagnostic::on_unimplemented(
    message = "`circuit` needs `impl From<CircuitOpen>` for the error type `{Self}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "when the breaker refuses the first attempt, the call returns `Err(E::from(CircuitOpen))` without making it",
    note = "add `impl From<retry_kit::CircuitOpen> for {Self}`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
pub trait HoldsCircuitOpen: From<CircuitOpen> {}

// Not looked through by diagnostics: a missing impl is reported as this trait, with its
// message, rather than as the `From<CircuitOpen>` bound behind it.
#[diagnostic::do_not_recommend]
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
