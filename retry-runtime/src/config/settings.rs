//! `BreakerSettings` and `BudgetSettings` in a configuration: the names of the builder methods
//! and constructor arguments as keys, durations in the attribute's syntax.
//!
//! Each set of settings is one table ([`BREAKER`], [`RATIO`], [`BUDGET`]): its keys, what each
//! takes (for the messages and the suggestions) and how it is read.

use super::value::{Value, duration_text};
use super::vocabulary::check::duration_of;
use super::{Checked, read_keys};
use crate::breaker::{BreakerSettings, FailureRatio};
use crate::budget::BudgetSettings;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::time::Duration;

/// A key of a set of settings and what it takes, said as in a message: "`open_for` takes ...".
struct Field {
    name: &'static str,
    takes: Takes,
}

/// What a field takes.
enum Takes {
    /// A whole number from `min` to `max`.
    Whole { min: u32, max: u32, example: u32 },
    /// A number from `min` to `max` (inclusive), such as `example`.
    Number { min: f64, max: f64, example: f64 },
    /// A duration string such as `example`.
    Duration { example: &'static str },
    /// A table of its own (`failure_ratio`).
    Table(&'static [Field]),
}

/// The keys of a breaker's settings: `CircuitBreaker::new`'s arguments and its builder methods.
const BREAKER: &[Field] = &[
    whole("failure_threshold", 1, u32::MAX, 5),
    duration("open_for", "30s"),
    whole("success_threshold", 1, u16::MAX as u32, 2),
    whole("half_open_max", 1, u16::MAX as u32, 1),
    Field {
        name: "failure_ratio",
        takes: Takes::Table(RATIO),
    },
];

/// The keys of a breaker's failure-ratio rule: `CircuitBreaker::failure_ratio`'s arguments.
const RATIO: &[Field] = &[
    Field {
        name: "ratio",
        takes: Takes::Number {
            min: 0.0,
            max: 1.0,
            example: 0.5,
        },
    },
    duration("window", "30s"),
    whole("min_calls", 1, u32::MAX, 20),
];

/// The keys of a budget's settings: `RetryBudget::new`'s arguments.
const BUDGET: &[Field] = &[
    whole("max_tokens", 0, u32::MAX, 100),
    Field {
        name: "token_ratio",
        takes: Takes::Number {
            min: 0.0,
            max: f64::MAX,
            example: 0.1,
        },
    },
];

const fn whole(name: &'static str, min: u32, max: u32, example: u32) -> Field {
    Field {
        name,
        takes: Takes::Whole { min, max, example },
    }
}

const fn duration(name: &'static str, example: &'static str) -> Field {
    Field {
        name,
        takes: Takes::Duration { example },
    }
}

impl Field {
    /// What the field takes, for a value of another kind.
    fn expected(&self) -> String {
        let name = self.name;
        match &self.takes {
            Takes::Whole { min, max, example } => format!(
                "`{name}` takes a whole number from {min} to {max}, such as `{name} = {example}`"
            ),
            Takes::Number { example, .. } => {
                format!(
                    "`{name}` takes {}, such as `{name} = {example}`",
                    self.range()
                )
            }
            Takes::Duration { example } => {
                format!("`{name}` takes a string, such as `{name} = \"{example}\"`")
            }
            Takes::Table(fields) => {
                let keys: Vec<&str> = fields.iter().map(|f| f.name).collect();
                format!("`{name}` takes a table with the keys {}", keys.join(", "))
            }
        }
    }

    fn range(&self) -> String {
        match self.takes {
            Takes::Number { min, max, .. } if max == f64::MAX => {
                format!("a number of at least {min}")
            }
            Takes::Number { min, max, .. } => format!("a number from {min} to {max}"),
            _ => String::new(),
        }
    }

    fn whole(&self, value: &Value) -> Result<u32, String> {
        let (Takes::Whole { min, max, .. }, Some(n)) = (&self.takes, value.whole()) else {
            return Err(self.expected());
        };
        match u32::try_from(n) {
            Ok(n) if (*min..=*max).contains(&n) => Ok(n),
            _ => Err(format!(
                "`{}` must be a whole number from {min} to {max}",
                self.name
            )),
        }
    }

    fn number(&self, value: &Value) -> Result<f64, String> {
        let (Takes::Number { min, max, .. }, Some(x)) = (&self.takes, value.number()) else {
            return Err(self.expected());
        };
        if x.is_finite() && (*min..=*max).contains(&x) {
            return Ok(x);
        }
        Err(format!("`{}` must be {}", self.name, self.range()))
    }

    fn duration(&self, value: &Value) -> Result<Duration, String> {
        let text = value.text().ok_or_else(|| self.expected())?;
        duration_of(self.name, text)
    }
}

/// The field of `fields` named `name` (every name read is one of them).
fn field(fields: &'static [Field], name: &str) -> &'static Field {
    fields.iter().find(|f| f.name == name).unwrap_or(&fields[0])
}

fn names(fields: &[Field]) -> Vec<&'static str> {
    fields.iter().map(|f| f.name).collect()
}

/// A required key that is absent.
fn missing<E: de::Error>(what: &str, field: &Field) -> E {
    E::custom(format!(
        "missing key `{}` in {what}: {}",
        field.name,
        field.expected()
    ))
}

/// The keys of the builder: `{"failure_threshold": 5, "open_for": "30s", "success_threshold":
/// 2, "half_open_max": 1, "failure_ratio": {"ratio": 0.5, "window": "30s", "min_calls": 20}}`.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for BreakerSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("failure_threshold", &self.failure_threshold)?;
        map.serialize_entry("open_for", &duration_text(self.open_for))?;
        map.serialize_entry("success_threshold", &self.success_threshold)?;
        map.serialize_entry("half_open_max", &self.half_open_max)?;
        if let Some(rule) = &self.failure_ratio {
            map.serialize_entry("failure_ratio", rule)?;
        }
        map.end()
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for FailureRatio {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("ratio", &self.ratio)?;
        map.serialize_entry("window", &duration_text(self.window))?;
        map.serialize_entry("min_calls", &self.min_calls)?;
        map.end()
    }
}

/// `failure_threshold` and `open_for` are required, the rest default as in
/// [`CircuitBreaker::new`](crate::CircuitBreaker::new); an unknown key or a bad value is an
/// error that names it.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for BreakerSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(BreakerVisitor)
    }
}

struct BreakerVisitor;

impl<'de> Visitor<'de> for BreakerVisitor {
    type Value = BreakerSettings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a circuit breaker's settings, such as `failure_threshold = 5` and `open_for = \"30s\"`")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BreakerSettings, A::Error> {
        const WHAT: &str = "a circuit breaker's settings";
        let (mut threshold, mut open_for, mut successes, mut probes, mut ratio) =
            (None, None, None, None, None);
        read_keys(map, WHAT, &names(BREAKER), |name, map| {
            let field = field(BREAKER, name);
            // `null` is the key's default, as if it were absent (a layered configuration
            // clearing what a lower layer set): no failure-ratio rule, one probe, ...
            if name == "failure_ratio" {
                ratio = map.next_value::<Option<FailureRatio>>()?;
                return Ok(());
            }
            let whole = |value: Value| unless_null(value, |v| field.whole(&v));
            match name {
                "failure_threshold" => threshold = map.next_value_seed(Checked(whole))?,
                "success_threshold" => successes = map.next_value_seed(Checked(whole))?,
                "half_open_max" => probes = map.next_value_seed(Checked(whole))?,
                _ => {
                    let duration = |value: Value| unless_null(value, |v| field.duration(&v));
                    open_for = map.next_value_seed(Checked(duration))?;
                }
            }
            Ok(())
        })?;
        let threshold = threshold.ok_or_else(|| missing(WHAT, &BREAKER[0]))?;
        let open_for = open_for.ok_or_else(|| missing(WHAT, &BREAKER[1]))?;
        let mut settings = BreakerSettings::new(threshold, open_for)
            .success_threshold(successes.unwrap_or(1))
            .half_open_max(probes.unwrap_or(1));
        if let Some(r) = ratio {
            settings = settings.failure_ratio(r.ratio, r.window, r.min_calls);
        }
        Ok(settings)
    }
}

/// `None` for `null` (the key's default), else what `read` makes of the value.
fn unless_null<T>(
    value: Value,
    read: impl FnOnce(Value) -> Result<T, String>,
) -> Result<Option<T>, String> {
    match value {
        Value::Null => Ok(None),
        value => read(value).map(Some),
    }
}

/// `ratio`, `window` and `min_calls`, all required.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for FailureRatio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RatioVisitor)
    }
}

struct RatioVisitor;

impl<'de> Visitor<'de> for RatioVisitor {
    type Value = FailureRatio;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a failure-ratio rule: `{ ratio = 0.5, window = \"30s\", min_calls = 20 }`")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FailureRatio, A::Error> {
        const WHAT: &str = "a breaker's `failure_ratio`";
        let (mut ratio, mut window, mut min_calls) = (None, None, None);
        read_keys(map, WHAT, &names(RATIO), |name, map| {
            let field = field(RATIO, name);
            match name {
                "ratio" => ratio = Some(map.next_value_seed(Checked(|v: Value| field.number(&v)))?),
                "window" => {
                    window = Some(map.next_value_seed(Checked(|v: Value| field.duration(&v)))?);
                }
                _ => min_calls = Some(map.next_value_seed(Checked(|v: Value| field.whole(&v)))?),
            }
            Ok(())
        })?;
        let ratio = ratio.ok_or_else(|| missing(WHAT, &RATIO[0]))?;
        let window = window.ok_or_else(|| missing(WHAT, &RATIO[1]))?;
        let min_calls = min_calls.ok_or_else(|| missing(WHAT, &RATIO[2]))?;
        // Kept as a breaker keeps it (six decimal places, buckets of a tenth).
        let kept = BreakerSettings::new(1, Duration::ZERO).failure_ratio(ratio, window, min_calls);
        kept.failure_ratio
            .ok_or_else(|| de::Error::custom("a failure-ratio rule could not be kept"))
    }
}

/// `{"max_tokens": 100, "token_ratio": 0.1}`.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for BudgetSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("max_tokens", &self.max_tokens)?;
        map.serialize_entry("token_ratio", &self.token_ratio)?;
        map.end()
    }
}

/// `max_tokens` and `token_ratio`, both required, as [`RetryBudget::new`](crate::RetryBudget::new)
/// takes them.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for BudgetSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(BudgetVisitor)
    }
}

struct BudgetVisitor;

impl<'de> Visitor<'de> for BudgetVisitor {
    type Value = BudgetSettings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a retry budget's settings, such as `max_tokens = 100` and `token_ratio = 0.1`")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BudgetSettings, A::Error> {
        const WHAT: &str = "a retry budget's settings";
        let (mut max_tokens, mut token_ratio) = (None, None);
        read_keys(map, WHAT, &names(BUDGET), |name, map| {
            let field = field(BUDGET, name);
            match name {
                "max_tokens" => {
                    max_tokens = Some(map.next_value_seed(Checked(|v: Value| field.whole(&v)))?);
                }
                _ => {
                    token_ratio = Some(map.next_value_seed(Checked(|v: Value| field.number(&v)))?);
                }
            }
            Ok(())
        })?;
        let max_tokens = max_tokens.ok_or_else(|| missing(WHAT, &BUDGET[0]))?;
        let token_ratio = token_ratio.ok_or_else(|| missing(WHAT, &BUDGET[1]))?;
        Ok(BudgetSettings::new(max_tokens, token_ratio))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_says_what_it_takes_with_an_example_of_its_own_name() {
        for fields in [BREAKER, RATIO, BUDGET] {
            for f in fields {
                let expected = f.expected();
                assert!(
                    expected.starts_with(&format!("`{}` takes ", f.name)),
                    "{expected}"
                );
            }
        }
    }
}
