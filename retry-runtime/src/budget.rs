//! [`RetryBudget`]: a shared bound on how much retrying all callers of a dependency do together,
//! by gRPC's retry-throttling rule.

use crate::listing::Listing;
use crate::seqlock::Seqlock;
use crate::sync::{AtomicU32, AtomicU64, Ordering, const_unless_loom};
use crate::tenancy::Tenancy;
use std::fmt;
use std::sync::Arc;

mod listing;
mod reconfigure;

pub use listing::BudgetStatus;
pub use reconfigure::BudgetSettings;
use reconfigure::{MAX, RATIO};

/// Tokens are kept in millionths, so a fractional `token_ratio` is refunded exactly.
const UNIT: u64 = 1_000_000;

/// A token bucket shared by every call that names it (typically a `static`) that lets retries
/// through only while recent calls mostly succeed: gRPC's retry throttling.
///
/// The rule, exactly:
///
/// - the bucket starts full, at `max_tokens`;
/// - every failed attempt of a retryable class (transient or idempotent-only, timeouts
///   included) takes 1 token, down to 0; whether or not it is then retried;
/// - every successful attempt puts back `token_ratio` tokens, up to `max_tokens`;
/// - a permanent error neither takes nor refunds: it is an answer, but not a success;
/// - a **retry** may start only while the tokens exceed `max_tokens / 2` (strictly). First
///   attempts are never refused: the budget bounds the extra load retries add, not the
///   callers' own traffic.
///
/// The bound this gives: while every attempt fails, at most `⌈max_tokens / 2⌉ − 1` retries
/// start in total, across all callers and threads, before retries stop (each retry's check
/// comes after the failure it repeats took its token, and the count only falls). After
/// recovery, successes refill the bucket and retries resume once it is above half again:
/// with `token_ratio` r, that takes about `1 / r` successes per missing token.
///
/// **Fractional ratios** are exact to a millionth of a token: `token_ratio` is rounded to six
/// decimal places (so anything below 0.0000005 refunds nothing) and tokens are integers of
/// millionths in one atomic. A ratio of 0.6 refunds 0.6 tokens per success, so ten successes
/// refund 6 tokens, not 10; a ratio above 1 refunds more than a failure costs. (Budgets that
/// turn the ratio into "one token per ⌊1/r⌋ successes" over-grant for every ratio whose
/// reciprocal is not a whole number.) Negative or NaN ratios mean 0; `max_tokens` 0 refuses
/// every retry.
///
/// Lock-free: a check is one atomic load, a failure or success one compare-and-swap loop, and a
/// success on a full bucket is a load only.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify, RetryBudget, testing};
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Unavailable;
///
/// // 10 tokens; each success refunds 0.1.
/// static BACKEND: RetryBudget = RetryBudget::new(10, 0.1);
///
/// #[retryable(attempts = 3, base = "10ms", budget = BACKEND)]
/// fn fetch(attempts: &mut u32) -> Result<(), Unavailable> {
///     *attempts += 1;
///     Err(Unavailable)
/// }
///
/// let mut attempts = 0;
/// testing::record_sleeps(|| {
///     for _ in 0..5 {
///         let _ = fetch(&mut attempts);
///     }
/// });
/// // The first call retries twice (10 → 9 → 8 → 7 tokens). The second gets one retry
/// // (7 → 6 → 5); from then on the bucket is at or below half and calls make one attempt.
/// assert_eq!(attempts, 3 + 2 + 1 + 1 + 1);
/// assert_eq!(BACKEND.tokens(), 2.0);
/// assert!(!BACKEND.allows_retry());
/// ```
///
/// One budget per host, partition or tenant: a [`PerKey<RetryBudget>`](crate::PerKey), each
/// entry a full copy of the template. A table keeps a bounded number of keys; when it is full,
/// a new key takes the place of a full budget first, and only when there is none of the
/// least recently used one, whose spent tokens are then forgotten: that key starts again
/// with a full budget when it comes back.
pub struct RetryBudget {
    /// `max_tokens` and `token_ratio`, in millionths of a token, replaceable while the budget
    /// runs ([`set_settings`](Self::set_settings)).
    settings: Seqlock<2>,
    tokens: AtomicU64,
    /// A name for labels and logs.
    name: Option<&'static str>,
    /// Which key a `PerKey` entry serves now, and its text; a budget of its own is never reset.
    tenancy: Tenancy,
    /// Its place in the [`registry`](crate::registry): a named budget is enlisted by its first
    /// use.
    listing: Listing<RetryBudget>,
}

impl RetryBudget {
    const_unless_loom! {
        /// A full bucket of `max_tokens`, refunding `token_ratio` tokens per success.
        pub const fn new(max_tokens: u32, token_ratio: f64) -> Self {
            let words = BudgetSettings::new(max_tokens, token_ratio).words();
            RetryBudget {
                settings: Seqlock::new(words),
                tokens: AtomicU64::new(words[MAX]),
                name: None,
                tenancy: Tenancy::own(),
                listing: Listing::new(false),
            }
        }
    }

    const_unless_loom! {
        /// Name the budget, for labels and logs, and for the [`registry`](crate::registry): a
        /// named budget is listed by [`registry::snapshot`](crate::registry::snapshot) once used.
        ///
        /// ```
        /// # extern crate retry_runtime as retry_kit;
        /// use retry_kit::RetryBudget;
        ///
        /// static PAYMENTS: RetryBudget = RetryBudget::new(100, 0.1).name("payments");
        /// assert_eq!(PAYMENTS.label(), Some("payments"));
        /// ```
        pub const fn name(mut self, name: &'static str) -> Self {
            self.name = Some(name);
            // Enlisted in the registry by its first use.
            self.listing.pending = AtomicU32::new(0);
            self
        }
    }

    /// The name given by [`name`](Self::name), if any.
    pub const fn label(&self) -> Option<&'static str> {
        self.name
    }

    /// A full bucket with this one's settings, as an entry of a [`PerKey`](crate::PerKey)
    /// labelled `key`.
    pub(crate) fn entry_copy(&self, key: Option<Box<str>>) -> Self {
        let words = self.settings.read();
        RetryBudget {
            settings: Seqlock::new(words),
            tokens: AtomicU64::new(words[MAX]),
            name: self.name,
            tenancy: Tenancy::leased(key),
            // The table it belongs to lists it, with its key.
            listing: Listing::new(false),
        }
    }

    /// Give this `PerKey` entry to another key: the calls that leased it for the old one
    /// charge and refund nothing from now on, and it starts full, labelled `key`. Called with
    /// the table's insertion lock held.
    pub(crate) fn recycle(&self, key: Option<Box<str>>) {
        self.tenancy.end(key, || {
            self.tokens
                .store(self.settings.word(MAX), Ordering::Relaxed);
        });
        self.publish();
    }

    /// Label this `PerKey` entry with `key` if it still serves the key a lease taken under
    /// `tenancy` was for (see `Tenancy::label_late`).
    pub(crate) fn relabel(&self, tenancy: u32, key: Box<str>) -> bool {
        self.tenancy.label_late(tenancy, key)
    }

    /// The tenancy a call that leases this budget now holds it under.
    #[inline]
    pub(crate) fn tenancy(&self) -> u32 {
        self.tenancy.current()
    }

    /// A `PerKey` entry's key, as text, when the code that made the entry knew it (see
    /// [`CircuitBreaker::key`](crate::CircuitBreaker::key)); `None` for a budget of its own.
    ///
    /// An entry keeps its place in the table only while its key does: when a full table gives
    /// the place to another key, the entry is reset in place and this names the new key.
    pub fn key(&self) -> Option<Arc<str>> {
        self.tenancy.key()
    }

    /// Whether the bucket is full: it has nothing to remember (a `PerKey` table gives such a
    /// place away first).
    pub(crate) fn is_idle(&self) -> bool {
        self.tokens.load(Ordering::Relaxed) >= self.settings.word(MAX)
    }

    /// Whether a retry may start now: the tokens exceed half of `max_tokens`.
    #[inline]
    pub fn allows_retry(&self) -> bool {
        // `saturating_mul`: tokens are at most `u32::MAX` millions, but a budget shrunk while
        // another thread refunded may hold a few more for a moment.
        self.tokens.load(Ordering::Relaxed).saturating_mul(2) > self.settings.word(MAX)
    }

    /// Take one token for a failed attempt of a retryable class (none below 0).
    #[inline]
    pub fn record_failure(&self) {
        self.charge(self.tenancy.current());
    }

    /// Put back `token_ratio` tokens for a successful attempt (none above `max_tokens`).
    #[inline]
    pub fn record_success(&self) {
        self.refund(self.tenancy.current());
    }

    /// [`record_failure`](Self::record_failure) for a call that leased this budget under
    /// `tenancy`: nothing if the entry has served another key since.
    #[inline]
    pub(crate) fn charge(&self, tenancy: u32) {
        if self.listing.pending() {
            self.enlist();
        }
        let taken = self.tenancy.write(tenancy, || {
            self.tokens
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    (t != 0).then(|| t.saturating_sub(UNIT))
                })
                .is_ok()
        });
        if taken == Some(true) {
            self.publish();
        }
    }

    /// [`record_success`](Self::record_success) for a call that leased this budget under
    /// `tenancy`: nothing if the entry has served another key since.
    #[inline]
    pub(crate) fn refund(&self, tenancy: u32) {
        if self.listing.pending() {
            self.enlist();
        }
        let (ratio, max) = (self.settings.word(RATIO), self.settings.word(MAX));
        if ratio == 0 || self.tokens.load(Ordering::Relaxed) >= max {
            return;
        }
        let refunded = self.tenancy.write(tenancy, || {
            self.tokens
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    (t < max).then(|| t.saturating_add(ratio).min(max))
                })
                .is_ok()
        });
        if refunded == Some(true) {
            self.publish();
        }
    }

    /// Enlist a named budget in the registry, at its first use.
    #[cold]
    fn enlist(&self) {
        self.listing
            .enlist(self.name, || self.settings(), || [self.raw_tokens(), 0]);
    }

    /// Copy the tokens to the registry's record, if this budget has one.
    #[inline]
    fn publish(&self) {
        self.listing.publish(|| [self.raw_tokens(), 0]);
    }

    /// The tokens as stored, in millionths.
    pub(crate) fn raw_tokens(&self) -> u64 {
        self.tokens.load(Ordering::SeqCst)
    }

    /// The tokens in the bucket now, to six decimal places.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryBudget;
    ///
    /// let budget = RetryBudget::new(10, 0.6);
    /// for _ in 0..10 {
    ///     budget.record_failure();
    /// }
    /// assert_eq!(budget.tokens(), 0.0);
    /// for _ in 0..10 {
    ///     budget.record_success();
    /// }
    /// // Ten successes at 0.6 refund exactly 6 tokens: retries resume above 5.
    /// assert_eq!(budget.tokens(), 6.0);
    /// assert!(budget.allows_retry());
    /// ```
    pub fn tokens(&self) -> f64 {
        let max = self.settings.word(MAX);
        self.tokens.load(Ordering::Relaxed).min(max) as f64 / UNIT as f64
    }

    /// The size of the bucket.
    pub fn max_tokens(&self) -> u32 {
        (self.settings.word(MAX) / UNIT) as u32
    }

    /// The tokens refunded per success, as kept (rounded to six decimal places).
    pub fn token_ratio(&self) -> f64 {
        self.settings.word(RATIO) as f64 / UNIT as f64
    }
}

/// The fleet's hook (feature `redis`): a [`FleetBudget`](crate::fleet::FleetBudget)'s exchange
/// sets its local bucket to the fleet's tokens, keeping what calls did meanwhile. (Also under
/// `--cfg loom`, for the model below.)
#[cfg(any(feature = "redis", loom))]
#[cfg_attr(all(loom, not(feature = "redis")), allow(dead_code))]
impl RetryBudget {
    /// Set the tokens to `fleet` plus whatever calls charged or refunded since the exchange
    /// read `seen` (its push), within `0..=max_tokens`; the tokens now.
    pub(crate) fn rebase(&self, seen: u64, fleet: u64) -> u64 {
        let max = self.settings.word(MAX);
        let mut now = 0;
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                let moved = i128::from(t) - i128::from(seen);
                let next = (i128::from(fleet.min(max)) + moved).clamp(0, i128::from(max));
                // Within `0..=max`, a `u64`.
                now = u64::try_from(next).unwrap_or(max);
                Some(now)
            });
        self.publish();
        now
    }

    /// The size of the bucket in millionths of a token, as the tokens are kept.
    pub(crate) fn raw_max(&self) -> u64 {
        self.settings.word(MAX)
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("name", &self.name)
            .field("tokens", &self.tokens())
            .field("max_tokens", &self.max_tokens())
            .field("token_ratio", &self.token_ratio())
            .finish()
    }
}

/// loom model of the fleet's rebase beside a call (crate-private, so here; run as
/// `tests/loom.rs` says, with `--lib loom_models`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::thread;

    /// An exchange read 10 tokens for its push, the fleet answered 6, and a call charged a
    /// failure meanwhile: whichever comes first, the bucket ends at 5 (the fleet's 6, less the
    /// failure the push did not carry). A rebase that stored the fleet's count over the
    /// charge would leave 6; one that lost the race to it, 9.
    #[test]
    fn a_charge_beside_a_rebase_is_never_lost() {
        loom::model(|| {
            let budget = std::sync::Arc::new(RetryBudget::new(10, 0.5));
            let seen = budget.raw_tokens();
            let other = std::sync::Arc::clone(&budget);
            let call = thread::spawn(move || other.record_failure());
            budget.rebase(seen, 6 * UNIT);
            call.join().unwrap();
            assert_eq!(budget.tokens(), 5.0);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_kept_to_six_places() {
        let ratio = |r| RetryBudget::new(1, r).settings.word(RATIO);
        assert_eq!(ratio(0.6), 600_000);
        assert_eq!(ratio(0.1234567), 123_457);
        assert_eq!(ratio(0.0000004), 0);
        assert_eq!(ratio(-1.0), 0);
        assert_eq!(ratio(f64::NAN), 0);
        assert_eq!(ratio(f64::INFINITY), u64::MAX);
    }

    #[test]
    fn extreme_settings_saturate() {
        let b = RetryBudget::new(u32::MAX, f64::INFINITY);
        b.record_failure();
        b.record_success();
        assert_eq!(b.tokens(), f64::from(u32::MAX));
        let empty = RetryBudget::new(0, 1.0);
        empty.record_failure();
        empty.record_success();
        assert!(!empty.allows_retry());
    }
}
