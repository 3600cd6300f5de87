//! The result type of a retried operation.

/// The result type of a retried operation: `Result<T, E>`, or an alias of one.
#[diagnostic::on_unimplemented(
    message = "retry-kit retries operations that return `Result<T, E>`, and `{Self}` is not a `Result`",
    label = "expected `Result<T, E>` (or an alias such as `io::Result<T>`)",
    note = "in a loop written by hand (`retry_kit::run`), the attempt is the `Result`: an async attempt needs `.await`"
)]
pub trait Outcome {
    /// The success type.
    type Value;
    /// The error type.
    type Error;
    /// The error, if this outcome is a failure.
    fn error(&self) -> Option<&Self::Error>;
    /// The failed outcome carrying `error`: what a call returns when the breaker refuses its
    /// first attempt, or an attempt times out.
    fn failure(error: Self::Error) -> Self;
}

impl<T, E> Outcome for Result<T, E> {
    type Value = T;
    type Error = E;
    #[inline]
    fn error(&self) -> Option<&E> {
        self.as_ref().err()
    }
    #[inline]
    fn failure(error: E) -> Self {
        Err(error)
    }
}

/// A conversion of one of the crate's errors ([`CircuitOpen`](crate::CircuitOpen),
/// [`TimedOut`](crate::TimedOut)) into the caller's error type, such as `E::from`.
pub type Conversion<X, E> = fn(X) -> E;

/// The error type of the outcome `R`: what `on_failure` records carry and `classify` receives.
pub type ErrorOf<R> = <R as Outcome>::Error;
