//! What a dashboard gets: the `metrics` feature under a real Prometheus exporter
//! (metrics-exporter-prometheus, its HTTP listener on 127.0.0.1), scraped over HTTP after calls
//! through the gRPC layer to a real tonic server (and to a port where nothing listens) and
//! through `HttpRetryLayer` to a real hyper server: the crate's `retry_kit_*` families, and
//! gRFC A96's `grpc.client.call.*` histograms from the gRPC layer. The scrape is the one `retry_kit::meter`'s docs show (`retry-runtime/src/meter/
//! scrape.txt`): this test fails when they differ, and `SCRAPE=overwrite` writes it anew.
//!
//! One test in its own binary: the exporter is the process's global recorder.
#![cfg(all(feature = "metrics", feature = "tonic", feature = "tower"))]
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
use metrics_exporter_prometheus::PrometheusBuilder;
use retry_kit::tonic::GrpcRetryLayer;
use retry_kit::tower::HttpRetryLayer;
use retry_kit::{CircuitBreaker, RetryPolicy, testing};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;
use tower_layer::Layer;

/// Where the docs keep the scrape.
const SCRAPE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../retry-runtime/src/meter/scrape.txt"
);

/// One breaker for the gRPC backend, named: listed from its first use.
static BACKEND: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30)).name("health");

/// `Check` is hedged after 20 ms (its first attempt hangs; the hedge answers); `Watch` is
/// retried on `UNAVAILABLE` (its first attempt is refused).
const SERVICE_CONFIG: &str = r#"{"methodConfig": [
    {"name": [{"service": "grpc.health.v1.Health", "method": "Check"}],
     "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.02s",
                       "nonFatalStatusCodes": ["UNAVAILABLE"]}},
    {"name": [{"service": "grpc.health.v1.Health", "method": "Watch"}],
     "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                     "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}
]}"#;

/// The families this test shows.
fn shown(name: &str) -> bool {
    name.starts_with("retry_kit_") || name.starts_with("grpc_client_call_")
}

/// The scrape's `retry_kit_*` and `grpc_client_call_*` families, each with its `# HELP` and `# TYPE` lines first and its
/// series sorted (the exporter lists series in no fixed order), and every loopback port written
/// `PORT`.
fn retry_kit_families(scrape: &str, ports: &[u16]) -> String {
    let mut families: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for line in scrape.lines() {
        let mut line = line.to_owned();
        for port in ports {
            line = line.replace(&format!("127.0.0.1:{port}"), "127.0.0.1:PORT");
        }
        let (head, name) = match line.strip_prefix("# ") {
            Some(rest) => (true, rest.split_whitespace().nth(1).unwrap_or_default()),
            None => (false, line.split(['{', ' ']).next().unwrap_or_default()),
        };
        if !shown(name) {
            continue;
        }
        // A summary's series are `name`, `name_sum`, `name_count`: one family.
        let family = ["_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .filter(|base| scrape.contains(&format!("# TYPE {base} summary")))
            .unwrap_or(name)
            .to_owned();
        let entry = families.entry(family).or_default();
        if head { &mut entry.0 } else { &mut entry.1 }.push(line);
    }
    let mut out = String::new();
    for (_, (mut heads, mut series)) in families {
        heads.sort(); // `# HELP` before `# TYPE`
        series.sort();
        for line in heads.into_iter().chain(series) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "current_thread")]
async fn a_scrape_names_each_rpc_and_host_and_says_why_it_retried() {
    let exporter: SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    PrometheusBuilder::new()
        .with_http_listener(exporter)
        .install()
        .expect("the Prometheus exporter starts");
    // The `retryPolicy`'s waits are jittered by A6's factor: seeded, so the scrape is the same
    // on every run (the layer runs on this thread).
    testing::seed_jitter(7);

    // gRPC: Check's first attempt hangs and is hedged; Watch's first is refused.
    let (grpc, log) = grpc_server::serve(|n, path| match (n, path.ends_with("/Check")) {
        (1, true) => Act::Hang,
        (3, false) => Act::Status(Code::Unavailable, None),
        _ => Act::Pass,
    })
    .await;
    let layer = GrpcRetryLayer::from_service_config(SERVICE_CONFIG)
        .unwrap()
        .circuit(&BACKEND)
        .origin(format!("http://{grpc}").parse().unwrap());
    let mut client = HealthClient::new(
        ServiceBuilder::new()
            .layer(layer)
            .service(channel(grpc).await),
    );
    let request = || HealthCheckRequest {
        service: SERVICE.to_owned(),
    };
    client.check(request()).await.expect("the hedge answers");
    log.cancelled(1).await;
    let mut watch = client.watch(request()).await.expect("the retry answers");
    watch.get_mut().message().await.unwrap().expect("a status");
    drop(watch);

    // gRPC to a port where nothing listens: each attempt fails before anything is sent, so
    // each retry is a transparent one (A6), whatever the codes the policy lists.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let nowhere = tonic::transport::Endpoint::from_shared(format!("http://{refused}"))
        .unwrap()
        .connect_lazy();
    // `.otel_names()` says in code what the gRPC layer does by default: A96's histograms.
    let layer =
        GrpcRetryLayer::new(RetryPolicy::fixed(Duration::from_millis(1)).attempts(3)).otel_names();
    let mut unreachable = HealthClient::new(ServiceBuilder::new().layer(layer).service(nowhere));
    let refusal = unreachable.check(request()).await.unwrap_err();
    assert_eq!(refusal.code(), Code::Unavailable, "{refusal:?}");

    // HTTP: a 503, then a 200, through a layer with no name.
    let (http, _) = loopback::serve(|n| match n {
        1 => (StatusCode::SERVICE_UNAVAILABLE, None),
        _ => (StatusCode::OK, None),
    })
    .await;
    let mut hyper = HttpRetryLayer::new(RetryPolicy::fixed(Duration::from_millis(10)).attempts(3))
        .layer(Client::builder(TokioExecutor::new()).build_http());
    let get = Request::get(format!("http://{http}/stock"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(hyper.call(get).await.unwrap().status(), StatusCode::OK);

    let scrape = reqwest::get(format!("http://{exporter}/metrics"))
        .await
        .expect("the exporter answers")
        .text()
        .await
        .unwrap();
    let families = retry_kit_families(&scrape, &[http.port(), grpc.port(), refused.port()]);

    // What the issue could not read from the crate's telemetry, line by line.
    for line in [
        // Which RPC: each method its own series, the hedge beaten by the other attempt counted.
        r#"retry_kit_attempts_total{fn="/grpc.health.v1.Health/Check",outcome="success",class="none"} 1"#,
        r#"retry_kit_attempts_total{fn="/grpc.health.v1.Health/Check",outcome="cancelled",class="none"} 1"#,
        r#"retry_kit_hedges_total{fn="/grpc.health.v1.Health/Check"} 1"#,
        // ... and why: the status code.
        r#"retry_kit_attempts_total{fn="/grpc.health.v1.Health/Watch",outcome="retry",class="transient",code="UNAVAILABLE"} 1"#,
        r#"retry_kit_attempts_total{fn="127.0.0.1:PORT",outcome="retry",class="transient",code="503"} 1"#,
        // A breaker that never changed state is listed.
        r#"retry_kit_circuit_state{breaker="health"} 0"#,
        // gRFC A96, per call: Check was hedged once, Watch retried once, the unreachable
        // server's Check retried transparently twice.
        r#"grpc_client_call_hedges_count{grpc_method="grpc.health.v1.Health/Check",grpc_target="127.0.0.1:PORT"} 1"#,
        r#"grpc_client_call_retries_sum{grpc_method="grpc.health.v1.Health/Watch",grpc_target="127.0.0.1:PORT"} 1"#,
        r#"grpc_client_call_transparent_retries_sum{grpc_method="grpc.health.v1.Health/Check",grpc_target="other"} 2"#,
        r#"grpc_client_call_retry_delay_count{grpc_method="grpc.health.v1.Health/Watch",grpc_target="127.0.0.1:PORT"} 1"#,
        "# HELP retry_kit_attempts_total Attempts of retried calls",
        "# HELP retry_kit_circuit_state Circuit breaker state: 0 closed, 1 half-open, 2 open",
    ] {
        assert!(
            families.lines().any(|l| l.starts_with(line)),
            "no line {line:?} in the scrape:\n{families}"
        );
    }
    // A96 records no 0: the retried Watch has no hedges series, the hedged Check no retries.
    for absent in [
        r#"grpc_client_call_hedges_count{grpc_method="grpc.health.v1.Health/Watch""#,
        r#"grpc_client_call_retries_count{grpc_method="grpc.health.v1.Health/Check""#,
    ] {
        assert!(!families.contains(absent), "{absent} in:\n{families}");
    }
    for family in [
        "retry_kit_attempts_total",
        "retry_kit_hedges_total",
        "retry_kit_retry_delay_seconds",
        "retry_kit_stops_total",
        "retry_kit_circuit_state",
        "grpc_client_call_retries",
        "grpc_client_call_transparent_retries",
        "grpc_client_call_hedges",
        "grpc_client_call_retry_delay",
    ] {
        assert!(
            families.contains(&format!("# HELP {family} ")),
            "{family} is not described:\n{families}"
        );
    }

    if std::env::var_os("SCRAPE").is_some_and(|v| v == "overwrite") {
        std::fs::write(SCRAPE, &families).unwrap();
    }
    let documented = std::fs::read_to_string(SCRAPE).unwrap_or_default();
    assert_eq!(
        families, documented,
        "the scrape differs from the one the docs show ({SCRAPE}); \
         run with SCRAPE=overwrite and read the diff"
    );
}
