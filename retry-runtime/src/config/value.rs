//! What a configuration holds at a key ([`Value`]), read from any self-describing format, and
//! durations written back in the attribute's syntax ([`duration_text`]).

use super::vocabulary::duration::UNITS;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::time::Duration;

/// A value as the format gave it; what it must be is checked by the key that reads it, so
/// that every message is the key's own.
pub(crate) enum Value {
    Flag(bool),
    Int(i128),
    Float(f64),
    Text(String),
    /// Nothing (JSON's `null`, YAML's `~`): the key's default, as if it were absent, so that a
    /// layered configuration can clear what a lower layer set (`"deadline": null`).
    Null,
    /// A table or a list: never what a scalar key takes.
    Other,
}

impl Value {
    /// A whole number, or a string that spells one (the environment has only strings).
    pub(crate) fn whole(&self) -> Option<i128> {
        match self {
            Value::Int(n) => Some(*n),
            Value::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A number, whole or not, or a string that spells one.
    pub(crate) fn number(&self) -> Option<f64> {
        match self {
            // Exact up to 2^53; beyond, as close as a float gets, as a literal would be.
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            Value::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A string.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// `true` or `false`, or a string that says one.
    pub(crate) fn flag(&self) -> Option<bool> {
        match self {
            Value::Flag(b) => Some(*b),
            Value::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, a string or a flag")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Flag(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(Value::Int(i128::try_from(v).unwrap_or(i128::MAX)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Text(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Text(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other)
    }
}

/// `d` in the attribute's syntax, exactly, in the largest unit that divides it: `"100ms"`,
/// `"1500ms"`, `"30s"`, `"2m"`, `"0s"`. What [`parse_duration`] reads back as `d`.
///
/// [`parse_duration`]: super::vocabulary::duration::parse_duration
pub(crate) fn duration_text(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    // The ASCII units, longest first; nanoseconds divide everything.
    let mut units: Vec<(&str, u128)> = UNITS
        .iter()
        .copied()
        .filter(|(u, _)| u.is_ascii())
        .collect();
    units.sort_by_key(|&(_, per)| std::cmp::Reverse(per));
    let (unit, per) = units
        .into_iter()
        .find(|(_, per)| nanos % per == 0)
        .unwrap_or(("ns", 1));
    format!("{}{unit}", nanos / per)
}

/// `d` rounded up to the millisecond, in the attribute's syntax: how long is left of a
/// cool-down, as a person reads it.
pub(crate) fn duration_text_ms(d: Duration) -> String {
    let ms = d.as_nanos().div_ceil(1_000_000);
    let secs = u64::try_from(ms / 1000).unwrap_or(u64::MAX);
    // `ms % 1000 < 1000`: whole milliseconds of a second.
    duration_text(Duration::new(secs, (ms % 1000) as u32 * 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::super::vocabulary::duration::parse_duration;
    use super::*;

    #[test]
    fn durations_are_written_in_the_largest_exact_unit_and_read_back() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(100), "100ms"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(7200), "2h"),
            (Duration::from_micros(500), "500us"),
            (Duration::new(1, 1), "1000000001ns"),
        ];
        for (d, text) in cases {
            assert_eq!(duration_text(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
        assert_eq!(
            parse_duration(&duration_text(Duration::MAX)),
            Ok(Duration::MAX)
        );
        assert_eq!(
            duration_text_ms(Duration::from_nanos(29_000_000_001)),
            "29001ms"
        );
        assert_eq!(duration_text_ms(Duration::from_secs(30)), "30s");
    }
}
