//! A [`RetryBudget`]'s part in the [`registry`](crate::registry): enlisted by its first use
//! when named, its tokens copied to its record when they change, and its
//! [`status`](RetryBudget::status) as a snapshot lists it.

use super::reconfigure::MAX;
use super::{BudgetSettings, RetryBudget, UNIT};
use crate::listing::{Listed, Lists, Recorded};

/// One budget in a [`Snapshot`](crate::registry::Snapshot), or [`RetryBudget::status`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BudgetStatus {
    /// Its [`name`](RetryBudget::name) (a `PerKey` entry's is its template's).
    pub name: Option<&'static str>,
    /// A `PerKey` entry's key, as text, where it is known.
    pub key: Option<String>,
    /// The tokens in the bucket, to six decimal places.
    pub tokens: f64,
    /// Whether a retry may start now (the tokens exceed half of `max_tokens`).
    pub allows_retry: bool,
    /// Its settings.
    pub settings: BudgetSettings,
}

/// Every named budget that has been used, and every live `PerKey` entry of budgets.
static BUDGETS: Lists<BudgetStatus> = Lists::new();

impl Recorded for RetryBudget {
    type Settings = BudgetSettings;
    type Status = BudgetStatus;
    fn lists() -> &'static Lists<BudgetStatus> {
        &BUDGETS
    }
    fn listed(name: &'static str, [tokens, _]: [u64; 2], settings: BudgetSettings) -> BudgetStatus {
        status_of(Some(name), None, tokens, settings)
    }
}

/// A `PerKey` entry lists itself, with its key.
impl Listed<BudgetStatus> for RetryBudget {
    fn list(&self, out: &mut dyn FnMut(BudgetStatus)) {
        out(self.status());
    }
}

impl RetryBudget {
    /// This budget's tokens, settings, name and key now, as [`registry::snapshot`](crate::registry::snapshot) lists it.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryBudget;
    ///
    /// let budget = RetryBudget::new(4, 0.5);
    /// budget.record_failure();
    /// let status = budget.status();
    /// assert_eq!((status.tokens, status.allows_retry), (3.0, true));
    /// ```
    pub fn status(&self) -> BudgetStatus {
        // The key and the tokens read together (see `CircuitBreaker::status`).
        let (key, tokens) = self.tenancy.read(|key| (key, self.raw_tokens()));
        status_of(
            self.label(),
            key.map(|key| key.to_string()),
            tokens,
            self.settings(),
        )
    }
}

/// A budget's status from its tokens and settings.
fn status_of(
    name: Option<&'static str>,
    key: Option<String>,
    tokens: u64,
    settings: BudgetSettings,
) -> BudgetStatus {
    let max = settings.words()[MAX];
    let tokens = tokens.min(max);
    BudgetStatus {
        name,
        key,
        tokens: tokens as f64 / UNIT as f64,
        allows_retry: tokens.saturating_mul(2) > max,
        settings,
    }
}
