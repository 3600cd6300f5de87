//! [`RetryState`]: what a scheduler persists between runs of one task.

use super::AttemptRecord;
use crate::clock;
use crate::context::IdempotencyKey;
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// How many of the first attempts a run log keeps.
pub(crate) const FIRST: usize = 2;
/// How many of the latest attempts a run log keeps.
pub(crate) const LAST: usize = 8;

/// What a scheduler persists between runs of one task so that its retries continue where they
/// left off: the attempts made, the previous delay (decorrelated jitter grows from it), when
/// the first attempt started (wall-clock time, so that a `deadline` spans processes), the
/// idempotency key (the same on every run), when to run again, and the run log: one
/// [`AttemptRecord`] per attempt.
///
/// The run log is bounded: it keeps the first 2 and the last 8 attempts, and counts those
/// dropped between them ([`dropped`](Self::dropped)), so a task that retries for days carries a
/// few kilobytes, not its whole history.
///
/// `RetryState::default()` is a task not yet started. With the `serde` feature it serializes
/// with stable field names, times in RFC 3339 and durations in the attribute's syntax (see
/// [`durable`](crate::durable)).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::durable::{Plan, RetryState};
/// use retry_kit::RetryPolicy;
/// use std::{io, time::Duration};
///
/// let policy = RetryPolicy::fixed(Duration::from_secs(30)).attempts(20);
/// let mut state = RetryState::default();
/// assert_eq!(state.attempts(), 0);
/// for _ in 0..12 {
///     state.start_attempt();
///     let plan = policy.plan(&mut state, &io::Error::from(io::ErrorKind::ConnectionRefused));
///     assert_eq!(plan, Plan::Retry { after: Duration::from_secs(30) });
/// }
/// assert_eq!(state.attempts(), 12);
/// let kept: Vec<u32> = state.run_log().map(|r| r.number()).collect();
/// assert_eq!(kept, [1, 2, 5, 6, 7, 8, 9, 10, 11, 12]);
/// assert_eq!(state.dropped(), 2);
/// assert!(state.resume_at().is_some());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetryState {
    pub(crate) attempts: u32,
    pub(crate) previous_delay: Option<Duration>,
    pub(crate) started: Option<SystemTime>,
    pub(crate) attempt_started: Option<SystemTime>,
    pub(crate) key: Option<IdempotencyKey>,
    pub(crate) resume_at: Option<SystemTime>,
    /// The first attempts, up to [`FIRST`].
    pub(crate) head: Vec<AttemptRecord>,
    /// The latest attempts after the head, up to [`LAST`].
    pub(crate) tail: VecDeque<AttemptRecord>,
    /// Attempts dropped from between the head and the tail.
    pub(crate) dropped: u64,
}

impl RetryState {
    /// The attempts made so far, across every run of the task.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The run log, in order: the first attempts, then the latest (see
    /// [`dropped`](Self::dropped) for those between them).
    pub fn run_log(&self) -> impl DoubleEndedIterator<Item = &AttemptRecord> {
        self.head.iter().chain(self.tail.iter())
    }

    /// How many attempts the run log left out between its first and its latest.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// When the first attempt started, on the wall clock of the process that ran it.
    pub fn started(&self) -> Option<SystemTime> {
        self.started
    }

    /// The idempotency key every run of the task sends, once the first run has made it.
    pub fn idempotency_key(&self) -> Option<IdempotencyKey> {
        self.key
    }

    /// When the task should run again, after a plan or a call that handed its wait back;
    /// `None` when it should not (done, quarantined, stopped) or has not run.
    pub fn resume_at(&self) -> Option<SystemTime> {
        self.resume_at
    }

    /// The delay before the latest retry that decorrelated jitter grows from (`None` before
    /// the first, or under another jitter).
    pub fn previous_delay(&self) -> Option<Duration> {
        self.previous_delay
    }

    /// Mark the start of an attempt (now, on the wall clock the crate follows), so that its
    /// record says when it started: a scheduler calls it before running the task, and
    /// [`RetryPolicy::plan`](crate::RetryPolicy::plan) after it fails. Without it, the record
    /// starts when it ends.
    pub fn start_attempt(&mut self) {
        let now = clock::wall_now();
        self.attempt_started = Some(now);
        self.started.get_or_insert(now);
    }

    /// Add `record` to the run log, dropping the oldest of the latest when it is full.
    pub(crate) fn push(&mut self, record: AttemptRecord) {
        if self.head.len() < FIRST {
            self.head.push(record);
            return;
        }
        if self.tail.len() == LAST {
            self.tail.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        self.tail.push_back(record);
    }
}
