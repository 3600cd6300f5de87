//! Suggestions for a key or a word the macro does not know: by meaning (the words other retry
//! libraries use) and by spelling (the nearest accepted word).

use crate::vocabulary::keys::{self, SYNONYMS};
use crate::vocabulary::spelling::nearest;
use syn::{Expr, ExprLit, Lit};

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
