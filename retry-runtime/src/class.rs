//! Error classification: whether a second identical attempt could succeed.
//!
//! The class of an error is decided where the error is defined, because that is the only place
//! with enough context to tell a lock timeout from a permission denial. A generic wrapper at the
//! top of a call sees a type and a message; the error type itself knows what it means.
//!
//! An error that arrives boxed or wrapped (`Box<dyn Error>`, `anyhow::Error`) can still be
//! classified by the errors in its source chain: [`classify_chain`](crate::classify_chain) and
//! [`chain_retry_after`](crate::chain_retry_after).

use std::sync::Arc;
use std::time::Duration;

/// Whether a failed attempt is worth repeating with the same inputs.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::ErrorClass;
///
/// assert!(ErrorClass::Transient.is_retryable(false));
/// assert!(!ErrorClass::IdempotentOnly.is_retryable(false));
/// assert!(ErrorClass::IdempotentOnly.is_retryable(true));
/// assert!(!ErrorClass::Permanent.is_retryable(true));
/// assert!(!ErrorClass::AlreadyDone.is_retryable(true));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// A second identical attempt may succeed: a connection reset, a 503 during a rolling
    /// restart, a lock wait timeout, a rate limit.
    Transient,
    /// The attempt will fail the same way again: a parse error, a schema mismatch, a 4xx, a
    /// missing input. Never retried.
    Permanent,
    /// The outcome is unknown: the remote side may have done the work (a timeout on a write).
    /// Retried only when the function is declared `idempotent`.
    IdempotentOnly,
    /// The receiver says the work was already done (a duplicate transaction, an idempotency
    /// key it has seen): after a lost answer, an earlier attempt succeeded. Never retried; the
    /// loop stops with [`StopReason::AlreadyDone`](crate::StopReason::AlreadyDone), and
    /// `#[retryable(already_done = path)]` can turn the error into the function's result. An
    /// answer from a healthy dependency: a success for the breaker, no charge to the budget.
    AlreadyDone,
}

impl ErrorClass {
    /// Whether an error of this class may be retried by a function with the given idempotence.
    #[inline]
    pub const fn is_retryable(self, idempotent: bool) -> bool {
        match self {
            ErrorClass::Transient => true,
            ErrorClass::IdempotentOnly => idempotent,
            ErrorClass::Permanent | ErrorClass::AlreadyDone => false,
        }
    }

    /// Whether an error of this class says the dependency may be unhealthy: transient and
    /// idempotent-only errors do; a permanent error or an "already done" is an answer.
    #[inline]
    pub const fn is_failure(self) -> bool {
        matches!(self, ErrorClass::Transient | ErrorClass::IdempotentOnly)
    }

    /// The lower-case name used in logs and events: `transient`, `permanent`, `idempotent_only`,
    /// `already_done`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
            ErrorClass::IdempotentOnly => "idempotent_only",
            ErrorClass::AlreadyDone => "already_done",
        }
    }
}

#[cfg(feature = "serde")]
impl ErrorClass {
    /// The class named `name` ([`as_str`](Self::as_str)), as a persisted run log spells it.
    pub(crate) fn from_name(name: &str) -> Option<ErrorClass> {
        [
            ErrorClass::Transient,
            ErrorClass::Permanent,
            ErrorClass::IdempotentOnly,
            ErrorClass::AlreadyDone,
        ]
        .into_iter()
        .find(|class| class.as_str() == name)
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error that knows whether retrying it could help.
///
/// Implement it by hand, or derive it with `#[derive(Classify)]` and `#[classify(...)]` tags on
/// the variants.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Classify, ErrorClass};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// enum ApiError {
///     Throttled { wait: Duration },
///     BadRequest,
/// }
///
/// impl Classify for ApiError {
///     fn class(&self) -> ErrorClass {
///         match self {
///             ApiError::Throttled { .. } => ErrorClass::Transient,
///             ApiError::BadRequest => ErrorClass::Permanent,
///         }
///     }
///     fn retry_after(&self) -> Option<Duration> {
///         match self {
///             ApiError::Throttled { wait } => Some(*wait),
///             ApiError::BadRequest => None,
///         }
///     }
/// }
///
/// assert_eq!(ApiError::BadRequest.class(), ErrorClass::Permanent);
/// assert_eq!(
///     ApiError::Throttled { wait: Duration::from_secs(2) }.retry_after(),
///     Some(Duration::from_secs(2)),
/// );
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say whether it is worth retrying: it does not implement `Classify`",
    label = "this error type needs a `Classify` impl",
    note = "add `#[derive(Classify)]` with `#[classify(transient | permanent | idempotent_only)]` tags, implement `retry_kit::Classify` by hand, or pass `classify = path::to::fn` to `#[retryable]`"
)]
pub trait Classify {
    /// The class that decides whether a second attempt could succeed.
    fn class(&self) -> ErrorClass;

    /// The wait the error itself asks for (a `Retry-After` header, a gRPC pushback), if any.
    ///
    /// The retry loop waits at least this long; a hint longer than the policy's `max_delay`
    /// stops the loop instead.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

impl<E: Classify + ?Sized> Classify for &E {
    fn class(&self) -> ErrorClass {
        (**self).class()
    }
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<E: Classify + ?Sized> Classify for Box<E> {
    fn class(&self) -> ErrorClass {
        (**self).class()
    }
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<E: Classify + ?Sized> Classify for Arc<E> {
    fn class(&self) -> ErrorClass {
        (**self).class()
    }
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

/// A `#[classify(retry_after)]` field, borrowed: a `&Duration` or a `&Option<Duration>`.
#[diagnostic::on_unimplemented(
    message = "a `#[classify(retry_after)]` field must be a `Duration` or an `Option<Duration>`, not `{Self}`",
    label = "not a `Duration` or `Option<Duration>`"
)]
pub trait IntoRetryAfter {
    /// The wait the field asks for.
    fn into_retry_after(self) -> Option<Duration>;
}

impl IntoRetryAfter for &Duration {
    #[inline]
    fn into_retry_after(self) -> Option<Duration> {
        Some(*self)
    }
}

impl IntoRetryAfter for &Option<Duration> {
    #[inline]
    fn into_retry_after(self) -> Option<Duration> {
        *self
    }
}
