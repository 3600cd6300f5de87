//! Every key `#[retryable]` accepts, in one table: its name, the value it takes, an example,
//! what it conflicts with, and its line in the docs. Parsing, every message about a key, the
//! conflict checks, the suggestions for unknown keys, the policy the expansion builds and the
//! key table in the `retryable` docs (checked by a test) all read it.

/// A key of `#[retryable(...)]`.
#[derive(Debug, PartialEq)]
pub(crate) struct Key {
    pub(crate) name: &'static str,
    pub(crate) takes: Takes,
    /// The key with a value, for messages: `attempts = 5`.
    pub(crate) example: &'static str,
    /// Set on the `RetryPolicy` by its builder method of the same name.
    pub(crate) on_policy: bool,
    /// Keys that cannot be set beside this one, and what to do instead.
    pub(crate) excludes: &'static [&'static str],
    pub(crate) instead: &'static str,
    /// The docs' table: the value, the default, the meaning.
    pub(crate) doc: [&'static str; 3],
}

/// The value a key takes.
#[derive(Debug, PartialEq)]
pub(crate) enum Takes {
    /// A whole number of attempts, at least 1.
    Count,
    /// A number greater than 1.
    Factor,
    /// A duration string such as `"250ms"`.
    Duration,
    /// One of `words`, each naming a variant of the runtime's enum `runtime`.
    Word {
        runtime: &'static str,
        words: &'static [(&'static str, &'static str)],
    },
    /// A flag, or `= true` / `= false`.
    Flag,
    /// A path to what the string says (`a \`static CircuitBreaker\``).
    Path(&'static str),
    /// Any expression.
    Expr,
}

const SHAPE: &[&str] = &[
    "attempts",
    "backoff",
    "base",
    "multiplier",
    "max_delay",
    "jitter",
    "deadline",
];

/// Every key, in the order the docs list them.
pub(crate) const KEYS: &[Key] = &[
    Key {
        name: "attempts",
        takes: Takes::Count,
        example: "attempts = 5",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: ["integer >= 1", "3", "total attempts, the first included"],
    },
    Key {
        name: "backoff",
        takes: Takes::Word {
            runtime: "Backoff",
            words: &[
                ("exponential", "Exponential"),
                ("fixed", "Fixed"),
                ("linear", "Linear"),
            ],
        },
        example: "backoff = \"exponential\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "`\"exponential\"`, `\"fixed\"`, `\"linear\"`",
            "`\"exponential\"`",
            "delay shape",
        ],
    },
    Key {
        name: "base",
        takes: Takes::Duration,
        example: "base = \"100ms\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "duration string (`\"250ms\"`, `\"1.5s\"`, `\"2m\"`, `\"1h\"`, `\"500us\"`, `\"1m30s\"`)",
            "`\"100ms\"`",
            "first delay / step",
        ],
    },
    Key {
        name: "multiplier",
        takes: Takes::Factor,
        example: "multiplier = 2.0",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: ["number > 1", "2.0", "exponential growth factor"],
    },
    Key {
        name: "max_delay",
        takes: Takes::Duration,
        example: "max_delay = \"30s\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: ["duration string", "`\"30s\"`", "cap on any one delay"],
    },
    Key {
        name: "jitter",
        takes: Takes::Word {
            runtime: "Jitter",
            words: &[
                ("none", "None"),
                ("full", "Full"),
                ("equal", "Equal"),
                ("decorrelated", "Decorrelated"),
                ("spread", "Spread"),
            ],
        },
        example: "jitter = \"full\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "`\"none\"`, `\"full\"`, `\"equal\"`, `\"decorrelated\"`, `\"spread\"`",
            "`\"full\"`; `\"none\"` with `backoff = \"fixed\"`",
            "randomisation (a fixed backoff waits its fixed delay unless jitter is asked for)",
        ],
    },
    Key {
        name: "classify",
        takes: Takes::Path("a function `fn(&E) -> ErrorClass`"),
        example: "classify = my_classifier",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to `fn(&E) -> ErrorClass`",
            "`<E as Classify>::class`",
            "the decision per error",
        ],
    },
    Key {
        name: "retry_after",
        takes: Takes::Path("a function `fn(&E) -> Option<Duration>`"),
        example: "retry_after = wait_hint",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to `fn(&E) -> Option<Duration>`",
            "`Classify::retry_after` without `classify`; none with it",
            "the error's own wait hint",
        ],
    },
    Key {
        name: "idempotent",
        takes: Takes::Flag,
        example: "idempotent = true",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "flag, or `= true/false`",
            "false",
            "also retry `IdempotentOnly` errors",
        ],
    },
    Key {
        name: "deadline",
        takes: Takes::Duration,
        example: "deadline = \"10s\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "duration string",
            "none",
            "total budget from the first attempt",
        ],
    },
    Key {
        name: "attempt_timeout",
        takes: Takes::Duration,
        example: "attempt_timeout = \"2s\"",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "duration string",
            "none",
            "async only: cancel each attempt after this",
        ],
    },
    Key {
        name: "circuit",
        takes: Takes::Path("a `static CircuitBreaker`"),
        example: "circuit = BREAKER",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to a `static CircuitBreaker`",
            "none",
            "shared breaker consulted before every attempt",
        ],
    },
    Key {
        name: "budget",
        takes: Takes::Path("a `static RetryBudget`"),
        example: "budget = RETRIES",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to a `static RetryBudget`",
            "none",
            "shared bound on the aggregate retry rate",
        ],
    },
    Key {
        name: "adaptive",
        takes: Takes::Path("a `static` adaptive policy"),
        example: "adaptive = ADAPT",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to a `static` adaptive policy",
            "none",
            "attempts and delays adjusted from observations",
        ],
    },
    Key {
        name: "policy",
        takes: Takes::Expr,
        example: "policy = SHARED_POLICY",
        on_policy: false,
        excludes: SHAPE,
        instead: "set it on the policy instead",
        doc: [
            "expression of type `RetryPolicy`, `&RetryPolicy` or `PolicyCell`",
            "none",
            "a shared or run-time policy; excludes the shape keys above (`idempotent` and `nested` may still be set)",
        ],
    },
    Key {
        name: "nested",
        takes: Takes::Word {
            runtime: "Nested",
            words: &[("retry", "Retry"), ("once", "Once")],
        },
        example: "nested = \"once\"",
        on_policy: true,
        excludes: &[],
        instead: "",
        doc: [
            "`\"retry\"`, `\"once\"`",
            "`\"retry\"`",
            "`\"once\"`: inside another retryable's attempt, make a single attempt",
        ],
    },
    Key {
        name: "on_failure",
        takes: Takes::Path("a function `fn(&Failure<'_, E>)`"),
        example: "on_failure = log_failure",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to `fn(&Failure<'_, E>)`",
            "none",
            "called once per failed attempt",
        ],
    },
    Key {
        name: "sleep",
        takes: Takes::Path("an async function `fn(Duration)`"),
        example: "sleep = my_runtime::sleep",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to an async `fn(Duration)`",
            "tokio's sleep",
            "async only: for other runtimes",
        ],
    },
    Key {
        name: "retry_if",
        takes: Takes::Path("a function `fn(&T) -> bool`"),
        example: "retry_if = not_ready",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to `fn(&T) -> bool`",
            "none",
            "also retry an `Ok` value it flags (polling until ready): the value follows the schedule (attempts, delays, deadline) but is an answer, not a failure (the breaker and budget do not count it; `Rejected::Value` in records); when attempts run out the last value is returned",
        ],
    },
    Key {
        name: "already_done",
        takes: Takes::Path("a function `fn(E) -> Result<T, E>`"),
        example: "already_done = receipt_of",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path to `fn(E) -> Result<T, E>`",
            "none",
            "what an `AlreadyDone` error becomes (a receipt rebuilt from the duplicate); without it the error is returned",
        ],
    },
    Key {
        name: "hedge",
        takes: Takes::Duration,
        example: "hedge = \"50ms\"",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "duration string",
            "none",
            "async and `idempotent` only: if an attempt has not answered after this long, start the next beside it (up to `attempts` in all; `\"0ms\"` starts them all at once); the first success wins, the others are dropped; a retryable failure starts the next at once, as gRPC's hedging does (`backoff`, `base` and `jitter` then pace only `retry_if` polls; a retry-after is waited out)",
        ],
    },
    Key {
        name: "key",
        takes: Takes::Expr,
        example: "key = host",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "expression (may use the arguments)",
            "none",
            "with `circuit`/`budget` naming a `static PerKey<..>`: which breaker or budget this call uses (a host, a partition, a tenant)",
        ],
    },
    Key {
        name: "idempotency_key",
        takes: Takes::Expr,
        example: "idempotency_key = (interval.date, \"billing-export\")",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "expression (may use the arguments) of a `Hash` type",
            "none (128 random bits per call)",
            "the call's idempotency key is a fixed function of this value and the function's path, the same in every process, build and platform: a task re-run after a crash sends the key its first run sent",
        ],
    },
    Key {
        name: "crate",
        takes: Takes::Path("the facade crate, such as `crate = ::retry_kit`"),
        example: "crate = ::retry_kit",
        on_policy: false,
        excludes: &[],
        instead: "",
        doc: [
            "path",
            "`::retry_kit`",
            "where the generated code finds the runtime",
        ],
    },
];

/// Words other retry libraries use, and the key that means the same here (`"timeout"`: either
/// `attempt_timeout` or `deadline`, which the suggestion spells out).
pub(crate) const SYNONYMS: &[(&str, &str)] = &[
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
    ("idempotency", "idempotency_key"),
    ("dedup_key", "idempotency_key"),
    ("speculative", "hedge"),
];

/// The key named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// Every key's name, for messages and suggestions.
pub(crate) fn names() -> Vec<&'static str> {
    KEYS.iter().map(|k| k.name).collect()
}

/// The key table of the `retryable` docs, as markdown.
#[cfg(test)]
pub(crate) fn doc_table() -> String {
    let mut table =
        String::from("| key | value | default | meaning |\n| --- | --- | --- | --- |\n");
    for key in KEYS {
        let [value, default, meaning] = key.doc;
        table.push_str(&format!(
            "| `{}` | {value} | {default} | {meaning} |\n",
            key.name
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_list_every_key_as_the_table_says() {
        let docs: String = include_str!("../lib.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("/// "))
            .filter(|l| l.starts_with('|'))
            .take(KEYS.len() + 2)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            docs,
            doc_table(),
            "the key table in retry-macros/src/lib.rs should read:\n{}",
            doc_table()
        );
    }

    #[test]
    fn every_excluded_name_is_a_key_and_every_word_is_distinct() {
        for key in KEYS {
            for other in key.excludes {
                assert!(
                    find(other).is_some(),
                    "{} excludes unknown {other}",
                    key.name
                );
            }
            if let Takes::Word { words, .. } = &key.takes {
                let mut seen: Vec<_> = words.iter().map(|(w, _)| *w).collect();
                seen.dedup();
                assert_eq!(seen.len(), words.len());
            }
            assert!(key.example.starts_with(key.name), "{}", key.example);
        }
    }
}
