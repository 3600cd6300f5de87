//! Parsing `#[retryable(...)]` arguments into a typed, validated [`Args`].
//!
//! Every mistake is collected, each at its own token, so that one compile shows them all.

pub(crate) use crate::errors::Errors;
use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Ident, Lit, Path};

/// Every key `#[retryable]` accepts, in the order the docs list them.
pub(crate) const KEYS: &[&str] = &[
    "attempts",
    "backoff",
    "base",
    "multiplier",
    "max_delay",
    "jitter",
    "classify",
    "retry_after",
    "idempotent",
    "deadline",
    "attempt_timeout",
    "circuit",
    "budget",
    "adaptive",
    "policy",
    "nested",
    "on_failure",
    "sleep",
    "crate",
];

/// The keys that describe the policy's shape, which `policy = ...` already fixes.
const POLICY_KEYS: &[&str] = &[
    "attempts",
    "backoff",
    "base",
    "multiplier",
    "max_delay",
    "jitter",
    "deadline",
];

/// A value together with the key that set it, for errors that point at the key.
pub(crate) struct Setting<T> {
    pub(crate) key: Ident,
    pub(crate) value: T,
}

/// A duration parsed exactly from a string such as `"1.5s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dur {
    pub(crate) secs: u64,
    pub(crate) nanos: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackoffKind {
    Exponential,
    Fixed,
    Linear,
}

#[derive(Clone, Copy)]
pub(crate) enum JitterKind {
    None,
    Full,
    Equal,
    Decorrelated,
}

#[derive(Clone, Copy)]
pub(crate) enum NestedKind {
    Retry,
    Once,
}

#[derive(Default)]
pub(crate) struct Args {
    pub(crate) attempts: Option<Setting<u32>>,
    pub(crate) backoff: Option<Setting<BackoffKind>>,
    pub(crate) base: Option<Setting<Dur>>,
    pub(crate) multiplier: Option<Setting<f64>>,
    pub(crate) max_delay: Option<Setting<Dur>>,
    pub(crate) jitter: Option<Setting<JitterKind>>,
    pub(crate) classify: Option<Setting<Path>>,
    pub(crate) retry_after: Option<Setting<Path>>,
    pub(crate) idempotent: Option<Setting<bool>>,
    pub(crate) deadline: Option<Setting<Dur>>,
    pub(crate) attempt_timeout: Option<Setting<Dur>>,
    pub(crate) circuit: Option<Setting<Path>>,
    pub(crate) budget: Option<Setting<Path>>,
    pub(crate) adaptive: Option<Setting<Path>>,
    pub(crate) policy: Option<Setting<Expr>>,
    pub(crate) nested: Option<Setting<NestedKind>>,
    pub(crate) on_failure: Option<Setting<Path>>,
    pub(crate) sleep: Option<Setting<Path>>,
    pub(crate) krate: Option<Setting<Path>>,
}

/// Parse the attribute's arguments. Errors in values are collected in `errors`; only tokens that
/// are not `key = value` pairs at all end the parse early (and land in `errors` too).
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let parser = syn::meta::parser(|meta| args.parse_key(meta, errors));
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(e);
    }
    args.check_conflicts(errors);
    args
}

impl Args {
    fn parse_key(&mut self, meta: ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let Some(key) = meta
            .path
            .get_ident()
            .cloned()
            .or_else(|| crate_key(&meta.path))
        else {
            // A path such as `a::b = 1`: report it and skip its value.
            let value = skip_value(&meta)?;
            errors.at(
                &meta.path,
                unknown_key_message(&path_text(&meta.path), value.as_ref()),
            );
            return Ok(());
        };
        let name = key.to_string();
        if name == "idempotent" && !meta.input.peek(syn::Token![=]) {
            set(&mut self.idempotent, key, true, errors);
            return Ok(());
        }
        if !KEYS.contains(&name.as_str()) {
            let value = skip_value(&meta)?;
            errors.at(&key, unknown_key_message(&name, value.as_ref()));
            return Ok(());
        }
        let value = ungroup(meta.value()?.parse()?);
        match name.as_str() {
            "attempts" => {
                if let Some(n) = attempts(&value, errors) {
                    set(&mut self.attempts, key, n, errors);
                }
            }
            "backoff" => {
                let choices = [
                    ("exponential", BackoffKind::Exponential),
                    ("fixed", BackoffKind::Fixed),
                    ("linear", BackoffKind::Linear),
                ];
                if let Some(v) = choice(&name, &value, &choices, errors) {
                    set(&mut self.backoff, key, v, errors);
                }
            }
            "jitter" => {
                let choices = [
                    ("none", JitterKind::None),
                    ("full", JitterKind::Full),
                    ("equal", JitterKind::Equal),
                    ("decorrelated", JitterKind::Decorrelated),
                ];
                if let Some(v) = choice(&name, &value, &choices, errors) {
                    set(&mut self.jitter, key, v, errors);
                }
            }
            "nested" => {
                let choices = [("retry", NestedKind::Retry), ("once", NestedKind::Once)];
                if let Some(v) = choice(&name, &value, &choices, errors) {
                    set(&mut self.nested, key, v, errors);
                }
            }
            "base" | "max_delay" | "deadline" | "attempt_timeout" => {
                if let Some(d) = duration(&name, &value, errors) {
                    let slot = match name.as_str() {
                        "base" => &mut self.base,
                        "max_delay" => &mut self.max_delay,
                        "deadline" => &mut self.deadline,
                        _ => &mut self.attempt_timeout,
                    };
                    set(slot, key, d, errors);
                }
            }
            "multiplier" => {
                if let Some(m) = multiplier(&value, errors) {
                    set(&mut self.multiplier, key, m, errors);
                }
            }
            "idempotent" => match &value {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => set(&mut self.idempotent, key, b.value, errors),
                _ => errors.at(
                    &value,
                    "`idempotent` is a flag: write `idempotent` or `idempotent = true`/`false`",
                ),
            },
            "policy" => set(&mut self.policy, key, value, errors),
            _ => {
                // Every remaining key takes a path.
                let Some(path) = as_path(&name, &value, errors) else {
                    return Ok(());
                };
                let slot = match name.as_str() {
                    "classify" => &mut self.classify,
                    "retry_after" => &mut self.retry_after,
                    "circuit" => &mut self.circuit,
                    "budget" => &mut self.budget,
                    "adaptive" => &mut self.adaptive,
                    "on_failure" => &mut self.on_failure,
                    "sleep" => &mut self.sleep,
                    _ => &mut self.krate,
                };
                set(slot, key, path, errors);
            }
        }
        Ok(())
    }

    fn check_conflicts(&self, errors: &mut Errors) {
        if self.policy.is_some() {
            for key in self.keys_set() {
                if POLICY_KEYS.contains(&key.to_string().as_str()) {
                    errors.at(
                        key,
                        format!(
                            "`{key}` cannot be combined with `policy = ...`: set it on the policy instead"
                        ),
                    );
                }
            }
        }
        if let (Some(m), Some(b)) = (&self.multiplier, &self.backoff) {
            if b.value != BackoffKind::Exponential {
                errors.at(
                    &m.key,
                    "`multiplier` only applies to `backoff = \"exponential\"`",
                );
            }
        }
    }

    fn keys_set(&self) -> Vec<&Ident> {
        let mut keys = Vec::new();
        macro_rules! push {
            ($($field:ident),*) => {$(
                if let Some(s) = &self.$field { keys.push(&s.key); }
            )*};
        }
        push!(
            attempts, backoff, base, multiplier, max_delay, jitter, deadline
        );
        keys
    }
}

/// A value passed through a `macro_rules!` fragment (`$v:literal`, `$v:expr`) arrives wrapped in
/// an invisible group; look through it so that such values parse like written ones.
fn ungroup(value: Expr) -> Expr {
    match value {
        Expr::Group(group) => ungroup(*group.expr),
        other => other,
    }
}

/// `crate` is a keyword, so `meta.path.get_ident()` does not see it.
fn crate_key(path: &Path) -> Option<Ident> {
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    (segment.ident == "crate" && path.leading_colon.is_none()).then(|| segment.ident.clone())
}

fn path_text(path: &Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn set<T>(slot: &mut Option<Setting<T>>, key: Ident, value: T, errors: &mut Errors) {
    if slot.is_some() {
        errors.at(
            &key,
            format!("duplicate key `{key}`: it is already set earlier in this attribute"),
        );
        return;
    }
    *slot = Some(Setting { key, value });
}

/// Skip an unknown key's value, returning it when it is `= expr` (for the suggestion).
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<Expr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(ungroup(meta.value()?.parse()?)));
    }
    if meta.input.peek(syn::token::Paren) {
        let _: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(None)
}

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
];

fn unknown_key_message(name: &str, value: Option<&Expr>) -> String {
    let hint = meaning(name, value)
        .or_else(|| nearest(name, KEYS).map(|near| format!("did you mean `{near}`? ")))
        .unwrap_or_default();
    format!(
        "unknown `#[retryable]` key `{name}`; {hint}accepted keys: {}",
        KEYS.join(", ")
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

/// The accepted word closest to `word`, if it is close enough to be a typo.
pub(crate) fn nearest<'a>(word: &str, choices: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    choices
        .iter()
        .map(|c| (edit_distance(&word, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

fn attempts(value: &Expr, errors: &mut Errors) -> Option<u32> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    else {
        errors.at(
            value,
            "`attempts` takes a whole number of attempts, such as `attempts = 5`",
        );
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) => {
            errors.at(
                int,
                "`attempts` counts every attempt including the first, so it must be at least 1",
            );
            None
        }
        Ok(n) => Some(n),
        Err(_) => {
            errors.at(
                int,
                format!("`attempts` must be a whole number from 1 to {}", u32::MAX),
            );
            None
        }
    }
}

fn multiplier(value: &Expr, errors: &mut Errors) -> Option<f64> {
    let parsed = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>().ok(),
        _ => None,
    };
    match parsed {
        Some(m) if m.is_finite() && m > 1.0 => Some(m),
        Some(_) => {
            errors.at(
                value,
                "`multiplier` must be a number greater than 1, such as `multiplier = 1.5`; for a constant delay use `backoff = \"fixed\"`",
            );
            None
        }
        None => {
            errors.at(
                value,
                "`multiplier` takes a number greater than 1, such as `multiplier = 2.0`",
            );
            None
        }
    }
}

fn string_value<'e>(key: &str, value: &'e Expr, errors: &mut Errors) -> Option<&'e syn::LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        _ => {
            errors.at(
                value,
                format!("`{key}` takes a string, such as {}", example(key)),
            );
            None
        }
    }
}

fn example(key: &str) -> &'static str {
    match key {
        "backoff" => "`backoff = \"exponential\"`",
        "jitter" => "`jitter = \"full\"`",
        "nested" => "`nested = \"once\"`",
        "max_delay" => "`max_delay = \"30s\"`",
        "deadline" => "`deadline = \"10s\"`",
        "attempt_timeout" => "`attempt_timeout = \"2s\"`",
        _ => "`base = \"100ms\"`",
    }
}

fn choice<T: Copy>(
    key: &str,
    value: &Expr,
    choices: &[(&'static str, T)],
    errors: &mut Errors,
) -> Option<T> {
    let lit = string_value(key, value, errors)?;
    let text = lit.value();
    if let Some((_, v)) = choices.iter().find(|(name, _)| *name == text) {
        return Some(*v);
    }
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    let hint = match nearest(&text, &names) {
        Some(near) => format!("did you mean \"{near}\"? "),
        None => String::new(),
    };
    let listed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    errors.at(
        lit,
        format!(
            "unknown {key} \"{text}\"; {hint}expected one of {}",
            listed.join(", ")
        ),
    );
    None
}

fn duration(key: &str, value: &Expr, errors: &mut Errors) -> Option<Dur> {
    let lit = string_value(key, value, errors)?;
    match parse_duration(&lit.value()) {
        Ok(d) => Some(d),
        Err(why) => {
            errors.at(lit, format!("`{key}`: {why}"));
            None
        }
    }
}

fn as_path(key: &str, value: &Expr, errors: &mut Errors) -> Option<Path> {
    if let Expr::Path(p) = value {
        if p.qself.is_none() && p.attrs.is_empty() {
            return Some(p.path.clone());
        }
    }
    let what = match key {
        "classify" => "a function `fn(&E) -> ErrorClass`",
        "retry_after" => "a function `fn(&E) -> Option<Duration>`",
        "circuit" => "a `static CircuitBreaker`",
        "budget" => "a `static RetryBudget`",
        "adaptive" => "a `static` adaptive policy",
        "on_failure" => "a function `fn(&Failure<'_, E>)`",
        "sleep" => "an async function `fn(Duration)`",
        _ => "the facade crate, such as `crate = ::retry_kit`",
    };
    errors.at(
        value,
        format!("`{key}` takes a path to {what}, written without quotes or calls"),
    );
    None
}

/// Units a duration string may end in, with their length in nanoseconds.
const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parse `"250ms"`, `"1.5s"`, `"2m"`, ... exactly, or say what is wrong.
pub(crate) fn parse_duration(text: &str) -> Result<Dur, String> {
    const ACCEPTED: &str = "write a number and a unit, such as \"250ms\", \"1.5s\", \"2m\", \"1h\" or \"500us\" (units: ns, us, ms, s, m, h)";
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    if number.is_empty() {
        return Err(format!("\"{text}\" is not a duration; {ACCEPTED}"));
    }
    let Some((_, per_unit)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        if unit.is_empty() {
            return Err(format!("\"{text}\" has no unit; {ACCEPTED}"));
        }
        return Err(format!("unknown unit \"{unit}\"; {ACCEPTED}"));
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) if !f.contains('.') && (!w.is_empty() || !f.is_empty()) => (w, f),
        Some(_) => return Err(format!("\"{text}\" is not a number and a unit; {ACCEPTED}")),
        None => (number, ""),
    };
    let too_long = || format!("\"{text}\" is longer than the longest duration Rust can represent");
    let digits = |s: &str| -> Option<u128> {
        s.bytes().try_fold(0u128, |acc, b| {
            acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
        })
    };
    let whole_nanos = digits(whole)
        .and_then(|w| w.checked_mul(*per_unit))
        .ok_or_else(too_long)?;
    let fraction = fraction.trim_end_matches('0');
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        let scale = u32::try_from(fraction.len())
            .ok()
            .and_then(|n| 10u128.checked_pow(n));
        let numerator = digits(fraction).and_then(|f| f.checked_mul(*per_unit));
        match (numerator, scale) {
            (Some(n), Some(scale)) if n % scale == 0 => n / scale,
            _ => {
                return Err(format!(
                    "\"{text}\" is finer than a nanosecond, the resolution of `Duration`"
                ));
            }
        }
    };
    let total = whole_nanos
        .checked_add(fraction_nanos)
        .ok_or_else(too_long)?;
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| too_long())?;
    Ok(Dur {
        secs,
        nanos: (total % 1_000_000_000) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        let d = |s| parse_duration(s).map(|d| (d.secs, d.nanos));
        assert_eq!(d("250ms"), Ok((0, 250_000_000)));
        assert_eq!(d("1.5s"), Ok((1, 500_000_000)));
        assert_eq!(d("2m"), Ok((120, 0)));
        assert_eq!(d("1h"), Ok((3600, 0)));
        assert_eq!(d("500us"), Ok((0, 500_000)));
        assert_eq!(d("0ms"), Ok((0, 0)));
        assert_eq!(d("18446744073709551615s"), Ok((u64::MAX, 0)));
        assert_eq!(d("1.000000001s"), Ok((1, 1)));
        assert!(
            d("1.0000000001s")
                .unwrap_err()
                .contains("finer than a nanosecond")
        );
        assert!(d("18446744073709551616s").unwrap_err().contains("longer"));
        assert!(d("5").unwrap_err().contains("no unit"));
        assert!(d("5 parsecs").unwrap_err().contains("unknown unit"));
        assert!(d("").unwrap_err().contains("not a duration"));
        assert!(d("1.2.3s").is_err());
        assert!(d(".s").is_err());
        assert!(d("-1s").is_err());
    }

    #[test]
    fn typos_suggest_the_nearest_key() {
        assert_eq!(nearest("atempts", KEYS), Some("attempts"));
        assert_eq!(nearest("max_dealy", KEYS), Some("max_delay"));
        assert_eq!(nearest("zzzzzzzz", KEYS), None);
    }
}
