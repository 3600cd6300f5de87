//! [`Lease`]: a breaker or budget as one call holds it, with the tenancy it was looked up
//! under.

use super::Template;
use crate::breaker::{CircuitBreaker, CircuitPermit};
use crate::budget::RetryBudget;
use crate::error::CircuitOpen;
use std::fmt;
use std::ops::Deref;

/// A breaker or budget held for one call: a [`PerKey`](super::PerKey) entry as the call looked
/// it up for its key, or a breaker or budget of its own.
///
/// A full table gives an entry to a new key by resetting it in place. A call that leased the
/// entry for the old key then records nothing into it (its permit and its charges are dropped),
/// so the new key's counts are its own calls' alone. Reading through the lease (`state()`,
/// `tokens()`) reads the entry as it is now.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{CircuitBreaker, CircuitState, PerKey};
/// use std::time::Duration;
///
/// let hosts: PerKey<CircuitBreaker, 1> = PerKey::new(CircuitBreaker::new(1, Duration::from_secs(30)));
/// let a = hosts.get("a.example");
/// let permit = a.try_acquire().unwrap();
/// // The one place goes to b.example while a.example's call runs ...
/// let b = hosts.get("b.example");
/// // ... so a.example's failure is not counted against b.example.
/// permit.failed();
/// assert_eq!(b.state(), CircuitState::Closed);
/// ```
pub struct Lease<'a, T> {
    value: &'a T,
    tenancy: u32,
}

impl<'a, T> Lease<'a, T> {
    #[inline]
    pub(crate) fn new(value: &'a T, tenancy: u32) -> Self {
        Lease { value, tenancy }
    }

    /// A breaker or budget held as it is now: its own, or a `PerKey` entry for the key it
    /// serves now.
    #[inline]
    pub fn of(value: &'a T) -> Self
    where
        T: Template,
    {
        Lease::new(value, value.tenancy())
    }

    /// The breaker or budget.
    #[inline]
    pub fn value(&self) -> &'a T {
        self.value
    }

    /// The tenancy it was leased under.
    #[inline]
    pub(crate) fn tenancy(&self) -> u32 {
        self.tenancy
    }
}

impl<'a> Lease<'a, CircuitBreaker> {
    /// Ask to make one call ([`CircuitBreaker::try_acquire`]); the permit of a lapsed lease
    /// records nothing.
    #[inline]
    pub fn try_acquire(&self) -> Result<CircuitPermit<'a>, CircuitOpen> {
        self.value.acquire_as(self.tenancy)
    }
}

impl<'a> Lease<'a, RetryBudget> {
    /// [`RetryBudget::record_failure`], unless the lease lapsed.
    #[inline]
    pub fn record_failure(&self) {
        self.value.charge(self.tenancy);
    }

    /// [`RetryBudget::record_success`], unless the lease lapsed.
    #[inline]
    pub fn record_success(&self) {
        self.value.refund(self.tenancy);
    }
}

impl<T> Clone for Lease<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Lease<'_, T> {}

impl<T> Deref for Lease<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Lease<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value, f)
    }
}
