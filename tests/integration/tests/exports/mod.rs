//! An export receiver on 127.0.0.1 (hyper, HTTP/1.1) for the release test: it stores each
//! export once per `Idempotency-Key` (a repeat with a key it has seen is answered 200 and not
//! stored again), and answers a body that does not match its schema with 422 (permanent).

use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// What the receiver saw and kept.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Every request received: its body and `Idempotency-Key`.
    pub received: Vec<(String, Option<String>)>,
    /// The exports stored, each once.
    pub stored: Vec<String>,
    keys: HashSet<String>,
}

/// A body matches the schema when it is a JSON object with an `"invoice"` field (the check is
/// a stand-in for a real schema validator).
fn matches_schema(body: &str) -> bool {
    body.starts_with('{') && body.contains("\"invoice\"")
}

/// Start the receiver; return its address and its ledger.
pub async fn receiver() -> (SocketAddr, Arc<Mutex<Ledger>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ledger: Arc<Mutex<Ledger>> = Arc::default();
    let shared = ledger.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let ledger = shared.clone();
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let ledger = ledger.clone();
                async move {
                    let key = request
                        .headers()
                        .get("idempotency-key")
                        .map(|v| v.to_str().unwrap().to_owned());
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let body = String::from_utf8_lossy(&body).into_owned();
                    let status = {
                        let mut ledger = ledger.lock().unwrap();
                        ledger.received.push((body.clone(), key.clone()));
                        if !matches_schema(&body) {
                            StatusCode::UNPROCESSABLE_ENTITY
                        } else if key.as_ref().is_some_and(|k| !ledger.keys.insert(k.clone())) {
                            // A repeat of an export already stored: acknowledged, not stored.
                            StatusCode::OK
                        } else {
                            ledger.stored.push(body);
                            StatusCode::CREATED
                        }
                    };
                    let reply = http::Response::builder()
                        .status(status)
                        .body(Full::new(Bytes::from_static(b"")))
                        .unwrap();
                    Ok::<_, Infallible>(reply)
                }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, ledger)
}
