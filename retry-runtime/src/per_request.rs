//! Which breaker and budget each request uses: the same `&'static` one for all, or the one of
//! its authority (host and port) from a [`PerKey`]. What `.circuit(..)` and `.budget(..)` of
//! [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) and
//! [`HttpRetryLayer`](crate::tower::HttpRetryLayer) accept.

use crate::per_key::{AsPerKey, PerKey, Template, key_hash};
use crate::{CircuitBreaker, RetryBudget};
use std::fmt;
use std::sync::Arc;

/// A breaker or budget for every request, or one per authority from a [`PerKey`].
pub struct Chosen<T: 'static>(Choice<T>);

enum Choice<T: 'static> {
    One(&'static T),
    ByAuthority(&'static (dyn AsPerKey<T> + Sync)),
}

impl<T> Clone for Chosen<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Chosen<T> {}

impl<T> Clone for Choice<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Choice<T> {}

impl<T> fmt::Debug for Chosen<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Choice::One(_) => "Chosen::One",
            Choice::ByAuthority(_) => "Chosen::ByAuthority",
        })
    }
}

/// What `.circuit(..)` and `.budget(..)` accept: a `&'static` value, or a `&'static PerKey`.
pub trait ForEachRequest<T: 'static> {
    /// How each request finds its value.
    fn chosen(self) -> Chosen<T>;
}

impl<T: 'static> ForEachRequest<T> for &'static T {
    fn chosen(self) -> Chosen<T> {
        Chosen(Choice::One(self))
    }
}

impl<T: Template + Send + Sync + 'static, const N: usize> ForEachRequest<T>
    for &'static PerKey<T, N>
{
    fn chosen(self) -> Chosen<T> {
        Chosen(Choice::ByAuthority(self))
    }
}

/// The value a request uses, held for the call.
pub(crate) enum Held<T: 'static> {
    One(&'static T),
    Keyed(Arc<T>),
}

impl<T> Held<T> {
    pub(crate) fn get(&self) -> &T {
        match self {
            Held::One(value) => value,
            Held::Keyed(value) => value,
        }
    }
}

impl<T> Chosen<T> {
    /// The value for a request; `authority` (its key) is asked for only with a `PerKey`, so a
    /// shared breaker costs no hashing.
    pub(crate) fn for_authority(self, authority: impl FnOnce() -> u64) -> Held<T> {
        match self.0 {
            Choice::One(value) => Held::One(value),
            Choice::ByAuthority(per_key) => Held::Keyed(per_key.value_for(authority())),
        }
    }
}

/// The breaker and budget one request uses, held for its call. `authority` (the request's key)
/// is computed at most once, and only when one of them is a `PerKey`.
pub(crate) fn held(
    circuit: Option<Chosen<CircuitBreaker>>,
    budget: Option<Chosen<RetryBudget>>,
    authority: impl Fn() -> u64,
) -> (Option<Held<CircuitBreaker>>, Option<Held<RetryBudget>>) {
    let mut key = None;
    let mut authority = || *key.get_or_insert_with(&authority);
    (
        circuit.map(|c| c.for_authority(&mut authority)),
        budget.map(|b| b.for_authority(&mut authority)),
    )
}

/// The `PerKey` key of an authority: its host and port (the scheme's default port when the
/// URL names none), hashed. The same for a reqwest `Url` and an `http::Uri` naming one host.
pub(crate) fn authority_key(host: &str, port: u16) -> u64 {
    key_hash(&format!("{host}:{port}"))
}
