//! A [`CircuitBreaker`]'s construction and settings: `const fn`s, so that a breaker can be a
//! `static`. Its state machine is in the parent module.

use super::reconfigure::{self, HALF_OPEN_MAX, SUCCESSES};
use super::window::RatioRule;
use super::word::Word;
use super::{BUCKETS, CircuitBreaker, CircuitState, clamp_u16};
use crate::listing::Listing;
use crate::seqlock::Seqlock;
use crate::sync::{AtomicI64, AtomicU32, AtomicU64, const_unless_loom};
use crate::tenancy::Tenancy;
use std::time::Duration;

impl CircuitBreaker {
    const_unless_loom! {
        /// A breaker that opens after `failure_threshold` consecutive retryable failures and stays
        /// open for `open_for` before admitting a probe. A probe success closes it
        /// (`success_threshold` 1), and one probe runs at a time (`half_open_max` 1).
        pub const fn new(failure_threshold: u32, open_for: Duration) -> Self {
            CircuitBreaker {
                settings: Seqlock::new(reconfigure::initial(failure_threshold, open_for)),
                hook: None,
                hook_of: None,
                name: None,
                tenancy: Tenancy::own(),
                listing: Listing::new(false),
                state: AtomicU64::new(Word::CLOSED.pack()),
                failures: AtomicU32::new(0),
                open_until: AtomicI64::new(0),
                window: empty_window(),
                #[cfg(feature = "redis")]
                refused: AtomicU32::new(0),
            }
        }
    }

    const_unless_loom! {
        /// How many probe successes close a half-open breaker (default 1; 0 means 1).
        ///
        /// It may exceed `half_open_max`: probes are then admitted as earlier ones finish, until
        /// enough have succeeded.
        pub const fn success_threshold(mut self, n: u32) -> Self {
            self.settings = self.settings.with(SUCCESSES, clamp_u16(n) as u64);
            self
        }
    }

    const_unless_loom! {
        /// How many probes may run at once while half-open (default 1; 0 means 1). Further calls
        /// are refused with a [`CircuitOpen`](crate::CircuitOpen) whose `retry_after` is zero,
        /// since a slot frees up as soon as a probe ends. A probe keeps its slot until it ends even
        /// if the breaker has reopened meanwhile, so the dependency never sees more than this many
        /// probes at once.
        pub const fn half_open_max(mut self, n: u32) -> Self {
            self.settings = self.settings.with(HALF_OPEN_MAX, clamp_u16(n) as u64);
            self
        }
    }

    const_unless_loom! {
        /// Also open when failures make up at least `ratio` of the outcomes seen in the last
        /// `window`, once at least `min_calls` outcomes were seen there: the failure-rate rule of
        /// resilience4j's time-based window and Polly's advanced breaker.
        ///
        /// Both rules apply: the breaker opens on whichever is met first. For the ratio alone,
        /// pass `u32::MAX` as `failure_threshold`. `ratio` is clamped to `0.0..=1.0` and kept to
        /// six decimal places (a NaN means 1.0). The window is kept as ten buckets of `window / 10`,
        /// so outcomes leave it a tenth of the window at a time, and each bucket counts up to about
        /// a million outcomes (further ones in that bucket are not sampled). Opening, and closing
        /// again, clear it. In this mode every call reads the clock to record its outcome.
        ///
        /// ```
        /// # extern crate retry_runtime as retry_kit;
        /// use retry_kit::{CircuitBreaker, CircuitState};
        /// use std::time::Duration;
        ///
        /// // Open when half the calls of the last 30 s failed, once 20 calls were seen.
        /// static SEARCH: CircuitBreaker = CircuitBreaker::new(u32::MAX, Duration::from_secs(5))
        ///     .failure_ratio(0.5, Duration::from_secs(30), 20);
        ///
        /// for i in 0..19 {
        ///     let permit = SEARCH.try_acquire().unwrap();
        ///     if i % 2 == 0 { permit.failed() } else { permit.succeeded() }
        /// }
        /// assert_eq!(SEARCH.state(), CircuitState::Closed); // 10 of 19: too few calls yet
        /// SEARCH.try_acquire().unwrap().failed();
        /// assert_eq!(SEARCH.state(), CircuitState::Open); // 11 of 20 failed
        /// ```
        pub const fn failure_ratio(mut self, ratio: f64, window: Duration, min_calls: u32) -> Self {
            let words = RatioRule::new(ratio, window, min_calls).words();
            let mut i = 0;
            while i < words.len() {
                self.settings = self.settings.with(words[i].0, words[i].1);
                i += 1;
            }
            self
        }
    }

    const_unless_loom! {
        /// Name the breaker, for its `tracing` events (the `breaker` field; `"unnamed"` without).
        ///
        /// With the `tracing` feature every state change is an event with target `retry_kit` and
        /// the fields `breaker`, `from` and `to` (`closed`, `open`, `half_open`): `WARN` when it
        /// opens, `INFO` otherwise.
        ///
        /// ```
        /// # extern crate retry_runtime as retry_kit;
        /// use retry_kit::CircuitBreaker;
        /// use std::time::Duration;
        ///
        /// static PAYMENTS: CircuitBreaker =
        ///     CircuitBreaker::new(5, Duration::from_secs(30)).name("payments");
        /// assert_eq!(PAYMENTS.label(), Some("payments"));
        /// ```
        pub const fn name(mut self, name: &'static str) -> Self {
            self.name = Some(name);
            // Enlisted in the registry by its first call, which finds the mark.
            self.state = AtomicU64::new(Word::CLOSED.pack() | Word::UNLISTED);
            self
        }
    }

    /// A closed breaker with this one's settings, as an entry of a [`PerKey`](crate::PerKey)
    /// labelled `key`.
    pub(crate) fn entry_copy(&self, key: Option<Box<str>>) -> Self {
        CircuitBreaker {
            settings: Seqlock::new(self.settings.read()),
            hook: self.hook,
            hook_of: self.hook_of,
            name: self.name,
            tenancy: Tenancy::leased(key),
            // The table it belongs to lists it, with its key.
            listing: Listing::new(false),
            state: AtomicU64::new(Word::CLOSED.pack()),
            failures: AtomicU32::new(0),
            open_until: AtomicI64::new(0),
            window: empty_window(),
            #[cfg(feature = "redis")]
            refused: AtomicU32::new(0),
        }
    }

    /// The name given by [`name`](Self::name), if any.
    pub const fn label(&self) -> Option<&'static str> {
        self.name
    }

    /// Call `hook(from, to)` on every state change, on the thread that made it.
    ///
    /// Changes happen inside calls: a failure that trips the breaker, the first call (or
    /// [`state`](Self::state) read) after the cool-down, the probe that closes or reopens it.
    /// Keep the hook short (record a metric, log a line); it must not call back into this
    /// breaker's permits.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{CircuitBreaker, CircuitState};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::time::Duration;
    ///
    /// static OPENED: AtomicU32 = AtomicU32::new(0);
    ///
    /// fn changed(from: CircuitState, to: CircuitState) {
    ///     if to == CircuitState::Open {
    ///         OPENED.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     println!("breaker {from} -> {to}");
    /// }
    ///
    /// static DB: CircuitBreaker =
    ///     CircuitBreaker::new(1, Duration::from_secs(1)).on_state_change(changed);
    /// DB.try_acquire().unwrap().failed();
    /// assert_eq!(OPENED.load(Ordering::Relaxed), 1);
    /// ```
    pub const fn on_state_change(mut self, hook: fn(CircuitState, CircuitState)) -> Self {
        self.hook = Some(hook);
        self
    }

    /// As [`on_state_change`](Self::on_state_change), with the breaker itself: for the
    /// template of a [`PerKey`](crate::PerKey), each entry's hook can tell which key changed
    /// ([`key`](Self::key)).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{CircuitBreaker, CircuitState, PerKey, retryable, Classify, CircuitOpen};
    /// use std::sync::Mutex;
    /// use std::time::Duration;
    ///
    /// static OPENED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    ///
    /// fn changed(breaker: &CircuitBreaker, _: CircuitState, to: CircuitState) {
    ///     if to == CircuitState::Open {
    ///         OPENED.lock().unwrap().push(breaker.key().as_deref().unwrap_or("?").to_owned());
    ///     }
    /// }
    ///
    /// static HOSTS: PerKey<CircuitBreaker> =
    ///     PerKey::new(CircuitBreaker::new(1, Duration::from_secs(30)).on_state_change_of(changed));
    ///
    /// #[derive(Debug, Classify)]
    /// #[classify(transient)]
    /// struct Down;
    /// impl From<CircuitOpen> for Down {
    ///     fn from(_: CircuitOpen) -> Self { Down }
    /// }
    ///
    /// #[retryable(attempts = 1, circuit = HOSTS, key = host)]
    /// fn fetch(host: &str) -> Result<(), Down> {
    ///     Err(Down)
    /// }
    ///
    /// let _ = fetch("b.example");
    /// assert_eq!(*OPENED.lock().unwrap(), ["b.example"]);
    /// ```
    pub const fn on_state_change_of(
        mut self,
        hook: fn(&CircuitBreaker, CircuitState, CircuitState),
    ) -> Self {
        self.hook_of = Some(hook);
        self
    }
}

/// An empty failure-ratio window.
#[cfg(not(loom))]
const fn empty_window() -> [AtomicU64; BUCKETS] {
    [const { AtomicU64::new(0) }; BUCKETS]
}

/// An empty failure-ratio window (loom's atomics are not const-constructible).
#[cfg(loom)]
fn empty_window() -> [AtomicU64; BUCKETS] {
    std::array::from_fn(|_| AtomicU64::new(0))
}
