//! `reqwest_middleware::RetryMiddleware` against real HTTP/1.1 servers on 127.0.0.1 (port 0):
//! a `Retry-After` waited out, a `POST` not repeated unless it carries an `Idempotency-Key` (then
//! repeated with its body intact), a refused connection retried, a breaker refusing. Every wait
//! is virtual (`testing::record_sleeps_async`), so nothing really sleeps.
#![cfg(feature = "reqwest-middleware")]
#![deny(warnings, unused_qualifications)]

use http::StatusCode;
use retry_kit::reqwest_middleware::{Attempted, RetryMiddleware};
use retry_kit::{CircuitBreaker, Failure, Next, RetryPolicy, StopReason, testing};
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpListener;

mod loopback;
use loopback::serve;

fn client(middleware: RetryMiddleware) -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(4)
}

#[tokio::test]
async fn a_503_with_retry_after_is_waited_out_and_the_200_returned() {
    let (addr, seen) = serve(|n| match n {
        1 | 2 => (StatusCode::SERVICE_UNAVAILABLE, Some("1")),
        _ => (StatusCode::OK, None),
    })
    .await;
    let client = client(RetryMiddleware::new(policy()));
    let (response, slept) =
        testing::record_sleeps_async(client.get(format!("http://{addr}/")).send()).await;
    let response = response.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "answer");
    assert_eq!(seen.lock().unwrap().len(), 3);
    // At least what the server asked for, each time.
    assert_eq!(slept, [Duration::from_secs(1), Duration::from_secs(1)]);
}

#[tokio::test]
async fn a_502_on_a_plain_post_is_returned_after_one_attempt() {
    let (addr, seen) = serve(|_| (StatusCode::BAD_GATEWAY, None)).await;
    let client = client(RetryMiddleware::new(policy()));
    let (response, slept) = testing::record_sleeps_async(
        client
            .post(format!("http://{addr}/pay"))
            .body("payload")
            .send(),
    )
    .await;
    assert_eq!(response.unwrap().status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the server may have processed it"
    );
    assert!(slept.is_empty());
}

#[tokio::test]
async fn with_an_idempotency_key_a_post_is_repeated_with_its_body_intact() {
    let (addr, seen) = serve(|n| match n {
        1 | 2 => (StatusCode::BAD_GATEWAY, None),
        _ => (StatusCode::CREATED, None),
    })
    .await;
    let client = client(RetryMiddleware::new(policy()));
    let (response, _) = testing::record_sleeps_async(
        client
            .post(format!("http://{addr}/pay"))
            .header("Idempotency-Key", "a1b2")
            .body("payload")
            .send(),
    )
    .await;
    assert_eq!(response.unwrap().status(), StatusCode::CREATED);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|(method, body, _)| method == "POST" && body == "payload"),
        "{seen:?}"
    );
}

static REFUSED: Mutex<Vec<(u32, Next)>> = Mutex::new(Vec::new());

fn record_refused(f: &Failure<'_, Attempted>) {
    REFUSED.lock().unwrap().push((f.attempt, f.next));
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_returned() {
    // A port that was just free: nothing listens on it.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let middleware =
        RetryMiddleware::new(policy()).on_failure(record_refused as fn(&Failure<'_, Attempted>));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    let (result, slept) =
        testing::record_sleeps_async(client.get(format!("http://{addr}/")).send()).await;
    assert!(result.unwrap_err().is_connect());
    assert_eq!(slept.len(), 3);
    let records = REFUSED.lock().unwrap();
    assert_eq!(records.len(), 4);
    assert_eq!(records[3].1, Next::Stop(StopReason::AttemptsExhausted));
}

static BACKEND: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(60));

#[tokio::test]
async fn an_open_breaker_answers_without_reaching_the_server() {
    let (addr, seen) = serve(|_| (StatusCode::SERVICE_UNAVAILABLE, None)).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()).circuit(&BACKEND))
        .build();
    let url = format!("http://{addr}/");
    // Two 503s open the breaker; the third attempt is refused and the last 503 returned.
    let (first, _) = testing::record_sleeps_async(client.get(&url).send()).await;
    assert_eq!(first.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.lock().unwrap().len(), 2);
    // The next call makes no request at all.
    let (second, _) = testing::record_sleeps_async(client.get(&url).send()).await;
    assert!(second.unwrap_err().to_string().contains("circuit open"));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

static PER_HOST: retry_kit::PerKey<CircuitBreaker> =
    retry_kit::PerKey::new(CircuitBreaker::new(2, Duration::from_secs(60)));

#[tokio::test]
async fn with_a_per_key_breaker_a_failing_host_opens_only_its_own() {
    let (down, down_seen) = serve(|_| (StatusCode::SERVICE_UNAVAILABLE, None)).await;
    let (up, up_seen) = serve(|_| (StatusCode::OK, None)).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()).circuit(&PER_HOST))
        .build();
    let (first, _) =
        testing::record_sleeps_async(client.get(format!("http://{down}/")).send()).await;
    assert_eq!(first.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        down_seen.lock().unwrap().len(),
        2,
        "its breaker opened after two failures"
    );
    // The healthy host has its own breaker, still closed.
    let (other, _) = testing::record_sleeps_async(client.get(format!("http://{up}/")).send()).await;
    assert_eq!(other.unwrap().status(), StatusCode::OK);
    assert_eq!(up_seen.lock().unwrap().len(), 1);
    // The failing host is refused without a request.
    let (again, _) =
        testing::record_sleeps_async(client.get(format!("http://{down}/")).send()).await;
    assert!(again.unwrap_err().to_string().contains("circuit open"));
    assert_eq!(down_seen.lock().unwrap().len(), 2);
    assert_eq!(PER_HOST.len(), 2);
}

#[tokio::test]
async fn with_idempotency_keys_a_post_carries_one_key_on_every_attempt() {
    let (addr, seen) = serve(|n| match n {
        1 => (StatusCode::BAD_GATEWAY, None),
        _ => (StatusCode::OK, None),
    })
    .await;
    let client = client(RetryMiddleware::new(policy()).idempotency_keys());
    let url = format!("http://{addr}/pay");
    let (response, _) =
        testing::record_sleeps_async(client.post(&url).body("payload").send()).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    // A GET is left as it is.
    let (response, _) = testing::record_sleeps_async(client.get(&url).send()).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "the 502 was retried: the POST now has a key");
    let key = seen[0].2.clone().expect("a key was added");
    assert_eq!(key.len(), 32);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        seen[1].2.as_deref(),
        Some(key.as_str()),
        "the same key again"
    );
    assert_eq!(seen[2].2, None);
}

#[tokio::test]
async fn a_middleware_made_from_a_cell_reads_the_policy_it_holds_when_each_request_starts() {
    static POLICY: retry_kit::PolicyCell =
        retry_kit::PolicyCell::new(RetryPolicy::fixed(Duration::from_millis(10)).attempts(2));
    let (addr, seen) = serve(|_| (StatusCode::SERVICE_UNAVAILABLE, None)).await;
    let client = client(RetryMiddleware::from_cell(&POLICY));
    let get = || client.get(format!("http://{addr}/"));
    let (response, _) = testing::record_sleeps_async(get().send()).await;
    assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.lock().unwrap().len(), 2);

    // Reloaded: the same client's next request runs under the new policy.
    POLICY.set(RetryPolicy::fixed(Duration::from_millis(10)).attempts(3));
    let (response, slept) = testing::record_sleeps_async(get().send()).await;
    assert_eq!(response.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.lock().unwrap().len(), 2 + 3);
    assert_eq!(slept, [Duration::from_millis(10); 2]);
}
