//! [`HashedKey`]: a key hashed once, for a caller that makes many calls with it.

use super::{Lease, PerKey, Template, debug_label, hash_of, stored};
use crate::sync::{AtomicU32, Ordering};
use std::fmt;
use std::hash::Hash;

/// A key of a [`PerKey`] hashed once, with the place its entry had when it was last looked up:
/// what a caller that makes many calls with one key keeps (a client of one upstream, a worker of
/// one tenant), so that [`PerKey::get_hashed`] finds the entry without hashing the key again or
/// searching the table. It finds the same entry [`PerKey::get`] does for the same key, and stays
/// right when the table gives the place to another key meanwhile (it then looks the key up, and
/// remembers its new place).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::per_key::HashedKey;
/// use retry_kit::{CircuitBreaker, PerKey};
/// use std::time::Duration;
///
/// static HOSTS: PerKey<CircuitBreaker> =
///     PerKey::new(CircuitBreaker::new(5, Duration::from_secs(30)));
///
/// // Kept beside the client of one upstream, made once.
/// let upstream = HashedKey::new("billing.internal:443");
/// for _ in 0..3 {
///     let breaker = HOSTS.get_hashed(&upstream);
///     let permit = breaker.try_acquire().expect("closed");
///     permit.succeeded();
/// }
/// let same = HOSTS.get("billing.internal:443");
/// assert!(std::ptr::eq(same.value(), HOSTS.get_hashed(&upstream).value()));
/// ```
pub struct HashedKey {
    hash: u64,
    /// What a new entry for the key is labelled with (see [`PerKey::get`]).
    label: Box<str>,
    /// Where the entry was last found (`u32::MAX`: not looked up yet). A hint, checked against
    /// the place's hash on every use.
    place: AtomicU32,
}

impl HashedKey {
    /// `key`, hashed as [`PerKey::get`] hashes it, and its label for an entry made for it
    /// (its `Debug` text, as `get` labels one).
    pub fn new<K: Hash + fmt::Debug + ?Sized>(key: &K) -> Self {
        HashedKey {
            hash: stored(hash_of(key)),
            label: debug_label(key),
            place: AtomicU32::new(u32::MAX),
        }
    }
}

impl fmt::Debug for HashedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashedKey")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl<T: Template, const N: usize> PerKey<T, N> {
    /// [`get`](Self::get) for a key hashed before: the entry at the place `key` remembers when
    /// it is still the key's, else the key looked up (or given a place) by its hash, and the
    /// place remembered.
    #[inline]
    pub fn get_hashed(&self, key: &HashedKey) -> Lease<'_, T> {
        // Any place in range will do as a guess, since the place's hash is checked: taken
        // modulo the table's size (a mask for the default 64) rather than bounds-checked.
        let place = key.place.load(Ordering::Relaxed) as usize % N;
        let slot = &self.slots[place];
        if slot.hash.load(Ordering::Acquire) == key.hash {
            if let Some((lease, _)) = self.hit(slot, key.hash) {
                return lease;
            }
        }
        self.get_hashed_slow(key)
    }

    #[cold]
    fn get_hashed_slow(&self, key: &HashedKey) -> Lease<'_, T> {
        let lease = self.lease(key.hash, || Some(key.label.clone()));
        let fits = |place: usize| self.slots[place].hash.load(Ordering::Acquire) == key.hash;
        let place = self
            .index
            .find(key.hash, fits)
            .or_else(|| (0..N).find(|&place| fits(place)));
        if let Some(place) = place.and_then(|place| u32::try_from(place).ok()) {
            key.place.store(place, Ordering::Relaxed);
        }
        lease
    }
}
