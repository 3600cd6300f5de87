//! [`PerKey`]: one breaker or budget per key (a host, a partition, a tenant), so that one failing
//! host opens its own breaker and drains its own budget, not everyone's.

use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::listing::enlist_entry;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Mutex, Ordering, const_unless_loom};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

mod hashed;
mod index;
mod lease;
mod pick;
pub use hashed::HashedKey;
pub use lease::Lease;
pub use pick::{OneByKey, Pick, one_by_key, pick};

/// What a [`PerKey`] holds one of per key: a copy of its template, given to another key in
/// place when the table is full.
pub trait Template: Sized {
    /// A new entry with this one's settings and fresh state (a closed breaker, a full bucket),
    /// labelled with its key as text when the code that made it knew it (a breaker keeps it,
    /// see [`CircuitBreaker::key`]).
    fn entry(&self, key: Option<Box<str>>) -> Self;
    /// Whether this value has nothing a fresh one lacks (a closed breaker with no failure
    /// counted, a full bucket): forgetting it loses nothing.
    fn is_idle(&self) -> bool;
    /// Give this entry to another key: fresh state, labelled `key`; what calls that leased it
    /// for the old key record from now on is dropped.
    fn recycle(&self, key: Option<Box<str>>);
    /// The tenancy a call that leases this value now holds it under (see [`Lease`]).
    fn tenancy(&self) -> u32;
    /// Label an entry made without its key's text (by [`PerKey::get`]) with `key`, if it is
    /// still the entry of the lease taken under `tenancy`; whether it was.
    fn relabel(&self, tenancy: u32, key: Box<str>) -> bool;
    /// List a new entry in the [`registry`](crate::registry) for as long as it lives.
    fn enlist(entry: &Arc<Self>);
}

impl Template for CircuitBreaker {
    fn entry(&self, key: Option<Box<str>>) -> Self {
        self.entry_copy(key)
    }
    fn is_idle(&self) -> bool {
        CircuitBreaker::is_idle(self)
    }
    fn recycle(&self, key: Option<Box<str>>) {
        CircuitBreaker::recycle(self, key);
    }
    #[inline]
    fn tenancy(&self) -> u32 {
        CircuitBreaker::tenancy(self)
    }
    fn enlist(entry: &Arc<Self>) {
        enlist_entry(entry);
        // A new entry of a named template: its state series from its first use.
        #[cfg(feature = "metrics")]
        entry.first_used();
    }
    fn relabel(&self, tenancy: u32, key: Box<str>) -> bool {
        CircuitBreaker::relabel(self, tenancy, key)
    }
}

impl Template for RetryBudget {
    fn entry(&self, key: Option<Box<str>>) -> Self {
        self.entry_copy(key)
    }
    fn is_idle(&self) -> bool {
        RetryBudget::is_idle(self)
    }
    fn recycle(&self, key: Option<Box<str>>) {
        RetryBudget::recycle(self, key);
    }
    #[inline]
    fn tenancy(&self) -> u32 {
        RetryBudget::tenancy(self)
    }
    fn enlist(entry: &Arc<Self>) {
        enlist_entry(entry);
    }
    fn relabel(&self, tenancy: u32, key: Box<str>) -> bool {
        RetryBudget::relabel(self, tenancy, key)
    }
}

/// One place of the table: the hash of the key it serves (0: none, or being given to another
/// key), when it was last used, and its value, made the first time the place is taken and kept
/// until the table is dropped.
struct Slot<T> {
    hash: AtomicU64,
    used: AtomicU64,
    value: AtomicPtr<T>,
    /// 1 once the value is labelled with its key's text (0: made by `PerKey::get`, which
    /// knows no text; the next call that knows it gives it).
    labelled: AtomicU32,
}

impl<T> Slot<T> {
    const_unless_loom! {
        const fn empty() -> Self {
            Slot {
                hash: AtomicU64::new(0),
                used: AtomicU64::new(0),
                value: AtomicPtr::new(std::ptr::null_mut()),
                labelled: AtomicU32::new(0),
            }
        }
    }
}

/// One [`CircuitBreaker`] or [`RetryBudget`] per key, each a fresh copy of `template`, for at
/// most `N` keys (64 by default), so nothing grows without bound. When every place is taken, a
/// new key takes the place of the least recently used key with nothing to remember (a closed
/// breaker with no failures counted, a full budget), and only when there is none, of the least
/// recently used key. A key whose place was taken starts again from the template when it comes
/// back: its breaker closed, its budget full.
///
/// Const-constructible for a `static`. Looking up a key that has a place is a few atomic loads,
/// with no lock and nothing written while the table's keys stay the same: calls on many
/// threads through one table do not slow each other. Placing a new key takes a lock. Each place
/// keeps its value (made on the place's first use, one allocation) until the table is dropped,
/// and a new key is given a place by resetting its value in place. A call holds the value it
/// looked up as a [`Lease`]: if the key's place is given to another key while the call runs,
/// what the call records from then on is dropped, never counted for the other key.
///
/// Keys are told apart by a 64-bit hash (two keys whose hashes collide share a value; for `N`
/// keys in use the chance is about N² / 2⁶⁵). "Least recently used" is kept to the precision
/// of the table's insertions: a use ranks after every key placed before it, but uses between
/// two insertions are not ordered among themselves (so that a hit writes nothing once marked).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, CircuitBreaker, CircuitOpen, CircuitState, Classify, PerKey};
/// use std::time::Duration;
///
/// static HOSTS: PerKey<CircuitBreaker> =
///     PerKey::new(CircuitBreaker::new(2, Duration::from_secs(30)));
///
/// #[derive(Debug, Classify)]
/// enum FetchError {
///     #[classify(transient)]
///     Refused,
///     #[classify(delegate)]
///     Open(CircuitOpen),
/// }
/// impl From<CircuitOpen> for FetchError {
///     fn from(open: CircuitOpen) -> Self {
///         FetchError::Open(open)
///     }
/// }
///
/// #[retryable(attempts = 3, base = "0ms", circuit = HOSTS, key = host)]
/// fn fetch(host: &str, up: bool) -> Result<(), FetchError> {
///     if up { Ok(()) } else { Err(FetchError::Refused) }
/// }
///
/// assert!(fetch("a.example", false).is_err()); // two failures open a.example's breaker
/// assert_eq!(HOSTS.get("a.example").state(), CircuitState::Open);
/// assert!(fetch("b.example", true).is_ok()); // b.example has its own, closed
/// assert!(matches!(fetch("a.example", true), Err(FetchError::Open(_))));
/// ```
pub struct PerKey<T, const N: usize = 64> {
    template: T,
    slots: [Slot<T>; N],
    /// Which place each key has (see [`index`]).
    index: index::Index<N>,
    /// Held to place a key (insertions are one at a time).
    inserts: Mutex<()>,
    /// Insertions so far: the "time" of a place's last use.
    insertions: AtomicU64,
}

impl<T, const N: usize> PerKey<T, N> {
    const_unless_loom! {
        /// Values made from `template`, at most `N` keys at a time (`N` of at least 1: a table
        /// with no place is a compile error).
        pub const fn new(template: T) -> Self {
            const { assert!(N > 0, "a PerKey needs a place for at least one key") };
            PerKey {
                template,
                slots: slots(),
                index: index::Index::new(),
                inserts: Mutex::new(()),
                insertions: AtomicU64::new(0),
            }
        }
    }

    /// The template every key's value is a fresh copy of.
    pub fn template(&self) -> &T {
        &self.template
    }

    /// How many keys have a value now.
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.hash.load(Ordering::Acquire) != 0)
            .count()
    }

    /// Whether no key has a value yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(loom))]
const fn slots<T, const N: usize>() -> [Slot<T>; N] {
    [const { Slot::empty() }; N]
}

#[cfg(loom)]
fn slots<T, const N: usize>() -> [Slot<T>; N] {
    std::array::from_fn(|_| Slot::empty())
}

impl<T: Template, const N: usize> PerKey<T, N> {
    /// The value for `key`: the one it has, or a fresh copy of the template, replacing the key
    /// used least recently when all `N` places are taken.
    ///
    /// The value stays the key's while the key keeps its place; a value read later may have
    /// been given to another key since (the [`Lease`] says).
    ///
    /// A new entry is labelled with the key's `Debug` text (a string's without its quotes,
    /// so `get("api.example:443")` is listed as `api.example:443`, as the layers list a
    /// host): what [`registry::snapshot`](crate::registry::snapshot), the metrics and
    /// [`CircuitBreaker::key`] show. The text is made only when the entry is.
    pub fn get<K: Hash + fmt::Debug + ?Sized>(&self, key: &K) -> Lease<'_, T> {
        self.lease(hash_of(key), || Some(debug_label(key)))
    }

    /// The value for the key whose hash is `hash`; a new entry is labelled with what `label`
    /// says (asked only then, outside the table's lock).
    #[inline]
    fn lease(&self, hash: u64, label: impl FnOnce() -> Option<Box<str>>) -> Lease<'_, T> {
        let hash = stored(hash);
        match self.lookup(hash) {
            Some((lease, slot)) => {
                if slot.labelled.load(Ordering::Relaxed) == 0 {
                    self.label_late(lease, slot, label);
                }
                lease
            }
            None => self.insert(hash, label()),
        }
    }

    /// Give an entry made without its key's text (by [`get`](Self::get)) the text this call
    /// knows, so that its measurements and the registry name its key.
    #[cold]
    fn label_late(
        &self,
        lease: Lease<'_, T>,
        slot: &Slot<T>,
        label: impl FnOnce() -> Option<Box<str>>,
    ) {
        if let Some(key) = label() {
            // Marked before the label is set, under the entry's label lock, and unmarked if the
            // entry went to another key: an insertion marks the place after it has taken that
            // lock to end the old key's tenancy, so a mark of this call's can never outlast it
            // and keep the next key's entry from being labelled.
            slot.labelled.store(1, Ordering::Relaxed);
            if !lease.value().relabel(lease.tenancy(), key) {
                slot.labelled.store(0, Ordering::Relaxed);
            }
        }
    }

    /// The value of the live entry for `hash`, marked as used now, and its place: where the
    /// index says, or failing that (a key placed or forgotten meanwhile, or none), found by
    /// scanning the table from the key's home place.
    #[inline]
    fn lookup(&self, hash: u64) -> Option<(Lease<'_, T>, &Slot<T>)> {
        let fits = |place: usize| self.slots[place].hash.load(Ordering::Acquire) == hash;
        if let Some(place) = self.index.find(hash, fits) {
            return self.hit(&self.slots[place], hash);
        }
        self.scan(hash)
    }

    #[cold]
    fn scan(&self, hash: u64) -> Option<(Lease<'_, T>, &Slot<T>)> {
        let home = (hash % N as u64) as usize;
        let (after, before) = self.slots.split_at(home);
        let slot = before
            .iter()
            .chain(after)
            .find(|slot| slot.hash.load(Ordering::Acquire) == hash)?;
        self.hit(slot, hash)
    }

    /// The lease of `slot`, whose hash was just read as `hash`, marked as used now.
    #[inline]
    fn hit<'s>(&'s self, slot: &'s Slot<T>, hash: u64) -> Option<(Lease<'s, T>, &'s Slot<T>)> {
        // SAFETY: a place's value is set before its first hash and kept until the table is
        // dropped (`&self` outlives the lease).
        let value = unsafe { &*slot.value.load(Ordering::Acquire) };
        let tenancy = value.tenancy();
        // Read again after the tenancy: unchanged, the tenancy is this key's (or a lapsed one
        // of this key's, whose writes are dropped); changed, the place is being given to
        // another key: placed anew under the lock.
        if slot.hash.load(Ordering::Acquire) != hash {
            return None;
        }
        // A use ranks after every insertion so far (an insertion is ranked by its own count):
        // written only when that changes, so a table whose keys stay put is only read.
        let now = self.insertions.load(Ordering::Relaxed).wrapping_add(1);
        if slot.used.load(Ordering::Relaxed) != now {
            slot.used.store(now, Ordering::Relaxed);
        }
        Some((Lease::new(value, tenancy), slot))
    }

    /// Give `hash` a place, unless another thread gave it one meanwhile (then that value is
    /// the key's).
    #[cold]
    fn insert(&self, hash: u64, label: Option<Box<str>>) -> Lease<'_, T> {
        // A panic while the lock is held can only come from `entry` or the allocator, before
        // anything changed: a poisoned lock is still usable.
        let _placing = self
            .inserts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((lease, _)) = self.lookup(hash) {
            return lease;
        }
        let now = self.insertions.load(Ordering::Relaxed).wrapping_add(1);
        self.insertions.store(now, Ordering::Relaxed);
        let place = self.place(hash);
        let slot = &self.slots[place];
        let labelled = u32::from(label.is_some());
        let existing = slot.value.load(Ordering::Acquire);
        let value = if existing.is_null() {
            // Shared with the registry (a `Weak`), which lists the entry, under whichever key
            // it serves, while the table lives.
            let value = Arc::new(self.template.entry(label));
            T::enlist(&value);
            let value = Arc::into_raw(value).cast_mut();
            slot.value.store(value, Ordering::Release);
            value
        } else {
            // Lookups of the old key miss from here on; then the calls that leased the value
            // for it are cut off and their writes waited for, and the value starts afresh.
            let old = slot.hash.load(Ordering::Relaxed);
            self.index
                .remove(old, place, |p| self.slots[p].hash.load(Ordering::Relaxed));
            slot.hash.store(0, Ordering::SeqCst);
            // SAFETY: as in `lookup`.
            unsafe { &*existing }.recycle(label);
            existing
        };
        // Marked after the old key's tenancy ended (in `recycle`): a late label of the old
        // key's, set before that, sees the tenancy moved and clears its own mark (`label_late`).
        slot.labelled.store(labelled, Ordering::Relaxed);
        slot.used.store(now, Ordering::Relaxed);
        // SAFETY: as in `lookup`.
        let value = unsafe { &*value };
        let tenancy = value.tenancy();
        slot.hash.store(hash, Ordering::Release);
        self.index.insert(hash, place);
        Lease::new(value, tenancy)
    }

    /// The place for a new key: a free one (the nearest after the key's home place, where its
    /// lookups start); else the least recently used of those with nothing to remember (a closed
    /// breaker with no failures, a full budget); else the least recently used. An open breaker
    /// is the last thing to forget: forgetting it sends calls to a host that is down.
    fn place(&self, hash: u64) -> usize {
        let home = (hash % N as u64) as usize;
        let free = (home..N)
            .chain(0..home)
            .find(|&i| self.slots[i].value.load(Ordering::Acquire).is_null());
        let used = |i: &usize| self.slots[*i].used.load(Ordering::Relaxed);
        // SAFETY: as in `lookup` (every place has a value once none is free).
        let idle = |i: &usize| unsafe { &*self.slots[*i].value.load(Ordering::Acquire) }.is_idle();
        free.or_else(|| (0..N).filter(idle).min_by_key(used))
            .or_else(|| (0..N).min_by_key(used))
            .unwrap_or(0)
    }
}

impl<T, const N: usize> PerKey<T, N> {
    /// Every entry's value, as it is now (with the insertion lock held, so none is being made
    /// or given to another key meanwhile).
    fn each_entry(&self, mut f: impl FnMut(&T)) {
        let _placing = self
            .inserts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for slot in &self.slots {
            let value = slot.value.load(Ordering::Acquire);
            if !value.is_null() {
                // SAFETY: as in `lookup`.
                f(unsafe { &*value });
            }
        }
    }
}

impl<const N: usize> PerKey<CircuitBreaker, N> {
    /// Give the template and every entry new settings, keeping each entry's state (an open
    /// breaker stays open; see [`CircuitBreaker::set_settings`]).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{BreakerSettings, CircuitBreaker, CircuitState, PerKey};
    /// use std::time::Duration;
    ///
    /// let hosts: PerKey<CircuitBreaker, 4> =
    ///     PerKey::new(CircuitBreaker::new(1, Duration::from_secs(30)));
    /// hosts.get("down.example").try_acquire().unwrap().failed();
    /// hosts.set_settings(BreakerSettings::new(5, Duration::from_secs(60)));
    /// assert_eq!(hosts.get("down.example").state(), CircuitState::Open);
    /// assert_eq!(hosts.get("up.example").settings().failure_threshold, 5);
    /// ```
    pub fn set_settings(&self, settings: crate::breaker::BreakerSettings) {
        self.template.set_settings(settings);
        self.each_entry(|entry| entry.set_settings(settings));
    }
}

impl<const N: usize> PerKey<RetryBudget, N> {
    /// Give the template and every entry new settings, keeping each entry's share of tokens
    /// (see [`RetryBudget::set_settings`]).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{BudgetSettings, PerKey, RetryBudget};
    ///
    /// let tenants: PerKey<RetryBudget, 4> = PerKey::new(RetryBudget::new(10, 0.1));
    /// for _ in 0..4 {
    ///     tenants.get("a").record_failure();
    /// }
    /// tenants.set_settings(BudgetSettings::new(20, 0.1));
    /// assert_eq!(tenants.get("a").tokens(), 12.0); // 60 % full stays 60 % full
    /// assert_eq!(tenants.get("b").max_tokens(), 20);
    /// ```
    pub fn set_settings(&self, settings: crate::budget::BudgetSettings) {
        self.template.set_settings(settings);
        self.each_entry(|entry| entry.set_settings(settings));
    }
}

impl<T, const N: usize> Drop for PerKey<T, N> {
    fn drop(&mut self) {
        for slot in &self.slots {
            let value = slot.value.load(Ordering::Acquire);
            if !value.is_null() {
                // SAFETY: made by `Arc::into_raw` in `insert`, released once, here, where no
                // lease can outlive `&mut self` (the registry holds only a `Weak`).
                drop(unsafe { Arc::from_raw(value) });
            }
        }
    }
}

impl<T, const N: usize> fmt::Debug for PerKey<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerKey")
            .field("keys", &self.len())
            .field("capacity", &N)
            .finish_non_exhaustive()
    }
}

/// What `#[retryable(circuit = PATH, key = ...)]` (or `budget = PATH`) accepts: a [`PerKey`] of
/// `T`.
#[diagnostic::on_unimplemented(
    message = "with `key = ...`, `circuit` takes a `static PerKey<CircuitBreaker>` and `budget` a `static PerKey<RetryBudget>`, not `{Self}`",
    label = "expected a `PerKey<{T}>`",
    note = "declare `static HOSTS: PerKey<CircuitBreaker> = PerKey::new(CircuitBreaker::new(..));`, or drop `key` to share one breaker or budget"
)]
pub trait AsPerKey<T> {
    /// The value for the key whose hash is `hash` (see [`key_hash`]); a new entry is labelled
    /// with `label`'s text (asked only then).
    fn value_for(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, T>;
}

impl<T: Template, const N: usize> AsPerKey<T> for PerKey<T, N> {
    #[inline]
    fn value_for(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Lease<'_, T> {
        self.lease(hash, label)
    }
}

/// What `#[retryable(key = ...)]` accepts: a value whose `Hash` chooses the call's breaker or
/// budget.
#[diagnostic::on_unimplemented(
    message = "`key = ...` must be a value that implements `Hash`, and `{Self}` does not",
    label = "its hash chooses this call's breaker or budget",
    note = "derive `Hash` (with `PartialEq` and `Eq`) for the type, or key by a field that has one, such as a host name"
)]
pub trait Key {
    /// The key's 64-bit hash.
    fn key_hash(&self) -> u64;
}

#[diagnostic::do_not_recommend]
impl<K: Hash + ?Sized> Key for K {
    #[inline]
    fn key_hash(&self) -> u64 {
        hash_of(self)
    }
}

/// The hash of a call's key, taken once for its breaker and its budget.
#[inline]
pub fn key_hash<K: Key + ?Sized>(key: &K) -> u64 {
    key.key_hash()
}

/// The breaker or budget of `per_key` for the key whose hash is `hash`; `label` gives a new
/// entry its key as text (see [`CircuitBreaker::key`]).
#[inline]
pub fn keyed<'a, T, P: AsPerKey<T> + ?Sized>(
    per_key: &'a P,
    hash: u64,
    label: &dyn Fn() -> Option<Box<str>>,
) -> Lease<'a, T> {
    per_key.value_for(hash, label)
}

/// What `#[retryable(key = ..)]` labels a new `PerKey` entry with: the key's `Display` text,
/// else its `Debug` text, when its type has one (found by autoref, as for errors:
/// `(&&KeyText(&key)).text()`). Glue of the attribute's, re-exported in `retry_kit::__private`.
#[doc(hidden)]
pub struct KeyText<'k, K: ?Sized>(pub &'k K);

/// The key has a `Display`: its text.
#[doc(hidden)]
pub trait KeyViaDisplay {
    /// The key's text.
    fn text(&self) -> Option<Box<str>>;
}

impl<K: std::fmt::Display + ?Sized> KeyViaDisplay for &KeyText<'_, K> {
    fn text(&self) -> Option<Box<str>> {
        Some(self.0.to_string().into_boxed_str())
    }
}

/// The key has a `Debug` but no `Display`: its `Debug` text (a tenant id `Tenant(7)`).
#[doc(hidden)]
pub trait KeyViaDebug {
    /// The key's `Debug` text.
    fn text(&self) -> Option<Box<str>>;
}

impl<K: std::fmt::Debug + ?Sized> KeyViaDebug for &&KeyText<'_, K> {
    fn text(&self) -> Option<Box<str>> {
        Some(format!("{:?}", self.0).into_boxed_str())
    }
}

/// The key has neither: no text.
#[doc(hidden)]
pub trait KeyViaNothing {
    /// No text.
    fn text(&self) -> Option<Box<str>>;
}

impl<K: ?Sized> KeyViaNothing for KeyText<'_, K> {
    fn text(&self) -> Option<Box<str>> {
        None
    }
}

/// A key's `Debug` text as its label: a string's without its quotes and escapes (the text
/// `Display` would give), anything else as `Debug` writes it (`Tenant(7)`, `("eu", 3)`).
pub(crate) fn debug_label<K: fmt::Debug + ?Sized>(key: &K) -> Box<str> {
    let text = format!("{key:?}");
    // A string's `Debug` is its text in quotes, with `\` before a quote or a backslash and
    // other escapes for control characters. Unquoted only when nothing inside is escaped.
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains(['"', '\\']) => inner.into(),
        _ => text.into_boxed_str(),
    }
}

/// A key's 64-bit hash: foldhash seeded once per process, so the same key finds its value in
/// every call, and which keys collide cannot be known ahead.
#[inline]
fn hash_of<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher =
        foldhash::fast::FoldHasher::with_seed(0, foldhash::SharedSeed::global_random());
    key.hash(&mut hasher);
    hasher.finish()
}

/// A hash as the table keeps it: 0 marks a place with no key.
#[inline]
fn stored(hash: u64) -> u64 {
    hash.max(1)
}
