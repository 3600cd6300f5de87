//! A [`CircuitBreaker`]'s part in the [`registry`](crate::registry): enlisted by its first
//! call when named, its state copied to its record after every change (all on slow paths),
//! and its [`status`](CircuitBreaker::status) as a snapshot lists it.

use super::word::Word;
use super::{BreakerSettings, CircuitBreaker, CircuitState, nanos_i64, ticks};
use crate::clock;
use crate::listing::{Listed, Lists, Recorded};
use crate::sync::Ordering;
use std::time::Duration;

/// One breaker in a [`Snapshot`](crate::registry::Snapshot), or [`CircuitBreaker::status`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BreakerStatus {
    /// Its [`name`](CircuitBreaker::name) (a `PerKey` entry's is its template's).
    pub name: Option<&'static str>,
    /// A `PerKey` entry's key, as text, where it is known ([`CircuitBreaker::key`]).
    pub key: Option<String>,
    /// What the next call would find: an open breaker whose cool-down is over is `HalfOpen`.
    pub state: CircuitState,
    /// While open: how long until it admits a probe.
    pub retry_after: Option<Duration>,
    /// Its settings.
    pub settings: BreakerSettings,
}

/// Every named breaker that has been used, and every live `PerKey` entry of breakers.
static BREAKERS: Lists<BreakerStatus> = Lists::new();

impl Recorded for CircuitBreaker {
    type Settings = BreakerSettings;
    type Status = BreakerStatus;
    fn lists() -> &'static Lists<BreakerStatus> {
        &BREAKERS
    }
    fn listed(
        name: &'static str,
        [word, until]: [u64; 2],
        settings: BreakerSettings,
    ) -> BreakerStatus {
        // `until` is an `i64` of ticks, kept bit for bit.
        status_of(Some(name), None, word, until as i64, settings)
    }
}

/// A `PerKey` entry lists itself, with its key.
impl Listed<BreakerStatus> for CircuitBreaker {
    fn list(&self, out: &mut dyn FnMut(BreakerStatus)) {
        out(self.status());
    }
}

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
fn status_of(
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
