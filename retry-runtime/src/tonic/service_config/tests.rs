//! The service config reader: what it accepts, and every gRFC A6 validation rule broken once,
//! each an error that names the field.

use super::*;

const RETRY: &str = r#""retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
    "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;

/// A config with one `methodConfig` entry for every method, made of `body`.
fn one_entry(body: &str) -> String {
    format!(r#"{{"methodConfig": [{{"name": [{{}}], {body}}}]}}"#)
}

/// The config of one entry with `retryPolicy` set to `RETRY` with `key` replaced by `value`
/// (or removed, for `None`).
fn retry_with(key: &str, value: Option<&str>) -> String {
    let mut policy: serde_json::Map<String, Value> =
        serde_json::from_str(&format!("{{{RETRY}}}")).unwrap();
    let Some(Value::Object(inner)) = policy.get_mut("retryPolicy") else {
        unreachable!()
    };
    match value {
        Some(v) => inner.insert(key.to_owned(), serde_json::from_str(v).unwrap()),
        None => inner.remove(key),
    };
    one_entry(&format!(
        r#""retryPolicy": {}"#,
        serde_json::to_string(&policy["retryPolicy"]).unwrap()
    ))
}

/// The field an invalid config is refused for.
fn refused(config: &str) -> (String, String) {
    let e = parse(config).expect_err("the config should be refused");
    (e.field().to_owned(), e.rule().to_owned())
}

fn field_of(config: &str) -> String {
    refused(config).0
}

#[test]
fn a6s_example_reads_as_grpc_backoff_with_the_cap_on_attempts() {
    let rules = parse(&retry_with("maxAttempts", Some("7"))).unwrap();
    let Plan::Retry {
        policy,
        rule,
        recv_timeout,
    } = rules.for_path("/any.Svc/Any").plan.clone()
    else {
        panic!("a retry plan");
    };
    let policy = policy.current();
    // Values above 5 are treated as 5 (A6), not refused.
    assert_eq!(policy.settings().attempts, 5);
    assert_eq!(policy.settings().base, Duration::from_millis(100));
    // A6's current rule: min(initialBackoff * multiplier^(n-1), maxBackoff) * [0.8, 1.2].
    assert_eq!(policy.settings().jitter, Jitter::Spread);
    let ms = Duration::from_millis;
    let wait = |n, draw| policy.jittered_delay(n, Duration::ZERO, draw);
    assert_eq!(
        (wait(1, 0), wait(1, u64::MAX)),
        (ms(80), ms(120) - Duration::from_nanos(1))
    );
    assert_eq!(
        (wait(2, 0), wait(2, u64::MAX / 2)),
        (ms(160), ms(200) - Duration::from_nanos(1))
    );
    // Past maxBackoff (1 s): 0.8 s to 1.2 s, never more.
    assert_eq!(wait(5, 0), ms(800));
    assert!(wait(5, u64::MAX) <= ms(1200) && wait(5, u64::MAX) > ms(1199));
    assert!(!policy.settings().idempotent);
    let mut unavailable = Codes::default();
    unavailable.insert(Code::Unavailable);
    assert_eq!(rule, Rule::Listed(unavailable));
    assert_eq!(recv_timeout, None);
}

#[test]
fn names_match_method_then_service_then_default() {
    let config = r#"{"methodConfig": [
        {"name": [{"service": "pkg.Svc", "method": "Get"}], "timeout": "1.5s"},
        {"name": [{"service": "pkg.Svc"}, {"service": "pkg.Other", "method": ""}], "timeout": "2s"},
        {"name": [{"service": ""}], "timeout": "3s"}
    ]}"#;
    let rules = parse(config).unwrap();
    let timeout = |path| rules.for_path(path).timeout;
    assert_eq!(timeout("/pkg.Svc/Get"), Some(Duration::from_millis(1500)));
    assert_eq!(timeout("/pkg.Svc/Put"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("/pkg.Other/Get"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("/pkg.Third/Get"), Some(Duration::from_secs(3)));
    assert_eq!(rules.for_path("/pkg.Svc/Get").plan, Plan::Once);
}

#[test]
fn codes_are_integers_or_names_in_any_case() {
    let config = retry_with(
        "retryableStatusCodes",
        Some(r#"[14, "aborted", "Resource_Exhausted"]"#),
    );
    let Plan::Retry {
        rule: Rule::Listed(codes),
        ..
    } = parse(&config).unwrap().for_path("/a.B/C").plan
    else {
        panic!("a retry plan");
    };
    for code in [Code::Unavailable, Code::Aborted, Code::ResourceExhausted] {
        assert!(codes.contains(code), "{code:?}");
    }
    assert!(!codes.contains(Code::Internal));
}

#[test]
fn a_hedging_policy_reads_with_its_optional_fields() {
    let config = one_entry(
        r#""hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.5s",
            "nonFatalStatusCodes": ["UNAVAILABLE", 13]}"#,
    );
    let Plan::Hedge {
        policy,
        delay,
        rule: Rule::Listed(codes),
    } = parse(&config).unwrap().for_path("/a.B/C").plan
    else {
        panic!("a hedging plan");
    };
    assert_eq!(policy.settings().attempts, 5);
    assert!(policy.settings().idempotent);
    assert_eq!(delay, Duration::from_millis(500));
    assert!(codes.contains(Code::Unavailable) && codes.contains(Code::Internal));

    let bare = one_entry(r#""hedgingPolicy": {"maxAttempts": 2}"#);
    let Plan::Hedge { delay, rule, .. } = parse(&bare).unwrap().for_path("/a.B/C").plan else {
        panic!("a hedging plan");
    };
    assert_eq!(delay, Duration::ZERO);
    assert_eq!(rule, Rule::Listed(Codes::default()));
}

#[test]
fn retry_throttling_reads_and_ignores_decimals_beyond_the_third() {
    let rules = parse(r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5466}}"#).unwrap();
    assert_eq!(rules.throttling, Some((10, 0.546)));
}

#[test]
fn keys_the_layer_has_no_use_for_and_nulls_are_ignored() {
    let config = r#"{"loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [{"name": [{}], "waitForReady": true, "hedgingPolicy": null,
                          "timeout": null}]}"#;
    let rules = parse(config).unwrap();
    assert_eq!(rules.for_path("/a.B/C").plan, Plan::Once);
    assert_eq!(parse("{}").unwrap().for_path("/a.B/C").plan, Plan::Once);
}

#[test]
fn durations_take_the_proto3_json_form() {
    let d = |s| parse_duration(s);
    assert_eq!(d("0.1s"), Some((false, Duration::from_millis(100))));
    assert_eq!(d("2s"), Some((false, Duration::from_secs(2))));
    assert_eq!(d("1.000000001s"), Some((false, Duration::new(1, 1))));
    assert_eq!(d("-1.5s"), Some((true, Duration::from_millis(1500))));
    assert_eq!(
        d("315576000000s"),
        Some((false, Duration::from_secs(MAX_SECONDS)))
    );
    for bad in [
        "100ms",
        "1",
        "s",
        ".5s",
        "1.s",
        "1.0000000001s",
        "1e3s",
        "+1s",
        " 1s",
        "1 s",
        "315576000001s",
        "99999999999999999999999s",
    ] {
        assert_eq!(d(bad), None, "{bad:?}");
    }
}

// One test per gRFC A6 rule (and the service config's own rules), each naming its field.

#[test]
fn max_attempts_must_be_an_integer_above_one() {
    for bad in ["1", "0", "-3", "2.5", "\"4\""] {
        let (field, rule) = refused(&retry_with("maxAttempts", Some(bad)));
        assert_eq!(field, "methodConfig[0].retryPolicy.maxAttempts", "{bad}");
        assert!(rule.contains("greater than 1"), "{rule}");
    }
    let (field, rule) = refused(&retry_with("maxAttempts", None));
    assert_eq!(field, "methodConfig[0].retryPolicy.maxAttempts");
    assert!(rule.contains("required"), "{rule}");
    let hedge = one_entry(r#""hedgingPolicy": {"maxAttempts": 1}"#);
    assert_eq!(
        field_of(&hedge),
        "methodConfig[0].hedgingPolicy.maxAttempts"
    );
}

#[test]
fn backoffs_must_be_durations_greater_than_zero() {
    for key in ["initialBackoff", "maxBackoff"] {
        let field = format!("methodConfig[0].retryPolicy.{key}");
        for bad in [r#""0s""#, r#""-1s""#, r#""100ms""#, "0.1", "null"] {
            assert_eq!(
                field_of(&retry_with(key, Some(bad))),
                field,
                "{key} = {bad}"
            );
        }
        assert_eq!(field_of(&retry_with(key, None)), field);
    }
}

#[test]
fn the_multiplier_must_be_a_number_greater_than_zero() {
    for bad in ["0", "-2", r#""2""#] {
        assert_eq!(
            field_of(&retry_with("backoffMultiplier", Some(bad))),
            "methodConfig[0].retryPolicy.backoffMultiplier"
        );
    }
}

#[test]
fn retryable_codes_must_be_a_non_empty_list_of_valid_codes() {
    let field = "methodConfig[0].retryPolicy.retryableStatusCodes";
    assert_eq!(field_of(&retry_with("retryableStatusCodes", None)), field);
    assert_eq!(
        field_of(&retry_with("retryableStatusCodes", Some("[]"))),
        field
    );
    assert_eq!(
        field_of(&retry_with("retryableStatusCodes", Some("14"))),
        field
    );
    assert_eq!(
        field_of(&retry_with("retryableStatusCodes", Some(r#"["OK"]"#))),
        field
    );
    for (bad, at) in [
        (r#"["UNAVAILABLE", "BUSY"]"#, 1),
        ("[17]", 0),
        ("[-1]", 0),
        ("[true]", 0),
    ] {
        assert_eq!(
            field_of(&retry_with("retryableStatusCodes", Some(bad))),
            format!("{field}[{at}]"),
            "{bad}"
        );
    }
}

#[test]
fn per_attempt_recv_timeout_is_a_positive_duration_that_lets_the_codes_go() {
    let recv_timeout = |config: &str| match parse(config).unwrap().for_path("/a.B/C").plan.clone() {
        Plan::Retry {
            rule: Rule::Listed(codes),
            recv_timeout,
            ..
        } => (codes, recv_timeout),
        other => panic!("a retry plan, not {other:?}"),
    };
    let config = retry_with("perAttemptRecvTimeout", Some(r#""0.05s""#));
    let (codes, timeout) = recv_timeout(&config);
    assert_eq!(timeout, Some(Duration::from_millis(50)));
    assert!(codes.contains(Code::Unavailable));

    // The C core's rule: with a per-attempt timeout, the codes may be absent or empty.
    for codes in [None, Some("[]")] {
        let config = config.replace(
            r#""retryableStatusCodes":["UNAVAILABLE"]"#,
            &codes.map_or(String::new(), |c| format!(r#""retryableStatusCodes":{c}"#)),
        );
        let config = config.replace(",}", "}");
        let (listed, timeout) = recv_timeout(&config);
        assert_eq!(listed, Codes::default(), "{config}");
        assert_eq!(timeout, Some(Duration::from_millis(50)));
    }

    let field = "methodConfig[0].retryPolicy.perAttemptRecvTimeout";
    for bad in [r#""0s""#, r#""-1s""#, r#""50ms""#, "0.05"] {
        let (at, rule) = refused(&retry_with("perAttemptRecvTimeout", Some(bad)));
        assert_eq!(at, field, "{bad}");
        assert!(!rule.is_empty());
    }
    // Not a key of a hedging policy.
    let hedged = one_entry(r#""hedgingPolicy": {"maxAttempts": 2, "perAttemptRecvTimeout": "1s"}"#);
    assert_eq!(
        field_of(&hedged),
        "methodConfig[0].hedgingPolicy.perAttemptRecvTimeout"
    );
}

#[test]
fn hedging_fields_are_optional_but_checked_when_given() {
    let path = "methodConfig[0].hedgingPolicy";
    let config =
        |body: &str| one_entry(&format!(r#""hedgingPolicy": {{"maxAttempts": 3, {body}}}"#));
    assert_eq!(
        field_of(&config(r#""hedgingDelay": "soon""#)),
        format!("{path}.hedgingDelay")
    );
    assert_eq!(
        field_of(&config(r#""hedgingDelay": "-1s""#)),
        format!("{path}.hedgingDelay")
    );
    assert_eq!(
        field_of(&config(r#""nonFatalStatusCodes": ["NOPE"]"#)),
        format!("{path}.nonFatalStatusCodes[0]")
    );
    assert_eq!(
        field_of(&config(r#""nonFatalStatusCodes": "UNAVAILABLE""#)),
        format!("{path}.nonFatalStatusCodes")
    );
}

#[test]
fn a_method_may_not_set_both_policies() {
    let config = one_entry(&format!(
        r#"{RETRY}, "hedgingPolicy": {{"maxAttempts": 2}}"#
    ));
    let (field, rule) = refused(&config);
    assert_eq!(field, "methodConfig[0]");
    assert!(
        rule.contains("both retryPolicy and hedgingPolicy"),
        "{rule}"
    );
}

#[test]
fn throttling_tokens_must_be_an_integer_up_to_1000_and_the_ratio_positive() {
    let config = |tokens: &str, ratio: &str| {
        format!(r#"{{"retryThrottling": {{"maxTokens": {tokens}, "tokenRatio": {ratio}}}}}"#)
    };
    for bad in ["0", "1001", "-1", "2.5", "\"10\""] {
        assert_eq!(
            field_of(&config(bad, "0.1")),
            "retryThrottling.maxTokens",
            "{bad}"
        );
    }
    for bad in ["0", "-0.1", "0.0004", "\"0.1\""] {
        assert_eq!(
            field_of(&config("10", bad)),
            "retryThrottling.tokenRatio",
            "{bad}"
        );
    }
    assert_eq!(
        field_of(r#"{"retryThrottling": {"tokenRatio": 0.1}}"#),
        "retryThrottling.maxTokens"
    );
    assert!(parse(&config("1000", "0.001")).is_ok());
}

#[test]
fn the_timeout_must_be_a_non_negative_duration() {
    assert_eq!(
        field_of(&one_entry(r#""timeout": "-1s""#)),
        "methodConfig[0].timeout"
    );
    assert_eq!(
        field_of(&one_entry(r#""timeout": 5"#)),
        "methodConfig[0].timeout"
    );
    assert!(parse(&one_entry(r#""timeout": "0.25s""#)).is_ok());
}

#[test]
fn names_must_be_unique_and_a_method_needs_its_service() {
    let twice = r#"{"methodConfig": [
        {"name": [{"service": "pkg.Svc", "method": "Get"}]},
        {"name": [{"service": "pkg.Svc"}, {"service": "pkg.Svc", "method": "Get"}]}]}"#;
    assert_eq!(field_of(twice), "methodConfig[1].name[1]");
    let two_defaults = r#"{"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]}"#;
    assert_eq!(field_of(two_defaults), "methodConfig[1].name[0]");
    let orphan = r#"{"methodConfig": [{"name": [{"method": "Get"}]}]}"#;
    assert_eq!(field_of(orphan), "methodConfig[0].name[0].method");
    let typed = r#"{"methodConfig": [{"name": [{"service": 7}]}]}"#;
    assert_eq!(field_of(typed), "methodConfig[0].name[0].service");
}

#[test]
fn the_shape_is_checked_before_the_values() {
    let (field, rule) = refused("not json");
    assert_eq!(field, "");
    assert!(rule.starts_with("not valid JSON"), "{rule}");
    assert_eq!(field_of("[]"), "(root)");
    assert_eq!(field_of(r#"{"methodConfig": {}}"#), "methodConfig");
    assert_eq!(field_of(r#"{"methodConfig": [7]}"#), "methodConfig[0]");
    assert_eq!(
        field_of(&one_entry(r#""retryPolicy": []"#)),
        "methodConfig[0].retryPolicy"
    );
    assert_eq!(field_of(r#"{"retryThrottling": 3}"#), "retryThrottling");
}

// Keys gRPC does not define: refused, never a layer that silently does less than it says.

#[test]
fn a_misspelt_key_is_refused_with_the_nearest_known_one_at_every_level() {
    let cases = [
        (
            r#"{"methodConfigs": []}"#.to_owned(),
            "methodConfigs",
            "methodConfig",
        ),
        (
            r#"{"method_config": []}"#.to_owned(),
            "method_config",
            "methodConfig",
        ),
        (
            one_entry(r#""timout": "1s""#),
            "methodConfig[0].timout",
            "timeout",
        ),
        (
            r#"{"methodConfig": [{"name": [{"services": "a.B"}]}]}"#.to_owned(),
            "methodConfig[0].name[0].services",
            "service",
        ),
        (
            one_entry(&RETRY.replace("retryableStatusCodes", "retryableStatusCode")),
            "methodConfig[0].retryPolicy.retryableStatusCode",
            "retryableStatusCodes",
        ),
        (
            one_entry(&RETRY.replace("maxAttempts", "MaxAttempts")),
            "methodConfig[0].retryPolicy.MaxAttempts",
            "maxAttempts",
        ),
        (
            one_entry(r#""hedgingPolicy": {"maxAttempts": 2, "hedgeDelay": "1s"}"#),
            "methodConfig[0].hedgingPolicy.hedgeDelay",
            "hedgingDelay",
        ),
        (
            r#"{"retryThrottling": {"maxToken": 10, "tokenRatio": 0.1}}"#.to_owned(),
            "retryThrottling.maxToken",
            "maxTokens",
        ),
    ];
    for (config, field, near) in cases {
        let (at, rule) = refused(&config);
        assert_eq!(at, field, "{config}");
        assert!(rule.contains(&format!("did you mean `{near}`?")), "{rule}");
    }
}

#[test]
fn a_key_of_another_level_says_where_it_goes() {
    let (field, rule) = refused(&format!("{{{RETRY}}}"));
    assert_eq!(field, "retryPolicy");
    assert!(
        rule.ends_with("`retryPolicy` goes in a methodConfig entry"),
        "{rule}"
    );

    let (field, rule) = refused(&one_entry(r#""maxAttempts": 3"#));
    assert_eq!(field, "methodConfig[0].maxAttempts");
    assert!(
        rule.ends_with("`maxAttempts` goes in a retryPolicy or a hedgingPolicy"),
        "{rule}"
    );
}

#[test]
fn an_unknown_key_reads_as_a_sentence_naming_it_the_keys_and_the_nearest() {
    let error = parse(r#"{"methodConfigs": [{"name": [{}]}]}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "service config: methodConfigs: is not a key of the service config, whose keys are \
         loadBalancingPolicy, loadBalancingConfig, methodConfig, retryThrottling, \
         healthCheckConfig, connectionScaling; did you mean `methodConfig`?"
    );
    // The misspelt key is named, not the one it was meant to be reported missing.
    let singular = retry_with("retryableStatusCodes", None).replace(
        r#""maxAttempts""#,
        r#""retryableStatusCode": ["UNAVAILABLE"], "maxAttempts""#,
    );
    assert_eq!(
        field_of(&singular),
        "methodConfig[0].retryPolicy.retryableStatusCode"
    );
}
