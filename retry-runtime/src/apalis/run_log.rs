//! [`run_log`]: a task's attempts, last error and next action, read back from the queue's
//! storage as an operator needs them.

use super::identity::{successor_id, task_key};
use super::outcome::state_in;
use crate::class::ErrorClass;
use crate::context::IdempotencyKey;
use crate::durable::{AttemptRecord, Plan, RetryState, wall};
use crate::stop::StopReason;
use apalis_core::backend::{FetchById, WaitForCompletion};
use apalis_core::task::Task;
use apalis_core::task::metadata::Metadata;
use apalis_core::task::status::Status;
use apalis_core::task::task_id::TaskId;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a task stands, read from the last row of its chain.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Waiting in the queue for its next attempt, due at this time.
    Waiting {
        /// When it is due (whole seconds).
        due: SystemTime,
    },
    /// A worker has it now.
    Running,
    /// Done: an attempt succeeded, or the receiver said an earlier one had.
    Done,
    /// Quarantined (stored `Killed`): its error is permanent; retrying the same input cannot
    /// help. The input is kept on the row.
    Quarantined,
    /// Stopped (stored `Failed`): a limit was reached (attempts, deadline, budget, a wait
    /// longer than allowed). The input is kept on the row; the task can be resumed.
    Stopped(StopReason),
    /// Failed outside the layer's decisions (apalis failed the row: the layer could not hand
    /// the task back, or the row was not run through the layer), with apalis's text.
    Failed(String),
}

/// A task's run log, as [`run_log`] reads it: the rows the task ran as, its attempts (each
/// with its times, class, error and what came next), its last error, and where it stands.
/// Its `Display` is the operator's view:
///
/// ```text
/// task 01JEX7Q5Z3M4N5P6Q7R8S9T0VW, key 3f1c…: stopped (retry_after_too_long) after 1 attempt
///   attempt 1  2026-12-04T02:00:00Z  transient        rate limited, retry after 7200s  → stop: retry_after_too_long
///   last error (transient): rate limited, retry after 7200s
///   next: resume it when the cause is gone (retry_kit::apalis::resume); its input is kept
/// ```
#[derive(Clone, Debug)]
pub struct RunLog {
    rows: Vec<TaskId>,
    key: IdempotencyKey,
    state: RetryState,
    attempts: u32,
    outcome: Outcome,
}

impl RunLog {
    /// The task asked about (the first row of the chain read).
    pub fn task(&self) -> &TaskId {
        &self.rows[0]
    }

    /// Every row the task ran as, in order: the task, then each row it was handed back as.
    pub fn rows(&self) -> &[TaskId] {
        &self.rows
    }

    /// The row the task stands in now.
    pub fn last_row(&self) -> &TaskId {
        self.rows.last().unwrap_or(&self.rows[0])
    }

    /// The idempotency key every attempt of the task sent.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }

    /// The attempts made, across every run: those recorded in the task's state, and those
    /// apalis counted on the last row after it (an attempt that succeeded; one cut short by a
    /// crash, which apalis counts when it re-enqueues the row).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The failed attempts recorded, in order (bounded as a [`RetryState`]'s run log is).
    pub fn records(&self) -> impl DoubleEndedIterator<Item = &AttemptRecord> {
        self.state.run_log()
    }

    /// The class and text of the last error recorded, if any attempt failed.
    pub fn last_error(&self) -> Option<(ErrorClass, &str)> {
        let last = self.state.run_log().next_back()?;
        Some((last.class()?, last.error()?))
    }

    /// Where the task stands.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The task's state as last persisted.
    pub fn state(&self) -> &RetryState {
        &self.state
    }
}

/// The run log of `task`: follows the task from the row `task` names through each row it was
/// handed back as, and reads the last one. `storage` is any clone of the queue's storage
/// (`SqliteStorage<Args>`, `PostgresStorage<Args>`); only apalis's public API is used
/// (`FetchById`, and `WaitForCompletion::check_status` for a finished row's result).
pub async fn run_log<S, C>(storage: &mut S, task: &TaskId) -> Result<RunLog, RunLogError>
where
    S: FetchById<Task = Task<C>> + WaitForCompletion<serde_json::Value>,
{
    let read = |e: S::Error| RunLogError::Storage(e.to_string());
    let mut id = task.clone();
    let mut row = storage
        .fetch_by_id(&id)
        .await
        .map_err(read)?
        .ok_or_else(|| RunLogError::NotFound(id.clone()))?;
    let mut rows = vec![id.clone()];
    let (state, key) = loop {
        let state = RetryState::extract(row.metadata())
            .map_err(|e| RunLogError::State(id.clone(), e.to_string()))?;
        let key = state.key.unwrap_or_else(|| task_key(row.ctx(), &id));
        let next = successor_id(key, &id);
        match storage.fetch_by_id(&next).await.map_err(read)? {
            Some(successor) => {
                row = successor;
                id = next;
                rows.push(id.clone());
            }
            None => break (state, key),
        }
    };
    let on_row = u32::try_from(row.attempt()).unwrap_or(u32::MAX);
    let mut log = RunLog {
        rows,
        key,
        attempts: state.attempts().saturating_add(on_row),
        state,
        outcome: Outcome::Running,
    };
    log.outcome = match row.status() {
        Status::Pending => Outcome::Waiting {
            due: UNIX_EPOCH + Duration::from_secs(row.run_at().unwrap_or_default()),
        },
        Status::Queued | Status::Running => Outcome::Running,
        _ => {
            let results = storage.check_status([id.clone()]).await.map_err(read)?;
            let result = results.into_iter().next().map(|r| r.result);
            match result {
                // Not final (a `Failed` row apalis fetches again): waiting for that.
                None => Outcome::Waiting {
                    due: UNIX_EPOCH + Duration::from_secs(row.run_at().unwrap_or_default()),
                },
                Some(Ok(_)) => Outcome::Done,
                Some(Err(text)) => match state_in(&text) {
                    Some(ended) => {
                        let outcome = match ended.run_log().next_back().map(|r| r.next()) {
                            Some(Plan::Quarantine) => Outcome::Quarantined,
                            Some(Plan::Stop(reason)) => Outcome::Stopped(reason),
                            _ => Outcome::Done,
                        };
                        // The final state knows this row's attempts itself.
                        log.attempts = ended.attempts().max(log.attempts);
                        log.state = ended;
                        outcome
                    }
                    None => match row.status() {
                        Status::Done => Outcome::Done,
                        Status::Killed => Outcome::Quarantined,
                        _ => Outcome::Failed(text),
                    },
                },
            }
        }
    };
    Ok(log)
}

/// Why [`run_log`] could not read a task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunLogError {
    /// No row has this id.
    NotFound(TaskId),
    /// A row's retry state could not be read.
    State(TaskId, String),
    /// The storage failed.
    Storage(String),
}

impl fmt::Display for RunLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunLogError::NotFound(id) => write!(
                f,
                "no task {id} in this storage: check the id, and that the storage is the \
                 queue's (the same database and queue name)"
            ),
            RunLogError::State(id, e) => write!(
                f,
                "the retry state stored with task {id} cannot be read: {e}"
            ),
            RunLogError::Storage(e) => write!(f, "could not read the queue's storage: {e}"),
        }
    }
}

impl std::error::Error for RunLogError {}

/// As the run log says it: `waiting (due 2026-12-04T03:00:00Z)`, `done`, `stopped
/// (attempts_exhausted)`, ...
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Waiting { due } => write!(f, "waiting (due {})", wall::format(*due)),
            Outcome::Running => f.write_str("running"),
            Outcome::Done => f.write_str("done"),
            Outcome::Quarantined => f.write_str("quarantined"),
            Outcome::Stopped(reason) => write!(f, "stopped ({reason})"),
            Outcome::Failed(text) => write!(f, "failed: {text}"),
        }
    }
}

impl fmt::Display for RunLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.attempts == 1 { "" } else { "s" };
        let key = self.key.to_string();
        write!(f, "task {}, key {}…: ", self.task(), &key[..8])?;
        match &self.outcome {
            Outcome::Waiting { .. } => write!(f, "waiting")?,
            Outcome::Running => write!(f, "running")?,
            Outcome::Done => write!(f, "done")?,
            Outcome::Quarantined => write!(f, "quarantined")?,
            Outcome::Stopped(reason) => write!(f, "stopped ({reason})")?,
            Outcome::Failed(_) => write!(f, "failed")?,
        }
        write!(f, " after {} attempt{plural}", self.attempts)?;
        if self.rows.len() > 1 {
            write!(f, " in {} runs", self.rows.len())?;
        }
        writeln!(f)?;
        if self.state.dropped() > 0 {
            writeln!(
                f,
                "  ({} attempts left out of the log)",
                self.state.dropped()
            )?;
        }
        for r in self.state.run_log() {
            writeln!(
                f,
                "  attempt {:<3} {}  {:<16} {}  → {}",
                r.number(),
                wall::format(to_millis(r.started())),
                r.class().map_or("", |c| c.as_str()),
                r.error().unwrap_or(""),
                r.next()
            )?;
        }
        let succeeded = u32::from(self.outcome == Outcome::Done);
        let unrecorded = self
            .attempts
            .saturating_sub(self.state.attempts())
            .saturating_sub(succeeded);
        if unrecorded > 0 {
            writeln!(
                f,
                "  ({unrecorded} more on the last row, failed and retried in its slot or cut \
                 short by a crash: counted, not recorded, as apalis keeps only a done row's \
                 result)"
            )?;
        }
        if let Some((class, error)) = self.last_error() {
            writeln!(f, "  last error ({class}): {error}")?;
        }
        let next = self.attempts.saturating_add(1);
        match &self.outcome {
            Outcome::Waiting { due } => write!(
                f,
                "  next: attempt {next} at {} (task {})",
                wall::format(*due),
                self.last_row()
            ),
            Outcome::Running => write!(f, "  next: attempt running on a worker now"),
            Outcome::Done => write!(f, "  next: nothing, done"),
            Outcome::Quarantined => write!(
                f,
                "  next: fix the input (kept on task {}); retrying it as it is cannot help",
                self.last_row()
            ),
            Outcome::Stopped(_) => write!(
                f,
                "  next: resume it when the cause is gone (retry_kit::apalis::resume); its \
                 input is kept on task {}",
                self.last_row()
            ),
            Outcome::Failed(text) => write!(f, "  next: apalis failed the row: {text}"),
        }
    }
}

/// `time` to the millisecond, as the operator's view shows it.
fn to_millis(time: SystemTime) -> SystemTime {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_millis(since.as_millis().try_into().unwrap_or(u64::MAX))
}
