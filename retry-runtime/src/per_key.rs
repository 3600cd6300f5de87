//! [`PerKey`]: one breaker or budget per key (a host, a partition, a tenant), so that one failing
//! host opens its own breaker and drains its own budget, not everyone's.

use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::sync::{Mutex, MutexGuard, const_unless_loom};
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
// std's `Arc` even under loom: it is what `PerKey::get` hands to callers across the crate; the
// table's consistency is the lock's, which is loom's there.
use std::sync::Arc;

mod pick;
pub use pick::{OneByKey, Pick, Picked, one_by_key, pick};

/// What a [`PerKey`] holds one of per key: a copy of its template with fresh state.
pub trait Template: Sized {
    /// A new value with this one's settings and fresh state (a closed breaker, a full bucket).
    fn fresh(&self) -> Self;
    /// Whether this value has nothing a fresh one lacks (a closed breaker with no failure
    /// counted, a full bucket): forgetting it loses nothing.
    fn is_idle(&self) -> bool;
    /// Give a new entry its key as text, for its measurements and hooks (a breaker keeps it,
    /// see [`CircuitBreaker::key`]).
    // Boxed: the breaker's impl keeps it as it comes.
    #[allow(clippy::boxed_local)]
    fn label(&mut self, key: Box<str>) {
        let _ = key;
    }
}

impl Template for CircuitBreaker {
    fn fresh(&self) -> Self {
        self.fresh_copy()
    }
    fn is_idle(&self) -> bool {
        CircuitBreaker::is_idle(self)
    }
    fn label(&mut self, key: Box<str>) {
        self.set_key(key);
    }
}

impl Template for RetryBudget {
    fn fresh(&self) -> Self {
        self.fresh_copy()
    }
    fn is_idle(&self) -> bool {
        RetryBudget::is_idle(self)
    }
}

/// One entry of the table: the key's hash, when it was last used, and its breaker or budget.
struct Entry<T> {
    hash: u64,
    last_used: u64,
    value: Option<Arc<T>>,
}

impl<T> Entry<T> {
    const EMPTY: Self = Entry {
        hash: 0,
        last_used: 0,
        value: None,
    };
}

/// The table behind the lock.
struct Table<T, const N: usize> {
    entries: [Entry<T>; N],
    /// Counts lookups: the "time" of `last_used`.
    clock: u64,
}

/// One [`CircuitBreaker`] or [`RetryBudget`] per key, each a fresh copy of `template`, for at
/// most `N` keys (64 by default), so nothing grows without bound. When every place is taken, a
/// new key takes the place of the least recently used key with nothing to remember (a closed
/// breaker with no failures counted, a full budget), and only when there is none, of the least
/// recently used key. A key whose place was taken starts again from the template when it comes
/// back: its breaker closed, its budget full.
///
/// Const-constructible for a `static`. A lookup takes a lock for a scan of at most `N` entries
/// and hands back an `Arc` of the key's value; no lock is held while a call runs, and a call
/// that started with a value keeps it even if its key is replaced meanwhile. Keys are told
/// apart by a 64-bit hash (two keys whose hashes collide share a value; for `N` keys in use
/// the chance is about N² / 2⁶⁵). A key's value is created on first use, one allocation.
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
    table: Mutex<Table<T, N>>,
}

impl<T, const N: usize> PerKey<T, N> {
    const_unless_loom! {
        /// Values made from `template`, at most `N` keys at a time (with `N` of 0 none is kept:
        /// every lookup gets a fresh value).
        pub const fn new(template: T) -> Self {
            PerKey {
                template,
                table: Mutex::new(Table {
                    entries: [const { Entry::EMPTY }; N],
                    clock: 0,
                }),
            }
        }
    }

    /// The template every key's value is a fresh copy of.
    pub fn template(&self) -> &T {
        &self.template
    }

    /// How many keys have a value now.
    pub fn len(&self) -> usize {
        self.lock()
            .entries
            .iter()
            .filter(|e| e.value.is_some())
            .count()
    }

    /// Whether no key has a value yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Table<T, N>> {
        // A panic while the lock is held can only come from `fresh` or the allocator; the
        // table is consistent between entries, so a poisoned lock is still usable.
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<T: Template, const N: usize> PerKey<T, N> {
    /// The value for `key`: the one it has, or a fresh copy of the template, replacing the key
    /// used least recently when all `N` places are taken.
    pub fn get<K: Hash + ?Sized>(&self, key: &K) -> Arc<T> {
        self.get_hashed(hash_of(key), || None)
    }

    /// The value for the key whose hash is `hash`; a new entry is labelled with what `label`
    /// says (asked only then, outside the table's lock).
    fn get_hashed(&self, hash: u64, label: impl FnOnce() -> Option<Box<str>>) -> Arc<T> {
        if let Some(value) = self.lookup(hash) {
            return value;
        }
        let mut value = self.template.fresh();
        if let Some(key) = label() {
            value.label(key);
        }
        self.insert(hash, Arc::new(value))
    }

    /// The value a live entry for `hash` has, marked as used now.
    fn lookup(&self, hash: u64) -> Option<Arc<T>> {
        let mut table = self.lock();
        table.clock += 1;
        let now = table.clock;
        let entry = table
            .entries
            .iter_mut()
            .find(|e| e.hash == hash && e.value.is_some())?;
        entry.last_used = now;
        entry.value.clone()
    }

    /// Give `value` a place for `hash`, unless another thread gave the key one meanwhile (then
    /// that value is the key's).
    fn insert(&self, hash: u64, value: Arc<T>) -> Arc<T> {
        let mut table = self.lock();
        table.clock += 1;
        let now = table.clock;
        let entries = &mut table.entries;
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| e.hash == hash && e.value.is_some())
        {
            entry.last_used = now;
            if let Some(value) = &entry.value {
                return Arc::clone(value);
            }
        }
        // A free place; else the least recently used of those with nothing to remember (a
        // closed breaker with no failures, a full budget); else the least recently used. An
        // open breaker is the last thing to forget: forgetting it sends calls to a host that
        // is down.
        let idle = |e: &Entry<T>| e.value.as_deref().is_some_and(T::is_idle);
        let place = entries
            .iter()
            .position(|e| e.value.is_none())
            .or_else(|| {
                (0..entries.len())
                    .filter(|&i| idle(&entries[i]))
                    .min_by_key(|&i| entries[i].last_used)
            })
            .or_else(|| (0..entries.len()).min_by_key(|&i| entries[i].last_used));
        if let Some(i) = place {
            entries[i] = Entry {
                hash,
                last_used: now,
                value: Some(Arc::clone(&value)),
            };
        }
        // With `N` of 0 there is no place: the value serves this call alone.
        value
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
    fn value_for(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Arc<T>;
}

impl<T: Template, const N: usize> AsPerKey<T> for PerKey<T, N> {
    #[inline]
    fn value_for(&self, hash: u64, label: &dyn Fn() -> Option<Box<str>>) -> Arc<T> {
        self.get_hashed(hash, label)
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
pub fn keyed<T, P: AsPerKey<T> + ?Sized>(
    per_key: &P,
    hash: u64,
    label: &dyn Fn() -> Option<Box<str>>,
) -> Arc<T> {
    per_key.value_for(hash, label)
}

/// What `#[retryable(key = ..)]` labels a new `PerKey` entry with: the key's `Display` text,
/// when its type has one (found by autoref, as for errors: `(&KeyText(&key)).text()`).
/// Glue of the attribute's, re-exported in `retry_kit::__private`.
#[doc(hidden)]
pub struct KeyText<'k, K: ?Sized>(pub &'k K);

/// The key has a `Display`: its text.
#[doc(hidden)]
pub trait KeyViaDisplay {
    /// The key's text.
    fn text(&self) -> Option<Box<str>>;
}

impl<K: std::fmt::Display + ?Sized> KeyViaDisplay for KeyText<'_, K> {
    fn text(&self) -> Option<Box<str>> {
        Some(self.0.to_string().into_boxed_str())
    }
}

/// The key has no `Display`: no text.
#[doc(hidden)]
pub trait KeyViaNothing {
    /// No text.
    fn text(&self) -> Option<Box<str>>;
}

impl<K: ?Sized> KeyViaNothing for &KeyText<'_, K> {
    fn text(&self) -> Option<Box<str>> {
        None
    }
}

/// A key's 64-bit hash: SipHash with fixed keys, so the same key finds its value in every call.
fn hash_of<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}
