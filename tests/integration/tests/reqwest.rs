//! `#[retryable]` reqwest calls against real HTTP/1.1 servers on 127.0.0.1, started by each test
//! on an ephemeral port: Retry-After is honoured, a 404 is answered once, and every kind of
//! reqwest error gets the class the `reqwest` module documents.
//!
//! Time is tokio's paused clock. Auto-advance could move it while a socket is idle, so delays
//! are asserted on what the loop computed (`Failure::next`), plus a lower bound on virtual time.
#![cfg(feature = "reqwest")]
#![deny(warnings, unused_qualifications)]

use http::StatusCode;
use http::header::RETRY_AFTER;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use retry_kit::http::StatusError;
use retry_kit::reqwest::error_for_status;
use retry_kit::{Classify, ErrorClass, Failure, Next, StopReason, retryable};
use std::cell::RefCell;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

type Reply = http::Response<Full<Bytes>>;

/// A hyper server on 127.0.0.1:0 answering request `n` (1-based) with `respond(n)`; returns its
/// address and the count of requests that reached it.
async fn serve(
    respond: impl Fn(u32) -> Reply + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU32::new(0));
    let respond = Arc::new(respond);
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let respond = respond.clone();
            let counter = counter.clone();
            let service = service_fn(move |_request| {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let reply = respond(n);
                async move { Ok::<_, Infallible>(reply) }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, hits)
}

fn reply(status: StatusCode, retry_after: Option<&str>, body: &'static str) -> Reply {
    let mut builder = http::Response::builder().status(status);
    if let Some(wait) = retry_after {
        builder = builder.header(RETRY_AFTER, wait);
    }
    builder
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

#[derive(Debug, Classify)]
enum FetchError {
    #[classify(delegate)]
    Transport(reqwest::Error),
    #[classify(delegate)]
    Status(StatusError),
}

impl From<reqwest::Error> for FetchError {
    fn from(e: reqwest::Error) -> Self {
        FetchError::Transport(e)
    }
}

impl From<StatusError> for FetchError {
    fn from(e: StatusError) -> Self {
        FetchError::Status(e)
    }
}

thread_local! {
    /// `(attempt, class, next)` of every failed attempt on this test's thread.
    static FAILURES: RefCell<Vec<(u32, ErrorClass, Next)>> = const { RefCell::new(Vec::new()) };
}

fn record(f: &Failure<'_, FetchError>) {
    FAILURES.with(|log| log.borrow_mut().push((f.attempt, f.class, f.next)));
}

fn failures() -> Vec<(u32, ErrorClass, Next)> {
    FAILURES.with(|log| log.borrow().clone())
}

#[retryable(attempts = 5, base = "10ms", max_delay = "5s", jitter = "none", idempotent, on_failure = record)]
async fn get_text(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

#[retryable(attempts = 5, base = "10ms", jitter = "none", on_failure = record)]
async fn post_text(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let response = error_for_status(client.post(url).body("x").send().await?)?;
    Ok(response.text().await?)
}

/// The README's line for the `reqwest` feature, in the function it names: one whose error type
/// is `From<reqwest::Error> + From<StatusError>`. (A `StatusError` is not a `reqwest::Error`:
/// the README showed the line alone, and in a function returning `reqwest::Error` it does not
/// compile.)
#[allow(unused_qualifications)] // the line as the README writes it
async fn readme_line<E>(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, E>
where
    E: From<reqwest::Error> + From<StatusError>,
{
    let res = retry_kit::reqwest::error_for_status(client.get(url).send().await?)?;
    Ok(res)
}

#[tokio::test]
async fn the_readmes_error_for_status_line_is_shown_in_a_function_where_it_compiles() {
    let readme = include_str!("../../../README.md");
    let row = readme
        .lines()
        .find(|line| line.starts_with("| `reqwest` |"))
        .expect("the README's feature table has a `reqwest` row");
    assert!(
        row.contains(
            "`let res = retry_kit::reqwest::error_for_status(client.get(url).send().await?)?;` \
             in a fn whose error type is `From<reqwest::Error> + From<StatusError>`"
        ),
        "the README shows the line `readme_line` compiles, with the error type it needs: {row}"
    );

    let (addr, hits) = serve(|_| reply(StatusCode::SERVICE_UNAVAILABLE, Some("2"), "")).await;
    let (client, url) = (reqwest::Client::new(), format!("http://{addr}/"));
    // An enum, as in the `retry_kit::reqwest` docs: the status and its wait are kept.
    let Err(FetchError::Status(status)) = readme_line::<FetchError>(&client, &url).await else {
        panic!("a 503 is a status error");
    };
    assert_eq!(status.class(), ErrorClass::Transient);
    assert_eq!(status.retry_after(), Some(Duration::from_secs(2)));
    // A boxed error, read through its chain.
    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let boxed = readme_line::<BoxError>(&client, &url).await.unwrap_err();
    assert_eq!(retry_kit::classify_chain(&*boxed), ErrorClass::Transient);
    assert_eq!(
        retry_kit::chain_retry_after(&*boxed),
        Some(Duration::from_secs(2))
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn two_503s_with_retry_after_are_waited_out_and_the_third_attempt_succeeds() {
    let (addr, hits) = serve(|n| match n {
        1 | 2 => reply(StatusCode::SERVICE_UNAVAILABLE, Some("1"), "busy"),
        _ => reply(StatusCode::OK, None, "hello"),
    })
    .await;
    let client = reqwest::Client::new();
    let start = tokio::time::Instant::now();

    let body = get_text(&client, &format!("http://{addr}/")).await.unwrap();

    assert_eq!(body, "hello");
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    // The policy alone would wait 10 ms, then 20 ms; the server's Retry-After raises both to 1 s.
    let second = Duration::from_secs(1);
    assert_eq!(
        failures(),
        [
            (1, ErrorClass::Transient, Next::Retry(second)),
            (2, ErrorClass::Transient, Next::Retry(second)),
        ]
    );
    assert!(start.elapsed() >= 2 * second, "slept {:?}", start.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_404_reaches_the_server_once() {
    let (addr, hits) = serve(|_| reply(StatusCode::NOT_FOUND, Some("1"), "no")).await;
    let client = reqwest::Client::new();

    let error = get_text(&client, &format!("http://{addr}/missing"))
        .await
        .unwrap_err();

    match &error {
        FetchError::Status(status) => assert_eq!(status.status(), StatusCode::NOT_FOUND),
        other => panic!("expected a status error, got {other:?}"),
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        failures(),
        [(1, ErrorClass::Permanent, Next::Stop(StopReason::Permanent))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_502_is_retried_for_an_idempotent_get_but_not_for_a_post() {
    let bad_gateway_once = |n| match n {
        1 => reply(StatusCode::BAD_GATEWAY, None, ""),
        _ => reply(StatusCode::OK, None, "done"),
    };
    let client = reqwest::Client::new();

    let (addr, hits) = serve(bad_gateway_once).await;
    let error = post_text(&client, &format!("http://{addr}/"))
        .await
        .unwrap_err();
    assert_eq!(error.class(), ErrorClass::IdempotentOnly);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        failures(),
        [(
            1,
            ErrorClass::IdempotentOnly,
            Next::Stop(StopReason::NotIdempotent)
        )]
    );

    let (addr, hits) = serve(bad_gateway_once).await;
    assert_eq!(
        get_text(&client, &format!("http://{addr}/")).await.unwrap(),
        "done"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(
        failures()[1..],
        [(
            1,
            ErrorClass::IdempotentOnly,
            Next::Retry(Duration::from_millis(10))
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_longer_than_max_delay_stops_the_loop() {
    let (addr, hits) = serve(|_| reply(StatusCode::TOO_MANY_REQUESTS, Some("3600"), "")).await;
    let client = reqwest::Client::new();

    let error = get_text(&client, &format!("http://{addr}/"))
        .await
        .unwrap_err();

    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        failures(),
        [(
            1,
            ErrorClass::Transient,
            Next::Stop(StopReason::RetryAfterTooLong)
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_is_transient_and_retried_until_attempts_run_out() {
    // Bind, learn the port, close it: connecting there is refused.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let client = reqwest::Client::new();

    let error = post_text(&client, &format!("http://{addr}/"))
        .await
        .unwrap_err();

    match &error {
        FetchError::Transport(e) => assert!(e.is_connect(), "{e:?}"),
        other => panic!("expected a connect error, got {other:?}"),
    }
    let log = failures();
    assert_eq!(log.len(), 5);
    assert!(
        log.iter()
            .all(|(_, class, _)| *class == ErrorClass::Transient)
    );
    assert_eq!(log[4].2, Next::Stop(StopReason::AttemptsExhausted));
}

/// A raw TCP server on 127.0.0.1:0 that reads a request and then does `then` with the socket.
async fn raw_server<F, Fut>(then: F) -> SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            // One read holds the whole of these small requests.
            let _ = stream.read(&mut buf).await;
            tokio::spawn(then(stream));
        }
    });
    addr
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_times_out_as_idempotent_only() {
    let addr = raw_server(|stream| async move {
        // Hold the connection open without answering.
        std::future::pending::<()>().await;
        drop(stream);
    })
    .await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    let error = client
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap_err();

    assert!(error.is_timeout(), "{error:?}");
    assert!(!error.is_connect(), "{error:?}");
    assert_eq!(error.class(), ErrorClass::IdempotentOnly);
}

#[tokio::test(start_paused = true)]
async fn a_reset_after_the_request_was_sent_is_idempotent_only() {
    let addr = raw_server(|stream| async move {
        let mut stream = stream;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
            .await;
        // An abortive close: the peer sees a reset, not an end of stream.
        stream.set_zero_linger().unwrap();
        drop(stream);
    })
    .await;
    let client = reqwest::Client::new();

    let outcome = async {
        let response = client.get(format!("http://{addr}/")).send().await?;
        response.bytes().await
    }
    .await;

    let error = outcome.unwrap_err();
    // Whether the reset lands before or after the headers are read, the request was sent.
    assert!(
        error.is_request() || error.is_decode() || error.is_body(),
        "{error:?}"
    );
    assert_eq!(error.class(), ErrorClass::IdempotentOnly, "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn a_body_cut_short_by_a_clean_close_is_permanent() {
    let addr = raw_server(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
            .await;
        let _ = stream.shutdown().await;
    })
    .await;
    let client = reqwest::Client::new();

    let response = client.get(format!("http://{addr}/")).send().await.unwrap();
    let error = response.bytes().await.unwrap_err();

    assert!(error.is_decode() || error.is_body(), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Permanent, "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn status_errors_from_reqwest_follow_the_http_table() {
    let (addr, _) = serve(|n| match n {
        1 => reply(StatusCode::SERVICE_UNAVAILABLE, None, ""),
        2 => reply(StatusCode::GATEWAY_TIMEOUT, None, ""),
        _ => reply(StatusCode::CONFLICT, None, ""),
    })
    .await;
    let client = reqwest::Client::new();
    let mut classes = Vec::new();
    for _ in 0..3 {
        let response = client.get(format!("http://{addr}/")).send().await.unwrap();
        let error = response.error_for_status().unwrap_err();
        assert!(error.is_status());
        classes.push(error.class());
    }
    assert_eq!(
        classes,
        [
            ErrorClass::Transient,
            ErrorClass::IdempotentOnly,
            ErrorClass::Permanent
        ]
    );
}

#[tokio::test]
async fn an_unbuildable_request_is_permanent() {
    let error = reqwest::Client::new()
        .get("http://[::1")
        .send()
        .await
        .unwrap_err();
    assert!(error.is_builder(), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Permanent);
}
