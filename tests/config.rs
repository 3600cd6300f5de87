//! Feature `serde`: policies, breaker and budget settings read from and written to JSON and
//! TOML with the attribute's keys, values, defaults, checks and messages.
#![cfg(feature = "serde")]
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    Backoff, BreakerSettings, BudgetSettings, CircuitBreaker, CircuitState, Classify, Jitter,
    Nested, PolicyCell, RetryBudget, RetryPolicy, retryable, testing,
};
use std::time::Duration;

const MS: fn(u64) -> Duration = Duration::from_millis;
const S: fn(u64) -> Duration = Duration::from_secs;

fn json(text: &str) -> Result<RetryPolicy, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn the_specs_example_reads_as_the_attribute_would_build_it() {
    let policy = json(
        r#"{"attempts": 5, "backoff": "exponential", "base": "100ms", "max_delay": "10s",
            "jitter": "equal", "deadline": "30s", "idempotent": true}"#,
    )
    .unwrap();
    let built = RetryPolicy::new()
        .attempts(5)
        .backoff(Backoff::Exponential)
        .base(MS(100))
        .max_delay(S(10))
        .jitter(Jitter::Equal)
        .deadline(S(30))
        .idempotent(true);
    assert_eq!(policy, built);
}

#[test]
fn absent_keys_take_the_attributes_defaults() {
    assert_eq!(json("{}").unwrap(), RetryPolicy::new());
    // As `#[retryable(backoff = "fixed")]`: a fixed delay without jitter unless asked for.
    let fixed = json(r#"{"backoff": "fixed", "base": "1s"}"#).unwrap();
    assert_eq!(fixed.settings().jitter, Jitter::None);
    let jittered = json(r#"{"jitter": "full", "backoff": "fixed"}"#).unwrap();
    assert_eq!(jittered.settings().jitter, Jitter::Full);
}

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[retryable(
    attempts = 4,
    backoff = "linear",
    base = "250ms",
    max_delay = "600ms",
    jitter = "none"
)]
fn declared() -> Result<(), Busy> {
    Err(Busy)
}

#[test]
fn a_policy_read_from_a_file_runs_the_schedule_the_attribute_declares() {
    static CELL: PolicyCell = PolicyCell::new(RetryPolicy::new());
    #[retryable(policy = CELL)]
    fn configured() -> Result<(), Busy> {
        Err(Busy)
    }

    let file = r#"
        attempts = 4
        backoff = "linear"
        base = "250ms"
        max_delay = "600ms"
        jitter = "none"
    "#;
    CELL.set(toml::from_str(file).unwrap());
    let (_, from_file) = testing::record_sleeps(configured);
    let (_, from_attribute) = testing::record_sleeps(declared);
    assert_eq!(from_file, [MS(250), MS(500), MS(600)]);
    assert_eq!(from_file, from_attribute);
}

/// Policies with every key set, and with each left to its default.
fn policies() -> Vec<RetryPolicy> {
    vec![
        RetryPolicy::new(),
        RetryPolicy::fixed(MS(1500)),
        // No `multiplier`: a linear backoff has none to write (the attribute refuses one).
        RetryPolicy::linear(Duration::new(3, 7))
            .attempts(u32::MAX)
            .max_delay(Duration::MAX)
            .jitter(Jitter::Decorrelated)
            .deadline(Duration::from_micros(500))
            .idempotent(true)
            .nested(Nested::Once),
        RetryPolicy::exponential(Duration::ZERO)
            .multiplier(2.75)
            .jitter(Jitter::None),
    ]
}

#[test]
fn every_policy_round_trips_through_json_and_toml() {
    for policy in policies() {
        let text = serde_json::to_string(&policy).unwrap();
        assert_eq!(json(&text), Ok(policy), "{text}");
        let text = toml::to_string(&policy).unwrap();
        assert_eq!(toml::from_str::<RetryPolicy>(&text), Ok(policy), "{text}");
    }
}

#[test]
fn a_policy_is_written_with_the_attributes_keys_and_values() {
    let policy = RetryPolicy::exponential(MS(100))
        .attempts(5)
        .max_delay(S(10))
        .jitter(Jitter::Equal)
        .deadline(S(30))
        .idempotent(true);
    assert_eq!(
        serde_json::to_string(&policy).unwrap(),
        r#"{"attempts":5,"backoff":"exponential","base":"100ms","multiplier":2.0,"max_delay":"10s","jitter":"equal","idempotent":true,"deadline":"30s","nested":"retry"}"#
    );
    // Jitter left to the shape is left out, as it was left out of the attribute.
    let text = toml::to_string(&RetryPolicy::fixed(S(2))).unwrap();
    assert!(!text.contains("jitter"), "{text}");
    assert!(text.contains("base = \"2s\""), "{text}");
}

#[test]
fn an_unknown_key_is_named_with_the_nearest_accepted_key() {
    assert_eq!(
        json(r#"{"atempts": 5}"#).unwrap_err(),
        "unknown key `atempts` in a retry policy; did you mean `attempts`? accepted keys: \
         attempts, backoff, base, multiplier, max_delay, jitter, idempotent, deadline, nested \
         at line 1 column 10"
    );
    // The words of other retry libraries, as the attribute suggests them.
    let error = json(r#"{"max_retries": 3}"#).unwrap_err();
    assert!(error.contains("did you mean `attempts`?"), "{error}");
    let error = json(r#"{"timeout": "3s"}"#).unwrap_err();
    assert!(error.contains("did you mean `deadline`?"), "{error}");
    // A key of the attribute that a policy does not hold.
    let error = json(r#"{"circuit": "BREAKER"}"#).unwrap_err();
    assert!(
        error
            .contains("(`circuit` is set on `#[retryable]` or the builder, not in a retry policy)"),
        "{error}"
    );
    let error = json(r#"{"attempts": 2, "attempts": 3}"#).unwrap_err();
    assert!(error.starts_with("duplicate key `attempts`"), "{error}");
}

#[test]
fn a_bad_value_is_the_attributes_error_for_it() {
    let cases = [
        (
            r#"{"attempts": 0}"#,
            "`attempts` counts every attempt including the first, so it must be at least 1",
        ),
        (
            r#"{"attempts": 5000000000}"#,
            "`attempts` must be a whole number from 1 to 4294967295",
        ),
        (
            r#"{"attempts": "many"}"#,
            "`attempts` takes a whole number of attempts, such as `attempts = 5`",
        ),
        (
            r#"{"multiplier": 0.5}"#,
            "`multiplier` must be a number greater than 1, such as `multiplier = 1.5`; for a constant delay use `backoff = \"fixed\"`",
        ),
        (
            r#"{"backoff": "expo"}"#,
            "unknown backoff \"expo\"; expected one of \"exponential\", \"fixed\", \"linear\"",
        ),
        (
            r#"{"jitter": "ful"}"#,
            "unknown jitter \"ful\"; did you mean \"full\"? expected one of \"none\", \"full\", \"equal\", \"decorrelated\"",
        ),
        (
            r#"{"base": "5 parsecs"}"#,
            "`base`: unknown unit \"parsecs\"; write a number and a unit",
        ),
        (r#"{"max_delay": "10"}"#, "`max_delay`: \"10\" has no unit"),
        (
            r#"{"deadline": 30}"#,
            "`deadline` takes a string, such as `deadline = \"10s\"`",
        ),
        (
            r#"{"idempotent": 1}"#,
            "`idempotent` is a flag: write `idempotent` or `idempotent = true`/`false`",
        ),
        // A conflict between keys, in either order, as the attribute reports it.
        (
            r#"{"backoff": "fixed", "multiplier": 3.0}"#,
            "`multiplier` only applies to `backoff = \"exponential\"`",
        ),
        (
            r#"{"multiplier": 3.0, "backoff": "linear"}"#,
            "`multiplier` only applies to `backoff = \"exponential\"`",
        ),
    ];
    for (text, message) in cases {
        let error = json(text).unwrap_err();
        assert!(error.starts_with(message), "{text}: {error}");
    }
    // TOML says where.
    let error = toml::from_str::<RetryPolicy>("base = \"1.5 s\"\nattempts = 0\n").unwrap_err();
    let error = error.to_string();
    assert!(error.contains("line 2"), "{error}");
    assert!(error.contains("must be at least 1"), "{error}");
}

#[test]
fn values_spelled_as_strings_read_as_what_they_spell() {
    // What a config crate gives from environment variables.
    let policy = json(r#"{"attempts": "7", "multiplier": "1.5", "idempotent": "true"}"#).unwrap();
    assert_eq!(
        policy,
        RetryPolicy::new()
            .attempts(7)
            .multiplier(1.5)
            .idempotent(true)
    );
}

#[test]
fn breaker_settings_round_trip_and_say_what_is_missing() {
    let settings = BreakerSettings::new(5, S(30))
        .success_threshold(2)
        .half_open_max(3)
        .failure_ratio(0.25, S(60), 20);
    let text = toml::to_string(&settings).unwrap();
    assert_eq!(
        toml::from_str::<BreakerSettings>(&text),
        Ok(settings),
        "{text}"
    );
    let text = serde_json::to_string(&settings).unwrap();
    assert_eq!(
        text,
        r#"{"failure_threshold":5,"open_for":"30s","success_threshold":2,"half_open_max":3,"failure_ratio":{"ratio":0.25,"window":"1m","min_calls":20}}"#
    );
    assert_eq!(
        serde_json::from_str::<BreakerSettings>(&text).unwrap(),
        settings
    );

    let minimal: BreakerSettings =
        toml::from_str("failure_threshold = 3\nopen_for = \"10s\"").unwrap();
    assert_eq!(minimal, BreakerSettings::new(3, S(10)));

    let error = |text: &str| {
        serde_json::from_str::<BreakerSettings>(text)
            .unwrap_err()
            .to_string()
    };
    let missing = error(r#"{"failure_threshold": 3}"#);
    assert!(
        missing.starts_with("missing key `open_for` in a circuit breaker's settings: `open_for` takes a string, such as `open_for = \"30s\"`"),
        "{missing}"
    );
    let typo = error(r#"{"failure_treshold": 3, "open_for": "1s"}"#);
    assert!(typo.starts_with("unknown key `failure_treshold` in a circuit breaker's settings; did you mean `failure_threshold`?"), "{typo}");
    let zero = error(r#"{"failure_threshold": 3, "open_for": "1s", "half_open_max": 0}"#);
    assert!(
        zero.starts_with("`half_open_max` must be a whole number from 1 to 65535"),
        "{zero}"
    );
    let ratio = error(
        r#"{"failure_threshold": 3, "open_for": "1s", "failure_ratio": {"ratio": 1.5, "window": "1s", "min_calls": 1}}"#,
    );
    assert!(
        ratio.starts_with("`ratio` must be a number from 0 to 1"),
        "{ratio}"
    );
}

#[test]
fn budget_settings_round_trip_and_check_their_values() {
    let settings = BudgetSettings::new(100, 0.1);
    let text = toml::to_string(&settings).unwrap();
    assert_eq!(text, "max_tokens = 100\ntoken_ratio = 0.1\n");
    assert_eq!(toml::from_str::<BudgetSettings>(&text), Ok(settings));
    let text = serde_json::to_string(&settings).unwrap();
    assert_eq!(
        serde_json::from_str::<BudgetSettings>(&text).unwrap(),
        settings
    );

    let error = serde_json::from_str::<BudgetSettings>(r#"{"max_tokens": 10, "token_ratio": -1}"#)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("`token_ratio` must be a number of at least 0"),
        "{error}"
    );
}

/// A configuration file of a service: a policy, a breaker and a budget, reloaded at run time.
#[derive(serde::Deserialize)]
struct Config {
    policy: RetryPolicy,
    payments: BreakerSettings,
    search: BudgetSettings,
}

#[test]
fn a_reload_replaces_policy_breaker_and_budget_settings_keeping_their_state() {
    static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::new());
    static PAYMENTS: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60));
    static SEARCH: RetryBudget = RetryBudget::new(10, 0.1);

    let file = r#"
        [policy]
        attempts = 2
        backoff = "fixed"
        base = "50ms"

        [payments]
        failure_threshold = 5
        open_for = "10s"

        [search]
        max_tokens = 20
        token_ratio = 0.5
    "#;
    testing::record_sleeps(|| {
        PAYMENTS.try_acquire().unwrap().failed();
        for _ in 0..5 {
            SEARCH.record_failure();
        }
        let config: Config = toml::from_str(file).unwrap();
        POLICY.set(config.policy);
        PAYMENTS.set_settings(config.payments);
        SEARCH.set_settings(config.search);

        assert_eq!(POLICY.get(), RetryPolicy::fixed(MS(50)).attempts(2));
        assert_eq!(
            PAYMENTS.state(),
            CircuitState::Open,
            "an open breaker stays open"
        );
        assert_eq!(PAYMENTS.try_acquire().unwrap_err().retry_after(), S(10));
        assert_eq!(SEARCH.tokens(), 10.0, "half full stays half full");
        assert_eq!(SEARCH.max_tokens(), 20);
    });
}

/// Regression: `"deadline": null` was refused, so a layered configuration (a base file with a
/// deadline, an override without) could not clear one. `null` is the key's default, as if the
/// key were absent: no deadline, the jitter the backoff chooses, 3 attempts.
#[test]
fn null_puts_a_key_back_to_its_default_so_a_layer_can_clear_a_deadline() {
    let policy = json(r#"{"deadline": null, "attempts": 5}"#).unwrap();
    assert_eq!(policy.settings().deadline, None);
    assert_eq!(policy.settings().attempts, 5);
    let cleared = json(
        r#"{"backoff": "fixed", "jitter": "full", "attempts": 4, "deadline": "30s",
            "jitter": null}"#,
    );
    assert!(cleared.unwrap_err().contains("duplicate key `jitter`"));
    let cleared = json(r#"{"backoff": "fixed", "jitter": null, "attempts": null}"#).unwrap();
    assert_eq!(cleared, RetryPolicy::fixed(MS(100)));
    assert_eq!(
        cleared.settings().jitter,
        Jitter::None,
        "a fixed backoff's own jitter"
    );

    let breaker: BreakerSettings = serde_json::from_str(
        r#"{"failure_threshold": 3, "open_for": "10s", "failure_ratio": null, "half_open_max": null}"#,
    )
    .unwrap();
    assert_eq!(breaker, BreakerSettings::new(3, S(10)));
    let missing = serde_json::from_str::<BreakerSettings>(
        r#"{"failure_threshold": null, "open_for": "10s"}"#,
    );
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .contains("failure_threshold")
    );
}

/// Regression: `"1m30s"` was refused, and `1μs` written with U+03BC (the Greek letter mu, what
/// many keyboards type) was refused where `1µs` (U+00B5, the micro sign) parsed. Both are read
/// in files as in the attribute.
#[test]
fn compound_durations_and_both_micro_signs_are_read() {
    let policy = json(r#"{"base": "1m30s", "max_delay": "1h 30m", "deadline": "2h0m1s"}"#).unwrap();
    let settings = policy.settings();
    assert_eq!((settings.base, settings.max_delay), (S(90), S(5400)));
    assert_eq!(settings.deadline, Some(S(7201)));
    for micro in ["250\u{b5}s", "250\u{3bc}s", "250us"] {
        let policy = json(&format!(r#"{{"base": "{micro}"}}"#)).unwrap();
        assert_eq!(
            policy.settings().base,
            Duration::from_micros(250),
            "{micro}"
        );
    }
    let wrong_order = json(r#"{"base": "30s1m"}"#).unwrap_err();
    assert!(wrong_order.contains("largest unit down"), "{wrong_order}");
    // Written back in one unit, which reads back the same.
    let text = serde_json::to_string(&json(r#"{"base": "1m30s"}"#).unwrap()).unwrap();
    assert!(text.contains(r#""base":"90s""#), "{text}");
}

#[retryable(
    base = "1m30s",
    max_delay = "2m 30s",
    attempts = 3,
    jitter = "none",
    backoff = "linear"
)]
fn compound() -> Result<(), Busy> {
    Err(Busy)
}

#[test]
fn the_attribute_reads_compound_durations_too() {
    let (_, slept) = testing::record_sleeps(compound);
    assert_eq!(slept, [S(90), S(150)]);
}

/// Regression: the getters were named unlike the keys (`max_attempts()` for `attempts`,
/// `base_delay()` for `base`, `delay_cap()` for `max_delay`). `settings()` reads a policy back
/// under the keys' own names, as a file wrote them.
#[test]
fn settings_read_a_policy_back_under_the_keys_names() {
    let policy = json(
        r#"{"attempts": 5, "backoff": "linear", "base": "250ms", "max_delay": "10s",
            "jitter": "equal", "deadline": "30s", "idempotent": true, "nested": "once"}"#,
    )
    .unwrap();
    let s = policy.settings();
    assert_eq!(
        (s.attempts, s.backoff, s.base, s.max_delay, s.jitter),
        (5, Backoff::Linear, MS(250), S(10), Jitter::Equal)
    );
    assert_eq!(
        (s.deadline, s.idempotent, s.nested),
        (Some(S(30)), true, Nested::Once)
    );
    assert_eq!(RetryPolicy::new().settings().multiplier, 2.0);
}
