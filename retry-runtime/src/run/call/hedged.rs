//! The engine's decisions for a hedged call (see [`Hedge`](crate::builder::Hedge)): when another
//! attempt may start beside the running ones, and what follows each one's outcome.

use super::Call;
use super::decide::{Failed, next_of};
use crate::clock;
use crate::context::CallCtx;
use crate::run::call_policy::CallPolicy;
use crate::run::classifier::Classifier;
use crate::run::hook::Hook;
use crate::run::outcome::Outcome;
use crate::run::protection::Protection;
use crate::stop::Next;

/// An attempt of a hedged call that finished, as the engine needs it to decide what follows
/// ([`Call::after_hedged`]).
#[derive(Debug)]
pub struct Ended<D> {
    /// The attempt's number.
    pub number: u32,
    /// Its share of the call's protection (its breaker permit), to record the outcome with.
    pub hold: D,
    /// Whether `attempt_timeout` cut it off (its class is then idempotent-only).
    pub timed_out: bool,
    /// How many attempts are still running.
    pub running: u32,
}

impl<'p, S: Protection<'p>, P: CallPolicy> Call<'p, S, P> {
    /// Hedged calls: whether another attempt may still start.
    #[inline]
    pub(in crate::run) fn may_start_more(&self) -> bool {
        self.attempt() < self.max_attempts()
    }

    /// Hedged calls: count a new attempt (already admitted), and give it its own context and
    /// its share of the protection (the breaker permit its admission took).
    pub(in crate::run) fn begin_hedge(&mut self) -> (u32, CallCtx, S::Hold) {
        self.ctx.begin_attempt();
        self.protection.begin_attempt();
        let hold = self.protection.take_hold();
        (self.ctx.attempt(), self.ctx.for_hedge(), hold)
    }

    /// Hedged calls: the call's own context (its key, which attempts side by side share).
    #[inline]
    pub(in crate::run) fn context(&self) -> &CallCtx {
        &self.ctx
    }

    /// Hedged calls: admit one more attempt beside the running ones while another may start,
    /// the deadline has not passed, and the protection admits it
    /// ([`Protection::admit_hedge`](crate::run::plumbing::Protection::admit_hedge)).
    pub(in crate::run) fn admit_hedge(&mut self) -> bool {
        if !self.may_start_more() {
            return false;
        }
        if let Some(deadline) = self.ctx.deadline {
            if clock::now() >= deadline {
                return false;
            }
        }
        self.protection.admit_hedge()
    }

    /// Decide what follows an attempt of a hedged call (see [`Hedge`](crate::builder::Hedge)), calling
    /// the hook once if it failed: the same decision as a sequential call's
    /// ([`after`](Call::after)), except that the next attempt starts at once (the running ones
    /// have already waited longer than a backoff) and a stop that is not the error's own waits
    /// for the attempts still running. The answer is the same [`Next`] a failure's record
    /// carries (`Retry` starts the next attempt after its wait, `Wait` starts none, `Stop`
    /// returns this attempt's outcome), or `None` when the attempt succeeded.
    pub fn after_hedged<R, C, H>(
        &mut self,
        outcome: &R,
        ended: Ended<S::Hold>,
        classifier: &C,
        hook: &mut H,
    ) -> Option<Next>
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
            return None;
        };
        let failed = Failed {
            number: ended.number,
            timed_out: ended.timed_out,
            running: Some(ended.running),
        };
        let verdict = self.decide(error, failed, classifier, hook);
        // A hedged call is never durable: no deferral, so no time for one.
        Some(next_of(verdict, failed.running, None))
    }
}
