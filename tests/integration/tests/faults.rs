//! `faults`: every `Fault` through both front ends against a real HTTP/1.1 server on
//! 127.0.0.1 — `FaultLayer` below `HttpRetryLayer` around hyper-util's client, and
//! `FaultMiddleware` after `RetryMiddleware` in a reqwest client — asserting what the server
//! received and what the caller got; scripts (`seen`, seeded reproducibility); and the release
//! test (an uncertain outcome deduplicated by its idempotency key, a permanent schema error not
//! retried). Every wait is virtual (`testing::record_sleeps_async` or a paused clock).
#![cfg(feature = "faults")]
#![deny(warnings, unused_qualifications)]

mod exports;
mod loopback;
use loopback::{Seen, serve};

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use retry_kit::faults::{Fault, FaultBody, FaultLayer, FaultMiddleware, Injected, Script};
use retry_kit::reqwest_middleware::RetryMiddleware;
use retry_kit::tower::{BoxError, HttpFailure, HttpRetryLayer, ReplayBody};
use retry_kit::{Classify, ErrorClass, Failure, Next, RetryPolicy, testing};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// hyper-util's legacy client, as the README stacks it: `FaultLayer` over it as it is.
type HyperClient = Client<HttpConnector, ReplayBody<Full<Bytes>>>;
/// Its response body through `FaultLayer`: hyper's own, or an injected status's empty one.
type Body = FaultBody<Incoming>;

fn hyper_client() -> HyperClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)
}

fn all_answer_200(_: usize) -> (StatusCode, Option<&'static str>) {
    (StatusCode::OK, None)
}

/// `HttpRetryLayer` over `FaultLayer` over hyper-util's client.
fn tower_client(
    script: &Script,
) -> impl Service<Request<Full<Bytes>>, Response = Response<Body>, Error = BoxError> {
    HttpRetryLayer::new(policy()).layer(FaultLayer::new(script.clone()).layer(hyper_client()))
}

fn request(method: &str, addr: SocketAddr, key: Option<&str>) -> Request<Full<Bytes>> {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://{addr}/orders"));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request
        .body(Full::new(Bytes::from_static(b"order 17")))
        .unwrap()
}

/// A request through the tower stack, with the waits it would have slept.
async fn through_tower(
    script: &Script,
    request: Request<Full<Bytes>>,
) -> (Result<Response<Body>, BoxError>, Vec<Duration>) {
    let mut client = tower_client(script);
    testing::record_sleeps_async(client.call(request)).await
}

/// `RetryMiddleware`, then `FaultMiddleware`, in a reqwest client.
fn reqwest_client(script: &Script) -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()))
        .with(FaultMiddleware::new(script.clone()))
        .build()
}

/// A request through the reqwest stack, with the waits it would have slept.
async fn through_reqwest(
    script: &Script,
    method: reqwest::Method,
    addr: SocketAddr,
    key: Option<&str>,
) -> (reqwest_middleware::Result<reqwest::Response>, Vec<Duration>) {
    let client = reqwest_client(script);
    let mut request = client
        .request(method, format!("http://{addr}/orders"))
        .body("order 17");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    testing::record_sleeps_async(request.send()).await
}

/// The `Injected` error somewhere in an error's source chain.
fn injected<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e Injected> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(injected) = e.downcast_ref::<Injected>() {
            return Some(injected);
        }
        current = e.source();
    }
    None
}

fn received(seen: &Seen) -> Vec<(String, String, Option<String>)> {
    seen.lock().unwrap().clone()
}

// ---- FaultLayer under HttpRetryLayer ----------------------------------------------------

#[tokio::test]
async fn tower_a_503_is_answered_without_the_server_and_retried_to_its_200() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Status(503)]);
    let (response, slept) = through_tower(&script, request("POST", addr, None)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_millis(10)]);
    // The 503 never reached the server: it received the one request that passed.
    assert_eq!(received(&seen).len(), 1);
    assert_eq!(script.seen(), 2);
}

#[tokio::test]
async fn tower_the_fault_layer_takes_hyper_clients_incoming_body_as_it_is() {
    // `FaultLayer` over hyper-util's client, under `HttpRetryLayer`: it did not compile, since
    // an injected status needed a `Default` response body and hyper's `Incoming` has none.
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Status(503), Fault::Reset]);
    let mut client =
        HttpRetryLayer::new(policy()).layer(FaultLayer::new(script.clone()).layer(hyper_client()));
    let (response, slept) =
        testing::record_sleeps_async(client.call(request("POST", addr, None))).await;
    let response: Response<FaultBody<Incoming>> = response.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(!response.body().is_injected());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "answer", "hyper's own body, read through the layers");
    assert_eq!(slept.len(), 2);
    // The 503 and the reset were injected: the server received the third attempt only.
    assert_eq!(
        received(&seen),
        [("POST".to_owned(), "order 17".to_owned(), None)]
    );
    assert_eq!(script.seen(), 3);

    // An injected status that is the last answer comes back with an empty body.
    let script = Script::new([Fault::Status(503)]);
    let mut once = HttpRetryLayer::new(policy().attempts(1))
        .layer(FaultLayer::new(script.clone()).layer(hyper_client()));
    let response = once.call(request("GET", addr, None)).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.body().is_injected());
    assert!(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .is_empty()
    );
    assert_eq!(received(&seen).len(), 1, "nothing more reached the server");
}

#[tokio::test]
async fn tower_a_retry_after_is_waited_out_in_whole_seconds() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::RetryAfter(429, Duration::from_millis(2_500))]);
    let (response, slept) = through_tower(&script, request("GET", addr, None)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_secs(3)]); // 2.5 s, rounded up to the header's 3
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test]
async fn tower_a_reset_before_sending_is_retried_even_for_a_plain_post() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Reset, Fault::Reset]);
    let (response, slept) = through_tower(&script, request("POST", addr, None)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept.len(), 2);
    let seen = received(&seen);
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].0.as_str(), seen[0].1.as_str()),
        ("POST", "order 17")
    );
}

#[tokio::test]
async fn tower_a_timeout_is_retried_for_a_get_and_returned_for_a_post() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Timeout]);
    let (response, _) = through_tower(&script, request("GET", addr, None)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(received(&seen).len(), 1);

    let script = Script::new([Fault::Timeout]);
    let (response, slept) = through_tower(&script, request("POST", addr, None)).await;
    let error = response.unwrap_err();
    assert_eq!(injected(&*error).unwrap().fault(), &Fault::Timeout);
    assert!(slept.is_empty());
    assert_eq!(script.seen(), 1);
    assert_eq!(received(&seen).len(), 1, "nothing more was sent");
}

#[tokio::test]
async fn tower_a_lost_answer_to_a_keyed_post_is_sent_twice_with_one_key() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Lost]);
    let (response, _) = through_tower(&script, request("POST", addr, Some("export-1"))).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    let seen = received(&seen);
    assert_eq!(seen.len(), 2, "the lost attempt reached the server");
    for (method, body, key) in &seen {
        assert_eq!((method.as_str(), body.as_str()), ("POST", "order 17"));
        assert_eq!(key.as_deref(), Some("export-1"));
    }
}

#[tokio::test]
async fn tower_a_lost_answer_to_a_plain_post_is_received_once_and_not_retried() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Lost]);
    let (response, slept) = through_tower(&script, request("POST", addr, None)).await;
    let error = response.unwrap_err();
    assert_eq!(injected(&*error).unwrap().fault(), &Fault::Lost);
    assert!(slept.is_empty());
    assert_eq!(received(&seen).len(), 1, "the server did the work once");
}

#[tokio::test(start_paused = true)]
async fn tower_a_delay_is_virtual_under_a_paused_clock() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Delay(Duration::from_secs(60))]);
    let mut client = tower_client(&script);
    let (real, paused) = (std::time::Instant::now(), tokio::time::Instant::now());
    let response = client.call(request("PUT", addr, None)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(paused.elapsed() >= Duration::from_secs(60));
    assert!(
        real.elapsed() < Duration::from_secs(30),
        "the delay was not slept"
    );
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test]
async fn tower_a_delay_is_recorded_beside_the_retry_waits() {
    let (addr, _) = serve(all_answer_200).await;
    let script = Script::new([Fault::Status(503), Fault::Delay(Duration::from_secs(5))]);
    let (response, slept) = through_tower(&script, request("GET", addr, None)).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_millis(10), Duration::from_secs(5)]);
}

#[tokio::test]
async fn tower_pass_sends_every_request_untouched() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([]);
    for _ in 0..3 {
        let (response, slept) = through_tower(&script, request("POST", addr, None)).await;
        let body = response.unwrap().into_body().collect().await.unwrap();
        assert_eq!(body.to_bytes(), "answer");
        assert!(slept.is_empty());
    }
    assert_eq!(received(&seen).len(), 3);
    assert_eq!(script.seen(), 3);
}

// ---- FaultMiddleware after RetryMiddleware ----------------------------------------------

#[tokio::test]
async fn reqwest_a_503_is_answered_without_the_server_and_retried_to_its_200() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Status(503)]);
    let (response, slept) = through_reqwest(&script, reqwest::Method::POST, addr, None).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_millis(10)]);
    assert_eq!(received(&seen).len(), 1);
    assert_eq!(script.seen(), 2);
}

#[tokio::test]
async fn reqwest_a_retry_after_is_waited_out() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::RetryAfter(503, Duration::from_secs(2))]);
    let (response, slept) = through_reqwest(&script, reqwest::Method::GET, addr, None).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_secs(2)]);
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test]
async fn reqwest_a_reset_before_sending_is_retried_even_for_a_plain_post() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Reset]);
    let (response, _) = through_reqwest(&script, reqwest::Method::PUT, addr, None).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(received(&seen).len(), 1);

    // Nothing was sent (the injected reset carries a refused connection), so a plain POST is
    // retried too, and arrives once.
    let script = Script::new([Fault::Reset, Fault::Reset]);
    let (response, slept) = through_reqwest(&script, reqwest::Method::POST, addr, None).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept.len(), 2);
    assert_eq!(received(&seen).len(), 2);
}

/// The `reqwest::Error` of a failed call through the reqwest stack.
fn reqwest_error(error: reqwest_middleware::Error) -> reqwest::Error {
    match error {
        reqwest_middleware::Error::Reqwest(error) => error,
        other => panic!("not a reqwest error: {other:?}"),
    }
}

#[tokio::test]
async fn reqwest_an_injected_failure_is_the_real_one_at_the_requests_url() {
    // Without a retry middleware: the caller sees each injected failure itself. They were all
    // body errors before, so a timeout was also `is_decode()`, and every one named
    // `http://no.url.provided.local/`.
    let (addr, seen) = serve(all_answer_200).await;
    let url = format!("http://{addr}/orders?id=17");
    let script = Script::new([
        Fault::Timeout,
        Fault::Lost,
        Fault::Reset,
        Fault::Status(503),
    ]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(FaultMiddleware::new(script.clone()))
        .build();
    let send = || client.post(&url).body("order 17").send();

    for fault in [Fault::Timeout, Fault::Lost] {
        let timeout = reqwest_error(send().await.unwrap_err());
        assert!(timeout.is_timeout(), "{fault}: {timeout:?}");
        assert!(
            !timeout.is_decode() && !timeout.is_body(),
            "{fault}: {timeout:?}"
        );
        assert!(
            !timeout.is_connect() && !timeout.is_status(),
            "{fault}: {timeout:?}"
        );
        assert_eq!(timeout.url().map(reqwest::Url::as_str), Some(&*url));
        assert_eq!(timeout.class(), ErrorClass::IdempotentOnly);
    }
    assert_eq!(
        received(&seen).len(),
        1,
        "the lost request reached the server"
    );

    let reset = reqwest_error(send().await.unwrap_err());
    assert!(reset.is_connect(), "{reset:?}");
    assert!(!reset.is_timeout() && !reset.is_decode(), "{reset:?}");
    assert_eq!(reset.url().map(reqwest::Url::as_str), Some(&*url));
    assert_eq!(injected(&reset).unwrap().fault(), &Fault::Reset);
    assert_eq!(reset.class(), ErrorClass::Transient);

    let answer = send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.url().as_str(), url);
    assert_eq!(received(&seen).len(), 1, "nothing else was sent");
    assert_eq!(script.seen(), 4);
}

#[tokio::test]
async fn reqwest_a_timeout_is_retried_for_a_get_and_returned_for_a_post() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Timeout]);
    let (response, _) = through_reqwest(&script, reqwest::Method::GET, addr, None).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(received(&seen).len(), 1);

    let script = Script::new([Fault::Timeout]);
    let (response, slept) = through_reqwest(&script, reqwest::Method::POST, addr, None).await;
    let error = reqwest_error(response.unwrap_err());
    assert!(error.is_timeout());
    assert!(slept.is_empty());
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test]
async fn reqwest_a_lost_answer_to_a_keyed_post_is_sent_twice_with_one_key() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Lost]);
    let (response, _) =
        through_reqwest(&script, reqwest::Method::POST, addr, Some("export-2")).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    let seen = received(&seen);
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|(_, body, key)| body == "order 17" && key.as_deref() == Some("export-2"))
    );
}

#[tokio::test]
async fn reqwest_a_lost_answer_to_a_plain_post_is_received_once_and_not_retried() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Lost]);
    let (response, slept) = through_reqwest(&script, reqwest::Method::POST, addr, None).await;
    assert!(reqwest_error(response.unwrap_err()).is_timeout());
    assert_eq!(script.seen(), 1);
    assert!(slept.is_empty());
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn reqwest_a_delay_is_virtual_under_a_paused_clock() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Delay(Duration::from_secs(60))]);
    let client = reqwest_client(&script);
    let (real, paused) = (std::time::Instant::now(), tokio::time::Instant::now());
    let response = client
        .get(format!("http://{addr}/orders"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(paused.elapsed() >= Duration::from_secs(60));
    assert!(
        real.elapsed() < Duration::from_secs(30),
        "the delay was not slept"
    );
    assert_eq!(received(&seen).len(), 1);
}

#[tokio::test]
async fn reqwest_pass_sends_every_request_untouched() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Pass, Fault::Pass]);
    for _ in 0..3 {
        let (response, _) = through_reqwest(&script, reqwest::Method::PUT, addr, None).await;
        assert_eq!(response.unwrap().text().await.unwrap(), "answer");
    }
    assert_eq!(received(&seen).len(), 3);
    assert_eq!(script.seen(), 3);
}

// ---- Scripts ----------------------------------------------------------------------------

#[test]
fn two_scripts_with_one_seed_draw_the_same_faults() {
    let chaos = |seed| {
        Script::seeded(seed)
            .with(0.1, Fault::Status(503))
            .with(0.05, Fault::Reset)
            .with(0.05, Fault::Lost)
    };
    let draws = |script: Script| (0..500).map(|_| script.next()).collect::<Vec<_>>();
    let (first, again, other) = (draws(chaos(42)), draws(chaos(42)), draws(chaos(43)));
    assert_eq!(first, again);
    assert_ne!(first, other);
    assert!(first.contains(&Fault::Lost) && first.contains(&Fault::Pass));
}

#[tokio::test]
async fn a_seeded_script_gives_the_server_the_same_run_twice() {
    let run = || async {
        let (addr, seen) = serve(all_answer_200).await;
        let script = Script::seeded(9).with(0.3, Fault::Status(503));
        let mut statuses = Vec::new();
        for _ in 0..10 {
            let (response, _) = through_tower(&script, request("GET", addr, None)).await;
            statuses.push(response.unwrap().status());
        }
        (statuses, received(&seen).len(), script.seen())
    };
    assert_eq!(run().await, run().await);
}

#[test]
fn seen_counts_the_requests_of_every_clone() {
    let script = Script::new([Fault::Timeout]);
    let clones = [script.clone(), script.clone(), script.clone()];
    let faults: Vec<Fault> = clones.iter().map(Script::next).collect();
    assert_eq!(faults, [Fault::Timeout, Fault::Pass, Fault::Pass]);
    assert_eq!(script.seen(), 3);
}

#[tokio::test]
async fn a_layer_cloned_into_two_services_counts_requests_once() {
    let (addr, seen) = serve(all_answer_200).await;
    let script = Script::new([Fault::Status(503), Fault::Status(503)]);
    let (first, _) = through_tower(&script, request("GET", addr, None)).await;
    let (second, _) = through_tower(&script, request("GET", addr, None)).await;
    assert_eq!(first.unwrap().status(), StatusCode::OK);
    assert_eq!(second.unwrap().status(), StatusCode::OK);
    // 503, 503, 200 for the first call; 200 for the second.
    assert_eq!(script.seen(), 4);
    assert_eq!(received(&seen).len(), 2);
}

// ---- The release test -------------------------------------------------------------------

type Record = (u32, ErrorClass, Next);

static RUN_LOG: Mutex<Vec<Record>> = Mutex::new(Vec::new());

fn log_failure(failure: &Failure<'_, HttpFailure<Body>>) {
    RUN_LOG
        .lock()
        .unwrap()
        .push((failure.attempt, failure.class, failure.next));
}

#[tokio::test]
async fn release_an_uncertain_export_is_stored_once_and_a_schema_error_is_not_retried() {
    let (addr, ledger) = exports::receiver().await;
    let script = Script::new([Fault::Lost]);
    let mut exporter = HttpRetryLayer::new(policy())
        .idempotency_keys()
        .on_failure(log_failure as fn(&Failure<'_, HttpFailure<Body>>))
        .layer(FaultLayer::new(script.clone()).layer(hyper_client()));
    let export = |body: &'static str| {
        Request::post(format!("http://{addr}/exports"))
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };

    // The receiver accepts the export; its answer is lost; the retry carries the same key.
    let (response, _) =
        testing::record_sleeps_async(exporter.call(export("{\"invoice\":\"2026-11\"}"))).await;
    assert!(response.unwrap().status().is_success());
    {
        let ledger = ledger.lock().unwrap();
        assert_eq!(ledger.stored, ["{\"invoice\":\"2026-11\"}"], "one export");
        assert_eq!(ledger.received.len(), 2, "two attempts");
        let keys: Vec<_> = ledger.received.iter().map(|(_, key)| key.clone()).collect();
        assert!(
            keys[0].is_some() && keys[0] == keys[1],
            "the same key: {keys:?}"
        );
    }
    assert_eq!(
        RUN_LOG.lock().unwrap().as_slice(),
        [(
            1,
            ErrorClass::IdempotentOnly,
            Next::Retry(Duration::from_millis(10))
        )]
    );

    // A permanent schema error: answered 422, not retried.
    RUN_LOG.lock().unwrap().clear();
    let (response, slept) =
        testing::record_sleeps_async(exporter.call(export("invoice=2026-11"))).await;
    assert_eq!(response.unwrap().status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(slept.is_empty());
    assert_eq!(ledger.lock().unwrap().received.len(), 3, "sent once");
    assert_eq!(ledger.lock().unwrap().stored.len(), 1);
    // A permanent status is an answer to the layer, returned as the response: the hook is not
    // called, so the run log's record of it comes from the caller, by the same table.
    assert!(RUN_LOG.lock().unwrap().is_empty());
    assert_eq!(
        retry_kit::http::status_class(StatusCode::UNPROCESSABLE_ENTITY),
        ErrorClass::Permanent
    );
}
