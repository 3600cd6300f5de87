//! [`CircuitBreaker`]: a shared switch that stops calls to a dependency that keeps failing, and
//! lets a few probes through after a cool-down to find out whether it has recovered.
//!
//! The state machine:
//!
//! - **Closed**: every call goes through. `failure_threshold` consecutive *retryable* failures
//!   (transient or idempotent-only, timeouts included) open it; so does the optional
//!   [failure-ratio rule](CircuitBreaker::failure_ratio). A permanent error is an answer from a
//!   healthy dependency and counts as a success.
//! - **Open**: every call is refused at once with [`CircuitOpen`], which carries the time left
//!   until the cool-down (`open_for`) ends.
//! - **HalfOpen**: the first call after the cool-down moves the breaker here. At most
//!   `half_open_max` probes run at once; `success_threshold` probe successes close it, and one
//!   probe failure opens it again for another `open_for`.
//!
//! Every decision on the hot path is one atomic load (closed) or a compare-and-swap (open and
//! half-open), so a breaker is cheap to share between threads and lives in a `static`. Time is
//! read through [`clock::now`], and only when the breaker is open or
//! trips, or in failure-ratio mode: under `#[tokio::test(start_paused = true)]` the cool-down
//! follows tokio's paused clock, and inside
//! [`testing::record_sleeps`](crate::testing::record_sleeps) it follows the virtual clock.

use crate::clock;
use crate::error::CircuitOpen;
use crate::listing::Listing;
use crate::sync::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use crate::tenancy::Tenancy;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

mod entry;
#[cfg(feature = "redis")]
mod fleet;
mod listing;
mod permit;
mod reconfigure;
mod settings;
mod window;
mod word;

pub use listing::BreakerStatus;
pub use permit::CircuitPermit;
use permit::Outcome;
pub use reconfigure::{BreakerSettings, FailureRatio};
use word::Word;

/// The state of a [`CircuitBreaker`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitState {
    /// Calls go through; retryable failures are counted.
    Closed,
    /// Calls are refused until the cool-down ends.
    Open,
    /// A limited number of probe calls go through to test the dependency.
    HalfOpen,
}

impl CircuitState {
    /// The snake-case name used in logs, such as `half_open`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The number of buckets the failure-ratio window is kept in.
const BUCKETS: usize = 10;

/// A circuit breaker shared by every call that names it, typically a `static`.
///
/// `CircuitBreaker::new(failure_threshold, open_for)` opens after `failure_threshold`
/// consecutive retryable failures and stays open for `open_for`; the `const fn` settings below
/// tune the half-open phase and add a failure-ratio rule. With `#[retryable(circuit = PATH)]`
/// the breaker is consulted before every attempt:
///
/// - a breaker that refuses the **first** attempt makes the function return
///   `E::from(CircuitOpen)` without running the body (so `E` needs `From<CircuitOpen>`);
/// - a breaker that refuses a **retry** stops the loop with
///   [`StopReason::CircuitOpen`](crate::StopReason::CircuitOpen), and the function returns the
///   last real error. The retry is admitted when it is scheduled, before its backoff sleep, and
///   keeps its permit through the sleep.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, CircuitBreaker, CircuitOpen, CircuitState, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// enum ApiError {
///     #[classify(transient)]
///     Unavailable,
///     #[classify(delegate)]
///     Open(CircuitOpen),
/// }
///
/// impl From<CircuitOpen> for ApiError {
///     fn from(open: CircuitOpen) -> Self {
///         ApiError::Open(open)
///     }
/// }
///
/// static PAYMENTS: CircuitBreaker = CircuitBreaker::new(3, Duration::from_secs(10))
///     .success_threshold(2)
///     .half_open_max(1);
///
/// #[retryable(attempts = 1, circuit = PAYMENTS)]
/// async fn charge(up: bool, calls: &mut u32) -> Result<(), ApiError> {
///     *calls += 1;
///     if up { Ok(()) } else { Err(ApiError::Unavailable) }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut calls = 0;
/// for _ in 0..3 {
///     assert!(matches!(charge(false, &mut calls).await, Err(ApiError::Unavailable)));
/// }
/// assert_eq!(PAYMENTS.state(), CircuitState::Open);
///
/// // Refused without running the body, with the time until the next probe.
/// let Err(ApiError::Open(open)) = charge(true, &mut calls).await else { panic!() };
/// assert_eq!(open.retry_after(), Duration::from_secs(10));
/// assert_eq!(calls, 3);
///
/// // After the cool-down two successful probes close it again.
/// tokio::time::advance(Duration::from_secs(10)).await;
/// assert_eq!(PAYMENTS.state(), CircuitState::HalfOpen);
/// charge(true, &mut calls).await.unwrap();
/// charge(true, &mut calls).await.unwrap();
/// assert_eq!(PAYMENTS.state(), CircuitState::Closed);
/// # }
/// ```
///
/// Without the attribute, take a [`CircuitPermit`] per call with
/// [`try_acquire`](Self::try_acquire), or give the breaker to [`Retry::circuit`](crate::Retry::circuit).
///
/// Settings are clamped rather than rejected: a threshold of 0 means 1, and
/// `success_threshold` and `half_open_max` are capped at 65 535.
pub struct CircuitBreaker {
    /// Failure threshold, `open_for`, probe counts and the failure-ratio rule, replaceable
    /// while the breaker runs ([`set_settings`](Self::set_settings)).
    settings: reconfigure::Words,
    hook: Option<fn(CircuitState, CircuitState)>,
    /// Called with the breaker itself, so that a `PerKey` entry's hook can tell its key.
    hook_of: Option<fn(&CircuitBreaker, CircuitState, CircuitState)>,
    /// The name its `tracing` events carry.
    name: Option<&'static str>,
    /// Which key a `PerKey` entry serves now, and its text (the layers' `host:port`, a
    /// `#[retryable(key = ..)]` key's `Display`); a breaker of its own is never reset.
    tenancy: Tenancy,
    /// Its record in the [`registry`](crate::registry), once its first call enlisted it (a named
    /// breaker's state word starts marked [`Word::UNLISTED`] for that call to find).
    listing: Listing<CircuitBreaker>,
    /// Phase, generation, probes in flight and probe successes, packed by [`Word`].
    state: AtomicU64,
    /// Consecutive retryable failures while closed.
    failures: AtomicU32,
    /// When the current open phase ends, in [`ticks`].
    open_until: AtomicI64,
    /// The failure-ratio window, used only when `ratio` is set.
    window: [AtomicU64; BUCKETS],
    /// Calls refused since a fleet exchange last asked (feature `redis`): whether this process
    /// wants a probe lease while the fleet is half-open. Counted on the refusing path only.
    #[cfg(feature = "redis")]
    refused: AtomicU32,
}

impl CircuitBreaker {
    /// The current state.
    ///
    /// An open breaker whose cool-down has ended turns half-open here (calling the hook) rather
    /// than waiting for the next call, so what this returns is what the next call will see.
    pub fn state(&self) -> CircuitState {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(cur);
            if w.phase != CircuitState::Open {
                return w.phase;
            }
            match self.end_cool_down(cur, w) {
                Ok(next) => return next.phase,
                Err(Some(_)) => return CircuitState::Open,
                Err(None) => cur = self.state.load(Ordering::Acquire),
            }
        }
    }

    /// Ask to make one call. While closed this is a single atomic load.
    ///
    /// The permit records the call's outcome: [`succeeded`](CircuitPermit::succeeded),
    /// [`failed`](CircuitPermit::failed) or [`record`](CircuitPermit::record) by error class.
    /// A permit dropped without an outcome (the call was cancelled) counts as neither; one
    /// dropped while its thread panics counts as a failure.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{testing, CircuitBreaker, CircuitState};
    /// use std::time::Duration;
    ///
    /// let breaker = CircuitBreaker::new(2, Duration::from_secs(30));
    /// // On this thread's virtual clock, which stands still unless a retry sleeps.
    /// testing::record_sleeps(|| {
    ///     breaker.try_acquire().unwrap().failed();
    ///     breaker.try_acquire().unwrap().failed();
    ///     let refused = breaker.try_acquire().unwrap_err();
    ///     assert_eq!(refused.retry_after(), Duration::from_secs(30));
    /// });
    /// assert_eq!(breaker.state(), CircuitState::Open);
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<CircuitPermit<'_>, CircuitOpen> {
        let tenancy = self.tenancy.current();
        let cur = self.state.load(Ordering::Acquire);
        if cur >> 62 == 0 {
            // Closed: the only check on the hot path.
            return Ok(CircuitPermit::new(
                self,
                Word::unpack(cur).generation,
                false,
                tenancy,
            ));
        }
        self.acquire_slow(cur, tenancy)
    }

    /// [`try_acquire`](Self::try_acquire) for a call that leased this breaker under `tenancy`
    /// (see [`Lease`](crate::per_key::Lease)): if the entry has served another key since, the
    /// permit records nothing, as for a key the table no longer remembers.
    #[inline]
    pub(crate) fn acquire_as(&self, tenancy: u32) -> Result<CircuitPermit<'_>, CircuitOpen> {
        let cur = self.state.load(Ordering::Acquire);
        if cur >> 62 == 0 && self.tenancy.holds(tenancy) {
            // Closed: the only check on the hot path (and, for a `PerKey` entry, its tenancy,
            // on the same cache line).
            return Ok(CircuitPermit::new(
                self,
                Word::unpack(cur).generation,
                false,
                tenancy,
            ));
        }
        self.acquire_slow(cur, tenancy)
    }

    #[cold]
    fn acquire_slow(&self, mut cur: u64, tenancy: u32) -> Result<CircuitPermit<'_>, CircuitOpen> {
        loop {
            if !self.tenancy.holds(tenancy) {
                return Ok(CircuitPermit::lapsed());
            }
            let w = Word::unpack(cur);
            match w.phase {
                CircuitState::Closed => {
                    if cur & Word::UNLISTED == Word::UNLISTED {
                        // A named breaker's first call: enlist it, then clear the mark (a lost
                        // race means another call cleared it, or the state moved on without it).
                        self.enlist();
                        #[cfg(feature = "metrics")]
                        self.first_used();
                        let listed = cur & !Word::UNLISTED;
                        let _ = self.state.compare_exchange(
                            cur,
                            listed,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
                    }
                    return Ok(CircuitPermit::new(self, w.generation, false, tenancy));
                }
                CircuitState::Open => match self.end_cool_down(cur, w) {
                    Ok(next) => cur = next.pack(),
                    Err(Some(left)) => {
                        #[cfg(feature = "redis")]
                        self.refused.fetch_add(1, Ordering::Relaxed);
                        return Err(CircuitOpen::new(left));
                    }
                    Err(None) => cur = self.state.load(Ordering::Acquire),
                },
                CircuitState::HalfOpen => {
                    if w.in_flight >= self.probes_at_once() {
                        #[cfg(feature = "redis")]
                        self.refused.fetch_add(1, Ordering::Relaxed);
                        return Err(CircuitOpen::new(Duration::ZERO));
                    }
                    let next = Word {
                        in_flight: w.in_flight + 1,
                        ..w
                    };
                    match self.swap(cur, next) {
                        Ok(()) => {
                            return Ok(CircuitPermit::new(self, w.generation, true, tenancy));
                        }
                        Err(actual) => cur = actual,
                    }
                }
            }
        }
    }

    /// Move an open breaker whose cool-down is over to half-open. `Err(Some(left))`: still
    /// open for `left`; `Err(None)`: the state changed under us, read it again.
    fn end_cool_down(&self, cur: u64, w: Word) -> Result<Word, Option<Duration>> {
        let now = ticks(clock::now());
        let mut until = self.open_until.load(Ordering::Acquire);
        let longest = now.saturating_add(nanos_i64(self.open_for_now()));
        if until > longest {
            // Stamped on another clock (virtual time that ran ahead, in a test sharing this
            // static): no cool-down lasts longer than `open_for` on the clock that asks.
            until = match self.open_until.compare_exchange(
                until,
                longest,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => longest,
                Err(actual) => actual.min(longest),
            };
        }
        if now < until {
            return Err(Some(Duration::from_nanos(until.abs_diff(now))));
        }
        let next = Word {
            phase: CircuitState::HalfOpen,
            generation: w.next_generation(),
            // Probes of an earlier half-open phase still running count against this one.
            in_flight: w.in_flight,
            successes: 0,
        };
        match self.swap(cur, next) {
            Ok(()) => {
                self.notify(CircuitState::Open, CircuitState::HalfOpen);
                Ok(next)
            }
            Err(actual) => {
                let actual = Word::unpack(actual);
                if actual.phase == CircuitState::Open {
                    Err(None)
                } else {
                    Ok(actual)
                }
            }
        }
    }

    fn swap(&self, cur: u64, next: Word) -> Result<(), u64> {
        self.state
            .compare_exchange(cur, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            .map(|_| self.publish())
    }

    /// A named breaker's first use (a `PerKey` entry's: when it starts to serve a key):
    /// its `retry_kit_circuit_state` series from now on, so that a dashboard lists every named
    /// breaker, not only those that have changed state.
    #[cfg(feature = "metrics")]
    #[cold]
    pub(crate) fn first_used(&self) {
        if let Some(name) = self.name {
            let state = Word::unpack(self.state.load(Ordering::Acquire)).phase;
            crate::meter::circuit_state(name, self.key().as_deref(), gauge(state));
        }
    }

    fn notify(&self, from: CircuitState, to: CircuitState) {
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        let key = self.key();
        #[cfg(feature = "metrics")]
        crate::meter::circuit_state(self.name.unwrap_or("unnamed"), key.as_deref(), gauge(to));
        #[cfg(feature = "tracing")]
        {
            let breaker = self.name.unwrap_or("unnamed");
            let key = key.as_deref();
            let opened = to == CircuitState::Open;
            let (from, to) = (from.as_str(), to.as_str());
            if opened {
                tracing::warn!(target: "retry_kit", breaker, key, from, to, "circuit breaker opened");
            } else {
                tracing::info!(target: "retry_kit", breaker, key, from, to, "circuit breaker state changed");
            }
        }
        if let Some(hook) = self.hook {
            hook(from, to);
        }
        if let Some(hook) = self.hook_of {
            hook(self, from, to);
        }
    }

    /// The key of a [`PerKey`](crate::PerKey) entry, as text, when the code that made the entry
    /// knew it: the tower and reqwest layers key entries by the request's authority written
    /// `host:port` (`"api.example:443"`), and `#[retryable(key = ..)]` by the key's `Display`
    /// text (else its `Debug` text). `None` for a breaker of its own, or for an entry made by
    /// [`PerKey::get`](crate::PerKey::get) until a call that knows its key's text uses it.
    ///
    /// An entry keeps its place in the table only while its key does: when a full table gives
    /// the place to another key, the entry is reset in place and this names the new key.
    pub fn key(&self) -> Option<Arc<str>> {
        self.tenancy.key()
    }

    /// Open the breaker from the state `cur`, if it is still in `w`'s phase and generation
    /// (closed, or half-open after a failed probe, which `release_probe` frees). A change of
    /// the word that leaves the phase as it was (a leftover probe ending, another probe
    /// starting) does not cancel the trip: it is tried again on the new word. The caller
    /// reports the change (`notify`) once it is out of its tenancy's write.
    #[cold]
    fn trip(&self, mut cur: u64, w: Word, release_probe: bool) -> bool {
        // Publish the end of the cool-down before the state that makes readers look at it.
        let until = ticks(clock::now()).saturating_add(nanos_i64(self.open_for_now()));
        self.open_until.store(until, Ordering::Release);
        loop {
            let now = Word::unpack(cur);
            if now.phase != w.phase || now.generation != w.generation {
                return false;
            }
            let in_flight = if release_probe {
                now.in_flight.saturating_sub(1)
            } else {
                now.in_flight
            };
            let next = Word {
                phase: CircuitState::Open,
                generation: now.next_generation(),
                in_flight,
                successes: 0,
            };
            match self.swap(cur, next) {
                Ok(()) => break,
                Err(actual) => cur = actual,
            }
        }
        self.failures.store(0, Ordering::Relaxed);
        self.clear_window();
        true
    }

    /// Whether the breaker has nothing to remember: closed, no probe running, no failure
    /// counted since it last closed or succeeded (a `PerKey` table gives such a place away
    /// first).
    pub(crate) fn is_idle(&self) -> bool {
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        w.phase == CircuitState::Closed
            && w.in_flight == 0
            && self.failures.load(Ordering::Relaxed) == 0
            && (!self.has_ratio()
                || self
                    .window
                    .iter()
                    .all(|slot| word::Bucket::unpack(slot.load(Ordering::Relaxed)).failures == 0))
    }

    #[inline]
    fn closed_success(&self, tenancy: u32) {
        // Write only when needed, so concurrent successes do not contend on the line.
        if self.failures.load(Ordering::Relaxed) != 0 || self.has_ratio() {
            self.tenancy.write(tenancy, || self.clean_success());
        }
    }

    #[cold]
    fn clean_success(&self) {
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
        if let Some(rule) = self.ratio() {
            self.window_record(rule, false);
        }
    }

    #[cold]
    fn closed_failure(&self, generation: u32, tenancy: u32) {
        if self
            .tenancy
            .write(tenancy, || self.count_failure(generation))
            == Some(true)
        {
            self.notify(CircuitState::Closed, CircuitState::Open);
        }
    }

    /// Count a failure while closed; whether it opened the breaker.
    fn count_failure(&self, generation: u32) -> bool {
        let cur = self.state.load(Ordering::Acquire);
        let w = Word::unpack(cur);
        if w.phase != CircuitState::Closed || w.generation != generation {
            // The outcome of a call admitted before the breaker last opened.
            return false;
        }
        let failures = match self
            .failures
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(1))
            }) {
            Ok(n) | Err(n) => n.saturating_add(1),
        };
        let mut open = failures >= self.threshold_now();
        if let Some(rule) = self.has_ratio().then(|| self.ratio()).flatten() {
            let (calls, failed) = self.window_record(rule, true);
            open |= calls >= u64::from(rule.min_calls)
                && failed.saturating_mul(1_000_000) >= rule.ppm.saturating_mul(calls);
        }
        open && self.trip(cur, w, false)
    }

    /// A probe ended. Its slot is freed whatever the phase now (so the number of probes running
    /// never exceeds `half_open_max`, even across phases, and across keys for a `PerKey` entry
    /// given to another key meanwhile); its verdict counts only if its half-open phase is still
    /// the current one, of the key it was admitted for.
    fn probe_done(&self, generation: u32, outcome: Outcome, tenancy: u32) {
        let changed = match self
            .tenancy
            .write(tenancy, || self.probe_verdict(generation, outcome))
        {
            Some(changed) => changed,
            None => {
                self.probe_verdict(generation, Outcome::Neither);
                None
            }
        };
        if let Some(to) = changed {
            self.notify(CircuitState::HalfOpen, to);
        }
    }

    /// Free a probe's slot and count its verdict; the state it moved the breaker to, if any.
    fn probe_verdict(&self, generation: u32, outcome: Outcome) -> Option<CircuitState> {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(cur);
            let freed = Word {
                in_flight: w.in_flight.saturating_sub(1),
                ..w
            };
            let current = w.phase == CircuitState::HalfOpen && w.generation == generation;
            let next = match outcome {
                _ if !current => freed,
                Outcome::Failure => {
                    if self.trip(cur, w, true) {
                        return Some(CircuitState::Open);
                    }
                    // The phase ended meanwhile: only free the slot.
                    cur = self.state.load(Ordering::Acquire);
                    continue;
                }
                Outcome::Neither => freed,
                Outcome::Success => {
                    let successes = w.successes.saturating_add(1);
                    if successes >= self.successes_to_close() {
                        Word {
                            phase: CircuitState::Closed,
                            generation: w.next_generation(),
                            in_flight: freed.in_flight,
                            successes: 0,
                        }
                    } else {
                        Word { successes, ..freed }
                    }
                }
            };
            let closes = current && next.phase == CircuitState::Closed;
            if closes {
                // Start the closed phase with clean counts; stale outcomes are filtered by
                // generation, so clearing first loses nothing.
                self.failures.store(0, Ordering::Relaxed);
                self.clear_window();
            }
            match self.swap(cur, next) {
                Ok(()) => return closes.then_some(CircuitState::Closed),
                Err(actual) => cur = actual,
            }
        }
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        let settings = self.settings();
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("key", &self.key())
            .field("phase", &w.phase)
            .field("failures", &self.failures.load(Ordering::Relaxed))
            .field("probes_in_flight", &w.in_flight)
            .field("failure_threshold", &settings.failure_threshold)
            .field("open_for", &settings.open_for)
            .field("success_threshold", &settings.success_threshold)
            .field("half_open_max", &settings.half_open_max)
            .field("failure_ratio", &settings.failure_ratio.map(|r| r.ratio))
            .finish_non_exhaustive()
    }
}

const fn clamp_u16(n: u32) -> u16 {
    if n == 0 {
        1
    } else if n > u16::MAX as u32 {
        u16::MAX
    } else {
        n as u16
    }
}

const fn nanos_i64(d: Duration) -> i64 {
    let n = d.as_nanos();
    if n > i64::MAX as u128 {
        i64::MAX
    } else {
        n as i64
    }
}

/// Nanoseconds since a process-wide origin (the first instant any breaker read), negative for
/// earlier instants: an `Instant` cannot be built in a `const fn`, but an integer can be
/// stored in an atomic of a `static`.
fn ticks(t: Instant) -> i64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(|| t);
    match t.checked_duration_since(origin) {
        Some(after) => nanos_i64(after),
        None => nanos_i64(origin.saturating_duration_since(t)).saturating_neg(),
    }
}

/// The value of the `retry_kit_circuit_state` gauge for `state`.
#[cfg(feature = "metrics")]
fn gauge(state: CircuitState) -> f64 {
    match state {
        CircuitState::Closed => 0.0,
        CircuitState::HalfOpen => 1.0,
        CircuitState::Open => 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_word_round_trips() {
        for w in [
            Word::CLOSED,
            Word {
                phase: CircuitState::HalfOpen,
                generation: Word::GENERATION_MASK,
                in_flight: u16::MAX,
                successes: u16::MAX,
            },
            Word {
                phase: CircuitState::Open,
                generation: 7,
                in_flight: 0,
                successes: 3,
            },
        ] {
            assert_eq!(Word::unpack(w.pack()), w);
        }
        let last = Word {
            generation: Word::GENERATION_MASK,
            ..Word::CLOSED
        };
        assert_eq!(last.next_generation(), 0);
        // A named breaker before its first call: closed, and off the hot path's check.
        let unlisted = Word::CLOSED.pack() | Word::UNLISTED;
        assert_eq!(Word::unpack(unlisted), Word::CLOSED);
        assert_ne!(unlisted >> 62, 0);
    }

    #[test]
    fn ticks_before_the_origin_are_negative() {
        // The origin is the first instant any breaker read (perhaps in another test); find it
        // from a reading now, whichever side of it `now` is.
        let now = Instant::now();
        let since = ticks(now);
        let origin = if since >= 0 {
            now - Duration::from_nanos(since.unsigned_abs())
        } else {
            now + Duration::from_nanos(since.unsigned_abs())
        };
        assert_eq!(ticks(origin), 0);
        if let Some(before) = origin.checked_sub(Duration::from_secs(1)) {
            assert_eq!(ticks(before), -1_000_000_000);
        }
        assert_eq!(ticks(origin + Duration::from_secs(1)), 1_000_000_000);
    }
}
