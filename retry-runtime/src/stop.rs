//! Why a retry loop stops, what it does after a failed attempt, and the record of that attempt:
//! the engine's decisions as data, below the engine ([`run`](crate::run) re-exports them) and
//! the observers that report them (`meter`, [`observe`](crate::observe)).

use crate::class::ErrorClass;
use std::time::Duration;

/// Why a retry loop stopped and returned the last error.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The error is permanent: it would fail the same way again.
    Permanent,
    /// The outcome of the attempt is unknown and the function is not declared idempotent.
    NotIdempotent,
    /// Every allowed attempt was made.
    AttemptsExhausted,
    /// The next wait would end after the deadline, or (the gRPC layer) the deadline passed
    /// while the attempt ran.
    DeadlineExceeded,
    /// The shared retry budget refused the retry.
    BudgetExhausted,
    /// The circuit breaker is open.
    CircuitOpen,
    /// The error asked for a wait longer than the policy's `max_delay`.
    RetryAfterTooLong,
    /// The call runs inside another retryable call's attempt and is declared
    /// `nested = "once"`: it made its single attempt and leaves retrying to the outer layer.
    ///
    /// A reason of its own rather than `AttemptsExhausted`, because an operator reading
    /// "attempts exhausted" after attempt 1 of a function declared with 5 attempts would look
    /// for a bug in the policy; this says the retry is deferred, not given up: the outer
    /// layer's record of the same failure shows whether it retries.
    DeferredToOuter,
    /// The error says the work was already done: an earlier attempt succeeded and only its
    /// answer was lost ([`ErrorClass::AlreadyDone`]).
    AlreadyDone,
    /// The request cannot be sent again, whatever its error's class: its body was not kept
    /// for a replay (longer than the bound, a stream, a source that failed). The HTTP front
    /// ends stop with it; the class still tells the breaker and the budget what happened.
    NotRepeatable,
    /// The call hands its wait back instead of sleeping it ([`defer_after`](crate::builder::Durable::defer_after)):
    /// the next wait was longer than the call may sleep, or the breaker is open. Run the call
    /// again at `until` (a scheduler re-queues it), continuing from its
    /// [`RetryState`](crate::durable::RetryState).
    Deferred {
        /// When the next attempt may start, on the wall clock of the process that stopped.
        until: std::time::SystemTime,
    },
}

impl StopReason {
    /// The snake-case name used in logs and events, such as `attempts_exhausted`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Permanent => "permanent",
            StopReason::NotIdempotent => "not_idempotent",
            StopReason::AttemptsExhausted => "attempts_exhausted",
            StopReason::DeadlineExceeded => "deadline_exceeded",
            StopReason::BudgetExhausted => "budget_exhausted",
            StopReason::CircuitOpen => "circuit_open",
            StopReason::RetryAfterTooLong => "retry_after_too_long",
            StopReason::DeferredToOuter => "deferred_to_outer",
            StopReason::AlreadyDone => "already_done",
            StopReason::NotRepeatable => "not_repeatable",
            StopReason::Deferred { .. } => "deferred",
        }
    }
}

impl StopReason {
    /// The reason named `name` ([`as_str`](Self::as_str)), as a persisted run log spells it.
    #[cfg(feature = "serde")]
    pub(crate) fn from_name(name: &str) -> Option<StopReason> {
        Some(match name {
            "permanent" => StopReason::Permanent,
            "not_idempotent" => StopReason::NotIdempotent,
            "attempts_exhausted" => StopReason::AttemptsExhausted,
            "deadline_exceeded" => StopReason::DeadlineExceeded,
            "budget_exhausted" => StopReason::BudgetExhausted,
            "circuit_open" => StopReason::CircuitOpen,
            "retry_after_too_long" => StopReason::RetryAfterTooLong,
            "deferred_to_outer" => StopReason::DeferredToOuter,
            "already_done" => StopReason::AlreadyDone,
            "not_repeatable" => StopReason::NotRepeatable,
            // Its time is read beside the name (a run log's `until`).
            "deferred" => StopReason::Deferred {
                until: std::time::SystemTime::UNIX_EPOCH,
            },
            _ => return None,
        })
    }

    /// Whether the failed attempt's own error decided the stop (its class), rather than the
    /// call's limits or its protection. Every reason is listed: a new one does not compile
    /// until it is placed on one side.
    #[inline]
    pub(crate) const fn decided_by_error(self) -> bool {
        match self {
            StopReason::Permanent | StopReason::NotIdempotent | StopReason::AlreadyDone => true,
            StopReason::AttemptsExhausted
            | StopReason::DeadlineExceeded
            | StopReason::BudgetExhausted
            | StopReason::CircuitOpen
            | StopReason::RetryAfterTooLong
            | StopReason::DeferredToOuter
            | StopReason::NotRepeatable
            | StopReason::Deferred { .. } => false,
        }
    }

    /// How many reasons there are: one more than the largest [`index`](Self::index).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) const COUNT: usize = 11;

    /// This reason's place in a table with one for each reason (the metrics' kept counters):
    /// `0..COUNT`, each reason its own. A new reason does not compile until it has one.
    #[inline]
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) const fn index(self) -> usize {
        match self {
            StopReason::Permanent => 0,
            StopReason::NotIdempotent => 1,
            StopReason::AttemptsExhausted => 2,
            StopReason::DeadlineExceeded => 3,
            StopReason::BudgetExhausted => 4,
            StopReason::CircuitOpen => 5,
            StopReason::RetryAfterTooLong => 6,
            StopReason::DeferredToOuter => 7,
            StopReason::AlreadyDone => 8,
            StopReason::NotRepeatable => 9,
            StopReason::Deferred { .. } => 10,
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens after a failed attempt.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Sleep this long, then make the next attempt.
    Retry(Duration),
    /// Stop and return this attempt's error.
    Stop(StopReason),
    /// Hedged calls only (see [`Retry::hedge`](crate::Retry::hedge)): start no attempt now,
    /// and wait for the `running` attempts still in flight. The first of them to succeed is the
    /// call's result; if all fail, the last one's record says why the call stops.
    Wait {
        /// How many attempts are still running.
        running: u32,
    },
}

/// The engine's verdict on a failed attempt before it becomes a [`Next`]: the wait before the
/// next attempt, or why there is none. A `Result` rather than [`Next`] inside the engine, and
/// a [`StopCode`] rather than a [`StopReason`]: it has the layout of `Option<Duration>`, so
/// turning it into the loop's answer costs nothing, where a `StopReason` (with `Deferred`'s
/// time) would make it 24 bytes, passed through memory on every failed attempt.
pub type Verdict = Result<Duration, StopCode>;

/// A [`StopReason`] as the engine passes it between its steps: the same reasons in one byte,
/// [`Deferred`](StopCode::Deferred) without its time (a call that defers knows it, and puts it
/// in the [`Failure`] its hook gets). Each reason has one code and each code one reason: a new
/// reason does not compile until it has its code.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::StopReason;
/// use retry_kit::run::plumbing::StopCode;
///
/// assert_eq!(StopCode::from(StopReason::BudgetExhausted), StopCode::BudgetExhausted);
/// assert_eq!(std::mem::size_of::<StopCode>(), 1);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopCode {
    /// [`StopReason::Permanent`].
    Permanent,
    /// [`StopReason::NotIdempotent`].
    NotIdempotent,
    /// [`StopReason::AttemptsExhausted`].
    AttemptsExhausted,
    /// [`StopReason::DeadlineExceeded`].
    DeadlineExceeded,
    /// [`StopReason::BudgetExhausted`].
    BudgetExhausted,
    /// [`StopReason::CircuitOpen`].
    CircuitOpen,
    /// [`StopReason::RetryAfterTooLong`].
    RetryAfterTooLong,
    /// [`StopReason::DeferredToOuter`].
    DeferredToOuter,
    /// [`StopReason::AlreadyDone`].
    AlreadyDone,
    /// [`StopReason::NotRepeatable`].
    NotRepeatable,
    /// [`StopReason::Deferred`], without its time.
    Deferred,
}

impl From<StopReason> for StopCode {
    #[inline]
    fn from(reason: StopReason) -> StopCode {
        match reason {
            StopReason::Permanent => StopCode::Permanent,
            StopReason::NotIdempotent => StopCode::NotIdempotent,
            StopReason::AttemptsExhausted => StopCode::AttemptsExhausted,
            StopReason::DeadlineExceeded => StopCode::DeadlineExceeded,
            StopReason::BudgetExhausted => StopCode::BudgetExhausted,
            StopReason::CircuitOpen => StopCode::CircuitOpen,
            StopReason::RetryAfterTooLong => StopCode::RetryAfterTooLong,
            StopReason::DeferredToOuter => StopCode::DeferredToOuter,
            StopReason::AlreadyDone => StopCode::AlreadyDone,
            StopReason::NotRepeatable => StopCode::NotRepeatable,
            StopReason::Deferred { .. } => StopCode::Deferred,
        }
    }
}

impl StopCode {
    /// The reason this code stands for; a deferral's is due `until` (`None`: the engine never
    /// makes a deferral without its time, and a hand-made one is taken as due at once, the
    /// Unix epoch).
    #[inline]
    pub fn reason(self, until: Option<std::time::SystemTime>) -> StopReason {
        match self {
            StopCode::Permanent => StopReason::Permanent,
            StopCode::NotIdempotent => StopReason::NotIdempotent,
            StopCode::AttemptsExhausted => StopReason::AttemptsExhausted,
            StopCode::DeadlineExceeded => StopReason::DeadlineExceeded,
            StopCode::BudgetExhausted => StopReason::BudgetExhausted,
            StopCode::CircuitOpen => StopReason::CircuitOpen,
            StopCode::RetryAfterTooLong => StopReason::RetryAfterTooLong,
            StopCode::DeferredToOuter => StopReason::DeferredToOuter,
            StopCode::AlreadyDone => StopReason::AlreadyDone,
            StopCode::NotRepeatable => StopReason::NotRepeatable,
            StopCode::Deferred => StopReason::Deferred {
                until: until.unwrap_or(std::time::UNIX_EPOCH),
            },
        }
    }

    /// See [`StopReason::decided_by_error`].
    #[inline]
    pub(crate) fn decided_by_error(self) -> bool {
        self.reason(None).decided_by_error()
    }
}

impl Next {
    /// The record's form of a sequential verdict; a deferral's time is `until`.
    #[inline]
    pub(crate) fn of(verdict: Verdict, until: Option<std::time::SystemTime>) -> Next {
        match verdict {
            Ok(delay) => Next::Retry(delay),
            Err(code) => Next::Stop(code.reason(until)),
        }
    }
}

/// The record of one failed attempt, as an operator needs it: which attempt, what failed, its
/// class, how long the call has taken so far, and what happens next.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify, Failure, Next, StopReason};
/// use std::sync::Mutex;
///
/// #[derive(Debug, Classify)]
/// enum DbError {
///     #[classify(transient)]
///     Deadlock,
///     #[classify(permanent)]
///     UniqueViolation,
/// }
///
/// static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
///
/// fn record(f: &Failure<'_, DbError>) {
///     let next = match f.next {
///         Next::Retry(d) => format!("retry in {d:?}"),
///         Next::Stop(reason) => format!("stop: {reason}"),
///         _ => unreachable!(),
///     };
///     LOG.lock().unwrap().push(format!("attempt {} {:?} ({}): {next}", f.attempt, f.error, f.class));
/// }
///
/// #[retryable(attempts = 5, base = "0ms", on_failure = record)]
/// fn insert(errors: &mut Vec<DbError>) -> Result<(), DbError> {
///     match errors.pop() {
///         Some(e) => Err(e),
///         None => Ok(()),
///     }
/// }
///
/// let mut errors = vec![DbError::UniqueViolation, DbError::Deadlock];
/// assert!(insert(&mut errors).is_err());
/// assert_eq!(
///     *LOG.lock().unwrap(),
///     [
///         "attempt 1 Deadlock (transient): retry in 0ns",
///         "attempt 2 UniqueViolation (permanent): stop: permanent",
///     ]
/// );
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub struct Failure<'a, E> {
    /// The attempt that failed, starting at 1.
    pub attempt: u32,
    /// Its error.
    pub error: &'a E,
    /// The error's class.
    pub class: ErrorClass,
    /// Time since the first attempt started, attempts and sleeps included.
    pub elapsed: Duration,
    /// What the loop does next.
    pub next: Next,
    /// The attempt got an answer the loop polls past (a value `retry_if` flagged), not a
    /// failure: `class` is transient for the schedule's sake, but the breaker, the budget and
    /// the adaptive window saw an answer, and `tracing` and metrics say `class = "value"`.
    pub answered: bool,
}

impl<E> Failure<'_, E> {
    /// The class as logs and metrics give it: `value` for an answer the loop polls past, else
    /// the class's own name (`transient`, `permanent`, ...).
    pub fn class_label(&self) -> &'static str {
        if self.answered {
            "value"
        } else {
            self.class.as_str()
        }
    }
}

impl<E> Clone for Failure<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Failure<'_, E> {}

#[cfg(test)]
mod tests {
    use super::StopReason;

    /// Every reason, by its place: the inverse of `index`, checked against it below.
    fn by_index(i: usize) -> Option<StopReason> {
        [
            StopReason::Permanent,
            StopReason::NotIdempotent,
            StopReason::AttemptsExhausted,
            StopReason::DeadlineExceeded,
            StopReason::BudgetExhausted,
            StopReason::CircuitOpen,
            StopReason::RetryAfterTooLong,
            StopReason::DeferredToOuter,
            StopReason::AlreadyDone,
            StopReason::NotRepeatable,
            StopReason::Deferred {
                until: std::time::UNIX_EPOCH,
            },
        ]
        .into_iter()
        .find(|r| r.index() == i)
    }

    #[test]
    fn every_place_below_count_has_its_own_reason() {
        for i in 0..StopReason::COUNT {
            let reason = by_index(i).unwrap_or_else(|| panic!("no reason at {i}"));
            assert_eq!(reason.index(), i);
        }
        assert_eq!(by_index(StopReason::COUNT), None);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn every_reason_is_read_back_by_its_name() {
        for i in 0..StopReason::COUNT {
            let reason = by_index(i).unwrap();
            if let StopReason::Deferred { .. } = reason {
                // Carries a time: a run log writes it beside the name (`until`), and the name
                // alone reads back as the reason, its time to be filled in.
                assert!(matches!(
                    StopReason::from_name(reason.as_str()),
                    Some(StopReason::Deferred { .. })
                ));
                continue;
            }
            assert_eq!(StopReason::from_name(reason.as_str()), Some(reason));
        }
        assert_eq!(StopReason::from_name("bogus"), None);
    }
}
