//! [`Tenancy`]: which key a [`PerKey`](crate::PerKey) entry serves now, so that a call that
//! looked the entry up for an earlier key records nothing into the key that has it since.
//!
//! A `PerKey` keeps its breakers and budgets in place for as long as the table lives: a lookup
//! of a live key is a few atomic loads, with nothing reference-counted, and a full table gives
//! an entry to a new key by resetting it in place. A call holds the entry (a
//! [`Lease`](crate::per_key::Lease)) with the tenancy it saw; every write the call makes to the
//! entry's counters goes through [`Tenancy::write`], which refuses a lapsed tenancy, and the
//! reset waits until the writes already let in are done ([`Tenancy::end`]), so that clearing
//! the counters for the new key comes after them. A breaker or budget of its own (a `static`)
//! is never reset: its writes skip all of this.

use crate::sync::{AtomicU32, Mutex, Ordering, const_unless_loom, wait_a_turn};
use std::sync::Arc;

/// The tenancy of a breaker or budget: a counter of the keys it has served, and the writes in
/// progress under the current one.
pub(crate) struct Tenancy {
    /// Made by a `PerKey` (reset in place when its key is replaced): writes are checked.
    leased: bool,
    /// The keys it has served (wrapping): a call's lease is current while this is unchanged.
    count: AtomicU32,
    /// Writes let in and not yet done.
    writers: AtomicU32,
    /// The key it serves, as text, when the code that made the entry knew it. Behind a lock:
    /// read only when the state changes or the registry lists it, and replaced with the key.
    key: Mutex<Option<Arc<str>>>,
}

impl Tenancy {
    const_unless_loom! {
        /// A breaker's or budget's own: never reset, nothing checked.
        pub(crate) const fn own() -> Tenancy {
            Tenancy {
                leased: false,
                count: AtomicU32::new(0),
                writers: AtomicU32::new(0),
                key: Mutex::new(None),
            }
        }
    }

    /// An entry of a `PerKey`, serving its first key, `key` as text if known.
    pub(crate) fn leased(key: Option<Box<str>>) -> Tenancy {
        Tenancy {
            leased: true,
            key: Mutex::new(key.map(Arc::from)),
            ..Tenancy::own()
        }
    }

    /// The key it serves, as text, if known.
    pub(crate) fn key(&self) -> Option<Arc<str>> {
        self.label().clone()
    }

    // loom's lock under `--cfg loom` (the models then see the order it gives the writes made
    // around it, as a std lock gives them), std's otherwise.
    fn label(&self) -> impl std::ops::DerefMut<Target = Option<Arc<str>>> + '_ {
        // Only ever replaced whole: a poisoned lock still holds a whole value.
        self.key
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Give an entry made without its key's text (by `PerKey::get`) the text `key`, if the
    /// lease taken under `tenancy` is still current (a reset for another key labels the entry
    /// itself, after ending the tenancy, under the same lock); whether it did, or already had a
    /// label for that key.
    pub(crate) fn label_late(&self, tenancy: u32, key: Box<str>) -> bool {
        let mut label = self.label();
        if !self.holds(tenancy) {
            return false;
        }
        if label.is_none() {
            *label = Some(Arc::from(key));
        }
        true
    }

    /// The current tenancy, for a lease taken now (always 0 for a breaker or budget of its
    /// own, whose count never moves: no branch on the hot path).
    #[inline]
    pub(crate) fn current(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    /// Whether a lease taken under `tenancy` is still current (a read, not a promise: a write
    /// must go through [`write`](Self::write)).
    #[inline]
    pub(crate) fn holds(&self, tenancy: u32) -> bool {
        self.count.load(Ordering::Acquire) == tenancy
    }

    /// Run `f`, a write to the counters, if a lease taken under `tenancy` is still current; a
    /// reset that starts meanwhile waits until `f` is done. `None` when the lease lapsed.
    ///
    /// `f` must not wait for anything (no hook, no lock): a reset spins while it runs.
    #[inline]
    pub(crate) fn write<R>(&self, tenancy: u32, f: impl FnOnce() -> R) -> Option<R> {
        if !self.leased {
            return Some(f());
        }
        self.guarded(tenancy, f)
    }

    #[cold]
    fn guarded<R>(&self, tenancy: u32, f: impl FnOnce() -> R) -> Option<R> {
        // Announce the write, then read the count with a read-modify-write, which reads the
        // latest count there is. If that is still `tenancy`, the reset's increment comes after
        // it and reads from it, so the announcement happens before the reset's look at the
        // writers, which then waits for this write; otherwise the write stays out. (Plain
        // loads, even SeqCst ones, would leave room for both sides to miss each other under
        // the acquire/release model loom checks.)
        self.writers.fetch_add(1, Ordering::AcqRel);
        let out = (self.count.fetch_add(0, Ordering::AcqRel) == tenancy).then(f);
        self.writers.fetch_sub(1, Ordering::Release);
        out
    }

    /// End the current tenancy and start the one of `key`: from now on, writes under the old
    /// one are refused; once the writes already let in are done, `reset` clears the counters
    /// for the next key, and the entry takes `key`'s label. Called with the table's insertion
    /// lock held, never inside a write.
    ///
    /// The reset and the new label are made together under the label's lock, which
    /// [`read`](Self::read) takes too: a snapshot sees the old key with the old state or the
    /// new key with fresh state, never the new key beside the state of the key it replaced.
    pub(crate) fn end(&self, key: Option<Box<str>>, reset: impl FnOnce()) {
        self.count.fetch_add(1, Ordering::AcqRel);
        let mut turn = 0u32;
        while self.writers.load(Ordering::Acquire) != 0 {
            wait_a_turn(turn);
            turn = turn.saturating_add(1);
        }
        // The load that saw no writer left read the last writer's release decrement (the
        // decrements form one release sequence): every write let in happens before the reset.
        let mut label = self.label();
        reset();
        *label = key.map(Arc::from);
    }

    /// `f` of the key this serves and what `f` reads of the state, with no reset for another
    /// key in between (see [`end`](Self::end)): how the registry lists a `PerKey` entry. A
    /// slow path: it takes the label's lock.
    pub(crate) fn read<R>(&self, f: impl FnOnce(Option<Arc<str>>) -> R) -> R {
        let label = self.label();
        f(label.clone())
    }
}
