//! The engine's wait before the next attempt: the policy's delay for this attempt, jittered,
//! stretched to the error's retry-after, and refused if it would end past the deadline.

use super::Call;
use crate::clock;
use crate::policy::Jitter;
use crate::rng;
use crate::run::call_policy::CallPolicy;
use crate::run::notes::sealed::Kept;
use crate::run::protection::Protection;
use crate::stop::{StopCode, Verdict};
use std::time::Duration;

impl<'p, S: Protection<'p>, P: CallPolicy> Call<'p, S, P> {
    /// The wait before the next attempt, or why there is none.
    #[inline]
    pub(super) fn schedule(&mut self, retry_after: Option<Duration>) -> Verdict {
        // Every shape and every jitter of a zero base is zero (decorrelated too: its previous
        // sleep starts at `base`). Without a hint or a deadline to check, the answer is a zero
        // wait: no random draw, no arithmetic, no out-of-line call. The previous sleep is
        // already 0 (none yet, or a zero one: the base of a call never changes).
        if self.base().is_zero() && retry_after.is_none() && self.ctx.deadline.is_none() {
            return Ok(Duration::ZERO);
        }
        self.schedule_slow(retry_after)
    }

    // Out of line, so that `schedule` stays small enough to inline into `failed`: a zero wait
    // then costs a few compares and no call.
    #[inline(never)]
    fn schedule_slow(&mut self, retry_after: Option<Duration>) -> Verdict {
        // Fields read through the declared policy; the policy in force (with an adaptive
        // tuning's first delay and multiplier) is put together only when a delay is computed:
        // copying it costs a run-time policy (the fn form) on every failed attempt.
        let source = self.policy;
        let declared = source.policy();
        let jittered = if self.base().is_zero() {
            Duration::ZERO
        } else {
            let draw = if declared.jitter.needs_draw() {
                rng::draw()
            } else {
                0
            };
            // Only decorrelated jitter reads the previous sleep: the others skip converting it.
            // Before the first sleep it is the first delay. (A decorrelated sleep is 0 only
            // when `max_delay` is, and then every delay is 0 whatever it reads.)
            let previous = match (declared.jitter, self.notes.previous()) {
                (Jitter::Decorrelated, 0) => self.base(),
                (Jitter::Decorrelated, nanos) => Duration::from_nanos(nanos),
                _ => Duration::ZERO,
            };
            self.policy().jittered_delay(self.attempt(), previous, draw)
        };
        // Kept whether or not the wait is allowed: a stop ends the call, which reads it no more.
        if declared.jitter == Jitter::Decorrelated {
            self.notes.set_previous(nanos(jittered));
        }
        self.bounded(jittered, retry_after, declared.max_delay)
    }

    /// The wait before the next attempt given the jittered delay and the error's retry-after:
    /// the longer of the two, or a stop if the hint exceeds `max_delay` or the wait would end
    /// after the deadline.
    #[inline(always)]
    pub(super) fn bounded(
        &mut self,
        jittered: Duration,
        retry_after: Option<Duration>,
        max_delay: Duration,
    ) -> Verdict {
        let wait = match retry_after {
            Some(hint) if hint > max_delay => {
                return Err(StopCode::RetryAfterTooLong);
            }
            Some(hint) => jittered.max(hint),
            None => jittered,
        };
        if let Some(deadline) = self.ctx.deadline {
            // A wait that ends exactly at the deadline is allowed.
            let ends = clock::now().checked_add(wait);
            if ends.is_none_or(|ends| ends > deadline) {
                return Err(StopCode::DeadlineExceeded);
            }
        }
        Ok(wait)
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}
