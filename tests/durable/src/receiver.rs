//! The export receiver: an HTTP/1.1 server on loopback that stores each export once per
//! idempotency key (a repeat is answered `200` with nothing stored), and answers each request
//! as a script says: store it, fail with a status, rate-limit it, or store it and then drop
//! the connection or hold it open (the uncertain outcome). Written on raw TCP so that "store,
//! then drop" is exactly that; its client ([`post`]) is hyper's, as a real one would be.

use crate::{Export, ExportError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// How the receiver answers one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Store the export (`201`), or answer `200` if its key is stored already.
    Store,
    /// Answer this status, storing nothing.
    Status(u16),
    /// `429 Too Many Requests` with `Retry-After` in seconds, storing nothing.
    RateLimit(u64),
    /// Store the export, then close the connection without answering.
    StoreThenDrop,
    /// Store the export, say so ([`Receiver::held`]), and keep the connection open without
    /// answering until the client goes away.
    StoreThenHold,
    /// Say so ([`Receiver::held`]), wait for [`Receiver::release`], then answer this status,
    /// storing nothing.
    HoldThenStatus(u16),
}

/// One request as the script sees it.
#[derive(Clone, Debug)]
pub struct Request {
    /// Its `idempotency-key`.
    pub key: String,
    /// The export's interval.
    pub interval: String,
    /// How many requests with this key came before it.
    pub earlier: usize,
}

/// Decides each request's answer.
pub type Script = Arc<dyn Fn(&Request) -> Answer + Send + Sync>;

/// A request the receiver saw.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Its `idempotency-key`.
    pub key: String,
    /// The export's interval.
    pub interval: String,
    /// The attempt number the client sent (`x-attempt`).
    pub attempt: u32,
    /// The worker that sent it (`x-worker`).
    pub worker: String,
    /// The answer it got.
    pub answer: Answer,
}

/// What the receiver saw and holds.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Every request, in order of arrival.
    pub seen: Vec<Seen>,
    /// The exports stored, by key: each stored once.
    pub stored: BTreeMap<String, Export>,
    /// Requests whose key was stored already (answered `200`, nothing stored).
    pub repeats: usize,
}

/// A running receiver.
pub struct Receiver {
    addr: SocketAddr,
    ledger: Arc<Mutex<Ledger>>,
    held: Arc<Notify>,
    release: Arc<Notify>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listen on a free loopback port and answer by `script`.
    pub async fn start(script: Script) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let held = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        let gates = Gates {
            held: Arc::clone(&held),
            release: Arc::clone(&release),
        };
        let l = Arc::clone(&ledger);
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (script, ledger, gates) = (Arc::clone(&script), Arc::clone(&l), gates.clone());
                tokio::spawn(serve(stream, script, ledger, gates));
            }
        });
        Receiver {
            addr,
            ledger,
            held,
            release,
            server,
        }
    }

    /// A receiver that stores everything.
    pub async fn storing() -> Receiver {
        Receiver::start(Arc::new(|_: &Request| Answer::Store)).await
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Read the ledger.
    pub fn ledger<R>(&self, read: impl FnOnce(&Ledger) -> R) -> R {
        read(&self.ledger.lock().expect("the ledger's lock"))
    }

    /// Requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.ledger(|l| l.seen.clone())
    }

    /// Resolves when a request answered [`Answer::StoreThenHold`] has been stored, or one
    /// answered [`Answer::HoldThenStatus`] is waiting.
    pub async fn held(&self) {
        self.held.notified().await
    }

    /// Let the request waiting in [`Answer::HoldThenStatus`] have its answer.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

#[derive(Clone)]
struct Gates {
    held: Arc<Notify>,
    release: Arc<Notify>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve(mut stream: TcpStream, script: Script, ledger: Arc<Mutex<Ledger>>, gates: Gates) {
    let Some((head, body)) = read_request(&mut stream).await else {
        return;
    };
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let Ok(export) = serde_json::from_slice::<Export>(&body) else {
        let _ = stream.write_all(response(400, "", None).as_bytes()).await;
        return;
    };
    let key = header("idempotency-key");
    let (answer, stored_now) = {
        let mut l = ledger.lock().expect("the ledger's lock");
        let earlier = l.seen.iter().filter(|s| s.key == key).count();
        let answer = script(&Request {
            key: key.clone(),
            interval: export.interval.clone(),
            earlier,
        });
        let stores = matches!(
            answer,
            Answer::Store | Answer::StoreThenDrop | Answer::StoreThenHold
        );
        let stored_now = if stores && !l.stored.contains_key(&key) {
            l.stored.insert(key.clone(), export.clone());
            true
        } else {
            if stores {
                l.repeats += 1;
            }
            false
        };
        l.seen.push(Seen {
            key: key.clone(),
            interval: export.interval.clone(),
            attempt: header("x-attempt").parse().unwrap_or(0),
            worker: header("x-worker"),
            answer,
        });
        (answer, stored_now)
    };
    let text = match answer {
        Answer::Store if stored_now => response(201, &key, None),
        Answer::Store => response(200, &key, None),
        Answer::Status(code) => response(code, "", None),
        Answer::RateLimit(secs) => response(429, "", Some(secs)),
        Answer::StoreThenDrop => return,
        Answer::HoldThenStatus(code) => {
            gates.held.notify_one();
            gates.release.notified().await;
            response(code, "", None)
        }
        Answer::StoreThenHold => {
            gates.held.notify_one();
            // Until the client goes away (its process killed): never answer.
            let mut rest = [0u8; 64];
            while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
            return;
        }
    };
    let _ = stream.write_all(text.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The head and body of one request (`content-length` framed).
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[end..end + length].to_vec()))
}

fn response(code: u16, receipt: &str, retry_after: Option<u64>) -> String {
    let reason = match code {
        200 => "OK",
        201 => "Created",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let extra = retry_after.map_or(String::new(), |s| format!("retry-after: {s}\r\n"));
    let body = if receipt.is_empty() {
        String::new()
    } else {
        format!("{{\"receipt\":\"{receipt}\"}}")
    };
    format!(
        "HTTP/1.1 {code} {reason}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Post `export` to the receiver at `addr` with `key`, on a connection of its own.
pub async fn post(
    addr: SocketAddr,
    export: &Export,
    key: &str,
    attempt: u32,
    worker: &str,
) -> Result<(), ExportError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| ExportError::Connect(e.to_string()))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| ExportError::Connect(e.to_string()))?;
    tokio::spawn(connection);
    let body = serde_json::to_vec(export).expect("an export serializes");
    let request = hyper::Request::post(format!("http://{addr}/exports"))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .header("x-attempt", attempt.to_string())
        .header("x-worker", worker)
        .body(Full::new(Bytes::from(body)))
        .expect("a well-formed request");
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| ExportError::Lost(e.to_string()))?;
    let status = answer.status();
    let retry_after = retry_kit::http::retry_after(answer.headers());
    // Read the answer to its end, as a client does before it reuses a connection.
    let _ = answer.into_body().collect().await;
    if status.is_success() {
        Ok(())
    } else {
        Err(ExportError::Status {
            code: status.as_u16(),
            retry_after,
        })
    }
}
