//! The lists [`registry::snapshot`](crate::registry::snapshot) reads: one for breakers and one
//! for budgets (each kept by its own module), holding a named breaker's or budget's record
//! ([`Listing`]) and every live `PerKey` entry ([`enlist_entry`]).
//!
//! Below the breaker and the budget, so that they enlist themselves without importing the
//! registry, which reads them (observers import what they observe).

use crate::sync::{AtomicU32, const_unless_loom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

/// Something that lists breakers or budgets as `S` (their status): a named one's record, a
/// `PerKey` entry (a breaker or budget lists itself, with its key).
pub(crate) trait Listed<S>: Send + Sync {
    /// Call `out` once for every breaker or budget this lists, as it is now.
    fn list(&self, out: &mut dyn FnMut(S));
}

/// Everything enlisted of one kind, listed as `S`. A `static` of the breaker's module and one
/// of the budget's; taken only to enlist (once per named breaker or budget, once per `PerKey`
/// entry) and to list.
pub(crate) struct Lists<S: 'static> {
    lists: Mutex<Vec<Enlisted<S>>>,
}

enum Enlisted<S: 'static> {
    Static(&'static dyn Listed<S>),
    Shared(Weak<dyn Listed<S>>),
}

impl<S: 'static> Lists<S> {
    pub(crate) const fn new() -> Self {
        Lists {
            lists: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Enlisted<S>>> {
        // A panic while listing leaves the list as it was: a poisoned lock is still usable.
        self.lists.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Add `list`, for as long as it lives: a `Weak`, forgotten once it is dropped.
    pub(crate) fn enlist(&self, list: Weak<dyn Listed<S>>) {
        let mut lists = self.lock();
        // Forget what went away, at most once per doubling, so enlisting stays cheap.
        if lists.len() == lists.capacity() {
            lists.retain(|listed| match listed {
                Enlisted::Static(_) => true,
                Enlisted::Shared(list) => list.strong_count() > 0,
            });
        }
        lists.push(Enlisted::Shared(list));
    }

    /// Add `list` for as long as the program runs: a table of entries reached as `&'static`
    /// that lists its own live entries.
    #[allow(dead_code)] // An alternative to `enlist_entry` for a `PerKey` that lists its table.
    pub(crate) fn enlist_static(&self, list: &'static dyn Listed<S>) {
        self.lock().push(Enlisted::Static(list));
    }

    /// Everything listed now, forgetting what went away.
    pub(crate) fn collect(&self) -> Vec<S> {
        let mut out = Vec::new();
        let mut add = |status: S| out.push(status);
        self.lock().retain(|listed| match listed {
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
        out
    }
}

/// A breaker or budget as the lists know it: its kind's list, its settings, and its status
/// from the state words a record copies.
pub(crate) trait Recorded: 'static {
    /// The settings, as a value.
    type Settings: Copy + Send + 'static;
    /// What a snapshot lists of one.
    type Status: 'static;
    /// The list of this kind.
    fn lists() -> &'static Lists<Self::Status>;
    /// The status of the breaker or budget named `name` whose state words are `raw`.
    fn listed(name: &'static str, raw: [u64; 2], settings: Self::Settings) -> Self::Status;
}

/// List a `PerKey` entry, with its key, for as long as it lives: in its table, or held by a
/// call under way after the table gave its place away. What a table calls when it makes an
/// entry (once per place: an entry given to another key in place stays listed, under its new
/// key); a `Weak`, so the table keeps sole charge of its entries and they drop out with it.
pub(crate) fn enlist_entry<T: Recorded + Listed<T::Status>>(entry: &Arc<T>) {
    let weak: Weak<T> = Arc::downgrade(entry);
    T::lists().enlist(weak);
}

/// A breaker's or budget's place in its list: whether its first use is still to enlist it, and
/// its record once enlisted.
pub(crate) struct Listing<T: Recorded> {
    /// 0 until a named breaker's or budget's first use enlists it; 1 after, and for those that
    /// are not enlisted (unnamed, or a `PerKey`'s entries, which their table lists). Set to 0
    /// by the `const fn` that names one, as `AtomicU32::new(0)`: replacing the whole listing
    /// there would drop its record, which a `const fn` cannot.
    pub(crate) pending: AtomicU32,
    record: OnceLock<Arc<Record<T>>>,
}

impl<T: Recorded> Listing<T> {
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

/// A named breaker's or budget's record: its state words (a breaker's state word and the end
/// of its cool-down, a budget's tokens) and its settings, as it last published them.
struct Record<T: Recorded> {
    name: &'static str,
    raw: [AtomicU64; 2],
    settings: Mutex<T::Settings>,
}

impl<T: Recorded> Record<T> {
    /// The record of the breaker or budget named `name`, enlisted.
    fn enlisted(name: &'static str, settings: T::Settings) -> Arc<Self> {
        let record = Arc::new(Record::<T> {
            name,
            raw: [AtomicU64::new(0), AtomicU64::new(0)],
            settings: Mutex::new(settings),
        });
        let weak: Weak<Record<T>> = Arc::downgrade(&record);
        T::lists().enlist(weak);
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

impl<T: Recorded> Listed<T::Status> for Record<T> {
    fn list(&self, out: &mut dyn FnMut(T::Status)) {
        let settings = *self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        let raw = [
            self.raw[0].load(Ordering::SeqCst),
            self.raw[1].load(Ordering::SeqCst),
        ];
        out(T::listed(self.name, raw, settings));
    }
}
