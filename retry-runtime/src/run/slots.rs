//! The slots of a [`Protections`](super::equip::Protections) protection, each filled by type:
//! the breaker slot ([`NoCircuit`], a breaker, a `PerKey` lease, one chosen per call), the
//! budget slot ([`NoBudget`], a budget, an [`AdaptiveThrottle`] in its place, one chosen per
//! call) and the adaptive slot ([`NoAdaptive`] or a policy), with [`Static`] for the `'static`
//! ones a tower layer keeps. What a slot holds decides, at compile time, what equipping a call
//! costs: an empty slot folds away.

use super::call::Call;
use super::call_policy::CallPolicy;
use super::outcome::Conversion;
use super::protection::{Adapted, NoWindow, Protected, Unprotected, Window};
use crate::adaptive::Adapt;
use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::error::CircuitOpen;
use crate::per_key::Lease;
use crate::throttle::AdaptiveThrottle;
use std::marker::PhantomData;
use std::sync::Arc;

/// The budget slot of a [`Protections`](super::equip::Protections) protection without a budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBudget;

/// The adaptive slot of a [`Protections`](super::equip::Protections) protection without an adaptive
/// policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAdaptive;

/// How a [`Protections`](super::equip::Protections) protection finds its budget: [`NoBudget`], a
/// budget (its own, or a `PerKey` entry's [`Lease`]), or one chosen per call (`Option`, what the
/// HTTP front ends resolve for each request).
pub trait BudgetSlot<'p>: Copy {
    /// The budget, if there is one.
    fn budget(&self) -> Option<Lease<'p, RetryBudget>>;
    /// The throttle in the budget's place, if there is one.
    #[inline(always)]
    fn throttle(&self) -> Option<&'p AdaptiveThrottle> {
        None
    }
}

/// How a budget slot's refusal of a *first* attempt becomes the error type `E`: never, for a
/// budget (it refuses retries only); `E::from(CircuitOpen)` for an [`AdaptiveThrottle`], which
/// refuses first attempts as a breaker does.
#[diagnostic::on_unimplemented(
    message = "an `AdaptiveThrottle` needs `impl From<CircuitOpen>` for the error type `{E}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "a throttle refuses first attempts too: the call then returns `Err(E::from(CircuitOpen))` without running the operation",
    note = "add `impl From<retry_kit::CircuitOpen> for E`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
pub trait ThrottleSlot<E> {
    /// The conversion of a refused first attempt, if a slot of this type can refuse one: a
    /// property of the type alone, so that asking costs no read of the slot.
    fn refused() -> Option<Conversion<CircuitOpen, E>>;
}

macro_rules! never_refuses {
    ($($slot:ty),*) => {$(
        impl<E> ThrottleSlot<E> for $slot {
            #[inline(always)]
            fn refused() -> Option<Conversion<CircuitOpen, E>> {
                None
            }
        }
    )*};
}

never_refuses!(
    NoBudget,
    &RetryBudget,
    Lease<'_, RetryBudget>,
    Option<Lease<'_, RetryBudget>>,
    Static<RetryBudget>
);

impl<E: From<CircuitOpen>> ThrottleSlot<E> for &AdaptiveThrottle {
    #[inline(always)]
    fn refused() -> Option<Conversion<CircuitOpen, E>> {
        Some(E::from)
    }
}

impl<E: From<CircuitOpen>> ThrottleSlot<E> for Static<AdaptiveThrottle> {
    #[inline(always)]
    fn refused() -> Option<Conversion<CircuitOpen, E>> {
        Some(E::from)
    }
}

/// The budget slot of type `S` without its value: what admitting a first attempt needs of a
/// budget slot (whether its type can refuse one, [`ThrottleSlot`]), so that
/// `#[retryable(budget = ..)]` does not read the budget a second time to admit the call (for a
/// fleet budget, a second atomic load). Made by [`refusal_of`]; holds no budget or throttle.
pub struct RefusalOf<S>(PhantomData<fn() -> S>);

impl<S> Clone for RefusalOf<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for RefusalOf<S> {}

impl<'p, S> BudgetSlot<'p> for RefusalOf<S> {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        None
    }
}

impl<E, S: ThrottleSlot<E>> ThrottleSlot<E> for RefusalOf<S> {
    #[inline(always)]
    fn refused() -> Option<Conversion<CircuitOpen, E>> {
        S::refused()
    }
}

/// The type of the budget slot of `budget`, without reading it (see [`RefusalOf`]).
#[inline(always)]
pub fn refusal_of<B: AsBudget + ?Sized + 'static>(_budget: &B) -> RefusalOf<B::Slot<'static>> {
    RefusalOf(PhantomData)
}

/// An adaptive throttle in the budget's place: no budget.
impl<'p> BudgetSlot<'p> for &'p AdaptiveThrottle {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        None
    }
    #[inline(always)]
    fn throttle(&self) -> Option<&'p AdaptiveThrottle> {
        Some(*self)
    }
}

impl<'p> BudgetSlot<'p> for Static<AdaptiveThrottle> {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        None
    }
    #[inline(always)]
    fn throttle(&self) -> Option<&'p AdaptiveThrottle> {
        Some(self.0)
    }
}

impl BudgetSlot<'_> for NoBudget {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'static, RetryBudget>> {
        None
    }
}

impl<'p> BudgetSlot<'p> for &'p RetryBudget {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        Some(Lease::of(self))
    }
}

impl<'p> BudgetSlot<'p> for Lease<'p, RetryBudget> {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        Some(*self)
    }
}

impl<'p> BudgetSlot<'p> for Option<Lease<'p, RetryBudget>> {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        *self
    }
}

/// What a [`Protections`](super::equip::Protections) protection's adaptive slot makes of each
/// call's adaptive part, by type: [`NoAdaptive`] a [`NoWindow`] (nothing), a policy an [`Adapted`]
/// call. A trait of its own, without the slot's lifetime, for the same reason as
/// [`CallState`](super::equip::CallState).
pub trait AdaptiveKind {
    /// The adaptive part of the calls it equips.
    type Window<'p>: Window;
}

impl AdaptiveKind for NoAdaptive {
    type Window<'p> = NoWindow;
}

// Two lifetimes, the reference's and the policy's: with one (`&'a (dyn Adapt + 'a)`), a
// builder's future with an adaptive policy could not be spawned from an `async` block (the
// compiler asks for the impl for any two lifetimes when it proves such a future `Send`).
impl<'a, 'b> AdaptiveKind for &'a (dyn Adapt + 'b) {
    type Window<'p> = Adapted<'p>;
}

/// How a [`Protections`](super::equip::Protections) protection finds its adaptive policy:
/// [`NoAdaptive`], or a policy.
pub trait AdaptiveSlot<'a>: AdaptiveKind + Copy {
    /// The adaptive policy, if there is one.
    fn adaptive(&self) -> Option<&'a dyn Adapt>;
    /// `call` with [`Protected`] state, adjusted by the adaptive policy if there is one.
    fn protect<'p, P: CallPolicy>(
        &self,
        call: Call<'p, Unprotected, P>,
    ) -> Call<'p, Protected<'p, Self::Window<'p>>, P>
    where
        'a: 'p;
}

impl AdaptiveSlot<'_> for NoAdaptive {
    #[inline(always)]
    fn adaptive(&self) -> Option<&'static dyn Adapt> {
        None
    }
    #[inline(always)]
    fn protect<'p, P: CallPolicy>(
        &self,
        call: Call<'p, Unprotected, P>,
    ) -> Call<'p, Protected<'p>, P>
    where
        'static: 'p,
    {
        call.protected(NoWindow)
    }
}

impl<'a> AdaptiveSlot<'a> for &'a dyn Adapt {
    #[inline(always)]
    fn adaptive(&self) -> Option<&'a dyn Adapt> {
        Some(*self)
    }
    #[inline(always)]
    fn protect<'p, P: CallPolicy>(
        &self,
        call: Call<'p, Unprotected, P>,
    ) -> Call<'p, Protected<'p, Adapted<'p>>, P>
    where
        'a: 'p,
    {
        call.adaptive(*self)
    }
}

/// A `'static` breaker or budget in a slot whose type has no lifetime: what `tower::RetryLayer`
/// keeps. A service whose type holds `&'static CircuitBreaker` could not be awaited inside a
/// spawned `async` block: proving that block `Send`, the compiler asks for the service's impls
/// for any lifetime in place of `'static`, and those hold only for `'static`.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::plumbing::{CircuitSlot, Static};
/// use retry_kit::CircuitBreaker;
/// use std::{io, time::Duration};
///
/// static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
/// let slot = Static(&BREAKER);
/// assert!(CircuitSlot::<io::Error>::slot(&slot).is_some());
/// ```
#[derive(Debug)]
pub struct Static<T: ?Sized + 'static>(pub &'static T);

impl<T: ?Sized> Clone for Static<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Static<T> {}

impl<'p> BudgetSlot<'p> for Static<RetryBudget> {
    #[inline]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        Some(Lease::of(self.0))
    }
}

impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for Static<CircuitBreaker> {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        Some((Lease::of(self.0), E::from))
    }
}

/// What a tower `RetryLayer`'s and the apalis `DurableRetryLayer`'s `.budget(..)` take, as a
/// `&'static`: a [`RetryBudget`], an
/// [`AdaptiveThrottle`], or a fleet budget (feature `redis`, its local bucket). Its slot has no
/// lifetime in its type ([`Static`]), for the reason `Static` gives.
#[cfg(any(feature = "tower", feature = "apalis"))]
pub trait StaticBudget: Sync {
    /// The slot a layer's calls are equipped with.
    type Slot: for<'p> BudgetSlot<'p> + Send + Sync;
    /// That slot.
    fn static_slot(&'static self) -> Self::Slot;
}

#[cfg(any(feature = "tower", feature = "apalis"))]
impl StaticBudget for RetryBudget {
    type Slot = Static<RetryBudget>;
    fn static_slot(&'static self) -> Static<RetryBudget> {
        Static(self)
    }
}

#[cfg(any(feature = "tower", feature = "apalis"))]
impl StaticBudget for AdaptiveThrottle {
    type Slot = Static<AdaptiveThrottle>;
    fn static_slot(&'static self) -> Static<AdaptiveThrottle> {
        Static(self)
    }
}

/// The breaker slot of a [`Retry`](crate::Retry) builder without a breaker.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCircuit;

/// How a [`Retry`](crate::Retry) builder finds its breaker, and turns a refused first attempt
/// into the error type `E`.
#[diagnostic::on_unimplemented(
    message = "a circuit breaker needs `impl From<CircuitOpen>` for the error type `{E}`",
    label = "the error type cannot hold a `CircuitOpen`",
    note = "when the breaker refuses the first attempt, the call returns `Err(E::from(CircuitOpen))` without running the operation",
    note = "add `impl From<retry_kit::CircuitOpen> for E`, for example a variant `Open(CircuitOpen)` tagged `#[classify(delegate)]`"
)]
pub trait CircuitSlot<'p, E> {
    /// The breaker and the conversion, if there is a breaker.
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)>;
}

impl<E> CircuitSlot<'_, E> for NoCircuit {
    #[inline]
    fn slot(&self) -> Option<(Lease<'static, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        None
    }
}

impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for &'p CircuitBreaker {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        Some((Lease::of(self), E::from))
    }
}

/// A `PerKey` entry's breaker, as the call leased it for its key.
impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for Lease<'p, CircuitBreaker> {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        Some((*self, E::from))
    }
}

/// A breaker chosen per call, or none (what the HTTP middleware resolves for each request).
impl<'p, E: From<CircuitOpen>> CircuitSlot<'p, E> for Option<Lease<'p, CircuitBreaker>> {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        self.map(|breaker| (breaker, E::from as Conversion<CircuitOpen, E>))
    }
}
/// The budget slot of a call whose budget or throttle the HTTP and gRPC front ends chose for
/// its request: a budget, a throttle, or neither. Its first attempt may be refused (by a
/// throttle), so the error type holds a `CircuitOpen`, as it must for their breakers anyway.
#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
#[derive(Clone, Copy, Debug)]
pub struct HeldBudget<'p> {
    pub(super) budget: Option<Lease<'p, RetryBudget>>,
    pub(super) throttle: Option<&'p AdaptiveThrottle>,
}

#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
impl<'p> BudgetSlot<'p> for HeldBudget<'p> {
    #[inline(always)]
    fn budget(&self) -> Option<Lease<'p, RetryBudget>> {
        self.budget
    }
    #[inline(always)]
    fn throttle(&self) -> Option<&'p AdaptiveThrottle> {
        self.throttle
    }
}

#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
impl<E: From<CircuitOpen>> ThrottleSlot<E> for HeldBudget<'_> {
    #[inline(always)]
    fn refused() -> Option<Conversion<CircuitOpen, E>> {
        Some(E::from)
    }
}

/// A breaker with its own conversion of a refusal (what
/// [`Retry::circuit_with`](crate::Retry::circuit_with) sets).
impl<'p, E> CircuitSlot<'p, E> for (&'p CircuitBreaker, Conversion<CircuitOpen, E>) {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        Some((Lease::of(self.0), self.1))
    }
}

/// A `PerKey` entry's breaker as the call leased it, with its own conversion of a refusal.
impl<'p, E> CircuitSlot<'p, E> for (Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>) {
    #[inline]
    fn slot(&self) -> Option<(Lease<'p, CircuitBreaker>, Conversion<CircuitOpen, E>)> {
        Some(*self)
    }
}

/// What `#[retryable(circuit = ...)]` accepts: a [`CircuitBreaker`], or a reference or `Arc` of
/// one.
#[diagnostic::on_unimplemented(
    message = "`circuit = ...` takes a path to a `static CircuitBreaker`, not `{Self}`",
    label = "expected a `CircuitBreaker`",
    note = "if it is a `static PerKey<CircuitBreaker>`, add `key = ...` (a host, a tenant) to choose a breaker per key"
)]
pub trait AsBreaker {
    /// The breaker.
    fn as_breaker(&self) -> &CircuitBreaker;
}

#[diagnostic::do_not_recommend]
impl AsBreaker for CircuitBreaker {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        self
    }
}

#[diagnostic::do_not_recommend]
impl<B: AsBreaker + ?Sized> AsBreaker for &B {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        (**self).as_breaker()
    }
}

#[diagnostic::do_not_recommend]
impl<B: AsBreaker + ?Sized> AsBreaker for Arc<B> {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        (**self).as_breaker()
    }
}

/// What `#[retryable(budget = ...)]` and [`Retry::budget`](crate::Retry::budget) accept: a
/// [`RetryBudget`] (or a fleet budget, a `PerKey` entry's lease), an
/// [`AdaptiveThrottle`](crate::AdaptiveThrottle), or a reference or `Arc` of one.
#[diagnostic::on_unimplemented(
    message = "`budget = ...` takes a path to a `static RetryBudget`, not `{Self}`",
    label = "expected a `RetryBudget`",
    note = "if it is a `static PerKey<RetryBudget>`, add `key = ...` (a host, a tenant) to choose a budget per key"
)]
pub trait AsBudget {
    /// What a call's protection keeps of it: `&RetryBudget` or `&AdaptiveThrottle`.
    type Slot<'a>: BudgetSlot<'a>
    where
        Self: 'a;
    /// The budget (or throttle), as a call's protection keeps it.
    fn as_budget(&self) -> Self::Slot<'_>;
}

#[diagnostic::do_not_recommend]
impl AsBudget for RetryBudget {
    type Slot<'a> = &'a RetryBudget;
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        self
    }
}

#[diagnostic::do_not_recommend]
impl AsBudget for AdaptiveThrottle {
    type Slot<'a> = &'a AdaptiveThrottle;
    #[inline]
    fn as_budget(&self) -> &AdaptiveThrottle {
        self
    }
}

/// A `PerKey` entry as looked up: its budget (the lease's claim to its key is not kept; see
/// [`Retry::circuit`](crate::Retry::circuit)).
#[diagnostic::do_not_recommend]
impl AsBudget for Lease<'_, RetryBudget> {
    type Slot<'a>
        = &'a RetryBudget
    where
        Self: 'a;
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        self.value()
    }
}

#[diagnostic::do_not_recommend]
impl<B: AsBudget + ?Sized> AsBudget for &B {
    type Slot<'a>
        = B::Slot<'a>
    where
        Self: 'a;
    #[inline]
    fn as_budget(&self) -> B::Slot<'_> {
        (**self).as_budget()
    }
}

#[diagnostic::do_not_recommend]
impl<B: AsBudget + ?Sized> AsBudget for Arc<B> {
    type Slot<'a>
        = B::Slot<'a>
    where
        Self: 'a;
    #[inline]
    fn as_budget(&self) -> B::Slot<'_> {
        (**self).as_budget()
    }
}
