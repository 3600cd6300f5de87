//! [`AttemptRecord`]: one attempt in a [`RetryState`](super::RetryState)'s run log.

use super::Plan;
use crate::class::ErrorClass;
use std::time::SystemTime;

/// The longest error text a record keeps, in bytes: a run log is a record for an operator, and
/// stays small enough to persist with every task whatever the errors say. A longer text keeps
/// its start and says how much was left out.
pub(crate) const ERROR_TEXT_LIMIT: usize = 2048;

/// One attempt of a call whose state outlives the process: which attempt, when it started and
/// ended (wall-clock time), its class and error text if it failed, and what came next: the run
/// log's line for an operator ("attempt 3, 16:28:41 to 16:28:43, transient: connection reset,
/// retry in 12 s").
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::durable::{Plan, RetryState};
/// use retry_kit::{ErrorClass, RetryPolicy};
/// use std::{io, time::Duration};
///
/// let policy = RetryPolicy::fixed(Duration::from_secs(5));
/// let mut state = RetryState::default();
/// policy.plan(&mut state, &io::Error::from(io::ErrorKind::ConnectionReset));
///
/// let record = state.run_log().next().unwrap();
/// assert_eq!(record.number(), 1);
/// assert_eq!(record.class(), Some(ErrorClass::Transient));
/// assert_eq!(record.error(), Some("connection reset"));
/// assert_eq!(record.next(), Plan::Retry { after: Duration::from_secs(5) });
/// assert!(record.started() <= record.ended());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRecord {
    pub(crate) number: u32,
    pub(crate) started: SystemTime,
    pub(crate) ended: SystemTime,
    pub(crate) class: Option<ErrorClass>,
    pub(crate) error: Option<String>,
    pub(crate) next: Plan,
}

impl AttemptRecord {
    /// The attempt's number, from 1, counted across every run of the task.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// When the attempt started, on the wall clock of the process that ran it.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// When the attempt ended (failed, or succeeded).
    pub fn ended(&self) -> SystemTime {
        self.ended
    }

    /// The class of its error; `None` for the attempt that succeeded.
    pub fn class(&self) -> Option<ErrorClass> {
        self.class
    }

    /// Its error's `Display` text (at most 2 KiB, then a note of how much was left out);
    /// `None` for the attempt that succeeded.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// What came after it: another attempt after a wait, quarantine, a stop, or done.
    pub fn next(&self) -> Plan {
        self.next
    }
}

/// `text` cut to [`ERROR_TEXT_LIMIT`] bytes at a character boundary, with a note of the rest.
pub(crate) fn bounded_text(text: String) -> String {
    if text.len() <= ERROR_TEXT_LIMIT {
        return text;
    }
    let mut cut = ERROR_TEXT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes more)", &text[..cut], text.len() - cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_text_keeps_its_start_and_says_what_was_left_out() {
        assert_eq!(bounded_text("short".into()), "short");
        let long = "é".repeat(ERROR_TEXT_LIMIT); // 2 bytes each
        let kept = bounded_text(long);
        assert!(kept.starts_with(&"é".repeat(ERROR_TEXT_LIMIT / 2)));
        assert!(
            kept.ends_with(&format!("({} bytes more)", ERROR_TEXT_LIMIT)),
            "{kept}"
        );
    }
}
