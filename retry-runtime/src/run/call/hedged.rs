//! The engine's decisions for a hedged call (see [`hedge`](crate::run::hedge)): when another
//! attempt may start beside the running ones, and what follows each one's outcome.

use super::Call;
use crate::class::ErrorClass;
use crate::clock;
use crate::context::CallCtx;
use crate::run::classifier::Classifier;
use crate::run::hedge::{Ended, Then};
use crate::run::hook::Hook;
use crate::run::outcome::Outcome;
use crate::run::policy_call::CallPolicy;
use crate::run::protection::Protection;
use crate::run::stop::{Failure, Next, StopReason};
use std::time::Duration;

impl<'p, S: Protection<'p>, P: CallPolicy> Call<'p, S, P> {
    /// Hedged calls: whether another attempt may still start.
    #[inline]
    pub(in crate::run) fn may_start_more(&self) -> bool {
        self.attempt() < self.max_attempts
    }

    /// Hedged calls: count a new attempt (already admitted), and give it its own context and
    /// its share of the protection (the breaker permit its admission took).
    pub(in crate::run) fn begin_hedge(&mut self) -> (u32, CallCtx, S::Hold) {
        self.ctx.begin_attempt();
        self.protection.begin_attempt();
        let hold = self.protection.take_hold();
        (self.ctx.attempt(), self.ctx.for_hedge(), hold)
    }

    /// Hedged calls: admit one more attempt beside the running ones while another may start,
    /// the deadline has not passed, and the budget and the breaker allow it as they would a
    /// retry.
    pub(in crate::run) fn admit_hedge(&mut self) -> bool {
        if !self.may_start_more() {
            return false;
        }
        if let Some(deadline) = self.ctx.deadline {
            if clock::now() >= deadline {
                return false;
            }
        }
        self.protection.admit_retry(Ok(Duration::ZERO)).is_ok()
    }

    /// Decide what follows an attempt of a hedged call (see [`hedge`](crate::run::hedge)), calling
    /// the hook once if it failed.
    pub fn after_hedged<R, C, H>(
        &mut self,
        outcome: &R,
        ended: Ended<S::Hold>,
        classifier: &C,
        hook: &mut H,
    ) -> Then
    where
        R: Outcome,
        C: Classifier<R::Error>,
        H: Hook<R::Error>,
    {
        self.protection.put_hold(ended.hold);
        let Some(error) = outcome.error() else {
            self.protection.succeeded();
            if H::ACTIVE {
                hook.on_success(ended.number);
            }
            return Then::Return;
        };
        let class = if ended.timed_out {
            ErrorClass::IdempotentOnly
        } else {
            classifier.class(error)
        };
        let answered = C::ANSWERS && !ended.timed_out && classifier.answered(error);
        if answered {
            self.protection.answered();
        } else {
            self.protection.failed(class);
        }
        let next = match self.class_stop(class) {
            Some(reason) => Next::Stop(reason),
            None => {
                let verdict = match self.exhausted() {
                    Some(reason) => Err(reason),
                    None if C::LIMITS_REPEATS && !classifier.repeatable(error) => {
                        Err(StopReason::NotRepeatable)
                    }
                    // At once, or after the error's retry-after: the running attempts have
                    // already waited longer than a backoff would.
                    None => {
                        let max_delay = self.policy.policy().max_delay;
                        let verdict =
                            self.bounded(Duration::ZERO, classifier.retry_after(error), max_delay);
                        if answered {
                            self.protection.admit_poll(verdict)
                        } else {
                            self.protection.admit_retry(verdict)
                        }
                    }
                };
                match verdict {
                    Err(_) if ended.running > 0 => Next::Wait {
                        running: ended.running,
                    },
                    verdict => Next::of(verdict),
                }
            }
        };
        if H::ACTIVE {
            hook.on_failure(&Failure {
                attempt: ended.number,
                error,
                class,
                elapsed: self.elapsed(),
                next,
                answered,
            });
        }
        match next {
            Next::Retry(delay) => Then::Start(delay),
            Next::Wait { .. } => Then::Wait,
            Next::Stop(_) => Then::Return,
        }
    }
}
