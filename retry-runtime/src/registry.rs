//! [`snapshot`]: every named breaker and budget that has been used, and every live
//! [`PerKey`](crate::PerKey) entry with its key, with its state: for a health or admin
//! endpoint (`Serialize` with the `serde` feature).
//!
//! # How things get listed
//!
//! A breaker or budget given a [`name`](crate::CircuitBreaker::name) is enlisted by its first
//! use, which takes the registry's lock once to add it. The check costs a closed breaker's
//! success nothing (a named breaker's state word starts with a mark that sends its first call
//! down the slow path) and a budget one relaxed load of a flag.
//!
//! The registry does not point at the breaker itself: a breaker may live on the stack or in an
//! `Arc` and move or go away, where a pointer to it would dangle. The breaker keeps a small
//! record that the registry shares (`Arc`/`Weak`) and updates it where its state changes: on
//! its slow paths, never on a closed breaker's success; for a budget, when its tokens change.
//! When the breaker goes away its record does too, and the registry forgets it. Each update
//! ends with the record equal to the state (a concurrent update is followed until it settles),
//! so what a snapshot lists is the state as of the last change.
//!
//! The entries of a [`PerKey`](crate::PerKey) are listed with their keys while they live.
//! The lists are kept below the breaker and the budget (`crate::listing`), which enlist
//! themselves; this module only reads them.

pub use crate::breaker::BreakerStatus;
use crate::breaker::CircuitBreaker;
pub use crate::budget::BudgetStatus;
use crate::budget::RetryBudget;
use crate::listing::Recorded;

/// Every named breaker and budget that has been used, and every live `PerKey` entry, with its
/// state now.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{registry, CircuitBreaker, CircuitState, RetryBudget};
/// use std::time::Duration;
///
/// static PAYMENTS: CircuitBreaker =
///     CircuitBreaker::new(1, Duration::from_secs(30)).name("payments");
/// static SEARCH: RetryBudget = RetryBudget::new(10, 0.1).name("search");
///
/// PAYMENTS.try_acquire().unwrap().failed();
/// SEARCH.record_failure();
///
/// let now = registry::snapshot();
/// let payments = now.breakers.iter().find(|b| b.name == Some("payments")).unwrap();
/// assert_eq!(payments.state, CircuitState::Open);
/// assert!(payments.retry_after.is_some());
/// let search = now.budgets.iter().find(|b| b.name == Some("search")).unwrap();
/// assert_eq!(search.tokens, 9.0);
/// ```
pub fn snapshot() -> Snapshot {
    let mut now = Snapshot {
        breakers: CircuitBreaker::lists().collect(),
        budgets: RetryBudget::lists().collect(),
    };
    now.breakers
        .sort_by(|a, b| (a.name, &a.key).cmp(&(b.name, &b.key)));
    now.budgets
        .sort_by(|a, b| (a.name, &a.key).cmp(&(b.name, &b.key)));
    now
}

/// What [`snapshot`] returns: breakers and budgets, each sorted by name, then key.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Every named breaker that has been used, and every live entry of a `PerKey` of breakers.
    pub breakers: Vec<BreakerStatus>,
    /// Every named budget that has been used, and every live entry of a `PerKey` of budgets.
    pub budgets: Vec<BudgetStatus>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CircuitState;
    use crate::listing::enlist_entry;
    use std::sync::Arc;
    use std::time::Duration;

    fn listed(name: &str) -> Vec<(Option<String>, CircuitState)> {
        snapshot()
            .breakers
            .into_iter()
            .filter(|b| b.name == Some(name))
            .map(|b| (b.key, b.state))
            .collect()
    }

    #[test]
    fn an_entry_its_table_enlists_is_listed_with_its_key_while_it_lives() {
        let template = CircuitBreaker::new(1, Duration::from_secs(60)).name("registry-unit-hosts");
        let entry = Arc::new(template.entry_copy(Some("db-1:5432".into())));
        enlist_entry(&entry);
        crate::testing::record_sleeps(|| entry.try_acquire().unwrap().failed());
        assert_eq!(
            listed("registry-unit-hosts"),
            [(Some("db-1:5432".to_owned()), CircuitState::Open)]
        );

        let budget = Arc::new(
            RetryBudget::new(4, 1.0)
                .name("registry-unit-tenants")
                .entry_copy(Some("tenant-7".into())),
        );
        enlist_entry(&budget);
        budget.record_failure();
        let tenants: Vec<_> = snapshot()
            .budgets
            .into_iter()
            .filter(|b| b.name == Some("registry-unit-tenants"))
            .map(|b| (b.key, b.tokens))
            .collect();
        assert_eq!(tenants, [(Some("tenant-7".to_owned()), 3.0)]);

        // The table gave its place away and no call holds it: it is no longer listed.
        drop(entry);
        assert_eq!(listed("registry-unit-hosts"), []);
    }
}
