//! Which breaker and budget each request uses: the same `&'static` one for all, or the one of
//! its authority (host and port) from a [`PerKey`]. What `.circuit(..)` and `.budget(..)` of
//! [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) and
//! [`HttpRetryLayer`](crate::tower::HttpRetryLayer) accept.

pub(crate) use crate::authority::Authority;

use crate::builder::Retry;
use crate::per_key::{AsPerKey, Lease, PerKey, Template, key_hash};
use crate::policy::RetryPolicy;
use crate::policy_cell::PolicySource;
use crate::run::ByTrait;
use crate::run::NoHook;
use crate::run::protection::Unprotected;
use crate::run::{AttemptTimeout, NoTimeout};
use crate::throttle::AdaptiveThrottle;
use crate::{CircuitBreaker, RetryBudget};
use std::fmt;
use std::time::Duration;

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

/// A fleet budget: every request uses its local bucket.
#[cfg(feature = "redis")]
impl ForEachRequest<crate::RetryBudget> for &'static crate::fleet::FleetBudget {
    fn chosen(self) -> Chosen<crate::RetryBudget> {
        Chosen(Choice::One(self.local()))
    }
}

/// A fleet breaker: every request asks its local breaker.
#[cfg(feature = "redis")]
impl ForEachRequest<crate::CircuitBreaker> for &'static crate::fleet::FleetBreaker {
    fn chosen(self) -> Chosen<crate::CircuitBreaker> {
        Chosen(Choice::One(self.local()))
    }
}

/// What `.budget(..)` of the HTTP and gRPC front ends keeps: a budget for every request (or one
/// per authority from a `PerKey`), or an [`AdaptiveThrottle`], which refuses first attempts
/// too.
#[derive(Clone, Copy, Debug)]
pub struct BudgetChoice(Budgeted);

#[derive(Clone, Copy, Debug)]
enum Budgeted {
    Budget(Chosen<RetryBudget>),
    Throttle(&'static AdaptiveThrottle),
}

/// What `.budget(..)` of the HTTP and gRPC front ends accepts: whatever
/// [`ForEachRequest<RetryBudget>`] does (a `&'static` budget, fleet budget or `PerKey` of
/// budgets), or a `&'static AdaptiveThrottle`.
pub trait BudgetForEachRequest {
    /// How each request finds its budget or throttle.
    fn budget_choice(self) -> BudgetChoice;
}

impl<X: ForEachRequest<RetryBudget>> BudgetForEachRequest for X {
    fn budget_choice(self) -> BudgetChoice {
        BudgetChoice(Budgeted::Budget(self.chosen()))
    }
}

impl BudgetForEachRequest for &'static AdaptiveThrottle {
    fn budget_choice(self) -> BudgetChoice {
        BudgetChoice(Budgeted::Throttle(self))
    }
}

impl BudgetChoice {
    /// The budget, if it is one.
    fn budget(self) -> Option<Chosen<RetryBudget>> {
        match self.0 {
            Budgeted::Budget(chosen) => Some(chosen),
            Budgeted::Throttle(_) => None,
        }
    }

    /// The throttle, if it is one.
    fn throttle(self) -> Option<&'static AdaptiveThrottle> {
        match self.0 {
            Budgeted::Budget(_) => None,
            Budgeted::Throttle(throttle) => Some(throttle),
        }
    }
}

/// The breaker, budget and throttle one request uses, held for its call.
pub(crate) type Held = (
    Option<Lease<'static, CircuitBreaker>>,
    Option<Lease<'static, RetryBudget>>,
    Option<&'static AdaptiveThrottle>,
);

impl<T> Chosen<T> {
    /// Whether each request's authority chooses the value (a `PerKey`).
    fn by_authority(&self) -> bool {
        matches!(self.0, Choice::ByAuthority(_))
    }

    /// The value for a request whose authority is `text`, hashed `hash` (used only with a
    /// `PerKey`; its text becomes a new entry's label).
    fn for_authority(self, hash: u64, text: &str) -> Lease<'static, T>
    where
        T: Template,
    {
        match self.0 {
            Choice::One(value) => Lease::of(value),
            Choice::ByAuthority(per_key) => per_key.value_for(hash, &|| Some(Box::from(text))),
        }
    }
}

/// The breaker and budget one request uses, held for its call. `authority` (the request's key)
/// is computed only when one of them is a `PerKey`, and hashed once for both.
pub(crate) fn held(
    circuit: Option<Chosen<CircuitBreaker>>,
    choice: Option<BudgetChoice>,
    authority: impl FnOnce() -> Authority,
) -> Held {
    let throttle = choice.and_then(BudgetChoice::throttle);
    let budget = choice.and_then(BudgetChoice::budget);
    let by_authority =
        circuit.is_some_and(|c| c.by_authority()) || budget.is_some_and(|b| b.by_authority());
    let text = by_authority.then(authority);
    let text = text.as_ref().map_or("", Authority::as_str);
    let hash = if by_authority { key_hash(text) } else { 0 };
    (
        circuit.map(|c| c.for_authority(hash, text)),
        budget.map(|b| b.for_authority(hash, text)),
        throttle,
    )
}

/// What the policy of a front end starts from before it owns one (a `Retry` needs a reference).
static NO_POLICY: RetryPolicy = RetryPolicy::new();

/// The settings both HTTP front ends ([`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware)
/// and [`HttpRetryLayer`](crate::tower::HttpRetryLayer)) are built from, and the preparation of
/// each request they share: its policy (idempotent by method or key) and its breaker and budget.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings<H, T> {
    pub(crate) policy: PolicySource,
    pub(crate) retry: Retry<'static, ByTrait, H, Unprotected, T>,
    pub(crate) circuit: Option<Chosen<CircuitBreaker>>,
    pub(crate) budget: Option<BudgetChoice>,
    /// Add an `Idempotency-Key` to `POST` and `PATCH` requests without one.
    pub(crate) add_keys: bool,
    /// The name `.named(..)` gave: the `fn` label and field of every request, instead of the
    /// request's `host:port`.
    pub(crate) name: Option<&'static str>,
}

impl HttpSettings<NoHook, NoTimeout> {
    pub(crate) const fn new(policy: PolicySource) -> Self {
        HttpSettings {
            policy,
            retry: Retry::new(&NO_POLICY),
            circuit: None,
            budget: None,
            add_keys: false,
            name: None,
        }
    }
}

impl<H, T> HttpSettings<H, T> {
    pub(crate) fn on_failure<H2>(self, hook: H2) -> HttpSettings<H2, T> {
        HttpSettings {
            policy: self.policy,
            retry: self.retry.on_failure(hook),
            circuit: self.circuit,
            budget: self.budget,
            add_keys: self.add_keys,
            name: self.name,
        }
    }

    pub(crate) fn attempt_timeout(self, limit: Duration) -> HttpSettings<H, AttemptTimeout> {
        HttpSettings {
            policy: self.policy,
            retry: self.retry.attempt_timeout(limit),
            circuit: self.circuit,
            budget: self.budget,
            add_keys: self.add_keys,
            name: self.name,
        }
    }

    /// One request's policy: idempotent by its method or its `Idempotency-Key` (added first to
    /// a `POST` or `PATCH` when asked).
    // In line, with `request_policy`: out of line, the policy was copied in and out of each
    // call on every request (benches/README.md, "the HTTP layer's named future").
    #[inline]
    pub(crate) fn policy_for(
        &self,
        method: &::http::Method,
        headers: &mut ::http::HeaderMap,
    ) -> RetryPolicy {
        crate::http::request_policy(self.policy.current(), self.add_keys, method, headers)
    }

    /// One request's breaker and budget; `authority` is computed only for a `PerKey`.
    #[inline]
    pub(crate) fn held_for(&self, authority: impl FnOnce() -> Authority) -> Held {
        // Neither set: nothing to choose, and no call into the choosing (it cost every request
        // when it was made anyway: benches/README.md, `layer/http_retry`).
        if self.circuit.is_none() && self.budget.is_none() {
            return (None, None, None);
        }
        held(self.circuit, self.budget, authority)
    }
}

/// What names a request in the HTTP front ends' reports: the name `.named(..)` gave, else the
/// request's authority written `host:port` (as a `PerKey` is keyed), written only when a report
/// needs it.
// Without `tracing` and `metrics` the tower layer hands the engine its hook unnamed, and
// only the middleware makes one.
#[cfg_attr(
    not(any(
        feature = "tracing",
        feature = "metrics",
        feature = "reqwest-middleware"
    )),
    allow(dead_code)
)]
pub(crate) struct ByAuthority<'a, T> {
    pub(crate) named: Option<&'static str>,
    /// The request, or what the front end keeps of it ...
    pub(crate) of: &'a T,
    /// ... and how its authority is read from that.
    pub(crate) authority: fn(&T) -> Authority,
}

impl<T> crate::observe::Subject for ByAuthority<'_, T> {
    #[inline]
    fn with_name<R>(&self, f: impl FnOnce(crate::observe::Name<'_>) -> R) -> R {
        match self.named {
            Some(name) => f(crate::observe::Name::Static(name)),
            None => {
                let authority = (self.authority)(self.of);
                f(crate::observe::Name::Text(authority.as_str()))
            }
        }
    }
}
