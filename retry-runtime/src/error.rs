//! The crate's own errors, which a user's error type absorbs through `From`.

use crate::class::{Classify, ErrorClass};
use std::fmt;
use std::time::Duration;

/// An attempt ran longer than its `attempt_timeout` and was cancelled.
///
/// Its class is [`ErrorClass::IdempotentOnly`]: the cancelled attempt may already have done its
/// work on the remote side, so it is repeated only by functions declared `idempotent`.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Classify, ErrorClass, TimedOut};
/// use std::time::Duration;
///
/// let err = TimedOut::after(Duration::from_millis(250));
/// assert_eq!(err.class(), ErrorClass::IdempotentOnly);
/// assert_eq!(err.to_string(), "attempt timed out after 250ms");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedOut {
    limit: Duration,
}

impl TimedOut {
    /// A timeout of an attempt that was allowed `limit`.
    pub const fn after(limit: Duration) -> Self {
        TimedOut { limit }
    }

    /// How long the attempt was allowed to run.
    pub const fn limit(&self) -> Duration {
        self.limit
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attempt timed out after {:?}", self.limit)
    }
}

impl std::error::Error for TimedOut {}

impl Classify for TimedOut {
    fn class(&self) -> ErrorClass {
        ErrorClass::IdempotentOnly
    }
}

/// A circuit breaker refused the call because the dependency is considered down.
///
/// Its class is [`ErrorClass::Transient`] and its [`retry_after`](Classify::retry_after) is the
/// time until the breaker admits a probe, so an outer retry layer waits for exactly that long.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{CircuitOpen, Classify, ErrorClass};
/// use std::time::Duration;
///
/// let err = CircuitOpen::new(Duration::from_secs(3));
/// assert_eq!(err.class(), ErrorClass::Transient);
/// assert_eq!(err.retry_after(), Duration::from_secs(3));
/// assert_eq!(Classify::retry_after(&err), Some(Duration::from_secs(3)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitOpen {
    retry_after: Duration,
}

impl CircuitOpen {
    /// A refusal whose breaker admits its next probe after `retry_after`.
    pub const fn new(retry_after: Duration) -> Self {
        CircuitOpen { retry_after }
    }

    /// The time until the breaker admits its next probe.
    pub const fn retry_after(&self) -> Duration {
        self.retry_after
    }
}

/// Shown rounded up to the millisecond (`next probe in 30s`, not `29.999846191s`): the wait is
/// for a person to read; [`CircuitOpen::retry_after`] keeps it exact.
impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.retry_after.as_nanos().div_ceil(1_000_000);
        let shown = Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX));
        write!(
            f,
            "circuit open: the dependency is failing; next probe in {shown:?}"
        )
    }
}

impl std::error::Error for CircuitOpen {}

impl Classify for CircuitOpen {
    fn class(&self) -> ErrorClass {
        ErrorClass::Transient
    }
    fn retry_after(&self) -> Option<Duration> {
        Some(self.retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_shows_its_wait_rounded_up_to_the_millisecond() {
        let shown = |d| CircuitOpen::new(d).to_string();
        assert!(shown(Duration::from_nanos(29_999_846_191)).ends_with("next probe in 30s"));
        assert!(shown(Duration::from_micros(1)).ends_with("next probe in 1ms"));
        assert!(shown(Duration::ZERO).ends_with("next probe in 0ns"));
        // Saturates rather than overflowing; the exact wait stays in `retry_after`.
        assert!(shown(Duration::MAX).contains("next probe in"));
        assert_eq!(
            CircuitOpen::new(Duration::from_nanos(29_999_846_191)).retry_after(),
            Duration::from_nanos(29_999_846_191)
        );
    }
}
