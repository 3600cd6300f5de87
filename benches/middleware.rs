//! What retry costs inside a reqwest client: `retry_kit::reqwest_middleware::RetryMiddleware`
//! against reqwest-retry's `RetryTransientMiddleware` (the retry middleware of the
//! reqwest-middleware project), and the same `ClientWithMiddleware` with no middleware at all.
//! All three are built on one `reqwest::Client` and talk to one HTTP/1.1 server on loopback
//! (keep-alive, so every request after the first reuses a pooled connection).
//!
//! Two cases:
//!
//! - `answered`: `GET /` is answered 200 at once; what the middleware adds on the path every
//!   healthy request takes.
//! - `503_then_200`: `GET /flaky` is answered 503, then 200; both middlewares retry once after
//!   the same backoff (exponential from 1 ms, no jitter: the first retry waits 1 ms, tokio's
//!   timer resolution; retry-kit skips a zero-length sleep and reqwest-retry does not, so zero
//!   would not be the same work). The bare client does the same by hand: send, see the 503, sleep
//!   1 ms, send again. The sleep dominates this case; it says that the retry is made and what
//!   it costs beside a real wait, not how fast a loop is.
//!
//! The client and the server run as tasks of one current-thread tokio runtime on a real clock
//! (a paused clock would fire the connection pool's idle timers), so a figure is a whole round
//! trip through loopback on one core. Before timing, every client is checked to get its 200 and
//! to send exactly the requests the case says.
//!
//! Run: `cargo bench -p retry-kit-benches --bench middleware`; `bash benches/peers.sh middleware`
//! prints the table of benches/README.md, each client as a ratio to the bare one.

use criterion::{Criterion, criterion_group};

mod callgrind_args;
use reqwest::{StatusCode, Url};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::{Jitter as PeerJitter, RetryTransientMiddleware};
use retry_kit::reqwest_middleware::RetryMiddleware;
use retry_kit::{Jitter, RetryPolicy};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// The wait before the one retry of `503_then_200`, in both middlewares.
const BACKOFF: Duration = Duration::from_millis(1);
/// The longest wait of either schedule (never reached: one retry is made).
const CAP: Duration = Duration::from_secs(1);

/// retry-kit's schedule: at most 3 attempts, exponential from `BACKOFF`, no jitter.
const POLICY: RetryPolicy = RetryPolicy::exponential(BACKOFF)
    .max_delay(CAP)
    .jitter(Jitter::None)
    .attempts(3);

/// reqwest-retry's, the same: 2 retries, exponential (base 2) from `BACKOFF`, no jitter.
fn peer_policy() -> ExponentialBackoff {
    ExponentialBackoff::builder()
        .retry_bounds(BACKOFF, CAP)
        .jitter(PeerJitter::None)
        .base(2)
        .build_with_max_retries(2)
}

// ---------------------------------------------------------------------------------------------
// The server.

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
/// Empty, so that the connection goes back to the pool without its body being read.
const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";

/// Requests the server has answered on `/flaky`: even ones get a 503, odd ones a 200.
#[derive(Clone, Default)]
struct Served {
    flaky: Arc<AtomicU64>,
    total: Arc<AtomicU64>,
}

/// Serve HTTP/1.1 on a loopback port until the runtime ends: every request is a head without a
/// body (the clients send `GET`s); `/flaky` alternates 503 and 200, anything else is 200.
async fn serve(served: Served) -> Url {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(connection(stream, served.clone()));
        }
    });
    Url::parse(&format!("http://{addr}/")).expect("a valid URL")
}

/// Answer the requests of one kept-alive connection until the client closes it.
async fn connection(mut stream: TcpStream, served: Served) {
    stream.set_nodelay(true).ok();
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let flaky = buf.starts_with(b"GET /flaky ");
            buf.drain(..end + 4);
            served.total.fetch_add(1, Ordering::Relaxed);
            let answer = if flaky && served.flaky.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                UNAVAILABLE
            } else {
                OK
            };
            if stream.write_all(answer).await.is_err() {
                return;
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The clients.

/// The three clients, on one `reqwest::Client` (one connection pool).
struct Clients {
    bare: ClientWithMiddleware,
    retry_kit: ClientWithMiddleware,
    reqwest_retry: ClientWithMiddleware,
}

impl Clients {
    fn new() -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client without TLS or proxies");
        Clients {
            bare: ClientBuilder::new(client.clone()).build(),
            retry_kit: ClientBuilder::new(client.clone())
                .with(RetryMiddleware::new(POLICY))
                .build(),
            reqwest_retry: ClientBuilder::new(client)
                .with(RetryTransientMiddleware::new_with_policy(peer_policy()))
                .build(),
        }
    }
}

/// One `GET` of `url` through `client`, its body read to the end (so that the connection goes
/// back to the pool); the status it ended with.
async fn get(client: &ClientWithMiddleware, url: &Url) -> StatusCode {
    let response = client.get(url.clone()).send().await.expect("an answer");
    let status = response.status();
    response.bytes().await.expect("the whole body");
    status
}

/// The bare client's `503_then_200`: the retry written by hand, with the middlewares' wait.
async fn get_retrying_by_hand(client: &ClientWithMiddleware, url: &Url) -> StatusCode {
    let status = get(client, url).await;
    if status != StatusCode::SERVICE_UNAVAILABLE {
        return status;
    }
    tokio::time::sleep(BACKOFF).await;
    get(client, url).await
}

/// Which client, and how it makes one call of a case.
#[derive(Clone, Copy)]
enum Contender {
    Bare,
    RetryKit,
    ReqwestRetry,
}

impl Contender {
    const ALL: [Contender; 3] = [
        Contender::Bare,
        Contender::RetryKit,
        Contender::ReqwestRetry,
    ];

    fn name(self) -> &'static str {
        match self {
            Contender::Bare => "bare",
            Contender::RetryKit => "retry_kit",
            Contender::ReqwestRetry => "reqwest_retry",
        }
    }

    async fn call(self, clients: &Clients, url: &Url) -> StatusCode {
        match self {
            // Only the flaky path needs the hand-written retry; on `/` it sends once.
            Contender::Bare => get_retrying_by_hand(&clients.bare, url).await,
            Contender::RetryKit => get(&clients.retry_kit, url).await,
            Contender::ReqwestRetry => get(&clients.reqwest_retry, url).await,
        }
    }
}

/// Every contender gets its 200 with the number of requests the case says, or the case is not
/// measuring what it claims.
fn check(rt: &Runtime, clients: &Clients, served: &Served, url: &Url, requests: u64) {
    for contender in Contender::ALL {
        served.flaky.store(0, Ordering::Relaxed);
        let before = served.total.load(Ordering::Relaxed);
        let status = rt.block_on(contender.call(clients, url));
        let sent = served.total.load(Ordering::Relaxed) - before;
        assert_eq!(status, StatusCode::OK, "{}: {url}", contender.name());
        assert_eq!(sent, requests, "{}: requests for {url}", contender.name());
    }
}

fn middleware(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let served = Served::default();
    let root = rt.block_on(serve(served.clone()));
    let flaky = root.join("flaky").expect("a valid path");
    let clients = Clients::new();

    for (case, url, requests) in [("answered", &root, 1), ("503_then_200", &flaky, 2)] {
        check(&rt, &clients, &served, url, requests);
        let mut group = c.benchmark_group(case);
        for contender in Contender::ALL {
            // Each call starts on a 503: the flaky count is even before it, and every call
            // makes two requests.
            served.flaky.store(0, Ordering::Relaxed);
            group.bench_function(contender.name(), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            let status = contender.call(&clients, url).await;
                            assert_eq!(status, StatusCode::OK);
                        }
                        start.elapsed()
                    })
                })
            });
        }
        group.finish();
    }
}

/// `--only answered/CONTENDER --iters N`: make N requests through one client and print
/// nothing, for counting instructions under callgrind (`benches/instructions.sh middleware`).
/// Loopback traffic makes the count vary by a few tens of instructions per request (the
/// runtime's polls of the socket), against the tens of thousands a request costs.
fn callgrind_mode(args: &[String]) -> bool {
    let Some(case) = callgrind_args::only(args) else {
        return false;
    };
    let iters = callgrind_args::iters(args);
    let contender = Contender::ALL
        .into_iter()
        .find(|c| case.strip_prefix("answered/") == Some(c.name()))
        .unwrap_or_else(|| panic!("no case named {case}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let url = rt.block_on(serve(Served::default()));
    let clients = Clients::new();
    rt.block_on(async {
        for _ in 0..iters {
            assert_eq!(contender.call(&clients, &url).await, StatusCode::OK);
        }
    });
    true
}

criterion_group! {
    name = benches;
    // A round trip is tens of microseconds, and the retry case over a millisecond: fewer samples
    // than criterion's 100 keep the run short.
    config = Criterion::default().sample_size(50).without_plots();
    targets = middleware
}

// `criterion_main!`, with the callgrind mode first.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if callgrind_mode(&args) {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
