//! Configuration files (feature `serde`): [`RetryPolicy`](crate::RetryPolicy),
//! [`BreakerSettings`](crate::BreakerSettings) and [`BudgetSettings`](crate::BudgetSettings)
//! deserialize from any self-describing serde format (JSON, TOML, YAML, the environment through
//! a config crate) and serialize back, and [`registry::Snapshot`](crate::registry::Snapshot)
//! serializes for a health endpoint.
//!
//! A policy is written with the keys and values of `#[retryable]`, and checked as the attribute
//! checks them, with the same messages: the key table, the duration strings, the checks and
//! the nearest-key suggestion are the macro crate's own files, which `__vocabulary!` compiles
//! into this module ([`vocabulary`]), so the two cannot drift apart.
//!
//! ```toml
//! attempts = 5
//! backoff = "exponential"
//! base = "100ms"
//! max_delay = "10s"
//! jitter = "equal"
//! deadline = "30s"
//! idempotent = true
//! ```
//!
//! Absent keys take the attribute's defaults. An unknown key is an error that names it and
//! suggests the nearest accepted one; a bad value is the attribute's error for it. Values that
//! arrive as strings (environment variables) are read as the number or flag they spell.

#[cfg(feature = "serde")]
mod policy;
#[cfg(feature = "serde")]
mod settings;
#[cfg(feature = "serde")]
mod status;
#[cfg(feature = "serde")]
mod value;

/// The attribute's vocabulary, compiled here from retry-macros' own files.
mod vocabulary {
    retry_macros::__vocabulary!();
}

#[cfg(feature = "serde")]
pub(crate) use value::duration_text;
#[cfg(feature = "serde")]
pub(crate) use vocabulary::duration::parse_duration;

#[cfg(feature = "serde")]
use serde::de::{Deserialize, DeserializeSeed, Deserializer, Error, MapAccess};
#[cfg(feature = "serde")]
use value::Value;
#[cfg(feature = "serde")]
use vocabulary::keys::{self, SYNONYMS};
/// The nearest accepted word to a misspelt one; `tonic`'s service config suggests keys with it
/// too.
pub(crate) use vocabulary::spelling::nearest;

/// A runtime enum named by words in a configuration (`Backoff`, `Jitter`, `Nested`); the impls
/// are generated from the key table by `__vocabulary!`.
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
pub(crate) trait Word: Copy + Sized {
    /// The word for this value.
    fn word(self) -> &'static str;
    /// The value a word names.
    fn from_word(word: &str) -> Option<Self>;
}

/// Read the entries of `map`, each key once, through `accept(key, map)`, which reads the
/// key's value (with [`Checked`], so that a format that knows where each value is, as TOML
/// does, points at it): a key not in `names`, or one given twice, is an error that names it.
#[cfg(feature = "serde")]
fn read_keys<'de, A: MapAccess<'de>>(
    mut map: A,
    what: &str,
    names: &[&'static str],
    mut accept: impl FnMut(&'static str, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    let mut seen: Vec<&'static str> = Vec::new();
    while let Some(name) = map.next_key_seed(KnownKey { what, names })? {
        if seen.contains(&name) {
            return Err(A::Error::custom(format!(
                "duplicate key `{name}` in {what}: it is already set above"
            )));
        }
        seen.push(name);
        accept(name, &mut map)?;
    }
    Ok(())
}

/// A key, which must be one of `names`: the error is raised while the key is read, where the
/// format knows its place.
#[cfg(feature = "serde")]
struct KnownKey<'a> {
    what: &'a str,
    names: &'a [&'static str],
}

#[cfg(feature = "serde")]
impl<'de> DeserializeSeed<'de> for KnownKey<'_> {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'static str, D::Error> {
        let key = String::deserialize(deserializer)?;
        match self.names.iter().find(|name| **name == key) {
            Some(name) => Ok(name),
            None => Err(D::Error::custom(unknown_key(&key, self.what, self.names))),
        }
    }
}

/// A value read as a [`Value`] and checked by the function inside, whose error becomes the
/// format's error at the value.
#[cfg(feature = "serde")]
struct Checked<F>(F);

#[cfg(feature = "serde")]
impl<'de, T, F: FnOnce(Value) -> Result<T, String>> DeserializeSeed<'de> for Checked<F> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        let value = Value::deserialize(deserializer)?;
        (self.0)(value).map_err(D::Error::custom)
    }
}

/// The message for a key `what` does not accept: the key another retry library uses for it,
/// or the nearest accepted key, then every accepted key.
#[cfg(feature = "serde")]
fn unknown_key(key: &str, what: &str, names: &[&str]) -> String {
    let lower = key.to_ascii_lowercase();
    let synonym = SYNONYMS
        .iter()
        .find(|(word, _)| *word == lower)
        .map(|&(_, meant)| {
            if meant == "timeout" {
                "deadline"
            } else {
                meant
            }
        })
        .filter(|meant| names.contains(meant));
    let hint = match synonym.or_else(|| nearest(key, names)) {
        Some(near) => format!("did you mean `{near}`? "),
        None => String::new(),
    };
    // A key of the attribute that is not a setting of a policy (`circuit`, `classify`, ...).
    let elsewhere = match keys::find(key) {
        Some(_) if !names.contains(&key) => {
            format!(" (`{key}` is set on `#[retryable]` or the builder, not in {what})")
        }
        _ => String::new(),
    };
    format!(
        "unknown key `{key}` in {what}{elsewhere}; {hint}accepted keys: {}",
        names.join(", ")
    )
}
