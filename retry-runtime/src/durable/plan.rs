//! [`Plan`] and [`RetryPolicy::plan`]: the engine's decision after a failed attempt, as data
//! for a scheduler that owns the waiting.

use super::RetryState;
use super::record::{AttemptRecord, bounded_text};
use crate::class::{Classify, ErrorClass};
use crate::clock;
use crate::policy::{Jitter, RetryPolicy};
use crate::rng;
use crate::stop::StopReason;
use std::fmt;
use std::time::Duration;

/// What a scheduler does after a failed attempt of a task, by [`RetryPolicy::plan`].
///
/// The seeds' separation of pause from discard: [`Quarantine`](Plan::Quarantine) is bad input
/// (retrying cannot help: keep it with its context for a person), [`Stop`](Plan::Stop) is a
/// limit reached (attempts, deadline, a wait longer than allowed: keep the input, resume later).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Plan {
    /// Run the task again after this wait (requeue it for `now + after`, or sleep if short).
    Retry {
        /// The wait before the next attempt: the policy's jittered delay, at least the error's
        /// retry-after.
        after: Duration,
    },
    /// The error is permanent (bad input, a schema mismatch): retrying cannot help. Set the
    /// task aside with its input, class and error text for a person.
    Quarantine,
    /// A limit was reached: stop, keeping the input so the task can be resumed later
    /// (attempts, the deadline, a retry-after longer than `max_delay`, an outcome that is
    /// unknown in a task not declared idempotent).
    Stop(StopReason),
    /// Nothing more to do: the attempt succeeded, or the receiver said the work was already
    /// done (an earlier attempt succeeded and only its answer was lost).
    Done,
}

impl fmt::Display for Plan {
    /// As a run log says it: `retry in 12s`, `quarantine`, `stop: attempts_exhausted`, `done`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Plan::Retry { after } => write!(f, "retry in {after:?}"),
            Plan::Quarantine => f.write_str("quarantine"),
            Plan::Stop(reason) => write!(f, "stop: {reason}"),
            Plan::Done => f.write_str("done"),
        }
    }
}

impl RetryPolicy {
    /// The decision after a failed attempt of a task whose state a scheduler keeps: the
    /// attempt is counted and recorded in `state` (with the error's class and text), and the
    /// plan says what to do next. The rules are the retry loop's own: the class decides first
    /// (permanent: [`Plan::Quarantine`]; already done: [`Plan::Done`]; idempotent-only in a
    /// policy not declared `idempotent`: a stop), then the attempt limit, then the wait (the
    /// jittered backoff for this attempt number, at least the error's retry-after, which stops
    /// the task if it exceeds `max_delay`), then the deadline, measured on the wall clock from
    /// the first attempt's start, so that it spans processes.
    ///
    /// A breaker or budget is not consulted: a scheduler that has one asks it before running
    /// the task (see `retry_kit::apalis` for a queue that does all of this).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::durable::{Plan, RetryState};
    /// use retry_kit::{RetryPolicy, StopReason};
    /// use std::{io, time::Duration};
    ///
    /// let policy = RetryPolicy::exponential(Duration::from_secs(1))
    ///     .jitter(retry_kit::Jitter::None)
    ///     .attempts(3);
    /// let reset = io::Error::from(io::ErrorKind::ConnectionReset);
    /// let mut state = RetryState::default();
    /// assert_eq!(policy.plan(&mut state, &reset), Plan::Retry { after: Duration::from_secs(1) });
    /// assert_eq!(policy.plan(&mut state, &reset), Plan::Retry { after: Duration::from_secs(2) });
    /// assert_eq!(policy.plan(&mut state, &reset), Plan::Stop(StopReason::AttemptsExhausted));
    /// assert_eq!(state.attempts(), 3);
    /// ```
    pub fn plan<E: Classify + fmt::Display + ?Sized>(
        &self,
        state: &mut RetryState,
        error: &E,
    ) -> Plan {
        let now = clock::wall_now();
        let started = state.attempt_started.take().unwrap_or(now);
        state.started.get_or_insert(started);
        state.attempts = state.attempts.saturating_add(1);
        let class = error.class();
        let next = self.next_plan(state, class, error.retry_after(), now);
        state.resume_at = match next {
            Plan::Retry { after } => now.checked_add(after),
            _ => None,
        };
        state.push(AttemptRecord {
            number: state.attempts,
            started,
            ended: now,
            class: Some(class),
            error: Some(bounded_text(error.to_string())),
            next,
        });
        next
    }

    /// The plan after the state's latest attempt failed with `class` and `retry_after`, as
    /// the engine decides it (`Call::decide`, `Call::schedule`).
    fn next_plan(
        &self,
        state: &mut RetryState,
        class: ErrorClass,
        retry_after: Option<Duration>,
        now: std::time::SystemTime,
    ) -> Plan {
        match class {
            ErrorClass::Permanent => return Plan::Quarantine,
            ErrorClass::AlreadyDone => return Plan::Done,
            ErrorClass::IdempotentOnly if !self.idempotent => {
                return Plan::Stop(StopReason::NotIdempotent);
            }
            _ => {}
        }
        if state.attempts >= self.attempts {
            return Plan::Stop(StopReason::AttemptsExhausted);
        }
        if retry_after.is_some_and(|hint| hint > self.max_delay) {
            return Plan::Stop(StopReason::RetryAfterTooLong);
        }
        let jittered = if self.base.is_zero() {
            Duration::ZERO
        } else {
            let draw = if self.jitter.needs_draw() {
                rng::draw()
            } else {
                0
            };
            let previous = match (self.jitter, state.previous_delay) {
                (Jitter::Decorrelated, Some(previous)) => previous,
                _ => self.base,
            };
            self.jittered_delay(state.attempts, previous, draw)
        };
        if self.jitter == Jitter::Decorrelated {
            state.previous_delay = Some(jittered);
        }
        let wait = retry_after.map_or(jittered, |hint| jittered.max(hint));
        if let (Some(deadline), Some(started)) = (self.deadline, state.started) {
            // A clock set back since the first attempt counts as no time passed.
            let elapsed = now.duration_since(started).unwrap_or_default();
            if elapsed.saturating_add(wait) > deadline {
                return Plan::Stop(StopReason::DeadlineExceeded);
            }
        }
        Plan::Retry { after: wait }
    }
}
