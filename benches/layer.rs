//! What the tower front ends cost per call: a service called bare, through
//! `retry_kit::tower::RetryLayer`, through `retry_kit::tower::HttpRetryLayer` (request rebuilt
//! from its parts, body through `ReplayBody`), and through tower's own `retry` middleware with a
//! hand-written three-attempt policy (the peer, `hand_policy.rs`; for HTTP it clones the
//! request for each attempt). Two cases: the first attempt answers, and two
//! failed attempts before the answer (zero delays, as in overhead.rs).
//!
//! Run: `cargo bench -p retry-kit-benches --bench layer`.

mod hand_policy;

use criterion::{Criterion, criterion_group, criterion_main};
use hand_policy::ThreeAttempts;
use http::{Request, Response, StatusCode};
use retry_kit::RetryPolicy;
use retry_kit::tower::{HttpRetryLayer, RetryLayer};
use std::future::{Ready, ready};
use std::hint::black_box;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

const POLICY: RetryPolicy = RetryPolicy::fixed(Duration::ZERO).attempts(3);

/// A backend that fails `fails` times in every three calls, then answers (`fails` 0: always
/// answers). Failure is a 503 for HTTP requests and a refused connection otherwise.
#[derive(Clone)]
struct Backend {
    fails: u32,
    calls: Arc<AtomicU32>,
}

impl Backend {
    fn new(fails: u32) -> Self {
        Backend {
            fails,
            calls: Arc::default(),
        }
    }

    /// Whether this call is one of the failing ones.
    fn failing(&self) -> bool {
        self.calls.fetch_add(1, Ordering::Relaxed) % (self.fails + 1) < self.fails
    }
}

impl Service<u64> for Backend {
    type Response = u64;
    type Error = io::Error;
    type Future = Ready<io::Result<u64>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: u64) -> Self::Future {
        ready(if self.failing() {
            Err(io::ErrorKind::ConnectionRefused.into())
        } else {
            Ok(req + 1)
        })
    }
}

impl<B> Service<Request<B>> for Backend {
    type Response = Response<()>;
    type Error = io::Error;
    type Future = Ready<io::Result<Response<()>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<B>) -> Self::Future {
        let status = if self.failing() {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        let mut response = Response::new(());
        *response.status_mut() = status;
        ready(Ok(response))
    }
}

fn http_request() -> Request<String> {
    Request::get("http://api.test/orders/17")
        .header("accept", "application/json")
        .body(String::new())
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    for (case, fails) in [("success", 0), ("retry3", 2)] {
        let mut group = c.benchmark_group(format!("layer/{case}"));
        if fails == 0 {
            let mut bare = Backend::new(fails);
            group.bench_function("bare u64", |b| {
                b.iter(|| rt.block_on(bare.call(black_box(1u64))).unwrap())
            });
            let mut bare = Backend::new(fails);
            group.bench_function("bare http", |b| {
                b.iter(|| rt.block_on(bare.call(black_box(http_request()))).unwrap())
            });
        }
        let tower_retry =
            tower::retry::RetryLayer::new(ThreeAttempts(3)).layer(Backend::new(fails));
        group.bench_function("tower::retry u64", |b| {
            b.iter(|| {
                // The policy counts attempts per call, so each call starts from a fresh one.
                let mut service = tower_retry.clone();
                rt.block_on(service.call(black_box(1u64))).unwrap()
            })
        });
        let tower_retry_http =
            tower::retry::RetryLayer::new(ThreeAttempts(3)).layer(Backend::new(fails));
        group.bench_function("tower::retry http", |b| {
            b.iter(|| {
                let mut service = tower_retry_http.clone();
                let response = rt
                    .block_on(service.call(black_box(http_request())))
                    .unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            })
        });
        let mut layered = RetryLayer::new(POLICY).layer(Backend::new(fails));
        group.bench_function("RetryLayer u64", |b| {
            b.iter(|| rt.block_on(layered.call(black_box(1u64))).unwrap())
        });
        let mut http = HttpRetryLayer::new(POLICY).layer(Backend::new(fails));
        group.bench_function("HttpRetryLayer http", |b| {
            b.iter(|| {
                let response = rt.block_on(http.call(black_box(http_request()))).unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
