//! A breaker as a [`PerKey`](crate::PerKey) entry: given to another key in place, labelled
//! late, and leased by calls under a tenancy (see `crate::tenancy`).

use super::word::Word;
use super::{CircuitBreaker, CircuitState};
use crate::sync::Ordering;

impl CircuitBreaker {
    /// Give this `PerKey` entry to another key: the calls that leased it for the old one
    /// record nothing from now on, and it starts closed with clean counts, labelled `key`.
    /// Probes still running keep their slots until they end (so the dependency never sees more
    /// than `half_open_max` at once). Called with the table's insertion lock held.
    pub(crate) fn recycle(&self, key: Option<Box<str>>) {
        self.tenancy.end(key, || {
            let _ = self
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                    let w = Word::unpack(cur);
                    Some(
                        Word {
                            phase: CircuitState::Closed,
                            generation: w.next_generation(),
                            in_flight: w.in_flight,
                            successes: 0,
                        }
                        .pack(),
                    )
                });
            self.failures.store(0, Ordering::Relaxed);
            self.clear_window();
            self.open_until.store(0, Ordering::Relaxed);
        });
        #[cfg(feature = "metrics")]
        self.first_used();
    }

    /// Label this `PerKey` entry with `key` if it still serves the key a lease taken under
    /// `tenancy` was for (see `Tenancy::label_late`).
    pub(crate) fn relabel(&self, tenancy: u32, key: Box<str>) -> bool {
        let labelled = self.tenancy.label_late(tenancy, key);
        #[cfg(feature = "metrics")]
        if labelled {
            self.first_used();
        }
        labelled
    }

    /// The tenancy a call that leases this breaker now holds it under.
    #[inline]
    pub(crate) fn tenancy(&self) -> u32 {
        self.tenancy.current()
    }
}
