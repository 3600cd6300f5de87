//! The tower front ends' answered-first path, for `benches/instructions.sh` (issue 26, item 4):
//! an HTTP client service called bare, through `HttpRetryLayer`, and through tower's own
//! `retry` middleware with the policy a user writes by hand, which clones the request (method,
//! URI, headers and body) for each attempt.

use crate::hand_policy::ThreeAttempts;
use http::{Request, Response, StatusCode};
use retry_kit::RetryPolicy;
use retry_kit::tower::HttpRetryLayer;
use std::future::{Ready, ready};
use std::hint::black_box;
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

const POLICY: RetryPolicy = RetryPolicy::fixed(Duration::ZERO).attempts(3);

/// A backend that answers 200 at once.
#[derive(Clone)]
struct Backend;

impl<B> Service<Request<B>> for Backend {
    type Response = Response<()>;
    type Error = io::Error;
    type Future = Ready<io::Result<Response<()>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<B>) -> Self::Future {
        ready(Ok(Response::new(())))
    }
}

fn request() -> Request<String> {
    Request::get("http://api.test/orders/17")
        .header("accept", "application/json")
        .body(String::new())
        .unwrap()
}

/// Run the case `only` (`layer/bare`, `layer/tower_retry`, `layer/http_retry`) `iters` times;
/// whether it is one of these.
pub fn run(only: &str, iters: u64, rt: &tokio::runtime::Runtime) -> bool {
    match only {
        "layer/bare" => {
            let mut bare = Backend;
            for _ in 0..iters {
                let response = rt.block_on(bare.call(black_box(request()))).unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            }
        }
        "layer/tower_retry" => {
            let layer = tower::retry::RetryLayer::new(ThreeAttempts(3));
            let service = layer.layer(Backend);
            for _ in 0..iters {
                // The policy counts attempts per call, so each call starts from a fresh one.
                let mut service = service.clone();
                let response = rt.block_on(service.call(black_box(request()))).unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            }
        }
        "layer/http_retry" => {
            let mut service = HttpRetryLayer::new(POLICY).layer(Backend);
            for _ in 0..iters {
                let response = rt.block_on(service.call(black_box(request()))).unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            }
        }
        _ => return false,
    }
    true
}
