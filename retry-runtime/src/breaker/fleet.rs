//! The fleet's hooks into a breaker (feature `redis`): a [`FleetBreaker`]'s exchange reads the
//! local breaker's phase and sets it to the fleet's.
//!
//! [`FleetBreaker`]: crate::fleet::FleetBreaker

use super::word::Word;
use super::{CircuitBreaker, CircuitState, nanos_i64, ticks};
use crate::clock;
use crate::sync::Ordering;
use std::time::Duration;

impl CircuitBreaker {
    /// The phase and generation now (an open breaker whose cool-down is over reads as open:
    /// the fleet, not the local cool-down, decides when it turns half-open).
    pub(crate) fn phase_word(&self) -> (CircuitState, u32) {
        let w = Word::unpack(self.state.load(Ordering::Acquire));
        (w.phase, w.generation)
    }

    /// Calls refused since the last time this was asked.
    pub(crate) fn take_refused(&self) -> u32 {
        self.refused.swap(0, Ordering::Relaxed)
    }

    /// Set the phase to `phase` in a new generation, whatever it was: open for `open_for`
    /// (on this process's clock), or half-open with `reserved` of its probe slots taken
    /// (so that it admits only the probes the fleet leased it), or closed with clean counts.
    /// `released` reserved slots of the previous phase are given back. The new generation.
    pub(crate) fn force(
        &self,
        phase: CircuitState,
        open_for: Duration,
        released: u16,
        reserved: u16,
    ) -> u32 {
        if phase == CircuitState::Open {
            let until = ticks(clock::now()).saturating_add(nanos_i64(open_for));
            self.open_until.store(until, Ordering::Release);
        }
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(cur);
            let in_flight = w.in_flight.saturating_sub(released);
            let next = Word {
                phase,
                generation: w.next_generation(),
                in_flight: if phase == CircuitState::HalfOpen {
                    in_flight.saturating_add(reserved)
                } else {
                    in_flight
                },
                successes: 0,
            };
            match self.swap(cur, next) {
                Ok(()) => {
                    if phase != CircuitState::HalfOpen {
                        self.failures.store(0, Ordering::Relaxed);
                        self.clear_window();
                    }
                    if w.phase != phase {
                        self.notify(w.phase, phase);
                    }
                    return next.generation;
                }
                Err(actual) => cur = actual,
            }
        }
    }
}
