//! How `#[retryable(key = ...)]` picks the call's breaker and budget when it names both: each
//! may be a `PerKey` (the key's own) or a plain static shared by every key, but at least one is
//! a `PerKey` (a per-host breaker beside one global budget, as the layers allow).

use super::{Lease, PerKey, Template};
use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;

/// What `circuit` and `budget` accept beside `key = ...` when both are given: a
/// `PerKey<T>` or a plain `T`.
#[diagnostic::on_unimplemented(
    message = "beside `key = ...`, `circuit` takes a `static CircuitBreaker` or `PerKey<CircuitBreaker>` and `budget` a `static RetryBudget` or `PerKey<RetryBudget>`, not `{Self}`",
    label = "expected a `PerKey<{T}>` or a `{T}`"
)]
pub trait Pick<T> {
    /// The value for the key whose hash is `hash` (a new entry labelled by `label`), or the one
    /// value every key shares.
    fn pick(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, T>;
}

impl<T: Template, const N: usize> Pick<T> for PerKey<T, N> {
    #[inline]
    fn pick(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, T> {
        self.lease(hash, label)
    }
}

impl Pick<CircuitBreaker> for CircuitBreaker {
    #[inline]
    fn pick(&self, _: u64, _: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, CircuitBreaker> {
        Lease::of(self)
    }
}

impl Pick<RetryBudget> for RetryBudget {
    #[inline]
    fn pick(&self, _: u64, _: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, RetryBudget> {
        Lease::of(self)
    }
}

/// A breaker and a budget beside `key = ...`, at least one of them chosen by key.
#[diagnostic::on_unimplemented(
    message = "`key = ...` picks the breaker or the budget by key, but neither `circuit` nor `budget` names a `PerKey`",
    label = "nothing here is chosen by this key",
    note = "declare one of them as a `static PerKey<..>` (`PerKey::new(CircuitBreaker::new(..))`), or drop `key`"
)]
pub trait OneByKey {}

impl<const N: usize, const M: usize> OneByKey
    for (PerKey<CircuitBreaker, N>, PerKey<RetryBudget, M>)
{
}
impl<const N: usize> OneByKey for (PerKey<CircuitBreaker, N>, RetryBudget) {}
impl<const M: usize> OneByKey for (CircuitBreaker, PerKey<RetryBudget, M>) {}
// Never used: with a second candidate for each half, the compiler waits for the arguments'
// types instead of inferring the other half from the one impl that fits, so a pair of shared
// values is reported as this trait's message rather than as a type mismatch.
#[diagnostic::do_not_recommend]
impl OneByKey for (CircuitBreaker, Unreachable) {}
#[diagnostic::do_not_recommend]
impl OneByKey for (Unreachable, RetryBudget) {}

/// A type nothing has (see the impls above).
#[derive(Debug)]
pub enum Unreachable {}

/// Checks, at the `key` key, that `circuit` or `budget` chooses by key.
#[inline(always)]
pub fn one_by_key<B, G>(_: &B, _: &G)
where
    (B, G): OneByKey,
{
}

/// The breaker or budget `of` gives the key whose hash is `hash`.
#[inline]
pub fn pick<'a, T, P: Pick<T> + ?Sized>(
    of: &'a P,
    hash: u64,
    label: &dyn Fn() -> Option<Box<str>>,
) -> Lease<'a, T> {
    of.pick(hash, label)
}
