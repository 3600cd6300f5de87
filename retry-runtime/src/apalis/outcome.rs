//! What a run that did not succeed leaves in its row's `last_result`: a sentence for the
//! operator, and for the runs that end a task the whole [`RetryState`] after it, so that
//! [`run_log`](super::run_log) can read the last attempt back.
//!
//! These are the errors the layer returns (the worker's `Event::Error` carries them): a
//! listener can tell a hand-back from a failure with `error.downcast_ref::<HandedBack>()`.

use crate::durable::wall;
use crate::durable::{Plan, RetryState};
use apalis_core::task::task_id::TaskId;
use std::fmt;
use std::time::SystemTime;

/// Where the state starts in an ending run's text.
const STATE_MARK: &str = "\nretry-kit state: ";

/// A run that handed its task back to the queue: the row is stored `Done`, and the task goes
/// on as the row [`successor`](Self::successor), due at [`run_at`](Self::run_at), with its
/// state.
#[derive(Debug)]
pub struct HandedBack {
    pub(crate) successor: TaskId,
    pub(crate) run_at: SystemTime,
    /// Why, as the sentence's start says it ("attempt 2 failed (transient): ...").
    pub(crate) why: String,
    /// The successor only records the end (a stop on a row apalis would fetch again).
    pub(crate) to_record_end: bool,
}

impl HandedBack {
    /// The row the task goes on as.
    pub fn successor(&self) -> &TaskId {
        &self.successor
    }

    /// When the successor is due (whole seconds, as apalis schedules).
    pub fn run_at(&self) -> SystemTime {
        self.run_at
    }
}

impl fmt::Display for HandedBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.to_record_end {
            write!(
                f,
                "retry-kit: {}; the end is recorded on task {}",
                self.why, self.successor
            )
        } else {
            write!(
                f,
                "retry-kit: {}; handed back as task {}, due at {}",
                self.why,
                self.successor,
                wall::format(self.run_at)
            )
        }
    }
}

impl std::error::Error for HandedBack {}

/// A run that ended its task: quarantined (a permanent error: the row is stored `Killed`),
/// stopped (a limit reached: `Failed`), or done by an earlier attempt (`AlreadyDone`: `Done`).
/// Its text is a sentence, then the task's whole [`RetryState`] as JSON on a line of its own.
#[derive(Debug)]
pub struct Ended {
    pub(crate) state: RetryState,
    pub(crate) plan: Plan,
}

impl Ended {
    /// How the task ended: [`Plan::Quarantine`], [`Plan::Stop`] or [`Plan::Done`].
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// The task's state after its last attempt, run log included.
    pub fn state(&self) -> &RetryState {
        &self.state
    }
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.state.run_log().next_back();
        let attempt = self.state.attempts();
        let error = last.and_then(|r| r.error()).unwrap_or("no error recorded");
        let class = last
            .and_then(|r| r.class())
            .map_or("unknown", |c| c.as_str());
        match self.plan {
            Plan::Quarantine => write!(
                f,
                "retry-kit: quarantined after attempt {attempt} ({class}): {error}. Retrying \
                 the same input cannot help: the input is kept on this task"
            )?,
            Plan::Stop(reason) => write!(
                f,
                "retry-kit: stopped ({reason}) after attempt {attempt} ({class}): {error}. \
                 The input is kept: resume the task (retry_kit::apalis::resume) once the cause \
                 is gone"
            )?,
            _ => write!(
                f,
                "retry-kit: done: attempt {attempt} was told the work was already done \
                 ({class}): {error}"
            )?,
        }
        match serde_json::to_string(&self.state) {
            Ok(json) => write!(f, "{STATE_MARK}{json}"),
            Err(_) => Ok(()),
        }
    }
}

impl std::error::Error for Ended {}

/// The state an ending run wrote after its sentence, if `text` is such a run's.
pub(crate) fn state_in(text: &str) -> Option<RetryState> {
    let (_, json) = text.split_once(STATE_MARK)?;
    serde_json::from_str(json).ok()
}
