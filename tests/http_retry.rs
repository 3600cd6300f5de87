//! `tower::HttpRetryLayer` (features `tower` and `http`): statuses by the `http` table,
//! `Retry-After` honoured, idempotent-only outcomes retried only for idempotent requests,
//! errors classified through their source chain, and request bodies replayed from a bounded
//! buffer. Time-based cases run on tokio's paused clock.
#![deny(warnings, unused_qualifications)]

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use retry_kit::tower::{BoxError, HttpFailure, HttpRetryLayer, ReplayBody};
use retry_kit::{CircuitBreaker, Failure, PerKey, RetryPolicy};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

/// What the server answers to each call, in order, and what it received.
type Answer = Result<Response<&'static str>, BoxError>;

#[derive(Clone, Default)]
struct Server {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// Each request's method and whole body, as the server read it.
    received: Arc<Mutex<Vec<(Method, Bytes)>>>,
}

impl Server {
    fn answering(answers: Vec<Answer>) -> Self {
        Server {
            answers: Arc::new(Mutex::new(answers.into())),
            received: Arc::default(),
        }
    }

    fn bodies(&self) -> Vec<Bytes> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| b.clone())
            .collect()
    }
}

fn status(code: u16) -> Answer {
    Ok(Response::builder().status(code).body("").unwrap())
}

impl<B> Service<Request<ReplayBody<B>>> for Server
where
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ReplayBody<B>>) -> Self::Future {
        let server = self.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            server.received.lock().unwrap().push((parts.method, body));
            let answer = server.answers.lock().unwrap().pop_front();
            answer.unwrap_or_else(|| status(200))
        })
    }
}

/// A body that arrives in several chunks, as a streamed upload does.
struct Chunks(VecDeque<&'static str>);

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(
            self.0
                .pop_front()
                .map(|c| Ok(Frame::data(Bytes::from_static(c.as_bytes())))),
        )
    }
}

fn post(body: &'static str) -> Request<String> {
    Request::post("http://api.test/orders")
        .body(body.to_owned())
        .unwrap()
}

fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(100)).attempts(4)
}

#[tokio::test(start_paused = true)]
async fn a_post_body_is_replayed_whole_on_every_attempt() {
    let server = Server::answering(vec![status(503), status(503)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let response = client.call(post("{\"qty\":2}")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.bodies(), vec![Bytes::from("{\"qty\":2}"); 3]);
}

#[tokio::test(start_paused = true)]
async fn a_streamed_body_is_replayed_chunk_for_chunk() {
    let server = Server::answering(vec![status(429)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let body = Chunks(["ab", "cd", "ef"].into());
    let request = Request::put("http://api.test/blob").body(body).unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies(), vec![Bytes::from("abcdef"); 2]);
}

#[tokio::test(start_paused = true)]
async fn a_body_over_the_bound_is_sent_once() {
    let server = Server::answering(vec![status(503)]);
    let mut client = HttpRetryLayer::new(policy())
        .body_limit(4)
        .layer(server.clone());
    let body = Chunks(["ab", "cd", "ef"].into());
    let request = Request::put("http://api.test/blob").body(body).unwrap();
    let response = client.call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.bodies(), vec![Bytes::from("abcdef")]);
}

#[tokio::test(start_paused = true)]
async fn a_body_at_the_bound_is_replayed() {
    let server = Server::answering(vec![status(503)]);
    let mut client = HttpRetryLayer::new(policy())
        .body_limit(6)
        .layer(server.clone());
    let body = Chunks(["ab", "cd", "ef"].into());
    let request = Request::put("http://api.test/blob").body(body).unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_500_is_retried_for_idempotent_requests_only() {
    // POST: the server may have acted, so the 500 is the answer.
    let server = Server::answering(vec![status(500)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let response = client.call(post("x")).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(server.bodies().len(), 1);

    // PUT is idempotent.
    let server = Server::answering(vec![status(500)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::put("http://api.test/x")
        .body(String::new())
        .unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);

    // A POST with an Idempotency-Key may be repeated.
    let server = Server::answering(vec![status(502)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::post("http://api.test/orders")
        .header("Idempotency-Key", "order-17")
        .body(String::from("x"))
        .unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_client_error_is_the_answer() {
    let server = Server::answering(vec![status(404)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    assert_eq!(
        client.call(request).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(server.bodies().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_sets_the_delay() {
    let busy = Response::builder()
        .status(429)
        .header("Retry-After", "7")
        .body("")
        .unwrap();
    let server = Server::answering(vec![Ok(busy)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let start = Instant::now();
    assert_eq!(
        client.call(post("x")).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(start.elapsed(), Duration::from_secs(7));
}

/// A client error that wraps the I/O error underneath, as hyper's do.
#[derive(Debug)]
struct Connect(std::io::Error);

impl std::fmt::Display for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connect failed")
    }
}

impl std::error::Error for Connect {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[tokio::test(start_paused = true)]
async fn errors_are_classified_through_their_source_chain() {
    let refused = Connect(std::io::ErrorKind::ConnectionRefused.into());
    let server = Server::answering(vec![Err(Box::new(refused))]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    assert_eq!(
        client.call(post("x")).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(server.bodies().len(), 2);

    // An I/O timeout may have reached the server: a POST is not repeated.
    let timed_out = Connect(std::io::ErrorKind::TimedOut.into());
    let server = Server::answering(vec![Err(Box::new(timed_out))]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let error = client.call(post("x")).await.unwrap_err();
    assert_eq!(error.to_string(), "connect failed");
    assert_eq!(server.bodies().len(), 1);

    // A client's own timeout error (tower's reads "request timed out"): idempotent-only, so a
    // GET is repeated and a POST is not.
    let server = Server::answering(vec![Err("request timed out".into())]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);
    let server = Server::answering(vec![Err("request timed out".into())]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    assert!(client.call(post("x")).await.is_err());
    assert_eq!(server.bodies().len(), 1);

    // hyper's error when a kept-alive connection closes under a request: maybe processed.
    let closed = "connection closed before message completed";
    let server = Server::answering(vec![Err(closed.into())]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::delete("http://api.test/x")
        .body(String::new())
        .unwrap();
    assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);

    // An error nothing in the chain explains is permanent.
    let server = Server::answering(vec![Err("tls handshake failed".into())]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let request = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    assert!(client.call(request).await.is_err());
    assert_eq!(server.bodies().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_last_retryable_response_is_returned_when_attempts_run_out() {
    let server = Server::answering((0..4).map(|_| status(503)).collect());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let mut client = HttpRetryLayer::new(policy())
        .on_failure(move |f: &Failure<'_, HttpFailure<&'static str>>| {
            record.lock().unwrap().push((f.attempt, f.error.status()));
        })
        .layer(server.clone());
    let response = client.call(post("x")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.bodies().len(), 4);
    let statuses: Vec<_> = seen.lock().unwrap().clone();
    assert_eq!(statuses.len(), 4);
    assert!(
        statuses
            .iter()
            .all(|(_, s)| *s == Some(StatusCode::SERVICE_UNAVAILABLE))
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_before_the_server_is_called() {
    static BACKEND: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));
    let server = Server::answering((0..8).map(|_| status(503)).collect());
    let mut client = HttpRetryLayer::new(policy().attempts(2))
        .circuit(&BACKEND)
        .layer(server.clone());
    assert_eq!(
        client.call(post("x")).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let error = client.call(post("x")).await.unwrap_err();
    assert!(error.to_string().contains("circuit"), "{error}");
    assert_eq!(server.bodies().len(), 2);
}

/// A server that answers 503 to its first request before reading any of the body (or after
/// reading only the first chunk), then reads the next request whole.
#[derive(Clone)]
struct Impatient {
    calls: Arc<Mutex<u32>>,
    read_first_chunk: bool,
    received: Arc<Mutex<Vec<Bytes>>>,
}

impl Service<Request<ReplayBody<Chunks>>> for Impatient {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ReplayBody<Chunks>>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let first = {
                let mut calls = this.calls.lock().unwrap();
                *calls += 1;
                *calls == 1
            };
            let mut body = req.into_body();
            if first {
                if this.read_first_chunk {
                    body.frame().await.unwrap().unwrap();
                }
                return status(503);
            }
            let bytes = body.collect().await.unwrap().to_bytes();
            this.received.lock().unwrap().push(bytes);
            status(200)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_the_server_did_not_finish_reading_is_sent_whole_next_time() {
    for read_first_chunk in [false, true] {
        let server = Impatient {
            calls: Arc::default(),
            read_first_chunk,
            received: Arc::default(),
        };
        let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
        let body = Chunks(["ab", "cd", "ef"].into());
        let request = Request::put("http://api.test/blob").body(body).unwrap();
        assert_eq!(client.call(request).await.unwrap().status(), StatusCode::OK);
        assert_eq!(
            *server.received.lock().unwrap(),
            vec![Bytes::from("abcdef")]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_per_key_breaker_opens_for_the_failing_host_only() {
    static HOSTS: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(2, Duration::from_secs(30)));
    let server = Server::answering((0..2).map(|_| status(503)).collect());
    let mut client = HttpRetryLayer::new(policy().attempts(2))
        .circuit(&HOSTS)
        .layer(server.clone());
    let get = |uri: &str| Request::get(uri).body(String::new()).unwrap();

    // Two 503s from a.test open a.test's breaker.
    let answer = client.call(get("http://a.test/x")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The same authority spelled with its default port is the same host: refused.
    assert!(client.call(get("http://a.test:80/y")).await.is_err());
    // b.test has its own breaker, still closed.
    let answer = client.call(get("http://b.test/x")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 3);
}

/// A server that never answers.
#[derive(Clone, Default)]
struct Silent(Arc<Mutex<u32>>);

impl Service<Request<ReplayBody<String>>> for Silent {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
        *self.0.lock().unwrap() += 1;
        Box::pin(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_is_retried_for_idempotent_requests_only() {
    let server = Silent::default();
    let mut client = HttpRetryLayer::new(policy().attempts(3))
        .attempt_timeout(Duration::from_secs(2))
        .layer(server.clone());
    let start = Instant::now();
    let request = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    let error = client.call(request).await.unwrap_err();
    assert!(error.is::<retry_kit::TimedOut>(), "{error}");
    assert_eq!(*server.0.lock().unwrap(), 3);
    // Three 2 s timeouts and two delays of at most 100 ms (jittered), on the virtual clock.
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_secs(6), "{elapsed:?}");
    assert!(elapsed <= Duration::from_millis(6200), "{elapsed:?}");

    let server = Silent::default();
    let mut client = HttpRetryLayer::new(policy().attempts(3))
        .attempt_timeout(Duration::from_secs(2))
        .layer(server.clone());
    assert!(client.call(post("x")).await.is_err());
    assert_eq!(
        *server.0.lock().unwrap(),
        1,
        "a POST may have been processed"
    );
}

#[test]
fn the_service_is_clone_and_its_futures_are_send() {
    fn clone_and_send<S: Clone + Send>(_: &S) {}
    fn send<F: Future + Send>(_: &F) {}
    let mut client = HttpRetryLayer::new(policy()).layer(Server::default());
    clone_and_send(&client);
    let future = client.call(post("x"));
    send(&future);
}

/// A server that reads each body frame by frame as hyper's client sends it: it stops at the
/// trailers (the last frame) or once an exact size hint's bytes have arrived, and an error
/// from the body fails the call (as hyper fails the request). It records what it received
/// whole: the size hint the request was framed by, the bytes, and the trailers.
#[derive(Clone, Default)]
struct Strict {
    answers: Arc<Mutex<VecDeque<u16>>>,
    calls: Arc<Mutex<u32>>,
    received: Arc<Mutex<Vec<Received>>>,
}

#[derive(Clone, Debug, PartialEq)]
struct Received {
    framed_as: Option<u64>,
    bytes: Bytes,
    trailers: Option<http::HeaderMap>,
}

impl Strict {
    fn answering(answers: Vec<u16>) -> Self {
        Strict {
            answers: Arc::new(Mutex::new(answers.into())),
            ..Strict::default()
        }
    }

    fn calls(&self) -> u32 {
        *self.calls.lock().unwrap()
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl<B> Service<Request<ReplayBody<B>>> for Strict
where
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ReplayBody<B>>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            *this.calls.lock().unwrap() += 1;
            let mut body = req.into_body();
            let framed_as = body.size_hint().exact();
            let mut bytes = Vec::new();
            let mut trailers = None;
            while framed_as.is_none_or(|n| (bytes.len() as u64) < n) {
                match body.frame().await {
                    None => break,
                    Some(Err(e)) => return Err(e),
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => bytes.extend_from_slice(&data),
                        Err(frame) => {
                            trailers = frame.into_trailers().ok();
                            break;
                        }
                    },
                }
            }
            this.received.lock().unwrap().push(Received {
                framed_as,
                bytes: Bytes::from(bytes),
                trailers,
            });
            let code = this.answers.lock().unwrap().pop_front().unwrap_or(200);
            status(code)
        })
    }
}

/// A streamed body whose source fails after its first chunk (and, with `goes_on`, then
/// yields more data, as a stream that skips a failed read would).
struct FailingSource {
    frames: VecDeque<Result<&'static str, std::io::Error>>,
}

impl FailingSource {
    fn new(goes_on: bool) -> Self {
        let mut frames: VecDeque<_> = [
            Ok("amount=10"),
            // A reset from where the upload is read (a proxied stream): a retryable kind.
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the upload's source failed",
            )),
        ]
        .into();
        if goes_on {
            frames.push_back(Ok("0"));
        }
        FailingSource { frames }
    }
}

impl Body for FailingSource {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(
            self.frames
                .pop_front()
                .map(|frame| frame.map(|chunk| Frame::data(Bytes::from_static(chunk.as_bytes())))),
        )
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_whose_source_failed_is_not_replayed_shortened() {
    for goes_on in [false, true] {
        let server = Strict::default();
        let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
        let put = Request::put("http://api.test/accounts/7")
            .body(FailingSource::new(goes_on))
            .unwrap();
        let error = client.call(put).await.unwrap_err();
        assert!(error.to_string().contains("source failed"), "{error}");
        // One attempt, and nothing received whole: no `amount=10` (or `amount=100`) stored as
        // the body.
        assert_eq!(server.calls(), 1, "goes on after the error: {goes_on}");
        assert_eq!(server.received(), []);
    }
}

#[tokio::test(start_paused = true)]
async fn a_replay_is_framed_as_the_first_attempt_with_the_same_content_length() {
    let server = Strict::answering(vec![503, 503]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let body = "x".repeat(40_000);
    let put = Request::put("http://api.test/blob")
        .body(body.clone())
        .unwrap();
    assert_eq!(client.call(put).await.unwrap().status(), StatusCode::OK);
    let received = server.received();
    assert_eq!(received.len(), 3);
    for r in received {
        assert_eq!(r.framed_as, Some(40_000));
        assert_eq!(r.bytes, body.as_bytes());
    }
}

/// A body of data and then trailers, as a gRPC-style upload ends.
struct WithTrailers(Option<Frame<Bytes>>, Option<Frame<Bytes>>);

impl Body for WithTrailers {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().or_else(|| self.1.take()).map(Ok))
    }
}

#[tokio::test(start_paused = true)]
async fn replayed_trailers_are_sent_again_on_every_attempt() {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("checksum", "abc123".parse().unwrap());
    let server = Strict::answering(vec![503]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let body = WithTrailers(
        Some(Frame::data(Bytes::from_static(b"payload"))),
        Some(Frame::trailers(trailers.clone())),
    );
    let put = Request::put("http://api.test/blob").body(body).unwrap();
    assert_eq!(client.call(put).await.unwrap().status(), StatusCode::OK);
    let received = server.received();
    assert_eq!(received.len(), 2);
    for r in received {
        assert_eq!(r.bytes, "payload");
        assert_eq!(r.trailers.as_ref(), Some(&trailers));
    }
}

#[tokio::test]
async fn two_live_copies_read_alternately_each_get_the_whole_body() {
    // An inner service may go on driving a cancelled attempt's body while the next attempt
    // reads its own copy: neither copy may lose the chunks the other read from the source.
    let mut first = ReplayBody::new(Chunks(["ab", "cd", "ef"].into()), 1024);
    let mut second = first.replay().unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    // The second copy reads two frames for each of the first's, so it overtakes it and reads
    // from the source while the first is still behind.
    loop {
        let x = first.frame().await;
        let y = second.frame().await;
        let z = second.frame().await;
        if let Some(f) = &x {
            a.extend_from_slice(f.as_ref().unwrap().data_ref().unwrap());
        }
        for f in [&y, &z].into_iter().flatten() {
            b.extend_from_slice(f.as_ref().unwrap().data_ref().unwrap());
        }
        if x.is_none() && z.is_none() {
            break;
        }
    }
    assert_eq!((&a[..], &b[..]), (&b"abcdef"[..], &b"abcdef"[..]));
}

/// A source whose frames the test hands over one at a time, pending until then. Like most
/// bodies (hyper's, a channel's, a stream that sleeps between messages), it keeps the waker of
/// the last poll only.
#[derive(Clone, Default)]
struct Gate(Arc<Mutex<GateState>>);

#[derive(Default)]
struct GateState {
    frames: VecDeque<&'static str>,
    ended: bool,
    waker: Option<Waker>,
}

impl Gate {
    fn send(&self, chunk: &'static str) {
        let mut state = self.0.lock().unwrap();
        state.frames.push_back(chunk);
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    fn end(&self) {
        let mut state = self.0.lock().unwrap();
        state.ended = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }
}

impl Body for Gate {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut state = self.0.lock().unwrap();
        if let Some(chunk) = state.frames.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(chunk.as_bytes())))));
        }
        if state.ended {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Poll `body` once with `waker`: `None` while pending, else the data it read (empty at its
/// end).
fn poll_with(body: &mut ReplayBody<Gate>, waker: &Arc<Wakes>) -> Option<Bytes> {
    let waker = Waker::from(waker.clone());
    match Pin::new(body).poll_frame(&mut Context::from_waker(&waker)) {
        Poll::Pending => None,
        Poll::Ready(None) => Some(Bytes::new()),
        Poll::Ready(Some(frame)) => Some(frame.unwrap().into_data().unwrap()),
    }
}

#[test]
fn a_copy_waiting_on_the_shared_source_is_woken_when_another_copy_reads_from_it() {
    // A hedged client stream: two attempts' copies wait for the next message of one source,
    // which wakes only the copy that polled it last. The other copy must be woken too, or it
    // stalls until the peer gives up on it (forever, without a deadline).
    let source = Gate::default();
    let mut first = ReplayBody::new(source.clone(), 1024);
    let mut second = first.replay().unwrap();
    let (one, two) = (Arc::new(Wakes::default()), Arc::new(Wakes::default()));
    assert_eq!(poll_with(&mut first, &one), None);
    assert_eq!(poll_with(&mut second, &two), None);

    source.send("message 1");
    assert_eq!(
        two.0.load(Ordering::SeqCst),
        1,
        "the source wakes the last poller"
    );
    assert_eq!(poll_with(&mut second, &two).unwrap(), "message 1");
    assert!(one.0.load(Ordering::SeqCst) >= 1, "the first copy is woken");
    assert_eq!(poll_with(&mut first, &one).unwrap(), "message 1");

    // The end too: both wait again, the source ends, the copy that meets it wakes the other.
    let woken = one.0.load(Ordering::SeqCst);
    assert_eq!(poll_with(&mut first, &one), None);
    assert_eq!(poll_with(&mut second, &two), None);
    source.end();
    assert_eq!(poll_with(&mut second, &two).unwrap(), "");
    assert!(one.0.load(Ordering::SeqCst) > woken, "woken at the end");
    assert_eq!(poll_with(&mut first, &one).unwrap(), "");
}

#[test]
fn a_copy_dropped_while_waiting_wakes_the_copies_the_source_does_not_know() {
    // The cancelled attempt's copy polled the source last, so the source holds its waker only:
    // dropping it must wake the other copy, which then polls the source itself.
    let source = Gate::default();
    let mut first = ReplayBody::new(source.clone(), 1024);
    let mut cancelled = first.replay().unwrap();
    let (one, two) = (Arc::new(Wakes::default()), Arc::new(Wakes::default()));
    assert_eq!(poll_with(&mut first, &one), None);
    assert_eq!(poll_with(&mut cancelled, &two), None);
    drop(cancelled);
    assert_eq!(one.0.load(Ordering::SeqCst), 1);
    assert_eq!(poll_with(&mut first, &one), None);
    source.send("message 1");
    assert_eq!(one.0.load(Ordering::SeqCst), 2, "woken by the source now");
    assert_eq!(poll_with(&mut first, &one).unwrap(), "message 1");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_an_attempt_under_the_layers_attempt_timeout() {
    let server = Silent::default();
    let policy = policy().attempts(3).deadline(Duration::from_millis(2500));
    let mut client = HttpRetryLayer::new(policy)
        .attempt_timeout(Duration::from_secs(1))
        .layer(server.clone());
    let start = Instant::now();
    let request = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    let error = client.call(request).await.unwrap_err();
    assert!(error.is::<retry_kit::TimedOut>(), "{error}");
    // 1 s, 100 ms, 1 s, 100 ms, then 300 ms left: the call ends at its deadline.
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    assert_eq!(*server.0.lock().unwrap(), 3);
}

/// A server that reads the whole body, then never answers.
#[derive(Clone, Default)]
struct ReadsThenHangs(Arc<Mutex<u32>>);

impl Service<Request<ReplayBody<String>>> for ReadsThenHangs {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<ReplayBody<String>>) -> Self::Future {
        *self.0.lock().unwrap() += 1;
        Box::pin(async move {
            let _ = req.into_body().collect().await;
            std::future::pending().await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_over_the_bound_that_times_out_returns_the_timeout_without_waiting_to_retry() {
    // Before: the timeout was retried, and after a backoff the second attempt failed with
    // "longer than the replay bound" in place of the timeout.
    let server = ReadsThenHangs::default();
    let mut client = HttpRetryLayer::new(policy().attempts(3))
        .body_limit(4)
        .attempt_timeout(Duration::from_secs(1))
        .layer(server.clone());
    let start = Instant::now();
    let put = Request::put("http://api.test/blob")
        .body(String::from("longer than four bytes"))
        .unwrap();
    let error = client.call(put).await.unwrap_err();
    assert!(error.is::<retry_kit::TimedOut>(), "{error}");
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(*server.0.lock().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_503_to_a_body_over_the_bound_is_a_breaker_failure_not_an_answer() {
    // The request cannot go again, but the server is failing: the breaker counts it. Before,
    // a body over the bound made every failure "permanent", which the breaker counts as an
    // answer from a healthy server.
    static OVER_BOUND: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));
    let server = Server::answering(vec![status(503), status(503)]);
    let mut client = HttpRetryLayer::new(policy())
        .body_limit(4)
        .circuit(&OVER_BOUND)
        .layer(server.clone());
    for _ in 0..2 {
        let answer = client.call(post("longer than four bytes")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(server.bodies().len(), 2, "each sent once");
    assert_eq!(OVER_BOUND.state(), retry_kit::CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn the_layer_keys_per_host_entries_by_host_and_port_as_documented() {
    static BY_AUTHORITY: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(1, Duration::from_secs(30)));
    let server = Server::answering(vec![status(503)]);
    let mut client = HttpRetryLayer::new(policy().attempts(1))
        .circuit(&BY_AUTHORITY)
        .layer(server.clone());
    let get = Request::get("https://api.example/x")
        .body(String::new())
        .unwrap();
    assert_eq!(
        client.call(get).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    // `host:port`, the scheme's default port filled in: what a user looks the entry up by.
    let entry = BY_AUTHORITY.get("api.example:443");
    assert_eq!(entry.state(), retry_kit::CircuitState::Open);
    assert_eq!(entry.key().as_deref(), Some("api.example:443"));
    assert_eq!(BY_AUTHORITY.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_layer_made_from_a_cell_reads_the_policy_it_holds_when_each_request_starts() {
    static POLICY: retry_kit::PolicyCell =
        retry_kit::PolicyCell::new(RetryPolicy::fixed(Duration::from_millis(100)).attempts(2));
    let server = Server::answering((0..10).map(|_| status(503)).collect());
    let mut client = HttpRetryLayer::from_cell(&POLICY).layer(server.clone());
    let get = || {
        Request::get("http://api.test/a")
            .body(String::new())
            .unwrap()
    };
    assert_eq!(
        client.call(get()).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(server.bodies().len(), 2);

    POLICY.set(RetryPolicy::fixed(Duration::from_millis(100)).attempts(3));
    assert_eq!(
        client.call(get()).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(server.bodies().len(), 2 + 3);
}

/// What a server saw of the attempt it served: its number and key when `call` was made and on
/// every poll of its answer.
type Seen = Arc<Mutex<Vec<(&'static str, u32, u128)>>>;

/// A server whose answer takes two polls (it yields once), recording `current_attempt()` in
/// `call` and on each poll; it answers 503 to its first request, then 200.
#[derive(Clone, Default)]
struct Watching {
    calls: Arc<Mutex<u32>>,
    seen: Seen,
}

fn attempt_now() -> (u32, u128) {
    let attempt = retry_kit::current_attempt().expect("inside an attempt");
    (attempt.number(), attempt.idempotency_key().as_u128())
}

/// The answer of a [`Watching`] server: not `Unpin` (the layer must not ask it to be).
struct Yielding {
    polls: u32,
    code: u16,
    seen: Seen,
    _pinned: std::marker::PhantomPinned,
}

impl Future for Yielding {
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        // SAFETY: no field is pinned structurally; nothing is moved out.
        let this = unsafe { self.get_unchecked_mut() };
        let (number, key) = attempt_now();
        this.seen.lock().unwrap().push(("poll", number, key));
        this.polls += 1;
        if this.polls == 1 {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(status(this.code))
    }
}

impl Service<Request<ReplayBody<String>>> for Watching {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = Yielding;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Yielding {
        let (number, key) = attempt_now();
        self.seen.lock().unwrap().push(("call", number, key));
        let mut calls = self.calls.lock().unwrap();
        *calls += 1;
        Yielding {
            polls: 0,
            code: if *calls == 1 { 503 } else { 200 },
            seen: Arc::clone(&self.seen),
            _pinned: std::marker::PhantomPinned,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_attempt_is_visible_in_the_inner_service_on_every_attempt() {
    let server = Watching::default();
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let response = client.call(Request::new(String::new())).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let seen = server.seen.lock().unwrap().clone();
    let steps: Vec<_> = seen.iter().map(|(step, n, _)| (*step, *n)).collect();
    assert_eq!(
        steps,
        [
            ("call", 1),
            ("poll", 1),
            ("poll", 1),
            ("call", 2),
            ("poll", 2),
            ("poll", 2)
        ]
    );
    assert!(
        seen.iter().all(|(_, _, key)| *key == seen[0].2),
        "one key for every attempt: {seen:?}"
    );
    assert!(
        retry_kit::current_attempt().is_none(),
        "only inside attempts"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_dropped_while_waiting_to_retry_releases_its_breaker_permit() {
    static WAITING: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));
    let server = Server::answering((0..4).map(|_| status(503)).collect());
    let mut client = HttpRetryLayer::new(policy())
        .circuit(&WAITING)
        .layer(server.clone());
    {
        // Attempt 1 fails (the breaker counts 1), the retry's permit is taken and the 100 ms
        // wait begins; the request is dropped during it.
        let mut pending = std::pin::pin!(client.call(post("x")));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(pending.as_mut().poll(&mut cx).is_pending());
        assert_eq!(server.bodies().len(), 1);
    }
    // The dropped permit counted as neither success nor failure: a failure would have been the
    // second of a threshold of 2.
    assert_eq!(WAITING.state(), retry_kit::CircuitState::Closed);
    // The next request's first failure is the second: the breaker opens and refuses the retry.
    let response = client.call(post("x")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.bodies().len(), 2);
    assert_eq!(WAITING.state(), retry_kit::CircuitState::Open);
}

/// A server that answers its first request with 503 and is then never ready again.
#[derive(Clone, Default)]
struct Stuck {
    calls: Arc<Mutex<u32>>,
    readiness_asked: Arc<Mutex<u32>>,
}

impl Service<Request<ReplayBody<String>>> for Stuck {
    type Response = Response<&'static str>;
    type Error = BoxError;
    type Future = std::future::Ready<Answer>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        *self.readiness_asked.lock().unwrap() += 1;
        Poll::Pending
    }

    fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
        *self.calls.lock().unwrap() += 1;
        std::future::ready(status(503))
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_for_the_inner_service_to_be_ready_within_its_attempt_timeout() {
    let server = Stuck::default();
    let mut client = HttpRetryLayer::new(policy().attempts(3))
        .attempt_timeout(Duration::from_secs(1))
        .layer(server.clone());
    let started = Instant::now();
    // The caller made the service ready for the first attempt; the retries wait for it.
    let get = Request::get("http://api.test/x")
        .body(String::new())
        .unwrap();
    let error = client.call(get).await.unwrap_err();
    assert!(error.is::<retry_kit::TimedOut>(), "{error}");
    assert_eq!(*server.calls.lock().unwrap(), 1, "never ready again");
    assert!(*server.readiness_asked.lock().unwrap() >= 2);
    // Two retries, each cut off after 1 s, after two 100 ms waits.
    assert_eq!(started.elapsed(), Duration::from_millis(2200));
}

#[tokio::test]
async fn retry_waits_are_recorded_not_slept_under_record_sleeps_async() {
    let server = Server::answering(vec![status(503), status(503)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let (response, slept) = retry_kit::testing::record_sleeps_async(client.call(post("x"))).await;
    assert_eq!(response.unwrap().status(), StatusCode::OK);
    assert_eq!(slept, [Duration::from_millis(100); 2]);
    assert_eq!(server.bodies().len(), 3);
}

/// The future is `Send` whenever what it holds is, whatever the inner future's `Unpin`: checked
/// at compile time, for a boxed answer and for one that is not `Unpin`.
const _: () = {
    fn send<T: Send>() {}
    #[allow(dead_code)]
    fn futures_are_send() {
        send::<retry_kit::tower::HttpRetryFuture<Server, String>>();
        send::<retry_kit::tower::HttpRetryFuture<Watching, String>>();
    }
};

/// The boxed future the layer used to return was `Unpin`, and callers relied on it
/// (`futures::poll!(&mut fut)`, `select(fut, ..)`): the named future is `Unpin` whenever the
/// inner service's future is, its waits and timers boxed. Checked at compile time, with a
/// breaker, a hook and an attempt timeout, whose states hold those timers.
const _: () = {
    fn unpin<T: Unpin>() {}
    #[allow(dead_code)]
    fn futures_over_unpin_answers_are_unpin() {
        type Hooked = fn(&Failure<'_, HttpFailure<&'static str>>);
        unpin::<retry_kit::tower::HttpRetryFuture<Server, String>>();
        unpin::<
            retry_kit::tower::HttpRetryFuture<
                Server,
                String,
                Hooked,
                retry_kit::run::AttemptTimeout,
            >,
        >();
    }
};

#[tokio::test(start_paused = true)]
async fn a_future_is_polled_by_reference_and_retries_on_the_next_poll() {
    // `poll` through `&mut` (what `select!` and `poll!` do), the wait between attempts included.
    let server = Server::answering(vec![status(503)]);
    let mut client = HttpRetryLayer::new(policy()).layer(server.clone());
    let mut pending = client.call(post("x"));
    let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut pending).poll(cx))).await;
    assert!(first.is_pending(), "waiting to retry after the 503");
    assert_eq!(server.bodies().len(), 1);
    let response = (&mut pending).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.bodies().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn one_host_written_in_other_cases_or_forms_is_one_per_key_entry() {
    // As reqwest's URL parser writes hosts (lower case, canonical IPv6), so that
    // `PER_HOST.get("host:port")` finds the entry whatever case the request's URI used.
    static PER_HOST: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(2, Duration::from_secs(600)));
    let server = Server::answering((0..8).map(|_| status(503)).collect());
    let mut client = HttpRetryLayer::new(policy().attempts(2))
        .circuit(&PER_HOST)
        .layer(server.clone());
    let request = |uri: &str| Request::get(uri).body(String::new()).unwrap();
    let answer = client
        .call(request("http://API.Example:8080/a"))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        PER_HOST.get("api.example:8080").state(),
        retry_kit::CircuitState::Open,
        "the entry of api.example:8080"
    );
    // The same host in another case is refused by the same open breaker, unsent.
    assert!(
        client
            .call(request("http://api.EXAMPLE:8080/b"))
            .await
            .is_err()
    );
    assert_eq!(server.bodies().len(), 2);

    let answer = client
        .call(request("http://[0:0:0:0:0:0:0:1]:8083/"))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        PER_HOST.get("[::1]:8083").state(),
        retry_kit::CircuitState::Open
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_without_an_authority_is_keyed_by_its_host_header() {
    // `/orders` with `Host: ...`, as a client sending on a connection of its own writes it:
    // each server its own entry (all such requests shared one before).
    static PER_HOST: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(2, Duration::from_secs(600)));
    let failing = Server::answering((0..4).map(|_| status(503)).collect());
    let mut to_failing = HttpRetryLayer::new(policy().attempts(2))
        .circuit(&PER_HOST)
        .layer(failing.clone());
    let request = |host: &str| {
        Request::get("/orders")
            .header(http::header::HOST, host)
            .body(String::new())
            .unwrap()
    };
    let answer = to_failing.call(request("Down.Example:8081")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        PER_HOST.get("down.example:8081").state(),
        retry_kit::CircuitState::Open
    );
    let healthy = Server::answering(Vec::new());
    let mut to_healthy = HttpRetryLayer::new(policy())
        .circuit(&PER_HOST)
        .layer(healthy.clone());
    let answer = to_healthy.call(request("up.example")).await.unwrap();
    assert_eq!(
        answer.status(),
        StatusCode::OK,
        "another host's breaker is its own"
    );
    assert_eq!(
        PER_HOST.get("up.example:80").state(),
        retry_kit::CircuitState::Closed
    );
}
