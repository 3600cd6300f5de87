//! A [`CircuitBreaker`]'s settings as a value ([`BreakerSettings`]), read and replaced while
//! the breaker runs, without touching its state.
//!
//! The settings live in a [`Seqlock`] of words, one setting a word: a slow path that needs
//! several (a failure checks the threshold and the ratio rule together) reads them as one write
//! left them; a hot path that needs one (whether a success must be counted in the ratio window)
//! loads that word alone, as it loaded a plain field before.

use super::window::RatioRule;
use super::{BUCKETS, CircuitBreaker, clamp_u16, nanos_i64};
use crate::seqlock::Seqlock;
use std::time::Duration;

/// Which word holds which setting.
pub(super) const THRESHOLD: usize = 0;
pub(super) const OPEN_FOR: usize = 1;
pub(super) const SUCCESSES: usize = 2;
pub(super) const HALF_OPEN_MAX: usize = 3;
pub(super) const RATIO_PPM: usize = 4;
const RATIO_MIN_CALLS: usize = 5;
const RATIO_BUCKET: usize = 6;
/// How many words the settings take.
pub(super) const WORDS: usize = 7;
/// `RATIO_PPM` of a breaker without a failure-ratio rule.
const NO_RATIO: u64 = u64::MAX;

/// The settings of a [`CircuitBreaker`]: what [`CircuitBreaker::settings`] reads and
/// [`CircuitBreaker::set_settings`] replaces at run time, and (feature `serde`) what a
/// configuration file holds, with the keys of the builder methods:
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `failure_threshold` | whole number >= 1 | required |
/// | `open_for` | duration string (`"30s"`) | required |
/// | `success_threshold` | whole number >= 1 (at most 65 535) | 1 |
/// | `half_open_max` | whole number >= 1 (at most 65 535) | 1 |
/// | `failure_ratio` | `{ ratio = 0.5, window = "30s", min_calls = 20 }` | none |
///
/// Built like the breaker, by `const fn`s, and kept as the breaker keeps it: thresholds of 0
/// mean 1, counts of probes are capped at 65 535, `open_for` at 292 years, the ratio to six
/// decimal places and the window to a multiple of ten nanoseconds.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{BreakerSettings, CircuitBreaker};
/// use std::time::Duration;
///
/// static PAYMENTS: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30));
///
/// let tighter = BreakerSettings::new(3, Duration::from_secs(60)).success_threshold(2);
/// PAYMENTS.set_settings(tighter);
/// assert_eq!(PAYMENTS.settings(), tighter);
/// assert_eq!(PAYMENTS.settings().failure_threshold, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct BreakerSettings {
    /// Consecutive retryable failures that open a closed breaker.
    pub failure_threshold: u32,
    /// How long an opened breaker refuses calls before admitting a probe.
    pub open_for: Duration,
    /// Probe successes that close a half-open breaker.
    pub success_threshold: u32,
    /// Probes that may run at once while half-open.
    pub half_open_max: u32,
    /// The failure-ratio rule, if any ([`CircuitBreaker::failure_ratio`]).
    pub failure_ratio: Option<FailureRatio>,
}

/// A breaker's failure-ratio rule: open when failures make up at least `ratio` of the outcomes
/// of the last `window`, once at least `min_calls` were seen there.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct FailureRatio {
    /// The share of failures that opens the breaker, from 0 to 1.
    pub ratio: f64,
    /// How far back outcomes count.
    pub window: Duration,
    /// How many outcomes the window needs before the ratio counts.
    pub min_calls: u32,
}

impl BreakerSettings {
    /// Open after `failure_threshold` consecutive retryable failures, for `open_for`; one probe
    /// at a time, and one success closes it (as [`CircuitBreaker::new`]).
    pub const fn new(failure_threshold: u32, open_for: Duration) -> Self {
        let open_for = Duration::from_nanos(saturating_nanos(open_for));
        BreakerSettings {
            failure_threshold: if failure_threshold == 0 {
                1
            } else {
                failure_threshold
            },
            open_for,
            success_threshold: 1,
            half_open_max: 1,
            failure_ratio: None,
        }
    }

    /// As [`CircuitBreaker::success_threshold`].
    pub const fn success_threshold(mut self, n: u32) -> Self {
        self.success_threshold = clamp_u16(n) as u32;
        self
    }

    /// As [`CircuitBreaker::half_open_max`].
    pub const fn half_open_max(mut self, n: u32) -> Self {
        self.half_open_max = clamp_u16(n) as u32;
        self
    }

    /// As [`CircuitBreaker::failure_ratio`].
    pub const fn failure_ratio(mut self, ratio: f64, window: Duration, min_calls: u32) -> Self {
        let rule = RatioRule::new(ratio, window, min_calls);
        self.failure_ratio = Some(FailureRatio {
            ratio: rule.ppm as f64 / 1_000_000.0,
            window: Duration::from_nanos(rule.bucket as u64 * BUCKETS as u64),
            min_calls: rule.min_calls,
        });
        self
    }

    /// No failure-ratio rule.
    pub const fn without_failure_ratio(mut self) -> Self {
        self.failure_ratio = None;
        self
    }

    /// The words the breaker keeps these settings in.
    pub(super) const fn words(&self) -> [u64; WORDS] {
        let (ppm, min_calls, bucket) = match self.failure_ratio {
            Some(r) => {
                let rule = RatioRule::new(r.ratio, r.window, r.min_calls);
                (rule.ppm, rule.min_calls as u64, rule.bucket as u64)
            }
            None => (NO_RATIO, 0, 0),
        };
        [
            self.failure_threshold as u64,
            saturating_nanos(self.open_for),
            clamp_u16(self.success_threshold) as u64,
            clamp_u16(self.half_open_max) as u64,
            ppm,
            min_calls,
            bucket,
        ]
    }

    fn from_words(w: [u64; WORDS]) -> Self {
        let rule = ratio_rule(&w);
        BreakerSettings {
            failure_threshold: (w[THRESHOLD] as u32).max(1),
            open_for: Duration::from_nanos(w[OPEN_FOR]),
            success_threshold: w[SUCCESSES] as u32,
            half_open_max: w[HALF_OPEN_MAX] as u32,
            failure_ratio: rule.map(|rule| FailureRatio {
                ratio: rule.ppm as f64 / 1_000_000.0,
                window: Duration::from_nanos((rule.bucket as u64).saturating_mul(BUCKETS as u64)),
                min_calls: rule.min_calls,
            }),
        }
    }
}

impl RatioRule {
    /// The rule as kept: the ratio in millionths (a NaN is 1), at least one call, and buckets
    /// of a tenth of the window, at least a nanosecond.
    pub(super) const fn new(ratio: f64, window: Duration, min_calls: u32) -> Self {
        let ppm = if ratio >= 1.0 || ratio.is_nan() {
            1_000_000
        } else if ratio > 0.0 {
            (ratio * 1_000_000.0 + 0.5) as u64
        } else {
            0
        };
        let bucket = nanos_i64(window) / BUCKETS as i64;
        RatioRule {
            ppm,
            min_calls: if min_calls == 0 { 1 } else { min_calls },
            bucket: if bucket < 1 { 1 } else { bucket },
        }
    }

    /// The rule's three words.
    pub(super) const fn words(self) -> [(usize, u64); 3] {
        [
            (RATIO_PPM, self.ppm),
            (RATIO_MIN_CALLS, self.min_calls as u64),
            (RATIO_BUCKET, self.bucket as u64),
        ]
    }
}

/// The ratio rule held in `w`, if any.
fn ratio_rule(w: &[u64; WORDS]) -> Option<RatioRule> {
    (w[RATIO_PPM] != NO_RATIO).then(|| RatioRule {
        ppm: w[RATIO_PPM],
        min_calls: w[RATIO_MIN_CALLS] as u32,
        bucket: (w[RATIO_BUCKET] as i64).max(1),
    })
}

/// A duration in nanoseconds, as the breaker counts its cool-down (`i64::MAX`, 292 years, past
/// that); never negative.
const fn saturating_nanos(d: Duration) -> u64 {
    nanos_i64(d) as u64
}

/// The settings of a breaker built by `CircuitBreaker::new`.
pub(super) const fn initial(failure_threshold: u32, open_for: Duration) -> [u64; WORDS] {
    BreakerSettings::new(failure_threshold, open_for).words()
}

impl CircuitBreaker {
    /// The settings now.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::CircuitBreaker;
    /// use std::time::Duration;
    ///
    /// let breaker = CircuitBreaker::new(5, Duration::from_secs(30)).half_open_max(3);
    /// let settings = breaker.settings();
    /// assert_eq!((settings.failure_threshold, settings.half_open_max), (5, 3));
    /// assert_eq!(settings.open_for, Duration::from_secs(30));
    /// ```
    pub fn settings(&self) -> BreakerSettings {
        BreakerSettings::from_words(self.settings.read())
    }

    /// Replace the settings while the breaker runs, keeping its state: an open breaker stays
    /// open, a half-open one keeps its probes, a closed one its count of failures.
    ///
    /// What each setting does to a breaker that is already in the phase it governs:
    /// - a lower `failure_threshold` opens a closed breaker at its next failure if the failures
    ///   counted already reach it;
    /// - a shorter `open_for` shortens a cool-down under way (no cool-down lasts longer than
    ///   `open_for`); a longer one applies from the next time the breaker opens;
    /// - a lower `half_open_max` admits no new probe until the running ones are fewer; a lower
    ///   `success_threshold` closes the breaker at the next probe success if enough have
    ///   succeeded;
    /// - a changed failure-ratio rule starts its window empty.
    ///
    /// Calls see the new settings as soon as this returns; a call that read the old ones a
    /// moment before finishes its step with them. Settings are read whole: no step sees half of
    /// the old settings and half of the new.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{testing, BreakerSettings, CircuitBreaker, CircuitState};
    /// use std::time::Duration;
    ///
    /// static DB: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60));
    /// testing::record_sleeps(|| {
    ///     DB.try_acquire().unwrap().failed();
    ///     assert_eq!(DB.state(), CircuitState::Open);
    ///
    ///     // Reconfigured while open: it stays open, for at most the new `open_for`.
    ///     DB.set_settings(BreakerSettings::new(5, Duration::from_secs(10)));
    ///     assert_eq!(DB.state(), CircuitState::Open);
    ///     let refused = DB.try_acquire().unwrap_err();
    ///     assert_eq!(refused.retry_after(), Duration::from_secs(10));
    /// });
    /// ```
    pub fn set_settings(&self, settings: BreakerSettings) {
        let words = settings.words();
        let mut rule_changed = false;
        self.settings.write(|old| {
            rule_changed = old[RATIO_PPM..] != words[RATIO_PPM..];
            *old = words;
        });
        if rule_changed {
            // Counted with other buckets, or by another rule: start the window again.
            self.clear_window();
        }
        self.publish_settings(self.settings());
    }

    /// Consecutive failures that open it, and the failure-ratio rule, as one write left them.
    pub(super) fn rules(&self) -> (u32, Option<RatioRule>) {
        let w = self.settings.read();
        ((w[THRESHOLD] as u32).max(1), ratio_rule(&w))
    }

    /// Consecutive failures that open it, now: one load, for a failure on the closed path
    /// (the whole settings are read only with a failure-ratio rule).
    #[inline]
    pub(super) fn threshold_now(&self) -> u32 {
        (self.settings.word(THRESHOLD) as u32).max(1)
    }

    /// The failure-ratio rule, if any.
    pub(super) fn ratio(&self) -> Option<RatioRule> {
        self.rules().1
    }

    /// Whether a failure-ratio rule is set: one load, for the success path.
    #[inline]
    pub(super) fn has_ratio(&self) -> bool {
        self.settings.word(RATIO_PPM) != NO_RATIO
    }

    /// `open_for` now.
    pub(super) fn open_for_now(&self) -> Duration {
        Duration::from_nanos(self.settings.word(OPEN_FOR))
    }

    /// `success_threshold` now.
    pub(super) fn successes_to_close(&self) -> u16 {
        clamp_u16(self.settings.word(SUCCESSES) as u32)
    }

    /// `half_open_max` now.
    pub(super) fn probes_at_once(&self) -> u16 {
        clamp_u16(self.settings.word(HALF_OPEN_MAX) as u32)
    }
}

/// The settings words of a breaker being built.
pub(super) type Words = Seqlock<WORDS>;
