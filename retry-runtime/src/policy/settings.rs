//! [`PolicySettings`]: a [`RetryPolicy`] read back under the names of its keys.

use super::{Backoff, Jitter, Nested, RetryPolicy};
use std::time::Duration;

/// A [`RetryPolicy`]'s settings as a plain value, each field named as the `#[retryable]` key
/// (and the configuration key, feature `serde`) that sets it: what
/// [`RetryPolicy::settings`] returns, for a health endpoint, a log line at start-up or a test
/// of what a configuration file said.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Backoff, Jitter, RetryPolicy};
/// use std::time::Duration;
///
/// let policy = RetryPolicy::exponential(Duration::from_millis(250))
///     .attempts(5)
///     .max_delay(Duration::from_secs(10))
///     .jitter(Jitter::Equal)
///     .deadline(Duration::from_secs(30));
/// let settings = policy.settings();
/// assert_eq!(settings.attempts, 5);
/// assert_eq!(settings.backoff, Backoff::Exponential);
/// assert_eq!(settings.base, Duration::from_millis(250));
/// assert_eq!(settings.max_delay, Duration::from_secs(10));
/// assert_eq!(settings.jitter, Jitter::Equal);
/// assert_eq!(settings.deadline, Some(Duration::from_secs(30)));
/// assert!(!settings.idempotent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct PolicySettings {
    /// Total attempts, the first included (`attempts`).
    pub attempts: u32,
    /// The delay shape (`backoff`).
    pub backoff: Backoff,
    /// The first delay, or the step of a linear backoff (`base`).
    pub base: Duration,
    /// The growth factor of an exponential backoff (`multiplier`).
    pub multiplier: f64,
    /// The cap on any one delay (`max_delay`).
    pub max_delay: Duration,
    /// The randomisation of each delay (`jitter`): the one in force, whether it was given or
    /// chosen by the backoff shape (none for a fixed backoff, full for the others).
    pub jitter: Jitter,
    /// Whether idempotent-only errors are retried (`idempotent`).
    pub idempotent: bool,
    /// The total time from the first attempt, if any (`deadline`).
    pub deadline: Option<Duration>,
    /// What a call inside another retryable call's attempt does (`nested`).
    pub nested: Nested,
}

impl RetryPolicy {
    /// The settings, under the names of the keys that set them.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::RetryPolicy;
    ///
    /// const POLICY: RetryPolicy = RetryPolicy::new().attempts(4);
    /// assert_eq!(POLICY.settings().attempts, 4);
    /// assert_eq!(POLICY.settings().deadline, None);
    /// ```
    pub const fn settings(&self) -> PolicySettings {
        PolicySettings {
            attempts: self.attempts,
            backoff: self.backoff,
            base: self.base,
            multiplier: self.multiplier,
            max_delay: self.max_delay,
            jitter: self.jitter,
            idempotent: self.idempotent,
            deadline: self.deadline,
            nested: self.nested,
        }
    }
}
