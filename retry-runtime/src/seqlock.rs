//! [`Seqlock`]: settings of several words that threads read without a lock while a rare writer
//! replaces them, and never see half replaced.
//!
//! Why a seqlock, and not a pointer swapped to a new allocation: the settings it holds
//! (a [`PolicyCell`](crate::PolicyCell)'s policy, a breaker's or a budget's settings) are a few
//! words, copied out whole by every read; they live in `static`s built by `const fn`, where
//! nothing can be allocated; and a pointer swap needs a way to free the old value only once no
//! reader holds it (hazard pointers, epochs, reference counts), which costs every read a write
//! to shared memory. A seqlock's read writes nothing: it loads a sequence number, the words and
//! the sequence number again, and keeps the copy when the number did not move and was even.
//!
//! The words themselves are atomics (read `Relaxed`, ordered by fences, as Boehm's "Can
//! seqlocks get along with programming language memory models?" shows), so a read that
//! overlaps a write is a race the code expects and retries, never undefined behaviour. A read
//! that overlaps a write retries until the write is done: writers are a reload of the
//! configuration, rare and short (a handful of stores), so readers spin only then. Writers
//! exclude each other through the sequence number (odd while one writes).
//!
//! A single word can also be read alone ([`Seqlock::word`]): every value a word holds was
//! written whole, so a hot path that needs one setting (whether a breaker keeps a failure
//! ratio) pays one relaxed load, as it did for a plain field.
//!
//! `tests/loom.rs` models a read beside a write: the reader sees the old words or the new
//! ones, never a mix.

use crate::sync::{AtomicU64, Ordering, const_unless_loom, fence, spin_loop};

/// `N` words written together and read together.
pub(crate) struct Seqlock<const N: usize> {
    /// Even when no write is under way; each write adds 2 (odd while it runs).
    seq: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> Seqlock<N> {
    const_unless_loom! {
        /// Words holding `values`.
        pub(crate) const fn new(values: [u64; N]) -> Self {
            Seqlock {
                seq: AtomicU64::new(0),
                words: atomics(values),
            }
        }
    }

    const_unless_loom! {
        /// The same words with word `i` set to `value`: for `const fn` builders, before the
        /// words are shared. An `i` out of range changes nothing.
        pub(crate) const fn with(mut self, i: usize, value: u64) -> Self {
            if i < N {
                self.words[i] = AtomicU64::new(value);
            }
            self
        }
    }

    /// Word `i` alone (0 past the end): one value some write stored whole.
    #[inline]
    pub(crate) fn word(&self, i: usize) -> u64 {
        match self.words.get(i) {
            Some(word) => word.load(Ordering::Relaxed),
            None => 0,
        }
    }

    /// Every word, as one write left them.
    pub(crate) fn read(&self) -> [u64; N] {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let values = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
                // Orders the loads above before the check below: a load that saw a word of a
                // later write also sees that write's odd sequence number here.
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    return values;
                }
            }
            spin_loop();
        }
    }

    /// Replace the words by what `update` makes of them, with no other writer running and
    /// every reader seeing either the words before or the words after. `update` runs inside
    /// the write, so that what goes with the words (a budget's tokens, scaled to a new maximum)
    /// changes in the same order as they do.
    pub(crate) fn write(&self, update: impl FnOnce(&mut [u64; N])) {
        let mut seq = self.seq.load(Ordering::Relaxed);
        loop {
            if seq & 1 == 0 {
                match self.seq.compare_exchange_weak(
                    seq,
                    seq.wrapping_add(1),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(actual) => seq = actual,
                }
            } else {
                spin_loop();
                seq = self.seq.load(Ordering::Relaxed);
            }
        }
        // Orders the odd sequence number before the words: a reader that sees a new word sees
        // the write under way.
        fence(Ordering::Release);
        let mut values = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
        update(&mut values);
        for (word, value) in self.words.iter().zip(values) {
            word.store(value, Ordering::Relaxed);
        }
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(not(loom))]
const fn atomics<const N: usize>(values: [u64; N]) -> [AtomicU64; N] {
    let mut words = [const { AtomicU64::new(0) }; N];
    let mut i = 0;
    while i < N {
        words[i] = AtomicU64::new(values[i]);
        i += 1;
    }
    words
}

/// loom's atomics are not const-constructible.
#[cfg(loom)]
fn atomics<const N: usize>(values: [u64; N]) -> [AtomicU64; N] {
    std::array::from_fn(|i| AtomicU64::new(values[i]))
}
