//! Adaptive policies: attempts and delays adjusted from what recent attempts showed.
//!
//! An [`AdaptivePolicy`] keeps a window of the most recent attempts of every call that uses it
//! (at most `N`, and none older than its `max_age`), and turns it into [`Stats`]: how many
//! attempts, how many failed, and the 99th-percentile attempt latency. At the start of each call,
//! its ordered [`Rule`]s map those statistics to an adjusted [`Tuning`] (attempts, first delay,
//! multiplier), starting from the function's own policy; hard bounds then clamp what the rules
//! changed (a value they leave as the function declared it stays so).
//!
//! # Recording cost
//!
//! The window is a fixed ring of `N` atomic words inside the policy itself, so a `static` policy
//! allocates nothing, ever. Recording an attempt is one `fetch_add` on a cursor and one store
//! into the slot it names: no lock, no compare-and-swap loop, nothing that makes one caller wait
//! for another. Each slot packs the attempt's end time (milliseconds since the policy's first
//! record, 40 bits: 34 years), whether it failed (1 bit) and its latency (23 bits: a 17-bit
//! mantissa of microseconds with a 6-bit exponent, so under 2^17 µs = 131 ms exactly, above it
//! within 1/65536). A reader may see a slot that a concurrent writer has just replaced; each
//! word is written whole, so it never sees half of one.
//!
//! Reading the statistics loads the `N` words, keeps those young enough and selects the p99
//! latency in a stack buffer: O(`N`), allocation-free. A call reads them once, at its start.
//! `benches/adaptive.rs` measures both.
//!
//! # Time
//!
//! Ages are measured on [`clock::now`], so under
//! `#[tokio::test(start_paused = true)]` (or inside
//! [`testing::record_sleeps`](crate::testing::record_sleeps)) the window ages with virtual time.
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::adaptive::{AdaptivePolicy, Rule, Stats, Tuning};
//! use std::time::Duration;
//!
//! /// More than half failing: an outage. Retry less, and wait longer.
//! fn outage(stats: &Stats, t: Tuning) -> Tuning {
//!     if stats.failure_rate > 0.5 {
//!         Tuning { attempts: t.attempts.min(2), base: t.base * 3, ..t }
//!     } else {
//!         t
//!     }
//! }
//!
//! /// Slow answers: back off harder.
//! fn slow(stats: &Stats, t: Tuning) -> Tuning {
//!     if stats.p99_latency > Duration::from_secs(5) {
//!         Tuning { base: t.base * 2, multiplier: 3.0, ..t }
//!     } else {
//!         t
//!     }
//! }
//!
//! static UPSTREAM: AdaptivePolicy = AdaptivePolicy::new(&[outage, slow])
//!     .max_age(Duration::from_secs(60))
//!     .attempts_between(1, 10)
//!     .base_between(Duration::from_millis(10), Duration::from_secs(120));
//!
//! // Ten failed attempts of 20 ms each: the window shows an outage.
//! for _ in 0..10 {
//!     UPSTREAM.record(true, Duration::from_millis(20));
//! }
//! let stats = UPSTREAM.stats();
//! assert_eq!((stats.count, stats.failures), (10, 10));
//! assert_eq!(stats.p99_latency, Duration::from_millis(20));
//!
//! let normal = Tuning { attempts: 5, base: Duration::from_millis(100), multiplier: 2.0 };
//! let tuned = UPSTREAM.tune(normal);
//! assert_eq!(tuned.attempts, 2);
//! assert_eq!(tuned.base, Duration::from_millis(300));
//! ```

use crate::clock;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What the window of recent attempts shows.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Attempts in the window (at most its size, none older than its age).
    pub count: u32,
    /// How many of them failed with a retryable error (transient or idempotent-only).
    pub failures: u32,
    /// `failures / count`, or 0 for an empty window.
    pub failure_rate: f64,
    /// The 99th-percentile attempt latency (nearest rank), or zero for an empty window.
    pub p99_latency: Duration,
}

impl Stats {
    /// The statistics of an empty window.
    pub const EMPTY: Stats = Stats {
        count: 0,
        failures: 0,
        failure_rate: 0.0,
        p99_latency: Duration::ZERO,
    };
}

/// The settings a [`Rule`] adjusts: total attempts, the first delay (or fixed delay, or linear
/// step) and the exponential multiplier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuning {
    /// Total attempts, the first included.
    pub attempts: u32,
    /// The first delay.
    pub base: Duration,
    /// The exponential growth factor.
    pub multiplier: f64,
}

/// One adjustment: given the window's statistics and the tuning so far, return the new tuning.
///
/// Rules run in order, each receiving the previous one's output (the first receives the
/// function's own policy), so a rule that does not apply returns its input unchanged. Plain
/// `fn` pointers keep an [`AdaptivePolicy`] constructible in a `static`.
pub type Rule = fn(&Stats, Tuning) -> Tuning;

/// What the retry engine needs from an adaptive policy: an adjusted tuning at the start of a
/// call, and a record of each attempt. [`AdaptivePolicy`] implements it; so can anything else
/// that wants to steer retries from its own observations.
#[diagnostic::on_unimplemented(
    message = "`adaptive = ...` takes a `static` adaptive policy, and `{Self}` is not one",
    label = "expected an `AdaptivePolicy`"
)]
pub trait Adapt: Sync {
    /// The tuning for a call starting now, given the function's own `baseline`.
    fn tune(&self, baseline: Tuning) -> Tuning;
    /// Record one finished attempt: whether it failed with a retryable error, how long it took,
    /// and when it ended (on [`clock::now`], which the loop has just read).
    fn record(&self, failed: bool, latency: Duration, ended: Instant);
}

/// A policy that adjusts attempts and delays from a window of recent attempts: at most `N`
/// attempts (default 100), none older than `max_age` (default 60 s).
///
/// Use it in a `static` and name it in `#[retryable(adaptive = PATH)]` or
/// [`Retry::adaptive`](crate::Retry::adaptive); every function using it shares the window. See
/// the [module docs](self) for the recording design and an example.
///
/// | setting | default | meaning |
/// | --- | --- | --- |
/// | `N` (type parameter) | 100 | most attempts in the window; 1 to 4096 |
/// | [`max_age`](Self::max_age) | 60 s | older attempts leave the window |
/// | [`min_samples`](Self::min_samples) | 10 | below this many attempts in the window, no rule runs |
/// | [`attempts_between`](Self::attempts_between) | 1 to 10 | bounds on adjusted attempts |
/// | [`base_between`](Self::base_between) | 0 to 120 s | bounds on the adjusted first delay |
/// | [`multiplier_between`](Self::multiplier_between) | 1 to 10 | bounds on the adjusted multiplier |
///
/// The bounds clamp what the rules produce. While the window holds fewer than `min_samples`
/// attempts the function's own policy applies unchanged (bounds included: they bound
/// adjustments, not the function's declaration). Each delay is still capped by the function's
/// `max_delay`, and its deadline still holds.
///
/// Only retryable failures (transient and idempotent-only errors) count as failures: a permanent
/// error is an answer from a healthy dependency, as the circuit breaker counts it.
pub struct AdaptivePolicy<const N: usize = 100> {
    rules: &'static [Rule],
    max_age: Duration,
    min_samples: u32,
    attempts: (u32, u32),
    base: (Duration, Duration),
    multiplier: (f64, f64),
    epoch: OnceLock<Instant>,
    cursor: Padded,
    slots: [AtomicU64; N],
}

/// The write cursor on a cache line of its own, so that bumping it does not also evict the
/// read-mostly settings and epoch from the other cores' caches.
#[repr(align(128))]
struct Padded(AtomicUsize);

/// Bits of a slot: `[63:24]` end time in ms since the epoch, plus one (0 marks an empty slot);
/// `[23]` failed; `[22:0]` latency as a 6-bit exponent and a 17-bit mantissa of microseconds.
const TIME_SHIFT: u32 = 24;
const TIME_MAX: u64 = (1 << 40) - 1;
const FAILED: u64 = 1 << 23;
const MANTISSA_BITS: u32 = 17;
const MANTISSA_MASK: u64 = (1 << MANTISSA_BITS) - 1;
const LATENCY_MASK: u64 = FAILED - 1;

impl<const N: usize> AdaptivePolicy<N> {
    /// A policy applying `rules` in order, with the default window and bounds.
    pub const fn new(rules: &'static [Rule]) -> Self {
        const {
            assert!(
                N >= 1 && N <= 4096,
                "an adaptive window holds 1 to 4096 attempts"
            )
        };
        AdaptivePolicy {
            rules,
            max_age: Duration::from_secs(60),
            min_samples: 10,
            attempts: (1, 10),
            base: (Duration::ZERO, Duration::from_secs(120)),
            multiplier: (1.0, 10.0),
            epoch: OnceLock::new(),
            cursor: Padded(AtomicUsize::new(0)),
            slots: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Attempts older than this leave the window.
    pub const fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Below this many attempts in the window, no rule runs: too few to judge by.
    pub const fn min_samples(mut self, min_samples: u32) -> Self {
        self.min_samples = min_samples;
        self
    }

    /// Hard bounds on adjusted attempts. `min` below 1 means 1; `max` below `min` means `min`.
    pub const fn attempts_between(mut self, min: u32, max: u32) -> Self {
        let min = if min == 0 { 1 } else { min };
        let max = if max < min { min } else { max };
        self.attempts = (min, max);
        self
    }

    /// Hard bounds on the adjusted first delay. `max` below `min` means `min`.
    pub const fn base_between(mut self, min: Duration, max: Duration) -> Self {
        let max = if max.as_nanos() < min.as_nanos() {
            min
        } else {
            max
        };
        self.base = (min, max);
        self
    }

    /// Hard bounds on the adjusted multiplier. Below 1 (or not a number) means 1; `max` below
    /// `min` means `min`.
    pub const fn multiplier_between(mut self, min: f64, max: f64) -> Self {
        let min = if min >= 1.0 { min } else { 1.0 };
        let max = if max >= min { max } else { min };
        self.multiplier = (min, max);
        self
    }

    /// The most attempts the window holds (`N`).
    pub const fn capacity(&self) -> usize {
        N
    }

    /// What the window shows now. Cheap enough for a dashboard to poll: it reads `N` atomic
    /// words, keeps the few largest latencies for the percentile (for `N` up to 100 just the
    /// largest: the nearest-rank p99 of at most 100 values is their maximum) and allocates
    /// nothing.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::adaptive::AdaptivePolicy;
    /// use std::time::Duration;
    ///
    /// static POLICY: AdaptivePolicy<4> = AdaptivePolicy::new(&[]);
    /// for ms in [10, 20, 30, 40, 50] {
    ///     POLICY.record(ms == 50, Duration::from_millis(ms));
    /// }
    /// // The window holds the last 4 attempts.
    /// let stats = POLICY.stats();
    /// assert_eq!((stats.count, stats.failures, stats.failure_rate), (4, 1, 0.25));
    /// assert_eq!(stats.p99_latency, Duration::from_millis(50));
    /// ```
    pub fn stats(&self) -> Stats {
        let Some(epoch) = self.epoch.get() else {
            return Stats::EMPTY;
        };
        let now = millis_since(*epoch, clock::now());
        let max_age = u64::try_from(self.max_age.as_millis()).unwrap_or(u64::MAX);
        let mut latencies = [0u64; N];
        let mut count = 0usize;
        let mut failures = 0u32;
        // Branch-free: whether an attempt failed is as unpredictable as the dependency.
        for (i, slot) in self.slots.iter().enumerate() {
            let word = slot.load(Ordering::Relaxed);
            let ended = (word >> TIME_SHIFT).wrapping_sub(1);
            let young = word != 0 && now.saturating_sub(ended) <= max_age;
            // `count <= i < N`: the write stays in bounds, and is overwritten unless young.
            latencies[count.min(i)] = decode_latency(word & LATENCY_MASK);
            count += usize::from(young);
            failures += u32::from(young && word & FAILED != 0);
        }
        if count == 0 {
            return Stats::EMPTY;
        }
        // Nearest rank: the value at rank ceil(0.99 * count) from the smallest, which is the
        // k-th largest for a k of at most count / 100 + 1.
        let rank = (count * 99).div_ceil(100);
        let p99 = kth_largest(&latencies[..count], count - rank + 1);
        let count = count as u32; // count <= N <= 4096
        Stats {
            count,
            failures,
            failure_rate: f64::from(failures) / f64::from(count),
            p99_latency: Duration::from_micros(p99),
        }
    }

    /// Record one attempt that has just finished: whether it failed with a retryable error, and
    /// its latency. Call it yourself to feed the window from elsewhere; the retry loops use
    /// [`record_at`](Self::record_at) with the time they have already read.
    #[inline]
    pub fn record(&self, failed: bool, latency: Duration) {
        self.record_at(failed, latency, clock::now())
    }

    /// Record one attempt that ended at `ended` (an instant of
    /// [`clock::now`]). Lock-free: one `fetch_add` and one store.
    #[inline]
    pub fn record_at(&self, failed: bool, latency: Duration, ended: Instant) {
        let epoch = *self.epoch.get_or_init(|| ended);
        let ended = millis_since(epoch, ended).min(TIME_MAX - 1) + 1;
        let mut word = (ended << TIME_SHIFT) | encode_latency(latency);
        if failed {
            word |= FAILED;
        }
        let slot = self.cursor.0.fetch_add(1, Ordering::Relaxed) % N;
        self.slots[slot].store(word, Ordering::Relaxed);
    }

    /// The tuning for a call starting now: `baseline` (the function's own policy) adjusted by
    /// every rule in order and clamped to the bounds, or `baseline` unchanged while the window
    /// holds fewer than `min_samples` attempts.
    pub fn tune(&self, baseline: Tuning) -> Tuning {
        if self.rules.is_empty() {
            return baseline;
        }
        let stats = self.stats();
        if stats.count < self.min_samples {
            return baseline;
        }
        let tuned = self
            .rules
            .iter()
            .fold(baseline, |tuning, rule| rule(&stats, tuning));
        self.clamp(baseline, tuned)
    }

    /// Clamp what the rules changed of `declared` to the bounds; what they left as declared
    /// stays so, inside the bounds or not (they bound adjustments, not the declaration).
    fn clamp(&self, declared: Tuning, t: Tuning) -> Tuning {
        let (min_m, max_m) = self.multiplier;
        // `f64::clamp` keeps NaN; a rule's NaN means "no growth".
        let multiplier = if t.multiplier == declared.multiplier {
            declared.multiplier
        } else if t.multiplier.is_nan() {
            min_m
        } else {
            t.multiplier.clamp(min_m, max_m)
        };
        Tuning {
            attempts: if t.attempts == declared.attempts {
                declared.attempts
            } else {
                t.attempts.clamp(self.attempts.0, self.attempts.1)
            },
            base: if t.base == declared.base {
                declared.base
            } else {
                t.base.clamp(self.base.0, self.base.1)
            },
            multiplier,
        }
    }
}

impl<const N: usize> Adapt for AdaptivePolicy<N> {
    #[inline]
    fn tune(&self, baseline: Tuning) -> Tuning {
        AdaptivePolicy::tune(self, baseline)
    }

    #[inline]
    fn record(&self, failed: bool, latency: Duration, ended: Instant) {
        self.record_at(failed, latency, ended)
    }
}

impl<const N: usize> fmt::Debug for AdaptivePolicy<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptivePolicy")
            .field("rules", &self.rules.len())
            .field("window", &N)
            .field("max_age", &self.max_age)
            .field("min_samples", &self.min_samples)
            .field("attempts", &self.attempts)
            .field("base", &self.base)
            .field("multiplier", &self.multiplier)
            .field("stats", &self.stats())
            .finish()
    }
}

/// The most latencies [`kth_largest`] keeps: the k of the p99 of a full window of 4096.
const TOP: usize = 41;

/// The k-th largest of `values` (1-based), keeping only the k largest seen in a small
/// descending buffer: one comparison per value when k is 1.
fn kth_largest(values: &[u64], k: usize) -> u64 {
    let k = k.clamp(1, TOP);
    let mut top = [0u64; TOP];
    let mut len = 0;
    for &v in values {
        if len == k {
            if v <= top[k - 1] {
                continue;
            }
            len -= 1; // drop the smallest of the kept
        }
        let mut at = len;
        while at > 0 && top[at - 1] < v {
            top[at] = top[at - 1];
            at -= 1;
        }
        top[at] = v;
        len += 1;
    }
    top[len.saturating_sub(1).min(k - 1)]
}

fn millis_since(epoch: Instant, now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(epoch).as_millis()).unwrap_or(u64::MAX)
}

/// Microseconds as a 17-bit mantissa and a 6-bit exponent: exact below 2^17 µs, within 2^-16
/// relative above, and never overflowing.
fn encode_latency(latency: Duration) -> u64 {
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    let significant = u64::BITS - micros.leading_zeros();
    let shift = significant.saturating_sub(MANTISSA_BITS); // <= 47
    (u64::from(shift) << MANTISSA_BITS) | (micros >> shift)
}

fn decode_latency(bits: u64) -> u64 {
    let shift = bits >> MANTISSA_BITS;
    // mantissa < 2^17 and shift <= 47: the result fits 64 bits.
    (bits & MANTISSA_MASK) << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_encoding_is_exact_when_small_and_close_when_large() {
        for micros in [0, 1, 999, 131_071] {
            let d = Duration::from_micros(micros);
            assert_eq!(decode_latency(encode_latency(d)), micros);
        }
        for micros in [131_072u64, 5_000_000, 86_400_000_000, u64::MAX] {
            let back = decode_latency(encode_latency(Duration::from_micros(micros)));
            assert!(back <= micros);
            assert!(micros - back <= micros >> 16, "{micros} decoded as {back}");
        }
        assert!(encode_latency(Duration::MAX) <= LATENCY_MASK);
    }

    #[test]
    fn kth_largest_matches_a_sort() {
        let values: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 1009).collect();
        let mut sorted = values.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        for k in [1, 2, 3, 5, 41] {
            assert_eq!(kth_largest(&values, k), sorted[k - 1], "k = {k}");
        }
        assert_eq!(kth_largest(&[4], 1), 4);
    }

    #[test]
    fn p99_is_the_nearest_rank() {
        static P: AdaptivePolicy<300> = AdaptivePolicy::new(&[]);
        // Latencies 1..=250 ms: rank ceil(247.5) = 248, the third largest.
        for ms in 1..=250 {
            P.record(false, Duration::from_millis(ms));
        }
        assert_eq!(P.stats().p99_latency, Duration::from_millis(248));
    }

    #[test]
    fn the_ring_keeps_the_newest_n() {
        static P: AdaptivePolicy<3> = AdaptivePolicy::new(&[]);
        for ms in 1..=7 {
            P.record(ms % 2 == 0, Duration::from_millis(ms));
        }
        // The last three: 5 (ok), 6 (failed), 7 (ok).
        let s = P.stats();
        assert_eq!((s.count, s.failures), (3, 1));
        assert_eq!(s.p99_latency, Duration::from_millis(7));
    }

    /// Regression: a rule that changed nothing still clamped the declared 20 attempts to the
    /// default bound of 10 once the window had samples.
    #[test]
    fn a_rule_that_changes_nothing_leaves_the_declaration_outside_the_bounds_as_it_is() {
        fn unchanged(_: &Stats, t: Tuning) -> Tuning {
            t
        }
        static P: AdaptivePolicy<10> = AdaptivePolicy::new(&[unchanged]).min_samples(1);
        let declared = Tuning {
            attempts: 20,
            base: Duration::from_secs(300),
            multiplier: 12.0,
        };
        P.record(false, Duration::ZERO);
        assert_eq!(P.tune(declared), declared);
    }

    #[test]
    fn bounds_clamp_every_adjustment() {
        fn wild(_: &Stats, _: Tuning) -> Tuning {
            Tuning {
                attempts: 1000,
                base: Duration::MAX,
                multiplier: f64::NAN,
            }
        }
        static P: AdaptivePolicy<10> = AdaptivePolicy::new(&[wild])
            .min_samples(1)
            .attempts_between(2, 6)
            .base_between(Duration::from_millis(5), Duration::from_secs(1))
            .multiplier_between(1.5, 4.0);
        let baseline = Tuning {
            attempts: 3,
            base: Duration::from_millis(100),
            multiplier: 2.0,
        };
        assert_eq!(P.tune(baseline), baseline, "no samples, no adjustment");
        P.record(false, Duration::ZERO);
        assert_eq!(
            P.tune(baseline),
            Tuning {
                attempts: 6,
                base: Duration::from_secs(1),
                multiplier: 1.5
            }
        );
    }
}
