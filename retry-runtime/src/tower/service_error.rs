//! What a [`RetryLayer`](super::RetryLayer) asks of the wrapped service's error type: to hold a
//! [`TimedOut`] when the layer has an attempt timeout, and a [`CircuitOpen`] when it has a
//! breaker.
//!
//! The layer's `Service` impl asks each as one bound on a type that is the service's error
//! type when the layer has the setting and the crate's own error when it does not
//! ([`TimeoutOf::Holder`], [`ProtectionOf::Holder`]): `Busy: HoldsTimedOut` when it fails
//! (the engine's [`HoldsTimedOut`] and [`HoldsCircuitOpen`], which the attribute asks too).
//! Asked of the layer's slots instead (`AttemptTimeout: TimeoutSlot<Busy>`), rustc reported the
//! slot and the whole service type, which name crate internals, and never `From`.

use crate::breaker::CircuitBreaker;
use crate::builder::BreakerWith;
use crate::error::{CircuitOpen, TimedOut};
use crate::run::plumbing::{
    AdaptiveSlot, BudgetSlot, Conversion, NoCircuit, Static, ThrottleSlot, Unprotected,
};
#[cfg(doc)]
use crate::run::plumbing::{HoldsCircuitOpen, HoldsTimedOut};
use crate::run::{AttemptTimeout, Equip, NoTimeout, Protections};
use std::time::Duration;

/// How a [`RetryLayer`](super::RetryLayer)'s timeout slot gives each call of a service whose
/// error type is `E` its attempt limit. Named in the bounds of `RetryService`; nothing a user
/// writes.
#[doc(hidden)]
pub trait TimeoutOf<E> {
    /// What must hold a [`TimedOut`]: `E` with an attempt timeout; without one, `TimedOut`
    /// itself, so that the bound always holds.
    type Holder;

    /// The limit of each attempt and the conversion of a timeout into `E`, given the
    /// conversion into the holder.
    fn limit(
        &self,
        into: Conversion<TimedOut, Self::Holder>,
    ) -> Option<(Duration, Conversion<TimedOut, E>)>;
}

impl<E> TimeoutOf<E> for NoTimeout {
    type Holder = TimedOut;

    #[inline]
    fn limit(
        &self,
        _: Conversion<TimedOut, TimedOut>,
    ) -> Option<(Duration, Conversion<TimedOut, E>)> {
        None
    }
}

impl<E> TimeoutOf<E> for AttemptTimeout {
    type Holder = E;

    #[inline]
    fn limit(&self, into: Conversion<TimedOut, E>) -> Option<(Duration, Conversion<TimedOut, E>)> {
        Some((self.0, into))
    }
}

/// How a [`RetryLayer`](super::RetryLayer)'s protection (none, or a `&'static` breaker and
/// budget) equips each call of a service whose error type is `E`. Named in the bounds of
/// `RetryService`; nothing a user writes.
#[doc(hidden)]
pub trait ProtectionOf<E> {
    /// What must hold a [`CircuitOpen`]: `E` with a breaker; without one, `CircuitOpen`
    /// itself, so that the bound always holds.
    type Holder;

    /// The protection a call is equipped with: a breaker with its conversion of a refusal.
    type Equipped: for<'p> Equip<'p, E> + Send + Sync;

    /// The protection for one call, given the conversion of a refusal into the holder.
    fn equipped(&self, refused: Conversion<CircuitOpen, Self::Holder>) -> Self::Equipped;
}

impl<E> ProtectionOf<E> for Unprotected {
    type Holder = CircuitOpen;
    type Equipped = Unprotected;

    #[inline]
    fn equipped(&self, _: Conversion<CircuitOpen, CircuitOpen>) -> Unprotected {
        Unprotected
    }
}

impl<E, B, A> ProtectionOf<E> for Protections<NoCircuit, B, A>
where
    B: BudgetSlot<'static> + ThrottleSlot<E> + Send + Sync,
    A: AdaptiveSlot<'static> + Send + Sync,
{
    type Holder = CircuitOpen;
    type Equipped = Self;

    #[inline]
    fn equipped(&self, _: Conversion<CircuitOpen, CircuitOpen>) -> Self {
        *self
    }
}

impl<E, B, A> ProtectionOf<E> for Protections<Static<CircuitBreaker>, B, A>
where
    B: BudgetSlot<'static> + ThrottleSlot<E> + Send + Sync,
    A: AdaptiveSlot<'static> + Send + Sync,
{
    type Holder = E;
    type Equipped = Protections<BreakerWith<'static, E>, B, A>;

    #[inline]
    fn equipped(&self, refused: Conversion<CircuitOpen, E>) -> Self::Equipped {
        self.map_circuit(|Static(breaker)| (breaker, refused))
    }
}
