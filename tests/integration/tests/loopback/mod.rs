//! A hyper HTTP/1.1 server on 127.0.0.1 (port 0) for the front-end tests: it records each
//! request and answers by a script.

use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// What a server saw: each request's method, body and `Idempotency-Key` header.
pub type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

/// A hyper server answering request `n` (1-based) with `respond(n)`: status and `Retry-After`.
pub async fn serve(respond: fn(usize) -> (StatusCode, Option<&'static str>)) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let log = log.clone();
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let log = log.clone();
                async move {
                    let method = request.method().to_string();
                    let key = request
                        .headers()
                        .get("idempotency-key")
                        .map(|v| v.to_str().unwrap().to_owned());
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let n = {
                        let mut log = log.lock().unwrap();
                        log.push((method, String::from_utf8_lossy(&body).into_owned(), key));
                        log.len()
                    };
                    let (status, wait) = respond(n);
                    let mut reply = http::Response::builder().status(status);
                    if let Some(wait) = wait {
                        reply = reply.header("retry-after", wait);
                    }
                    Ok::<_, Infallible>(reply.body(Full::new(Bytes::from("answer"))).unwrap())
                }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, seen)
}

/// One scripted answer: a status and the headers that go with it.
#[allow(dead_code)]
pub type Answer = (StatusCode, &'static [(&'static str, &'static str)]);

/// A hyper server answering request `n` (1-based) with `answers[n - 1]`, then 200 for ever;
/// how many requests it received.
#[allow(dead_code)] // Not every test file that shares this module uses it.
pub async fn serve_answers(answers: &'static [Answer]) -> (SocketAddr, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(Mutex::new(0usize));
    let seen = count.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let seen = seen.clone();
                async move {
                    let _ = request.into_body().collect().await;
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        *seen += 1;
                        *seen
                    };
                    let (status, headers) =
                        answers.get(n - 1).copied().unwrap_or((StatusCode::OK, &[]));
                    let mut reply = http::Response::builder().status(status);
                    for (name, value) in headers {
                        reply = reply.header(*name, *value);
                    }
                    Ok::<_, Infallible>(reply.body(Full::new(Bytes::from("answer"))).unwrap())
                }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, count)
}
