//! The attempt spans through an OpenTelemetry pipeline, as a collector receives them:
//! tracing-opentelemetry's layer into the SDK's tracer with its in-memory exporter. Each resend
//! is a CLIENT span named as OpenTelemetry's HTTP conventions name it (`GET`), a child of the
//! caller's span, with `http.request.resend_count` as an integer and `error.type` when it
//! failed; each gRPC attempt after the first is A72's `Attempt.<service>.<method>` with
//! `grpc.previous-rpc-attempts`. Against real hyper and tonic servers on 127.0.0.1.
#![cfg(all(feature = "tracing", feature = "tower", feature = "tonic"))]
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
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use retry_kit::tonic::GrpcRetryLayer;
use retry_kit::tower::HttpRetryLayer;
use retry_kit::{RetryPolicy, testing};
use std::time::Duration;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;
use tower_layer::Layer;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// A pipeline into an in-memory exporter, the thread's subscriber while the guard lives.
fn pipeline() -> (
    SdkTracerProvider,
    InMemorySpanExporter,
    tracing::subscriber::DefaultGuard,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("retry-kit-tests"));
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    (provider, exporter, guard)
}

/// Every span exported, once the provider has flushed.
fn exported(provider: &SdkTracerProvider, exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)
}

#[tokio::test(flavor = "current_thread")]
async fn each_resend_is_an_exported_client_span_under_the_callers() {
    let (addr, _) = loopback::serve(|n| match n {
        1 | 2 => (StatusCode::SERVICE_UNAVAILABLE, None),
        _ => (StatusCode::OK, None),
    })
    .await;
    let (provider, exporter, guard) = pipeline();
    let mut client =
        HttpRetryLayer::new(policy()).layer(Client::builder(TokioExecutor::new()).build_http());
    let get = Request::get(format!("http://{addr}/stock"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let call = client.call(get).instrument(tracing::info_span!("checkout"));
    let (answer, _) = testing::record_sleeps_async(call).await;
    assert_eq!(answer.unwrap().status(), StatusCode::OK);
    drop(guard);

    let spans = exported(&provider, &exporter);
    let checkout = spans
        .iter()
        .find(|s| s.name == "checkout")
        .expect("the caller's span");
    let mut resends: Vec<&SpanData> = spans.iter().filter(|s| s.name == "GET").collect();
    resends.sort_by_key(|s| s.start_time);
    assert_eq!(
        resends.len(),
        2,
        "one per attempt after the first: {spans:#?}"
    );
    for (n, span) in resends.iter().enumerate() {
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(span.parent_span_id, checkout.span_context.span_id());
        assert_eq!(
            span.span_context.trace_id(),
            checkout.span_context.trace_id()
        );
        assert_eq!(
            attribute(span, "http.request.resend_count"),
            Some(&Value::I64(n as i64 + 1))
        );
        assert_eq!(
            attribute(span, "http.request.method"),
            Some(&Value::from("GET"))
        );
        assert_eq!(
            attribute(span, "server.port"),
            Some(&Value::I64(i64::from(addr.port())))
        );
    }
    assert_eq!(
        attribute(resends[0], "error.type"),
        Some(&Value::from("503"))
    );
    assert_eq!(
        attribute(resends[0], "http.response.status_code"),
        Some(&Value::I64(503))
    );
    assert_eq!(attribute(resends[1], "error.type"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn each_grpc_attempt_after_the_first_is_an_exported_a72_attempt_span() {
    let (addr, _) = grpc_server::serve(|n, _| match n {
        1 | 2 => Act::Status(Code::Unavailable, None),
        _ => Act::Pass,
    })
    .await;
    let (provider, exporter, guard) = pipeline();
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
    drop(guard);

    let spans = exported(&provider, &exporter);
    let checkout = spans
        .iter()
        .find(|s| s.name == "checkout")
        .expect("the caller's span");
    let mut attempts: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "Attempt.grpc.health.v1.Health.Check")
        .collect();
    attempts.sort_by_key(|s| s.start_time);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    for (n, span) in attempts.iter().enumerate() {
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(span.parent_span_id, checkout.span_context.span_id());
        assert_eq!(
            attribute(span, "grpc.previous-rpc-attempts"),
            Some(&Value::I64(n as i64 + 1))
        );
        assert_eq!(
            attribute(span, "rpc.method"),
            Some(&Value::from("grpc.health.v1.Health/Check"))
        );
    }
    assert_eq!(
        attribute(attempts[0], "error.type"),
        Some(&Value::from("UNAVAILABLE"))
    );
    assert_eq!(attribute(attempts[1], "error.type"), None);
}
