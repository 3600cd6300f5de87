//! Suggestions for a key or a word the macro does not know: by meaning (the words other retry
//! libraries use) and by spelling (the nearest accepted word).

use crate::vocabulary::keys;
use crate::vocabulary::spelling::nearest;
use syn::{Expr, ExprLit, Lit};

/// Words other retry libraries use, and the key that means the same here.
const SYNONYMS: &[(&str, &str)] = &[
    ("retries", "attempts"),
    ("max_retries", "attempts"),
    ("max_retry", "attempts"),
    ("num_retries", "attempts"),
    ("retry_count", "attempts"),
    ("max_attempts", "attempts"),
    ("max_attempt", "attempts"),
    ("tries", "attempts"),
    ("max_tries", "attempts"),
    ("times", "attempts"),
    ("delay", "base"),
    ("initial_delay", "base"),
    ("min_delay", "base"),
    ("initial_backoff", "base"),
    ("initial_interval", "base"),
    ("interval", "base"),
    ("wait", "base"),
    ("step", "base"),
    ("max_backoff", "max_delay"),
    ("max_interval", "max_delay"),
    ("max_wait", "max_delay"),
    ("cap", "max_delay"),
    ("timeout", "timeout"),
    ("total_timeout", "deadline"),
    ("max_elapsed_time", "deadline"),
    ("max_elapsed", "deadline"),
    ("max_duration", "deadline"),
    ("factor", "multiplier"),
    ("backoff_factor", "multiplier"),
    ("exponent", "multiplier"),
    ("on_retry", "on_failure"),
    ("on_error", "on_failure"),
    ("notify", "on_failure"),
    ("breaker", "circuit"),
    ("circuit_breaker", "circuit"),
    ("strategy", "backoff"),
    ("randomize", "jitter"),
    ("retry_on", "classify"),
    ("classifier", "classify"),
    ("when", "classify"),
    ("hedging", "hedge"),
    ("hedge_after", "hedge"),
    ("hedge_delay", "hedge"),
    ("speculative", "hedge"),
];

/// The message for an unknown key, with a suggestion when there is one.
pub(crate) fn unknown_key_message(name: &str, value: Option<&Expr>) -> String {
    let names = keys::names();
    let hint = meaning(name, value)
        .or_else(|| nearest(name, &names).map(|near| format!("did you mean `{near}`? ")))
        .unwrap_or_default();
    format!(
        "unknown `#[retryable]` key `{name}`; {hint}accepted keys: {}",
        names.join(", ")
    )
}

/// A suggestion by meaning, for a word another retry library uses.
fn meaning(name: &str, value: Option<&Expr>) -> Option<String> {
    let word = name.to_ascii_lowercase();
    let &(word, key) = SYNONYMS.iter().find(|(w, _)| *w == word)?;
    Some(match key {
        "timeout" => "did you mean `attempt_timeout` (cancel each attempt after this; async only) or `deadline` (a bound on the whole call, sleeps included)? ".to_owned(),
        "attempts" if word.contains("retr") => {
            // A retry count leaves out the first attempt; `attempts` counts it.
            let example = match value.and_then(int_value) {
                Some(n) => format!("`{name} = {n}` is `attempts = {}`", n.saturating_add(1)),
                None => format!("`{name} = n` is `attempts = n + 1`"),
            };
            format!("did you mean `attempts`? It counts every attempt, the first included, so {example}. ")
        }
        "attempts" => "did you mean `attempts`? (every attempt, the first included) ".to_owned(),
        key => format!("did you mean `{key}`? "),
    })
}

fn int_value(value: &Expr) -> Option<u64> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(n), ..
        }) => n.base10_parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_suggest_the_nearest_key() {
        let names = keys::names();
        assert_eq!(nearest("atempts", &names), Some("attempts"));
        assert_eq!(nearest("max_dealy", &names), Some("max_delay"));
        assert_eq!(nearest("zzzzzzzz", &names), None);
    }
}
