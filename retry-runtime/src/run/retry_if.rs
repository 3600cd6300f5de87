//! `retry_if`: retrying an `Ok` value too (polling until a job is ready, services that report a
//! failure inside `Ok`).
//!
//! In a function with `#[retryable(retry_if = path)]`, an attempt whose value `path(&value)`
//! flags is a failed attempt of class [`ErrorClass::Transient`]: the loop, the hooks, `tracing`
//! and metrics see it as [`Rejected::Value`], and an error as [`Rejected::Error`]. When the loop
//! stops on a flagged value (attempts used up, a deadline), that last value is returned as `Ok`.

use super::classifier::Classifier;
use crate::class::ErrorClass;
use std::time::Duration;

/// A failed attempt in a function with `retry_if`: a value the predicate flagged, or an error.
/// What its `on_failure` hook receives as [`Failure::error`](crate::Failure::error).
///
/// ```
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
