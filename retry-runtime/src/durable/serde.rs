//! A [`RetryState`] in a database row or a job's payload (feature `serde`): stable field names,
//! times in RFC 3339 (UTC), durations in the attribute's syntax, the key as 32 hex digits, and
//! each record's next action as the seeds' run log says it:
//!
//! ```json
//! {
//!   "attempts": 2,
//!   "previous_delay": "12s",
//!   "started": "2026-12-04T02:00:00Z",
//!   "idempotency_key": "9f2c4a1e0b7d4c3a8e6f5d2b1a0c9e8f",
//!   "resume_at": "2026-12-04T02:00:14.5Z",
//!   "run_log": [
//!     {"attempt": 1, "started": "2026-12-04T02:00:00Z", "ended": "2026-12-04T02:00:01Z",
//!      "class": "transient", "error": "timed out", "next": {"action": "retry", "after": "6s"}},
//!     {"attempt": 2, "started": "2026-12-04T02:00:07Z", "ended": "2026-12-04T02:00:02.5Z",
//!      "class": "transient", "error": "timed out", "next": {"action": "retry", "after": "12s"}}
//!   ],
//!   "dropped": 0
//! }
//! ```
//!
//! A stop is `{"action": "stop", "reason": "attempts_exhausted"}` (the names of
//! [`StopReason::as_str`](crate::StopReason::as_str)); a deferred one also says when it is due,
//! `{"action": "stop", "reason": "deferred", "until": "2026-12-04T03:00:00Z"}`.

use super::record::AttemptRecord;
use super::state::{FIRST, RetryState};
use super::{Plan, wall};
use crate::class::ErrorClass;
use crate::config::{duration_text, parse_duration};
use crate::context::IdempotencyKey;
use crate::stop::StopReason;
use serde::de::{Deserialize, Deserializer, Error};
use serde::ser::{Serialize, Serializer};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StateForm {
    attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    previous_delay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attempt_started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resume_at: Option<String>,
    #[serde(default)]
    run_log: Vec<RecordForm>,
    #[serde(default)]
    dropped: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordForm {
    attempt: u32,
    started: String,
    ended: String,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    error: Option<String>,
    next: NextForm,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum NextForm {
    Retry {
        after: String,
    },
    Quarantine,
    Stop {
        reason: String,
        /// When a deferred call is due (`StopReason::Deferred`'s `until`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<String>,
    },
    Done,
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for RetryState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let time = |t: Option<SystemTime>| t.map(wall::format);
        StateForm {
            attempts: self.attempts,
            previous_delay: self.previous_delay.map(duration_text),
            started: time(self.started),
            attempt_started: time(self.attempt_started),
            idempotency_key: self.key.map(|k| k.to_string()),
            resume_at: time(self.resume_at),
            run_log: self.run_log().map(record_form).collect(),
            dropped: self.dropped,
        }
        .serialize(serializer)
    }
}

fn record_form(r: &AttemptRecord) -> RecordForm {
    RecordForm {
        attempt: r.number,
        started: wall::format(r.started),
        ended: wall::format(r.ended),
        class: r.class.map(|c| c.as_str().to_owned()),
        error: r.error.clone(),
        next: match r.next {
            Plan::Retry { after } => NextForm::Retry {
                after: duration_text(after),
            },
            Plan::Quarantine => NextForm::Quarantine,
            Plan::Stop(reason) => NextForm::Stop {
                reason: reason.as_str().to_owned(),
                until: match reason {
                    StopReason::Deferred { until } => Some(wall::format(until)),
                    _ => None,
                },
            },
            Plan::Done => NextForm::Done,
        },
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for RetryState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = StateForm::deserialize(deserializer)?;
        state_of(form).map_err(D::Error::custom)
    }
}

fn state_of(form: StateForm) -> Result<RetryState, String> {
    let time = |field: &str, t: Option<String>| -> Result<Option<SystemTime>, String> {
        t.map(|t| wall::parse(&t).map_err(|e| format!("`{field}`: {e}")))
            .transpose()
    };
    let mut records = form
        .run_log
        .into_iter()
        .map(record_of)
        .collect::<Result<VecDeque<_>, _>>()?;
    let head: Vec<AttemptRecord> = records.drain(..records.len().min(FIRST)).collect();
    Ok(RetryState {
        attempts: form.attempts,
        previous_delay: form
            .previous_delay
            .map(|d| duration("previous_delay", &d))
            .transpose()?,
        started: time("started", form.started)?,
        attempt_started: time("attempt_started", form.attempt_started)?,
        key: form
            .idempotency_key
            .map(|k| {
                k.parse::<IdempotencyKey>()
                    .map_err(|e| format!("`idempotency_key`: {e}"))
            })
            .transpose()?,
        resume_at: time("resume_at", form.resume_at)?,
        head,
        tail: records,
        dropped: form.dropped,
    })
}

fn duration(field: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| format!("`{field}`: {e}"))
}

fn record_of(r: RecordForm) -> Result<AttemptRecord, String> {
    let at = |field: &str, t: &str| {
        wall::parse(t).map_err(|e| format!("attempt {}: `{field}`: {e}", r.attempt))
    };
    let class = match &r.class {
        None => None,
        Some(name) => Some(ErrorClass::from_name(name).ok_or_else(|| {
            format!(
                "attempt {}: unknown class \"{name}\"; expected transient, permanent, idempotent_only or already_done",
                r.attempt
            )
        })?),
    };
    let next = match &r.next {
        NextForm::Retry { after } => Plan::Retry {
            after: duration("after", after)?,
        },
        NextForm::Quarantine => Plan::Quarantine,
        NextForm::Stop { reason, until } => {
            let reason = match (StopReason::from_name(reason), until) {
                // The one reason with a field: when the deferred call is due.
                (Some(StopReason::Deferred { .. }), Some(until)) => StopReason::Deferred {
                    until: at("until", until)?,
                },
                (Some(StopReason::Deferred { .. }), None) => {
                    return Err(format!(
                        "attempt {}: stop reason \"deferred\" without `until`",
                        r.attempt
                    ));
                }
                (Some(reason), _) => reason,
                (None, _) => {
                    return Err(format!(
                        "attempt {}: unknown stop reason \"{reason}\"",
                        r.attempt
                    ));
                }
            };
            Plan::Stop(reason)
        }
        NextForm::Done => Plan::Done,
    };
    Ok(AttemptRecord {
        number: r.attempt,
        started: at("started", &r.started)?,
        ended: at("ended", &r.ended)?,
        class,
        error: r.error,
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(number: u32, next: Plan) -> AttemptRecord {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000 + u64::from(number));
        AttemptRecord {
            number,
            started: at,
            ended: at,
            class: Some(ErrorClass::Transient),
            error: Some("unavailable".into()),
            next,
        }
    }

    #[test]
    fn every_next_action_reads_back_as_written_a_deferred_stop_with_its_time() {
        let until = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_003_600_250);
        let mut state = RetryState::default();
        for (n, next) in [
            Plan::Retry {
                after: Duration::from_millis(1500),
            },
            Plan::Stop(StopReason::Deferred { until }),
            Plan::Stop(StopReason::AttemptsExhausted),
            Plan::Quarantine,
            Plan::Done,
        ]
        .into_iter()
        .enumerate()
        {
            state.push(record(n as u32 + 1, next));
        }
        let text = serde_json::to_string(&state).unwrap();
        assert!(
            text.contains(r#""reason":"deferred","until":"2026-11-30T"#),
            "{text}"
        );
        let back: RetryState = serde_json::from_str(&text).unwrap();
        let nexts: Vec<Plan> = back.run_log().map(|r| r.next).collect();
        let written: Vec<Plan> = state.run_log().map(|r| r.next).collect();
        assert_eq!(nexts, written);
    }

    #[test]
    fn a_deferred_stop_without_its_time_is_refused_by_name() {
        let text = r#"{"attempts": 1, "run_log": [{"attempt": 1, "started": "2026-12-04T02:00:00Z",
            "ended": "2026-12-04T02:00:01Z", "next": {"action": "stop", "reason": "deferred"}}]}"#;
        let error = serde_json::from_str::<RetryState>(text).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(r#"stop reason "deferred" without `until`"#),
            "{error}"
        );
    }
}
