//! TUTORIAL_PLACEHOLDER
#![warn(missing_docs)]

pub use retry_macros::{Classify, retryable};
pub use retry_runtime::class::io_kind_class;
pub use retry_runtime::{
    Attempt, Backoff, CircuitOpen, Classify, ErrorClass, Failure, IdempotencyKey, Jitter, Nested,
    Next, Retry, RetryPolicy, StopReason, TimedOut, current_attempt, testing,
};

/// What `#[retryable]` and `#[derive(Classify)]` expand to. Not public API: its contents change
/// without notice.
#[doc(hidden)]
pub mod __private {
    pub use core::time::Duration;
    pub use retry_runtime::class::{Classify, ErrorClass, IntoRetryAfter};
    #[cfg(feature = "tokio")]
    pub use retry_runtime::clock::{sleep, tokio_sleep};
    pub use retry_runtime::run::{
        AsPolicy, ByTrait, Call, Classifier, Hook, InAttempt, NoHook, Outcome, Step,
        WithRetryAfter, class_of, policy_of,
    };
}
