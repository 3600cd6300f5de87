//! The release test of an export job, as shipped code: exercise an uncertain outcome and a
//! permanent error against a real receiver on 127.0.0.1, and print the run log.
//!
//! 1. The receiver accepts an export, but the client never hears back (`Fault::Lost`, injected
//!    by `FaultLayer` below the retry layer). `HttpRetryLayer::idempotency_keys()` gave the POST
//!    a key, so the timeout is retried with the same key, and the receiver, which deduplicates
//!    by key, stores the export once.
//! 2. An export that does not match the receiver's schema is answered 422: permanent, not
//!    retried.
//!
//! Each failed attempt is printed by an `on_failure` hook: attempt count, error class, next
//! action, so an operator never has to infer state from silence.
//!
//! ```text
//! cargo run -p retry-kit-integration --example release_test
//! ```

#[path = "../tests/exports/mod.rs"]
mod exports;

use http::Request;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_kit::faults::{Fault, FaultBody, FaultLayer, Script};
use retry_kit::tower::{HttpFailure, HttpRetryLayer, ReplayBody};
use retry_kit::{Failure, Next, RetryPolicy};
use std::time::Duration;
use tower::ServiceBuilder;

/// hyper's response body through `FaultLayer` (an injected status's is empty).
type Body = FaultBody<Incoming>;

/// The run log: one line per failed attempt.
fn log(failure: &Failure<'_, HttpFailure<Body>>) {
    let next = match failure.next {
        Next::Retry(delay) => format!("retry in {delay:?}"),
        Next::Stop(reason) => format!("stop ({reason:?})"),
        other => format!("{other:?}"),
    };
    println!(
        "  run log: attempt {} failed · class {} · next: {next} · {}",
        failure.attempt,
        failure.class.as_str(),
        failure.error
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (addr, ledger) = exports::receiver().await;
    let script = Script::new([Fault::Lost]);
    let mut exporter = ServiceBuilder::new()
        .layer(
            HttpRetryLayer::new(RetryPolicy::fixed(Duration::from_millis(20)).attempts(3))
                .idempotency_keys()
                .on_failure(log as fn(&Failure<'_, HttpFailure<Body>>)),
        )
        .layer(FaultLayer::new(script.clone()))
        .service(Client::builder(TokioExecutor::new()).build_http::<ReplayBody<Full<Bytes>>>());
    let export = |body: &'static str| {
        Request::post(format!("http://{addr}/exports"))
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .expect("a valid request")
    };

    println!("1. uncertain outcome: the receiver accepts the export, its answer is lost");
    let response = exporter
        .call(export("{\"invoice\":\"2026-11\"}"))
        .await
        .expect("the retry is answered");
    println!("  answer: {}", response.status());
    {
        let ledger = ledger.lock().expect("the receiver's ledger");
        println!("  exports stored: {}", ledger.stored.len());
        println!("  attempts received: {}", ledger.received.len());
        for (n, (_, key)) in ledger.received.iter().enumerate() {
            println!(
                "    attempt {}: Idempotency-Key {}",
                n + 1,
                key.as_deref().unwrap_or("(none)")
            );
        }
        let same = ledger.received.windows(2).all(|w| w[0].1 == w[1].1);
        println!("  same key on every attempt: {same}");
        assert_eq!(ledger.stored.len(), 1);
        assert_eq!(ledger.received.len(), 2);
        assert!(same);
    }

    println!("2. permanent schema error: the receiver answers 422");
    let before = ledger.lock().expect("the receiver's ledger").received.len();
    let response = exporter
        .call(export("invoice=2026-11"))
        .await
        .expect("an answer");
    let status = response.status();
    let class = retry_kit::http::status_class(status);
    // A permanent status is an answer to the layer (returned, not a failed attempt), so the
    // hook is silent: the job logs it itself, by the same table.
    println!(
        "  run log: attempt 1 answered {status} · class {} · next: stop (not retried)",
        class.as_str()
    );
    let sent = ledger.lock().expect("the receiver's ledger").received.len() - before;
    println!("  attempts received: {sent}");
    assert_eq!(sent, 1);
    println!("faults decided by the script: {}", script.seen());
}
