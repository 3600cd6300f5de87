//! Measurements through the `metrics` facade (feature `metrics`), for whatever recorder the
//! application installs (Prometheus, StatsD, OpenTelemetry, ...):
//!
//! | name | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `retry_kit_attempts_total` | counter | `fn`, `outcome` (`success`, `retry`, `stop`, `cancelled`), `class` (`none` for a success or a cancelled attempt, `value` for a value `retry_if` polls past), and `code` on a failed attempt that had a status | every attempt, by what came of it: the sum over every label is the load the calls sent |
//! | `retry_kit_retry_delay_seconds` | histogram | `fn` | the wait before each retry |
//! | `retry_kit_stops_total` | counter | `fn`, `reason`, and `code` when the last attempt had a status | every call that gave up, by [`StopReason`], including calls an open breaker refused before any attempt (`circuit_open`) |
//! | `retry_kit_hedges_total` | counter | `fn` | every attempt a hedged call started beside a slow one (counted in `retry_kit_attempts_total` too when it ends, or as `cancelled` when another attempt answered first) |
//! | `retry_kit_fleet_fallbacks_total` | counter | none | (feature `redis`) every time a process's fleet exchange went from answered to failing: its fleet values decide by their local rules until Redis answers again |
//! | `retry_kit_circuit_state` | gauge | `breaker`, and `key` for a `PerKey` entry whose key is known as text (the layers' `host:port`, a `Display` key of `#[retryable(key = ..)]`) | 0 closed, 1 half-open, 2 open: set at a named breaker's first use (a named `PerKey` entry's, when it starts to serve its key) and on every change of a named or unnamed (`"unnamed"`) breaker |
//!
//! `fn` says which call: the function's path for `#[retryable]` (as in `tracing` events), the
//! name given by [`Retry::named`](crate::Retry::named) for the builder (`"closure"` by
//! default), and for the layers what a dashboard needs: the gRPC layer's is each call's method
//! path (`/pkg.Service/Method`), the HTTP layers' and the middleware's the request's authority
//! written `host:port` (as a `PerKey` is keyed), unless the layer is `.named(..)`. `code` says
//! why: the HTTP status (`"503"`) or the gRPC status code's name (`"UNAVAILABLE"`), the values
//! OpenTelemetry's conventions give `error.type`. A success has no `code` (a gRPC call is
//! committed at its response headers, before its status is known). Every metric is described
//! to the recorder (`# HELP`, and its unit) the first time the crate measures anything under
//! it; [`describe`] does it at once. Without the feature nothing is compiled: no check, no call
//! on any path.
//!
//! # What a dashboard gets
//!
//! A scrape of metrics-exporter-prometheus after one hedged `Check` (its first attempt hung;
//! the hedge answered) and one `Watch` retried after `UNAVAILABLE`, both through one
//! [`GrpcRetryLayer`](crate::tonic::GrpcRetryLayer) with a named breaker and an
//! [`origin`](crate::tonic::GrpcRetryLayer::origin); one `Check` through another gRPC layer to
//! a port where nothing listens (retried transparently, then given up); and one GET retried
//! after a 503 through an unnamed [`HttpRetryLayer`](crate::tower::HttpRetryLayer). Shown: the
//! `retry_kit_*` families and [gRFC A96's](#grfc-a96-from-the-grpc-layer), series sorted,
//! loopback ports written `PORT` (the exporter renders histograms as summaries unless given
//! buckets). The test `tests/integration/tests/prometheus.rs` makes these calls against a real
//! tonic server and a real hyper server, scrapes the exporter over HTTP and checks that it
//! still reads so:
//!
//! ```text
#![doc = include_str!("meter/scrape.txt")]
//! ```
//!
//! Which RPC retried and why is one query: `sum by (fn, code)
//! (rate(retry_kit_attempts_total{outcome=~"retry|stop"}[5m]))`; the load sent, hedges
//! included, is `sum by (fn) (rate(retry_kit_attempts_total[5m]))`; the breakers a dashboard
//! lists are `retry_kit_circuit_state`'s series; gRPC's own dashboards read
//! `grpc_client_call_retries` and its siblings.
//!
//! # gRFC A96 from the gRPC layer
//!
//! [`GrpcRetryLayer`](crate::tonic::GrpcRetryLayer) also records, at the end of each call
//! that made more than one attempt, the per-call histograms gRPC's own clients record (gRFC
//! A96), with gRPC's names (a Prometheus exporter writes the dots as underscores,
//! `grpc_client_call_retries`, `grpc_method`):
//!
//! | name | kind, unit | labels | what |
//! | --- | --- | --- | --- |
//! | `grpc.client.call.retries` | histogram, `{retry}` | `grpc.method`, `grpc.target` | attempts that retried a failure (not transparent retries, not hedges); not recorded when 0 |
//! | `grpc.client.call.transparent_retries` | histogram, `{transparent_retry}` | the same | attempts that followed one that never reached the server (a refused stream, a connection not made); not recorded when 0 |
//! | `grpc.client.call.hedges` | histogram, `{hedge}` | the same | attempts after the first of a method whose plan is a `hedgingPolicy`; not recorded when 0 |
//! | `grpc.client.call.retry_delay` | histogram, `s` | the same | the time the call waited between attempts (backoffs and pushbacks) |
//!
//! `grpc.method` is the method as A66 writes it (`grpc.health.v1.Health/Check`); `grpc.target`
//! is the server as the layer knows it, written `host:port`: its
//! [`origin`](crate::tonic::GrpcRetryLayer::origin), else the request's authority (a client
//! built `with_origin`), else `other`, A66's value for a target it does not record (a
//! generated client built with `new` sends the path alone; the channel below the layer adds
//! the authority).
//!
//! # Names, and where they come from
//!
//! OpenTelemetry has no convention for retry metrics (its issue about their names has been
//! open since 2020), so the `retry_kit_*` names are the crate's own, written as Prometheus
//! names (`_total` counters, base units in the name). Label values follow the conventions that
//! exist: `code` is what OpenTelemetry's HTTP conventions (stable) and its gRPC conventions
//! put in `error.type`, and a gRPC method is written as gRPC's A66 writes `grpc.method`.
//!
//! | name | from |
//! | --- | --- |
//! | `retry_kit_attempts_total`, `retry_kit_retry_delay_seconds`, `retry_kit_stops_total`, `retry_kit_hedges_total`, `retry_kit_circuit_state` | the crate's own (the SPEC's names) |
//! | labels `fn`, `outcome`, `class`, `reason`, `breaker`, `key` | the crate's own |
//! | `outcome="cancelled"` | the crate's own: gRPC counts a cancelled hedge as an attempt too (A45's `grpc.io/client/retries_per_call` counts hedges sent) |
//! | `code` values `"503"` | OpenTelemetry HTTP conventions: `error.type` is the status code as text |
//! | `code` values `"UNAVAILABLE"` | OpenTelemetry gRPC conventions (`error.type`, `rpc.response.status_code`) and gRFC A66's `grpc.status` |
//! | `fn` of the gRPC layer, `/pkg.Service/Method` | the method path as gRPC sends it (A66's `grpc.method` without the leading `/`) |
//! | `fn` of the HTTP layers, `host:port` | OpenTelemetry's `server.address` and `server.port`, joined as the crate keys a `PerKey` |
//! | `grpc.client.call.retries`, `grpc.client.call.transparent_retries`, `grpc.client.call.hedges`, `grpc.client.call.retry_delay`, labels `grpc.method`, `grpc.target` | gRFC A96 (labels from A66) |
//! | `grpc.target` written `host:port`, or `other` | the crate's reading of A66's target URI: the layer sees the request, not the channel's target |
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
//! the layers keep handles the same way, found by their name (by its address, or for a layer's
//! per-request name by its text, in a table of 64 places); a failure with a status code, and a
//! name past the table, register per measurement. With no recorder installed (the facade's
//! no-op one), a layer writes no name and counts nothing: one check.

use crate::stop::{Next, StopReason};
use ::metrics::{Key, Label, Level, Metadata, Recorder, SharedString, Unit};

mod global;
mod handles;
pub(crate) use handles::Handles;

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Whether a recorder is installed (the current one is not the facade's no-op one, which has
/// no size): nothing is named, keyed or counted for the no-op one.
#[inline]
pub(crate) fn recording() -> bool {
    ::metrics::with_recorder(|recorder| std::mem::size_of_val(recorder) != 0)
}

/// Run `f` with the current recorder if one is installed, having described the crate's metrics
/// to it (once per recorder and thread).
#[inline]
fn with_live(f: impl FnOnce(&dyn Recorder)) {
    ::metrics::with_recorder(|recorder| {
        if std::mem::size_of_val(recorder) != 0 {
            global::described(recorder);
            f(recorder)
        }
    })
}

/// A function's kept handles: the name they count under, its success labels and the handles.
#[derive(Clone, Copy)]
pub(crate) struct Kept {
    pub(crate) name: &'static str,
    pub(crate) success: &'static [Label; 3],
    pub(crate) handles: &'static Handles,
}

/// A name as a label value, and the kept handles of a name that has them: what the reporting
/// (`crate::observe`) finds for a call's name before it measures.
pub(crate) struct Resolved {
    pub(crate) function: SharedString,
    pub(crate) kept: Option<Kept>,
}

/// A failed attempt: counted by outcome, class and (where there is one) status code; its wait
/// or its stop recorded. Without a code, with kept handles, no key is built once they exist.
#[cold]
pub(crate) fn failed_attempt(
    resolved: Resolved,
    class: &'static str,
    next: Next,
    code: Option<&'static str>,
) {
    let Resolved { function, kept } = resolved;
    let handles = kept.filter(|_| code.is_none()).map(|k| k.handles);
    let (outcome, retried) = match next {
        Next::Retry(_) | Next::Wait { .. } => ("retry", true),
        Next::Stop(_) => ("stop", false),
    };
    match handles {
        Some(handles) => handles.failed(kept_name(kept), class, retried),
        None => attempt(&function, outcome, class, code),
    }
    match next {
        Next::Retry(delay) => match kept {
            Some(kept) => kept.handles.delayed(kept.name, delay.as_secs_f64()),
            None => with_live(|recorder| {
                recorder
                    .register_histogram(&delay_key(&function), &METADATA)
                    .record(delay.as_secs_f64())
            }),
        },
        // A hedged attempt that failed while others still run: the call goes on without a
        // wait of its own.
        Next::Wait { .. } => {}
        Next::Stop(reason) => match handles {
            Some(handles) => handles.stopped(kept_name(kept), reason),
            None => stopped(&function, reason, code),
        },
    }
}

fn kept_name(kept: Option<Kept>) -> &'static str {
    kept.map_or("", |k| k.name)
}

/// `retry_kit_attempts_total` for one attempt, its key built now.
fn attempt(
    function: &SharedString,
    outcome: &'static str,
    class: &'static str,
    code: Option<&'static str>,
) {
    let key = attempt_key(function, outcome, class, code);
    with_live(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

fn stopped(function: &SharedString, reason: StopReason, code: Option<&'static str>) {
    let key = stop_key(function, reason, code);
    with_live(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

fn attempt_key(
    function: &SharedString,
    outcome: &'static str,
    class: &'static str,
    code: Option<&'static str>,
) -> Key {
    let mut labels = vec![
        Label::new("fn", function.clone()),
        Label::from_static_parts("outcome", outcome),
        Label::from_static_parts("class", class),
    ];
    if let Some(code) = code {
        labels.push(Label::from_static_parts("code", code));
    }
    Key::from_parts(ATTEMPTS, labels)
}

fn stop_key(function: &SharedString, reason: StopReason, code: Option<&'static str>) -> Key {
    let mut labels = vec![
        Label::new("fn", function.clone()),
        Label::from_static_parts("reason", reason.as_str()),
    ];
    if let Some(code) = code {
        labels.push(Label::from_static_parts("code", code));
    }
    Key::from_parts(STOPS, labels)
}

fn delay_key(function: &SharedString) -> Key {
    Key::from_parts(DELAYS, vec![Label::new("fn", function.clone())])
}

fn hedge_key(function: &SharedString) -> Key {
    Key::from_parts(HEDGES, vec![Label::new("fn", function.clone())])
}

/// A call the breaker refused before its first attempt.
#[cold]
pub(crate) fn refused(resolved: Resolved) {
    let Resolved { function, kept } = resolved;
    match kept {
        Some(kept) => kept.handles.stopped(kept.name, StopReason::CircuitOpen),
        None => stopped(&function, StopReason::CircuitOpen, None),
    }
}

/// A successful attempt of a call named at run time (the builder past the kept names, the
/// layers).
#[inline]
pub(crate) fn succeeded(resolved: Resolved) {
    match resolved {
        Resolved {
            kept: Some(kept), ..
        } => kept.handles.succeeded(kept.success),
        Resolved { function, .. } => attempt(&function, "success", "none", None),
    }
}

/// A hedged call started an attempt beside a slow one.
#[cold]
pub(crate) fn hedged(resolved: Resolved) {
    match resolved {
        Resolved {
            kept: Some(kept), ..
        } => kept.handles.hedged(kept.name),
        Resolved { function, .. } => {
            let key = hedge_key(&function);
            with_live(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
        }
    }
}

/// A hedged call returned while `running` of its attempts had not answered: they were sent, so
/// they are attempts, with their own outcome.
#[cold]
pub(crate) fn cancelled(resolved: Resolved, running: u32) {
    let Resolved { function, .. } = resolved;
    let key = attempt_key(&function, "cancelled", "none", None);
    with_live(|recorder| {
        recorder
            .register_counter(&key, &METADATA)
            .increment(u64::from(running))
    });
}

/// A breaker changed state to `value` (0 closed, 1 half-open, 2 open), or a named one was used
/// for the first time: a `PerKey` entry's series carries its key, so that one host's open
/// breaker is not overwritten by another's closed one. The breaker reports the value: this
/// module does not look inside it.
pub(crate) fn circuit_state(breaker: &'static str, key: Option<&str>, value: f64) {
    let mut labels = vec![Label::from_static_parts("breaker", breaker)];
    if let Some(key) = key {
        labels.push(Label::new("key", key.to_owned()));
    }
    let key = Key::from_parts(CIRCUIT, labels);
    with_live(|recorder| recorder.register_gauge(&key, &METADATA).set(value));
}

/// gRFC A96's per-call histograms of a gRPC call that made more than one attempt: its
/// `counts` of retries, transparent retries and hedges (each recorded only when not 0) and the
/// time it waited with no attempt running (see `tonic::call_metrics`).
#[cfg(feature = "tonic")]
#[cold]
pub(crate) fn grpc_call(method: &str, target: &str, counts: [u32; 3], delay: std::time::Duration) {
    let labels = vec![
        Label::new("grpc.method", method.to_owned()),
        Label::new("grpc.target", target.to_owned()),
    ];
    with_live(|recorder| {
        for (name, count) in [GRPC_RETRIES, GRPC_TRANSPARENT, GRPC_HEDGES]
            .iter()
            .zip(counts)
        {
            if count > 0 {
                let key = Key::from_parts(*name, labels.clone());
                recorder
                    .register_histogram(&key, &METADATA)
                    .record(f64::from(count));
            }
        }
        let key = Key::from_parts(GRPC_DELAY, labels);
        recorder
            .register_histogram(&key, &METADATA)
            .record(delay.as_secs_f64());
    });
}

pub(crate) const ATTEMPTS: &str = "retry_kit_attempts_total";
pub(crate) const DELAYS: &str = "retry_kit_retry_delay_seconds";
pub(crate) const STOPS: &str = "retry_kit_stops_total";
pub(crate) const HEDGES: &str = "retry_kit_hedges_total";
pub(crate) const CIRCUIT: &str = "retry_kit_circuit_state";
pub(crate) const GRPC_RETRIES: &str = "grpc.client.call.retries";
pub(crate) const GRPC_TRANSPARENT: &str = "grpc.client.call.transparent_retries";
pub(crate) const GRPC_HEDGES: &str = "grpc.client.call.hedges";
pub(crate) const GRPC_DELAY: &str = "grpc.client.call.retry_delay";

/// Describe every metric the crate records (`# HELP` and the unit, in Prometheus's exposition)
/// to the current recorder.
///
/// The crate does this by itself the first time it measures anything under a recorder (once
/// per recorder and thread); call it after installing a recorder to have the descriptions
/// before the first call.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// // Once the application's recorder is installed (`PrometheusBuilder::new().install()?`),
/// // its first scrape has every `# HELP` line, before any retried call:
/// retry_kit::meter::describe();
/// ```
pub fn describe() {
    ::metrics::with_recorder(describe_to);
}

/// Describe every metric to `recorder`.
pub(crate) fn describe_to(recorder: &dyn Recorder) {
    let described: [(&str, Option<Unit>, &str, Kind); 9] = [
        (
            ATTEMPTS,
            Some(Unit::Count),
            "Attempts of retried calls, by what came of each: outcome success, retry, stop, or \
             cancelled (a hedge still running when another attempt answered); class of the \
             failure (none for a success); code, the status code of a failed attempt where \
             there is one",
            Kind::Counter,
        ),
        (
            DELAYS,
            Some(Unit::Seconds),
            "The wait before each retry",
            Kind::Histogram,
        ),
        (
            STOPS,
            Some(Unit::Count),
            "Calls that gave up, by reason (and code, where the last attempt had a status)",
            Kind::Counter,
        ),
        (
            HEDGES,
            Some(Unit::Count),
            "Attempts a hedged call started beside a slow one",
            Kind::Counter,
        ),
        (
            CIRCUIT,
            None,
            "Circuit breaker state: 0 closed, 1 half-open, 2 open",
            Kind::Gauge,
        ),
        // gRFC A96's (the gRPC layer's calls).
        (
            GRPC_RETRIES,
            Some(Unit::Count),
            "Retries of one gRPC client call (calls without one are not recorded)",
            Kind::Histogram,
        ),
        (
            GRPC_TRANSPARENT,
            Some(Unit::Count),
            "Transparent retries of one gRPC client call: after an attempt that never reached \
             the server (calls without one are not recorded)",
            Kind::Histogram,
        ),
        (
            GRPC_HEDGES,
            Some(Unit::Count),
            "Hedges of one gRPC client call (calls without one are not recorded)",
            Kind::Histogram,
        ),
        (
            GRPC_DELAY,
            Some(Unit::Seconds),
            "Time one gRPC client call waited with no attempt running",
            Kind::Histogram,
        ),
    ];
    for (name, unit, text, kind) in described {
        let name = ::metrics::KeyName::from_const_str(name);
        let text = SharedString::const_str(text);
        match kind {
            Kind::Counter => recorder.describe_counter(name, unit, text),
            Kind::Gauge => recorder.describe_gauge(name, unit, text),
            Kind::Histogram => recorder.describe_histogram(name, unit, text),
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}
