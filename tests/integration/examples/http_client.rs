//! A `#[retryable]` reqwest client against a flaky HTTP server this program starts itself on
//! 127.0.0.1 (an ephemeral port; nothing leaves the machine).
//!
//! The server answers `/flaky` with 503 and `Retry-After: 1` twice, then 200; `/missing` is a
//! 404. The client waits out the server's Retry-After on the first path and gives up at once on
//! the second.
//!
//! ```sh
//! cargo run -p retry-kit-integration --example http_client
//! ```

use http::StatusCode;
use http::header::RETRY_AFTER;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use retry_kit::http::StatusError;
use retry_kit::reqwest::error_for_status;
use retry_kit::{Classify, Failure, Next, current_attempt, retryable};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use tokio::net::TcpListener;

/// What can go wrong with a fetch: the transport (classified by `Classify for reqwest::Error`)
/// or the answer (classified by status, waiting at least its `Retry-After`).
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

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Transport(e) => write!(f, "{e}"),
            FetchError::Status(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FetchError {}

fn report(f: &Failure<'_, FetchError>) {
    let next = match f.next {
        Next::Retry(delay) => format!("retrying in {delay:?}"),
        Next::Stop(reason) => format!("giving up ({reason})"),
        _ => "?".to_owned(),
    };
    println!(
        "  attempt {} failed: {} [{}]: {next}",
        f.attempt, f.error, f.class
    );
}

/// A GET is idempotent, so a 502 or a read timeout would be retried too.
#[retryable(attempts = 5, base = "200ms", max_delay = "5s", jitter = "full", idempotent, on_failure = report)]
async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let attempt = current_attempt().map_or(0, |a| a.number());
    println!("  attempt {attempt}: GET {url}");
    let response = error_for_status(client.get(url).send().await?)?;
    Ok(response.text().await?)
}

/// The flaky server: `/flaky` fails twice with 503 + `Retry-After: 1`, `/missing` is a 404.
async fn start_server() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let flaky_hits = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let flaky_hits = flaky_hits.clone();
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let reply = match request.uri().path() {
                    "/flaky" if flaky_hits.fetch_add(1, Ordering::SeqCst) < 2 => {
                        http::Response::builder()
                            .status(StatusCode::SERVICE_UNAVAILABLE)
                            .header(RETRY_AFTER, "1")
                            .body(Full::new(Bytes::from_static(b"warming up")))
                    }
                    "/flaky" => http::Response::builder()
                        .body(Full::new(Bytes::from_static(b"hello from the server"))),
                    _ => http::Response::builder()
                        .status(StatusCode::NOT_FOUND)
                        .body(Full::new(Bytes::new())),
                };
                async move { Ok::<_, Infallible>(reply.expect("a valid static response")) }
            });
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(addr)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = start_server().await?;
    let client = reqwest::Client::new();
    println!("server on http://{addr}");

    println!("GET /flaky (503, 503, then 200):");
    let start = Instant::now();
    let body = fetch(&client, &format!("http://{addr}/flaky")).await?;
    println!("  => {body:?} after {:.1?}\n", start.elapsed());

    println!("GET /missing (404):");
    match fetch(&client, &format!("http://{addr}/missing")).await {
        Ok(body) => println!("  => unexpected success: {body:?}"),
        Err(error) => println!("  => {error} ({}), not retried", error.class()),
    }
    Ok(())
}
