//! [`Index`]: which place of a [`PerKey`](super::PerKey) each key has, so that a lookup reads a
//! word or two instead of scanning the table.
//!
//! A full table gives a new key the place of the key it forgets, wherever that place is, so a
//! key's place is soon anywhere: scanning from the key's home place read half the table on
//! average (benches/README.md, `protection/per_key`). The index is an open-addressing
//! table of `2 N` buckets (linear probing, so at most half full), each the place of one key and
//! 16 bits of its hash. It is changed only under the table's insertion lock, and read without
//! one as a hint: a lookup checks the place it names against the key's whole hash, and scans
//! the table as before when the index names no place that fits (a key placed or forgotten
//! while it was probing), so a stale or half-moved bucket can cost a scan, never a wrong value.

use crate::sync::{AtomicU32, Ordering};

/// A bucket with no key.
const EMPTY: u32 = 0;
/// The place's bits of a bucket (the place plus one, so that place 0 is not `EMPTY`).
const PLACE: u32 = 0xffff;

/// Where each key of a table of `N` places is: `2 N` buckets, as `N` pairs (an array of `2 N`
/// needs a const expression of `N`, which stable Rust does not allow).
pub(super) struct Index<const N: usize> {
    buckets: [[AtomicU32; 2]; N],
}

impl<const N: usize> Index<N> {
    /// Whether every place fits in a bucket's 16 bits; a larger table has no index, and scans.
    const USED: bool = N < PLACE as usize;
    /// How many buckets there are.
    const LEN: usize = 2 * N;

    #[cfg(not(loom))]
    pub(super) const fn new() -> Self {
        Index {
            buckets: [const { [AtomicU32::new(EMPTY), AtomicU32::new(EMPTY)] }; N],
        }
    }

    #[cfg(loom)]
    pub(super) fn new() -> Self {
        Index {
            buckets: std::array::from_fn(|_| [AtomicU32::new(EMPTY), AtomicU32::new(EMPTY)]),
        }
    }

    #[inline]
    fn bucket(&self, i: usize) -> &AtomicU32 {
        &self.buckets[i / 2][i % 2]
    }

    /// The first bucket a key's probe reads (bits of the hash that choose neither the key's home
    /// place nor its tag).
    #[inline]
    fn start(hash: u64) -> usize {
        ((hash >> 16) as u32 as usize) % Self::LEN
    }

    /// The bits of a bucket that must match the key's hash.
    #[inline]
    fn tag(hash: u64) -> u32 {
        ((hash >> 48) as u32) << 16
    }

    #[inline]
    fn next(i: usize) -> usize {
        if i + 1 == Self::LEN { 0 } else { i + 1 }
    }

    /// The place the index gives the key whose hash is `hash`, one that `fits` (the caller
    /// compares the place's hash), or `None`: the key has no place, or it was being placed or
    /// forgotten while this read the buckets.
    #[inline]
    pub(super) fn find(&self, hash: u64, fits: impl Fn(usize) -> bool) -> Option<usize> {
        if !Self::USED {
            return None;
        }
        let tag = Self::tag(hash);
        let mut i = Self::start(hash);
        for _ in 0..Self::LEN {
            let bucket = self.bucket(i).load(Ordering::Relaxed);
            if bucket == EMPTY {
                return None;
            }
            if bucket & !PLACE == tag {
                let place = (bucket & PLACE) as usize - 1;
                if place < N && fits(place) {
                    return Some(place);
                }
            }
            i = Self::next(i);
        }
        None
    }

    /// Record that the key whose hash is `hash` has `place`. Under the insertion lock.
    pub(super) fn insert(&self, hash: u64, place: usize) {
        if !Self::USED {
            return;
        }
        let mut i = Self::start(hash);
        // At most `N` keys in `2 N` buckets: an empty one is always found (bounded anyway, so a
        // bucket left behind by a panic mid-change can only cost a scan).
        for _ in 0..Self::LEN {
            let bucket = self.bucket(i);
            if bucket.load(Ordering::Relaxed) == EMPTY {
                bucket.store(Self::tag(hash) | (place as u32 + 1), Ordering::Relaxed);
                return;
            }
            i = Self::next(i);
        }
    }

    /// Forget that the key whose hash is `hash` has `place`, `hash_at` giving the hash of the key
    /// at any other place. Under the insertion lock. The buckets after it in its run move back
    /// so that every key stays reachable from its start (a lookup running meanwhile may miss a
    /// moving key, and then scans).
    pub(super) fn remove(&self, hash: u64, place: usize, hash_at: impl Fn(usize) -> u64) {
        if !Self::USED {
            return;
        }
        let wanted = Self::tag(hash) | (place as u32 + 1);
        let mut hole = Self::start(hash);
        let mut probed = 0;
        while self.bucket(hole).load(Ordering::Relaxed) != wanted {
            probed += 1;
            if probed == Self::LEN || self.bucket(hole).load(Ordering::Relaxed) == EMPTY {
                return;
            }
            hole = Self::next(hole);
        }
        let mut j = hole;
        for _ in 0..Self::LEN {
            j = Self::next(j);
            let bucket = self.bucket(j).load(Ordering::Relaxed);
            if bucket == EMPTY {
                break;
            }
            let start = Self::start(hash_at((bucket & PLACE) as usize - 1));
            // The bucket at `j` stays if its start lies cyclically in (hole, j]: the hole is not
            // on its way. Otherwise it moves into the hole, which moves to `j`.
            let stays = if hole <= j {
                hole < start && start <= j
            } else {
                hole < start || start <= j
            };
            if !stays {
                self.bucket(hole).store(bucket, Ordering::Relaxed);
                hole = j;
            }
        }
        self.bucket(hole).store(EMPTY, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Index;

    /// Hashes whose buckets start at `start` (bits 16..48) and whose tags are `tag`.
    fn hash(start: u64, tag: u64) -> u64 {
        (tag << 48) | (start << 16) | 1
    }

    #[test]
    fn every_key_is_found_after_others_in_its_run_are_removed() {
        let index: Index<4> = Index::new();
        // Four keys: three start at bucket 2 (a run of 2, 3, 4), one at 3.
        let hashes = [hash(2, 1), hash(2, 2), hash(3, 3), hash(2, 4)];
        for (place, &h) in hashes.iter().enumerate() {
            index.insert(h, place);
        }
        for (place, &h) in hashes.iter().enumerate() {
            assert_eq!(index.find(h, |p| p == place), Some(place));
        }
        // Removing the run's first key moves the others back; each is still found.
        index.remove(hashes[0], 0, |p| hashes[p]);
        assert_eq!(index.find(hashes[0], |_| true), None);
        for (place, &h) in hashes.iter().enumerate().skip(1) {
            assert_eq!(index.find(h, |p| p == place), Some(place), "key at {place}");
        }
        index.remove(hashes[2], 2, |p| hashes[p]);
        for place in [1, 3] {
            assert_eq!(index.find(hashes[place], |p| p == place), Some(place));
        }
    }

    #[test]
    fn a_run_that_wraps_around_the_end_is_kept_whole() {
        let index: Index<3> = Index::new();
        // Six buckets; two keys starting at the last one (5) wrap to 0, pushing one that
        // starts at 0 to 1.
        let hashes = [hash(5, 1), hash(5, 2), hash(0, 3)];
        for (place, &h) in hashes.iter().enumerate() {
            index.insert(h, place);
        }
        index.remove(hashes[0], 0, |p| hashes[p]);
        assert_eq!(index.find(hashes[1], |p| p == 1), Some(1));
        assert_eq!(index.find(hashes[2], |p| p == 2), Some(2));
    }

    #[test]
    fn a_place_that_does_not_fit_is_passed_over() {
        let index: Index<4> = Index::new();
        // The same start and tag: the index cannot tell them apart, the caller's check can.
        index.insert(hash(1, 7), 0);
        index.insert(hash(1, 7), 2);
        assert_eq!(index.find(hash(1, 7), |p| p == 2), Some(2));
        assert_eq!(index.find(hash(1, 7), |_| false), None);
    }
}
