//! [`snapshot`]: every named breaker and budget that has been used, and every live
//! [`PerKey`](crate::PerKey) entry with its key, with its state: for a health or admin
//! endpoint (`Serialize` with the `serde` feature).
//!
//! # How things get listed
//!
//! A breaker or budget given a [`name`](crate::CircuitBreaker::name) is enlisted by its first
//! call: its hot path checks one flag with a relaxed load, and the first call through a named
//! one takes the registry's lock once to add it. The registry does not point at the breaker
//! itself (a breaker may live on the stack or in an `Arc` and move or go away, where a pointer
//! to it would dangle); the breaker keeps a small record of its own that the registry shares
//! (`Arc`/`Weak`), and updates it where it changes state: on its slow paths, never on a closed
//! breaker's success; for a budget, when its tokens change. When the breaker goes away its
//! record does too, and the registry forgets it.
//!
//! Tables of entries ([`PerKey`](crate::PerKey)) list their live entries themselves, with their
//! keys, through a crate-private trait.

use crate::CircuitState;
use crate::breaker::BreakerSettings;
#[cfg(doc)]
use crate::breaker::CircuitBreaker;
use crate::budget::BudgetSettings;
#[cfg(doc)]
use crate::budget::RetryBudget;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
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
/// record, or a table of entries (a `PerKey`), which lists each live entry with its key
/// (`CircuitBreaker::status`, `RetryBudget::status`).
pub(crate) trait Listed: Send + Sync {
    /// Call `out` once for every breaker and budget this lists, as it is now.
    fn list(&self, out: &mut dyn FnMut(Item));
}

/// Add `list` to what [`snapshot`] lists, for as long as the program runs (a `static`).
#[allow(dead_code)] // For `PerKey` tables reached as `&'static`.
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

/// A named breaker's record: its state word, the end of its cool-down and its settings, as the
/// breaker last published them.
pub(crate) struct BreakerRecord {
    name: &'static str,
    word: AtomicU64,
    until: AtomicI64,
    settings: Mutex<BreakerSettings>,
}

impl BreakerRecord {
    /// The record of the breaker named `name`, enlisted.
    pub(crate) fn enlisted(name: &'static str, settings: BreakerSettings) -> Arc<Self> {
        let record = Arc::new(BreakerRecord {
            name,
            word: AtomicU64::new(0),
            until: AtomicI64::new(0),
            settings: Mutex::new(settings),
        });
        let weak: Weak<BreakerRecord> = Arc::downgrade(&record);
        enlist(weak);
        record
    }

    /// Copy the breaker's state word and cool-down end, as `read` gives them, so that the copy
    /// ends equal to the breaker's last state even when two threads publish at once: each
    /// checks after its store that the state did not move, and stores again if it did (the
    /// last change's own publish, or this loop, stores last).
    pub(crate) fn follow(&self, read: impl Fn() -> (u64, i64)) {
        loop {
            let (word, until) = read();
            self.word.store(word, Ordering::SeqCst);
            self.until.store(until, Ordering::SeqCst);
            if read() == (word, until) {
                return;
            }
        }
    }

    /// The settings, as last set.
    pub(crate) fn set_settings(&self, settings: BreakerSettings) {
        *self.settings.lock().unwrap_or_else(PoisonError::into_inner) = settings;
    }
}

impl Listed for BreakerRecord {
    fn list(&self, out: &mut dyn FnMut(Item)) {
        let settings = *self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        out(Item::Breaker(crate::breaker::status_of(
            Some(self.name),
            None,
            self.word.load(Ordering::SeqCst),
            self.until.load(Ordering::SeqCst),
            settings,
        )));
    }
}

/// A named budget's record: its tokens and settings, as the budget last published them.
pub(crate) struct BudgetRecord {
    name: &'static str,
    tokens: AtomicU64,
    settings: Mutex<BudgetSettings>,
}

impl BudgetRecord {
    /// The record of the budget named `name`, enlisted.
    pub(crate) fn enlisted(name: &'static str, settings: BudgetSettings) -> Arc<Self> {
        let record = Arc::new(BudgetRecord {
            name,
            tokens: AtomicU64::new(0),
            settings: Mutex::new(settings),
        });
        let weak: Weak<BudgetRecord> = Arc::downgrade(&record);
        enlist(weak);
        record
    }

    /// Copy the budget's tokens, as `read` gives them (see [`BreakerRecord::follow`]).
    pub(crate) fn follow(&self, read: impl Fn() -> u64) {
        loop {
            let tokens = read();
            self.tokens.store(tokens, Ordering::SeqCst);
            if read() == tokens {
                return;
            }
        }
    }

    /// The settings, as last set.
    pub(crate) fn set_settings(&self, settings: BudgetSettings) {
        *self.settings.lock().unwrap_or_else(PoisonError::into_inner) = settings;
    }
}

impl Listed for BudgetRecord {
    fn list(&self, out: &mut dyn FnMut(Item)) {
        let settings = *self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        out(Item::Budget(crate::budget::status_of(
            Some(self.name),
            None,
            self.tokens.load(Ordering::SeqCst),
            settings,
        )));
    }
}
