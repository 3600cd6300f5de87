//! `tower::HttpRetryLayer` around hyper-util's client against real HTTP/1.1 servers on
//! 127.0.0.1: a `PUT` body replayed whole after two 503s with `Retry-After`, a plain `POST`
//! answered 502 sent once (retried once `.idempotency_keys()` gives it a key), a body over the
//! replay bound sent exactly once, a refused connection retried through the error's source chain.
//! Every wait is virtual (`testing::record_sleeps_async`).
#![cfg(feature = "tower")]
#![deny(warnings, unused_qualifications)]

mod loopback;
use loopback::serve;

use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use retry_kit::tower::{HttpFailure, HttpRetryLayer, ReplayBody};
use retry_kit::{Failure, RetryPolicy, testing};
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpListener;
use tower_layer::Layer;

type HyperClient = Client<HttpConnector, ReplayBody<Full<Bytes>>>;

fn hyper_client() -> HyperClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(4)
}

fn request(method: &str, uri: String, body: &'static str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(uri)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

#[tokio::test]
async fn a_put_body_is_replayed_whole_after_two_503s() {
    let (addr, seen) = serve(|n| match n {
        1 | 2 => (StatusCode::SERVICE_UNAVAILABLE, Some("1")),
        _ => (StatusCode::OK, None),
    })
    .await;
    let mut client = HttpRetryLayer::new(policy()).layer(hyper_client());
    let put = request("PUT", format!("http://{addr}/orders/17"), "{\"qty\":2}");
    let (response, slept) = testing::record_sleeps_async(client.call(put)).await;
    let response = response.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "answer");
    assert_eq!(slept, [Duration::from_secs(1), Duration::from_secs(1)]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|(m, b, _)| m == "PUT" && b == "{\"qty\":2}"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_502_on_a_plain_post_is_returned_after_one_attempt() {
    let (addr, seen) = serve(|_| (StatusCode::BAD_GATEWAY, None)).await;
    let mut client = HttpRetryLayer::new(policy()).layer(hyper_client());
    let post = request("POST", format!("http://{addr}/pay"), "payload");
    let (response, slept) = testing::record_sleeps_async(client.call(post)).await;
    assert_eq!(response.unwrap().status(), StatusCode::BAD_GATEWAY);
    assert!(slept.is_empty());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

static REFUSED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn record_refused(failure: &Failure<'_, HttpFailure<hyper::body::Incoming>>) {
    assert!(failure.error.status().is_none());
    REFUSED.lock().unwrap().push(failure.attempt);
}

#[tokio::test]
async fn a_refused_connection_is_retried_through_the_source_chain() {
    // A port with nothing listening: bind, read the address, close.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let mut client = HttpRetryLayer::new(policy())
        .on_failure(record_refused as fn(&Failure<'_, HttpFailure<hyper::body::Incoming>>))
        .layer(hyper_client());
    // A POST too: a refused connection never reached the server, so it is safe to repeat.
    let post = request("POST", format!("http://{addr}/pay"), "payload");
    let (result, slept) = testing::record_sleeps_async(client.call(post)).await;
    let error = result.unwrap_err();
    let connect = error
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .expect("the client's own error, boxed");
    assert!(connect.is_connect());
    assert_eq!(slept.len(), 3);
    assert_eq!(*REFUSED.lock().unwrap(), [1, 2, 3, 4]);
}

#[tokio::test]
async fn with_idempotency_keys_a_post_carries_one_key_and_is_retried() {
    let (addr, seen) = serve(|n| match n {
        1 => (StatusCode::BAD_GATEWAY, None),
        _ => (StatusCode::OK, None),
    })
    .await;
    let mut client = HttpRetryLayer::new(policy())
        .idempotency_keys()
        .layer(hyper_client());
    let post = request("POST", format!("http://{addr}/pay"), "payload");
    let (response, _) = testing::record_sleeps_async(client.call(post)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    // A key the caller set is kept.
    let mut own = request("PATCH", format!("http://{addr}/pay"), "payload");
    own.headers_mut()
        .insert("idempotency-key", "order-17".parse().unwrap());
    let (response, _) = testing::record_sleeps_async(client.call(own)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "the 502 was retried: the POST now has a key");
    let key = seen[0].2.clone().expect("a key was added");
    assert_eq!(key.len(), 32);
    assert_eq!(
        seen[1].2.as_deref(),
        Some(key.as_str()),
        "the same key again"
    );
    assert_eq!(seen[2].2.as_deref(), Some("order-17"));
}

#[tokio::test]
async fn a_body_over_the_bound_is_sent_exactly_once() {
    let (addr, seen) = serve(|_| (StatusCode::SERVICE_UNAVAILABLE, None)).await;
    let mut client = HttpRetryLayer::new(policy())
        .body_limit(4)
        .layer(hyper_client());
    let put = request("PUT", format!("http://{addr}/blob"), "payload");
    let (response, slept) = testing::record_sleeps_async(client.call(put)).await;
    assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(slept.is_empty());
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].1, "payload",
        "sent whole, not truncated to the bound"
    );
}
