//! How the loop decides the class and the wait hint of an error.

use crate::class::{Classify, ErrorClass};
use crate::stop::StopReason;
use std::time::Duration;

/// Decides the class and the wait hint of an error: the [`Classify`] impl ([`ByTrait`]), a
/// function `Fn(&E) -> ErrorClass` (no hint), or both a class function and a hint function
/// ([`WithRetryAfter`]).
#[diagnostic::on_unimplemented(
    message = "`{E}` does not say whether it is worth retrying: it does not implement `Classify`",
    label = "the error type of this `Result` needs a `Classify` impl",
    note = "add `#[derive(Classify)]` with `#[classify(transient | permanent | idempotent_only)]` tags, implement `retry_kit::Classify` by hand, or pass `classify = path::to::fn` taking `&{E}` and returning `ErrorClass`"
)]
pub trait Classifier<E: ?Sized> {
    /// The class of `error`.
    fn class(&self, error: &E) -> ErrorClass;
    /// The wait `error` asks for, if any.
    fn retry_after(&self, error: &E) -> Option<Duration>;

    /// Whether this classifier ever calls a failed attempt an answer (see
    /// [`answered`](Self::answered)); false lets the loop skip the question.
    const ANSWERS: bool = false;

    /// Whether `error` is an answer from a healthy dependency that the loop polls past (a
    /// value `retry_if` flagged) rather than a failure: it follows the schedule, but the
    /// breaker records it as an answer, the budget is not charged for it or asked before the
    /// next poll, and the adaptive window does not count it as a failure.
    #[inline]
    fn answered(&self, error: &E) -> bool {
        let _ = error;
        false
    }

    /// Whether this classifier ever says an attempt cannot be repeated (see
    /// [`repeatable`](Self::repeatable)); false lets the loop skip the question.
    const LIMITS_REPEATS: bool = false;

    /// Whether the operation that failed with `error` can be made again at all (an HTTP
    /// request whose body was not kept cannot): if not, the loop stops with
    /// [`StopReason::NotRepeatable`](crate::StopReason::NotRepeatable) whatever the class.
    #[inline]
    fn repeatable(&self, error: &E) -> bool {
        let _ = error;
        true
    }

    /// A stop that `error` decides whatever its class and however many attempts are left,
    /// asked before either: `None` (the default) leaves the decision to them. gRPC's classifier
    /// stops an attempt that ended once the call's deadline had passed with
    /// [`StopReason::DeadlineExceeded`], whatever the server answered at that moment.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::run::Classifier;
    /// use retry_kit::{ErrorClass, Failure, Next, Retry, RetryPolicy, StopReason};
    /// use std::time::Duration;
    ///
    /// #[derive(Debug)]
    /// enum Error {
    ///     Busy,
    ///     /// The caller's own deadline passed: no other attempt is worth making.
    ///     Late,
    /// }
    ///
    /// struct ByKind;
    ///
    /// impl Classifier<Error> for ByKind {
    ///     fn class(&self, _: &Error) -> ErrorClass {
    ///         ErrorClass::Transient
    ///     }
    ///     fn retry_after(&self, _: &Error) -> Option<Duration> {
    ///         None
    ///     }
    ///     fn stop_reason(&self, error: &Error) -> Option<StopReason> {
    ///         matches!(error, Error::Late).then_some(StopReason::DeadlineExceeded)
    ///     }
    /// }
    ///
    /// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(5);
    /// let mut errors = vec![Error::Late, Error::Busy];
    /// let mut next = Vec::new();
    /// let result = Retry::new(&policy)
    ///     .classify(ByKind)
    ///     .on_failure(|failed: &Failure<'_, Error>| next.push(failed.next))
    ///     .call(|| Err::<(), Error>(errors.pop().unwrap()));
    /// assert!(matches!(result, Err(Error::Late)));
    /// assert_eq!(next, [Next::Retry(Duration::ZERO), Next::Stop(StopReason::DeadlineExceeded)]);
    /// ```
    #[inline]
    fn stop_reason(&self, error: &E) -> Option<StopReason> {
        let _ = error;
        None
    }

    /// Whether an error's [`retry_after`](Self::retry_after) is the wait before the next
    /// attempt itself rather than a floor under the policy's delay, and how long such a wait
    /// may be.
    ///
    /// `None` (the default, and the rule everywhere in the crate but one): the hint is a floor,
    /// the wait is the longer of the jittered delay and the hint, and a hint above the policy's
    /// `max_delay` stops the call with
    /// [`StopReason::RetryAfterTooLong`](crate::StopReason::RetryAfterTooLong).
    ///
    /// `Some(limit)`: the hint is waited exactly, whatever the backoff and `max_delay` say,
    /// and a hint above `limit` stops the call with `RetryAfterTooLong`; the deadline still
    /// bounds it. This is gRPC's `grpc-retry-pushback-ms` under a service config, which gRFC A6
    /// says is waited exactly (the `tonic` feature's `GrpcRetryLayer` bounds it by its
    /// `max_pushback`). Asked only when an error has a hint: a method rather than a constant,
    /// so that one classifier type can follow either rule, chosen at run time.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::run::Classifier;
    /// use retry_kit::{ErrorClass, Retry, RetryPolicy, testing};
    /// use std::time::Duration;
    ///
    /// /// Every error is transient and names its own wait, in milliseconds, which is waited
    /// /// exactly up to a minute.
    /// struct Pushback;
    ///
    /// impl Classifier<u64> for Pushback {
    ///     fn class(&self, _: &u64) -> ErrorClass {
    ///         ErrorClass::Transient
    ///     }
    ///     fn retry_after(&self, ms: &u64) -> Option<Duration> {
    ///         Some(Duration::from_millis(*ms))
    ///     }
    ///     fn exact_wait_limit(&self) -> Option<Duration> {
    ///         Some(Duration::from_secs(60))
    ///     }
    /// }
    ///
    /// // A backoff of 1 s capped at 2 s: the waits of 5 ms and 10 s are slept as asked; the
    /// // third error asks for 90 s, over the limit: the call stops with it.
    /// let policy = RetryPolicy::fixed(Duration::from_secs(1))
    ///     .max_delay(Duration::from_secs(2))
    ///     .attempts(5);
    /// let mut hints = vec![90_000, 10_000, 5];
    /// let (result, slept) = testing::record_sleeps(|| {
    ///     Retry::new(&policy).classify(Pushback).call(|| Err::<(), u64>(hints.pop().unwrap()))
    /// });
    /// assert_eq!(result, Err(90_000));
    /// assert_eq!(slept, [Duration::from_millis(5), Duration::from_secs(10)]);
    /// ```
    #[inline]
    fn exact_wait_limit(&self) -> Option<Duration> {
        None
    }
}

/// Classify errors through their [`Classify`] impl (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByTrait;

impl<E: Classify + ?Sized> Classifier<E> for ByTrait {
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        error.class()
    }
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        error.retry_after()
    }
}

impl<E: ?Sized, F: Fn(&E) -> ErrorClass> Classifier<E> for F {
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        self(error)
    }
    #[inline]
    fn retry_after(&self, _: &E) -> Option<Duration> {
        None
    }
}

/// A class function paired with a retry-after function.
#[derive(Clone, Copy, Debug)]
pub struct WithRetryAfter<C, A>(pub C, pub A);

impl<E: ?Sized, C, A> Classifier<E> for WithRetryAfter<C, A>
where
    C: Fn(&E) -> ErrorClass,
    A: Fn(&E) -> Option<Duration>,
{
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        (self.0)(error)
    }
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        (self.1)(error)
    }
}

/// A classifier borrowed, so that its owner can still use it after the loop.
#[derive(Debug)]
pub struct Borrowed<'c, C>(pub &'c C);

impl<C> Clone for Borrowed<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Borrowed<'_, C> {}

impl<E: ?Sized, C: Classifier<E>> Classifier<E> for Borrowed<'_, C> {
    #[inline]
    fn class(&self, error: &E) -> ErrorClass {
        self.0.class(error)
    }
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        self.0.retry_after(error)
    }
    const ANSWERS: bool = C::ANSWERS;
    #[inline]
    fn answered(&self, error: &E) -> bool {
        self.0.answered(error)
    }
    const LIMITS_REPEATS: bool = C::LIMITS_REPEATS;
    #[inline]
    fn repeatable(&self, error: &E) -> bool {
        self.0.repeatable(error)
    }
    #[inline]
    fn stop_reason(&self, error: &E) -> Option<StopReason> {
        self.0.stop_reason(error)
    }
    #[inline]
    fn exact_wait_limit(&self) -> Option<Duration> {
        self.0.exact_wait_limit()
    }
}

/// `<E as Classify>::class` as a function item, for pairing with a custom retry-after function.
#[inline]
pub fn class_of<E: Classify + ?Sized>(error: &E) -> ErrorClass {
    error.class()
}

/// What `#[retryable(already_done = path)]` does with a call's outcome: an error that the
/// classifier calls [`ErrorClass::AlreadyDone`] (the loop stopped on it with
/// `StopReason::AlreadyDone`) becomes `resolve(error)`, typically a receipt rebuilt from the
/// duplicate's data; every other outcome is returned as it is.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify};
///
/// #[derive(Debug, Classify)]
/// enum PayError {
///     #[classify(transient)]
///     Timeout,
///     #[classify(already_done)]
///     Duplicate { receipt: u64 },
/// }
///
/// /// The answer to an earlier attempt was lost; the processor says it has the payment.
/// fn receipt_of(e: PayError) -> Result<u64, PayError> {
///     match e {
///         PayError::Duplicate { receipt } => Ok(receipt),
///         other => Err(other),
///     }
/// }
///
/// #[retryable(attempts = 3, base = "0ms", already_done = receipt_of)]
/// fn pay(answers: &mut Vec<Result<u64, PayError>>) -> Result<u64, PayError> {
///     answers.pop().unwrap()
/// }
///
/// let mut answers = vec![Err(PayError::Duplicate { receipt: 42 }), Err(PayError::Timeout)];
/// assert_eq!(pay(&mut answers).unwrap(), 42);
/// ```
pub fn resolve_already_done<T, E, C: Classifier<E>>(
    outcome: Result<T, E>,
    classifier: &C,
    resolve: impl FnOnce(E) -> Result<T, E>,
) -> Result<T, E> {
    match outcome {
        Err(error) if classifier.class(&error) == ErrorClass::AlreadyDone => resolve(error),
        other => other,
    }
}
