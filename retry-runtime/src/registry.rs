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
//! The entries of a [`PerKey`](crate::PerKey) are listed with their keys while they live
//! (through a crate-private trait, `Listed`, that the entries implement).

use crate::CircuitState;
use crate::breaker::{BreakerSettings, CircuitBreaker};
use crate::budget::{BudgetSettings, RetryBudget};
use crate::sync::{AtomicU32, const_unless_loom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

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
        breakers: Vec::new(),
        budgets: Vec::new(),
    };
    let mut add = |item: Item| match item {
        Item::Breaker(b) => now.breakers.push(b),
        Item::Budget(b) => now.budgets.push(b),
    };
    let mut lists = lists();
    lists.retain(|listed| match listed {
        Enlisted::Static(list) => {
            list.list(&mut add);
            true
        }
        Enlisted::Shared(list) => match list.upgrade() {
            Some(list) => {
                list.list(&mut add);
                true
            }
            None => false,
        },
    });
    drop(lists);
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

/// One breaker in a [`Snapshot`], or [`CircuitBreaker::status`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BreakerStatus {
    /// Its [`name`](CircuitBreaker::name) (a `PerKey` entry's is its template's).
    pub name: Option<&'static str>,
    /// A `PerKey` entry's key, as text, where it is known ([`CircuitBreaker::key`]).
    pub key: Option<String>,
    /// What the next call would find: an open breaker whose cool-down is over is `HalfOpen`.
    pub state: CircuitState,
    /// While open: how long until it admits a probe.
    pub retry_after: Option<Duration>,
    /// Its settings.
    pub settings: BreakerSettings,
}

/// One budget in a [`Snapshot`], or [`RetryBudget::status`].
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

/// One thing a [`Listed`] lists.
pub(crate) enum Item {
    Breaker(BreakerStatus),
    Budget(BudgetStatus),
}

/// Something that lists breakers and budgets for [`snapshot`]: a named breaker's or budget's
/// record, a `PerKey` entry (a breaker or budget lists itself, with its key), or a whole table
/// of entries.
pub(crate) trait Listed: Send + Sync {
    /// Call `out` once for every breaker and budget this lists, as it is now.
    fn list(&self, out: &mut dyn FnMut(Item));
}

/// A breaker lists itself: how a `PerKey` entry is listed ([`enlist_entry`]).
impl Listed for CircuitBreaker {
    fn list(&self, out: &mut dyn FnMut(Item)) {
        out(Item::Breaker(self.status()));
    }
}

/// A budget lists itself: how a `PerKey` entry is listed ([`enlist_entry`]).
impl Listed for RetryBudget {
    fn list(&self, out: &mut dyn FnMut(Item)) {
        out(Item::Budget(self.status()));
    }
}

/// Add a `PerKey` entry to what [`snapshot`] lists, with its key (`CircuitBreaker::key`,
/// `RetryBudget::key`), for as long as it lives: in its table, or held by a call under way
/// after the table gave its place away. What a table calls when it makes an entry (once per
/// place: an entry given to another key in place stays listed, under its new key); a `Weak`,
/// so the table keeps sole charge of its entries and they drop out with it.
pub(crate) fn enlist_entry<T: Listed + 'static>(entry: &Arc<T>) {
    let weak: Weak<T> = Arc::downgrade(entry);
    enlist(weak);
}

/// Add `list` to what [`snapshot`] lists, for as long as the program runs: a table of entries
/// reached as `&'static` that lists its own live entries.
#[allow(dead_code)] // An alternative to `enlist_entry` for a `PerKey` that lists its table.
pub(crate) fn enlist_static(list: &'static dyn Listed) {
    lists().push(Enlisted::Static(list));
}

/// Add `list` to what [`snapshot`] lists, for as long as it lives: the registry keeps a
/// `Weak`, and forgets it once it is dropped.
pub(crate) fn enlist(list: Weak<dyn Listed>) {
    let mut lists = lists();
    // Forget what went away, at most once per doubling, so enlisting stays cheap.
    if lists.len() == lists.capacity() {
        lists.retain(|listed| match listed {
            Enlisted::Static(_) => true,
            Enlisted::Shared(list) => list.strong_count() > 0,
        });
    }
    lists.push(Enlisted::Shared(list));
}

enum Enlisted {
    Static(&'static dyn Listed),
    Shared(Weak<dyn Listed>),
}

/// Everything enlisted. Taken only to enlist (once per named breaker or budget) and to list.
fn lists() -> std::sync::MutexGuard<'static, Vec<Enlisted>> {
    static LISTS: Mutex<Vec<Enlisted>> = Mutex::new(Vec::new());
    // A panic while listing leaves the list as it was: a poisoned lock is still usable.
    LISTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A breaker's or budget's place in the registry: whether its first use is still to enlist
/// it, and its record once enlisted.
pub(crate) struct Listing<T: Recorded> {
    /// 0 until a named breaker's or budget's first use enlists it; 1 after, and for those that
    /// are not enlisted (unnamed, or a `PerKey`'s entries, which their table lists). Set to 0
    /// by the `const fn` that names one, as `AtomicU32::new(0)`: replacing the whole listing
    /// there would drop its record, which a `const fn` cannot.
    pub(crate) pending: AtomicU32,
    record: OnceLock<Arc<Record<T>>>,
}

impl<T: Recorded + 'static> Listing<T> {
    const_unless_loom! {
        /// To be enlisted at the first use (a named breaker or budget), or never.
        pub(crate) const fn new(at_first_use: bool) -> Self {
            Listing {
                pending: AtomicU32::new(if at_first_use { 0 } else { 1 }),
                record: OnceLock::new(),
            }
        }
    }

    /// Whether the first use is still to enlist it: one relaxed load, for the hot path.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(crate::sync::Ordering::Relaxed) == 0
    }

    /// Enlist the breaker or budget named `name` (nothing without a name), with its settings
    /// and state words now.
    #[cold]
    pub(crate) fn enlist(
        &self,
        name: Option<&'static str>,
        settings: impl FnOnce() -> T::Settings,
        raw: impl Fn() -> [u64; 2],
    ) {
        #[cfg(not(loom))]
        if let Some(name) = name {
            self.record
                .get_or_init(|| Record::enlisted(name, settings()));
            self.publish(raw);
        }
        #[cfg(loom)]
        let _ = (name, settings, raw);
        self.pending.store(1, crate::sync::Ordering::Relaxed);
    }

    /// Copy the state words, as `raw` gives them, to the record, if there is one: after every
    /// change of state worth listing.
    #[inline]
    pub(crate) fn publish(&self, raw: impl Fn() -> [u64; 2]) {
        if let Some(record) = self.record.get() {
            record.follow(raw);
        }
    }

    /// Copy new settings to the record, if there is one.
    pub(crate) fn publish_settings(&self, settings: T::Settings) {
        if let Some(record) = self.record.get() {
            record.set_settings(settings);
        }
    }
}

/// What a record copies of a breaker or a budget, and how it lists the copy.
pub(crate) trait Recorded {
    /// The settings, as a value.
    type Settings: Copy + Send + 'static;
    /// The status of the breaker or budget named `name` whose state words are `raw`.
    fn listed(name: &'static str, raw: [u64; 2], settings: Self::Settings) -> Item;
}

/// A named breaker's or budget's record: its state words (a breaker's state word and the end
/// of its cool-down, a budget's tokens) and its settings, as it last published them.
struct Record<T: Recorded> {
    name: &'static str,
    raw: [AtomicU64; 2],
    settings: Mutex<T::Settings>,
}

impl<T: Recorded + 'static> Record<T> {
    /// The record of the breaker or budget named `name`, enlisted.
    fn enlisted(name: &'static str, settings: T::Settings) -> Arc<Self> {
        let record = Arc::new(Record::<T> {
            name,
            raw: [AtomicU64::new(0), AtomicU64::new(0)],
            settings: Mutex::new(settings),
        });
        let weak: Weak<Record<T>> = Arc::downgrade(&record);
        enlist(weak);
        record
    }

    /// Copy the state words, as `read` gives them, so that the copy ends equal to the last
    /// state even when two threads publish at once: each checks after its stores that the
    /// state did not move, and stores again if it did (so the last change's own publish, or
    /// this loop, stores last).
    fn follow(&self, read: impl Fn() -> [u64; 2]) {
        loop {
            let raw = read();
            for (copy, value) in self.raw.iter().zip(raw) {
                copy.store(value, Ordering::SeqCst);
            }
            if read() == raw {
                return;
            }
        }
    }

    /// The settings, as last set.
    fn set_settings(&self, settings: T::Settings) {
        *self.settings.lock().unwrap_or_else(PoisonError::into_inner) = settings;
    }
}

impl<T: Recorded> Listed for Record<T> {
    fn list(&self, out: &mut dyn FnMut(Item)) {
        let settings = *self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        let raw = [
            self.raw[0].load(Ordering::SeqCst),
            self.raw[1].load(Ordering::SeqCst),
        ];
        out(T::listed(self.name, raw, settings));
    }
}

impl Recorded for CircuitBreaker {
    type Settings = BreakerSettings;
    fn listed(name: &'static str, [word, until]: [u64; 2], settings: BreakerSettings) -> Item {
        // `until` is an `i64` of ticks, kept bit for bit.
        let until = until as i64;
        Item::Breaker(crate::breaker::status_of(
            Some(name),
            None,
            word,
            until,
            settings,
        ))
    }
}

impl Recorded for RetryBudget {
    type Settings = BudgetSettings;
    fn listed(name: &'static str, [tokens, _]: [u64; 2], settings: BudgetSettings) -> Item {
        Item::Budget(crate::budget::status_of(Some(name), None, tokens, settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
