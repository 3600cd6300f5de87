//! Retries of [apalis](https://docs.rs/apalis) 1.0 tasks that outlive the worker (feature
//! `apalis`): [`DurableRetryLayer`].
//!
//! A task retried inside its handler holds its worker slot through every wait, forgets its
//! attempts when the worker dies, and ends either done or "failed". Under the layer, each task
//! is retried by a [`RetryPolicy`](crate::RetryPolicy) as the engine decides
//! ([`RetryPolicy::plan`](crate::RetryPolicy::plan)), and:
//!
//! | after an attempt | the layer | the row is stored |
//! | --- | --- | --- |
//! | it succeeded | returns the handler's answer | `Done`, with the answer |
//! | a wait up to [`hold_slot_up_to`](DurableRetryLayer::hold_slot_up_to) (1 s) | sleeps in the slot, tries again | (still running) |
//! | a longer wait, an open [breaker](DurableRetryLayer::circuit), a [budget](DurableRetryLayer::budget) that refuses | hands the task back: pushes a successor row (same input, the [`RetryState`](crate::durable::RetryState) in its metadata) due at `now + wait`, releasing the slot | `Done`, its result naming the successor ([`HandedBack`]) |
//! | a permanent error | quarantines it | `Killed`, with the class and error ([`Ended`]); input kept |
//! | attempts, deadline or budget exhausted, a retry-after longer than `max_delay` | stops it | `Failed`, with the reason ([`Ended`]); input kept, resumable |
//! | the receiver says it was already done | ends it | `Done` |
//!
//! Every attempt of a task, on any worker, in any run, sends the same idempotency key, read
//! inside the handler with [`current_attempt()`](crate::current_attempt) (the attempt number
//! there counts across runs too, and starts from 1 again after [`resume`], which gives the
//! task a fresh count). The key is the task's identity in its queue: the
//! idempotency key the producer gave the task (`TaskBuilder::idempotency_key`, such as
//! `"2026-12-03/billing-export"`: the interval's identity), or else its id, hashed as
//! `IdempotencyKey::of(&(queue, identity), operation_id("retry_kit::apalis"))` (pinned: the
//! same in every build). Retryable calls made inside the handler derive their keys from it and
//! inherit the policy's deadline, as they would inside a retryable function.
//!
//! # A worker with the layer
//!
//! ```text
#![doc = include_str!("apalis/guide.rs")]
//! ```
//!
//! (This text is the file `retry-runtime/src/apalis/guide.rs`, which the repository builds and
//! runs as the example `guide` of `tests/durable`, against SQLite in memory: `cargo run -p
//! retry-kit-durable --example guide`. A doctest here would need a SQL backend among this
//! crate's dev-dependencies, and with it sqlx's Rust 1.94 for every test of the crate.)
//!
//! The dependencies it builds with (the versions the layer is tested against; sqlx is named
//! only to give the backend its tokio runtime: without a runtime feature it panics at start,
//! "one of the `runtime` features of SQLx must be enabled"):
//!
//! ```toml
//! retry-kit = { version = "0.1", features = ["apalis"] }
//! apalis-core = { version = "=1.0.0", default-features = false, features = ["sleep", "ulid"] }
//! apalis-sqlite = { version = "=1.0.0", default-features = false, features = ["tokio", "migrate", "json"] }
//! sqlx = { version = "0.9", default-features = false, features = ["runtime-tokio", "sqlite", "migrate"] }
//! apalis = { version = "=1.0.0", default-features = false, features = ["limit"] }  # .concurrency(n)
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! A task is named by apalis's `TaskId` (`apalis_core::task::task_id::TaskId`): what
//! [`run_log`], [`resume`] and [`RunLog::task`] take and give.
//!
//! What the worker needs:
//!
//! - **`.concurrency(n)` before the layer** (`apalis::layers::WorkerBuilderExt`, the `apalis`
//!   crate's `limit` feature): apalis's builder puts each layer inside those
//!   added before it (tower's `Stack`), so the limit is outside the layer, a wait slept in the
//!   slot holds one of the `n` permits, and a task handed back frees it. (Added the other way
//!   round, the limit is inside: a retry in the slot waits for a permit that the worker's next
//!   poll holds, and never gets it.)
//! - **Polling** (`storage.poll_with_interval(d)`, from `apalis_core::backend::ext::BackendExt`):
//!   without it, a worker that found nothing waits for its next heartbeat (30 s by default)
//!   before it looks again, so a successor due in 2 s runs in up to 30.
//! - **A unique name per worker process** (a hostname and pid, a random suffix). apalis
//!   re-enqueues the rows of a worker that stopped sending heartbeats; on PostgreSQL a
//!   restarted worker with the same name takes the dead one's registration over, and its
//!   running rows are never re-enqueued.
//! - **Heartbeats**: a dead worker's rows are re-enqueued `heartbeat_interval ×
//!   missed_heartbeats` after its last heartbeat (SQLite's default 30 s × 2, PostgreSQL's
//!   30 s × 10). Keep that well above the longest stall of a live worker (a blocked runtime, a
//!   database outage): a live worker whose rows are re-enqueued runs them beside their new
//!   owner. apalis counts it in whole seconds, so never below 1 s.
//! - **Results persisted** (`Config::persist_results`, on by default): with it off apalis
//!   acknowledges nothing, and rows stay `Running`.
//! - Producers: any push works. A producer's row has apalis's default `max_attempts` (25), so a
//!   stop on it is recorded on a successor row whose `Failed` is final (apalis fetches a
//!   `Failed` row again while its attempts are below `max_attempts`); [`task`] builds a task
//!   with `max_attempts(1)`, which stops in place.
//!
//! # The run log
//!
//! [`run_log(&mut storage, &task_id)`](run_log) follows a task from the id its producer knows
//! through each row it was handed back as, and gives its attempts (each with its times, class,
//! error and next action), the last error, and where it stands ([`Outcome`]); its `Display` is
//! the operator's view. A handler can read the state so far as `Meta<RetryState>`.
//!
//! # What is guaranteed
//!
//! - **A task is never lost.** The successor is pushed (and committed) before the layer's
//!   future ends, and apalis acknowledges the row only after that. A worker killed between
//!   the two leaves the row running; apalis re-enqueues it once the worker's heartbeats stop,
//!   and the next run sees the successor there and runs nothing. A worker killed during an
//!   attempt leaves the row to be re-enqueued and run again, with the same key.
//! - **At least once, with one key.** An attempt can happen again: the receiver must
//!   deduplicate by the key (store it with the write, answer a repeat with the first answer).
//!   It can even happen twice at once: a live worker whose rows apalis re-enqueued (see
//!   heartbeats above) runs on beside the new owner. The successor's id is a fixed function
//!   of the key and the row, so two runs of one row push one successor.
//! - **Attempts are counted across runs.** The run log records each failed attempt of a run
//!   that hands the task back, stops it or quarantines it (the record travels with the
//!   successor row, or with the row's result). A run that ends done keeps only its count:
//!   apalis 1.0 stores a done task's own result on its row and nothing beside it, so the
//!   failures that run retried in its slot are counted, not recorded. An attempt cut short by
//!   a crash is counted too (apalis counts it when it re-enqueues the row), with no record.
//! - Not guaranteed: when a successor runs. It is due at its time (apalis schedules in whole
//!   seconds; the layer rounds up), and runs at the first poll of a free worker after that.
//!
//! # What the layer relies on in apalis 1.0.0
//!
//! Only apalis's public API is used (`TaskSink::push_task`, `FetchById::fetch_by_id`,
//! `WaitForCompletion::check_status`, the task's metadata and status); no table is written
//! directly. Its behaviour is pinned (`apalis-core = "=1.0.0"`) because the layer relies on
//! what apalis 1.0.0 does and does not document, each checked by a test in
//! `tests/durable/tests/apalis_contract.rs` against SQLite and PostgreSQL:
//!
//! - the status a layer leaves in the task's context (`raw_status`) is the one stored, and
//!   the row is acknowledged only after the layer's future ends;
//! - `Killed` and `Done` rows are never fetched again; a `Failed` row is fetched again while
//!   its attempts are below its `max_attempts`;
//! - a pushed task keeps the id, `run_at`, `max_attempts` and metadata it was built with;
//! - the schema (the last migration each backend ships).
//!
//! apalis 1.0 cannot reschedule a row in place (no backend implements `Reschedule` or
//! `Update`), hence the successor rows: a task that waits three times is four rows, each
//! `Done` but the last. `Vacuum` removes finished rows, successors' predecessors included: run
//! it after the run logs are no longer needed.
//!
//! # Choices where apalis leaves room
//!
//! - **A handed-back row is `Done`**, its result an error naming the successor: `Done` is the
//!   only status apalis never fetches again whatever the row's attempts. The worker emits
//!   `Event::Error` for it; a listener tells it from a failure by downcasting to
//!   [`HandedBack`].
//! - **A stop on a producer's row** (apalis's default 25 attempts, which would have apalis
//!   fetch a `Failed` row again at once) is recorded on a successor pushed with
//!   `max_attempts(0)`, which the layer fails without running the handler; rows the layer
//!   pushes itself carry `max_attempts(1)` and stop in place.
//! - **A refusing budget**: a retry it refuses in the slot is handed back after the planned
//!   wait (the slot is released while the budget refills); a handed-back retry it still
//!   refuses when it comes up stops the task (`budget_exhausted`), as the engine stops a call.
//!   An [`AdaptiveThrottle`](crate::AdaptiveThrottle) in the budget's place is asked before
//!   every attempt: one it rejects is not made, and the task is handed back for the throttle's
//!   next bucket of time.
//! - **An open breaker** hands the task back for the breaker's cool-down without an attempt;
//!   such deferrals are not attempts, and only the policy's deadline bounds them.
//! - **An error of unknown type is transient** (as apalis treats a failed task), where
//!   [`classify_chain`](crate::classify_chain) calls an unknown chain permanent: a handler's
//!   error is most often its own, and [`classify_as`](DurableRetryLayer::classify_as) says
//!   its class.
//! - **A state that cannot be read** (a hand-edited row) sets the task aside, `Killed` with
//!   its input: running it would restart its attempts and its key.
//! - **A successor that cannot be pushed** (the database refuses three times over about
//!   600 ms) leaves the row `Failed` with its input and says why; apalis fetches a producer's
//!   row again while its attempts allow.
//! - **An ending row's result** is a sentence, then the task's whole state as JSON on a line of
//!   its own (`retry-kit state: {..}`), so [`run_log`] reads the last attempt back: the row
//!   itself cannot be updated, and apalis's `FetchById` does not return results.
//! - **[`resume`]** gives a stopped task a fresh budget (attempts, deadline) and keeps its key.
//!
//! # Cost
//!
//! Nothing of this is compiled without the feature, and with it the engine, the attribute and
//! the builder are unchanged: the layer is a front end over
//! [`RetryPolicy::plan`](crate::RetryPolicy::plan). The feature adds apalis-core (pinned,
//! default features off) and what it depends on: 21 crates over retry-kit's default build
//! (apalis-core, futures-util and five futures crates, pin-project, serde and serde_json,
//! slab, thiserror, tower-layer and tower-service, and their small helpers), all of them
//! already in every apalis worker's build. A cold build of retry-kit (`CARGO_BUILD_JOBS=1`,
//! debug, on 2 shared cores) took 14 s with the default features and 47 s with `apalis`
//! (user time 10 s and 25 s). The jobs per second through the layer against
//! apalis's own retry layer are in `benches/README.md` ("The apalis layer").

mod classify;
mod identity;
mod in_attempt;
mod layer;
mod metadata;
mod outcome;
mod resume;
mod run_log;
mod service;

pub use layer::DurableRetryLayer;
pub use metadata::STATE_KEY;
pub use outcome::{Ended, HandedBack};
pub use resume::{ResumeError, resume};
pub use run_log::{Outcome, RunLog, RunLogError, run_log};
pub use service::{DurableRetry, RunFuture};

use apalis_core::task::builder::TaskBuilder;

/// A task for a queue whose worker has the layer: `TaskBuilder::new(args)` with a new id (a
/// ULID, as the backends make them: read it with `task.task_id()` to follow the task's
/// [`run_log`]) and `max_attempts(1)`, so that apalis never fetches a stopped task again (the
/// layer decides every retry). Push it with `storage.push_task(retry_kit::apalis::task(args).build())`;
/// add `.idempotency_key(..)` to give it an identity of your own (an interval's date), which
/// its key is made from.
pub fn task<Args>(args: Args) -> TaskBuilder<Args> {
    TaskBuilder::new(args)
        .task_id(identity::fresh_id())
        .max_attempts(1)
}
