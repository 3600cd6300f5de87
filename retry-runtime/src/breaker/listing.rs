//! A [`CircuitBreaker`]'s part in the [`registry`](crate::registry): enlisted by its first
//! call when named, its state copied to its record after every change (all on slow paths),
//! and its [`status`](CircuitBreaker::status) as a snapshot lists it.

use super::word::Word;
use super::{BreakerSettings, CircuitBreaker, CircuitState, nanos_i64, ticks};
use crate::clock;
use crate::registry::BreakerStatus;
use crate::sync::Ordering;
use std::time::Duration;

impl CircuitBreaker {
    /// Enlist a named breaker in the registry, at its first call.
    #[cold]
    pub(super) fn enlist(&self) {
        self.listing
            .enlist(self.name, || self.settings(), || self.raw_state());
    }

    /// Copy the state to the registry's record, if this breaker has one.
    pub(super) fn publish(&self) {
        self.listing.publish(|| self.raw_state());
    }

    /// Copy new settings to the registry's record, if this breaker has one.
    pub(super) fn publish_settings(&self, settings: BreakerSettings) {
        self.listing.publish_settings(settings);
    }

    /// The state word and the end of the cool-down (an `i64` of ticks, bit for bit), as
    /// stored.
    fn raw_state(&self) -> [u64; 2] {
        [
            self.state.load(Ordering::SeqCst),
            self.open_until.load(Ordering::SeqCst) as u64,
        ]
    }
}

impl CircuitBreaker {
    /// This breaker's state, settings, name and key now, as
    /// [`registry::snapshot`](crate::registry::snapshot) lists it.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{CircuitBreaker, CircuitState};
    /// use std::time::Duration;
    ///
    /// let breaker = CircuitBreaker::new(2, Duration::from_secs(5)).name("db");
    /// let status = breaker.status();
    /// assert_eq!((status.name, status.state, status.retry_after), (Some("db"), CircuitState::Closed, None));
    /// ```
    pub fn status(&self) -> BreakerStatus {
        // The key and the state read together: a `PerKey` entry given to another key meanwhile
        // is listed under the key whose state it shows.
        let (key, [word, until]) = self.tenancy.read(|key| (key, self.raw_state()));
        status_of(
            self.label(),
            key.map(|key| key.to_string()),
            word,
            // Kept bit for bit.
            until as i64,
            self.settings(),
        )
    }
}

/// A breaker's status from its state word, the end of its cool-down and its settings: what
/// the next call would find, read without changing anything.
pub(crate) fn status_of(
    name: Option<&'static str>,
    key: Option<String>,
    word: u64,
    until: i64,
    settings: BreakerSettings,
) -> BreakerStatus {
    let w = Word::unpack(word);
    let (state, retry_after) = match w.phase {
        CircuitState::Open => {
            let now = ticks(clock::now());
            // No cool-down lasts longer than `open_for` on the clock that asks.
            let until = until.min(now.saturating_add(nanos_i64(settings.open_for)));
            if now < until {
                let left = Duration::from_nanos(until.abs_diff(now));
                (CircuitState::Open, Some(left))
            } else {
                (CircuitState::HalfOpen, None)
            }
        }
        phase => (phase, None),
    };
    BreakerStatus {
        name,
        key,
        state,
        retry_after,
        settings,
    }
}
