//! [`resume`]: a stopped task run again, with its input and its key, and a fresh budget.

use super::identity::successor_id;
use super::metadata::with_state;
use super::run_log::{Outcome, RunLogError, run_log};
use crate::clock;
use crate::durable::RetryState;
use apalis_core::backend::codec::Codec;
use apalis_core::backend::finalize::Durable;
use apalis_core::backend::{FetchById, TaskSink, WaitForCompletion, WireFormatBackend};
use apalis_core::task::Task;
use apalis_core::task::builder::TaskBuilder;
use apalis_core::task::task_id::TaskId;
use std::fmt;
use std::time::UNIX_EPOCH;

/// Run a stopped task again: the row it stopped on is handed on to a new row, due now, with
/// the same input and the same idempotency key (the receiver recognises what its earlier
/// attempts did), and a fresh budget: the policy's attempts and deadline count from the
/// resumed run. [`run_log`] of the task follows it there; the run log of the stopped run
/// stays on the row it stopped on. Returns the new row's id.
///
/// Only a stopped task can be resumed: a quarantined one needs its input fixed (push a new
/// task), and one still waiting or running is not over.
pub async fn resume<S, Args, C>(storage: &mut S, task: &TaskId) -> Result<TaskId, ResumeError>
where
    S: TaskSink<Args, Durable>
        + FetchById<Task = Task<C>>
        + WaitForCompletion<serde_json::Value>
        + WireFormatBackend,
    S::Codec: Codec<Args, Compact = C>,
    <S::Codec as Codec<Args>>::Error: fmt::Display,
{
    let log = run_log(storage, task).await.map_err(ResumeError::RunLog)?;
    if !matches!(log.outcome(), Outcome::Stopped(_)) {
        return Err(ResumeError::NotStopped(log.outcome().clone()));
    }
    let last = log.last_row().clone();
    let row = storage
        .fetch_by_id(&last)
        .await
        .map_err(|e| ResumeError::Storage(e.to_string()))?
        .ok_or_else(|| ResumeError::RunLog(RunLogError::NotFound(last.clone())))?;
    let args = storage
        .codec()
        .decode(&row.args)
        .map_err(|e| ResumeError::Storage(format!("the task's input cannot be read: {e}")))?;
    let state = RetryState {
        key: Some(log.idempotency_key()),
        ..RetryState::default()
    };
    let metadata =
        with_state(row.metadata(), &state).map_err(|e| ResumeError::Storage(e.to_string()))?;
    let next = successor_id(log.idempotency_key(), &last);
    let now = clock::wall_now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut builder = TaskBuilder::new(args)
        .task_id(next.clone())
        .run_at_timestamp(now)
        .max_attempts(1)
        .idempotency_key(format!("retry-kit:{next}"))
        .with_metadata(metadata);
    if let Some(priority) = row.priority() {
        builder = builder.priority(priority);
    }
    storage
        .push_task(builder.build())
        .await
        .map_err(|e| ResumeError::Storage(e.to_string()))?;
    Ok(next)
}

/// Why [`resume`] did not resume a task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumeError {
    /// The task is not stopped: it is where this says.
    NotStopped(Outcome),
    /// Its run log could not be read.
    RunLog(RunLogError),
    /// The storage failed.
    Storage(String),
}

impl fmt::Display for ResumeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeError::NotStopped(Outcome::Quarantined) => f.write_str(
                "the task is quarantined, not stopped: its input is the problem; push a task \
                 with the input fixed instead",
            ),
            ResumeError::NotStopped(outcome) => {
                write!(
                    f,
                    "only a stopped task can be resumed; this one is {outcome}"
                )
            }
            ResumeError::RunLog(e) => write!(f, "cannot resume: {e}"),
            ResumeError::Storage(e) => write!(f, "cannot resume: {e}"),
        }
    }
}

impl std::error::Error for ResumeError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_task_not_stopped_is_refused_with_where_it_stands_in_words() {
        let due = UNIX_EPOCH + Duration::from_secs(1_796_353_200);
        let text = ResumeError::NotStopped(Outcome::Waiting { due }).to_string();
        assert_eq!(
            text,
            "only a stopped task can be resumed; this one is waiting (due 2026-12-04T03:00:00Z)"
        );
    }
}
