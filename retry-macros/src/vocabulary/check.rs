//! The checks a key's value must pass, and the sentence that says what is wrong: written once,
//! without syn, so that the attribute (retry-macros) and a configuration file read with serde
//! (retry-runtime, which receives this file through `__vocabulary!`) accept the same values and
//! say the same thing about the rest.

use super::duration::parse_duration;
use super::keys::{Key, Takes};
use super::spelling::nearest;
use std::time::Duration;

/// `multiplier` set beside a `backoff` that is not `"exponential"`, whose delays it cannot
/// shape: an error in the attribute and in a configuration file alike.
pub(crate) const MULTIPLIER_WITHOUT_EXPONENTIAL: &str =
    "`multiplier` only applies to `backoff = \"exponential\"`";

/// What `key` takes, as the message for a value of another kind.
pub(crate) fn expected(key: &Key) -> String {
    match &key.takes {
        Takes::Count => format!(
            "`{}` takes a whole number of attempts, such as `{}`",
            key.name, key.example
        ),
        Takes::Factor => format!(
            "`{}` takes a number greater than 1, such as `{}`",
            key.name, key.example
        ),
        Takes::Duration | Takes::Word { .. } => {
            format!("`{}` takes a string, such as `{}`", key.name, key.example)
        }
        Takes::Flag => format!(
            "`{0}` is a flag: write `{0}` or `{0} = true`/`false`",
            key.name
        ),
        Takes::Path(what) => format!(
            "`{}` takes a path to {what}, written without quotes or calls",
            key.name
        ),
        Takes::Expr => format!("`{}` takes an expression", key.name),
    }
}

/// A count of attempts: a whole number from 1 to `u32::MAX`.
pub(crate) fn count(key: &Key, n: i128) -> Result<u32, String> {
    match u32::try_from(n) {
        Ok(0) => Err(format!(
            "`{}` counts every attempt including the first, so it must be at least 1",
            key.name
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{}` must be a whole number from 1 to {}",
            key.name,
            u32::MAX
        )),
    }
}

/// A growth factor: a finite number greater than 1.
pub(crate) fn factor(key: &Key, m: f64) -> Result<f64, String> {
    if m.is_finite() && m > 1.0 {
        return Ok(m);
    }
    Err(format!(
        "`{}` must be a number greater than 1, such as `{} = 1.5`; for a constant delay use `backoff = \"fixed\"`",
        key.name, key.name
    ))
}

/// A duration string, exactly (see [`parse_duration`]).
pub(crate) fn duration(key: &Key, text: &str) -> Result<Duration, String> {
    duration_of(key.name, text)
}

/// A duration string given to the setting `name` (a key, or a field of a breaker's settings).
pub(crate) fn duration_of(name: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|why| format!("`{name}`: {why}"))
}

/// The runtime variant that `text` names among `key`'s words, or what it should have been.
pub(crate) fn word(key: &Key, text: &str) -> Result<&'static str, String> {
    let Takes::Word { words, .. } = &key.takes else {
        return Err(expected(key));
    };
    if let Some((_, variant)) = words.iter().find(|(word, _)| *word == text) {
        return Ok(variant);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let hint = match nearest(text, &names) {
        Some(near) => format!("did you mean \"{near}\"? "),
        None => String::new(),
    };
    let listed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    Err(format!(
        "unknown {} \"{text}\"; {hint}expected one of {}",
        key.name,
        listed.join(", ")
    ))
}
