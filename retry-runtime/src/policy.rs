//! Backoff shapes, jitter and caps: pure functions of the attempt number and a random draw.
//!
//! Nothing here reads a clock or a random generator; the loops in [`run`](crate::run) draw the
//! random number and pass it in, which is what makes every schedule testable and reproducible.

use std::time::Duration;

mod settings;

pub use settings::PolicySettings;

/// The shape of the delay after the k-th failed attempt (k counts from 1), before jitter.
///
/// | shape | delay after attempt k |
/// | --- | --- |
/// | `Exponential` | `base * multiplier^(k-1)` |
/// | `Fixed` | `base` |
/// | `Linear` | `base * k` |
///
/// Every shape is capped at the policy's `max_delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backoff {
    /// `base * multiplier^(k-1)`, the default.
    Exponential,
    /// `base` every time.
    Fixed,
    /// `base * k`.
    Linear,
}

/// How a computed delay `d` is randomised, so that callers that failed together do not retry
/// together.
///
/// | mode | sleep |
/// | --- | --- |
/// | `None` | `d` |
/// | `Full` (default) | uniform in `[0, d]` |
/// | `Equal` | `d/2 + uniform[0, d/2]` |
/// | `Decorrelated` | `min(max_delay, uniform[base, 3 * previous])`, `previous` starting at `base` |
/// | `Spread` | `d * uniform[0.8, 1.2]`, `d` capped at 5/6 of `max_delay` (gRPC's rule) |
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::Jitter;
/// use std::time::Duration;
///
/// let d = Duration::from_secs(8);
/// let (base, cap, prev) = (Duration::from_secs(1), Duration::from_secs(30), Duration::from_secs(1));
/// // The draw is a uniform u64; its extremes give the ends of each window.
/// assert_eq!(Jitter::None.apply(d, base, cap, prev, 12345), d);
/// assert_eq!(Jitter::Full.apply(d, base, cap, prev, 0), Duration::ZERO);
/// assert_eq!(Jitter::Equal.apply(d, base, cap, prev, 0), Duration::from_secs(4));
/// assert!(Jitter::Equal.apply(d, base, cap, prev, u64::MAX) <= d);
/// assert_eq!(Jitter::Decorrelated.apply(d, base, cap, prev, 0), base);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// No randomisation: every caller that failed together retries together.
    None,
    /// Uniform in `[0, d]`: the widest spread and lowest peak load; sometimes retries at once.
    Full,
    /// Keeps half of `d` and randomises the other half: never retries immediately.
    Equal,
    /// Ignores the attempt number: uniform in `[base, 3 * previous sleep]`, capped.
    ///
    /// `previous` is this call's previous jittered delay, starting at `base`. A longer wait
    /// imposed by an error's retry-after hint does not feed into it: the hint is the server's
    /// schedule, not ours, and letting it compound would triple every later wait.
    Decorrelated,
    /// A random factor in `[0.8, 1.2]` of the delay: gRPC's rule (gRFC A6 as amended, the
    /// waits of a service config's `retryPolicy`). Never 0, never far from the schedule. So
    /// that the spread stays under `max_delay` like every wait in the crate, the delay it
    /// spreads is capped at 5/6 of `max_delay` (a service config's `maxBackoff` is read as a
    /// `max_delay` of 1.2 × `maxBackoff`, which gives A6's waits exactly).
    Spread,
}

impl Jitter {
    /// Whether this mode consumes a random draw.
    #[inline]
    pub const fn needs_draw(self) -> bool {
        !matches!(self, Jitter::None)
    }

    /// Apply this mode to the computed delay `d`, given the policy's `base` and `cap`, the
    /// previous sleep of this call (for `Decorrelated`) and a uniform random `draw`.
    ///
    /// The result never exceeds `cap` and never panics, whatever the inputs.
    pub fn apply(
        self,
        d: Duration,
        base: Duration,
        cap: Duration,
        previous: Duration,
        draw: u64,
    ) -> Duration {
        let d = d.min(cap);
        match self {
            Jitter::None => d,
            Jitter::Full => scale(d, draw),
            Jitter::Equal => {
                let half = d / 2;
                half + scale(d - half, draw)
            }
            Jitter::Spread => {
                let d = d.as_nanos().min(cap.as_nanos() * 5 / 6);
                let (low, width) = (d * 4 / 5, d * 2 / 5);
                from_nanos_u128(low) + scale(from_nanos_u128(width), draw)
            }
            Jitter::Decorrelated => {
                let hi = previous.saturating_mul(3);
                let sleep = if hi <= base {
                    base
                } else {
                    base + scale(hi - base, draw)
                };
                sleep.min(cap)
            }
        }
    }
}

/// `d * draw / 2^64`: a uniform point of `[0, d)` for a uniform `draw`, exact to the nanosecond
/// and free of overflow for every `Duration`.
fn scale(d: Duration, draw: u64) -> Duration {
    let nanos = d.as_nanos(); // < 2^94 for every Duration
    let draw = u128::from(draw);
    let low = nanos & u128::from(u64::MAX);
    let high = nanos >> 64; // < 2^30
    let scaled = high * draw + ((low * draw) >> 64);
    from_nanos_u128(scaled)
}

fn from_nanos_u128(nanos: u128) -> Duration {
    let secs = nanos / 1_000_000_000;
    let sub = (nanos % 1_000_000_000) as u32; // < 10^9
    match u64::try_from(secs) {
        Ok(secs) => Duration::new(secs, sub),
        Err(_) => Duration::MAX,
    }
}

/// What an inner retryable call does when it runs inside another retryable call's attempt
/// (`#[retryable(nested = "retry" | "once")]`, or [`RetryPolicy::nested`]).
///
/// # Retries multiply across layers
///
/// When every layer of a call stack retries, the attempts multiply: a layer with `a` attempts
/// calls the layer below up to `a` times per call it receives, so with layers of `a1, a2, ...,
/// an` attempts the bottom service sees up to `a1 × a2 × ... × an` calls for one call at the
/// top. Three attempts at each of five layers is 3 × 3 × 3 × 3 × 3 = 3^5 = **243** calls to the
/// bottom service for one request — during an outage, exactly when it can least take them.
///
/// `Once` is the "retry at one layer" rule, opt-in per function: a call declared `once` that
/// runs inside another retryable call's attempt makes a single attempt and returns its error,
/// leaving the retrying to the outer layer. Declared on the four inner layers of the five
/// above, the bottom sees 3 calls (the top layer's attempts), not 243; declared on the bottom
/// layer only, 3^4 = 81. Outside any retryable attempt a `once` function retries as declared,
/// so it stays safe to call directly.
///
/// What a layer passes down:
/// - its deadline, always (with either mode): an inner call never starts a sleep that would end
///   past the earliest deadline of the calls around it;
/// - whether an attempt is running, which is what `Once` looks at. The outer call does not have
///   to retry itself: `once` inside an outer call with `attempts = 1` means nobody retries.
///
/// Both follow the attempt on its thread, and across `.await` points of an async body, but not
/// into work the body spawns onto other tasks or threads.
///
/// When a `once` call stops after its single attempt on an error that would otherwise have been
/// retried, its [`Failure`](crate::Failure) record says
/// [`StopReason::DeferredToOuter`](crate::StopReason::DeferredToOuter), not
/// `AttemptsExhausted`: the outer layer decides.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify};
/// use std::cell::Cell;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Unavailable;
///
/// #[retryable(attempts = 3, base = "0ms")]
/// fn handler(calls: &Cell<u32>) -> Result<(), Unavailable> {
///     repository(calls)
/// }
///
/// #[retryable(attempts = 3, base = "0ms", nested = "once")]
/// fn repository(calls: &Cell<u32>) -> Result<(), Unavailable> {
///     calls.set(calls.get() + 1);
///     Err(Unavailable)
/// }
///
/// let calls = Cell::new(0);
/// assert!(handler(&calls).is_err());
/// assert_eq!(calls.get(), 3, "3, not 3 x 3: only the handler retries");
///
/// calls.set(0);
/// assert!(repository(&calls).is_err());
/// assert_eq!(calls.get(), 3, "called directly, it retries as declared");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Nested {
    /// Retry as configured (the default). Attempts multiply with the layers around.
    Retry,
    /// Inside another retryable call's attempt, make a single attempt and leave retrying to the
    /// outer layer; elsewhere, retry as configured.
    Once,
}

/// A complete retry policy: how many attempts, how long to wait between them, and when to stop.
///
/// Every setting is a `const fn`, so a policy can live in a `const` or a `static` and be shared
/// between functions (`#[retryable(policy = MY_POLICY)]`).
///
/// | setting | default |
/// | --- | --- |
/// | attempts | 3 (the first included) |
/// | backoff | exponential |
/// | base | 100 ms |
/// | multiplier | 2.0 |
/// | max_delay | 30 s |
/// | jitter | full; none with a fixed backoff (unless [`jitter`](Self::jitter) says otherwise) |
/// | deadline | none |
/// | idempotent | false |
/// | nested | retry |
///
/// Out-of-range settings saturate rather than panic: `attempts(0)` means 1, a multiplier below
/// 1 or not a number means 1.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Jitter, RetryPolicy};
/// use std::time::Duration;
///
/// const POLICY: RetryPolicy = RetryPolicy::exponential(Duration::from_secs(1))
///     .max_delay(Duration::from_secs(300))
///     .jitter(Jitter::None)
///     .attempts(12);
///
/// let delays: Vec<u64> = (1..=11).map(|k| POLICY.nominal_delay(k).as_secs()).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    pub(crate) attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) base: Duration,
    pub(crate) multiplier: f64,
    pub(crate) max_delay: Duration,
    pub(crate) jitter: Jitter,
    /// `jitter` was given: the backoff shape no longer picks the default jitter.
    pub(crate) jitter_given: bool,
    pub(crate) deadline: Option<Duration>,
    pub(crate) idempotent: bool,
    pub(crate) nested: Nested,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new()
    }
}

impl RetryPolicy {
    /// The defaults: 3 attempts, exponential from 100 ms doubling, capped at 30 s, full jitter.
    pub const fn new() -> Self {
        RetryPolicy {
            attempts: 3,
            backoff: Backoff::Exponential,
            base: Duration::from_millis(100),
            multiplier: 2.0,
            max_delay: Duration::from_secs(30),
            jitter: Jitter::Full,
            jitter_given: false,
            deadline: None,
            idempotent: false,
            nested: Nested::Retry,
        }
    }

    /// Exponential backoff from `base` (the other settings at their defaults).
    pub const fn exponential(base: Duration) -> Self {
        RetryPolicy::new().backoff(Backoff::Exponential).base(base)
    }

    /// The same delay, `base`, after every failure, without jitter unless
    /// [`jitter`](Self::jitter) asks for it: fixed means fixed.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Jitter, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// let fixed = RetryPolicy::fixed(Duration::from_millis(1500));
    /// assert_eq!(fixed.settings().jitter, Jitter::None);
    /// // Asked for, in either order.
    /// let jittered = RetryPolicy::new().jitter(Jitter::Equal).backoff(retry_kit::Backoff::Fixed);
    /// assert_eq!(jittered.settings().jitter, Jitter::Equal);
    /// ```
    pub const fn fixed(base: Duration) -> Self {
        RetryPolicy::new().backoff(Backoff::Fixed).base(base)
    }

    /// A delay growing by `base` after every failure.
    pub const fn linear(base: Duration) -> Self {
        RetryPolicy::new().backoff(Backoff::Linear).base(base)
    }

    /// Total attempts, the first included. `0` saturates to `1`.
    pub const fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// The delay shape. Unless [`jitter`](Self::jitter) was given, a fixed shape waits its
    /// delay exactly (no jitter) and the others jitter in full.
    pub const fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        if !self.jitter_given {
            self.jitter = match backoff {
                Backoff::Fixed => Jitter::None,
                _ => Jitter::Full,
            };
        }
        self
    }

    /// The first delay (exponential), the delay (fixed) or the step (linear).
    pub const fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// The exponential growth factor. Below 1, or not a number, it saturates to 1.
    pub const fn multiplier(mut self, multiplier: f64) -> Self {
        // A NaN compares false, so it also becomes 1.
        self.multiplier = if multiplier >= 1.0 { multiplier } else { 1.0 };
        self
    }

    /// The cap on any one delay, after jitter and before a retry-after hint.
    pub const fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// How delays are randomised.
    pub const fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self.jitter_given = true;
        self
    }

    /// A total budget from the start of the first attempt: no sleep that would end past it is
    /// started. Time spent inside attempts counts.
    pub const fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Whether `IdempotentOnly` errors (outcome unknown) may be retried.
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// What to do when called inside another retryable call's attempt.
    pub const fn nested(mut self, nested: Nested) -> Self {
        self.nested = nested;
        self
    }

    /// Total attempts, the first included.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().attempts`: the settings are named as their keys"
    )]
    pub const fn max_attempts(&self) -> u32 {
        self.attempts
    }

    /// The jitter mode.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().jitter`: the settings are named as their keys"
    )]
    pub const fn jitter_mode(&self) -> Jitter {
        self.jitter
    }

    /// The deadline, if any.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().deadline`: the settings are named as their keys"
    )]
    pub const fn total_deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Whether `IdempotentOnly` errors may be retried.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().idempotent`: the settings are named as their keys"
    )]
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// The delay after failed attempt `k` (1-based) before jitter, capped at `max_delay`.
    ///
    /// Computed without overflow or panic for every `k` and every setting.
    pub fn nominal_delay(&self, k: u32) -> Duration {
        let k = k.max(1);
        let uncapped = match self.backoff {
            Backoff::Fixed => self.base,
            Backoff::Linear => self.base.saturating_mul(k),
            Backoff::Exponential => exponential(self.base, self.multiplier, k - 1, self.max_delay),
        };
        uncapped.min(self.max_delay)
    }

    /// The jittered delay after failed attempt `k`, given the previous sleep of this call
    /// (`base` before the first) and a uniform random `draw`. This is the sleep the retry loops
    /// use, before any retry-after hint.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{Jitter, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// let p = RetryPolicy::exponential(Duration::from_millis(100)).jitter(Jitter::Equal);
    /// let prev = Duration::from_millis(100);
    /// // Equal jitter keeps at least half of the 400 ms computed for the third failure.
    /// assert_eq!(p.jittered_delay(3, prev, 0), Duration::from_millis(200));
    /// assert!(p.jittered_delay(3, prev, u64::MAX) <= Duration::from_millis(400));
    /// ```
    pub fn jittered_delay(&self, k: u32, previous: Duration, draw: u64) -> Duration {
        self.jitter.apply(
            self.nominal_delay(k),
            self.base,
            self.max_delay,
            previous,
            draw,
        )
    }

    /// The first delay (or step) of the schedule.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().base`: the settings are named as their keys"
    )]
    pub const fn base_delay(&self) -> Duration {
        self.base
    }

    /// The cap on any one delay.
    #[deprecated(
        since = "0.1.0",
        note = "read `settings().max_delay`: the settings are named as their keys"
    )]
    pub const fn delay_cap(&self) -> Duration {
        self.max_delay
    }
}

/// `base * multiplier^n`, stopping at `cap`. Exact in integer nanoseconds while the value fits
/// 53 bits of mantissa, which covers every schedule below about 104 days.
fn exponential(base: Duration, multiplier: f64, n: u32, cap: Duration) -> Duration {
    if base.is_zero() || n == 0 {
        return base;
    }
    let cap_nanos = cap.as_nanos() as f64;
    let base_nanos = base.as_nanos() as f64;
    // The exponent of a float is bounded, so `powi` saturates to infinity instead of
    // overflowing, and `i32::MAX` exponents are as good as any larger one.
    let exp = i32::try_from(n).unwrap_or(i32::MAX);
    let nanos = base_nanos * multiplier.powi(exp);
    if nanos.is_nan() || nanos >= cap_nanos {
        return cap;
    }
    // `nanos < cap_nanos <= Duration::MAX in nanoseconds < 2^94`: the cast cannot saturate.
    from_nanos_u128(nanos.round() as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn exponential_schedule_with_cap_is_the_seed_table() {
        let p = RetryPolicy::exponential(S(1)).max_delay(S(300));
        let got: Vec<u64> = (1..=11).map(|k| p.nominal_delay(k).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }

    #[test]
    fn scale_is_exact_at_the_extremes() {
        assert_eq!(scale(Duration::MAX, 0), Duration::ZERO);
        assert!(scale(Duration::MAX, u64::MAX) < Duration::MAX);
        assert_eq!(scale(S(2), 1 << 63), S(1));
    }

    #[test]
    fn huge_attempt_numbers_saturate_at_the_cap() {
        let p = RetryPolicy::exponential(Duration::MAX).max_delay(Duration::MAX);
        assert_eq!(p.nominal_delay(u32::MAX), Duration::MAX);
        let l = RetryPolicy::linear(Duration::MAX).max_delay(S(5));
        assert_eq!(l.nominal_delay(u32::MAX), S(5));
    }
}
