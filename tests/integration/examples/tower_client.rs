//! A hyper client behind `HttpRetryLayer` in a tower `ServiceBuilder`, against a server this
//! program starts itself on 127.0.0.1 (an ephemeral port; nothing leaves the machine).
//!
//! The server answers `POST /orders` with 503 and `Retry-After: 1` twice, then 201. The client
//! gives the POST an `Idempotency-Key` (`.idempotency_keys()`), replays its body on each attempt,
//! waits out the server's `Retry-After`, and prints every failed attempt; the server prints what
//! it received, so you can see the same body and key arrive three times.
//!
//! ```sh
//! cargo run -p retry-kit-integration --example tower_client
//! ```

use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use retry_kit::tower::{HttpFailure, HttpRetryLayer};
use retry_kit::{Failure, RetryPolicy};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tower::ServiceBuilder;

/// The order service: busy for its first two requests.
async fn start_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let requests = requests.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let n = requests.fetch_add(1, Ordering::Relaxed) + 1;
                async move {
                    let key = request.headers().get("idempotency-key").cloned();
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    println!(
                        "  server: request {n}, Idempotency-Key {key:?}, body {:?}",
                        String::from_utf8_lossy(&body)
                    );
                    let reply = if n <= 2 {
                        http::Response::builder()
                            .status(StatusCode::SERVICE_UNAVAILABLE)
                            .header("retry-after", "1")
                    } else {
                        http::Response::builder().status(StatusCode::CREATED)
                    };
                    Ok::<_, Infallible>(reply.body(Full::new(Bytes::from("order 17"))).unwrap())
                }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// Every failed attempt, as the retry loop saw it.
fn print_failure(failure: &Failure<'_, HttpFailure<Incoming>>) {
    println!(
        "  client: attempt {} failed ({}, {:?}) after {:?}; next: {:?}",
        failure.attempt, failure.error, failure.class, failure.elapsed, failure.next
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let addr = start_server().await;
    let policy = RetryPolicy::exponential(Duration::from_millis(200))
        .attempts(4)
        .deadline(Duration::from_secs(10));
    let mut client = ServiceBuilder::new()
        .layer(
            HttpRetryLayer::new(policy)
                .idempotency_keys()
                .on_failure(print_failure as fn(&Failure<'_, HttpFailure<Incoming>>)),
        )
        .service(Client::builder(TokioExecutor::new()).build_http());

    let order = Request::post(format!("http://{addr}/orders"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(r#"{"sku":"A-17","qty":2}"#)))
        .unwrap();
    println!("POST http://{addr}/orders");
    let start = Instant::now();
    let response = client.call(order).await.expect("the server answers");
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    println!(
        "answer: {status} {:?} after {:.1} s",
        String::from_utf8_lossy(&body),
        start.elapsed().as_secs_f64()
    );
    assert_eq!(status, StatusCode::CREATED);
}
