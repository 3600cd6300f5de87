//! `retry_if`: retrying an `Ok` value too (polling until a job is ready, services that report a
//! failure inside `Ok`).
//!
//! In a function with `#[retryable(retry_if = path)]`, an attempt whose value `path(&value)`
//! flags follows the schedule as a transient failure would (attempts, delays, deadline), and
//! hooks see it as [`Rejected::Value`] (an error as [`Rejected::Error`]). But it is an answer
//! from a healthy dependency, not a failure: the breaker records it as an answer, the budget
//! is neither charged for it nor asked before the next poll, the adaptive window does not count
//! it as a failure, and `tracing` and metrics give it the class `value` (its
//! [`Failure::answered`](crate::Failure::answered) is true). When the loop stops on a flagged
//! value (attempts used up, a deadline), that last value is returned as `Ok`. To make a value
//! count as a failure, turn it into an error in the body.

use super::classifier::Classifier;
use super::outcome::Outcome;
use crate::class::ErrorClass;
use crate::error::{CircuitOpen, TimedOut};
use crate::stop::StopReason;
use std::time::Duration;

/// A failed attempt in a function with `retry_if`: a value the predicate flagged, or an error.
/// What its `on_failure` hook receives as [`Failure::error`](crate::Failure::error).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, testing, Classify, Failure, Rejected};
/// use std::sync::Mutex;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Unreachable;
///
/// #[derive(Debug, PartialEq)]
/// enum Job { Running, Done(u32) }
///
/// static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
///
/// fn running(job: &Job) -> bool {
///     *job == Job::Running
/// }
///
/// fn log(f: &Failure<'_, Rejected<Job, Unreachable>>) {
///     SEEN.lock().unwrap().push(format!("attempt {}: {:?}", f.attempt, f.error));
/// }
///
/// #[retryable(attempts = 5, backoff = "fixed", base = "1s", jitter = "none",
///             retry_if = running, on_failure = log)]
/// fn poll(states: &mut Vec<Job>) -> Result<Job, Unreachable> {
///     Ok(states.pop().unwrap())
/// }
///
/// let mut states = vec![Job::Done(7), Job::Running, Job::Running];
/// let (job, slept) = testing::record_sleeps(|| poll(&mut states));
/// assert_eq!(job.unwrap(), Job::Done(7));
/// assert_eq!(slept.len(), 2);
/// assert_eq!(*SEEN.lock().unwrap(), ["attempt 1: Value(Running)", "attempt 2: Value(Running)"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejected<T, E> {
    /// The attempt succeeded with a value the predicate flagged for another attempt.
    Value(T),
    /// The attempt failed with this error.
    Error(E),
}

/// What a `retry_if` function's records carry: a flagged value of the outcome `R`, or its error.
pub type RejectedOf<R> = Rejected<<R as Outcome>::Value, <R as Outcome>::Error>;

/// A breaker's refusal of the first attempt is the function's error (`E::from`).
impl<T, E: From<CircuitOpen>> From<CircuitOpen> for Rejected<T, E> {
    fn from(open: CircuitOpen) -> Self {
        Rejected::Error(E::from(open))
    }
}

/// A timed-out attempt is the function's error (`E::from`).
impl<T, E: From<TimedOut>> From<TimedOut> for Rejected<T, E> {
    fn from(timed_out: TimedOut) -> Self {
        Rejected::Error(E::from(timed_out))
    }
}

/// Classifies [`Rejected`] outcomes: a flagged value is transient, an error is classified by
/// the function's classifier.
#[derive(Clone, Copy, Debug, Default)]
pub struct IfRejected<C>(pub C);

impl<T, E, C: Classifier<E>> Classifier<Rejected<T, E>> for IfRejected<C> {
    #[inline]
    fn class(&self, rejected: &Rejected<T, E>) -> ErrorClass {
        match rejected {
            Rejected::Value(_) => ErrorClass::Transient,
            Rejected::Error(error) => self.0.class(error),
        }
    }
    #[inline]
    fn retry_after(&self, rejected: &Rejected<T, E>) -> Option<Duration> {
        match rejected {
            Rejected::Value(_) => None,
            Rejected::Error(error) => self.0.retry_after(error),
        }
    }
    const LIMITS_REPEATS: bool = C::LIMITS_REPEATS;
    #[inline]
    fn repeatable(&self, rejected: &Rejected<T, E>) -> bool {
        match rejected {
            Rejected::Value(_) => true,
            Rejected::Error(error) => self.0.repeatable(error),
        }
    }
    #[inline]
    fn stop_reason(&self, rejected: &Rejected<T, E>) -> Option<StopReason> {
        match rejected {
            Rejected::Value(_) => None,
            Rejected::Error(error) => self.0.stop_reason(error),
        }
    }
    #[inline]
    fn exact_wait_limit(&self) -> Option<Duration> {
        self.0.exact_wait_limit()
    }
    const ANSWERS: bool = true;
    #[inline]
    fn answered(&self, rejected: &Rejected<T, E>) -> bool {
        match rejected {
            Rejected::Value(_) => true,
            Rejected::Error(error) => self.0.answered(error),
        }
    }
}

/// An attempt's outcome as the loop of a `retry_if` function sees it: a value `flag` flags
/// becomes a failure.
#[inline]
pub fn reject_if<T, E>(
    outcome: Result<T, E>,
    flag: impl FnOnce(&T) -> bool,
) -> Result<T, Rejected<T, E>> {
    match outcome {
        Ok(value) if flag(&value) => Err(Rejected::Value(value)),
        Ok(value) => Ok(value),
        Err(error) => Err(Rejected::Error(error)),
    }
}

/// The call's outcome: the last value, flagged or not, as `Ok`; an error as `Err`.
#[inline]
pub fn accept_rejected<T, E>(outcome: Result<T, Rejected<T, E>>) -> Result<T, E> {
    match outcome {
        Ok(value) | Err(Rejected::Value(value)) => Ok(value),
        Err(Rejected::Error(error)) => Err(error),
    }
}
