//! The runtime behind [`retry-kit`](https://docs.rs/retry-kit): classification, backoff and
//! jitter math, the sync and async retry loops, and the testing clock.
//!
//! Depend on `retry-kit` rather than on this crate: it re-exports everything here, the
//! `#[retryable]` and `#[derive(Classify)]` macros included, and the macros' generated code names
//! this crate only through it (`::retry_kit::...`). The examples below run against this crate
//! under that name.
//!
//! One concept per module:
//!
//! | module | holds |
//! | --- | --- |
//! | [`class`] | [`ErrorClass`], [`Classify`] and the built-in `std::io::Error` table |
//! | `chain` | [`classify_chain`] and [`chain_retry_after`]: the class of a boxed or wrapped error, read through its source chain |
//! | [`error`] | the crate's own errors, [`TimedOut`] and [`CircuitOpen`] |
//! | [`io`] | `Classify for std::io::Error`, and the crate's errors carried inside one |
//! | [`fresh`] | a fresh copy of each `mut` argument for every attempt |
//! | [`policy`] | [`RetryPolicy`], backoff shapes and [`Jitter`]: pure functions of attempt and draw |
//! | [`policy_cell`] | [`PolicyCell`]: a policy replaced at run time, read without a lock |
//! | [`run`] | the retry engine every front end drives: a call, its decisions, the loops |
//! | [`builder`] | the builder over closures, [`Retry`], and [`RetryPolicy::call`] |
//! | [`adaptive`] | [`AdaptivePolicy`]: attempts and delays adjusted from recent failure rate and latency |
//! | [`observe`] | `tracing` events per failed attempt (feature `tracing`) |
//! | `meter` | (feature `metrics`) attempts, delays, stops and breaker states through `metrics` |
//! | [`breaker`] | [`CircuitBreaker`]: stop calling a dependency that keeps failing |
//! | [`budget`] | [`RetryBudget`]: a shared bound on the aggregate retry rate |
//! | [`throttle`] | [`AdaptiveThrottle`]: Google SRE client-side throttling, refusing attempts locally as the backend accepts fewer |
//! | [`registry`] | [`registry::snapshot`]: every named breaker and budget, and every `PerKey` entry, with its state |
//! | [`per_key`] | [`PerKey`]: one breaker or budget per host, partition or tenant |
//! | `config` | (feature `serde`) policies and settings in configuration files, snapshots as JSON |
//! | [`context`] | [`current_attempt`]: attempt number, idempotency key, inherited deadline |
//! | [`durable`] | [`RetryState`], [`AttemptRecord`], [`Plan`]: retries that outlive the process, for schedulers and job queues |
//! | [`clock`] | real, tokio and virtual time |
//! | [`testing`] | [`testing::record_sleeps`], [`testing::record_sleeps_async`] and [`testing::seed_jitter`] |
//! | `http` | (feature `http`) the HTTP status table, `Retry-After`, `StatusError` |
//! | `reqwest` | (feature `reqwest`) `Classify for reqwest::Error`, `error_for_status` |
//! | `tonic` | (feature `tonic`) `Classify for tonic::Status`, `grpc-retry-pushback-ms` |
//! | `tower` | (feature `tower`) `RetryLayer`: retry inside a tower stack |
//! | `reqwest_middleware` | (feature `reqwest-middleware`) `RetryMiddleware`: retry inside a reqwest client |
//! | `apalis` | (feature `apalis`) `DurableRetryLayer`: apalis 1.0 tasks retried across runs, long waits handed back to the queue |
//! | `fleet` | (feature `redis`) `FleetBudget`, `FleetBreaker`: one budget and one breaker state for a fleet of processes, in Redis |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod adaptive;
#[cfg(feature = "apalis")]
#[cfg_attr(docsrs, doc(cfg(feature = "apalis")))]
pub mod apalis;
#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
mod authority;
pub mod breaker;
pub mod budget;
pub mod builder;
mod chain;
pub mod class;
pub mod clock;
// Without `serde`, only its vocabulary: the nearest-key suggestion of `tonic`'s service config.
#[cfg(any(feature = "serde", feature = "tonic"))]
mod config;
pub mod context;
pub mod durable;
pub mod error;
#[cfg(feature = "faults")]
pub mod faults;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod fleet;
pub mod fresh;
pub mod io;
mod listing;
#[cfg(feature = "metrics")]
pub mod meter;
pub mod observe;
pub mod per_key;
#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
pub mod per_request;
pub mod policy;
pub mod policy_cell;
// Under `--cfg loom` breakers and budgets do not enlist (a record made inside a model would
// outlive the model's execution): the records go unused there.
#[cfg_attr(loom, allow(dead_code))]
pub mod registry;
mod rng;
pub mod run;
mod seqlock;
mod stable_hash;
mod stop;
mod sync;
mod tenancy;
pub mod testing;
pub mod throttle;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "tonic")]
pub mod tonic;
#[cfg(feature = "tower")]
pub mod tower;

pub use retry_macros::{Classify, retryable};

pub use adaptive::AdaptivePolicy;
pub use breaker::{BreakerSettings, CircuitBreaker, CircuitPermit, CircuitState, FailureRatio};
pub use budget::{BudgetSettings, RetryBudget};
pub use builder::{HedgeNotIdempotent, Retry};
pub use chain::{chain_retry_after, classify_chain};
pub use class::{Classify, ErrorClass};
pub use context::{Attempt, IdempotencyKey, current_attempt};
pub use durable::{AttemptRecord, Plan, RetryState};
pub use error::{CircuitOpen, TimedOut};
pub use fresh::{FreshPerAttempt, FreshPerHedgedAttempt};
pub use io::io_kind_class;
pub use per_key::PerKey;
pub use policy::{Backoff, Jitter, Nested, PolicySettings, RetryPolicy};
pub use policy_cell::PolicyCell;
pub use run::expand::Rejected;
pub use run::plumbing::{AsBreaker, AsBudget};
pub use run::{Failure, Next, StopReason};
pub use throttle::AdaptiveThrottle;

/// Glue for the diagnostics of `#[retryable]`: the autoref probes that find out whether an
/// error or a key has a `Display`. Not public API: its contents change without notice.
/// Everything else the macros expand to is public: [`run`], the engine, and the modules it
/// names.
#[doc(hidden)]
pub mod __private {
    pub use crate::observe::{DisplayProbe, ViaDisplay, ViaNothing};
    pub use crate::per_key::{KeyText, KeyViaDebug, KeyViaDisplay, KeyViaNothing};
    pub use crate::run::call_policy::{
        PolicyProbe, PolicyViaAsPolicy, PolicyViaNothing, lives_for_ever,
    };
}
