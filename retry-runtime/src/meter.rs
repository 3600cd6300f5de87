//! Measurements through the `metrics` facade (feature `metrics`), for whatever recorder the
//! application installs (Prometheus, StatsD, OpenTelemetry, ...):
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `retry_kit_attempts_total` | counter | `fn`, `outcome` (`success`, `retry`, `stop`), `class` (`none` for a success, `value` for a value `retry_if` polls past) | every attempt, by what came of it |
//! | `retry_kit_retry_delay_seconds` | histogram | `fn` | the wait before each retry |
//! | `retry_kit_stops_total` | counter | `fn`, `reason` | every call that gave up, by [`StopReason`], including calls an open breaker refused before any attempt (`circuit_open`) |
//! | `retry_kit_hedges_total` | counter | `fn` | every attempt a hedged call started beside a slow one (counted in `retry_kit_attempts_total` too when it ends) |
//! | `retry_kit_circuit_state` | gauge | `breaker`, and `key` for a `PerKey` entry whose key is known as text (the layers' `host:port`, a `Display` key of `#[retryable(key = ..)]`) | 0 closed, 1 half-open, 2 open, set on every change of a named or unnamed (`"unnamed"`) breaker |
//!
//! `fn` is the function's path for `#[retryable]` (as in `tracing` events) and the name given
//! by [`Retry::named`](crate::Retry::named) for the builder (`"closure"` by default). Without
//! the feature nothing is compiled: no check, no call on any path.

use crate::run::{Next, StopReason};

/// A failed attempt: counted by outcome and class; its wait or its stop recorded.
#[cold]
pub(crate) fn failed_attempt(function: &'static str, class: &'static str, next: Next) {
    match next {
        Next::Retry(delay) => {
            ::metrics::counter!("retry_kit_attempts_total", "fn" => function, "outcome" => "retry", "class" => class)
                .increment(1);
            ::metrics::histogram!("retry_kit_retry_delay_seconds", "fn" => function)
                .record(delay.as_secs_f64());
        }
        // A hedged attempt that failed while others still run: the call goes on without a
        // wait of its own.
        Next::Wait { .. } => {
            ::metrics::counter!("retry_kit_attempts_total", "fn" => function, "outcome" => "retry", "class" => class)
                .increment(1);
        }
        Next::Stop(reason) => {
            ::metrics::counter!("retry_kit_attempts_total", "fn" => function, "outcome" => "stop", "class" => class)
                .increment(1);
            stopped(function, reason);
        }
    }
}

fn stopped(function: &'static str, reason: StopReason) {
    ::metrics::counter!("retry_kit_stops_total", "fn" => function, "reason" => reason.as_str())
        .increment(1);
}

/// A call the breaker refused before its first attempt.
#[cold]
pub(crate) fn refused(function: &'static str) {
    stopped(function, StopReason::CircuitOpen);
}

/// A successful attempt.
#[inline]
pub(crate) fn succeeded(function: &'static str) {
    ::metrics::counter!("retry_kit_attempts_total", "fn" => function, "outcome" => "success", "class" => "none")
        .increment(1);
}

/// A successful attempt of a function whose labels were made once (its `Meter`): the key is
/// built from them in place, with nothing allocated.
#[inline]
pub(crate) fn succeeded_as(labels: &'static [::metrics::Label]) {
    static METADATA: ::metrics::Metadata<'static> =
        ::metrics::Metadata::new(module_path!(), ::metrics::Level::INFO, Some(module_path!()));
    let key = ::metrics::Key::from_static_labels("retry_kit_attempts_total", labels);
    ::metrics::with_recorder(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

/// A hedged call started an attempt beside a slow one.
#[cold]
pub(crate) fn hedged(function: &'static str) {
    ::metrics::counter!("retry_kit_hedges_total", "fn" => function).increment(1);
}

/// A breaker changed state to `value` (0 closed, 1 half-open, 2 open): a `PerKey` entry's
/// series carries its key, so that one host's open breaker is not overwritten by another's
/// closed one. The breaker reports the value: this module does not look inside it.
pub(crate) fn circuit_state(breaker: &'static str, key: Option<&str>, value: f64) {
    match key {
        Some(key) => ::metrics::gauge!("retry_kit_circuit_state", "breaker" => breaker, "key" => key.to_owned())
            .set(value),
        None => ::metrics::gauge!("retry_kit_circuit_state", "breaker" => breaker).set(value),
    }
}
