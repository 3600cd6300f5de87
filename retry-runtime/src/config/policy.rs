//! `RetryPolicy` in a configuration: the keys the attribute's table marks `on_policy`, their
//! values checked by the attribute's own checks, applied through the builder methods of the same
//! names (in the order written, as the attribute applies them).

use super::value::{Value, duration_text};
use super::vocabulary::check;
use super::vocabulary::keys::{self, KEYS, Key};
use super::{Checked, Word, read_keys};
use crate::policy::{Backoff, RetryPolicy};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::time::Duration;

/// What a configuration error calls a policy.
const WHAT: &str = "a retry policy";

/// The keys of a policy: the attribute's keys that set it, in the table's order.
fn names() -> Vec<&'static str> {
    KEYS.iter()
        .filter(|k| k.on_policy)
        .map(|k| k.name)
        .collect()
}

/// The attribute's keys and values: `{"attempts": 5, "backoff": "exponential", "base":
/// "100ms", ...}`. `jitter` is written only when it was chosen (otherwise the backoff shape
/// chooses it, as in the attribute), `multiplier` only with an exponential backoff (the only
/// one it shapes, and the attribute refuses it beside another), and `deadline` only when there
/// is one.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for RetryPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for name in names() {
            match name {
                "attempts" => map.serialize_entry(name, &self.attempts)?,
                "backoff" => map.serialize_entry(name, self.backoff.word())?,
                "base" => map.serialize_entry(name, &duration_text(self.base))?,
                "multiplier" if self.backoff == Backoff::Exponential => {
                    map.serialize_entry(name, &self.multiplier)?
                }
                "max_delay" => map.serialize_entry(name, &duration_text(self.max_delay))?,
                "jitter" if self.jitter_given => map.serialize_entry(name, self.jitter.word())?,
                "idempotent" => map.serialize_entry(name, &self.idempotent)?,
                "deadline" => {
                    if let Some(deadline) = self.deadline {
                        map.serialize_entry(name, &duration_text(deadline))?;
                    }
                }
                "nested" => map.serialize_entry(name, self.nested.word())?,
                // `jitter` left to the backoff shape; a key added to the table without a field
                // here is caught by the round-trip test of every key.
                _ => {}
            }
        }
        map.end()
    }
}

/// The attribute's keys and values, absent keys at the attribute's defaults; an unknown key or
/// a bad value is an error that names it, as the attribute's.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Jitter, RetryPolicy};
/// use std::time::Duration;
///
/// let policy: RetryPolicy = serde_json::from_str(r#"{"attempts": 5, "base": "250ms", "jitter": "equal"}"#).unwrap();
/// assert_eq!(policy, RetryPolicy::exponential(Duration::from_millis(250)).attempts(5).jitter(Jitter::Equal));
///
/// let error = serde_json::from_str::<RetryPolicy>(r#"{"atempts": 5}"#).unwrap_err();
/// assert!(error.to_string().starts_with("unknown key `atempts` in a retry policy; did you mean `attempts`?"));
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for RetryPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PolicyVisitor)
    }
}

struct PolicyVisitor;

impl<'de> Visitor<'de> for PolicyVisitor {
    type Value = RetryPolicy;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a retry policy: a table of `#[retryable]` keys, such as `attempts = 5`")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RetryPolicy, A::Error> {
        let mut policy = RetryPolicy::new();
        let mut multiplier = false;
        read_keys(map, WHAT, &names(), |name, map| {
            let Some(key) = keys::find(name) else {
                // `names()` lists the table's keys, so each is found.
                return Err(de::Error::custom(format!("`{name}` is not a key")));
            };
            multiplier |= name == "multiplier";
            policy = map.next_value_seed(Checked(|value: Value| set(policy, key, &value)))?;
            Ok(())
        })?;
        // As the attribute: a multiplier beside a fixed or linear backoff would be ignored.
        if multiplier && policy.backoff != Backoff::Exponential {
            return Err(de::Error::custom(check::MULTIPLIER_WITHOUT_EXPONENTIAL));
        }
        Ok(policy)
    }
}

/// `policy` with `key` set to `value`, by the builder method of the key's name; `null` puts
/// the key back to its default, as if it were absent.
fn set(policy: RetryPolicy, key: &Key, value: &Value) -> Result<RetryPolicy, String> {
    if let Value::Null = value {
        return Ok(unset(policy, key.name));
    }
    Ok(match key.name {
        "attempts" => policy.attempts(count(key, value)?),
        "backoff" => policy.backoff(word(key, value)?),
        "base" => policy.base(duration(key, value)?),
        "multiplier" => policy.multiplier(factor(key, value)?),
        "max_delay" => policy.max_delay(duration(key, value)?),
        "jitter" => policy.jitter(word(key, value)?),
        "idempotent" => policy.idempotent(value.flag().ok_or_else(|| check::expected(key))?),
        "deadline" => policy.deadline(duration(key, value)?),
        "nested" => policy.nested(word(key, value)?),
        other => return Err(format!("`{other}` is not a setting of a policy")),
    })
}

/// `policy` with the setting `name` at the attribute's default: no deadline, a jitter chosen
/// by the backoff shape again, ...
fn unset(mut policy: RetryPolicy, name: &str) -> RetryPolicy {
    let default = RetryPolicy::new();
    match name {
        "attempts" => policy.attempts = default.attempts,
        "backoff" => policy = policy.backoff(default.backoff),
        "base" => policy.base = default.base,
        "multiplier" => policy.multiplier = default.multiplier,
        "max_delay" => policy.max_delay = default.max_delay,
        "jitter" => {
            policy.jitter_given = false;
            policy = policy.backoff(policy.backoff);
        }
        "idempotent" => policy.idempotent = default.idempotent,
        "deadline" => policy.deadline = None,
        "nested" => policy.nested = default.nested,
        _ => {}
    }
    policy
}

fn count(key: &Key, value: &Value) -> Result<u32, String> {
    let n = value.whole().ok_or_else(|| check::expected(key))?;
    check::count(key, n)
}

fn factor(key: &Key, value: &Value) -> Result<f64, String> {
    let m = value.number().ok_or_else(|| check::expected(key))?;
    check::factor(key, m)
}

fn duration(key: &Key, value: &Value) -> Result<Duration, String> {
    let text = value.text().ok_or_else(|| check::expected(key))?;
    check::duration(key, text)
}

fn word<W: Word>(key: &Key, value: &Value) -> Result<W, String> {
    let text = value.text().ok_or_else(|| check::expected(key))?;
    check::word(key, text)?;
    W::from_word(text).ok_or_else(|| check::expected(key))
}
