//! Reading a gRPC service config (the JSON form) into the layer's [`Rules`]: `methodConfig`
//! entries with their names, `retryPolicy` (with the C core's `perAttemptRecvTimeout`),
//! `hedgingPolicy` and `timeout`, and
//! `retryThrottling`, checked by gRFC A6's validation rules. Every violation is a
//! [`ServiceConfigError`] naming the field (`methodConfig[0].retryPolicy.maxAttempts`) and the
//! rule it breaks. Keys gRPC defines that this layer has no use for (`loadBalancingConfig`,
//! `waitForReady`, `maxRequestMessageBytes`, ...) are ignored. Any other key is refused, naming
//! the nearest key gRPC defines there: gRPC itself ignores keys it does not know, so a misspelt
//! `methodConfig` or `retryableStatusCodes` would leave a layer that silently retries less
//! than its config says.

use super::rules::{Codes, Method, Plan, Rule, Rules};
use crate::config::nearest;
use crate::policy::{Jitter, RetryPolicy};
use crate::policy_cell::PolicySource;
use ::tonic::Code;
use serde_json::{Map, Value};
use std::fmt;
use std::time::Duration;

/// A service config that [`GrpcRetryLayer::from_service_config`](super::GrpcRetryLayer::from_service_config)
/// refused: the field, and the rule it breaks.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::GrpcRetryLayer;
///
/// let config = r#"{"methodConfig": [{"name": [{}], "retryPolicy": {
///     "maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s",
///     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
/// let error = GrpcRetryLayer::from_service_config(config).unwrap_err();
/// assert_eq!(error.field(), "methodConfig[0].retryPolicy.maxAttempts");
/// assert_eq!(
///     error.to_string(),
///     "service config: methodConfig[0].retryPolicy.maxAttempts: must be an integer greater \
///      than 1 (gRFC A6), not 1"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceConfigError {
    field: String,
    rule: String,
}

impl ServiceConfigError {
    /// The field at fault, as a path from the config's root (`retryThrottling.maxTokens`,
    /// `methodConfig[2].name[0].method`); empty when the text is not JSON at all.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let error = GrpcRetryLayer::from_service_config("{").unwrap_err();
    /// assert_eq!(error.field(), "");
    /// let error = GrpcRetryLayer::from_service_config(r#"{"methodConfig": [{"timeout": "5"}]}"#)
    ///     .unwrap_err();
    /// assert_eq!(error.field(), "methodConfig[0].timeout");
    /// ```
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tonic::GrpcRetryLayer;
    ///
    /// let config = r#"{"retryThrottling": {"maxTokens": 10}}"#;
    /// let error = GrpcRetryLayer::from_service_config(config).unwrap_err();
    /// assert_eq!(error.field(), "retryThrottling.tokenRatio");
    /// assert_eq!(error.rule(), "is required (gRFC A6)");
    /// ```
    pub fn rule(&self) -> &str {
        &self.rule
    }
}

impl fmt::Display for ServiceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "service config: {}", self.rule)
        } else {
            write!(f, "service config: {}: {}", self.field, self.rule)
        }
    }
}

impl std::error::Error for ServiceConfigError {}

fn error(field: &str, rule: impl Into<String>) -> ServiceConfigError {
    ServiceConfigError {
        field: field.to_owned(),
        rule: rule.into(),
    }
}

/// One kind of object in a service config: the keys gRPC defines in it (`service_config.proto`
/// in its JSON names), and what an error calls it.
struct Shape {
    what: &'static str,
    keys: &'static [&'static str],
}

const ROOT: Shape = Shape {
    what: "the service config",
    keys: &[
        "loadBalancingPolicy",
        "loadBalancingConfig",
        "methodConfig",
        "retryThrottling",
        "healthCheckConfig",
        "connectionScaling",
    ],
};

const METHOD_CONFIG: Shape = Shape {
    what: "a methodConfig entry",
    keys: &[
        "name",
        "waitForReady",
        "timeout",
        "maxRequestMessageBytes",
        "maxResponseMessageBytes",
        "retryPolicy",
        "hedgingPolicy",
    ],
};

const NAME: Shape = Shape {
    what: "a name",
    keys: &["service", "method"],
};

const RETRY_POLICY: Shape = Shape {
    what: "a retryPolicy",
    keys: &[
        "maxAttempts",
        "initialBackoff",
        "maxBackoff",
        "backoffMultiplier",
        "retryableStatusCodes",
        "perAttemptRecvTimeout",
    ],
};

const HEDGING_POLICY: Shape = Shape {
    what: "a hedgingPolicy",
    keys: &["maxAttempts", "hedgingDelay", "nonFatalStatusCodes"],
};

const RETRY_THROTTLING: Shape = Shape {
    what: "retryThrottling",
    keys: &["maxTokens", "tokenRatio"],
};

const SHAPES: [&Shape; 6] = [
    &ROOT,
    &METHOD_CONFIG,
    &NAME,
    &RETRY_POLICY,
    &HEDGING_POLICY,
    &RETRY_THROTTLING,
];

/// `value` as an object of `shape`: a key gRPC does not define there is an error naming it,
/// with where it belongs if it is a key of another object, else the nearest key that is.
/// Checked before any value, so that a misspelt key is reported as itself, not as the key it
/// was meant to be gone missing.
fn object_of<'v>(
    value: &'v Value,
    path: &str,
    shape: &Shape,
) -> Result<&'v Map<String, Value>, ServiceConfigError> {
    let object = object(value, path)?;
    let Some(key) = object
        .keys()
        .find(|key| !shape.keys.contains(&key.as_str()))
    else {
        return Ok(object);
    };
    let owners: Vec<&str> = SHAPES
        .iter()
        .filter(|other| other.keys.contains(&key.as_str()))
        .map(|other| other.what)
        .collect();
    let hint = match (owners.as_slice(), nearest(key, shape.keys)) {
        ([], None) => String::new(),
        ([], Some(near)) => format!("; did you mean `{near}`?"),
        (owners, _) => format!("; `{key}` goes in {}", owners.join(" or ")),
    };
    let field = match path {
        ROOT_PATH => key.clone(),
        path => at(path, key),
    };
    Err(error(
        &field,
        format!(
            "is not a key of {}, whose keys are {}{hint}",
            shape.what,
            shape.keys.join(", ")
        ),
    ))
}

/// The path the errors give the config's root object itself.
const ROOT_PATH: &str = "(root)";

/// gRFC A6's client-side cap on `maxAttempts`: a larger value is taken as this one.
const MAX_ATTEMPTS: u64 = 5;

/// Parse and check a service config.
pub(crate) fn parse(json: &str) -> Result<Rules, ServiceConfigError> {
    let root: Value =
        serde_json::from_str(json).map_err(|e| error("", format!("not valid JSON: {e}")))?;
    let root = object_of(&root, ROOT_PATH, &ROOT)?;
    let mut rules = Rules::default();
    if let Some(entries) = field(root, "methodConfig") {
        for (i, entry) in array(entries, "methodConfig")?.iter().enumerate() {
            method_config(entry, &format!("methodConfig[{i}]"), &mut rules)?;
        }
    }
    if let Some(throttling) = field(root, "retryThrottling") {
        rules.throttling = Some(retry_throttling(throttling, "retryThrottling")?);
    }
    Ok(rules)
}

fn method_config(value: &Value, path: &str, rules: &mut Rules) -> Result<(), ServiceConfigError> {
    let entry = object_of(value, path, &METHOD_CONFIG)?;
    let timeout = match field(entry, "timeout") {
        Some(value) => Some(non_negative(value, &format!("{path}.timeout"))?),
        None => None,
    };
    let plan = match (field(entry, "retryPolicy"), field(entry, "hedgingPolicy")) {
        (Some(_), Some(_)) => {
            return Err(error(
                path,
                "sets both retryPolicy and hedgingPolicy; a method may have one (gRFC A6)",
            ));
        }
        (Some(retry), None) => retry_policy(retry, &format!("{path}.retryPolicy"))?,
        (None, Some(hedge)) => hedging_policy(hedge, &format!("{path}.hedgingPolicy"))?,
        (None, None) => Plan::Once,
    };
    let index = rules.push(Method { plan, timeout });
    let Some(names) = field(entry, "name") else {
        return Ok(());
    };
    for (j, name) in array(names, &format!("{path}.name"))?.iter().enumerate() {
        let at = format!("{path}.name[{j}]");
        let name = object_of(name, &at, &NAME)?;
        let service = optional_str(name, "service", &at)?.unwrap_or("");
        let method = optional_str(name, "method", &at)?.filter(|m| !m.is_empty());
        if service.is_empty() && method.is_some() {
            return Err(error(
                &format!("{at}.method"),
                "names a method without its service; a name with an empty service is the \
                 default and must not name a method",
            ));
        }
        if !rules.name(service, method, index) {
            let shown = match (service, method) {
                ("", _) => "the default (empty) name".to_owned(),
                (service, None) => format!("service {service:?}"),
                (service, Some(method)) => format!("method {service}/{method}"),
            };
            return Err(error(
                &at,
                format!("{shown} is named by an earlier methodConfig entry already"),
            ));
        }
    }
    Ok(())
}

fn retry_policy(value: &Value, path: &str) -> Result<Plan, ServiceConfigError> {
    let policy = object_of(value, path, &RETRY_POLICY)?;
    let attempts = max_attempts(policy, path)?;
    let initial = positive(
        required(policy, "initialBackoff", path)?,
        &at(path, "initialBackoff"),
    )?;
    let max = positive(
        required(policy, "maxBackoff", path)?,
        &at(path, "maxBackoff"),
    )?;
    let multiplier = {
        let field = at(path, "backoffMultiplier");
        match required(policy, "backoffMultiplier", path)?.as_f64() {
            Some(m) if m > 0.0 && m.is_finite() => m,
            _ => return Err(error(&field, "must be a number greater than 0 (gRFC A6)")),
        }
    };
    // gRPC's C core: an attempt with no response headers after this long is cancelled and
    // retried, whatever `retryableStatusCodes` lists.
    let recv_timeout = match field(policy, "perAttemptRecvTimeout") {
        Some(value) => Some(positive(value, &at(path, "perAttemptRecvTimeout"))?),
        None => None,
    };
    // With a per-attempt timeout the codes may be left out (the C core's rule): the policy
    // then retries only attempts that timed out.
    let codes = match (field(policy, "retryableStatusCodes"), recv_timeout) {
        (Some(value), _) => codes(value, &at(path, "retryableStatusCodes"))?,
        (None, Some(_)) => Codes::default(),
        (None, None) => {
            return Err(error(
                &at(path, "retryableStatusCodes"),
                "is required (gRFC A6), unless perAttemptRecvTimeout is set",
            ));
        }
    };
    if codes == Codes::default() && recv_timeout.is_none() {
        return Err(error(
            &at(path, "retryableStatusCodes"),
            "must list at least one status code (gRFC A6), unless perAttemptRecvTimeout is set",
        ));
    }
    if codes.contains(Code::Ok) {
        return Err(error(
            &at(path, "retryableStatusCodes"),
            "must not list OK: a successful call is never retried",
        ));
    }
    // A6's current backoff (grpc/proposal #452): min(initialBackoff * multiplier^(n-1),
    // maxBackoff) * random(0.8, 1.2). `Jitter::Spread` spreads a delay capped at 5/6 of
    // `max_delay`, so a `max_delay` of 1.2 * maxBackoff gives exactly that.
    let policy = RetryPolicy::exponential(initial)
        .multiplier(multiplier)
        .max_delay(max.saturating_add(max / 5))
        .jitter(Jitter::Spread)
        .attempts(attempts);
    Ok(Plan::Retry {
        policy: PolicySource::Own(policy),
        rule: Rule::Listed(codes),
        recv_timeout,
    })
}

fn hedging_policy(value: &Value, path: &str) -> Result<Plan, ServiceConfigError> {
    let policy = object_of(value, path, &HEDGING_POLICY)?;
    let attempts = max_attempts(policy, path)?;
    let delay = match field(policy, "hedgingDelay") {
        Some(value) => non_negative(value, &at(path, "hedgingDelay"))?,
        None => Duration::ZERO,
    };
    let non_fatal = match field(policy, "nonFatalStatusCodes") {
        Some(value) => codes(value, &at(path, "nonFatalStatusCodes"))?,
        None => Codes::default(),
    };
    // Hedging runs the method more than once at a time, which the service owner declares
    // safe by choosing it: the policy is idempotent.
    let policy = RetryPolicy::fixed(Duration::ZERO)
        .attempts(attempts)
        .idempotent(true);
    Ok(Plan::Hedge {
        policy,
        delay,
        rule: Rule::Listed(non_fatal),
    })
}

fn retry_throttling(value: &Value, path: &str) -> Result<(u32, f64), ServiceConfigError> {
    let throttling = object_of(value, path, &RETRY_THROTTLING)?;
    let max_tokens = match required(throttling, "maxTokens", path)?.as_u64() {
        Some(n @ 1..=1000) => n as u32,
        _ => {
            return Err(error(
                &at(path, "maxTokens"),
                "must be an integer greater than 0 and at most 1000 (gRFC A6; to turn retries off for a while, give the layer `.budget(..)` a `RetryBudget` set to `max_tokens = 0`, which the crate's own configuration accepts)",
            ));
        }
    };
    let field = at(path, "tokenRatio");
    let ratio = match required(throttling, "tokenRatio", path)?.as_f64() {
        Some(r) if r > 0.0 && r.is_finite() => r,
        _ => return Err(error(&field, "must be a number greater than 0 (gRFC A6)")),
    };
    // A6: decimal places beyond the third are ignored.
    let ratio = (ratio * 1000.0).trunc() / 1000.0;
    if ratio <= 0.0 {
        return Err(error(
            &field,
            "must be at least 0.001 (gRFC A6 ignores decimal places beyond the third)",
        ));
    }
    Ok((max_tokens, ratio))
}

/// `maxAttempts`: an integer above 1, capped at 5 (gRFC A6).
fn max_attempts(policy: &Map<String, Value>, path: &str) -> Result<u32, ServiceConfigError> {
    let value = required(policy, "maxAttempts", path)?;
    match value.as_u64() {
        Some(n) if n > 1 => Ok(n.min(MAX_ATTEMPTS) as u32),
        _ => Err(error(
            &at(path, "maxAttempts"),
            format!("must be an integer greater than 1 (gRFC A6), not {value}"),
        )),
    }
}

/// A list of status codes, each an integer (`14`) or a name in any case (`"UNAVAILABLE"`).
fn codes(value: &Value, path: &str) -> Result<Codes, ServiceConfigError> {
    let mut codes = Codes::default();
    for (i, code) in array(value, path)?.iter().enumerate() {
        let parsed = match code {
            Value::Number(n) => n.as_u64().and_then(code_of_number),
            Value::String(name) => code_of_name(name),
            _ => None,
        };
        let Some(parsed) = parsed else {
            return Err(error(
                &format!("{path}[{i}]"),
                format!(
                    "{code} is not a gRPC status code (an integer from 0 to 16, or a name such as \"UNAVAILABLE\")"
                ),
            ));
        };
        codes.insert(parsed);
    }
    Ok(codes)
}

/// The gRPC status codes by name, in the order of their numbers.
const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

fn code_of_number(n: u64) -> Option<Code> {
    let n = i32::try_from(n)
        .ok()
        .filter(|n| *n < CODE_NAMES.len() as i32)?;
    Some(Code::from_i32(n))
}

fn code_of_name(name: &str) -> Option<Code> {
    let n = CODE_NAMES
        .iter()
        .position(|known| known.eq_ignore_ascii_case(name))?;
    code_of_number(n as u64)
}

/// A duration in the proto3 JSON form, greater than zero.
fn positive(value: &Value, path: &str) -> Result<Duration, ServiceConfigError> {
    match duration(value, path)? {
        (false, d) if !d.is_zero() => Ok(d),
        _ => Err(error(path, "must be greater than 0 (gRFC A6)")),
    }
}

/// A duration in the proto3 JSON form, not negative.
fn non_negative(value: &Value, path: &str) -> Result<Duration, ServiceConfigError> {
    match duration(value, path)? {
        (false, d) => Ok(d),
        (true, _) => Err(error(path, "must not be negative")),
    }
}

/// A duration in the proto3 JSON form (`"0.1s"`, `"2s"`, `"-1.5s"`), as (negative, magnitude).
fn duration(value: &Value, path: &str) -> Result<(bool, Duration), ServiceConfigError> {
    value.as_str().and_then(parse_duration).ok_or_else(|| {
        error(
            path,
            format!(
                "must be a duration in the service config's form, seconds with an \"s\" \
                     (\"0.1s\", \"2s\"), not {value}"
            ),
        )
    })
}

/// The largest number of seconds a proto3 `Duration` holds (10,000 years).
const MAX_SECONDS: u64 = 315_576_000_000;

/// Parse `-?digits(.digits{1,9})?s`.
pub(crate) fn parse_duration(text: &str) -> Option<(bool, Duration)> {
    let number = text.strip_suffix('s')?;
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds: u64 = whole.parse().ok().filter(|s| *s <= MAX_SECONDS)?;
    let nanos = match fraction {
        None => 0,
        Some(f) if (1..=9).contains(&f.len()) && f.bytes().all(|b| b.is_ascii_digit()) => {
            // Right-pad to nine digits: "1" is 100,000,000 ns.
            let padded: u32 = f.parse().ok()?;
            padded * 10u32.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
    };
    Some((negative, Duration::new(seconds, nanos)))
}

fn at(path: &str, name: &str) -> String {
    format!("{path}.{name}")
}

/// A field's value; a JSON `null` is an absent field, as in proto3's JSON mapping.
fn field<'v>(object: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    object.get(name).filter(|v| !v.is_null())
}

fn required<'v>(
    object: &'v Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<&'v Value, ServiceConfigError> {
    field(object, name).ok_or_else(|| error(&at(path, name), "is required (gRFC A6)"))
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, ServiceConfigError> {
    value
        .as_object()
        .ok_or_else(|| error(path, format!("must be a JSON object, not {value}")))
}

fn array<'v>(value: &'v Value, path: &str) -> Result<&'v [Value], ServiceConfigError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| error(path, format!("must be a JSON array, not {value}")))
}

fn optional_str<'v>(
    object: &'v Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<&'v str>, ServiceConfigError> {
    match field(object, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(error(
            &at(path, name),
            format!("must be a string, not {other}"),
        )),
    }
}

#[cfg(test)]
mod tests;
