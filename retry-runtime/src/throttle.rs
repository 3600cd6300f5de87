//! [`AdaptiveThrottle`]: Google SRE's client-side throttling. Each client rejects requests
//! locally, before they cost the backend anything, with a probability that grows as the
//! backend accepts fewer of them.

use crate::clock;
use crate::error::CircuitOpen;
use crate::sync::{AtomicU64, Ordering, const_unless_loom};
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The number of buckets the window is kept in.
const BUCKETS: usize = 10;
/// Bits of a bucket word: which bucket of time it counts (24), requests (20), accepts (20).
const TAG_MASK: u64 = (1 << 24) - 1;
const COUNT_MAX: u64 = (1 << 20) - 1;

/// Client-side throttling as the Google SRE book describes it ("Handling Overload"): over a
/// sliding `window`, each client counts its `requests` (every attempt it wanted to make,
/// including those it rejected itself) and the backend's `accepts` (attempts that got an
/// answer: a success, or an error that is not a retryable failure), and rejects each new
/// attempt locally with probability
///
/// `max(0, (requests − K × accepts) / (requests + 1))`.
///
/// With `K` = 2 (the book's value) a client sends up to about twice what the backend accepts:
/// in steady overload the backend sees about `K ×` the rate it accepts, whatever the callers
/// want (`results/fleet/` reproduces the book's figure). A lower `K` throttles harder.
///
/// At low volume the formula is quick to reject: a fresh throttle that has seen one request
/// fail and none accepted rejects the next with probability 1/2 (`(1 − 0) / 2`), and only
/// accepted answers bring it back down. That is the book's rule, meant for clients that send
/// many requests per window; for a trickle, a [`RetryBudget`](crate::RetryBudget) (which
/// never refuses a first attempt) fits better.
///
/// Usable where a budget is: `#[retryable(budget = THROTTLE)]`,
/// [`Retry::budget`](crate::Retry::budget), and the `.budget(..)` of every layer (`RetryLayer`,
/// `HttpRetryLayer`, `GrpcRetryLayer`, `RetryMiddleware`, and with the `apalis` feature
/// `DurableRetryLayer`). Unlike a budget it refuses first attempts too: a refused first
/// attempt fails as a refusing breaker's does, `E::from(CircuitOpen)` (so `E:
/// From<CircuitOpen>`), and a refused retry stops the call with
/// [`StopReason::BudgetExhausted`](crate::StopReason::BudgetExhausted). The apalis layer
/// instead hands a task whose attempt it rejects back to the queue (no error type involved).
///
/// The window is ten buckets of `window / 10` packed into atomic words, as the breaker's
/// failure-ratio window: lock-free, allocation-free, `const`-constructible for a `static`. An
/// attempt costs one compare-and-swap to count it, ten loads to read the window, and one draw.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::AdaptiveThrottle;
/// use std::time::Duration;
///
/// static BACKEND: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(120));
///
/// // 100 requests, 20 accepted: (100 − 2 × 20) / 101 of the next are rejected.
/// for i in 0..100 {
///     BACKEND.record(i < 20);
/// }
/// assert!((BACKEND.reject_probability() - 60.0 / 101.0).abs() < 1e-9);
/// ```
pub struct AdaptiveThrottle {
    /// `K` in millionths.
    k: u64,
    /// The length of one bucket, in nanoseconds.
    bucket: u64,
    window: [AtomicU64; BUCKETS],
    /// The instant buckets are counted from: its first use (so that runs on a virtual clock
    /// see the same buckets every time).
    origin: OnceLock<Instant>,
}

impl AdaptiveThrottle {
    const_unless_loom! {
        /// A throttle that lets a client send about `k` times what the backend accepts over the
        /// last `window` (the SRE book: `k` = 2, a window of two minutes). `k` below 1 is
        /// taken as 1 (a client never throttles below what is accepted); a window shorter
        /// than 10 ns as 10 ns.
        pub const fn new(k: f64, window: Duration) -> Self {
            let k = if k > 1.0 { (k * 1e6) as u64 } else { 1_000_000 };
            let nanos = window.as_nanos() / BUCKETS as u128;
            let bucket = if nanos == 0 {
                1
            } else if nanos > u64::MAX as u128 {
                u64::MAX
            } else {
                nanos as u64
            };
            AdaptiveThrottle {
                k,
                bucket,
                window: empty(),
                origin: OnceLock::new(),
            }
        }
    }

    /// The probability that the next attempt is rejected locally, from the window as it is
    /// now: `max(0, (requests − K × accepts) / (requests + 1))`.
    pub fn reject_probability(&self) -> f64 {
        let (requests, accepts) = self.counts(self.now_bucket());
        probability(self.k, requests, accepts)
    }

    /// `K`, as kept (to six decimal places).
    pub fn k(&self) -> f64 {
        self.k as f64 / 1e6
    }

    /// Requests and accepts in the window now.
    pub fn counts_now(&self) -> (u64, u64) {
        self.counts(self.now_bucket())
    }

    /// Ask to send one attempt: counted as a request whether or not it is let through (as in
    /// the book, so that rejections push the probability towards the accepted rate, not
    /// away from it). `Err` when it is rejected locally.
    pub fn try_admit(&self) -> Result<(), CircuitOpen> {
        let now = self.now_bucket();
        let (requests, accepts) = self.counts(now);
        let p = probability(self.k, requests, accepts);
        self.count(now, 1, 0);
        if p > 0.0 && unit(crate::rng::draw()) < p {
            return Err(CircuitOpen::new(Duration::from_nanos(self.bucket)));
        }
        Ok(())
    }

    /// The backend accepted an attempt [`try_admit`](Self::try_admit) let through: a success,
    /// or an answer that is not a retryable failure. (A retryable failure records nothing: the
    /// request was counted when it was admitted.)
    pub fn accepted(&self) {
        self.count(self.now_bucket(), 0, 1);
    }

    /// Count one request and whether the backend accepted it, without asking to admit it (what
    /// [`try_admit`](Self::try_admit) then [`accepted`](Self::accepted) count).
    pub fn record(&self, accepted: bool) {
        self.count(self.now_bucket(), 1, u64::from(accepted));
    }

    /// The index of the current bucket of time.
    fn now_bucket(&self) -> u64 {
        let now = clock::now();
        let origin = *self.origin.get_or_init(|| now);
        let since = now.saturating_duration_since(origin).as_nanos();
        u64::try_from(since / u128::from(self.bucket)).unwrap_or(u64::MAX)
    }

    fn count(&self, index: u64, requests: u64, accepts: u64) {
        let tag = index & TAG_MASK;
        let slot = &self.window[(index % BUCKETS as u64) as usize];
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let (t, r, a) = unpack(cur);
            let (r, a) = if t == tag { (r, a) } else { (0, 0) };
            let next = pack(
                tag,
                (r + requests).min(COUNT_MAX),
                (a + accepts).min(COUNT_MAX),
            );
            match slot.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    fn counts(&self, index: u64) -> (u64, u64) {
        let tag = index & TAG_MASK;
        self.window
            .iter()
            .fold((0, 0), |(requests, accepts), slot| {
                let (t, r, a) = unpack(slot.load(Ordering::Relaxed));
                if tag.wrapping_sub(t) & TAG_MASK < BUCKETS as u64 {
                    (requests + r, accepts + a)
                } else {
                    (requests, accepts)
                }
            })
    }
}

/// The SRE book's rejection probability for `k` in millionths.
fn probability(k: u64, requests: u64, accepts: u64) -> f64 {
    let requests = requests as f64;
    let allowed = k as f64 / 1e6 * accepts as f64;
    ((requests - allowed) / (requests + 1.0)).max(0.0)
}

/// A uniform draw in `[0, 1)` from 64 random bits.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

const fn pack(tag: u64, requests: u64, accepts: u64) -> u64 {
    (tag << 40) | (requests << 20) | accepts
}

const fn unpack(word: u64) -> (u64, u64, u64) {
    (word >> 40, (word >> 20) & COUNT_MAX, word & COUNT_MAX)
}

#[cfg(not(loom))]
const fn empty() -> [AtomicU64; BUCKETS] {
    [const { AtomicU64::new(0) }; BUCKETS]
}

#[cfg(loom)]
fn empty() -> [AtomicU64; BUCKETS] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

impl fmt::Debug for AdaptiveThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (requests, accepts) = self.counts_now();
        f.debug_struct("AdaptiveThrottle")
            .field("k", &self.k())
            .field(
                "window",
                &Duration::from_nanos(self.bucket.saturating_mul(BUCKETS as u64)),
            )
            .field("requests", &requests)
            .field("accepts", &accepts)
            .field("reject_probability", &self.reject_probability())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_is_the_books() {
        assert_eq!(probability(2_000_000, 0, 0), 0.0);
        assert_eq!(probability(2_000_000, 100, 50), 0.0);
        assert!((probability(2_000_000, 1000, 100) - 800.0 / 1001.0).abs() < 1e-12);
        assert!((probability(1_000_000, 10, 0) - 10.0 / 11.0).abs() < 1e-12);
    }

    #[test]
    fn words_round_trip_and_counts_saturate() {
        let w = pack(TAG_MASK, COUNT_MAX, 7);
        assert_eq!(unpack(w), (TAG_MASK, COUNT_MAX, 7));
        let t = AdaptiveThrottle::new(2.0, Duration::from_secs(3600));
        t.count(5, COUNT_MAX, 0);
        t.count(5, 10, 1);
        assert_eq!(t.counts(5), (COUNT_MAX, 1));
    }

    #[test]
    fn old_buckets_leave_the_window() {
        let t = AdaptiveThrottle::new(2.0, Duration::from_secs(10));
        t.count(3, 5, 1);
        assert_eq!(t.counts(12), (5, 1));
        assert_eq!(t.counts(13), (0, 0), "ten buckets later it is gone");
    }
}
