#![doc = include_str!("tutorial.md")]
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` (see [package.metadata.docs.rs]) and labels the modules
// that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use retry_runtime::AdaptivePolicy;
pub use retry_runtime::AdaptiveThrottle;
pub use retry_runtime::FreshPerAttempt;
pub use retry_runtime::FreshPerHedgedAttempt;
pub use retry_runtime::RetryBudget;
pub use retry_runtime::adaptive;
#[cfg(feature = "apalis")]
#[cfg_attr(docsrs, doc(cfg(feature = "apalis")))]
pub use retry_runtime::apalis;
pub use retry_runtime::builder;
pub use retry_runtime::class;
#[cfg(feature = "faults")]
#[cfg_attr(docsrs, doc(cfg(feature = "faults")))]
pub use retry_runtime::faults;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use retry_runtime::fleet;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use retry_runtime::http;
pub use retry_runtime::io_kind_class;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use retry_runtime::meter;
pub use retry_runtime::observe;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use retry_runtime::reqwest;
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub use retry_runtime::reqwest_middleware;
pub use retry_runtime::run;
pub use retry_runtime::run::plumbing::{AsBreaker, AsBudget};
pub use retry_runtime::throttle;
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub use retry_runtime::tonic;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use retry_runtime::tower;
pub use retry_runtime::{
    Attempt, Backoff, CircuitOpen, ErrorClass, Failure, HedgeNotIdempotent, IdempotencyKey, Jitter,
    Nested, Next, PolicySettings, Rejected, Retry, RetryPolicy, StopReason, TimedOut,
    current_attempt, testing,
};
pub use retry_runtime::{AttemptRecord, Plan, RetryState, durable};
pub use retry_runtime::{BreakerSettings, BudgetSettings, FailureRatio, registry};
pub use retry_runtime::{CircuitBreaker, CircuitPermit, CircuitState};
pub use retry_runtime::{Classify, retryable};
pub use retry_runtime::{PerKey, per_key};
pub use retry_runtime::{PolicyCell, policy_cell};
pub use retry_runtime::{chain_retry_after, classify_chain};

#[doc(hidden)]
pub use retry_runtime::__private;
