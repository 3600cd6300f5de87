//! The `tracing` feature's attempt spans, as a real subscriber sees them: tracing-subscriber's
//! registry (which keeps each span's parent) with a layer that records every span and its
//! fields, and its fmt layer, what a user reads. Every attempt after the first runs in a span
//! of its own inside the caller's span, carrying OpenTelemetry's `http.request.resend_count`
//! (HTTP layer, middleware) or A72's `grpc.previous-rpc-attempts` (gRPC layer); a failed one
//! carries `error.type`. Against real servers on 127.0.0.1: hyper, reqwest's, tonic.
#![cfg(all(
    feature = "tracing",
    feature = "tower",
    feature = "tonic",
    feature = "reqwest-middleware"
))]
#![deny(warnings, unused_qualifications)]

// Shared with the other test files, which use what this one does not.
#[allow(dead_code)]
mod grpc_server;
mod loopback;

use grpc_server::{Act, SERVICE, channel};
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_kit::reqwest_middleware::RetryMiddleware;
use retry_kit::tonic::GrpcRetryLayer;
use retry_kit::tower::HttpRetryLayer;
use retry_kit::{RetryPolicy, testing};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;
use tower_layer::Layer;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Instrument, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as the registry saw it: its name, its parent's name, its fields as recorded.
#[derive(Clone, Debug, Default)]
struct Seen {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Records every span, in the order they were made, and the order in which spans closed and
/// the crate's failure events came.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(Id, Seen)>>>, Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|span| span.parent().map(|p| p.name().to_owned())),
            fields: BTreeMap::new(),
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().unwrap().push((id.clone(), seen));
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let spans = self.0.lock().unwrap();
        if let Some((_, seen)) = spans.iter().find(|(i, _)| *i == id) {
            let count = seen.field("http.request.resend_count").unwrap_or("-");
            self.1
                .lock()
                .unwrap()
                .push(format!("close {} {count}", seen.name));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "retry_kit" {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            let attempt = fields.get("attempt").cloned().unwrap_or_default();
            self.1.lock().unwrap().push(format!("failed {attempt}"));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, seen)) = spans.iter_mut().find(|(i, _)| i == id) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
}

impl Spans {
    /// The spans the crate made (target `retry_kit`), in order.
    fn named(&self, name: &str) -> Vec<Seen> {
        let spans = self.0.lock().unwrap();
        spans
            .iter()
            .map(|(_, seen)| seen.clone())
            .filter(|seen| seen.name == name)
            .collect()
    }
}

/// What the fmt layer wrote.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl io::Write for Written {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Written {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A registry with the recording layer and a fmt layer (DEBUG and up, no colours), the
/// thread's default while the guard lives.
fn subscribe() -> (Spans, Written, tracing::subscriber::DefaultGuard) {
    let (spans, written) = (Spans::default(), Written::default());
    let out = written.clone();
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .without_time()
        .with_writer(move || out.clone());
    let subscriber = tracing_subscriber::registry()
        .with(spans.clone())
        .with(fmt)
        .with(LevelFilter::DEBUG);
    let guard = tracing::subscriber::set_default(subscriber);
    (spans, written, guard)
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)
}

/// Two 503s, then 200.
fn busy_twice(n: usize) -> (StatusCode, Option<&'static str>) {
    match n {
        1 | 2 => (StatusCode::SERVICE_UNAVAILABLE, None),
        _ => (StatusCode::OK, None),
    }
}

/// The HTTP resend spans of a request answered 503, 503, 200 to `port`: two, inside the
/// caller's span, counting resends from 1; the first resend failed with the status.
fn assert_two_resends(spans: &Spans, port: u16) {
    let resends = spans.named("resend");
    assert_eq!(
        resends.len(),
        2,
        "one per attempt after the first: {resends:?}"
    );
    let port = port.to_string();
    for (n, span) in resends.iter().enumerate() {
        assert_eq!(span.parent.as_deref(), Some("checkout"), "{span:?}");
        let count = (n + 1).to_string();
        assert_eq!(
            span.field("http.request.resend_count"),
            Some(count.as_str())
        );
        assert_eq!(span.field("http.request.method"), Some("GET"));
        assert_eq!(span.field("server.address"), Some("127.0.0.1"));
        assert_eq!(span.field("server.port"), Some(port.as_str()));
        assert_eq!(span.field("otel.name"), Some("GET"));
    }
    assert_eq!(resends[0].field("error.type"), Some("503"));
    assert_eq!(resends[0].field("http.response.status_code"), Some("503"));
    assert_eq!(
        resends[1].field("error.type"),
        None,
        "the last attempt was answered"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn each_resend_of_the_http_layer_is_a_span_inside_the_callers() {
    let (addr, _) = loopback::serve(busy_twice).await;
    let (spans, written, _guard) = subscribe();
    let mut client =
        HttpRetryLayer::new(policy()).layer(Client::builder(TokioExecutor::new()).build_http());
    let get = Request::get(format!("http://{addr}/stock"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let call = client.call(get).instrument(tracing::info_span!("checkout"));
    let (answer, _) = testing::record_sleeps_async(call).await;
    assert_eq!(answer.unwrap().status(), StatusCode::OK);
    assert_two_resends(&spans, addr.port());
    // What a user reads: the second attempt's failure event, inside the caller's span, with
    // the host, the status and the error.
    let text = written.text();
    let failed = text
        .lines()
        .find(|l| l.contains("attempt failed; retrying") && l.contains("attempt=2"))
        .unwrap_or_else(|| panic!("no event for attempt 2 in:\n{text}"));
    assert!(
        failed.contains(&format!("fn=\"127.0.0.1:{}\"", addr.port())),
        "{failed}"
    );
    assert!(failed.contains("code=\"503\""), "{failed}");
    assert!(failed.contains("error=HTTP status 503"), "{failed}");
    assert!(failed.contains("checkout"), "{failed}");
    // A failed resend's span ends with its attempt, before the event that says what follows
    // (and so before the wait): it does not last until the next attempt.
    let order = spans.1.lock().unwrap().clone();
    let closed = order.iter().position(|e| e == "close resend 1");
    let reported = order.iter().position(|e| e == "failed 2");
    assert!(
        closed.is_some() && closed < reported,
        "resend 1 closed before attempt 2's failure was reported: {order:?}"
    );
    if std::env::var_os("SHOW_FMT").is_some() {
        println!("{text}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_resend_of_the_middleware_is_a_span_inside_the_callers() {
    let (addr, _) = loopback::serve(busy_twice).await;
    let (spans, _written, _guard) = subscribe();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()))
        .build();
    let call = client
        .get(format!("http://{addr}/stock"))
        .send()
        .instrument(tracing::info_span!("checkout"));
    let (answer, _) = testing::record_sleeps_async(call).await;
    assert_eq!(answer.unwrap().status(), StatusCode::OK);
    assert_two_resends(&spans, addr.port());
}

#[tokio::test(flavor = "current_thread")]
async fn each_grpc_attempt_after_the_first_is_a_span_with_previous_rpc_attempts() {
    // Two refusals, then the health service answers.
    let (addr, log) = grpc_server::serve(|n, _| match n {
        1 | 2 => Act::Status(Code::Unavailable, None),
        _ => Act::Pass,
    })
    .await;
    let (spans, _written, _guard) = subscribe();
    let layer = GrpcRetryLayer::new(policy());
    let mut client = HealthClient::new(
        ServiceBuilder::new()
            .layer(layer)
            .service(channel(addr).await),
    );
    let request = HealthCheckRequest {
        service: SERVICE.to_owned(),
    };
    let answer = client
        .check(request)
        .instrument(tracing::info_span!("checkout"))
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(log.requests(), 3);
    let attempts = spans.named("attempt");
    assert_eq!(
        attempts.len(),
        2,
        "one per attempt after the first: {attempts:?}"
    );
    for (n, span) in attempts.iter().enumerate() {
        assert_eq!(span.parent.as_deref(), Some("checkout"), "{span:?}");
        let previous = (n + 1).to_string();
        assert_eq!(
            span.field("grpc.previous-rpc-attempts"),
            Some(previous.as_str())
        );
        assert_eq!(
            span.field("rpc.method"),
            Some("grpc.health.v1.Health/Check")
        );
        assert_eq!(
            span.field("otel.name"),
            Some("Attempt.grpc.health.v1.Health.Check")
        );
    }
    assert_eq!(attempts[0].field("error.type"), Some("UNAVAILABLE"));
    assert_eq!(
        attempts[1].field("error.type"),
        None,
        "the last attempt was answered"
    );
}

/// The span per attempt only when a subscriber wants it: one that turns the crate's target
/// off gets none, though the request was resent twice.
#[tokio::test(flavor = "current_thread")]
async fn no_span_is_made_for_a_subscriber_that_does_not_want_the_crates() {
    let (addr, seen) = loopback::serve(busy_twice).await;
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone()).with(
        Targets::new()
            .with_default(LevelFilter::TRACE)
            .with_target("retry_kit", LevelFilter::OFF),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut client =
        HttpRetryLayer::new(policy()).layer(Client::builder(TokioExecutor::new()).build_http());
    let get = Request::get(format!("http://{addr}/stock"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let call = client.call(get).instrument(tracing::info_span!("checkout"));
    let (answer, _) = testing::record_sleeps_async(call).await;
    assert_eq!(answer.unwrap().status(), StatusCode::OK);
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert!(spans.named("resend").is_empty());
    assert_eq!(
        spans.named("checkout").len(),
        1,
        "the subscriber saw the caller's span"
    );
}
