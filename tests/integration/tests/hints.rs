//! Every wait hint a server sends, read by both HTTP front ends against a real HTTP/1.1 server on
//! 127.0.0.1: `Retry-After`, `retry-after-ms`, `x-ms-retry-after-ms` and the IETF RateLimit
//! draft's `RateLimit`, in the SPEC's order, malformed ones ignored. Every wait is virtual
//! (`testing::record_sleeps_async`); the policy's own backoff is 10 ms, so a longer wait is the
//! server's.
#![cfg(all(feature = "tower", feature = "reqwest-middleware"))]
#![deny(warnings, unused_qualifications)]
#![allow(dead_code)] // `loopback` serves the other front-end tests too.

mod loopback;
use loopback::{Answer, serve_answers};

use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_kit::reqwest_middleware::RetryMiddleware;
use retry_kit::tower::HttpRetryLayer;
use retry_kit::{RetryPolicy, testing};
use std::time::Duration;
use tower_layer::Layer;

const MS: fn(u64) -> Duration = Duration::from_millis;
const UNAVAILABLE: StatusCode = StatusCode::SERVICE_UNAVAILABLE;

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(MS(10))
        .max_delay(Duration::from_secs(60))
        .attempts(3)
}

/// Each case: the first answer (a 503 with these headers), then 200; the wait before the second
/// attempt.
const CASES: &[(&str, &[Answer], Duration)] = &[
    (
        "Retry-After",
        &[(UNAVAILABLE, &[("retry-after", "2")])],
        Duration::from_secs(2),
    ),
    (
        "retry-after-ms",
        &[(UNAVAILABLE, &[("retry-after-ms", "1500")])],
        Duration::from_millis(1500),
    ),
    (
        "x-ms-retry-after-ms",
        &[(UNAVAILABLE, &[("x-ms-retry-after-ms", "250")])],
        Duration::from_millis(250),
    ),
    (
        "RateLimit, quota exhausted",
        &[(UNAVAILABLE, &[("ratelimit", "\"default\";r=0;t=3")])],
        Duration::from_secs(3),
    ),
    (
        "RateLimit, quota left",
        &[(UNAVAILABLE, &[("ratelimit", "\"default\";r=4;t=3")])],
        Duration::from_millis(10),
    ),
    (
        "RateLimit, malformed",
        &[(UNAVAILABLE, &[("ratelimit", "\"default\";r=0;t=soon")])],
        Duration::from_millis(10),
    ),
    (
        "Retry-After before the others",
        &[(
            UNAVAILABLE,
            &[
                ("retry-after-ms", "1500"),
                ("retry-after", "2"),
                ("ratelimit", "\"q\";r=0;t=9"),
            ],
        )],
        Duration::from_secs(2),
    ),
    (
        "a malformed Retry-After is ignored for the next one",
        &[(
            UNAVAILABLE,
            &[("retry-after", "later"), ("x-ms-retry-after-ms", "400")],
        )],
        Duration::from_millis(400),
    ),
];

#[tokio::test]
async fn the_tower_layer_waits_what_each_hint_says() {
    for (name, answers, wait) in CASES {
        let (addr, count) = serve_answers(answers).await;
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut client = HttpRetryLayer::new(policy()).layer(client);
        let get = Request::get(format!("http://{addr}/export"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let (response, slept) = testing::record_sleeps_async(client.call(get)).await;
        assert_eq!(response.unwrap().status(), StatusCode::OK, "{name}");
        assert_eq!(slept, [*wait], "{name}");
        assert_eq!(*count.lock().unwrap(), 2, "{name}");
    }
}

#[tokio::test]
async fn the_reqwest_middleware_waits_what_each_hint_says() {
    for (name, answers, wait) in CASES {
        let (addr, count) = serve_answers(answers).await;
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(policy()))
            .build();
        let get = client.get(format!("http://{addr}/export")).send();
        let (response, slept) = testing::record_sleeps_async(get).await;
        assert_eq!(response.unwrap().status(), StatusCode::OK, "{name}");
        assert_eq!(slept, [*wait], "{name}");
        assert_eq!(*count.lock().unwrap(), 2, "{name}");
    }
}
