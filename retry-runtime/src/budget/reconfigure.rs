//! A [`RetryBudget`]'s settings as a value ([`BudgetSettings`]), read and replaced while the
//! budget runs; its tokens are scaled to the new size.

use super::{RetryBudget, UNIT};
use crate::sync::Ordering;

/// Which word holds which setting.
pub(super) const MAX: usize = 0;
pub(super) const RATIO: usize = 1;

/// The settings of a [`RetryBudget`]: what [`RetryBudget::settings`] reads and
/// [`RetryBudget::set_settings`] replaces at run time, and (feature `serde`) what a
/// configuration file holds, with the keys of [`RetryBudget::new`]'s arguments:
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `max_tokens` | whole number, 0 to 4 294 967 295 | required |
/// | `token_ratio` | number >= 0 | required |
///
/// Kept as the budget keeps it: `token_ratio` to six decimal places (negative or NaN is 0).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{BudgetSettings, RetryBudget};
///
/// static SEARCH: RetryBudget = RetryBudget::new(10, 0.1);
/// for _ in 0..4 {
///     SEARCH.record_failure();
/// }
/// assert_eq!(SEARCH.tokens(), 6.0);
///
/// // Twice the size: the bucket keeps its share, 60 % full.
/// SEARCH.set_settings(BudgetSettings::new(20, 0.5));
/// assert_eq!(SEARCH.tokens(), 12.0);
/// assert_eq!(SEARCH.settings(), BudgetSettings::new(20, 0.5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct BudgetSettings {
    /// The size of the bucket; a retry may start while the tokens exceed half of it.
    pub max_tokens: u32,
    /// The tokens a success puts back (a failure takes 1).
    pub token_ratio: f64,
}

impl BudgetSettings {
    /// A bucket of `max_tokens` refunding `token_ratio` per success (as [`RetryBudget::new`]).
    pub const fn new(max_tokens: u32, token_ratio: f64) -> Self {
        let ratio = ratio_millionths(token_ratio);
        BudgetSettings {
            max_tokens,
            token_ratio: ratio as f64 / UNIT as f64,
        }
    }

    /// The words the budget keeps these settings in, in millionths of a token.
    pub(super) const fn words(&self) -> [u64; 2] {
        [
            self.max_tokens as u64 * UNIT,
            ratio_millionths(self.token_ratio),
        ]
    }

    fn from_words(w: [u64; 2]) -> Self {
        BudgetSettings {
            max_tokens: (w[MAX] / UNIT) as u32,
            token_ratio: w[RATIO] as f64 / UNIT as f64,
        }
    }
}

/// A ratio in millionths of a token: `as` saturates, and maps NaN to 0.
const fn ratio_millionths(ratio: f64) -> u64 {
    if ratio > 0.0 {
        (ratio * UNIT as f64 + 0.5) as u64
    } else {
        0
    }
}

impl RetryBudget {
    /// The settings now.
    pub fn settings(&self) -> BudgetSettings {
        BudgetSettings::from_words(self.settings.read())
    }

    /// Replace the settings while the budget runs. The tokens keep their share of the bucket:
    /// a budget 60 % full stays 60 % full at the new `max_tokens` (an empty one stays empty, a
    /// full one full), so a reload neither grants a burst of retries nor takes them away.
    ///
    /// A bucket of 0 (`max_tokens = 0`: retries turned off, say during an incident) holds
    /// nothing, so it is empty: given a size again, it starts empty and successes refill it.
    /// Retries come back as the dependency proves healthy, never as a burst on the first
    /// reload after the incident.
    ///
    /// A success refunded by another thread at the moment of the change may leave the bucket
    /// up to one refund above the new size until the next failure; [`tokens`](Self::tokens)
    /// never reports more than `max_tokens`.
    pub fn set_settings(&self, settings: BudgetSettings) {
        let words = settings.words();
        self.settings.write(|old| {
            let (from, to) = (old[MAX], words[MAX]);
            // Inside the write, so that two reloads scale in the order they change the size.
            let _ = self
                .tokens
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    Some(scale(t, from, to))
                });
            *old = words;
        });
        self.listing.publish_settings(self.settings());
        self.publish();
    }
}

/// `tokens` out of `from`, as the same share of `to` (a bucket of 0 is empty: it holds nothing).
fn scale(tokens: u64, from: u64, to: u64) -> u64 {
    if from == 0 {
        return 0;
    }
    let scaled = u128::from(tokens.min(from)) * u128::from(to) / u128::from(from);
    // `scaled <= to`, a `u64`.
    u64::try_from(scaled).unwrap_or(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_keeps_the_share_and_never_overflows() {
        assert_eq!(scale(6, 10, 20), 12);
        assert_eq!(scale(0, 10, 20), 0);
        assert_eq!(scale(10, 10, 3), 3);
        assert_eq!(scale(0, 0, 7), 0, "a bucket of 0 is empty");
        assert_eq!(scale(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(
            scale(15, 10, 20),
            20,
            "tokens above the old size count as full"
        );
    }
}
