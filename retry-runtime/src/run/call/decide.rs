//! The engine's one failure decision: what follows a failed attempt, for sequential and hedged
//! calls alike.

use super::Call;
use crate::class::ErrorClass;
use crate::run::call_policy::CallPolicy;
use crate::run::classifier::Classifier;
use crate::run::hook::Hook;
use crate::run::protection::Protection;
use crate::stop::{Failure, Next, StopCode, Verdict};
use std::time::Duration;
use std::time::SystemTime;

/// What the decision needs to know of a failed attempt besides its error.
#[derive(Clone, Copy, Debug)]
pub(in crate::run) struct Failed {
    /// The attempt's number.
    pub(in crate::run) number: u32,
    /// `attempt_timeout` cut it off: its class is idempotent-only, whatever the error says.
    pub(in crate::run) timed_out: bool,
    /// `None` for a sequential call: the next attempt waits the policy's backoff. For a hedged
    /// call, how many attempts are still running: the next one starts at once (they have
    /// already waited), and a stop that is not the error's own leaves them running.
    pub(in crate::run) running: Option<u32>,
}

impl<'p, S: Protection<'p>, P: CallPolicy> Call<'p, S, P> {
    /// Decide what follows a failed attempt, and tell the hook: the timeout's class, the
    /// protection's record (a failure, or an answer polled past), the stop the class decides,
    /// the attempt limit, whether the attempt can be repeated, the wait (bounded by the
    /// retry-after and the deadline) and the budget and breaker's admission of the next one.
    /// The verdict is the wait before the next attempt, or why there is none; for a hedged
    /// call, [`next_of`] says whether a stop waits for the attempts still running.
    // Always inlined: a failure is the path a retry loop exists for, and the rare work (a
    // non-zero delay, the hook's clock) stays out of line in `schedule_slow` and the hook.
    #[inline(always)]
    pub(in crate::run) fn decide<E, C, H>(
        &mut self,
        error: &E,
        failed: Failed,
        classifier: &C,
        hook: &mut H,
    ) -> Verdict
    where
        C: Classifier<E>,
        H: Hook<E>,
    {
        let class = if failed.timed_out {
            ErrorClass::IdempotentOnly
        } else {
            classifier.class(error)
        };
        let answered = C::ANSWERS && !failed.timed_out && classifier.answered(error);
        if answered {
            self.protection.answered();
        } else {
            self.protection.failed(class);
        }
        // A stop the error decides (gRPC's deadline) comes before the class's and the count's.
        let stop = classifier
            .stop_reason(error)
            .map(StopCode::from)
            .or_else(|| self.stop_for_class(class));
        // When a deferred call is due: `None` for every policy but the durable builder's.
        let mut deferred = None;
        let verdict = match stop {
            Some(code) => Err(code),
            None if C::LIMITS_REPEATS && !classifier.repeatable(error) => {
                Err(StopCode::NotRepeatable)
            }
            None => {
                let retry_after = classifier.retry_after(error);
                // Asked only of a hint; `None` for every classifier but gRPC's under a service
                // config, and inlined, so the branch folds away for them.
                let exact = retry_after.and_then(|_| classifier.exact_wait_limit());
                let verdict = match (failed.running, retry_after, exact) {
                    // The hint is the wait itself (gRPC's pushback): no backoff, no
                    // `max_delay`, but the classifier's own limit; the deadline still applies.
                    (_, Some(wait), Some(limit)) => self.bounded(Duration::ZERO, Some(wait), limit),
                    // A sequential call waits its backoff; so does a hedged call's poll past an
                    // answer (`retry_if`): a value is not a failure another attempt could
                    // outrun, and polling at once would hammer the dependency.
                    (None, _, _) => self.schedule(retry_after),
                    (Some(_), _, _) if answered => self.schedule(retry_after),
                    (Some(_), _, _) => {
                        let max_delay = self.policy.policy().max_delay;
                        self.bounded(Duration::ZERO, retry_after, max_delay)
                    }
                };
                let verdict = if answered {
                    self.protection.admit_poll(verdict)
                } else {
                    self.protection.admit_retry(verdict)
                };
                if let Some(limit) = self.policy.defer_after() {
                    deferred = self.defer(verdict, limit);
                }
                match deferred {
                    Some(_) => Err(StopCode::Deferred),
                    None => verdict,
                }
            }
        };
        if H::ACTIVE {
            hook.on_failure(&Failure {
                attempt: failed.number,
                error,
                class,
                elapsed: self.elapsed(),
                next: next_of(verdict, failed.running, deferred),
                answered,
            });
        }
        verdict
    }

    /// Hand the wait back instead of sleeping it (see [`CallPolicy::defer_after`]): a wait
    /// longer than `limit`, or a breaker that is open, becomes a stop until the wait ends (or
    /// the cool-down does). `Some(until)` when the call defers.
    #[cold]
    #[inline(never)]
    fn defer(&self, verdict: Verdict, limit: Duration) -> Option<SystemTime> {
        let wait = match verdict {
            Ok(wait) if wait > limit => wait,
            Err(StopCode::CircuitOpen) => self.protection.reopens_in().unwrap_or(Duration::ZERO),
            _ => return None,
        };
        let now = crate::clock::wall_now();
        Some(now.checked_add(wait).unwrap_or(now))
    }

    /// A stop decided by the class and the attempt count alone.
    #[inline]
    fn stop_for_class(&self, class: ErrorClass) -> Option<StopCode> {
        if let Some(reason) = self.class_stop(class) {
            return Some(reason);
        }
        self.exhausted()
    }

    /// A stop decided by the class alone: the error says another attempt is pointless.
    #[inline]
    fn class_stop(&self, class: ErrorClass) -> Option<StopCode> {
        match class {
            ErrorClass::Permanent => Some(StopCode::Permanent),
            ErrorClass::AlreadyDone => Some(StopCode::AlreadyDone),
            ErrorClass::IdempotentOnly if !self.policy.policy().idempotent => {
                Some(StopCode::NotIdempotent)
            }
            _ => None,
        }
    }

    /// Every allowed attempt has started.
    #[inline]
    pub(in crate::run) fn exhausted(&self) -> Option<StopCode> {
        if self.attempt() < self.max_attempts() {
            return None;
        }
        Some(limit_reached(self.max_attempts()))
    }
}

/// The stop of a call that has started every attempt it may. Cold: inlined, which of the two
/// it is was worked out before the branch, on every failed attempt that goes on.
#[cold]
#[inline(never)]
fn limit_reached(max_attempts: u32) -> StopCode {
    if max_attempts == 0 {
        StopCode::DeferredToOuter
    } else {
        StopCode::AttemptsExhausted
    }
}

/// What follows a failed attempt, given the verdict and, for a hedged call, how many attempts
/// are still running: a stop the error itself decides (permanent, "already done", not
/// idempotent) ends the call at once, as a fatal status commits a gRPC call; any other stop
/// only means no new attempt while some are still running.
#[inline]
pub(in crate::run) fn next_of(
    verdict: Verdict,
    running: Option<u32>,
    deferred: Option<SystemTime>,
) -> Next {
    match (verdict, running) {
        (Err(code), Some(running)) if running > 0 && !code.decided_by_error() => {
            Next::Wait { running }
        }
        (verdict, _) => Next::of(verdict, deferred),
    }
}
