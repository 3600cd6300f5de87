//! Work that outlives the process: a retried call whose state a scheduler or a job queue keeps
//! between runs, so that a task re-run after a crash continues its attempts with the same
//! idempotency key, a long wait is handed back to the queue instead of held in a worker slot,
//! and the task ends in a state an operator can act on.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`RetryState`] | what a scheduler persists between runs of one task: attempts made, the previous delay, when the first attempt started (wall clock), the idempotency key, the run log |
//! | [`AttemptRecord`] | one attempt in the run log: its number, start and end, class, error text and the next action |
//! | [`Plan`] | the decision after a failed attempt, as data for a scheduler that owns the waiting ([`RetryPolicy::plan`](crate::RetryPolicy::plan)) |
//!
//! The decisions are the engine's own: the same classes, backoff, jitter, retry-after and
//! deadline rules as a call retried in one process. Only who waits changes: the scheduler
//! sleeps (or re-queues the task for later) and calls [`RetryPolicy::plan`](crate::RetryPolicy::plan)
//! with the state it persisted.
//!
//! # The seeds' `retry_plan`
//!
//! A timeout at attempt 2 retries after 12 s with a base of 6 s and a cap of 48 s (no jitter);
//! a schema error is quarantined at once; a rate limit at the 4th of 4 attempts stops:
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::durable::{Plan, RetryState};
//! use retry_kit::{Classify, RetryPolicy, StopReason};
//! use std::time::Duration;
//!
//! #[derive(Debug, Classify)]
//! enum ExportError {
//!     #[classify(transient)] Timeout,
//!     #[classify(transient)] RateLimited,
//!     #[classify(permanent)] InvalidSchema,
//! }
//!
//! impl std::fmt::Display for ExportError {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         write!(f, "{self:?}")
//!     }
//! }
//!
//! let policy = RetryPolicy::exponential(Duration::from_secs(6))
//!     .max_delay(Duration::from_secs(48))
//!     .jitter(retry_kit::Jitter::None)
//!     .attempts(4);
//!
//! // A task whose first attempt timed out: the scheduler persisted its state after it.
//! let mut state = RetryState::default();
//! assert_eq!(policy.plan(&mut state, &ExportError::Timeout), Plan::Retry { after: Duration::from_secs(6) });
//! // The second attempt (another run, maybe another process) times out too.
//! assert_eq!(policy.plan(&mut state, &ExportError::Timeout), Plan::Retry { after: Duration::from_secs(12) });
//!
//! assert_eq!(policy.plan(&mut RetryState::default(), &ExportError::InvalidSchema), Plan::Quarantine);
//!
//! let mut state = RetryState::default();
//! for _ in 0..3 {
//!     assert!(matches!(policy.plan(&mut state, &ExportError::RateLimited), Plan::Retry { .. }));
//! }
//! assert_eq!(policy.plan(&mut state, &ExportError::RateLimited), Plan::Stop(StopReason::AttemptsExhausted));
//!
//! // The run log says what happened, as an operator reads it.
//! let last = state.run_log().last().unwrap();
//! assert_eq!((last.number(), last.error()), (4, Some("RateLimited")));
//! assert_eq!(last.next(), Plan::Stop(StopReason::AttemptsExhausted));
//! ```

mod plan;
pub(crate) mod record;
mod state;
#[cfg(feature = "serde")]
pub(crate) mod wall;

#[cfg(feature = "serde")]
mod serde;

pub use plan::Plan;
pub use record::AttemptRecord;
pub use state::RetryState;
