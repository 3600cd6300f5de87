//! [`CircuitPermit`]: permission for one call through a breaker, consumed with its outcome.

use super::CircuitBreaker;
use crate::class::ErrorClass;
use std::fmt;

#[derive(Clone, Copy)]
pub(super) enum Outcome {
    Success,
    Failure,
    Neither,
}

/// Permission for one call through a [`CircuitBreaker`], from
/// [`try_acquire`](CircuitBreaker::try_acquire). Consume it with the call's outcome.
///
/// Dropping it unconsumed releases it as neither success nor failure (a cancelled call
/// tells nothing about the dependency), or as a failure if the thread is panicking. Permits
/// the crate's own retry loops hold are the exception: the loop records a panic against the
/// one attempt that panicked, so its other permits dropped by the same unwind (a hedge's
/// siblings, a call beside it in a `join!`) count as neither.
#[must_use = "a permit records nothing unless given the call's outcome"]
pub struct CircuitPermit<'b> {
    breaker: Option<&'b CircuitBreaker>,
    /// The breaker's generation when the permit was given (30 bits, see `Word`), in the top
    /// bit whether it is a probe, and in the next whether a retry loop holds it. One word, not a `u32` and a `bool`: moving the permit
    /// into a call then read the `bool` back with a 4-byte load after a 1-byte store, a
    /// store-to-load forwarding stall on every protected call.
    stamp: u32,
}

const PROBE: u32 = 1 << 31;
/// Held by one of the crate's loops, which records a panic itself (its `PanicGuard`).
const MANAGED: u32 = 1 << 30;
const GENERATION: u32 = MANAGED - 1;

impl<'b> CircuitPermit<'b> {
    #[inline]
    pub(super) fn new(breaker: &'b CircuitBreaker, generation: u32, probe: bool) -> Self {
        debug_assert!(generation & !GENERATION == 0, "generations are 30 bits");
        CircuitPermit {
            breaker: Some(breaker),
            stamp: generation | if probe { PROBE } else { 0 },
        }
    }

    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.stamp & PROBE != 0
    }

    #[inline]
    fn generation(&self) -> u32 {
        self.stamp & GENERATION
    }

    /// Hand the permit to a retry loop that records panics itself: dropped unconsumed, even
    /// during an unwind, it counts as neither success nor failure.
    #[inline]
    pub(crate) fn managed(mut self) -> Self {
        self.stamp |= MANAGED;
        self
    }

    /// The call succeeded (or got an answer: a permanent error).
    #[inline]
    pub fn succeeded(mut self) {
        self.finish(Outcome::Success);
    }

    /// The call failed in a way worth retrying: the dependency may be unhealthy.
    pub fn failed(mut self) {
        self.finish(Outcome::Failure);
    }

    /// Record a failed call by its class: a transient or idempotent-only error is a failure;
    /// a permanent one or an "already done" is an answer from a healthy dependency, so it
    /// counts as a success.
    pub fn record(self, class: ErrorClass) {
        if class.is_failure() {
            self.failed()
        } else {
            self.succeeded()
        }
    }

    #[inline]
    fn finish(&mut self, outcome: Outcome) {
        let Some(breaker) = self.breaker.take() else {
            return;
        };
        match (self.is_probe(), outcome) {
            (false, Outcome::Success) => breaker.closed_success(),
            (false, Outcome::Failure) => breaker.closed_failure(self.generation()),
            (false, Outcome::Neither) => {}
            (true, outcome) => breaker.probe_done(self.generation(), outcome),
        }
    }
}

impl Drop for CircuitPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.breaker.is_some() {
            let outcome = if self.stamp & MANAGED == 0 && std::thread::panicking() {
                Outcome::Failure
            } else {
                Outcome::Neither
            };
            self.finish(outcome);
        }
    }
}

impl fmt::Debug for CircuitPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitPermit")
            .field("probe", &self.is_probe())
            .field("pending", &self.breaker.is_some())
            .finish()
    }
}
