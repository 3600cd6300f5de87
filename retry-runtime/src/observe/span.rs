//! [`AttemptSpan`]: with the `tracing` feature, the span every attempt after the first runs in,
//! inside the call's span (the caller's current span), as OpenTelemetry's HTTP conventions give
//! every resend its own span and gRPC's A72 every attempt. Made only when a subscriber wants it
//! (`info_span!` asks the subscriber first), and never for a first attempt: a call answered at
//! once makes none. Without the feature, a type of no size and functions that do nothing.
//!
//! | span | fields | from |
//! | --- | --- | --- |
//! | `resend` (HTTP layers, middleware) | `http.request.resend_count` (1 on the second attempt), `http.request.method`, `server.address`, `server.port`; on failure `error.type`, and `http.response.status_code` when the server answered | OpenTelemetry HTTP conventions (stable) |
//! | `attempt` (gRPC layer) | `grpc.previous-rpc-attempts` (1 on the second attempt), `rpc.method` (`pkg.Service/Method`); on failure `error.type` (the code's name) | gRFC A72 (`previous-rpc-attempts`, under the `grpc.` prefix the SPEC gives it); OpenTelemetry RPC conventions |
//! | both | `otel.name` (`GET`, A72's `Attempt.pkg.Service.Method`), `otel.kind = "client"` | the names `tracing-opentelemetry` reads for the exported span's name and kind |
//!
//! `error.type` is the status code where there is one (`"503"`, `"UNAVAILABLE"`), else the
//! failure's class (`"transient"`, `"idempotent_only"`, ...). Integers are recorded as
//! integers: through tracing-opentelemetry a resend exports as a `CLIENT` span named `GET`, a
//! child of the caller's, with `http.request.resend_count` an int, as a collector expects
//! (`tests/integration/tests/otel.rs` checks it through the SDK's in-memory exporter).
//!
//! What tracing-subscriber's fmt layer prints for a GET answered 503, 503, 200 through
//! [`HttpRetryLayer`](crate::tower::HttpRetryLayer) over hyper-util's client, called inside a
//! span `checkout` (`tests/integration/tests/spans.rs` makes this call against a real server
//! and asserts each field; lines shortened): the client's own events of the second and third
//! attempts sit in their resend spans, and the failure events, in the caller's span, say which
//! host failed and why.
//!
//! ```text
//! DEBUG checkout: hyper_util::client::legacy::connect::http: connecting to 127.0.0.1:8080
//! DEBUG checkout: retry_kit: attempt failed; retrying fn="127.0.0.1:8080" attempt=1 class="transient" code="503" next="retry" delay_ms=10 elapsed_ms=0 error=HTTP status 503 Service Unavailable
//! DEBUG checkout:resend{otel.name="GET" otel.kind="client" http.request.method="GET" server.address="127.0.0.1" server.port=8080 http.request.resend_count=1}: hyper_util::client::legacy::pool: reuse idle connection for ("http", 127.0.0.1:8080)
//! DEBUG checkout: retry_kit: attempt failed; retrying fn="127.0.0.1:8080" attempt=2 class="transient" code="503" next="retry" delay_ms=10 elapsed_ms=10 error=HTTP status 503 Service Unavailable
//! DEBUG checkout:resend{otel.name="GET" otel.kind="client" http.request.method="GET" server.address="127.0.0.1" server.port=8080 http.request.resend_count=2}: hyper_util::client::legacy::pool: reuse idle connection for ("http", 127.0.0.1:8080)
//! ```

// Without `tracing` these are the no-ops the front ends call; which of them a build calls
// depends on its front ends.
#![cfg_attr(not(feature = "tracing"), allow(dead_code))]

#[cfg(all(
    feature = "tracing",
    any(feature = "tonic", feature = "reqwest-middleware")
))]
use std::future::Future;

/// The span an attempt after the first runs in (see the [module](self)): a `tracing::Span`
/// with the `tracing` feature (disabled for a first attempt, or when no subscriber wants it),
/// nothing without it.
#[cfg(feature = "tracing")]
pub type AttemptSpan = tracing::Span;

/// The span an attempt after the first runs in: nothing without the `tracing` feature.
#[cfg(not(feature = "tracing"))]
#[derive(Clone, Debug, Default)]
pub struct AttemptSpan;

/// No span: a first attempt's.
#[cfg(any(
    feature = "tonic",
    any(
        feature = "reqwest-middleware",
        all(feature = "tower", feature = "http")
    )
))]
#[inline(always)]
pub(crate) fn none() -> AttemptSpan {
    #[cfg(feature = "tracing")]
    {
        tracing::Span::none()
    }
    #[cfg(not(feature = "tracing"))]
    AttemptSpan
}

// Integers are recorded as `i64`: OpenTelemetry's attributes are signed, and
// tracing-opentelemetry turns any other integer into text (`"1"` where the conventions say
// int), which tests/integration/tests/otel.rs found.

/// The span of an HTTP attempt that follows `resends` earlier ones (none for the first), to
/// `host:port` with `method`.
#[cfg(any(
    feature = "reqwest-middleware",
    all(feature = "tower", feature = "http")
))]
#[inline]
pub(crate) fn http_resend(
    resends: u32,
    method: Option<&::http::Method>,
    authority: impl FnOnce() -> crate::authority::Authority,
) -> AttemptSpan {
    #[cfg(feature = "tracing")]
    if resends > 0 {
        return http_resend_span(resends, method, authority);
    }
    let _ = (resends, method, authority);
    none()
}

#[cfg(all(
    feature = "tracing",
    any(
        feature = "reqwest-middleware",
        all(feature = "tower", feature = "http")
    )
))]
#[cold]
#[inline(never)]
fn http_resend_span(
    resends: u32,
    method: Option<&::http::Method>,
    authority: impl FnOnce() -> crate::authority::Authority,
) -> AttemptSpan {
    let method = method.map_or("", ::http::Method::as_str);
    let authority = authority();
    let text = authority.as_str();
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().ok()),
        None => (text, None),
    };
    tracing::info_span!(
        target: "retry_kit",
        "resend",
        "otel.name" = method,
        "otel.kind" = "client",
        "http.request.method" = method,
        "server.address" = host,
        "server.port" = port.map(i64::from),
        "http.request.resend_count" = i64::from(resends),
        "http.response.status_code" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    )
}

/// The span of a gRPC attempt that follows `previous` earlier ones (none for the first), of the
/// method at `path` (`/pkg.Service/Method`).
#[cfg(feature = "tonic")]
#[inline]
pub(crate) fn grpc_attempt(previous: u32, path: &str) -> AttemptSpan {
    #[cfg(feature = "tracing")]
    if previous > 0 {
        return grpc_attempt_span(previous, path);
    }
    let _ = (previous, path);
    none()
}

#[cfg(all(feature = "tonic", feature = "tracing"))]
#[cold]
fn grpc_attempt_span(previous: u32, path: &str) -> AttemptSpan {
    let method = path.strip_prefix('/').unwrap_or(path);
    tracing::info_span!(
        target: "retry_kit",
        "attempt",
        "otel.name" = %format_args!("Attempt.{}", method.replace('/', ".")),
        "otel.kind" = "client",
        "rpc.method" = method,
        "grpc.previous-rpc-attempts" = i64::from(previous),
        "error.type" = tracing::field::Empty,
    )
}

/// The attempt in `span` failed: `error.type` (a status code, else the class) and, for an
/// HTTP answer, its status.
#[cfg(any(
    feature = "tonic",
    any(
        feature = "reqwest-middleware",
        all(feature = "tower", feature = "http")
    )
))]
#[inline]
#[cfg_attr(
    not(any(feature = "tracing", feature = "tonic", feature = "reqwest-middleware")),
    allow(dead_code)
)]
pub(crate) fn failed(span: &AttemptSpan, error_type: &'static str, status: Option<u16>) {
    #[cfg(feature = "tracing")]
    if !span.is_none() {
        span.record("error.type", error_type);
        if let Some(status) = status {
            span.record("http.response.status_code", i64::from(status));
        }
    }
    let _ = (span, error_type, status);
}

/// `attempt`, run in `span` (every poll entered in it): `tracing`'s `Instrumented` with the
/// feature, the attempt itself without it.
#[cfg(all(
    feature = "tracing",
    any(feature = "tonic", feature = "reqwest-middleware")
))]
pub(crate) type InSpan<F> = tracing::instrument::Instrumented<F>;

/// `attempt` itself: without the `tracing` feature there is no span to run it in.
#[cfg(all(
    not(feature = "tracing"),
    any(feature = "tonic", feature = "reqwest-middleware")
))]
pub(crate) type InSpan<F> = F;

/// Run `attempt` in `span`.
#[inline(always)]
#[cfg(all(
    feature = "tracing",
    any(feature = "tonic", feature = "reqwest-middleware")
))]
pub(crate) fn in_span<F: Future>(attempt: F, span: AttemptSpan) -> InSpan<F> {
    tracing::Instrument::instrument(attempt, span)
}

/// Run `attempt` in `span`: without the `tracing` feature, the attempt itself.
#[inline(always)]
#[cfg(all(
    not(feature = "tracing"),
    any(feature = "tonic", feature = "reqwest-middleware")
))]
pub(crate) fn in_span<F>(attempt: F, span: AttemptSpan) -> InSpan<F> {
    let _ = span;
    attempt
}

/// An attempt's span as a hand-written future keeps it (the tower layer's, beside its state):
/// boxed, and only when a subscriber wants it, so that an attempt with none (every first
/// attempt) costs the future one null pointer, not a whole span.
/// Nothing without the `tracing` feature.
#[cfg(all(feature = "tower", feature = "http"))]
#[derive(Debug)]
pub(crate) struct KeptSpan {
    #[cfg(feature = "tracing")]
    span: Option<Box<tracing::Span>>,
}

#[cfg(all(feature = "tower", feature = "http"))]
impl KeptSpan {
    /// Whether a span is ever kept (the `tracing` feature).
    pub(crate) const MADE: bool = cfg!(feature = "tracing");

    /// No span.
    #[inline(always)]
    pub(crate) const fn none() -> Self {
        KeptSpan {
            #[cfg(feature = "tracing")]
            span: None,
        }
    }

    /// The span of an HTTP attempt that follows `resends` earlier ones (see [`http_resend`]),
    /// kept if a subscriber wants it. Out of line: only resends make one.
    #[cold]
    #[inline(never)]
    pub(crate) fn resend(
        resends: u32,
        method: &::http::Method,
        authority: impl FnOnce() -> crate::authority::Authority,
    ) -> Self {
        let span = http_resend(resends, Some(method), authority);
        #[cfg(feature = "tracing")]
        {
            KeptSpan {
                span: (!span.is_disabled()).then(|| Box::new(span)),
            }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = span;
            KeptSpan::none()
        }
    }

    /// Enter the span for one step of the attempt (a poll), until the guard is dropped.
    #[inline(always)]
    pub(crate) fn enter(&self) -> Entered<'_> {
        Entered {
            #[cfg(feature = "tracing")]
            _entered: self.span.as_deref().map(tracing::Span::enter),
            _span: std::marker::PhantomData,
        }
    }

    /// The attempt is over: its span ends now.
    #[cold]
    pub(crate) fn end(&mut self) {
        *self = KeptSpan::none();
    }

    /// The attempt failed (see [`failed`]).
    #[cold]
    pub(crate) fn failed(&self, error_type: &'static str, status: Option<u16>) {
        #[cfg(feature = "tracing")]
        if let Some(span) = &self.span {
            failed(span, error_type, status);
        }
        let _ = (error_type, status);
    }
}

/// A [`KeptSpan`] entered for one step: left when dropped.
#[cfg(all(feature = "tower", feature = "http"))]
pub(crate) struct Entered<'s> {
    #[cfg(feature = "tracing")]
    _entered: Option<tracing::span::Entered<'s>>,
    _span: std::marker::PhantomData<&'s KeptSpan>,
}
