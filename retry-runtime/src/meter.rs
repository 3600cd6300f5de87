//! Measurements through the `metrics` facade (feature `metrics`), for whatever recorder the
//! application installs (Prometheus, StatsD, OpenTelemetry, ...):
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `retry_kit_attempts_total` | counter | `fn`, `outcome` (`success`, `retry`, `stop`), `class` (`none` for a success, `value` for a value `retry_if` polls past) | every attempt, by what came of it |
//! | `retry_kit_retry_delay_seconds` | histogram | `fn` | the wait before each retry |
//! | `retry_kit_stops_total` | counter | `fn`, `reason` | every call that gave up, by [`StopReason`], including calls an open breaker refused before any attempt (`circuit_open`) |
//! | `retry_kit_hedges_total` | counter | `fn` | every attempt a hedged call started beside a slow one (counted in `retry_kit_attempts_total` too when it ends) |
//! | `retry_kit_fleet_fallbacks_total` | counter | none | (feature `redis`) every time a process's fleet exchange went from answered to failing: its fleet values decide by their local rules until Redis answers again |
//! | `retry_kit_circuit_state` | gauge | `breaker`, and `key` for a `PerKey` entry whose key is known as text (the layers' `host:port`, a `Display` key of `#[retryable(key = ..)]`) | 0 closed, 1 half-open, 2 open, set on every change of a named or unnamed (`"unnamed"`) breaker |
//!
//! `fn` is the function's path for `#[retryable]` (as in `tracing` events) and the name given
//! by [`Retry::named`](crate::Retry::named) for the builder (`"closure"` by default). Without
//! the feature nothing is compiled: no check, no call on any path.
//!
//! # Cost
//!
//! A `#[retryable]` function keeps its handles (in its [`Meter`](crate::observe::Meter)) once
//! they are registered with the application's global recorder: from then on an attempt is
//! counted with one atomic add on the recorder's counter, with no key built and no lookup in
//! the recorder's registry. Handles are kept for the global recorder only, which is installed
//! once and lives as long as the program: a recorder installed after the first calls counts
//! every call from then on, and a test's local recorder (`metrics::with_local_recorder`) is
//! given a handle per measurement, never one kept for another recorder. Finding out which
//! recorder is the global one takes a look from a thread of the crate's own (the facade has no
//! call for it), made once when a recorder first appears, and again at most once every 1 024
//! measurements a thread makes under a recorder that is not the global one. The builder and
//! the layers, named at run time, register per measurement.

use crate::stop::{Next, StopReason};
use ::metrics::{Key, Label, Level, Metadata};

mod global;
mod handles;
pub(crate) use handles::Handles;

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A failed attempt: counted by outcome and class; its wait or its stop recorded. With the
/// function's kept `handles` (a `#[retryable]` fn's `Meter`), no key is built once they exist.
#[cold]
pub(crate) fn failed_attempt(
    function: &'static str,
    handles: Option<&Handles>,
    class: &'static str,
    next: Next,
) {
    match (next, handles) {
        (Next::Retry(delay), Some(handles)) => {
            handles.failed(function, class, true);
            handles.delayed(function, delay.as_secs_f64());
        }
        (Next::Retry(delay), None) => {
            attempt(function, class, "retry");
            ::metrics::with_recorder(|recorder| {
                recorder
                    .register_histogram(&delay_key(function), &METADATA)
                    .record(delay.as_secs_f64())
            });
        }
        // A hedged attempt that failed while others still run: the call goes on without a
        // wait of its own.
        (Next::Wait { .. }, Some(handles)) => handles.failed(function, class, true),
        (Next::Wait { .. }, None) => attempt(function, class, "retry"),
        (Next::Stop(reason), Some(handles)) => {
            handles.failed(function, class, false);
            handles.stopped(function, reason);
        }
        (Next::Stop(reason), None) => {
            attempt(function, class, "stop");
            stopped(function, reason);
        }
    }
}

/// `retry_kit_attempts_total` for one attempt, its key built now.
fn attempt(function: &'static str, class: &'static str, outcome: &'static str) {
    let key = attempt_key(function, outcome, class);
    ::metrics::with_recorder(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

fn stopped(function: &'static str, reason: StopReason) {
    let key = stop_key(function, reason);
    ::metrics::with_recorder(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

fn attempt_key(function: &'static str, outcome: &'static str, class: &'static str) -> Key {
    Key::from_parts(
        "retry_kit_attempts_total",
        vec![
            Label::from_static_parts("fn", function),
            Label::from_static_parts("outcome", outcome),
            Label::from_static_parts("class", class),
        ],
    )
}

fn stop_key(function: &'static str, reason: StopReason) -> Key {
    Key::from_parts(
        "retry_kit_stops_total",
        vec![
            Label::from_static_parts("fn", function),
            Label::from_static_parts("reason", reason.as_str()),
        ],
    )
}

fn delay_key(function: &'static str) -> Key {
    Key::from_parts(
        "retry_kit_retry_delay_seconds",
        vec![Label::from_static_parts("fn", function)],
    )
}

fn hedge_key(function: &'static str) -> Key {
    Key::from_parts(
        "retry_kit_hedges_total",
        vec![Label::from_static_parts("fn", function)],
    )
}

/// A call the breaker refused before its first attempt.
#[cold]
pub(crate) fn refused(function: &'static str, handles: Option<&Handles>) {
    match handles {
        Some(handles) => handles.stopped(function, StopReason::CircuitOpen),
        None => stopped(function, StopReason::CircuitOpen),
    }
}

/// A successful attempt of a function without kept handles (the builder, the layers).
#[inline]
pub(crate) fn succeeded(function: &'static str) {
    attempt(function, "none", "success");
}

/// A hedged call started an attempt beside a slow one.
#[cold]
pub(crate) fn hedged(function: &'static str, handles: Option<&Handles>) {
    match handles {
        Some(handles) => handles.hedged(function),
        None => {
            let key = hedge_key(function);
            ::metrics::with_recorder(|recorder| {
                recorder.register_counter(&key, &METADATA).increment(1)
            });
        }
    }
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
